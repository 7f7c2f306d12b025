//! One open document: its text and its syntax tree, and how the tree keeps up with the text —
//! parsed on the keystroke when that is quick, in the background when the document is large
//! or its reparses slow (or on opening, for a large one), not at all for an edit inside a
//! comment (the syntax cannot have changed); the edits a background parse has not seen are
//! kept, so its tree is brought up to date instead of thrown away.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ropey::Rope;
use tree_sitter::Tree;
use url::Url;

use super::DocumentSnapshot;
use crate::config::SyntaxSettings;
use crate::syntax::{CommentSpan, SyntaxTree, comment_edit};
use crate::text::{AppliedChange, ByteEdit, TextDocument};

/// Documents up to this size are parsed on opening; a larger one is shown the language's own
/// verdict at once (ruff's or oxc's parser, ten times as fast as tree-sitter's first parse)
/// and gets its tree in the background.
pub const OPEN_PARSE_BYTES: usize = 16 * 1024;

/// A reparse on the keystroke may take this long (the median of the last few) before a
/// document's reparses are done in the background: a keystroke's diagnostics within 1 ms at
/// its p90 leave it half of that. An edit near the end of a 10 000-line Python file costs
/// tree-sitter about 1 ms (its module node, 5 000 statements long, is rebuilt), so such a file
/// is reparsed 30 ms after typing pauses, and its keystrokes only move the tree along.
const KEYSTROKE_PARSE_BUDGET: Duration = Duration::from_micros(500);

/// How many recent reparse times decide between the keystroke and the background.
const REPARSE_SAMPLES: usize = 5;

/// What a change did to the syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntaxAfter {
    /// The tree is current (or the language is not parsed, or the document too large).
    Parsed,
    /// The edit was inside a comment: the syntax before holds; the tree follows.
    Unchanged,
    /// The tree waits for a background parse.
    Pending,
}

pub(super) struct OpenDocument {
    pub(super) text: TextDocument,
    /// The tree of the text as it was at edit `parsed_at`, told of every edit since.
    syntax: Option<SyntaxTree>,
    pub(super) syntax_skipped: Option<String>,
    /// The tree is behind the text (or there is none yet): a parse is owed.
    pub(super) parse_pending: bool,
    /// Incremental edits made so far, and how many the tree was parsed after.
    edits: u64,
    parsed_at: u64,
    /// The edits the tree was not parsed after, numbered, to bring a background parse's tree
    /// up to the text when the text moved on while it ran.
    unparsed: Vec<(u64, ByteEdit)>,
    /// Which text this is: a whole-text replacement starts a new one, whose parses owe
    /// nothing to the old.
    pub(super) generation: u64,
    /// While every edit since the last parse stayed inside one comment: that comment.
    comment: Option<CommentSpan>,
    /// A background parse is under way.
    pub(super) parsing: bool,
    /// The last reparses' times.
    reparses: VecDeque<Duration>,
    /// Tree-sitter parses of this document's text (its versions), for `tokamak.status`.
    pub(super) parses: u64,
    /// When it was last opened, edited or parsed (a workspace-wide count): the documents
    /// touched longest ago let their trees go first.
    pub(super) touched: u64,
    /// Parses of a text that had been parsed already (never, unless something is wrong).
    pub(super) parsed_twice: u64,
}

/// A pending parse, done off the workspace's lock.
pub struct ParseJob {
    pub uri: Url,
    pub version: Option<i32>,
    pub language: crate::text::Language,
    pub rope: Rope,
    /// The document's tree, told of every edit since it was parsed (`None`: its first parse).
    pub old_tree: Option<Tree>,
    pub(super) generation: u64,
    /// The edit the job's text is at.
    pub(super) at: u64,
}

impl Drop for ParseJob {
    fn drop(&mut self) {
        super::free_tree(self.rope.len_bytes(), self.old_tree.take());
    }
}

impl ParseJob {
    /// Which text of the document this is ([`super::Workspace::parse_ended`]).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Parses (tens of milliseconds for a large file: run it off the async threads).
    pub fn parse(&self) -> Result<Tree, crate::syntax::SyntaxError> {
        match &self.old_tree {
            Some(old) => crate::syntax::reparse_detached(self.language, &self.rope, old),
            None => crate::syntax::parse_detached(self.language, &self.rope),
        }
    }
}

impl OpenDocument {
    pub(super) fn new(text: TextDocument) -> OpenDocument {
        OpenDocument {
            text,
            syntax: None,
            syntax_skipped: None,
            parse_pending: false,
            edits: 0,
            parsed_at: 0,
            unparsed: Vec::new(),
            generation: next_generation(),
            comment: None,
            parsing: false,
            reparses: VecDeque::with_capacity(REPARSE_SAMPLES),
            parses: 0,
            parsed_twice: 0,
            touched: 0,
        }
    }

