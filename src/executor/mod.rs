//! The executor (SPEC X1–X3, G1): the one way the agent acts on a project. This file is the
//! run's side of it — the workspace's shared context, what one run has done (its counts, the
//! files it changed and their texts before, the states it has been in), and the dispatch of
//! each [`Action`] to its family, timed and audited through the run's [`Journal`]:
//!
//! - the gate every action of the model's passes first: mode, role, approval and limits
//!   (`gate.rs`);
//! - looking (`look.rs`) and navigating the index (`navigate.rs`);
//! - changing files: edit, create, delete, rename (`change.rs`), open documents through the
//!   editor (`document.rs`), others on disk (`disk_editor.rs`), every path confined to the
//!   workspace (`confine.rs`);
//! - commands (`command.rs`), allowed by the policy (`policy.rs`), in the run's shadow copy,
//!   isolated by bwrap where it works (`sandbox.rs`); commits (`git.rs`); a run rolled back
//!   (`rollback.rs`);
//! - the tools of MCP servers, through the session's [`Toolbox`](crate::toolbox::Toolbox)
//!   (`outside.rs`).

mod change;
mod command;
mod confine;
mod disk_editor;
mod document;
mod gate;
mod git;
mod ground;
mod look;
mod navigate;
mod outside;
pub mod policy;
mod rollback;
mod sandbox;
mod verify;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use url::Url;

// the action vocabulary and the text cut live below the executor, for the rooms that
// name actions (modes) or cut text (context) without depending on it
pub use crate::action::{ACTION_NAMES, Action, ActionKind, ActionResult};
pub use crate::text::cut;
pub use change::unified_diff;
pub use confine::{Access, Confined, Confinement, Refused};
pub use disk_editor::{DiskEditor, write_edit};
pub use document::{DocumentEditError, apply_to_document, catch_up};
use gate::Authority;
pub use gate::{LimitHit, ModeListener};
pub use ground::{ASK_BELOW, ConfidenceListener, GO_ON, REREAD_BELOW};
pub use policy::{Approver, ChangedFile, Decision, OnBehalfOf, RefuseUnlisted, Request, WaitClock};
pub use rollback::{RollbackError, RollbackReport, rollback};
pub use sandbox::{Placement, SandboxError, ShadowCopy, placement, survey, sweep};
pub use verify::{TestVerdict, failed_tests, not_run_reason, why_failed};

use crate::config::{ApprovalLevel, CommandSettings, LimitSettings, SandboxSettings};
use crate::editor::Editor;
use crate::history::{History, Journal};
use crate::observer::Observer;
use crate::sync::lock;
use crate::workspace::read_text;

/// What the executor may do in a workspace: the settings that decide it.
#[derive(Debug, Clone)]
pub struct ExecutorSettings {
    pub commands: CommandSettings,
    pub sandbox: SandboxSettings,
    pub auto_commit: bool,
    pub limits: LimitSettings,
    pub test_command: Option<Vec<String>>,
    /// `[test] impact_first` and `then_all`.
    pub test_impact_first: bool,
    pub test_then_all: bool,
    /// The least similarity a fuzzy SEARCH match needs (`fix.similarity`).
    pub similarity: f32,
    /// The folder is trusted: its own allow-list applies and git hooks run.
    pub trusted: bool,
    /// Variables holding keys under names that do not say so (the configured `api_key_env`).
    pub key_variables: Vec<String>,
    /// `approval`: what the approver is asked (changes at medium, everything at high).
    pub approval: ApprovalLevel,
    /// `[context]`: what prompts show of the workspace.
    pub context: crate::config::ContextSettings,
    /// `[mcp] call_timeout_s` and `max_result_bytes`: one MCP tool call's bounds;
    /// `startup_timeout_s`: how long a step waits for servers still starting.
    pub mcp_call_timeout_s: u64,
    pub mcp_startup_timeout_s: u64,
    pub mcp_max_result_bytes: usize,
}

