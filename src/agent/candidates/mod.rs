//! Verified candidates (SPEC V1–V2): one model attempt asks for several fixes at different
//! temperatures, reads each into a text in memory, drops those that do not apply or do not
//! parse, scores the rest by what the checkers say of their text (the targets resolved, no new
//! errors, the smallest change), and runs the project's tests on them best first, each in a
//! sandboxed copy of its own: the first that passes is the one the fix loop applies. None
//! passing, nothing is applied, and each candidate's report says why it lost.
//!
//! When the tests fail without any fix too, a candidate on which only some of those same
//! tests fail wins as well — but only when no candidate passes every test: each is tested
//! before such a one lands, and the fix loop's ending names the tests still failing. When the tests cannot decide — they cannot be run, or they fail
//! without any fix and do not say which tests — the checkers choose among the candidates that
//! resolve the problems without a new one, and the report says so: a candidate is never called
//! tested when it was not, nor chosen by checkers that did not report on it.

mod ask;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use url::Url;

use super::checks::diagnostics_settled;
use super::targets::{Comparison, Problems, compare, is_syntax};
use crate::config::CANDIDATE_TEMPERATURES;
use crate::editor::{Editor, Progress, RunEvent};
use crate::executor::{ExecutorContext, TestVerdict};
use crate::model::{FinishReason, Model, ModelError, Request, Usage};
use crate::observer::{Diagnostic, Observer};
use crate::run::{CandidateOutcome, CandidateReport};

pub use ask::Concurrency;

/// How the project's tests stand on the text before any candidate (run once per fix run,
/// while the model is asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Baseline {
    Passing,
    /// They fail already (the problem being fixed may be why): a candidate passes them, or
    /// fails only tests that fail here too, fewer of them.
    Failing {
        first: String,
        failed: Vec<String>,
    },
    /// They could not be run (said why).
    CannotRun(String),
}

/// A model of `[[fix.candidate_models]]` as a run is given it: connected, or why it could not be.
pub struct ModelCandidates {
    pub label: String,
    pub model: Result<Arc<dyn Model>, ModelError>,
    pub temperatures: Vec<f32>,
}

/// A model the candidates come from, and the temperatures it is asked at (one candidate each).
#[derive(Clone)]
pub struct Source {
    /// As the report names it: its `[profiles.NAME]`, or the model's name.
    pub label: String,
    pub model: Arc<dyn Model>,
    pub temperatures: Vec<f32>,
}

impl Source {
    /// `model` at the first `count` of [`CANDIDATE_TEMPERATURES`].
    pub fn temperatures_of(model: &Arc<dyn Model>, count: usize) -> Source {
        let count = count.clamp(1, CANDIDATE_TEMPERATURES.len());
        Source {
            label: model.info().model,
            model: Arc::clone(model),
            temperatures: CANDIDATE_TEMPERATURES[..count].to_vec(),
        }
    }
}

/// One attempt's round: what it is asked, on what text, and how its candidates are judged.
pub struct Round<'a> {
    /// The models asked, together, each at its temperatures: the candidates are numbered in
    /// this order.
    pub sources: &'a [Source],
    pub request: Request,
    pub attempt: u32,
    pub run_id: &'a str,
    pub cancel: &'a CancellationToken,
    pub editor: &'a dyn Editor,
    /// The document and the text the prompt was made from.
    pub uri: &'a Url,
    pub base: &'a str,
    /// Reads a reply into the document's new text, or says why it cannot.
    pub prepare: &'a (dyn Fn(&str) -> Result<String, String> + Sync),
    /// What the run aims at, and every problem at its start.
    pub targets: &'a [Diagnostic],
    pub problems: &'a Problems,
    /// Checks candidate texts with the checkers of this Observer (in one of its own).
    pub observer: &'a Arc<Observer>,
    pub settle_timeout: Duration,
    /// Runs the tests.
    pub verify: &'a ExecutorContext,
    /// How the tests stand on `base`, when known (the caller keeps it between rounds: the
    /// chosen candidate's result is the next round's); `None`: run them while the model is
    /// asked.
    pub baseline: Option<Baseline>,
}

