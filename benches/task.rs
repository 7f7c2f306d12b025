//! Benchmark of the task engine's own overhead per step, with the model and the checkers
//! taken out: an in-process model plays a script at once (a plan of N steps, then per step a
//! native `edit` tool call and `done`), no checker runs but Tokamak's syntax check, there is
//! no test command, no checkpoint and no audit log. One run = plan, and per step: the act
//! loop with its prompt, the edit through the executor on disk, observing the changed file
//! (a private Observer: read, parse, settle), reflecting, the plan sent to the editor. The
//! figure per step is the run's time over N. Printed once: the prompt each step sends,
//! estimated at four characters a token (what a real model would be billed for), and the
//! prefix each request shares with the one before, laid out as a chat template does —
//! within a step and across steps of different roles: what a server's prompt cache reuses.
//! Beside it, the mode machine's own cost per transition.

mod common;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokamak::agent::{ExitReason, Runs, TaskContext, TaskRequest, run_task};
use tokamak::config::{CheckerSettings, FixSettings, LimitSettings, PlanSettings, Settings, SyntaxSettings};
use tokamak::editor::Editor;
use tokamak::executor::{Confinement, ExecutorContext, ExecutorSettings, RefuseUnlisted};
use tokamak::model::{
    CallOptions, FinishReason, Input, Model, ModelError, ModelInfo, Provider, Reply, Request, ToolCall,
    ToolsMode, Usage,
};
use tokamak::observer::Observer;
use tokamak::observer::checkers::Checkers;
use tokamak::workspace::Workspace;
use url::Url;

/// Plays its replies in order, at once, and notes each prompt's size in characters and the
/// prompt itself as a chat template would lay it out (tools first, then the messages).
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    prompts: Mutex<Vec<usize>>,
    rendered: Mutex<Vec<String>>,
}

/// A request as a chat template lays it out (Qwen's and Hermes': the system message, then the
/// tools, then the conversation), for measuring shared prefixes.
fn render(request: &Request) -> String {
    let tools: String =
        request.tools.iter().map(|t| format!("{} {} {}\n", t.name, t.description, t.parameters)).collect();
    let mut out = String::new();
    if let Input::Chat(messages) = &request.input {
        for (index, message) in messages.iter().enumerate() {
            out.push_str(&format!("<{}>{}", message.role.as_str(), message.content));
            for call in &message.tool_calls {
                out.push_str(&format!("[{} {}]", call.name, call.arguments));
            }
            out.push('\n');
            if index == 0 {
                out.push_str(&tools);
            }
        }
    }
    out
}

/// The characters `a` and `b` share from their start.
fn shared(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

#[async_trait]
impl Model for Script {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            provider: Provider::OpenAi,
            model: "script".into(),
            endpoint: "in-process".into(),
            tools: ToolsMode::Native,
            max_tokens: 2048,
            parallel: None,
        }
    }

    async fn send(&self, request: &Request, _: &CallOptions) -> Result<Reply, ModelError> {
        let mut chars = 0;
        if let Input::Chat(messages) = &request.input {
            for message in messages {
                chars += message.content.len()
                    + message.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
            }
        }
        chars +=
            request.tools.iter().map(|t| t.description.len() + t.parameters.to_string().len()).sum::<usize>();
        self.prompts.lock().unwrap().push(chars);
        self.rendered.lock().unwrap().push(render(request));
        Ok(self.replies.lock().unwrap().pop_front().expect("a scripted reply"))
    }
}

