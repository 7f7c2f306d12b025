//! A small LSP client of our own for tests: speaks JSON-RPC to Tokamak's language server — in
//! this process (`server::serve_on` on a thread of its own, over a socket pair: the default)
//! or as the real `tokamak` binary over stdio (`LspClient::as_process`, for what only a
//! process shows: a crash, its stderr before logging starts, the Landlock helper).
#![allow(dead_code)] // each test file uses a different part of it

pub mod cli;
pub mod in_process;
pub mod model_server;
pub mod replies;
pub mod scenario;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use in_process::{InProcess, clean_env, servers_as_processes};

/// How long any single wait may take before the test fails (generous: CI machines are slow).
pub const TIMEOUT: Duration = Duration::from_secs(30);

pub struct LspClient {
    server: Server,
    stdin: Option<Box<dyn Write + Send>>,
    incoming: Receiver<Value>,
    /// Messages received while waiting for something else, in order.
    backlog: VecDeque<Value>,
    next_id: i64,
    stderr: Arc<Mutex<String>>,
    /// Answers to requests from the server, by method (others get `null`).
    answers: std::collections::HashMap<String, Value>,
    /// Set by [`LspClient::act_as_editor`].
    editor: Option<EditorState>,
    /// The server's own user settings and cache folders.
    pub user: UserDirs,
    /// Requests from the server that are never answered, by method.
    unanswered: std::collections::HashSet<String>,
    /// Answers given once each, in turn, before [`LspClient::answers`], by method.
    in_turn: std::collections::HashMap<String, VecDeque<Value>>,
    /// The position encoding the server chose (`"utf-16"` until it says otherwise).
    pub encoding: String,
}

/// Where the server runs.
enum Server {
    Process(Child),
    InProcess(InProcess),
}

impl Server {
    fn try_wait(&mut self) -> Option<ExitStatus> {
        match self {
            Server::Process(child) => child.try_wait().expect("wait"),
            Server::InProcess(server) => server.status(),
        }
    }
}

/// A user's settings folder (`XDG_CONFIG_HOME`) and cache folder (`XDG_CACHE_HOME`) of
/// their own, so a test never reads the real user's settings (or trust) nor writes
/// checkpoints into the real cache.
pub struct UserDirs {
    pub config: tempfile::TempDir,
    pub cache: tempfile::TempDir,
}

impl UserDirs {
    pub fn new() -> UserDirs {
        UserDirs {
            config: tempfile::tempdir().expect("temp dir"),
            cache: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// Settings that trust `folders` (as `tokamak trust` would write them).
    pub fn trusting(folders: &[&std::path::Path]) -> UserDirs {
        let dirs = UserDirs::new();
        let list: Vec<String> = folders
            .iter()
            .map(|f| format!("{:?}", std::fs::canonicalize(f).expect("folder").display().to_string()))
            .collect();
        dirs.write_settings(&format!("trusted = [{}]\n", list.join(", ")));
        dirs
    }

    /// Settings that trust `folders`, with `toml` (other settings) after the list.
    pub fn trusting_with(folders: &[&std::path::Path], toml: &str) -> UserDirs {
        let dirs = UserDirs::trusting(folders);
        let path = dirs.config.path().join("tokamak/config.toml");
        let head = std::fs::read_to_string(&path).expect("settings file");
        dirs.write_settings(&format!("{head}{toml}"));
        dirs
    }

    /// Writes the user's settings file.
    pub fn write_settings(&self, toml: &str) {
        let dir = self.config.path().join("tokamak");
        std::fs::create_dir_all(&dir).expect("settings folder");
        std::fs::write(dir.join("config.toml"), toml).expect("settings file");
    }

    /// The environment a tokamak process needs to use these folders.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("XDG_CONFIG_HOME".to_string(), self.config.path().display().to_string()),
            ("XDG_CACHE_HOME".to_string(), self.cache.path().display().to_string()),
        ]
    }

    /// `tokamak` with `args`, using these folders: in this process when it can be
    /// ([`cli::Tokamak`]).
    pub fn command(&self, args: &[&str]) -> cli::Tokamak {
        let mut command = cli::Tokamak::new(args);
        command.envs(self.env());
        command
    }
}

/// Typing the user does, as a function of the document's text.
pub type Typing = Box<dyn FnOnce(&str) -> String + Send>;

