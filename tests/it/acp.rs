//! The ACP agent — in the test's process (`acp::serve_on` over a socket pair, as
//! `support::InProcess` runs it), or `tokamak acp` over stdio where a test needs a process —
//! with a client written here from the ACP schema's own types (the
//! editor's side: it answers `fs/write_text_file` by writing the file, as an editor saves its
//! buffer, and `session/request_permission` as the test says): seed 000's scenario end to end
//! — the plan as `plan` updates, each action a tool call of its kind with its diff, a
//! permission asked with the diff and "always" remembered, the tests run as tool calls, each
//! step's checks, the report and the stop reason —, the same without the client's file system,
//! and what goes wrong: bad lines, unknown methods and sessions, a prompt while one runs, a
//! question never answered and a cancel.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, Scripted, json_reply, openai_chat, openai_tool_calls};
use support::scenario::{GOAL, Language, PYTHON, block, call};

/// How the test's client answers a permission request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Permit {
    /// `allow_always` (and so Tokamak should not ask again for that kind of action).
    Always,
    AllowOnce,
    /// Never answers (until a cancel).
    Never,
}

/// The editor's side of an ACP connection.
struct Client {
    agent: Agent,
    stdin: Option<Box<dyn Write + Send>>,
    messages: mpsc::Receiver<Value>,
    /// Every message Tokamak sent, in order.
    seen: Vec<Value>,
    next_id: u64,
    permit: Permit,
    /// Permission requests not answered (`Permit::Never`).
    unanswered: Vec<Value>,
    /// Buffers with unsaved changes, by path: read and written instead of the disk.
    buffers: std::collections::HashMap<std::path::PathBuf, String>,
    /// Answer every `fs/write_text_file` with an error (a read-only buffer, a full disk).
    refuse_writes: bool,
    /// The commands running in the editor's terminals, by id (`terminal/*`).
    terminals: std::collections::HashMap<String, Terminal>,
    /// `terminal/wait_for_exit` requests answered when their command ends: (request id,
    /// terminal id).
    waiting: Vec<(Value, String)>,
    /// The environment the editor started Tokamak with, which its terminals have too.
    env: Vec<(String, String)>,
    _user: Option<UserDirs>,
}

/// Where the agent runs.
enum Agent {
    Process(Child),
    InProcess(support::InProcess),
}

