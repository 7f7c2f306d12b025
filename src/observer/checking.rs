//! Checkers on documents: which apply and are installed (the programs looked up once per root,
//! a checker that would run an untrusted project's code kept off, each absence told once),
//! what checks a document (`Coverage`, with what to install when only the syntax check could),
//! and their runs — debounced after a keystroke, one per checker and document, an older
//! version's cancelled, results kept only for the version they were computed on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::checkers::{self, Checker, RunError, RunInput};
use super::{CLIENT_SOURCE, InFlight, Observer, Origin, SOURCE, STRICT_KEY, SourceEntry, State, Trigger};
use crate::diagnostic::Diagnostic;
use crate::editor::MessageLevel;
use crate::sync::lock;
use crate::syntax::parses_strictly;
use crate::workspace::DocumentSnapshot;

/// Open documents checked again at most when another file of their language changed.
const MOST_DEPENDENTS: usize = 8;

/// What checks a document besides Tokamak's syntax check ([`Observer::coverage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// Checkers that run on it.
    pub checkers: Vec<String>,
    /// Checkers that apply to it but whose programs are not installed.
    pub not_found: Vec<String>,
    /// The editor forwards its own servers' diagnostics for it.
    pub forwarded: bool,
}

impl Coverage {
    /// Only the syntax check ran although checkers for the file exist: a file without syntax
    /// errors is not known to be clean.
    pub fn syntax_only(&self) -> bool {
        self.checkers.is_empty() && !self.forwarded && !self.not_found.is_empty()
    }

    /// What checked the file, for a summary: "syntax, ruff and pyright".
    pub fn checked_by(&self) -> String {
        let mut names = vec!["syntax".to_string()];
        names.extend(self.checkers.iter().cloned());
        if self.forwarded {
            names.push("the editor's servers".to_string());
        }
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// The sentence for a file checked by syntax only: what to install.
    pub fn install_hint(&self) -> String {
        let example = self.not_found.first().map(|name| checkers::install_hint(name)).unwrap_or_default();
        format!(
            "only Tokamak's syntax check ran ({} not installed; install one, for example {example}, to check names, \
             imports and types)",
            self.not_found.join(", ")
        )
    }
}

/// Cancels every run on a document.
pub(super) fn forget_runs(state: &mut State, uri: &Url) {
    let stale: Vec<_> = state.runs.keys().filter(|(u, _)| u == uri).cloned().collect();
    for key in stale {
        if let Some(run) = state.runs.remove(&key) {
            run.task.abort();
        }
    }
}

impl Observer {
    /// What checks a document: the checkers whose programs are there, the ones that apply but
    /// are not installed, and whether the editor forwards its own servers' diagnostics.
    pub fn coverage(&self, snapshot: &DocumentSnapshot) -> Coverage {
        let found: Vec<String> =
            self.available_checkers(snapshot).into_iter().map(|(c, ..)| c.name).collect();
        let not_found = match snapshot.path() {
            Some(path) if self.root_for(&path).is_dir() => self
                .checkers
                .for_document(snapshot.language, &path)
                .into_iter()
                .map(|c| c.name)
                .filter(|name| !found.contains(name))
                .collect(),
            _ => Vec::new(),
        };
        let forwarded =
            lock(&self.state).files.get(&snapshot.uri).is_some_and(|f| f.get(CLIENT_SOURCE).is_some());
        Coverage { checkers: found, not_found, forwarded }
    }

    /// The checkers for a document whose programs are there, looked up once each.
    pub(super) fn available_checkers(
        &self,
        snapshot: &DocumentSnapshot,
    ) -> Vec<(Checker, PathBuf, PathBuf, PathBuf)> {
        let Some(path) = snapshot.path() else {
            return Vec::new();
        };
        let root = self.root_for(&path);
        if !root.is_dir() {
            // not a real file (an in-memory document, a test's made-up URI)
            return Vec::new();
        }
        let mut found = Vec::new();
        for checker in self.checkers.for_document(snapshot.language, &path) {
            if let Some(program) = self.program(&checker, &root) {
                found.push((checker, program, path.clone(), root.clone()));
            }
        }
        found
    }

