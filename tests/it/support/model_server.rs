//! A scripted model server: a real HTTP/1.1 server on 127.0.0.1 (random port) that replays
//! scripted replies in the providers' real wire formats — OpenAI-compatible JSON and SSE,
//! Anthropic JSON and typed SSE events, Ollama JSON and NDJSON — records every request, and
//! misbehaves on cue: delays, 429 with `Retry-After`, 5xx, malformed JSON, a stream cut off
//! mid-way, a reply that never ends.
//!
//! The only stand-in in the project's tests, because a model's output is not repeatable.
#![allow(dead_code)] // each test file uses a different part of it

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One reply, as the server will send it.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// A whole response.
    Body { status: u16, content_type: String, headers: Vec<(String, String)>, body: String },
    /// A chunked streamed response, each piece flushed on its own; with `cut_after`, the
    /// connection is closed after that many pieces without ending the stream.
    Stream { content_type: String, pieces: Vec<String>, cut_after: Option<usize>, pause: Duration },
    /// A stream that never ends: `piece` again and again until the client goes away.
    Endless { content_type: String, piece: String, pause: Duration },
    /// Wait, then reply.
    Delayed(Duration, Box<Scripted>),
    /// A whole response's head (with the full `content-length`), then only the first `sent`
    /// bytes of its body before the connection closes.
    Truncated { content_type: String, body: String, sent: usize },
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What the server says of itself to a GET, by path.
type Info = Arc<Mutex<std::collections::HashMap<String, Value>>>;

pub struct ModelServer {
    pub port: u16,
    script: Arc<Mutex<VecDeque<Scripted>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    disconnects: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    /// What the server says of itself, by path, to a GET (llama.cpp's `/props`, vLLM's and
    /// OpenAI's `/v1/models`): answered without taking a scripted reply.
    info: Info,
    /// The paths GET asked for, in order (not among `requests`).
    gets: Arc<Mutex<Vec<String>>>,
    /// Replies by the request's `temperature` (as written, e.g. "0.5"), taken before the
    /// common script.
    by_temperature: ByTemperature,
    /// Requests being answered now, the most there were, and whether a request that comes
    /// while another is answered is refused with 503 (a server with one slot).
    load: Arc<Load>,
}

type ByTemperature = Arc<Mutex<std::collections::HashMap<String, VecDeque<Scripted>>>>;

#[derive(Default)]
pub struct Load {
    now: AtomicUsize,
    most: AtomicUsize,
    one_at_a_time: AtomicBool,
    refused: AtomicUsize,
}

impl ModelServer {
    pub fn start(script: Vec<Scripted>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("address").port();
        let server = ModelServer {
            port,
            script: Arc::new(Mutex::new(script.into())),
            requests: Arc::new(Mutex::new(Vec::new())),
            disconnects: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            info: Arc::default(),
            gets: Arc::default(),
            by_temperature: Arc::default(),
            load: Arc::default(),
        };
        let (script, requests, disconnects, stop) =
            (server.script.clone(), server.requests.clone(), server.disconnects.clone(), server.stop.clone());
        let (info, gets) = (server.info.clone(), server.gets.clone());
        let (by_temperature, load) = (server.by_temperature.clone(), server.load.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (script, requests, disconnects) = (script.clone(), requests.clone(), disconnects.clone());
                let about = (info.clone(), gets.clone());
                let scripts = (script, by_temperature.clone(), load.clone());
                std::thread::spawn(move || serve(stream, &scripts, &requests, &disconnects, &about));
            }
        });
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn push(&self, reply: Scripted) {
        self.script.lock().unwrap().push_back(reply);
    }

    /// Answers GET `path` with `body` from now on (what the server says of itself).
    pub fn describe(&self, path: &str, body: Value) {
        self.info.lock().unwrap().insert(path.to_string(), body);
    }

    /// The paths asked for with GET.
    pub fn gets(&self) -> Vec<String> {
        self.gets.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// How many streams ended because the client went away.
    pub fn disconnects(&self) -> usize {
        self.disconnects.load(Ordering::SeqCst)
    }

    /// Answers requests asking for `temperature` with `replies`, in turn, before the common
    /// script (which answers the others, and these once they are used up).
    pub fn at_temperature(&self, temperature: f32, replies: Vec<Scripted>) {
        self.by_temperature.lock().unwrap().insert(temperature_key(temperature), replies.into());
    }

    /// From now on a request that comes while another is answered gets 503 at once, as from
    /// a server with one slot.
    pub fn one_at_a_time(&self) {
        self.load.one_at_a_time.store(true, Ordering::SeqCst);
    }

    /// The most requests answered at once.
    pub fn most_at_once(&self) -> usize {
        self.load.most.load(Ordering::SeqCst)
    }

    /// Requests refused because another was being answered.
    pub fn refused_busy(&self) -> usize {
        self.load.refused.load(Ordering::SeqCst)
    }
}