impl Agent {
    fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        match self {
            Agent::Process(child) => child.try_wait().ok().flatten(),
            Agent::InProcess(agent) => agent.status(),
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Agent::Process(child) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A command in the test editor's terminal: its output, both streams, as it comes.
struct Terminal {
    child: Child,
    output: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    exit: Option<std::process::ExitStatus>,
}

impl Terminal {
    fn start(create: &acp::CreateTerminalRequest, env: &[(String, String)]) -> std::io::Result<Terminal> {
        let mut child = Command::new(&create.command)
            .args(&create.args)
            .current_dir(create.cwd.as_deref().unwrap_or(Path::new(".")))
            .envs(env.iter().cloned())
            .envs(create.env.iter().map(|v| (v.name.clone(), v.value.clone())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let output = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let streams: [Box<dyn std::io::Read + Send>; 2] =
            [Box::new(child.stdout.take().unwrap()), Box::new(child.stderr.take().unwrap())];
        for mut stream in streams {
            let output = output.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = std::io::Read::read(&mut stream, &mut chunk) {
                    output.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
            });
        }
        Ok(Terminal { child, output, exit: None })
    }

    fn exit_status(&self) -> Value {
        match self.exit {
            Some(status) => {
                json!({"exitCode": status.code(), "signal": status.code().map_or(Some("SIGKILL"), |_| None)})
            }
            None => Value::Null,
        }
    }
}

impl Client {
    fn start(user: UserDirs, env: &[(String, String)]) -> Client {
        let mut all = user.env();
        all.extend(env.iter().cloned());
        let mut client = Client::start_env(&all);
        client._user = Some(user);
        client
    }

    /// A client whose user folders the caller keeps (`env` names them): the agent in this
    /// process, or the binary when the process has had its in-process agent.
    fn start_env(env: &[(String, String)]) -> Client {
        let mut vars = support::tool_env();
        vars.extend(env.iter().cloned());
        let started = support::InProcess::start(&vars, |input, output, _stop| async move {
            tokamak::logging::init_into(None::<tracing_subscriber::layer::Identity>, || {
                support::in_process::LogWriter
            });
            // the end of its input ends it
            match tokamak::acp::serve_on(input, output).await {
                Ok(()) => 0,
                Err(_) => 1,
            }
        });
        let (agent, stdout, stdin): (Agent, Box<dyn std::io::Read + Send>, Box<dyn Write + Send>) =
            match started {
                Some(agent) => {
                    let stdout = Box::new(agent.socket.try_clone().expect("the socket again"));
                    let stdin = Box::new(agent.socket.try_clone().expect("the socket again"));
                    (Agent::InProcess(agent), stdout, stdin)
                }
                None => {
                    let mut command = Command::new(env!("CARGO_BIN_EXE_tokamak"));
                    support::clean_env(&mut command);
                    let mut child = command
                        .arg("acp")
                        .envs(vars.iter().cloned())
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::inherit())
                        .spawn()
                        .expect("start tokamak acp");
                    let stdout = Box::new(child.stdout.take().expect("stdout"));
                    let stdin = Box::new(child.stdin.take().expect("stdin"));
                    (Agent::Process(child), stdout, stdin)
                }
            };
        let (tell, messages) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // the output carries the protocol only: every line is one JSON-RPC message
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|err| panic!("a line on stdout that is not JSON ({err}): {line}"));
                if tell.send(message).is_err() {
                    break;
                }
            }
        });
        Client {
            agent,
            stdin: Some(stdin),
            messages,
            seen: Vec::new(),
            next_id: 1,
            permit: Permit::Always,
            unanswered: Vec::new(),
            buffers: Default::default(),
            refuse_writes: false,
            terminals: Default::default(),
            waiting: Vec::new(),
            env: env.to_vec(),
            _user: None,
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_line(&serde_json::to_string(message).unwrap());
    }

    fn notify(&mut self, method: &str, params: impl serde::Serialize) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its id without waiting.
    fn ask(&mut self, method: &str, params: impl serde::Serialize) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and serves Tokamak's requests until its answer comes.
    fn request(&mut self, method: &str, params: impl serde::Serialize) -> Value {
        let id = self.ask(method, params);
        self.answer_of(id)
    }

    fn answer_of(&mut self, id: u64) -> Value {
        self.wait_for(&format!("the answer to request {id}"), |m| m["id"] == id && m.get("method").is_none())
    }

    /// Serves Tokamak (its requests answered as an editor would) until a message matches.
    fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            self.answer_exits();
            let message = match self.messages.recv_timeout(Duration::from_millis(20)) {
                Ok(message) => message,
                Err(_) if Instant::now() < deadline => continue,
                Err(_) => panic!("waited in vain for {what}; seen:\n{:#?}", self.seen),
            };
            self.seen.push(message.clone());
            if message.get("method").is_some() && message.get("id").is_some() {
                self.serve(&message);
            }
            if matches(&message) {
                return message;
            }
        }
    }

    /// Answers one of Tokamak's requests.
    fn serve(&mut self, request: &Value) {
        let id = request["id"].clone();
        let result = match request["method"].as_str().unwrap_or_default() {
            "fs/write_text_file" if self.refuse_writes => {
                let error = json!({"code": -32603, "message": "the buffer is read-only"});
                self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
                return;
            }
            "fs/write_text_file" => {
                let write: acp::WriteTextFileRequest =
                    serde_json::from_value(request["params"].clone()).unwrap();
                match self.buffers.get_mut(&write.path) {
                    Some(buffer) => *buffer = write.content,
                    None => std::fs::write(&write.path, &write.content).unwrap(),
                }
                json!({})
            }
            "fs/read_text_file" => {
                let read: acp::ReadTextFileRequest =
                    serde_json::from_value(request["params"].clone()).unwrap();
                let text = match self.buffers.get(&read.path) {
                    Some(buffer) => buffer.clone(),
                    None => std::fs::read_to_string(&read.path).unwrap(),
                };
                json!(acp::ReadTextFileResponse::new(text))
            }
            "session/request_permission" => {
                let option = match self.permit {
                    Permit::Always => "allow_always",
                    Permit::AllowOnce => "allow_once",
                    Permit::Never => {
                        self.unanswered.push(request.clone());
                        return;
                    }
                };
                json!({"outcome": {"outcome": "selected", "optionId": option}})
            }
            "terminal/create" => {
                let create: acp::CreateTerminalRequest =
                    serde_json::from_value(request["params"].clone()).unwrap();
                let terminal = Terminal::start(&create, &self.env).unwrap();
                let id = format!("term-{}", self.terminals.len() + 1);
                self.terminals.insert(id.clone(), terminal);
                json!(acp::CreateTerminalResponse::new(id))
            }
            "terminal/wait_for_exit" => {
                let terminal = request["params"]["terminalId"].as_str().unwrap().to_string();
                self.waiting.push((id, terminal));
                return;
            }
            "terminal/output" => {
                let terminal = self.terminal(request);
                if let Ok(Some(status)) = terminal.child.try_wait() {
                    terminal.exit = Some(status);
                    // the readers finish with the process's pipes
                    std::thread::sleep(Duration::from_millis(50));
                }
                let output = String::from_utf8_lossy(&terminal.output.lock().unwrap()).into_owned();
                json!({"output": output, "truncated": false, "exitStatus": terminal.exit_status()})
            }
            "terminal/kill" => {
                let terminal = self.terminal(request);
                let _ = terminal.child.kill();
                terminal.exit = terminal.child.wait().ok();
                json!({})
            }
            "terminal/release" => {
                let id = request["params"]["terminalId"].as_str().unwrap().to_string();
                let mut terminal = self.terminals.remove(&id).expect("a terminal released once");
                let _ = terminal.child.kill();
                let _ = terminal.child.wait();
                json!({})
            }
            other => panic!("Tokamak asked the editor for {other}"),
        };
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Answers each `terminal/wait_for_exit` whose command has ended.
    fn answer_exits(&mut self) {
        for (id, terminal) in std::mem::take(&mut self.waiting) {
            let exited = match self.terminals.get_mut(&terminal) {
                Some(running) => match running.child.try_wait() {
                    Ok(Some(status)) => {
                        running.exit = Some(status);
                        Some(running.exit_status())
                    }
                    _ => None,
                },
                None => Some(json!({"exitCode": null, "signal": "SIGKILL"})),
            };
            match exited {
                Some(status) => self.send(&json!({"jsonrpc": "2.0", "id": id, "result": status})),
                None => self.waiting.push((id, terminal)),
            }
        }
    }

    fn terminal(&mut self, request: &Value) -> &mut Terminal {
        let id = request["params"]["terminalId"].as_str().unwrap();
        self.terminals.get_mut(id).unwrap_or_else(|| panic!("an unknown terminal: {request}"))
    }

    /// `can`: the editor offers its files and its terminal (else neither, as in ACP's v2 draft).
    fn initialize(&mut self, can: bool) -> Value {
        let mut request = acp::InitializeRequest::new(ProtocolVersion::V1);
        request.client_capabilities.fs.read_text_file = can;
        request.client_capabilities.fs.write_text_file = can;
        request.client_capabilities.terminal = can;
        let answer = self.request("initialize", &request);
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    }

    fn new_session(&mut self, root: &Path) -> String {
        let answer = self.request("session/new", acp::NewSessionRequest::new(root));
        let response: acp::NewSessionResponse =
            serde_json::from_value(answer["result"].clone()).unwrap_or_else(|err| panic!("{err}: {answer}"));
        response.session_id.0.to_string()
    }

    fn prompt_request(session: &str, text: &str) -> acp::PromptRequest {
        acp::PromptRequest::new(session.to_string(), vec![text.into()])
    }

    /// The `session/update`s seen, as their `update` objects.
    fn updates(&self, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == kind)
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    fn requests(&self, method: &str) -> Vec<Value> {
        self.seen.iter().filter(|m| m["method"] == method && m.get("id").is_some()).cloned().collect()
    }

    /// Closes stdin and waits for Tokamak to end.
    fn end(mut self) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        if let Agent::InProcess(agent) = &self.agent {
            agent.close_input();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.agent.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// Seed 000's Python project in a folder of its own, and that folder's real path.
fn python_project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = PYTHON.project();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

/// The user's settings for the scenario: the scripted model, the project's test command, ruff.
fn user_for(language: &Language, root: &Path, model: &ModelServer) -> UserDirs {
    let command: Vec<String> = language.test_command();
    let toml = format!(
        "\n[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[test]\ncommand = {}\n\n[checkers]\nenable = [\"ruff\"]\n",
        model.url(),
        serde_json::to_string(&command).unwrap()
    );
    UserDirs::trusting_with(&[root], &toml)
}

/// The user's settings for a folder of no language: the scripted model, no checkers, trusted.
fn scripted_user(root: &Path, model: &ModelServer) -> UserDirs {
    let toml = format!(
        "\n[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[checkers]\nenable = []\n",
        model.url()
    );
    UserDirs::trusting_with(&[root], &toml)
}

fn text_of(updates: &[Value]) -> String {
    updates.iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

/// Seed 000's scenario as a Zed user would run it: the plan, tool calls with diffs, one
/// permission answered "always" for edits, the files read and written through the editor —
/// the source has unsaved changes, which the agent reads, keeps and tests.
#[test]
fn the_scenario_through_acp_with_the_editors_files() {
    if !support::require_tools(&["pytest", "ruff"]) {
        return;
    }
    let (_dir, root) = python_project();
    let model = ModelServer::start(PYTHON.script());
    model.describe("/props", json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}));
    let key = [("TOKAMAK_TEST_API_KEY".to_string(), "sk-never-seen".to_string())];
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &key);
    // the user typed in user.py and did not save
    let on_disk = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    let unsaved = format!("# typed, not saved\n{on_disk}");
    client.buffers.insert(root.join(PYTHON.source), unsaved);
    let init = client.initialize(true);
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true, "{init}");
    assert_eq!(init["agentInfo"]["name"], "tokamak", "{init}");
    let session = client.new_session(&root);
    let started = Instant::now();
    let id = client.ask("session/prompt", Client::prompt_request(&session, GOAL));
    let first_plan = client.wait_for("the first plan", |m| m["params"]["update"]["sessionUpdate"] == "plan");
    let to_plan = started.elapsed();
    client.wait_for("the first tool call", |m| m["params"]["update"]["sessionUpdate"] == "tool_call");
    let to_tool_call = started.elapsed();
    let answer = client.answer_of(id);
    // measured, never asserted: `cargo test --test it acp:: -- --nocapture`
    eprintln!(
        "acp: prompt → first plan {to_plan:?}, → first tool call {to_tool_call:?}, → end {:?}",
        started.elapsed()
    );
    let response: acp::PromptResponse = serde_json::from_value(answer["result"].clone())
        .unwrap_or_else(|err| panic!("{err}: {answer}\nseen: {:#?}", client.seen));
    assert_eq!(response.stop_reason, acp::StopReason::EndTurn, "{answer}");

    // the plan: two entries, pending at first, each in progress, then both completed
    let entries = first_plan["params"]["update"]["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "{first_plan}");
    let plans = client.updates("plan");
    let statuses: Vec<Vec<String>> = plans
        .iter()
        .map(|p| {
            p["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["status"].as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    assert!(statuses.contains(&vec!["in_progress".to_string(), "pending".to_string()]), "{statuses:?}");
    assert!(statuses.contains(&vec!["completed".to_string(), "in_progress".to_string()]), "{statuses:?}");
    assert_eq!(statuses.last().unwrap(), &["completed", "completed"], "{statuses:?}");
    assert!(entries[0]["content"].as_str().unwrap().contains("validate_email"), "{first_plan}");
    // the running step's entry names its mode as the outcomes move it: written, then tested
    let first_step: Vec<String> = plans
        .iter()
        .filter(|p| p["entries"][0]["status"] == "in_progress")
        .map(|p| p["entries"][0]["content"].as_str().unwrap().to_string())
        .collect();
    let modes: Vec<&str> =
        first_step.iter().filter_map(|c| c.rsplit_once(" (").map(|(_, m)| m.trim_end_matches(')'))).collect();
    assert!(modes.windows(2).any(|w| w == ["implementation", "test"]), "{first_step:?}");

    // each action a tool call of its kind, with absolute locations; the edit's diff
    let calls = client.updates("tool_call");
    let kinds: Vec<&str> = calls.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "edit").count(), 2, "{calls:#?}");
    assert!(kinds.contains(&"read"), "{kinds:?}");
    let edit = calls.iter().find(|c| c["kind"] == "edit").unwrap();
    let source = root.join(PYTHON.source).display().to_string();
    assert_eq!(edit["locations"][0]["path"], source.as_str(), "{edit}");
    let results = client.updates("tool_call_update");
    let edited = results.iter().find(|u| u["toolCallId"] == edit["toolCallId"]).unwrap();
    assert_eq!(edited["status"], "completed", "{edited}");
    let diff = &edited["content"][0];
    assert_eq!(diff["type"], "diff", "{edited}");
    assert_eq!(diff["path"], source.as_str());
    assert!(diff["newText"].as_str().unwrap().contains("def validate_email"), "{diff}");
    assert!(!diff["oldText"].as_str().unwrap().contains("validate_email"), "{diff}");

    let ids: Vec<&str> = calls.iter().map(|c| c["toolCallId"].as_str().unwrap()).collect();
    assert_eq!(ids.iter().collect::<std::collections::BTreeSet<_>>().len(), ids.len(), "{ids:?}");
    // one question, with the diff and the four options; "always" held for the second edit
    let questions = client.requests("session/request_permission");
    assert_eq!(questions.len(), 1, "{questions:#?}");
    let question: acp::RequestPermissionRequest =
        serde_json::from_value(questions[0]["params"].clone()).unwrap();
    let options: Vec<String> = question.options.iter().map(|o| o.option_id.0.to_string()).collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    let content = serde_json::to_value(&question.tool_call).unwrap();
    assert_eq!(content["content"][0]["type"], "diff", "{content}");
    assert_eq!(content["toolCallId"], edit["toolCallId"], "the question is about the edit's tool call");

    // the files read and changed through the editor (fs/read_text_file, fs/write_text_file):
    // the source's buffer has the method and keeps the unsaved line; the disk has neither;
    // the test file (no unsaved changes) is written to disk
    let writes = client.requests("fs/write_text_file");
    let written: Vec<&str> = writes.iter().map(|w| w["params"]["path"].as_str().unwrap()).collect();
    assert!(written.contains(&source.as_str()), "{written:?}");
    let buffer = &client.buffers[&root.join(PYTHON.source)];
    assert!(buffer.starts_with("# typed, not saved\n") && buffer.contains("def validate_email"), "{buffer}");
    assert_eq!(
        std::fs::read_to_string(root.join(PYTHON.source)).unwrap(),
        on_disk,
        "the disk is the user's to save"
    );
    assert!(std::fs::read_to_string(root.join(PYTHON.tests)).unwrap().contains("def test_validate_email"));
    assert!(!client.requests("fs/read_text_file").is_empty());

    // the tests ran as tool calls of kind execute, and passed: on the buffer's text, since the
    // method is nowhere on disk
    let test_runs: Vec<&Value> =
        calls.iter().filter(|c| c["toolCallId"].as_str().unwrap().contains("/tests-")).collect();
    assert!(test_runs.len() >= 2, "{calls:#?}");
    assert!(test_runs.iter().all(|c| c["kind"] == "execute"), "{test_runs:?}");
    // in the editor's terminal, shown in their tool calls, with the command's environment only:
    // not the key Tokamak was given
    let created = client.requests("terminal/create");
    assert_eq!(created.len(), test_runs.len(), "{created:#?}");
    for create in &created {
        let create: acp::CreateTerminalRequest = serde_json::from_value(create["params"].clone()).unwrap();
        assert!(create.args.iter().any(|a| a == "pytest"), "{create:?}");
        // under Tokamak's helper, which gives the command its environment from a file: the
        // terminal's own is not the command's, and no value shows in a command line
        assert!(create.command.ends_with("tokamak"), "{create:?}");
        assert_eq!(create.args[0], "__confine", "{create:?}");
        assert!(create.args.iter().any(|a| a == "--env-file"), "{create:?}");
        assert!(
            !create.args.iter().any(|a| a.starts_with("PATH=")),
            "no value in its command line: {create:?}"
        );
        let leaked = create.args.iter().any(|a| a.contains("TOKAMAK_TEST_API_KEY"));
        assert!(!leaked, "the key is not in the terminal's environment: {create:?}");
    }
    assert_eq!(client.requests("terminal/wait_for_exit").len(), created.len());
    assert_eq!(client.requests("terminal/release").len(), created.len());
    assert!(client.terminals.is_empty(), "every terminal released");
    for run in &test_runs {
        // shown while it runs, and kept in the result
        let updates: Vec<&Value> = results.iter().filter(|u| u["toolCallId"] == run["toolCallId"]).collect();
        assert_eq!(updates[0]["content"][0]["type"], "terminal", "{updates:#?}");
        let result = updates.last().unwrap();
        assert_eq!(result["status"], "completed", "{result}");
        assert_eq!(result["content"][0], updates[0]["content"][0], "{result}");
        let shown = serde_json::to_string(&result["content"]).unwrap();
        assert!(shown.contains("exit status 0") && shown.contains("in the editor's terminal"), "{shown}");
    }
    // each step's checks: ruff on the text the agent wrote, and the tests
    let checks: Vec<&Value> =
        calls.iter().filter(|c| c["toolCallId"].as_str().unwrap().contains("/check-")).collect();
    assert_eq!(checks.len(), 2, "{calls:#?}");
    assert_eq!(
        checks[0]["title"], "Checks of step 1: 0 error(s) introduced; the tests pass",
        "{:?}",
        checks[0]
    );
    assert!(
        checks[0]["content"][0]["content"]["text"].as_str().unwrap().contains("No new errors in user.py"),
        "{:?}",
        checks[0]
    );

    // the report as the agent's message
    let said = text_of(&client.updates("agent_message_chunk"));
    assert!(said.contains("all 2 step(s) done"), "{said}");
    // the tokens in context after each model reply, against the window llama.cpp's /props named
    let usage = client.updates("usage_update");
    assert!(!usage.is_empty(), "{:#?}", client.seen);
    for update in &usage {
        assert_eq!(update["size"], 8192, "{update}");
        let used = update["used"].as_u64().unwrap();
        assert!(used > 0 && used < 8192, "{update}");
    }
    // the context window asked once for the session; the model list once, for the picker
    let mut gets = model.gets();
    gets.sort();
    assert_eq!(gets, ["/props", "/v1/models"], "asked once for the session");
    let status = client.end();
    assert!(status.is_some_and(|s| s.success()), "ends when the editor closes its stdin: {status:?}");
}

/// A command in the editor's terminal is killed at its timeout (the tests fail, and say why)
/// and when the prompt is cancelled — with what it started, though the editor kills with
/// SIGKILL (Landlock here, bubblewrap hidden); every terminal is released.
#[test]
fn the_editors_terminal_stops_at_the_timeout_and_the_cancel() {
    if !support::require_landlock() {
        return;
    }
    let (_dir, root) = python_project();
    let model = ModelServer::start(PYTHON.script());
    let marker = format!("sleep {}", 4_000_000 + std::process::id());
    let toml = format!(
        "\n[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[test]\ncommand = [\"sh\", \"-c\", \"setsid {marker} >/dev/null 2>&1 & sleep 60\"]\n\n[commands]\ntimeout_s = 1\n\n[checkers]\nenable = [\"ruff\"]\n",
        model.url()
    );
    let (_bin, path) = support::path_without(&["bwrap"]);
    let mut client = Client::start(UserDirs::trusting_with(&[&root], &toml), &[("PATH".to_string(), path)]);
    let gone = |when: &str| {
        let started = std::time::Instant::now();
        while !support::alive(&marker).is_empty() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(support::alive(&marker).is_empty(), "{when}: left running: {:?}", support::alive(&marker));
    };
    client.initialize(true);
    let session = client.new_session(&root);
    let prompt = client.ask("session/prompt", Client::prompt_request(&session, GOAL));
    let timed_out = client.wait_for("the first test run's end", |m| {
        m["params"]["update"]["toolCallId"].as_str().is_some_and(|id| id.ends_with("/tests-1"))
            && m["params"]["update"]["status"] == "failed"
    });
    let shown = timed_out["params"]["update"]["content"].to_string();
    assert!(shown.contains("stopped at the 1 s timeout") && shown.contains("the tests failed"), "{shown}");
    assert_eq!(client.requests("terminal/kill").len(), 1, "killed at the timeout");
    gone("at the timeout");
    // the next run of the tests, cancelled while it runs
    client.wait_for("the second test run", |m| m["method"] == "terminal/create");
    let started = std::time::Instant::now();
    while support::alive(&marker).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    client.notify("session/cancel", acp::CancelNotification::new(session.clone()));
    let answer = client.answer_of(prompt);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert_eq!(client.requests("terminal/kill").len(), 2, "killed at the cancel");
    gone("at the cancel");
    assert!(client.terminals.is_empty(), "every terminal released");
    assert!(client.end().is_some());
}

/// A model that refuses (OpenAI's `content_filter`) ends the turn `refusal`, with its words,
/// and nothing changed.
#[test]
fn a_model_that_refuses_ends_the_turn_with_refusal() {
    let (_dir, root) = python_project();
    let before = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    let refusal = json_reply(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "I cannot help with that."}, "finish_reason": "content_filter"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46}
        }),
    );
    let model = ModelServer::start(vec![openai_chat(PYTHON.plan), refusal]);
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.initialize(true);
    let session = client.new_session(&root);
    let answer = client.request("session/prompt", Client::prompt_request(&session, GOAL));
    assert_eq!(answer["result"]["stopReason"], "refusal", "{answer}");
    let said = text_of(&client.updates("agent_message_chunk"));
    assert!(said.contains("the model refused to go on: I cannot help with that."), "{said}");
    assert_eq!(model.requests().len(), 2, "not asked again after its refusal");
    assert_eq!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap(), before);
    assert!(client.end().is_some());
}

