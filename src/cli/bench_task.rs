//! `tokamak bench task DIR`: the task agent on every task of a task benchmark (such as
//! `fixtures/taskbench`), the fix benchmark's twin. Each task is a small project and a goal;
//! the agent carries the goal out headless in a fresh copy, then the task's hidden acceptance
//! tests — copied in only afterwards, so the agent never saw them — say whether it is solved
//! (a question's answer must name what it asks, and change nothing). Per task and in total:
//! solved, steps, actions, tokens (prompt, cached, completion), wall time and exit reason.
//! Point it at any model with `--model-url` and `--model`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::bench::{manifests, verify};
use super::run::{RunOptions, copy_workspace, run_copy};
use super::stdio::errln;
use crate::agent::{Endings, ExitReason, Tokens};
use crate::observer::checkers::resolve_program;

/// A task's `task.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// What the user asks, as they would type it.
    pub goal: String,
    pub language: String,
    /// add, fix, rename, option, move or question.
    pub kind: String,
    /// The project's own test command, which the agent runs after each step.
    #[serde(default)]
    pub test: Vec<String>,
    /// The hidden acceptance commands, run in the copy after the run with `accept/` in it.
    #[serde(default)]
    pub accept: Vec<Vec<String>>,
    /// For a question: words the answer must hold (any case); nothing may change.
    #[serde(default)]
    pub answer: Vec<String>,
}

/// One task's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct TaskResult {
    pub task: String,
    pub language: String,
    pub kind: String,
    pub solved: bool,
    pub exit_reason: ExitReason,
    /// Plan steps done.
    pub steps: u32,
    /// Actions taken through the executor.
    pub tool_calls: u32,
    pub tokens: Tokens,
    /// Steps that ended in plain text, and that ended early (sent back by checks or tests).
    pub endings: Endings,
    pub wall_ms: u64,
    /// Why it is not solved, or not known to be.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct TaskBenchOptions {
    /// Only tasks whose folder name contains this.
    pub filter: Option<String>,
    /// `[model]` settings laid over each task's.
    pub model: serde_json::Value,
}

/// Every task under `dir` (folders holding a `task.toml`), sorted by name.
pub fn tasks(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf, Task)>> {
    manifests(dir, "task.toml", "task")
}

/// Carries out every task (in a temporary copy) and judges it.
pub async fn bench_task(dir: &Path, options: &TaskBenchOptions) -> anyhow::Result<Vec<TaskResult>> {
    // the tasks' test and acceptance commands are the bench folder's: run only when the user
    // trusts it (each task runs in a copy, with the trust of its folder)
    let trusted =
        crate::trust::UserConfig::read().map_err(|err| anyhow::anyhow!("{err}"))?.trusting(dir).is_some();
    if !trusted {
        errln!(
            "tokamak: {} is not trusted, so its tasks' tests are not run and no task counts as solved; run `tokamak trust {}` to trust it",
            dir.display(),
            dir.display()
        );
    }
    let mut results = Vec::new();
    for (name, folder, task) in tasks(dir)? {
        if options.filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        results.push(one(&name, &folder, &task, options, trusted).await);
    }
    Ok(results)
}

