//! The fix loop as the steps a run takes, top to bottom (SPEC F1, F2, F4): observe the
//! document; the fixes that need no model, a few rounds of them; then the model's attempts,
//! each asked (one reply, or candidates the tests choose among), landed on the document as it
//! is now, and compared with what the run set out to fix — until the targets are gone or a
//! guard (tokens, attempts, the same error back, the user) stops the run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

use super::document::{apply_counted, confidence, doubt, drifted, go_on, note_drift, observe};
use super::ending::{errors_left, fixed_sentence, verified_stop};
use super::reply::{UNCHANGED, describe_outcome, edits_lines, read_reply};
use super::{FixContext, FixRequest, Stop, Tally, display_path, report};
use crate::agent::candidates;
use crate::agent::ladder::{DeterministicFix, Rung, apply_fixes, checker_fixes};
use crate::agent::prompt::FixPrompt;
use crate::agent::runs::RunHandle;
use crate::agent::targets::{Comparison, Problems, compare, is_syntax, problems, select};
use crate::config::SyntaxSettings;
use crate::context::Drift;
use crate::edit::minimal_edits;
use crate::executor::{ASK_BELOW, ExecutorContext, REREAD_BELOW};
use crate::history::Journal;
use crate::model::{CallOptions, FinishReason, Model, ModelError, Request};
use crate::observer::Diagnostic;
use crate::run::{CandidateOutcome, ExitReason, Tokens};
use crate::sync::lock;
use crate::text::TextRange;
use crate::workspace::DocumentSnapshot;

/// Rounds of deterministic fixes before the model (inserting one token may reveal another).
const DETERMINISTIC_ROUNDS: usize = 4;

/// One fix run under way: where it stands, and what it has told the model so far.
pub(super) struct FixRun<'a> {
    context: &'a FixContext,
    run: &'a RunHandle,
    journal: Option<&'a Journal>,
    tally: &'a Mutex<Tally>,
    uri: &'a Url,
    /// The document as the model and the user are told its name.
    path: String,
    /// The document as last observed, and the problems the next attempt works on.
    snapshot: DocumentSnapshot,
    focus: Vec<Diagnostic>,
    /// What the run set out to fix, and every problem there was at its start.
    targets: Vec<Diagnostic>,
    baseline: Problems,
    /// The states the attempts left: the third time in one is a loop.
    seen: Vec<Problems>,
    /// What each step did, told to the model in the next prompt.
    history: Vec<String>,
    /// How the tests stand on the document's current text, when a round of candidates found
    /// out (after a candidate is applied: as they stood on it).
    tests_before: Option<candidates::Baseline>,
    /// Why the last attempt's candidates all lost, when that is how it ended.
    lost_round: Option<String>,
}

/// Who the model's attempts ask, chosen once: the model, the project's rules, and — when the
/// tests can tell candidates apart — where the candidates come from and the tests that choose.
struct Asking<'a> {
    model: Arc<dyn Model>,
    rules: String,
    sources: Vec<candidates::Source>,
    asked_for: usize,
    verifier: Option<&'a ExecutorContext>,
}

/// An attempt's new text for the document, made from the text its prompt showed (`base`).
struct Proposal {
    base: String,
    text: String,
    /// The edit's label in the editor's undo history.
    label: String,
    /// How the tests stand on `text`, when a candidate was tested on it.
    tests: Option<candidates::Baseline>,
}

impl<'a> FixRun<'a> {
    /// The run from its first observation to its end: `Ok` when it ends having fixed what it
    /// could verify, `Err` when a guard or a failure stops it.
    pub(super) async fn to_its_end(
        context: &'a FixContext,
        request: &'a FixRequest,
        run: &'a RunHandle,
        journal: Option<&'a Journal>,
        tally: &'a Mutex<Tally>,
    ) -> Result<Stop, Stop> {
        let mut fix = FixRun::start(context, request, run, journal, tally).await?;
        if fix.focus.is_empty() {
            return Ok(verified_stop(context, run, &fix.snapshot, "nothing to fix", None, tally).await);
        }
        if let Some(stop) = fix.without_the_model().await? {
            return Ok(stop);
        }
        let asking = fix.asking().await?;
        for attempt in 1..=context.settings.max_attempts {
            fix.within_tokens()?;
            fix.announce(attempt, &asking).await;
            let proposal = match asking.verifier {
                Some(verify) => fix.candidates(attempt, &asking, verify).await?,
                None => fix.ask(attempt, &asking).await?,
            };
            if let Some(proposal) = proposal
                && let Some(stop) = fix.land(attempt, proposal).await?
            {
                return Ok(stop);
            }
        }
        Err(fix.out_of_attempts())
    }

