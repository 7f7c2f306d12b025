//! Approvals (SPEC M4, U3): at `approval = "medium"` (the default) a change waits for the
//! person's answer — `tokamak/approvalRequested` for a client that renders it,
//! `window/showMessageRequest` (Approve / Reject / Show diff) for one that does not — and a
//! rejection's reason reaches the model, which must look at the code again before it changes
//! anything; at `high` reads are asked too; `low` asks nothing about changes. Over stdio and
//! headless in a pseudo-terminal.

use crate::support;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::replies::{action, done, edit, told};
use support::{LspClient, UserDirs};

const APP: &str = "def total(items):\n    return sum(items)\n";
const SAFE: &str = "def total(items):\n    return sum(items or [])\n";

fn project(toml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.py"), APP).unwrap();
    std::fs::write(dir.path().join("tokamak.toml"), format!("{toml}[checkers]\nenable = []\n")).unwrap();
    dir
}

fn options(model: &ModelServer, approval: Value) -> Value {
    json!({
        "approval": approval,
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
        "checkers": {"enable": []},
    })
}

#[test]
fn an_edit_waits_for_approve_and_a_rejection_sends_the_model_back_to_look() {
    let dir = project("");
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        edit("src/app.py", "def total(items):", "def total(items=None):"),
        // refused: the model must look first (slow enough for the status to show the mode)
        Scripted::Delayed(
            std::time::Duration::from_millis(2000),
            Box::new(edit("src/app.py", "def total(items):", "def total(items=()):")),
        ),
        action(json!({"action": "read", "path": "src/app.py"})),
        done("total handles None"),
    ]);
    let user = UserDirs::new();
    let mut client = LspClient::for_project_as(
        user,
        root,
        options(&model, json!("medium")),
        json!({
            "general": {"positionEncodings": ["utf-16"]},
            "experimental": {"tokamak": {"approvals": true}},
        }),
    );
    let run_id = client.start_run("make total safe");

    let first = client.approval_question();
    assert_eq!(first["run_id"], run_id.as_str());
    assert_eq!(first["action"], "edit");
    assert_eq!(first["summary"], "edit src/app.py");
    assert_eq!(first["path"], "src/app.py");
    assert_eq!((first["before"].as_str(), first["after"].as_str()), (Some(APP), Some(SAFE)), "{first}");
    let diff = first["diff"].as_str().unwrap();
    assert!(diff.contains("-    return sum(items)\n+    return sum(items or [])\n"), "{diff}");
    let id = first["id"].as_str().unwrap().to_string();
    // nothing changes while the question waits, and the status lists it
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), APP);
    let status = client.execute("tokamak.status", json!({}));
    assert_eq!(status["result"]["approval"], "medium", "{status}");
    assert_eq!(status["result"]["approvals"][0]["id"], id.as_str(), "{status}");
    assert!(
        client.seen(|m| m["method"] == "window/showMessageRequest").is_empty(),
        "a client that renders approvals is not asked twice"
    );
    // a wrong id is a clear error, and the question still waits
    let wrong = client.execute("tokamak.approve", json!({"id": "a99"}));
    assert_eq!(
        wrong["error"]["message"].as_str().unwrap(),
        format!("no approval a99 is waiting; these are: {id}")
    );
    let approved = client.execute("tokamak.approve", json!({"id": id}));
    assert_eq!(approved["result"]["answer"], "approved", "{approved}");
    assert_eq!(approved["result"]["heard"], true, "{approved}");

    let second = client.approval_question();
    assert_ne!(second["id"], first["id"]);
    let rejected = client
        .execute("tokamak.reject", json!({"id": second["id"], "reason": "keep the signature as it is"}));
    assert_eq!(rejected["result"]["answer"], "rejected", "{rejected}");
    // the answer reaches the run on its own task: its mode changes a moment after the reply
    let mut status = client.execute("tokamak.status", json!({}));
    for _ in 0..50 {
        if status["result"]["runs"][0]["mode"] == "coder, context_navigation (rejected)" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        status = client.execute("tokamak.status", json!({}));
    }
    assert_eq!(status["result"]["runs"][0]["mode"], "coder, context_navigation (rejected)", "{status}");
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "done", "{end}");
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), SAFE, "the approved edit only");

    let told = told(&model);
    assert!(told[0].starts_with("Result of edit"), "{}", told[0]);
    assert!(
        told[1].contains("The user rejected this (edit src/app.py): keep the signature as it is."),
        "{}",
        told[1]
    );
    assert!(told[1].contains("You are in context navigation now"), "{}", told[1]);
    assert!(
        told[2].contains("the context navigation mode does not allow changing files (edit)"),
        "after a rejection the model looks before it changes anything: {}",
        told[2]
    );
    assert!(told[3].starts_with("Result of read"), "{}", told[3]);
    // the answers and the modes are in the audit log
    let cache = client.user.cache.path().to_path_buf();
    let answers: Vec<Value> =
        support::audit_events(&cache, "approval").iter().map(|e| e["answer"].clone()).collect();
    assert_eq!(answers, [json!("approved"), json!("rejected")]);
    let modes: Vec<(String, String)> = support::audit_events(&cache, "mode")
        .iter()
        .map(|e| (e["trigger"].as_str().unwrap().to_string(), e["to"].as_str().unwrap().to_string()))
        .collect();
    assert!(modes.contains(&("rejected".into(), "context_nav".into())), "{modes:?}");
    assert!(modes.contains(&("looked_again".into(), "implementation".into())), "{modes:?}");
    let none = client.execute("tokamak.approve", json!({}));
    assert_eq!(none["error"]["message"], "no approval is waiting");
}

