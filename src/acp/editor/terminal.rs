//! A command in the ACP client's terminal: created, shown in the tool call going on, waited for
//! up to its timeout, stopped (what it started too) and killed at the timeout or a cancel, its
//! output read and the terminal released.

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use super::{AcpEditor, FILE_TIMEOUT};
use crate::editor::{TerminalCommand, TerminalOutcome};
use crate::jsonrpc::ClientError;
use crate::sync::lock;

impl AcpEditor {
    pub(super) async fn terminal(
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
}
