//! The handshake over the real stdio connection: encodings, capabilities, shutdown.

mod support;

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