/// A client that does not render approvals is asked with `window/showMessageRequest`; "Show
/// diff" opens the diff; a dismissed question stays answerable with `tokamak.approve`. At
/// `high`, a read is asked too.
#[test]
fn show_message_request_with_show_diff_and_high_asks_before_reads() {
    let dir = project("");
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        action(json!({"action": "read", "path": "src/app.py"})),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        done("safe"),
    ]);
    let capabilities = json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"showDocument": {"support": true}},
    });
    let mut client = LspClient::for_project_with(root, options(&model, json!("high")), capabilities);
    client.never_answer("window/showMessageRequest");
    client.answer("window/showDocument", json!({"success": true}));
    let run_id = client.start_run("make total safe");
    let asked = |client: &mut LspClient| client.wait_for_notification("window/showMessageRequest");
    let reply = |client: &mut LspClient, request: &Value, result: Value| {
        client.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    };
    let titles = |request: &Value| -> Vec<String> {
        request["params"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["title"].as_str().unwrap().to_string())
            .collect()
    };

    // the read, asked at high
    let read = asked(&mut client);
    assert_eq!(read["params"]["message"], format!("Tokamak ({run_id}) wants to read src/app.py."));
    assert_eq!(titles(&read), ["Approve", "Reject"]);
    reply(&mut client, &read, json!({"title": "Approve"}));

    // the edit: "Show diff" opens the diff, then the question comes again
    let change = asked(&mut client);
    assert_eq!(change["params"]["message"], format!("Tokamak ({run_id}) wants to edit src/app.py."));
    assert_eq!(titles(&change), ["Approve", "Reject", "Show diff"]);
    reply(&mut client, &change, json!({"title": "Show diff"}));
    let shown = client.wait_for_notification("window/showDocument");
    let path = url::Url::parse(shown["params"]["uri"].as_str().unwrap()).unwrap().to_file_path().unwrap();
    let diff = std::fs::read_to_string(&path).expect("the diff file");
    assert!(diff.contains("+    return sum(items or [])"), "{diff}");
    let again = asked(&mut client);
    assert_eq!(again["params"]["message"], change["params"]["message"]);
    // dismissed: it says how to answer, and waits
    reply(&mut client, &again, Value::Null);
    let said = client.wait_for("how to answer", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("waiting for approval"))
    });
    assert!(said["params"]["message"].as_str().unwrap().contains("tokamak.approve"), "{said}");
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), APP);
    let approved = client.execute("tokamak.approve", json!({}));
    assert_eq!(approved["result"]["answer"], "approved", "{approved}");
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "done", "{end}");
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), SAFE);
    // the diff stays readable after the answer (Helix may still show it); a later start
    // sweeps the day-old ones
    assert!(path.exists(), "the diff file outlives its question");
}

