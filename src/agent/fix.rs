//! The fix loop (SPEC F1, F2, F4): observe → deterministic fixes → (summary + focused context
//! → model → parse → apply → settle → compare) until the targets are gone or a guard stops
//! the run. The same engine serves the language server and `tokamak fix`: it acts only
//! through the [`Editor`] trait and the [`Observer`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

use super::candidates;
use super::ladder::{DeterministicFix, Rung, apply_fixes, checker_fixes};
use super::prompt::FixPrompt;
use super::runs::RunHandle;
use super::targets::{Comparison, Problems, Scope, compare, is_syntax, problems, select};
use crate::config::{FixSettings, SyntaxSettings};
use crate::context::{Drift, Fingerprint};
use crate::edit::{Block, apply_blocks, minimal_edits, parse_reply};
use crate::editor::{Editor, Progress, RunEvent};
use crate::executor::{
    ASK_BELOW, Access, Confinement, DocumentEditError, GO_ON, REREAD_BELOW, Refused, apply_to_document,
};
use crate::history::{History, Journal};
use crate::model::{CallOptions, FinishReason, Model, ModelError, Request};
use crate::observer::{Diagnostic, Observer, SettleError};
use crate::run::{CandidateOutcome, ExitReason, RunReport, Tokens};
use crate::sync::lock;
use crate::text::{PositionEncoding, TextRange};
use crate::workspace::DocumentSnapshot;

/// Rounds of deterministic fixes before the model (inserting one token may reveal another).
const DETERMINISTIC_ROUNDS: usize = 4;
/// How often observing may find the document changed again (the user typing) before giving up.
const OBSERVE_TRIES: usize = 5;

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
    match fix_loop(context, request, run, journal, tally).await {
        Ok(stop) | Err(stop) => stop,
    }
}