/// The candidate the round chose.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// 1-based, in the order of the temperatures.
    pub number: u32,
    pub text: String,
}

/// What a round did.
pub struct RoundOutcome {
    pub chosen: Option<Chosen>,
    pub reports: Vec<CandidateReport>,
    /// Every reply's usage.
    pub usage: Vec<Usage>,
    pub concurrency: Concurrency,
    /// Waiting for the model, and copying and testing.
    pub model_time: Duration,
    pub verify_time: Duration,
    /// A model error every candidate got (the round had nothing to judge).
    pub failed: Option<ModelError>,
    /// One sentence for the report when the tests could not choose.
    pub note: Option<String>,
    /// How the tests stood on the text before the round, and on the chosen candidate (what
    /// the next round starts from).
    pub baseline: Baseline,
    pub after: Option<Baseline>,
}

/// A candidate read and checked.
struct Judged {
    number: u32,
    temperature: f32,
    text: String,
    comparison: Comparison,
    /// Problems of any severity its text has that the file did not have at the start (a new
    /// warning counts: an undefined name that ruff reports as one, say).
    appeared: Vec<Diagnostic>,
    changed_lines: usize,
    /// The checkers reported on its text in time (one that did not knows nothing of it).
    settled: bool,
}

impl Judged {
    /// Best first: no new errors, no new problems, the targets resolved, the smallest change,
    /// the steadiest.
    fn rank(&self) -> (bool, usize, usize, usize, usize, u32) {
        (
            !self.settled,
            self.comparison.introduced.len(),
            self.appeared.len(),
            self.comparison.remaining.len(),
            self.changed_lines,
            self.number,
        )
    }
}

