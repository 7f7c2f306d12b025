//! The connection: Tokamak frames stdin and stdout itself, with tower-lsp-server between them.
//!
//! Reading: tower-lsp-server (0.23, as tower-lsp 0.20 before it) answers the first frame it
//! cannot decode (invalid JSON, a batch array, a missing `jsonrpc`, invalid UTF-8, a header in
//! lower case) with an error and then stops reading for good, and a `Content-Length` it
//! believes (10¹² bytes, say) makes any reader deaf. (Upstream, the first is two behaviours
//! meeting: tokio-util's `FramedRead` yields `None` once after its decoder's error, as
//! tokio-rs/tokio#3976 settled, and tower-lsp-server's read loop in its `src/transport.rs`,
//! `while let Some(msg) = framed_stdin.next().await`, takes that `None` for the end of the
//! input.) So every frame is read here first, by `jsonrpc::headers`: junk before a header is
//! reported and skipped, an absurd length is answered at once and the reader resynchronises on
//! the next header, and a malformed message gets the JSON-RPC error the specification
//! prescribes (`-32700` parse error, `-32600` invalid request) — all answered here, through
//! the [`Outbox`], without tower-lsp-server. Requests whose method starts with `$/` get
//! MethodNotFound as LSP requires (tower-lsp-server drops them unanswered). `shutdown` and
//! `exit` are seen here too ([`Lifecycle`]): `exit` ends the process at once (status 0 after
//! `shutdown`, 1 without), and so does the end of the input, after a short grace.
//!
//! Writing: tower-lsp-server writes into a pipe whose frames are copied whole to stdout,
//! between the frames Tokamak sends itself ([`Outbox`]: answers to malformed and deferred
//! requests — tower-lsp-server has no way to answer a request later, off its queue), so the
//! two never interleave and tower-lsp-server never blocks on an editor that is slow to read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{ErrorCode, Request, Response};

use crate::jsonrpc::headers::{Frame, FrameReader, frame_into};

/// After the input ends, how long handlers and runs get to finish before the process ends.
const GRACE_AFTER_EOF: Duration = Duration::from_secs(2);

/// What goes to the writer.
enum Out {
    Frame(Vec<u8>),
    Exit(i32),
}

/// Messages Tokamak sends itself, written whole between tower-lsp-server's frames.
#[derive(Clone)]
pub struct Outbox {
    sender: mpsc::UnboundedSender<Out>,
}

impl Outbox {
    fn frame(&self, body: Vec<u8>) {
        let _ = self.sender.send(Out::Frame(body));
    }

    /// Answers request `id` with a result.
    pub fn result(&self, id: Value, result: Value) {
        self.frame(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string().into_bytes());
    }

    /// Answers request `id` with an error.
    pub fn error(&self, id: Value, code: i64, message: &str) {
        let error = json!({"code": code, "message": message});
        self.frame(json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string().into_bytes());
    }

    /// Ends the process once everything before is written: children killed, status `code`.
    pub fn exit(&self, code: i32) {
        let _ = self.sender.send(Out::Exit(code));
    }
}

/// Whether the editor asked to shut down, and what the process's status is when it ends.
#[derive(Default)]
pub struct Lifecycle {
    shutdown: AtomicBool,
}

impl Lifecycle {
    /// LSP 3.17: 0 after `shutdown`, 1 without.
    pub fn exit_code(&self) -> i32 {
        if self.shutdown.load(Ordering::SeqCst) { 0 } else { 1 }
    }
}

/// Writes to `stdout` from a thread of its own, each message in one write and a flush:
/// returns the pipe tower-lsp-server writes into and the [`Outbox`]. For a stdout the runtime cannot
/// poll ([`output_async`] is for one it can): the async standard output hands every write
/// and flush to a blocking thread in turn (three hand-offs a message), and on a busy machine
/// each hand-off can wait for a core.
pub fn output<W>(stdout: W) -> (DuplexStream, Outbox)
where
    W: std::io::Write + Send + 'static,
{
    let (server_side, outbox, mut receiver) = queue();
    let writer = std::thread::Builder::new().name("tokamak-stdout".to_string()).spawn(move || {
        let mut stdout = stdout;
        let mut message = Vec::new();
        while let Some(out) = receiver.blocking_recv() {
            match out {
                Out::Frame(body) => {
                    frame_into(&body, &mut message);
                    if stdout.write_all(&message).and_then(|()| stdout.flush()).is_err() {
                        // the editor is gone
                        end(1);
                    }
                }
                Out::Exit(code) => {
                    let _ = stdout.flush();
                    end(code);
                }
            }
        }
    });
    if let Err(err) = writer {
        // nothing can be said to the editor without it
        tracing::error!("cannot start the thread that writes to the editor: {err}");
        end(1);
    }
    (server_side, outbox)
}

