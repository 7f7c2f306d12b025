//! The editor as the Observer and the agent see it: the one trait through which they act.
//!
//! The language server implements it over LSP; the command line implements it over the
//! terminal and the file system. Nothing behind this trait knows which one it talks to.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::diagnostic::Diagnostic;
use crate::run::RunReport;
pub use crate::run::{Progress, RunEvent, ToolKind};
use crate::text::TextRange;
use crate::workspace::DocumentSnapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageLevel {
    Error,
    Warning,
    Info,
}

/// What the agent asks the editor to change in one document: `edits` in bytes of
/// `snapshot`'s text, sorted and not overlapping.
#[derive(Debug, Clone, Copy)]
pub struct DocumentEdit<'a> {
    pub snapshot: &'a DocumentSnapshot,
    pub edits: &'a [(TextRange, String)],
    /// What the change is, for the editor's undo history ("Tokamak: fix …").
    pub label: &'a str,
}

/// What became of a [`DocumentEdit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditOutcome {
    /// Made. `echoed`: the editor reports the new text back as a document change (LSP
    /// `didChange`), so the Observer learns of it that way; otherwise the agent records it.
    Applied { echoed: bool },
    /// Not made, in the editor's words (stale version, refused, write conflict).
    Rejected(String),
}

/// A change to the set of files, made by the editor where it can (LSP resource operations:
/// the user sees it and can undo it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOperation {
    /// A new, empty file (the agent writes its text afterwards).
    Create {
        uri: Url,
    },
    Rename {
        from: Url,
        to: Url,
    },
    Delete {
        uri: Url,
    },
}

/// A command for the editor's terminal: the program and its arguments as they run (placed in
/// the sandbox already), the folder, and the limits.
#[derive(Clone, Copy)]
pub struct TerminalCommand<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub cwd: &'a std::path::Path,
    /// Output the terminal keeps (its last bytes, when there is more).
    pub output_limit: usize,
    pub timeout: std::time::Duration,
    /// Stops the command and everything it started, called on a timeout or a cancel before
    /// the terminal is killed: an editor may kill it with SIGKILL, leaving what it started
    /// running (and a container up).
    pub stop: &'a (dyn Fn() + Send + Sync),
}

impl std::fmt::Debug for TerminalCommand<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("output_limit", &self.output_limit)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// How a command in the editor's terminal ended, and what it printed (both streams together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutcome {
    /// The exit status; `None` when a signal, the timeout or a cancel ended it.
    pub status: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub output: String,
}

#[async_trait]
pub trait Editor: Send + Sync {
    /// Shows `diagnostics` for `snapshot`'s document and version, replacing what was shown
    /// before; an empty list clears.
    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>);

    /// Removes every diagnostic shown for a document (it was closed).
    async fn clear_diagnostics(&self, uri: &Url);

    /// Tells the user something in one sentence.
    async fn show_message(&self, level: MessageLevel, message: String);

    /// Makes `edit` in the document, only if it is still at the snapshot's version; never
    /// forced over newer text.
    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        let _ = edit;
        EditOutcome::Rejected("this front-end cannot change documents".to_string())
    }

    /// The text a document's owner holds now, when the Observer hears of its changes only
    /// through the run (the command line writes the disk, where another program may change
    /// the file meanwhile); `None`: every change reaches the Observer on its own.
    async fn held_text(&self, uri: &Url) -> Option<String> {
        let _ = uri;
        None
    }

    /// The text the editor holds for a file it has not opened to the Observer, when it can
    /// say (ACP's `fs/read_text_file`: a buffer with unsaved changes); `None`: the disk's.
    async fn buffer(&self, path: &std::path::Path) -> Option<String> {
        let _ = path;
        None
    }

    /// Writes a file the editor does not have open, when the editor takes such writes itself
    /// (ACP's `fs/write_text_file`: the change lands in its buffer and its undo); `before`
    /// is the text the change was made over (`None`: a new file). `None`: it does not, and
    /// the agent writes the disk.
    async fn write_file(
        &self,
        path: &std::path::Path,
        before: Option<&str>,
        after: &str,
    ) -> Option<EditOutcome> {
        let _ = (path, before, after);
        None
    }

    /// Runs a command in the editor's own terminal, where it offers one (ACP's `terminal/*`):
    /// the user watches it run in the tool call, the output comes back to the agent. The
    /// command is already placed (the sandbox's own command line and folder), so it sees the
    /// text the editor holds and is as isolated as one Tokamak runs itself. The editor stops it
    /// at `command.timeout` or when `cancel` fires. `None`: the editor has no terminal, and
    /// Tokamak runs the command itself.
    async fn run_in_terminal(
        &self,
        run_id: &str,
        command: TerminalCommand<'_>,
        cancel: &CancellationToken,
    ) -> Option<Result<TerminalOutcome, String>> {
        let _ = (run_id, command, cancel);
        None
    }

    /// Whether each edit's tool call should carry what the checkers found on the text it
    /// wrote (an editor without diagnostics of its own: ACP's); the language server shows them
    /// live instead.
    fn checks_each_edit(&self) -> bool {
        false
    }

    /// Whether the editor refuses an edit made for another version of the document (LSP
    /// `workspace.workspaceEdit.documentChanges`). One that does not applies an edit to
    /// whatever text it has, so what it reports back is verified.
    fn versions_edits(&self) -> bool {
        true
    }

    /// Whether the editor makes this kind of file operation itself (LSP
    /// `workspace.workspaceEdit.resourceOperations`); when it does not, the agent changes the
    /// disk and says so in the log.
    fn makes_file_operation(&self, operation: &FileOperation) -> bool {
        let _ = operation;
        false
    }

    /// Makes a file operation the editor said it makes; never overwrites an existing file.
    async fn file_operation(&self, operation: &FileOperation) -> EditOutcome {
        let _ = operation;
        EditOutcome::Rejected("this front-end cannot create, rename or delete files".to_string())
    }

    /// Everything a run tells the user, as one stream: the engine sends each event here,
    /// and a front end renders it. By default each goes to the method that renders it
    /// (`progress`, `plan_updated`, `run_finished`; a tool call's result and a step's checks
    /// as progress lines); a front end that shows tool calls of their own (ACP's) renders
    /// them here.
    async fn run_event(&self, run_id: &str, event: &RunEvent) {
        render(self, run_id, event).await;
    }

    /// Shows how run `run_id` is going.
    async fn progress(&self, run_id: &str, progress: Progress) {
        let _ = (run_id, progress);
    }

    /// A run's plan changed (made, a step's status, a new plan): the whole plan.
    async fn plan_updated(&self, run_id: &str, plan: &crate::run::plan::Plan) {
        let _ = (run_id, plan);
    }

    /// Whether an edit it applies lands in a buffer the user saves (an LSP editor's open
    /// documents), so an ending names the files left changed but unsaved.
    fn keeps_unsaved_text(&self) -> bool {
        false
    }

    /// Whether the plan it shows carries each step's note (a terminal's does). If not, a
    /// step's ending is also told as progress, for editors that show progress but no plan
    /// (Helix).
    fn shows_step_notes(&self) -> bool {
        false
    }

    /// A run ended: its exit reason and summary.
    async fn run_finished(&self, report: &RunReport) {
        let _ = report;
    }
}

