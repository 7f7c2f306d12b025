//! A fix run (SPEC F1, F2, F4) from its request to its report: what it works with, the
//! counts that survive a cancel or a time limit, and the ending's sentence. The loop itself is
//! a [`run::FixRun`] whose steps read top to bottom; the same engine serves the language server
//! and `tokamak fix`, acting only through the [`Editor`] trait and the [`Observer`].

mod document;
mod ending;
mod reply;
mod run;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

use super::candidates;
use super::runs::RunHandle;
use super::targets::Scope;
use crate::config::FixSettings;
use crate::editor::{Editor, Progress, RunEvent};
use crate::history::{History, Journal};
use crate::model::{Model, ModelError};
use crate::observer::Observer;
use crate::run::{CandidateOutcome, ExitReason, RunReport, Tokens};
use crate::sync::lock;

/// What to fix.
#[derive(Debug, Clone)]
pub struct FixRequest {
    pub uri: Url,
    pub scope: Scope,
}

/// What a run works with; the same for the server and the command line.
pub struct FixContext {
    pub observer: Arc<Observer>,
    pub editor: Arc<dyn Editor>,
    /// The model, or why there is none (the deterministic fixes still run).
    pub model: Result<Arc<dyn Model>, ModelError>,
    pub settings: FixSettings,
    /// Paths are shown to the model relative to this.
    pub root: Option<PathBuf>,
    /// Where runs keep their checkpoints and audit logs (none without a workspace folder).
    pub history: Option<Arc<History>>,
    /// Who is asked before each change (`approval = "high"`: every action is asked); `None`:
    /// the fix the user asked for is made as it comes, undoable in the editor.
    pub approver: Option<Arc<dyn crate::executor::Approver>>,
    /// Runs the project's tests on candidate fixes (SPEC V2): with `fix.candidates` over 1 and
    /// a trusted workspace's `[test] command`, each model attempt asks for several fixes and
    /// applies the first that passes. `None`: one fix at a time, as it comes.
    pub verify: Option<Arc<crate::executor::ExecutorContext>>,
    /// Whether the run's ending runs the tests (through `verify`) on the text it changed when
    /// no candidate was tested on it: "clean" is said only when they pass. Off for a task
    /// step's fix, whose step runs them right after.
    pub final_tests: bool,
    /// The folder is trusted: its rules files are read (else only the user's own).
    pub trusted: bool,
    /// `[[fix.candidate_models]]`: the models candidates come from (empty: `model` at
    /// `fix.candidates` temperatures).
    pub candidate_models: Vec<candidates::ModelCandidates>,
    /// Tokens kept for the model's wrap-up of a run stopped before its end (`limits.
    /// wrap_up_tokens`); `None`: no wrap-up (a task step's fix: its task wraps up).
    pub wrap_up_tokens: Option<u32>,
}

/// Counts that survive the run being stopped from outside (cancel, time limit).
#[derive(Debug, Default)]
struct Tally {
    tokens: Tokens,
    attempts: u32,
    deterministic: u32,
    changed: bool,
    targets_before: usize,
    targets_after: usize,
    /// The time spent waiting for the user's approvals (not counted against the limit).
    waits: Arc<crate::executor::WaitClock>,
    /// The time spent waiting for the model, and for the editor and the checks.
    waited: crate::run::Waited,
    /// Each candidate fix tried, and what the tests could not decide.
    candidates: Vec<crate::run::CandidateReport>,
    candidate_note: Option<String>,
    /// What the run leaves undone, as last observed.
    left: crate::run::Left,
    /// The document changed under the run, and what became of it (seed 003).
    drift: Vec<String>,
    /// The run's confidence in the document lost so far, and why (SPEC G4).
    doubt: i32,
}

/// Why the loop ended, and the sentence that says so.
struct Stop {
    reason: ExitReason,
    summary: String,
    /// The person said no to the fix: the run ended as asked, with nothing to wrap up.
    rejected: bool,
}

impl Stop {
    fn new(reason: ExitReason, summary: impl Into<String>) -> Stop {
        Stop { reason, summary: summary.into(), rejected: false }
    }