async fn fix_loop(
    context: &FixContext,
    request: &FixRequest,
    run: &RunHandle,
    journal: Option<&Journal>,
    tally: &Mutex<Tally>,
) -> Result<Stop, Stop> {
    let uri = &request.uri;
    let settings = &context.settings;
    let (mut snapshot, now) = observe(context, uri, tally).await?;
    if let Some(journal) = journal {
        journal.record("diagnostics", serde_json::json!({"version": snapshot.version, "total": now.len()}));
    }
    let baseline = problems(&now);
    let mut focus = select(&request.scope, &now);
    if focus.is_empty() {
        return Ok(verified_stop(context, run, &snapshot, "nothing to fix", None, tally).await);
    }
    let targets = focus.clone();
    lock(tally).targets_before = focus.len();
    lock(tally).targets_after = focus.len();
    let mut seen: Vec<Problems> = vec![problems(&targets)];
    let mut history: Vec<String> = Vec::new();

    // the first rung: fixes that need no model
    for _ in 0..DETERMINISTIC_ROUNDS {
        let placement = context.observer.placement(uri, snapshot.version);
        let mut rung = Rung::new(&snapshot, placement.as_deref());
        let mut fixes = deterministic_fixes(&mut rung, &focus);
        if fixes.is_empty() && focus.iter().any(is_syntax) {
            fixes.extend(
                rung.verified_repair(&SyntaxSettings::default())
                    .filter(|fix| fix.edits.iter().all(|(range, _)| near_focus(&snapshot, &focus, *range))),
            );
        }
        if fixes.is_empty() {
            break;
        }
        let text = snapshot.rope.to_string();
        let (new_text, applied) = apply_fixes(&text, &fixes);
        if applied.is_empty() || new_text == text {
            break;
        }
        let described: Vec<&str> = applied.iter().map(|f| f.description.as_str()).collect();
        report(context, run, format!("applying {}", described.join(", ")), None).await;
        let edits = minimal_edits(&text, &new_text);
        apply_counted(context, journal, &run.run_id, &snapshot, &edits, "Tokamak: deterministic fix", tally)
            .await?;
        lock(tally).deterministic += applied.len() as u32;
        history.push(format!("Before the model, Tokamak itself applied: {}.", described.join("; ")));
        let (after, now) = observe(context, uri, tally).await?;
        snapshot = after;
        let comparison = compare(&targets, &baseline, &now);
        lock(tally).targets_after = comparison.remaining.len();
        if comparison.is_clean() {
            let sentence = fixed_sentence(context, &snapshot, &targets);
            return Ok(verified_stop(context, run, &snapshot, &sentence, None, tally).await);
        }
        focus = comparison.next_targets();
    }

    // the second rung: the model
    let model = match &context.model {
        Ok(model) => Arc::clone(model),
        Err(err) => {
            return Err(Stop::failed(format!(
                "{} problem(s) left that need a model, and none could be used: {err}",
                focus.len()
            )));
        }
    };
    let path = display_path(context.root.as_deref(), uri);
    // the project's rules (SPEC C7), nearest to the file first, within a quarter of the budget
    let rules = match (&context.root, uri.to_file_path()) {
        (Some(root), Ok(file)) => crate::context::render_rules(
            &crate::context::project_rules(root, Some(&file), context.trusted),
            settings.context_tokens,
        ),
        _ => String::new(),
    };
    // candidates when the tests can tell them apart (SPEC V1–V2): from the models listed, each
    // at its temperatures, or from the run's model at `fix.candidates` temperatures
    let mut sources: Vec<candidates::Source> = Vec::new();
    for listed in &context.candidate_models {
        match &listed.model {
            Ok(model) if !listed.temperatures.is_empty() => sources.push(candidates::Source {
                label: listed.label.clone(),
                model: Arc::clone(model),
                temperatures: listed.temperatures.clone(),
            }),
            Ok(_) => {}
            Err(err) => {
                let message = format!("Tokamak: the candidate model {} cannot be used: {err}", listed.label);
                context.editor.show_message(crate::editor::MessageLevel::Warning, message).await;
            }
        }
    }
    // all the models together ask for at most so many
    let mut room = crate::config::MAX_MODEL_CANDIDATES;
    for source in &mut sources {
        source.temperatures.truncate(room);
        room -= source.temperatures.len();
    }
    sources.retain(|s| !s.temperatures.is_empty());
    if sources.is_empty() {
        sources.push(candidates::Source::temperatures_of(&model, settings.candidates as usize));
    }
    let asked_for: usize = sources.iter().map(|s| s.temperatures.len()).sum();
    let verifier =
        context.verify.as_deref().filter(|verify| asked_for > 1 && verify.verification_command().is_some());
    // how the tests stand on the document's current text (after a candidate is applied, as
    // they stood on it)
    let mut tests_before: Option<candidates::Baseline> = None;
    let mut last_round: Option<String> = None;
    for attempt in 1..=settings.max_attempts {
        // how the tests stand on the text this attempt makes, when a candidate was tested on it
        let mut tests_now: Option<candidates::Baseline> = None;
        let spent = lock(tally).tokens.total();
        if spent >= settings.max_tokens {
            return Err(Stop::new(
                ExitReason::TokenLimit,
                format!("stopped after spending {spent} tokens (fix.max_tokens is {})", settings.max_tokens),
            ));
        }
        let percentage = (attempt - 1) * 100 / settings.max_attempts.max(1);
        let info = model.info();
        report(
            context,
            run,
            match verifier {
                Some(_) => format!(
                    "attempt {attempt}/{}: asking {} for {asked_for} candidate fixes of {} problem(s)",
                    settings.max_attempts,
                    sources.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(" and "),
                    focus.len()
                ),
                None => format!(
                    "attempt {attempt}/{}: asking {} about {} problem(s)",
                    settings.max_attempts,
                    info.model,
                    focus.len()
                ),
            },
            Some(percentage),
        )
        .await;
        let prompt = FixPrompt {
            snapshot: &snapshot,
            path: &path,
            targets: &focus,
            history: &history,
            context_tokens: settings.context_tokens,
            rules: &rules,
        };
        let base = snapshot.rope.to_string();
        // unsure of the file, a fix is made only where each SEARCH is found exactly
        let similarity = if confidence(tally) < REREAD_BELOW { 1.0 } else { settings.similarity };
        let read = |reply: &str| read_reply(reply, &snapshot, context.root.as_deref(), &path, similarity);
        let (new_text, label) = if let Some(verify) = verifier {
            let round = candidates::Round {
                sources: &sources,
                request: Request::chat(prompt.messages()),
                attempt,
                run_id: &run.run_id,
                cancel: &run.cancel,
                editor: context.editor.as_ref(),
                uri,
                base: &base,
                prepare: &read,
                targets: &targets,
                problems: &baseline,
                observer: &context.observer,
                settle_timeout: Duration::from_millis(settings.settle_timeout_ms.max(1)),
                verify,
                baseline: tests_before.clone(),
            };
            let outcome = candidates::round(round).await;
            {
                let mut tally = lock(tally);
                tally.attempts = attempt;
                for usage in &outcome.usage {
                    tally.tokens.add(Tokens::of(usage));
                }
                tally.waited.model_ms += outcome.model_time.as_secs_f64() * 1000.0;
                tally.waited.checks_ms += outcome.verify_time.as_secs_f64() * 1000.0;
                tally.candidates.extend(outcome.reports.iter().cloned());
                if outcome.chosen.is_some() {
                    tally.candidate_note = outcome.note.clone();
                }
                tests_before = Some(outcome.after.clone().unwrap_or_else(|| outcome.baseline.clone()));
            }
            if let Some(journal) = journal {
                journal.record(
                    "candidates",
                    serde_json::json!({
                        "attempt": attempt,
                        "asked": asked_for,
                        "concurrency": outcome.concurrency.reached,
                        "in_turn": outcome.concurrency.in_turn,
                        "model_ms": outcome.model_time.as_secs_f64() * 1000.0,
                        "verify_ms": outcome.verify_time.as_secs_f64() * 1000.0,
                        "chosen": outcome.chosen.as_ref().map(|c| c.number),
                        "candidates": outcome.reports,
                    }),
                );
            }
            if let Some(err) = outcome.failed {
                return Err(match err {
                    ModelError::Cancelled { .. } => Stop::new(ExitReason::Cancelled, "Cancelled"),
                    err => Stop::failed(format!("the model could not be used: {err}")),
                });
            }
            match outcome.chosen {
                Some(chosen) => {
                    tests_now = outcome.after.clone();
                    let of = match sources.len() {
                        1 => String::new(),
                        _ => outcome
                            .reports
                            .iter()
                            .find(|r| r.number == chosen.number)
                            .map(|r| format!(", {}", r.model))
                            .unwrap_or_default(),
                    };
                    (chosen.text, format!("Tokamak: fix attempt {attempt} (candidate {}{of})", chosen.number))
                }
                None => {
                    let failed =
                        outcome.reports.iter().filter(|r| r.outcome == CandidateOutcome::DoesNotApply);
                    if failed.count() == outcome.reports.len() && !outcome.reports.is_empty() {
                        doubt(journal, tally, &path, 15, "no candidate fix applied to it");
                    }
                    let lost = candidates_lost(&outcome.reports, outcome.note.as_deref());
                    history.push(format!("Attempt {attempt}: {lost}"));
                    last_round = Some(lost);
                    continue;
                }
            }
        } else {
            let options = CallOptions { deltas: None, cancel: run.cancel.child_token() };
            let asked = std::time::Instant::now();
            let reply = model.send(&Request::chat(prompt.messages()), &options).await;
            lock(tally).waited.model_ms += asked.elapsed().as_secs_f64() * 1000.0;
            let reply = match reply {
                Ok(reply) => reply,
                Err(ModelError::Cancelled { .. }) => {
                    return Err(Stop::new(ExitReason::Cancelled, "Cancelled"));
                }
                Err(err) => return Err(Stop::failed(format!("the model could not be used: {err}"))),
            };
            if let Some(journal) = journal {
                journal.record(
                    "prompt",
                    serde_json::json!({
                        "attempt": attempt,
                        "targets": focus.len(),
                        "prompt_tokens": reply.usage.prompt_tokens,
                        "completion_tokens": reply.usage.completion_tokens,
                        "estimated": reply.usage.estimated,
                    }),
                );
            }
            {
                let mut tally = lock(tally);
                tally.attempts = attempt;
                tally.tokens.add(Tokens::of(&reply.usage));
            }
            tracing::debug!("{}: attempt {attempt} reply:\n{}", run.run_id, reply.text);
            if reply.finish == FinishReason::Length {
                // a reply cut at its length is never half applied: its finished blocks may
                // need the ones it did not finish
                report(
                    context,
                    run,
                    format!("attempt {attempt}: the reply was cut off; nothing from it applied"),
                    None,
                )
                .await;
                history.push(format!(
                    "Attempt {attempt}: your reply was cut off at the token limit, so nothing from it was applied. Reply with fewer, smaller SEARCH/REPLACE blocks."
                ));
                continue;
            }
            match read(&reply.text) {
                Ok(text) => (text, format!("Tokamak: fix attempt {attempt}")),
                Err(why) => {
                    if why != UNCHANGED {
                        doubt(journal, tally, &path, 15, "a fix did not apply to it");
                    }
                    history.push(format!("Attempt {attempt}: {why}"));
                    continue;
                }
            }
        };
        let edits = minimal_edits(&base, &new_text);
        // the file as it is now against the text the prompt showed: changed meanwhile (the
        // user, another program), the fix lands only where it still applies, or not at all
        if let Some((current, drift, what)) = drifted(context, uri, &snapshot, &path).await? {
            // a candidate's tests ran on the text before
            tests_now = None;
            let moved = crate::edit::reground(&base, &current.rope.to_string(), &edits).is_ok();
            let how = match (drift, moved) {
                (Drift::Major, _) | (_, false) => {
                    "the fix was not applied and the next attempt starts from its text as it is now"
                }
                (Drift::Minor, true) => "absorbed",
                _ => "the fix was made on its text as it is now, where it still applies",
            };
            note_drift(context, run, journal, tally, (&path, drift, &what), how).await;
            if drift == Drift::Major || !moved {
                history.push(format!(
                    "Attempt {attempt}: your fix was not applied: {path} changed under the run ({} drift: {what}). The code shown is the file as it is now.",
                    drift.as_str()
                ));
                let (after, now) = observe(context, uri, tally).await?;
                let comparison = compare(&targets, &baseline, &now);
                lock(tally).targets_after = comparison.remaining.len() + comparison.introduced.len();
                if comparison.is_clean() {
                    let sentence = fixed_sentence(context, &after, &targets);
                    return Ok(verified_stop(context, run, &after, &sentence, None, tally).await);
                }
                snapshot = after;
                focus = comparison.next_targets();
                continue;
            }
        }
        if confidence(tally) < ASK_BELOW {
            go_on(context, run, tally, &path).await?;
        }
        report(
            context,
            run,
            format!("attempt {attempt}: applying {} edit(s)", edits.len()),
            Some(percentage),
        )
        .await;
        apply_counted(context, journal, &run.run_id, &snapshot, &edits, &label, tally).await?;
        let (after, now) = observe(context, uri, tally).await?;
        let comparison = compare(&targets, &baseline, &now);
        {
            let mut tally = lock(tally);
            tally.targets_after = comparison.remaining.len() + comparison.introduced.len();
            tally.left.errors = errors_left(&path, &after, &comparison);
        }
        if let Some(journal) = journal {
            journal.record(
                "diagnostics",
                serde_json::json!({
                    "attempt": attempt,
                    "version": after.version,
                    "total": now.len(),
                    "remaining": comparison.remaining.len(),
                    "introduced": comparison.introduced.len(),
                }),
            );
        }
        if comparison.is_clean() {
            let sentence = fixed_sentence(context, &after, &targets);
            return Ok(verified_stop(context, run, &after, &sentence, tests_now.take(), tally).await);
        }
        let state = comparison.problems();
        // one more try with the feedback is allowed; the third time in the same state is a loop
        if seen.iter().filter(|s| **s == state).count() >= 2 {
            return Err(Stop::new(
                ExitReason::RepeatedError,
                format!(
                    "stopped: after attempt {attempt} the same error is back ({})",
                    first_message(&comparison)
                ),
            ));
        }
        seen.push(state);
        history.push(format!(
            "Attempt {attempt}: {}",
            describe_outcome(&after, &edits_lines(&base, &edits), &comparison)
        ));
        snapshot = after;
        focus = comparison.next_targets();
    }
    let left = lock(tally).targets_after;
    if let Some(lost) = last_round {
        return Err(Stop::new(
            ExitReason::MaxAttempts,
            format!("nothing was applied in the last attempt: {lost}"),
        ));
    }
    Err(Stop::new(
        ExitReason::MaxAttempts,
        format!("{left} problem(s) left after {} attempts (fix.max_attempts)", settings.max_attempts),
    ))
}