/// Medium is the default; an untrusted project cannot lower it (only raise it); `low`
/// changes files without asking; a cancel ends a run that waits.
#[test]
fn the_level_is_medium_by_default_a_project_cannot_lower_it_and_cancel_ends_a_wait() {
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
    ]);
    let level = |toml: &str, trusted: bool, approval: Value| {
        let dir = project(toml);
        let mut opts = options(&model, approval);
        opts["trusted"] = json!(trusted);
        let mut client = LspClient::for_project(dir.path(), opts);
        let status = client.execute("tokamak.status", json!({}));
        let warnings: Vec<String> = client
            .seen(|m| m["method"] == "window/showMessage")
            .iter()
            .map(|m| m["params"]["message"].as_str().unwrap_or_default().to_string())
            .collect();
        (status["result"]["approval"].as_str().unwrap().to_string(), warnings.join("\n"))
    };
    assert_eq!(level("", true, Value::Null).0, "medium");
    let (lowered, warning) = level("approval = \"low\"\n", false, Value::Null);
    assert_eq!(lowered, "medium");
    assert!(warning.contains("approval"), "the ignored setting is named: {warning}");
    assert_eq!(level("approval = \"high\"\n", false, Value::Null).0, "high", "asking more is harmless");
    // nor below the user's own level
    let dir = project("approval = \"medium\"\n");
    let user = UserDirs::new();
    user.write_settings("approval = \"high\"\n");
    let mut opts = options(&model, Value::Null);
    opts["trusted"] = json!(false);
    let mut client = LspClient::for_project_as(
        user,
        dir.path(),
        opts,
        json!({"general": {"positionEncodings": ["utf-16"]}}),
    );
    let status = client.execute("tokamak.status", json!({}));
    assert_eq!(status["result"]["approval"], "high", "{status}");
    assert_eq!(level("approval = \"low\"\n", true, Value::Null).0, "low");
    assert_eq!(level("", true, json!("low")).0, "low");

    let dir = project("");
    let mut client = LspClient::approving_editor(dir.path(), options(&model, json!("medium")));
    let run_id = client.start_run("make total safe");
    let waiting = client.approval_question();
    let cancelled = client.execute("tokamak.cancel", json!({"run_id": run_id}));
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "cancelled", "{end}");
    assert_eq!(std::fs::read_to_string(dir.path().join("src/app.py")).unwrap(), APP);
    let status = client.execute("tokamak.status", json!({}));
    assert_eq!(status["result"]["approvals"], json!([]), "{status}");
    let late = client.execute("tokamak.approve", json!({"id": waiting["id"]}));
    assert!(late["error"]["message"].as_str().unwrap().contains("is waiting"), "{late}");
}

/// `tokamak run` in a pseudo-terminal (`script`): the diff and the question on the terminal,
/// `y` applies, a sentence rejects with that reason; with no terminal and no `--yes`, edits
/// are refused with a sentence saying how to allow them.
#[test]
fn headless_asks_in_the_terminal_and_refuses_without_one() {
    if !support::require_tools(&["script"]) {
        return;
    }
    let dir = project("");
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        edit("src/app.py", "def total(items):", "def total(items=None):"),
        action(json!({"action": "read", "path": "src/app.py"})),
        done("safe"),
    ]);
    let user = UserDirs::new();
    let line = format!("{} run 'make total safe' --root {}", env!("CARGO_BIN_EXE_tokamak"), root.display());
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .envs(user.env())
        .envs(support::tool_env())
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        // typed ahead: the terminal keeps the lines until each question reads one
        stdin.write_all(b"y\nno defaults in the signature\n").unwrap();
        // the pty stays open until the run ends
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(60));
            drop(stdin);
        });
    }
    let output = child.wait_with_output().expect("script ends");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{printed}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(printed.contains("+    return sum(items or [])"), "the diff is shown: {printed}");
    assert!(
        printed.contains("Tokamak wants to edit src/app.py. Apply it? [y/N, or say why not]"),
        "{printed}"
    );
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), SAFE);
    let answers = told(&model);
    assert!(
        answers[1].contains("The user rejected this (edit src/app.py): no defaults in the signature."),
        "{}",
        answers[1]
    );

    // no terminal, no --yes: refused, saying how to allow it
    std::fs::write(root.join("src/app.py"), APP).unwrap();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        done("could not"),
    ]);
    let output = user
        .command(&["run", "make total safe", "--root", &root.display().to_string()])
        .envs(support::tool_env())
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .stdin(Stdio::null())
        .output()
        .expect("tokamak runs");
    assert!(output.status.code().is_some(), "{output:?}");
    let told = told(&model);
    assert!(
        told[0].contains("there is no terminal to ask whether to change files, so nothing was changed; run tokamak run with --yes"),
        "{}",
        told[0]
    );
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), APP);
}

