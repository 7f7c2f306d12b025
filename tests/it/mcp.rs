//! MCP servers' tools, with a real MCP server written for the test (`fixtures/mcp/server.py`,
//! the standard library only) over stdio, streamable HTTP and the older SSE: from the user's
//! settings and from a trusted project's `.mcp.json`; the model calls a tool, the server
//! receives the call, its result reaches the model's next request; an unallowed tool is asked
//! about (and refused with nobody to ask); a server that exits mid-run is said once and its
//! tools withdrawn. Headless with `tokamak run`; ACP's `session/new` servers are in `acp.rs`.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, openai_chat};
use support::replies::{action, done, told};

/// The test's MCP server.
pub fn server_script() -> PathBuf {
    support::repo_root().join("fixtures/mcp/server.py")
}

/// A project with one Python file, trusted when `trusted`, and the user's settings `toml`.
fn project(trusted: bool, toml: &str) -> (tempfile::TempDir, UserDirs) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pay.py"), "def total(cents):\n    return sum(cents)\n").unwrap();
    std::fs::write(dir.path().join("tokamak.toml"), "[checkers]\nenable = []\n").unwrap();
    let user = if trusted { UserDirs::trusting_with(&[dir.path()], toml) } else { UserDirs::new() };
    if !trusted {
        user.write_settings(toml);
    }
    (dir, user)
}

fn run(root: &Path, user: &UserDirs, model: &ModelServer, goal: &str) -> std::process::Output {
    user.command(&["run", goal, "--yes", "--root", &root.display().to_string(), "--format", "json"])
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .output()
        .expect("tokamak runs")
}

/// The calls the server received (its log, one JSON line each).
pub fn calls(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("call").is_some())
        .collect()
}

/// The settings of a stdio server named glossary logging to `log`.
fn stdio_server(log: &Path, allow: &str) -> String {
    format!(
        "\n[mcp.servers.glossary]\ncommand = \"python3\"\nargs = [{:?}, \"stdio\"]\nenv = {{ MCP_LOG = {:?} }}\n{allow}",
        server_script().display().to_string(),
        log.display().to_string()
    )
}

/// The names of the tools offered in request `n`.
fn offered(model: &ModelServer, n: usize) -> Vec<String> {
    let request = &model.requests()[n];
    let system = request.body["messages"][0]["content"].as_str().unwrap_or_default().to_string();
    let mut names: Vec<String> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    // the text protocol lists them in the system message
    for line in system.lines() {
        if let Some(name) = line.strip_prefix("- mcp__").and_then(|l| l.split(':').next()) {
            names.push(format!("mcp__{name}"));
        }
    }
    names.into_iter().filter(|n| n.starts_with("mcp__")).collect()
}