/// Why a round's candidates all lost, for the next prompt and the report: "3 candidate fixes
/// were tried and none passed the tests: candidate 1: the tests failed: E assert …; …".
fn candidates_lost(reports: &[crate::run::CandidateReport], note: Option<&str>) -> String {
    let each: Vec<String> = reports.iter().map(|r| format!("candidate {}: {}", r.number, r.why)).collect();
    let mut out = format!("{} candidate fix(es) were tried and none passed the tests", reports.len());
    if let Some(note) = note {
        out = format!("{out} ({note})");
    }
    format!("{out}: {}", each.join("; "))
}

/// The document's new text from a model reply, or why there is none (what the next prompt
/// is told): no blocks, a block for another file, a SEARCH not found, or no change.
fn read_reply(
    reply: &str,
    snapshot: &DocumentSnapshot,
    root: Option<&Path>,
    path: &str,
    similarity: f32,
) -> Result<String, String> {
    let base = snapshot.rope.to_string();
    let blocks = blocks_for(reply, snapshot, root, path)?;
    match apply_blocks(&base, &blocks, similarity) {
        Err(err) => Err(format!("{err}. Nothing from that reply was applied.")),
        Ok(applied) if applied.text == base => Err(UNCHANGED.to_string()),
        Ok(applied) => Ok(applied.text),
    }
}

