//! The workspace index and what prompts see of it (SPEC C1–C7): `tokamak bench context` on a
//! small project, `tokamak.context` over stdio for a Korean question and with the buffers'
//! text, the build shown as progress, the index following edits, the editor's watched files
//! and a restart, Tokamak's own watcher where the editor has none, one parse per version of an
//! open document, and plans seeing rules, ranked files, cached summaries and a model's help.

use crate::support;

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
    std::fs::write(dir.path().join("AGENTS.md"), "Keep functions short.\n").unwrap();
    std::fs::create_dir(dir.path().join(".tokamak")).unwrap();
    std::fs::write(dir.path().join(".tokamak/rules.md"), "No new dependencies.\n").unwrap();
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

    // the status says what the index holds and which rules every run reads
    let status = client.request(
        "workspace/executeCommand",
        serde_json::json!({"command": "tokamak.status", "arguments": [{}]}),
    );
    let context = &status["result"]["context"];
    assert_eq!(context["rules"], serde_json::json!(["AGENTS.md", ".tokamak/rules.md"]), "{status}");
    assert_eq!(context["index"]["files"], 2, "{status}");
    assert_eq!(context["index"]["parsed"], 2, "{status}");
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
    assert_eq!(
        end["params"]["value"]["message"], "2 files indexed (2 parsed, the rest from the cache; 0 skipped)",
        "{end}"
    );
    let begun = client.seen(|m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == "tokamak-index"
            && m["params"]["value"]["kind"] == "begin"
    });
    assert_eq!(begun[0]["params"]["value"]["title"], "Tokamak: indexing", "{begun:?}");
}

/// The index follows the editor: an open document's edits (a rename), files created, changed
/// and deleted on disk (`workspace/didChangeWatchedFiles`, after the server registered its
/// watcher), and a restart reads the cache instead of parsing again.
#[test]
fn the_index_follows_edits_and_watched_files_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(
        root.join("app/auth.py"),
        "def login(user):\n    return check(user)\n\n\ndef check(user):\n    return True\n",
    )
    .unwrap();
    std::fs::write(
        root.join("app/views.py"),
        "from app.auth import login\n\n\ndef view(request):\n    return login(request.user)\n",
    )
    .unwrap();
    let user = support::UserDirs::new();
    let capabilities = serde_json::json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}},
    });
    let mut client = support::LspClient::for_project_as(user, root, serde_json::json!({}), capabilities);
    let registration =
        client.wait_for("the file watcher's registration", |m| m["method"] == "client/registerCapability");
    let registered = &registration["params"]["registrations"][0];
    assert_eq!(registered["method"], "workspace/didChangeWatchedFiles", "{registration}");
    assert_eq!(
        registered["registerOptions"]["watchers"][0]["globPattern"],
        "**/*.{py,pyi,ts,mts,cts,tsx,js,mjs,cjs,jsx}"
    );
    let symbols = |client: &mut support::LspClient, query: &str| -> Vec<String> {
        let response = client.request(
            "workspace/executeCommand",
            serde_json::json!({"command": "tokamak.context", "arguments": [{"query": query}]}),
        );
        assert!(response.get("error").is_none(), "{response}");
        response["result"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|file| file["symbols"].as_array().cloned().unwrap_or_default())
            .filter_map(|s| s["name"].as_str().map(str::to_string))
            .collect()
    };
    assert!(symbols(&mut client, "check").contains(&"check".to_string()));

    // rename check → verify in the open buffer (unsaved)
    let auth = root.join("app/auth.py");
    let uri = client.open_file(&auth, "python");
    client.change(&uri, 2, serde_json::json!([{"text": "def login(user):\n    return verify(user)\n\n\ndef verify(user):\n    return True\n"}]));
    let found = symbols(&mut client, "verify check");
    assert!(found.contains(&"verify".to_string()) && !found.contains(&"check".to_string()), "{found:?}");

    // a file created on disk, then one deleted
    std::fs::write(root.join("app/cookies.py"), "def set_cookie(response):\n    pass\n").unwrap();
    std::fs::remove_file(root.join("app/views.py")).unwrap();
    client.notify(
        "workspace/didChangeWatchedFiles",
        serde_json::json!({"changes": [
            {"uri": support::file_uri(&root.join("app/cookies.py")), "type": 1},
            {"uri": support::file_uri(&root.join("app/views.py")), "type": 3},
        ]}),
    );
    let found = symbols(&mut client, "cookie view");
    assert!(found.contains(&"set_cookie".to_string()), "{found:?}");
    assert!(!found.contains(&"view".to_string()), "the deleted file is gone: {found:?}");
    let user = std::mem::replace(&mut client.user, support::UserDirs::new());
    drop(client);

    // a restart with the same cache: nothing unchanged is parsed again
    let mut client = support::LspClient::for_project_as(
        user,
        root,
        serde_json::json!({}),
        serde_json::json!({"general": {"positionEncodings": ["utf-16"]}, "window": {"workDoneProgress": true}}),
    );
    let end = client.wait_for("the end of the index's progress", |m| {
        m["method"] == "$/progress"
            && m["params"]["token"] == "tokamak-index"
            && m["params"]["value"]["kind"] == "end"
    });
    let message = end["params"]["value"]["message"].as_str().unwrap_or_default().to_string();
    // the cache was written at the first build (auth and views); cookies.py is new to it
    assert_eq!(message, "2 files indexed (1 parsed, the rest from the cache; 0 skipped)", "{end}");
}

