//! The workspace index from the command line: `tokamak bench context` on a small project.

mod support;

use std::process::Command;

#[test]
fn bench_context_indexes_a_project_and_answers_its_queries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("app")).unwrap();
    std::fs::write(
        dir.path().join("app/auth.py"),
        "def login(user):\n    return check(user)\n\n\ndef check(user):\n    return True\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("app/views.py"),
        "from app.auth import login\n\n\ndef view(request):\n    return login(request.user)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("app/blob.py"), b"\x00binary").unwrap();
    let questions = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        questions.path(),
        "# question TAB files\n로그인 어디?\tapp/auth.py\nwhere is the view\tapp/views.py\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["bench", "context", "--query", "login", "--format", "json", "--questions"])
        .arg(questions.path())
        .arg(dir.path())
        .output()
        .expect("tokamak runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bench: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(bench["files"], 2, "{bench}");
    assert_eq!(bench["skipped"], 1, "{bench}");
    assert_eq!(bench["definitions"], 3, "{bench}");
    let queries = bench["queries"].as_array().unwrap();
    assert_eq!(queries[0][0], "search \"login\"");
    assert_eq!(queries[0][2], 1);
    assert_eq!(queries[1][0], "callers of login (3 levels)");
    assert_eq!(queries[1][2], 1, "the view calls it");
    assert_eq!(queries[2][0], "importers of app.auth");
    assert_eq!(queries[2][2], 1);
    assert_eq!(bench["questions"]["questions"], 2, "{bench}");
    assert_eq!(bench["questions"]["top1"], 100.0, "{bench}");
    // the plain BM25 has no Korean: the first question reaches nothing
    assert_eq!(bench["questions"]["bm25_top5"], 50.0, "{bench}");
}

#[test]
fn context_ranks_files_for_a_korean_question() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("src/auth")).unwrap();
    std::fs::write(
        dir.path().join("src/auth/login.py"),
        "def login(name, password):\n    return name and password\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("src/report.py"), "def monthly_report(rows):\n    return sum(rows)\n")
        .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["context", "로그인 기능 어디 있어?", "--format", "json"])
        .current_dir(dir.path())
        .output()
        .expect("tokamak runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let ranked: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(ranked[0]["path"], "src/auth/login.py", "{ranked}");
    assert_eq!(ranked[0]["symbols"][0], serde_json::json!({"name": "login", "kind": "function", "line": 1}));
    let reasons: Vec<&str> =
        ranked[0]["reasons"].as_array().unwrap().iter().filter_map(|r| r.as_str()).collect();
    assert!(reasons.contains(&"defines function login"), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("has login") && r.ends_with("in its path")), "{reasons:?}");
    assert_eq!(ranked.as_array().map(Vec::len), Some(1), "the report does not match: {ranked}");
}

/// `tokamak.context` over stdio: ranked files with reasons, the open buffer's unsaved text
/// counted, the document the user is in ranked up.
#[test]
fn the_context_command_ranks_with_the_buffers_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/auth")).unwrap();
    std::fs::write(
        dir.path().join("src/auth/login.py"),
        "def login(name, password):\n    return name and password\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("src/report.py"), "def monthly_report(rows):\n    return sum(rows)\n")
        .unwrap();
    let mut client = support::LspClient::for_project(dir.path(), serde_json::json!({}));
    let ask = |client: &mut support::LspClient, arguments: serde_json::Value| {
        let response = client.request(
            "workspace/executeCommand",
            serde_json::json!({"command": "tokamak.context", "arguments": [arguments]}),
        );
        assert!(response.get("error").is_none(), "{response}");
        response["result"].clone()
    };
    let ranked = ask(&mut client, serde_json::json!({"query": "로그인 기능 어디 있어?"}));
    assert_eq!(ranked[0]["path"], "src/auth/login.py", "{ranked}");
    assert!(
        ranked[0]["reasons"].as_array().unwrap().iter().any(|r| r == "defines function login"),
        "{ranked}"
    );

    // an unsaved edit in the open report: it now defines the login export
    let report = dir.path().join("src/report.py");
    let uri = client.open_file(&report, "python");
    client.change(
        &uri,
        2,
        serde_json::json!([{"text": "def export_login_report(rows):\n    return sum(rows)\n"}]),
    );
    let ranked = ask(&mut client, serde_json::json!({"query": "login report", "uri": uri}));
    assert_eq!(ranked[0]["path"], "src/report.py", "{ranked}");
    assert!(
        ranked[0]["reasons"].as_array().unwrap().iter().any(|r| r == "is open in the editor"),
        "{ranked}"
    );
    assert!(ranked[0]["symbols"][0]["name"] == "export_login_report", "{ranked}");

    // a question without words is refused with a sentence
    let response = client.request(
        "workspace/executeCommand",
        serde_json::json!({"command": "tokamak.context", "arguments": [{"query": "  "}]}),
    );
    assert!(response["error"]["message"].as_str().unwrap().contains("needs a query"), "{response}");
}

/// The index is built after `initialized`, shown as work-done progress to an editor that
/// offers it.
#[test]
fn the_index_build_is_shown_as_progress() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "def a():\n    pass\n").unwrap();
    std::fs::write(dir.path().join("b.ts"), "export const b = 1;\n").unwrap();
    let mut client = support::LspClient::editor_for_project(dir.path(), serde_json::json!({}));
    let end = client.wait_for("the end of the index's progress", |m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == "tokamak-index"
            && m["params"]["value"]["kind"] == "end"
    });
    assert_eq!(end["params"]["value"]["message"], "2 files indexed (0 skipped)", "{end}");
    let begun = client.seen(|m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == "tokamak-index"
            && m["params"]["value"]["kind"] == "begin"
    });
    assert_eq!(begun[0]["params"]["value"]["title"], "Tokamak: indexing", "{begun:?}");
}