/// A temperature as the key of [`ModelServer::at_temperature`]: to two decimals.
fn temperature_key(temperature: f32) -> String {
    format!("{temperature:.2}")
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wake the accept loop
    }
}

/// Serves requests on one connection (clients keep connections alive) until it closes.
fn serve(
    stream: TcpStream,
    (script, by_temperature, load): &(Arc<Mutex<VecDeque<Scripted>>>, ByTemperature, Arc<Load>),
    requests: &Mutex<Vec<Recorded>>,
    disconnects: &AtomicUsize,
    (info, gets): &(Info, Arc<Mutex<Vec<String>>>),
) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        let Some(request) = read_request(&mut reader) else { return };
        if request.method == "GET" {
            gets.lock().unwrap().push(request.path.clone());
            let reply = match info.lock().unwrap().get(&request.path) {
                Some(body) => json_reply(200, body.clone()),
                None => error(404, "no such endpoint"),
            };
            if !respond(&mut writer, reply, disconnects) {
                return;
            }
            continue;
        }
        let temperature = request.body["temperature"].as_f64().map(|t| temperature_key(t as f32));
        requests.lock().unwrap().push(request);
        let now = load.now.fetch_add(1, Ordering::SeqCst) + 1;
        load.most.fetch_max(now, Ordering::SeqCst);
        if now > 1 && load.one_at_a_time.load(Ordering::SeqCst) {
            load.refused.fetch_add(1, Ordering::SeqCst);
            load.now.fetch_sub(1, Ordering::SeqCst);
            if !respond(&mut writer, error(503, "the server is busy: no slot available"), disconnects) {
                return;
            }
            continue;
        }
        let own = temperature
            .and_then(|t| by_temperature.lock().unwrap().get_mut(&t).and_then(VecDeque::pop_front));
        let reply = own.unwrap_or_else(|| {
            script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| error(500, "the scripted server has no reply left"))
        });
        let kept = respond(&mut writer, reply, disconnects);
        load.now.fetch_sub(1, Ordering::SeqCst);
        if !kept {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded { method, path, headers, body, at: Instant::now() })
}

/// Writes one reply; `false` when the connection must not be used again.
fn respond(writer: &mut TcpStream, reply: Scripted, disconnects: &AtomicUsize) -> bool {
    match reply {
        Scripted::Delayed(pause, reply) => {
            std::thread::sleep(pause);
            respond(writer, *reply, disconnects)
        }
        Scripted::Body { status, content_type, headers, body } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n",
                reason(status),
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            writer
                .write_all(head.as_bytes())
                .and_then(|_| writer.write_all(body.as_bytes()))
                .and_then(|_| writer.flush())
                .is_ok()
        }
        Scripted::Truncated { content_type, body, sent } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = writer.write_all(head.as_bytes());
            let _ = writer.write_all(&body.as_bytes()[..sent.min(body.len())]);
            let _ = writer.flush();
            let _ = writer.shutdown(Shutdown::Both);
            false
        }
        Scripted::Stream { content_type, pieces, cut_after, pause } => {
            if write_stream_head(writer, &content_type).is_err() {
                return false;
            }
            for (index, piece) in pieces.iter().enumerate() {
                if cut_after == Some(index) {
                    let _ = writer.shutdown(Shutdown::Both);
                    return false;
                }
                if write_chunk(writer, piece).is_err() {
                    disconnects.fetch_add(1, Ordering::SeqCst);
                    return false;
                }
                std::thread::sleep(pause);
            }
            writer.write_all(b"0\r\n\r\n").and_then(|_| writer.flush()).is_ok()
        }
        Scripted::Endless { content_type, piece, pause } => {
            if write_stream_head(writer, &content_type).is_err() {
                return false;
            }
            loop {
                if write_chunk(writer, &piece).is_err() {
                    disconnects.fetch_add(1, Ordering::SeqCst);
                    return false;
                }
                std::thread::sleep(pause);
            }
        }
    }
}

fn write_stream_head(writer: &mut TcpStream, content_type: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
    );
    writer.write_all(head.as_bytes())?;
    writer.flush()
}

