//! The executor's gate (SPEC M1, M3, G1): before an action of the model's is carried out, the
//! mode and the role it acts in are asked (a refusal names the rule and is audited), a person
//! is asked as the `approval` level says (a rejection sends the model to context navigation),
//! and the run's limits are counted.

use std::sync::Arc;

use serde_json::json;

use super::{Access, ChangedFile, Decision, Executor, Origin, Request, Stop, WaitClock};
use crate::action::{Action, ActionKind, ActionResult};
use crate::config::ApprovalLevel;
use crate::sync::lock;

/// A limit of `[limits]` that stopped a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitHit {
    #[error("stopped at {0} actions (limits.tool_calls)")]
    ToolCalls(u32),
    #[error("stopped at {0} changes to files (limits.revisions)")]
    Revisions(u32),
    #[error("stopped: changing one more file would pass {0} files (limits.files)")]
    Files(u32),
    /// A file changed under the run beyond what it planned on (SPEC G3), and nobody said to
    /// go on.
    #[error("stopped: {0}")]
    Drifted(String),
    /// The run's confidence in a file fell under 40 (SPEC G4), and nobody said to go on.
    #[error("stopped: {0}")]
    Unsure(String),
}

/// Told the run's role and new mode, and the trigger that led there.
pub type ModeListener = Box<dyn Fn(&str, crate::modes::Mode, &str) + Send + Sync>;

/// Why the model is in context navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Navigating {
    AfterRejection,
    ForTheStep,
}

/// The role a run's model acts in, and its modes.
pub(super) struct Authority {
    profile: Arc<crate::modes::Profile>,
    modes: crate::modes::ModeMachine,
}

/// What a look at the project does, for the person asked at `approval = "high"`.
pub(super) fn describe_look(action: &Action) -> String {
    match action {
        Action::Read { path, .. } => format!("read {path}"),
        Action::List { dir, glob } => format!(
            "list the files of {}{}",
            dir.as_deref().unwrap_or("the workspace"),
            glob.as_deref().map(|g| format!(" matching {g}")).unwrap_or_default()
        ),
        Action::Search { pattern, .. } => format!("search the workspace for {pattern:?}"),
        other => format!("{} {}", other.name(), other.audit_arguments()),
    }
}

impl Executor {
    /// From now on the model acts as `profile`, starting in `mode` (audited as a `mode`
    /// event; a mode the machine cannot start in is audited as `mode_error` and taken all
    /// the same: the role's mode decides what the model may do).
    pub fn act_as(&self, profile: Arc<crate::modes::Profile>, mode: crate::modes::Mode) {
        let mut guard = lock(&self.authority);
        let mut modes = guard.take().map(|a| a.modes).unwrap_or_default();
        let context = self.mode_context();
        let before = modes.history().len();
        match modes.start(mode, &context) {
            // every transition taken: the way back to idle first, when there was one
            Ok(_) => modes.history()[before..].iter().for_each(|t| self.record_mode(t)),
            Err(err) => {
                self.record("mode_error", json!({"error": err.to_string()}));
                modes = crate::modes::ModeMachine::default();
                let _ = modes.start(mode, &context);
            }
        }
        *guard = Some(Authority { profile, modes });
    }

    /// The role and the mode the model acts in now.
    pub fn authority(&self) -> Option<(Arc<crate::modes::Profile>, crate::modes::Mode)> {
        lock(&self.authority).as_ref().map(|a| (Arc::clone(&a.profile), a.modes.current()))
    }

    /// The run's time waiting for a person (not counted against its time limit).
    pub fn waits(&self) -> Arc<WaitClock> {
        Arc::clone(&self.waits)
    }

    /// From now on `listener` hears of the mode changes a rejection causes.
    pub fn on_mode_change(&self, listener: ModeListener) {
        *lock(&self.mode_listener) = Some(listener);
    }

    /// The run's state as the modes' conditions see it: the files it changed, the approval
    /// level, whether tests run after a step and whether the run is committed. A step adds
    /// what it knows (its pending changes, its tests, its last error).
    pub fn mode_context(&self) -> crate::modes::ModeContext {
        let settings = &self.context.settings;
        crate::modes::ModeContext {
            files_touched: lock(&self.state).changed.len(),
            approval: format!("{:?}", self.approval()).to_lowercase(),
            auto_test: settings.test_command.is_some(),
            auto_commit: settings.auto_commit,
            ..Default::default()
        }
    }

    /// Fires an outcome's `trigger` on the run's modes (when it acts in a role) with the
    /// run's state `context`: the transition taken is audited as a `mode` event and told to
    /// the listener. A trigger with no transition from the current mode, or none whose
    /// condition holds, is audited as `mode_ignored` and changes nothing.
    pub fn fire_mode(
        &self,
        trigger: &str,
        context: &crate::modes::ModeContext,
    ) -> Option<crate::modes::Transition> {
        let mut guard = lock(&self.authority);
        let authority = guard.as_mut()?;
        let fired = authority.modes.fire(trigger, context);
        let role = authority.profile.name.clone();
        drop(guard);
        match fired {
            Ok(transition) => {
                self.told_mode(&role, &transition);
                Some(transition)
            }
            Err(err) => {
                self.record("mode_ignored", json!({"trigger": trigger, "why": err.to_string()}));
                None
            }
        }
    }