impl ExecutorSettings {
    /// From the workspace's settings and its trust.
    pub fn from_settings(settings: &crate::config::Settings, trusted: bool) -> ExecutorSettings {
        ExecutorSettings {
            commands: settings.commands.clone(),
            sandbox: settings.sandbox.clone(),
            auto_commit: settings.auto_commit,
            limits: settings.limits.clone(),
            test_command: settings.test.command.clone(),
            test_impact_first: settings.test.impact_first,
            test_then_all: settings.test.then_all,
            similarity: settings.fix.similarity,
            trusted,
            key_variables: settings.key_variables(),
            approval: settings.approval,
            context: settings.context.clone(),
            mcp_call_timeout_s: settings.mcp.call_timeout_s,
            mcp_startup_timeout_s: settings.mcp.startup_timeout_s,
            mcp_max_result_bytes: settings.mcp.max_result_bytes,
        }
    }
}

/// What the runs of one workspace share.
pub struct ExecutorContext {
    pub confinement: Confinement,
    pub observer: Arc<Observer>,
    pub editor: Arc<dyn Editor>,
    pub settings: ExecutorSettings,
    pub approver: Arc<dyn Approver>,
    pub history: Option<Arc<History>>,
    /// The workspace index the navigation actions read (and the run's writes update).
    pub index: Option<Arc<crate::context::LiveIndex>>,
    /// The skills prompts list and the `skill` action reads (a trusted project's and the
    /// user's own).
    pub skills: crate::context::Skills,
    /// The model's summaries of large files, kept in the project's cache and made in the
    /// background for the session's runs.
    pub summaries: crate::context::Summaries,
    /// The MCP servers' tools (set once the session has started them).
    toolbox: std::sync::OnceLock<Arc<dyn crate::toolbox::Toolbox>>,
    /// The user has been told that commands run without a sandbox.
    sandbox_told: AtomicBool,
    /// Copies the test command ran in and may run in again (candidates, baselines, a fix's
    /// final check), each with the placement it was made for: brought up to date instead of
    /// made anew, so a candidate's copy costs what changed, not the whole workspace.
    test_copies: Mutex<Vec<(Placement, ShadowCopy)>>,
    /// How many such copies were made (their folders' names).
    test_copies_made: std::sync::atomic::AtomicUsize,
}

impl ExecutorContext {
    /// From now on the model is offered `toolbox`'s tools (once: a second is ignored).
    pub fn set_toolbox(&self, toolbox: Arc<dyn crate::toolbox::Toolbox>) {
        let _ = self.toolbox.set(toolbox);
    }

    /// The MCP servers' tools, when the session has any.
    pub fn toolbox(&self) -> Option<&Arc<dyn crate::toolbox::Toolbox>> {
        self.toolbox.get()
    }

    /// The open documents' texts, by absolute path: what the user has, saved or not.
    pub(super) fn buffers(&self) -> HashMap<PathBuf, String> {
        self.observer
            .open_documents()
            .into_iter()
            .filter_map(|snapshot| Some((snapshot.path()?, snapshot.rope.to_string())))
            .collect()
    }

    /// A file's text as the user sees it: the open document's, else the disk's (`None`: not
    /// readable as text).
    pub fn current_text(&self, path: &Path) -> Option<String> {
        let uri = Url::from_file_path(path).ok()?;
        match self.observer.snapshot(&uri) {
            Some(snapshot) => Some(snapshot.rope.to_string()),
            None => read_text(path).ok(),
        }
    }

    pub fn new(
        confinement: Confinement,
        observer: Arc<Observer>,
        editor: Arc<dyn Editor>,
        settings: ExecutorSettings,
        approver: Arc<dyn Approver>,
        history: Option<Arc<History>>,
        index: Option<Arc<crate::context::LiveIndex>>,
    ) -> Arc<ExecutorContext> {
        let skills = crate::context::Skills::load(confinement.root(), settings.trusted);
        let summaries = crate::context::Summaries::for_project(confinement.root());
        Arc::new(ExecutorContext {
            skills,
            summaries,
            toolbox: std::sync::OnceLock::new(),
            confinement,
            observer,
            editor,
            settings,
            approver,
            history,
            index,
            sandbox_told: AtomicBool::new(false),
            test_copies: Mutex::new(Vec::new()),
            test_copies_made: std::sync::atomic::AtomicUsize::new(0),
        })
    }
}

