//! What the Observer keeps and tells: each document's diagnostics by source and version, the
//! merged publish (what the editor's own checkers already show left out), and waiting until
//! a version's checks have all answered (`settled`, the fix loop's "observe" step).

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::store::{FileDiagnostics, Origin};
use super::{CLIENT_SOURCE, Diagnostic, Observer, SettleError, Settled};
use crate::config::PublishMode;
use crate::editor::Editor;
use crate::sync::lock;
use crate::syntax::Placement;
use crate::workspace::DocumentSnapshot;

impl Observer {
    /// The syntax problems of `version` of a document as tree-sitter found them and as its
    /// syntax diagnostics placed them, if they were placed on that version.
    pub fn placement(&self, uri: &Url, version: Option<i32>) -> Option<Arc<Placement>> {
        let state = lock(&self.state);
        state
            .placed
            .get(uri)
            .filter(|(placed_on, _)| *placed_on == version)
            .map(|(_, problems)| Arc::clone(problems))
    }

    /// Everything known about a document now, from every source.
    pub fn diagnostics(&self, uri: &Url) -> Vec<Diagnostic> {
        lock(&self.state).files.get(uri).map(FileDiagnostics::all).unwrap_or_default()
    }

    /// Every open document's current snapshot.
    pub fn open_documents(&self) -> Vec<DocumentSnapshot> {
        lock(&self.workspace).snapshots()
    }

    /// The editor the Observer publishes to.
    pub fn editor(&self) -> &dyn Editor {
        self.editor.as_ref()
    }

    pub fn snapshot(&self, uri: &Url) -> Option<DocumentSnapshot> {
        lock(&self.workspace).snapshot(uri)
    }

    /// What the sources that reported on exactly `version` found: the fix loop's view after
    /// `settled` (a source that has not looked at this text, such as a code-action context
    /// from before an edit, is left out).
    ///
    /// What the editor forwarded from a tool Tokamak ran itself on this version (the editor's
    /// own pyright, say) is left out: Tokamak's run on exactly this text answers for it, and
    /// the editor's list may be the one from before an edit, sent with the new version.
    pub fn diagnostics_at(&self, uri: &Url, version: Option<i32>) -> Vec<Diagnostic> {
        let state = lock(&self.state);
        let Some(file) = state.files.get(uri) else {
            return Vec::new();
        };
        file.at_version_except(version, &self.covered(file, version))
    }

    /// The sources (lowercase) of the tools Tokamak ran itself on `version` of a file, by
    /// every name the editor's own servers give them.
    pub(super) fn covered(&self, file: &FileDiagnostics, version: Option<i32>) -> Vec<String> {
        file.reporters(version)
            .into_iter()
            .filter(|(_, origin)| *origin == Origin::Server)
            .filter_map(|(key, _)| self.checkers.all.iter().find(|c| c.name == key))
            .flat_map(|checker| {
                let mut names: Vec<String> =
                    checker.editor_sources().iter().map(|s| s.to_ascii_lowercase()).collect();
                names.push(checker.name.to_ascii_lowercase());
                names
            })
            .collect()
    }

    /// Whether a diagnostic from `source` could have been seen on exactly `version`: Tokamak's
    /// own sources and checkers that reported on it, or anything the editor forwarded for it
    /// (`tokamak/clientDiagnostics` replaces the editor's whole list). A code-action context
    /// is not a report on a version: what it showed cannot be re-checked.
    pub fn could_see(&self, uri: &Url, version: Option<i32>, source: &str) -> bool {
        let state = lock(&self.state);
        let Some(file) = state.files.get(uri) else {
            return false;
        };
        file.reporters(version).iter().any(|(key, origin)| match origin {
            Origin::Server => key == source,
            Origin::Editor => key == CLIENT_SOURCE,
        })
    }