    pub(super) fn root_for(&self, path: &Path) -> PathBuf {
        match &self.root {
            Some(root) if path.starts_with(root) => root.clone(),
            _ => path.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
        }
    }

    pub(super) fn program(&self, checker: &Checker, root: &Path) -> Option<PathBuf> {
        let key = (checker.name.clone(), root.to_path_buf());
        if let Some(known) = lock(&self.state).programs.get(&key) {
            return known.clone();
        }
        if !self.checkers.trusted
            && let Some((reason, present)) = checker.runs_project_code(root)
        {
            lock(&self.state).programs.insert(key, None);
            let message = format!(
                "Tokamak: the {} checker is off because the folder is not trusted: {reason}. Run `tokamak trust {}` (or trust the workspace in your editor) to use it.",
                checker.name,
                root.display()
            );
            if present {
                self.tell_once(&format!("untrusted:{}", checker.name), MessageLevel::Info, message);
            } else {
                log_once(&message);
            }
            return None;
        }
        let program = checkers::resolve_program(&checker.command, root, self.checkers.trusted);
        lock(&self.state).programs.insert(key, program.clone());
        if program.is_none() {
            let message = format!(
                "Tokamak: the {} checker is off: `{}` was not found on PATH or in the project's tool folders (node_modules/.bin, .tools). Install it, or set checkers.{}.command in tokamak.toml.",
                checker.name, checker.command, checker.name
            );
            if checker.explicit {
                self.tell_once(&format!("missing:{}", checker.name), MessageLevel::Warning, message);
            } else {
                log_once(&message);
            }
        }
        program
    }

    /// Starts the checkers that apply to the snapshot for `trigger`.
    pub fn check(self: &Arc<Self>, snapshot: &DocumentSnapshot, trigger: Trigger) {
        if trigger == Trigger::Change && !self.checkers.run_on_change {
            return;
        }
        let debounce = (trigger == Trigger::Change).then_some(self.checkers.debounce);
        for (checker, program, path, root) in self.available_checkers(snapshot) {
            self.spawn_run(snapshot.clone(), checker, program, path, root, debounce);
        }
    }

    /// Starts runs for the sources that have not reported on the snapshot's version (a
    /// checker that reads other files: or not with them as they were at generation `since`);
    /// returns every active source's name, and those of the checkers that read other files.
    pub(super) fn start_missing_runs(
        self: &Arc<Self>,
        snapshot: &DocumentSnapshot,
        since: u64,
    ) -> (Vec<String>, Vec<String>) {
        // (`since`: the generation of the snapshot's language family)
        let mut cross_file = Vec::new();
        let mut active = vec![SOURCE.to_string()];
        // someone waits for this version's syntax: what waits for a pause in typing is done now
        if snapshot.syntax_pending {
            self.schedule_parse(snapshot, None);
        } else if snapshot.tree.as_ref().is_some_and(|t| t.root_node().has_error())
            && !lock(&self.state)
                .files
                .get(&snapshot.uri)
                .is_some_and(|f| f.reported(SOURCE, snapshot.version))
        {
            self.schedule_repair(snapshot, None);
        }
        // a document whose tree is owed gets its strict look once it is parsed
        if parses_strictly(snapshot.language) && (snapshot.tree.is_some() || snapshot.syntax_pending) {
            active.push(STRICT_KEY.to_string());
            let reported = lock(&self.state)
                .files
                .get(&snapshot.uri)
                .is_some_and(|f| f.reported(STRICT_KEY, snapshot.version));
            if !reported && !snapshot.syntax_pending {
                self.schedule_strict(snapshot, None);
            }
        }
        for (checker, program, path, root) in self.available_checkers(snapshot) {
            active.push(checker.name.clone());
            let reported = {
                let state = lock(&self.state);
                let key = (snapshot.uri.clone(), checker.name.clone());
                state.files.get(&snapshot.uri).is_some_and(|f| f.reported(&checker.name, snapshot.version))
                    && (!checker.cross_file() || state.seen.get(&key).copied().unwrap_or(0) >= since)
            };
            if checker.cross_file() {
                cross_file.push(checker.name.clone());
            }
            if !reported {
                self.spawn_run(snapshot.clone(), checker, program, path, root, None);
            }
        }
        (active, cross_file)
    }