fn write_chunk(writer: &mut TcpStream, piece: &str) -> std::io::Result<()> {
    writer.write_all(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes())?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

// ---- replies in each provider's wire format ----

pub fn json_reply(status: u16, body: Value) -> Scripted {
    Scripted::Body {
        status,
        content_type: "application/json".into(),
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// An error body as OpenAI-compatible servers send it.
pub fn error(status: u16, message: &str) -> Scripted {
    json_reply(status, json!({"error": {"message": message, "type": "server_error", "code": null}}))
}

pub fn rate_limited(retry_after_secs: u32) -> Scripted {
    Scripted::Body {
        status: 429,
        content_type: "application/json".into(),
        headers: vec![("retry-after".into(), retry_after_secs.to_string())],
        body: json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
    }
}

pub fn openai_chat(text: &str) -> Scripted {
    json_reply(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28},
        }),
    )
}

/// `data: {chunk}\n\n` for each piece, a final chunk with the finish reason, one with usage,
/// then `data: [DONE]\n\n` — as OpenAI and llama.cpp stream.
pub fn openai_chat_stream(pieces: &[&str]) -> Scripted {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "scripted-model",
                   "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        )
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    out.extend(pieces.iter().map(|p| chunk(json!({"content": p}), Value::Null)));
    out.push(chunk(json!({}), json!("stop")));
    out.push(format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "scripted-model",
               "choices": [], "usage": {"prompt_tokens": 21, "completion_tokens": pieces.len()}})
    ));
    out.push("data: [DONE]\n\n".to_string());
    Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(5),
    }
}

pub fn openai_completion(text: &str, usage: bool) -> Scripted {
    let mut body = json!({
        "id": "cmpl-1", "object": "text_completion", "created": 1_700_000_000, "model": "scripted-base",
        "choices": [{"text": text, "index": 0, "logprobs": null, "finish_reason": "length"}],
    });
    if usage {
        body["usage"] = json!({"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34});
    }
    json_reply(200, body)
}

pub fn openai_completion_stream(pieces: &[&str]) -> Scripted {
    let mut out: Vec<String> = pieces
        .iter()
        .map(|p| format!("data: {}\n\n", json!({"id": "cmpl-1", "object": "text_completion", "model": "scripted-base", "choices": [{"text": p, "index": 0, "finish_reason": null}]})))
        .collect();
    out.push(format!("data: {}\n\n", json!({"id": "cmpl-1", "object": "text_completion", "model": "scripted-base", "choices": [{"text": "", "index": 0, "finish_reason": "stop"}]})));
    out.push("data: [DONE]\n\n".to_string());
    Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(5),
    }
}

pub fn anthropic_message(text: &str) -> Scripted {
    json_reply(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 25, "output_tokens": 9},
        }),
    )
}

/// Anthropic's typed events, each `event: <type>\ndata: {json}\n\n`.
pub fn anthropic_stream(pieces: &[&str]) -> Scripted {
    let event = |kind: &str, data: Value| format!("event: {kind}\ndata: {data}\n\n");
    let mut out = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted", "content": [], "stop_reason": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    out.extend(pieces.iter().map(|p| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
        )
    }));
    out.push(event("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
    out.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 9}})));
    out.push(event("message_stop", json!({"type": "message_stop"})));
    Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(5),
    }
}

pub fn ollama_chat(text: &str) -> Scripted {
    json_reply(
        200,
        json!({
            "model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z",
            "message": {"role": "assistant", "content": text},
            "done_reason": "stop", "done": true,
            "total_duration": 1_000_000, "prompt_eval_count": 33, "eval_count": 11,
        }),
    )
}

/// One JSON object a line, the last with `"done": true` and the counts.
pub fn ollama_stream(pieces: &[&str]) -> Scripted {
    let mut out: Vec<String> = pieces
        .iter()
        .map(|p| format!("{}\n", json!({"model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z", "message": {"role": "assistant", "content": p}, "done": false})))
        .collect();
    out.push(format!(
        "{}\n",
        json!({"model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z", "message": {"role": "assistant", "content": ""},
               "done_reason": "stop", "done": true, "prompt_eval_count": 33, "eval_count": pieces.len()})
    ));
    Scripted::Stream {
        content_type: "application/x-ndjson".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(5),
    }
}

/// `reply` cut off: a stream after `pieces` pieces, a whole body after `pieces` bytes.
pub fn cut(reply: Scripted, pieces: usize) -> Scripted {
    match reply {
        Scripted::Stream { content_type, pieces: all, pause, .. } => {
            Scripted::Stream { content_type, pieces: all, cut_after: Some(pieces), pause }
        }
        Scripted::Body { content_type, body, .. } => Scripted::Truncated { content_type, body, sent: pieces },
        other => other,
    }
}

