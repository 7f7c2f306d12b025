//! The mode state machine (SPEC M1): a table of `(from, trigger) → to` transitions with
//! priorities and conditions over what the run knows, and the history of transitions. A
//! trigger with no transition from the current mode is refused with an error naming the
//! triggers that would do, never ignored.

use serde::Serialize;

use super::mode::Mode;

/// What a condition is checked against: the run's state when a trigger fires.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModeContext {
    /// Errors seen in the files the run changed.
    pub has_errors: bool,
    /// `Some(false)`: the last test run failed.
    pub tests_passed: Option<bool>,
    /// Files the run touched.
    pub files_touched: usize,
    /// Changes made but not yet checked (the step's files since it started); `None`: not a
    /// step's outcome.
    pub pending_changes: Option<usize>,
    /// The last error, in one line (a diagnostic, or the failing test's first line).
    pub last_error: Option<String>,
    /// The approval level (`low`, `medium`, `high`).
    pub approval: String,
    /// The project's tests run after each step (a test command is configured).
    pub auto_test: bool,
    /// A finished run is committed (`auto_commit`).
    pub auto_commit: bool,
    /// The coverage of the run's new code by the last test run, when it was measured.
    pub coverage_data: Option<CoverageData>,
}

/// Seed 000's `coverage_data`: the statements the run added, and those the tests ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CoverageData {
    pub added: usize,
    pub covered: usize,
}

impl ModeContext {
    /// Seed 000: a change of more than five files is a large one (the step's own change
    /// when it is known, else the run's).
    pub fn is_large_change(&self) -> bool {
        self.pending_changes.unwrap_or(self.files_touched) > 5
    }
}

/// A condition a transition needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    LargeChange,
    HasErrors,
    TestsFailing,
    AutoTest,
    AutoCommit,
}

impl Condition {
    fn holds(self, context: &ModeContext) -> bool {
        match self {
            Condition::LargeChange => context.is_large_change(),
            Condition::HasErrors => context.has_errors,
            Condition::TestsFailing => context.tests_passed == Some(false),
            Condition::AutoTest => context.auto_test,
            Condition::AutoCommit => context.auto_commit,
        }
    }
}

/// One rule of the table (`from: None` applies in every mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub from: Option<Mode>,
    pub trigger: &'static str,
    pub to: Mode,
    /// Higher wins among the rules whose conditions hold.
    pub priority: u8,
    pub condition: Option<Condition>,
}

const fn rule(from: Mode, trigger: &'static str, to: Mode, priority: u8) -> Rule {
    Rule { from: Some(from), trigger, to, priority, condition: None }
}

const fn rule_if(from: Mode, trigger: &'static str, to: Mode, priority: u8, condition: Condition) -> Rule {
    Rule { from: Some(from), trigger, to, priority, condition: Some(condition) }
}

use Mode::*;

