//! The editor and the approver as an ACP client is them: the run stream rendered as
//! `session/update`s (the plan, tool calls with their kind, files and diffs, the checks,
//! thoughts and the report), edits written through the client's `fs/write_text_file` when it
//! offers it (else to disk), and each question asked with `session/request_permission`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::store::Log;
use crate::diagnostic::Diagnostic;
use crate::editor::{
    DocumentEdit, EditOutcome, Editor, MessageLevel, Progress, RunEvent, TerminalCommand, TerminalOutcome,
    ToolKind,
};
use crate::executor::{Approver, ChangedFile, Decision, Request};
use crate::jsonrpc::{ClientError, Connection};
use crate::run::plan::{Plan, StepStatus};
use crate::run::{Check, RunReport, TestOutcome};
use crate::sync::lock;
use crate::workspace::DocumentSnapshot;

/// How long a file read or write through the client may take before Tokamak says so and
/// goes on without it.
const FILE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the client said it can do (`initialize`'s `clientCapabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCan {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
}

/// One ACP session's editor: its updates go to the client tagged with the session's id.
pub struct AcpEditor {
    connection: Arc<Connection>,
    session_id: acp::SessionId,
    root: PathBuf,
    can: ClientCan,
    /// The tool call going on (the one a question is about).
    current_call: Mutex<Option<String>>,
    /// The client's terminal each tool call's command ran in, shown in its content.
    terminals: Mutex<HashMap<String, acp::TerminalId>>,
    checks: std::sync::atomic::AtomicU32,
    /// The model's context window, when the settings or its server say (for `usage_update`).
    window: Mutex<Option<u32>>,
    /// Where the session's updates are kept, for `session/load`.
    log: Log,
}

impl AcpEditor {
    pub fn new(
        connection: Arc<Connection>,
        session_id: &str,
        root: &Path,
        can: ClientCan,
        log: Log,
    ) -> AcpEditor {
        AcpEditor {
            connection,
            session_id: acp::SessionId::new(session_id),
            root: root.to_path_buf(),
            can,
            current_call: Mutex::new(None),
            terminals: Mutex::default(),
            checks: Default::default(),
            window: Mutex::default(),
            log,
        }
    }

    /// Sends one `session/update`, and keeps it.
    pub fn update(&self, update: acp::SessionUpdate) {
        self.log.append(&update);
        self.send(update);
    }

    /// Sends one `session/update` without keeping it (what is true only now).
    pub fn send(&self, update: acp::SessionUpdate) {
        self.connection
            .notify("session/update", &acp::SessionNotification::new(self.session_id.clone(), update));
    }