/// What one run has done so far.
#[derive(Debug, Default)]
struct RunState {
    tool_calls: u32,
    revisions: u32,
    /// Files the run changed (relative), in order of first change.
    changed: Vec<String>,
    /// Every change's files (relative), in order: what a step wrote is what came after its
    /// mark (`Executor::writes`).
    writes: Vec<String>,
    /// Each file's fingerprint as the run last read or wrote it (`None`: absent).
    seen: HashMap<PathBuf, Option<crate::context::Fingerprint>>,
    /// The sha256 of each text the run wrote to a file, in order (an edit undone is a text
    /// seen before).
    written: HashMap<PathBuf, Vec<String>>,
    /// How sure the run is of each file it doubted (SPEC G4).
    confidence: HashMap<PathBuf, ground::Confidence>,
    /// The sha256 each file last drifted to (drift is charged and asked about once per text).
    drift_seen: HashMap<PathBuf, String>,
    /// Files the model must read again before a whole new text is written over them, and why
    /// ("was changed by the run's own fix"): completes "<file> … since you read it".
    unread: HashMap<PathBuf, &'static str>,
    /// Errors the run was charged for leaving in each file.
    errors_charged: HashMap<PathBuf, usize>,
    /// Each changed file's text before the run first changed it (`None`: it did not exist).
    originals: HashMap<String, Option<String>>,
    /// How often each state (the changed files' texts, an action and its result) was seen.
    visits: HashMap<[u8; 32], usize>,
    /// Every change the model asked for and what became of it, in order.
    changes: Vec<ChangeAttempt>,
    /// Each file that changed under the run, once per text, and what became of it.
    drift: Vec<String>,
    /// The run's last test run failed (what lets a tester fix the source).
    tests_failing: bool,
}

/// One change (edit, create, delete, rename) the model asked for, and what became of it:
/// what a step's ending is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeAttempt {
    /// The path as the model named it (the first, for a rename).
    pub path: String,
    pub fate: ChangeFate,
    /// The sentence the model was told (empty when it landed).
    pub why: String,
}

/// What became of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeFate {
    /// It is in the user's text.
    Landed,
    /// What it would put there is there already (a step redoing what landed before): the
    /// text is as asked.
    AlreadyThere,
    /// It could not be made as asked (a SEARCH not found, nothing to change, no such file).
    Failed,
    /// A rule refused it: the mode, the role, the path, or the approver with nobody to ask.
    Refused,
    /// The user said no.
    Rejected,
    /// It was approved (or needed no approval) and did not land: the user typed on its lines,
    /// the file changed under the run, the editor refused the write.
    NotApplied,
}

/// Who asked for an action: the model (its actions are checked and, at `approval =
/// "high"`, all asked), or the run itself (the observation's test command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Model,
    Run,
}

/// One run's executor.
pub struct Executor {
    context: Arc<ExecutorContext>,
    /// The role the model acts in and the machine of its modes (SPEC M1, M3): what it may
    /// do, checked before each of its actions. `None`: only the settings' limits.
    authority: Mutex<Option<Authority>>,
    /// Told of each mode a rejection leads to and back (for the run's status).
    mode_listener: Mutex<Option<ModeListener>>,
    /// Told of each change of confidence in a file (for the run's status).
    confidence_listener: Mutex<Option<ConfidenceListener>>,
    /// The time spent waiting for a person's answers.
    waits: Arc<WaitClock>,
    journal: Option<Arc<Journal>>,
    cancel: CancellationToken,
    state: Mutex<RunState>,
    placement: Mutex<Option<Result<Placement, String>>>,
    shadow: tokio::sync::Mutex<Option<ShadowCopy>>,
    /// Where the run's last command ran (for the step's report).
    commands_ran: Mutex<Option<&'static str>>,
    run_id: String,
    /// The approval level the front end picked for this run (ACP's picker), over the settings'.
    approval: Mutex<Option<ApprovalLevel>>,
    /// The run answers a question: it only looks, whatever its mode would allow.
    looking_only: std::sync::atomic::AtomicBool,
}