    /// Files that are not open changed on disk (another program wrote them): the open
    /// documents of their languages are checked again by the checkers that read other files,
    /// as after a change of another open document.
    pub fn disk_changed(self: &Arc<Self>, paths: &[PathBuf]) {
        let mut families: Vec<&str> = paths
            .iter()
            .map(|p| crate::text::Language::from_path(p))
            .filter(|l| l.is_parsed())
            .map(|l| l.family())
            .collect();
        families.sort_unstable();
        families.dedup();
        for family in families {
            self.check_family(family, None);
        }
    }

    /// After a change of one document, the other open documents of its language are checked
    /// again by the checkers that read other files (when checkers run on change): what they
    /// said was computed against its older text. At most a few; not for plain text, whose
    /// files do not import one another.
    pub(super) fn check_dependents(self: &Arc<Self>, changed: &DocumentSnapshot) {
        if !self.checkers.run_on_change || !changed.language.is_parsed() {
            return;
        }
        self.check_family(changed.language.family(), Some(&changed.uri));
    }

    /// Runs the cross-file checkers again on the open documents of `family` (`python`,
    /// `ecmascript`) but `except`, at most [`MOST_DEPENDENTS`], after the debounce.
    pub(super) fn check_family(self: &Arc<Self>, family: &str, except: Option<&Url>) {
        let others: Vec<DocumentSnapshot> = lock(&self.workspace)
            .snapshots()
            .into_iter()
            .filter(|s| Some(&s.uri) != except && s.language.family() == family)
            .take(MOST_DEPENDENTS)
            .collect();
        for other in others {
            for (checker, program, path, root) in self.available_checkers(&other) {
                if checker.cross_file() {
                    self.spawn_run(other.clone(), checker, program, path, root, Some(self.checkers.debounce));
                }
            }
        }
    }

    /// Starts one run, cancelling a run of the same checker on an older version of the
    /// document; a run already going on this version is left alone.
    pub(super) fn spawn_run(
        self: &Arc<Self>,
        snapshot: DocumentSnapshot,
        checker: Checker,
        program: PathBuf,
        path: PathBuf,
        root: PathBuf,
        debounce: Option<Duration>,
    ) {
        let key = (snapshot.uri.clone(), checker.name.clone());
        let mut state = lock(&self.state);
        let generation = state.generation_of(snapshot.language);
        if let Some(running) = state.runs.get(&key) {
            let newer = running.version > snapshot.version;
            // a run that reads other files and started before they last changed is redone
            let current = !checker.cross_file() || running.generation >= generation;
            if ((running.version == snapshot.version && current) || newer) && !running.task.is_finished() {
                return;
            }
            running.task.abort();
            tracing::debug!(
                "cancelled {} on {} version {:?}: a newer version came",
                checker.name,
                snapshot.uri,
                running.version
            );
        }
        let observer = Arc::clone(self);
        let version = snapshot.version;
        let task = tokio::spawn(async move {
            if let Some(pause) = debounce {
                tokio::time::sleep(pause).await;
            }
            let Ok(_permit) = Arc::clone(&observer.permits).acquire_owned().await else {
                return;
            };
            let started = std::time::Instant::now();
            // the other documents as they are now, for a checker that reads them
            let (saw, overlays) = if checker.cross_file() {
                let saw = lock(&observer.state).generation_of(snapshot.language);
                let (observer, path) = (Arc::clone(&observer), path.clone());
                let overlays =
                    tokio::task::spawn_blocking(move || observer.overlays(&path)).await.unwrap_or_default();
                (saw, overlays)
            } else {
                (0, Vec::new())
            };
            // a project not trusted supplies no program, not even through a tool's children
            let search_path =
                (!observer.checkers.trusted).then(|| crate::process::path_outside(&root)).flatten();
            let input = RunInput {
                program: &program,
                snapshot: &snapshot,
                path: &path,
                root: &root,
                overlays: &overlays,
                search_path,
                confinement: &observer.checkers.confinement,
            };
            let result = checkers::run(&checker, input).await;
            tracing::debug!("{} on {} took {:?}", checker.name, snapshot.uri, started.elapsed());
            observer.finish_run(&snapshot, &checker, (generation, saw), result).await;
        });
        state.runs.insert(key, InFlight { version, generation, task });
    }

