//! A task run's ending, computed from the state it ends in rather than remembered along the
//! way (SPEC P4, §4): a step is done only when the changes it asked for landed, and a run
//! only when every step is done (or was replaced by steps that are) and what it leaves —
//! errors in the files it changed, failing tests, tests that could not run — is nothing.
//! Every front end renders what this says; no path through the engine declares success on
//! its own.

use crate::executor::{ChangeAttempt, ChangeFate};
use crate::run::Left;
use crate::run::plan::{Plan, StepStatus};
use crate::run::{ExitReason, TestOutcome};

/// How a step's changes landed, when that keeps it from being done: every change it asked
/// for was rejected (or refused), none landed, or one it needed was approved and did not
/// land. `None`: what landed is what it asked for (or it asked for none: a question, a
/// review). A role that may write nothing (the reviewer) refused a write by its rules has done
/// what it may: that is its answer's business, not a change that did not land.
pub fn landing(attempts: &[ChangeAttempt], may_write: bool) -> Option<(StepStatus, String)> {
    if attempts.is_empty() || (!may_write && attempts.iter().all(|a| a.fate == ChangeFate::Refused)) {
        return None;
    }
    let last = last_fates(attempts);
    let landed = attempts.iter().any(|a| matches!(a.fate, ChangeFate::Landed | ChangeFate::AlreadyThere));
    let said = |fates: &[ChangeFate]| -> Vec<String> {
        last.iter().filter(|a| fates.contains(&a.fate)).map(|a| describe(a)).collect()
    };
    let not_applied = said(&[ChangeFate::NotApplied]);
    if landed {
        if not_applied.is_empty() {
            return None;
        }
        return Some((
            StepStatus::NotApplied,
            format!("a change it needed did not land: {}", not_applied.join("; ")),
        ));
    }
    // nothing landed: every attempt counts, not only each path's last (a rejection sends the
    // model to look again, and its next try may be refused by the mode it is in then)
    let every = |fates: &[ChangeFate]| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for attempt in attempts.iter().filter(|a| fates.contains(&a.fate)) {
            let line = describe(attempt);
            if !out.contains(&line) {
                out.push(line);
            }
        }
        out
    };
    let rejected = every(&[ChangeFate::Rejected]);
    if !rejected.is_empty() {
        let mut note = format!("nothing changed: {}", rejected.join("; "));
        let refused = every(&[ChangeFate::Refused]);
        if !refused.is_empty() {
            note.push_str(&format!("; {}", refused.join("; ")));
        }
        return Some((StepStatus::Rejected, note));
    }
    if !not_applied.is_empty() {
        return Some((StepStatus::NotApplied, format!("nothing changed: {}", not_applied.join("; "))));
    }
    let all = every(&[ChangeFate::Refused, ChangeFate::Failed]);
    Some((
        StepStatus::NothingChanged,
        format!("none of the {} change(s) it asked for landed: {}", attempts.len(), all.join("; ")),
    ))
}

/// Each path's last attempt, in the order the paths were first tried.
fn last_fates(attempts: &[ChangeAttempt]) -> Vec<&ChangeAttempt> {
    let mut last: Vec<&ChangeAttempt> = Vec::new();
    for attempt in attempts {
        match last.iter_mut().find(|a| a.path == attempt.path) {
            Some(slot) => *slot = attempt,
            None => last.push(attempt),
        }
    }
    last
}

/// "models.py: rejected (The user rejected this …)", one line.
fn describe(attempt: &ChangeAttempt) -> String {
    let fate = match attempt.fate {
        ChangeFate::Landed => "landed",
        ChangeFate::AlreadyThere => "already as asked",
        ChangeFate::Failed => "did not apply",
        ChangeFate::Refused => "refused",
        ChangeFate::Rejected => "rejected",
        ChangeFate::NotApplied => "approved but not applied",
    };
    let why = first_sentence(attempt.why.lines().next().unwrap_or_default().trim());
    if why.is_empty() {
        format!("{} {fate}", attempt.path)
    } else {
        format!("{} {fate} ({why})", attempt.path)
    }
}