    fn failed(summary: impl Into<String>) -> Stop {
        Stop::new(ExitReason::Failed, summary)
    }
}

/// Runs one fix to its end and reports it (also to the editor). The run's registration ends
/// before the report goes out, so the document is free for the next run when it arrives.
pub async fn fix(context: &FixContext, request: &FixRequest, run: RunHandle) -> RunReport {
    let name = display_path(context.root.as_deref(), &request.uri);
    let journal = context
        .history
        .as_ref()
        .map(|history| history.journal(&run.run_id, &format!("fix {name}"), Arc::clone(&context.observer)));
    if let Some(path) = journal.as_ref().and_then(|j| j.audit_path()) {
        run.set_audit(path);
    }
    let mut report = fix_inner(context, request, &run, journal.as_deref()).await;
    // the fix is in the buffer of an open document, not on disk until it is saved
    if !report.files_changed.is_empty()
        && let (Some(root), Ok(path)) = (context.root.as_deref(), request.uri.to_file_path())
        && let Ok(relative) = path.strip_prefix(root)
        && let Some(note) = super::unsaved::note(
            context.editor.as_ref(),
            &context.observer,
            root,
            &[relative.to_string_lossy().to_string()],
        )
    {
        report.summary = format!("{} {note}", report.summary);
    }
    if let Some(journal) = &journal {
        journal.finish(&report).await;
    }
    let run_id = run.run_id.clone();
    drop(run);
    context.editor.run_event(&run_id, &RunEvent::Finished(Box::new(report.clone()))).await;
    report
}

async fn fix_inner(
    context: &FixContext,
    request: &FixRequest,
    run: &RunHandle,
    journal: Option<&Journal>,
) -> RunReport {
    let name = display_path(context.root.as_deref(), &request.uri);
    let begin =
        Progress::Begin { title: format!("Tokamak: fixing {name}"), message: "observing".to_string() };
    context.editor.run_event(&run.run_id, &RunEvent::Progress(begin)).await;
    let tally = Mutex::new(Tally::default());
    let waits = Arc::clone(&lock(&tally).waits);
    let limit = Duration::from_secs(context.settings.time_limit_s.max(1));
    let started = std::time::Instant::now();
    let stop = tokio::select! {
        stop = run_loop(context, request, run, journal, &tally) => stop,
        () = run.cancel.cancelled() => Stop::new(ExitReason::Cancelled, "Cancelled"),
        () = waits.deadline(started, limit) => Stop::new(
            ExitReason::TimeLimit,
            format!("Stopped at the time limit of {} s (fix.time_limit_s)", context.settings.time_limit_s),
        ),
    };
    let mut tally = std::mem::take(&mut *lock(&tally));
    let mut summary = summarize(&name, &stop, &tally);
    // stopped before its end: the model says what it did and what is left (seed 002)
    let wanted = super::wrap_up::wanted(stop.reason) && !stop.rejected;
    let wrap_up = match context.wrap_up_tokens.filter(|_| wanted) {
        Some(budget) => {
            let (asked, usage) = super::wrap_up::wrap_up(
                context.model.as_ref(),
                (&format!("fix the problems in {name}"), stop.reason),
                &summary,
                &fix_facts(&tally),
                budget,
            )
            .await;
            if let Some(usage) = &usage {
                tally.tokens.add(Tokens::of(usage));
            }
            if let Some(journal) = journal {
                journal.record("wrap_up", serde_json::to_value(&asked).unwrap_or_default());
            }
            summary.push_str(&super::wrap_up::sentence(&asked));
            Some(asked)
        }
        None => None,
    };
    tracing::info!("{}: {} — {summary}", run.run_id, stop.reason);
    let end = Progress::End { message: summary.clone() };
    context.editor.run_event(&run.run_id, &RunEvent::Progress(end)).await;
    RunReport {
        run_id: run.run_id.clone(),
        uri: request.uri.clone(),
        exit_reason: stop.reason,
        summary,
        files_changed: if tally.changed { vec![request.uri.clone()] } else { Vec::new() },
        tokens: tally.tokens,
        attempts: tally.attempts,
        deterministic_fixes: tally.deterministic,
        targets_before: tally.targets_before,
        targets_after: tally.targets_after,
        steps: 0,
        tool_calls: 0,
        endings: Default::default(),
        waited: tally.waited,
        candidates: tally.candidates,
        left: if stop.reason == ExitReason::Clean {
            Default::default()
        } else {
            crate::run::Left { drift: tally.drift, ..tally.left }
        },
        step_endings: Vec::new(),
        wrap_up,
    }
}