/// Seed 000's transitions, its conditional example, and the rules it left for later: the
/// intents that start each mode from `idle`, the way out of documentation, and the phase 2–3
/// modes' own transitions. `cancelled` and `done` return to `idle` from anywhere.
pub const RULES: &[Rule] = &[
    // from idle: what the user asked for
    rule(Idle, "search_intent", ContextNav, 10),
    rule(Idle, "code_intent", Implementation, 10),
    rule(Idle, "error_intent", Debug, 10),
    rule(Idle, "design_intent", Design, 10),
    rule(Idle, "plan_intent", Planning, 10),
    rule(Idle, "test_intent", Test, 10),
    rule(Idle, "doc_intent", Documentation, 10),
    rule(Idle, "review_intent", Qa, 10),
    rule(Idle, "impact_intent", Impact, 10),
    rule(Idle, "git_intent", Git, 10),
    rule(Idle, "refactor_intent", Refactor, 10),
    rule(Idle, "migration_intent", Migration, 9),
    rule(Idle, "dependency_intent", Dependency, 9),
    rule(Idle, "spec_intent", SpecCompliance, 9),
    rule(Idle, "verify_intent", Verification, 9),
    rule(Idle, "profile_intent", Profiling, 9),
    rule(Idle, "ops_intent", Ops, 9),
    rule(Idle, "repro_intent", EnvRepro, 9),
    rule(Idle, "benchmark_intent", Benchmark, 9),
    rule(Idle, "ml_intent", MlIntegration, 9),
    rule(Idle, "research_intent", Research, 9),
    // phase 0 and 1, as seed 000 has them
    rule(ContextNav, "target_found", Implementation, 9),
    rule(ContextNav, "bug_located", Debug, 9),
    rule(ContextNav, "architecture_needed", Design, 8),
    // a step that only had to find something (where is …): answered, and done
    rule(ContextNav, "approved", Idle, 8),
    rule(Design, "design_approved", Implementation, 9),
    rule(Design, "large_change_planned", MultiFile, 9),
    // a step's edits done: tested when there are tests to run, else reviewed
    rule_if(Implementation, "code_complete", Test, 9, Condition::AutoTest),
    rule_if(Implementation, "code_complete", MultiFile, 10, Condition::LargeChange),
    rule(Implementation, "code_complete", Qa, 8),
    rule(Implementation, "error_occurred", Debug, 10),
    rule(Implementation, "doc_needed", Documentation, 7),
    rule(Implementation, "review_needed", Qa, 8),
    rule(Implementation, "rejected", ContextNav, 10),
    rule(Debug, "fix_identified", Implementation, 9),
    rule(Debug, "reproduce_needed", Test, 8),
    rule(Debug, "impact_check_needed", Impact, 8),
    rule(Test, "test_failed", Implementation, 10),
    rule(Test, "error_occurred", Debug, 10),
    rule(Test, "tests_passed", Qa, 9),
    Rule {
        from: Some(Test),
        trigger: "tests_passed",
        to: Debug,
        priority: 10,
        condition: Some(Condition::HasErrors),
    },
    rule(Qa, "improvement_needed", Refactor, 8),
    rule(Qa, "issues_found", Implementation, 9),
    rule(Qa, "error_occurred", Debug, 10),
    // reviewed: committed when `auto_commit` is on, else done
    rule_if(Qa, "approved", Git, 9, Condition::AutoCommit),
    rule(Qa, "approved", Idle, 8),
    rule_if(Refactor, "refactor_complete", Test, 9, Condition::AutoTest),
    rule(Refactor, "refactor_complete", Qa, 8),
    rule(Refactor, "error_occurred", Debug, 10),
    rule(Refactor, "large_refactor", MultiFile, 8),
    rule(MultiFile, "impact_check", Impact, 9),
    rule_if(MultiFile, "changes_ready", Test, 9, Condition::AutoTest),
    rule(MultiFile, "changes_ready", Qa, 8),
    rule(MultiFile, "error_occurred", Debug, 10),
    rule(MultiFile, "commit_ready", Git, 8),
    rule(Impact, "affected_tests", Test, 9),
    // the callers outside the change were looked at and there are no tests to run: reviewed
    rule(Impact, "impact_assessed", Qa, 8),
    // the tests could not run (a person or the policy refused the command, it is missing):
    // reviewed without them, and the step's note says so
    rule(Test, "tests_skipped", Qa, 7),
    rule(Impact, "additional_fixes", Implementation, 8),
    rule(Git, "committed", Idle, 9),
    // the commit was refused (not a repository, a hook, a person): the changes stay, uncommitted
    rule(Git, "commit_failed", Idle, 8),
    rule(Planning, "plan_ready", Implementation, 9),
    rule(Planning, "complex_plan", MultiFile, 9),
    rule(Planning, "migration_plan", Migration, 8),
    rule(Documentation, "doc_complete", Qa, 8),
    rule(Documentation, "rejected", ContextNav, 10),
    rule(Test, "rejected", ContextNav, 10),
    // phase 2
    rule(Migration, "migration_applied", Verification, 9),
    rule(Migration, "error_occurred", Debug, 10),
    rule(Dependency, "dependencies_updated", Test, 9),
    rule(Dependency, "impact_check", Impact, 8),
    rule(SpecCompliance, "violations_found", Implementation, 9),
    rule(SpecCompliance, "compliant", Qa, 8),
    rule(Verification, "verified", Qa, 9),
    rule(Verification, "verification_failed", Debug, 10),
    rule(Profiling, "hotspot_found", Refactor, 9),
    rule(Profiling, "benchmark_needed", Benchmark, 8),
    // phase 3
    rule(Ops, "infra_changed", Verification, 9),
    rule(Ops, "error_occurred", Debug, 10),
    rule(EnvRepro, "reproduced", Debug, 9),
    rule(EnvRepro, "environment_ready", Test, 9),
    rule(Benchmark, "regression_found", Profiling, 9),
    rule(Benchmark, "benchmark_done", Qa, 8),
    rule(MlIntegration, "model_integrated", Test, 9),
    rule(MlIntegration, "error_occurred", Debug, 10),
    rule(Research, "findings_ready", Design, 9),
    rule(Research, "prototype_needed", Implementation, 8),
    // from anywhere
    Rule { from: None, trigger: "cancelled", to: Idle, priority: 1, condition: None },
    // a person said no (SPEC M4): look at the code again (back with `look_again`)
    Rule { from: None, trigger: "rejected", to: ContextNav, priority: 5, condition: None },
    Rule { from: None, trigger: "done", to: Idle, priority: 1, condition: None },
];