/// A copy of the shop fixture (Python and TypeScript, rules, a large file) in a temporary folder.
fn shop() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::copy_tree(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/context/shop"),
        dir.path(),
    );
    dir
}

/// Seed 000's scenarios: a Korean question reaches the English code first, without a model.
#[test]
fn seed_scenarios_find_the_code_first() {
    let dir = shop();
    let user = support::UserDirs::new();
    let first = |question: &str| -> String {
        let output = user
            .command(&["context", question, "--format", "json", "--root", &dir.path().display().to_string()])
            .output()
            .expect("tokamak runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let ranked: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
        ranked[0]["path"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(first("로그인 기능 어디 있어?"), "app/auth/login.py");
    assert_eq!(first("User 클래스에 validate_email 메서드 추가해줘"), "app/models/user.py");
    assert_eq!(first("세션 쿠키는 어디서 만들어?"), "app/auth/sessions.py");
    assert_eq!(first("결제 환불은 어떻게 처리돼?"), "app/payments/gateway.py");
    assert_eq!(first("where is the cart total computed"), "app/cart.py");
    assert_eq!(first("비밀번호 해시 검증"), "app/auth/passwords.py");
}

/// The planner's prompt holds the project's rules, the README's opening and the files ranked
/// for the goal within the budget; a large file the budget keeps out is shown by its outline
/// while the model summarizes it in the background, and the next run shows the summary from
/// the cache without asking again.
#[test]
fn plans_see_rules_ranked_files_and_summaries_made_in_the_background() {
    use support::model_server::{ModelServer, openai_chat};
    let dir = shop();
    let root = dir.path();
    // a trusted folder: its rules files are read
    let user = support::UserDirs::trusting(&[root]);
    let plan = |model: &ModelServer| {
        user.command(&["plan", "결제 게이트웨이 환불에 로그 추가해줘", "--root", &root.display().to_string()])
            .current_dir(root)
            .env("TOKAMAK_LLM_URL", model.url())
            .env("TOKAMAK_MODEL", "scripted")
            .output()
            .unwrap()
    };
    let summary = "The gateway client charges in 120 steps and refunds receipts.";
    let model = ModelServer::start(vec![openai_chat("1. Log refunds in Gateway.refund\n")]);
    // summaries are asked for at 0.1, the plan at its own temperature: each gets its reply
    // whichever comes first
    model.at_temperature(0.1, vec![openai_chat(summary)]);
    let output = plan(&model);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the plan, and a summary in the background");
    let (asked, planned): (Vec<_>, Vec<_>) =
        requests.iter().partition(|r| r.body["messages"].to_string().contains("Summarize it."));
    let asked = asked[0].body["messages"].to_string();
    assert!(asked.contains("The file app/payments/gateway.py"), "{asked}");
    let prompt = planned[0].body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
    assert!(prompt.starts_with("The project's rules:\n--- AGENTS.md ---\n# Rules for agents"), "{prompt}");
    assert!(prompt.contains("The project's README.md (its opening):\n# Shop"), "{prompt}");
    assert!(prompt.contains("### app/payments/gateway.py"), "{prompt}");
    assert!(
        prompt.contains("(its outline, line: definition; 611 lines"),
        "the first prompt did not wait: {prompt}"
    );
    assert!(!prompt.contains(summary), "{prompt}");
    assert!(prompt.contains("Goal: 결제 게이트웨이 환불에 로그 추가해줘"), "{prompt}");
    assert!(
        !prompt.contains("packages/admin"),
        "the admin package's rules are not about this goal: {prompt}"
    );

    // the next run shows the summary from the cache: one request, the plan's
    let model = ModelServer::start(vec![openai_chat("1. Log refunds in Gateway.refund\n")]);
    let output = plan(&model);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "the summary came from the cache");
    let prompt = requests[0].body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
    assert!(prompt.contains(&format!("(its summary; 611 lines)\n{summary}")), "{prompt}");
}

/// With a model, the ranking can be helped (both optional): the model's English words for a
/// Korean goal, and an embeddings endpoint's similarity in meaning, each file's vector cached
/// by content hash so the next run embeds only the question.
#[test]
fn a_model_can_expand_the_question_and_rank_by_meaning() {
    use support::model_server::{ModelServer, json_reply, openai_chat};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("billing.py"), "def refund_payment(payment):\n    return payment.amount\n")
        .unwrap();
    std::fs::write(root.join("cart.py"), "def add_item(cart, item):\n    cart.append(item)\n").unwrap();
    std::fs::write(
        root.join("tokamak.toml"),
        "[checkers]\nenable = []\n[context]\nexpand_query = true\nembeddings_model = \"embed-small\"\n",
    )
    .unwrap();
    let user = support::UserDirs::new();
    let goal = "환불 기능 정리해줘";
    let plan = |model: &ModelServer| {
        user.command(&["plan", goal, "--root", &root.display().to_string()])
            .env("TOKAMAK_LLM_URL", model.url())
            .env("TOKAMAK_MODEL", "scripted")
            .output()
            .unwrap()
    };
    let vectors = |rows: &[[f32; 2]]| {
        json_reply(
            200,
            serde_json::json!({"data": rows.iter().map(|r| serde_json::json!({"embedding": r})).collect::<Vec<_>>()}),
        )
    };
    let model = ModelServer::start(vec![
        openai_chat("refund payment"),
        vectors(&[[1.0, 0.0]]),
        vectors(&[[0.99, 0.14]]),
        openai_chat("1. Tidy refund_payment\n"),
    ]);
    let output = plan(&model);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert!(requests[0].body["messages"][1]["content"] == goal, "the expansion is asked of the goal");
    assert_eq!(requests[1].path, "/v1/embeddings");
    assert_eq!(requests[1].body["model"], "embed-small");
    assert!(requests[1].body["input"][0].as_str().unwrap().starts_with(goal), "{:?}", requests[1].body);
    let embedded = requests[2].body["input"].as_array().unwrap();
    assert_eq!(embedded.len(), 1, "only the file the words reach: {embedded:?}");
    assert!(embedded[0].as_str().unwrap().starts_with("billing.py\ndef refund_payment"), "{embedded:?}");
    let prompt = requests[3].body["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(prompt.contains("### billing.py — is close in meaning (cosine 0.99)"), "{prompt}");
    assert!(!prompt.contains("### cart.py"), "{prompt}");

    // the file's vector is cached: the next run embeds the question only
    let model = ModelServer::start(vec![
        openai_chat("refund payment"),
        vectors(&[[1.0, 0.0]]),
        openai_chat("1. Tidy refund_payment\n"),
    ]);
    let output = plan(&model);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(model.requests().len(), 3);
}

/// One parse per version of an open document, shared by everything that reads its tree: the
/// Observer's syntax check, the symbols, the code actions and the live index (which takes the
/// Observer's tree and reads again only the pieces an edit changed) — typed into a comment,
/// into code, with and without pauses, in a document large enough to be parsed in the
/// background.
#[test]
fn one_version_of_an_open_document_is_parsed_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("class Shapes:\n    \"\"\"Many shapes.\"\"\"\n");
    for n in 0..300 {
        text.push_str(&format!(
            "\n    def area_{n}(self, side):\n        # the area of shape {n}\n        return side * {n}\n"
        ));
    }
    std::fs::write(dir.path().join("shapes.py"), &text).unwrap();
    let mut client = support::LspClient::for_project(dir.path(), serde_json::json!({}));
    let status = |client: &mut support::LspClient| {
        let status = client.request(
            "workspace/executeCommand",
            serde_json::json!({"command": "tokamak.status", "arguments": [{}]}),
        );
        status["result"].clone()
    };
    let ask = |client: &mut support::LspClient, uri: &str| {
        let response = client.request(
            "workspace/executeCommand",
            serde_json::json!({"command": "tokamak.context", "arguments": [{"query": "area of a shape", "uri": uri}]}),
        );
        assert!(response.get("error").is_none(), "{response}");
        response["result"].clone()
    };
    let uri = client.open_file(&dir.path().join("shapes.py"), "python");
    client.diagnostics(&uri);
    let mut version = 1;
    let mut type_at = |client: &mut support::LspClient, line: u32, col: u32, typed: &str| {
        version += 1;
        let at = serde_json::json!({"line": line, "character": col});
        client.change(&uri, version, serde_json::json!([{"range": {"start": at, "end": at}, "text": typed}]));
        client.diagnostics(&uri);
        version
    };
    // typing in a comment, then in code (renaming a method), each with a query between
    for (n, letter) in ["a", "b", "c"].iter().enumerate() {
        type_at(&mut client, 4, 33 + n as u32, letter);
    }
    ask(&mut client, &uri);
    std::thread::sleep(std::time::Duration::from_millis(200));
    for (n, letter) in ["x", "y"].iter().enumerate() {
        type_at(&mut client, 3, 14 + n as u32, letter);
        client.request("textDocument/documentSymbol", serde_json::json!({"textDocument": {"uri": uri}}));
    }
    let last = type_at(&mut client, 6, 0, "\n");
    let symbols =
        client.request("textDocument/documentSymbol", serde_json::json!({"textDocument": {"uri": uri}}));
    assert_eq!(
        symbols["result"][0]["children"][0]["name"], "area_0xy",
        "{}",
        symbols["result"][0]["children"][0]
    );
    client.request(
        "textDocument/codeAction",
        serde_json::json!({"textDocument": {"uri": uri}, "range": support::range((3, 0), (3, 1)), "context": {"diagnostics": []}}),
    );
    let ranked = ask(&mut client, &uri);
    assert_eq!(ranked[0]["path"], "shapes.py", "{ranked}");
    assert!(ranked[0]["symbols"].as_array().unwrap().iter().any(|s| s["name"] == "area_0xy"), "{ranked}");

    // the last version's parse may still be on its way: waited for, not slept on
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    let status = loop {
        let status = status(&mut client);
        if status["parses"][0]["version"] == last || std::time::Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let counts = status["parses"].as_array().unwrap();
    assert_eq!(counts.len(), 1, "{status}");
    let parses = counts[0]["parses"].as_u64().unwrap();
    assert_eq!(counts[0]["version"], last, "{status}");
    assert!(parses >= 1 && parses <= last as u64, "no more parses than versions: {status}");
    assert_eq!(counts[0]["parsedTwice"], 0, "{status}");
    assert_eq!(status["context"]["index"]["documentsParsedAgain"], 0, "the index took the tree: {status}");
}

/// An editor that does not watch files (no `didChangeWatchedFiles`, as Helix without it or a
/// plain client): Tokamak watches the workspace itself. A file another program writes — in a
/// folder made just before it —, changes or deletes is found or lost by the next question; an
/// open document's buffer still wins over what is written to its file.
#[test]
fn files_other_programs_change_are_seen_without_the_editors_watcher() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("alpha.py"), "def alpha_apricot():\n    return 1\n").unwrap();
    std::fs::write(root.join("open.py"), "def disk_mango():\n    return 2\n").unwrap();
    let mut client = support::LspClient::for_project(root, serde_json::json!({}));
    type Files = Vec<(String, Vec<String>)>;
    let files_for = |client: &mut support::LspClient, query: &str| -> Files {
        let response = client.request(
            "workspace/executeCommand",
            serde_json::json!({"command": "tokamak.context", "arguments": [{"query": query}]}),
        );
        assert!(response.get("error").is_none(), "{response}");
        response["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| {
                let symbols = file["symbols"].as_array().cloned().unwrap_or_default();
                let names = symbols.iter().filter_map(|s| s["name"].as_str().map(str::to_string)).collect();
                (file["path"].as_str().unwrap_or_default().to_string(), names)
            })
            .collect()
    };
    // waits, a question at a time, until `done` holds of the answer to `query`
    let until = |client: &mut support::LspClient, query: &str, done: &dyn Fn(&Files) -> bool| {
        let deadline = std::time::Instant::now() + support::TIMEOUT;
        loop {
            let files = files_for(client, query);
            if done(&files) {
                return files;
            }
            assert!(std::time::Instant::now() < deadline, "{query}: still {files:?}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    let has = |files: &[(String, Vec<String>)], path: &str, symbol: &str| {
        files.iter().any(|(p, names)| p == path && names.iter().any(|n| n == symbol))
    };
    assert!(has(&files_for(&mut client, "apricot"), "alpha.py", "alpha_apricot"));
    let uri = client.open_file(&root.join("open.py"), "python");
    client.change(&uri, 2, serde_json::json!([{"text": "def buffer_kiwi():\n    return 3\n"}]));

    // written by another program: the open document's file, then a new folder and its file
    std::fs::write(root.join("open.py"), "def disk_papaya():\n    return 4\n").unwrap();
    std::fs::create_dir(root.join("late")).unwrap();
    std::fs::write(root.join("late/fresh.py"), "def fresh_guava():\n    return 5\n").unwrap();
    until(&mut client, "guava", &|files| has(files, "late/fresh.py", "fresh_guava"));
    let files = files_for(&mut client, "papaya kiwi");
    assert!(has(&files, "open.py", "buffer_kiwi"), "the buffer wins: {files:?}");
    assert!(!files.iter().any(|(_, names)| names.iter().any(|n| n == "disk_papaya")), "{files:?}");

    // changed, then deleted
    std::fs::write(root.join("alpha.py"), "def alpha_lychee():\n    return 6\n").unwrap();
    until(&mut client, "lychee apricot", &|files| {
        has(files, "alpha.py", "alpha_lychee") && !has(files, "alpha.py", "alpha_apricot")
    });
    std::fs::remove_file(root.join("alpha.py")).unwrap();
    until(&mut client, "lychee", &|files| !files.iter().any(|(p, _)| p == "alpha.py"));
}
