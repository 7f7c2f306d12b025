//! `tokamak model check` and the `tokamak.checkModel` command against the scripted model
//! server: what a user runs first when something is off.

use crate::support;

use std::process::Output;

use serde_json::json;
use support::model_server::*;
use support::{LspClient, UserDirs};

const KEY: &str = "sk-live-do-not-print-0123456789";

fn model_check(envs: &[(&str, &str)], args: &[&str]) -> Output {
    model_check_with(None, envs, args)
}

/// `tokamak model check` in a project with `toml` as its `tokamak.toml`, which the user trusts.
fn model_check_with(toml: Option<&str>, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    if let Some(toml) = toml {
        std::fs::write(dir.path().join("tokamak.toml"), toml).unwrap();
    }
    let user = UserDirs::trusting(&[dir.path()]);
    let mut command = user.command(&["model", "check"]);
    command.args(args).current_dir(dir.path());
    for var in ["TOKAMAK_LLM_URL", "TOKAMAK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST"] {
        command.env_remove(var);
    }
    command.envs(envs.iter().copied()).output().expect("run tokamak")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn prints_provider_model_latency_and_tokens() {
    let server = ModelServer::start(vec![openai_chat("ok"), openai_chat_stream(&["o", "k"])]);
    let url = format!("{}/v1", server.url());
    let output =
        model_check(&[("TOKAMAK_LLM_URL", &url), ("TOKAMAK_MODEL", "tiny"), ("OPENAI_API_KEY", KEY)], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let printed = text(&output.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines[0], "provider: openai");
    assert_eq!(lines[1], format!("endpoint: {}/v1/chat/completions", server.url()));
    assert_eq!(lines[2], "model:    tiny (answered as scripted-model)");
    assert!(lines[3].starts_with("latency:  ") && lines[3].ends_with(" ms"), "{printed}");
    assert_eq!(lines[4], "tokens:   21 prompt + 7 completion (reported by the server)");
    assert_eq!(lines[5], "reply:    \"ok\"");
    assert_eq!(server.requests()[0].header("authorization"), None, "a hosted key went to a local server");
    let sent = &server.requests()[0].body;
    assert_eq!((sent["model"].clone(), sent["max_tokens"].clone()), (json!("tiny"), json!(16)));

    let streamed = model_check(&[("TOKAMAK_LLM_URL", &url)], &["--stream"]);
    assert_eq!(streamed.status.code(), Some(0), "{}", text(&streamed.stderr));
    assert!(text(&streamed.stdout).contains("reply:    \"ok\""));
}

#[test]
fn with_nothing_configured_it_says_what_to_set() {
    // nothing may be listening on llama.cpp's port on a test machine
    if std::net::TcpStream::connect("127.0.0.1:8080").is_ok() {
        support::skip("something listens on 127.0.0.1:8080");
        return;
    }
    let output = model_check(&[], &[]);
    assert_eq!(output.status.code(), Some(1));
    let said = text(&output.stderr);
    assert!(said.contains("cannot reach the model at http://127.0.0.1:8080/v1/chat/completions"), "{said}");
    assert!(said.contains("set TOKAMAK_LLM_URL and TOKAMAK_MODEL"), "{said}");
}

#[test]
fn bad_settings_exit_two() {
    let output = model_check(&[("TOKAMAK_LLM_URL", "not a url")], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("is not a URL"), "{}", text(&output.stderr));
}

#[test]
fn the_key_never_reaches_the_output_or_the_debug_log() {
    let echo = json_reply(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "code": "invalid_api_key"}}),
    );
    let server = ModelServer::start(vec![echo]);
    // a local server gets a hosted key only when asked for by name
    let output = model_check_with(
        Some("[model]\napi_key_env = \"OPENAI_API_KEY\"\n"),
        &[("TOKAMAK_LLM_URL", &server.url()), ("OPENAI_API_KEY", KEY), ("TOKAMAK_LOG", "trace")],
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key was sent"
    );
    let everything = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(
        everything.contains("refused the request (401)") && everything.contains("OPENAI_API_KEY"),
        "{everything}"
    );
    assert!(!everything.contains(KEY), "the key leaked: {everything}");
}

