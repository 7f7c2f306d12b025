//! A task run (SPEC P1–P5, M1): a goal carried out as a plan, mode by mode. The run plans in
//! the planning mode (or takes a plan made earlier), then for each step whose dependencies are
//! done: the step's mode (its role's, or where its words' intent starts) carries it out with a
//! tool-using loop of its own (`act.rs`); its outcome fires the next transition — edits done
//! to test (or multi-file, impact), QA or debug; the settled diagnostics of every file the
//! step changed and the project's test command observed there; errors it introduced repaired
//! in debug by the fix loop; failing tests back to the code; reviewed, then committed in the
//! git mode with `auto_commit`, else idle; a failed step re-planned (bounded). The engine's
//! phases are read from the modes (`Mode::phase`), never kept beside them. A failed step fails
//! its dependants; independent steps still run. The plan, with each running step's mode, goes
//! to the editor on every change; the run ends with an exit reason and a summary. The same
//! for the server (`tokamak.run`, `tokamak.implement`) and the command line (`tokamak run`).

mod conversation;
mod coverage;
mod measure;
mod modes;
mod observe;
mod verdict;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::act::{ActOutcome, ActRequest, act};
use super::planner::{PlanFailure, PlanRequest, Selection, make_plan};
use super::runs::RunHandle;
use super::workspace::workspace_context;
use crate::config::{FixSettings, LimitSettings, PlanSettings};
use crate::editor::{Progress, RunEvent};
use crate::executor::{Executor, ExecutorContext};
use crate::model::{Model, ModelError};
use crate::modes::{Mode, Profiles};
use crate::run::plan::{Plan, StepStatus};
use crate::run::{Endings, ExitReason, RunReport, TestOutcome, Tokens};
use crate::sync::lock;
use observe::first_error;

/// The instructions a step's model gets.
pub const SYSTEM: &str = "You are Tokamak, a careful coding agent working inside the user's project. \
Look before you change: list, search and read the files the step concerns. Change only what the step needs, \
with small SEARCH/REPLACE edits that copy the file's lines exactly. When the step is done, or cannot be, say so \
with the done action.";

/// What task runs work with.
pub struct TaskContext {
    pub executor: Arc<ExecutorContext>,
    /// The model, or why there is none.
    pub model: Result<Arc<dyn Model>, ModelError>,
    pub limits: LimitSettings,
    pub plan: PlanSettings,
    /// For the fix loop on the errors a step introduces.
    pub fix: FixSettings,
    /// Each role's own model (`[profiles.<role>]`, a role file's `model`); `None`: the run's
    /// model serves every role.
    pub role_models: Option<crate::model::RoleModels>,
    /// The approval level a front end picked for the run (ACP's picker); `None`: the settings'.
    pub approval: Option<crate::config::ApprovalLevel>,
}

pub use conversation::{Turn, compact as compact_conversation, remember as remember_turn, turn_of};

/// What to do.
#[derive(Debug, Clone, Default)]
pub struct TaskRequest {
    pub goal: String,
    /// A plan made earlier (`tokamak.implement`); `None`: plan first.
    pub plan: Option<Plan>,
    /// What the user selected, if anything.
    pub selection: Option<Selection>,
    /// The plan's id when the run makes one.
    pub plan_id: String,
    /// The role to act in (`tokamak.run {role}`, `--role`); `None`: each step is routed by
    /// its words (SPEC M2).
    pub role: Option<String>,
    /// The session's earlier requests and how they ended (a follow-up's context).
    pub conversation: Vec<Turn>,
    /// Images that came with the request (an ACP prompt's), shown to the planner and every
    /// step.
    pub images: Vec<crate::model::Image>,
}

/// Makes a plan without carrying it out (`tokamak.plan`, `tokamak plan`).
pub async fn plan_goal(
    context: &TaskContext,
    goal: &str,
    selection: Option<Selection>,
    images: &[crate::model::Image],
    plan_id: &str,
    cancel: &CancellationToken,
) -> Result<(Plan, Tokens), PlanFailure> {
    let model = context.model.clone().map_err(PlanFailure::Model)?;
    let active = selection.as_ref().map(|s| context.executor.confinement.root().join(&s.path));
    let view = workspace_context(&context.executor, Some(&model), goal, active.as_deref(), cancel).await;
    let (workspace, spent) = (view.text, view.spent);
    let request = PlanRequest {
        goal,
        workspace: &workspace,
        selection,
        max_steps: context.plan.max_steps,
        history: None,
        images,
    };
    let (plan, mut tokens) = make_plan(model.as_ref(), &request, plan_id, cancel).await;
    tokens.add(spent);
    Ok((plan?, tokens))
}

/// How the run stopped, before its summary is written.
struct Stop {
    reason: ExitReason,
    summary: String,
}

