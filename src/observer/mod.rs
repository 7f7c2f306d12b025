//! The Observer: what is wrong with each document, from every source, kept per version.
//!
//! Sources: the built-in syntax check (tree-sitter, then the language's own parser on what
//! tree-sitter accepts), external checkers Tokamak runs itself (`checking.rs` decides which
//! and runs them, `checkers/` sets them up from settings), and what the editor forwards
//! (`tokamak/clientDiagnostics`, `codeAction` contexts). Tokamak publishes its own sources merged, one publish per file and version;
//! what the editor forwards is observed for the agent and never published back.
//!
//! The Observer is also the document pipeline: opening, changing, saving and closing go
//! through it (here), so the text, the store's ranges and what is published can never
//! disagree. Parsing off the keystroke is scheduled in `parsing.rs`; what is kept, published
//! and waited for is `publish.rs` ([`Observer::settled`] is the fix loop's "observe" step).

mod checking;
use checking::forget_runs;
pub mod checkers;
mod parsing;
mod problems;
mod publish;
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
pub use parsing::{keystroke_syntax, syntax_diagnostics};
pub use problems::about_names;
pub use store::{FileDiagnostics, Origin, SourceEntry};
pub use summary::error_summary;

use crate::editor::Editor;
use crate::sync::lock;
use crate::syntax::Placement;
use crate::text::{PositionEncoding, TextChange};
use crate::workspace::{ChangeError, ChangeReport, DocumentSnapshot, SyntaxAfter, Workspace};
use checkers::Checkers;
use parsing::{set_strict, set_syntax, strict_entry};

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
        self.schedule_parses(&snapshot, repair_later, None);
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
        self.schedule_parses(&snapshot, repair_later, Some(PARSE_PAUSE));
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
        self.schedule_parses(&snapshot, repair_later, None);
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
}
