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
mod wire;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use agent::Agent;
use wire::{Connection, Incoming};

/// Serves ACP on stdin and stdout until the client closes stdin.
pub async fn serve() -> anyhow::Result<()> {
    serve_on(tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves ACP on `input` and `output`.
pub async fn serve_on<I, O>(input: I, mut output: O) -> anyhow::Result<()>
where
    I: tokio::io::AsyncRead + Unpin,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (connection, mut lines) = Connection::new();
    let connection = Arc::new(connection);
    let writer = tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            let written = async {
                output.write_all(line.as_bytes()).await?;
                output.write_all(b"\n").await?;
                output.flush().await
            };
            if let Err(err) = written.await {
                tracing::warn!("acp: the editor's end of stdout closed: {err}");
                break;
            }
        }
    });
    let agent = Arc::new(Agent::new(Arc::clone(&connection)));
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                tracing::warn!("acp: stdin could not be read: {err}");
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let read = wire::read(&text);
        let is_prompt = matches!(&read, Ok(Incoming::Request { method, .. }) if method == "session/prompt");
        match read {
            Ok(Incoming::Request { id, method, params }) => {
                let requested = params.get("sessionId").and_then(Value::as_str).map(str::to_string);
                let agent = Arc::clone(&agent);
                let answer = async move {
                    let answer = agent.handle(&method, params).await;
                    agent.connection.respond(id, answer.clone());
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
