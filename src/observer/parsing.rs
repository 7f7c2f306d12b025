//! Parse scheduling: a document's tree brought up to date off the keystroke when it is large
//! or its reparses slow (urgently when a request waits on it, else in the background), its
//! syntax diagnostics placed and its strict parse run after the publish, and the syntax
//! entries a version computes.

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::publish::entry_of;
use super::store::{FileDiagnostics, Origin, SourceEntry};
use super::{
    BACKGROUND_PARSES, Background, Diagnostic, Observer, PARSE_PAUSE, SOURCE, STRICT_KEY, SYNTAX_CODE,
    Severity,
};
use crate::sync::lock;
use crate::syntax::{
    MAX_SYNTAX_PROBLEMS, Placement, SyntaxProblem, parses_strictly, place, strict_errors_as,
};
use crate::text::TextRange;
use crate::workspace::{DocumentSnapshot, ParseJob};

impl Observer {
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
    pub(super) async fn parse_and_install(self: Arc<Self>, job: ParseJob, priority: Priority) {
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
    pub(super) async fn parsed_now(&self, snapshot: &DocumentSnapshot) -> (bool, bool) {
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

    /// After a document changed: a large document's parse in the background, else what its
    /// syntax entry left for later (`schedule_syntax`), after `pause` when typing may go on.
    pub(super) fn schedule_parses(
        self: &Arc<Self>,
        snapshot: &DocumentSnapshot,
        later: (bool, bool),
        pause: Option<Duration>,
    ) {
        if snapshot.syntax_pending {
            self.schedule_parse(snapshot, pause);
        } else {
            self.schedule_syntax(snapshot, later, pause);
        }
    }

    /// After a document's syntax entry is set: places a large document's syntax errors in the
    /// background (`later.0`), or has the language's own parser look at a document
    /// tree-sitter accepts (`later.1`), after `pause` when typing may go on.
    pub(super) fn schedule_syntax(
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
    pub(super) fn still_at(&self, uri: &Url, version: Option<i32>, text: &ropey::Rope) -> bool {
        lock(&self.workspace)
            .snapshot(uri)
            .is_some_and(|s| s.version == version && s.tree.is_some() && s.rope == *text)
    }

    /// Parses a document tree-sitter accepts with the language's own parser, off the
    /// keystroke (after `pause`, when typing may go on), and publishes what it rejects for
    /// that version if the document is still at it. Until then the last findings stay, moved
    /// along with the text, so nothing flickers while typing; an unchanged verdict (the usual
    /// case: a clean file stays clean) is not published again.
    pub(super) fn schedule_strict(self: &Arc<Self>, snapshot: &DocumentSnapshot, pause: Option<Duration>) {
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
    pub(super) fn in_background(
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
}

/// Where a document's parse runs: a request waits on it, or nobody does.
#[derive(Debug, Clone, Copy)]
pub(super) enum Priority {
    Urgent,
    Background,
}

/// Clears a document's mark of a parse under way when the parse's task ends — installed,
/// refused, failed or aborted alike — and tells those waiting for it.
pub(super) struct ParseEnded {
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

/// Documents up to this size get their syntax errors placed on the keystroke; a larger
/// document with errors gets them from [`Observer::schedule_repair`] (SPEC §5: a keystroke's
/// publish stays well under 5 ms). Placing costs about 3 ms at 16 KiB, 9 ms at 60 KB and
/// 35 ms in a 10 000-line file (`benches/document.rs`).
pub(super) const INLINE_REPAIR_BYTES: usize = 16 * 1024;

/// Sets the document's syntax entry when that is quick; `true` when it must be placed in the
/// background (a large document with syntax errors), the entry left as it was meanwhile.
/// Also returns the problems placed, when it placed them.
pub(super) fn set_syntax(
    file: &mut FileDiagnostics,
    snapshot: &DocumentSnapshot,
) -> (bool, Option<Placement>) {
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
pub(super) fn placing_waits(snapshot: &DocumentSnapshot) -> bool {
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
pub(super) fn set_strict(file: &mut FileDiagnostics, snapshot: &DocumentSnapshot) -> bool {
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
pub(super) fn strict_entry(snapshot: &DocumentSnapshot) -> SourceEntry {
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
    let declaration = crate::language::is_declaration_file(std::path::Path::new(snapshot.uri.path()));
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
pub(super) struct Computed {
    entry: SourceEntry,
    placed: Option<Placement>,
}

pub(super) fn syntax_entry(snapshot: &DocumentSnapshot) -> Computed {
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
pub(super) fn placement_of(snapshot: &DocumentSnapshot) -> Placement {
    match &snapshot.tree {
        Some(tree) => place(tree, &snapshot.rope, snapshot.language),
        None => Placement::default(),
    }
}

pub(super) fn as_diagnostics(problems: &[SyntaxProblem]) -> Vec<Diagnostic> {
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