/// The end of a run whose checkers find nothing left, read from the state it ends in: clean
/// only when every checker answered on the text as it is and, when the run changed it and
/// the workspace has tests, they pass on it — run now, unless a candidate was tested on
/// exactly this text (`tests_now`). Otherwise it says what is left: checkers that did not
/// answer (unchecked), failing tests by name (tests_failing), tests that could not run
/// (untested).
async fn verified_stop(
    context: &FixContext,
    run: &RunHandle,
    now: &DocumentSnapshot,
    sentence: &str,
    tests_now: Option<candidates::Baseline>,
    tally: &Mutex<Tally>,
) -> Stop {
    let stop = clean_stop(context, now, sentence);
    if stop.reason != ExitReason::Clean {
        return stop;
    }
    let missing = lock(tally).left.unanswered.clone();
    if !missing.is_empty() {
        return Stop::new(
            ExitReason::Unchecked,
            format!(
                "{sentence}, but {} did not answer on the file's text in time (fix.settle_timeout_ms), so it is not known to be clean",
                missing.join(", ")
            ),
        );
    }
    let verify = context.verify.as_deref().filter(|v| v.verification_command().is_some());
    let Some(verify) = verify.filter(|_| lock(tally).changed) else {
        return stop;
    };
    let tests = match tests_now {
        Some(known) => known,
        None if !context.final_tests => return stop,
        None => {
            report(context, run, "running the tests on the fixed text".to_string(), None).await;
            let started = std::time::Instant::now();
            // the fix is made: the tests that judge it do not count against its time limit
            let waits = std::sync::Arc::clone(&lock(tally).waits);
            let verdict =
                waits.time(verify.test_texts(&run.run_id, "final", &Default::default(), &run.cancel)).await;
            lock(tally).waited.checks_ms += started.elapsed().as_secs_f64() * 1000.0;
            match verdict {
                Ok(verdict) if verdict.passed => candidates::Baseline::Passing,
                Ok(verdict) => candidates::Baseline::Failing {
                    first: verdict.why.lines().next().unwrap_or(&verdict.described).to_string(),
                    failed: verdict.failed,
                },
                Err(why) => candidates::Baseline::CannotRun(why),
            }
        }
    };
    match tests {
        candidates::Baseline::Passing => {
            Stop::new(ExitReason::Clean, format!("{}; the tests pass", stop.summary))
        }
        candidates::Baseline::Failing { first, failed } => {
            lock(tally).left.tests_failing = if failed.is_empty() { vec![first] } else { failed };
            Stop::new(ExitReason::TestsFailing, format!("{sentence}, but the tests fail on it"))
        }
        candidates::Baseline::CannotRun(why) => {
            lock(tally).left.tests_not_run = Some(why);
            Stop::new(ExitReason::Untested, format!("{sentence}, but the tests could not be run"))
        }
    }
}

