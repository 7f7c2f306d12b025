//! Bad input over the real stdio connection never takes the server down: every test ends by
//! proving the server still answers.

use crate::support;

use serde_json::{Value, json};
use support::{LspClient, range, summarize, uri};

/// The server answers a request and keeps a document's diagnostics flowing.
fn assert_still_serving(client: &mut LspClient) {
    let status = client.request("workspace/executeCommand", json!({"command": "tokamak.status"}));
    assert!(status["result"]["version"].is_string(), "{status}");
    let file = uri("alive.py");
    client.open(&file, "python", 1, "x = (\n");
    assert_eq!(summarize(&client.diagnostics(&file)).len(), 1);
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": file}}));
    client.diagnostics(&file);
}

#[test]
fn malformed_json_gets_a_parse_error() {
    let mut client = LspClient::initialized(&[]);
    let body = br#"{"jsonrpc":"2.0","id":99,"method":"#;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body);
    client.send_raw(&frame);
    let error = client.wait_for("a parse error", |m| m["error"]["code"] == -32700);
    assert!(error["id"].is_null(), "{error}");
    assert_still_serving(&mut client);
}

#[test]
fn messages_of_the_wrong_shape_get_invalid_request() {
    let mut client = LspClient::initialized(&[]);
    // neither a request nor a response: answered with a null id (its own could be one of the
    // client's pending requests)
    client.send(&json!({"jsonrpc": "2.0", "id": 7, "params": {}}));
    let error = client.wait_for("an invalid-request error", |m| m["error"]["code"] == -32600);
    assert!(error["id"].is_null(), "{error}");
    // a request whose id tower-lsp cannot hold is refused with its id left out too
    client.send(&json!({"jsonrpc": "2.0", "id": 1.5, "method": "tokamak/x"}));
    let error = client.wait_for("an invalid-request error", |m| m["error"]["code"] == -32600);
    assert!(error["id"].is_null(), "{error}");
    client.send(&json!([1, 2, 3]));
    let error = client.wait_for("an error for the batch", |m| m["error"]["code"] == -32600);
    assert!(error["id"].is_null(), "{error}");
    // a response to a request the server never made is ignored
    client.send(&json!({"jsonrpc": "2.0", "id": 12345, "result": {}}));
    assert_still_serving(&mut client);
}

#[test]
fn broken_framing_is_skipped_and_reported() {
    let mut client = LspClient::initialized(&[]);
    client.send_raw(
        b"this is not a header

",
    );
    let error = client.wait_for("a parse error", |m| m["error"]["code"] == -32700);
    let said = error["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("not a message") && said.contains("this is not a header"), "{error}");
    client.send_raw(
        b"Content-Length: many

",
    );
    client.wait_for("a parse error", |m| m["error"]["code"] == -32700);
    let body = "{\"jsonrpc\":\"2.0\",\"id\":\"한\",\"method\":\"shutdown\"}";
    client.send_raw(
        format!(
            "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let response = client.wait_for("the shutdown answer", |m| m["id"] == "한");
    assert!(response["result"].is_null() && response.get("error").is_none(), "{response}");
}

#[test]
fn binary_junk_without_a_line_break_then_a_request_is_answered() {
    let mut client = LspClient::initialized(&[]);
    let body = r#"{"jsonrpc":"2.0","id":"after-junk","method":"workspace/executeCommand","params":{"command":"tokamak.status"}}"#;
    // junk with no line break, straight before the frame, and longer than a header line may be
    for junk_len in [9, 20_000] {
        let mut bytes: Vec<u8> = (0..junk_len).map(|i| [0x00, 0xff, 0xc3, b'C', 0x80, b'o'][i % 6]).collect();
        bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
        client.send_raw(&bytes);
        let error = client.wait_for("the junk reported", |m| m["error"]["code"] == -32700);
        let said = error["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains(&format!("{junk_len} stray bytes")), "{error}");
        let answer = client.wait_for("the request after the junk", |m| m["id"] == "after-junk");
        assert!(answer["result"]["version"].is_string(), "{answer}");
    }
    assert_still_serving(&mut client);
}

#[test]
fn unknown_methods_and_bad_params() {
    let mut client = LspClient::initialized(&[]);
    let response = client.request("tokamak/noSuchThing", json!({}));
    assert_eq!(response["error"]["code"], -32601, "{response}");
    client.notify("tokamak/noSuchNotification", json!({}));
    client.notify("$/somethingOptional", json!({}));
    let response = client.request("textDocument/documentSymbol", json!({"wrong": true}));
    assert_eq!(response["error"]["code"], -32602, "{response}");
    client.notify("textDocument/didOpen", json!({"textDocument": {"uri": 42}}));
    let response = client.request("workspace/executeCommand", json!({"command": "tokamak.nope"}));
    assert!(
        response["error"]["message"].as_str().unwrap_or_default().contains("unknown command"),
        "{response}"
    );
    assert_still_serving(&mut client);
}

#[test]
fn changes_to_documents_that_are_not_open_are_ignored() {
    let mut client = LspClient::initialized(&[]);
    client.change(&uri("ghost.py"), 2, json!([{"range": range((0, 0), (0, 0)), "text": "x"}]));
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri("ghost2.py")}}));
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri("ghost3.py")}}));
    assert_still_serving(&mut client);
    let log = client.stderr();
    assert!(log.contains("ghost.py is not open"), "{log}");
}

