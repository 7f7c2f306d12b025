//! The model providers against a scripted model server speaking each provider's real wire
//! format over real HTTP on 127.0.0.1: replies, streams, usage, retries, and every failure
//! in one sentence that names the endpoint and never the key.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use support::model_server::*;
use tokamak::model::{
    self, CallOptions, FinishReason, Message, Model, ModelConfig, ModelError, ModelSettings, Request, Usage,
};

const KEY: &str = "sk-test-0123456789-secret";

fn config(server: &ModelServer, provider: &str, tweak: impl FnOnce(&mut ModelSettings)) -> ModelConfig {
    let mut settings = ModelSettings {
        provider: Some(provider.to_string()),
        base_url: Some(server.url()),
        model: Some("scripted".to_string()),
        api_key_env: Some("TEST_KEY".to_string()),
        retry_base_ms: Some(10),
        ..ModelSettings::default()
    };
    tweak(&mut settings);
    let env = |name: &str| (name == "TEST_KEY").then(|| KEY.to_string());
    ModelConfig::resolve(&settings, &BTreeMap::new(), None, &env).expect("config")
}

fn connect(server: &ModelServer, provider: &str) -> std::sync::Arc<dyn Model> {
    model::connect(config(server, provider, |_| {})).expect("connect")
}

fn chat() -> Request {
    Request {
        temperature: Some(0.1),
        max_tokens: Some(64),
        stop: vec!["```".to_string()],
        ..Request::chat(vec![Message::system("Be brief."), Message::user("Fix the bug in `main`.")])
    }
}

/// Sends streamed and returns the reply and the deltas in order.
async fn streamed(
    model: &dyn Model,
    request: &Request,
) -> (Result<tokamak::model::Reply, ModelError>, Vec<String>) {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions { deltas: Some(sender), ..CallOptions::default() };
    let reply = model.send(request, &options).await;
    let mut deltas = Vec::new();
    while let Ok(delta) = receiver.try_recv() {
        deltas.push(delta);
    }
    (reply, deltas)
}

#[tokio::test]
async fn openai_chat_sends_the_request_and_reads_the_reply() {
    let server = ModelServer::start(vec![openai_chat("Use `x + 1`.")]);
    let reply = connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!(reply.text, "Use `x + 1`.");
    assert_eq!(
        reply.usage,
        Usage { prompt_tokens: 21, completion_tokens: 7, cached_prompt_tokens: 0, estimated: false }
    );
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.model, "scripted-model");
    let request = &server.requests()[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(
        request.body,
        json!({
            "model": "scripted", "temperature": 0.1f32, "max_tokens": 64, "stream": false, "stop": ["```"],
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Fix the bug in `main`."}],
        })
    );
}

#[tokio::test]
async fn openai_chat_streams_deltas_in_order() {
    let server = ModelServer::start(vec![openai_chat_stream(&["Use ", "`x + 1`", "."])]);
    let (reply, deltas) = streamed(connect(&server, "openai").as_ref(), &chat()).await;
    let reply = reply.unwrap();
    assert_eq!(deltas, ["Use ", "`x + 1`", "."]);
    assert_eq!(reply.text, "Use `x + 1`.");
    assert_eq!(
        reply.usage,
        Usage { prompt_tokens: 21, completion_tokens: 3, cached_prompt_tokens: 0, estimated: false }
    );
    let body = &server.requests()[0].body;
    assert_eq!(
        (body["stream"].clone(), body["stream_options"].clone()),
        (json!(true), json!({"include_usage": true}))
    );
}

