//! End to end with a real model: llama.cpp's server with Gemma 3 270M (a small *base*
//! model), set up by `bash scripts/local-model start`. Opt-in: runs when
//! `TOKAMAK_TEST_MODEL_URL` is set (the URL `scripts/local-model start` prints); otherwise
//! each test says why it did nothing.

use std::collections::BTreeMap;

use tokamak::model::{self, CallOptions, Message, Model, ModelConfig, ModelSettings, Request};

/// llama-cpp-python's server answers one request at a time and garbles concurrent streams,
/// so the tests take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn local_model() -> Option<std::sync::Arc<dyn Model>> {
    let Ok(url) = std::env::var("TOKAMAK_TEST_MODEL_URL") else {
        eprintln!("skipping: set TOKAMAK_TEST_MODEL_URL (bash scripts/local-model start prints it)");
        return None;
    };
    let settings = ModelSettings {
        provider: Some("openai".into()),
        base_url: Some(url),
        model: Some("gemma3-270m".into()),
        timeout_ms: Some(120_000),
        ..ModelSettings::default()
    };
    let config = ModelConfig::resolve(&settings, &BTreeMap::new(), None, &|_| None).expect("config");
    Some(model::connect(config).expect("connect"))
}

/// A few-shot prompt a base model continues sensibly.
fn few_shot() -> Request {
    Request {
        max_tokens: Some(4),
        temperature: Some(0.0),
        stop: vec!["\n".into()],
        ..Request::prompt(
            "Capital of France: Paris\nCapital of Japan: Tokyo\nCapital of Italy: Rome\nCapital of Germany:",
        )
    }
}

#[tokio::test]
async fn completion_follows_a_few_shot_prompt() {
    let Some(model) = local_model() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let reply = model.send(&few_shot(), &CallOptions::default()).await.expect("completion");
    assert!(reply.text.contains("Berlin"), "{reply:?}");
    assert!(!reply.usage.estimated, "llama.cpp reports usage: {reply:?}");
    assert!(reply.usage.prompt_tokens > 10 && reply.usage.completion_tokens >= 1, "{reply:?}");
}

#[tokio::test]
async fn completion_streams_the_same_answer() {
    let Some(model) = local_model() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions { deltas: Some(sender), ..CallOptions::default() };
    let reply = model.send(&few_shot(), &options).await.expect("streamed completion");
    let mut streamed = String::new();
    while let Ok(delta) = receiver.try_recv() {
        streamed.push_str(&delta);
    }
    assert_eq!(streamed, reply.text);
    assert!(reply.text.contains("Berlin"), "{reply:?}");
}

#[tokio::test]
async fn chat_answers_with_usage() {
    let Some(model) = local_model() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let request = Request {
        max_tokens: Some(16),
        temperature: Some(0.0),
        ..Request::chat(vec![Message::user("Say hello.")])
    };
    let reply = model.send(&request, &CallOptions::default()).await.expect("chat");
    assert!(!reply.text.trim().is_empty(), "{reply:?}");
    assert!(reply.usage.prompt_tokens > 0 && !reply.usage.estimated, "{reply:?}");
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let streamed = model
        .send(&request, &CallOptions { deltas: Some(sender), ..CallOptions::default() })
        .await
        .expect("streamed chat");
    let mut pieces = 0;
    while receiver.try_recv().is_ok() {
        pieces += 1;
    }
    assert!(pieces >= 1 && !streamed.text.trim().is_empty(), "{streamed:?}");
}
