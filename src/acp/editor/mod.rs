//! The editor as an ACP client is it: one session's updates sent (and kept for a replay),
//! files read and written through the client's `fs/*` when it offers them (else the disk), and
//! the run stream (`updates.rs`), the client's terminal (`terminal.rs`) and the approver that
//! asks the client's user (`approver.rs`) beside it.

mod approver;
mod terminal;
mod updates;

pub use approver::AcpApprover;

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
    DocumentEdit, EditOutcome, Editor, MessageLevel, RunEvent, TerminalCommand, TerminalOutcome,
};
use crate::executor::ChangedFile;
use crate::jsonrpc::Connection;
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
        self.render(run_id, event);
    }
}

impl AcpEditor {
    /// The model's context window for the prompt's run (`None`: unknown, so no usage is sent).
    pub fn set_context_window(&self, window: Option<u32>) {
        *lock(&self.window) = window;
    }

    /// The tool call a question is about (the one going on), if any.
    pub fn current_call(&self) -> Option<String> {
        lock(&self.current_call).clone()
    }
}