/// The client acting as an editor: it keeps the text of every document it opened, applies
/// the server's `workspace/applyEdit` (refusing a stale version, as VS Code does) and reports
/// each change with `didChange`, as a real editor would.
#[derive(Default)]
pub struct EditorState {
    /// `uri → (version, text)`.
    pub documents: std::collections::HashMap<String, (i32, String)>,
    /// The params of every `workspace/applyEdit` received, in order.
    pub edits: Vec<Value>,
    /// The file operations (create, rename, delete) made for the server, in order.
    pub file_operations: Vec<Value>,
    /// Typing that happens just before the next `workspace/applyEdit` reaches the document.
    typing: Option<(String, Typing)>,
    /// Every document the server asked to show (`window/showDocument`), with its text read
    /// when it was asked, as an editor opening it would.
    pub shown: Vec<(String, String)>,
}

impl LspClient {
    pub fn start() -> LspClient {
        LspClient::start_with_env(&[])
    }

    pub fn start_with_env(env: &[(&str, &str)]) -> LspClient {
        LspClient::start_with(UserDirs::new(), env)
    }

    /// Starts the server with `user`'s settings and cache folders, in this process — or as a
    /// process when this process has had its in-process server already (a test with a
    /// second editor or a restart; tests run as threads of one process): the environment, the
    /// log and the logging layer are the process's, once.
    pub fn start_with(user: UserDirs, env: &[(&str, &str)]) -> LspClient {
        let mut vars = vec![("TOKAMAK_LOG".to_string(), "debug".to_string())];
        vars.extend(user.env());
        vars.extend(env.iter().map(|(key, value)| (key.to_string(), value.to_string())));
        let started = InProcess::start(&vars, |input, output, stop| async move {
            let (layer, queue) = tokamak::server::log_message_channel();
            tokamak::logging::init_into(Some(layer), || in_process::LogWriter);
            let stop = async {
                let _ = stop.await;
            };
            tokamak::server::serve_on(input, output, Some(queue), stop).await
        });
        let Some(server) = started else {
            return LspClient::as_process(user, env);
        };
        let (sender, incoming) = channel();
        let reading = server.socket.try_clone().expect("the socket again");
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reading);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let stdin: Box<dyn Write + Send> = Box::new(server.socket.try_clone().expect("the socket again"));
        LspClient::new(
            Server::InProcess(server),
            Some(stdin),
            incoming,
            Arc::new(Mutex::new(String::new())),
            user,
        )
    }

    /// Starts the real binary with `user`'s settings and cache folders.
    pub fn as_process(user: UserDirs, env: &[(&str, &str)]) -> LspClient {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tokamak"));
        clean_env(&mut command);
        command.arg("lsp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.env("TOKAMAK_LOG", "debug");
        command.envs(user.env());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("start tokamak");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let stdin: Option<Box<dyn Write + Send>> = match child.stdin.take() {
            Some(stdin) => Some(Box::new(stdin)),
            None => None,
        };
        LspClient::new(Server::Process(child), stdin, incoming, log, user)
    }

    fn new(
        server: Server,
        stdin: Option<Box<dyn Write + Send>>,
        incoming: Receiver<Value>,
        stderr: Arc<Mutex<String>>,
        user: UserDirs,
    ) -> LspClient {
        LspClient {
            server,
            stdin,
            incoming,
            backlog: VecDeque::new(),
            next_id: 1,
            stderr,
            answers: Default::default(),
            editor: None,
            user,
            unanswered: Default::default(),
            in_turn: Default::default(),
            encoding: "utf-16".to_string(),
        }
    }

    /// From now on, never answer the server's `method` requests (an editor that hangs).
    pub fn never_answer(&mut self, method: &str) {
        self.unanswered.insert(method.to_string());
    }

    /// Waits for the process to end by itself (stdin stays open); `None` if it did not
    /// within `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.server.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Closes the server's stdin (the editor went away) without waiting.
    pub fn close_stdin(&mut self) {
        self.stdin.take();
        if let Server::InProcess(server) = &self.server {
            server.close_input();
        }
    }

    /// From now on, answer the server's `method` requests with `result`.
    pub fn answer(&mut self, method: &str, result: Value) {
        self.answers.insert(method.to_string(), result);
    }

    /// Answer the server's next `method` requests with `results`, one each, in turn (then as
    /// [`LspClient::answer`] says).
    pub fn answer_in_turn(&mut self, method: &str, results: Vec<Value>) {
        self.in_turn.entry(method.to_string()).or_default().extend(results);
    }

    /// Starts the server and completes the handshake offering `encodings`.
    pub fn initialized(encodings: &[&str]) -> LspClient {
        let mut client = LspClient::start();
        client.initialize(encodings);
        client
    }

    pub fn initialize(&mut self, encodings: &[&str]) -> Value {
        let response = self.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": null,
                "clientInfo": {"name": "tokamak-tests"},
                "capabilities": {"general": {"positionEncodings": encodings}},
            }),
        );
        self.notify("initialized", json!({}));
        self.encoding =
            response["result"]["capabilities"]["positionEncoding"].as_str().unwrap_or("utf-16").to_string();
        response
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("serialize");
        self.send_raw(&tokamak::jsonrpc::headers::frame(&body));
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns the whole response message (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_within(method, params, TIMEOUT)
    }

    /// [`LspClient::request`], waiting up to `timeout` for the answer (a request that asks the
    /// server to wait longer than [`TIMEOUT`] itself).
    pub fn request_within(&mut self, method: &str, params: Value, timeout: Duration) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_within(&format!("the response to {method}"), timeout, |m| {
            m.get("id") == Some(&json!(id)) && m.get("method").is_none()
        })
    }

    /// Waits for the first message (kept from before, or new) that `matches`; the others stay
    /// in the backlog. Requests from the server are answered with `null`.
    pub fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_within(what, TIMEOUT, matches)
    }

    /// [`LspClient::wait_for`], for up to `timeout`.
    pub fn wait_within(&mut self, what: &str, timeout: Duration, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(index) = self.backlog.iter().position(&matches) {
            return self.backlog.remove(index).expect("index in range");
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(message) => {
                    if let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id"))
                        && !self.unanswered.contains(method)
                    {
                        let result = if method == "workspace/applyEdit" && self.editor.is_some() {
                            self.apply_workspace_edit(&message["params"])
                        } else if method == "window/showDocument"
                            && let Some(editor) = self.editor.as_mut()
                        {
                            let uri = message["params"]["uri"].as_str().unwrap_or_default().to_string();
                            let text = url::Url::parse(&uri)
                                .ok()
                                .and_then(|u| u.to_file_path().ok())
                                .and_then(|p| std::fs::read_to_string(p).ok());
                            let success = text.is_some();
                            editor.shown.push((uri, text.unwrap_or_default()));
                            json!({"success": success})
                        } else if let Some(next) = self.in_turn.get_mut(method).and_then(VecDeque::pop_front)
                        {
                            next
                        } else {
                            self.answers.get(method).cloned().unwrap_or(Value::Null)
                        };
                        let id = id.clone();
                        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
                    }
                    if matches(&message) {
                        return message;
                    }
                    self.backlog.push_back(message);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "timed out waiting for {what}; got {:#?}\nstderr:\n{}",
                        self.backlog,
                        self.stderr()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the server closed stdout while waiting for {what}\nstderr:\n{}", self.stderr())
                }
            }
        }
    }

    /// [`LspClient::wait_for`], leaving the message for later `seen`s (the newest received).
    pub fn wait_for_and_keep(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(message) = self.backlog.iter().find(|m| matches(m)) {
            return message.clone();
        }
        let message = self.wait_for(what, matches);
        self.backlog.push_back(message.clone());
        message
    }

    /// The messages received and not yet taken by a `wait_for` that match. Send a request
    /// first: its answer comes after everything the server sent before it.
    pub fn seen(&self, matches: impl Fn(&Value) -> bool) -> Vec<Value> {
        self.backlog.iter().filter(|m| matches(m)).cloned().collect()
    }

    pub fn wait_for_notification(&mut self, method: &str) -> Value {
        self.wait_for(method, |m| m["method"] == method)
    }

    /// The next `publishDiagnostics` for `uri` (any version).
    pub fn diagnostics(&mut self, uri: &str) -> Value {
        self.wait_for(&format!("diagnostics for {uri}"), |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        })["params"]
            .clone()
    }

    pub fn open(&mut self, uri: &str, language_id: &str, version: i32, text: &str) {
        if let Some(editor) = &mut self.editor {
            editor.documents.insert(uri.to_string(), (version, text.to_string()));
        }
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}}),
        );
    }

    pub fn change(&mut self, uri: &str, version: i32, changes: Value) {
        if let Some(editor) = &mut self.editor
            && let Some((v, text)) = editor.documents.get_mut(uri)
        {
            for change in changes.as_array().expect("changes array") {
                apply_change_in(text, change, &self.encoding);
            }
            *v = version;
        }
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        );
    }

    /// From now on, act as an editor (see [`EditorState`]).
    pub fn act_as_editor(&mut self) {
        self.editor.get_or_insert_with(EditorState::default);
    }

    /// The editor's state (panics unless [`LspClient::act_as_editor`] was called).
    pub fn editor(&self) -> &EditorState {
        self.editor.as_ref().expect("act_as_editor first")
    }

    /// The editor's text of a document.
    pub fn text(&self, uri: &str) -> String {
        self.editor().documents.get(uri).map(|(_, t)| t.clone()).expect("document open in the editor")
    }

    /// The user types `typing` into `uri` just before the next `workspace/applyEdit` arrives.
    pub fn type_before_next_edit(&mut self, uri: &str, typing: Typing) {
        self.editor.as_mut().expect("act_as_editor first").typing = Some((uri.to_string(), typing));
    }

    /// The user replaces the whole text of `uri` now (one `didChange`).
    pub fn type_now(&mut self, uri: &str, typing: Typing) {
        let (version, text) = self.editor().documents.get(uri).cloned().expect("document open");
        let new = typing(&text);
        self.change(uri, version + 1, json!([{"text": new}]));
    }

    fn apply_workspace_edit(&mut self, params: &Value) -> Value {
        self.editor.as_mut().expect("editor mode").edits.push(params.clone());
        let mut per_document: Vec<(String, Option<i64>, Vec<Value>)> = Vec::new();
        if let Some(changes) = params["edit"]["documentChanges"].as_array() {
            for change in changes {
                if let Some(kind) = change["kind"].as_str() {
                    if let Err(reason) = self.file_operation(kind, change) {
                        return json!({"applied": false, "failureReason": reason});
                    }
                    continue;
                }
                let uri = change["textDocument"]["uri"].as_str().unwrap_or_default().to_string();
                let edits = change["edits"].as_array().cloned().unwrap_or_default();
                per_document.push((uri, change["textDocument"]["version"].as_i64(), edits));
            }
        } else if let Some(changes) = params["edit"]["changes"].as_object() {
            for (uri, edits) in changes {
                per_document.push((uri.clone(), None, edits.as_array().cloned().unwrap_or_default()));
            }
        }
        if let Some((uri, typing)) = self.editor.as_mut().expect("editor mode").typing.take() {
            self.type_now(&uri, typing);
        }
        let editor = self.editor.as_ref().expect("editor mode");
        for (uri, version, _) in &per_document {
            let Some((current, _)) = editor.documents.get(uri) else {
                return json!({"applied": false, "failureReason": format!("{uri} is not open")});
            };
            if version.is_some_and(|v| v != i64::from(*current)) {
                return json!({"applied": false, "failureReason": format!("version {version:?} of {uri} is stale: the document is at {current}")});
            }
        }
        for (uri, _, mut edits) in per_document {
            edits.sort_by_key(|e| {
                (e["range"]["start"]["line"].as_u64(), e["range"]["start"]["character"].as_u64())
            });
            edits.reverse();
            let changes: Vec<Value> =
                edits.iter().map(|e| json!({"range": e["range"], "text": e["newText"]})).collect();
            let version = self.editor().documents[&uri].0 + 1;
            self.change(&uri, version, Value::Array(changes));
        }
        json!({"applied": true})
    }

    /// Makes a file operation of a workspace edit on disk, as an editor does: a renamed or
    /// deleted open document is closed (and a renamed one opened under its new name).
    fn file_operation(&mut self, kind: &str, change: &Value) -> Result<(), String> {
        let path = |key: &str| {
            url::Url::parse(change[key].as_str().unwrap_or_default())
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .ok_or_else(|| format!("{key} is not a file URI"))
        };
        self.editor.as_mut().expect("editor mode").file_operations.push(change.clone());
        match kind {
            "create" => {
                let path = path("uri")?;
                if path.exists() {
                    return Err(format!("{} exists", path.display()));
                }
                std::fs::write(&path, "").map_err(|e| e.to_string())
            }
            "rename" => {
                let (from, to) = (path("oldUri")?, path("newUri")?);
                if to.exists() {
                    return Err(format!("{} exists", to.display()));
                }
                std::fs::rename(&from, &to).map_err(|e| e.to_string())?;
                let (old, new) = (
                    change["oldUri"].as_str().unwrap_or_default(),
                    change["newUri"].as_str().unwrap_or_default(),
                );
                let open = self.editor.as_mut().expect("editor mode").documents.remove(old);
                if let Some((_, text)) = open {
                    self.notify("textDocument/didClose", json!({"textDocument": {"uri": old}}));
                    self.open(new, "", 1, &text);
                }
                Ok(())
            }
            "delete" => {
                let path = path("uri")?;
                std::fs::remove_file(&path).map_err(|e| e.to_string())?;
                let uri = change["uri"].as_str().unwrap_or_default();
                if self.editor.as_mut().expect("editor mode").documents.remove(uri).is_some() {
                    self.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
                }
                Ok(())
            }
            other => Err(format!("unknown file operation {other}")),
        }
    }

    /// Waits until the server's stderr contains `needle` (it is read on its own thread, so
    /// it can lag behind stdout); panics with the log after [`TIMEOUT`].
    pub fn wait_for_stderr(&self, needle: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.stderr().contains(needle) {
            assert!(Instant::now() < deadline, "stderr never said {needle:?}:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        match self.server {
            Server::Process(_) => self.stderr.lock().map(|s| s.clone()).unwrap_or_default(),
            Server::InProcess(_) => in_process::log(),
        }
    }

    /// `shutdown` then `exit`; returns how the process ended.
    pub fn shutdown(mut self) -> ExitStatus {
        let response = self.request("shutdown", Value::Null);
        assert!(response.get("error").is_none(), "shutdown failed: {response}");
        self.notify("exit", Value::Null);
        self.close_stdin();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.server.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit after `exit`");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes the server's stdin and waits for it to stop; `None` if it did not.
    pub fn shutdown_by_closing_stdin(mut self) -> Option<ExitStatus> {
        self.close_stdin();
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.server.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.server.try_wait().is_none()
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        match &mut self.server {
            Server::Process(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            // stopped at once and joined when it drops
            Server::InProcess(_) => {}
        }
    }
}

/// Reads one `Content-Length` framed message; `None` at end of stream, or when the server
/// sent a frame that is not JSON.
pub fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let body = tokamak::jsonrpc::headers::read_blocking(reader).ok()??;
    serde_json::from_slice(&body).ok()
}

/// Applies one `didChange` content change (positions in UTF-16) to `text`.
pub fn apply_change(text: &mut String, change: &Value) {
    apply_change_in(text, change, "utf-16");
}

/// Applies one `didChange` content change, its positions in `encoding` (`"utf-8"`,
/// `"utf-16"` or `"utf-32"`), to `text`.
pub fn apply_change_in(text: &mut String, change: &Value, encoding: &str) {
    let new_text = change["text"].as_str().expect("change text");
    if change.get("range").is_none() {
        *text = new_text.to_string();
        return;
    }
    let start = offset_of(text, &change["range"]["start"], encoding);
    let end = offset_of(text, &change["range"]["end"], encoding);
    text.replace_range(start..end, new_text);
}

/// The byte offset of an LSP position (columns in `encoding`), clamped to the text.
fn offset_of(text: &str, position: &Value, encoding: &str) -> usize {
    let line = position["line"].as_u64().expect("line") as usize;
    let character = position["character"].as_u64().expect("character") as usize;
    let mut offset = 0;
    for _ in 0..line {
        match text[offset..].find('\n') {
            Some(i) => offset += i + 1,
            None => return text.len(),
        }
    }
    let mut units = 0;
    for (i, ch) in text[offset..].char_indices() {
        if units >= character || ch == '\n' {
            return offset + i;
        }
        units += match encoding {
            "utf-8" => ch.len_utf8(),
            "utf-32" => 1,
            _ => ch.len_utf16(),
        };
    }
    text.len()
}

/// A `file://` URI for a name under a fake root (the server never reads it from disk).
pub fn uri(name: &str) -> String {
    format!("file:///workspace/{name}")
}

/// A range object.
/// Text marked with `$0` where a cursor stands (as rust-analyzer's tests mark one): the text
/// without the markers, and each marker's `(line, character)` in UTF-16 units, in order.
pub fn cursors(marked: &str) -> (String, Vec<(u32, u32)>) {
    let mut text = String::with_capacity(marked.len());
    let mut found = Vec::new();
    let mut pieces = marked.split("$0").peekable();
    while let Some(piece) = pieces.next() {
        text.push_str(piece);
        if pieces.peek().is_some() {
            let line = text.matches('\n').count() as u32;
            let start = text.rfind('\n').map_or(0, |at| at + 1);
            found.push((line, text[start..].encode_utf16().count() as u32));
        }
    }
    (text, found)
}

pub fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({"start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}})
}

/// `(line, character)` pairs and messages of the diagnostics in a publish.
pub fn summarize(params: &Value) -> Vec<(u64, u64, String)> {
    params["diagnostics"]
        .as_array()
        .expect("diagnostics array")
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap_or(u64::MAX),
                d["range"]["start"]["character"].as_u64().unwrap_or(u64::MAX),
                d["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The repository root.
pub fn repo_root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The local tools folder the test command installs into.
pub fn tools_dir() -> std::path::PathBuf {
    std::env::var_os("TOKAMAK_TOOLS").map_or_else(|| repo_root().join(".tools"), std::path::PathBuf::from)
}

/// The environment a server under test needs to find the real checkers.
pub fn tool_env() -> Vec<(String, String)> {
    let tools = tools_dir();
    vec![
        ("TOKAMAK_TOOLS".to_string(), tools.display().to_string()),
        ("PYRIGHT_PYTHON_CACHE_DIR".to_string(), tools.join("pyright-cache").display().to_string()),
    ]
}

/// A `PATH` with every program of today's `PATH` but `hidden` (a machine without bubblewrap,
/// say): a folder of links, one per program name (the first found wins), kept while the
/// returned folder lives.
pub fn path_without(hidden: &[&str]) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().expect("temp dir");
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let target = bin.path().join(&name);
            if hidden.iter().any(|h| name == *h) || std::fs::symlink_metadata(&target).is_ok() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), &target);
        }
    }
    let value = bin.path().display().to_string();
    (bin, value)
}