    /// Stores a run's result if the document is still at the version it checked, else
    /// discards it; then publishes.
    pub(super) async fn finish_run(
        &self,
        snapshot: &DocumentSnapshot,
        checker: &Checker,
        (started, saw): (u64, u64),
        result: Result<Vec<Diagnostic>, RunError>,
    ) {
        let _publishing = self.publishing.lock().await;
        let key = (snapshot.uri.clone(), checker.name.clone());
        let current = lock(&self.workspace).snapshot(&snapshot.uri);
        {
            let mut state = lock(&self.state);
            // this run's own entry only, not one that replaced it meanwhile
            if state.runs.get(&key).is_some_and(|r| r.version == snapshot.version && r.generation == started)
            {
                state.runs.remove(&key);
            }
        }
        let Some(current) = current else {
            return;
        };
        if current.version != snapshot.version {
            tracing::debug!(
                "discarded {}'s results for version {:?} of {}: it is at {:?}",
                checker.name,
                snapshot.version,
                snapshot.uri,
                current.version
            );
            return;
        }
        let entry = match result {
            Ok(diagnostics) => {
                SourceEntry { origin: Origin::Server, version: snapshot.version, diagnostics, failure: None }
            }
            Err(err @ RunError::NotConfigured { .. }) => {
                let message = format!("Tokamak: {err}; its checks are off here.");
                if checker.explicit {
                    self.tell_once(&format!("unconfigured:{}", checker.name), MessageLevel::Warning, message);
                } else if lock(&self.state).told.insert(format!("unconfigured:{}", checker.name)) {
                    tracing::info!("{message}");
                }
                SourceEntry {
                    origin: Origin::Server,
                    version: snapshot.version,
                    diagnostics: Vec::new(),
                    failure: None,
                }
            }
            Err(err) => {
                let message = err.to_string();
                self.tell_once(
                    &format!("failed:{}", checker.name),
                    MessageLevel::Warning,
                    format!("Tokamak: {message}."),
                );
                // keep what the checker said last (moved along with the text) rather than
                // pretending the file became clean
                let previous = lock(&self.state)
                    .files
                    .get(&snapshot.uri)
                    .and_then(|f| f.get(&checker.name).map(|e| e.diagnostics.clone()))
                    .unwrap_or_default();
                SourceEntry {
                    origin: Origin::Server,
                    version: snapshot.version,
                    diagnostics: previous,
                    failure: Some(message),
                }
            }
        };
        {
            let mut state = lock(&self.state);
            state.files.entry(snapshot.uri.clone()).or_default().set(&checker.name, entry);
            if checker.cross_file() {
                state.seen.insert(key, saw);
            }
        }
        self.changed.notify_waiters();
        self.publish(&current).await;
    }

    /// Shows a problem to the user the first time it happens; later it is only logged.
    pub(super) fn tell_once(&self, key: &str, level: MessageLevel, message: String) {
        let first = lock(&self.state).told.insert(key.to_string());
        // logged at debug: the message itself reaches the user (and the editor's log)
        tracing::debug!("{message}");
        if !first {
            return;
        }
        let editor = Arc::clone(&self.editor);
        tokio::spawn(async move { editor.show_message(level, message).await });
    }
}

/// Logs `message` once in the process: every Observer (a run's private ones too) looks its
/// checkers up, and the log would say the same absence at each.
fn log_once(message: &str) {
    static SAID: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<String>>> =
        std::sync::OnceLock::new();
    if lock(SAID.get_or_init(Default::default)).insert(message.to_string()) {
        tracing::info!("{message}");
    }
}
