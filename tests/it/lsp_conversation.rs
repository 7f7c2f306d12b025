//! The language server's own conversation (issue 41, "a session remembers"): a follow-up run
//! carries the workspace's earlier requests and how they ended, a question is answered
//! without a plan or tests, the conversation survives a restart of the server, is compacted
//! and forgotten on request; and a client that asks for the run stream
//! (`experimental.tokamak.runEvents`, the VS Code panel) receives the model's words, each tool
//! call and its result with the diff.

use crate::support;

use serde_json::{Value, json};
use support::LspClient;
use support::model_server::{ModelServer, openai_chat};
use support::scenario::{PYTHON, call};

fn panel_client(root: &std::path::Path, options: Value, user: support::UserDirs) -> LspClient {
    let capabilities = json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
        "experimental": {"tokamak": {"approvals": true, "runEvents": true}},
    });
    let mut client = LspClient::for_project_in(user, root, options, capabilities, &[]);
    client.act_as_editor();
    client
}

fn events(client: &LspClient, run_id: &str, kind: &str) -> Vec<Value> {
    client
        .seen(|m| {
            m["method"] == "tokamak/runEvent"
                && m["params"]["run_id"] == run_id
                && m["params"]["kind"] == kind
        })
        .into_iter()
        .map(|m| m["params"].clone())
        .collect()
}

#[test]
fn a_follow_up_remembers_the_workspace_conversation_across_a_restart_and_the_run_streams() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Write NOTES.md with the codeword\n"),
        call("create", json!({"path": "NOTES.md", "text": "BANANA-42\n"})),
        call("done", json!({"summary": "The codeword BANANA-42 is in NOTES.md."})),
        // the follow-up is a question: one look, no plan, no tests
        openai_chat("The codeword was BANANA-42."),
        // after the restart, and after `conversation: false`
        openai_chat("It was BANANA-42."),
        openai_chat("I do not know of a codeword."),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    let mut client = panel_client(root, options.clone(), support::UserDirs::new());

    let run = client.start_run("Write NOTES.md with the codeword BANANA-42");
    let finished = client.run_finished(&run);
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    // the stream: the create's call, its result with the new file's diff and text
    let calls = events(&client, &run, "tool_call");
    assert!(calls.iter().any(|c| c["tool"] == "edit" && c["paths"][0] == "NOTES.md"), "{calls:?}");
    let results = events(&client, &run, "tool_result");
    let created =
        results.iter().find(|r| r["files"][0]["path"] == "NOTES.md").unwrap_or_else(|| panic!("{results:?}"));
    assert_eq!(created["ok"], true);
    assert_eq!(created["files"][0]["created"], true);
    assert_eq!(created["files"][0]["after"], "BANANA-42\n");
    assert!(created["files"][0]["diff"].as_str().unwrap().contains("+BANANA-42"), "{created}");

    let question = client.start_run("What was the codeword?");
    let finished = client.run_finished(&question);
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    assert!(finished["summary"].as_str().unwrap().contains("BANANA-42"), "{finished}");
    assert_eq!(model.requests().len(), 4, "a question is not planned");
    let asked = model.requests()[3].body["messages"].to_string();
    assert!(
        asked.contains("The conversation so far in this session")
            && asked.contains("The user asked: Write NOTES.md with the codeword BANANA-42")
            && asked.contains("The codeword BANANA-42 is in NOTES.md."),
        "{asked}"
    );
    assert!(asked.contains("You are in the context_navigation mode"), "a question only looks: {asked}");
    let said = events(&client, &question, "said");
    assert!(said.iter().any(|s| s["text"].as_str().unwrap().contains("BANANA-42")), "{said:?}");
    let turns = client.execute("tokamak.conversation", json!({}));
    assert_eq!(turns["result"]["turns"].as_array().map(Vec::len), Some(2), "{turns}");

    // a restart: the workspace's conversation is still there, and carried
    let user = std::mem::replace(&mut client.user, support::UserDirs::new());
    client.shutdown();
    let mut client = panel_client(root, options, user);
    let turns = client.execute("tokamak.conversation", json!({}));
    assert_eq!(turns["result"]["turns"][1]["asked"], "What was the codeword?", "{turns}");
    let again = client.start_run("And what was it once more?");
    assert_eq!(client.run_finished(&again)["exit_reason"], "done");
    let asked = model.requests()[4].body["messages"].to_string();
    assert!(asked.contains("The user asked: What was the codeword?"), "{asked}");
    // a request on its own: no conversation with it
    let response = client.execute("tokamak.run", json!({"goal": "What codeword?", "conversation": false}));
    let alone = response["result"]["run_id"].as_str().unwrap_or_else(|| panic!("{response}")).to_string();
    assert_eq!(client.run_finished(&alone)["exit_reason"], "done");
    let asked = model.requests()[5].body["messages"].to_string();
    assert!(!asked.contains("The conversation so far"), "{asked}");

    let compacted = client.execute("tokamak.compact", json!({}));
    assert_eq!(
        compacted["result"]["message"], "The conversation's 4 requests are compacted into one.",
        "{compacted}"
    );
    let cleared = client.execute("tokamak.compact", json!({"clear": true}));
    assert_eq!(
        cleared["result"]["message"], "A new conversation: 1 earlier request(s) forgotten.",
        "{cleared}"
    );
    let turns = client.execute("tokamak.conversation", json!({}));
    assert_eq!(turns["result"]["turns"], json!([]));
    assert!(
        client.seen(|m| m["method"] == "tokamak/runEvent").len() > 1,
        "the stream went on after the restart"
    );
    client.shutdown();
}

#[test]
fn a_client_that_does_not_ask_for_the_run_stream_gets_none() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![openai_chat("There is one class, User.")]);
    model.describe(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "qwen2.5-coder-7b"}, {"id": "scripted"}]}),
    );
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    let mut client = LspClient::editor_for_project(root, options);
    // what a panel's pickers offer
    let pickers = client.execute("tokamak.pickers", json!({}));
    let ids = |key: &str| -> Vec<String> {
        pickers["result"][key]
            .as_array()
            .unwrap_or_else(|| panic!("{pickers}"))
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids("roles")[0], "auto");
    assert!(ids("roles").contains(&"tester".to_string()), "{pickers}");
    assert_eq!(ids("approvals"), ["default", "accept_edits", "ask_everything", "plan"]);
    assert_eq!(pickers["result"]["served"], json!(["qwen2.5-coder-7b", "scripted"]), "{pickers}");
    // a picker's value the run cannot honour is refused, never quietly the settings' level
    let refused =
        client.execute("tokamak.run", json!({"goal": "What classes are there?", "approval": "plan"}));
    assert!(
        refused["error"]["message"].as_str().unwrap_or_default().contains("ask tokamak.plan"),
        "{refused}"
    );
    let refused =
        client.execute("tokamak.run", json!({"goal": "What classes?", "approval": "ask_evrything"}));
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("is not one of"), "{refused}");
    let run = client.start_run("What classes are there?");
    assert_eq!(client.run_finished(&run)["exit_reason"], "done");
    assert!(client.seen(|m| m["method"] == "tokamak/runEvent").is_empty());
}