#[tokio::test]
async fn completions_for_base_models_and_estimated_usage() {
    let server =
        ModelServer::start(vec![openai_completion(" 42\n", false), openai_completion_stream(&[" 4", "2"])]);
    let model = connect(&server, "openai");
    let prompt = Request { max_tokens: Some(4), ..Request::prompt("Q: 6 * 7?\nA:") };
    let reply = model.send(&prompt, &CallOptions::default()).await.unwrap();
    assert_eq!(reply.text, " 42\n");
    assert_eq!(reply.finish, FinishReason::Length);
    // no usage in the reply: estimated as one token per four characters
    assert_eq!(
        reply.usage,
        Usage { prompt_tokens: 3, completion_tokens: 1, cached_prompt_tokens: 0, estimated: true }
    );
    let (reply, deltas) = streamed(model.as_ref(), &prompt).await;
    assert_eq!((reply.unwrap().text, deltas), (" 42".to_string(), vec![" 4".to_string(), "2".to_string()]));
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/completions");
    assert_eq!(requests[0].body["prompt"], "Q: 6 * 7?\nA:");
}

#[tokio::test]
async fn anthropic_messages_plain_and_streamed() {
    let server = ModelServer::start(vec![anthropic_message("Done."), anthropic_stream(&["Do", "ne."])]);
    let model = connect(&server, "anthropic");
    let reply = model.send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!(
        (reply.text.as_str(), reply.usage),
        (
            "Done.",
            Usage { prompt_tokens: 25, completion_tokens: 9, cached_prompt_tokens: 0, estimated: false }
        )
    );
    let (reply, deltas) = streamed(model.as_ref(), &chat()).await;
    let reply = reply.unwrap();
    assert_eq!((reply.text.as_str(), deltas.len(), reply.model.as_str()), ("Done.", 2, "claude-scripted"));
    assert_eq!(
        reply.usage,
        Usage { prompt_tokens: 25, completion_tokens: 9, cached_prompt_tokens: 0, estimated: false }
    );
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    // the system prompt and the conversation so far are cache breakpoints
    let breakpoint = json!({"type": "ephemeral"});
    assert_eq!(
        request.body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": breakpoint}])
    );
    assert_eq!(
        request.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Fix the bug in `main`.", "cache_control": breakpoint}]}])
    );
    assert_eq!(request.body["stop_sequences"], json!(["```"]));
}

/// Prompt caching: Anthropic's breakpoints on the system prompt, the last tool and the last
/// turn; the cached prompt tokens each provider reports (OpenAI's `cached_tokens`,
/// llama.cpp's `timings.cache_n`, Anthropic's `cache_read_input_tokens`, part of the prompt).
#[tokio::test]
async fn prompt_caching_is_asked_for_and_its_tokens_reported() {
    let anthropic_cached = json_reply(
        200,
        json!({"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1500, "output_tokens": 3}}),
    );
    let server = ModelServer::start(vec![anthropic_cached]);
    let model = connect(&server, "anthropic");
    let mut request = chat();
    request.tools = vec![
        model::Tool {
            name: "read".into(),
            description: "Read.".into(),
            parameters: json!({"type": "object"}),
        },
        model::Tool {
            name: "done".into(),
            description: "Done.".into(),
            parameters: json!({"type": "object"}),
        },
    ];
    let reply = model.send(&request, &CallOptions::default()).await.expect("a reply");
    assert_eq!((reply.usage.prompt_tokens, reply.usage.cached_prompt_tokens), (1510, 1500));
    let sent = &server.requests()[0].body;
    assert_eq!(sent["tools"][0].get("cache_control"), None);
    assert_eq!(sent["tools"][1]["cache_control"], json!({"type": "ephemeral"}));

    let openai_cached = |usage: serde_json::Value, timings: serde_json::Value| {
        json_reply(
            200,
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                   "usage": usage, "timings": timings}),
        )
    };
    let server = ModelServer::start(vec![
        openai_cached(
            json!({"prompt_tokens": 2000, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 1920}}),
            serde_json::Value::Null,
        ),
        openai_cached(
            json!({"prompt_tokens": 800, "completion_tokens": 3}),
            json!({"cache_n": 790, "prompt_n": 10}),
        ),
    ]);
    let model = connect(&server, "openai");
    for want in [1920, 790] {
        let reply = model.send(&chat(), &CallOptions::default()).await.expect("a reply");
        assert_eq!(reply.usage.cached_prompt_tokens, want);
    }
}