    pub(super) fn snapshot(&self, uri: Url) -> DocumentSnapshot {
        DocumentSnapshot {
            uri,
            version: self.text.version(),
            language: self.text.language(),
            rope: self.text.rope().clone(),
            tree: self.syntax.as_ref().filter(|_| !self.parse_pending).map(|s| s.tree().clone()),
            syntax_skipped: self.syntax_skipped.clone(),
            syntax_pending: self.parse_pending,
        }
    }

    /// Parses a whole new text: at once when `now` or when it is small, else the parse is
    /// owed to the background (a large document being opened).
    pub(super) fn parse_whole(&mut self, settings: &SyntaxSettings, now: bool) {
        self.let_syntax_go();
        self.unparsed.clear();
        self.comment = None;
        self.parse_pending = false;
        self.parsed_at = self.edits;
        let language = self.text.language();
        if !language.is_parsed() {
            return;
        }
        let rope = self.text.rope();
        self.syntax_skipped = skip_reason(rope, settings, true);
        if self.syntax_skipped.is_some() {
            return;
        }
        if !now && rope.len_bytes() > OPEN_PARSE_BYTES {
            self.parse_pending = true;
            return;
        }
        self.parses += 1;
        self.syntax = match SyntaxTree::parse(language, rope) {
            Ok(tree) => tree,
            Err(err) => {
                tracing::error!("{err}");
                self.syntax_skipped = Some(err.to_string());
                None
            }
        };
    }

    /// Brings the syntax up to date after `edits` (already applied to the text).
    ///
    /// `inserted_nul` says whether the edits inserted a NUL byte; when they are all
    /// incremental and did not, the (otherwise whole-document) binary check is skipped — it
    /// is the one part of a keystroke that would cost time linear in the file's size.
    pub(super) fn refresh_syntax(
        &mut self,
        settings: &SyntaxSettings,
        edits: &[AppliedChange],
        inserted_nul: bool,
    ) -> SyntaxAfter {
        let language = self.text.language();
        if !language.is_parsed() {
            return SyntaxAfter::Parsed;
        }
        let incremental: Option<Vec<ByteEdit>> = edits
            .iter()
            .map(|e| match e {
                AppliedChange::Incremental(edit) => Some(*edit),
                AppliedChange::Full => None,
            })
            .collect();
        let Some(incremental) = incremental.filter(|e| !e.is_empty()) else {
            // a whole new text: nothing to reuse (a large one is parsed in the background)
            self.new_generation();
            self.parse_whole(settings, false);
            return if self.parse_pending { SyntaxAfter::Pending } else { SyntaxAfter::Parsed };
        };
        let was_skipped = self.syntax_skipped.is_some();
        self.syntax_skipped = skip_reason(self.text.rope(), settings, inserted_nul || was_skipped);
        if self.syntax_skipped.is_some() {
            self.let_syntax_go();
            self.unparsed.clear();
            self.parse_pending = false;
            self.comment = None;
            return SyntaxAfter::Parsed;
        }
        if was_skipped {
            self.new_generation();
            self.parse_whole(settings, true);
            return SyntaxAfter::Parsed;
        }
        // inside a comment: the syntax stands; the tree is told and reparsed later
        if let ([edit], Some(syntax)) = (incremental.as_slice(), &mut self.syntax) {
            let rope = self.text.rope();
            let span = match (self.parse_pending, self.comment) {
                (false, _) => comment_edit(syntax.tree(), language, rope, edit),
                (true, Some(comment)) => comment.admits(rope, edit),
                (true, None) => None,
            };
            if let Some(span) = span {
                self.note_edit(*edit);
                self.comment = Some(span);
                self.parse_pending = true;
                return SyntaxAfter::Unchanged;
            }
        }
        self.comment = None;
        for edit in &incremental {
            self.note_edit(*edit);
        }
        // without a tree its first parse is still to come (or under way): it will be told
        // these edits
        let background = self.text.rope().len_bytes() > settings.background_parse_bytes || self.slow();
        let Some(syntax) = self.syntax.as_mut().filter(|_| !background) else {
            self.parse_pending = true;
            return SyntaxAfter::Pending;
        };
        let started = Instant::now();
        self.parses += 1;
        match syntax.reparse(self.text.rope()) {
            Ok(()) => {
                let took = started.elapsed();
                self.parsed(self.edits, Some(took));
                SyntaxAfter::Parsed
            }
            Err(err) => {
                tracing::warn!("incremental reparse failed, parsing afresh: {err}");
                self.parse_whole(settings, true);
                SyntaxAfter::Parsed
            }
        }
    }