async fn one(
    name: &str,
    folder: &Path,
    task: &Task,
    options: &TaskBenchOptions,
    trusted: bool,
) -> TaskResult {
    let mut result = TaskResult {
        task: name.to_string(),
        language: task.language.clone(),
        kind: task.kind.clone(),
        solved: false,
        exit_reason: ExitReason::Failed,
        steps: 0,
        tool_calls: 0,
        tokens: Tokens::default(),
        endings: Endings::default(),
        wall_ms: 0,
        note: None,
    };
    let work = match tempfile::tempdir() {
        Ok(work) => work,
        Err(err) => {
            result.note = Some(format!("no temporary folder: {err}"));
            return result;
        }
    };
    if let Err(err) = copy_workspace(&folder.join("project"), work.path())
        .and_then(|()| std::fs::create_dir_all(work.path().join(".git")))
    {
        result.note = Some(format!("the project could not be copied: {err}"));
        return result;
    }
    // the project's test command, its program found the way checkers are (the tools folder)
    let test_command = task.test.split_first().map(|(program, args)| {
        let program = resolve_program(program, work.path(), trusted)
            .map_or_else(|| program.clone(), |path| path.display().to_string());
        std::iter::once(program).chain(args.iter().cloned()).collect::<Vec<_>>()
    });
    let run_options = RunOptions {
        model: options.model.clone(),
        progress: false,
        test_command,
        dry_run: false,
        yes: true,
        role: None,
    };
    let before = snapshot(work.path());
    let started = Instant::now();
    let run = run_copy(work.path(), folder, &task.goal, &run_options).await;
    result.wall_ms = started.elapsed().as_millis() as u64;
    let report = match run {
        Ok(run) => run.report,
        Err(err) => {
            result.note = Some(format!("the run could not start: {err:#}"));
            return result;
        }
    };
    result.exit_reason = report.exit_reason;
    result.steps = report.steps;
    result.tool_calls = report.tool_calls;
    result.tokens = report.tokens;
    result.endings = report.endings;
    if report.exit_reason != ExitReason::Done {
        result.note = Some(report.summary);
        return result;
    }
    result.note = if task.kind == "question" {
        let changed = snapshot(work.path()) != before;
        let answer = report.summary.to_lowercase();
        let missing: Vec<&String> =
            task.answer.iter().filter(|w| !answer.contains(&w.to_lowercase())).collect();
        if changed {
            Some("a question changed files".to_string())
        } else if !missing.is_empty() {
            Some(format!("the answer does not name {missing:?}: {}", report.summary))
        } else {
            None
        }
    } else if !trusted {
        Some("not verified: the bench folder is not trusted".to_string())
    } else {
        accept(folder, work.path(), &task.accept).await.err()
    };
    result.solved = result.note.is_none();
    result
}

/// Copies the hidden tests in and runs each acceptance command; `Err` says which failed.
async fn accept(folder: &Path, work: &Path, commands: &[Vec<String>]) -> Result<(), String> {
    let hidden = folder.join("accept");
    if hidden.is_dir() {
        copy_workspace(&hidden, &work.join("accept"))
            .map_err(|err| format!("the acceptance tests: {err}"))?;
    }
    for command in commands {
        verify(command, work).await.map_err(|failure| format!("accept: {failure}"))?;
    }
    Ok(())
}

/// Every file's path and text under `root` but `.git`: to tell whether a run changed any.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    crate::walk::project(root)
        .with_hidden()
        .with_ignored()
        .files()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap_or_default();
            (path, bytes)
        })
        .collect()
}

/// The results as a table, one task a line, then the totals.
pub fn table(results: &[TaskResult]) -> String {
    use std::fmt::Write as _;
    let width = results.iter().map(|r| r.task.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:<width$}  {:<8}  {:<6}  {:>5}  {:>7}  {:>7}  {:>7}  {:>10}  {:>7}  {}\n",
        "task",
        "kind",
        "solved",
        "steps",
        "actions",
        "prompt",
        "cached",
        "completion",
        "wall s",
        "exit reason"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<width$}  {:<8}  {:<6}  {:>5}  {:>7}  {:>7}  {:>7}  {:>10}  {:>7.1}  {}{}",
            r.task,
            r.kind,
            if r.solved { "yes" } else { "no" },
            r.steps,
            r.tool_calls,
            r.tokens.prompt,
            r.tokens.cached,
            r.tokens.completion,
            r.wall_ms as f64 / 1000.0,
            r.exit_reason,
            r.note.as_deref().map(|note| format!(" ({note})")).unwrap_or_default(),
        );
    }
    let solved = results.iter().filter(|r| r.solved).count();
    let sum = |f: fn(&TaskResult) -> u64| results.iter().map(f).sum::<u64>();
    let _ = writeln!(
        out,
        "total: {solved}/{} solved, {} steps ({} ended in plain text, {} ended early), {} actions, {} prompt ({} cached) + {} completion tokens, {:.1} s",
        results.len(),
        sum(|r| u64::from(r.steps)),
        sum(|r| u64::from(r.endings.plain)),
        sum(|r| u64::from(r.endings.early)),
        sum(|r| u64::from(r.tool_calls)),
        sum(|r| u64::from(r.tokens.prompt)),
        sum(|r| u64::from(r.tokens.cached)),
        sum(|r| u64::from(r.tokens.completion)),
        sum(|r| r.wall_ms) as f64 / 1000.0
    );
    out
}
