//! Context (SPEC C1–C7), in progress: what the model sees of the workspace. Today: the facts
//! of one file (`extract.rs`: definitions, imports, call sites) and the workspace index
//! built from them with its queries (`index.rs`: definitions, symbol search, callers,
//! importers). Not yet wired into the agent or the server.

mod extract;
mod index;

pub use extract::{Call, Definition, FileFacts, Import, facts, facts_of_tree};
pub use index::{Caller, Found, Index, MAX_CALLER_DEPTH, MAX_FILE_BYTES, Skipped, module_name, split_words};
