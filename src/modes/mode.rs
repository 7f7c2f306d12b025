//! The agent's modes (SPEC M1, seed 000): `idle` and the 22 working modes in four phases,
//! each naming the kinds of action the agent may take in it — the executor checks them.

use serde::Serialize;

use crate::action::ActionKind;

/// A mode of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Idle,
    // phase 0: the core
    ContextNav,
    Implementation,
    Debug,
    Test,
    Documentation,
    // phase 1
    Design,
    Qa,
    Refactor,
    MultiFile,
    Git,
    Planning,
    Impact,
    // phase 2
    Migration,
    Dependency,
    SpecCompliance,
    Verification,
    Profiling,
    // phase 3
    Ops,
    EnvRepro,
    Benchmark,
    MlIntegration,
    Research,
}

/// The engine's phases (SPEC P1): `idle → planning → executing → observing → reflecting →
/// fixing`. Each mode is one of them ([`Mode::phase`]); a run's `done` or `failed` is its exit
/// reason (the audit log's `exit` line), not a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Idle,
    Planning,
    Executing,
    Observing,
    Reflecting,
    Fixing,
}

/// What a mode lets the agent do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    pub read: bool,
    pub write: bool,
    pub command: bool,
    pub commit: bool,
}

impl Allowed {
    const READ: Allowed = Allowed { read: true, write: false, command: false, commit: false };
    const READ_RUN: Allowed = Allowed { read: true, write: false, command: true, commit: false };
    const EDIT: Allowed = Allowed { read: true, write: true, command: true, commit: false };
    const WRITE: Allowed = Allowed { read: true, write: true, command: false, commit: false };
    const GIT: Allowed = Allowed { read: true, write: false, command: true, commit: true };
    const ALL: Allowed = Allowed { read: true, write: true, command: true, commit: true };
    const NOTHING: Allowed = Allowed { read: false, write: false, command: false, commit: false };

    pub fn permits(&self, kind: ActionKind) -> bool {
        match kind {
            ActionKind::Read => self.read,
            ActionKind::Write => self.write,
            ActionKind::Command => self.command,
            ActionKind::Commit => self.commit,
        }
    }
}

impl Mode {
    /// Every mode, `idle` first, in phase order.
    pub const ALL: [Mode; 23] = [
        Mode::Idle,
        Mode::ContextNav,
        Mode::Implementation,
        Mode::Debug,
        Mode::Test,
        Mode::Documentation,
        Mode::Design,
        Mode::Qa,
        Mode::Refactor,
        Mode::MultiFile,
        Mode::Git,
        Mode::Planning,
        Mode::Impact,
        Mode::Migration,
        Mode::Dependency,
        Mode::SpecCompliance,
        Mode::Verification,
        Mode::Profiling,
        Mode::Ops,
        Mode::EnvRepro,
        Mode::Benchmark,
        Mode::MlIntegration,
        Mode::Research,
    ];

