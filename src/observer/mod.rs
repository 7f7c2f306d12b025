//! The Observer: what is wrong with each document, from every source, kept per version.
//!
//! Sources: the built-in syntax check (tree-sitter, then the language's own parser on what
//! tree-sitter accepts), external checkers Tokamak runs itself (`checking.rs` decides which
//! and runs them, `checkers/` sets them up from settings), and what the editor forwards
//! (`tokamak/clientDiagnostics`, `codeAction` contexts). Tokamak publishes its own sources merged, one publish per file and version;
//! what the editor forwards is observed for the agent and never published back.
//!
//! The Observer is also the document pipeline: opening, changing, saving and closing go
//! through it, so the text, the store's ranges and what is published can never disagree.
//! [`Observer::settled`] is the fix loop's "observe" step.

mod checking;
use checking::forget_runs;
pub mod checkers;
mod problems;
mod store;
mod summary;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;
use url::Url;

// the vocabulary of diagnostics lives below the Observer (`crate::diagnostic`), so the
// `Editor` trait can name it without a circle
pub use crate::diagnostic::{CheckerFix, Diagnostic, Related, Severity};
pub use checking::Coverage;
pub use problems::about_names;
pub use store::{FileDiagnostics, Origin, SourceEntry};
pub use summary::error_summary;

use crate::config::PublishMode;
use crate::editor::Editor;
use crate::sync::lock;
use crate::syntax::{
    MAX_SYNTAX_PROBLEMS, Placement, SyntaxProblem, parses_strictly, place, strict_errors_as,
};
use crate::text::{PositionEncoding, TextChange, TextRange};
use crate::workspace::{ChangeError, ChangeReport, DocumentSnapshot, ParseJob, SyntaxAfter, Workspace};
use checkers::Checkers;

/// The `source` of Tokamak's own diagnostics.
pub const SOURCE: &str = "tokamak";
/// The `code` of a syntax diagnostic.
pub const SYNTAX_CODE: &str = "syntax";
/// The store key of what the language's own parser finds in a document tree-sitter accepts
/// (published as Tokamak's syntax diagnostics): tree-sitter's error recovery takes some texts
/// the language rejects, and "clean" must mean what the language means.
pub const STRICT_KEY: &str = "tokamak:strict";
/// The store key of diagnostics forwarded by `tokamak/clientDiagnostics`.
pub const CLIENT_SOURCE: &str = "client";
/// The store key of diagnostics seen in `codeAction` contexts.
pub const CODE_ACTION_SOURCE: &str = "code-action";
/// How long typing must pause before a large document is reparsed in the background.
const PARSE_PAUSE: Duration = Duration::from_millis(30);

/// Background parses run one at a time, in the whole process.
static BACKGROUND_PARSES: Semaphore = Semaphore::const_new(1);

/// Why a document is being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Open,
    Change,
    Save,
    /// Asked for: `settled`, `tokamak check`, `tokamak.diagnostics`.
    Demand,
}

/// What [`Observer::settled`] found.
#[derive(Debug, Clone)]
pub struct Settled {
    pub version: Option<i32>,
    /// Every source's diagnostics for this version, de-duplicated, in document order.
    pub diagnostics: Vec<Diagnostic>,
    /// `(source, why)` for sources whose run on this version failed.
    pub failures: Vec<(String, String)>,
    /// Sources that had not reported on this version when the timeout passed.
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    #[error("{0} is not open")]
    NotOpen(Url),
    #[error("{uri} changed while waiting: version {expected:?} is gone, the document is at {current:?}")]
    Changed { uri: Url, expected: Option<i32>, current: Option<i32> },
}

/// What [`Observer::in_background`] computes: the store key it sets, what it is (for the log),
/// and whether an entry equal to the one before is published again.
#[derive(Clone, Copy)]
struct Background {
    key: &'static str,
    what: &'static str,
    publish_unchanged: bool,
}

