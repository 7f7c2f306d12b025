//! A run's roles and modes (SPEC M1–M3): the role each step is routed to and the mode it
//! starts in (its words' intent), planning in its own mode, and each outcome of a step fired
//! as the machine's next transition — edits done (on through multi-file and impact for a
//! large change that reaches callers outside it), committed in the git mode — said in the
//! progress lines and set on the step in the plan.

use std::sync::Arc;

use serde_json::json;

use super::{Runner, Stop, TaskRequest};
use crate::editor::MessageLevel;
use crate::executor::Action;
use crate::modes::{Mode, Profile, Role, route};
use crate::run::ExitReason;

impl Runner<'_> {
    /// The run plans in the planning mode (`agent_planning`), as the role its goal routes to.
    pub(super) fn enter_planning(&mut self, goal: &str) {
        let explicit = self.explicit_role.clone();
        let (name, _) = self.route(goal, explicit.as_deref());
        self.executor.act_as(self.profile(&name), Mode::Planning);
    }

    /// The profile of the role `name` (the coder's built-in one when there is none).
    fn profile(&self, name: &str) -> Arc<Profile> {
        Arc::new(self.profiles.get(name).cloned().unwrap_or_else(|| crate::modes::built_in(Role::Coder)))
    }

    /// Says what was wrong with the workspace's role files, and refuses a role asked for that
    /// does not exist; audits how the goal routes.
    pub(super) async fn roles_ready(&mut self, request: &TaskRequest) -> Result<(), Stop> {
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
    pub(super) fn route(&self, text: &str, explicit: Option<&str>) -> (String, Vec<String>) {
        if let Some(name) = explicit {
            return (name.to_ascii_lowercase(), Vec::new());
        }
        let routed = route(text, None);
        (routed.role.name().to_string(), routed.words)
    }

    /// The step's role and mode: the executor enforces them from now on; the mode change and
    /// the routing are audited. Returns the profile and how the plan shows it.
    pub(super) fn enter_role(&mut self, text: &str, explicit: Option<&str>) -> (Arc<Profile>, Mode, String) {
        let (name, words) = self.route(text, explicit);
        let profile = self.profile(&name);
        let role_mode = Role::from_name(&name).map_or(Mode::Implementation, Role::mode);
        // the role says who acts; the task's intent where the machine starts (seed 000): a
        // coder's step asked to refactor, to fix, to profile, or where something is starts there
        // (from looking, its first change goes on to implementation: `target_found`; from
        // profiling, its hot spots to refactoring: `hotspot_found`). Reviewing,
        // testing and design go to their own roles.
        // Verifying and migrating are what the step does whichever role takes it ("검증" is the
        // tester's word).
        let intent = crate::modes::intent(text).filter(|(mode, _)| {
            explicit.is_none()
                && (matches!(mode, Mode::Verification | Mode::Migration)
                    || (role_mode == Mode::Implementation
                        && matches!(mode, Mode::Refactor | Mode::Debug | Mode::ContextNav | Mode::Profiling)))
        });
        // a question only looks (context navigation), whatever its role
        let mode = if self.question {
            Mode::ContextNav
        } else {
            intent.as_ref().map_or(role_mode, |(mode, _)| *mode)
        };
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

    /// Fires an outcome's `trigger` on the step's modes with the run's state (`state` adds
    /// what the step knows) and says the transition in the progress lines. A run going back
    /// and forth between two modes more than `limits.iterations` times stops
    /// (`repeated_state`), naming them.
    pub(super) async fn outcome(
        &mut self,
        trigger: &str,
        state: impl FnOnce(&mut crate::modes::ModeContext),
    ) -> Result<(), Stop> {
        let mut context = self.executor.mode_context();
        state(&mut context);
        if let Some(moved) = self.executor.fire_mode(trigger, &context) {
            let why = moved.trigger.replace('_', " ");
            // a line of its own: the step it belongs to was said when it started
            self.report(format!("mode: {} → {} ({why})", moved.from, moved.to)).await;
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
    pub(super) async fn edits_done(&mut self, name: &str, files: &[String]) -> Result<(), Stop> {
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
            self.outcome(trigger, |c| c.pending_changes = Some(files.len())).await?;
            if mode(self) == before {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Impact analysis of a large change: whether what the run changed reaches callers or
    /// importers outside `files` (the step's), said in the progress lines and audited.
    pub(super) async fn reached_outside(&self, name: &str, files: &[String]) -> bool {
        let Some(impact) = self.executor.run_impact(None).await else { return false };
        let reached = self.reached_by(&impact, files);
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

    /// The review's findings in the QA mode, one line each: the checkers' warnings the step
    /// introduced in its files, with their codes. None in another mode.
    pub(super) fn review(&self, observation: &crate::run::Check) -> Vec<String> {
        if self.executor.authority().is_none_or(|(_, mode)| mode != Mode::Qa) {
            return Vec::new();
        }
        observation
            .warned
            .iter()
            .flat_map(|(file, list)| {
                list.iter().map(move |d| {
                    let code = d.code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
                    format!("{file}: {}{code}", d.message)
                })
            })
            .collect()
    }

    /// The git mode's work: the step's own changes (`files`) committed in the project's
    /// repository with the step's title (`auto_commit`; the executor asks where the approval
    /// level says, and a person's no does not send the model to navigation), told as a tool
    /// call of the run's own; `committed`, or `commit_failed` with git's reason — the changes
    /// stay either way. Returns what happened, for the step's note; a limit of the run's stops it.
    pub(super) async fn commit_step(
        &mut self,
        step: &crate::run::plan::PlanStep,
        files: Vec<String>,
    ) -> Result<String, Stop> {
        let message = format!("{}\n\nTokamak run {}, step {}.", step.title, self.run.run_id, step.id);
        let id = format!("commit-{}", step.id);
        self.own_call(&id, &Action::GitCommit { message: message.clone() }).await;
        let (ok, said) = match self.executor.commit_files(&message, files).await {
            Ok(result) => (result.ok, result.summary),
            Err(hit) => {
                return Err(Stop { reason: crate::agent::act::limit_reason(&hit), summary: hit.to_string() });
            }
        };
        let said = if ok { said } else { format!("not committed: {said}") };
        self.own_result(&id, ok, said.clone(), None).await;
        self.outcome(if ok { "committed" } else { "commit_failed" }, |_| {}).await?;
        Ok(said)
    }
}
