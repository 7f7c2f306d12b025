//! The runs going on: one per document at a time, each with an id and a cancellation token,
//! so `tokamak.cancel`, the editor's progress UI and `tokamak.status` can reach them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use url::Url;

use crate::sync::lock;

/// A run is already going on the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a Tokamak run ({run_id}) is already fixing {uri}; wait for it or cancel it first")]
pub struct Busy {
    pub run_id: String,
    pub uri: Url,
}

#[derive(Debug, Clone)]
struct Entry {
    uri: Url,
    cancel: CancellationToken,
    /// The run's audit log, once it has one.
    audit: Option<std::path::PathBuf>,
    /// The role and mode it acts in now (task runs).
    mode: Option<String>,
    /// The run's confidence in each file it doubted (SPEC G4), with the last reason.
    confidence: std::collections::BTreeMap<String, (i32, String)>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    running: BTreeMap<String, Entry>,
    /// The latest runs that ended, newest last (at most [`RECENT`]).
    ended: std::collections::VecDeque<Ended>,
}

/// How many ended runs `tokamak.status` remembers.
const RECENT: usize = 10;

/// A run that ended, as a status shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ended {
    pub run_id: String,
    pub exit_reason: String,
    pub summary: String,
    /// When it ended (RFC 3339).
    pub at: String,
}

/// Every run of one server or command.
#[derive(Clone, Default)]
pub struct Runs {
    inner: Arc<Mutex<Inner>>,
}

/// A run's registration; dropping it ends the registration.
pub struct RunHandle {
    pub run_id: String,
    pub cancel: CancellationToken,
    runs: Runs,
}

impl RunHandle {
    /// Notes where the run's audit log is.
    pub fn set_audit(&self, path: &std::path::Path) {
        self.runs.set_audit(&self.run_id, path);
    }

    /// A function that notes the run's mode from elsewhere (the executor, when a rejection
    /// changes it), for as long as the run is registered.
    pub fn mode_setter(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let (runs, run_id) = (self.runs.clone(), self.run_id.clone());
        move |mode| {
            if let Some(entry) = lock(&runs.inner).running.get_mut(&run_id) {
                entry.mode = Some(mode.to_string());
            }
        }
    }

    /// A function that notes the run's confidence in a file (its path, the score, why), for
    /// `tokamak.status`, for as long as the run is registered.
    pub fn confidence_setter(&self) -> impl Fn(&str, i32, &str) + Send + Sync + 'static {
        let (runs, run_id) = (self.runs.clone(), self.run_id.clone());
        move |file, score, why| {
            if let Some(entry) = lock(&runs.inner).running.get_mut(&run_id) {
                entry.confidence.insert(file.to_string(), (score, why.to_string()));
            }
        }
    }

    /// Notes the role and mode the run acts in now (for `tokamak.status`).
    pub fn set_mode(&self, mode: &str) {
        if let Some(entry) = lock(&self.runs.inner).running.get_mut(&self.run_id) {
            entry.mode = Some(mode.to_string());
        }
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        lock(&self.runs.inner).running.remove(&self.run_id);
    }
}

impl Runs {
    /// Registers a run on `uri`, unless one is going on it already.
    pub fn start(&self, uri: &Url) -> Result<RunHandle, Busy> {
        let mut inner = lock(&self.inner);
        if let Some((run_id, _)) = inner.running.iter().find(|(_, e)| &e.uri == uri) {
            return Err(Busy { run_id: run_id.clone(), uri: uri.clone() });
        }
        inner.next += 1;
        // unique beyond this process: checkpoints and audit logs outlive it
        let run_id = format!("tokamak-run-{}-{:06x}", inner.next, fastrand::u32(..0x100_0000));
        let cancel = CancellationToken::new();
        inner.running.insert(
            run_id.clone(),
            Entry {
                uri: uri.clone(),
                cancel: cancel.clone(),
                audit: None,
                mode: None,
                confidence: Default::default(),
            },
        );
        Ok(RunHandle { run_id, cancel, runs: self.clone() })
    }

    /// Cancels one run, or every run when `run_id` is `None`. Returns the ids cancelled.
    pub fn cancel(&self, run_id: Option<&str>) -> Vec<String> {
        let inner = lock(&self.inner);
        let mut cancelled = Vec::new();
        for (id, entry) in &inner.running {
            if run_id.is_none_or(|wanted| wanted == id) {
                entry.cancel.cancel();
                cancelled.push(id.clone());
            }
        }
        cancelled
    }

    /// `(run_id, uri, audit log)` of every run going on.
    pub fn list(&self) -> Vec<(String, Url, Option<std::path::PathBuf>)> {
        lock(&self.inner).running.iter().map(|(id, e)| (id.clone(), e.uri.clone(), e.audit.clone())).collect()
    }

    /// The role and mode a run acts in now, if it said.
    pub fn mode(&self, run_id: &str) -> Option<String> {
        lock(&self.inner).running.get(run_id).and_then(|e| e.mode.clone())
    }

    /// The run's confidence in each file it doubted: `(file, score, the last reason)`.
    pub fn confidence(&self, run_id: &str) -> Vec<(String, i32, String)> {
        lock(&self.inner)
            .running
            .get(run_id)
            .map(|e| e.confidence.iter().map(|(f, (s, w))| (f.clone(), *s, w.clone())).collect())
            .unwrap_or_default()
    }

    /// Notes where a run's audit log is (for `tokamak.status`).
    pub fn set_audit(&self, run_id: &str, path: &std::path::Path) {
        if let Some(entry) = lock(&self.inner).running.get_mut(run_id) {
            entry.audit = Some(path.to_path_buf());
        }
    }

    /// Notes how a run ended, for [`Runs::recent`].
    pub fn ended(&self, report: &crate::run::RunReport) {
        let mut inner = lock(&self.inner);
        inner.ended.push_back(Ended {
            run_id: report.run_id.clone(),
            exit_reason: report.exit_reason.as_str().to_string(),
            summary: report.summary.clone(),
            at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        });
        while inner.ended.len() > RECENT {
            inner.ended.pop_front();
        }
    }

    /// The latest runs that ended, newest first.
    pub fn recent(&self) -> Vec<Ended> {
        lock(&self.inner).ended.iter().rev().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_per_document_and_cancel_reaches_it() {
        let runs = Runs::default();
        let a = Url::parse("file:///p/a.py").unwrap();
        let b = Url::parse("file:///p/b.py").unwrap();
        let first = runs.start(&a).unwrap();
        let busy = runs.start(&a).err().unwrap();
        assert_eq!(busy.run_id, first.run_id);
        let other = runs.start(&b).unwrap();
        assert_eq!(runs.cancel(Some(&first.run_id)), vec![first.run_id.clone()]);
        assert!(first.cancel.is_cancelled() && !other.cancel.is_cancelled());
        drop(first);
        assert!(runs.start(&a).is_ok(), "a finished run frees its document");
        assert_eq!(runs.list().len(), 1);
        assert_eq!(runs.cancel(None).len(), 1);
        assert!(other.cancel.is_cancelled());
    }
}
