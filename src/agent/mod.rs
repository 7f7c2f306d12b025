//! The agent: runs that change code. The fix loop (`fix.rs`) with its deterministic rung
//! (`ladder.rs`), prompt (`prompt.rs`) and targets (`targets.rs`); task runs (`task.rs`),
//! carried out by a tool-using loop (`act.rs`) that reads actions from the model's replies
//! (`protocol.rs`) and takes them through the executor; the registry of runs (`runs.rs`) and
//! their reports (`report.rs`). The planner, modes and roles arrive with later issues.

mod act;
mod fix;
pub mod ladder;
mod prompt;
pub mod protocol;
mod report;
mod runs;
mod targets;
mod task;
mod tools;

pub use fix::{FixContext, FixRequest, display_path, fix};

/// The profile whose model changes code (`[profiles.coder]`, else `[model]`): fixes and
/// tasks.
pub const FIX_ROLE: &str = "coder";
pub use prompt::{SYSTEM as FIX_SYSTEM_PROMPT, focused_context};
pub use report::{ExitReason, RunReport, Tokens};
pub use runs::{Busy, RunHandle, Runs};
pub use targets::{Scope, Signature};
pub use task::{SYSTEM as TASK_SYSTEM_PROMPT, TaskContext, run_task};