/// The errors left in the document as the user reads them: "calc.py:2 [ruff] …".
fn errors_left(path: &str, now: &DocumentSnapshot, comparison: &Comparison) -> Vec<String> {
    comparison
        .remaining
        .iter()
        .chain(&comparison.introduced)
        .filter(|d| d.severity == crate::observer::Severity::Error)
        .map(|d| {
            let at = crate::text::offset_to_line_col(&now.rope, d.range.start, PositionEncoding::Utf32);
            format!("{path}:{} [{}] {}", at.line + 1, d.source, d.message)
        })
        .collect()
}

/// The end of a run that left nothing to fix, saying what checked the file: clean when its
/// checkers ran, unchecked when only the syntax check could.
fn clean_stop(context: &FixContext, now: &DocumentSnapshot, sentence: &str) -> Stop {
    let coverage = context.observer.coverage(now);
    if coverage.syntax_only() {
        let sentence = if sentence == "nothing to fix" { "no syntax errors" } else { sentence };
        return Stop::new(ExitReason::Unchecked, format!("{sentence}, but {}", coverage.install_hint()));
    }
    Stop::new(ExitReason::Clean, format!("{sentence}; checked by {}", coverage.checked_by()))
}

/// "fixed N problem(s)", saying how many of them no source could re-check on the new text
/// (an editor's own diagnostic that was not forwarded again): those are gone from what
/// Tokamak sees, not proven fixed.
fn fixed_sentence(context: &FixContext, now: &DocumentSnapshot, targets: &[Diagnostic]) -> String {
    let unverified =
        targets.iter().filter(|t| !context.observer.could_see(&now.uri, now.version, &t.source)).count();
    let mut sentence = format!("fixed {} problem(s)", targets.len());
    if unverified > 0 {
        sentence.push_str(&format!(
            "; {unverified} of them came from the editor's own checkers, which have not reported on the new text yet"
        ));
    }
    sentence
}

fn first_message(comparison: &Comparison) -> String {
    comparison.next_targets().first().map(|d| d.message.clone()).unwrap_or_default()
}

async fn report(context: &FixContext, run: &RunHandle, message: String, percentage: Option<u32>) {
    context
        .editor
        .run_event(&run.run_id, &RunEvent::Progress(Progress::Report { message, percentage }))
        .await;
}

/// The deterministic fixes for the diagnostics in focus: missing tokens at them, and the
/// checkers' own safe fixes for them.
fn deterministic_fixes(rung: &mut Rung<'_>, focus: &[Diagnostic]) -> Vec<DeterministicFix> {
    let near =
        |range: TextRange| focus.iter().any(|d| d.range.start <= range.end && range.start <= d.range.end);
    let mut fixes: Vec<DeterministicFix> = rung
        .missing_token_fixes()
        .into_iter()
        .filter(|fix| fix.edits.iter().all(|(range, _)| near(*range)))
        .collect();
    fixes.extend(checker_fixes(focus));
    fixes
}