    /// Keeps the user's prompt as they sent it, block by block (the client shows it already),
    /// for a replay.
    pub fn keep_prompt(&self, blocks: &[acp::ContentBlock]) {
        for block in blocks {
            self.log.append(&acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(block.clone())));
        }
    }

    /// Sends a kept update again (`session/load`); one that no longer reads is skipped.
    pub fn replay(&self, update: serde_json::Value) {
        match serde_json::from_value::<acp::SessionUpdate>(update) {
            Ok(update) => self.send(update),
            Err(err) => tracing::debug!("acp: a kept update was not replayed: {err}"),
        }
    }

    /// Text as the agent's message.
    pub fn say(&self, text: &str) {
        self.update(acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text.into())));
    }

    fn think(&self, text: &str) {
        self.update(acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(text.into())));
    }

    fn absolute(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// A changed file as ACP's diff content.
    fn diff(&self, file: &ChangedFile) -> acp::ToolCallContent {
        acp::Diff::new(self.absolute(&file.path), file.after.clone().unwrap_or_default())
            .old_text(file.before.clone())
            .into()
    }

    fn plan(&self, plan: &Plan) {
        let entries = plan
            .steps
            .iter()
            .map(|step| {
                // ACP's plan has no state for a step that ended without being done: it is
                // completed, and its words say how it ended (✗ and why)
                let status = match step.status {
                    StepStatus::Pending => acp::PlanEntryStatus::Pending,
                    StepStatus::Running => acp::PlanEntryStatus::InProgress,
                    _ => acp::PlanEntryStatus::Completed,
                };
                let mut content = match step.status {
                    status if status.is_failure() => format!(
                        "{} {} ({}: {})",
                        status.glyph(),
                        step.title,
                        status.as_str().replace('_', " "),
                        step.note
                    ),
                    // the running step's current mode, as each outcome moves it
                    StepStatus::Running if !step.mode.is_empty() => format!("{} ({})", step.title, step.mode),
                    _ => step.title.clone(),
                };
                if !step.replaced_by.is_empty() {
                    content.push_str(&format!(" — replaced by {}", step.replaced_by.join(", ")));
                }
                acp::PlanEntry::new(content, acp::PlanEntryPriority::Medium, status)
            })
            .collect();
        self.update(acp::SessionUpdate::Plan(acp::Plan::new(entries)));
    }

    /// A step's checks, as a tool call of their own: what the checkers found on the text the
    /// agent wrote, and the tests.
    fn checked(&self, run_id: &str, check: &Check) {
        let number = self.checks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("{run_id}/check-{number}");
        let step = check.step.as_deref().map(|s| format!(" of step {s}")).unwrap_or_default();
        let mut text = String::new();
        for (file, diagnostics) in &check.introduced {
            for diagnostic in diagnostics {
                text.push_str(&format!("{file}: {}\n", describe(diagnostic)));
            }
        }
        if check.introduced.is_empty() {
            text.push_str(&format!("No new errors in {}.\n", list(&check.files)));
        }
        for (file, diagnostics) in &check.resolved {
            for diagnostic in diagnostics {
                text.push_str(&format!("fixed in {file}: {}\n", describe(diagnostic)));
            }
        }
        match &check.tests {
            Some(TestOutcome { passed: true, .. }) => text.push_str("The tests pass.\n"),
            Some(TestOutcome { ran: false, output, .. }) => {
                text.push_str(&format!("The tests did not run: {}\n", crate::text::cut(output, 2048)))
            }
            Some(TestOutcome { passed: false, output, .. }) => {
                text.push_str(&format!("The tests fail:\n{}\n", crate::text::cut(output, 2048)))
            }
            None => {}
        }
        let status = if check.clean() { acp::ToolCallStatus::Completed } else { acp::ToolCallStatus::Failed };
        let locations = check.files.iter().map(|f| acp::ToolCallLocation::new(self.absolute(f))).collect();
        let call = acp::ToolCall::new(id, format!("Checks{step}: {}", check.describe()))
            .kind(acp::ToolKind::Think)
            .status(status)
            .locations(locations)
            .content(vec![text.into()]);
        self.update(acp::SessionUpdate::ToolCall(call));
    }
}

/// What the checkers found on an edit's text: each error that appeared and went away.
fn diagnostics_report(check: &Check) -> String {
    let mut text = String::new();
    for (file, diagnostics) in &check.introduced {
        for diagnostic in diagnostics {
            text.push_str(&format!("new in {file}: {}\n", describe(diagnostic)));
        }
    }
    for (file, diagnostics) in &check.resolved {
        for diagnostic in diagnostics {
            text.push_str(&format!("gone from {file}: {}\n", describe(diagnostic)));
        }
    }
    if text.is_empty() {
        text = format!("The checkers found no new errors in {}.\n", list(&check.files));
    }
    text
}

fn list(files: &[String]) -> String {
    if files.is_empty() { "the changed files".to_string() } else { files.join(", ") }
}

/// One diagnostic, as a line of a tool call's content.
fn describe(diagnostic: &Diagnostic) -> String {
    let code = diagnostic.code.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
    format!("{} ({}{code}): {}", diagnostic.severity.as_str(), diagnostic.source, diagnostic.message)
}

/// ACP's kind of a tool call.
pub fn kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Delete => acp::ToolKind::Delete,
        ToolKind::Move => acp::ToolKind::Move,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

