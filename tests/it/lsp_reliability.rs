//! The server's own protocol loop under load and abuse, over stdio with the real binary: it
//! never waits on the editor where that blocks its input, it ends exactly when the editor
//! says (or goes), its children with it, and its framing recovers from what no well-behaved
//! client sends.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::LspClient;

fn initialize_with_configuration(client: &mut LspClient, root: Option<&std::path::Path>) {
    let root_uri = root.map(support::file_uri);
    let response = client.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": root_uri,
            "capabilities": {"workspace": {"configuration": true}, "general": {"positionEncodings": ["utf-16"]}},
            "initializationOptions": {"checkers": {"enable": []}},
        }),
    );
    assert!(response.get("error").is_none(), "{response}");
}

#[test]
fn a_backlog_of_notifications_before_the_editor_reads_does_not_deadlock() {
    let mut client = LspClient::start();
    initialize_with_configuration(&mut client, None);
    // the editor sends `initialized` and restores a session — 150 messages — before it reads
    // anything, so the server's workspace/configuration request waits behind them all
    let uri = support::uri("session.py");
    let mut frames = Vec::new();
    let frame = |value: serde_json::Value| {
        let body = value.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    };
    frames.extend(frame(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})));
    frames.extend(frame(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "def f():\n    pass\n"}}})));
    for version in 2..150 {
        frames.extend(frame(json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": format!("def f{version}():\n    pass\n")}],
        }})));
    }
    frames.extend(frame(json!({"jsonrpc": "2.0", "id": "symbols", "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": uri}}})));
    client.send_raw(&frames);
    let answer = client.wait_for("the documentSymbol answer", |m| m["id"] == "symbols");
    assert_eq!(answer["result"][0]["name"], "f149", "{answer}");
    assert!(!client.seen(|m| m["method"] == "workspace/configuration").is_empty(), "the server asked");
}

#[test]
fn an_editor_that_never_answers_still_gets_answers() {
    // a panic is written to the process's stderr: only a process shows it
    support::servers_as_processes();
    let mut client = LspClient::start();
    client.never_answer("workspace/configuration");
    initialize_with_configuration(&mut client, None);
    client.notify("initialized", json!({}));
    let uri = support::uri("a.py");
    client.open(&uri, "python", 1, "class A:\n    pass\n");
    let started = Instant::now();
    let answer = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    assert_eq!(answer["result"][0]["name"], "A", "{answer}");
    assert!(started.elapsed() < Duration::from_secs(4), "answered without waiting for the editor");
    // the unanswered question times out in the background, logged once
    client.wait_for_stderr("did not answer workspace/configuration");
    let answer = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    assert!(answer.get("result").is_some(), "{answer}");
    // and the answer that comes after the server gave up on it is dropped, not a crash
    // (tower-lsp 0.20 panics on a response nobody waits for)
    let asked = client.seen(|m| m["method"] == "workspace/configuration");
    assert!(!asked.is_empty());
    for question in asked {
        client.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": [{}]}));
    }
    let answer = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    assert_eq!(answer["result"][0]["name"], "A", "{answer}\n{}", client.stderr());
    assert!(!client.stderr().contains("panicked"), "{}", client.stderr());
}

#[test]
fn exit_ends_the_process_at_once_with_the_status_lsp_asks_for() {
    support::servers_as_processes();
    // after shutdown: 0, with stdin still open
    let mut client = LspClient::initialized(&["utf-16"]);
    let response = client.request("shutdown", serde_json::Value::Null);
    assert!(response.get("error").is_none(), "{response}");
    client.notify("exit", serde_json::Value::Null);
    let status = client.wait_exit(Duration::from_secs(5)).expect("the process ended on exit");
    assert_eq!(status.code(), Some(0));

    // without shutdown: 1
    let mut client = LspClient::initialized(&["utf-16"]);
    client.notify("exit", serde_json::Value::Null);
    let status = client.wait_exit(Duration::from_secs(5)).expect("the process ended on exit");
    assert_eq!(status.code(), Some(1));
}