struct InFlight {
    version: Option<i32>,
    /// Its language family's generation when it started (see [`State::generation`]).
    generation: u64,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct State {
    files: HashMap<Url, FileDiagnostics>,
    runs: HashMap<(Url, String), InFlight>,
    /// Where each checker's program is for a root (`None`: not found), looked up once.
    programs: HashMap<(String, PathBuf), Option<PathBuf>>,
    /// Problems already told to the user, so each is told once.
    told: HashSet<String>,
    /// The sources the editor has forwarded diagnostics from (lowercase): its own servers.
    forwarded: HashSet<String>,
    /// Each document's syntax problems as placed for its syntax diagnostics, with the version
    /// they were placed on (the fix ladder reads the token a problem says is missing from
    /// them instead of placing them again).
    placed: HashMap<Url, (Option<i32>, Arc<Placement>)>,
    /// Counts every open, change and close of a document, per language family: what a
    /// checker that reads other files (pyright, mypy, tsc) reported was computed with the other
    /// documents of its language as they were at one generation, and is not an answer for a
    /// later one.
    generation: HashMap<&'static str, u64>,
    /// The generation each such checker's last stored result for a document saw.
    seen: HashMap<(Url, String), u64>,
}

impl State {
    /// The generation of `language`'s family (see [`State::generation`]).
    fn generation_of(&self, language: crate::text::Language) -> u64 {
        self.generation.get(language.family()).copied().unwrap_or(0)
    }

    /// Sets a document's syntax entries from its tree (see [`set_syntax`] and
    /// [`set_strict`]) and keeps the problems placed; returns what is left for later.
    fn set_syntax_of(&mut self, snapshot: &DocumentSnapshot) -> (bool, bool) {
        let file = self.files.entry(snapshot.uri.clone()).or_default();
        let (later, placed) = set_syntax(file, snapshot);
        let strict = set_strict(file, snapshot);
        if let Some(placed) = placed {
            self.placed.insert(snapshot.uri.clone(), (snapshot.version, Arc::new(placed)));
        }
        (later, strict)
    }
}

pub struct Observer {
    workspace: Arc<Mutex<Workspace>>,
    /// The workspaces of the Observers this one was made beside (`private`), nearest first:
    /// their open documents are what the user has, and a check here sees them too.
    parents: Vec<Arc<Mutex<Workspace>>>,
    /// Texts a check here sees for files instead of the disk's or the parents' (absolute
    /// path, text): the files a run changed, as they were before it (`Observer::before`).
    pinned: Vec<(PathBuf, String)>,
    editor: Arc<dyn Editor>,
    checkers: Checkers,
    root: Option<PathBuf>,
    state: Mutex<State>,
    /// Held while the text, the store and a publish must agree: a checker finishing while a
    /// change is applied waits, so nothing is published against the wrong text.
    publishing: tokio::sync::Mutex<()>,
    /// Woken whenever a source reports or a document changes (for `settled`).
    changed: Notify,
    permits: Arc<Semaphore>,
    /// Told of every document whose tree is up to date after it opened or changed (the live
    /// index takes its facts from that tree instead of parsing the text again).
    parsed: Mutex<Vec<ParsedListener>>,
}

/// What [`Observer::on_parsed`] calls.
pub type ParsedListener = Box<dyn Fn(&DocumentSnapshot) + Send + Sync>;

impl Observer {
    pub fn new(
        workspace: Arc<Mutex<Workspace>>,
        editor: Arc<dyn Editor>,
        checkers: Checkers,
        root: Option<PathBuf>,
    ) -> Arc<Observer> {
        let permits = Arc::new(Semaphore::new(checkers.max_concurrent.max(1)));
        Arc::new(Observer {
            workspace,
            parents: Vec::new(),
            pinned: Vec::new(),
            editor,
            checkers,
            root,
            state: Mutex::new(State::default()),
            publishing: tokio::sync::Mutex::new(()),
            changed: Notify::new(),
            permits,
            parsed: Mutex::new(Vec::new()),
        })
    }

    /// Calls `listener` with every document whose tree is up to date after it opened,
    /// changed or was saved — on the keystroke, or when its background parse is done — and
    /// with documents of languages Tokamak does not parse; never with one whose tree is still
    /// owed (`syntax_pending`).
    pub fn on_parsed(&self, listener: ParsedListener) {
        lock(&self.parsed).push(listener);
    }

    fn tell_parsed(&self, snapshot: &DocumentSnapshot) {
        if snapshot.syntax_pending {
            return;
        }
        for listener in lock(&self.parsed).iter() {
            listener(snapshot);
        }
    }