/// What the connection's end ends: the process (an editor's server), or only the serving — a
/// server inside a test's process, told the status the process would have ended with.
pub enum Ending {
    Process,
    Serving(tokio::sync::oneshot::Sender<i32>),
}

impl Ending {
    fn end(&mut self, code: i32) {
        match std::mem::replace(self, Ending::Process) {
            Ending::Process => end(code),
            Ending::Serving(told) => {
                crate::process::kill_all();
                let _ = told.send(code);
            }
        }
    }
}

/// [`output`] for a stdout the runtime polls ([`super::pipe::Pipe`]) or an in-memory stream:
/// each message written in one write from a task, which waits (without holding a thread)
/// while the editor is slow to read.
pub fn output_async<W>(stdout: W, mut ending: Ending) -> (DuplexStream, Outbox)
where
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (server_side, outbox, mut receiver) = queue();
    tokio::spawn(async move {
        let mut stdout = stdout;
        let mut message = Vec::new();
        while let Some(out) = receiver.recv().await {
            match out {
                Out::Frame(body) => {
                    frame_into(&body, &mut message);
                    if stdout.write_all(&message).await.is_err() {
                        // the editor is gone
                        ending.end(1);
                        return;
                    }
                }
                Out::Exit(code) => {
                    let _ = stdout.flush().await;
                    ending.end(code);
                    return;
                }
            }
        }
    });
    (server_side, outbox)
}

/// The queue of what goes to the editor: the pipe tower-lsp-server writes into, its frames copied
/// whole into the queue, and the [`Outbox`] for Tokamak's own.
fn queue() -> (DuplexStream, Outbox, mpsc::UnboundedReceiver<Out>) {
    let (sender, receiver) = mpsc::unbounded_channel::<Out>();
    let outbox = Outbox { sender };
    let (server_side, ours) = tokio::io::duplex(64 * 1024);
    let copier = outbox.clone();
    tokio::spawn(async move {
        let mut frames = FrameReader::new(ours);
        while let Ok(Some(frame)) = frames.next().await {
            if let Frame::Body(body) = frame {
                copier.frame(body);
            }
        }
    });
    (server_side, outbox, receiver)
}

/// Ends the process: every child process group killed first.
fn end(code: i32) -> ! {
    let killed = crate::process::kill_all();
    if killed > 0 {
        tracing::info!("stopped {killed} child process group(s)");
    }
    tracing::info!("exiting with status {code}");
    std::process::exit(code)
}

/// `workspace/executeCommand` requests for these commands are answered off tower-lsp-server's
/// one-at-a-time queue ([`DEFERRED_METHOD`]): they wait on checkers or the model.
pub const DEFERRED_COMMANDS: &[&str] = &[
    "tokamak.diagnostics",
    "tokamak.checkModel",
    "tokamak.pickers",
    "tokamak.status",
    "tokamak.plan",
    "tokamak.context",
];

/// The notification a deferred request is turned into: `{id, command, arguments}`.
pub const DEFERRED_METHOD: &str = "$/tokamak/deferred";

/// Reads frames from `input`, checks them, answers what tower-lsp-server cannot, and hands
/// tower-lsp-server a stream of frames it can always decode.
pub fn checked_input<R>(input: R, outbox: Outbox, lifecycle: Arc<Lifecycle>) -> DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut frames = FrameReader::new(input);
        loop {
            let frame = match frames.next().await {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(err) => {
                    tracing::error!("cannot read from the editor: {err}");
                    break;
                }
            };
            let body = match frame {
                Frame::Bad(problem) => {
                    tracing::warn!("malformed input from the editor: {problem}");
                    outbox.error(Value::Null, ErrorCode::ParseError.code(), &problem);
                    continue;
                }
                Frame::Body(body) => body,
            };
            let Some(body) = route(body, &outbox, &lifecycle) else { continue };
            let written = async {
                writer.write_all(&crate::jsonrpc::headers::frame(&body)).await?;
                writer.flush().await
            };
            if written.await.is_err() {
                break; // the server stopped reading: it is shutting down
            }
        }
        // the editor is gone: give what is in flight a moment, then end (tower-lsp-server drops its
        // handlers once its own input ends, so that ends after the moment too)
        tokio::time::sleep(GRACE_AFTER_EOF).await;
        drop(writer);
        tracing::info!("the editor closed the connection");
        outbox.exit(lifecycle.exit_code());
    });
    reader
}

