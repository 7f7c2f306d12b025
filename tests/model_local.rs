//! End to end with a real model: llama.cpp's server with Gemma 3 270M (a small *base*
//! model), set up by `bash scripts/local-model start`. Opt-in: built only with
//! `--features local-model-test`, and then `TOKAMAK_TEST_MODEL_URL` (the URL
//! `scripts/local-model start` prints) must be set — a test without its model fails, never
//! passes having done nothing.

use std::collections::BTreeMap;

use tokamak::model::{self, CallOptions, Message, Model, ModelConfig, ModelSettings, Request};

/// llama-cpp-python's server answers one request at a time and garbles concurrent streams,
/// so the tests take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn local_model() -> Option<std::sync::Arc<dyn Model>> {
    let Ok(url) = std::env::var("TOKAMAK_TEST_MODEL_URL") else {
        panic!("set TOKAMAK_TEST_MODEL_URL (`bash scripts/local-model start` prints it)");
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

/// The whole fix loop, `tokamak fix`, against the real model: a 270M base model rarely
/// writes a usable SEARCH/REPLACE block, so this proves the loop survives real replies —
/// it ends with a guard's exit reason, spends real tokens and never corrupts the file.
#[tokio::test]
async fn the_fix_loop_runs_against_a_real_model() {
    if local_model().is_none() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let Ok(url) = std::env::var("TOKAMAK_TEST_MODEL_URL") else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).expect(".git");
    std::fs::write(dir.path().join("tokamak.toml"), "[checkers]\nenable = []\n[model]\nmax_tokens = 200\n")
        .expect("settings");
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    std::fs::write(dir.path().join("mean.py"), broken).expect("write");
    // the user's own settings and cache, not the real ones
    let user = tempfile::tempdir().expect("temp dir");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .env("XDG_CONFIG_HOME", user.path().join("config"))
        .env("XDG_CACHE_HOME", user.path().join("cache"))
        .args(["fix", "--format", "json", "--max-attempts", "2", "mean.py"])
        .current_dir(dir.path())
        .env("TOKAMAK_LLM_URL", &url)
        .env("TOKAMAK_MODEL", "gemma3-270m")
        .output()
        .await
        .expect("run tokamak fix");
    let results: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
    let result = &results[0];
    let reason = result["exit_reason"].as_str().expect("an exit reason");
    assert!(["clean", "max_attempts", "repeated_error"].contains(&reason), "{result}");
    assert!(result["tokens"]["prompt"].as_u64().unwrap_or(0) > 100, "real usage: {result}");
    let after = std::fs::read_to_string(dir.path().join("mean.py")).expect("read");
    if reason == "clean" {
        assert_eq!(after, broken.replace("values))", "values)"));
    } else {
        assert!(after.contains("def mean(values):"), "the file is never mangled: {after}");
    }
    assert_eq!(output.status.code(), Some(if reason == "clean" { 0 } else { 1 }));
}

/// `tokamak bench task` against the real model: a 270M base model solves few tasks, if any —
/// the point is that every reply path and the harness work with a real server. Every task
/// ends with an exit reason, spends real tokens, and the report parses. The figures are
/// printed (`-- --nocapture`), never asserted.
#[tokio::test]
async fn bench_task_runs_against_a_real_model() {
    if local_model().is_none() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let Ok(url) = std::env::var("TOKAMAK_TEST_MODEL_URL") else { return };
    let bench = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/taskbench");
    // the user trusts the bench folder (its tests are programs); their own cache
    let user = tempfile::tempdir().expect("temp dir");
    let settings = user.path().join("config/tokamak");
    std::fs::create_dir_all(&settings).expect("settings folder");
    // and keeps each task short: a small model can wander
    std::fs::write(
        settings.join("config.toml"),
        format!(
            "trusted = [{:?}]\n[limits]\ntool_calls = 8\niterations = 2\nwall_time_s = 120\n[plan]\nmax_steps = 3\n",
            bench.display().to_string()
        ),
    )
    .expect("settings");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .env("XDG_CONFIG_HOME", user.path().join("config"))
        .env("XDG_CACHE_HOME", user.path().join("cache"))
        .args([
            "bench",
            "task",
            &bench.display().to_string(),
            "--format",
            "json",
            "--max-reply-tokens",
            "200",
        ])
        .args(["--model-url", &url, "--model", "gemma3-270m"])
        .output()
        .await
        .expect("run tokamak bench task");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {stderr}"));
    let results = results.as_array().expect("a list");
    assert!(results.len() >= 12, "{results:?}");
    let mut solved = 0;
    for result in results {
        assert!(result["exit_reason"].is_string(), "{result}");
        solved += usize::from(result["solved"] == true);
    }
    let sum = |key: &str| results.iter().filter_map(|r| r.pointer(key).and_then(|v| v.as_u64())).sum::<u64>();
    let prompt = sum("/tokens/prompt");
    assert!(prompt > 0, "real usage: {results:?}");
    // measured, never asserted
    eprintln!(
        "bench task against the local model: {solved}/{} solved, {} steps ({} ended in plain text, {} early), {} actions, {prompt} prompt ({} cached) + {} completion tokens, {:.0} s",
        results.len(),
        sum("/steps"),
        sum("/endings/plain"),
        sum("/endings/early"),
        sum("/tool_calls"),
        sum("/tokens/cached"),
        sum("/tokens/completion"),
        sum("/wall_ms") as f64 / 1000.0
    );
    for result in results {
        eprintln!(
            "  {} {} steps {} actions {} endings {} exit {} ({})",
            result["task"],
            if result["solved"] == true { "solved" } else { "not solved" },
            result["steps"],
            result["tool_calls"],
            result["endings"],
            result["exit_reason"],
            result["note"].as_str().unwrap_or("")
        );
    }
}
