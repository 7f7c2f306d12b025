//! The connection: Tokamak frames stdin and stdout itself, with tower-lsp-server between them.
//!
//! Reading: tower-lsp-server (0.23, as tower-lsp 0.20 before it) answers the first frame it
//! cannot decode (invalid JSON, a batch array, a missing `jsonrpc`, invalid UTF-8, a header in
//! lower case) with an error and then stops reading for good, and a `Content-Length` it
//! believes (10¹² bytes, say) makes any reader deaf. So every frame is read here first: junk
//! before a header is reported and skipped, an absurd length is answered at once and the
//! reader resynchronises on the next header, and a malformed message gets the JSON-RPC error
//! the specification prescribes (`-32700` parse error, `-32600` invalid request) — all
//! answered here, through the [`Outbox`], without tower-lsp-server. Requests whose method
//! starts with `$/` get MethodNotFound as LSP requires (tower-lsp-server drops them
//! unanswered). `shutdown` and `exit` are seen here too ([`Lifecycle`]): `exit` ends the
//! process at once (status 0 after `shutdown`, 1 without), and so does the end of the input,
//! after a short grace.
//!
//! Writing: tower-lsp-server writes into a pipe whose frames are copied whole to stdout,
//! between the frames Tokamak sends itself ([`Outbox`]: answers to malformed and deferred
//! requests — tower-lsp-server has no way to answer a request later, off its queue), so the
//! two never interleave and tower-lsp-server never blocks on an editor that is slow to read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{ErrorCode, Request, Response};

/// Frames larger than this are refused rather than buffered: 256 MiB.
const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;
/// Header lines longer than this are not headers.
const MAX_HEADER_LINE: usize = 8 * 1024;
/// After the input ends, how long handlers and runs get to finish before the process ends.
const GRACE_AFTER_EOF: Duration = Duration::from_secs(2);

/// What one read of the input gives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Frame {
    Body(Vec<u8>),
    /// Something that is not a message, said in one sentence; reading goes on.
    Bad(String),
}

/// Reads frames, resynchronising after anything that is not one.
struct FrameReader<R> {
    input: BufReader<R>,
    /// A header line already read, which starts the next frame.
    pending: Option<Vec<u8>>,
    /// Skipping the body of a frame that was refused: what comes before the next header is
    /// not reported again.
    resyncing: bool,
    /// The tail of a line cut at `MAX_HEADER_LINE`, read again as the start of the next one.
    carried: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(input: R) -> FrameReader<R> {
        FrameReader { input: BufReader::new(input), pending: None, resyncing: false, carried: Vec::new() }
    }

    async fn line(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(line) = self.pending.take() {
            return Ok(Some(line));
        }
        let mut line = std::mem::take(&mut self.carried);
        let carried = line.len();
        let read = (&mut self.input).take(MAX_HEADER_LINE as u64).read_until(b'\n', &mut line).await?;
        if read == 0 && carried == 0 {
            return Ok(None);
        }
        if read > 0 && !line.ends_with(b"\n") && line.len() >= HEADER.len() {
            // a long run of junk without a line break: its last bytes may be the start of a
            // header that the next read completes, so they open the next line
            let keep = line.len() - (HEADER.len() - 1);
            let keep = (keep..line.len()).find(|&i| !(0x80..0xc0).contains(&line[i])).unwrap_or(keep);
            self.carried = line.split_off(keep);
        }
        Ok(Some(line))
    }