#[test]
fn the_editor_can_check_the_model_with_its_own_settings() {
    let server = ModelServer::start(vec![openai_chat("ok")]);
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("tokamak.toml"),
        "[model]\nbase_url = \"http://127.0.0.1:9\"\nmodel = \"from-toml\"\n",
    )
    .unwrap();
    let mut client = LspClient::start();
    // the editor's settings (workspace/configuration) win over tokamak.toml
    client.answer(
        "workspace/configuration",
        json!([{"model": {"base_url": server.url(), "timeout_ms": 5000}}]),
    );
    let uri = support::file_uri(project.path());
    let init = client.request(
        "initialize",
        json!({"capabilities": {"workspace": {"configuration": true}}, "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "p"}]}),
    );
    assert!(init.get("error").is_none(), "{init}");
    client.notify("initialized", json!({}));
    client.wait_for("the configuration request", |m| m["method"] == "workspace/configuration");
    let response = client
        .request("workspace/executeCommand", json!({"command": "tokamak.checkModel", "arguments": [{}]}));
    let result = &response["result"];
    assert_eq!(result["ok"], true, "{response}");
    assert_eq!(result["model"], "from-toml");
    assert_eq!(result["endpoint"], format!("{}/v1/chat/completions", server.url()));
    assert_eq!((result["prompt_tokens"].clone(), result["reply"].clone()), (json!(21), json!("ok")));

    // the user changes the setting: the next check goes to the new server
    let other = ModelServer::start(vec![openai_chat("ok too")]);
    client.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"tokamak": {"model": {"base_url": other.url()}}}}),
    );
    let response = client
        .request("workspace/executeCommand", json!({"command": "tokamak.checkModel", "arguments": [{}]}));
    assert_eq!(response["result"]["reply"], "ok too", "{response}");
    assert_eq!(
        response["result"]["model"], "from-toml",
        "tokamak.toml still applies under the editor's settings"
    );

    // a model that cannot be reached is an answer, not a protocol error
    client.answer("workspace/configuration", json!(null));
    client.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"tokamak": {"model": {"base_url": "http://127.0.0.1:9"}}}}),
    );
    let response = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.checkModel", "arguments": [{"role": "reviewer"}]}),
    );
    assert_eq!(response["result"]["ok"], false, "{response}");
}

#[test]
fn a_model_check_sent_while_the_editor_is_asked_for_its_settings_waits_for_them() {
    let server = ModelServer::start(vec![openai_chat("ok")]);
    let mut client = LspClient::start();
    client.never_answer("workspace/configuration");
    let init = client.request("initialize", json!({"capabilities": {"workspace": {"configuration": true}}}));
    assert!(init.get("error").is_none(), "{init}");
    client.notify("initialized", json!({}));
    // the check goes out before the editor answers; the answer names the model to check
    client.send(&json!({"jsonrpc": "2.0", "id": "check", "method": "workspace/executeCommand",
        "params": {"command": "tokamak.checkModel", "arguments": [{}]}}));
    let question = client.wait_for("the configuration request", |m| m["method"] == "workspace/configuration");
    client.send(
        &json!({"jsonrpc": "2.0", "id": question["id"], "result": [{"model": {"base_url": server.url()}}]}),
    );
    let response = client.wait_for("the check", |m| m["id"] == "check");
    assert_eq!(response["result"]["ok"], true, "{response}");
    assert_eq!(response["result"]["endpoint"], format!("{}/v1/chat/completions", server.url()));
}

/// An untrusted project's `tokamak.toml` asking for another provider (and its key) is not
/// followed: the check goes to the user's own endpoint, as the user's provider, and no key of
/// the user's reaches anyone.
#[test]
fn an_untrusted_project_cannot_choose_the_provider() {
    let server = ModelServer::start(vec![openai_chat("ok")]);
    let url = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tokamak.toml"),
        "[model]\nprovider = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n",
    )
    .unwrap();
    let user = UserDirs::new();
    let mut command = user.command(&["model", "check"]);
    command.current_dir(dir.path());
    for var in ["TOKAMAK_MODEL", "OPENAI_API_KEY", "OLLAMA_HOST"] {
        command.env_remove(var);
    }
    command.env("TOKAMAK_LLM_URL", &url).env("ANTHROPIC_API_KEY", KEY);
    let output = command.output().expect("run tokamak");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let printed = text(&output.stdout);
    assert!(printed.starts_with("provider: openai\n"), "the user's provider, not the project's: {printed}");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions", "{printed}");
    assert_eq!(request.header("x-api-key"), None, "the user's key went nowhere");
    assert_eq!(request.header("authorization"), None);
    assert!(
        text(&output.stderr).contains("model.provider"),
        "the ignored key is named: {}",
        text(&output.stderr)
    );
}