/// Runs one round: ask, read, check, test, choose.
pub async fn round(round: Round<'_>) -> RoundOutcome {
    // each candidate's model, by its number
    let labels: Vec<String> =
        round.sources.iter().flat_map(|s| s.temperatures.iter().map(|_| s.label.clone())).collect();
    let count = labels.len();
    let started = Instant::now();
    let file = round.uri.to_file_path().ok();
    let known = round.baseline.clone();
    let baseline = async {
        if let Some(known) = known {
            return known;
        }
        if file.is_none() {
            return Baseline::CannotRun(format!("{} is not a file in the workspace", round.uri));
        }
        match round.verify.test_texts(round.run_id, "baseline", &HashMap::new(), round.cancel).await {
            Ok(verdict) if verdict.passed => Baseline::Passing,
            Ok(verdict) => Baseline::Failing {
                first: first_line(&verdict.why, &verdict.described),
                failed: verdict.failed,
            },
            Err(why) => Baseline::CannotRun(why),
        }
    };
    let asking = async {
        // every model at once, each as its own server takes requests
        let per_model = round
            .sources
            .iter()
            .map(|source| ask::ask(&source.model, &round.request, &source.temperatures, round.cancel));
        let mut asked = Vec::new();
        let mut concurrency = Concurrency::default();
        for (answers, how) in futures::future::join_all(per_model).await {
            let first = asked.len();
            asked.extend(answers.into_iter().map(|mut a| {
                a.index += first;
                a
            }));
            concurrency.reached += how.reached;
            concurrency.in_turn |= how.in_turn;
            concurrency.detected |= how.detected;
        }
        ((asked, concurrency), started.elapsed())
    };
    let (((asked, concurrency), model_time), baseline) = tokio::join!(asking, baseline);
    let mut outcome = RoundOutcome {
        chosen: None,
        reports: Vec::new(),
        usage: Vec::new(),
        concurrency,
        model_time,
        verify_time: Duration::ZERO,
        failed: None,
        note: None,
        baseline: baseline.clone(),
        after: None,
    };
    let report = |number: u32, temperature: f32, outcome: CandidateOutcome, why: String| CandidateReport {
        attempt: round.attempt,
        number,
        temperature,
        model: labels.get(number as usize - 1).cloned().unwrap_or_default(),
        outcome,
        why,
        test_ms: None,
        chosen: false,
    };

    // read each reply into a text; the ones that do not apply are dropped with their reason
    let mut texts: Vec<(u32, f32, String)> = Vec::new();
    let mut errors = Vec::new();
    for asked in asked {
        let number = asked.index as u32 + 1;
        let temperature = asked.temperature;
        match asked.reply {
            Err(err) => {
                outcome.reports.push(report(
                    number,
                    temperature,
                    CandidateOutcome::ModelFailed,
                    err.to_string(),
                ));
                errors.push(err);
            }
            Ok(reply) if reply.finish == FinishReason::Length => {
                // a reply cut at its length is never half applied
                outcome.usage.push(reply.usage);
                outcome.reports.push(report(
                    number,
                    temperature,
                    CandidateOutcome::Cut,
                    "the reply was cut off at the token limit, so nothing from it was used".to_string(),
                ));
            }
            Ok(reply) => {
                outcome.usage.push(reply.usage);
                match (round.prepare)(&reply.text) {
                    Err(why) => {
                        outcome.reports.push(report(number, temperature, CandidateOutcome::DoesNotApply, why))
                    }
                    Ok(text) if text == round.base => outcome.reports.push(report(
                        number,
                        temperature,
                        CandidateOutcome::DoesNotApply,
                        "it changes nothing".to_string(),
                    )),
                    Ok(text) => match texts.iter().find(|(_, _, known)| *known == text) {
                        Some((first, ..)) => outcome.reports.push(report(
                            number,
                            temperature,
                            CandidateOutcome::Duplicate,
                            format!("the same text as candidate {first}"),
                        )),
                        None => texts.push((number, temperature, text)),
                    },
                }
            }
        }
    }
    if texts.is_empty() && errors.len() == count {
        outcome.failed = errors.into_iter().next();
        return finish(outcome);
    }

    // what the checkers say of each text, all at once; a text that does not parse is dropped
    let checks: Vec<_> = texts
        .iter()
        .map(|(_, _, text)| {
            diagnostics_settled(
                round.observer,
                round.verify.confinement.root(),
                round.uri,
                text,
                round.settle_timeout,
            )
        })
        .collect();
    let checked = futures::future::join_all(checks).await;
    let mut judged = Vec::new();
    for ((number, temperature, text), diagnostics) in texts.into_iter().zip(checked) {
        let settled = diagnostics.is_some();
        let diagnostics = diagnostics.unwrap_or_default();
        let comparison = compare(round.targets, round.problems, &diagnostics);
        if let Some(broken) = comparison.introduced.iter().find(|d| is_syntax(d)) {
            let at = line_of(&text, broken.range.start);
            outcome.reports.push(report(
                number,
                temperature,
                CandidateOutcome::DoesNotParse,
                format!("line {at}: {}", broken.message),
            ));
            continue;
        }
        let changed_lines = changed_lines(round.base, &text);
        let appeared = appeared(round.problems, &diagnostics);
        judged.push(Judged { number, temperature, text, comparison, appeared, changed_lines, settled });
    }
    judged.sort_by_key(Judged::rank);

    // the tests, best first, each candidate in a copy of its own
    let verify_started = Instant::now();
    let mut order = judged.into_iter();
    let mut untested: Vec<Judged> = Vec::new();
    let mut cannot: Option<String> = match &baseline {
        Baseline::CannotRun(why) => Some(format!("the tests could not be run ({why})")),
        _ => None,
    };
    // tests that fail without any fix and name none cannot tell a candidate that fixes what
    // it touches from one that does not, unless it makes them pass
    let unnamed = match &baseline {
        Baseline::Failing { first, failed } if failed.is_empty() => {
            Some(format!("the tests fail without any fix too and do not say which ({first})"))
        }
        _ => None,
    };
    // the best candidate on which only tests that failed without any fix fail, and those
    let mut fallback: Option<(Judged, Vec<String>)> = None;
    let mut fallback_first = String::new();
    for candidate in order.by_ref() {
        if cannot.is_some() {
            untested.push(candidate);
            continue;
        }
        progress(&round, format!("candidate {}/{count}: running tests", candidate.number)).await;
        let label = format!("a{}-c{}", round.attempt, candidate.number);
        let Some(path) = file.clone() else {
            cannot = Some(format!("the tests could not be run ({} is not a file)", round.uri));
            untested.push(candidate);
            continue;
        };
        let texts = HashMap::from([(path, candidate.text.clone())]);
        match round.verify.test_texts(round.run_id, &label, &texts, round.cancel).await {
            Ok(verdict) if verdict.passed => {
                let mut passed = report(
                    candidate.number,
                    candidate.temperature,
                    CandidateOutcome::Passed,
                    verdict.described.clone(),
                );
                passed.test_ms = Some(ms(&verdict));
                outcome.reports.push(passed);
                outcome.after = Some(Baseline::Passing);
                outcome.chosen = Some(Chosen { number: candidate.number, text: candidate.text });
                break;
            }
            Ok(verdict) if verdict.ended && fails_only_known(&baseline, &verdict.failed) => {
                // better than nothing, but a later candidate that passes every test beats it:
                // kept aside while the others are tested
                let why = format!(
                    "only tests that fail without any fix fail on it ({}); the others pass",
                    verdict.failed.join(", ")
                );
                let mut passed = report(
                    candidate.number,
                    candidate.temperature,
                    CandidateOutcome::PassedButKnownFailures,
                    why,
                );
                passed.test_ms = Some(ms(&verdict));
                outcome.reports.push(passed);
                let fewer = fallback.as_ref().is_none_or(|(_, failed)| verdict.failed.len() < failed.len());
                if fewer {
                    fallback = Some((candidate, verdict.failed.clone()));
                    fallback_first = first_line(&verdict.why, &verdict.described);
                }
            }
            Ok(verdict) => {
                let mut failed = report(
                    candidate.number,
                    candidate.temperature,
                    CandidateOutcome::TestsFailed,
                    first_lines(&verdict.why, &verdict.described),
                );
                failed.test_ms = Some(ms(&verdict));
                outcome.reports.push(failed);
                if unnamed.is_some() {
                    untested.push(candidate);
                }
            }
            Err(why) => {
                cannot = Some(format!("the tests could not be run ({why})"));
                untested.push(candidate);
            }
        }
    }
    outcome.verify_time = verify_started.elapsed();
    let later: Vec<Judged> = order.collect();
    if let (Some((kept, failed)), None) = (fallback, &outcome.chosen) {
        // no candidate passes every test: the one that fails only known failures, fewest
        outcome.after = Some(Baseline::Failing { first: fallback_first, failed });
        outcome.chosen = Some(Chosen { number: kept.number, text: kept.text });
    }
    if let Some(chosen) = &outcome.chosen {
        for report in &mut outcome.reports {
            if report.number == chosen.number {
                report.chosen = true;
            } else if report.outcome == CandidateOutcome::PassedButKnownFailures {
                let better = if outcome.after == Some(Baseline::Passing) {
                    format!("candidate {} passes every test", chosen.number)
                } else {
                    format!("candidate {} fails no more tests", chosen.number)
                };
                report.why = format!("{}; not chosen: {better}", report.why);
            }
        }
    }
    if outcome.chosen.is_none() {
        // the tests could not decide: the checkers choose among what they reported on, with no
        // new problem, the targets resolved
        if let Some(why) = cannot.or(unnamed) {
            untested.sort_by_key(Judged::rank);
            let best =
                untested.iter().position(|j| j.settled && j.comparison.is_clean() && j.appeared.is_empty());
            if let Some(best) = best {
                let best = untested.remove(best);
                let sentence = format!("{why}, so the checkers chose candidate {}", best.number);
                outcome.reports.retain(|r| r.number != best.number);
                outcome.reports.push(report(
                    best.number,
                    best.temperature,
                    CandidateOutcome::ChosenByCheckers,
                    sentence.clone(),
                ));
                outcome.note = Some(sentence);
                outcome.chosen = Some(Chosen { number: best.number, text: best.text });
            } else {
                outcome.note =
                    Some(format!("{why}, and no candidate resolves the problems without a new one"));
            }
        } else if let Baseline::Failing { first, .. } = &baseline {
            outcome.note = Some(format!("without any fix the tests fail too: {first}"));
        }
        for left in &untested {
            if !outcome.reports.iter().any(|r| r.number == left.number) {
                outcome.reports.push(report(
                    left.number,
                    left.temperature,
                    CandidateOutcome::NotTested,
                    describe(left),
                ));
            }
        }
    }
    for left in later {
        outcome.reports.push(report(
            left.number,
            left.temperature,
            CandidateOutcome::NotTested,
            "an earlier candidate passed the tests first".to_string(),
        ));
    }
    finish(outcome)
}

