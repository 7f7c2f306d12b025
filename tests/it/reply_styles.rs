//! Real models as they really answer, through `tokamak run` headless with the scripted model
//! speaking each provider's wire format: a final answer in plain text ends the step; calls
//! left in the text by a server without a tool parser (Hermes/Qwen `<tool_call>`, Mistral
//! `[TOOL_CALLS]`, Llama's `<|python_tag|>`), several in one reply, are taken in order;
//! arguments written as Python or as a string are repaired; a delete the model only
//! considered while thinking (`<think>`, `reasoning_content`, Anthropic's `thinking`,
//! Ollama's `thinking`) never runs; a call cut at the token limit is not taken, and the model
//! is asked again with room for twice as many tokens. Each run is made twice: with whole
//! replies and with `model.stream` on, the same replies streamed as the server would. A
//! server whose context is too small for the prompt has the prompt cut to fit.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, Scripted, as_stream, json_reply, openai_chat};

/// What the model considers and must never do: delete the project's tests.
const CONSIDERED: &str = r#"{"name": "delete", "arguments": {"path": "test_keep.py"}}"#;
/// Words only the model's thinking has: they must never go back to it.
const THOUGHT: &str = "Should I clean up first";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("test_keep.py"), "def test_keep():\n    assert True\n").expect("write");
    std::fs::write(dir.path().join("tokamak.toml"), "[checkers]\nenable = []\n").expect("settings");
    std::fs::create_dir(dir.path().join(".git")).expect("a .git folder");
    dir
}

/// `tokamak run` in `root` with `model` as the user's `[model]` (`provider` one of openai,
/// anthropic, ollama), whole replies.
fn run(root: &Path, model: &ModelServer, provider: &str) -> Output {
    run_as(root, model, provider, false, "")
}

/// `tokamak run`, every request streamed when `stream`, with `more` lines in `[model]`.
fn run_as(root: &Path, model: &ModelServer, provider: &str, stream: bool, more: &str) -> Output {
    let user = UserDirs::new();
    let base = if provider == "openai" { format!("{}/v1", model.url()) } else { model.url() };
    user.write_settings(&format!(
        "[model]\nprovider = \"{provider}\"\nbase_url = \"{base}\"\nmodel = \"scripted\"\nmax_retries = 0\nmax_tokens = 300\nstream = {stream}\n{more}"
    ));
    let mut command =
        user.command(&["run", "write the notes", "--yes", "--root", &root.display().to_string()]);
    command
        .current_dir(root)
        .env_remove("TOKAMAK_LLM_URL")
        .env_remove("TOKAMAK_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OLLAMA_HOST")
        .envs(support::tool_env());
    // Anthropic's API always takes a key, even from this machine
    if provider == "anthropic" {
        command.env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789");
    }
    command.output().expect("run tokamak")
}

/// An OpenAI-compatible chat reply with `message` (its `content`, `tool_calls`,
/// `reasoning_content` …) and `finish_reason`.
fn openai(message: Value, finish: &str) -> Scripted {
    let mut message = message;
    message["role"] = json!("assistant");
    json_reply(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
        }),
    )
}

fn native(name: &str, arguments: &str) -> Value {
    json!({"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}})
}

fn anthropic(content: Value, stop: &str) -> Scripted {
    json_reply(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted",
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 40, "output_tokens": 12},
        }),
    )
}

fn ollama(message: Value) -> Scripted {
    let mut message = message;
    message["role"] = json!("assistant");
    json_reply(
        200,
        json!({
            "model": "qwen-scripted", "created_at": "2026-11-22T00:00:00Z", "message": message,
            "done_reason": "stop", "done": true, "prompt_eval_count": 40, "eval_count": 12,
        }),
    )
}

/// The plan: one step.
fn plan(provider: &str) -> Scripted {
    let text = "1. Write NOTES.md\n";
    match provider {
        "anthropic" => anthropic(json!([{"type": "text", "text": text}]), "end_turn"),
        "ollama" => ollama(json!({"content": text})),
        _ => openai_chat(text),
    }
}