fn reply(text: &str, calls: &[(&str, serde_json::Value)]) -> Reply {
    Reply {
        text: text.to_string(),
        reasoning: String::new(),
        signed: Vec::new(),
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall {
                id: format!("c{i}"),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        usage: Usage::default(),
        finish: if calls.is_empty() { FinishReason::Stop } else { FinishReason::ToolCalls },
        model: "script".into(),
        latency: Duration::ZERO,
    }
}

/// The plan, then each step's edit and done. Every second step is a tester's (it names a
/// test), the others a documenter's, as real plans mix roles; each edits a file its role may
/// write (a step whose edit is refused is not done, and the run would not be either).
fn script(steps: usize) -> VecDeque<Reply> {
    let plan: String = (1..=steps)
        .map(|i| {
            if i % 2 == 0 {
                format!("{i}. Give {} a unit test that can check the docstring\n", step_file(i))
            } else {
                format!("{i}. Document the handler in {}\n", step_file(i))
            }
        })
        .collect();
    let mut replies = VecDeque::from([reply(&plan, &[])]);
    for i in 1..=steps {
        let blocks = "<<<<<<< SEARCH\ndef handler(request):\n=======\ndef handler(request):\n    \"\"\"Handles it.\"\"\"\n>>>>>>> REPLACE\n";
        replies.push_back(reply("", &[("edit", json!({"path": step_file(i), "blocks": blocks}))]));
        replies.push_back(reply("", &[("done", json!({"summary": "documented"}))]));
    }
    replies
}

/// The file step `i` edits: a tester's test file, or a documenter's notes.
fn step_file(i: usize) -> String {
    if i.is_multiple_of(2) { format!("test_module_{i}.py") } else { format!("module_{i}.md") }
}

fn project(root: &Path, steps: usize) {
    for i in 1..=steps {
        let mut text =
            format!("\"\"\"Module {i}.\"\"\"\n\n\ndef handler(request):\n    return request.value\n");
        for f in 0..40 {
            text.push_str(&format!("\n\ndef helper_{f}(value):\n    return value + {f}\n"));
        }
        std::fs::write(root.join(format!("module_{i}.py")), &text).unwrap();
        std::fs::write(root.join(step_file(i)), &text).unwrap();
    }
}

/// One run's context on a fresh project, and the model to look at afterwards.
fn setup(steps: usize) -> (tempfile::TempDir, TaskContext, Arc<Script>) {
    setup_with(steps, script(steps), |_| {})
}

/// One run's context playing `replies`, its executor's settings changed by `tweak`.
fn setup_with(
    steps: usize,
    replies: VecDeque<Reply>,
    tweak: impl FnOnce(&mut ExecutorSettings),
) -> (tempfile::TempDir, TaskContext, Arc<Script>) {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), steps);
    let checkers =
        Checkers::from_settings(&CheckerSettings { enable: Some(Vec::new()), ..Default::default() }).unwrap();
    let workspace = Arc::new(Mutex::new(Workspace::new(SyntaxSettings::default())));
    let editor: Arc<dyn Editor> = Arc::new(common::Quiet);
    let root = dir.path().canonicalize().unwrap();
    let observer = Observer::new(workspace, Arc::clone(&editor), checkers, Some(root.clone()));
    let mut settings = ExecutorSettings::from_settings(&Settings::default(), true);
    // measured without a person to ask
    settings.approval = tokamak::config::ApprovalLevel::Low;
    tweak(&mut settings);
    let executor = ExecutorContext::new(
        Confinement::new(&root).unwrap(),
        observer,
        editor,
        settings,
        Arc::new(RefuseUnlisted),
        None,
        Some(tokamak::context::LiveIndex::new(&root, None)),
    );
    let model = Arc::new(Script {
        replies: Mutex::new(replies),
        prompts: Mutex::new(Vec::new()),
        rendered: Mutex::new(Vec::new()),
    });
    let context = TaskContext {
        executor,
        model: Ok(Arc::clone(&model) as Arc<dyn Model>),
        limits: LimitSettings::default(),
        plan: PlanSettings { max_steps: steps, ..PlanSettings::default() },
        fix: FixSettings::default(),
        role_models: None,
        approval: None,
    };
    (dir, context, model)
}

fn run(runtime: &tokio::runtime::Runtime, context: &TaskContext, root: &Path) {
    let uri = Url::from_directory_path(root).unwrap();
    let handle = Runs::default().start(&uri).unwrap();
    let request = TaskRequest {
        goal: "document the handlers".into(),
        plan_id: "plan-bench".into(),
        ..Default::default()
    };
    let report = runtime.block_on(run_task(context, request, handle));
    assert_eq!(report.exit_reason, ExitReason::Done, "{}", report.summary);
}