#[tokio::test]
async fn ollama_native_chat_plain_and_ndjson() {
    let server = ModelServer::start(vec![ollama_chat("Done."), ollama_stream(&["Do", "ne", "."])]);
    let model = connect(&server, "ollama");
    let reply = model.send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!(
        (reply.text.as_str(), reply.usage),
        (
            "Done.",
            Usage { prompt_tokens: 33, completion_tokens: 11, cached_prompt_tokens: 0, estimated: false }
        )
    );
    let (reply, deltas) = streamed(model.as_ref(), &chat()).await;
    assert_eq!((reply.unwrap().text, deltas.len()), ("Done.".to_string(), 3));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/api/chat");
    assert_eq!(request.body["options"], json!({"temperature": 0.1f32, "num_predict": 64, "stop": ["```"]}));
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_time_the_server_asks() {
    let server = ModelServer::start(vec![rate_limited(1), openai_chat("ok")]);
    let reply = connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!(reply.text, "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at.duration_since(requests[0].at);
    assert!(waited >= Duration::from_millis(900), "Retry-After: 1 was not honoured: {waited:?}");
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = ModelServer::start(vec![error(500, "boom"), error(503, "busy"), openai_chat("ok")]);
    assert_eq!(connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap().text, "ok");

    let server = ModelServer::start(vec![
        error(500, "boom"),
        error(500, "boom"),
        error(500, "boom"),
        error(502, "still"),
    ]);
    let err = connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap_err();
    assert_eq!(server.requests().len(), 4, "one try and three retries");
    assert_eq!(
        err.to_string(),
        format!(
            "the model at {}/v1/chat/completions failed (502) after 4 attempt(s): still [server_error]",
            server.url()
        )
    );
    let server = ModelServer::start(vec![rate_limited(0), rate_limited(0), rate_limited(0), rate_limited(0)]);
    let err = connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap_err();
    assert!(matches!(err, ModelError::RateLimited { attempts: 4, .. }), "{err}");
}

#[tokio::test]
async fn errors_say_what_is_wrong_and_never_the_key() {
    let unauthorized = json_reply(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error", "code": "invalid_api_key"}}),
    );
    let no_model = json_reply(
        404,
        json!({"error": {"message": "The model `scripted` does not exist", "code": "model_not_found"}}),
    );
    let too_long = json_reply(
        400,
        json!({"error": {"message": "This model's maximum context length is 4096 tokens", "code": "context_length_exceeded"}}),
    );
    let wrong_path = Scripted::Body {
        status: 404,
        content_type: "text/plain".into(),
        headers: vec![],
        body: "404 page not found".into(),
    };
    let garbage = Scripted::Body {
        status: 200,
        content_type: "application/json".into(),
        headers: vec![],
        body: "{\"choices\": [".into(),
    };
    let server = ModelServer::start(vec![unauthorized, no_model, too_long, wrong_path, garbage]);
    let model = connect(&server, "openai");
    let endpoint = format!("{}/v1/chat/completions", server.url());
    let mut messages = Vec::new();
    for _ in 0..5 {
        let err = model.send(&chat(), &CallOptions::default()).await.unwrap_err();
        messages.push((err.clone(), err.to_string()));
    }
    assert!(matches!(messages[0].0, ModelError::Unauthorized { status: 401, .. }));
    assert!(
        messages[0].1.contains("[redacted]") && messages[0].1.contains("check the key in TEST_KEY"),
        "{}",
        messages[0].1
    );
    assert!(matches!(messages[1].0, ModelError::ModelNotFound { .. }), "{}", messages[1].1);
    assert!(matches!(messages[2].0, ModelError::ContextTooLong { .. }), "{}", messages[2].1);
    assert!(messages[3].1.contains("is base_url right?"), "{}", messages[3].1);
    assert!(matches!(messages[4].0, ModelError::BadReply { .. }), "{}", messages[4].1);
    for (_, message) in &messages {
        assert!(message.contains(&endpoint), "names the endpoint: {message}");
        assert!(!message.contains(KEY), "leaks the key: {message}");
    }
}

#[tokio::test]
async fn a_stream_cut_off_midway_is_an_error_not_a_short_answer() {
    for (provider, reply) in [
        ("openai", cut(openai_chat_stream(&["Use ", "`x", " + 1`"]), 3)),
        ("anthropic", cut(anthropic_stream(&["Do", "ne"]), 5)),
        ("ollama", cut(ollama_stream(&["Do", "ne", "."]), 2)),
    ] {
        let server = ModelServer::start(vec![reply]);
        let (result, deltas) = streamed(connect(&server, provider).as_ref(), &chat()).await;
        let err = result.unwrap_err();
        assert!(matches!(err, ModelError::StreamCut { received, .. } if received > 0), "{provider}: {err}");
        assert!(!deltas.is_empty(), "{provider}");
    }
}

#[tokio::test]
async fn an_ndjson_stream_closed_in_the_middle_of_a_line_is_cut_not_garbage() {
    let Scripted::Stream { content_type, mut pieces, pause, .. } = ollama_stream(&["Do", "ne"]) else {
        unreachable!()
    };
    pieces.truncate(2);
    pieces.push("{\"model\": \"qwen-scr".to_string());
    let server = ModelServer::start(vec![Scripted::Stream { content_type, pieces, cut_after: None, pause }]);
    let (result, _) = streamed(connect(&server, "ollama").as_ref(), &chat()).await;
    let err = result.unwrap_err();
    assert!(matches!(err, ModelError::StreamCut { received: 4, .. }), "{err}");
}

#[tokio::test]
async fn cancelling_stops_the_request() {
    let server = ModelServer::start(vec![endless_openai_stream()]);
    let model = connect(&server, "openai");
    let options =
        CallOptions { deltas: Some(tokio::sync::mpsc::unbounded_channel().0), ..CallOptions::default() };
    let cancel = options.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let err = model.send(&chat(), &options).await.unwrap_err();
    assert!(matches!(err, ModelError::Cancelled { .. }), "{err}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.disconnects() == 0 {
        assert!(std::time::Instant::now() < deadline, "the server kept streaming to nobody");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_reply_that_never_ends_times_out() {
    let server = ModelServer::start(vec![endless_openai_stream()]);
    let model = model::connect(config(&server, "openai", |s| s.timeout_ms = Some(500))).unwrap();
    let (result, _) = streamed(model.as_ref(), &chat()).await;
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("the model at {}/v1/chat/completions did not finish within 0.5 s", server.url())
    );
    assert!(matches!(err, ModelError::Timeout { .. }));
}

#[tokio::test]
async fn a_slow_reply_within_the_timeout_is_fine() {
    let server = ModelServer::start(vec![Scripted::Delayed(
        Duration::from_millis(300),
        Box::new(openai_chat("late")),
    )]);
    let reply = connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!(reply.text, "late");
}

#[tokio::test]
async fn nothing_listening_says_what_to_set() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings =
        ModelSettings { base_url: Some(format!("http://127.0.0.1:{port}")), ..ModelSettings::default() };
    let config = ModelConfig::resolve(&settings, &BTreeMap::new(), None, &|_| None).unwrap();
    let err = model::connect(config).unwrap().send(&chat(), &CallOptions::default()).await.unwrap_err();
    assert!(matches!(err, ModelError::Unreachable { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("cannot reach the model at http://127.0.0.1:{port}/v1/chat/completions")),
        "{err}"
    );
}

#[tokio::test]
async fn a_whole_reply_cut_off_is_not_called_a_stream() {
    for (provider, reply) in [
        ("openai", cut(openai_chat("a reply that will not arrive whole"), 40)),
        ("anthropic", cut(anthropic_message("a reply that will not arrive whole"), 40)),
        ("ollama", cut(ollama_chat("a reply that will not arrive whole"), 40)),
    ] {
        let server = ModelServer::start(vec![reply]);
        let model = model::connect(config(&server, provider, |s| s.max_retries = Some(0))).expect("connect");
        let err = model.send(&chat(), &CallOptions::default()).await.unwrap_err();
        assert!(matches!(err, ModelError::BodyCut { .. }), "{provider}: {err:?}");
        let said = err.to_string();
        assert!(
            said.contains("cut its reply off before it was complete") && !said.contains("stream"),
            "{said}"
        );
    }
}

fn with_tools(messages: Vec<Message>) -> Request {
    let tool = tokamak::model::Tool {
        name: "read".to_string(),
        description: "Read a file.".to_string(),
        parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    };
    Request { tools: vec![tool], ..Request::chat(messages) }
}

#[tokio::test]
async fn tool_calls_in_every_wire_format_streamed_and_not() {
    let calls: Vec<Call> = vec![
        ("read", serde_json::json!({"path": "src/app.py"})),
        ("read", serde_json::json!({"path": "한글.py"})),
    ];
    for (provider, reply, stream) in [
        ("openai", openai_tool_calls("Looking.", &calls), false),
        ("openai", openai_tool_calls_stream(&calls), true),
        ("anthropic", anthropic_tool_use("Looking.", &calls), false),
        ("anthropic", anthropic_tool_use_stream(&calls), true),
        ("ollama", ollama_tool_calls(&calls), false),
        ("ollama", ollama_tool_calls_stream(&calls), true),
    ] {
        let server = ModelServer::start(vec![reply]);
        let model = connect(&server, provider);
        let request = with_tools(vec![Message::system("Act."), Message::user("Read the app.")]);
        let reply = if stream {
            streamed(model.as_ref(), &request).await.0
        } else {
            model.send(&request, &CallOptions::default()).await
        }
        .unwrap_or_else(|err| panic!("{provider} (streamed: {stream}): {err}"));
        let got: Vec<(String, serde_json::Value)> = reply
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).expect("JSON arguments")))
            .collect();
        let expected: Vec<(String, serde_json::Value)> =
            calls.iter().map(|(n, a)| (n.to_string(), a.clone())).collect();
        assert_eq!(got, expected, "{provider} (streamed: {stream})");
        assert!(reply.tool_calls.iter().all(|c| !c.id.is_empty()), "{provider}: ids");
        // the tools went out in the provider's own shape
        let body = &server.requests()[0].body;
        let tool = &body["tools"][0];
        match provider {
            "anthropic" => assert_eq!(tool["input_schema"]["required"][0], "path", "{body}"),
            _ => assert_eq!(tool["function"]["name"], "read", "{body}"),
        }
    }
}

