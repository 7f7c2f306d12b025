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

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::act::{ActOutcome, ActRequest, act};
use super::checks;
use super::fix::{FixContext, FixRequest, fix};
use super::planner::{PlanFailure, PlanRequest, Selection, make_plan};
use super::runs::{RunHandle, Runs};
use super::targets::Scope;
use super::workspace::workspace_context;
use crate::config::{FixSettings, LimitSettings, PlanSettings};
use crate::editor::{DocumentEdit, EditOutcome, Editor, FileOperation, MessageLevel, Progress, RunEvent};
use crate::executor::{Action, DiskEditor, Executor, ExecutorContext};
use crate::model::{Model, ModelError};
use crate::modes::{Mode, Profile, Profiles, Role, route};
use crate::observer::{Diagnostic, Observer};
use crate::run::plan::{Plan, StepStatus};
use crate::run::{Check, Endings, ExitReason, RunReport, TestOutcome, Tokens};
use crate::sync::lock;
use crate::workspace::DocumentSnapshot;

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
}

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
}

/// Makes a plan without carrying it out (`tokamak.plan`, `tokamak plan`).
pub async fn plan_goal(
    context: &TaskContext,
    goal: &str,
    selection: Option<Selection>,
    plan_id: &str,
    cancel: &CancellationToken,
) -> Result<(Plan, Tokens), PlanFailure> {
    let model = context.model.clone().map_err(PlanFailure::Model)?;
    let active = selection.as_ref().map(|s| context.executor.confinement.root().join(&s.path));
    let (workspace, spent) =
        workspace_context(&context.executor, Some(model.as_ref()), goal, active.as_deref(), cancel).await;
    let request = PlanRequest {
        goal,
        workspace: &workspace,
        selection,
        max_steps: context.plan.max_steps,
        history: None,
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
    };
    let stop = match engine.roles_ready(&request).await {
        Ok(()) => engine.drive(&request).await,
        Err(stop) => stop,
    };
    timer.abort();
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
    let steps_done = lock(&engine.plan).as_ref().map_or(0, |plan| {
        plan.steps.iter().filter(|s| s.status == crate::run::plan::StepStatus::Done).count() as u32
    });
    let root = executor_context.confinement.root();
    let mut summary = stop.summary.trim().to_string();
    if !summary.ends_with('.') {
        summary.push('.');
    }
    if !changed.is_empty() {
        summary.push_str(&format!(" Changed: {}.", changed.join(", ")));
        if let Some(id) = journal.as_ref().and_then(|j| j.checkpoint_id()) {
            summary.push_str(&format!(" Undo with tokamak rollback {id}."));
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
    };
    tracing::info!("{}: {} — {}", run.run_id, report.exit_reason, report.summary);
    if let Some(journal) = &journal {
        journal.finish(&report).await;
    }
    let end = Progress::End { message: report.summary.clone() };
    editor.run_event(&run.run_id, &RunEvent::Progress(end)).await;
    let run_id = run.run_id.clone();
    drop(run);
    editor.run_event(&run_id, &RunEvent::Finished(report.clone())).await;
    report
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
}

impl Runner<'_> {
    /// The run plans in the planning mode (`agent_planning`), as the role its goal routes to.
    fn enter_planning(&mut self, goal: &str) {
        let explicit = self.explicit_role.clone();
        let (name, _) = self.route(goal, explicit.as_deref());
        let profile =
            self.profiles.get(&name).cloned().unwrap_or_else(|| crate::modes::built_in(Role::Coder));
        self.executor.act_as(Arc::new(profile), Mode::Planning);
    }

    /// Fires an outcome's `trigger` on the step's modes with the run's state (`state` adds
    /// what the step knows) and says the transition in the progress lines. A run going back
    /// and forth between two modes more than `limits.iterations` times stops
    /// (`repeated_state`), naming them.
    async fn outcome(
        &mut self,
        name: &str,
        trigger: &str,
        state: impl FnOnce(&mut crate::modes::ModeContext),
    ) -> Result<(), Stop> {
        let mut context = self.executor.mode_context();
        state(&mut context);
        if let Some(moved) = self.executor.fire_mode(trigger, &context) {
            let why = moved.trigger.replace('_', " ");
            self.report(format!("{name}: {} → {} ({why})", moved.from, moved.to)).await;
            // the step's new mode in the plan window and tree view
            self.publish().await;
        }
        let limit = self.context.limits.iterations as usize;
        match self.executor.mode_cycle(limit) {
            Some((from, to)) => Err(Stop {
                reason: ExitReason::RepeatedState,
                summary: format!(
                    "stopped: it went back and forth between {from} and {to} more than {limit} times (limits.iterations)"
                ),
            }),
            None => Ok(()),
        }
    }

    /// A step's edits are done: its mode's outcome fires (`code_complete`, `refactor_complete`,
    /// `changes_ready`, `doc_complete`, or `fix_identified` after a repair), and on through the
    /// modes it leads to, as far as one of them has an outcome of its own. A change of more
    /// than five files goes through multi-file editing, and through impact analysis first when
    /// it reaches callers or importers outside the step's files.
    async fn edits_done(&mut self, name: &str, files: &[String]) -> Result<(), Stop> {
        let mode = |runner: &Self| runner.executor.authority().map(|(_, mode)| mode);
        let mut looked = false;
        for _ in 0..4 {
            let before = mode(self);
            let trigger = match before {
                Some(Mode::Debug) => "fix_identified",
                Some(Mode::Implementation) => "code_complete",
                Some(Mode::Refactor) => "refactor_complete",
                Some(Mode::MultiFile) if !looked => {
                    looked = true;
                    if self.reached_outside(name, files).await { "impact_check" } else { "changes_ready" }
                }
                Some(Mode::MultiFile) => "changes_ready",
                // the callers looked at: the tests that reach them run, or it is reviewed
                Some(Mode::Impact) if self.executor.context().settings.test_command.is_some() => {
                    "affected_tests"
                }
                Some(Mode::Impact) => "impact_assessed",
                Some(Mode::Documentation) => "doc_complete",
                _ => return Ok(()),
            };
            self.outcome(name, trigger, |c| c.pending_changes = files.len()).await?;
            if mode(self) == before {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Impact analysis of a large change: whether what the run changed reaches callers or
    /// importers outside `files` (the step's), said in the progress lines and audited.
    async fn reached_outside(&self, name: &str, files: &[String]) -> bool {
        let Some(impact) = self.executor.run_impact(None).await else { return false };
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
        self.executor.record(
            "impact",
            json!({"for": "multi_file", "changed": impact.symbols.iter().map(|(_, n)| n.clone()).collect::<Vec<_>>(), "reached": reached, "tests": impact.tests.len()}),
        );
        if reached.is_empty() {
            return false;
        }
        self.report(format!(
            "{name}: the change reaches {} file(s) outside it: {}",
            reached.len(),
            crate::text::cut(&reached.join(", "), 300)
        ))
        .await;
        true
    }

    async fn report(&self, message: String) {
        self.executor
            .context()
            .editor
            .run_event(&self.run.run_id, &RunEvent::Progress(Progress::Report { message, percentage: None }))
            .await;
    }

    async fn publish(&self) {
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
        let mut plan = match &request.plan {
            Some(plan) => plan.clone(),
            None => {
                self.enter_planning(&request.goal);
                self.report("planning".to_string()).await;
                let workspace = self.workspace(model.as_ref(), &request.goal).await;
                let plan_request = PlanRequest {
                    goal: &request.goal,
                    workspace: &workspace,
                    selection: request.selection.clone(),
                    max_steps: self.context.plan.max_steps,
                    history: None,
                };
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
                    let (failed_now, outline) = {
                        let mut guard = lock(&self.plan);
                        let Some(plan) = guard.as_mut() else { break };
                        plan.steps[index].status = StepStatus::Failed;
                        plan.steps[index].note = stop.summary.clone();
                        (plan.fail_dependants(), plan.outline())
                    };
                    self.publish().await;
                    if replans < self.context.plan.max_replans && !failed_now.is_empty() {
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
                            plan.steps[index].status = StepStatus::Failed;
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
        let done = plan.steps.iter().filter(|s| s.status == StepStatus::Done).count();
        let failed: Vec<String> = plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Failed)
            .map(|s| format!("step {} ({}): {}", s.id, s.title, s.note))
            .collect();
        if failed.is_empty() {
            let mut summary = format!("{}: all {} step(s) done", plan.goal, done);
            // a run that changed nothing answered a question: its steps' answers are the point
            if self.executor.changed_files().is_empty() {
                let answers: Vec<&str> =
                    plan.steps.iter().map(|s| s.note.trim()).filter(|note| !note.is_empty()).collect();
                if !answers.is_empty() {
                    summary = format!("{summary}. {}", answers.join(" "));
                }
            }
            Stop { reason: ExitReason::Done, summary }
        } else {
            Stop {
                reason: ExitReason::Failed,
                summary: format!("{done} of {} step(s) done; {}", plan.steps.len(), failed.join("; ")),
            }
        }
    }

    fn stop_with_plan(&self, reason: ExitReason, why: &str) -> Stop {
        let done = lock(&self.plan)
            .as_ref()
            .map_or(0, |p| p.steps.iter().filter(|s| s.status == StepStatus::Done).count());
        Stop { reason, summary: format!("{why}; {done} step(s) were done") }
    }

    /// Says what was wrong with the workspace's role files, and refuses a role asked for that
    /// does not exist; audits how the goal routes.
    async fn roles_ready(&mut self, request: &TaskRequest) -> Result<(), Stop> {
        for problem in &self.profiles.problems {
            self.executor.record("role_file", serde_json::json!({"problem": problem}));
            let message = format!("Tokamak uses the built-in role profile instead: {problem}");
            self.executor.context().editor.show_message(MessageLevel::Warning, message).await;
        }
        if let Some(role) = &request.role
            && self.profiles.get(role).is_none()
        {
            return Err(Stop {
                reason: ExitReason::Failed,
                summary: format!(
                    "there is no role {role:?}; the roles are {}",
                    self.profiles.names().join(", ")
                ),
            });
        }
        let routed = self.route(&request.goal, request.role.as_deref());
        self.executor.record(
            "role",
            serde_json::json!({"for": "goal", "role": routed.0, "words": routed.1, "explicit": request.role.is_some()}),
        );
        Ok(())
    }

    /// The profile for `text` (the role asked for, else the one its words route to) and the
    /// words that chose it.
    fn route(&self, text: &str, explicit: Option<&str>) -> (String, Vec<String>) {
        if let Some(name) = explicit {
            return (name.to_ascii_lowercase(), Vec::new());
        }
        let routed = route(text, None);
        (routed.role.name().to_string(), routed.words)
    }

    /// The step's role and mode: the executor enforces them from now on; the mode change and
    /// the routing are audited. Returns the profile and how the plan shows it.
    fn enter_role(&mut self, text: &str, explicit: Option<&str>) -> (Arc<Profile>, Mode, String) {
        let (name, words) = self.route(text, explicit);
        let profile = Arc::new(
            self.profiles
                .get(&name)
                .cloned()
                .unwrap_or_else(|| crate::modes::built_in(crate::modes::Role::Coder)),
        );
        let role_mode = Role::from_name(&name).map_or(Mode::Implementation, Role::mode);
        // the role says who acts; the task's intent where the machine starts (seed 000): a
        // coder's step asked to refactor, to fix, or where something is starts there (from
        // looking, its first change goes on to implementation: `target_found`). Reviewing,
        // testing and design go to their own roles.
        let intent = crate::modes::intent(text).filter(|(mode, _)| {
            explicit.is_none()
                && role_mode == Mode::Implementation
                && matches!(mode, Mode::Refactor | Mode::Debug | Mode::ContextNav)
        });
        let mode = intent.as_ref().map_or(role_mode, |(mode, _)| *mode);
        self.executor.act_as(Arc::clone(&profile), mode);
        let why = match (explicit, words.is_empty()) {
            (Some(_), _) => "asked for".to_string(),
            (None, true) => "the default".to_string(),
            (None, false) => format!("for {}", words.join(", ")),
        };
        self.executor.record(
            "role",
            serde_json::json!({"for": text.lines().next().unwrap_or_default(), "role": name, "words": words, "mode": mode, "intent": intent.map(|(_, words)| words)}),
        );
        (profile, mode, format!("{name}, {mode} ({why})"))
    }

    /// The workspace as the prompts show it for `question` (summaries cost tokens too), and
    /// a line in the audit log saying what it held.
    async fn workspace(&mut self, model: &dyn Model, question: &str) -> String {
        let (text, spent) = workspace_context(
            self.executor.context(),
            Some(model),
            question,
            self.active.as_deref(),
            &self.cancel,
        )
        .await;
        self.add_tokens(spent);
        self.executor.record(
            "context",
            serde_json::json!({"question": question, "tokens": crate::model::estimate_tokens(&text), "summary_tokens": spent.total()}),
        );
        text
    }

    fn add_tokens(&mut self, tokens: Tokens) {
        self.tokens.add(tokens);
    }

    /// A new plan for what is left after a step failed: its steps replace the failed and
    /// pending ones (the done ones stay), with ids that do not clash.
    async fn replan(
        &mut self,
        model: &dyn Model,
        request: &TaskRequest,
        outline: &str,
        round: usize,
    ) -> Result<(), Stop> {
        let workspace = self.workspace(model, &request.goal).await;
        let plan_request = PlanRequest {
            goal: &request.goal,
            workspace: &workspace,
            selection: request.selection.clone(),
            max_steps: self.context.plan.max_steps,
            history: Some(outline.to_string()),
        };
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
                plan.steps.retain(|s| s.status == StepStatus::Done);
                plan.steps.extend(new.steps);
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
        let changed_before = self.executor.changed_files();
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
        let workspace = self.workspace(model, &format!("{goal}\n{overall}")).await;
        let mut feedback = String::new();
        // the review sends the step back once; what it finds after that is only said
        let mut reviewed = false;
        let mut left_warnings = 0;
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
            // observe what the step changed
            let step_files: Vec<String> =
                self.executor.changed_files().into_iter().filter(|f| !changed_before.contains(f)).collect();
            self.edits_done(&name, &step_files).await?;
            let mut observation = self.observe(&step.id, &step_files).await;
            // the model said it was finished and the checks or tests send it back: it ended early
            if !observation.clean() {
                self.endings.early += 1;
            }
            if let Some(error) = first_error(&observation) {
                self.outcome(&name, "error_occurred", |c| {
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
                for (file, diagnostics) in std::mem::take(&mut observation.introduced) {
                    self.fix_file(&file, diagnostics).await;
                }
                observation = self.observe(&step.id, &step_files).await;
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
            if self.executor.authority().is_some_and(|(_, mode)| mode == Mode::Debug) {
                // repaired: back to the code, and on to its checks
                self.edits_done(&name, &step_files).await?;
            }
            if let Some(TestOutcome { passed: false, ran: true, output }) = &observation.tests {
                let failure = output.lines().find(|l| !l.trim().is_empty()).map(str::to_string);
                self.outcome(&name, "test_failed", |c| {
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
            if let Some(TestOutcome { passed: true, ran: true, .. }) = &observation.tests {
                self.outcome(&name, "tests_passed", |c| c.tests_passed = Some(true)).await?;
            }
            // the review (QA): what the step introduced that a reviewer would send back — the
            // checkers' warnings in the files it changed (an unused import, a shadowed name)
            if self.executor.authority().is_some_and(|(_, mode)| mode == Mode::Qa)
                && !observation.warned.is_empty()
            {
                let found: Vec<String> = observation
                    .warned
                    .iter()
                    .flat_map(|(file, list)| {
                        list.iter().map(move |d| {
                            let code = d.code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
                            format!("{file}: {}{code}", d.message)
                        })
                    })
                    .collect();
                if !reviewed && self.iterations < self.context.limits.iterations {
                    reviewed = true;
                    self.iterations += 1;
                    let first = found.first().cloned();
                    self.outcome(&name, "issues_found", |c| c.last_error = first).await?;
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
            self.outcome(&name, "approved", |c| c.auto_commit &= !step_files.is_empty()).await?;
            let committed = if self.executor.authority().is_some_and(|(_, mode)| mode == Mode::Git) {
                Some(self.commit_step(&name, &step).await?)
            } else {
                None
            };
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
                    if left_warnings > 0 {
                        step.note = format!(
                            "{} (the review's {left_warnings} warning(s) are left)",
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

    /// The git mode's work: the run's changes committed in the project's repository with the
    /// step's title (`auto_commit`; the executor asks where the approval level says), told as a
    /// tool call of the run's own; `committed`, or `commit_failed` with git's reason — the
    /// changes stay either way. Returns what happened, for the step's note.
    async fn commit_step(&mut self, name: &str, step: &crate::run::plan::PlanStep) -> Result<String, Stop> {
        let message = format!("{}\n\nTokamak run {}, step {}.", step.title, self.run.run_id, step.id);
        let action = Action::GitCommit { message };
        let editor = Arc::clone(&self.executor.context().editor);
        let id = format!("commit-{}", step.id);
        let call = RunEvent::ToolCall {
            id: id.clone(),
            kind: action.tool_kind(),
            title: action.title(),
            paths: Vec::new(),
        };
        editor.run_event(&self.run.run_id, &call).await;
        let (ok, said) = match self.executor.execute(&action).await {
            Ok(result) => (result.ok, result.summary),
            Err(hit) => (false, hit.to_string()),
        };
        let said = if ok { said } else { format!("not committed: {said}") };
        let result = RunEvent::ToolResult {
            id,
            ok,
            summary: said.clone(),
            changed: Vec::new(),
            files: Vec::new(),
            check: None,
            output: None,
        };
        editor.run_event(&self.run.run_id, &result).await;
        self.outcome(name, if ok { "committed" } else { "commit_failed" }, |_| {}).await?;
        Ok(said)
    }

    /// The errors step `step` introduced in `files` (settled diagnostics now against those
    /// of the text before the run changed them), and the test command's outcome; told to the
    /// user as a `RunEvent::Checked`.
    async fn observe(&self, step: &str, files: &[String]) -> Check {
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
            let before = match self.executor.original(file).flatten() {
                Some(text) => self.diagnostics_of_text(&uri, &text).await,
                None => Vec::new(),
            };
            let (new, gone) = checks::compare(&checks::errors(&before), &checks::errors(&after));
            if !new.is_empty() {
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
            Some(command) if !self.cancel.is_cancelled() => Some(self.run_tests(command).await),
            _ => None,
        };
        let check = Check {
            step: Some(step.to_string()),
            files: files.to_vec(),
            introduced,
            resolved,
            warned,
            tests,
        };
        self.executor.context().editor.run_event(&self.run.run_id, &RunEvent::Checked(check.clone())).await;
        check
    }

    /// Runs the tests: first those that reach what the run changed (SPEC C6, `[test]
    /// impact_first`), then, when they pass and `then_all` says so, the whole command.
    async fn run_tests(&self, command: Vec<String>) -> TestOutcome {
        let settings = &self.executor.context().settings;
        let root = self.executor.context().confinement.root();
        let mut focused = None;
        if settings.test_impact_first
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
        if let Some(focused) = focused {
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
    async fn run_command(&self, command: Vec<String>) -> (bool, bool, String) {
        let action = Action::Run { command, timeout: None };
        let editor = &self.executor.context().editor;
        let number = self.test_runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("tests-{number}");
        let call = RunEvent::ToolCall {
            id: id.clone(),
            kind: action.tool_kind(),
            title: action.title(),
            paths: Vec::new(),
        };
        editor.run_event(&self.run.run_id, &call).await;
        let (passed, ran, text, summary) = match self.executor.execute(&action).await {
            Ok(result) => {
                let passed = result.exit_status == Some(0);
                (passed, result.ok, crate::text::cut(&result.text, 4 * 1024), result.summary)
            }
            Err(hit) => (false, false, hit.to_string(), hit.to_string()),
        };
        let verdict = match (ran, passed) {
            (false, _) => "did not run",
            (true, true) => "passed",
            (true, false) => "failed",
        };
        let summary = format!("the tests {verdict} ({summary})");
        let result = RunEvent::ToolResult {
            id,
            ok: passed,
            summary,
            changed: Vec::new(),
            files: Vec::new(),
            check: None,
            output: Some(text.clone()),
        };
        editor.run_event(&self.run.run_id, &result).await;
        (passed, ran, text)
    }

    /// A file's settled diagnostics: the open document's, else the file's on disk checked by
    /// an Observer of its own. `None` when it is gone or not text.
    async fn diagnostics_now(&self, uri: &Url) -> Option<Vec<Diagnostic>> {
        let observer = &self.executor.context().observer;
        let timeout = Duration::from_millis(self.context.fix.settle_timeout_ms.max(1));
        if let Some(snapshot) = observer.snapshot(uri) {
            return match observer.settled(uri, snapshot.version, timeout).await {
                Ok(_) => Some(observer.diagnostics_at(uri, snapshot.version)),
                // the user typed meanwhile: what there is
                Err(_) => Some(observer.diagnostics(uri)),
            };
        }
        let text = crate::workspace::read_text(&uri.to_file_path().ok()?).ok()?;
        Some(self.diagnostics_of_text(uri, &text).await)
    }

    /// The settled diagnostics of `text` as the file `uri`, from an Observer of its own.
    async fn diagnostics_of_text(&self, uri: &Url, text: &str) -> Vec<Diagnostic> {
        let timeout = Duration::from_millis(self.context.fix.settle_timeout_ms.max(1));
        checks::diagnostics_of_text(self.executor.context(), uri, text, timeout).await
    }

    /// The fix loop on `diagnostics` in `file`: through the editor when it has the file open,
    /// else on disk with an Observer of its own.
    async fn fix_file(&mut self, file: &str, diagnostics: Vec<Diagnostic>) {
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
            approver: (self.executor.context().settings.approval == crate::config::ApprovalLevel::High).then(
                || {
                    Arc::new(crate::executor::OnBehalfOf {
                        approver: Arc::clone(&self.executor.context().approver),
                        run_id: self.run.run_id.clone(),
                        clock: self.executor.waits(),
                    }) as Arc<dyn crate::executor::Approver>
                },
            ),
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
fn first_error(observation: &Check) -> Option<String> {
    observation
        .introduced
        .iter()
        .find_map(|(file, diagnostics)| diagnostics.first().map(|d| format!("{file}: {}", d.message)))
}
