//! A lean LSP client for measuring language servers as an editor waits on them: the server's
//! messages read on a thread of their own and timed as they arrive, its own requests answered
//! with nothing, its memory read from `/proc` (`latency.rs`, `memory.rs`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Why a server could not be measured (by `latency.rs` or `memory.rs`, through this client).
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} has no language Tokamak knows how to type a comment in (Python, TypeScript, JavaScript)")]
    Language { path: PathBuf },
    #[error("{} has no Python files to open", root.display())]
    NoSources { root: PathBuf },
    #[error("cannot start `{command}`: {source}")]
    Start { command: String, source: std::io::Error },
    #[error("`{command}` did not {what} within {seconds} s")]
    Silent { command: String, what: String, seconds: u64 },
    #[error("`{command}` closed its output (it ended)")]
    Ended { command: String },
    #[error("cannot write to `{command}`: {source}")]
    Write { command: String, source: std::io::Error },
}

/// A language server on the other end of a pipe, its messages read on a thread of their own
/// and timed as they arrive.
pub struct Server {
    command: String,
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
    next_id: u64,
    timeout: Duration,
}

impl Server {
    pub fn start(command: &[String], cwd: &Path, timeout: Duration) -> Result<Server, LatencyError> {
        let name = command.join(" ");
        let Some((program, args)) = command.split_first() else {
            return Err(LatencyError::Start {
                command: name,
                source: std::io::ErrorKind::InvalidInput.into(),
            });
        };
        let mut child = Command::new(program)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| LatencyError::Start { command: name.clone(), source })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LatencyError::Ended { command: name });
        };
        let (tell, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if tell.send(message).is_err() {
                    break;
                }
            }
        });
        Ok(Server { command: name, child, stdin, messages, next_id: 1, timeout })
    }

    fn send(&mut self, message: &Value) -> Result<(), LatencyError> {
        let frame = crate::jsonrpc::headers::frame(message.to_string().as_bytes());
        self.stdin
            .write_all(&frame)
            .and_then(|()| self.stdin.flush())
            .map_err(|source| LatencyError::Write { command: self.command.clone(), source })
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), LatencyError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Sends a request and waits for its answer, answering the server's own requests
    /// (configuration, progress, registrations) with nothing.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, LatencyError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.wait(&format!("answer {method}"), |m| m["id"] == id && m.get("method").is_none())
    }

    pub fn change(
        &mut self,
        uri: &str,
        version: i64,
        line: u32,
        column: u32,
        text: &str,
    ) -> Result<(), LatencyError> {
        let at = json!({"line": line, "character": column});
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": at, "end": at}, "text": text}],
            }),
        )
    }

    /// Waits for the first diagnostics published for `uri` at `version` (or without a
    /// version, from a server that does not say).
    pub fn diagnostics(&mut self, uri: &str, version: i64) -> Result<(), LatencyError> {
        self.wait("publish diagnostics", |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"].as_i64().is_none_or(|v| v == version)
        })
        .map(|_| ())
    }

    pub fn wait(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Result<Value, LatencyError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.messages.recv_timeout(left) {
                Ok(message) => message,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(LatencyError::Silent {
                        command: self.command.clone(),
                        what: what.to_string(),
                        seconds: self.timeout.as_secs(),
                    });
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(LatencyError::Ended { command: self.command.clone() });
                }
            };
            if message.get("method").is_some() && message.get("id").is_some() {
                let answer = match message["method"].as_str() {
                    Some("workspace/configuration") => {
                        let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                        json!(vec![Value::Null; items])
                    }
                    _ => Value::Null,
                };
                self.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": answer}))?;
            }
            if matches(&message) {
                return Ok(message);
            }
        }
    }

    /// Resident memory now and at its peak, in MiB (`/proc/PID/status`; `None` elsewhere).
    pub fn memory(&self) -> (Option<f64>, Option<f64>) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
                .map(|kib| kib / 1024.0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Asks the server to shut down and exit; kills it when it does not within a few seconds.
    pub fn stop(mut self) {
        let timeout = self.timeout;
        self.timeout = Duration::from_secs(3);
        let _ = self.request("shutdown", Value::Null);
        let _ = self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.timeout = timeout;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `Content-Length`-framed message; `None` when the stream ends or breaks. A body that is
/// not JSON is passed over.
fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    loop {
        let body = crate::jsonrpc::headers::read_blocking(reader).ok()??;
        if let Ok(message) = serde_json::from_slice(&body) {
            return Some(message);
        }
    }
}
