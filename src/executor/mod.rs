//! The executor (SPEC X1–X3, G1): the one way the agent acts on a project. Every action
//! ([`Action`]) is confined to the workspace (`confine.rs`), counted against the run's
//! limits, checkpointed before the run's first change and written to its audit log (through
//! its [`Journal`]), and answered with a short text for the model ([`ActionResult`]).
//!
//! Open documents are changed through the editor (a versioned edit, re-grounded on the
//! user's typing: `document.rs`); other files atomically on disk, only over the text they
//! had; creating, renaming and deleting go through the editor when it makes such file
//! operations itself. Commands (`command.rs`) run only when the policy allows (`policy.rs`),
//! in a bwrap sandbox over a shadow copy of the workspace where one is available
//! (`sandbox.rs`).

mod command;
mod confine;
mod disk_editor;
mod document;
mod look;
mod navigate;
pub mod policy;
mod rollback;
mod sandbox;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use url::Url;

// the action vocabulary and the text cut live below the executor, for the rooms that
// name actions (modes) or cut text (context) without depending on it
pub use crate::action::{ACTION_NAMES, Action, ActionKind, ActionResult};
pub use crate::text::cut;
pub use confine::{Access, Confined, Confinement, Refused};
pub use disk_editor::DiskEditor;
pub use document::{DocumentEditError, apply_to_document};
pub use policy::{Approver, ChangedFile, Decision, OnBehalfOf, RefuseUnlisted, Request, WaitClock};
pub use rollback::{RollbackError, RollbackReport, rollback};
pub use sandbox::{Placement, SandboxError, ShadowCopy, placement};

use crate::config::{ApprovalLevel, CommandSettings, LimitSettings, SandboxMode};
use crate::edit::{Block, apply_blocks, minimal_edits, parse_reply};
use crate::editor::{EditOutcome, Editor, FileOperation, MessageLevel};
use crate::history::{History, Journal};
use crate::observer::Observer;
use crate::process::clean_output;
use crate::sync::lock;
use crate::workspace::{read_text, write_if_unchanged};

/// Bytes of a file shown by one `read` before the rest is cut.
const MAX_READ_BYTES: usize = 24 * 1024;

/// What the executor may do in a workspace: the settings that decide it.
#[derive(Debug, Clone)]
pub struct ExecutorSettings {
    pub commands: CommandSettings,
    pub sandbox: SandboxMode,
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
}

impl ExecutorSettings {
    /// From the workspace's settings and its trust.
    pub fn from_settings(settings: &crate::config::Settings, trusted: bool) -> ExecutorSettings {
        ExecutorSettings {
            commands: settings.commands.clone(),
            sandbox: settings.sandbox,
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
    /// The user has been told that commands run without a sandbox.
    sandbox_told: AtomicBool,
}

impl ExecutorContext {
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
        Arc::new(ExecutorContext {
            confinement,
            observer,
            editor,
            settings,
            approver,
            history,
            index,
            sandbox_told: AtomicBool::new(false),
        })
    }
}

/// A limit of `[limits]` that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitHit {
    #[error("stopped at {0} actions (limits.tool_calls)")]
    ToolCalls(u32),
    #[error("stopped at {0} changes to files (limits.revisions)")]
    Revisions(u32),
    #[error("stopped: changing one more file would pass {0} files (limits.files)")]
    Files(u32),
}

/// What one run has done so far.
#[derive(Debug, Default)]
struct RunState {
    tool_calls: u32,
    revisions: u32,
    /// Files the run changed (relative), in order of first change.
    changed: Vec<String>,
    /// The sha256 of each file's text as the run last read or wrote it (`None`: absent).
    seen: HashMap<PathBuf, Option<String>>,
    /// Each changed file's text before the run first changed it (`None`: it did not exist).
    originals: HashMap<String, Option<String>>,
    /// How often each state (the changed files' texts, an action and its result) was seen.
    visits: HashMap<[u8; 32], usize>,
}

/// Told the run's role and new mode, and the trigger that led there.
pub type ModeListener = Box<dyn Fn(&str, crate::modes::Mode, &str) + Send + Sync>;