/// Runs one task to its end and reports it (also to the editor).
pub async fn run_task(context: &TaskContext, request: TaskRequest, run: RunHandle) -> RunReport {
    let executor_context = &context.executor;
    // one run per folder, whatever session, front end or process asks: a second is refused
    // before it touches anything (its checkpoint would be mixed with the first's)
    let _folder = match crate::history::FolderLock::take(executor_context.confinement.root(), &run.run_id) {
        Ok(lock) => lock,
        Err(held) => {
            let root = executor_context.confinement.root();
            let uri = Url::from_directory_path(root).unwrap_or_else(|()| placeholder());
            let report = RunReport::failed(run.run_id.clone(), uri, format!("Not started: {held}."));
            let editor = Arc::clone(&executor_context.editor);
            let run_id = run.run_id.clone();
            drop(run);
            editor.run_event(&run_id, &RunEvent::Finished(Box::new(report.clone()))).await;
            return report;
        }
    };
    let journal = executor_context
        .history
        .as_ref()
        .map(|h| h.journal(&run.run_id, &request.goal, Arc::clone(&executor_context.observer)));
    if let Some(path) = journal.as_ref().and_then(|j| j.audit_path()) {
        run.set_audit(path);
    }
    let editor = Arc::clone(&executor_context.editor);
    let title: String = request.goal.chars().take(60).collect();
    let begin = Progress::Begin { title: format!("Tokamak: {title}"), message: "starting".into() };
    editor.run_event(&run.run_id, &RunEvent::Progress(begin)).await;
    // the wall-time limit and a cancel both stop the run at its next safe point
    let stop_token = run.cancel.child_token();
    let deadline = stop_token.clone();
    let wall = Duration::from_secs(context.limits.wall_time_s.max(1));
    let executor =
        Executor::new(Arc::clone(executor_context), &run.run_id, journal.clone(), stop_token.clone());
    if let Some(level) = context.approval {
        executor.set_approval(level);
    }
    // the time waiting for the user's approvals does not count
    let waits = executor.waits();
    let started = std::time::Instant::now();
    let timer = tokio::spawn(async move {
        waits.deadline(started, wall).await;
        deadline.cancel();
    });
    let mut engine = Runner {
        context,
        executor: &executor,
        run: &run,
        cancel: stop_token,
        tokens: Tokens::default(),
        turns: 0,
        endings: Endings::default(),
        iterations: 0,
        plan: Arc::new(Mutex::new(None)),
        active: request.selection.as_ref().map(|s| executor_context.confinement.root().join(&s.path)),
        profiles: Profiles::load(executor_context.confinement.root(), executor_context.settings.trusted),
        explicit_role: request.role.clone(),
        test_runs: Default::default(),
        last_tests: Default::default(),
        before: Default::default(),
        left: Default::default(),
        conversation: conversation::render(&request.conversation),
        images: request.images.clone(),
        question: false,
        coverage: crate::modes::wants_coverage(&request.goal),
        coverage_hits: Default::default(),
        whole_suite: false,
    };
    let stop = match engine.roles_ready(&request).await {
        Ok(()) => engine.drive(&request).await,
        Err(stop) => stop,
    };
    timer.abort();
    if run.cancel.is_cancelled()
        && let Some(plan) = lock(&engine.plan).as_mut()
    {
        for step in plan.steps.iter_mut().filter(|s| {
            s.status == StepStatus::Running
                || (s.status == StepStatus::Failed && s.note.starts_with("Cancelled"))
        }) {
            step.status = StepStatus::Cancelled;
        }
    }
    let stop = if run.cancel.is_cancelled() {
        // said once, however deep the cancel was seen ("Cancelled", "Cancelled while planning")
        let summary = if stop.summary.starts_with("Cancelled") {
            stop.summary
        } else {
            format!("Cancelled. {}", stop.summary)
        };
        Stop { reason: ExitReason::Cancelled, summary }
    } else if engine.cancel.is_cancelled() && stop.reason != ExitReason::Done {
        Stop {
            reason: ExitReason::TimeLimit,
            summary: format!(
                "stopped at the time limit of {} s (limits.wall_time_s)",
                context.limits.wall_time_s
            ),
        }
    } else {
        stop
    };
    // the modes end where the run does: idle
    if executor.authority().is_some_and(|(_, mode)| mode != Mode::Idle) {
        let trigger = if stop.reason == ExitReason::Cancelled { "cancelled" } else { "done" };
        executor.fire_mode(trigger, &executor.mode_context());
    }

    let changed = executor.changed_files();
    let (steps_done, step_endings) = lock(&engine.plan).as_ref().map_or((0, Vec::new()), |plan| {
        let done = plan.steps.iter().filter(|s| s.status == StepStatus::Done).count() as u32;
        let endings = plan
            .steps
            .iter()
            .map(|s| crate::run::StepEnding {
                id: s.id.clone(),
                title: s.title.clone(),
                status: s.status,
                note: s.note.clone(),
                replaced_by: s.replaced_by.clone(),
            })
            .collect();
        (done, endings)
    });
    let left = lock(&engine.left).take();
    let left = left.unwrap_or_else(|| {
        // stopped before its end: what it leaves as far as it got
        let mut left = crate::run::Left::default();
        verdict::changes_left(&executor.changes_since(0), &mut left);
        verdict::tests_left(lock(&engine.last_tests).as_ref(), &mut left);
        left.drift = executor.drift_notes();
        left
    });
    let root = executor_context.confinement.root();
    let mut summary = stop.summary.trim().to_string();
    if !summary.ends_with('.') {
        summary.push('.');
    }
    // stopped before its end: the model says what it did and what is left (seed 002)
    let wrap_up = if super::wrap_up::wanted(stop.reason) {
        let facts = {
            let plan = lock(&engine.plan).as_ref().map(|p| p.outline()).unwrap_or_default();
            let changed = if changed.is_empty() { "none".to_string() } else { changed.join(", ") };
            format!("The plan (○ pending, ⚡ running, ✓ done, ✗ failed):\n{plan}\nFiles changed: {changed}")
        };
        let (asked, usage) = super::wrap_up::wrap_up(
            context.model.as_ref(),
            (&request.goal, stop.reason),
            &summary,
            &facts,
            context.limits.wrap_up_tokens,
        )
        .await;
        if let Some(usage) = &usage {
            engine.tokens.add(Tokens::of(usage));
        }
        executor.record("wrap_up", serde_json::to_value(&asked).unwrap_or_default());
        summary.push_str(&super::wrap_up::sentence(&asked));
        Some(asked)
    } else {
        None
    };
    if !changed.is_empty() {
        summary.push_str(&format!(" Changed: {}.", changed.join(", ")));
        // an edit to an open document is in its buffer; a new file is on disk already
        if let Some(note) = super::unsaved::note(editor.as_ref(), &executor_context.observer, root, &changed)
        {
            summary.push_str(&format!(" {note}"));
        }
        // the run's id is what every list and command names it by
        if journal.as_ref().and_then(|j| j.checkpoint_id()).is_some() {
            summary.push_str(&format!(" Undo with tokamak rollback {}.", run.run_id));
        }
    }
    let report = RunReport {
        run_id: run.run_id.clone(),
        uri: Url::from_directory_path(root).unwrap_or_else(|()| placeholder()),
        exit_reason: stop.reason,
        summary,
        files_changed: changed.iter().filter_map(|r| Url::from_file_path(root.join(r)).ok()).collect(),
        tokens: engine.tokens,
        attempts: engine.turns,
        deterministic_fixes: 0,
        targets_before: 0,
        targets_after: 0,
        steps: steps_done,
        tool_calls: executor.tool_calls(),
        endings: engine.endings,
        waited: Default::default(),
        candidates: Vec::new(),
        left,
        step_endings,
        wrap_up,
    };
    tracing::info!("{}: {} — {}", run.run_id, report.exit_reason, report.summary);
    if let Some(journal) = &journal {
        journal.finish(&report).await;
    }
    let end = Progress::End { message: report.summary.clone() };
    editor.run_event(&run.run_id, &RunEvent::Progress(end)).await;
    let run_id = run.run_id.clone();
    drop(run);
    editor.run_event(&run_id, &RunEvent::Finished(Box::new(report.clone()))).await;
    report
}

