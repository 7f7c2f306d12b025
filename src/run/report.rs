//! How a run ended (SPEC F4): the exit reason, a one-sentence summary, the files it changed
//! and the tokens it spent — what `tokamak/runFinished` and `tokamak fix` report.

use serde::Serialize;
use url::Url;

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// The targeted diagnostics are gone and nothing new appeared, every checker answered on
    /// the text as it ends, and the project's tests (where a trusted workspace has them)
    /// pass on it.
    Clean,
    /// The checkers find nothing left, but the project's tests fail on the text as it ends
    /// (the report's `left` names them).
    TestsFailing,
    /// The checkers find nothing left, but the project's tests could not be run, so nothing
    /// says the change works (the report's `left` says why).
    Untested,
    /// No syntax errors are left, but only the syntax check could run (the file's checkers
    /// are not installed): the file is not known to be clean.
    Unchecked,
    /// `fix.max_attempts` model attempts were made.
    MaxAttempts,
    /// After a fix the same errors were back: another attempt would burn tokens in a loop.
    RepeatedError,
    /// `fix.max_tokens` were spent.
    TokenLimit,
    /// `fix.time_limit_s` passed.
    TimeLimit,
    /// The user (or the editor) cancelled.
    Cancelled,
    /// Something outside the loop stopped it: the model cannot be reached, the editor refused
    /// the edit, the document closed.
    Failed,
    /// A task run: every step's change landed, its checks on the user's text and its tests
    /// passed.
    Done,
    /// `limits.tool_calls` actions were taken.
    ToolCallLimit,
    /// `limits.revisions` changes to files were made.
    RevisionLimit,
    /// One more file would have passed `limits.files`.
    FileLimit,
    /// `limits.iterations` rounds were made.
    IterationLimit,
    /// The same action on the same state came back three times: the model is in a loop.
    RepeatedState,
    /// The model would not go on (its provider's refusal or content filter).
    Refused,
    /// A file changed under the run beyond what it planned on, or its confidence in a file
    /// fell under 40, and nobody said to go on (SPEC G3–G4).
    Unsure,
}

impl ExitReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ExitReason::Clean => "clean",
            ExitReason::TestsFailing => "tests_failing",
            ExitReason::Untested => "untested",
            ExitReason::Unchecked => "unchecked",
            ExitReason::MaxAttempts => "max_attempts",
            ExitReason::RepeatedError => "repeated_error",
            ExitReason::TokenLimit => "token_limit",
            ExitReason::TimeLimit => "time_limit",
            ExitReason::Cancelled => "cancelled",
            ExitReason::Failed => "failed",
            ExitReason::Done => "done",
            ExitReason::ToolCallLimit => "tool_call_limit",
            ExitReason::RevisionLimit => "revision_limit",
            ExitReason::FileLimit => "file_limit",
            ExitReason::IterationLimit => "iteration_limit",
            ExitReason::RepeatedState => "repeated_state",
            ExitReason::Refused => "refused",
            ExitReason::Unsure => "unsure",
        }
    }
}

impl std::fmt::Display for ExitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tokens a run spent, as the model reported them (or estimated when it did not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub prompt: u32,
    pub completion: u32,
    /// Of the prompt tokens, those the server read from its cache of an earlier prompt's
    /// prefix (where it says so).
    pub cached: u32,
}

impl Tokens {
    pub fn total(self) -> u32 {
        self.prompt.saturating_add(self.completion)
    }

    /// Adds `more` to these.
    pub fn add(&mut self, more: Tokens) {
        self.prompt = self.prompt.saturating_add(more.prompt);
        self.completion = self.completion.saturating_add(more.completion);
        self.cached = self.cached.saturating_add(more.cached);
    }

    /// What one reply's usage adds.
    pub fn of(usage: &crate::model::Usage) -> Tokens {
        Tokens {
            prompt: usage.prompt_tokens,
            completion: usage.completion_tokens,
            cached: usage.cached_prompt_tokens,
        }
    }
}

/// How a task run's steps ended their loops: in plain text rather than by calling `done`, and
/// early — the model said it was finished, and the step's checks or tests sent it back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Endings {
    pub plain: u32,
    pub early: u32,
}

/// What a run waited on beside its own work: the model, and the editor and the Observer's
/// sources (the syntax check, the checkers) taking its edits and reporting on the text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Waited {
    pub model_ms: f64,
    pub checks_ms: f64,
}

/// Everything a run reports when it ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub uri: Url,
    pub exit_reason: ExitReason,
    /// One or two sentences for the user.
    pub summary: String,
    pub files_changed: Vec<Url>,
    pub tokens: Tokens,
    /// Model attempts made (deterministic fixes are not counted).
    pub attempts: u32,
    /// Deterministic fixes applied (missing tokens, checkers' own safe fixes).
    pub deterministic_fixes: u32,
    /// Targeted diagnostics at the start, and still there at the end.
    pub targets_before: usize,
    pub targets_after: usize,
    /// A task run's plan steps done.
    pub steps: u32,
    /// Actions the model took through the executor.
    pub tool_calls: u32,
    /// How a task run's steps ended.
    pub endings: Endings,
    /// What the run waited on (a fix run's; a task run's are not counted yet).
    pub waited: Waited,
    /// Each candidate fix the run tried, attempt by attempt (SPEC V1–V2; none when one fix
    /// was asked for at a time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateReport>,
    /// What the run leaves undone, read from the state it ends in (empty: nothing).
    #[serde(skip_serializing_if = "Left::is_empty")]
    pub left: Left,
    /// How each step of a task run ended, replaced ones included.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub step_endings: Vec<StepEnding>,
    /// A run stopped before its end: the model's own account of what it did and what is left
    /// (its words, also quoted in the summary), or why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrap_up: Option<WrapUp>,
}