/// An OpenAI stream that never ends.
pub fn endless_openai_stream() -> Scripted {
    let piece = format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted-model", "choices": [{"index": 0, "delta": {"content": "and "}, "finish_reason": null}]})
    );
    Scripted::Endless { content_type: "text/event-stream".into(), piece, pause: Duration::from_millis(20) }
}

// ---- tool calls in each provider's wire format ----

/// A tool call: its name and arguments.
pub type Call<'a> = (&'a str, Value);

fn split_in_two(text: &str) -> (String, String) {
    let cut = (0..=text.len() / 2).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
    (text[..cut].to_string(), text[cut..].to_string())
}

/// OpenAI-compatible: `message.tool_calls`, `finish_reason: "tool_calls"`.
pub fn openai_tool_calls(text: &str, calls: &[Call]) -> Scripted {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(n, (name, args))| json!({"id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    let content = if text.is_empty() { Value::Null } else { json!(text) };
    json_reply(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "tool_calls": tool_calls}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
        }),
    )
}

/// OpenAI-compatible streamed: each call starts with its id and name, its arguments follow in
/// two pieces, all keyed by `index`.
pub fn openai_tool_calls_stream(calls: &[Call]) -> Scripted {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "scripted-model",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": null}), Value::Null)];
    for (n, (name, args)) in calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": n, "id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        let (first, second) = split_in_two(&args.to_string());
        for piece in [first, second] {
            out.push(chunk(
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    out.push(chunk(json!({}), json!("tool_calls")));
    out.push("data: [DONE]\n\n".to_string());
    Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(2),
    }
}

/// Anthropic: `tool_use` blocks, `stop_reason: "tool_use"`.
pub fn anthropic_tool_use(text: &str, calls: &[Call]) -> Scripted {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (n, (name, args)) in calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": args}));
    }
    json_reply(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted",
            "content": content, "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 40, "output_tokens": 12},
        }),
    )
}

/// Anthropic streamed: a `tool_use` block start, then `input_json_delta` pieces.
pub fn anthropic_tool_use_stream(calls: &[Call]) -> Scripted {
    let event = |kind: &str, data: Value| format!("event: {kind}\ndata: {data}\n\n");
    let mut out = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted", "content": [], "stop_reason": null, "usage": {"input_tokens": 40, "output_tokens": 1}}}),
    )];
    for (n, (name, args)) in calls.iter().enumerate() {
        out.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": n, "content_block": {"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}}),
        ));
        let (first, second) = split_in_two(&args.to_string());
        for piece in [first, second] {
            out.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": n, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        out.push(event("content_block_stop", json!({"type": "content_block_stop", "index": n})));
    }
    out.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 12}})));
    out.push(event("message_stop", json!({"type": "message_stop"})));
    Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(2),
    }
}

/// Ollama: `message.tool_calls` with the arguments as an object and no id.
pub fn ollama_tool_calls(calls: &[Call]) -> Scripted {
    let tool_calls: Vec<Value> =
        calls.iter().map(|(name, args)| json!({"function": {"name": name, "arguments": args}})).collect();
    json_reply(
        200,
        json!({
            "model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z",
            "message": {"role": "assistant", "content": "", "tool_calls": tool_calls},
            "done_reason": "stop", "done": true, "prompt_eval_count": 40, "eval_count": 12,
        }),
    )
}

/// Ollama streamed: the calls arrive on one line, the counts on the last.
pub fn ollama_tool_calls_stream(calls: &[Call]) -> Scripted {
    let tool_calls: Vec<Value> =
        calls.iter().map(|(name, args)| json!({"function": {"name": name, "arguments": args}})).collect();
    let out = vec![
        format!(
            "{}\n",
            json!({"model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z", "message": {"role": "assistant", "content": "", "tool_calls": tool_calls}, "done": false})
        ),
        format!(
            "{}\n",
            json!({"model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z", "message": {"role": "assistant", "content": ""}, "done_reason": "stop", "done": true, "prompt_eval_count": 40, "eval_count": 12})
        ),
    ];
    Scripted::Stream {
        content_type: "application/x-ndjson".into(),
        pieces: out,
        cut_after: None,
        pause: Duration::from_millis(2),
    }
}

// ---- any whole reply, streamed ----

/// `text` in pieces of a few characters, as a server streams tokens.
fn token_pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(6).map(|piece| piece.iter().collect()).collect()
}