#[test]
fn when_the_editor_goes_the_process_and_its_children_end() {
    support::servers_as_processes();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("notes.txt"), "hello\n").unwrap();
    let pid_file = root.join("checker.pid");
    // a checker that never finishes, with a child of its own; unconfined, so the pid it writes
    // into the project is this machine's (confined, it could write none, and its own pid
    // namespace would end with the sandbox anyway)
    let options = json!({
        "sandbox": "off",
        "checkers": {
            "enable": ["slow"],
            "timeout_ms": 600000,
            "slow": {
                "command": "sh",
                "args": ["-c", format!("sleep 600 & echo $! > {}; wait", pid_file.display())],
                "files": ["*.txt"],
                "errorformat": "%l:%m",
            },
        },
    });
    let mut client = LspClient::for_project(root, options);
    client.open_file(&root.join("notes.txt"), "plaintext");
    let deadline = Instant::now() + support::TIMEOUT;
    while std::fs::read_to_string(&pid_file).map_or(true, |t| t.trim().is_empty()) {
        assert!(Instant::now() < deadline, "the checker never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // a request to the editor is pending too: a diagnostics wait the checker never satisfies
    client.send(&json!({"jsonrpc": "2.0", "id": "wait", "method": "workspace/executeCommand", "params": {
        "command": "tokamak.diagnostics",
        "arguments": [{"uri": support::file_uri(&root.join("notes.txt")), "wait": true, "timeout_ms": 600000}],
    }}));
    client.close_stdin();
    let status = client.wait_exit(Duration::from_secs(10)).expect("the process ended when stdin closed");
    assert_eq!(status.code(), Some(1), "no shutdown came first");
    // the checker's child is gone with its process group
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid) {
        assert!(Instant::now() < deadline, "the checker's child {pid} outlived the server");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

#[test]
fn framing_recovers_from_absurd_lengths_junk_and_dollar_requests() {
    let mut client = LspClient::initialized(&["utf-16"]);
    // an absurd length: answered at once, and the next message is read
    client.send_raw(b"Content-Length: 1000000000000\r\n\r\n{\"jsonrpc\":\"2.0\"}\r\n");
    let error = client.wait_for("an error for the absurd length", |m| m["error"]["code"] == -32700);
    assert!(error["error"]["message"].as_str().unwrap().contains("larger than the"), "{error}");
    let answer = client
        .request("textDocument/documentSymbol", json!({"textDocument": {"uri": support::uri("none.py")}}));
    assert!(answer.get("result").is_some() || answer.get("error").is_some(), "answered: {answer}");

    // junk right before a valid frame: reported, and the frame still handled
    let body = json!({"jsonrpc": "2.0", "id": "after-junk", "method": "workspace/executeCommand", "params": {"command": "tokamak.status", "arguments": [{}]}}).to_string();
    client.send_raw(format!("garbage!Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    let error = client.wait_for("an error for the junk", |m| m["error"]["code"] == -32700);
    assert!(error["error"]["message"].as_str().unwrap().contains("8 stray bytes"), "{error}");
    let answer = client.wait_for("the request after the junk", |m| m["id"] == "after-junk");
    assert!(answer["result"]["version"].is_string(), "{answer}");

    // a request in the `$/` namespace gets MethodNotFound, as LSP says
    let answer = client.request("$/tokamak/unknown", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let answer =
        client.request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": [{}]}));
    assert!(answer["result"]["version"].is_string(), "{answer}");
}

#[test]
fn keystrokes_in_a_large_file_wait_for_no_parse_and_its_syntax_follows() {
    let mut client = LspClient::initialized(&["utf-16"]);
    let uri = support::uri("big.py");
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 1100 * 1024 {
        text.push_str(&format!("def function_{n}(value):\n    return value + {n}\n\n"));
        n += 1;
    }
    client.open(&uri, "python", 1, &text);
    let lines = text.lines().count() as u32;
    // twenty keystrokes at the end, the last leaving a call unclosed
    let mut version = 1;
    let (mut line, mut column) = (lines, 0);
    for character in "def typed(x):\n    f(".chars() {
        version += 1;
        let at = support::range((line, column), (line, column));
        client.change(&uri, version, json!([{"range": at, "text": character.to_string()}]));
        if character == '\n' {
            (line, column) = (line + 1, 0);
        } else {
            column += 1;
        }
    }
    // the settled syntax is for the last version and finds the unclosed call
    let settled = client.observer_diagnostics(&uri, true);
    assert_eq!(settled["version"], version, "{settled}");
    let syntax: Vec<&serde_json::Value> =
        settled["diagnostics"].as_array().unwrap().iter().filter(|d| d["source"] == "tokamak").collect();
    assert!(!syntax.is_empty(), "the unclosed call is found: {settled}");
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let names: Vec<&str> =
        symbols["result"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names.len(), n + 1, "every function and the typed one");
    assert!(names.contains(&"typed"), "{:?}", &names[names.len() - 3..]);
}

#[test]
fn closing_stdin_while_the_server_waits_on_the_editor_ends_it() {
    support::servers_as_processes();
    let mut client = LspClient::start();
    client.never_answer("workspace/configuration");
    initialize_with_configuration(&mut client, None);
    client.notify("initialized", json!({}));
    client.wait_for("the server's question", |m| m["method"] == "workspace/configuration");
    client.close_stdin();
    let status =
        client.wait_exit(Duration::from_secs(10)).expect("the process ended with its question pending");
    assert_eq!(status.code(), Some(1));
}