    /// Opens a document, publishes its syntax diagnostics and starts its checkers. A large
    /// document is first shown what the language's own parser finds (a few milliseconds where
    /// tree-sitter's first parse takes tens), and its tree, with what tree-sitter finds,
    /// follows from the background.
    pub async fn open(
        self: &Arc<Self>,
        uri: Url,
        language_id: &str,
        version: i32,
        text: &str,
    ) -> DocumentSnapshot {
        let publishing = self.publishing.lock().await;
        let snapshot = lock(&self.workspace).open(uri, language_id, version, text);
        {
            let mut state = lock(&self.state);
            *state.generation.entry(snapshot.language.family()).or_default() += 1;
            forget_runs(&mut state, &snapshot.uri);
            state.files.insert(snapshot.uri.clone(), FileDiagnostics::default());
        }
        let repair_later = if snapshot.syntax_pending {
            let first = snapshot.clone();
            let strict = tokio::task::spawn_blocking(move || strict_entry(&first)).await;
            match strict {
                Ok(entry) => {
                    lock(&self.state).files.entry(snapshot.uri.clone()).or_default().set(STRICT_KEY, entry)
                }
                Err(err) => tracing::error!("{}: the language's own parse failed: {err}", snapshot.uri),
            }
            (false, false)
        } else {
            lock(&self.state).set_syntax_of(&snapshot)
        };
        self.after_change(&snapshot).await;
        drop(publishing);
        if snapshot.syntax_pending {
            self.schedule_parse(&snapshot, None);
        } else {
            self.schedule_syntax(&snapshot, repair_later, None);
        }
        self.check(&snapshot, Trigger::Open);
        self.tell_parsed(&snapshot);
        snapshot
    }

    /// Applies one `didChange`, moves every stored diagnostic along with the text,
    /// publishes, and (when configured) starts checkers after a pause.
    pub async fn change(
        self: &Arc<Self>,
        uri: &Url,
        version: i32,
        changes: &[TextChange],
        encoding: PositionEncoding,
    ) -> Result<(DocumentSnapshot, ChangeReport), ChangeError> {
        let publishing = self.publishing.lock().await;
        let (snapshot, report) = lock(&self.workspace).change(uri, version, changes, encoding)?;
        let repair_later = {
            let mut state = lock(&self.state);
            *state.generation.entry(snapshot.language.family()).or_default() += 1;
            let file = state.files.entry(uri.clone()).or_default();
            file.shift(&report.applied);
            match report.syntax {
                SyntaxAfter::Parsed => state.set_syntax_of(&snapshot),
                // typed inside a comment: what the syntax checks found on the version before
                // holds for this one
                SyntaxAfter::Unchanged => {
                    file.carry(SOURCE, report.previous_version, snapshot.version);
                    file.carry(STRICT_KEY, report.previous_version, snapshot.version);
                    (false, false)
                }
                // a large document's syntax waits for its background parse (and a large
                // document's syntax errors for their repair); until then its earlier syntax
                // diagnostics stay, moved along with the edit
                SyntaxAfter::Pending => (false, false),
            }
        };
        self.after_change(&snapshot).await;
        drop(publishing);
        if snapshot.syntax_pending {
            self.schedule_parse(&snapshot, Some(PARSE_PAUSE));
        } else {
            self.schedule_syntax(&snapshot, repair_later, Some(PARSE_PAUSE));
        }
        self.check(&snapshot, Trigger::Change);
        self.check_dependents(&snapshot);
        self.tell_parsed(&snapshot);
        Ok((snapshot, report))
    }

    /// After `didSave`: resynchronises if the saved text differs, publishes, runs checkers.
    pub async fn save(
        self: &Arc<Self>,
        uri: &Url,
        text: Option<&str>,
    ) -> Result<DocumentSnapshot, ChangeError> {
        let publishing = self.publishing.lock().await;
        let (snapshot, replaced) = lock(&self.workspace).save(uri, text)?;
        let repair_later = {
            let mut state = lock(&self.state);
            if replaced {
                // the text changed under the same version number: nothing computed on it
                // before, and no run still going on it, may be believed
                forget_runs(&mut state, uri);
                state.files.insert(uri.clone(), FileDiagnostics::default());
            }
            // a large document being parsed keeps its syntax until the parse is done
            if snapshot.syntax_pending { (false, false) } else { state.set_syntax_of(&snapshot) }
        };
        self.after_change(&snapshot).await;
        drop(publishing);
        if snapshot.syntax_pending {
            self.schedule_parse(&snapshot, None);
        } else {
            self.schedule_syntax(&snapshot, repair_later, None);
        }
        self.check(&snapshot, Trigger::Save);
        if replaced {
            self.tell_parsed(&snapshot);
        }
        Ok(snapshot)
    }