#[async_trait]
impl Editor for AcpEditor {
    // ACP carries no diagnostics: they reach the client in the tool calls' content
    async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}

    async fn clear_diagnostics(&self, _: &Url) {}

    async fn show_message(&self, level: MessageLevel, message: String) {
        match level {
            MessageLevel::Error | MessageLevel::Warning => self.say(&format!("{message}\n")),
            MessageLevel::Info => self.think(&format!("{message}\n")),
        }
    }

    /// Through the client's `fs/write_text_file` when it offers it (the change lands in the
    /// editor's buffer); else to disk, only over the text it was made for.
    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        let (Some(path), true) = (edit.snapshot.path(), self.can.write_text_file) else {
            return crate::executor::write_edit(&edit, Some(&self.root));
        };
        let old = edit.snapshot.rope.to_string();
        let Some(new) = crate::edit::apply_edits(&old, edit.edits) else {
            return EditOutcome::Rejected("an edit fell outside the text".to_string());
        };
        match self.write_file(&path, Some(&old), &new).await {
            Some(outcome) => outcome,
            None => crate::executor::write_edit(&edit, Some(&self.root)),
        }
    }

    /// The client's text for a file (its buffer, unsaved changes included) when it offers
    /// `fs/read_text_file`; when it cannot answer, the disk's is used and the log says why.
    async fn buffer(&self, path: &Path) -> Option<String> {
        if !self.can.read_text_file {
            return None;
        }
        let request = acp::ReadTextFileRequest::new(self.session_id.clone(), path);
        match self
            .connection
            .request::<acp::ReadTextFileResponse>("fs/read_text_file", &request, Some(FILE_TIMEOUT))
            .await
        {
            Ok(response) => Some(response.content),
            Err(err) => {
                tracing::warn!("acp: {} is read from disk: {err}", path.display());
                None
            }
        }
    }

    /// Every file's text goes through the client when it can write files: the change lands
    /// in the editor's buffer (and its undo), saved or not as the editor does.
    async fn write_file(&self, path: &Path, before: Option<&str>, after: &str) -> Option<EditOutcome> {
        if !self.can.write_text_file {
            return None;
        }
        // never over what the user typed since the agent read it
        if let Some(before) = before
            && let Some(held) = self.buffer(path).await
            && held != before
        {
            return Some(EditOutcome::Rejected(
                "the file changed in the editor since Tokamak read it; your typing wins".to_string(),
            ));
        }
        let request = acp::WriteTextFileRequest::new(self.session_id.clone(), path, after);
        Some(
            match self
                .connection
                .request::<serde_json::Value>("fs/write_text_file", &request, Some(FILE_TIMEOUT))
                .await
            {
                Ok(_) => EditOutcome::Applied { echoed: false },
                Err(err) => EditOutcome::Rejected(err.to_string()),
            },
        )
    }

    /// In the client's terminal when it offers `terminal/*`: shown in the tool call going on,
    /// waited for up to the command's timeout, killed on timeout or cancel, its output read and
    /// the terminal released.
    async fn run_in_terminal(
        &self,
        _run_id: &str,
        command: TerminalCommand<'_>,
        cancel: &CancellationToken,
    ) -> Option<Result<TerminalOutcome, String>> {
        if !self.can.terminal {
            return None;
        }
        Some(self.terminal(command, cancel).await)
    }

    fn checks_each_edit(&self) -> bool {
        true
    }

    fn versions_edits(&self) -> bool {
        false
    }

    fn shows_step_notes(&self) -> bool {
        false
    }

    /// Tool call ids are the run's own (`call-1`, `tests-1`): prefixed with the run id, they stay
    /// unique across the session's prompts and its loads.
    async fn run_event(&self, run_id: &str, event: &RunEvent) {
        let id = |id: &str| format!("{run_id}/{id}");
        match event {
            RunEvent::Plan(plan) => self.plan(plan),
            RunEvent::Progress(Progress::Begin { title, .. }) => self.think(&format!("{title}\n")),
            RunEvent::Progress(Progress::Report { message, .. }) => self.think(&format!("{message}\n")),
            RunEvent::Progress(Progress::End { .. }) => {}
            RunEvent::ToolCall { id: call, kind: tool, title, paths } => {
                let call = id(call);
                *lock(&self.current_call) = Some(call.clone());
                let locations = paths.iter().map(|p| acp::ToolCallLocation::new(self.absolute(p))).collect();
                let call = acp::ToolCall::new(call, title.clone())
                    .kind(kind(*tool))
                    .status(acp::ToolCallStatus::InProgress)
                    .locations(locations);
                self.update(acp::SessionUpdate::ToolCall(call));
            }
            RunEvent::ToolResult { id: call, ok, summary, files, check, output, .. } => {
                lock(&self.current_call).take();
                let status = if *ok { acp::ToolCallStatus::Completed } else { acp::ToolCallStatus::Failed };
                let mut content: Vec<acp::ToolCallContent> = files.iter().map(|f| self.diff(f)).collect();
                let terminal = lock(&self.terminals).remove(&id(call));
                if let Some(terminal) = &terminal {
                    content.push(acp::ToolCallContent::Terminal(acp::Terminal::new(terminal.clone())));
                }
                content.push(summary.clone().into());
                if let Some(check) = check {
                    content.push(diagnostics_report(check).into());
                }
                // a command that ran in the client's terminal shows its output there
                if let Some(output) = output.as_ref().filter(|o| terminal.is_none() && !o.trim().is_empty()) {
                    content.push(format!("```\n{}\n```", output.trim_end()).into());
                }
                let fields = acp::ToolCallUpdateFields::new().status(status).content(content);
                self.update(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id(call), fields)));
            }
            RunEvent::Thought(thought) => self.think(thought),
            RunEvent::Said(text) => self.say(&format!("{}\n", text.trim_end())),
            // ACP's usage is the context's fill against its size: sent only once the size is known
            RunEvent::ContextUsed(tokens) => {
                if let Some(size) = *lock(&self.window) {
                    let used = acp::UsageUpdate::new(u64::from(*tokens), u64::from(size));
                    self.send(acp::SessionUpdate::UsageUpdate(used));
                }
            }
            RunEvent::Checked(check) => self.checked(run_id, check),
            RunEvent::Finished(report) => self.finished(report),
        }
    }
}