/// What a fix run did, for the model's wrap-up.
fn fix_facts(tally: &Tally) -> String {
    let mut facts = vec![
        format!("Problems targeted: {}; left: {}", tally.targets_before, tally.targets_after),
        format!("Model attempts: {}; fixes made without the model: {}", tally.attempts, tally.deterministic),
        format!("The file was changed: {}", if tally.changed { "yes" } else { "no" }),
    ];
    facts.extend(tally.left.describe());
    facts.extend(tally.drift.iter().cloned());
    facts.join("\n")
}

fn summarize(name: &str, stop: &Stop, tally: &Tally) -> String {
    let mut summary = format!("{name}: {}", stop.summary);
    let mut facts = Vec::new();
    if tally.deterministic > 0 {
        facts.push(format!("{} fix(es) without the model", tally.deterministic));
    }
    if tally.attempts > 0 {
        facts.push(format!("{} model attempt(s)", tally.attempts));
    }
    if !tally.candidates.is_empty() {
        facts.push(format!("{} candidate(s) tried", tally.candidates.len()));
        for candidate in tally.candidates.iter().rev().filter(|c| c.chosen) {
            match candidate.outcome {
                CandidateOutcome::Passed => {
                    // the model named when the candidates came from several
                    let models: std::collections::BTreeSet<&str> =
                        tally.candidates.iter().map(|c| c.model.as_str()).collect();
                    let of =
                        if models.len() > 1 { format!(" (from {})", candidate.model) } else { String::new() };
                    facts.push(format!("candidate {}{of} passed the tests", candidate.number))
                }
                CandidateOutcome::PassedButKnownFailures => facts.push(format!(
                    "candidate {} passed all but the tests that failed without any fix",
                    candidate.number
                )),
                _ => continue,
            }
            break;
        }
    }
    if tally.tokens.total() > 0 {
        facts.push(format!("{} tokens", tally.tokens.total()));
    }
    if !facts.is_empty() {
        summary.push_str(&format!(" ({})", facts.join(", ")));
    }
    if stop.reason != ExitReason::Clean {
        let left = tally.left.describe();
        if !left.is_empty() {
            summary.push_str(&format!("; {}", left.join("; ")));
        }
    }
    if stop.reason == ExitReason::Clean && !tally.drift.is_empty() {
        summary.push_str(&format!("; drift: {}", tally.drift.join("; ")));
    }
    if tally.changed && stop.reason != ExitReason::Clean {
        summary.push_str("; the edits already made are kept");
    }
    if let Some(note) = &tally.candidate_note {
        summary.push_str(&format!("; {note}"));
    }
    summary.push('.');
    summary
}

async fn run_loop(
    context: &FixContext,
    request: &FixRequest,
    run: &RunHandle,
    journal: Option<&Journal>,
    tally: &Mutex<Tally>,
) -> Stop {
    match run::FixRun::to_its_end(context, request, run, journal, tally).await {
        Ok(stop) | Err(stop) => stop,
    }
}

async fn report(context: &FixContext, run: &RunHandle, message: String, percentage: Option<u32>) {
    context
        .editor
        .run_event(&run.run_id, &RunEvent::Progress(Progress::Report { message, percentage }))
        .await;
}

/// How a document is named to the model and the user: relative to the workspace root.
pub fn display_path(root: Option<&Path>, uri: &Url) -> String {
    let Ok(path) = uri.to_file_path() else {
        return uri.to_string();
    };
    root.and_then(|root| path.strip_prefix(root).ok()).unwrap_or(&path).display().to_string()
}
