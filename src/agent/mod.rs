//! The agent: runs that change code. The fix loop (`fix/`, a `FixRun`) with its deterministic rung
//! (`ladder.rs`), prompt (`prompt.rs`) and targets (`targets.rs`); task runs (`task/`: the run, its modes, its checks),
//! planned (`planner.rs` → `crate::run::plan`), driven mode by mode (`crate::modes`), each step
//! carried out by a tool-using loop (`act.rs`) that offers the executor's actions as tools
//! (`tools.rs`) or reads them from the model's replies (`protocol.rs`, and `calls.rs` for the
//! calls a server left in the text) and fits its prompt into the model's context (`fit.rs`);
//! the registry of runs (`runs.rs`); a run's plan and report are `crate::run`'s, below every
//! room that reads them.

mod act;
mod calls;
mod candidates;
pub mod checks;
mod fit;
mod fix;
pub mod ladder;
mod planner;
mod prompt;
pub mod protocol;
mod runs;
mod targets;
mod task;
mod tools;
mod trajectory;
mod unsaved;
mod workspace;
mod wrap_up;

pub use candidates::ModelCandidates;
pub use fix::{FixContext, FixRequest, display_path, fix};

/// The profile whose model changes code (`[profiles.coder]`, else `[model]`): fixes and
/// tasks.
pub const FIX_ROLE: &str = "coder";
pub use planner::Selection;
pub use prompt::{SYSTEM as FIX_SYSTEM_PROMPT, focused_context};
// the run's vocabulary lives below the agent (`crate::run`); named here too for the
// library's users
pub use crate::run::{Endings, ExitReason, RunReport, Tokens, plan};
pub use runs::{Busy, RunHandle, Runs};
pub use targets::{Scope, Signature};
pub use task::{
    SYSTEM as TASK_SYSTEM_PROMPT, TaskContext, TaskRequest, Turn, compact_conversation, plan_goal,
    remember_turn, run_task, turn_of,
};
