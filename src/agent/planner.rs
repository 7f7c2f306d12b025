//! The planner (SPEC P2): asks the model for a plan for a goal — with the project's rules, a
//! view of the workspace (its rules and the files ranked for the goal, within a budget) and the user's selection — and reads
//! the reply into a [`Plan`], asking once more, with the reason, when it is not one. A prompt
//! too long for the model's context has its workspace view cut to fit (`fit.rs`).

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::fit;
use crate::model::{CallOptions, Message, Model, ModelError, Request, estimate_tokens};
use crate::run::Tokens;
use crate::run::plan::{Plan, PlanError};

/// The planner's instructions; `{max}` is the most steps a plan may have.
const SYSTEM: &str = "You are Tokamak's planner. Break the user's goal into at most {max} steps that a coding agent \
can carry out one at a time by reading, searching and editing files and running commands. Reply with a numbered list \
and nothing else: one line per step with a short imperative title, then, if useful, indented lines of detail naming \
the files, classes and functions involved. Mark a step that needs earlier steps with [depends: N] (several: \
[depends: 1, 2]). Put tests in a step of their own. Write no code.";

/// Files named in the fallback workspace view at most.
const MAX_FILES: usize = 150;

/// What a plan is made for.
pub struct PlanRequest<'a> {
    pub goal: &'a str,
    /// What the prompt shows of the workspace: its rules and the files ranked for the goal,
    /// within the context budget (`agent::workspace_context`).
    pub workspace: &'a str,
    /// What the user selected, if anything.
    pub selection: Option<Selection>,
    pub max_steps: usize,
    /// What went wrong before (a re-plan): the earlier plan and what happened.
    pub history: Option<String>,
    /// Images that came with the goal.
    pub images: &'a [crate::model::Image],
}

/// What the user selected in the editor (or the `TODO` comment they asked about), with the
/// scope it sits in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// The file, relative to the root.
    pub path: String,
    /// First and last line, 1-based.
    pub lines: (usize, usize),
    pub text: String,
    /// The enclosing definition's text (cut), when the selection is inside one.
    pub scope: Option<String>,
}

impl Selection {
    /// The selection as the prompts show it.
    pub fn describe(&self) -> String {
        let (first, last) = self.lines;
        let lines = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
        let mut out =
            format!("The user selected {lines} of {}:\n```\n{}\n```\n", self.path, self.text.trim_end());
        if let Some(scope) = &self.scope {
            out.push_str(&format!("It is inside this definition:\n```\n{}\n```\n", scope.trim_end()));
        }
        out
    }
}

/// Why no plan was made.
#[derive(Debug, thiserror::Error)]
pub enum PlanFailure {
    #[error("the model could not be used: {0}")]
    Model(#[from] ModelError),
    #[error("the model's plan could not be used: {0}")]
    Plan(PlanError),
}

/// Asks `model` for a plan; returns it (or why there is none) and the tokens spent either
/// way: a failed plan was paid for too.
pub async fn make_plan(
    model: &dyn Model,
    request: &PlanRequest<'_>,
    plan_id: &str,
    cancel: &CancellationToken,
) -> (Result<Plan, PlanFailure>, Tokens) {
    let system = SYSTEM.replace("{max}", &request.max_steps.to_string());
    let info = model.info();
    let mut view = request.workspace.to_string();
    // a server that named its context length before: the view is fitted before it goes
    if let Some(limit) = fit::learned(&info.endpoint) {
        let room = fit::room_within(Some(limit), info.max_tokens);
        let rest = estimate_tokens(&system).saturating_add(estimate_tokens(&prompt(request, "")));
        if fit::over(limit, rest.saturating_add(estimate_tokens(&view)), room) {
            fit::shrink(&mut view, fit::left(limit, rest, room));
        }
    }
    let user = |view: &str| Message::user(prompt(request, view)).with_images(request.images.to_vec());
    let mut messages = vec![Message::system(system.clone()), user(&view)];
    let mut tokens = Tokens::default();
    let mut last_error = PlanError::Empty;
    let (mut asked, mut fits) = (0, 0);
    while asked < 2 {
        let options = CallOptions { deltas: None, cancel: cancel.child_token() };
        let reply = match model.send(&Request::chat(messages.clone()), &options).await {
            Ok(reply) => reply,
            // too long for the model's context: the workspace view is cut, and asked again
            Err(ModelError::ContextTooLong { limit, .. }) if fits < fit::MAX_FITS && !view.is_empty() => {
                fits += 1;
                if let Some(limit) = limit {
                    fit::learn(&info.endpoint, limit);
                }
                let room = fit::room_within(limit, info.max_tokens);
                let shown = estimate_tokens(&view);
                let rest = estimate_tokens(&system).saturating_add(estimate_tokens(&prompt(request, "")));
                let (before, after) = fit::shrink(&mut view, fit::view_budget(limit, rest, room, shown));
                tracing::info!(
                    "{plan_id}: the prompt was too long for the model's context ({limit:?} tokens); the workspace view was cut from ~{before} to ~{after} tokens"
                );
                messages[1] = user(&view);
                continue;
            }
            Err(err) => return (Err(PlanFailure::Model(err)), tokens),
        };
        asked += 1;
        tokens.add(Tokens::of(&reply.usage));
        match Plan::read(plan_id, request.goal, &reply.text, request.max_steps) {
            Ok(plan) => return (Ok(plan), tokens),
            Err(err) => {
                tracing::info!("{plan_id}: the reply is not a plan ({err}); asking again");
                messages.push(Message::assistant(reply.text));
                messages.push(Message::user(format!("{err}. Reply with the plan only.")));
                last_error = err;
            }
        }
    }
    (Err(PlanFailure::Plan(last_error)), tokens)
}

/// The planner's message, with `view` as the workspace.
fn prompt(request: &PlanRequest<'_>, view: &str) -> String {
    let mut out = String::new();
    out.push_str(view);
    if let Some(selection) = &request.selection {
        out.push('\n');
        out.push_str(&selection.describe());
    }
    if let Some(history) = &request.history {
        out.push_str(&format!(
            "\nAn earlier plan for this goal did not work out:\n{history}\nPlan what is left to do.\n"
        ));
    }
    // seed 000's migration mode: planned in stages, each checked before the next
    if crate::modes::intent(request.goal).is_some_and(|(mode, _)| mode == crate::modes::Mode::Migration) {
        out.push_str(&format!("\n{MIGRATION}\n"));
    }
    out.push_str(&format!("\nGoal: {}", request.goal));
    out
}

/// What a migration's planner is told.
const MIGRATION: &str = "This goal is a migration: plan it in stages, each a step that moves one part to the new API or version and leaves the code working (the checkers and the whole test suite run after each stage); the old way is removed only in the last stage.";

/// The workspace's files (those `.gitignore` keeps), up to a limit, saying how many were left
/// out: what a prompt shows when there is no index.
pub fn workspace_view(root: &Path) -> String {
    let files = crate::walk::project(root).relative_files();
    let total = files.len();
    let mut out = format!("The workspace has {total} files:\n");
    for file in files.iter().take(MAX_FILES) {
        out.push_str(file);
        out.push('\n');
    }
    if total > MAX_FILES {
        out.push_str(&format!("(and {} more)\n", total - MAX_FILES));
    }
    out
}