/// Where skipped tests are listed for `scripts/test`'s count (one line each: the test, why).
pub fn skipped_list() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests")
}

/// A test that cannot run here for want of a tool: in CI that fails it (a tool CI lacks is a
/// broken CI); elsewhere the reason is printed and the test listed as skipped, so the suite's
/// summary counts it instead of calling it passed.
pub fn skip(reason: &str) {
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{reason}");
    eprintln!("skipping: {reason}");
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let line = format!("{test}: {reason}\n");
    let list = skipped_list();
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&list)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot list the skipped test in {}: {e}", list.display());
    }
}

/// Whether every tool is installed (in the tools folder or on PATH). In CI a missing tool
/// fails the test; elsewhere the test is skipped with the reason printed.
pub fn require_tools(names: &[&str]) -> bool {
    let tools = tools_dir();
    let mut dirs = vec![tools.join("venv/bin"), tools.join("node/node_modules/.bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let missing: Vec<&str> =
        names.iter().copied().filter(|name| !dirs.iter().any(|d| d.join(name).is_file())).collect();
    if missing.is_empty() {
        return true;
    }
    let reason = format!(
        "missing tools {missing:?}: run `bash scripts/install-tools` (looked in {} and PATH)",
        tools.display()
    );
    skip(&reason);
    false
}

/// The container backend's test image and the engine's TCP address, standing for another
/// machine's (`scripts/install-tools` makes both).
pub const TEST_IMAGE: &str = "tokamak-test:bookworm";
pub const REMOTE_ENGINE: &str = "tcp://127.0.0.1:2375";

/// The Podman configuration `scripts/install-tools` writes for this machine.
pub fn podman_conf() -> std::path::PathBuf {
    tools_dir().join("podman/containers.conf")
}

/// Whether Podman runs here with [`TEST_IMAGE`] (its configuration from
/// [`podman_conf`]). In CI their absence fails the test; elsewhere it is skipped with the
/// reason printed.
pub fn require_podman() -> bool {
    let found = std::process::Command::new("podman")
        .args(["image", "exists", TEST_IMAGE])
        .env("CONTAINERS_CONF", podman_conf())
        .output();
    if found.is_ok_and(|output| output.status.success()) && podman_conf().is_file() {
        return true;
    }
    skip(&format!("Podman with the image {TEST_IMAGE} is not here: run `bash scripts/install-tools`"));
    false
}

/// Whether the Docker engine answers at [`REMOTE_ENGINE`] with [`TEST_IMAGE`]. In CI their
/// absence fails the test; elsewhere the test is skipped with the reason printed.
pub fn require_engine() -> bool {
    let found = std::process::Command::new("docker")
        .args(["-H", REMOTE_ENGINE, "image", "inspect", TEST_IMAGE])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let reason = format!(
            "no Docker engine with {TEST_IMAGE} at {REMOTE_ENGINE}: run `bash scripts/install-tools`"
        );
        skip(&reason);
    }
    found
}

/// What the model was told of its actions' results (the last message of each request that
/// answers one: a result, a refusal or an error).
pub fn results_told(model: &model_server::ModelServer) -> Vec<String> {
    model
        .requests()
        .iter()
        .filter_map(|r| {
            let last = r.body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
            let content = last["content"].as_str().unwrap_or_default().to_string();
            ["Result of", "Refused of", "Error:"].iter().any(|p| content.starts_with(p)).then_some(content)
        })
        .collect()
}

/// Whether this kernel has Landlock (what confines commands without bubblewrap). In CI its
/// absence fails the test; elsewhere the test is skipped with the reason printed.
pub fn require_landlock() -> bool {
    if tokamak::sandbox::landlock::kernel_abi().is_some() {
        return true;
    }
    skip("this kernel has no Landlock (Linux 5.13 or later, enabled at boot)");
    false
}

/// Copies `fixtures/<name>` into a fresh temporary folder (tools write caches next to the
/// files they check; the repository stays clean).
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo_root().join("fixtures").join(name), dir.path());
    dir
}

pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy fixture file");
        }
    }
}

pub fn file_uri(path: &std::path::Path) -> String {
    url::Url::from_file_path(path).expect("absolute path").to_string()
}

impl LspClient {
    /// A server whose workspace folder is `root`, able to find the real checkers, with
    /// `options` as `initializationOptions`. The editor trusts the folder unless `options`
    /// says otherwise (`"trusted": false`).
    pub fn for_project(root: &std::path::Path, options: Value) -> LspClient {
        LspClient::for_project_with(root, options, json!({"general": {"positionEncodings": ["utf-16"]}}))
    }

    /// As [`LspClient::for_project`], for a client that acts as an editor: it offers
    /// work-done progress and versioned workspace edits, and applies the edits it is sent.
    pub fn editor_for_project(root: &std::path::Path, options: Value) -> LspClient {
        let capabilities = json!({
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
        });
        let mut client = LspClient::for_project_with(root, options, capabilities);
        client.act_as_editor();
        client
    }

    pub fn for_project_with(root: &std::path::Path, options: Value, capabilities: Value) -> LspClient {
        LspClient::for_project_as(UserDirs::new(), root, options, capabilities)
    }

    /// As [`LspClient::for_project_with`], with `user`'s settings and cache folders.
    pub fn for_project_as(
        user: UserDirs,
        root: &std::path::Path,
        options: Value,
        capabilities: Value,
    ) -> LspClient {
        LspClient::for_project_in(user, root, options, capabilities, &[])
    }

