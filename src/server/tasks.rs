//! The task agent's commands: `tokamak.plan {goal, uri?, range?}` (answered off the message
//! queue, when the plan is made), `tokamak.implement {plan_id}` and `tokamak.run {goal, uri?,
//! range?}` (each a run, answered `{run_id}` at once); plans go out as `tokamak/planUpdated`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types as lsp;
use url::Url;

use super::error::Refusal;
use super::{Backend, convert};
use crate::agent::{self, Selection, TaskContext, TaskRequest};
use crate::editor::{MessageLevel, RunEvent};
use crate::run::plan::Plan;
use crate::sync::lock;
use crate::syntax::{document_symbols, enclosing_symbol};
use crate::text::line_col_to_offset;

/// The plans made in this session, by id, for `tokamak.implement`.
#[derive(Clone, Default)]
pub struct Plans(Arc<Mutex<PlanBook>>);

impl Plans {
    fn insert(&self, plan: Plan) {
        let mut plans = lock(&self.0);
        plans.made += 1;
        let order = plans.made;
        plans.by_id.insert(plan.plan_id.clone(), (order, plan));
    }

    fn get(&self, id: &str) -> Option<Plan> {
        lock(&self.0).by_id.get(id).map(|(_, plan)| plan.clone())
    }

    fn last(&self) -> Option<Plan> {
        lock(&self.0).by_id.values().max_by_key(|(order, _)| *order).map(|(_, plan)| plan.clone())
    }
}

#[derive(Default)]
struct PlanBook {
    /// Each plan with the order it was made in.
    by_id: HashMap<String, (u64, Plan)>,
    made: u64,
}

/// `{goal, uri?, range?}`, or the goal alone as a string (what Helix's
/// `:lsp-workspace-command tokamak.run "…"` sends).
#[derive(Deserialize)]
#[serde(from = "GoalForm")]
pub struct GoalArgs {
    /// What to do, in words.
    goal: String,
    /// The document the user was in, and their selection in it.
    uri: Option<Url>,
    range: Option<lsp::Range>,
    /// The role to act in (`architect`, `coder`, `tester`, `reviewer`, `documenter`, or one
    /// the workspace adds); without one, each step is routed by its words.
    role: Option<String>,
    /// What the run asks before it acts: `accept_edits`, `ask_everything`, or `default` (the
    /// settings' `approval`), as the panel's picker says.
    approval: Option<String>,
    /// Whether the workspace's conversation so far goes with the goal (the default), so that
    /// "now also …" means what came before.
    conversation: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum GoalForm {
    Goal(String),
    Full {
        goal: String,
        uri: Option<Url>,
        range: Option<lsp::Range>,
        role: Option<String>,
        approval: Option<String>,
        conversation: Option<bool>,
    },
}

impl From<GoalForm> for GoalArgs {
    fn from(form: GoalForm) -> Self {
        match form {
            GoalForm::Goal(goal) => {
                GoalArgs { goal, uri: None, range: None, role: None, approval: None, conversation: true }
            }
            GoalForm::Full { goal, uri, range, role, approval, conversation } => {
                GoalArgs { goal, uri, range, role, approval, conversation: conversation.unwrap_or(true) }
            }
        }
    }
}

/// `{plan_id}`; without one, the plan made last in this session.
#[derive(Deserialize, Default)]
pub struct ImplementArgs {
    plan_id: Option<String>,
}

/// The enclosing definition shown beside a selection, at most.
const MAX_SCOPE_BYTES: usize = 8 * 1024;

impl Backend {
    fn task_context(&self) -> Result<TaskContext> {
        let choice = lock(&self.models).clone();
        self.session().and_then(|s| s.task_context_with(&choice)).ok_or_else(|| {
            Error::invalid_params("a task needs a workspace folder to act on, and this session has none")
        })
    }