/// Runs `replies` (after the plan), whole and then streamed, and checks each run: `done`,
/// NOTES.md holding `notes`, the tests the model only thought of deleting still there.
/// Returns each run's server and stderr.
fn check(name: &str, provider: &str, replies: Vec<Scripted>, notes: &str) -> Vec<(ModelServer, String)> {
    check_with(name, provider, "", replies, notes)
}

/// `check` with `more` lines in `[model]`.
fn check_with(
    name: &str,
    provider: &str,
    more: &str,
    replies: Vec<Scripted>,
    notes: &str,
) -> Vec<(ModelServer, String)> {
    let mut runs = Vec::new();
    for stream in [false, true] {
        let name = format!("{name}{}", if stream { " (streamed)" } else { "" });
        let dir = project();
        let mut script = vec![plan(provider)];
        script.extend(replies.iter().cloned());
        if stream {
            script = script.into_iter().map(as_stream).collect();
        }
        let model = ModelServer::start(script);
        let output = run_as(dir.path(), &model, provider, stream, more);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert_eq!(output.status.code(), Some(0), "{name}:\n{stdout}\n{stderr}");
        assert!(dir.path().join("test_keep.py").exists(), "{name}: a delete only thought of ran\n{stderr}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("NOTES.md")).unwrap_or_default(),
            notes,
            "{name}:\n{stderr}"
        );
        let asked_to_stream = model.requests().iter().all(|r| r.body["stream"] == json!(stream));
        assert!(asked_to_stream, "{name}: not every request had stream = {stream}");
        runs.push((model, stderr));
    }
    runs
}

/// What the model was sent back as its history, in the last request: no reasoning in it.
fn history(model: &ModelServer) -> String {
    model.requests().last().map(|r| r.body.to_string()).unwrap_or_default()
}