fn bench_task_steps(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    // the prompts of one run of two steps
    let (dir, context, model) = setup(2);
    run(&runtime, &context, &dir.path().canonicalize().unwrap());
    let prompts = model.prompts.lock().unwrap().clone();
    println!(
        "prompts of a two-step run, estimated tokens (chars / 4): plan {}, then per turn {:?}",
        prompts[0] / 4,
        prompts[1..].iter().map(|chars| chars / 4).collect::<Vec<_>>()
    );
    // the prefix each request shares with the one before: within a step (its second request
    // after its first) and across steps (a step's first request after the last of the step
    // before) — what a server's prompt cache can reuse
    let rendered = model.rendered.lock().unwrap().clone();
    let pairs: Vec<String> = rendered
        .windows(2)
        .enumerate()
        .map(|(i, pair)| {
            let common = shared(&pair[0], &pair[1]);
            format!(
                "{}→{}: {common} of {} chars ({:.0}%)",
                i,
                i + 1,
                pair[1].chars().count(),
                100.0 * common as f64 / pair[1].chars().count().max(1) as f64
            )
        })
        .collect();
    println!("prefix shared with the request before (0: the plan; 1, 2: step 1; 3, 4: step 2): {pairs:?}");
    // through a compression: one step of ten reads, compressed past four replies keeping two
    let mut long = VecDeque::from([reply("1. Read module_1.py\n", &[])]);
    for i in 0..10 {
        let lines = format!("{}-{}", 1 + i * 8, 8 + i * 8);
        long.push_back(reply("", &[("read", json!({"path": "module_1.py", "lines": lines}))]));
    }
    long.push_back(reply("", &[("done", json!({"summary": "read"}))]));
    let (dir, context, model) = setup_with(1, long, |settings| {
        settings.context.compress_turns = 4;
        settings.context.keep_turns = 2;
    });
    run(&runtime, &context, &dir.path().canonicalize().unwrap());
    let rendered = model.rendered.lock().unwrap().clone();
    let shares: Vec<String> = rendered[1..]
        .windows(2)
        .map(|pair| {
            let common = shared(&pair[0], &pair[1]);
            format!("{:.0}%", 100.0 * common as f64 / pair[1].chars().count().max(1) as f64)
        })
        .collect();
    println!(
        "within a step of ten reads, compressed past four replies (each request's prefix shared with the one before): {shares:?}"
    );
    for steps in [2usize, 8] {
        c.bench_function(
            &format!("task run of {steps} steps, model and checkers out (divide by {steps})"),
            |b| {
                b.iter_batched(
                    || setup(steps),
                    |(dir, context, _model)| {
                        run(&runtime, &context, &dir.path().canonicalize().unwrap());
                        dir
                    },
                    BatchSize::PerIteration,
                )
            },
        );
    }
}

/// One transition of the mode machine as a run takes it: seed 000's scenario (a step started
/// in implementation, its edits done, its tests passing, reviewed) with the run's state, four
/// transitions, and the audit line each becomes.
fn bench_mode_transitions(c: &mut Criterion) {
    use tokamak::modes::{Mode, ModeContext, ModeMachine};
    let context =
        ModeContext { auto_test: true, files_touched: 1, pending_changes: Some(1), ..ModeContext::default() };
    c.bench_function(
        "mode machine: seed 000's step, four transitions with their audit lines (divide by 4)",
        |b| {
            b.iter(|| {
                let mut machine = ModeMachine::default();
                let mut lines = Vec::with_capacity(4);
                machine.start(Mode::Implementation, &context).unwrap();
                for trigger in ["code_complete", "tests_passed", "approved"] {
                    machine.fire(trigger, &context).unwrap();
                }
                for t in machine.history() {
                    lines.push(
                        json!({"from": t.from, "trigger": t.trigger, "to": t.to, "phase": t.to.phase()})
                            .to_string(),
                    );
                }
                lines
            })
        },
    );
}

criterion_group!(benches, bench_task_steps, bench_mode_transitions);
criterion_main!(benches);