impl AcpEditor {
    async fn terminal(
        &self,
        command: TerminalCommand<'_>,
        cancel: &CancellationToken,
    ) -> Result<TerminalOutcome, String> {
        let create = acp::CreateTerminalRequest::new(self.session_id.clone(), command.program)
            .args(command.args.to_vec())
            .cwd(command.cwd.to_path_buf())
            .output_byte_limit(command.output_limit as u64);
        let created = self
            .connection
            .request::<acp::CreateTerminalResponse>("terminal/create", &create, Some(FILE_TIMEOUT))
            .await
            .map_err(|err| err.to_string())?;
        let terminal = created.terminal_id;
        if let Some(call) = self.current_call() {
            lock(&self.terminals).insert(call.clone(), terminal.clone());
            let shown = acp::ToolCallContent::Terminal(acp::Terminal::new(terminal.clone()));
            let fields = acp::ToolCallUpdateFields::new().content(vec![shown]);
            self.update(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call, fields)));
        }
        let wait = acp::WaitForTerminalExitRequest::new(self.session_id.clone(), terminal.clone());
        let (mut timed_out, mut cancelled) = (false, false);
        let exited = tokio::select! {
            exited = self.connection.request::<acp::WaitForTerminalExitResponse>(
                "terminal/wait_for_exit", &wait, Some(command.timeout)
            ) => match exited {
                Ok(exited) => Ok(Some(exited.exit_status)),
                Err(ClientError::Timeout { .. }) => {
                    timed_out = true;
                    Ok(None)
                }
                Err(err) => Err(err.to_string()),
            },
            () = cancel.cancelled() => {
                cancelled = true;
                Ok(None)
            }
        };
        let id = || (self.session_id.clone(), terminal.clone());
        if !matches!(exited, Ok(Some(_))) {
            // what it started goes too, whatever signal the editor's kill sends
            (command.stop)();
            let (session, terminal) = id();
            let kill = acp::KillTerminalRequest::new(session, terminal);
            if let Err(err) =
                self.connection.request::<serde_json::Value>("terminal/kill", &kill, Some(FILE_TIMEOUT)).await
            {
                tracing::warn!("acp: a command in the editor's terminal may still run: {err}");
            }
        }
        let (session, terminal_id) = id();
        let read = acp::TerminalOutputRequest::new(session, terminal_id);
        let output = self
            .connection
            .request::<acp::TerminalOutputResponse>("terminal/output", &read, Some(FILE_TIMEOUT))
            .await;
        let (session, terminal_id) = id();
        let release = acp::ReleaseTerminalRequest::new(session, terminal_id);
        if let Err(err) = self
            .connection
            .request::<serde_json::Value>("terminal/release", &release, Some(FILE_TIMEOUT))
            .await
        {
            tracing::debug!("acp: the editor's terminal was not released: {err}");
        }
        let exited = exited?;
        let output = output.map_err(|err| err.to_string())?;
        let status = exited
            .as_ref()
            .or(output.exit_status.as_ref())
            .filter(|_| !timed_out && !cancelled)
            .and_then(|status| status.exit_code)
            .and_then(|code| i32::try_from(code).ok());
        let mut text = output.output;
        if output.truncated {
            text.insert_str(0, "[the editor's terminal kept only the end of the output]\n");
        }
        Ok(TerminalOutcome { status, timed_out, cancelled, output: text })
    }

    fn finished(&self, report: &RunReport) {
        self.say(&report.summary);
    }

    /// The model's context window for the prompt's run (`None`: unknown, so no usage is sent).
    pub fn set_context_window(&self, window: Option<u32>) {
        *lock(&self.window) = window;
    }

    /// The tool call a question is about (the one going on), if any.
    pub fn current_call(&self) -> Option<String> {
        lock(&self.current_call).clone()
    }
}

