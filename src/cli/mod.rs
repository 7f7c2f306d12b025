//! The command line's front-ends over the same engine the language server uses.

pub mod bench;
pub mod check;
pub mod fix;
pub mod model_check;
