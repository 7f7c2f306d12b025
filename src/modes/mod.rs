//! Modes and roles (SPEC M1–M3, L5): the agent's 22 modes and `idle` with their transition
//! table and what each lets the agent do (`mode.rs`, `machine.rs`), the routing of a task to
//! a role by keywords in Korean and English (`routing.rs`), and each role's profile — its
//! prompt, actions, writable paths and commands, enforced by the executor (`profiles.rs`).

mod machine;
mod mode;
mod profiles;
mod routing;

pub use machine::{Condition, CoverageData, ModeContext, ModeError, ModeMachine, RULES, Rule, Transition};
pub use mode::{Allowed, Mode, Phase};
pub use profiles::{Profile, Profiles, built_in};
pub use routing::{Role, Routed, intent, route, wants_coverage};
