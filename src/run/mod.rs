//! What a run is made of, below everything that starts one, acts in it, records it or shows
//! it: its plan (`plan.rs`) and its report (`report.rs`). The agent makes them; the executor,
//! history, the `Editor` trait and the front ends read them.

pub mod plan;
mod report;

pub use report::{Endings, ExitReason, RunReport, Tokens};
