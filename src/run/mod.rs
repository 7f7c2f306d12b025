//! What a run is made of, below everything that starts one, acts in it, records it or shows
//! it: its plan (`plan.rs`), its report (`report.rs`) and the events it tells the user
//! (`event.rs`). The agent makes them; the executor,
//! history, the `Editor` trait and the front ends read them.

mod event;
pub mod plan;
mod report;

pub use crate::action::{ChangedFile, ToolKind};
pub use event::{Check, Progress, RunEvent, TestOutcome};
pub use report::{
    CandidateOutcome, CandidateReport, Endings, ExitReason, Left, RunReport, StepEnding, Tokens, Waited,
    WrapUp,
};