    /// Tells the tree of an edit and keeps it for a background parse under way.
    fn note_edit(&mut self, edit: ByteEdit) {
        self.edits += 1;
        if let Some(syntax) = &mut self.syntax {
            syntax.edit(&edit);
        }
        self.unparsed.push((self.edits, edit));
    }

    /// The tree now accounts for every edit up to `at`.
    fn parsed(&mut self, at: u64, took: Option<Duration>) {
        self.parsed_at = at;
        self.unparsed.retain(|(n, _)| *n > at);
        self.parse_pending = !self.unparsed.is_empty();
        if !self.parse_pending {
            self.comment = None;
        }
        if let Some(took) = took {
            if self.reparses.len() == REPARSE_SAMPLES {
                self.reparses.pop_front();
            }
            self.reparses.push_back(took);
        }
    }

    /// Whether this document's recent reparses are too slow for the keystroke (their median,
    /// so one slow reparse — a line inserted into a long class — does not decide).
    fn slow(&self) -> bool {
        if self.reparses.len() < 3 {
            return false;
        }
        let mut times: Vec<Duration> = self.reparses.iter().copied().collect();
        times.sort();
        times[times.len() / 2] > KEYSTROKE_PARSE_BUDGET
    }

    /// Whether the document holds a tree that [`OpenDocument::let_tree_go`] could drop.
    pub(super) fn holds_tree(&self) -> bool {
        self.syntax.is_some() && self.text.rope().len_bytes() > OPEN_PARSE_BYTES
    }

    /// Drops the tree of a document nobody is editing (to keep the memory of many large open
    /// documents bounded): it is owed a parse from scratch, done off the keystroke when the
    /// document is next edited or something needs its tree. The syntax diagnostics of its
    /// version stay what they were.
    pub(super) fn let_tree_go(&mut self) {
        self.let_syntax_go();
        self.unparsed.clear();
        self.comment = None;
        self.parse_pending = true;
        self.parsed_at = self.edits;
    }

    /// Drops the tree, freed in the background when it is large.
    fn let_syntax_go(&mut self) {
        super::free_tree(self.text.rope().len_bytes(), self.syntax.take());
    }

    /// A text no parse under way was made for: its result will not be installed, and a
    /// background parse of this text may start at once (the one under way marks its end
    /// only for its own generation, so the mark is taken off here, or no background parse
    /// would start again and a document would wait for its tree for good).
    fn new_generation(&mut self) {
        self.generation = next_generation();
        self.parsing = false;
    }

    /// What a parse of the text as it is now needs, when one is owed.
    pub(super) fn parse_job(&self, uri: &Url) -> Option<ParseJob> {
        if !self.parse_pending {
            return None;
        }
        Some(ParseJob {
            uri: uri.clone(),
            version: self.text.version(),
            language: self.text.language(),
            rope: self.text.rope().clone(),
            old_tree: self.syntax.as_ref().map(|s| s.tree().clone()),
            generation: self.generation,
            at: self.edits,
        })
    }

    /// Installs the tree `job` parsed, told of the edits made since the job's text; `false`
    /// when it is of no use (the text was replaced, or a newer tree is installed).
    pub(super) fn finish_parse(&mut self, job: &ParseJob, tree: Tree, took: Option<Duration>) -> bool {
        if job.generation != self.generation || job.at < self.parsed_at {
            return false;
        }
        self.parses += 1;
        if job.at == self.parsed_at && !self.parse_pending {
            // parsed meanwhile by a request that needed the tree at once
            self.parsed_twice += 1;
            return true;
        }
        let mut tree = tree;
        for (_, edit) in self.unparsed.iter().filter(|(n, _)| *n > job.at) {
            tree.edit(&crate::syntax::input_edit(edit));
        }
        match &mut self.syntax {
            Some(syntax) => super::free_tree(self.text.rope().len_bytes(), syntax.set_tree(tree)),
            None => match SyntaxTree::from_tree(job.language, tree) {
                Ok(syntax) => self.syntax = Some(syntax),
                Err(err) => {
                    tracing::error!("{err}");
                    return false;
                }
            },
        }
        self.parsed(job.at, took.filter(|_| job.old_tree.is_some()));
        true
    }
}

/// A number no other text of any document has had, so a parse of a replaced text (or of a
/// closed document's) is never installed in its place.
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn skip_reason(rope: &Rope, settings: &SyntaxSettings, scan_for_nul: bool) -> Option<String> {
    let len = rope.len_bytes();
    if len > settings.max_file_bytes {
        return Some(format!(
            "it is {:.1} MB, more than syntax.max_file_bytes ({:.1} MB)",
            megabytes(len),
            megabytes(settings.max_file_bytes)
        ));
    }
    if scan_for_nul && rope.chunks().any(|chunk| chunk.as_bytes().contains(&0)) {
        return Some("it contains NUL bytes, so it is not source text".to_string());
    }
    None
}

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
