//! Edits from model replies: reading the reply's blocks (`reply.rs`), finding each SEARCH in
//! the current text (`locate.rs`), applying a reply all or nothing (`apply.rs`), and turning
//! a new text into minimal edits of the old one (`minimal.rs`), and moving edits made for one
//! text onto the text the user has made of it since (`reground.rs`).
//!
//! Groundwork for the fix loop (SPEC E1–E3); nothing here knows LSP or the agent.

mod apply;
#[doc(hidden)]
pub mod fuzzing;
mod locate;
mod minimal;
mod reground;
mod reply;

pub use apply::{Applied, ApplyError, apply_blocks};
pub use locate::{LocateError, Located, MatchKind, locate};
pub use minimal::{apply_edits, minimal_edits};
pub use reground::{Conflict, reground};
pub use reply::{Block, parse_reply};
