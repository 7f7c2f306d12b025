//! What a step's checks see (SPEC P3): the settled diagnostics of the files it changed
//! against their text before the run (errors introduced, and warnings for the review), the
//! project's tests (those that reach the change first), and the fix loop on what it broke —
//! through the editor for an open document, on disk otherwise.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use url::Url;

use super::Runner;
use crate::agent::checks;
use crate::agent::fix::{FixContext, FixRequest, fix};
use crate::agent::runs::Runs;
use crate::agent::targets::Scope;
use crate::editor::{DocumentEdit, EditOutcome, Editor, FileOperation, MessageLevel, RunEvent};
use crate::executor::{Action, DiskEditor};
use crate::observer::{Diagnostic, Observer};
use crate::run::{Check, TestOutcome};
use crate::sync::lock;
use crate::workspace::DocumentSnapshot;

/// Files a change reaches that a step's checks look at, at most.
const MAX_REACHED: usize = 12;

impl Runner<'_> {
    /// The errors step `step` introduced in `files` (settled diagnostics now against those
    /// of the text before the run changed them), and the test command's outcome; told to the
    /// user as a `RunEvent::Checked`.
    pub(super) async fn observe(&self, step: &str, files: &[String]) -> Check {
        // the files the run's change reaches are checked too (seed 000's impact check)
        let reached = self.reached_files(files).await;
        let mut files: Vec<String> = files.to_vec();
        files.extend(reached);
        let files = files.as_slice();
        let mut introduced = Vec::new();
        let mut resolved = Vec::new();
        let mut warned = Vec::new();
        for file in files {
            let root = self.executor.context().confinement.root();
            let path = root.join(file);
            let Ok(uri) = Url::from_file_path(&path) else { continue };
            let after = match self.diagnostics_now(&uri).await {
                Some(after) => after,
                None => continue, // deleted, or not text
            };
            let before = self.before_of(file, &uri).await;
            let (new, gone) = checks::compare(&checks::errors(&before), &checks::errors(&after));
            if !new.is_empty() {
                // errors the run left in a file lower its confidence in it (SPEC G4)
                self.executor.doubt_errors(file, new.len());
                introduced.push((file.clone(), new));
            }
            if !gone.is_empty() {
                resolved.push((file.clone(), gone));
            }
            let (new, _) = checks::compare(&checks::warnings(&before), &checks::warnings(&after));
            if !new.is_empty() {
                warned.push((file.clone(), new));
            }
        }
        let tests = match self.executor.context().settings.test_command.clone() {
            // a question changed nothing the tests could judge
            Some(command) if !self.cancel.is_cancelled() && !self.question => {
                Some(self.run_tests(command).await)
            }
            _ => None,
        };
        if tests.is_some() {
            lock(&self.last_tests).clone_from(&tests);
        }
        let check = Check {
            step: Some(step.to_string()),
            files: files.to_vec(),
            introduced,
            resolved,
            warned,
            tests,
        };
        // a question that changed nothing and ran no tests has no checks to tell
        if !(self.question && check.files.is_empty() && check.tests.is_none()) {
            self.executor
                .context()
                .editor
                .run_event(&self.run.run_id, &RunEvent::Checked(check.clone()))
                .await;
        }
        check
    }

    /// The files outside `files` that `impact` names (callers and importers), sorted, each once.
    pub(super) fn reached_by(&self, impact: &crate::context::Impact, files: &[String]) -> Vec<String> {
        let confinement = &self.executor.context().confinement;
        let mut reached: Vec<String> = impact
            .callers
            .iter()
            .map(|c| c.path.as_path())
            .chain(impact.importers.iter().map(|(path, _)| path.as_path()))
            .map(|path| confinement.relative(path))
            .filter(|path| !files.contains(path))
            .collect();
        reached.sort();
        reached.dedup();
        reached
    }

    /// The files outside `files` that the run's change reaches (callers and importers of what
    /// it changed), at most [`MAX_REACHED`]; audited.
    pub(super) async fn reached_files(&self, files: &[String]) -> Vec<String> {
        let Some(impact) = self.executor.run_impact(None).await else { return Vec::new() };
        let mut reached = self.reached_by(&impact, files);
        reached.truncate(MAX_REACHED);
        if !reached.is_empty() {
            self.executor.record("reach", json!({"files": reached}));
        }
        reached
    }

    /// Runs the tests: first those that reach what the run changed (SPEC C6, `[test]
    /// impact_first`), then, when they pass and `then_all` says so, the whole command.
    pub(super) async fn run_tests(&self, command: Vec<String>) -> TestOutcome {
        let settings = &self.executor.context().settings;
        let root = self.executor.context().confinement.root();
        let mut focused = None;
        if settings.test_impact_first
            && !self.whole_suite
            && let Some(impact) = self.executor.run_impact(None).await
        {
            self.executor.record(
                "impact",
                serde_json::json!({
                    "changed": impact.symbols.iter().map(|(_, n)| n.clone()).collect::<Vec<_>>(),
                    "callers": impact.callers.len(),
                    "importers": impact.importers.len(),
                    "tests": impact.tests.len(),
                }),
            );
            focused = crate::context::focused_test_command(&command, root, &impact.tests);
        }
        let mut output = String::new();
        let command = self.traced(command);
        if let Some(focused) = focused.map(|f| self.traced(f)) {
            let count = focused.len() - command.len();
            self.report(format!("running the {count} test(s) that reach the change")).await;
            let (passed, ran, text) = self.run_command(focused).await;
            output.push_str(&format!("The tests that reach the change ({count}):\n{text}\n"));
            if !passed || !settings.test_then_all {
                return TestOutcome { passed, ran, output: crate::text::cut(&output, 6 * 1024) };
            }
            output.push_str("They pass. The whole test command:\n");
        }
        self.report("running the tests".to_string()).await;
        let (passed, ran, text) = self.run_command(command).await;
        output.push_str(&text);
        TestOutcome { passed, ran, output: crate::text::cut(&output, 6 * 1024) }
    }

    /// Runs a test command, told to the user as a tool call of the run's own: whether it
    /// passed, whether it ran at all (a refused command did not), and its output.
    /// A run that could not start, or stopped before any test ran, did not run: what it says
    /// is told as why, never as failing code.
    pub(super) async fn run_command(&self, command: Vec<String>) -> (bool, bool, String) {
        let argv = command.clone();
        let action = Action::Run { command, timeout: None };
        let number = self.test_runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("tests-{number}");
        self.own_call(&id, &action).await;
        let (passed, ran, text, summary) = match self.executor.execute(&action).await {
            Ok(result) => {
                let passed = result.exit_status == Some(0);
                let text = crate::text::cut(&self.took_hits(&argv, result.text.clone()), 4 * 1024);
                let not_run = (!passed && result.ok)
                    .then(|| crate::executor::not_run_reason(&argv, result.exit_status, &result.text, ""))
                    .flatten();
                match not_run {
                    Some(why) => (false, false, why.clone(), why),
                    None => (passed, result.ok, text, result.summary),
                }
            }
            Err(hit) => (false, false, hit.to_string(), hit.to_string()),
        };
        let verdict = match (ran, passed) {
            (false, _) => "did not run",
            (true, true) => "passed",
            (true, false) => "failed",
        };
        self.own_result(&id, passed, format!("the tests {verdict} ({summary})"), Some(text.clone())).await;
        (passed, ran, text)
    }

    /// A file's settled diagnostics: the open document's, else the file's on disk checked by
    /// an Observer of its own. `None` when it is gone or not text.
    pub(super) async fn diagnostics_now(&self, uri: &Url) -> Option<Vec<Diagnostic>> {
        self.diagnostics_answered(uri).await.map(|(diagnostics, _)| diagnostics)
    }

    /// [`Runner::diagnostics_now`], with the checkers that did not answer in time.
    pub(super) async fn diagnostics_answered(&self, uri: &Url) -> Option<(Vec<Diagnostic>, Vec<String>)> {
        let context = self.executor.context();
        let observer = &context.observer;
        let timeout = Duration::from_millis(self.context.fix.settle_timeout_ms.max(1));
        if let Some(snapshot) = observer.snapshot(uri) {
            return match observer.settled(uri, snapshot.version, timeout).await {
                Ok(settled) => Some((observer.diagnostics_at(uri, snapshot.version), settled.missing)),
                // the user typed meanwhile: what there is
                Err(_) => Some((observer.diagnostics(uri), Vec::new())),
            };
        }
        let text = crate::workspace::read_text(&uri.to_file_path().ok()?).ok()?;
        let root = context.confinement.root();
        Some(match checks::diagnostics_settled(observer, root, uri, &text, timeout).await {
            Some(diagnostics) => (diagnostics, Vec::new()),
            None => (Vec::new(), vec!["the checkers".to_string()]),
        })
    }

    /// A file's settled diagnostics in the workspace as it was before the run: a changed file
    /// on its text before the run changed it (none for a file the run created), a file the run
    /// did not change — one its change reaches — on its own text beside the changed files'
    /// texts before; checked once and kept.
    pub(super) async fn before_of(&self, file: &str, uri: &Url) -> Vec<Diagnostic> {
        if let Some(known) = lock(&self.before).get(file) {
            return known.clone();
        }
        let text = match self.executor.original(file) {
            Some(original) => original,
            None => {
                self.executor.context().current_text(&self.executor.context().confinement.root().join(file))
            }
        };
        let before = match text {
            Some(text) => {
                // the workspace as it was: every file the run changed at its text before it
                let root = self.executor.context().confinement.root();
                let originals: Vec<(std::path::PathBuf, String)> = self
                    .executor
                    .changed_files()
                    .into_iter()
                    .filter_map(|changed| {
                        Some((root.join(&changed), self.executor.original(&changed).flatten()?))
                    })
                    .collect();
                let timeout = Duration::from_millis(self.context.fix.settle_timeout_ms.max(1));
                checks::diagnostics_before(self.executor.context(), uri, &text, originals, timeout).await
            }
            None => Vec::new(),
        };
        lock(&self.before).insert(file.to_string(), before.clone());
        before
    }

    /// The fix loop on `diagnostics` in `file`: through the editor when it has the file open,
    /// else on disk with an Observer of its own.
    pub(super) async fn fix_file(&mut self, file: &str, diagnostics: Vec<Diagnostic>) {
        // a file the run did not change yet (one its change reached) is the run's from now on:
        // counted, and in its checkpoint
        if let Err(why) = self.executor.before_own_change(file).await {
            self.executor.record("fix", json!({"file": file, "refused": why}));
            self.report(format!("{file} is not fixed: {why}")).await;
            return;
        }
        let context = self.executor.context();
        let root = context.confinement.root().to_path_buf();
        let Ok(uri) = Url::from_file_path(root.join(file)) else { return };
        let open = context.observer.snapshot(&uri).is_some();
        let (observer, editor): (Arc<Observer>, Arc<dyn Editor>) = if open {
            (Arc::clone(&context.observer), Arc::new(Nested(Arc::clone(&context.editor))))
        } else {
            let disk: Arc<dyn Editor> = Arc::new(DiskEditor { root: root.clone() });
            (context.observer.private(Arc::clone(&disk)), disk)
        };
        if !open {
            let Ok(text) = crate::workspace::read_text(&root.join(file)) else { return };
            observer.open(uri.clone(), "", 0, &text).await;
        }
        let fix_context = FixContext {
            observer: Arc::clone(&observer),
            editor,
            model: self.context.model.clone(),
            settings: self.context.fix.clone(),
            root: Some(root),
            history: None,
            // at high the fix's changes are asked too, as the task's (its id is the one the
            // editor knows, and the wait is the task's)
            approver: (self.executor.approval() == crate::config::ApprovalLevel::High).then(|| {
                Arc::new(crate::executor::OnBehalfOf {
                    approver: Arc::clone(&self.executor.context().approver),
                    run_id: self.run.run_id.clone(),
                    clock: self.executor.waits(),
                }) as Arc<dyn crate::executor::Approver>
            }),
            verify: Some(Arc::clone(self.executor.context())),
            // the step runs the tests itself right after
            final_tests: false,
            trusted: self.executor.context().settings.trusted,
            // a step's fix asks its one model (the task's own tests follow it)
            candidate_models: Vec::new(),
            // the task wraps up, not its step's fix
            wrap_up_tokens: None,
        };
        let runs = Runs::default();
        let Ok(handle) = runs.start(&uri) else { return };
        // the task's cancel (and time limit) stops its fix too
        let (parent, child) = (self.cancel.clone(), handle.cancel.clone());
        let link = tokio::spawn(async move {
            parent.cancelled().await;
            child.cancel();
        });
        let report = fix(
            &fix_context,
            &FixRequest { uri: uri.clone(), scope: Scope::Diagnostics(diagnostics) },
            handle,
        )
        .await;
        link.abort();
        // the fix changed the file around the executor: what it is now is what the run knows
        self.executor.refresh(file);
        self.executor.after_own_change(file);
        self.add_tokens(report.tokens);
        self.executor.record(
            "fix",
            json!({"file": file, "exit_reason": report.exit_reason, "summary": report.summary, "tokens": report.tokens}),
        );
        if !open {
            observer.close(&uri).await;
        }
    }
}

/// The editor as a run's inner fix loop sees it: edits and messages go through, its own
/// progress and end do not (the run reports those).
struct Nested(Arc<dyn Editor>);

#[async_trait]
impl Editor for Nested {
    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>) {
        self.0.publish_diagnostics(snapshot, diagnostics).await;
    }

    async fn clear_diagnostics(&self, uri: &Url) {
        self.0.clear_diagnostics(uri).await;
    }

    async fn show_message(&self, level: MessageLevel, message: String) {
        self.0.show_message(level, message).await;
    }

    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        self.0.apply_edit(edit).await
    }

    fn makes_file_operation(&self, operation: &FileOperation) -> bool {
        self.0.makes_file_operation(operation)
    }

    async fn file_operation(&self, operation: &FileOperation) -> EditOutcome {
        self.0.file_operation(operation).await
    }
}

/// The first error a step introduced, in one line.
pub(super) fn first_error(observation: &Check) -> Option<String> {
    observation
        .introduced
        .iter()
        .find_map(|(file, diagnostics)| diagnostics.first().map(|d| format!("{file}: {}", d.message)))
}