/// A whole successful reply (`json_reply` with an OpenAI-compatible chat completion, an
/// Anthropic message or an Ollama chat reply) as the same server streams it: the text, the
/// reasoning and each call's arguments in pieces, the finish reason and usage at the end. Any
/// other reply (an error) is returned as it is.
pub fn as_stream(reply: Scripted) -> Scripted {
    let Scripted::Body { status: 200, body, .. } = &reply else { return reply };
    let Ok(whole) = serde_json::from_str::<Value>(body) else { return reply };
    let (content_type, pieces) = if whole["choices"][0]["message"].is_object() {
        ("text/event-stream", openai_pieces(&whole))
    } else if whole["type"] == "message" {
        ("text/event-stream", anthropic_pieces(&whole))
    } else if whole["done"] == true && whole["message"].is_object() {
        ("application/x-ndjson", ollama_pieces(&whole))
    } else {
        return reply;
    };
    Scripted::Stream {
        content_type: content_type.into(),
        pieces,
        cut_after: None,
        pause: Duration::from_millis(1),
    }
}

fn openai_pieces(whole: &Value) -> Vec<String> {
    let choice = &whole["choices"][0];
    let message = &choice["message"];
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": whole["model"],
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for field in ["reasoning_content", "reasoning", "content"] {
        if let Some(text) = message[field].as_str() {
            out.extend(token_pieces(text).into_iter().map(|p| chunk(json!({ field: p }), Value::Null)));
        }
    }
    for (n, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": n, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}]}),
            Value::Null,
        ));
        let arguments = match &call["function"]["arguments"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let (first, second) = split_in_two(&arguments);
        for piece in [first, second] {
            out.push(chunk(
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    out.push(chunk(json!({}), choice["finish_reason"].clone()));
    out.push(format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": whole["model"], "choices": [], "usage": whole["usage"]})
    ));
    out.push("data: [DONE]\n\n".to_string());
    out
}

fn anthropic_pieces(whole: &Value) -> Vec<String> {
    let event = |kind: &str, data: Value| format!("event: {kind}\ndata: {data}\n\n");
    let mut out = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": whole["id"], "type": "message", "role": "assistant", "model": whole["model"], "content": [], "stop_reason": null, "usage": {"input_tokens": whole["usage"]["input_tokens"], "output_tokens": 1}}}),
    )];
    for (n, block) in whole["content"].as_array().into_iter().flatten().enumerate() {
        let (start, deltas): (Value, Vec<Value>) = match block["type"].as_str() {
            Some("thinking") => (
                json!({"type": "thinking", "thinking": ""}),
                token_pieces(block["thinking"].as_str().unwrap_or_default())
                    .into_iter()
                    .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                    .chain([json!({"type": "signature_delta", "signature": block["signature"]})])
                    .collect(),
            ),
            Some("redacted_thinking") => (block.clone(), Vec::new()),
            Some("tool_use") => {
                let (first, second) = split_in_two(&block["input"].to_string());
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    [first, second]
                        .into_iter()
                        .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                        .collect(),
                )
            }
            _ => (
                json!({"type": "text", "text": ""}),
                token_pieces(block["text"].as_str().unwrap_or_default())
                    .into_iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect(),
            ),
        };
        out.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": n, "content_block": start}),
        ));
        for delta in deltas {
            out.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": n, "delta": delta}),
            ));
        }
        out.push(event("content_block_stop", json!({"type": "content_block_stop", "index": n})));
    }
    out.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": null}, "usage": {"output_tokens": whole["usage"]["output_tokens"]}}),
    ));
    out.push(event("message_stop", json!({"type": "message_stop"})));
    out
}

fn ollama_pieces(whole: &Value) -> Vec<String> {
    let line = |message: Value, done: bool| {
        let mut json = json!({"model": whole["model"], "created_at": whole["created_at"], "message": message, "done": done});
        if done {
            for key in ["done_reason", "prompt_eval_count", "eval_count"] {
                json[key] = whole[key].clone();
            }
        }
        format!("{json}\n")
    };
    let message = &whole["message"];
    let mut out = Vec::new();
    for field in ["thinking", "content"] {
        if let Some(text) = message[field].as_str() {
            out.extend(
                token_pieces(text)
                    .into_iter()
                    .map(|p| line(json!({"role": "assistant", "content": if field == "content" { p.clone() } else { String::new() }, field: p}), false)),
            );
        }
    }
    if message["tool_calls"].is_array() {
        out.push(line(
            json!({"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}),
            false,
        ));
    }
    out.push(line(json!({"role": "assistant", "content": ""}), true));
    out
}