    /// The document observed settled, and what in it the run sets out to fix.
    async fn start(
        context: &'a FixContext,
        request: &'a FixRequest,
        run: &'a RunHandle,
        journal: Option<&'a Journal>,
        tally: &'a Mutex<Tally>,
    ) -> Result<FixRun<'a>, Stop> {
        let uri = &request.uri;
        let (snapshot, now) = observe(context, uri, tally).await?;
        if let Some(journal) = journal {
            journal
                .record("diagnostics", serde_json::json!({"version": snapshot.version, "total": now.len()}));
        }
        let focus = select(&request.scope, &now);
        let targets = focus.clone();
        {
            let mut tally = lock(tally);
            tally.targets_before = focus.len();
            tally.targets_after = focus.len();
        }
        Ok(FixRun {
            context,
            run,
            journal,
            tally,
            uri,
            path: display_path(context.root.as_deref(), uri),
            seen: vec![problems(&targets)],
            baseline: problems(&now),
            snapshot,
            focus,
            targets,
            history: Vec::new(),
            tests_before: None,
            lost_round: None,
        })
    }

    /// The first rung: the fixes that need no model, until there are none or they leave
    /// nothing to fix (`Some`: the run's end).
    async fn without_the_model(&mut self) -> Result<Option<Stop>, Stop> {
        let context = self.context;
        for _ in 0..DETERMINISTIC_ROUNDS {
            let placement = context.observer.placement(self.uri, self.snapshot.version);
            let mut rung = Rung::new(&self.snapshot, placement.as_deref());
            let mut fixes = deterministic_fixes(&mut rung, &self.focus);
            if fixes.is_empty() && self.focus.iter().any(is_syntax) {
                let (snapshot, focus) = (&self.snapshot, &self.focus);
                fixes
                    .extend(rung.verified_repair(&SyntaxSettings::default()).filter(|fix| {
                        fix.edits.iter().all(|(range, _)| near_focus(snapshot, focus, *range))
                    }));
            }
            if fixes.is_empty() {
                break;
            }
            let text = self.snapshot.rope.to_string();
            let (new_text, applied) = apply_fixes(&text, &fixes);
            if applied.is_empty() || new_text == text {
                break;
            }
            let described: Vec<&str> = applied.iter().map(|f| f.description.as_str()).collect();
            report(context, self.run, format!("applying {}", described.join(", ")), None).await;
            let edits = minimal_edits(&text, &new_text);
            let label = "Tokamak: deterministic fix";
            apply_counted(context, self.journal, &self.run.run_id, &self.snapshot, &edits, label, self.tally)
                .await?;
            lock(self.tally).deterministic += applied.len() as u32;
            self.history.push(format!("Before the model, Tokamak itself applied: {}.", described.join("; ")));
            let (after, now) = observe(context, self.uri, self.tally).await?;
            self.snapshot = after;
            let comparison = compare(&self.targets, &self.baseline, &now);
            lock(self.tally).targets_after = comparison.remaining.len();
            if comparison.is_clean() {
                return Ok(Some(self.fixed(None).await));
            }
            self.focus = comparison.next_targets();
        }
        Ok(None)
    }

    /// The second rung's set-up: the model (or why there is none), the project's rules (SPEC
    /// C7, nearest to the file first, within a quarter of the budget), and the candidates'
    /// sources when the tests can tell them apart (SPEC V1–V2): the models listed, each at
    /// its temperatures, or the run's model at `fix.candidates` temperatures.
    async fn asking(&self) -> Result<Asking<'a>, Stop> {
        let context = self.context;
        let model = match &context.model {
            Ok(model) => Arc::clone(model),
            Err(err) => {
                return Err(Stop::failed(format!(
                    "{} problem(s) left that need a model, and none could be used: {err}",
                    self.focus.len()
                )));
            }
        };
        let rules = match (&context.root, self.uri.to_file_path()) {
            (Some(root), Ok(file)) => crate::context::render_rules(
                &crate::context::project_rules(root, Some(&file), context.trusted),
                context.settings.context_tokens,
            ),
            _ => String::new(),
        };
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
                    let message =
                        format!("Tokamak: the candidate model {} cannot be used: {err}", listed.label);
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
            sources.push(candidates::Source::temperatures_of(&model, context.settings.candidates as usize));
        }
        let asked_for: usize = sources.iter().map(|s| s.temperatures.len()).sum();
        let verifier = context
            .verify
            .as_deref()
            .filter(|verify| asked_for > 1 && verify.verification_command().is_some());
        Ok(Asking { model, rules, sources, asked_for, verifier })
    }

    /// Stops the run once its tokens are spent (`fix.max_tokens`).
    fn within_tokens(&self) -> Result<(), Stop> {
        let spent = lock(self.tally).tokens.total();
        let limit = self.context.settings.max_tokens;
        if spent >= limit {
            return Err(Stop::new(
                ExitReason::TokenLimit,
                format!("stopped after spending {spent} tokens (fix.max_tokens is {limit})"),
            ));
        }
        Ok(())
    }

    /// How far through its attempts the run is, for the editor's progress.
    fn percentage(&self, attempt: u32) -> u32 {
        (attempt - 1) * 100 / self.context.settings.max_attempts.max(1)
    }

    /// Says in the progress who is asked about what.
    async fn announce(&self, attempt: u32, asking: &Asking<'_>) {
        let max = self.context.settings.max_attempts;
        let message = match asking.verifier {
            Some(_) => format!(
                "attempt {attempt}/{max}: asking {} for {} candidate fixes of {} problem(s)",
                asking.sources.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(" and "),
                asking.asked_for,
                self.focus.len()
            ),
            None => format!(
                "attempt {attempt}/{max}: asking {} about {} problem(s)",
                asking.model.info().model,
                self.focus.len()
            ),
        };
        report(self.context, self.run, message, Some(self.percentage(attempt))).await;
    }

    /// The prompt for the problems in focus, with what the run did so far.
    fn prompt<'s>(&'s self, rules: &'s str) -> FixPrompt<'s> {
        FixPrompt {
            snapshot: &self.snapshot,
            path: &self.path,
            targets: &self.focus,
            history: &self.history,
            context_tokens: self.context.settings.context_tokens,
            rules,
        }
    }

    /// How closely a SEARCH must match: exactly when the run is unsure of the file.
    fn similarity(&self) -> f32 {
        if confidence(self.tally) < REREAD_BELOW { 1.0 } else { self.context.settings.similarity }
    }

    /// One reply from the model, read into the document's new text; `None` when nothing from
    /// it applies (the next attempt is told why).
    async fn ask(&mut self, attempt: u32, asking: &Asking<'_>) -> Result<Option<Proposal>, Stop> {
        let run = self.run;
        let base = self.snapshot.rope.to_string();
        let similarity = self.similarity();
        let options = CallOptions { deltas: None, cancel: run.cancel.child_token() };
        let asked = std::time::Instant::now();
        let reply = asking.model.send(&Request::chat(self.prompt(&asking.rules).messages()), &options).await;
        lock(self.tally).waited.model_ms += asked.elapsed().as_secs_f64() * 1000.0;
        let reply = match reply {
            Ok(reply) => reply,
            Err(ModelError::Cancelled { .. }) => return Err(Stop::new(ExitReason::Cancelled, "Cancelled")),
            Err(err) => return Err(Stop::failed(format!("the model could not be used: {err}"))),
        };
        if let Some(journal) = self.journal {
            journal.record(
                "prompt",
                serde_json::json!({
                    "attempt": attempt,
                    "targets": self.focus.len(),
                    "prompt_tokens": reply.usage.prompt_tokens,
                    "completion_tokens": reply.usage.completion_tokens,
                    "estimated": reply.usage.estimated,
                }),
            );
        }
        {
            let mut tally = lock(self.tally);
            tally.attempts = attempt;
            tally.tokens.add(Tokens::of(&reply.usage));
        }
        tracing::debug!("{}: attempt {attempt} reply:\n{}", run.run_id, reply.text);
        if reply.finish == FinishReason::Length {
            // a reply cut at its length is never half applied: its finished blocks may need
            // the ones it did not finish
            let message = format!("attempt {attempt}: the reply was cut off; nothing from it applied");
            report(self.context, run, message, None).await;
            self.history.push(format!(
                "Attempt {attempt}: your reply was cut off at the token limit, so nothing from it was applied. Reply with fewer, smaller SEARCH/REPLACE blocks."
            ));
            return Ok(None);
        }
        let root = self.context.root.as_deref();
        match read_reply(&reply.text, &self.snapshot, root, &self.path, similarity) {
            Ok(text) => Ok(Some(Proposal {
                base,
                text,
                label: format!("Tokamak: fix attempt {attempt}"),
                tests: None,
            })),
            Err(why) => {
                if why != UNCHANGED {
                    doubt(self.journal, self.tally, &self.path, 15, "a fix did not apply to it");
                }
                self.history.push(format!("Attempt {attempt}: {why}"));
                Ok(None)
            }
        }
    }

    /// A round of candidate fixes, tested each in its own copy; the first that passes (or
    /// fails only what failed before) is the attempt's text. `None` when none did (the next
    /// attempt is told why each lost).
    async fn candidates(
        &mut self,
        attempt: u32,
        asking: &Asking<'_>,
        verify: &ExecutorContext,
    ) -> Result<Option<Proposal>, Stop> {
        let context = self.context;
        let base = self.snapshot.rope.to_string();
        let similarity = self.similarity();
        let (snapshot, root, path) = (&self.snapshot, context.root.as_deref(), self.path.as_str());
        let read = |reply: &str| read_reply(reply, snapshot, root, path, similarity);
        let round = candidates::Round {
            sources: &asking.sources,
            request: Request::chat(self.prompt(&asking.rules).messages()),
            attempt,
            run_id: &self.run.run_id,
            cancel: &self.run.cancel,
            editor: context.editor.as_ref(),
            uri: self.uri,
            base: &base,
            prepare: &read,
            targets: &self.targets,
            problems: &self.baseline,
            observer: &context.observer,
            settle_timeout: Duration::from_millis(context.settings.settle_timeout_ms.max(1)),
            verify,
            baseline: self.tests_before.clone(),
        };
        let outcome = candidates::round(round).await;
        {
            let mut tally = lock(self.tally);
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
        }
        self.tests_before = Some(outcome.after.clone().unwrap_or_else(|| outcome.baseline.clone()));
        if let Some(journal) = self.journal {
            journal.record(
                "candidates",
                serde_json::json!({
                    "attempt": attempt,
                    "asked": asking.asked_for,
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
        let Some(chosen) = outcome.chosen else {
            let failed = outcome.reports.iter().filter(|r| r.outcome == CandidateOutcome::DoesNotApply);
            if failed.count() == outcome.reports.len() && !outcome.reports.is_empty() {
                doubt(self.journal, self.tally, &self.path, 15, "no candidate fix applied to it");
            }
            let lost = candidates_lost(&outcome.reports, outcome.note.as_deref());
            self.history.push(format!("Attempt {attempt}: {lost}"));
            self.lost_round = Some(lost);
            return Ok(None);
        };
        // the model named when the candidates came from several
        let of = match asking.sources.len() {
            1 => String::new(),
            _ => outcome
                .reports
                .iter()
                .find(|r| r.number == chosen.number)
                .map(|r| format!(", {}", r.model))
                .unwrap_or_default(),
        };
        Ok(Some(Proposal {
            base,
            text: chosen.text,
            label: format!("Tokamak: fix attempt {attempt} (candidate {}{of})", chosen.number),
            tests: outcome.after,
        }))
    }

    /// Makes an attempt's text the document's — on its text as it is now, where the fix still
    /// applies (the user, or another program, may have changed it meanwhile) — and compares
    /// what the checkers then find with what the run set out to fix. `Some`: the run's end.
    async fn land(&mut self, attempt: u32, proposal: Proposal) -> Result<Option<Stop>, Stop> {
        let (context, run, tally) = (self.context, self.run, self.tally);
        self.lost_round = None;
        let Proposal { base, text, label, mut tests } = proposal;
        let edits = minimal_edits(&base, &text);
        if let Some((current, drift, what)) = drifted(context, self.uri, &self.snapshot, &self.path).await? {
            // a candidate's tests ran on the text before
            tests = None;
            let moved = crate::edit::reground(&base, &current.rope.to_string(), &edits).is_ok();
            let how = match (drift, moved) {
                (Drift::Major, _) | (_, false) => {
                    "the fix was not applied and the next attempt starts from its text as it is now"
                }
                (Drift::Minor, true) => "absorbed",
                _ => "the fix was made on its text as it is now, where it still applies",
            };
            note_drift(context, run, self.journal, tally, (&self.path, drift, &what), how).await;
            if drift == Drift::Major || !moved {
                self.history.push(format!(
                    "Attempt {attempt}: your fix was not applied: {} changed under the run ({} drift: {what}). The code shown is the file as it is now.",
                    self.path,
                    drift.as_str()
                ));
                let (after, now) = observe(context, self.uri, tally).await?;
                let comparison = compare(&self.targets, &self.baseline, &now);
                lock(tally).targets_after = comparison.remaining.len() + comparison.introduced.len();
                self.snapshot = after;
                if comparison.is_clean() {
                    return Ok(Some(self.fixed(None).await));
                }
                self.focus = comparison.next_targets();
                return Ok(None);
            }
        }
        if confidence(tally) < ASK_BELOW {
            go_on(context, run, tally, &self.path).await?;
        }
        let message = format!("attempt {attempt}: applying {} edit(s)", edits.len());
        report(context, run, message, Some(self.percentage(attempt))).await;
        apply_counted(context, self.journal, &run.run_id, &self.snapshot, &edits, &label, tally).await?;
        let (after, now) = observe(context, self.uri, tally).await?;
        let comparison = compare(&self.targets, &self.baseline, &now);
        {
            let mut tally = lock(tally);
            tally.targets_after = comparison.remaining.len() + comparison.introduced.len();
            tally.left.errors = errors_left(&self.path, &after, &comparison);
        }
        if let Some(journal) = self.journal {
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
        self.snapshot = after;
        if comparison.is_clean() {
            return Ok(Some(self.fixed(tests).await));
        }
        let state = comparison.problems();
        // one more try with the feedback is allowed; the third time in the same state is a loop
        if self.seen.iter().filter(|s| **s == state).count() >= 2 {
            return Err(Stop::new(
                ExitReason::RepeatedError,
                format!(
                    "stopped: after attempt {attempt} the same error is back ({})",
                    first_message(&comparison)
                ),
            ));
        }
        self.seen.push(state);
        let outcome = describe_outcome(&self.snapshot, &edits_lines(&base, &edits), &comparison);
        self.history.push(format!("Attempt {attempt}: {outcome}"));
        self.focus = comparison.next_targets();
        Ok(None)
    }

    /// The end of a run whose targets are gone from the text as it is now, verified there
    /// (`tests`: how they stand on exactly this text, when a candidate was tested on it).
    async fn fixed(&self, tests: Option<candidates::Baseline>) -> Stop {
        let sentence = fixed_sentence(self.context, &self.snapshot, &self.targets);
        verified_stop(self.context, self.run, &self.snapshot, &sentence, tests, self.tally).await
    }

    /// The end of a run whose attempts are spent.
    fn out_of_attempts(&self) -> Stop {
        if let Some(lost) = &self.lost_round {
            return Stop::new(
                ExitReason::MaxAttempts,
                format!("nothing was applied in the last attempt: {lost}"),
            );
        }
        let left = lock(self.tally).targets_after;
        let max = self.context.settings.max_attempts;
        Stop::new(
            ExitReason::MaxAttempts,
            format!("{left} problem(s) left after {max} attempts (fix.max_attempts)"),
        )
    }
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

fn first_message(comparison: &Comparison) -> String {
    comparison.next_targets().first().map(|d| d.message.clone()).unwrap_or_default()
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