    /// Forgets a document: its runs are cancelled and its diagnostics cleared.
    pub async fn close(&self, uri: &Url) -> bool {
        let _publishing = self.publishing.lock().await;
        let closed = lock(&self.workspace).snapshot(uri);
        let was_open = lock(&self.workspace).close(uri);
        {
            let mut state = lock(&self.state);
            if let Some(closed) = closed {
                *state.generation.entry(closed.language.family()).or_default() += 1;
            }
            state.files.remove(uri);
            state.placed.remove(uri);
            forget_runs(&mut state, uri);
        }
        self.editor.clear_diagnostics(uri).await;
        self.changed.notify_waiters();
        was_open
    }

    /// Records what the editor reports (`key` is [`CLIENT_SOURCE`] or
    /// [`CODE_ACTION_SOURCE`]); never published. A report for an older version than the
    /// document's is dropped: its ranges belong to text that is gone. `true` when it names a
    /// source the editor had not forwarded before (what is published may change: see
    /// [`Observer::republish`]).
    pub fn observe_editor(
        &self,
        snapshot: &DocumentSnapshot,
        key: &str,
        version: Option<i32>,
        diagnostics: Vec<Diagnostic>,
    ) -> bool {
        if let (Some(reported), Some(current)) = (version, snapshot.version)
            && reported < current
        {
            tracing::debug!(
                "dropped {key} diagnostics for version {reported} of {}: it is at {current}",
                snapshot.uri
            );
            return false;
        }
        let mut state = lock(&self.state);
        // the editor's own servers: sources of what it reports that are not Tokamak's
        // publish coming back (a code-action context holds Tokamak's diagnostics too)
        let ours: Vec<(String, String)> = state
            .files
            .get(&snapshot.uri)
            .map(|f| f.published(&[]).into_iter().map(|d| (d.source, d.message)).collect())
            .unwrap_or_default();
        let sources: HashSet<String> = diagnostics
            .iter()
            .filter(|d| !ours.iter().any(|(source, message)| *source == d.source && *message == d.message))
            .map(|d| d.source.to_ascii_lowercase())
            .filter(|s| s != SOURCE && s != "editor")
            .collect();
        let entry = SourceEntry {
            origin: Origin::Editor,
            version: version.or(snapshot.version),
            diagnostics,
            failure: None,
        };
        let new_sources = sources.iter().any(|s| !state.forwarded.contains(s));
        state.forwarded.extend(sources);
        state.files.entry(snapshot.uri.clone()).or_default().set(key, entry);
        drop(state);
        self.changed.notify_waiters();
        new_sources
    }

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

    /// The document as it is now, if open.
    /// An Observer of its own, with the same checkers, root and syntax settings, that
    /// publishes to `editor`: for files the editor does not have open (the agent checks and
    /// fixes them without their diagnostics reaching the editor's store).
    /// Its checks see this Observer's open documents (and those it sees) for the files it does
    /// not hold itself.
    pub fn private(&self, editor: Arc<dyn Editor>) -> Arc<Observer> {
        let mut parents = vec![Arc::clone(&self.workspace)];
        parents.extend(self.parents.iter().cloned());
        self.private_seeing(editor, parents, self.pinned.clone())
    }

    /// An Observer of its own whose checks see the workspace as it was before a run: `before`
    /// (absolute path, text) for the files the run changed, the disk for the rest — not the
    /// buffers the run is changing, which would hide the errors it made as ones it found.
    pub fn before(&self, editor: Arc<dyn Editor>, before: Vec<(PathBuf, String)>) -> Arc<Observer> {
        self.private_seeing(editor, Vec::new(), before)
    }

    fn private_seeing(
        &self,
        editor: Arc<dyn Editor>,
        parents: Vec<Arc<Mutex<Workspace>>>,
        pinned: Vec<(PathBuf, String)>,
    ) -> Arc<Observer> {
        let settings = lock(&self.workspace).settings().clone();
        let workspace = Arc::new(Mutex::new(Workspace::new(settings)));
        let permits = Arc::new(Semaphore::new(self.checkers.max_concurrent.max(1)));
        Arc::new(Observer {
            workspace,
            parents,
            pinned,
            editor,
            checkers: self.checkers.clone(),
            root: self.root.clone(),
            state: Mutex::new(State::default()),
            publishing: tokio::sync::Mutex::new(()),
            changed: Notify::new(),
            permits,
            parsed: Mutex::new(Vec::new()),
        })
    }