/// A server from the user's settings, allowed: the model calls its tool, the server gets the
/// call, the result is in the model's next request and in the audit log.
#[test]
fn a_stdio_server_from_the_settings_is_called_and_its_result_reaches_the_model() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("calls.jsonl");
    let (dir, user) = project(false, &stdio_server(&log, "allow = true\n"));
    let model = ModelServer::start(vec![
        openai_chat("1. Look up amount in the glossary\n"),
        action(json!({"action": "mcp__glossary__lookup", "term": "amount"})),
        done("amount is integer cents"),
    ]);
    let output = run(dir.path(), &user, &model, "Look up amount in the glossary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(offered(&model, 1).contains(&"mcp__glossary__lookup".to_string()), "{stderr}");
    let told = told(&model);
    assert!(
        told[0].starts_with("Result of mcp__glossary__lookup")
            && told[0].contains("GLOSSARY[amount] = the amount in integer cents"),
        "{told:?}\n{stderr}"
    );
    assert_eq!(
        calls(&log),
        [json!({"call": "lookup", "arguments": {"term": "amount"}, "transport": "stdio"})]
    );
    let actions = support::audit_events(user.cache.path(), "action");
    assert!(
        actions.iter().any(|a| a["action"] == "tool"
            && a["arguments"]["name"] == "mcp__glossary__lookup"
            && a["ok"] == true),
        "{actions:?}"
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

/// Not allowed, with nobody to ask (`--yes` approves changes, not tools): refused, saying how
/// to allow it; the server never gets the call.
#[test]
fn an_unallowed_tool_with_nobody_to_ask_is_refused_and_never_called() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("calls.jsonl");
    let (dir, user) = project(false, &stdio_server(&log, ""));
    let model = ModelServer::start(vec![
        openai_chat("1. Look up amount\n"),
        action(json!({"action": "mcp__glossary__lookup", "term": "amount"})),
        done("could not look it up"),
    ]);
    let output = run(dir.path(), &user, &model, "Look up amount");
    let told = told(&model);
    assert!(
        told[0].contains("need the user's approval, and nobody could be asked")
            && told[0].contains("[mcp.servers.glossary]"),
        "{told:?}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(calls(&log).is_empty());
    let approvals = support::audit_events(user.cache.path(), "approval");
    assert_eq!(approvals[0]["action"], "mcp__glossary__lookup", "{approvals:?}");
    assert_eq!(approvals[0]["answer"], "refused");
}

/// Starts the test's server over HTTP (`mode` http or sse); its port, and the process.
pub fn http_server(mode: &str, log: &Path) -> (u16, Killed) {
    let port_file = log.with_extension("port");
    let server = Killed(
        std::process::Command::new("python3")
            .arg(server_script())
            .args([mode, &port_file.display().to_string()])
            .env("MCP_LOG", log)
            .spawn()
            .expect("python3 starts the server"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(port) = std::fs::read_to_string(&port_file).map(|p| p.trim().parse::<u16>()) {
            return (port.expect("a port"), server);
        }
        assert!(Instant::now() < deadline, "the MCP server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server process, killed (and waited for) when dropped.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A trusted project's `.mcp.json` (Claude Code's file) names an HTTP server, with `${VAR}`
/// in its URL; `[mcp] allow` allows it by Claude Code's name. Untrusted, the file is not
/// read, and that is said.
#[test]
fn a_trusted_projects_mcp_json_server_over_http_is_called() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("calls.jsonl");
    let (port, _server) = http_server("http", &log);
    let mcp_json =
        json!({"mcpServers": {"glossary": {"type": "http", "url": "http://127.0.0.1:${GLOSSARY_PORT}/mcp"}}});
    let script = || {
        vec![
            openai_chat("1. Look up refund\n"),
            action(json!({"tool": "mcp__glossary__lookup", "arguments": {"term": "refund"}})),
            done("looked up"),
        ]
    };
    let (dir, user) = project(true, "\n[mcp]\nallow = [\"mcp__glossary\"]\n");
    std::fs::write(dir.path().join(".mcp.json"), mcp_json.to_string()).unwrap();
    let model = ModelServer::start(script());
    let output = user
        .command(&["run", "Look up refund", "--yes", "--root", &dir.path().display().to_string()])
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env("GLOSSARY_PORT", port.to_string())
        .output()
        .unwrap();
    let told = told(&model);
    assert!(
        told.first().is_some_and(|t| t.contains("GLOSSARY[refund]")),
        "{told:?}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(calls(&log)[0]["transport"], "http");

    // the same project untrusted: no server started, said once
    let (untrusted, user) = project(false, "");
    std::fs::write(untrusted.path().join(".mcp.json"), mcp_json.to_string()).unwrap();
    let model = ModelServer::start(script());
    let output = user
        .command(&["run", "Look up refund", "--yes", "--root", &untrusted.path().display().to_string()])
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env("GLOSSARY_PORT", port.to_string())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("this folder's .mcp.json are not used until it is trusted"), "{stderr}");
    assert!(offered(&model, 1).is_empty());
    assert_eq!(calls(&log).len(), 1, "the untrusted run called nothing");
}

/// A server that exits in the middle of a call: the call ends with one sentence, the server's
/// stop is said once, and its tools are no longer offered.
#[test]
fn a_server_that_exits_mid_run_is_said_once_and_its_tools_withdrawn() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("calls.jsonl");
    let (dir, user) = project(false, &stdio_server(&log, "allow = true\n"));
    let model = ModelServer::start(vec![
        openai_chat("1. Use the glossary\n2. Go on without it\n"),
        action(json!({"action": "mcp__glossary__crash"})),
        done("the glossary stopped"),
        action(json!({"action": "mcp__glossary__lookup", "term": "amount"})),
        done("went on"),
    ]);
    let started = Instant::now();
    let output = run(dir.path(), &user, &model, "Use the glossary, then go on");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(started.elapsed() < Duration::from_secs(60), "nothing hangs on a dead server");
    let told = told(&model);
    assert!(
        told[0].contains("the MCP server glossary stopped during the call of mcp__glossary__crash"),
        "{told:?}\n{stderr}"
    );
    assert!(told[1].contains("there is no tool mcp__glossary__lookup"), "{told:?}");
    let requests = model.requests().len();
    assert!(offered(&model, 1).contains(&"mcp__glossary__crash".to_string()));
    assert!(offered(&model, requests - 1).is_empty(), "withdrawn from the second step");
    let said = stderr.matches("the MCP server glossary (settings) stopped").count();
    assert_eq!(said, 1, "said once: {stderr}");
}

/// A server that cannot start is said once and the run goes on without it.
#[test]
fn a_server_that_cannot_start_is_said_and_the_run_goes_on() {
    let (dir, user) = project(
        false,
        "\n[mcp.servers.broken]\ncommand = \"python3\"\nargs = [\"-c\", \"import sys; print('no such index', file=sys.stderr); sys.exit(2)\"]\n",
    );
    let model = ModelServer::start(vec![openai_chat("1. Read pay.py\n"), done("read")]);
    let output = run(dir.path(), &user, &model, "Read pay.py");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("the MCP server broken (settings) could not be started").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("no such index"), "what it said is told: {stderr}");
    assert!(offered(&model, 1).is_empty());
}