/// Whether `goal` asks a question rather than for a change: it ends with a question mark or
/// starts with a question word, and asks for no change in its words.
fn is_question(goal: &str) -> bool {
    let text = goal.trim().to_lowercase();
    let first = text.split_whitespace().next().unwrap_or_default();
    let asks = text.ends_with('?')
        || text.ends_with('？')
        || ["what", "how", "why", "where", "which", "who", "when", "does", "is", "are", "can", "explain"]
            .contains(&first)
        || ["뭐", "무엇", "어떻게", "왜", "어디", "언제", "누가", "설명해"].iter().any(|w| text.contains(w));
    let changes = [
        "add ",
        "fix",
        "implement",
        "change",
        "refactor",
        "write",
        "create",
        "remove",
        "delete",
        "rename",
        "update",
        "make ",
        "추가",
        "수정",
        "구현",
        "변경",
        "작성",
        "삭제",
        "고쳐",
        "만들어",
        "바꿔",
        "리팩토링",
    ]
    .iter()
    .any(|w| text.contains(w));
    asks && !changes
}

fn placeholder() -> Url {
    // unreachable in practice: the root is an absolute path
    Url::parse("file:///").expect("a constant URL parses")
}

/// One run's state as the engine drives it.
struct Runner<'a> {
    context: &'a TaskContext,
    executor: &'a Executor,
    run: &'a RunHandle,
    cancel: CancellationToken,
    tokens: Tokens,
    turns: u32,
    endings: Endings,
    /// Rounds of fixing or retrying a step, against `limits.iterations`.
    iterations: u32,
    plan: Arc<Mutex<Option<Plan>>>,
    /// The file the user selected in, if any: ranked up in the context, its rules read.
    active: Option<std::path::PathBuf>,
    /// The roles' profiles (the workspace's own when it is trusted).
    profiles: Profiles,
    /// The role asked for, if any.
    explicit_role: Option<String>,
    /// Test runs of the engine's own so far, for their tool-call ids.
    test_runs: std::sync::atomic::AtomicU32,
    /// The last test run's outcome: what the ending says of the tests.
    last_tests: Mutex<Option<TestOutcome>>,
    /// Each changed file's settled diagnostics on its text before the run (computed once).
    before: Mutex<std::collections::HashMap<String, Vec<crate::observer::Diagnostic>>>,
    /// What the run leaves, as its end read it (`None`: it stopped before its end).
    left: Mutex<Option<crate::run::Left>>,
    /// The session's conversation so far, as prompts show it (empty: none).
    conversation: String,
    /// The request's images, beside the planner's and each step's prompt.
    images: Vec<crate::model::Image>,
    /// The request is a question: answered by looking, without a plan or tests.
    question: bool,
    /// The goal asks for coverage: the tests run under a line tracer on the changed files.
    coverage: bool,
    /// The lines the last traced test run ran.
    coverage_hits: Mutex<Option<coverage::Hits>>,
    /// The step's tests are the whole suite (a migration's stage), not those that reach it.
    whole_suite: bool,
}

