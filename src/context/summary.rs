//! Summaries of large files (SPEC C3, seed 001's Summarizer): a model's five to ten
//! sentences — the file's purpose, its classes, its public API — cached on disk by the
//! content hash of the text summarized, so a file is summarized once per version, by any
//! run. They are made lazily, in the background, when a prompt's budget keeps a file out:
//! that prompt shows the file's tree-sitter outline (which costs nothing) and the later ones
//! its summary.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::{CallOptions, Message, Model, ModelError, Request, Usage};
use crate::sync::lock;

/// What a summary is asked for.
const SYSTEM: &str = "You summarize source files for a coding agent that cannot read them whole. Write 5 to 10 \
plain sentences: what the file is for, its main classes and functions and what each does, its public API (the \
names other files use), and anything surprising. No code blocks, no lists, no preamble.";

/// Bytes of a file sent to be summarized at most (its head and tail beyond that).
const MAX_SOURCE_BYTES: usize = 48 * 1024;
/// Bytes of a summary kept at most (a model that does not stop is cut).
const MAX_SUMMARY_BYTES: usize = 2 * 1024;

/// How long a summary made in the background may take.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(120);
/// A summary is asked for at this temperature: a description, not an invention.
const TEMPERATURE: f32 = 0.1;

/// The summaries of one cache folder, and those being made.
#[derive(Clone)]
pub struct Summaries {
    dir: PathBuf,
    background: Arc<Mutex<Background>>,
}

/// The summaries being made in the background.
#[derive(Default)]
struct Background {
    /// The hashes of the texts being summarized (each asked once at a time).
    pending: HashSet<String>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// What they cost, not yet charged to a run.
    spent: Usage,
}

impl std::fmt::Debug for Summaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summaries").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl Summaries {
    pub fn new(dir: PathBuf) -> Summaries {
        Summaries { dir, background: Arc::default() }
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

    /// Asks `model` in the background to summarize `text` (the file at `relative`), unless a
    /// summary of it is kept or being made; later prompts find it in the cache. Returns
    /// whether it was asked. Must be called within the runtime.
    pub fn request(&self, model: Arc<dyn Model>, relative: String, text: String) -> bool {
        let key = crate::places::sha256_hex(text.as_bytes());
        if self.cached(&text).is_some() || !lock(&self.background).pending.insert(key.clone()) {
            return false;
        }
        let this = self.clone();
        let task = tokio::spawn(async move {
            let cancel = CancellationToken::new();
            let made = tokio::time::timeout(
                SUMMARY_TIMEOUT,
                this.summarize(model.as_ref(), &relative, &text, &cancel),
            );
            let made = made.await;
            let mut background = lock(&this.background);
            background.pending.remove(&key);
            match made {
                Ok(Ok((_, usage))) => {
                    background.spent.prompt_tokens =
                        background.spent.prompt_tokens.saturating_add(usage.prompt_tokens);
                    background.spent.completion_tokens =
                        background.spent.completion_tokens.saturating_add(usage.completion_tokens);
                }
                Ok(Err(err)) => tracing::info!("no summary of {relative} ({err}); its outline is shown"),
                Err(_) => tracing::info!("no summary of {relative} within {} s", SUMMARY_TIMEOUT.as_secs()),
            }
        });
        let mut background = lock(&self.background);
        background.tasks.retain(|task| !task.is_finished());
        background.tasks.push(task);
        true
    }

    /// What the summaries made in the background cost since this was last asked (the run
    /// asking charges it).
    pub fn take_spent(&self) -> Usage {
        std::mem::take(&mut lock(&self.background).spent)
    }

    /// Waits up to `within` for the summaries being made (a command about to exit keeps them
    /// for the next run); those still unfinished are dropped.
    pub async fn settle(&self, within: Duration) {
        let tasks = std::mem::take(&mut lock(&self.background).tasks);
        let deadline = tokio::time::Instant::now() + within;
        for task in tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                abort.abort();
            }
        }
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
        let mut request = Request::chat(messages);
        request.temperature = Some(TEMPERATURE);
        let reply = model.send(&request, &options).await?;
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