    /// The name seed 000 gives it (`context_navigation`, `git_workflow` …).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Idle => "idle",
            Mode::ContextNav => "context_navigation",
            Mode::Implementation => "implementation",
            Mode::Debug => "debug",
            Mode::Test => "test",
            Mode::Documentation => "documentation",
            Mode::Design => "design",
            Mode::Qa => "qa",
            Mode::Refactor => "refactor",
            Mode::MultiFile => "multi_file_editing",
            Mode::Git => "git_workflow",
            Mode::Planning => "agent_planning",
            Mode::Impact => "impact_analysis",
            Mode::Migration => "migration",
            Mode::Dependency => "dependency_intelligence",
            Mode::SpecCompliance => "spec_compliance",
            Mode::Verification => "verification",
            Mode::Profiling => "performance_profiling",
            Mode::Ops => "ops_infra",
            Mode::EnvRepro => "environment_reproduction",
            Mode::Benchmark => "benchmark",
            Mode::MlIntegration => "ml_integration",
            Mode::Research => "exploratory_research",
        }
    }

    /// Seed 000's rollout phase: 0 (the core) to 3.
    pub fn tier(self) -> u8 {
        match self {
            Mode::Idle
            | Mode::ContextNav
            | Mode::Implementation
            | Mode::Debug
            | Mode::Test
            | Mode::Documentation => 0,
            Mode::Design
            | Mode::Qa
            | Mode::Refactor
            | Mode::MultiFile
            | Mode::Git
            | Mode::Planning
            | Mode::Impact => 1,
            Mode::Migration
            | Mode::Dependency
            | Mode::SpecCompliance
            | Mode::Verification
            | Mode::Profiling => 2,
            Mode::Ops | Mode::EnvRepro | Mode::Benchmark | Mode::MlIntegration | Mode::Research => 3,
        }
    }

    /// What the agent may do in this mode: looking everywhere but `idle`; changing files
    /// where code or documents (designs included) are written; commands where something is run or measured;
    /// committing in the git workflow and implementation.
    pub fn allowed(self) -> Allowed {
        match self {
            Mode::Idle => Allowed::NOTHING,
            Mode::ContextNav | Mode::Planning | Mode::Impact | Mode::Research => Allowed::READ,
            // design documents are written, nothing is run
            Mode::Design => Allowed::WRITE,
            Mode::Qa | Mode::Verification | Mode::SpecCompliance | Mode::Profiling | Mode::Benchmark => {
                Allowed::READ_RUN
            }
            // the coder's mode: a step may commit what it did (`auto_commit` and the
            // approver still decide)
            Mode::Implementation => Allowed::ALL,
            Mode::Debug
            | Mode::Test
            | Mode::Documentation
            | Mode::Refactor
            | Mode::MultiFile
            | Mode::Migration
            | Mode::Dependency
            | Mode::Ops
            | Mode::EnvRepro
            | Mode::MlIntegration => Allowed::EDIT,
            Mode::Git => Allowed::GIT,
        }
    }

    /// The engine's phase this mode is (SPEC P1): the phases are what the modes do, so a
    /// run's phases are read from its modes, never kept beside them. Looking, changing and
    /// recording are executing; testing and measuring, observing; reviewing, reflecting;
    /// debugging, fixing.
    pub fn phase(self) -> Phase {
        match self {
            Mode::Idle => Phase::Idle,
            Mode::Planning => Phase::Planning,
            Mode::ContextNav
            | Mode::Implementation
            | Mode::Documentation
            | Mode::Design
            | Mode::Refactor
            | Mode::MultiFile
            | Mode::Git
            | Mode::Migration
            | Mode::Dependency
            | Mode::Ops
            | Mode::EnvRepro
            | Mode::MlIntegration
            | Mode::Research => Phase::Executing,
            Mode::Test | Mode::Impact | Mode::Verification | Mode::Profiling | Mode::Benchmark => {
                Phase::Observing
            }
            Mode::Qa | Mode::SpecCompliance => Phase::Reflecting,
            Mode::Debug => Phase::Fixing,
        }
    }

    /// The mode's handler as the model sees it: what the mode is for, and what it allows
    /// (the executor enforces the same). Goes with a step's own text, so steps still share
    /// the prompt prefix a server caches.
    pub fn instructions(self) -> String {
        let purpose = match self {
            Mode::Implementation => {
                "write the code the step asks for; its checks and the project's tests run when you are done"
            }
            Mode::Refactor => {
                "change the code's structure, not its behaviour: the tests must pass as they did"
            }
            Mode::MultiFile => {
                "the change spans many files: keep them consistent with each other, and every caller with what it calls"
            }
            Mode::Migration => "move the code to the new API or version step by step, keeping it working",
            Mode::Debug => {
                "find the cause first (read the failing code and what calls it), then make the smallest change that removes it"
            }
            Mode::Test => {
                "write or fix the tests the step needs; change the code under test only where it is wrong"
            }
            Mode::Qa => {
                "review what the step names and say what is wrong or risky, with the file and line; change nothing"
            }
            Mode::Documentation => "write or update the documentation; leave the code as it is",
            Mode::Design => "write the design down as a document; change no code",
            Mode::ContextNav => {
                "find where the work belongs (list, search, read) before anything changes; once you have, your first change moves the step on to implementation"
            }
            Mode::Impact => "find what the change reaches: callers, importers and the tests that cover them",
            Mode::Git => "record the work in git",
            _ => "do the step's work",
        };
        let allowed = self.allowed();
        let mut may = Vec::new();
        for (yes, what) in [
            (allowed.read, "read"),
            (allowed.write, "change files"),
            (allowed.command, "run commands"),
            (allowed.commit, "commit"),
        ] {
            if yes {
                may.push(what);
            }
        }
        let may = if may.is_empty() { "nothing".to_string() } else { may.join(", ") };
        format!("You are in the {} mode: {purpose}. In it you may {may}.", self.name())
    }

    /// A mode by its name (seed 000's, or the variant's in snake case).
    pub fn from_name(name: &str) -> Option<Mode> {
        let name = name.trim().to_ascii_lowercase();
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == name || format!("{m:?}").to_ascii_lowercase() == name.replace('_', ""))
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
