//! The connection: reads LSP frames from stdin ourselves so that a malformed message is
//! answered with a JSON-RPC error instead of ending the session, and accepts
//! `"params": null`.
//!
//! tower-lsp 0.20 stops reading for good at the first frame it cannot decode (invalid JSON,
//! a batch array, a missing `jsonrpc`), which to the user looks like a crashed server. So
//! every frame is checked here first: a good one is passed on byte for byte; a bad one is
//! replaced by a request to [`INVALID_METHOD`], which [`Hygiene`] answers with the error
//! the JSON-RPC specification prescribes (`-32700` parse error or `-32600` invalid request,
//! with the offending `id` or `null`).
//!
//! Several clients (Eglot, LSP4IJ, some Neovim versions) send `"params": null` for methods
//! whose params are void, `shutdown` and `exit` above all; tower-lsp answers those with
//! "Unexpected params: null" and the editor never gets a clean shutdown. [`Hygiene`] drops a
//! `null` `params` before tower-lsp sees it.

use std::task::{Context, Poll};

use futures::future::{Either, Ready, ready};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tower_lsp::jsonrpc::{Error, ErrorCode, Request, Response};
use tower_service::Service;

/// The method a malformed frame is turned into; never sent by a real client.
pub const INVALID_METHOD: &str = "$/tokamak/invalidMessage";

/// Frames larger than this are refused (and skipped) rather than buffered: 256 MiB.
const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

/// Header lines longer than this are not headers.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Reads frames from `input`, checks them, and hands tower-lsp a stream of frames it can
/// always decode. Ends when `input` ends.
pub fn checked_input<R>(input: R) -> DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        loop {
            let body = match read_frame(&mut input).await {
                Ok(Some(Ok(body))) => check(body),
                Ok(Some(Err(problem))) => invalid(ErrorCode::ParseError, &problem, Value::Null),
                Ok(None) => break,
                Err(err) => {
                    tracing::error!("cannot read from the editor: {err}");
                    break;
                }
            };
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
    });
    reader
}

/// One frame's body; `Some(Err(problem))` for a frame that cannot be read as one; `None` at
/// the end of the input.
async fn read_frame<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
) -> std::io::Result<Option<Result<Vec<u8>, String>>> {
    let mut length: Option<usize> = None;
    let mut saw_header = false;
    let mut problem: Option<String> = None;
    loop {
        let mut line = Vec::new();
        let read = (&mut *input).take(MAX_HEADER_LINE as u64).read_until(b'\n', &mut line).await?;
        if read == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !saw_header {
                continue; // stray blank line between frames
            }
            break;
        }
        saw_header = true;
        // The header is found anywhere on the line: a client that counted characters instead
        // of bytes leaves the end of its last body in front of the next header, and reading
        // the length from there brings the stream back in step.
        let lower = text.to_ascii_lowercase();
        match lower.rfind("content-length:") {
            Some(at) => {
                let value = text[at + "content-length:".len()..].trim();
                match value.parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => problem = Some(format!("bad Content-Length header {value:?}")),
                }
                if at > 0 {
                    problem =
                        Some(format!("{at} stray bytes before a header (a Content-Length counted wrong?)"));
                }
            }
            None if text.contains(':') => {} // Content-Type and other headers
            None => problem = Some(format!("a header line that is not a header: {:?}", shorten(text))),
        }
    }
    if let Some(problem) = problem {
        // skip the body when its length is known, so the next frame is read from its start
        if let Some(length) = length.filter(|&n| n <= MAX_FRAME_BYTES) {
            let mut skipped = vec![0; length];
            input.read_exact(&mut skipped).await?;
        }
        return Ok(Some(Err(problem)));
    }
    let Some(length) = length else {
        return Ok(Some(Err("a message without a Content-Length header".to_string())));
    };
    if length > MAX_FRAME_BYTES {
        tokio::io::copy(&mut (&mut *input).take(length as u64), &mut tokio::io::sink()).await?;
        return Ok(Some(Err(format!(
            "a message of {length} bytes is larger than the {MAX_FRAME_BYTES}-byte limit"
        ))));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await?;
    Ok(Some(Ok(body)))
}