/// What a person answered "always" to in this session, by kind of action.
#[derive(Default)]
pub struct Remembered(Mutex<HashMap<String, bool>>);

/// Asks the client's user with `session/request_permission`, showing the change's diff; an
/// "always" answer holds for the rest of the session and that kind of action.
pub struct AcpApprover {
    pub editor: Arc<AcpEditor>,
    pub remembered: Arc<Remembered>,
    questions: std::sync::atomic::AtomicU32,
}

impl AcpApprover {
    pub fn new(editor: Arc<AcpEditor>) -> AcpApprover {
        AcpApprover { editor, remembered: Arc::default(), questions: Default::default() }
    }
}

/// What an "always" answer holds for: the kind of action, and for a command the whole command
/// (an "always" for `python` must not let any Python through).
fn remembered_as(request: &Request) -> String {
    match request {
        Request::Command { argv, .. } => format!("run `{}`", argv.join(" ")),
        other => other.action().to_string(),
    }
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

#[async_trait]
impl Approver for AcpApprover {
    async fn decide(&self, run_id: &str, request: &Request) -> Decision {
        let key = remembered_as(request);
        match lock(&self.remembered.0).get(&key) {
            Some(true) => return Decision::Approve,
            Some(false) => {
                return Decision::Reject(format!("the user said never to {key} in this session"));
            }
            None => {}
        }
        let editor = &self.editor;
        let current = editor.current_call();
        let id = current.clone().unwrap_or_else(|| {
            let number = self.questions.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            format!("{run_id}/ask-{number}")
        });
        let tool_kind = match request {
            Request::Command { .. } | Request::Commit { .. } => acp::ToolKind::Execute,
            Request::Change { action, .. } => match action.as_str() {
                "delete" => acp::ToolKind::Delete,
                "rename" => acp::ToolKind::Move,
                _ => acp::ToolKind::Edit,
            },
            Request::Look { .. } => acp::ToolKind::Read,
            Request::Tool { .. } => acp::ToolKind::Other,
        };
        let mut content: Vec<acp::ToolCallContent> = Vec::new();
        if let Some(file) = request.file() {
            content.push(editor.diff(file));
        } else if !request.diff().is_empty() {
            content.push(request.diff().to_string().into());
        } else if let Request::Tool { .. } = request {
            // what would be sent to the server
            content.push(request.summary().into());
        }
        // a question about the tool call going on keeps its title and status; one of its own
        // (a commit, an unlisted command of the engine's) says what it is
        let mut fields = acp::ToolCallUpdateFields::new().kind(tool_kind).content(content);
        if current.is_none() {
            fields = fields
                .title(format!("Tokamak wants to {}", request.summary()))
                .status(acp::ToolCallStatus::Pending);
        }
        let options = vec![
            acp::PermissionOption::new(ALLOW_ONCE, "Allow", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Always allow {key}"),
                acp::PermissionOptionKind::AllowAlways,
            ),
            acp::PermissionOption::new(REJECT_ONCE, "Reject", acp::PermissionOptionKind::RejectOnce),
            acp::PermissionOption::new(
                REJECT_ALWAYS,
                format!("Never allow {key}"),
                acp::PermissionOptionKind::RejectAlways,
            ),
        ];
        let question = acp::RequestPermissionRequest::new(
            editor.session_id.clone(),
            acp::ToolCallUpdate::new(id, fields),
            options,
        );
        // a person takes as long as they take: the run's cancel ends the wait
        let answer = editor
            .connection
            .request::<acp::RequestPermissionResponse>("session/request_permission", &question, None)
            .await;
        match answer {
            Ok(response) => match response.outcome {
                acp::RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                    ALLOW_ONCE => Decision::Approve,
                    ALLOW_ALWAYS => {
                        lock(&self.remembered.0).insert(key, true);
                        Decision::Approve
                    }
                    REJECT_ALWAYS => {
                        lock(&self.remembered.0).insert(key, false);
                        Decision::Reject("the user said no".to_string())
                    }
                    REJECT_ONCE => Decision::Reject("the user said no".to_string()),
                    other => Decision::Refuse(format!(
                        "the editor answered with an option never offered ({other})"
                    )),
                },
                acp::RequestPermissionOutcome::Cancelled => {
                    Decision::Refuse("the prompt was cancelled before the user answered".to_string())
                }
                _ => Decision::Refuse("the editor's answer was not one Tokamak knows".to_string()),
            },
            Err(err) => Decision::Refuse(format!("the question could not be asked: {err}")),
        }
    }
}
