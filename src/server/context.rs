//! `tokamak.context {query, uri?, limit?}`: the workspace's files ranked for a question
//! (`context::rank`), the open documents' unsaved text included and `uri` counted as the file
//! the user is in. The index is built once, in the background, after `initialized` (with
//! work-done progress); a query that comes first waits for it (the command runs off the
//! message queue).

use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp::jsonrpc::{Error, Result};
use url::Url;

use super::Backend;
use crate::context::{Index, rank};
use crate::editor::{Editor, Progress};
use crate::sync::lock;

/// The session's index, built at most once.
pub type SharedIndex = Arc<tokio::sync::OnceCell<Mutex<Index>>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    pub query: String,
    /// The document the user is in.
    #[serde(default)]
    pub uri: Option<Url>,
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The work-done progress token of the index's build.
const PROGRESS_TOKEN: &str = "tokamak-index";

/// Starts building the index of the workspace root in the background, shown as work-done
/// progress ("Tokamak: indexing", then how many files).
pub fn start_index(backend: &Backend) {
    let Some(root) = backend.root.get().cloned().flatten() else { return };
    let cell = Arc::clone(&backend.index);
    let editor = backend.editor();
    tokio::spawn(async move {
        let begin =
            Progress::Begin { title: "Tokamak: indexing".to_string(), message: root.display().to_string() };
        editor.progress(PROGRESS_TOKEN, begin).await;
        let shared = built(&cell, &root).await;
        let message = {
            let index = lock(shared);
            format!("{} files indexed ({} skipped)", index.len(), index.skipped.len())
        };
        editor.progress(PROGRESS_TOKEN, Progress::End { message }).await;
    });
}

async fn built<'a>(cell: &'a SharedIndex, root: &std::path::Path) -> &'a Mutex<Index> {
    cell.get_or_init(|| async {
        let root = root.to_path_buf();
        let started = std::time::Instant::now();
        let index = tokio::task::spawn_blocking(move || Index::build(&root)).await.unwrap_or_default();
        tracing::info!(
            "indexed {} files ({} skipped) in {} ms",
            index.len(),
            index.skipped.len(),
            started.elapsed().as_millis()
        );
        Mutex::new(index)
    })
    .await
}

/// The work of `tokamak.context`, owning what it needs.
pub fn context(
    backend: &Backend,
    args: ContextArgs,
) -> Result<futures::future::BoxFuture<'static, Result<Value>>> {
    let Some(root) = backend.root.get().cloned().flatten() else {
        return Err(Error::invalid_params("tokamak.context needs a workspace folder".to_string()));
    };
    if args.query.trim().is_empty() {
        return Err(Error::invalid_params("tokamak.context needs a query".to_string()));
    }
    let cell = Arc::clone(&backend.index);
    let open: Vec<(std::path::PathBuf, String)> = backend
        .workspace()
        .snapshots()
        .into_iter()
        .filter_map(|s| Some((s.path()?, s.rope.to_string())))
        .collect();
    let active = args.uri.as_ref().and_then(|u| u.to_file_path().ok());
    let limit = args.limit.unwrap_or(10).clamp(1, 100);
    Ok(Box::pin(async move {
        let index = built(&cell, &root).await;
        let mut index = lock(index);
        // what the user sees, not what is on disk
        for (path, text) in &open {
            if path.starts_with(&root) {
                index.update(path, text);
            }
        }
        let ranked = rank(&index, &args.query, active.as_deref(), limit);
        let shown: Vec<Value> = ranked
            .iter()
            .map(|r| {
                json!({
                    "path": r.path.strip_prefix(&root).unwrap_or(&r.path),
                    "score": r.score,
                    "symbols": r.symbols,
                    "reasons": r.reasons,
                })
            })
            .collect();
        Ok(Value::Array(shown))
    }))
}