/// Whether the tests that failed on a candidate all failed without any fix too, and fewer of
/// them: what it touches passes, and the rest is not its to fix.
fn fails_only_known(baseline: &Baseline, failed: &[String]) -> bool {
    match baseline {
        Baseline::Failing { failed: before, .. } => {
            !failed.is_empty() && failed.len() < before.len() && failed.iter().all(|t| before.contains(t))
        }
        _ => false,
    }
}

fn finish(mut outcome: RoundOutcome) -> RoundOutcome {
    outcome.reports.sort_by_key(|r| r.number);
    outcome
}

async fn progress(round: &Round<'_>, message: String) {
    let event = RunEvent::Progress(Progress::Report { message, percentage: None });
    round.editor.run_event(round.run_id, &event).await;
}

fn ms(verdict: &TestVerdict) -> f64 {
    (verdict.copy_time + verdict.test_time).as_secs_f64() * 1000.0
}

/// What the checkers say of a candidate, in a few words.
fn describe(judged: &Judged) -> String {
    if !judged.settled {
        return "the checkers did not report on it in time".to_string();
    }
    let comparison = &judged.comparison;
    match (comparison.remaining.len(), comparison.introduced.first().or(judged.appeared.first())) {
        (_, Some(new)) => format!("the checkers find a new problem in it: {}", new.message),
        (0, None) => "the checkers find nothing left in it".to_string(),
        (left, None) => format!("{left} of the problems are left in it"),
    }
}

/// The diagnostics of `now` beyond what the file had at the start (by signature and count).
fn appeared(problems: &Problems, now: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut allowed = problems.clone();
    let mut out = Vec::new();
    for diagnostic in now {
        match allowed.get_mut(&super::targets::Signature::of(diagnostic)) {
            Some(count) if *count > 0 => *count -= 1,
            _ => out.push(diagnostic.clone()),
        }
    }
    out
}

fn first_line(why: &str, described: &str) -> String {
    why.lines().next().map_or_else(|| described.to_string(), str::to_string)
}

/// The failing run's telling lines (at most four), else how it ended.
fn first_lines(why: &str, described: &str) -> String {
    let lines: Vec<&str> = why.lines().take(4).collect();
    if lines.is_empty() {
        format!("the tests failed: {described}")
    } else {
        format!("the tests failed: {}", lines.join(" | "))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len())).map_or(0, |t| t.matches('\n').count()) + 1
}

/// How many lines a candidate changes (its diff's size).
fn changed_lines(base: &str, text: &str) -> usize {
    similar::TextDiff::from_lines(base, text)
        .iter_all_changes()
        .filter(|change| change.tag() != similar::ChangeTag::Equal)
        .count()
}
