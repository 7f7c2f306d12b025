//! `tokamak.context {query, uri?, limit?}`: the workspace's files ranked for a question
//! (`context::rank`), the open documents' unsaved text included and `uri` counted as the file
//! the user is in. The index is built once, in the background, after `initialized` (with
//! work-done progress); a query that comes first waits for it (the command runs off the
//! message queue).

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    DidChangeWatchedFilesParams, DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher, GlobPattern,
    Registration,
};
use url::Url;

use super::Backend;
use crate::context::rank;
use crate::editor::{Editor, Progress};

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

/// The files the index reads, for the editor's file watcher.
const WATCHED: &str = "**/*.{py,pyi,ts,mts,cts,tsx,js,mjs,cjs,jsx}";

/// How long the editor may take to answer the watcher's registration.
const REGISTER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts building the index of the workspace root in the background, shown as work-done
/// progress ("Tokamak: indexing", then how many files), and asks the editor to tell it of
/// files changed on disk when it can watch them.
pub fn start_index(backend: &Backend) {
    let Some(index) = backend.index().cloned() else { return };
    let editor = backend.editor();
    tokio::spawn(async move {
        let begin = Progress::Begin {
            title: "Tokamak: indexing".to_string(),
            message: index.root().display().to_string(),
        };
        editor.progress(PROGRESS_TOKEN, begin).await;
        let files = index.current().await.len();
        let message = match index.report() {
            Some(report) => format!(
                "{files} files indexed ({} parsed, the rest from the cache; {} skipped)",
                report.parsed, report.skipped
            ),
            None => format!("{files} files indexed"),
        };
        editor.progress(PROGRESS_TOKEN, Progress::End { message }).await;
    });
    if backend.watch_files.get() == Some(&true) {
        let client = backend.client.clone();
        tokio::spawn(async move {
            let options = DidChangeWatchedFilesRegistrationOptions {
                watchers: vec![FileSystemWatcher {
                    glob_pattern: GlobPattern::String(WATCHED.to_string()),
                    kind: None,
                }],
            };
            let registration = Registration {
                id: "tokamak-index-watcher".to_string(),
                method: "workspace/didChangeWatchedFiles".to_string(),
                register_options: serde_json::to_value(options).ok(),
            };
            let asked = super::transport::ask_within(REGISTER_TIMEOUT, async move {
                client.register_capability(vec![registration]).await
            });
            match asked.await {
                Some(Ok(())) => tracing::debug!("the editor watches {WATCHED} for the index"),
                Some(Err(err)) => tracing::info!("the editor did not register the file watcher: {err}"),
                None => tracing::info!("the editor did not answer the file watcher's registration"),
            }
        });
    }
}

/// A document was closed: what is on disk counts again.
pub fn document_closed(backend: &Backend, uri: &Url) {
    if let (Some(index), Ok(path)) = (backend.index(), uri.to_file_path()) {
        index.disk_changed(&path);
    }
}

/// `workspace/didChangeWatchedFiles`: files created, changed or deleted on disk; an open
/// document's own text wins over its file's.
pub fn watched_files_changed(backend: &Backend, params: DidChangeWatchedFilesParams) {
    let Some(index) = backend.index() else { return };
    for change in params.changes {
        let Some(uri) = super::convert::url(&change.uri) else { continue };
        if backend.workspace().snapshot(&uri).is_some() {
            continue;
        }
        if let Ok(path) = uri.to_file_path() {
            index.disk_changed(&path);
        }
    }
}

/// What `tokamak.status` says of the context: the index (files, skipped, how it was built,
/// `null` while it builds) and the project's rules files every run reads.
pub fn status(backend: &Backend) -> Value {
    let Some(live) = backend.index() else { return Value::Null };
    let rules: Vec<String> =
        crate::context::project_rules(live.root(), None, backend.session().is_some_and(|s| s.trust.trusted))
            .into_iter()
            .map(|r| r.path.display().to_string())
            .collect();
    let index = live.report().map(|report| {
        json!({
            "files": live.try_current().map_or(report.files, |index| index.len()),
            "skipped": report.skipped,
            "parsed": report.parsed,
            "buildMs": report.millis as u64,
            "documentsParsedAgain": live.parsed_documents(),
        })
    });
    json!({"index": index, "rules": rules})
}

/// The work of `tokamak.context`, owning what it needs.
pub fn context(
    backend: &Backend,
    args: ContextArgs,
) -> Result<futures::future::BoxFuture<'static, Result<Value>>> {
    let Some(live) = backend.index().cloned() else {
        return Err(Error::invalid_params("tokamak.context needs a workspace folder".to_string()));
    };
    if args.query.trim().is_empty() {
        return Err(Error::invalid_params("tokamak.context needs a query".to_string()));
    }
    let root = live.root().to_path_buf();
    let active = args.uri.as_ref().and_then(|u| u.to_file_path().ok()).map(|p| live.normalize(&p));
    let limit = args.limit.unwrap_or(10).clamp(1, 100);
    Ok(Box::pin(async move {
        let index = live.current().await;
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
