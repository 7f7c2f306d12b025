//! The agent: runs that change code. Today the deterministic rung of the fix ladder
//! (`ladder.rs`); the fix loop, planner, modes and guards arrive with later issues.

pub mod ladder;
