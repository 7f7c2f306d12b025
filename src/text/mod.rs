//! Text: documents as ropes with versions, positions and their encodings, edits on text, long
//! text cut for the model, a Markdown file's front matter.

mod cut;
mod document;
mod front_matter;
mod position;

pub use crate::language::Language;
pub use cut::{CHARS_PER_TOKEN, cut};
pub use document::{AppliedChange, ByteEdit, ChangeOutcome, TextChange, TextDocument, TextRange};
pub use front_matter::{FrontMatter, front_matter};
pub use position::{LineCol, PositionEncoding, Resolved, line_col_to_offset, offset_to_line_col};