/// Whether an edit lies on a line within a few lines of a diagnostic in focus (a missing
/// `:` or `)` is often reported on the line after the one it belongs to).
fn near_focus(snapshot: &DocumentSnapshot, focus: &[Diagnostic], range: TextRange) -> bool {
    let line = |offset: usize| snapshot.rope.byte_to_line(offset.min(snapshot.rope.len_bytes()));
    let at = line(range.start);
    focus.iter().any(|d| line(d.range.start).saturating_sub(4) <= at && at <= line(d.range.end) + 4)
}

/// The reply's blocks for this document. A block naming another file is refused: a fix run
/// changes only its own document. The path a block names is resolved as the executor
/// resolves every path (against the workspace root, or the document's folder, and confined
/// to the root): `../../other/app.py` or `myapp.py` is not `app.py`.
fn blocks_for(
    reply: &str,
    snapshot: &DocumentSnapshot,
    root: Option<&Path>,
    path: &str,
) -> Result<Vec<Block>, String> {
    let current = &snapshot.rope;
    let blocks = parse_reply(reply);
    if blocks.is_empty() {
        return Err("your reply had no SEARCH/REPLACE block, so nothing was changed. Reply with blocks in the format asked for.".to_string());
    }
    for (index, block) in blocks.iter().enumerate() {
        let file = match block {
            Block::SearchReplace { file, .. } | Block::WholeFile { file, .. } => file.as_deref(),
        };
        // the model saw only part of the file: a short code block is a snippet, and taking it
        // for the whole file would delete the rest
        if let Block::WholeFile { content, .. } = block
            && content.lines().count() * 5 < current.len_lines().saturating_sub(1) * 4
        {
            return Err(format!(
                "block {} is a code block of {} lines, not the whole file ({} lines) and not a SEARCH/REPLACE block, so nothing was changed. Use SEARCH/REPLACE blocks.",
                index + 1,
                content.lines().count(),
                current.len_lines().saturating_sub(1)
            ));
        }
        if let Some(file) = file
            && let Err(why) = names_document(file, snapshot, root)
        {
            return Err(format!(
                "block {} is for {file}, but this run may change only {path} ({why}). Nothing from that reply was applied.",
                index + 1
            ));
        }
    }
    Ok(blocks)
}

/// Whether `file` (as a block names it) is the snapshot's document: resolved against the
/// root, else against the document's own folder, confined to the root either way.
fn names_document(file: &str, snapshot: &DocumentSnapshot, root: Option<&Path>) -> Result<(), String> {
    let Some(target) = snapshot.path() else {
        // a document that is not a file: only its own name will do
        let name = snapshot.uri.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default();
        return if file.trim_start_matches("./") == name { Ok(()) } else { Err("another file".to_string()) };
    };
    let target = std::fs::canonicalize(&target).unwrap_or(target);
    let folder = target.parent().unwrap_or(Path::new("/")).to_path_buf();
    let root = root.map(Path::to_path_buf).unwrap_or_else(|| folder.clone());
    let Ok(confinement) = Confinement::new(&root) else {
        // a workspace that is not on disk (an editor's unsaved buffer): only the same path,
        // as written, names the document
        let named = if Path::new(file).is_absolute() { PathBuf::from(file) } else { folder.join(file) };
        return if named == target { Ok(()) } else { Err("another file".to_string()) };
    };
    let mut why = "it resolves to another file".to_string();
    let relative_folder =
        folder.strip_prefix(confinement.root()).ok().map(|p| p.to_string_lossy().to_string());
    let candidates = std::iter::once(file.to_string()).chain(
        relative_folder
            .filter(|f| !f.is_empty() && !Path::new(file).is_absolute())
            .map(|f| format!("{f}/{file}")),
    );
    for candidate in candidates {
        match confinement.resolve(&candidate, Access::Write) {
            Ok(confined) if confined.path == target => return Ok(()),
            Ok(_) => {}
            Err(Refused(reason)) => why = reason,
        }
    }
    Err(why)
}

/// The 1-based lines of `base` that `edits` touch, as "12" or "12–14".
fn edits_lines(base: &str, edits: &[(TextRange, String)]) -> String {
    let line = |offset: usize| base[..offset.min(base.len())].matches('\n').count() + 1;
    let (Some(first), Some(last)) = (edits.first(), edits.last()) else {
        return "no lines".to_string();
    };
    // an edit ending just after a line break ends on that line, not the next
    let end = if last.0.end > last.0.start && base[..last.0.end.min(base.len())].ends_with('\n') {
        last.0.end - 1
    } else {
        last.0.end
    };
    let (from, to) = (line(first.0.start), line(end));
    if from == to { format!("line {from}") } else { format!("lines {from}–{to}") }
}

fn describe_outcome(after: &DocumentSnapshot, lines: &str, comparison: &Comparison) -> String {
    let mut out = format!("your edit was applied ({lines} changed), but problems remain:");
    for (label, list) in
        [("still there", &comparison.remaining), ("new, made by that edit", &comparison.introduced)]
    {
        for diagnostic in list.iter().take(5) {
            let at =
                crate::text::offset_to_line_col(&after.rope, diagnostic.range.start, PositionEncoding::Utf32);
            out.push_str(&format!(" [{label}] line {}: {};", at.line + 1, diagnostic.message));
        }
    }
    out.push_str(" The code shown above is the file as it is now.");
    out
}