/// What [`Editor::run_event`] does by default: each event to the method that renders it. A
/// front end that overrides `run_event` to show more calls it for the rest.
pub async fn render<E: Editor + ?Sized>(editor: &E, run_id: &str, event: &RunEvent) {
    match event {
        RunEvent::Plan(plan) => editor.plan_updated(run_id, plan).await,
        RunEvent::Progress(progress) => editor.progress(run_id, progress.clone()).await,
        // the language server and the terminal show the plan and progress, not the model's words
        RunEvent::ToolCall { .. } | RunEvent::Thought(_) | RunEvent::Said(_) | RunEvent::ContextUsed(_) => {}
        RunEvent::ToolResult { summary, .. } => {
            let message = summary.clone();
            editor.progress(run_id, Progress::Report { message, percentage: None }).await;
        }
        RunEvent::Checked(check) => {
            let step = check.step.as_deref().map(|id| format!("step {id} checked: ")).unwrap_or_default();
            let message = format!("{step}{}", check.describe());
            editor.progress(run_id, Progress::Report { message, percentage: None }).await;
        }
        RunEvent::Finished(report) => editor.run_finished(report).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Writes down what each rendering method was given.
    #[derive(Default)]
    struct Rendered(Mutex<Vec<String>>);

    #[async_trait]
    impl Editor for Rendered {
        async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}
        async fn clear_diagnostics(&self, _: &Url) {}
        async fn show_message(&self, _: MessageLevel, _: String) {}
        async fn progress(&self, run_id: &str, progress: Progress) {
            self.0.lock().unwrap().push(format!("{run_id} progress {progress:?}"));
        }
        async fn plan_updated(&self, run_id: &str, plan: &crate::run::plan::Plan) {
            self.0.lock().unwrap().push(format!("{run_id} plan {}", plan.steps.len()));
        }
        async fn run_finished(&self, report: &RunReport) {
            self.0.lock().unwrap().push(format!("{} finished {}", report.run_id, report.summary));
        }
    }

    #[tokio::test]
    async fn a_run_event_goes_to_the_method_that_renders_it() {
        let editor = Rendered::default();
        let uri = Url::parse("file:///p/").unwrap();
        let plan =
            crate::run::plan::Plan::read("plan-1", "goal", "1. Add a test\n2. Make it pass", 10).unwrap();
        let events = [
            RunEvent::Plan(plan),
            RunEvent::Progress(Progress::Begin { title: "Tokamak: goal".into(), message: "starting".into() }),
            RunEvent::ToolCall {
                id: "call-1".into(),
                kind: ToolKind::Edit,
                title: "edit a.py".into(),
                paths: vec!["a.py".into()],
            },
            RunEvent::ToolResult {
                id: "call-1".into(),
                ok: true,
                summary: "edited a.py".into(),
                changed: vec!["a.py".into()],
                files: vec![],
                check: None,
                output: None,
            },
            RunEvent::Checked(crate::run::Check {
                step: Some("1".into()),
                files: vec!["a.py".into()],
                introduced: vec![],
                resolved: vec![],
                warned: vec![],
                tests: Some(crate::run::TestOutcome { passed: false, ran: true, output: "1 failed".into() }),
            }),
            RunEvent::Finished(Box::new(RunReport::failed("run-1".into(), uri, "stopped".into()))),
        ];
        for event in &events {
            editor.run_event("run-1", event).await;
        }
        let rendered = editor.0.lock().unwrap().clone();
        assert_eq!(
            rendered,
            [
                "run-1 plan 2",
                "run-1 progress Begin { title: \"Tokamak: goal\", message: \"starting\" }",
                "run-1 progress Report { message: \"edited a.py\", percentage: None }",
                "run-1 progress Report { message: \"step 1 checked: 0 error(s) introduced; the tests fail\", percentage: None }",
                "run-1 finished stopped",
            ]
        );
    }
}