/// A session lasts: a file another program writes after the index was built is in the next
/// prompt's view of the workspace (Tokamak watches the folder; no ACP client tells of disk).
#[test]
fn a_file_written_on_disk_during_a_session_is_in_the_next_prompts_view() {
    let (_dir, root) = python_project();
    let refusal = || {
        json_reply(
            200,
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "No."}, "finish_reason": "content_filter"}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}
            }),
        )
    };
    let model = ModelServer::start((0..40).map(|_| refusal()).collect());
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.initialize(true);
    let session = client.new_session(&root);
    let goal = "Make reconcile_ledger_quokka round to cents";
    let prompt_of = |client: &mut Client| {
        let answer = client.request("session/prompt", Client::prompt_request(&session, goal));
        assert_eq!(answer["result"]["stopReason"], "refusal", "{answer}");
        let last = model.requests().last().cloned().expect("a request");
        last.body["messages"].to_string()
    };
    // the first prompt builds the index; the file is not there yet
    assert!(!prompt_of(&mut client).contains("ledger.py"));
    std::fs::write(root.join("ledger.py"), "def reconcile_ledger_quokka(total):\n    return total\n")
        .unwrap();
    let deadline = Instant::now() + support::TIMEOUT;
    while !prompt_of(&mut client).contains("ledger.py") {
        assert!(Instant::now() < deadline, "the file written on disk never reached the prompt");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(client.end().is_some());
}