/// At `high` the fix loop asks too: a rejected fix changes nothing and ends the run with the
/// reason; an approved one lands.
#[test]
fn at_high_a_fix_is_asked_before_it_lands() {
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    let reply = "mean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply), openai_chat(reply)]);
    let dir = project("");
    std::fs::write(dir.path().join("mean.py"), broken).unwrap();
    let mut client = LspClient::approving_editor(dir.path(), options(&model, json!("high")));
    let uri = client.open_file(&dir.path().join("mean.py"), "python");
    let fix = |client: &mut LspClient| {
        let started = client.execute("tokamak.fix", json!({"uri": uri}));
        assert!(started.get("error").is_none(), "{started}");
        started["result"]["run_id"].as_str().unwrap().to_string()
    };
    let run_id = fix(&mut client);
    let asked = client.approval_question();
    assert_eq!(
        (asked["action"].as_str(), asked["summary"].as_str()),
        (Some("fix"), Some("fix mean.py")),
        "{asked}"
    );
    assert!(asked["diff"].as_str().unwrap().contains("+    total = sum(values)\n"), "{asked}");
    // the reason alone, as Helix's :lsp-workspace-command sends it
    let rejected = client.execute("tokamak.reject", json!("not now"));
    assert_eq!(rejected["result"]["answer"], "rejected", "{rejected}");
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "cancelled", "{end}");
    assert!(end["summary"].as_str().unwrap().contains("not now"), "{end}");
    assert_eq!(client.text(&uri), broken);

    let run_id = fix(&mut client);
    client.approval_question();
    client.execute("tokamak.approve", json!({}));
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "clean", "{end}");
    assert_eq!(client.text(&uri), broken.replace("values))", "values)"));
}

/// Rejected again while looking (at high, a read): the model still looks, and the read it is
/// allowed returns it to where the first rejection came from. The time the person takes does
/// not count against the run's wall-time limit.
#[test]
fn a_second_rejection_keeps_looking_and_waiting_does_not_count_against_the_time_limit() {
    let dir = project("");
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        action(json!({"action": "read", "path": "src/app.py"})),
        action(json!({"action": "search", "pattern": "total"})),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        done("safe"),
    ]);
    let mut opts = options(&model, json!("high"));
    opts["limits"] = json!({"wall_time_s": 2});
    let mut client = LspClient::approving_editor(root, opts);
    let run_id = client.start_run("make total safe");
    let answer = |client: &mut LspClient, action: &str, verdict: Value| {
        let asked = client.approval_question();
        assert_eq!(asked["action"], action, "{asked}");
        let mut args = verdict;
        args["id"] = asked["id"].clone();
        let name = if args.get("reason").is_some() { "tokamak.reject" } else { "tokamak.approve" };
        let answered = client.execute(name, args);
        assert!(answered.get("error").is_none(), "{answered}");
    };
    answer(&mut client, "edit", json!({"reason": "look at the callers first"}));
    answer(&mut client, "read", json!({"reason": "not that file"}));
    answer(&mut client, "search", json!({}));
    // longer than the whole wall-time limit, waiting for the person
    let asked = client.approval_question();
    std::thread::sleep(std::time::Duration::from_millis(3000));
    client.execute("tokamak.approve", json!({"id": asked["id"]}));
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "done", "{end}");
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), SAFE);
    let cache = client.user.cache.path().to_path_buf();
    let modes: Vec<(String, String)> = support::audit_events(&cache, "mode")
        .iter()
        .map(|e| (e["trigger"].as_str().unwrap().to_string(), e["to"].as_str().unwrap().to_string()))
        .collect();
    let trail: Vec<(&str, &str)> = modes.iter().map(|(t, m)| (t.as_str(), m.as_str())).collect();
    // planned, then rejected twice (the second while looking keeps it looking), back to the
    // code, then the edit done and reviewed (no test command here), and the run's end
    assert_eq!(
        trail,
        [
            ("plan_intent", "planning"),
            ("plan_ready", "implementation"),
            ("rejected", "context_nav"),
            ("looked_again", "implementation"),
            ("code_complete", "qa"),
            ("approved", "idle")
        ],
        "{modes:?}"
    );
    assert!(support::audit_events(&cache, "mode_error").is_empty());
}