impl Runner<'_> {
    /// Tells the editor of an action of the run's own (its tests, its commit) as a tool call
    /// `id`, then of its result.
    async fn own_call(&self, id: &str, action: &crate::executor::Action) {
        let call = RunEvent::ToolCall {
            id: id.to_string(),
            kind: action.tool_kind(),
            title: action.title(),
            paths: Vec::new(),
        };
        self.executor.context().editor.run_event(&self.run.run_id, &call).await;
    }

    async fn own_result(&self, id: &str, ok: bool, summary: String, output: Option<String>) {
        let result = RunEvent::ToolResult {
            id: id.to_string(),
            ok,
            summary,
            changed: Vec::new(),
            files: Vec::new(),
            check: None,
            output,
        };
        self.executor.context().editor.run_event(&self.run.run_id, &result).await;
    }

    async fn report(&self, message: String) {
        self.executor
            .context()
            .editor
            .run_event(&self.run.run_id, &RunEvent::Progress(Progress::Report { message, percentage: None }))
            .await;
    }

    async fn publish(&self) {
        // a question's one step is no plan to show: its answer is what the user sees
        if self.question {
            return;
        }
        let plan = lock(&self.plan).clone();
        if let Some(plan) = plan {
            self.executor.context().editor.run_event(&self.run.run_id, &RunEvent::Plan(plan)).await;
        }
    }

    fn model(&self) -> Result<Arc<dyn Model>, Stop> {
        self.context.model.clone().map_err(|err| Stop {
            reason: ExitReason::Failed,
            summary: format!("no model could be used: {err}"),
        })
    }

    async fn drive(&mut self, request: &TaskRequest) -> Stop {
        let model = match self.model() {
            Ok(model) => model,
            Err(stop) => return stop,
        };
        // a question is answered as one: one step that only looks, no plan asked for, no tests
        self.question = request.plan.is_none() && request.role.is_none() && is_question(&request.goal);
        let mut plan = match &request.plan {
            Some(plan) => plan.clone(),
            None if self.question => {
                let single = format!("1. {}\n", request.goal.lines().next().unwrap_or_default());
                match Plan::read(&request.plan_id, &request.goal, &single, 1) {
                    Ok(plan) => {
                        self.executor.record("question", json!({"goal": request.goal}));
                        self.executor.look_only();
                        plan
                    }
                    Err(err) => return Stop { reason: ExitReason::Failed, summary: err.to_string() },
                }
            }
            None => {
                self.enter_planning(&request.goal);
                self.report("planning".to_string()).await;
                let workspace = self.workspace(&request.goal).await;
                let plan_request = self.plan_request(request, &workspace, None);
                let (plan, tokens) =
                    make_plan(model.as_ref(), &plan_request, &request.plan_id, &self.cancel).await;
                self.add_tokens(tokens);
                match plan {
                    Ok(plan) => plan,
                    Err(PlanFailure::Model(ModelError::Cancelled { .. })) => {
                        return Stop {
                            reason: ExitReason::Cancelled,
                            summary: "Cancelled while planning".into(),
                        };
                    }
                    // no plan in the model's words (a small or base model): the goal itself is
                    // the one step, and the step's checks judge it as any other
                    Err(PlanFailure::Plan(err)) => {
                        let single = format!("1. {}\n", request.goal.lines().next().unwrap_or_default());
                        match Plan::read(&request.plan_id, &request.goal, &single, 1) {
                            Ok(plan) => {
                                self.report(format!(
                                    "the model's reply held no plan ({err}); carrying the goal out as one step"
                                ))
                                .await;
                                self.executor.record("plan_fallback", json!({"why": err.to_string()}));
                                plan
                            }
                            Err(_) => {
                                return Stop {
                                    reason: ExitReason::Failed,
                                    summary: PlanFailure::Plan(err).to_string(),
                                };
                            }
                        }
                    }
                    Err(err) => return Stop { reason: ExitReason::Failed, summary: err.to_string() },
                }
            }
        };
        self.executor
            .record("plan", json!({"plan_id": plan.plan_id, "steps": plan.steps, "repairs": plan.repairs}));
        for step in &mut plan.steps {
            step.status = StepStatus::Pending;
        }
        *lock(&self.plan) = Some(plan);
        self.publish().await;
        let mut replans = 0usize;
        loop {
            if self.cancel.is_cancelled() {
                return self.stop_with_plan(ExitReason::Cancelled, "stopped between steps");
            }
            let next = lock(&self.plan).as_ref().and_then(Plan::next_ready);
            let Some(index) = next else { break };
            match self.step(model.as_ref(), index).await {
                Ok(()) => {}
                Err(stop) if stop.reason == ExitReason::Failed => {
                    // the step failed: its dependants with it; perhaps a new plan for the rest
                    let (failed_now, outline, failed) = {
                        let mut guard = lock(&self.plan);
                        let Some(plan) = guard.as_mut() else { break };
                        // a step that ended as rejected, not applied or nothing changed says so
                        if plan.steps[index].status == StepStatus::Running {
                            plan.steps[index].status = StepStatus::Failed;
                            plan.steps[index].note = stop.summary.clone();
                        }
                        let failed = plan.steps[index].status == StepStatus::Failed;
                        (plan.fail_dependants(), plan.outline(), failed)
                    };
                    self.publish().await;
                    // a step the user rejected (or whose changes did not land) is not planned
                    // around: the user said no, or the text moved under it
                    if failed && replans < self.context.plan.max_replans && !failed_now.is_empty() {
                        replans += 1;
                        self.enter_planning(&request.goal);
                        if let Err(stop) = self.replan(model.as_ref(), request, &outline, replans).await {
                            return stop;
                        }
                    }
                }
                Err(stop) => {
                    {
                        let mut guard = lock(&self.plan);
                        if let Some(plan) = guard.as_mut()
                            && plan.steps[index].status == StepStatus::Running
                        {
                            plan.steps[index].status = if stop.reason == ExitReason::Cancelled {
                                StepStatus::Cancelled
                            } else {
                                StepStatus::Failed
                            };
                            plan.steps[index].note = stop.summary.clone();
                        }
                    }
                    self.publish().await;
                    return stop;
                }
            }
        }
        let plan = lock(&self.plan).clone();
        let Some(plan) = plan else {
            return Stop { reason: ExitReason::Failed, summary: "the plan was lost".into() };
        };
        // the ending is read from the state the run ends in
        let (errors, unanswered) = self.errors_left().await;
        let mut left = crate::run::Left { errors, unanswered, ..Default::default() };
        verdict::tests_left(lock(&self.last_tests).as_ref(), &mut left);
        verdict::changes_left(&self.executor.changes_since(0), &mut left);
        left.drift = self.executor.drift_notes();
        let (reason, mut summary) = verdict::run_ending(&plan, &left);
        // a run that changed nothing answered a question: its steps' answers are the point (a
        // question's ending is its answer alone)
        if reason == ExitReason::Done && self.executor.changed_files().is_empty() {
            let answers: Vec<&str> =
                plan.steps.iter().map(|s| s.note.trim()).filter(|note| !note.is_empty()).collect();
            if !answers.is_empty() {
                summary = if self.question {
                    answers.join(" ")
                } else {
                    format!("{summary}. {}", answers.join(" "))
                };
            }
        }
        *lock(&self.left) = Some(left);
        Stop { reason, summary }
    }

    /// The errors the run leaves in the files it changed (those their text before the run did
    /// not have), each as "calc.py:2 [pyright] message", checked now on the user's text; and
    /// the checkers that did not answer on it in time.
    async fn errors_left(&self) -> (Vec<String>, Vec<String>) {
        let mut out = Vec::new();
        let mut unanswered: Vec<String> = Vec::new();
        for file in self.executor.changed_files() {
            let root = self.executor.context().confinement.root();
            let Ok(uri) = Url::from_file_path(root.join(&file)) else { continue };
            let Some((after, missing)) = self.diagnostics_answered(&uri).await else { continue };
            for name in missing {
                let said = format!("{name} on {file}");
                if !unanswered.contains(&said) {
                    unanswered.push(said);
                }
            }
            let before = self.before_of(&file, &uri).await;
            let (new, _) = crate::agent::checks::compare(
                &crate::agent::checks::errors(&before),
                &crate::agent::checks::errors(&after),
            );
            if new.is_empty() {
                continue;
            }
            let text = match self.executor.context().observer.snapshot(&uri) {
                Some(snapshot) => snapshot.rope.to_string(),
                None => crate::workspace::read_text(&root.join(&file)).unwrap_or_default(),
            };
            for diagnostic in new {
                let line =
                    text.get(..diagnostic.range.start.min(text.len())).map_or(0, |t| t.matches('\n').count())
                        + 1;
                out.push(format!("{file}:{line} [{}] {}", diagnostic.source, diagnostic.message));
            }
        }
        (out, unanswered)
    }

    /// Ends step `index` as `status` (rejected, not applied, nothing changed) with `note`,
    /// told in the plan: the run goes on without it, as after a failed step.
    async fn not_done(&self, index: usize, status: StepStatus, note: String) -> Stop {
        let files = self.executor.changed_files();
        if let Some(step) = lock(&self.plan).as_mut().and_then(|p| p.steps.get_mut(index)) {
            step.status = status;
            step.note = note.clone();
            step.files.retain(|f| files.contains(f));
        }
        self.executor.record("step_not_done", json!({"status": status.as_str(), "note": note}));
        self.publish().await;
        Stop { reason: ExitReason::Failed, summary: note }
    }

    fn stop_with_plan(&self, reason: ExitReason, why: &str) -> Stop {
        let done = lock(&self.plan)
            .as_ref()
            .map_or(0, |p| p.steps.iter().filter(|s| s.status == StepStatus::Done).count());
        // what it leaves as far as it got is said by the report's `left`
        Stop { reason, summary: format!("{why}; {done} step(s) were done") }
    }

    /// The workspace as the prompts show it for `question` (summaries cost tokens too), and
    /// a line in the audit log saying what it held.
    async fn workspace(&mut self, question: &str) -> String {
        // the run's model helps with the view (the question's words, summaries), whichever
        // role's model the step asks
        let main = self.context.model.as_ref().ok().cloned();
        let view = workspace_context(
            self.executor.context(),
            main.as_ref(),
            question,
            self.active.as_deref(),
            &self.cancel,
        )
        .await;
        self.add_tokens(view.spent);
        // what the prompt shows whole the model has read: a change to it before an edit is drift
        for (path, shown) in &view.read {
            self.executor.shown(path, shown);
        }
        let text = view.text;
        // a follow-up sees what came before it in the session
        let text = if self.conversation.is_empty() { text } else { format!("{}\n{text}", self.conversation) };
        self.executor.record(
            "context",
            serde_json::json!({
                "question": question,
                "tokens": crate::model::estimate_tokens(&text),
                "summary_tokens": view.spent.total(),
                "summaries": {"used": view.summarized, "asked": view.unsummarized},
            }),
        );
        text
    }

    /// What the planner is asked for `request`, with `workspace` as the prompt shows it and
    /// `history` on a re-plan.
    fn plan_request<'a>(
        &'a self,
        request: &'a TaskRequest,
        workspace: &'a str,
        history: Option<String>,
    ) -> PlanRequest<'a> {
        PlanRequest {
            goal: &request.goal,
            workspace,
            selection: request.selection.clone(),
            max_steps: self.context.plan.max_steps,
            history,
            images: &self.images,
        }
    }

    fn add_tokens(&mut self, tokens: Tokens) {
        self.tokens.add(tokens);
    }

    /// A new plan for what is left after a step failed: its steps replace the pending ones
    /// and follow the failed ones, which stay in the plan marked as replaced (the done ones
    /// stay too), with ids that do not clash.
    async fn replan(
        &mut self,
        model: &dyn Model,
        request: &TaskRequest,
        outline: &str,
        round: usize,
    ) -> Result<(), Stop> {
        let workspace = self.workspace(&request.goal).await;
        let plan_request = self.plan_request(request, &workspace, Some(outline.to_string()));
        let plan_id = lock(&self.plan).as_ref().map(|p| p.plan_id.clone()).unwrap_or_default();
        let (new, tokens) = make_plan(model, &plan_request, &plan_id, &self.cancel).await;
        self.add_tokens(tokens);
        let mut new = new.map_err(|err| Stop {
            reason: ExitReason::Failed,
            summary: format!("re-planning failed: {err}"),
        })?;
        let prefix = format!("r{round}.");
        for step in &mut new.steps {
            step.id = format!("{prefix}{}", step.id);
            step.depends_on = step.depends_on.iter().map(|d| format!("{prefix}{d}")).collect();
        }
        {
            let mut guard = lock(&self.plan);
            if let Some(plan) = guard.as_mut() {
                // the failed steps stay, failed, beside what replaces them
                plan.replace(new.steps);
                plan.repairs.extend(new.repairs);
            }
        }
        self.executor.record("replan", json!({"round": round, "plan": *lock(&self.plan)}));
        self.publish().await;
        Ok(())
    }

    /// Carries out step `index`: `Ok` when it is done; `Err` with `Failed` when it failed (the
    /// run goes on), any other reason when the run must stop.
    async fn step(&mut self, model: &dyn Model, index: usize) -> Result<(), Stop> {
        let (plan_text, step, total) = {
            let mut guard = lock(&self.plan);
            let Some(plan) = guard.as_mut() else {
                return Err(Stop { reason: ExitReason::Failed, summary: "the plan was lost".into() });
            };
            plan.steps[index].status = StepStatus::Running;
            (plan.outline(), plan.steps[index].clone(), plan.steps.len())
        };
        // what the step writes, files earlier steps changed too included, and every change
        // it asks for with what became of it
        let mark = self.executor.writes();
        let change_mark = self.executor.change_mark();
        let mut goal = step.title.clone();
        if !step.detail.is_empty() {
            goal.push_str(&format!("\n{}", step.detail));
        }
        // the step's role and mode (SPEC M1–M3): routed by its words unless one was asked for
        let explicit = self.explicit_role.clone();
        let (profile, mode, shown) = self.enter_role(&goal, explicit.as_deref());
        if let Some(plan) = lock(&self.plan).as_mut() {
            plan.steps[index].role = shown.clone();
            plan.steps[index].mode = mode.name().to_string();
        }
        self.run.set_mode(&shown);
        // each transition from now on: in `tokamak.status` and on the step in the plan (sent
        // with the next plan update: `outcome` sends one for each transition it fires)
        let set_mode = self.run.mode_setter();
        let set_confidence = self.run.confidence_setter();
        self.executor.on_confidence(Box::new(move |file, score, why| set_confidence(file, score, why)));
        let plan = Arc::clone(&self.plan);
        self.executor.on_mode_change(Box::new(move |role, mode, trigger| {
            set_mode(&format!("{role}, {mode} ({})", trigger.replace('_', " ")));
            // a step that ends keeps the last mode it worked in
            if mode != Mode::Idle
                && let Some(step) = lock(&plan).as_mut().and_then(|p| p.steps.get_mut(index))
            {
                step.mode = mode.name().to_string();
            }
        }));
        self.publish().await;
        let name = format!("step {}/{total} ({shown}): {}", index + 1, step.title);
        self.report(name.clone()).await;
        // what the mode does itself before the model acts (profiling's hot spots)
        let measured = self.enter_mode(&name, &goal, mode).await;
        let entered = mode;
        // the system message is the same for every step and role, so steps share the prompt
        // prefix a server caches (the system message and the tools); the role goes with the
        // step's own text
        let role = profile.system_prompt.clone();
        // the role's own model, when its settings or its file name one
        let own: Option<Arc<dyn Model>> = match &self.context.role_models {
            Some(models) => match models(&profile.name, profile.model.as_deref()) {
                Ok(own) => Some(own),
                Err(err) => {
                    tracing::warn!(
                        "the {} role's model could not be used ({err}); using the run's",
                        profile.name
                    );
                    None
                }
            },
            None => None,
        };
        let model: &dyn Model = own.as_deref().unwrap_or(model);
        let overall = lock(&self.plan).as_ref().map(|p| p.goal.clone()).unwrap_or_default();
        let workspace = self.workspace(&format!("{goal}\n{overall}")).await;
        // the skills this step's work or role calls for, in full (the others are one line each
        // in the workspace view)
        let skill_text = {
            let skills = &self.executor.context().skills;
            let chosen = skills.for_step(&goal, &profile.system_prompt, &profile.skills);
            if !chosen.is_empty() {
                let names: Vec<&str> = chosen.iter().map(|s| s.name.as_str()).collect();
                self.executor.record("skills", serde_json::json!({"step": step.id, "given": names}));
            }
            crate::context::Skills::render(&chosen)
        };
        let mut feedback = String::new();
        // the review sends the step back once; what it finds after that is only said
        let mut reviewed = false;
        // what the step did before the review sent it back, for its note
        let mut first_summary: Option<String> = None;
        let mut left_warnings = 0;
        // files the step's change reached and broke, fixed within the step
        let mut reach_fixed: Vec<String> = Vec::new();
        // coverage sends the step back once; what is still uncovered after that is said
        let mut covered_again = false;
        loop {
            let mut context_text = format!(
                "The plan for the goal \"{}\" (○ pending, ⚡ this step, ✓ done, ✗ failed):\n{plan_text}\nYou are carrying out step {} only.",
                lock(&self.plan).as_ref().map(|p| p.goal.clone()).unwrap_or_default(),
                step.id
            );
            let changed = self.executor.changed_files();
            if !changed.is_empty() {
                context_text.push_str(&format!("\nFiles this run changed so far: {}.", changed.join(", ")));
            }
            if !skill_text.is_empty() {
                context_text.push_str(&format!("\n\n{skill_text}"));
            }
            if let Some(measured) = &measured {
                context_text.push_str(&format!("\n\n{measured}"));
            }
            if !feedback.is_empty() {
                context_text.push_str(&format!("\n\n{feedback}"));
            }
            // the mode's handler: what the step's current mode is for and allows
            let mode = self.executor.authority().map_or(Mode::Implementation, |(_, mode)| mode);
            let role = format!("{role}\n\n{}", mode.instructions());
            let request = ActRequest {
                system: SYSTEM,
                role: &role,
                goal: &goal,
                workspace: &workspace,
                context: &context_text,
                max_tokens: self.context.limits.tokens.saturating_sub(self.tokens.total()),
                settle: Duration::from_millis(self.context.fix.settle_timeout_ms.max(1)),
                images: &self.images,
            };
            let editor = Arc::clone(&self.executor.context().editor);
            let run_id = self.run.run_id.clone();
            let report = move |event: RunEvent| -> futures::future::BoxFuture<'static, ()> {
                let editor = Arc::clone(&editor);
                let run_id = run_id.clone();
                Box::pin(async move { editor.run_event(&run_id, &event).await })
            };
            let outcome: ActOutcome = act(self.executor, model, &request, &self.cancel, &report).await;
            self.add_tokens(outcome.tokens);
            self.turns += outcome.turns;
            self.endings.plain += u32::from(outcome.plain);
            match outcome.exit_reason {
                ExitReason::Done => {}
                ExitReason::Failed => {
                    return Err(Stop { reason: ExitReason::Failed, summary: outcome.summary });
                }
                other => return Err(Stop { reason: other, summary: outcome.summary }),
            }
            // a step whose changes did not land is not done, whatever the model says
            let may_write = mode.allowed().permits(crate::executor::ActionKind::Write)
                && ["edit", "create", "delete", "rename"]
                    .iter()
                    .any(|action| profile.refuses_action(action).is_none());
            if let Some((status, note)) =
                verdict::landing(&self.executor.changes_since(change_mark), may_write)
            {
                return Err(self.not_done(index, status, note).await);
            }
            // observe what the step changed
            let step_files = self.executor.written_since(mark);
            self.edits_done(&name, &step_files).await?;
            let mut observation = self.observe(&step.id, &step_files).await;
            // the model said it was finished and the checks or tests send it back: it ended early
            if !observation.clean() {
                self.endings.early += 1;
            }
            if let Some(error) = first_error(&observation) {
                self.outcome("error_occurred", |c| {
                    c.has_errors = true;
                    c.last_error = Some(error);
                })
                .await?;
            }
            // fix what the step broke, within the run's rounds
            while !observation.introduced.is_empty() {
                self.iterations += 1;
                if self.iterations > self.context.limits.iterations {
                    return Err(Stop {
                        reason: ExitReason::IterationLimit,
                        summary: format!(
                            "stopped after {} rounds of fixing and retrying (limits.iterations)",
                            self.context.limits.iterations
                        ),
                    });
                }
                let errors = observation.errors();
                self.report(format!("{name}: fixing {errors} error(s) it introduced")).await;
                // errors in files the change reaches and did not touch: the impact check found
                // them (seed 000: debug → impact → implementation, additional fixes)
                let elsewhere: Vec<String> = observation
                    .introduced
                    .iter()
                    .map(|(file, _)| file.clone())
                    .filter(|file| !step_files.contains(file))
                    .collect();
                if !elsewhere.is_empty() {
                    self.report(format!(
                        "{name}: the change broke {} it reaches: fixing it there too",
                        elsewhere.join(", ")
                    ))
                    .await;
                    if self.executor.authority().is_some_and(|(_, mode)| mode == Mode::Debug) {
                        self.outcome("impact_check_needed", |_| {}).await?;
                    }
                    if self.executor.authority().is_some_and(|(_, mode)| mode == Mode::Impact) {
                        self.outcome("additional_fixes", |c| c.pending_changes = Some(elsewhere.len()))
                            .await?;
                    }
                    for file in elsewhere {
                        if !reach_fixed.contains(&file) {
                            reach_fixed.push(file);
                        }
                    }
                }
                for (file, diagnostics) in std::mem::take(&mut observation.introduced) {
                    self.fix_file(&file, diagnostics).await;
                }
                // what the fixes changed is the step's too (a file its change reached)
                observation = self.observe(&step.id, &self.executor.written_since(mark)).await;
                if !observation.introduced.is_empty() && self.iterations >= self.context.limits.iterations {
                    break;
                }
            }
            if !observation.introduced.is_empty() {
                let left: Vec<String> =
                    observation.introduced.iter().map(|(f, d)| format!("{f}: {}", d[0].message)).collect();
                return Err(Stop {
                    reason: ExitReason::Failed,
                    summary: format!("it left errors: {}", left.join("; ")),
                });
            }
            let repaired = self.executor.authority().is_some_and(|(_, mode)| {
                mode == Mode::Debug || (mode == Mode::Implementation && !reach_fixed.is_empty())
            });
            if repaired {
                // repaired (here or where the change reached): back to the code, and on to its
                // checks
                self.edits_done(&name, &step_files).await?;
            }
            if let Some(TestOutcome { passed: false, ran: true, output }) = &observation.tests {
                let failure = output.lines().find(|l| !l.trim().is_empty()).map(str::to_string);
                self.outcome("test_failed", |c| {
                    c.tests_passed = Some(false);
                    c.last_error = failure;
                })
                .await?;
                self.iterations += 1;
                if self.iterations > self.context.limits.iterations {
                    return Err(Stop {
                        reason: ExitReason::Failed,
                        summary: "the tests still fail (limits.iterations rounds were used)".into(),
                    });
                }
                feedback = format!(
                    "The step's changes are in, but the project's tests fail:\n{output}\nMake them pass."
                );
                continue;
            }
            // the coverage of the new code, when the goal asks for it: measured by the traced
            // test run; new code no test runs sends the step back once
            let measured_coverage = match &observation.tests {
                Some(TestOutcome { passed: true, ran: true, .. }) if self.coverage => {
                    self.new_code_coverage(&name).await
                }
                _ => None,
            };
            if let Some(found) = measured_coverage.as_ref().filter(|c| !c.uncovered.is_empty())
                && !covered_again
                && self.iterations < self.context.limits.iterations
            {
                covered_again = true;
                self.iterations += 1;
                feedback = format!(
                    "The step's checks and tests pass, but no test runs these statements the run added ({}):\n{}\nAdd tests that run them (their results checked), changing no other code.",
                    found.describe(),
                    found.uncovered.join("\n")
                );
                continue;
            }
            let uncovered_left = measured_coverage.as_ref().map(|c| c.uncovered.len()).unwrap_or(0);
            match &observation.tests {
                Some(TestOutcome { passed: true, ran: true, .. }) => {
                    let coverage = measured_coverage
                        .as_ref()
                        .map(|c| crate::modes::CoverageData { added: c.added, covered: c.covered });
                    self.outcome("tests_passed", |c| {
                        c.tests_passed = Some(true);
                        c.coverage_data = coverage;
                    })
                    .await?;
                }
                // refused or missing: reviewed without them (the note says why)
                Some(TestOutcome { ran: false, .. }) => self.outcome("tests_skipped", |_| {}).await?,
                _ => {}
            }
            // the mode the step entered leaves what it does (a migration's stage, verified)
            let passed = matches!(&observation.tests, Some(TestOutcome { passed: true, ran: true, .. }));
            self.exit_mode(entered, passed).await?;
            // the review (QA): what the step introduced that a reviewer would send back — the
            // checkers' warnings in the files it changed (an unused import, a shadowed name)
            let found = self.review(&observation);
            if !found.is_empty() {
                if !reviewed && self.iterations < self.context.limits.iterations {
                    reviewed = true;
                    self.iterations += 1;
                    first_summary = Some(outcome.summary.trim_end_matches('.').to_string());
                    let first = found.first().cloned();
                    self.outcome("issues_found", |c| c.last_error = first).await?;
                    feedback = format!(
                        "The step's checks and tests pass, but the review found what it introduced:\n{}\nClean these up, changing nothing else.",
                        found.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
                    );
                    continue;
                }
                left_warnings = found.len();
            }
            // reviewed: committed in the git mode when `auto_commit` is on and the step changed
            // something, else done
            self.outcome("approved", |c| c.auto_commit &= !step_files.is_empty()).await?;
            let committed = if self.executor.authority().is_some_and(|(_, mode)| mode == Mode::Git) {
                Some(self.commit_step(&step, step_files.clone()).await?)
            } else {
                None
            };
            // what landed is still what it asked for (a later round's change may not have)
            if let Some((status, note)) =
                verdict::landing(&self.executor.changes_since(change_mark), may_write)
            {
                return Err(self.not_done(index, status, note).await);
            }
            {
                let mut guard = lock(&self.plan);
                if let Some(plan) = guard.as_mut() {
                    let step = &mut plan.steps[index];
                    step.status = StepStatus::Done;
                    step.note = match (&observation.tests, self.executor.commands_ran()) {
                        (Some(TestOutcome { ran: false, output, .. }), _) => {
                            format!(
                                "{} (the tests did not run: {})",
                                outcome.summary.trim_end_matches('.'),
                                crate::text::cut(output, 300).trim_end()
                            )
                        }
                        (Some(_), Some(place)) => {
                            format!(
                                "{} (the tests passed, run {place})",
                                outcome.summary.trim_end_matches('.')
                            )
                        }
                        _ => outcome.summary.clone(),
                    };
                    if let Some(first) = &first_summary {
                        step.note = format!("{first}; after the review: {}", step.note);
                    }
                    if left_warnings > 0 {
                        step.note = format!(
                            "{} (the review's {left_warnings} warning(s) are left)",
                            step.note.trim_end_matches('.')
                        );
                    }
                    if !reach_fixed.is_empty() {
                        step.note = format!(
                            "{} (the change broke {}, which it reaches; fixed there too)",
                            step.note.trim_end_matches('.'),
                            reach_fixed.join(", ")
                        );
                    }
                    if uncovered_left > 0 {
                        step.note = format!(
                            "{} ({uncovered_left} new statement(s) are run by no test)",
                            step.note.trim_end_matches('.')
                        );
                    }
                    if let Some(committed) = &committed {
                        step.note = format!("{} ({committed})", step.note.trim_end_matches('.'));
                    }
                    step.files = step_files.clone();
                }
            }
            self.publish().await;
            // for editors that show progress but not the plan (Helix): the step's report
            let note = lock(&self.plan).as_ref().map(|plan| plan.steps[index].note.clone());
            if let Some(note) = note.filter(|_| !self.executor.context().editor.shows_step_notes()) {
                self.report(format!("{name} done: {note}")).await;
            }
            return Ok(());
        }
    }
}