    /// The open documents other than `checked` whose text is not the disk's (absolute path,
    /// text), this Observer's first, then its parent's: what a checker reading other files
    /// must see instead of the disk.
    pub(super) fn overlays(&self, checked: &Path) -> Vec<(PathBuf, String)> {
        let mut texts: Vec<(PathBuf, String)> = lock(&self.workspace)
            .snapshots()
            .into_iter()
            .filter_map(|s| Some((s.path()?, s.rope.to_string())))
            .collect();
        texts.extend(self.pinned.iter().cloned());
        for parent in &self.parents {
            texts.extend(
                lock(parent).snapshots().into_iter().filter_map(|s| Some((s.path()?, s.rope.to_string()))),
            );
        }
        let mut out: Vec<(PathBuf, String)> = Vec::new();
        for (path, text) in texts {
            if path == checked || out.iter().any(|(p, _)| *p == path) {
                continue;
            }
            if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
                out.push((path, text));
            }
        }
        out
    }

    /// The document with its tree up to date, for what needs the tree at once: a parse of
    /// its owed tree started now, at the keystroke's priority — or, when a parse of it is
    /// under way (in the background, or for another request), that one waited for. A version
    /// is never parsed twice. Past a deadline, what there is.
    pub async fn parsed_snapshot(self: &Arc<Self>, uri: &Url) -> Option<DocumentSnapshot> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut started = false;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let snapshot = {
                let mut workspace = lock(&self.workspace);
                let snapshot = workspace.snapshot(uri)?;
                if !snapshot.syntax_pending {
                    return Some(snapshot);
                }
                let parsing = workspace.parsing(uri);
                if started && !parsing {
                    // the parse this started ended and the text moved on meanwhile (or the
                    // parse failed): what there is now
                    return Some(snapshot);
                }
                // the parse runs in a task of its own, so it is installed even when this
                // request is cancelled
                if let Some(job) = workspace.background_parse_job(uri) {
                    started = true;
                    tokio::spawn(Arc::clone(self).parse_and_install(job, Priority::Urgent));
                }
                snapshot
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => return Some(snapshot),
            }
        }
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
    fn covered(&self, file: &FileDiagnostics, version: Option<i32>) -> Vec<String> {
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

    fn current(&self, uri: &Url, version: Option<i32>) -> Result<DocumentSnapshot, SettleError> {
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

    /// Publishes the document's merged diagnostics and wakes `settled` waiters. Called with
    /// `publishing` held.
    /// Parses a document whose tree is owed a parse off the keystroke — once typing pauses
    /// (`pause`), or at once (a large document just opened) — one parse of a document at a
    /// time. The tree is installed even when the text moved on meanwhile: it is told of the
    /// edits since, and owes only a quick reparse, scheduled in turn.
    pub(super) fn schedule_parse(self: &Arc<Self>, snapshot: &DocumentSnapshot, pause: Option<Duration>) {
        let observer = Arc::clone(self);
        let (uri, version) = (snapshot.uri.clone(), snapshot.version);
        tokio::spawn(async move {
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
            // one background parse at a time: twenty large documents opened at once would
            // otherwise build twenty trees side by side (a hundred megabytes more at the
            // peak); a request that needs a tree meanwhile parses it at once
            let Ok(_turn) = BACKGROUND_PARSES.acquire().await else { return };
            let job = {
                let mut workspace = lock(&observer.workspace);
                // only the version typing paused at is parsed
                if workspace.snapshot(&uri).is_none_or(|s| s.version != version) {
                    return;
                }
                workspace.background_parse_job(&uri)
            };
            if let Some(job) = job {
                observer.parse_and_install(job, Priority::Background).await;
            }
        });
    }

    /// Runs a parse taken with [`Workspace::background_parse_job`] and installs its tree,
    /// sets the syntax entries from it and publishes; the document is marked as being parsed
    /// until it ends, and those waiting on it are told.
    async fn parse_and_install(self: Arc<Self>, job: ParseJob, priority: Priority) {
        let uri = job.uri.clone();
        // the document is marked as being parsed until this is dropped, whatever happens
        let ended =
            ParseEnded { observer: Arc::clone(&self), uri: uri.clone(), generation: job.generation() };
        let work = move || {
            let started = std::time::Instant::now();
            let tree = job.parse();
            (job, tree, started.elapsed())
        };
        let parsed = match priority {
            Priority::Background => crate::background::run(work).await.map_err(|e| e.to_string()),
            Priority::Urgent => tokio::task::spawn_blocking(work).await.map_err(|e| e.to_string()),
        };
        let (job, tree, took) = match parsed {
            Ok((job, Ok(tree), took)) => (job, tree, took),
            Ok((_, Err(err), _)) => return tracing::warn!("{uri}: {err}"),
            Err(err) => return tracing::error!("{uri}: the parse failed: {err}"),
        };
        let publishing = self.publishing.lock().await;
        let installed = lock(&self.workspace).finish_parse_timed(&job, tree, Some(took));
        drop(ended);
        let Some(snapshot) = installed else {
            // a newer tree was installed meanwhile or the text was replaced: the keystrokes
            // that came while this parse ran gave theirs up for it, so a parse the document
            // still owes is scheduled here, or it would wait for the next keystroke (and
            // someone settling it, for good)
            drop(publishing);
            let owed = lock(&self.workspace).snapshot(&uri).filter(|s| s.syntax_pending);
            if let Some(owed) = owed {
                self.schedule_parse(&owed, Some(PARSE_PAUSE));
            }
            return;
        };
        if snapshot.syntax_pending {
            // typed meanwhile: the tree caught up with the edits and owes a quick reparse
            drop(publishing);
            self.schedule_parse(&snapshot, Some(PARSE_PAUSE));
            return;
        }
        let later = self.parsed_now(&snapshot).await;
        drop(publishing);
        self.schedule_syntax(&snapshot, later, None);
    }

    /// A document's tree has just come up to date (off the keystroke): its syntax entries are
    /// set from it, published when that changes what is shown, and those listening are told.
    /// Returns what is left for later, as [`set_syntax`] and [`set_strict`] say. Called with
    /// `publishing` held.
    async fn parsed_now(&self, snapshot: &DocumentSnapshot) -> (bool, bool) {
        let (later, changed) = {
            let mut state = lock(&self.state);
            let file = state.files.entry(snapshot.uri.clone()).or_default();
            let before = (entry_of(file, SOURCE), entry_of(file, STRICT_KEY));
            let strict_known = file.reported(STRICT_KEY, snapshot.version);
            let (repair, strict) = state.set_syntax_of(snapshot);
            let file = state.files.entry(snapshot.uri.clone()).or_default();
            let after = (entry_of(file, SOURCE), entry_of(file, STRICT_KEY));
            ((repair, strict && !strict_known), before != after)
        };
        if changed {
            self.after_change(snapshot).await;
        } else {
            self.changed.notify_waiters();
        }
        self.tell_parsed(snapshot);
        later
    }

    /// After a document's syntax entry is set: places a large document's syntax errors in the
    /// background (`later.0`), or has the language's own parser look at a document
    /// tree-sitter accepts (`later.1`), after `pause` when typing may go on.
    fn schedule_syntax(
        self: &Arc<Self>,
        snapshot: &DocumentSnapshot,
        later: (bool, bool),
        pause: Option<Duration>,
    ) {
        if later.0 {
            self.schedule_repair(snapshot, pause);
        }
        if later.1 {
            self.schedule_strict(snapshot, pause);
        }
    }

    /// Whether the document is still at `version` with exactly `text` and a tree (the same
    /// version can hold other text: a save that resynchronised, a reopen).
    fn still_at(&self, uri: &Url, version: Option<i32>, text: &ropey::Rope) -> bool {
        lock(&self.workspace)
            .snapshot(uri)
            .is_some_and(|s| s.version == version && s.tree.is_some() && s.rope == *text)
    }

    /// Parses a document tree-sitter accepts with the language's own parser, off the
    /// keystroke (after `pause`, when typing may go on), and publishes what it rejects for
    /// that version if the document is still at it. Until then the last findings stay, moved
    /// along with the text, so nothing flickers while typing; an unchanged verdict (the usual
    /// case: a clean file stays clean) is not published again.
    fn schedule_strict(self: &Arc<Self>, snapshot: &DocumentSnapshot, pause: Option<Duration>) {
        let job = Background { key: STRICT_KEY, what: "the language's own parse", publish_unchanged: false };
        self.in_background(snapshot, pause, job, |snapshot| Computed {
            entry: strict_entry(snapshot),
            placed: None,
        });
    }

    /// Places a large document's syntax errors (SPEC S2: a few re-parses per error, too many
    /// for the keystroke) off the keystroke, then publishes them for that version if the
    /// document is still at it; a newer change scheduled its own. While typing goes on
    /// (`pause`) only the version it pauses at is worth the re-parses.
    pub(super) fn schedule_repair(self: &Arc<Self>, snapshot: &DocumentSnapshot, pause: Option<Duration>) {
        let job = Background { key: SOURCE, what: "placing its syntax errors", publish_unchanged: true };
        self.in_background(snapshot, pause, job, syntax_entry);
    }

    /// Computes `job.key`'s entry for the snapshot on a blocking thread (after `pause`), and
    /// stores and publishes it if the document is still at that version with that text.
    fn in_background(
        self: &Arc<Self>,
        snapshot: &DocumentSnapshot,
        pause: Option<Duration>,
        job: Background,
        compute: fn(&DocumentSnapshot) -> Computed,
    ) {
        let observer = Arc::clone(self);
        let snapshot = snapshot.clone();
        tokio::spawn(async move {
            let (uri, version, text) = (snapshot.uri.clone(), snapshot.version, snapshot.rope.clone());
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
                if !observer.still_at(&uri, version, &text) {
                    return;
                }
            }
            // done meanwhile (asked for at once by someone waiting), or carried over
            if lock(&observer.state).files.get(&uri).is_some_and(|f| f.reported(job.key, version)) {
                return;
            }
            let Computed { entry, placed } = match crate::background::run(move || compute(&snapshot)).await {
                Ok(computed) => computed,
                Err(err) => return tracing::error!("{uri}: {} failed: {err}", job.what),
            };
            let publishing = observer.publishing.lock().await;
            if !observer.still_at(&uri, version, &text) {
                return;
            }
            let Some(snapshot) = lock(&observer.workspace).snapshot(&uri) else { return };
            let unchanged = {
                let mut state = lock(&observer.state);
                let file = state.files.entry(uri).or_default();
                let unchanged = file
                    .get(job.key)
                    .map_or(entry.diagnostics.is_empty(), |old| old.diagnostics == entry.diagnostics);
                file.set(job.key, entry);
                if job.key == SOURCE {
                    // the errors are placed: one account of them, not the language's as well
                    set_strict(file, &snapshot);
                }
                if let Some(placed) = placed {
                    state.placed.insert(snapshot.uri.clone(), (snapshot.version, Arc::new(placed)));
                }
                unchanged
            };
            if unchanged && !job.publish_unchanged {
                observer.changed.notify_waiters();
            } else {
                observer.after_change(&snapshot).await;
            }
            drop(publishing);
        });
    }

    async fn after_change(&self, snapshot: &DocumentSnapshot) {
        self.changed.notify_waiters();
        self.publish(snapshot).await;
    }

    async fn publish(&self, snapshot: &DocumentSnapshot) {
        let hidden = self.hidden(snapshot);
        let diagnostics =
            lock(&self.state).files.get(&snapshot.uri).map(|f| f.published(&hidden)).unwrap_or_default();
        self.editor.publish_diagnostics(snapshot, diagnostics).await;
    }

    /// The checkers whose own runs are not published for a document: `publish = "off"`, and
    /// with `"auto"` those the editor has its own server for (it forwarded their
    /// diagnostics). Their results still reach the agent.
    fn hidden(&self, snapshot: &DocumentSnapshot) -> Vec<String> {
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

/// Where a document's parse runs: a request waits on it, or nobody does.
#[derive(Debug, Clone, Copy)]
enum Priority {
    Urgent,
    Background,
}

/// Clears a document's mark of a parse under way when the parse's task ends — installed,
/// refused, failed or aborted alike — and tells those waiting for it.
struct ParseEnded {
    observer: Arc<Observer>,
    uri: Url,
    generation: u64,
}

impl Drop for ParseEnded {
    fn drop(&mut self) {
        lock(&self.observer.workspace).parse_ended(&self.uri, self.generation);
        self.observer.changed.notify_waiters();
    }
}

/// A source's entry as it matters to what is published: its version and diagnostics.
fn entry_of(file: &FileDiagnostics, key: &str) -> Option<(Option<i32>, Vec<Diagnostic>)> {
    file.get(key).map(|e| (e.version, e.diagnostics.clone()))
}

/// Documents up to this size get their syntax errors placed on the keystroke; a larger
/// document with errors gets them from [`Observer::schedule_repair`] (SPEC §5: a keystroke's
/// publish stays well under 5 ms). Placing costs about 3 ms at 16 KiB, 9 ms at 60 KB and
/// 35 ms in a 10 000-line file (`benches/document.rs`).
const INLINE_REPAIR_BYTES: usize = 16 * 1024;

/// Sets the document's syntax entry when that is quick; `true` when it must be placed in the
/// background (a large document with syntax errors), the entry left as it was meanwhile.
/// Also returns the problems placed, when it placed them.
fn set_syntax(file: &mut FileDiagnostics, snapshot: &DocumentSnapshot) -> (bool, Option<Placement>) {
    if placing_waits(snapshot) {
        return (true, None);
    }
    let placed = placement_of(snapshot);
    let diagnostics = as_diagnostics(&placed.placed);
    file.set(
        SOURCE,
        SourceEntry { origin: Origin::Server, version: snapshot.version, diagnostics, failure: None },
    );
    (false, Some(placed))
}

/// Whether a document's syntax errors are placed in the background (a document over 16 KiB
/// with errors).
fn placing_waits(snapshot: &DocumentSnapshot) -> bool {
    snapshot
        .tree
        .as_ref()
        .is_some_and(|tree| snapshot.rope.len_bytes() > INLINE_REPAIR_BYTES && tree.root_node().has_error())
}

/// What a change computes for a document's syntax before its publish: the diagnostics, or
/// `None` when they are placed in the background (a document over 16 KiB with errors).
pub fn keystroke_syntax(snapshot: &DocumentSnapshot) -> Option<Vec<Diagnostic>> {
    if placing_waits(snapshot) {
        return None;
    }
    Some(syntax_diagnostics(snapshot))
}

/// Whether the language's own parser is to look at the document: its tree is clean and the
/// language has a parser of its own. A tree with errors shows those, and the strict entry for
/// the version is empty (one account of a broken file, not two).
fn set_strict(file: &mut FileDiagnostics, snapshot: &DocumentSnapshot) -> bool {
    let Some(tree) = &snapshot.tree else { return false };
    if !parses_strictly(snapshot.language) {
        return false;
    }
    if tree.root_node().has_error() {
        // until tree-sitter's errors are placed (a large document's, in the background), the
        // language's own account of them stays shown
        if !file.reported(SOURCE, snapshot.version) {
            return false;
        }
        let entry = SourceEntry {
            origin: Origin::Server,
            version: snapshot.version,
            diagnostics: Vec::new(),
            failure: None,
        };
        file.set(STRICT_KEY, entry);
        return false;
    }
    true
}

/// What the language's own parser rejects in the snapshot's text, as syntax diagnostics;
/// nothing when the snapshot's tree has errors (those are what is shown).
fn strict_entry(snapshot: &DocumentSnapshot) -> SourceEntry {
    let empty = SourceEntry {
        origin: Origin::Server,
        version: snapshot.version,
        diagnostics: Vec::new(),
        failure: None,
    };
    // (a document just opened, whose tree is still to come, is judged by this alone)
    if snapshot.tree.as_ref().is_some_and(|tree| tree.root_node().has_error()) {
        return empty;
    }
    let text = snapshot.rope.to_string();
    let path = snapshot.uri.path();
    let declaration = [".d.ts", ".d.mts", ".d.cts"].iter().any(|end| path.ends_with(end));
    let boundary = |mut at: usize| {
        at = at.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let diagnostics = strict_errors_as(snapshot.language, declaration, &text)
        .unwrap_or_default()
        .into_iter()
        .take(MAX_SYNTAX_PROBLEMS)
        .map(|error| {
            let start = boundary(error.at);
            let range = TextRange::new(start, boundary(error.end).max(start));
            Diagnostic::new(range, Severity::Error, SOURCE, Some(SYNTAX_CODE.to_string()), error.message)
        })
        .collect();
    SourceEntry { diagnostics, ..empty }
}

/// What a background computation of an entry gives: the entry, and the syntax problems it
/// placed (for the placement).
struct Computed {
    entry: SourceEntry,
    placed: Option<Placement>,
}

fn syntax_entry(snapshot: &DocumentSnapshot) -> Computed {
    let placed = placement_of(snapshot);
    let entry = SourceEntry {
        origin: Origin::Server,
        version: snapshot.version,
        diagnostics: as_diagnostics(&placed.placed),
        failure: None,
    };
    Computed { entry, placed: Some(placed) }
}

/// Syntax diagnostics from the snapshot's tree; none for a language Tokamak does not parse.
pub fn syntax_diagnostics(snapshot: &DocumentSnapshot) -> Vec<Diagnostic> {
    as_diagnostics(&placement_of(snapshot).placed)
}

/// The syntax problems of the snapshot's tree, found and placed where each repair goes.
fn placement_of(snapshot: &DocumentSnapshot) -> Placement {
    match &snapshot.tree {
        Some(tree) => place(tree, &snapshot.rope, snapshot.language),
        None => Placement::default(),
    }
}

fn as_diagnostics(problems: &[SyntaxProblem]) -> Vec<Diagnostic> {
    problems
        .iter()
        .map(|problem| {
            Diagnostic::new(
                problem.range,
                Severity::Error,
                SOURCE,
                Some(SYNTAX_CODE.to_string()),
                problem.message.clone(),
            )
        })
        .collect()
}