/// A client without a file system of its own (ACP's v2 draft drops `fs/*`): the same run
/// writes the files itself, and every question answered once is asked again.
#[test]
fn the_scenario_through_acp_on_the_disk() {
    if !support::require_tools(&["pytest", "ruff"]) {
        return;
    }
    let (_dir, root) = python_project();
    let model = ModelServer::start(PYTHON.script());
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.permit = Permit::AllowOnce;
    client.initialize(false);
    let session = client.new_session(&root);
    let answer = client.request("session/prompt", Client::prompt_request(&session, GOAL));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(client.requests("fs/write_text_file").is_empty());
    assert_eq!(client.requests("session/request_permission").len(), 2, "asked for each edit");
    assert!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap().contains("def validate_email"));
    assert!(std::fs::read_to_string(root.join(PYTHON.tests)).unwrap().contains("def test_validate_email"));
    // the tests ran here, not in a terminal of the editor's: pytest's output in the tool call
    assert!(client.requests("terminal/create").is_empty());
    // a server that does not say its context window: no usage is made up
    assert!(client.updates("usage_update").is_empty());
    // the context window (llama.cpp's, then vLLM's way), and the model list for the picker
    let mut gets = model.gets();
    gets.sort();
    assert_eq!(gets, ["/props", "/v1/models", "/v1/models"]);
    let results = client.updates("tool_call_update");
    let test_results: Vec<&Value> = results
        .iter()
        .filter(|u| u["toolCallId"].as_str().unwrap().contains("/tests-") && u.get("status").is_some())
        .collect();
    assert!(test_results.len() >= 2, "{results:#?}");
    for result in test_results {
        assert_eq!(result["status"], "completed", "{result}");
        let shown: String = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["content"]["text"].as_str())
            .collect();
        assert!(shown.contains(" passed") && !shown.contains("terminal"), "{shown}");
    }
    // the slash commands, advertised when the session began; the run undone with them
    let commands = client.updates("available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["plan", "status", "checkpoints", "rollback", "trust", "compact"], "{commands:?}");
    let said_before = client.updates("agent_message_chunk").len();
    let say = |client: &mut Client, text: &str| {
        let answer = client.request("session/prompt", Client::prompt_request(&session, text));
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        text_of(&client.updates("agent_message_chunk")[said_before..])
    };
    let status = say(&mut client, "/status");
    assert!(status.contains("Model: scripted at ") && status.contains("Approval: medium"), "{status}");
    let listed = say(&mut client, "/checkpoints");
    assert!(listed.contains(GOAL) && listed.contains("user.py"), "{listed}");
    let undone = say(&mut client, "/rollback");
    assert!(undone.contains("restored user.py") && undone.contains("Rolled back"), "{undone}");
    assert!(!std::fs::read_to_string(root.join(PYTHON.source)).unwrap().contains("validate_email"));
    assert!(client.end().is_some());
}

/// Bad input gets a clear JSON-RPC error, and the agent goes on serving.
#[test]
fn bad_input_gets_an_error_and_the_agent_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut client = Client::start(UserDirs::trusting(&[&root]), &[]);
    client.send_line("{this is not json");
    let parse = client.wait_for("the parse error", |m| m["error"]["code"] == -32700);
    assert_eq!(parse["id"], Value::Null, "{parse}");
    // bytes that are not UTF-8 at all
    let stdin = client.stdin.as_mut().unwrap();
    stdin.write_all(&[0xff, 0xfe, b'{', b'\n']).unwrap();
    stdin.flush().unwrap();
    client.wait_for("the second parse error", |m| m["error"]["code"] == -32700 && m != &parse);
    let unknown = client.request("session/fly", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let malformed = client.request("initialize", json!({"protocolVersion": "one"}));
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");
    assert!(malformed["error"]["data"].as_str().unwrap().contains("protocolVersion"), "{malformed}");
    client.initialize(true);
    let relative = client.request("session/new", json!({"cwd": "relative/folder", "mcpServers": []}));
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let no_session = client.request("session/prompt", Client::prompt_request("tokamak-nope", "hello"));
    assert_eq!(no_session["error"]["code"], -32002, "{no_session}");
    // an unknown notification is dropped; MCP servers are accepted and said to be unused
    client.notify("session/wave", json!({}));
    let with_mcp = client.request(
        "session/new",
        json!({"cwd": root, "mcpServers": [{"name": "files", "command": "/bin/true", "args": [], "env": []}]}),
    );
    assert!(with_mcp["result"]["sessionId"].is_string(), "{with_mcp}");
    assert!(client.end().is_some_and(|s| s.success()));
}