    /// The next frame; `None` at the end of the input.
    async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        let mut junk = 0usize;
        let mut first_junk = String::new();
        let mut length: Option<usize> = None;
        let mut saw_header = false;
        let mut problem: Option<String> = None;
        loop {
            let Some(line) = self.line().await? else {
                if junk > 0 && !std::mem::take(&mut self.resyncing) {
                    return Ok(Some(Frame::Bad(format!("{junk} stray bytes at the end of the input"))));
                }
                return Ok(None);
            };
            // a header after binary junk on the same line: found in the bytes, since the junk
            // need not be text (and lossy decoding would move every offset after it)
            if let Some(at) = find_header(&line).filter(|&at| at > 0) {
                junk += at;
                if junk == at {
                    first_junk = shorten(&String::from_utf8_lossy(&line[..at]));
                }
                self.pending = Some(line[at..].to_vec());
                if saw_header {
                    // the header block before it never ended: that was junk too
                    saw_header = false;
                    length = None;
                    problem = None;
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let trimmed = text.trim_end_matches(['\r', '\n']);
            if trimmed.is_empty() {
                if saw_header {
                    break;
                }
                if junk > 0 && !self.resyncing {
                    // junk that ends like a header block: report it now, not with the next frame
                    return Ok(Some(Frame::Bad(format!(
                        "{junk} bytes that are not a message were skipped (starting {first_junk:?})"
                    ))));
                }
                continue; // blank lines between frames are harmless
            }
            if find_header(&line) == Some(0) {
                if !saw_header && junk > 0 {
                    // junk before this frame: report it, then read the frame from its header
                    self.pending = Some(line);
                    if std::mem::take(&mut self.resyncing) {
                        junk = 0;
                        continue;
                    }
                    return Ok(Some(Frame::Bad(format!(
                        "{junk} stray bytes before a message were skipped (starting {first_junk:?}; a Content-Length counted wrong?)"
                    ))));
                }
                self.resyncing = false;
                saw_header = true;
                let value = trimmed[HEADER.len()..].trim();
                match value.parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => problem = Some(format!("bad Content-Length header {value:?}")),
                }
                continue;
            }
            if saw_header {
                if !trimmed.contains(':') {
                    problem = Some(format!("a header line that is not a header: {:?}", shorten(trimmed)));
                }
                continue; // Content-Type and other headers
            }
            if junk == 0 && is_header_name(trimmed) {
                saw_header = true; // a Content-Type before the Content-Length
                continue;
            }
            if junk == 0 {
                first_junk = shorten(trimmed);
            }
            junk += line.len();
        }
        if let Some(problem) = problem {
            // skip the body when its length is believable, so the next frame is read from
            // its start; otherwise resynchronise on the next header
            match length.filter(|&n| n <= MAX_FRAME_BYTES) {
                Some(length) => self.skip(length).await?,
                None => self.resyncing = true,
            }
            return Ok(Some(Frame::Bad(problem)));
        }
        let Some(length) = length else {
            return Ok(Some(Frame::Bad("a message without a Content-Length header".to_string())));
        };
        if length > MAX_FRAME_BYTES {
            self.resyncing = true;
            return Ok(Some(Frame::Bad(format!(
                "a message of {length} bytes is larger than the {MAX_FRAME_BYTES}-byte limit; it was skipped up to the next header"
            ))));
        }
        let mut body = vec![0; length];
        self.input.read_exact(&mut body).await?;
        Ok(Some(Frame::Body(body)))
    }

    async fn skip(&mut self, length: usize) -> std::io::Result<()> {
        tokio::io::copy(&mut (&mut self.input).take(length as u64), &mut tokio::io::sink()).await?;
        Ok(())
    }
}

/// The header every frame starts with (compared without case).
const HEADER: &[u8] = b"content-length:";

/// Where a `Content-Length:` header starts in `line`'s bytes, if it holds one.
fn find_header(line: &[u8]) -> Option<usize> {
    line.windows(HEADER.len()).position(|w| w.eq_ignore_ascii_case(HEADER))
}

/// `Name: value`, with a name of letters and dashes.
fn is_header_name(line: &str) -> bool {
    line.split_once(':').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

fn shorten(text: &str) -> String {
    text.chars().take(60).collect()
}

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

/// [`output`] for a stdout the runtime polls ([`super::pipe::Pipe`]): each message written
/// in one write from a task, which waits (without holding a thread) while the editor is slow
/// to read.
pub fn output_async<W>(stdout: W) -> (DuplexStream, Outbox)
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
                        end(1);
                    }
                }
                Out::Exit(code) => end(code),
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