    /// Waits until the document is at another version than `version` (the editor reported a
    /// change), or `timeout` passes. `None`: closed, or still at `version`.
    pub async fn changed_from(
        &self,
        uri: &Url,
        version: Option<i32>,
        timeout: Duration,
    ) -> Option<DocumentSnapshot> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let snapshot = self.snapshot(uri)?;
            if snapshot.version != version {
                return Some(snapshot);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    /// Waits until every active source has reported on `version` of the document (starting
    /// the checkers that have not), or `timeout` passes. Never answers with diagnostics of
    /// another version: if the document changes meanwhile, that is an error.
    pub async fn settled(
        self: &Arc<Self>,
        uri: &Url,
        version: Option<i32>,
        timeout: Duration,
    ) -> Result<Settled, SettleError> {
        let now = tokio::time::Instant::now();
        let deadline = now.checked_add(timeout).unwrap_or(now + Duration::from_secs(86_400));
        let snapshot = self.current(uri, version)?;
        // an answer from a checker that reads other files counts only when it saw them as
        // they are now
        let since = lock(&self.state).generation_of(snapshot.language);
        let (active, cross_file) = self.start_missing_runs(&snapshot, since);
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            self.current(uri, version)?;
            let (pending, settled) = {
                let state = lock(&self.state);
                let file = state.files.get(uri).cloned().unwrap_or_default();
                let stale = |source: &String| {
                    cross_file.contains(source)
                        && state.seen.get(&(uri.clone(), source.clone())).copied().unwrap_or(0) < since
                };
                let pending: Vec<String> =
                    active.iter().filter(|s| !file.reported(s, version) || stale(s)).cloned().collect();
                let settled = Settled {
                    version,
                    // what was found on exactly this text: nothing from a source that has
                    // not looked at it, nor the editor's list of a tool Tokamak ran on it
                    diagnostics: file.at_version_except(version, &self.covered(&file, version)),
                    failures: file.failures(),
                    missing: Vec::new(),
                };
                (pending, settled)
            };
            if pending.is_empty() {
                return Ok(settled);
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!("{uri}: {} did not report on version {version:?} in time", pending.join(", "));
                return Ok(Settled { missing: pending, ..settled });
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    pub(super) fn current(&self, uri: &Url, version: Option<i32>) -> Result<DocumentSnapshot, SettleError> {
        let snapshot =
            lock(&self.workspace).snapshot(uri).ok_or_else(|| SettleError::NotOpen(uri.clone()))?;
        if snapshot.version != version {
            return Err(SettleError::Changed {
                uri: uri.clone(),
                expected: version,
                current: snapshot.version,
            });
        }
        Ok(snapshot)
    }

    pub(super) async fn after_change(&self, snapshot: &DocumentSnapshot) {
        self.changed.notify_waiters();
        self.publish(snapshot).await;
    }

    /// Publishes the document's merged diagnostics and wakes `settled` waiters. Called with
    /// `publishing` held.
    pub(super) async fn publish(&self, snapshot: &DocumentSnapshot) {
        let hidden = self.hidden(snapshot);
        let diagnostics =
            lock(&self.state).files.get(&snapshot.uri).map(|f| f.published(&hidden)).unwrap_or_default();
        self.editor.publish_diagnostics(snapshot, diagnostics).await;
    }

    /// The checkers whose own runs are not published for a document: `publish = "off"`, and
    /// with `"auto"` those the editor has its own server for (it forwarded their
    /// diagnostics). Their results still reach the agent.
    pub(super) fn hidden(&self, snapshot: &DocumentSnapshot) -> Vec<String> {
        let Some(path) = snapshot.path() else { return Vec::new() };
        let state = lock(&self.state);
        self.checkers
            .applying(snapshot.language, &path)
            .filter(|c| match c.publish {
                PublishMode::On => false,
                PublishMode::Off => true,
                PublishMode::Auto => c.editor_sources().iter().any(|s| state.forwarded.contains(*s)),
            })
            .map(|c| c.name.clone())
            .collect()
    }

    /// Publishes a document again (after what is hidden changed).
    pub async fn republish(&self, uri: &Url) {
        let _publishing = self.publishing.lock().await;
        if let Some(snapshot) = self.snapshot(uri) {
            self.publish(&snapshot).await;
        }
    }
}

/// A source's entry as it matters to what is published: its version and diagnostics.
pub(super) fn entry_of(file: &FileDiagnostics, key: &str) -> Option<(Option<i32>, Vec<Diagnostic>)> {
    file.get(key).map(|e| (e.version, e.diagnostics.clone()))
}