/// The role a run's model acts in, and its modes.
struct Authority {
    profile: Arc<crate::modes::Profile>,
    modes: crate::modes::ModeMachine,
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
            waits: Arc::new(WaitClock::default()),
            journal,
            cancel,
            state: Mutex::new(RunState::default()),
            placement: Mutex::new(None),
            shadow: tokio::sync::Mutex::new(None),
            commands_ran: Mutex::new(None),
            run_id: run_id.to_string(),
        }
    }

    pub fn context(&self) -> &Arc<ExecutorContext> {
        &self.context
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
        let mut files: Vec<(&PathBuf, &Option<String>)> = state.seen.iter().collect();
        files.sort();
        for (path, hash) in files {
            hasher.update(path.as_os_str().as_encoded_bytes());
            hasher.update([0]);
            hasher.update(hash.as_deref().unwrap_or("-"));
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

    /// From now on the model acts as `profile`, starting in `mode` (audited as a `mode`
    /// event; a mode the machine cannot start in is audited as `mode_error` and taken all
    /// the same: the role's mode decides what the model may do).
    pub fn act_as(&self, profile: Arc<crate::modes::Profile>, mode: crate::modes::Mode) {
        let mut guard = lock(&self.authority);
        let mut modes = guard.take().map(|a| a.modes).unwrap_or_default();
        let context = crate::modes::ModeContext {
            files_touched: lock(&self.state).changed.len(),
            ..Default::default()
        };
        match modes.start(mode, &context) {
            Ok(transition) => self.record("mode", json!(transition)),
            Err(err) => {
                self.record("mode_error", json!({"error": err.to_string()}));
                modes = crate::modes::ModeMachine::default();
                let _ = modes.start(mode, &context);
            }
        }
        *guard = Some(Authority { profile, modes });
    }

    /// The role and the mode the model acts in now.
    pub fn authority(&self) -> Option<(Arc<crate::modes::Profile>, crate::modes::Mode)> {
        lock(&self.authority).as_ref().map(|a| (Arc::clone(&a.profile), a.modes.current()))
    }

    /// The run's time waiting for a person (not counted against its time limit).
    pub fn waits(&self) -> Arc<WaitClock> {
        Arc::clone(&self.waits)
    }

    /// From now on `listener` hears of the mode changes a rejection causes.
    pub fn on_mode_change(&self, listener: ModeListener) {
        *lock(&self.mode_listener) = Some(listener);
    }

    /// Fires `trigger` on the run's modes (when it acts in a role), audited as a `mode`
    /// event. `look_again` returns from the navigation a rejection sent it to.
    fn shift_mode(&self, trigger: &str) {
        let mut guard = lock(&self.authority);
        let Some(authority) = guard.as_mut() else { return };
        // rejected again while looking (a read at high): it is still looking, and goes back
        // where the first rejection came from
        if trigger == "rejected" && authority.modes.current() == crate::modes::Mode::ContextNav {
            return;
        }
        let fired = if trigger == "looked_again" {
            authority.modes.look_again()
        } else {
            authority.modes.fire(trigger, &crate::modes::ModeContext::default())
        };
        let role = authority.profile.name.clone();
        drop(guard);
        match fired {
            Ok(transition) => {
                self.record("mode", json!(transition));
                if let Some(listener) = lock(&self.mode_listener).as_ref() {
                    listener(&role, transition.to, trigger);
                }
            }
            Err(err) => self.record("mode_error", json!({"error": err.to_string()})),
        }
    }

    /// Carries out an action the model asked for: first checked against the mode and the
    /// role it acts in (a refusal goes back to the model naming the rule, and is audited),
    /// then as [`Executor::execute`].
    ///
    /// At `approval = "high"` a person is asked before each look too (changes, commands and
    /// commits are asked where they are made, with what they would do). After a person
    /// rejected something the model is in context navigation until it has looked at the code
    /// again.
    pub async fn execute_for_model(&self, action: &Action) -> Result<ActionResult, LimitHit> {
        if let Some(rule) = self.forbidden(action) {
            // a refused action counts against the run's actions like any other
            self.count_call(action)?;
            if let Some(journal) = &self.journal {
                journal.record(
                    "refused",
                    json!({"action": action.name(), "arguments": action.audit_arguments(), "rule": rule}),
                );
            }
            return Ok(ActionResult::refused(format!("Refused: {rule}.")));
        }
        let look = action.kind() == ActionKind::Read;
        if look && self.context.settings.approval == ApprovalLevel::High {
            let request = Request::Look { action: action.name().to_string(), summary: describe_look(action) };
            if let Err(reason) = self.ask(&request).await {
                self.count_call(action)?;
                return Ok(ActionResult::refused(reason));
            }
        }
        let result = self.dispatch(action, Origin::Model).await?;
        if look
            && result.ok
            && self.authority().is_some_and(|(_, mode)| mode == crate::modes::Mode::ContextNav)
        {
            self.shift_mode("looked_again");
        }
        Ok(result)
    }

    /// Asks the approver, as long as the run is not cancelled; every question and answer is
    /// audited (`approval`). A person's rejection sends the model back to context
    /// navigation. `Err`: the sentence for the model.
    async fn ask(&self, request: &Request) -> Result<(), String> {
        let decision = tokio::select! {
            decision = self.waits.time(self.context.approver.decide(&self.run_id, request)) => decision,
            () = self.cancel.cancelled() => Decision::Refuse("the run was cancelled while it waited for the user's approval".to_string()),
        };
        let (answer, reason) = match &decision {
            Decision::Approve => ("approved", None),
            Decision::Reject(reason) => ("rejected", Some(reason.as_str())),
            Decision::Refuse(reason) => ("refused", Some(reason.as_str())),
        };
        self.record(
            "approval",
            json!({"action": request.action(), "summary": request.summary(), "answer": answer, "reason": reason}),
        );
        match decision {
            Decision::Approve => Ok(()),
            Decision::Refuse(reason) => Err(reason),
            Decision::Reject(reason) => {
                let back = self.authority().is_some();
                self.shift_mode("rejected");
                let mut sentence = format!("The user rejected this ({}): {reason}.", request.summary());
                if back {
                    sentence.push_str(
                        " You are in context navigation now: look at the code again (read, search, symbols, definition, callers) with that reason in mind before you change anything.",
                    );
                }
                Err(sentence)
            }
        }
    }

    /// Counts one action against `limits.tool_calls`; the limit is an error, audited.
    fn count_call(&self, action: &Action) -> Result<(), LimitHit> {
        let limit = self.context.settings.limits.tool_calls;
        let mut state = lock(&self.state);
        if state.tool_calls >= limit {
            drop(state);
            let hit = LimitHit::ToolCalls(limit);
            self.record_limit(action, hit);
            return Err(hit);
        }
        state.tool_calls += 1;
        Ok(())
    }

    /// The rule of the current mode or role that forbids `action`, if one does.
    fn forbidden(&self, action: &Action) -> Option<String> {
        let (profile, mode) = self.authority()?;
        let kind = action.kind();
        if !mode.allowed().permits(kind) {
            let what = match kind {
                ActionKind::Read => "reading",
                ActionKind::Write => "changing files",
                ActionKind::Command => "running commands",
                ActionKind::Commit => "committing",
            };
            return Some(format!("the {mode} mode does not allow {what} ({})", action.name()));
        }
        if let Some(rule) = profile.refuses_action(action.name()) {
            return Some(rule);
        }
        let targets: Vec<&str> = match action {
            Action::Edit { path, .. } | Action::Create { path, .. } | Action::Delete { path } => vec![path],
            Action::Rename { from, to } => vec![from, to],
            _ => Vec::new(),
        };
        for raw in targets {
            // a path the confinement refuses is refused by the action itself, with its reason
            let Ok(confined) = self.context.confinement.resolve(raw, Access::Write) else { continue };
            if let Some(rule) = profile.refuses_write(&confined.relative) {
                return Some(rule);
            }
        }
        if let Action::Run { command, .. } = action {
            return profile.refuses_command(command, self.context.settings.test_command.as_deref());
        }
        None
    }

    /// Carries out one action. A refusal or a failure is an `Ok` result with `ok: false`
    /// (it goes back to the model); only a limit of the run is an `Err`.
    pub async fn execute(&self, action: &Action) -> Result<ActionResult, LimitHit> {
        self.dispatch(action, Origin::Run).await
    }

    async fn dispatch(&self, action: &Action, origin: Origin) -> Result<ActionResult, LimitHit> {
        self.count_call(action)?;
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
            Action::Edit { path, blocks } => self.edit(path, blocks).await,
            Action::Create { path, text } => self.create(path, text).await,
            Action::Delete { path } => self.delete(path).await,
            Action::Rename { from, to } => self.rename(from, to).await,
            Action::Run { command, timeout } => Ok(self.run(command, *timeout, origin).await),
            Action::GitCommit { message } => Ok(self.commit(message).await),
        };
        let result = match result {
            Ok(result) => result,
            Err(Stop::Refused(reason)) => ActionResult::refused(reason),
            Err(Stop::Limit(hit)) => {
                self.record_limit(action, hit);
                return Err(hit);
            }
        };
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

    /// Tells the index of the files an action changed: an open document's text (the editor
    /// has it), else the disk's.
    fn reindex(&self, changed: &[String]) {
        let Some(index) = &self.context.index else { return };
        for relative in changed {
            let path = self.root().join(relative);
            let snapshot = file_uri(&path).ok().and_then(|uri| self.context.observer.snapshot(&uri));
            match snapshot {
                Some(s) => {
                    index.document_changed(&path, s.rope.clone(), s.tree.clone().map(|t| (t, s.language)))
                }
                None => index.disk_changed(&path),
            }
        }
    }

    fn record_limit(&self, action: &Action, hit: LimitHit) {
        if let Some(journal) = &self.journal {
            journal.record("limit", json!({"action": action.name(), "limit": hit.to_string()}));
        }
    }

    fn confine(&self, raw: &str, access: Access) -> Result<Confined, Stop> {
        self.context.confinement.resolve(raw, access).map_err(|Refused(reason)| Stop::Refused(reason))
    }

    fn root(&self) -> &Path {
        self.context.confinement.root()
    }

    /// The open documents under the root, by absolute path.
    fn buffers(&self) -> HashMap<PathBuf, String> {
        self.context
            .observer
            .open_documents()
            .into_iter()
            .filter_map(|snapshot| Some((snapshot.path()?, snapshot.rope.to_string())))
            .collect()
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
        let hash = text.map(|t| crate::places::sha256_hex(t.as_bytes()));
        lock(&self.state).seen.insert(path.to_path_buf(), hash);
    }

    /// Refuses when the run saw `path` and it changed since, by someone else.
    fn unchanged_since_seen(&self, confined: &Confined, now: Option<&str>, what: &str) -> Result<(), Stop> {
        let seen = lock(&self.state).seen.get(&confined.path).cloned();
        let now = now.map(|t| crate::places::sha256_hex(t.as_bytes()));
        match seen {
            Some(seen) if seen != now => Err(Stop::Refused(format!(
                "{} changed since this run last read it, so it was not {what}; read it again first",
                confined.relative
            ))),
            _ => Ok(()),
        }
    }

    /// Asks the approver about a change when the `approval` level says so (medium, high).
    async fn approve(
        &self,
        action: &str,
        summary: String,
        diff: String,
        file: Option<ChangedFile>,
    ) -> Result<(), Stop> {
        if self.context.settings.approval < ApprovalLevel::Medium {
            return Ok(());
        }
        let request = Request::Change { action: action.to_string(), summary, diff, file };
        self.ask(&request).await.map_err(Stop::Refused)
    }

    /// Counts a change to `files` against the limits before it is made, and takes the
    /// run's "before" checkpoint if this is its first change.
    async fn before_change(&self, files: &[&Confined]) -> Result<(), Stop> {
        for file in files {
            if !lock(&self.state).originals.contains_key(&file.relative) {
                let text = self.text_of(&file.path).ok();
                lock(&self.state).originals.insert(file.relative.clone(), text);
            }
        }
        let limits = &self.context.settings.limits;
        {
            let state = lock(&self.state);
            if state.revisions >= limits.revisions {
                return Err(Stop::Limit(LimitHit::Revisions(limits.revisions)));
            }
            let new = files.iter().filter(|f| !state.changed.contains(&f.relative)).count();
            if state.changed.len() + new > limits.files as usize {
                return Err(Stop::Limit(LimitHit::Files(limits.files)));
            }
        }
        if let Some(journal) = &self.journal {
            journal.before_change().await;
        }
        Ok(())
    }

    fn after_change(&self, files: &[&Confined]) {
        let mut state = lock(&self.state);
        state.revisions += 1;
        for file in files {
            if !state.changed.contains(&file.relative) {
                state.changed.push(file.relative.clone());
            }
        }
    }

    fn read(&self, raw: &str, lines: Option<(usize, usize)>) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Read)?;
        if confined.path.is_dir() {
            return Err(Stop::Refused(format!("{} is a folder; use list", confined.relative)));
        }
        let text = self.text_of(&confined.path)?;
        self.remember(&confined.path, Some(&text));
        let shown = look::show_lines(&confined.relative, &text, lines, MAX_READ_BYTES);
        Ok(ActionResult::done(shown, format!("read {} ({} bytes)", confined.relative, text.len())))
    }

    fn list(&self, dir: Option<&str>, glob: Option<&str>) -> Result<ActionResult, Stop> {
        let confined = self.confine(dir.unwrap_or("."), Access::Read)?;
        let listing = look::list(self.root(), &confined.path, glob).map_err(Stop::Refused)?;
        let count = listing.lines().count().saturating_sub(1);
        Ok(ActionResult::done(listing, format!("listed {} ({count} entries)", confined.relative)))
    }

    fn search(&self, pattern: &str, glob: Option<&str>) -> Result<ActionResult, Stop> {
        let found = look::search(self.root(), pattern, glob, &self.buffers()).map_err(Stop::Refused)?;
        let summary = found.lines().next().unwrap_or_default().trim_end_matches(':').to_string();
        Ok(ActionResult::done(found, format!("searched {pattern:?}: {summary}")))
    }

    async fn edit(&self, raw: &str, reply: &str) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Write)?;
        let blocks = parse_reply(reply);
        if blocks.is_empty() {
            return Err(Stop::Refused(
                "the edit had no SEARCH/REPLACE block (or diff, or whole-file block), so nothing was changed"
                    .to_string(),
            ));
        }
        for block in &blocks {
            let named = match block {
                Block::SearchReplace { file, .. } | Block::WholeFile { file, .. } => file.as_deref(),
            };
            if let Some(named) = named
                && self.context.confinement.resolve(named, Access::Write).map(|c| c.path).ok()
                    != Some(confined.path.clone())
            {
                return Err(Stop::Refused(format!(
                    "a block names {named}, but this edit is for {}; edit one file per action",
                    confined.relative
                )));
            }
        }
        if !confined.path.is_file() {
            return Err(Stop::Refused(format!(
                "{} does not exist; use create for a new file",
                confined.relative
            )));
        }
        let uri = file_uri(&confined.path)?;
        let open = self.context.observer.snapshot(&uri);
        let base = match &open {
            Some(snapshot) => snapshot.rope.to_string(),
            None => read_text(&confined.path).map_err(|err| Stop::Refused(err.to_string()))?,
        };
        if blocks.iter().any(|b| matches!(b, Block::WholeFile { .. })) {
            // a whole new text is only as good as the text it was made from
            self.unchanged_since_seen(&confined, Some(&base), "replaced")?;
        }
        let applied = apply_blocks(&base, &blocks, self.context.settings.similarity)
            .map_err(|err| Stop::Refused(format!("{err}; nothing from that edit was applied")))?;
        if applied.text == base {
            return Err(Stop::Refused(format!(
                "the edit changes nothing in {}: what it puts there is already there",
                confined.relative
            )));
        }
        self.approve(
            "edit",
            format!("edit {}", confined.relative),
            unified_diff(&confined.relative, Some(&base), Some(&applied.text)),
            Some(ChangedFile {
                path: confined.relative.clone(),
                before: Some(base.clone()),
                after: Some(applied.text.clone()),
            }),
        )
        .await?;
        self.before_change(&[&confined]).await?;
        let edits = minimal_edits(&base, &applied.text);
        let label = format!("Tokamak: edit {}", confined.relative);
        let new_text = match open {
            Some(snapshot) => {
                let after = apply_to_document(
                    &self.context.observer,
                    self.context.editor.as_ref(),
                    &snapshot,
                    &edits,
                    &label,
                )
                .await
                .map_err(|err| Stop::Refused(format!("{} was not changed: {err}", confined.relative)))?;
                after.rope.to_string()
            }
            None => {
                write_if_unchanged(&confined.path, Some(self.root()), &base, &applied.text)
                    .map_err(|err| Stop::Refused(err.to_string()))?;
                applied.text.clone()
            }
        };
        self.after_change(&[&confined]);
        self.remember(&confined.path, Some(&new_text));
        let (added, removed) = line_stats(&base, &new_text);
        if let Some(journal) = &self.journal {
            journal.record("edit", json!({"path": confined.relative, "added": added, "removed": removed}));
        }
        Ok(ActionResult::done(
            format!("edited {} (+{added} -{removed} lines)", confined.relative),
            format!("edited {} (+{added} -{removed})", confined.relative),
        )
        .changed(vec![confined.relative.clone()]))
    }

    async fn create(&self, raw: &str, text: &str) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Write)?;
        if std::fs::symlink_metadata(&confined.path).is_ok() {
            return Err(Stop::Refused(format!(
                "{} already exists; use edit to change it",
                confined.relative
            )));
        }
        self.approve(
            "create",
            format!("create {}", confined.relative),
            unified_diff(&confined.relative, None, Some(text)),
            Some(ChangedFile {
                path: confined.relative.clone(),
                before: None,
                after: Some(text.to_string()),
            }),
        )
        .await?;
        self.before_change(&[&confined]).await?;
        if let Some(parent) = confined.path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                Stop::Refused(format!("cannot make the folder for {}: {err}", confined.relative))
            })?;
        }
        let operation = FileOperation::Create { uri: file_uri(&confined.path)? };
        let through_editor = self.through_editor(&operation).await?;
        if through_editor {
            // the editor made an empty file; the text goes in over exactly that
            write_if_unchanged(&confined.path, Some(self.root()), "", text)
                .map_err(|err| Stop::Refused(err.to_string()))?;
        } else {
            write_new(&confined.path, text)
                .map_err(|err| Stop::Refused(format!("cannot create {}: {err}", confined.relative)))?;
        }
        self.after_change(&[&confined]);
        self.remember(&confined.path, Some(text));
        if let Some(journal) = &self.journal {
            journal.record("edit", json!({"path": confined.relative, "added": text.lines().count(), "removed": 0, "created": true}));
        }
        Ok(ActionResult::done(
            format!("created {} ({} lines)", confined.relative, text.lines().count()),
            format!("created {}", confined.relative),
        )
        .changed(vec![confined.relative.clone()]))
    }

    /// Checks that a file may be deleted or moved: a regular file (not a link or a folder)
    /// that a checkpoint holds, unchanged since the run saw it.
    async fn removable(&self, confined: &Confined, what: &str) -> Result<(), Stop> {
        let metadata = std::fs::symlink_metadata(&confined.path)
            .map_err(|_| Stop::Refused(format!("{} does not exist", confined.relative)))?;
        if metadata.is_dir() {
            return Err(Stop::Refused(format!(
                "{} is a folder; Tokamak {what} files one at a time",
                confined.relative
            )));
        }
        let checkpoints = match &self.context.history {
            Some(history) => history.checkpoints().await,
            None => Err("there is no workspace folder to keep checkpoints for".to_string()),
        };
        let checkpoints = checkpoints.map_err(|reason| {
            Stop::Refused(format!(
                "{} was not {what}: without checkpoints it could not be restored ({reason})",
                confined.relative
            ))
        })?;
        if !checkpoints.can_hold(&confined.path) {
            return Err(Stop::Refused(format!(
                "{} was not {what}: it is binary or larger than checkpoints.max_file_bytes, so a checkpoint could not restore it",
                confined.relative
            )));
        }
        let now = self.text_of(&confined.path).ok();
        self.unchanged_since_seen(confined, now.as_deref(), what)
    }

    async fn delete(&self, raw: &str) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Write)?;
        self.removable(&confined, "deleted").await?;
        let text = self.text_of(&confined.path).ok();
        self.approve(
            "delete",
            format!("delete {}", confined.relative),
            unified_diff(&confined.relative, text.as_deref(), None),
            Some(ChangedFile { path: confined.relative.clone(), before: text.clone(), after: None }),
        )
        .await?;
        self.before_change(&[&confined]).await?;
        if self.journal.as_ref().is_some_and(|j| j.checkpoint_id().is_none()) {
            return Err(Stop::Refused(format!(
                "{} was not deleted: the checkpoint that would restore it could not be taken",
                confined.relative
            )));
        }
        let operation = FileOperation::Delete { uri: file_uri(&confined.path)? };
        if !self.through_editor(&operation).await? {
            std::fs::remove_file(&confined.path)
                .map_err(|err| Stop::Refused(format!("cannot delete {}: {err}", confined.relative)))?;
        }
        if confined.path.exists() {
            return Err(Stop::Refused(format!("{} is still there after the delete", confined.relative)));
        }
        self.after_change(&[&confined]);
        self.remember(&confined.path, None);
        Ok(ActionResult::done(
            format!("deleted {}", confined.relative),
            format!("deleted {}", confined.relative),
        )
        .changed(vec![confined.relative.clone()]))
    }

    async fn rename(&self, from: &str, to: &str) -> Result<ActionResult, Stop> {
        let source = self.confine(from, Access::Write)?;
        let target = self.confine(to, Access::Write)?;
        self.removable(&source, "moved").await?;
        if std::fs::symlink_metadata(&target.path).is_ok() {
            return Err(Stop::Refused(format!("{} already exists; nothing was moved", target.relative)));
        }
        self.approve(
            "rename",
            format!("move {} to {}", source.relative, target.relative),
            format!("rename from {}\nrename to {}\n", source.relative, target.relative),
            None,
        )
        .await?;
        self.before_change(&[&source, &target]).await?;
        if let Some(parent) = target.path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                Stop::Refused(format!("cannot make the folder for {}: {err}", target.relative))
            })?;
        }
        let text = self.text_of(&source.path).ok();
        let operation = FileOperation::Rename { from: file_uri(&source.path)?, to: file_uri(&target.path)? };
        if !self.through_editor(&operation).await? {
            // rename(2) would replace a file that appeared meanwhile; a hard link does not
            std::fs::hard_link(&source.path, &target.path)
                .and_then(|()| std::fs::remove_file(&source.path))
                .map_err(|err| {
                    Stop::Refused(format!("cannot move {} to {}: {err}", source.relative, target.relative))
                })?;
        }
        if source.path.exists() || !target.path.exists() {
            return Err(Stop::Refused(format!("{} was not moved to {}", source.relative, target.relative)));
        }
        self.after_change(&[&source, &target]);
        self.remember(&source.path, None);
        self.remember(&target.path, text.as_deref());
        Ok(ActionResult::done(
            format!("moved {} to {}", source.relative, target.relative),
            format!("moved {} to {}", source.relative, target.relative),
        )
        .changed(vec![source.relative.clone(), target.relative.clone()]))
    }

    /// Asks the editor to make a file operation when it makes such operations itself.
    /// `Ok(false)`: it does not, and the disk is changed directly (logged).
    async fn through_editor(&self, operation: &FileOperation) -> Result<bool, Stop> {
        let editor = &self.context.editor;
        if !editor.makes_file_operation(operation) {
            tracing::info!(
                "{}: the editor does not make file operations; changing the disk: {operation:?}",
                self.run_id
            );
            return Ok(false);
        }
        match editor.file_operation(operation).await {
            EditOutcome::Applied { .. } => Ok(true),
            EditOutcome::Rejected(reason) => Err(Stop::Refused(format!("the editor refused it: {reason}"))),
        }
    }

    async fn run(&self, argv: &[String], timeout: Option<u64>, origin: Origin) -> ActionResult {
        let settings = &self.context.settings;
        let listed = settings.trusted
            && policy::allowed(argv, &settings.commands.allow, settings.test_command.as_deref());
        let ask_anyway = origin == Origin::Model && settings.approval == ApprovalLevel::High;
        if !listed || ask_anyway {
            let request = Request::Command { argv: argv.to_vec() };
            if let Err(reason) = self.ask(&request).await {
                let reason = if settings.trusted || listed {
                    reason
                } else {
                    format!(
                        "{reason} (the folder is not trusted, so no command runs without the user's approval)"
                    )
                };
                return ActionResult::refused(reason);
            }
        }
        let timeout = Duration::from_secs(
            timeout.unwrap_or(settings.commands.timeout_s).clamp(1, settings.commands.timeout_s.max(1)),
        );
        let placement = match self.placement() {
            Ok(placement) => placement,
            Err(reason) => return ActionResult::refused(reason),
        };
        if let Placement::Copy { notice: Some(notice) } = &placement
            && !self.context.sandbox_told.swap(true, Ordering::Relaxed)
        {
            self.context.editor.show_message(MessageLevel::Warning, notice.clone()).await;
        }
        let mut notes = Vec::new();
        // every command runs in the run's copy, which holds the editor's text: a command never
        // sees a disk that lags a buffer, with or without bubblewrap
        let mut shadow = self.shadow.lock().await;
        if shadow.is_none() {
            let dir = crate::places::project_cache(self.root()).join("sandbox").join(&self.run_id);
            let isolated = matches!(placement, Placement::Bwrap(_));
            match ShadowCopy::new(self.root(), &dir, isolated) {
                Ok(copy) => *shadow = Some(copy),
                Err(err) => return ActionResult::refused(err.to_string()),
            }
        }
        let Some(copy) = shadow.as_mut() else {
            return ActionResult::refused("the sandbox copy is missing");
        };
        let buffers: HashMap<PathBuf, String> = self
            .buffers()
            .into_iter()
            .filter_map(|(path, text)| Some((path.strip_prefix(self.root()).ok()?.to_path_buf(), text)))
            .collect();
        let started = Instant::now();
        match copy.sync(&buffers) {
            Ok(stats) => {
                tracing::debug!("{}: sandbox copy {stats:?} in {:?}", self.run_id, started.elapsed())
            }
            Err(err) => return ActionResult::refused(err.to_string()),
        }
        // without bwrap the copy is at a path of its own: the command is pointed there, and
        // what it prints is shown with the workspace's paths
        let (cwd, argv_run, bwrap) = match &placement {
            Placement::Bwrap(bwrap) => (
                self.root().to_path_buf(),
                argv.to_vec(),
                Some((bwrap.clone(), copy.bwrap_args(Path::new(""), argv))),
            ),
            Placement::Copy { .. } => {
                let (from, to) = (self.root().to_string_lossy(), copy.dir().to_string_lossy());
                let moved = argv.iter().map(|a| repoint(a, &from, &to)).collect();
                (copy.dir().to_path_buf(), moved, None)
            }
        };
        let spec = command::CommandSpec {
            argv: &argv_run,
            cwd: &cwd,
            timeout,
            max_output: settings.commands.max_output_bytes,
            key_variables: &settings.key_variables,
            bwrap: bwrap.as_ref().map(|(path, args)| (path.as_path(), args.clone())),
        };
        let mut outcome = match command::run(spec, &self.cancel).await {
            Ok(outcome) => outcome,
            Err(err) => return ActionResult::refused(format!("`{}` could not be started: {err}", argv[0])),
        };
        if bwrap.is_none() {
            let (from, to) = (copy.dir().to_string_lossy(), self.root().to_string_lossy());
            outcome.stdout = repoint(&outcome.stdout, &from, &to);
            outcome.stderr = repoint(&outcome.stderr, &from, &to);
        }
        let changed = copy.changed_by_command();
        if !changed.is_empty() {
            let shown: Vec<&str> = changed.iter().take(20).map(String::as_str).collect();
            notes.push(format!(
                "it ran in a copy of the workspace, so what it wrote ({}{}) was not kept",
                shown.join(", "),
                if changed.len() > 20 { ", …" } else { "" }
            ));
        }
        drop(shadow);
        *lock(&self.commands_ran) = Some(placement.describe());
        let described = outcome.describe(timeout);
        let mut text = format!("$ {}\n{described} ({})", argv.join(" "), placement.describe());
        text.push('\n');
        for (name, stream) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
            if !stream.is_empty() {
                text.push_str(&format!("--- {name} ---\n{stream}"));
                if !stream.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        for note in &notes {
            text.push_str(&format!("Note: {note}.\n"));
        }
        // it ran: whether it succeeded is in the text (a failing test is a result, not a refusal)
        ActionResult {
            exit_status: outcome.status,
            ..ActionResult::done(text, format!("ran `{}`: {described}", argv.join(" ")))
        }
    }

    fn placement(&self) -> Result<Placement, String> {
        lock(&self.placement)
            .get_or_insert_with(|| placement(self.context.settings.sandbox).map_err(|err| err.to_string()))
            .clone()
    }

    async fn commit(&self, message: &str) -> ActionResult {
        let files = self.changed_files();
        if files.is_empty() {
            return ActionResult::refused("this run changed no files, so there is nothing to commit");
        }
        if message.trim().is_empty() {
            return ActionResult::refused("the commit message is empty");
        }
        let unsaved: Vec<String> = self
            .buffers()
            .into_iter()
            .filter(|(path, text)| std::fs::read(path).ok().as_deref() != Some(text.as_bytes()))
            .map(|(path, _)| self.context.confinement.relative(&path))
            .filter(|relative| files.contains(relative))
            .collect();
        if !unsaved.is_empty() {
            return ActionResult::refused(format!(
                "{} has unsaved changes in the editor; the user must save before a commit",
                unsaved.join(", ")
            ));
        }
        let settings = &self.context.settings;
        if !(settings.auto_commit && settings.trusted) || settings.approval == ApprovalLevel::High {
            let request = Request::Commit { message: message.to_string(), files: files.clone() };
            if let Err(reason) = self.ask(&request).await {
                return ActionResult::refused(reason);
            }
        }
        let git = |args: Vec<String>| {
            let mut command = tokio::process::Command::new("git");
            command.arg("-C").arg(self.root());
            if !settings.trusted {
                command.args(["-c", "core.hooksPath=/dev/null"]);
            }
            command.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
            for (name, _) in std::env::vars_os() {
                let text = name.to_string_lossy();
                if text.starts_with("GIT_") || crate::history::audit::is_secret_name(&text) {
                    command.env_remove(&name);
                }
            }
            command
        };
        let mut add = vec!["add".to_string(), "-A".to_string(), "--".to_string()];
        add.extend(files.iter().cloned());
        let mut commit = vec![
            "commit".to_string(),
            "--only".to_string(),
            "-m".to_string(),
            message.to_string(),
            "--".to_string(),
        ];
        commit.extend(files.iter().cloned());
        for args in [add, commit] {
            match git(args.clone()).output().await {
                Ok(output) if output.status.success() => {}
                Ok(output) => {
                    let detail = clean_output(&[output.stdout, output.stderr].concat());
                    return ActionResult::refused(format!(
                        "git {} failed: {}",
                        args[0],
                        cut(detail.trim(), 1000)
                    ));
                }
                Err(err) => return ActionResult::refused(format!("git could not be started: {err}")),
            }
        }
        let head =
            git(vec!["rev-parse".to_string(), "--short".to_string(), "HEAD".to_string()]).output().await;
        let head = head.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        if let Some(journal) = &self.journal {
            journal.record("commit", json!({"commit": head, "files": files}));
        }
        ActionResult::done(
            format!(
                "committed {} file(s) as {head}: {}",
                files.len(),
                message.lines().next().unwrap_or_default()
            ),
            format!("committed {head}"),
        )
    }
}