/// A transition that happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub from: Mode,
    pub trigger: String,
    pub to: Mode,
}

/// Why a trigger did not move the machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    #[error("no transition from {from} on {trigger:?}; from {from} the triggers are {known}")]
    Unknown { from: Mode, trigger: String, known: String },
    #[error("no transition from {from} on {trigger:?} holds now ({why})")]
    NotNow { from: Mode, trigger: String, why: String },
}

/// The machine: the current mode and how it got there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeMachine {
    current: Mode,
    history: Vec<Transition>,
}

impl Default for ModeMachine {
    fn default() -> Self {
        ModeMachine { current: Mode::Idle, history: Vec::new() }
    }
}

impl ModeMachine {
    pub fn current(&self) -> Mode {
        self.current
    }

    pub fn history(&self) -> &[Transition] {
        &self.history
    }

    /// Takes the best transition for `trigger` from the current mode: the highest priority
    /// among the rules whose conditions hold in `context`.
    pub fn fire(&mut self, trigger: &str, context: &ModeContext) -> Result<Transition, ModeError> {
        let from = self.current;
        let candidates: Vec<&Rule> =
            RULES.iter().filter(|r| r.trigger == trigger && r.from.is_none_or(|f| f == from)).collect();
        if candidates.is_empty() {
            let mut known: Vec<&str> =
                RULES.iter().filter(|r| r.from.is_none_or(|f| f == from)).map(|r| r.trigger).collect();
            known.dedup();
            return Err(ModeError::Unknown { from, trigger: trigger.to_string(), known: known.join(", ") });
        }
        let best = candidates
            .iter()
            .filter(|r| r.condition.is_none_or(|c| c.holds(context)))
            .max_by_key(|r| (r.priority, r.from.is_some()))
            .ok_or_else(|| ModeError::NotNow {
                from,
                trigger: trigger.to_string(),
                why: format!("{context:?}"),
            })?;
        let transition = Transition { from, trigger: trigger.to_string(), to: best.to };
        self.current = best.to;
        self.history.push(transition.clone());
        Ok(transition)
    }

    /// The two modes the machine went back and forth between more than `limit` times, if it
    /// did, the pair of the last transition: a run caught in a loop (seed 000's
    /// `repeated_state`). Passing through `idle` is no loop.
    pub fn cycle(&self, limit: usize) -> Option<(Mode, Mode)> {
        let last = self.history.last()?;
        let (a, b) = (last.from, last.to);
        if a == b || a == Mode::Idle || b == Mode::Idle {
            return None;
        }
        let there = self.history.iter().filter(|t| t.from == a && t.to == b).count();
        let back = self.history.iter().filter(|t| t.from == b && t.to == a).count();
        (there.min(back) > limit).then_some((b, a))
    }

    /// Returns from the navigation a rejection sent the agent to, to the mode it was
    /// rejected in (a history transition: the trigger is `looked_again`).
    pub fn look_again(&mut self) -> Result<Transition, ModeError> {
        let back = match self.history.last() {
            Some(last) if last.trigger == "rejected" && self.current == Mode::ContextNav => last.from,
            _ => {
                return Err(ModeError::Unknown {
                    from: self.current,
                    trigger: "looked_again".to_string(),
                    known: "(only after a rejection)".to_string(),
                });
            }
        };
        let transition = Transition { from: self.current, trigger: "looked_again".to_string(), to: back };
        self.current = back;
        self.history.push(transition.clone());
        Ok(transition)
    }