#[tokio::test]
async fn tool_results_go_back_in_every_wire_format() {
    let call = tokamak::model::ToolCall {
        id: "call_7".into(),
        name: "read".into(),
        arguments: r#"{"path":"a.py"}"#.into(),
    };
    let messages = vec![
        Message::system("Act."),
        Message::user("Read a.py."),
        Message::assistant_calls("", vec![call.clone()]),
        Message::tool_result(&call, "a.py (1 lines):\nx = 1\n"),
    ];
    for (provider, reply) in [
        ("openai", openai_chat("done")),
        ("anthropic", anthropic_message("done")),
        ("ollama", ollama_chat("done")),
    ] {
        let server = ModelServer::start(vec![reply]);
        connect(&server, provider)
            .send(&with_tools(messages.clone()), &CallOptions::default())
            .await
            .expect(provider);
        let sent = &server.requests()[0].body["messages"];
        let sent = sent.as_array().expect("messages");
        match provider {
            "openai" => {
                assert_eq!(sent[2]["tool_calls"][0]["id"], "call_7");
                assert_eq!(sent[2]["tool_calls"][0]["function"]["arguments"], r#"{"path":"a.py"}"#);
                assert_eq!(
                    (sent[3]["role"].as_str(), sent[3]["tool_call_id"].as_str()),
                    (Some("tool"), Some("call_7"))
                );
            }
            "anthropic" => {
                // the system prompt apart; the call a tool_use block, its result a tool_result
                assert_eq!(sent[1]["content"][0]["type"], "tool_use");
                assert_eq!(sent[1]["content"][0]["input"]["path"], "a.py");
                assert_eq!(sent[2]["role"], "user");
                assert_eq!(sent[2]["content"][0]["tool_use_id"], "call_7");
            }
            _ => {
                assert_eq!(sent[2]["tool_calls"][0]["function"]["arguments"]["path"], "a.py");
                assert_eq!(
                    (sent[3]["role"].as_str(), sent[3]["tool_name"].as_str()),
                    (Some("tool"), Some("read"))
                );
            }
        }
    }
}

/// Reasoning is not the answer, in every provider, streamed or not: `<think>` blocks in the
/// content (split across stream pieces), `reasoning_content` deltas, Anthropic's thinking
/// blocks and Ollama's `thinking` are the reply's reasoning, and its text is the answer.
#[tokio::test]
async fn reasoning_is_kept_apart_from_the_answer_streamed_or_not() {
    let thinking = ["<thi", "nk>\nmaybe delete", " the tests?\n</th", "ink>\nThe ", "answer."];
    let event = |kind: &str, data: serde_json::Value| format!("event: {kind}\ndata: {data}\n\n");
    let reasoning_stream = Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: vec![
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "maybe delete"}, "finish_reason": null}]})
            ),
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"reasoning_content": " the tests?"}, "finish_reason": null}]})
            ),
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": "The answer."}, "finish_reason": "stop"}]})
            ),
            "data: [DONE]\n\n".to_string(),
        ],
        cut_after: None,
        pause: Duration::from_millis(2),
    };
    let anthropic_thinking = Scripted::Stream {
        content_type: "text/event-stream".into(),
        pieces: vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "claude-scripted", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "maybe delete the tests?"}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "The answer."}}),
            ),
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ],
        cut_after: None,
        pause: Duration::from_millis(2),
    };
    let cases: Vec<(&str, Scripted, bool)> = vec![
        ("openai", openai_chat(&thinking.concat()), false),
        ("openai", openai_chat_stream(&thinking), true),
        ("openai", reasoning_stream, true),
        (
            "openai",
            json_reply(
                200,
                json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer.", "reasoning_content": "maybe delete the tests?"}, "finish_reason": "stop"}]}),
            ),
            false,
        ),
        ("anthropic", anthropic_stream(&thinking), true),
        ("anthropic", anthropic_thinking, true),
        (
            "anthropic",
            json_reply(
                200,
                json!({"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [{"type": "thinking", "thinking": "maybe delete the tests?", "signature": "s"}, {"type": "text", "text": "The answer."}], "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 9}}),
            ),
            false,
        ),
        ("ollama", ollama_stream(&thinking), true),
        (
            "ollama",
            json_reply(
                200,
                json!({"model": "q", "message": {"role": "assistant", "content": "The answer.", "thinking": "maybe delete the tests?"}, "done": true, "done_reason": "stop"}),
            ),
            false,
        ),
    ];
    for (index, (provider, reply, stream)) in cases.into_iter().enumerate() {
        let server = ModelServer::start(vec![reply]);
        let model = connect(&server, provider);
        let reply = if stream {
            streamed(model.as_ref(), &chat()).await.0
        } else {
            model.send(&chat(), &CallOptions::default()).await
        }
        .unwrap_or_else(|err| panic!("case {index} ({provider}): {err}"));
        assert_eq!(reply.text, "The answer.", "case {index} ({provider})");
        assert!(reply.reasoning.contains("maybe delete the tests?"), "case {index} ({provider}): {reply:?}");
        assert!(!reply.text.contains("delete"), "case {index} ({provider})");
    }
}

