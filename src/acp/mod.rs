//! `tokamak acp`: the Agent Client Protocol front end (Zed, JetBrains, Neovim's CodeCompanion
//! and avante, Emacs' agent-shell). It reads one JSON-RPC message per line from stdin, answers
//! requests in the order they come, each prompt on a task of its own (a prompt that waits on a
//! permission never blocks the loop), and writes only protocol to stdout. Only this room knows ACP; the agent acts through
//! the same session, `Editor` and `Approver` traits as the LSP and the command line.

mod agent;
mod commands;
mod editor;
mod options;
mod store;

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::Error as AcpError;
use serde_json::{Value, json};
use tokio::io::BufReader;

use crate::jsonrpc::lines::{Line, LineReader, MAX_LINE_BYTES, write_lines};
use crate::jsonrpc::{Connection, Incoming, RpcError};
use agent::Agent;

/// Serves ACP on stdin and stdout until the client closes stdin.
pub async fn serve() -> anyhow::Result<()> {
    serve_on(tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves ACP on `input` and `output`.
pub async fn serve_on<I, O>(input: I, output: O) -> anyhow::Result<()>
where
    I: tokio::io::AsyncRead + Unpin,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (connection, lines) = Connection::new();
    let connection = Arc::new(connection);
    let writer = tokio::spawn(write_lines(output, lines));
    let agent = Arc::new(Agent::new(Arc::clone(&connection)));
    let mut input = LineReader::new(BufReader::new(input), MAX_LINE_BYTES);
    loop {
        let text = match input.next().await {
            Ok(Some(Line::Text(text))) => text,
            Ok(Some(Line::TooLong(bytes))) => {
                let why = format!(
                    "a line of {bytes} bytes is longer than the {MAX_LINE_BYTES}-byte limit; it was skipped"
                );
                tracing::warn!("acp: {why}");
                connection.respond(Value::Null, Err(RpcError::parse_error().data(json!(why))));
                continue;
            }
            Ok(None) => break,
            Err(err) => {
                tracing::warn!("acp: stdin could not be read: {err}");
                break;
            }
        };
        let read = crate::jsonrpc::read(&text);
        let is_prompt = matches!(&read, Ok(Incoming::Request { method, .. }) if method == "session/prompt");
        match read {
            Ok(Incoming::Request { id, method, params }) => {
                let requested = params.get("sessionId").and_then(Value::as_str).map(str::to_string);
                let agent = Arc::clone(&agent);
                let answer = async move {
                    let answer = agent.handle(&method, params).await;
                    agent.connection.respond(id, answer.clone().map_err(on_the_wire));
                    agent.after(&method, requested.as_deref(), &answer);
                };
                // a prompt runs on a task of its own (it waits on the model and on questions);
                // everything else is answered here, in the order it came
                if is_prompt {
                    tokio::spawn(answer);
                } else {
                    answer.await;
                }
            }
            Ok(Incoming::Notification { method, params }) => agent.notified(&method, params),
            Ok(Incoming::Response(message)) => {
                if !connection.answered(&message) {
                    tracing::debug!("acp: an answer to no question of Tokamak's: {message}");
                }
            }
            Err(unreadable) => {
                let (id, error) = *unreadable;
                connection.respond(id, Err(error));
            }
        }
    }
    // the editor has gone: every prompt stops, every question fails, and Tokamak ends
    agent.shutdown();
    connection.close();
    drop(agent);
    drop(connection);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    Ok(())
}

/// ACP's error as the JSON-RPC error object it is on the wire.
fn on_the_wire(error: AcpError) -> RpcError {
    RpcError { code: i32::from(error.code), message: error.message, data: error.data }
}