#[test]
fn ranges_past_the_end_are_clamped_and_logged() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("clamp.py");
    client.open(&file, "python", 1, "x = 1\n");
    client.diagnostics(&file);
    // a column past the end of line 0, then a line far past the end of the file
    client.change(&file, 2, json!([{"range": range((0, 99), (0, 120)), "text": " + 2"}]));
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    client.change(
        &file,
        3,
        json!([{"range": range((4_000_000_000, 0), (4_000_000_001, 7)), "text": "y = (\n"}]),
    );
    let published = client.diagnostics(&file);
    assert_eq!(summarize(&published).len(), 1, "{published}");
    assert_eq!(published["diagnostics"][0]["range"]["start"]["line"], 1);
    // an end before the start is put in order
    client.change(&file, 4, json!([{"range": range((1, 5), (1, 4)), "text": "()"}]));
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    client.wait_for_stderr("clamped");
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file}}));
    assert_eq!(symbols["result"], json!([]));
    assert_still_serving(&mut client);
}

#[test]
fn binary_text_is_kept_but_not_parsed() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("blob.py");
    let text: String = (0u8..=255).cycle().take(10_000).map(char::from).collect();
    client.open(&file, "python", 1, &text);
    let message = client.wait_for_notification("window/showMessage");
    let said = message["params"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("blob.py") && said.contains("NUL"), "{said}");
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    assert_still_serving(&mut client);
}

#[test]
fn a_twenty_megabyte_file_is_kept_and_editable() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("huge.py");
    let line = "value = compute(alpha, beta, gamma)  # a line of forty-some bytes\n";
    let text = line.repeat(20 * 1024 * 1024 / line.len() + 1);
    client.open(&file, "python", 1, &text);
    let message = client.wait_for_notification("window/showMessage");
    let said = message["params"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("huge.py") && said.contains("syntax.max_file_bytes"), "{said}");
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    client.change(&file, 2, json!([{"range": range((300_000, 0), (300_000, 5)), "text": "VALUE"}]));
    assert_eq!(client.diagnostics(&file)["version"], 2);
    assert_still_serving(&mut client);
}

#[test]
fn a_panic_in_a_handler_is_answered_as_an_error() {
    support::servers_as_processes();
    let mut client = LspClient::start_with_env(&[("TOKAMAK_DEBUG_COMMANDS", "1")]);
    client.initialize(&[]);
    let file = uri("before.py");
    client.open(&file, "python", 1, "x = 1\n");
    client.diagnostics(&file);
    let response = client.request("workspace/executeCommand", json!({"command": "tokamak.debug.panic"}));
    assert_eq!(response["error"]["code"], -32603, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("workspace/executeCommand") && message.contains("asked to panic"), "{message}");
    assert!(client.is_running());
    // state from before the panic is intact
    client.change(&file, 2, json!([{"range": range((0, 4), (0, 5)), "text": "(2"}]));
    assert_eq!(summarize(&client.diagnostics(&file)).len(), 1);
    assert_still_serving(&mut client);
    let _: Value = client.request("shutdown", Value::Null);
}

#[test]
fn the_debug_panic_command_is_refused_without_its_switch() {
    let mut client = LspClient::initialized(&[]);
    let response = client.request("workspace/executeCommand", json!({"command": "tokamak.debug.panic"}));
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_still_serving(&mut client);
}

#[test]
fn end_of_input_without_exit_stops_the_server() {
    support::servers_as_processes();
    let mut client = LspClient::initialized(&[]);
    drop(client.request("shutdown", Value::Null));
    // dropping stdin closes the stream; the server must notice and stop
    let status = client.shutdown_by_closing_stdin();
    assert!(status.is_some(), "the server kept running after its input closed");
}