/// The context window: the settings' when set; else what the server says of the model it
/// serves — llama.cpp's `/props`, vLLM's `/v1/models`, Ollama's `/api/ps` — asked once it is
/// known; a server that says nothing (a hosted API, Anthropic's) leaves it unknown.
#[tokio::test]
async fn the_context_window_is_the_settings_or_the_servers() {
    // llama.cpp
    let server = ModelServer::start(vec![]);
    server.describe("/props", json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}));
    let llama = connect(&server, "openai");
    assert_eq!(llama.context_window().await, Some(8192));
    assert_eq!(llama.context_window().await, Some(8192));
    assert_eq!(server.gets(), ["/props"], "asked once");
    assert!(server.requests().is_empty(), "no model request was spent on it");

    // vLLM: the model served, by name
    let server = ModelServer::start(vec![]);
    server.describe(
        "/v1/models",
        json!({"object": "list", "data": [
            {"id": "other", "object": "model", "max_model_len": 4096},
            {"id": "scripted", "object": "model", "max_model_len": 32768}
        ]}),
    );
    assert_eq!(connect(&server, "openai").context_window().await, Some(32768));
    assert_eq!(server.gets(), ["/props", "/v1/models"]);

    // a hosted API: a model list without lengths, and nothing learned, so asked again later
    let server = ModelServer::start(vec![]);
    server.describe("/v1/models", json!({"object": "list", "data": [{"id": "scripted", "object": "model"}]}));
    let hosted = connect(&server, "openai");
    assert_eq!(hosted.context_window().await, None);
    assert_eq!(hosted.context_window().await, None);
    assert_eq!(server.gets().len(), 4);

    // Ollama: the loaded model's context
    let server = ModelServer::start(vec![]);
    server.describe(
        "/api/ps",
        json!({"models": [{"name": "scripted", "model": "scripted", "context_length": 4096}]}),
    );
    assert_eq!(connect(&server, "ollama").context_window().await, Some(4096));

    // Anthropic: the settings' only; and the settings win over any server
    let server = ModelServer::start(vec![]);
    assert_eq!(connect(&server, "anthropic").context_window().await, None);
    let configured = config(&server, "anthropic", |s| s.context_window = Some(200_000));
    assert_eq!(model::connect(configured).unwrap().context_window().await, Some(200_000));
    let configured = config(&server, "openai", |s| s.context_window = Some(1000));
    assert_eq!(model::connect(configured).unwrap().context_window().await, Some(1000));
    assert!(server.gets().is_empty(), "nothing asked: {:?}", server.gets());
}

/// A refusal is read as one: Anthropic's `refusal` stop reason and OpenAI's `content_filter`.
#[tokio::test]
async fn a_refusal_is_a_finish_reason_of_its_own() {
    let refusal = json_reply(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted",
               "content": [{"type": "text", "text": "No."}], "stop_reason": "refusal",
               "usage": {"input_tokens": 25, "output_tokens": 1}}),
    );
    let server = ModelServer::start(vec![refusal]);
    let reply = connect(&server, "anthropic").send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!((reply.text.as_str(), reply.finish), ("No.", FinishReason::Refused));
    let filtered = json_reply(
        200,
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "content_filter"}]}),
    );
    let server = ModelServer::start(vec![filtered]);
    let reply = connect(&server, "openai").send(&chat(), &CallOptions::default()).await.unwrap();
    assert_eq!(reply.finish, FinishReason::Refused);
}