/// What to do with one well-framed message: `Some(body)` to pass to tower-lsp-server (perhaps
/// rewritten), `None` when it was answered or acted on here.
fn route(body: Vec<u8>, outbox: &Outbox, lifecycle: &Lifecycle) -> Option<Vec<u8>> {
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => {
            let problem = format!("the message is not JSON: {err}");
            tracing::warn!("malformed message from the editor: {problem}");
            outbox.error(Value::Null, ErrorCode::ParseError.code(), &problem);
            return None;
        }
    };
    if let Some(problem) = shape_problem(&value).or_else(|| decodes(&body, &value)) {
        tracing::warn!("malformed message from the editor: {problem}");
        // a malformed *response* gets a null id: its own could be one of the client's
        let id = value
            .get("id")
            .filter(|id| (id.is_string() || id.is_i64()) && value.get("method").is_some())
            .cloned()
            .unwrap_or(Value::Null);
        outbox.error(id, ErrorCode::InvalidRequest.code(), problem);
        return None;
    }
    let method = value.get("method").and_then(Value::as_str);
    let id = value.get("id").filter(|id| !id.is_null());
    match (method, id) {
        (Some("shutdown"), Some(_)) => lifecycle.shutdown.store(true, Ordering::SeqCst),
        (Some("exit"), None) => {
            tracing::info!("exit: ending the process");
            outbox.exit(lifecycle.exit_code());
            return None;
        }
        (Some(method), Some(id)) if method.starts_with("$/") => {
            outbox.error(id.clone(), ErrorCode::MethodNotFound.code(), &format!("unknown method {method}"));
            return None;
        }
        (Some("workspace/executeCommand"), Some(id))
            if value["params"]["command"].as_str().is_some_and(|c| DEFERRED_COMMANDS.contains(&c)) =>
        {
            let params = json!({
                "id": id,
                "command": value["params"]["command"],
                "arguments": value["params"].get("arguments").cloned().unwrap_or(Value::Null),
            });
            let notification = json!({"jsonrpc": "2.0", "method": DEFERRED_METHOD, "params": params});
            return Some(notification.to_string().into_bytes());
        }
        _ => {}
    }
    Some(body)
}

/// Whether tower-lsp-server itself can decode the message (it stops reading at the first it cannot):
/// ids beyond `i64`, fractional ids and duplicate keys pass [`shape_problem`] but not this.
fn decodes(body: &[u8], value: &Value) -> Option<&'static str> {
    let decodes = if body.len() <= REPARSED_BYTES {
        serde_json::from_slice::<Request>(body).is_ok() || serde_json::from_slice::<Response>(body).is_ok()
    } else {
        // a large message (a document opened) is not parsed whole again: its members are
        // checked once each without copying them, then decoded from the parsed value
        use serde::Deserialize;
        serde_json::from_slice::<Members>(body).is_ok()
            && (Request::deserialize(value).is_ok() || Response::deserialize(value).is_ok())
    };
    (!decodes).then_some("the message is not a JSON-RPC request, notification or response")
}

/// Messages up to this size are decoded from their bytes as tower-lsp-server will; larger ones from
/// the value already parsed, after a check that no member of theirs is given twice (which the
/// value would hide and tower-lsp-server refuses).
const REPARSED_BYTES: usize = 64 * 1024;

/// A message's members, each skipped without being copied; reading fails when one is given
/// twice.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // read only to be checked
struct Members {
    #[serde(default)]
    jsonrpc: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    params: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// What keeps `value` from being a JSON-RPC 2.0 request, notification or response that
/// tower-lsp-server can decode.
fn shape_problem(value: &Value) -> Option<&'static str> {
    let Some(object) = value.as_object() else {
        return Some("a message must be a JSON object (batches are not part of LSP)");
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Some("a message must have \"jsonrpc\": \"2.0\"");
    }
    if let Some(id) = object.get("id")
        && !(id.is_string() || id.is_i64() || id.is_null())
    {
        return Some("\"id\" must be an integer, a string or null");
    }
    if let Some(method) = object.get("method") {
        return (!method.is_string()).then_some("\"method\" must be a string");
    }
    if !object.contains_key("id") {
        return Some("a message needs a \"method\" or, for a response, an \"id\"");
    }
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => None,
        (None, Some(error)) if error["code"].is_i64() && error["message"].is_string() => None,
        (None, Some(_)) => Some("a response's \"error\" needs a numeric \"code\" and a \"message\""),
        _ => Some("a response needs exactly one of \"result\" and \"error\""),
    }
}