    /// The modes went back and forth between two of them more than `limit` times: the pair.
    pub fn mode_cycle(&self, limit: usize) -> Option<(crate::modes::Mode, crate::modes::Mode)> {
        lock(&self.authority).as_ref().and_then(|a| a.modes.cycle(limit))
    }

    /// A transition in the audit log, with the engine's phase it leads to (SPEC P1: the
    /// phases are read from the modes).
    fn record_mode(&self, transition: &crate::modes::Transition) {
        self.record(
            "mode",
            json!({"from": transition.from, "trigger": transition.trigger, "to": transition.to, "phase": transition.to.phase()}),
        );
    }

    fn told_mode(&self, role: &str, transition: &crate::modes::Transition) {
        self.record_mode(transition);
        if let Some(listener) = lock(&self.mode_listener).as_ref() {
            listener(role, transition.to, &transition.trigger);
        }
    }

    /// Fires `trigger` on the run's modes (when it acts in a role), audited as a `mode`
    /// event. `look_again` returns from the navigation a rejection sent it to.
    pub(super) fn shift_mode(&self, trigger: &str) {
        let mut guard = lock(&self.authority);
        let Some(authority) = guard.as_mut() else { return };
        // rejected again while looking (a read at high): it is still looking, and goes back
        // where the first rejection came from
        if trigger == "rejected" && authority.modes.current() == crate::modes::Mode::ContextNav {
            return;
        }
        if trigger != "looked_again" {
            drop(guard);
            self.fire_mode(trigger, &self.mode_context());
            return;
        }
        let fired = authority.modes.look_again();
        let role = authority.profile.name.clone();
        drop(guard);
        match fired {
            Ok(transition) => self.told_mode(&role, &transition),
            Err(err) => self.record("mode_error", json!({"error": err.to_string()})),
        }
    }

    /// Carries out an action the model asked for: first checked against the mode and the
    /// role it acts in (a refusal goes back to the model naming the rule, and is audited),
    /// then as [`Executor::execute`].
    ///
    /// At `approval = "high"` a person is asked before each look too (changes, commands and
    /// commits are asked where they are made, with what they would do). After a person
    /// rejected something the model is in context navigation until it has looked at the code
    /// again.
    pub async fn execute_for_model(&self, action: &Action) -> Result<ActionResult, LimitHit> {
        // a step that started by looking for its place (seed 000's `search_intent`) has found
        // it when it first asks to change something: on to implementation, which may
        let navigating = self.navigating();
        let looking_only = self.looking_only.load(std::sync::atomic::Ordering::Relaxed);
        if navigating == Some(Navigating::ForTheStep)
            && !looking_only
            && action.kind() == ActionKind::Write
            && self.authority().is_some_and(|(profile, _)| self.role_forbids(&profile, action).is_none())
        {
            self.fire_mode("target_found", &self.mode_context());
        }
        if let Some(rule) = self.forbidden(action) {
            // a refused action counts against the run's actions like any other
            self.count_call(action)?;
            if let Some(journal) = &self.journal {
                journal.record(
                    "refused",
                    json!({"action": action.name(), "arguments": action.audit_arguments(), "rule": rule}),
                );
            }
            if action.kind() == ActionKind::Write {
                self.record_change(action, super::ChangeFate::Refused, &rule);
            }
            return Ok(ActionResult::refused(format!("Refused: {rule}.")));
        }
        let look = action.kind() == ActionKind::Read;
        if look && self.approval() == ApprovalLevel::High {
            let request = Request::Look { action: action.name().to_string(), summary: describe_look(action) };
            if let Err(reason) = self.ask(&request, Origin::Model).await {
                self.count_call(action)?;
                return Ok(ActionResult::refused(reason));
            }
        }
        let result = self.dispatch(action, Origin::Model).await?;
        if look && result.ok && navigating == Some(Navigating::AfterRejection) {
            self.shift_mode("looked_again");
        }
        Ok(result)
    }

    /// Whether the model is in context navigation, and why: a person's rejection sent it
    /// there (it goes back once it has looked), or its step started there.
    fn navigating(&self) -> Option<Navigating> {
        let guard = lock(&self.authority);
        let modes = &guard.as_ref()?.modes;
        if modes.current() != crate::modes::Mode::ContextNav {
            return None;
        }
        let rejected = modes.history().last().is_some_and(|t| t.trigger == "rejected");
        Some(if rejected { Navigating::AfterRejection } else { Navigating::ForTheStep })
    }

    /// Asks the approver, as long as the run is not cancelled; every question and answer is
    /// audited (`approval`). A person's rejection of the model's action sends the model back
    /// to context navigation (one of the run's own — its tests, its commit — does not).
    /// `Err`: the sentence for the model.
    pub(super) async fn ask(&self, request: &Request, origin: Origin) -> Result<(), String> {
        self.ask_who(request, origin).await.map_err(|(_, sentence)| sentence)
    }