/// `body` framed for the wire into `message`, replacing what it held.
fn frame_into(body: &[u8], message: &mut Vec<u8>) {
    message.clear();
    message.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    message.extend_from_slice(body);
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
            let header = format!("Content-Length: {}\r\n\r\n", body.len());
            let written = async {
                writer.write_all(header.as_bytes()).await?;
                writer.write_all(&body).await?;
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

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.unwrap() {
            out.push(frame);
        }
        out
    }

    fn bad(frame: &Frame) -> &str {
        match frame {
            Frame::Bad(problem) => problem,
            Frame::Body(body) => panic!("a frame, not a problem: {}", String::from_utf8_lossy(body)),
        }
    }

    fn body(text: &str) -> Frame {
        Frame::Body(text.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn reads_frames_and_reports_bad_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}\n\r\nContent-Type: x\r\ncontent-length:3\r\n\r\n[1]Content-Length: 2\r\nnot a header\r\n\r\n{}Content-Length: nope\r\n\r\n";
        let got = frames(input).await;
        assert_eq!(got[0], body("{}"));
        assert_eq!(got[1], body("[1]"));
        assert!(bad(&got[2]).contains("not a header"), "{got:?}");
        assert!(bad(&got[3]).contains("bad Content-Length"), "{got:?}");
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[tokio::test]
    async fn junk_before_a_frame_is_reported_and_the_frame_kept() {
        let input = b"garbage\r\nmore garbage\r\nContent-Length: 2\r\n\r\n{}xxContent-Length: 2\r\n\r\n[]";
        let got = frames(input).await;
        assert!(bad(&got[0]).contains("23 stray bytes"), "{got:?}");
        assert_eq!(got[1], body("{}"));
        assert!(bad(&got[2]).contains("2 stray bytes"), "{got:?}");
        assert_eq!(got[3], body("[]"));
        assert_eq!(got.len(), 4);
    }

    #[tokio::test]
    async fn binary_junk_without_a_line_break_is_skipped_and_the_frame_after_it_kept() {
        let mut input = vec![0u8, 0xff, 0xfe, b'x', 0xc3, 0x28, 0x80];
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let got = frames(&input).await;
        assert!(bad(&got[0]).contains("7 stray bytes"), "{got:?}");
        assert_eq!(got[1], body("{}"), "{got:?}");
        assert_eq!(got.len(), 2);
        // longer than a header line may be, with the header cut where a read ends
        for cut in [MAX_HEADER_LINE - 7, MAX_HEADER_LINE - 1, MAX_HEADER_LINE, MAX_HEADER_LINE + 3] {
            let mut input: Vec<u8> = (0..cut).map(|i| [0x00, 0xff, 0x7f, 0xc3][i % 4]).collect();
            input.extend_from_slice(b"content-length: 2\r\n\r\n[]");
            let got = frames(&input).await;
            assert!(bad(&got[0]).contains(&format!("{cut} stray bytes")), "{cut}: {got:?}");
            assert_eq!(got[1], body("[]"), "{cut}: {got:?}");
            assert_eq!(got.len(), 2, "{cut}: {got:?}");
        }
    }

    #[tokio::test]
    async fn a_length_counted_in_characters_does_not_break_the_frames_after_it() {
        // "é" is two bytes; the client said 13 for a 14-byte body
        let input = "Content-Length: 13\r\n\r\n{\"x\":\"é\",\"y\":1}Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]".as_bytes();
        let got = frames(input).await;
        assert!(matches!(&got[0], Frame::Body(body) if body.len() == 13), "{got:?}");
        assert!(bad(&got[1]).contains("3 stray bytes"), "{got:?}");
        assert_eq!(got[2], body("{}"), "back in step: {got:?}");
        assert_eq!(got[3], body("[]"));
    }

    #[tokio::test]
    async fn an_absurd_length_is_refused_at_once_and_reading_resumes_at_the_next_header() {
        let input =
            b"Content-Length: 1000000000000\r\n\r\n{\"jsonrpc\":\"2.0\"}\r\nContent-Length: 2\r\n\r\n{}";
        let got = frames(input).await;
        assert!(bad(&got[0]).contains("larger than the"), "{got:?}");
        assert_eq!(got[1], body("{}"), "the skipped body is not reported again: {got:?}");
        assert_eq!(got.len(), 2);
    }

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