#[test]
fn openai_compatible_replies_in_every_style_are_understood() {
    let thinking = format!("<think>\n{THOUGHT}? {CONSIDERED} No: the tests stay.\n</think>\n");
    let cases: Vec<(&str, Vec<Scripted>)> = vec![
        (
            // reasoning kept apart by the server, a native call, then a plain-text final answer
            "reasoning_content, native call, plain end",
            vec![
                openai(
                    json!({"content": null, "reasoning_content": format!("{THOUGHT}? {CONSIDERED}"), "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a\n"}"#)]}),
                    "tool_calls",
                ),
                openai(json!({"content": "Done: NOTES.md is written."}), "stop"),
            ],
        ),
        (
            // Qwen3 on a server without a reasoning or tool parser: <think>, then Hermes calls
            "<think> and two <tool_call> blocks",
            vec![
                openai(
                    json!({"content": format!("{thinking}<tool_call>\n{{\"name\": \"create\", \"arguments\": {{\"path\": \"NOTES.md\", \"text\": \"a\\n\"}}}}\n</tool_call>\n<tool_call>\n{{\"name\": \"read\", \"arguments\": {{\"path\": \"NOTES.md\"}}}}\n</tool_call>")}),
                    "stop",
                ),
                openai(json!({"content": format!("{thinking}All done.")}), "stop"),
            ],
        ),
        (
            // a template that opens the thinking in the prompt: only its end is in the reply
            "an unopened </think>, Mistral's [TOOL_CALLS]",
            vec![
                openai(
                    json!({"content": format!("{THOUGHT}? {CONSIDERED}\n</think>\n[TOOL_CALLS][{{\"name\": \"create\", \"arguments\": {{\"path\": \"NOTES.md\", \"text\": \"a\\n\"}}}}]")}),
                    "stop",
                ),
                openai(json!({"content": "The notes are written."}), "stop"),
            ],
        ),
        (
            "Llama's <|python_tag|> with parameters",
            vec![
                openai(
                    json!({"content": "<|python_tag|>{\"name\": \"create\", \"parameters\": {\"path\": \"NOTES.md\", \"text\": \"a\\n\"}}"}),
                    "stop",
                ),
                openai(
                    json!({"content": "<|python_tag|>{\"name\": \"done\", \"parameters\": {\"summary\": \"written\"}}"}),
                    "stop",
                ),
            ],
        ),
        (
            // arguments written as a Python dict, then as a JSON string inside a string
            "Python arguments and arguments as a string",
            vec![
                openai(
                    json!({"content": "", "tool_calls": [native("create", "{'path': 'NOTES.md', 'text': 'a\\n',}")]}),
                    "tool_calls",
                ),
                openai(
                    json!({"content": "", "tool_calls": [native("done", "\"{\\\"summary\\\": \\\"written\\\"}\"")]}),
                    "tool_calls",
                ),
            ],
        ),
    ];
    for (name, replies) in cases {
        for (model, _) in check(name, "openai", replies, "a\n") {
            assert!(!history(&model).contains(THOUGHT), "{name}: reasoning went back into the history");
        }
    }
}

#[test]
fn a_wrong_argument_that_cannot_be_repaired_is_sent_back_in_one_sentence() {
    let runs = check(
        "unrepairable arguments",
        "openai",
        vec![
            openai(json!({"content": "", "tool_calls": [native("create", "{path: NOTES.md")]}), "tool_calls"),
            openai(json!({"content": "", "tool_calls": [native("", "{}")]}), "tool_calls"),
            openai(
                json!({"content": "", "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a\n"}"#)]}),
                "tool_calls",
            ),
            openai(json!({"content": "Written."}), "stop"),
        ],
        "a\n",
    );
    for (model, _) in runs {
        let told: Vec<String> = model
            .requests()
            .iter()
            .filter_map(|r| r.body["messages"].as_array()?.last()?["content"].as_str().map(str::to_string))
            .collect();
        assert!(told.iter().any(|t| t.contains("the arguments of create are not valid JSON")), "{told:#?}");
        assert!(
            told.iter().any(|t| t.contains("a tool call had no name; the tools are read, ")),
            "{told:#?}"
        );
    }
}

#[test]
fn a_call_cut_at_the_token_limit_is_not_taken_and_the_model_gets_more_room() {
    let runs = check(
        "cut call",
        "openai",
        vec![
            // cut in the middle of the text: the half file must not be written
            openai(
                json!({"content": "", "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a\nb"#)]}),
                "length",
            ),
            // and a text-protocol edit cut after its first block: nothing of it is done
            openai(
                json!({"content": "```json\n{\"action\": \"create\", \"path\": \"NOTES.md\"}\n```\n```\nhalf"}),
                "length",
            ),
            // a third cut action: the room is not doubled again (twice is the most)
            openai(
                json!({"content": "", "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a"#)]}),
                "length",
            ),
            // prose cut at the limit: a sentence back, no more room
            openai(json!({"content": "Let me think about what the notes should say, and"}), "length"),
            openai(
                json!({"content": "", "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a\nb\n"}"#)]}),
                "tool_calls",
            ),
            openai(json!({"content": "Written."}), "stop"),
        ],
        "a\nb\n",
    );
    for (model, stderr) in runs {
        let rooms: Vec<Value> = model.requests().iter().map(|r| r.body["max_tokens"].clone()).collect();
        // the plan and the first try at the configured 300, then twice that, then twice again,
        // and no more
        assert_eq!(
            rooms,
            [json!(300), json!(300), json!(600), json!(1200), json!(1200), json!(1200), json!(1200)],
            "{stderr}"
        );
        assert!(stderr.contains("the reply was cut at the token limit (1200)\n"), "{stderr}");
        assert!(
            stderr.contains("the reply was cut at the token limit (300); asking again with room for 600"),
            "{stderr}"
        );
        let last = history(&model);
        assert!(last.contains("your reply was cut off at the token limit (300 tokens)"), "{last}");
    }
}

#[test]
fn anthropic_thinking_and_tool_use_then_a_plain_end_turn() {
    let runs = check(
        "anthropic",
        "anthropic",
        vec![
            anthropic(
                json!([
                    {"type": "thinking", "thinking": format!("{THOUGHT}? {CONSIDERED}"), "signature": "sig"},
                    {"type": "tool_use", "id": "toolu_1", "name": "create", "input": {"path": "NOTES.md", "text": "a\n"}},
                ]),
                "tool_use",
            ),
            anthropic(json!([{"type": "text", "text": "NOTES.md is written."}]), "end_turn"),
        ],
        "a\n",
    );
    for (model, _) in runs {
        assert!(!history(&model).contains(THOUGHT), "reasoning went back into the history");
    }
}

/// With extended thinking on, Anthropic requires a turn's thinking back, signed, before the
/// tool calls it led to: it goes back as it came (and is still never acted on).
#[test]
fn anthropic_extended_thinking_goes_back_with_its_tool_calls() {
    let runs = check_with(
        "anthropic extended thinking",
        "anthropic",
        "thinking_tokens = 1024\n",
        vec![
            anthropic(
                json!([
                    {"type": "thinking", "thinking": format!("{THOUGHT}? {CONSIDERED}"), "signature": "c2lnbmVk"},
                    {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                    {"type": "tool_use", "id": "toolu_1", "name": "create", "input": {"path": "NOTES.md", "text": "a\n"}},
                ]),
                "tool_use",
            ),
            anthropic(json!([{"type": "text", "text": "NOTES.md is written."}]), "end_turn"),
        ],
        "a\n",
    );
    for (model, _) in runs {
        let requests = model.requests();
        for request in &requests {
            assert_eq!(request.body["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
            assert_eq!(request.body["max_tokens"], json!(300 + 1024), "the budget is part of max_tokens");
            assert!(request.body.get("temperature").is_none(), "thinking takes no temperature");
        }
        let last = &requests.last().expect("requests").body["messages"];
        let turn = last
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
            .expect("the assistant's turn");
        assert_eq!(turn["content"][0]["type"], "thinking", "{turn}");
        assert_eq!(turn["content"][0]["signature"], "c2lnbmVk", "{turn}");
        assert_eq!(turn["content"][0]["thinking"], format!("{THOUGHT}? {CONSIDERED}"), "{turn}");
        assert_eq!(
            turn["content"][1],
            json!({"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}),
            "{turn}"
        );
        assert_eq!(turn["content"][2]["type"], "tool_use", "{turn}");
    }
}

#[test]
fn ollama_thinking_and_tool_calls_then_a_plain_answer() {
    let runs = check(
        "ollama",
        "ollama",
        vec![
            ollama(json!({
                "content": "",
                "thinking": format!("{THOUGHT}? {CONSIDERED}"),
                "tool_calls": [{"function": {"name": "create", "arguments": {"path": "NOTES.md", "text": "a\n"}}}],
            })),
            ollama(json!({"content": "<think>done?</think>\nThe notes are written."})),
        ],
        "a\n",
    );
    for (model, _) in runs {
        assert!(!history(&model).contains(THOUGHT), "reasoning went back into the history");
    }
}

/// A model that never writes a usable plan (a small or base model): after asking twice, the
/// goal itself is the one step, carried out and judged like any other — and what the planning
/// cost is in the run's tokens.
#[test]
fn a_plan_that_never_comes_makes_the_goal_one_step() {
    let dir = project();
    let model = ModelServer::start(vec![
        openai_chat("Sure! Happy to help."),
        openai_chat("Of course."),
        openai(
            json!({"content": "", "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a\n"}"#)]}),
            "tool_calls",
        ),
        openai_chat("NOTES.md is written."),
    ]);
    let user = UserDirs::new();
    let base = format!("{}/v1", model.url());
    user.write_settings(&format!("[model]\nbase_url = \"{base}\"\nmodel = \"scripted\"\nmax_retries = 0\n"));
    let output = user
        .command(&[
            "run",
            "write the notes",
            "--yes",
            "--format",
            "json",
            "--root",
            &dir.path().display().to_string(),
        ])
        .current_dir(dir.path())
        .env_remove("TOKAMAK_LLM_URL")
        .env_remove("TOKAMAK_MODEL")
        .env_remove("OPENAI_API_KEY")
        .envs(support::tool_env())
        .output()
        .expect("run tokamak");
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(report["exit_reason"], "done", "{report}");
    assert_eq!(report["steps"], 1, "{report}");
    assert_eq!(std::fs::read_to_string(dir.path().join("NOTES.md")).unwrap_or_default(), "a\n");
    // the two planning replies (21 + 7 tokens each, as the scripted server reports) count
    assert_eq!(report["tokens"]["prompt"], 21 + 21 + 40 + 21, "{report}");
    assert_eq!(report["tokens"]["completion"], 7 + 7 + 12 + 7, "{report}");
}

/// llama.cpp's answer to a prompt longer than its context (`--ctx-size`).
fn too_long(n_ctx: u32) -> Scripted {
    json_reply(
        400,
        json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": n_ctx}}),
    )
}

/// The first user message of each request, as sent.
fn first_messages(model: &ModelServer) -> Vec<String> {
    model
        .requests()
        .iter()
        .map(|r| r.body["messages"][1]["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A server whose context is smaller than the prompt names its length: the workspace view is
/// cut to fit (the planner's and the step's), the length is remembered so the next prompts go
/// out fitted, and the run ends as if nothing happened.
#[test]
fn a_prompt_too_long_for_the_context_is_cut_to_fit() {
    let dir = project();
    // the notes files the budget lists by path would be summarized in the background, each
    // asking the scripted model out of turn: this test is about the prompt's own fit
    std::fs::write(dir.path().join("tokamak.toml"), "[checkers]\nenable = []\n[context]\nsummaries = 0\n")
        .expect("settings");
    for m in 0..30 {
        let mut text = String::new();
        for f in 0..40 {
            text.push_str(&format!(
                "def write_notes_{m}_{f}(notes, path, options):\n    \"\"\"Writes notes of kind {f} for module {m} to the path with the options.\"\"\"\n    return notes\n\n\n"
            ));
        }
        std::fs::write(dir.path().join(format!("notes_{m:02}.py")), text).expect("write");
    }
    let model = ModelServer::start(vec![
        too_long(8192),
        plan("openai"),
        too_long(4096),
        openai(
            json!({"content": "", "tool_calls": [native("create", r#"{"path": "NOTES.md", "text": "a\n"}"#)]}),
            "tool_calls",
        ),
        openai(json!({"content": "Written."}), "stop"),
    ]);
    let output = run(dir.path(), &model, "openai");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("NOTES.md")).unwrap_or_default(), "a\n");
    let firsts = first_messages(&model);
    assert_eq!(firsts.len(), 5, "{stderr}");
    let left_out = "was left out to fit the model's context";
    // the planner's view, cut after the refusal
    assert!(!firsts[0].contains(left_out) && firsts[1].contains(left_out), "{firsts:#?}");
    assert!(firsts[1].len() < firsts[0].len() * 3 / 4, "{firsts:#?}");
    // the step's first prompt goes out fitted to the length learned, and is cut again when
    // the server names a smaller one
    assert!(firsts[2].contains(left_out), "{}", firsts[2]);
    assert!(firsts[3].len() < firsts[2].len(), "{} → {}", firsts[2].len(), firsts[3].len());
    assert!(
        stderr.contains(
            "the prompt was too long for the model's context (4096 tokens): the workspace view was cut from ~"
        ),
        "{stderr}"
    );
    // a prompt with its room fits what the server named, estimated as the agent does
    let last = &model.requests()[3].body;
    let estimated = last.to_string().len() / 4;
    assert!(estimated < 4096, "{estimated} tokens sent against a context of 4096");
}