/// Passes a well-formed message on unchanged; turns anything else into [`INVALID_METHOD`].
fn check(body: Vec<u8>) -> Vec<u8> {
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => {
            return invalid(ErrorCode::ParseError, &format!("the message is not JSON: {err}"), Value::Null);
        }
    };
    let problem = shape_problem(&value).or_else(|| decodes(&body));
    match problem {
        None => body,
        Some(problem) => {
            // a malformed *response* gets a null id: its own could be one of the client's
            let id = value
                .get("id")
                .filter(|id| (id.is_string() || id.is_i64()) && value.get("method").is_some())
                .cloned();
            invalid(ErrorCode::InvalidRequest, problem, id.unwrap_or(Value::Null))
        }
    }
}

/// Whether tower-lsp itself can decode the message (it stops reading at the first it cannot):
/// ids beyond `i64`, fractional ids and duplicate keys pass [`shape_problem`] but not this.
fn decodes(body: &[u8]) -> Option<&'static str> {
    let request = serde_json::from_slice::<Request>(body).is_ok();
    let response = || serde_json::from_slice::<Response>(body).is_ok();
    (!request && !response()).then_some("the message is not a JSON-RPC request, notification or response")
}

/// What keeps `value` from being a JSON-RPC 2.0 request, notification or response that
/// tower-lsp can decode.
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

fn invalid(code: ErrorCode, problem: &str, id: Value) -> Vec<u8> {
    tracing::warn!("malformed message from the editor: {problem}");
    let request = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": INVALID_METHOD,
        "params": {"code": code.code(), "message": problem},
    });
    request.to_string().into_bytes()
}

fn shorten(text: &str) -> String {
    text.chars().take(60).collect()
}

/// Wraps the LSP service: answers [`INVALID_METHOD`] with its error and drops `null` params.
pub struct Hygiene<S> {
    inner: S,
}

impl<S> Hygiene<S> {
    pub fn new(inner: S) -> Hygiene<S> {
        Hygiene { inner }
    }
}

impl<S> Service<Request> for Hygiene<S>
where
    S: Service<Request, Response = Option<Response>>,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = Either<S::Future, Ready<Result<Option<Response>, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() == INVALID_METHOD {
            let (_, id, params) = request.into_parts();
            let params = params.unwrap_or_default();
            let error = Error {
                code: ErrorCode::from(params["code"].as_i64().unwrap_or(-32600)),
                message: params["message"].as_str().unwrap_or("invalid message").to_string().into(),
                data: None,
            };
            let response = id.map(|id| Response::from_error(id, error));
            return Either::Right(ready(Ok(response)));
        }
        Either::Left(self.inner.call(without_null_params(request)))
    }
}

fn without_null_params(request: Request) -> Request {
    if !matches!(request.params(), Some(Value::Null)) {
        return request;
    }
    let (method, id, _) = request.into_parts();
    let builder = Request::build(method);
    match id {
        Some(id) => builder.id(id).finish(),
        None => builder.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Result<Vec<u8>, String>> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = read_frame(&mut reader).await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn reads_frames_and_reports_bad_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}\n\r\nContent-Type: x\r\ncontent-length:3\r\n\r\n[1]garbage\r\n\r\nContent-Length: nope\r\n\r\n";
        let got = frames(input).await;
        assert_eq!(got[0], Ok(b"{}".to_vec()));
        assert_eq!(got[1], Ok(b"[1]".to_vec()));
        assert!(got[2].as_ref().unwrap_err().contains("not a header"), "{got:?}");
        assert!(got[3].as_ref().unwrap_err().contains("bad Content-Length"), "{got:?}");
        assert_eq!(got.len(), 4);
    }

    #[tokio::test]
    async fn a_length_counted_in_characters_does_not_break_the_frames_after_it() {
        // "é" is two bytes; the client said 13 for a 14-byte body
        let input = "Content-Length: 13\r\n\r\n{\"x\":\"é\",\"y\":1}Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]".as_bytes();
        let got = frames(input).await;
        assert!(matches!(&got[0], Ok(body) if body.len() == 13), "{got:?}");
        assert!(got[1].as_ref().unwrap_err().contains("stray bytes"), "{got:?}");
        assert_eq!(got[2], Ok(b"[]".to_vec()), "back in step: {got:?}");
    }

    #[test]
    fn messages_tower_lsp_cannot_decode_are_refused() {
        for body in
            [r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#, r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#]
        {
            let checked = String::from_utf8(check(body.as_bytes().to_vec())).unwrap();
            assert!(checked.contains(INVALID_METHOD), "{body} passed as {checked}");
        }
        let good = r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{}}"#;
        assert_eq!(check(good.as_bytes().to_vec()), good.as_bytes());
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