/// The first sentence of `text` (its period kept), at most some 200 characters.
fn first_sentence(text: &str) -> String {
    let sentence = match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    };
    if sentence.chars().count() <= 200 {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(199).collect();
    format!("{cut}…")
}

/// The changes of the whole run that did not land in the end (their path's last attempt),
/// into what the run leaves: refused, rejected, not applied.
pub fn changes_left(attempts: &[ChangeAttempt], left: &mut Left) {
    let last = last_fates(attempts);
    // a path the user rejected and that never landed after: the rejection is what is left
    for attempt in attempts.iter().filter(|a| a.fate == ChangeFate::Rejected) {
        let landed = last.iter().any(|l| {
            l.path == attempt.path && matches!(l.fate, ChangeFate::Landed | ChangeFate::AlreadyThere)
        });
        let line = describe(attempt);
        if !landed && !left.rejected.contains(&line) {
            left.rejected.push(line);
        }
    }
    for attempt in last {
        let list = match attempt.fate {
            ChangeFate::Refused => &mut left.refused,
            ChangeFate::NotApplied => &mut left.not_applied,
            ChangeFate::Landed | ChangeFate::AlreadyThere | ChangeFate::Failed | ChangeFate::Rejected => {
                continue;
            }
        };
        list.push(describe(attempt));
    }
}

/// The last test run of the run, into what it leaves: the tests failing by name (or the
/// first line that says so), or why they could not run.
pub fn tests_left(tests: Option<&TestOutcome>, left: &mut Left) {
    match tests {
        Some(TestOutcome { passed: false, ran: true, output }) => {
            let mut names = crate::executor::failed_tests(output, "");
            if names.is_empty() {
                names.push(
                    output.lines().find(|l| !l.trim().is_empty()).unwrap_or("the tests fail").to_string(),
                );
            }
            left.tests_failing = names;
        }
        Some(TestOutcome { ran: false, output, .. }) => {
            left.tests_not_run = Some(crate::text::cut(output.trim(), 300).trim_end().to_string());
        }
        _ => {}
    }
}

/// The run's ending from its plan and what it leaves: done only when every step is done or
/// made good by the steps that replaced it and nothing is left; otherwise what is not done,
/// step by step, and what is left.
pub fn run_ending(plan: &Plan, left: &Left) -> (ExitReason, String) {
    let done = plan.steps.iter().filter(|s| s.status == StepStatus::Done).count();
    let replaced: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.status.is_failure() && !s.replaced_by.is_empty())
        .map(|s| {
            format!(
                "step {} ({}) {}: {}, and was replaced by {}",
                s.id,
                s.title,
                s.status.as_str().replace('_', " "),
                s.note,
                s.replaced_by.join(", ")
            )
        })
        .collect();
    let not_done: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| !plan.made_good(s))
        .map(|s| format!("step {} ({}) {}: {}", s.id, s.title, s.status.as_str().replace('_', " "), s.note))
        .collect();
    let mut parts = Vec::new();
    let reason = if not_done.is_empty() {
        parts.push(format!("{}: all {done} step(s) done", plan.goal));
        if !left.errors.is_empty() {
            ExitReason::Failed
        } else if !left.tests_failing.is_empty() {
            ExitReason::TestsFailing
        } else if left.tests_not_run.is_some() {
            ExitReason::Untested
        } else if !left.unanswered.is_empty() {
            ExitReason::Unchecked
        } else {
            ExitReason::Done
        }
    } else {
        parts.push(format!("{}: {done} of {} step(s) done", plan.goal, plan.steps.len()));
        parts.extend(not_done);
        ExitReason::Failed
    };
    parts.extend(replaced);
    // what is left, a change the user rejected beside ones that landed included — but not a
    // change a step's note above already names
    let notes: Vec<&str> =
        plan.steps.iter().filter(|s| !plan.made_good(s)).map(|s| s.note.as_str()).collect();
    let mut unsaid = left.clone();
    for changes in [&mut unsaid.rejected, &mut unsaid.refused, &mut unsaid.not_applied] {
        changes.retain(|change| !notes.iter().any(|note| names(note, change)));
    }
    parts.extend(unsaid.describe());
    (reason, parts.join("; "))
}