impl Executor {
    pub fn new(
        context: Arc<ExecutorContext>,
        run_id: &str,
        journal: Option<Arc<Journal>>,
        cancel: CancellationToken,
    ) -> Executor {
        Executor {
            context,
            authority: Mutex::new(None),
            mode_listener: Mutex::new(None),
            confidence_listener: Mutex::new(None),
            waits: Arc::new(WaitClock::default()),
            journal,
            cancel,
            state: Mutex::new(RunState::default()),
            placement: Mutex::new(None),
            shadow: tokio::sync::Mutex::new(None),
            commands_ran: Mutex::new(None),
            run_id: run_id.to_string(),
            approval: Mutex::new(None),
            looking_only: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn context(&self) -> &Arc<ExecutorContext> {
        &self.context
    }

    /// From now on the run asks as `level` says (a front end's picker), not as the settings do.
    pub fn set_approval(&self, level: ApprovalLevel) {
        *lock(&self.approval) = Some(level);
    }

    /// From now on the model may only look (a question is answered, nothing changed or run).
    pub fn look_only(&self) {
        self.looking_only.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the run asks a person before it acts: the picked level, else the settings'.
    pub fn approval(&self) -> ApprovalLevel {
        lock(&self.approval).unwrap_or(self.context.settings.approval)
    }

    /// Where the run's commands ran (its last one), once one has: "sandboxed: …" or "in a
    /// copy …".
    pub fn commands_ran(&self) -> Option<&'static str> {
        *lock(&self.commands_ran)
    }

    /// Files the run changed so far (relative to the root).
    pub fn changed_files(&self) -> Vec<String> {
        lock(&self.state).changed.clone()
    }

    /// A change the model asked for and what became of it (see [`Executor::changes_since`]).
    pub(super) fn record_change(&self, action: &Action, fate: ChangeFate, why: &str) {
        let path = action.paths().first().map(|p| p.to_string()).unwrap_or_default();
        let attempt = ChangeAttempt { path, fate, why: crate::text::cut(why, 600) };
        lock(&self.state).changes.push(attempt);
    }

    /// The files that changed under the run and what became of each ("calc.py: moderate
    /// drift (…); changes made only where they still apply exactly").
    pub fn drift_notes(&self) -> Vec<String> {
        lock(&self.state).drift.clone()
    }

    /// A mark in the changes the model asked for: what [`Executor::changes_since`] counts
    /// from.
    pub fn change_mark(&self) -> usize {
        lock(&self.state).changes.len()
    }

    /// The changes the model asked for since `mark`, in order, with what became of each.
    pub fn changes_since(&self, mark: usize) -> Vec<ChangeAttempt> {
        lock(&self.state).changes.iter().skip(mark).cloned().collect()
    }

    /// A mark in the run's changes: what [`Executor::written_since`] counts from.
    pub fn writes(&self) -> usize {
        lock(&self.state).writes.len()
    }

    /// The files changed since `mark` (a step's own changes, files earlier steps changed too
    /// included), each once, in order of first change.
    pub fn written_since(&self, mark: usize) -> Vec<String> {
        let state = lock(&self.state);
        let mut files: Vec<String> = Vec::new();
        for file in state.writes.iter().skip(mark) {
            if !files.contains(file) {
                files.push(file.clone());
            }
        }
        files
    }

    /// A changed file's text before the run first changed it (`Some(None)`: it did not exist;
    /// `None`: the run did not change it).
    pub fn original(&self, relative: &str) -> Option<Option<String>> {
        lock(&self.state).originals.get(relative).cloned()
    }

    /// Counts a visit to the run's present state after an action — the texts of the files
    /// the run changed, with the action and its result (`action`: their fingerprint) — and
    /// says how many times this run has been here (SPEC G2: a third visit is a loop, across
    /// steps and fix rounds alike).
    pub fn visit(&self, action: &[u8]) -> usize {
        use sha2::{Digest, Sha256};
        let mut state = lock(&self.state);
        let mut hasher = Sha256::new();
        let mut files: Vec<(&PathBuf, Option<&str>)> =
            state.seen.iter().map(|(path, seen)| (path, seen.as_ref().map(|f| f.sha256.as_str()))).collect();
        files.sort();
        for (path, hash) in files {
            hasher.update(path.as_os_str().as_encoded_bytes());
            hasher.update([0]);
            hasher.update(hash.unwrap_or("-"));
            hasher.update([0]);
        }
        hasher.update(action);
        let key: [u8; 32] = hasher.finalize().into();
        let visits = state.visits.entry(key).or_insert(0);
        *visits += 1;
        *visits
    }

    /// Appends an event to the run's audit log (if it has one).
    pub fn record(&self, event: &str, fields: serde_json::Value) {
        if let Some(journal) = &self.journal {
            journal.record(event, fields);
        }
    }

    /// Actions taken so far.
    pub fn tool_calls(&self) -> u32 {
        lock(&self.state).tool_calls
    }

    /// Carries out one action. A refusal or a failure is an `Ok` result with `ok: false`
    /// (it goes back to the model); only a limit of the run is an `Err`.
    pub async fn execute(&self, action: &Action) -> Result<ActionResult, LimitHit> {
        self.dispatch(action, Origin::Run).await
    }

    async fn dispatch(&self, action: &Action, origin: Origin) -> Result<ActionResult, LimitHit> {
        self.count_call(action)?;
        self.adopt_buffers(action).await;
        let started = Instant::now();
        let result = match action {
            Action::Read { path, lines } => self.read(path, *lines),
            Action::List { dir, glob } => self.list(dir.as_deref(), glob.as_deref()),
            Action::Search { pattern, glob } => self.search(pattern, glob.as_deref()),
            Action::Symbols { .. }
            | Action::Definition { .. }
            | Action::Callers { .. }
            | Action::Importers { .. }
            | Action::Locate { .. }
            | Action::Impact { .. } => self.navigate(action).await,
            Action::Skill { name, file } => Ok(match self.context.skills.read(name, file.as_deref()) {
                Ok(text) => ActionResult::done(text, format!("read the skill {}", action.title())),
                Err(reason) => ActionResult::refused(reason),
            }),
            Action::Edit { path, blocks } => self.edit(path, blocks).await,
            Action::Create { path, text } => self.create(path, text).await,
            Action::Delete { path } => self.delete(path).await,
            Action::Rename { from, to } => self.rename(from, to).await,
            Action::Run { command, timeout } => Ok(self.run(command, *timeout, origin).await),
            Action::GitCommit { message } => Ok(self.commit(message).await),
            Action::Tool { name, arguments } => Ok(self.call_tool(name, arguments, origin).await),
        };
        let (result, fate) = match result {
            Ok(result) => {
                let fate = if result.ok { ChangeFate::Landed } else { ChangeFate::Failed };
                (result, fate)
            }
            Err(Stop::Refused(reason)) => (ActionResult::refused(reason), ChangeFate::Failed),
            Err(Stop::Forbidden(reason)) => (ActionResult::refused(reason), ChangeFate::Refused),
            Err(Stop::Rejected(reason)) => (ActionResult::refused(reason), ChangeFate::Rejected),
            Err(Stop::AlreadyThere(reason)) => (ActionResult::refused(reason), ChangeFate::AlreadyThere),
            Err(Stop::NotApplied(reason)) => {
                // said where it was approved, at once: the change the user saw did not land
                let path = action.paths().first().map(|p| p.to_string()).unwrap_or_default();
                let message =
                    format!("Tokamak: the change to {path} was not applied: {}", first_sentence(&reason));
                self.context.editor.show_message(crate::editor::MessageLevel::Warning, message).await;
                (ActionResult::refused(reason), ChangeFate::NotApplied)
            }
            Err(Stop::Limit(hit)) => {
                self.record_limit(action, &hit);
                return Err(hit);
            }
        };
        if action.kind() == ActionKind::Write {
            self.record_change(action, fate, if fate == ChangeFate::Landed { "" } else { &result.summary });
        }
        self.reindex(&result.changed);
        if let Some(journal) = &self.journal {
            journal.record(
                "action",
                json!({
                    "action": action.name(),
                    "arguments": action.audit_arguments(),
                    "ok": result.ok,
                    "summary": result.summary,
                    "changed": result.changed,
                    "ms": started.elapsed().as_millis() as u64,
                }),
            );
        }
        tracing::debug!("{}: {} → {}", self.run_id, action.name(), result.summary);
        Ok(result)
    }

    fn confine(&self, raw: &str, access: Access) -> Result<Confined, Stop> {
        self.context.confinement.resolve(raw, access).map_err(|Refused(reason)| Stop::Refused(reason))
    }

    /// Takes in the text the editor holds for the files `action` reads or changes, when the
    /// editor can say what it holds for a file it never opened to the Observer (ACP's
    /// `fs/read_text_file`) and that text is not the disk's: from then on the file is an open
    /// document, read, changed and checked as the editor has it, and the run's commands see it.
    async fn adopt_buffers(&self, action: &Action) {
        use crate::action::ToolKind;
        if !matches!(action.tool_kind(), ToolKind::Read | ToolKind::Edit | ToolKind::Delete | ToolKind::Move)
        {
            return;
        }
        for raw in action.paths() {
            let Ok(confined) = self.confine(raw, Access::Read) else { continue };
            let Ok(uri) = file_uri(&confined.path) else { continue };
            if self.context.observer.snapshot(&uri).is_some() || !confined.path.is_file() {
                continue;
            }
            let Some(held) = self.context.editor.buffer(&confined.path).await else { continue };
            if read_text(&confined.path).ok().as_deref() != Some(held.as_str()) {
                tracing::debug!(
                    "{}: {} is changed in the editor: its text is used",
                    self.run_id,
                    confined.relative
                );
                self.context.observer.open(uri, "", 0, &held).await;
            }
        }
    }

    fn root(&self) -> &Path {
        self.context.confinement.root()
    }

    /// The open documents, by absolute path.
    fn buffers(&self) -> HashMap<PathBuf, String> {
        self.context.buffers()
    }

    /// A file's text: the open document's, else the disk's.
    fn text_of(&self, path: &Path) -> Result<String, Stop> {
        let uri = file_uri(path)?;
        if let Some(snapshot) = self.context.observer.snapshot(&uri) {
            return Ok(snapshot.rope.to_string());
        }
        read_text(path).map_err(|err| Stop::Refused(err.to_string()))
    }

    fn remember(&self, path: &Path, text: Option<&str>) {
        let fingerprint = text.map(|t| self.fingerprint(path, t));
        let mut state = lock(&self.state);
        state.seen.insert(path.to_path_buf(), fingerprint);
        state.unread.remove(path);
    }

    /// Remembers a text the run wrote to `path`; one it wrote before and changed since is an
    /// edit undone, and lowers the run's confidence in the file.
    fn remember_written(&self, path: &Path, relative: &str, text: &str) {
        self.remember(path, Some(text));
        let hash = crate::places::sha256_hex(text.as_bytes());
        let undone = {
            let mut state = lock(&self.state);
            let original = state.originals.get(relative).cloned().flatten();
            let history = state.written.entry(path.to_path_buf()).or_default();
            let undone = history.last() != Some(&hash)
                && (history.contains(&hash)
                    || original.is_some_and(|o| crate::places::sha256_hex(o.as_bytes()) == hash));
            history.push(hash);
            undone
        };
        if undone {
            self.doubt_path(path, relative, 10, "an edit of the run's was undone");
        }
    }
}

/// Why an action did not happen.
enum Stop {
    /// Not made: what the model asked for could not be done (its fate: failed).
    Refused(String),
    /// A rule or the approver refused it.
    Forbidden(String),
    /// The user rejected it.
    Rejected(String),
    /// Approved, or needing no approval, and still not made.
    NotApplied(String),
    /// Not made, because what it would put there is there already.
    AlreadyThere(String),
    Limit(LimitHit),
}

impl Stop {
    /// The sentence the stop carries.
    fn into_reason(self) -> String {
        match self {
            Stop::Refused(reason)
            | Stop::Forbidden(reason)
            | Stop::Rejected(reason)
            | Stop::NotApplied(reason)
            | Stop::AlreadyThere(reason) => reason,
            Stop::Limit(hit) => hit.to_string(),
        }
    }
}

/// The first sentence of a reason (what a notification can hold; the rest is for the model).
fn first_sentence(reason: &str) -> String {
    let line = reason.lines().next().unwrap_or_default();
    let end = line.find(". ").map_or(line.len(), |at| at + 1);
    line[..end].trim_end_matches(':').to_string()
}

fn file_uri(path: &Path) -> Result<Url, Stop> {
    Url::from_file_path(path)
        .map_err(|()| Stop::Refused(format!("{} cannot be named as a file URI", path.display())))
}
