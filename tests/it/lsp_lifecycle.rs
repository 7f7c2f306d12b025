//! The handshake over the real stdio connection: encodings, capabilities, shutdown.

use crate::support;

use serde_json::{Value, json};
use support::LspClient;

#[test]
fn utf8_is_chosen_when_the_client_offers_it() {
    let mut client = LspClient::start();
    let response = client.initialize(&["utf-16", "utf-8"]);
    assert_eq!(response["result"]["capabilities"]["positionEncoding"], "utf-8");
    assert!(client.shutdown().success());
}

#[test]
fn utf16_is_the_fallback() {
    for offered in [&["utf-32", "utf-16"][..], &[][..]] {
        let mut client = LspClient::start();
        let response = client.initialize(offered);
        assert_eq!(response["result"]["capabilities"]["positionEncoding"], "utf-16", "offered {offered:?}");
    }
}

#[test]
fn advertises_what_it_serves() {
    let mut client = LspClient::start();
    let result = client.initialize(&[])["result"].clone();
    let capabilities = &result["capabilities"];
    assert_eq!(result["serverInfo"]["name"], "tokamak");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    // incremental sync (2), open/close, save with text
    assert_eq!(capabilities["textDocumentSync"]["change"], 2);
    assert_eq!(capabilities["textDocumentSync"]["openClose"], true);
    assert_eq!(capabilities["textDocumentSync"]["save"]["includeText"], true);
    assert_eq!(capabilities["documentSymbolProvider"], true);
    assert_eq!(
        capabilities["codeActionProvider"]["codeActionKinds"],
        json!(["quickfix", "source.fixAll.tokamak"])
    );
    let commands = capabilities["executeCommandProvider"]["commands"].as_array().unwrap();
    for command in ["tokamak.status", "tokamak.fix", "tokamak.cancel"] {
        assert!(commands.contains(&json!(command)), "{commands:?}");
    }
}

#[test]
fn status_command_reports_the_session() {
    let mut client = LspClient::initialized(&["utf-8"]);
    client.open(&support::uri("a.py"), "python", 1, "x = 1\n");
    client.diagnostics(&support::uri("a.py"));
    let response =
        client.request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": []}));
    let status = &response["result"];
    assert_eq!(status["positionEncoding"], "utf-8");
    assert_eq!(status["openDocuments"], 1);
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn logs_reach_the_editor_as_log_messages() {
    let mut client = LspClient::initialized(&[]);
    let message = client.wait_for("a window/logMessage", |m| {
        m["method"] == "window/logMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("ready"))
    });
    assert_eq!(message["params"]["type"], 3, "info: {message}");
}

#[test]
fn requests_before_initialize_are_refused_and_shutdown_exits_cleanly() {
    support::servers_as_processes();
    let mut client = LspClient::start();
    let response =
        client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": "file:///x.py"}}));
    assert_eq!(response["error"]["code"], -32002, "server not initialized: {response}");
    client.initialize(&[]);
    let status = client.shutdown();
    assert!(status.success(), "{status:?}");
}

#[test]
fn invalid_initialization_options_are_reported_not_fatal() {
    let mut client = LspClient::start();
    let response = client.request(
        "initialize",
        json!({"capabilities": {}, "initializationOptions": {"syntax": {"max_file_bytes": "lots"}}}),
    );
    assert!(response["result"]["capabilities"].is_object(), "{response}");
    let message = client.wait_for_notification("window/showMessage");
    let text = message["params"]["message"].as_str().unwrap_or_default();
    assert!(text.contains("default settings") && text.contains("invalid type"), "{text}");
    let _: Value = client.request("workspace/executeCommand", json!({"command": "tokamak.status"}));
}

fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn initialize() -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}))
}

/// What follows the answer to `initialize`: open a file with a syntax error, shut down — and
/// then the input ends (an `exit` sent at once could end the process before what came before
/// it is answered; at the end of the input the server gives what is in flight a moment).
fn session(uri: &str) -> Vec<u8> {
    let messages = [
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":
            {"uri": uri, "languageId": "python", "version": 1, "text": "def f(:\n    pass\n"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
    ];
    messages.iter().flat_map(frame).collect()
}

/// Every message in `output`, in order.
fn messages_in(output: &[u8]) -> Vec<Value> {
    let mut reader = std::io::BufReader::new(output);
    std::iter::from_fn(|| support::read_message(&mut reader)).collect()
}

/// Stdin and stdout that are plain files (a script's redirections) are read and written the
/// blocking way: `initialize` answered, and the process ends with the input (status 1, as
/// there was no `shutdown`).
#[test]
fn a_session_over_files_is_served_the_blocking_way() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("input"), initialize()).unwrap();
    let user = support::UserDirs::new();
    let status = user
        .command(&["lsp"])
        .current_dir(dir.path())
        .stdin(std::fs::File::open(dir.path().join("input")).unwrap())
        .stdout(std::fs::File::create(dir.path().join("output")).unwrap())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    let messages = messages_in(&std::fs::read(dir.path().join("output")).unwrap());
    assert!(messages.iter().any(|m| m["id"] == 1 && m["result"]["capabilities"].is_object()), "{messages:?}");
}

/// Stdin and stdout that are one end of a Unix socket pair (how Node, and so VS Code, hands
/// a child its stdio) are polled like pipes: a whole session, and the exit status after
/// `shutdown`.
#[test]
fn a_session_over_a_socket_is_served() {
    use std::io::{BufRead, Write};
    use std::os::fd::OwnedFd;
    let dir = tempfile::tempdir().unwrap();
    let uri = url::Url::from_file_path(dir.path().join("broken.py")).unwrap().to_string();
    let (mut editor, server) = std::os::unix::net::UnixStream::pair().unwrap();
    let server_out = server.try_clone().unwrap();
    let user = support::UserDirs::new();
    let mut child = user
        .command(&["lsp"])
        .current_dir(dir.path())
        .stdin(OwnedFd::from(server))
        .stdout(OwnedFd::from(server_out))
        .env("TOKAMAK_LOG", "tokamak=debug")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    editor.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    editor.write_all(&initialize()).unwrap();
    let mut reader = std::io::BufReader::new(editor.try_clone().unwrap());
    let answer = support::read_message(&mut reader).expect("initialize answered");
    assert!(answer["result"]["capabilities"].is_object(), "{answer}");
    editor.write_all(&session(&uri)).unwrap();
    editor.shutdown(std::net::Shutdown::Write).unwrap();
    // the server closes its end when it exits
    let messages: Vec<Value> = std::iter::from_fn(|| support::read_message(&mut reader)).collect();
    assert!(reader.fill_buf().is_ok_and(|rest| rest.is_empty()), "a message was cut short");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains("fd 0 is a Socket, polled") && log.contains("fd 1 is a Socket, polled"), "{log}");
    assert!(messages.iter().any(|m| m["id"] == 2 && m.get("error").is_none()), "{messages:?}");
    let published = messages
        .iter()
        .find(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri.as_str());
    assert!(
        published.is_some_and(|m| m["params"]["diagnostics"].as_array().is_some_and(|d| !d.is_empty())),
        "{messages:?}"
    );
}