/// A question the editor never answers, a second prompt while the first runs, and a cancel:
/// the second is refused, the cancel ends the first `cancelled`, nothing is changed.
#[test]
fn a_cancel_ends_a_prompt_waiting_on_a_question() {
    let (_dir, root) = python_project();
    let model = ModelServer::start(PYTHON.script());
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.permit = Permit::Never;
    client.initialize(true);
    let session = client.new_session(&root);
    let before = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    let first = client.ask("session/prompt", Client::prompt_request(&session, GOAL));
    client.wait_for("the question", |m| m["method"] == "session/request_permission");
    let second = client.request("session/prompt", Client::prompt_request(&session, "something else"));
    assert_eq!(second["error"]["code"], -32001, "{second}");
    assert!(second["error"]["message"].as_str().unwrap().contains("already running"), "{second}");
    client.notify("session/cancel", acp::CancelNotification::new(session.clone()));
    // the editor answers the pending question cancelled, as the protocol says it must
    let question = client.unanswered.pop().unwrap();
    client.send(
        &json!({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {"outcome": "cancelled"}}}),
    );
    let answer = client.answer_of(first);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert_eq!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap(), before, "nothing changed");
    assert!(client.requests("fs/write_text_file").is_empty());
    // the session takes the next prompt; its tool calls are new ones, not the first prompt's
    let next = client.ask("session/prompt", Client::prompt_request(&session, "and now?"));
    let next = client.answer_of(next);
    assert!(next.get("result").is_some(), "{next}");
    let ids: Vec<String> =
        client.updates("tool_call").iter().map(|c| c["toolCallId"].as_str().unwrap().to_string()).collect();
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "tool call ids repeat: {ids:?}");
    assert!(client.end().is_some());
}

/// A real ACP client nobody here wrote: acpx (npm), headless, runs the seed scenario through
/// `tokamak acp` — approving everything (the files change, through its file system), then
/// denying everything, its file reads too (nothing changes, the disk's text is read instead,
/// and the turn still ends cleanly).
#[test]
fn acpx_runs_the_scenario_approving_and_denying() {
    if !support::require_tools(&["acpx", "pytest", "ruff"]) {
        return;
    }
    for (policy, changes) in [("--approve-all", true), ("--deny-all", false)] {
        let (_dir, root) = python_project();
        let before = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
        let model = ModelServer::start(PYTHON.script());
        let user = user_for(&PYTHON, &root, &model);
        // acpx starts the agent from a command line of its own; its state goes in a home of
        // the test's
        let home = tempfile::tempdir().unwrap();
        let agent = home.path().join("tokamak-acp");
        std::fs::write(&agent, format!("#!/bin/sh\nexec '{}' acp\n", env!("CARGO_BIN_EXE_tokamak"))).unwrap();
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let started = Instant::now();
        let output = Command::new(support::tools_dir().join("node/node_modules/.bin/acpx"))
            .args(["--agent", &agent.display().to_string(), "--cwd", &root.display().to_string()])
            .args([policy, "--format", "json", "--timeout", "120", "exec", GOAL])
            .envs(user.env())
            .envs(support::tool_env())
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .expect("run acpx");
        eprintln!("acpx {policy}: {:?}", started.elapsed());
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // acpx's exit codes: 0 done, 5 done with a permission denied
        let code = if changes { 0 } else { 5 };
        assert_eq!(output.status.code(), Some(code), "{policy}: {:?}\n{stdout}\n{stderr}", output.status);
        let messages: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let ended = messages.iter().find(|m| m["result"]["stopReason"].is_string());
        assert_eq!(ended.map(|m| m["result"]["stopReason"].clone()), Some(json!("end_turn")), "{stdout}");
        let kinds: Vec<&str> = messages
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "tool_call")
            .filter_map(|m| m["params"]["update"]["kind"].as_str())
            .collect();
        assert!(messages.iter().any(|m| m["params"]["update"]["sessionUpdate"] == "plan"), "{stdout}");
        let asked = messages.iter().filter(|m| m["method"] == "session/request_permission").count();
        let source = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
        // acpx offers its terminal: the tests run there
        let terminals: Vec<&Value> = messages.iter().filter(|m| m["method"] == "terminal/create").collect();
        let checks: Vec<&str> = messages
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "tool_call")
            .filter_map(|m| m["params"]["update"]["title"].as_str())
            .filter(|t| t.starts_with("Checks"))
            .collect();
        let said: String = messages
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
            .collect();
        let last_plan = messages
            .iter()
            .rfind(|m| m["params"]["update"]["sessionUpdate"] == "plan")
            .map(|m| m["params"]["update"]["entries"].clone())
            .unwrap_or_default();
        if changes {
            assert_eq!(kinds.iter().filter(|k| **k == "edit").count(), 2, "{policy}: {kinds:?}");
            assert!(!terminals.is_empty(), "{policy}: {stdout}");
            assert!(
                !checks.is_empty() && checks.iter().all(|c| c.ends_with("the tests pass")),
                "{policy}: {checks:?}"
            );
            assert!(source.contains("def validate_email"), "{policy}: {source}");
            assert!(
                std::fs::read_to_string(root.join(PYTHON.tests)).unwrap().contains("def test_validate_email")
            );
            assert!(said.contains("all 2 step(s) done"), "{policy}: {said}");
        } else {
            // the first step's only change was denied: it is rejected, not done, and the step
            // built on it never runs; nothing is checked or tested, since nothing changed
            assert_eq!(kinds.iter().filter(|k| **k == "edit").count(), 1, "{policy}: {kinds:?}");
            assert_eq!(asked, 1, "{policy}: the edit asked and denied: {stdout}");
            assert!(terminals.is_empty() && checks.is_empty(), "{policy}: {checks:?}");
            assert_eq!(source, before, "{policy}: nothing changed");
            assert!(said.contains("0 of 2 step(s) done; step 1 ("), "{policy}: {said}");
            assert!(said.contains(") rejected: nothing changed: user.py rejected"), "{policy}: {said}");
            assert!(!said.contains("all 2 step(s) done"), "{policy}: {said}");
            let first = last_plan[0]["content"].as_str().unwrap_or_default();
            assert!(first.starts_with("✗ ") && first.contains("(rejected: "), "{policy}: {last_plan}");
            let second = last_plan[1]["content"].as_str().unwrap_or_default();
            assert!(second.contains("(failed: not run: it depends on step 1"), "{policy}: {last_plan}");
        }
    }
}