    /// Goes straight to `mode` when a trigger from `idle` leads there (a step routed to a role
    /// starts in the role's mode): `idle` first when the machine is elsewhere. From planning,
    /// the plan's own way to `mode` when the table has one (`plan_ready` → implementation).
    pub fn start(&mut self, mode: Mode, context: &ModeContext) -> Result<Transition, ModeError> {
        if self.current == Mode::Planning
            && let Some(rule) = RULES
                .iter()
                .filter(|r| r.from == Some(Mode::Planning) && r.to == mode)
                .filter(|r| r.condition.is_none_or(|c| c.holds(context)))
                .max_by_key(|r| r.priority)
        {
            let transition = Transition { from: self.current, trigger: rule.trigger.to_string(), to: mode };
            self.current = mode;
            self.history.push(transition.clone());
            return Ok(transition);
        }
        if self.current != Mode::Idle {
            self.fire("done", context)?;
        }
        let trigger = RULES
            .iter()
            .find(|r| r.from == Some(Mode::Idle) && r.to == mode && r.condition.is_none())
            .map(|r| r.trigger)
            .ok_or_else(|| ModeError::Unknown {
                from: Mode::Idle,
                trigger: format!("(start {mode})"),
                known: "the intents".to_string(),
            })?;
        self.fire(trigger, context)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn a_plan_leads_to_its_first_step_and_the_phases_are_read_from_the_modes() {
        let calm = ModeContext::default();
        let mut machine = ModeMachine::default();
        assert_eq!(machine.start(Mode::Planning, &calm).unwrap().trigger, "plan_intent");
        assert_eq!(machine.start(Mode::Implementation, &calm).unwrap().trigger, "plan_ready");
        // no way from planning to review: planning is done, and review starts from idle
        let mut machine = ModeMachine::default();
        machine.start(Mode::Planning, &calm).unwrap();
        machine.start(Mode::Qa, &calm).unwrap();
        let triggers: Vec<&str> = machine.history().iter().map(|t| t.trigger.as_str()).collect();
        assert_eq!(triggers, ["plan_intent", "done", "review_intent"]);
        use crate::modes::Phase;
        let phases: Vec<Phase> =
            [Mode::Planning, Mode::Implementation, Mode::Test, Mode::Qa, Mode::Debug, Mode::Idle]
                .iter()
                .map(|m| m.phase())
                .collect();
        assert_eq!(
            phases,
            [
                Phase::Planning,
                Phase::Executing,
                Phase::Observing,
                Phase::Reflecting,
                Phase::Fixing,
                Phase::Idle
            ]
        );
    }

    #[test]
    fn every_mode_is_reachable_from_idle_and_has_a_way_out() {
        let mut seen: BTreeSet<Mode> = BTreeSet::from([Mode::Idle]);
        let mut frontier = vec![Mode::Idle];
        while let Some(mode) = frontier.pop() {
            for rule in RULES.iter().filter(|r| r.from == Some(mode)) {
                if seen.insert(rule.to) {
                    frontier.push(rule.to);
                }
            }
        }
        assert_eq!(
            seen.len(),
            Mode::ALL.len(),
            "unreachable: {:?}",
            Mode::ALL.iter().filter(|m| !seen.contains(m)).collect::<Vec<_>>()
        );
        for mode in Mode::ALL.into_iter().filter(|m| *m != Mode::Idle) {
            assert!(RULES.iter().any(|r| r.from == Some(mode)), "{mode} has no rule of its own");
        }
        assert_eq!(Mode::ALL.len(), 23, "22 modes and idle");
        assert_eq!(Mode::ALL.iter().filter(|m| m.tier() >= 2).count(), 10);
    }

    #[test]
    fn transitions_follow_priorities_and_conditions_and_unknown_ones_are_refused() {
        let mut machine = ModeMachine::default();
        let calm = ModeContext { auto_test: true, ..ModeContext::default() };
        // seed 000's scenario 2: find the class, then implement
        assert_eq!(machine.fire("search_intent", &calm).unwrap().to, Mode::ContextNav);
        assert_eq!(machine.fire("target_found", &calm).unwrap().to, Mode::Implementation);
        // a small change goes to the tests; a large one (more than five files) to multi-file
        let mut small = machine.clone();
        assert_eq!(small.fire("code_complete", &calm).unwrap().to, Mode::Test);
        let large = ModeContext { files_touched: 6, ..ModeContext::default() };
        assert_eq!(machine.clone().fire("code_complete", &large).unwrap().to, Mode::MultiFile);
        // tests passing while errors remain go to debugging, not review
        let errors = ModeContext { has_errors: true, ..ModeContext::default() };
        assert_eq!(small.clone().fire("tests_passed", &errors).unwrap().to, Mode::Debug);
        assert_eq!(small.fire("tests_passed", &calm).unwrap().to, Mode::Qa);
        // a rejection goes back to looking
        assert_eq!(machine.fire("rejected", &calm).unwrap().to, Mode::ContextNav);
        // an unknown trigger is an error that names the known ones, and changes nothing
        let err = machine.fire("committed", &calm).unwrap_err();
        assert_eq!(machine.current(), Mode::ContextNav);
        assert!(err.to_string().starts_with("no transition from context_navigation on \"committed\"; from context_navigation the triggers are target_found, bug_located, architecture_needed"), "{err}");
        assert_eq!(machine.history().len(), 3);
        assert_eq!(
            machine.history()[2],
            Transition { from: Mode::Implementation, trigger: "rejected".into(), to: Mode::ContextNav }
        );
        // after looking again, back where the rejection came from; only once
        let mut back = machine.clone();
        assert_eq!(back.look_again().unwrap().to, Mode::Implementation);
        assert!(back.look_again().is_err());
        // a rejection in a mode with no rule of its own goes to looking too
        let mut design = ModeMachine::default();
        design.start(Mode::Design, &calm).unwrap();
        assert_eq!(design.fire("rejected", &calm).unwrap().to, Mode::ContextNav);
        assert_eq!(design.look_again().unwrap().to, Mode::Design);
        // anywhere: done and cancelled go back to idle; start goes through idle
        assert_eq!(machine.fire("cancelled", &calm).unwrap().to, Mode::Idle);
        assert_eq!(machine.start(Mode::Documentation, &calm).unwrap().to, Mode::Documentation);
        assert_eq!(machine.start(Mode::Qa, &calm).unwrap().to, Mode::Qa);
        assert_eq!(
            &machine.history()[5..].iter().map(|t| t.trigger.as_str()).collect::<Vec<_>>(),
            &["done", "review_intent"]
        );
    }

    /// Seed 000's outcomes: edits done are tested when there are tests (reviewed when there
    /// are none), an error goes to debugging, review ends in git only with `auto_commit`, and
    /// going back and forth between two modes is seen.
    #[test]
    fn outcomes_lead_where_the_run_state_says() {
        let tests = ModeContext { auto_test: true, ..ModeContext::default() };
        let none = ModeContext::default();
        let mut machine = ModeMachine::default();
        machine.start(Mode::Implementation, &tests).unwrap();
        assert_eq!(machine.clone().fire("code_complete", &none).unwrap().to, Mode::Qa);
        assert_eq!(machine.fire("code_complete", &tests).unwrap().to, Mode::Test);
        assert_eq!(machine.clone().fire("error_occurred", &tests).unwrap().to, Mode::Debug);
        assert_eq!(machine.fire("tests_passed", &tests).unwrap().to, Mode::Qa);
        let commit = ModeContext { auto_commit: true, ..tests.clone() };
        assert_eq!(machine.clone().fire("approved", &commit).unwrap().to, Mode::Git);
        assert_eq!(machine.fire("approved", &tests).unwrap().to, Mode::Idle);

        let mut looping = ModeMachine::default();
        looping.start(Mode::Implementation, &tests).unwrap();
        for round in 0..3 {
            looping.fire("code_complete", &tests).unwrap();
            assert_eq!(looping.cycle(3), None, "round {round}");
            looping.fire("test_failed", &tests).unwrap();
            assert_eq!(looping.cycle(3), None, "round {round}");
        }
        looping.fire("code_complete", &tests).unwrap();
        looping.fire("test_failed", &tests).unwrap();
        assert_eq!(looping.cycle(3), Some((Mode::Implementation, Mode::Test)));
    }

    /// What a transition costs the engine (printed, not asserted): seed 000's scenario a
    /// thousand times over.
    #[test]
    fn a_thousand_scenarios_end_where_they_began() {
        let tests = ModeContext { auto_test: true, ..ModeContext::default() };
        let mut machine = ModeMachine::default();
        let started = std::time::Instant::now();
        for _ in 0..1000 {
            machine.start(Mode::Implementation, &tests).unwrap();
            for trigger in ["code_complete", "tests_passed", "approved"] {
                machine.fire(trigger, &tests).unwrap();
            }
        }
        eprintln!("{:?} per transition", started.elapsed() / 4000);
        assert_eq!(machine.current(), Mode::Idle);
        assert_eq!(machine.history().len(), 4000);
    }

    #[test]
    fn modes_name_what_may_be_done_in_them() {
        use crate::action::ActionKind::*;
        assert!(Mode::ContextNav.allowed().permits(Read) && !Mode::ContextNav.allowed().permits(Write));
        assert!(Mode::Implementation.allowed().permits(Write));
        assert!(Mode::Test.allowed().permits(Command));
        assert!(Mode::Git.allowed().permits(Commit) && !Mode::Test.allowed().permits(Commit));
        assert!(!Mode::Qa.allowed().permits(Write) && Mode::Qa.allowed().permits(Command));
        assert!(!Mode::Idle.allowed().permits(Read));
        assert_eq!(Mode::from_name("git_workflow"), Some(Mode::Git));
        assert_eq!(Mode::from_name("context_nav"), Some(Mode::ContextNav));
        assert_eq!(Mode::from_name("flying"), None);
    }
}