    /// As [`LspClient::editor_for_project`], with more variables in the server's environment
    /// (a `PATH` without some tool, say).
    pub fn editor_for_project_env(
        root: &std::path::Path,
        options: Value,
        env: &[(String, String)],
    ) -> LspClient {
        let capabilities = json!({
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
        });
        let mut client = LspClient::for_project_in(UserDirs::new(), root, options, capabilities, env);
        client.act_as_editor();
        client
    }

    /// As [`LspClient::for_project_as`], with `extra` in the server's environment.
    pub fn for_project_in(
        user: UserDirs,
        root: &std::path::Path,
        mut options: Value,
        capabilities: Value,
        extra: &[(String, String)],
    ) -> LspClient {
        if options.is_null() {
            options = json!({});
        }
        if let Some(object) = options.as_object_mut() {
            object.entry("trusted").or_insert(Value::Bool(true));
            // the agent's tests act without asking; the approval tests say `medium` or `high`
            // (`null`: the default)
            object.entry("approval").or_insert(json!("low"));
        }
        let mut env = tool_env();
        env.extend(extra.iter().cloned());
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut client = LspClient::start_with(user, &env);
        // a person who says no to every question the editor shows (`answer` changes it)
        client.answer("window/showMessageRequest", json!({"title": "Reject"}));
        let response = client.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": file_uri(root),
                "workspaceFolders": [{"uri": file_uri(root), "name": "project"}],
                "capabilities": capabilities,
                "initializationOptions": options,
            }),
        );
        assert!(response.get("error").is_none(), "initialize failed: {response}");
        client.notify("initialized", json!({}));
        client.encoding =
            response["result"]["capabilities"]["positionEncoding"].as_str().unwrap_or("utf-16").to_string();
        client
    }

    /// An editor for `root` that applies edits and renders approvals itself (the experimental
    /// capability: `tokamak/approvalRequested`, answered with `tokamak.approve`/`reject`).
    pub fn approving_editor(root: &std::path::Path, options: Value) -> LspClient {
        let capabilities = json!({
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
            "experimental": {"tokamak": {"approvals": true}},
        });
        let mut client = LspClient::for_project_with(root, options, capabilities);
        client.act_as_editor();
        client
    }

    /// `workspace/executeCommand` of `name` with one argument; the whole answer.
    pub fn execute(&mut self, name: &str, arguments: Value) -> Value {
        self.request("workspace/executeCommand", json!({"command": name, "arguments": [arguments]}))
    }

    /// `tokamak.run` of `goal`; the run's id.
    pub fn start_run(&mut self, goal: &str) -> String {
        let response = self.execute("tokamak.run", json!({"goal": goal}));
        assert!(response.get("error").is_none(), "{response}");
        response["result"]["run_id"].as_str().unwrap_or_else(|| panic!("a run id: {response}")).to_string()
    }

    /// The `tokamak/runFinished` of run `run_id`.
    pub fn run_finished(&mut self, run_id: &str) -> Value {
        self.wait_for("the run's end", |m| {
            m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
        })["params"]
            .clone()
    }

    /// The next `tokamak/approvalRequested`.
    pub fn approval_question(&mut self) -> Value {
        self.wait_for_notification("tokamak/approvalRequested")["params"].clone()
    }

    /// Opens a file from disk.
    pub fn open_file(&mut self, path: &std::path::Path, language_id: &str) -> String {
        let uri = file_uri(path);
        let text = std::fs::read_to_string(path).expect("read file");
        self.open(&uri, language_id, 1, &text);
        uri
    }

    /// The next publish for `uri` with at least one diagnostic from `source`.
    pub fn diagnostics_from(&mut self, uri: &str, source: &str) -> Value {
        self.wait_for(&format!("{source} diagnostics for {uri}"), |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|d| d["source"] == source))
        })["params"]
            .clone()
    }

    /// `tokamak.diagnostics` for `uri`, waiting for every checker when `wait`.
    pub fn observer_diagnostics(&mut self, uri: &str, wait: bool) -> Value {
        // the server is asked to wait up to a minute for the document to settle: so is this
        let response = self.request_within(
            "workspace/executeCommand",
            json!({"command": "tokamak.diagnostics", "arguments": [{"uri": uri, "wait": wait, "timeout_ms": 60000}]}),
            Duration::from_secs(75),
        );
        assert!(response.get("error").is_none(), "tokamak.diagnostics failed: {response}");
        response["result"].clone()
    }
}