    /// The selected text of `uri` in `range` (or the whole line under an empty range), with
    /// the file's path relative to the root and the definition it sits in.
    fn selection(&self, uri: Option<&Url>, range: Option<lsp::Range>) -> Option<Selection> {
        let (uri, range) = (uri?, range?);
        let snapshot = self.workspace().snapshot(uri)?;
        let encoding = self.encoding();
        let rope = &snapshot.rope;
        let start = line_col_to_offset(rope, convert::line_col(range.start), encoding).offset;
        let end = line_col_to_offset(rope, convert::line_col(range.end), encoding).offset;
        let (mut start, mut end) = (start.min(end), start.max(end));
        if start == end {
            let line = rope.byte_to_line(start);
            start = rope.line_to_byte(line);
            end = rope.line_to_byte((line + 1).min(rope.len_lines()));
        }
        let text = rope.byte_slice(start..end).to_string();
        let first = rope.byte_to_line(start) + 1;
        let last = rope.byte_to_line(end.saturating_sub(1).max(start)) + 1;
        let scope = snapshot.tree.as_ref().and_then(|tree| {
            let symbols = document_symbols(tree, rope, snapshot.language);
            let chain = enclosing_symbol(&symbols, start);
            let symbol = chain.last()?;
            let (from, to) = (symbol.range.start, symbol.range.end.min(rope.len_bytes()));
            // a selection of the whole definition needs no scope beside it
            if from >= start && to <= end {
                return None;
            }
            Some(crate::text::cut(&rope.byte_slice(from..to).to_string(), MAX_SCOPE_BYTES))
        });
        let path = agent::display_path(self.root().as_deref(), uri);
        Some(Selection { path, lines: (first, last), text, scope })
    }
}

/// `tokamak.plan {goal, uri?, range?}`: the plan, `{plan_id, goal, steps}`, when the model has
/// made it (the transport answers it off the queue).
pub fn plan(backend: &Backend, args: GoalArgs) -> Result<futures::future::BoxFuture<'static, Result<Value>>> {
    let mut context = backend.task_context()?;
    let selection = backend.selection(args.uri.as_ref(), args.range);
    let plans = backend.plans.clone();
    let (models, reading) = (Arc::clone(&backend.models), Arc::clone(&backend.reading_configuration));
    let editor = Arc::clone(&context.executor.editor);
    let goal = args.goal.trim().to_string();
    if goal.is_empty() {
        return Err(Error::invalid_params("the goal is empty: say what Tokamak should plan"));
    }
    Ok(Box::pin(async move {
        // a plan asked for as the session starts uses the editor's settings, once read
        context.model =
            super::configuration::settled_models(models, reading).await.connect(Some(agent::FIX_ROLE));
        let plan_id = crate::session::new_plan_id();
        let cancel = tokio_util::sync::CancellationToken::new();
        match agent::plan_goal(&context, &goal, selection, &[], &plan_id, &cancel).await {
            Ok((plan, tokens)) => {
                plans.insert(plan.clone());
                editor.run_event(&plan.plan_id, &RunEvent::Plan(plan.clone())).await;
                let mut value = serde_json::to_value(&plan).unwrap_or(Value::Null);
                value["tokens"] = json!({"prompt": tokens.prompt, "completion": tokens.completion, "cached": tokens.cached});
                Ok(value)
            }
            Err(err) => {
                let message = format!("Tokamak could not make a plan: {err}");
                editor.show_message(MessageLevel::Warning, message.clone()).await;
                Err(Refusal::Failed(message).into())
            }
        }
    }))
}

/// `tokamak.implement {plan_id}`: carries out a plan made with `tokamak.plan`; `{run_id}`.
pub async fn implement(backend: &Backend, args: ImplementArgs) -> Result<Value> {
    let plan = match &args.plan_id {
        Some(id) => backend.plans.get(id).ok_or_else(|| {
            Error::invalid_params(format!("there is no plan {id}; make one with tokamak.plan"))
        })?,
        None => backend.plans.last().ok_or_else(|| {
            Error::invalid_params("no plan was made in this session; make one with tokamak.plan first")
        })?,
    };
    let request = TaskRequest {
        goal: plan.goal.clone(),
        plan_id: plan.plan_id.clone(),
        plan: Some(plan),
        selection: None,
        role: None,
        conversation: turns(backend).await,
        images: Vec::new(),
    };
    start(backend, request, None).await
}