/// Waits at most `limit` for the editor's answer to a request Tokamak sent (`request` is the
/// future tower-lsp-server returned); `None` when the time ran out. An answer that comes after
/// is dropped by tower-lsp-server (0.20 panicked on it, which this once had to work around).
pub async fn ask_within<T>(limit: Duration, request: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::time::timeout(limit, request).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_routed() {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let outbox = Outbox { sender };
        let lifecycle = Lifecycle::default();
        let mut answered = || match receiver.try_recv() {
            Ok(Out::Frame(body)) => serde_json::from_slice::<Value>(&body).unwrap(),
            Ok(Out::Exit(code)) => json!({"exit": code}),
            Err(_) => Value::Null,
        };
        // tower-lsp-server cannot decode these: answered here
        for body in
            [r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#, r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#]
        {
            assert!(route(body.as_bytes().to_vec(), &outbox, &lifecycle).is_none(), "{body}");
            assert_eq!(answered()["error"]["code"], -32600);
        }
        // the same for a message too large to be parsed twice
        let long = "x".repeat(REPARSED_BYTES);
        let large = format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"x","params":{{"text":"{long}"}}}}"#);
        assert!(route(large.into_bytes(), &outbox, &lifecycle).is_none());
        assert_eq!(answered()["error"]["code"], -32600);
        let large = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":{{"text":"{long}","text":"twice is JSON"}}}}"#
        );
        assert!(
            route(large.into_bytes(), &outbox, &lifecycle).is_some(),
            "a large, well-formed message passes"
        );
        assert!(route(b"{nope".to_vec(), &outbox, &lifecycle).is_none());
        assert_eq!(answered()["error"]["code"], -32700);
        // a `$/` request
        assert!(
            route(br#"{"jsonrpc":"2.0","id":7,"method":"$/custom"}"#.to_vec(), &outbox, &lifecycle).is_none()
        );
        let answer = answered();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(7), json!(-32601)));
        // a `$/` notification passes
        let cancel = br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#.to_vec();
        assert_eq!(route(cancel.clone(), &outbox, &lifecycle), Some(cancel));
        // a deferred command becomes a notification
        let deferred = route(
            br#"{"jsonrpc":"2.0","id":9,"method":"workspace/executeCommand","params":{"command":"tokamak.checkModel","arguments":[{}]}}"#.to_vec(),
            &outbox,
            &lifecycle,
        )
        .unwrap();
        let deferred: Value = serde_json::from_slice(&deferred).unwrap();
        assert_eq!(deferred["method"], DEFERRED_METHOD);
        assert_eq!(deferred["params"], json!({"id": 9, "command": "tokamak.checkModel", "arguments": [{}]}));
        // exit without shutdown: status 1; after shutdown: 0
        assert!(route(br#"{"jsonrpc":"2.0","method":"exit"}"#.to_vec(), &outbox, &lifecycle).is_none());
        assert_eq!(answered(), json!({"exit": 1}));
        let shutdown = br#"{"jsonrpc":"2.0","id":3,"method":"shutdown"}"#.to_vec();
        assert_eq!(route(shutdown.clone(), &outbox, &lifecycle), Some(shutdown));
        assert_eq!(lifecycle.exit_code(), 0);
    }

    #[test]
    fn checks_the_shape_of_messages() {
        let cases = [
            (json!({"jsonrpc": "2.0", "id": 1, "method": "x"}), None),
            (json!({"jsonrpc": "2.0", "method": "x", "params": null}), None),
            (json!({"jsonrpc": "2.0", "id": 1, "result": null}), None),
            (json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}}), None),
            (json!([1]), Some("JSON object")),
            (json!({"id": 1, "method": "x"}), Some("jsonrpc")),
            (json!({"jsonrpc": "2.0", "id": {}, "method": "x"}), Some("\"id\" must")),
            (json!({"jsonrpc": "2.0", "method": 3}), Some("\"method\" must")),
            (json!({"jsonrpc": "2.0", "params": {}}), Some("needs a \"method\"")),
            (json!({"jsonrpc": "2.0", "id": 1, "error": "bad"}), Some("numeric \"code\"")),
        ];
        for (message, expected) in cases {
            let problem = shape_problem(&message);
            match expected {
                None => assert_eq!(problem, None, "{message}"),
                Some(part) => assert!(problem.is_some_and(|p| p.contains(part)), "{message}: {problem:?}"),
            }
        }
    }
}
