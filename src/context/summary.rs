//! Summaries of large files (SPEC C3): a model's five to ten sentences — the file's purpose,
//! its classes, its public API — cached on disk by the content hash of the text summarized,
//! so a file is summarized once per version, by any run. Without one, prompts show the
//! file's tree-sitter outline, which costs nothing.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::model::{CallOptions, Message, Model, ModelError, Request, Usage};

/// What a summary is asked for.
const SYSTEM: &str = "You summarize source files for a coding agent that cannot read them whole. Write 5 to 10 \
plain sentences: what the file is for, its main classes and functions and what each does, its public API (the \
names other files use), and anything surprising. No code blocks, no lists, no preamble.";

/// Bytes of a file sent to be summarized at most (its head and tail beyond that).
const MAX_SOURCE_BYTES: usize = 48 * 1024;
/// Bytes of a summary kept at most (a model that does not stop is cut).
const MAX_SUMMARY_BYTES: usize = 2 * 1024;

/// The summaries of one cache folder.
#[derive(Debug, Clone)]
pub struct Summaries {
    dir: PathBuf,
}

impl Summaries {
    pub fn new(dir: PathBuf) -> Summaries {
        Summaries { dir }
    }

    /// A project's summaries, under its cache folder.
    pub fn for_project(root: &Path) -> Summaries {
        Summaries::new(crate::places::project_cache(root).join("summaries"))
    }

    fn file(&self, text: &str) -> PathBuf {
        self.dir.join(format!("{}.txt", crate::places::sha256_hex(text.as_bytes())))
    }

    /// The summary of exactly this text, if one was made.
    pub fn cached(&self, text: &str) -> Option<String> {
        std::fs::read_to_string(self.file(text)).ok().filter(|s| !s.trim().is_empty())
    }

    /// Asks `model` to summarize `text` (the file at `relative`), keeps the summary, and
    /// returns it with what it cost.
    pub async fn summarize(
        &self,
        model: &dyn Model,
        relative: &str,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<(String, Usage), ModelError> {
        let source = crate::text::cut(text, MAX_SOURCE_BYTES);
        let messages = vec![
            Message::system(SYSTEM.to_string()),
            Message::user(format!("The file {relative}:\n```\n{source}\n```\nSummarize it.")),
        ];
        let options = CallOptions { deltas: None, cancel: cancel.child_token() };
        let reply = model.send(&Request::chat(messages), &options).await?;
        let summary = crate::text::cut(reply.text.trim(), MAX_SUMMARY_BYTES);
        if !summary.is_empty() {
            let path = self.file(text);
            let written = std::fs::create_dir_all(&self.dir).and_then(|_| std::fs::write(&path, &summary));
            if let Err(err) = written {
                tracing::warn!("could not keep the summary of {relative} in {}: {err}", path.display());
            }
        }
        Ok((summary, reply.usage))
    }
}