/// Sessions outlive the connection: listed with their title, loaded (their updates replayed
/// before the answer), resumed (no replay), closed; unknown or unsafe ids are refused.
#[test]
fn sessions_are_listed_loaded_resumed_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let user = UserDirs::trusting(&[&root]);
    let env = user.env();
    let mut first = Client::start_env(&env);
    first.initialize(true);
    let id = first.new_session(&root);
    // the prompt as the user wrote it: its text and a file it links
    let link = acp::ContentBlock::ResourceLink(acp::ResourceLink::new("notes", "file:///notes.md"));
    let prompt = acp::PromptRequest::new(id.clone(), vec!["/status".into(), link]);
    let answer = first.request("session/prompt", prompt);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let said = text_of(&first.updates("agent_message_chunk"));
    assert!(said.contains("Approval: medium"), "{said}");
    assert!(first.end().is_some_and(|s| s.success()));

    let mut second = Client::start_env(&env);
    let init = second.initialize(true);
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    let sessions = &init["agentCapabilities"]["sessionCapabilities"];
    assert!(
        sessions["list"].is_object() && sessions["resume"].is_object() && sessions["close"].is_object(),
        "{init}"
    );
    let listed = second.request("session/list", acp::ListSessionsRequest::new().cwd(root.clone()));
    let listed: acp::ListSessionsResponse = serde_json::from_value(listed["result"].clone()).unwrap();
    assert_eq!(listed.sessions.len(), 1, "{listed:?}");
    assert_eq!(&*listed.sessions[0].session_id.0, id.as_str());
    assert_eq!(listed.sessions[0].title.as_deref(), Some("/status"));
    // loaded: the prompt and the answer replayed before the answer, then the commands
    let load = second.ask("session/load", acp::LoadSessionRequest::new(id.clone(), root.clone()));
    let loaded = second.answer_of(load);
    assert!(loaded.get("result").is_some(), "{loaded}");
    let at = second.seen.iter().position(|m| m["id"] == load && m.get("result").is_some()).unwrap();
    let replayed: Vec<&Value> =
        second.seen[..at].iter().filter(|m| m["method"] == "session/update").collect();
    let kinds: Vec<&str> =
        replayed.iter().map(|m| m["params"]["update"]["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(kinds[..2], ["user_message_chunk", "user_message_chunk"], "{kinds:?}");
    // the blocks the user sent, not Tokamak's reading of them
    assert_eq!(replayed[0]["params"]["update"]["content"], json!({"type": "text", "text": "/status"}));
    assert_eq!(replayed[1]["params"]["update"]["content"]["type"], "resource_link", "{:?}", replayed[1]);
    assert!(kinds.contains(&"agent_message_chunk"), "{kinds:?}");
    assert!(replayed.iter().all(|m| m["params"]["sessionId"] == id.as_str()));
    second
        .wait_for("the commands", |m| m["params"]["update"]["sessionUpdate"] == "available_commands_update");
    // resumed: no replay
    let before = second.updates("agent_message_chunk").len();
    let resumed = second.request("session/resume", acp::ResumeSessionRequest::new(id.clone(), root.clone()));
    assert!(resumed.get("result").is_some(), "{resumed}");
    assert_eq!(second.updates("agent_message_chunk").len(), before);
    // closed: gone from this connection, still kept
    let closed = second.request("session/close", acp::CloseSessionRequest::new(id.clone()));
    assert!(closed.get("result").is_some(), "{closed}");
    let gone = second.request("session/prompt", Client::prompt_request(&id, "/status"));
    assert_eq!(gone["error"]["code"], -32002, "{gone}");
    for unknown in ["tokamak-nope", "../../etc/passwd"] {
        let refused =
            second.request("session/load", acp::LoadSessionRequest::new(unknown.to_string(), root.clone()));
        assert_eq!(refused["error"]["code"], -32002, "{refused}");
    }
    assert!(second.end().is_some_and(|s| s.success()));
}

/// The pickers: the role (`mode`) and the model (`model`) as `configOptions`, the roles also as
/// the legacy `modes`; a picked profile's model is the one the run asks.
#[test]
fn the_pickers_choose_the_role_and_the_model() {
    let (_dir, root) = python_project();
    let model = ModelServer::start(PYTHON.script());
    let toml = format!(
        "\n[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[profiles.fast]\nmodel = \"fast-one\"\n\n[checkers]\nenable = []\n",
        model.url()
    );
    let mut client = Client::start(UserDirs::trusting_with(&[&root], &toml), &[]);
    client.initialize(true);
    let answer = client.request("session/new", acp::NewSessionRequest::new(root.clone()));
    let created: acp::NewSessionResponse = serde_json::from_value(answer["result"].clone()).unwrap();
    let session = created.session_id.0.to_string();
    let options = serde_json::to_value(created.config_options.unwrap()).unwrap();
    assert_eq!(options[0]["id"], "mode", "{options}");
    assert_eq!(options[0]["category"], "mode");
    assert_eq!(options[0]["currentValue"], "auto");
    let roles: Vec<&str> =
        options[0]["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap()).collect();
    assert!(roles.contains(&"coder") && roles.contains(&"reviewer"), "{roles:?}");
    assert_eq!(options[1]["category"], "model");
    let models: Vec<&str> =
        options[1]["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap()).collect();
    assert_eq!(models, ["default", "fast"]);
    let modes = created.modes.unwrap();
    assert_eq!(&*modes.current_mode_id.0, "auto");
    assert_eq!(modes.available_modes.len(), roles.len());
    // set: the answer is every option as it is now; a value that is not offered is refused
    let set = client.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "fast"}),
    );
    assert_eq!(set["result"]["configOptions"][1]["currentValue"], "fast", "{set}");
    let wrong = client.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "slow"}),
    );
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    let mode = client.request("session/set_mode", acp::SetSessionModeRequest::new(session.clone(), "coder"));
    assert!(mode.get("result").is_some(), "{mode}");
    let answer = client.request("session/prompt", Client::prompt_request(&session, GOAL));
    assert!(answer["result"]["stopReason"].is_string(), "{answer}");
    let asked: Vec<String> =
        model.requests().iter().map(|r| r.body["model"].as_str().unwrap_or_default().to_string()).collect();
    assert!(!asked.is_empty() && asked.iter().all(|m| m == "fast-one"), "{asked:?}");
    assert!(client.end().is_some());
}

