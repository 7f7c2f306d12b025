//! The agent: runs that change code. The fix loop (`fix.rs`) with its deterministic rung
//! (`ladder.rs`), prompt (`prompt.rs`), targets (`targets.rs`), re-grounding of edits on
//! newer text (`reground.rs`), the registry of runs (`runs.rs`) and their reports
//! (`report.rs`). The planner, modes and guards arrive with later issues.

mod fix;
pub mod ladder;
mod prompt;
mod reground;
mod report;
mod runs;
mod targets;

pub use fix::{FixContext, FixRequest, display_path, fix};
pub use prompt::{SYSTEM as FIX_SYSTEM_PROMPT, focused_context};
pub use reground::{Conflict, reground};
pub use report::{ExitReason, RunReport, Tokens};
pub use runs::{Busy, RunHandle, Runs};
pub use targets::{Scope, Signature};