    /// As [`Executor::ask`], saying whether a person rejected it (`true`) or it was refused
    /// without one (nobody to ask, the run cancelled).
    async fn ask_who(&self, request: &Request, origin: Origin) -> Result<(), (bool, String)> {
        let decision = tokio::select! {
            decision = self.waits.time(self.context.approver.decide(&self.run_id, request)) => decision,
            () = self.cancel.cancelled() => Decision::Refuse("the run was cancelled while it waited for the user's approval".to_string()),
        };
        let (answer, reason) = match &decision {
            Decision::Approve => ("approved", None),
            Decision::Reject(reason) => ("rejected", Some(reason.as_str())),
            Decision::Refuse(reason) => ("refused", Some(reason.as_str())),
        };
        self.record(
            "approval",
            json!({"action": request.action(), "summary": request.summary(), "answer": answer, "reason": reason}),
        );
        match decision {
            Decision::Approve => Ok(()),
            Decision::Refuse(reason) => Err((false, reason)),
            Decision::Reject(reason) => {
                let back = self.authority().is_some() && origin == Origin::Model;
                if back {
                    self.shift_mode("rejected");
                }
                let mut sentence = format!("The user rejected this ({}): {reason}.", request.summary());
                if back {
                    sentence.push_str(
                        " You are in context navigation now: look at the code again (read, search, symbols, definition, callers) with that reason in mind before you change anything.",
                    );
                }
                Err((true, sentence))
            }
        }
    }

    /// Counts one action against `limits.tool_calls`; the limit is an error, audited.
    pub(super) fn count_call(&self, action: &Action) -> Result<(), LimitHit> {
        let limit = self.context.settings.limits.tool_calls;
        let mut state = lock(&self.state);
        if state.tool_calls >= limit {
            drop(state);
            let hit = LimitHit::ToolCalls(limit);
            self.record_limit(action, &hit);
            return Err(hit);
        }
        state.tool_calls += 1;
        Ok(())
    }

    /// The rule of the current mode or role that forbids `action`, if one does.
    pub(super) fn forbidden(&self, action: &Action) -> Option<String> {
        if self.looking_only.load(std::sync::atomic::Ordering::Relaxed) && action.kind() != ActionKind::Read {
            return Some(format!(
                "the request is a question: it is answered by looking, and nothing is changed or run ({})",
                action.name()
            ));
        }
        let (profile, mode) = self.authority()?;
        let kind = action.kind();
        if !mode.allowed().permits(kind) {
            let what = match kind {
                ActionKind::Read => "reading",
                ActionKind::Write => "changing files",
                ActionKind::Command if matches!(action, Action::Tool { .. }) => "calling MCP tools",
                ActionKind::Command => "running commands",
                ActionKind::Commit => "committing",
            };
            // the mode as words ("context navigation"), as the user reads it
            let mode = mode.to_string().replace('_', " ");
            return Some(format!("the {mode} mode does not allow {what} ({})", action.name()));
        }
        self.role_forbids(&profile, action)
    }

    /// The rule of the role `profile` that forbids `action`, if one does: its actions, the
    /// paths it may write, the commands it may run.
    fn role_forbids(&self, profile: &crate::modes::Profile, action: &Action) -> Option<String> {
        // an MCP server's tool by its own name: a role may be given one tool, or a server's
        let name = match action {
            Action::Tool { name, .. } => name.as_str(),
            other => other.name(),
        };
        if let Some(rule) = profile.refuses_action(name) {
            return Some(rule);
        }
        let targets: Vec<&str> = match action {
            Action::Edit { path, .. } | Action::Create { path, .. } | Action::Delete { path } => vec![path],
            Action::Rename { from, to } => vec![from, to],
            _ => Vec::new(),
        };
        for raw in targets {
            // a path the confinement refuses is refused by the action itself, with its reason
            let Ok(confined) = self.context.confinement.resolve(raw, Access::Write) else { continue };
            if let Some(rule) = profile.refuses_write(&confined.relative) {
                // the tester fixes the source a failing test shows wrong
                if profile.fixes_source && lock(&self.state).tests_failing {
                    continue;
                }
                return Some(format!("{rule}; it may change other files only while a test run fails"));
            }
        }
        if let Action::Run { command, .. } = action {
            return profile.refuses_command(command, self.context.settings.test_command.as_deref());
        }
        None
    }

    pub(super) fn record_limit(&self, action: &Action, hit: &LimitHit) {
        if let Some(journal) = &self.journal {
            journal.record("limit", json!({"action": action.name(), "limit": hit.to_string()}));
        }
    }

    /// Asks the approver about a change when the `approval` level says so (medium, high).
    pub(super) async fn approve(
        &self,
        action: &str,
        summary: String,
        diff: String,
        file: Option<ChangedFile>,
    ) -> Result<(), Stop> {
        if self.approval() < ApprovalLevel::Medium {
            return Ok(());
        }
        let request = Request::Change { action: action.to_string(), summary, diff, file };
        self.ask_who(&request, Origin::Model).await.map_err(|(rejected, sentence)| {
            if rejected { Stop::Rejected(sentence) } else { Stop::Forbidden(sentence) }
        })
    }
}