/// The document's current snapshot and what every source found on exactly that text,
/// waiting for the checkers. The user typing meanwhile starts the wait over.
/// [`observe_now`], its time counted as waited for the checks.
async fn observe(
    context: &FixContext,
    uri: &Url,
    tally: &Mutex<Tally>,
) -> Result<(DocumentSnapshot, Vec<Diagnostic>), Stop> {
    let started = std::time::Instant::now();
    let observed = observe_now(context, uri).await;
    let mut tally = lock(tally);
    tally.waited.checks_ms += started.elapsed().as_secs_f64() * 1000.0;
    let (snapshot, diagnostics, missing) = observed?;
    // the checkers that did not answer on this text: an ending must not call it checked
    tally.left.unanswered = missing;
    Ok((snapshot, diagnostics))
}

/// The document's snapshot, what every source found on exactly its text, and the sources that
/// did not answer in time.
async fn observe_now(
    context: &FixContext,
    uri: &Url,
) -> Result<(DocumentSnapshot, Vec<Diagnostic>, Vec<String>), Stop> {
    let timeout = Duration::from_millis(context.settings.settle_timeout_ms.max(1));
    for _ in 0..OBSERVE_TRIES {
        let snapshot = context.observer.snapshot(uri).ok_or_else(|| closed(uri))?;
        match context.observer.settled(uri, snapshot.version, timeout).await {
            Ok(settled) => {
                if !settled.missing.is_empty() {
                    tracing::warn!("{uri}: going on without {}", settled.missing.join(", "));
                }
                // a large document's tree comes with its settled syntax: take it now
                let Some(now) = context.observer.snapshot(uri).filter(|now| now.version == snapshot.version)
                else {
                    continue;
                };
                return Ok((now, context.observer.diagnostics_at(uri, snapshot.version), settled.missing));
            }
            Err(SettleError::Changed { .. }) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(SettleError::NotOpen(_)) => return Err(closed(uri)),
        }
    }
    Err(Stop::failed(
        "the document kept changing while Tokamak waited for its checkers; run the fix again when you pause",
    ))
}

fn closed(uri: &Url) -> Stop {
    Stop::failed(format!("{uri} was closed during the run"))
}

/// [`apply`], with the run marked as having changed the file from the moment the edit is
/// sent: a cancel or a time limit while the editor answers must not report "nothing changed"
/// for an edit that lands anyway.
async fn apply_counted(
    context: &FixContext,
    journal: Option<&Journal>,
    run_id: &str,
    base: &DocumentSnapshot,
    edits: &[(TextRange, String)],
    label: &str,
    tally: &Mutex<Tally>,
) -> Result<DocumentSnapshot, Stop> {
    let before = std::mem::replace(&mut lock(tally).changed, true);
    let waits = Arc::clone(&lock(tally).waits);
    // the editor taking the edit and the Observer's syntax check of the new text (a person
    // approving it is not counted)
    let (started, asked) = (std::time::Instant::now(), waits.waited());
    let result = apply(context, journal, (run_id, &waits), base, edits, label).await;
    let person = waits.waited().saturating_sub(asked);
    lock(tally).waited.checks_ms += started.elapsed().saturating_sub(person).as_secs_f64() * 1000.0;
    if result.is_err() {
        lock(tally).changed = before;
    }
    result
}

/// Makes `edits` (in bytes of `base`) in the document through the editor, moved onto the
/// user's newer text if they typed meanwhile; never forced. With an approver, the person
/// sees the diff first; a rejection ends the run with their reason.
async fn apply(
    context: &FixContext,
    journal: Option<&Journal>,
    (run_id, waits): (&str, &crate::executor::WaitClock),
    base: &DocumentSnapshot,
    edits: &[(TextRange, String)],
    label: &str,
) -> Result<DocumentSnapshot, Stop> {
    if let Some(approver) = &context.approver {
        let path = display_path(context.root.as_deref(), &base.uri);
        let before = base.rope.to_string();
        let after = crate::edit::apply_edits(&before, edits).unwrap_or_else(|| before.clone());
        let request = crate::executor::Request::Change {
            action: "fix".to_string(),
            summary: format!("fix {path}"),
            diff: crate::executor::unified_diff(&path, Some(&before), Some(&after)),
            file: Some(crate::executor::ChangedFile { path, before: Some(before), after: Some(after) }),
        };
        match waits.time(approver.decide(run_id, &request)).await {
            crate::executor::Decision::Approve => {}
            crate::executor::Decision::Reject(reason) | crate::executor::Decision::Refuse(reason) => {
                let stop = Stop::new(ExitReason::Cancelled, format!("the fix was not applied: {reason}"));
                return Err(Stop { rejected: true, ..stop });
            }
        }
    }
    if let Some(journal) = journal {
        let relative = display_path(context.root.as_deref(), &base.uri);
        journal.before_change(&[relative.as_str()]).await;
    }
    apply_to_document(&context.observer, context.editor.as_ref(), base, edits, label).await.map_err(|err| {
        match err {
            DocumentEditError::Conflict => Stop::failed(format!("{err}; run the fix again")),
            DocumentEditError::Closed(uri) => closed(&uri),
            other => Stop::failed(other.to_string()),
        }
    })
}

