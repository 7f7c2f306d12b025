//! The engine's phases (SPEC P1): `Idle → Planning → Executing → Observing → Reflecting →
//! Fixing → … → Done` (or `Failed`), with the transitions a run may make written down; any
//! other transition is an error, never ignored. Every transition is kept, with its reason,
//! in the run's history and audit log.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Idle,
    Planning,
    Executing,
    Observing,
    Reflecting,
    Fixing,
    Done,
    Failed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Planning => "planning",
            Phase::Executing => "executing",
            Phase::Observing => "observing",
            Phase::Reflecting => "reflecting",
            Phase::Fixing => "fixing",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }
}

/// The transitions a run may make. A run may fail from any phase but the two final ones.
const TRANSITIONS: &[(Phase, Phase)] = &[
    (Phase::Idle, Phase::Planning),
    // implementing a plan made earlier
    (Phase::Idle, Phase::Executing),
    (Phase::Planning, Phase::Executing),
    (Phase::Executing, Phase::Observing),
    // the step could not be carried out (its loop failed): reflect on what is left
    (Phase::Executing, Phase::Reflecting),
    (Phase::Observing, Phase::Reflecting),
    // the step is done: the next one, a retry of this one, a new plan, or the end
    (Phase::Reflecting, Phase::Executing),
    (Phase::Reflecting, Phase::Planning),
    (Phase::Reflecting, Phase::Fixing),
    (Phase::Reflecting, Phase::Done),
    (Phase::Fixing, Phase::Observing),
    // the fix loop could not repair what the step broke
    (Phase::Fixing, Phase::Reflecting),
];

/// A transition the table does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the engine cannot go from {} to {}", from.as_str(), to.as_str())]
pub struct InvalidTransition {
    pub from: Phase,
    pub to: Phase,
}

/// One transition, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub from: Phase,
    pub to: Phase,
    pub why: String,
}

/// Where a run is, and how it got there.
#[derive(Debug, Clone)]
pub struct Engine {
    phase: Phase,
    history: Vec<Transition>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine { phase: Phase::Idle, history: Vec::new() }
    }
}

impl Engine {
    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn history(&self) -> &[Transition] {
        &self.history
    }

    /// Moves to `to` if the table allows it.
    pub fn go(&mut self, to: Phase, why: impl Into<String>) -> Result<&Transition, InvalidTransition> {
        let from = self.phase;
        let allowed = TRANSITIONS.contains(&(from, to))
            || (to == Phase::Failed && !matches!(from, Phase::Done | Phase::Failed));
        if !allowed {
            return Err(InvalidTransition { from, to });
        }
        self.phase = to;
        self.history.push(Transition { from, to, why: why.into() });
        Ok(self.history.last().expect("just pushed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_written_transitions_are_taken() {
        let mut engine = Engine::default();
        for (to, why) in [
            (Phase::Planning, "goal"),
            (Phase::Executing, "step 1"),
            (Phase::Observing, "step 1 ended"),
            (Phase::Reflecting, "settled"),
            (Phase::Fixing, "an error"),
            (Phase::Observing, "fixed"),
            (Phase::Reflecting, "settled"),
            (Phase::Done, "all steps done"),
        ] {
            engine.go(to, why).unwrap();
        }
        assert_eq!(engine.history().len(), 8);
        assert_eq!(
            engine.go(Phase::Executing, "again"),
            Err(InvalidTransition { from: Phase::Done, to: Phase::Executing })
        );
        assert!(engine.go(Phase::Failed, "late").is_err(), "a finished run stays finished");

        let mut engine = Engine::default();
        let err = engine.go(Phase::Observing, "skip").unwrap_err();
        assert_eq!(err.to_string(), "the engine cannot go from idle to observing");
        assert_eq!(engine.phase(), Phase::Idle, "a refused transition changes nothing");
        engine.go(Phase::Failed, "cancelled").unwrap();
    }
}
