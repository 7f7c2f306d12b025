//! How a fix run that found nothing left ends, read from the state it ends in: clean only when
//! every checker answered on the text as it is and the tests, where there are any, pass on it;
//! otherwise what is left — checkers that did not answer, failing tests, tests that could not run.

use std::sync::Mutex;

use super::{FixContext, Stop, Tally, report};
use crate::agent::candidates;
use crate::agent::runs::RunHandle;
use crate::agent::targets::Comparison;
use crate::observer::Diagnostic;
use crate::run::ExitReason;
use crate::sync::lock;
use crate::text::PositionEncoding;
use crate::workspace::DocumentSnapshot;

/// The end of a run whose checkers find nothing left, read from the state it ends in: clean
/// only when every checker answered on the text as it is and, when the run changed it and
/// the workspace has tests, they pass on it — run now, unless a candidate was tested on
/// exactly this text (`tests_now`). Otherwise it says what is left: checkers that did not
/// answer (unchecked), failing tests by name (tests_failing), tests that could not run
/// (untested).
pub(super) async fn verified_stop(
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
pub(super) fn errors_left(path: &str, now: &DocumentSnapshot, comparison: &Comparison) -> Vec<String> {
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
pub(super) fn fixed_sentence(context: &FixContext, now: &DocumentSnapshot, targets: &[Diagnostic]) -> String {
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