/// Why an action did not happen.
enum Stop {
    Refused(String),
    Limit(LimitHit),
}

/// What a look at the project does, for the person asked at `approval = "high"`.
fn describe_look(action: &Action) -> String {
    match action {
        Action::Read { path, .. } => format!("read {path}"),
        Action::List { dir, glob } => format!(
            "list the files of {}{}",
            dir.as_deref().unwrap_or("the workspace"),
            glob.as_deref().map(|g| format!(" matching {g}")).unwrap_or_default()
        ),
        Action::Search { pattern, .. } => format!("search the workspace for {pattern:?}"),
        other => format!("{} {}", other.name(), other.audit_arguments()),
    }
}

fn file_uri(path: &Path) -> Result<Url, Stop> {
    Url::from_file_path(path)
        .map_err(|()| Stop::Refused(format!("{} cannot be named as a file URI", path.display())))
}

/// A unified diff of one file (`None`: absent on that side).
pub fn unified_diff(relative: &str, old: Option<&str>, new: Option<&str>) -> String {
    let old_name = if old.is_some() { format!("a/{relative}") } else { "/dev/null".to_string() };
    let new_name = if new.is_some() { format!("b/{relative}") } else { "/dev/null".to_string() };
    similar::TextDiff::from_lines(old.unwrap_or_default(), new.unwrap_or_default())
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string()
}

/// Lines added and removed between two texts.
fn line_stats(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// Writes a new file atomically, failing if one appeared meanwhile.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    write_new_bytes(path, text.as_bytes())
}

fn write_new_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut temporary = tempfile::Builder::new().prefix(".tokamak-").tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    // a temporary file is private (0600); a source file is not
    std::fs::set_permissions(temporary.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    temporary.persist_noclobber(path).map_err(|err| err.error)?;
    Ok(())
}

/// `text` with the path `from` written as `to` wherever it stands as a whole path or a path's
/// start (`/p/proj` in `/p/proj/a.py`, not in `/p/proj2`).
fn repoint(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        let whole = after.chars().next().is_none_or(|c| !(c.is_alphanumeric() || "-_.".contains(c)));
        out.push_str(&rest[..at]);
        out.push_str(if whole { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_repointed_only_where_it_stands_whole() {
        let text = "/p/proj /p/proj/a.py /p/proj2/b.py '/p/proj' /p/proj.bak";
        assert_eq!(super::repoint(text, "/p/proj", "/c"), "/c /c/a.py /p/proj2/b.py '/c' /p/proj.bak");
    }
}