/// `tokamak.run {goal, uri?, range?, role?, approval?, conversation?}`: plans and carries out
/// the plan (a question is answered, read-only), the workspace's conversation so far with it;
/// `{run_id}`.
pub async fn run(backend: &Backend, args: GoalArgs) -> Result<Value> {
    let goal = args.goal.trim().to_string();
    if goal.is_empty() {
        return Err(Error::invalid_params("the goal is empty: say what Tokamak should do"));
    }
    let selection = backend.selection(args.uri.as_ref(), args.range);
    let request = TaskRequest {
        goal,
        plan: None,
        selection,
        plan_id: crate::session::new_plan_id(),
        role: args.role,
        conversation: if args.conversation { turns(backend).await } else { Vec::new() },
        images: Vec::new(),
    };
    let approval = match args.approval.as_deref() {
        None | Some("default") => None,
        Some(value @ ("accept_edits" | "ask_everything")) => crate::config::ApprovalLevel::picked(value),
        Some("plan") => {
            return Err(Error::invalid_params(
                "approval \"plan\" carries nothing out: ask tokamak.plan for the plan",
            ));
        }
        Some(other) => {
            return Err(Error::invalid_params(format!(
                "approval {other:?} is not one of default, accept_edits, ask_everything"
            )));
        }
    };
    start(backend, request, approval).await
}

/// Starts the task run; its goal and ending join the workspace's conversation.
async fn start(
    backend: &Backend,
    request: TaskRequest,
    approval: Option<crate::config::ApprovalLevel>,
) -> Result<Value> {
    let mut context = backend.task_context()?;
    if approval.is_some() {
        context.approval = approval;
    }
    let root = Url::from_directory_path(context.executor.confinement.root())
        .map_err(|()| Error::invalid_params("the workspace root is not a path"))?;
    let handle = super::runs::start(backend, &root).await?;
    let run_id = handle.run_id.clone();
    tracing::info!("{run_id}: task {:?}", request.goal);
    let editor = Arc::clone(&context.executor.editor);
    let plan_id = request.plan_id.clone();
    let summary = "Tokamak stopped on an internal error (see the log).";
    let (conversation, runs) = (backend.conversation(), backend.runs.clone());
    // the run's turn is owed from now: a follow-up sent as its ending shows waits for it
    let pending = conversation.as_ref().map(|c| c.begin());
    crate::session::spawn_run(editor, run_id.clone(), root, summary, async move {
        let goal = request.goal.clone();
        let report = agent::run_task(&context, request, handle).await;
        runs.ended(&report);
        if let Some(conversation) = conversation {
            conversation.remember(&goal, &report);
        }
        drop(pending);
    });
    Ok(json!({"run_id": run_id, "plan_id": plan_id}))
}

/// The workspace's conversation: with the turn of a task run that just ended, which is
/// remembered a moment after its ending is sent (not waited for while a run is still going:
/// the message queue must not wait on a run).
async fn turns(backend: &Backend) -> Vec<agent::Turn> {
    let Some(conversation) = backend.conversation() else { return Vec::new() };
    let root = backend.executor_context().and_then(|e| Url::from_directory_path(e.confinement.root()).ok());
    let running = backend.runs.list().into_iter().any(|(_, uri, _)| Some(&uri) == root.as_ref());
    if running { conversation.turns() } else { conversation.settled_turns().await }
}

/// `tokamak.conversation`: the workspace's conversation, `{turns: [{asked, answered}]}`.
pub async fn conversation(backend: &Backend) -> Value {
    let turns = turns(backend).await;
    json!({"turns": turns})
}

/// `tokamak.compact {clear?}`: the workspace's conversation compacted into one turn, or
/// forgotten (`clear: true`, a new conversation); `{turns, message}`.
pub async fn compact(backend: &Backend, args: Option<CompactArgs>) -> Result<Value> {
    let clear = args.is_some_and(|a| a.clear);
    let conversation = backend
        .conversation()
        .ok_or_else(|| Error::invalid_params("this session has no workspace folder, so no conversation"))?;
    turns(backend).await;
    let message = if clear {
        match conversation.clear() {
            0 => "A new conversation: there was nothing to forget.".to_string(),
            n => format!("A new conversation: {n} earlier request(s) forgotten."),
        }
    } else {
        match conversation.compact() {
            0 => "There is no conversation to compact yet.".to_string(),
            1 => "The conversation is one request; nothing to compact.".to_string(),
            n => format!("The conversation's {n} requests are compacted into one."),
        }
    };
    Ok(json!({"turns": conversation.turns().len(), "message": message}))
}

#[derive(Deserialize, Default)]
pub struct CompactArgs {
    #[serde(default)]
    clear: bool,
}