/// The model's wrap-up of a stopped run (seed 002, P0-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum WrapUp {
    /// Its words, and the tokens they cost.
    Said { text: String, tokens: u32 },
    /// Why it was not asked, or did not answer.
    None { why: String },
}

/// What a run leaves undone, each part as the user reads it (SPEC F4, §4: an ending names
/// what is left).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Left {
    /// Errors left in the files the run changed (or was to fix), each as
    /// "calc.py:2 [pyright] message".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Tests that fail on the text as the run ends, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests_failing: Vec<String>,
    /// Why the tests could not be run (their first lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests_not_run: Option<String>,
    /// Checkers that did not answer on the text as it ends in time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<String>,
    /// Changes refused by a rule (the mode, the role, the approver) or rejected by the user.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
    /// Changes approved (or asked for) that did not land: the user typed on their lines, the
    /// file changed under the run, the editor refused the write.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applied: Vec<String>,
    /// Files that changed under the run, and what became of it ("calc.py: moderate drift
    /// absorbed").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<String>,
}

impl Left {
    pub fn is_empty(&self) -> bool {
        *self == Left::default()
    }

    /// The parts that are not empty, each in a few words, for a summary: "errors left:
    /// calc.py:2 [ruff] …; tests failing: test_x".
    pub fn describe(&self) -> Vec<String> {
        let mut parts = Vec::new();
        let list = |items: &[String]| {
            let shown: Vec<&str> = items.iter().take(5).map(String::as_str).collect();
            let more = items.len().saturating_sub(shown.len());
            if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
        };
        if !self.errors.is_empty() {
            parts.push(format!("errors left: {}", list(&self.errors)));
        }
        if !self.tests_failing.is_empty() {
            parts.push(format!("tests failing: {}", list(&self.tests_failing)));
        }
        if let Some(why) = &self.tests_not_run {
            parts.push(format!("the tests could not run: {why}"));
        }
        if !self.unanswered.is_empty() {
            parts.push(format!("no answer in time from {}", self.unanswered.join(", ")));
        }
        if !self.rejected.is_empty() {
            parts.push(format!("rejected: {}", list(&self.rejected)));
        }
        if !self.refused.is_empty() {
            parts.push(format!("refused: {}", list(&self.refused)));
        }
        if !self.not_applied.is_empty() {
            parts.push(format!("not applied: {}", list(&self.not_applied)));
        }
        if !self.drift.is_empty() {
            parts.push(format!("drift: {}", list(&self.drift)));
        }
        parts
    }
}

/// How one step of a task run ended, as its plan shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepEnding {
    pub id: String,
    pub title: String,
    pub status: crate::run::plan::StepStatus,
    pub note: String,
    /// The steps that replaced it after it failed (a re-plan).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced_by: Vec<String>,
}

/// What became of one candidate fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateOutcome {
    /// The tests passed on it: it was applied.
    Passed,
    /// The tests that fail on it all failed without any fix too, and some of those it
    /// affects pass: applied (the others are not its to fix).
    PassedButKnownFailures,
    /// The tests could not be run, and the checkers chose it: applied, not verified by the
    /// tests.
    ChosenByCheckers,
    /// The tests failed on it.
    TestsFailed,
    /// Its reply was cut off at the token limit: nothing from it was used (a half reply is
    /// never half applied).
    Cut,
    /// Its reply could not be applied to the file (no blocks, a SEARCH not found, …).
    DoesNotApply,
    /// Its text does not parse: dropped without running the tests.
    DoesNotParse,
    /// The same text as an earlier candidate.
    Duplicate,
    /// Not tested: an earlier one passed first, or the tests could not run.
    NotTested,
    /// The model could not give it.
    ModelFailed,
}

/// One candidate fix in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateReport {
    /// The model attempt it belongs to, and its number in it (1-based, by temperature).
    pub attempt: u32,
    pub number: u32,
    pub temperature: f32,
    /// The model it came from (its `[profiles.NAME]`, or the model's name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    pub outcome: CandidateOutcome,
    /// Why it won or lost, in a sentence (a failing test's first lines).
    pub why: String,
    /// The time its copy and test run took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_ms: Option<f64>,
    /// The one its attempt applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chosen: bool,
}

impl RunReport {
    /// A run that ended `failed` before it did anything (a bug caught outside the loop).
    pub fn failed(run_id: String, uri: Url, summary: String) -> RunReport {
        RunReport {
            run_id,
            uri,
            exit_reason: ExitReason::Failed,
            summary,
            files_changed: Vec::new(),
            tokens: Tokens::default(),
            attempts: 0,
            deterministic_fixes: 0,
            targets_before: 0,
            targets_after: 0,
            steps: 0,
            tool_calls: 0,
            endings: Endings::default(),
            waited: Waited::default(),
            candidates: Vec::new(),
            left: Left::default(),
            step_endings: Vec::new(),
            wrap_up: None,
        }
    }
}
