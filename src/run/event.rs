//! What a run tells the user, as one stream of events, the same for every front end: the
//! plan whenever it changes, progress lines, what the model thought and said, each action of
//! the model's as a tool call (its kind, title and files) and its result, what the checks found after a step, and the report
//! at the end. The engine sends them
//! through `Editor::run_event`; the server renders them as LSP notifications, the command line
//! as terminal lines, the ACP front end (`acp/editor/updates.rs`) as `session/update`s.

use crate::action::{ChangedFile, ToolKind};
use crate::diagnostic::Diagnostic;

use super::RunReport;
use super::plan::Plan;

/// A run's progress as the user sees it (LSP work-done progress, or lines on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Begin { title: String, message: String },
    Report { message: String, percentage: Option<u32> },
    End { message: String },
}

/// One thing a run tells the user.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// The whole plan, on every change of a step.
    Plan(Plan),
    Progress(Progress),
    /// An action of the model's, about to be carried out.
    ToolCall {
        id: String,
        kind: ToolKind,
        title: String,
        paths: Vec<String>,
    },
    /// What became of it: whether it did what was asked, one line, the files it changed with
    /// their texts before and after (for an editor's diff).
    ToolResult {
        id: String,
        ok: bool,
        summary: String,
        changed: Vec<String>,
        files: Vec<ChangedFile>,
        /// What the checkers found on the text it wrote, against the text before (for a front
        /// end that shows each edit's checks: `Editor::checks_each_edit`).
        check: Option<Check>,
        /// A command's output (cut), for a front end that shows it in the tool call.
        output: Option<String>,
    },
    /// What the model thought before it answered (a reasoning field, `<think>` blocks).
    Thought(String),
    /// What the model said to the user, beside its tool calls or as its answer.
    Said(String),
    /// The tokens in the model's context after its latest reply (the prompt it was sent and
    /// what it wrote), as the server counted them or estimated.
    ContextUsed(u32),
    /// What the checks found once a step's changes were in: the errors they introduced
    /// (measured on the text the editor holds) and the tests' outcome.
    Checked(Check),
    /// The run ended.
    Finished(Box<RunReport>),
}

/// One round of checks on a step's changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The plan step checked (its id), when the run has a plan.
    pub step: Option<String>,
    /// The files the step changed, relative to the workspace root.
    pub files: Vec<String>,
    /// Errors the changes introduced, by file: those of the text now that the text before
    /// the run did not have.
    pub introduced: Vec<(String, Vec<Diagnostic>)>,
    /// Errors the changes did away with, by file.
    pub resolved: Vec<(String, Vec<Diagnostic>)>,
    /// Warnings the changes introduced, by file (an unused import, a shadowed name): what the
    /// review sends back once.
    pub warned: Vec<(String, Vec<Diagnostic>)>,
    /// The test command's outcome, when one is configured and was run.
    pub tests: Option<TestOutcome>,
}

/// A run of the project's tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    pub passed: bool,
    /// Whether the command ran at all: one refused (by a person, the editor, the policy) did
    /// not, and says nothing of the code; `output` then says why.
    pub ran: bool,
    /// Its output, cut to what a prompt or a report can carry.
    pub output: String,
}

impl Check {
    /// The number of errors introduced, over all files.
    pub fn errors(&self) -> usize {
        self.introduced.iter().map(|(_, d)| d.len()).sum()
    }

    /// Whether the step may be taken as done: nothing introduced, and the tests (if any) pass.
    pub fn clean(&self) -> bool {
        self.introduced.is_empty() && self.tests.as_ref().is_none_or(|t| t.passed || !t.ran)
    }

    /// One line: "2 error(s) introduced; the tests fail".
    pub fn describe(&self) -> String {
        let tests = match &self.tests {
            None => "",
            Some(TestOutcome { passed: true, .. }) => "; the tests pass",
            Some(TestOutcome { ran: false, .. }) => "; the tests did not run",
            Some(TestOutcome { passed: false, .. }) => "; the tests fail",
        };
        format!("{} error(s) introduced{tests}", self.errors())
    }
}