/// `(line, character, source, code)` of each diagnostic from `source`, one-based lines and
/// columns as a person reads them.
pub fn findings(diagnostics: &Value, source: &str) -> Vec<(u64, u64, String)> {
    let mut out: Vec<(u64, u64, String)> = diagnostics
        .as_array()
        .expect("diagnostics array")
        .iter()
        .filter(|d| d["source"] == source)
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap_or(0) + 1,
                d["range"]["start"]["character"].as_u64().unwrap_or(0) + 1,
                match &d["code"] {
                    Value::String(code) => code.clone(),
                    Value::Number(code) => code.to_string(),
                    _ => "-".to_string(),
                },
            )
        })
        .collect();
    out.sort();
    out
}

/// The run's modes as `from -trigger-> to`, in order, from the audit log under `cache`.
pub fn mode_trail(cache: &std::path::Path) -> Vec<String> {
    audit_events(cache, "mode")
        .iter()
        .map(|m| {
            let field = |name: &str| m[name].as_str().unwrap_or_default().to_string();
            format!("{} -{}-> {}", field("from"), field("trigger"), field("to"))
        })
        .collect()
}

/// The engine's phases a run went through (SPEC P1), read from its modes' audit lines.
pub fn phases(cache: &std::path::Path) -> Vec<String> {
    audit_events(cache, "mode").iter().map(|m| m["phase"].as_str().unwrap_or_default().to_string()).collect()
}

/// Every line of `event` in the audit logs under a user's cache folder.
pub fn audit_events(cache: &std::path::Path, event: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut stack = vec![cache.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(&path).expect("audit log");
                found.extend(
                    text.lines()
                        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                        .filter(|l| l["event"] == event),
                );
            }
        }
    }
    found
}

/// The processes alive whose command line holds `marker` (not a shell's that names it).
pub fn alive(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if line.contains(marker) && !line.contains("sh -c") && !line.contains("__confine") {
                found.push(line);
            }
        }
    }
    found
}