/// Whether `note` names `change` as one of its items: the whole of it, after the note's start,
/// a `: ` or a `; `, and before its end, a `; ` or a `.` (`p.py refused (…)` is not named by
/// `app.py refused (…)`).
fn names(note: &str, change: &str) -> bool {
    note.match_indices(change).any(|(at, _)| {
        let before = &note[..at];
        let after = &note[at + change.len()..];
        (before.is_empty() || before.ends_with(": ") || before.ends_with("; "))
            && (after.is_empty() || after.starts_with("; ") || after.starts_with('.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::plan::PlanStep;

    fn attempt(path: &str, fate: ChangeFate, why: &str) -> ChangeAttempt {
        ChangeAttempt { path: path.to_string(), fate, why: why.to_string() }
    }

    fn step(id: &str, status: StepStatus, note: &str) -> PlanStep {
        PlanStep {
            status,
            note: note.to_string(),
            ..PlanStep::pending(id.to_string(), format!("title {id}"), String::new(), Vec::new())
        }
    }

    fn plan(steps: Vec<PlanStep>) -> Plan {
        Plan { plan_id: "p".to_string(), goal: "the goal".to_string(), steps, repairs: Vec::new() }
    }

    #[test]
    fn a_step_is_done_only_when_what_it_asked_for_landed() {
        assert_eq!(landing(&[], true), None, "a question changes nothing and may be done");
        let fixed_later = [
            attempt("a.py", ChangeFate::Failed, "SEARCH not found"),
            attempt("a.py", ChangeFate::Landed, ""),
        ];
        assert_eq!(landing(&fixed_later, true), None);
        let redone = [attempt("a.py", ChangeFate::AlreadyThere, "what it puts there is already there")];
        assert_eq!(landing(&redone, true), None, "the text is as the step asks");

        let every_one_refused = [
            attempt("a.py", ChangeFate::Rejected, "The user rejected this (edit a.py): no."),
            attempt("b.py", ChangeFate::Refused, "the qa mode does not allow changing files"),
        ];
        let (status, note) = landing(&every_one_refused, true).unwrap();
        assert_eq!(status, StepStatus::Rejected);
        assert!(note.contains("a.py rejected") && note.contains("b.py refused"), "{note}");

        let rejected_then_refused = [
            attempt("a.py", ChangeFate::Rejected, "The user rejected this (edit a.py): no."),
            attempt("a.py", ChangeFate::Refused, "the context navigation mode does not allow changing files"),
        ];
        assert_eq!(landing(&rejected_then_refused, true).map(|(s, _)| s), Some(StepStatus::Rejected));

        let typed_over = [
            attempt("models.py", ChangeFate::NotApplied, "models.py was not changed: your typing wins"),
            attempt("test_models.py", ChangeFate::Landed, ""),
        ];
        let (status, note) = landing(&typed_over, true).unwrap();
        assert_eq!(status, StepStatus::NotApplied, "the test landed, the method it tests did not");
        assert!(
            note.contains("models.py approved but not applied (models.py was not changed: your typing wins)")
        );

        let (status, _) = landing(&[attempt("a.py", ChangeFate::Failed, "SEARCH not found")], true).unwrap();
        assert_eq!(status, StepStatus::NothingChanged);
        let refused = [attempt("a.py", ChangeFate::Refused, "the reviewer role may not edit")];
        assert_eq!(landing(&refused, false), None, "a reviewer refused a write still reviewed");
        assert_eq!(landing(&refused, true).map(|(s, _)| s), Some(StepStatus::NothingChanged));
    }

    #[test]
    fn the_run_is_done_only_when_every_step_is_or_was_made_good() {
        let all = plan(vec![step("1", StepStatus::Done, "added"), step("2", StepStatus::Done, "tested")]);
        let (reason, summary) = run_ending(&all, &Left::default());
        assert_eq!((reason, summary.as_str()), (ExitReason::Done, "the goal: all 2 step(s) done"));

        let refused = plan(vec![step("1", StepStatus::Rejected, "nothing changed: a.py rejected")]);
        let (reason, summary) = run_ending(&refused, &Left::default());
        assert_eq!(reason, ExitReason::Failed);
        assert!(
            summary.contains("0 of 1 step(s) done; step 1 (title 1) rejected: nothing changed"),
            "{summary}"
        );
        // a change the step's note names is not named again; one it does not name is
        let left = Left {
            rejected: vec!["a.py rejected".to_string(), "b.py rejected".to_string()],
            ..Left::default()
        };
        let (_, summary) = run_ending(&refused, &left);
        assert!(names("nothing changed: a.py rejected; b.py refused (x)", "b.py refused (x)"));
        assert!(!names("nothing changed: app.py refused (x)", "p.py refused (x)"), "a whole item only");
        assert!(!names("nothing changed: a.py rejected (x); b", "a.py rejected"), "a whole item only");
        assert_eq!(
            summary,
            "the goal: 0 of 1 step(s) done; step 1 (title 1) rejected: nothing changed: a.py rejected; rejected: b.py rejected"
        );

        let mut failed = step("1", StepStatus::Failed, "the tests still fail");
        failed.replaced_by = vec!["r1.1".to_string(), "r1.2".to_string()];
        let replanned =
            plan(vec![failed, step("r1.1", StepStatus::Done, ""), step("r1.2", StepStatus::Done, "")]);
        let (reason, summary) = run_ending(&replanned, &Left::default());
        assert_eq!(reason, ExitReason::Done);
        assert!(
            summary.contains("step 1 (title 1) failed: the tests still fail, and was replaced by r1.1, r1.2"),
            "the failure stays told: {summary}"
        );

        let left = Left { errors: vec!["a.py:3 [pyright] x is undefined".to_string()], ..Default::default() };
        let (reason, summary) = run_ending(&all, &left);
        assert_eq!(reason, ExitReason::Failed, "steps done, errors left: not done");
        assert!(summary.contains("errors left: a.py:3 [pyright]"), "{summary}");
        let left =
            Left { tests_not_run: Some("`pytest` is not installed".to_string()), ..Default::default() };
        assert_eq!(run_ending(&all, &left).0, ExitReason::Untested);
        let left = Left { tests_failing: vec!["test_a.py::test_x".to_string()], ..Default::default() };
        assert_eq!(run_ending(&all, &left).0, ExitReason::TestsFailing);
    }

    #[test]
    fn what_did_not_land_is_left_by_its_last_attempt() {
        let mut left = Left::default();
        changes_left(
            &[
                attempt("a.py", ChangeFate::Rejected, "no"),
                attempt("a.py", ChangeFate::Landed, ""),
                attempt("b.py", ChangeFate::NotApplied, "your typing wins"),
                attempt("c.py", ChangeFate::Refused, "the reviewer may not write"),
            ],
            &mut left,
        );
        assert!(left.rejected.is_empty(), "a.py landed in the end");
        assert_eq!(left.not_applied, ["b.py approved but not applied (your typing wins)"]);
        assert_eq!(left.refused, ["c.py refused (the reviewer may not write)"]);
        let mut left = Left::default();
        tests_left(
            Some(&TestOutcome {
                passed: false,
                ran: true,
                output: "FAILED test_stats.py::test_mean - assert 3.0 == 2\n".to_string(),
            }),
            &mut left,
        );
        assert_eq!(left.tests_failing, ["test_stats.py::test_mean"]);
    }
}