/// What a reply whose blocks change nothing is told (not a failed apply).
const UNCHANGED: &str = "your blocks changed nothing: what they REPLACE with is already in the file.";

/// The run's confidence in the document (100 at the start).
fn confidence(tally: &Mutex<Tally>) -> i32 {
    (100 - lock(tally).doubt).max(0)
}

/// Lowers the run's confidence in the document by `cost`, audited.
fn doubt(journal: Option<&Journal>, tally: &Mutex<Tally>, path: &str, cost: i32, why: &str) {
    let (from, to) = {
        let mut tally = lock(tally);
        let from = (100 - tally.doubt).max(0);
        tally.doubt += cost;
        (from, (100 - tally.doubt).max(0))
    };
    if let Some(journal) = journal {
        journal.record("confidence", serde_json::json!({"file": path, "from": from, "to": to, "why": why}));
    }
}

/// The document as its owner has it now, when that is not the text the attempt's prompt
/// showed (`shown`): its snapshot, and how far it drifted, with what changed.
async fn drifted(
    context: &FixContext,
    uri: &Url,
    shown: &DocumentSnapshot,
    path: &str,
) -> Result<Option<(DocumentSnapshot, Drift, String)>, Stop> {
    crate::executor::catch_up(&context.observer, context.editor.as_ref(), uri).await.map_err(
        |err| match err {
            DocumentEditError::Closed(uri) => closed(&uri),
            other => Stop::failed(other.to_string()),
        },
    )?;
    let now = context.observer.snapshot(uri).ok_or_else(|| closed(uri))?;
    if now.rope == shown.rope {
        return Ok(None);
    }
    let file = Path::new(path);
    let (before, after) = (shown.rope.to_string(), now.rope.to_string());
    let (drift, what) =
        Fingerprint::of(file, &before, false).drift(Some(&Fingerprint::of(file, &after, false)));
    Ok(Some((now, drift, what)))
}

/// A drift found: audited, said in the progress and the ending, and charged to the run's
/// confidence in the file.
async fn note_drift(
    context: &FixContext,
    run: &RunHandle,
    journal: Option<&Journal>,
    tally: &Mutex<Tally>,
    (path, drift, what): (&str, Drift, &str),
    how: &str,
) {
    if let Some(journal) = journal {
        journal.record(
            "drift",
            serde_json::json!({"file": path, "severity": drift.as_str(), "what": what, "how": how}),
        );
    }
    let line = format!("{path}: {} drift ({what}); {how}", drift.as_str());
    report(context, run, format!("{path} changed under the run: {how}"), None).await;
    lock(tally).drift.push(line);
    doubt(journal, tally, path, drift.cost(), &format!("changed under the run: {what}"));
}

/// Under [`ASK_BELOW`], whoever approves is asked whether the run goes on changing the
/// file; nobody to ask, or a no, stops it.
async fn go_on(context: &FixContext, run: &RunHandle, tally: &Mutex<Tally>, path: &str) -> Result<(), Stop> {
    let score = confidence(tally);
    let unsure = |why: String| {
        Stop::new(
            ExitReason::Unsure,
            format!("Tokamak's confidence in {path} fell to {score} and the run did not go on: {why}"),
        )
    };
    let Some(approver) = &context.approver else {
        return Err(unsure("fixes that did not apply, or the file changing under it".to_string()));
    };
    let request = crate::executor::Request::Look {
        action: GO_ON.to_string(),
        summary: format!("go on fixing {path}, though Tokamak's confidence in it is {score}"),
    };
    let waits = Arc::clone(&lock(tally).waits);
    match waits.time(approver.decide(&run.run_id, &request)).await {
        crate::executor::Decision::Approve => {
            let mut tally = lock(tally);
            tally.doubt = tally.doubt.min(100 - (REREAD_BELOW - 20));
            Ok(())
        }
        crate::executor::Decision::Reject(why) | crate::executor::Decision::Refuse(why) => Err(unsure(why)),
    }
}

/// How a document is named to the model and the user: relative to the workspace root.
pub fn display_path(root: Option<&Path>, uri: &Url) -> String {
    let Ok(path) = uri.to_file_path() else {
        return uri.to_string();
    };
    root.and_then(|root| path.strip_prefix(root).ok()).unwrap_or(&path).display().to_string()
}