/// Each edit's tool call says what the checkers (ruff here) found on the text it wrote: an
/// error that appeared, then the same error gone after the next edit (SPEC A3).
#[test]
fn each_edit_says_which_errors_appeared_and_went_away() {
    if !support::require_tools(&["ruff"]) {
        return;
    }
    let (_dir, root) = python_project();
    let broken =
        "        return self.name.title()\n\n    def initials(self) -> str:\n        return missing_name\n";
    let model = ModelServer::start(vec![
        openai_chat("1. Add an initials method to User in user.py\n"),
        // the model thinks, says what it does, and calls the tool
        openai_tool_calls(
            "<think>initials come from the name</think>Adding initials.",
            &[(
                "edit",
                json!({"path": "user.py", "blocks": block("        return self.name.title()\n", broken)}),
            )],
        ),
        call(
            "edit",
            json!({"path": "user.py", "blocks": block("        return missing_name\n", "        return self.name[:1]\n")}),
        ),
        call("done", json!({"summary": "initials are there"})),
    ]);
    let toml = format!(
        "approval = \"low\"\n\n[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[checkers]\nenable = [\"ruff\"]\n",
        model.url()
    );
    let mut client = Client::start(UserDirs::trusting_with(&[&root], &toml), &[]);
    client.initialize(true);
    let session = client.new_session(&root);
    let answer = client.request("session/prompt", Client::prompt_request(&session, "add initials"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let edits: Vec<Value> = client.updates("tool_call").into_iter().filter(|c| c["kind"] == "edit").collect();
    assert_eq!(edits.len(), 2, "{edits:?}");
    let report = |call: &Value| -> String {
        let update = client
            .updates("tool_call_update")
            .into_iter()
            .find(|u| u["toolCallId"] == call["toolCallId"])
            .unwrap();
        update["content"].as_array().unwrap().iter().filter_map(|c| c["content"]["text"].as_str()).collect()
    };
    let first = report(&edits[0]);
    assert!(
        first.contains("new in user.py: ") && first.contains("(ruff F821): Undefined name `missing_name`"),
        "{first}"
    );
    let second = report(&edits[1]);
    assert!(
        second.contains("gone from user.py: ")
            && second.contains("(ruff F821): Undefined name `missing_name`"),
        "{second}"
    );
    assert!(client.requests("session/request_permission").is_empty(), "approval = low asks nothing");
    // its thought and its words, each as its own kind of chunk
    let thought = text_of(&client.updates("agent_thought_chunk"));
    assert!(thought.contains("initials come from the name"), "{thought}");
    let said = text_of(&client.updates("agent_message_chunk"));
    assert!(said.contains("Adding initials.") && !said.contains("<think>"), "{said}");
    assert!(client.end().is_some());
}

/// An editor that refuses a write: the edit's tool call fails with the editor's words, the
/// model is told, nothing is written anywhere, and the turn ends cleanly.
#[test]
fn a_write_the_editor_refuses_changes_nothing() {
    let (_dir, root) = python_project();
    let before = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    let model = ModelServer::start(vec![
        openai_chat("1. Add a validate_email method to User in user.py\n"),
        call("edit", json!({"path": "user.py", "blocks": block(PYTHON.method.0, PYTHON.method.1)})),
        call("done", json!({"summary": "the editor would not take it"})),
    ]);
    let toml = format!(
        "approval = \"low\"\n\n[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[checkers]\nenable = []\n",
        model.url()
    );
    let mut client = Client::start(UserDirs::trusting_with(&[&root], &toml), &[]);
    client.refuse_writes = true;
    client.initialize(true);
    let session = client.new_session(&root);
    let answer = client.request("session/prompt", Client::prompt_request(&session, "validate emails"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let edit = client.updates("tool_call").into_iter().find(|c| c["kind"] == "edit").unwrap();
    let result = client
        .updates("tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == edit["toolCallId"])
        .unwrap();
    assert_eq!(result["status"], "failed", "{result}");
    let told = support::replies::told(&model).join("\n");
    assert!(told.contains("the buffer is read-only"), "the model is told why: {told}");
    assert_eq!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap(), before);
    assert_eq!(client.requests("fs/write_text_file").len(), 1);
    assert!(client.end().is_some());
}

/// The official ACP Python SDK's client side (PyPI `agent-client-protocol`, which checks every
/// message against its own models) runs the scenario, lists and loads the session and sets a
/// picker: `tests/acp_sdk_client.py`.
#[test]
fn the_python_sdk_runs_the_scenario() {
    if !support::require_tools(&["pytest", "ruff"]) {
        return;
    }
    let python = support::tools_dir().join("venv/bin/python");
    let has_sdk = Command::new(&python).args(["-c", "import acp"]).status().is_ok_and(|s| s.success());
    if !has_sdk {
        let reason = "the ACP Python SDK is not in .tools/venv: run `bash scripts/install-tools`";
        support::skip(reason);
        return;
    }
    let (_dir, root) = python_project();
    let model = ModelServer::start(PYTHON.script());
    // the follow-up question with its image
    model.push(openai_chat("It is red."));
    let user = user_for(&PYTHON, &root, &model);
    let output = Command::new(&python)
        .arg(support::repo_root().join("tests/acp_sdk_client.py"))
        .args([env!("CARGO_BIN_EXE_tokamak"), &root.display().to_string(), GOAL])
        .envs(user.env())
        .envs(support::tool_env())
        .stdin(Stdio::null())
        .output()
        .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|err| panic!("{err}: {stdout}\n{stderr}"));
    assert_eq!(seen["protocol"], 1, "{seen}");
    assert_eq!(seen["stop_reason"], "end_turn", "{seen}");
    let kinds: Vec<&str> = seen["kinds"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for kind in ["available_commands_update", "plan", "tool_call", "tool_call_update", "agent_message_chunk"]
    {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    assert_eq!(seen["tool_kinds"].as_array().unwrap().iter().filter(|k| *k == "edit").count(), 2, "{seen}");
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 2, "{seen}");
    assert_eq!(
        seen["permissions"][0]["kinds"],
        json!(["allow_once", "allow_always", "reject_once", "reject_always"])
    );
    assert!(seen["writes"].as_array().unwrap().len() >= 2, "{seen}");
    assert_eq!(seen["sessions"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(seen["replayed"][0], "user_message_chunk", "{seen}");
    assert!(seen["replayed"].as_array().unwrap().iter().any(|k| k == "plan"), "{seen}");
    assert_eq!(seen["options"], json!(["mode", "model", "approval"]));
    assert_eq!(seen["picked"], json!(["auto", "default", "default"]));
    // the approval switched mid-session, then a question with an image, in the same conversation
    assert_eq!(seen["switched"], json!(["auto", "default", "accept_edits"]), "{seen}");
    assert_eq!(seen["image"], true, "{seen}");
    assert_eq!(seen["follow_up"], "end_turn", "{seen}");
    let asked = model.requests().last().map(|r| r.body.to_string()).unwrap_or_default();
    assert!(
        asked.contains("data:image/png;base64,iVBOR") && asked.contains("The conversation so far"),
        "{asked}"
    );
    assert!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap().contains("def validate_email"));
}

/// The MCP servers an editor gives in `session/new` (stdio, and the older SSE) are started;
/// the model calls their tools, each asked through `session/request_permission` (approval is
/// medium and nothing allows them), shown as a tool call, and its result is in the next request.
#[test]
fn mcp_servers_from_session_new_are_started_asked_about_and_called() {
    use crate::mcp::{calls, http_server, server_script};
    use support::replies::{action, done, told};
    let (_dir, root) = python_project();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("calls.jsonl");
    let (port, _server) = http_server("sse", &log);
    let model = ModelServer::start(vec![
        openai_chat("1. Look up amount and refund in the glossaries\n"),
        action(json!({"action": "mcp__glossary__lookup", "term": "amount"})),
        action(json!({"action": "mcp__legacy__lookup", "term": "refund"})),
        done("both looked up"),
    ]);
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.permit = Permit::AllowOnce;
    let init = client.initialize(true);
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"], json!({"http": true, "sse": true}), "{init}");
    let servers = json!([
        {"name": "glossary", "command": "python3", "args": [server_script(), "stdio"], "env": [{"name": "MCP_LOG", "value": log}]},
        {"type": "sse", "name": "legacy", "url": format!("http://127.0.0.1:{port}/sse"), "headers": []}
    ]);
    let answer = client.request("session/new", json!({"cwd": root, "mcpServers": servers}));
    let session = answer["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string();
    let answer =
        client.request("session/prompt", Client::prompt_request(&session, "Look up amount and refund"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let told = told(&model);
    assert!(told[0].contains("GLOSSARY[amount]") && told[1].contains("GLOSSARY[refund]"), "{told:?}");
    let transports: Vec<String> =
        calls(&log).iter().map(|c| c["transport"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(transports, ["stdio", "sse"]);
    let asked = client.requests("session/request_permission");
    assert_eq!(asked.len(), 2, "each call asked: {asked:?}");
    let shown = asked[0]["params"]["toolCall"]["content"].to_string();
    assert!(
        shown.contains("call the tool lookup of the MCP server glossary with {\\\"term\\\":\\\"amount\\\"}"),
        "{}",
        asked[0]
    );
    assert_eq!(asked[0]["params"]["options"][1]["name"], "Always allow mcp__glossary__lookup");
    // of ACP's kind `other` (the default, so not written)
    let calls_shown: Vec<Value> = client
        .updates("tool_call")
        .into_iter()
        .filter(|u| u["title"].as_str().unwrap_or_default().starts_with("mcp__") && u.get("kind").is_none())
        .collect();
    assert_eq!(calls_shown.len(), 2, "{:?}", client.updates("tool_call"));
    assert!(
        calls_shown[1]["title"].as_str().unwrap_or_default().starts_with("mcp__legacy__lookup"),
        "{calls_shown:?}"
    );
    assert!(client.end().is_some());
}

/// A session remembers (issue 41): "Remember the codeword BANANA-42", then "What was the
/// codeword?" — the follow-up's requests carry the first and how it ended; after a restart and
/// `session/load` too; `/compact` folds the conversation into one line per request.
#[test]
fn a_follow_up_remembers_the_conversation_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("notes.py"), "x = 1\n").unwrap();
    let model = ModelServer::start(vec![
        openai_chat("1. Remember the codeword\n"),
        call("done", json!({"summary": "The codeword is BANANA-42; I will remember it."})),
        // the follow-ups are questions: answered by one look, no plan
        call("done", json!({"summary": "The codeword was BANANA-42."})),
        call("done", json!({"summary": "BANANA-42."})),
    ]);
    let user = scripted_user(&root, &model);
    let env = user.env();
    let mut first = Client::start_env(&env);
    first.initialize(true);
    let id = first.new_session(&root);
    let answer =
        first.request("session/prompt", Client::prompt_request(&id, "Remember the codeword BANANA-42"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let tokens_fresh = model.requests()[0].body["messages"].to_string().len();
    let answer = first.request("session/prompt", Client::prompt_request(&id, "What was the codeword?"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(model.requests().len(), 3, "a question is not planned");
    let plan = model.requests()[2].body["messages"].to_string();
    assert!(
        plan.contains("The conversation so far in this session")
            && plan.contains("The user asked: Remember the codeword BANANA-42")
            && plan.contains("The codeword is BANANA-42; I will remember it."),
        "{plan}"
    );
    assert!(plan.contains("You are in the context_navigation mode"), "a question only looks: {plan}");
    let content = model.requests()[2].body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
    let start = content.find("The conversation so far").unwrap_or(0);
    let end = content[start..].find("\nThe workspace has").map_or(content.len(), |at| start + at);
    eprintln!(
        "the conversation adds {} bytes (~{} tokens) to a follow-up's request (the fresh task's plan request: {tokens_fresh} bytes)",
        end - start,
        (end - start) / 4
    );
    assert!(first.end().is_some());

    // a restart: the loaded session remembers both
    let mut second = Client::start_env(&env);
    second.initialize(true);
    let loaded = second.request("session/load", acp::LoadSessionRequest::new(id.clone(), root.clone()));
    assert!(loaded.get("result").is_some(), "{loaded}");
    let compacted = second.request("session/prompt", Client::prompt_request(&id, "/compact"));
    assert_eq!(compacted["result"]["stopReason"], "end_turn", "{compacted}");
    let said = text_of(&second.updates("agent_message_chunk"));
    assert!(said.contains("Compacted the 2 earlier requests into one"), "{said}");
    let answer = second.request("session/prompt", Client::prompt_request(&id, "And once more?"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let plan = model.requests()[3].body["messages"].to_string();
    assert!(
        plan.contains("(2 earlier requests, compacted)")
            && plan.contains("Remember the codeword BANANA-42 →")
            && plan.contains("What was the codeword? →"),
        "{plan}"
    );
    assert!(second.end().is_some());
}

/// One run per folder across sessions: while one session's prompt runs, another session's in
/// the same folder ends at once saying so, and its /rollback is refused; a file as cwd and an
/// oversized prompt are refused with a sentence.
#[test]
fn two_sessions_on_one_folder_run_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("notes.py"), "x = 1\n").unwrap();
    let model = ModelServer::start(vec![
        Scripted::Delayed(Duration::from_secs(3), Box::new(openai_chat("1. Look at notes.py\n"))),
        call("done", json!({"summary": "looked"})),
    ]);
    let mut client = Client::start(scripted_user(&root, &model), &[]);
    client.initialize(true);
    let first = client.new_session(&root);
    let second = client.new_session(&root);
    let running = client.ask("session/prompt", Client::prompt_request(&first, "Look at notes.py"));
    // the first is planning (its model answers in 3 s)
    client.wait_for("the first run's start", |m| {
        m["params"]["update"]["sessionUpdate"] == "plan"
            || m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
    });
    let refused = client.request("session/prompt", Client::prompt_request(&second, "Look at notes.py too"));
    assert_eq!(refused["result"]["stopReason"], "end_turn", "{refused}");
    let said: String = client
        .seen
        .iter()
        .filter(|m| m["params"]["sessionId"] == second.as_str())
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(said.contains("another Tokamak run is working in this folder"), "{said}");
    let rollback = client.request("session/prompt", Client::prompt_request(&second, "/rollback"));
    assert!(rollback.get("result").is_some());
    let said: String = client
        .seen
        .iter()
        .filter(|m| m["params"]["sessionId"] == second.as_str())
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(said.contains("/rollback did not work: another Tokamak run is working in this folder"), "{said}");
    let done = client.answer_of(running);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(model.requests().len(), 2, "the second session's prompt never reached the model");

    // a file is not a folder; a prompt of 600 KiB is too large
    let file = client.request("session/new", acp::NewSessionRequest::new(root.join("notes.py")));
    assert!(file["error"].to_string().contains("cwd must be a folder, and"), "{file}");
    let huge = client.request("session/prompt", Client::prompt_request(&first, &"x".repeat(600 * 1024)));
    assert!(huge["error"].to_string().contains("Tokamak takes at most 512 KiB"), "{huge}");
    assert_eq!(model.requests().len(), 2);
    assert!(client.end().is_some());
}

/// The approval picker (issue 41: the permission modes Claude Code's and opencode's ACP agents
/// offer): "accept edits" carries the scenario out without one question; "plan only" shows the
/// plan and changes nothing.
#[test]
fn the_approval_picker_accepts_edits_or_plans_only() {
    let (_dir, root) = python_project();
    let before = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    let model = ModelServer::start(PYTHON.script());
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.initialize(true);
    let answer = client.request("session/new", acp::NewSessionRequest::new(root.clone()));
    let session = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let options = &answer["result"]["configOptions"];
    assert_eq!(options[2]["id"], "approval", "{options}");
    let values: Vec<&str> =
        options[2]["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["default", "accept_edits", "ask_everything", "plan"]);

    let set = client.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "approval", "value": "plan"}),
    );
    assert_eq!(set["result"]["configOptions"][2]["currentValue"], "plan", "{set}");
    let answer = client.request("session/prompt", Client::prompt_request(&session, GOAL));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(model.requests().len(), 1, "planned only");
    assert_eq!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap(), before);

    // the same model script from its start, accepting edits
    let model = ModelServer::start(PYTHON.script());
    let mut client = Client::start(user_for(&PYTHON, &root, &model), &[]);
    client.permit = Permit::Never;
    client.initialize(true);
    let session = client.new_session(&root);
    let set = client.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "approval", "value": "accept_edits"}),
    );
    assert!(set.get("result").is_some(), "{set}");
    let answer = client.request("session/prompt", Client::prompt_request(&session, GOAL));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(client.requests("session/request_permission").is_empty(), "no question: {:?}", client.unanswered);
    assert_ne!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap(), before, "the edits landed");
    let wrong = client.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "approval", "value": "yolo"}),
    );
    assert!(wrong["error"].to_string().contains("approval takes default, accept_edits"), "{wrong}");
    assert!(client.end().is_some());
}

/// The model picker lists what the server serves (its `/v1/models`): picked, a prompt's requests
/// name that model.
#[test]
fn the_model_picker_lists_what_the_server_serves() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("notes.py"), "x = 1\n").unwrap();
    let model = ModelServer::start(vec![call("done", json!({"summary": "It sets x to 1."}))]);
    model.describe(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "qwen2.5-coder-7b"}, {"id": "qwen2.5-coder-32b"}]}),
    );
    let mut client = Client::start(scripted_user(&root, &model), &[]);
    client.initialize(true);
    let session = client.new_session(&root);
    let update = client
        .wait_for("the served models", |m| m["params"]["update"]["sessionUpdate"] == "config_option_update");
    let values: Vec<String> = update["params"]["update"]["configOptions"][1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(values, ["default", "served:qwen2.5-coder-7b", "served:qwen2.5-coder-32b"], "{update}");
    let set = client.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "served:qwen2.5-coder-32b"}),
    );
    assert_eq!(set["result"]["configOptions"][1]["currentValue"], "served:qwen2.5-coder-32b", "{set}");
    let answer = client.request("session/prompt", Client::prompt_request(&session, "What does notes.py do?"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let asked: Vec<String> =
        model.requests().iter().map(|r| r.body["model"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(asked, ["qwen2.5-coder-32b"]);
    assert!(client.end().is_some());
}

/// Images in prompts (issue 41): the agent says it takes them, and an image block reaches the
/// model beside the text — as an OpenAI-compatible server's `image_url` part and as
/// Anthropic's base64 `image` block; an oversized one is refused with a sentence.
#[test]
fn an_image_in_a_prompt_reaches_openai_compatible_and_anthropic_models() {
    // a 1×1 red PNG
    const PNG: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    let prompt = |session: &str| {
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "What color is this image?"},
            {"type": "image", "mimeType": "image/png", "data": PNG},
        ]})
    };
    for provider in ["openai", "anthropic"] {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("notes.py"), "x = 1\n").unwrap();
        let answer = if provider == "openai" {
            openai_chat("It is red.")
        } else {
            support::model_server::anthropic_message("It is red.")
        };
        let model = ModelServer::start(vec![answer]);
        let toml = format!(
            "\n[model]\nprovider = {provider:?}\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[checkers]\nenable = []\n",
            model.url()
        );
        let user = UserDirs::trusting_with(&[&root], &toml);
        let mut client = Client::start(user, &[("ANTHROPIC_API_KEY".to_string(), "test-key".to_string())]);
        let init = client.initialize(true);
        assert_eq!(init["agentCapabilities"]["promptCapabilities"]["image"], true, "{init}");
        let id = client.new_session(&root);
        let answer = client.request("session/prompt", prompt(&id));
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{provider}: {answer}");
        let requests = model.requests();
        assert_eq!(requests.len(), 1, "{provider}: a question, answered at once");
        let messages = &requests[0].body["messages"];
        let user_turn = messages
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap_or_else(|| panic!("{provider}: {messages}"));
        let parts = user_turn["content"].as_array().unwrap_or_else(|| panic!("{provider}: {user_turn}"));
        if provider == "openai" {
            assert!(
                parts.iter().any(|p| p["type"] == "image_url"
                    && p["image_url"]["url"] == format!("data:image/png;base64,{PNG}")),
                "{user_turn}"
            );
        } else {
            assert!(
                parts.iter().any(|p| p["type"] == "image"
                    && p["source"] == json!({"type": "base64", "media_type": "image/png", "data": PNG})),
                "{user_turn}"
            );
        }
        assert!(
            parts.iter().any(|p| p["text"].as_str().is_some_and(|t| t.contains("What color is this image?")))
        );
        // an image too large is refused before anything is asked of the model
        let huge = "A".repeat(11 * 1024 * 1024);
        let refused = client.request(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "and this?"}, {"type": "image", "mimeType": "image/png", "data": huge}]}),
        );
        let message = refused["error"]["data"].as_str().unwrap_or_default();
        assert!(message.contains("too large; Tokamak takes images up to"), "{refused}");
        let refused = client.request(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "and this?"}, {"type": "image", "mimeType": "image/svg+xml", "data": PNG}]}),
        );
        let message = refused["error"]["data"].as_str().unwrap_or_default();
        assert!(message.contains("cannot go to the model: PNG, JPEG, GIF or WebP can"), "{refused}");
        assert_eq!(model.requests().len(), 1);
        assert!(client.end().is_some());
    }
}
