//! `workspace/executeCommand`: the `tokamak.*` commands.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::ExecuteCommandParams;
use url::Url;

use super::transport::DEFERRED_COMMANDS;
use super::{Backend, convert};

/// The commands advertised at `initialize`. The planner's commands (`tokamak.plan`, …) join
/// as they are built.
pub const COMMANDS: &[&str] = &[
    "tokamak.fix",
    "tokamak.plan",
    "tokamak.implement",
    "tokamak.run",
    "tokamak.cancel",
    "tokamak.approve",
    "tokamak.reject",
    "tokamak.status",
    "tokamak.diagnostics",
    "tokamak.checkModel",
    "tokamak.context",
    "tokamak.checkpoints",
    "tokamak.rollback",
    "tokamak.conversation",
    "tokamak.compact",
    "tokamak.pickers",
];

/// `tokamak.checkModel` waits no longer than this, whatever the model's own timeout.
const CHECK_MODEL_TIMEOUT: Duration = Duration::from_secs(20);

/// Panics on purpose, to prove a panicking handler does not take the server down. Only
/// accepted when `TOKAMAK_DEBUG_COMMANDS=1` is set in the server's environment.
const DEBUG_PANIC: &str = "tokamak.debug.panic";

pub async fn execute_command(backend: &Backend, params: ExecuteCommandParams) -> Result<Option<Value>> {
    let command = params.command.clone();
    let result = answer(backend, params).await;
    if let Ok(Some(value)) = &result {
        shown(backend, &command, value);
    }
    result
}

/// An editor that drops what a command answers (Helix) is shown it another way.
fn shown(backend: &Backend, command: &str, value: &Value) {
    if backend.support.get().is_some_and(|s| s.drops_results) {
        let (client, command, value) = (backend.client.clone(), command.to_string(), value.clone());
        tokio::spawn(async move { super::answers::show(&client, &command, &value).await });
    }
}

async fn answer(backend: &Backend, params: ExecuteCommandParams) -> Result<Option<Value>> {
    match params.command.as_str() {
        "tokamak.fix" => super::runs::fix(backend, argument(params.arguments)?).await.map(Some),
        "tokamak.run" => super::tasks::run(backend, goal("tokamak.run", params.arguments)?).await.map(Some),
        "tokamak.implement" => {
            let args = argument::<Option<super::tasks::ImplementArgs>>(params.arguments)?;
            super::tasks::implement(backend, args.unwrap_or_default()).await.map(Some)
        }
        super::code_action::ASK_GOAL => Err(Error::invalid_params(
            "this editor cannot ask for a goal; run tokamak.plan or tokamak.run with the goal as its argument \
             (in Helix: :lsp-workspace-command tokamak.run \"what to do\")",
        )),
        "tokamak.cancel" => Ok(Some(super::runs::cancel(backend, argument(params.arguments)?))),
        "tokamak.approve" => {
            let args = answer_args("tokamak.approve", params.arguments)?;
            let answered = backend.approvals.answer(args.id.as_deref(), crate::executor::Decision::Approve);
            answered.map(Some).map_err(Error::invalid_params)
        }
        "tokamak.reject" => {
            let args = answer_args("tokamak.reject", params.arguments)?;
            let reason = args
                .reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "the user rejected it".to_string());
            let answered =
                backend.approvals.answer(args.id.as_deref(), crate::executor::Decision::Reject(reason));
            answered.map(Some).map_err(Error::invalid_params)
        }
        "tokamak.conversation" => Ok(Some(super::tasks::conversation(backend).await)),
        "tokamak.compact" => super::tasks::compact(backend, argument(params.arguments)?).await.map(Some),
        "tokamak.checkpoints" => {
            super::checkpoints::checkpoints(backend, argument(params.arguments)?).await.map(Some)
        }
        "tokamak.rollback" => {
            super::checkpoints::rollback(backend, argument(params.arguments)?).await.map(Some)
        }
        // the transport answers these off the queue (see `deferred`); reached only if it did not
        command if DEFERRED_COMMANDS.contains(&command) => {
            let work = deferred_work(backend, command, params.arguments)?;
            work.await.map(Some)
        }
        DEBUG_PANIC if debug_commands_enabled() => panic!("{DEBUG_PANIC} was asked to panic"),
        other => Err(Error::invalid_params(format!("unknown command {other:?}"))),
    }
}

/// A `workspace/executeCommand` the transport took off the one-at-a-time queue: it waits on
/// checkers or the model, so it runs on its own task and answers through the outbox, while
/// the editor's next messages (keystrokes) are handled meanwhile.
#[derive(Deserialize)]
pub struct DeferredParams {
    id: Value,
    command: String,
    #[serde(default)]
    arguments: Value,
}

pub async fn deferred(backend: &Backend, params: DeferredParams) {
    let arguments = match params.arguments {
        Value::Array(arguments) => arguments,
        Value::Null => Vec::new(),
        other => vec![other],
    };
    let outbox = backend.outbox.clone();
    let id = params.id;
    let drops = backend.support.get().is_some_and(|s| s.drops_results);
    let (client, command) = (backend.client.clone(), params.command.clone());
    match deferred_work(backend, &params.command, arguments) {
        Err(err) => outbox.error(id, err.code.code(), &err.message),
        Ok(work) => {
            tokio::spawn(async move {
                match work.await {
                    Ok(value) => {
                        if drops {
                            super::answers::show(&client, &command, &value).await;
                        }
                        outbox.result(id, value)
                    }
                    Err(err) => outbox.error(id, err.code.code(), &err.message),
                }
            });
        }
    }
}

/// The work of a deferred command, owning what it needs.
fn deferred_work(
    backend: &Backend,
    command: &str,
    arguments: Vec<Value>,
) -> Result<futures::future::BoxFuture<'static, Result<Value>>> {
    match command {
        "tokamak.diagnostics" => diagnostics(backend, argument(arguments)?).map(|f| Box::pin(f) as _),
        "tokamak.checkModel" => Ok(Box::pin(check_model(backend, argument(arguments)?))),
        "tokamak.status" => Ok(Box::pin(status_with_sandbox(backend))),
        "tokamak.pickers" => Ok(Box::pin(pickers(backend))),
        "tokamak.plan" => super::tasks::plan(backend, goal("tokamak.plan", arguments)?),
        "tokamak.context" => super::context::context(backend, argument(arguments)?),
        other => Err(Error::invalid_params(format!("unknown command {other:?}"))),
    }
}

/// The goal of `tokamak.plan` and `tokamak.run`: `{goal, uri?, range?}` or a string.
fn goal(command: &str, arguments: Vec<Value>) -> Result<super::tasks::GoalArgs> {
    match arguments.into_iter().next() {
        None | Some(Value::Null) => Err(Error::invalid_params(format!(
            "{command} needs a goal: pass {{\"goal\": \"what to do\"}} or the goal as a string"
        ))),
        Some(value) => serde_json::from_value(value).map_err(|_| {
            Error::invalid_params(format!(
                "{command} takes {{\"goal\", \"uri\"?, \"range\"?}} or the goal as a string"
            ))
        }),
    }
}

/// The argument of `tokamak.approve` and `tokamak.reject`.
fn answer_args(command: &str, arguments: Vec<Value>) -> Result<super::approvals::AnswerArgs> {
    let value = arguments.into_iter().next().unwrap_or(Value::Null);
    super::approvals::AnswerArgs::from_value(value)
        .map_err(|err| Error::invalid_params(format!("{command} {err}")))
}

/// Commands take one JSON object as their argument.
fn argument<T: serde::de::DeserializeOwned>(arguments: Vec<Value>) -> Result<T> {
    let value = arguments.into_iter().next().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|err| Error::invalid_params(format!("bad command argument: {err}")))
}

fn status(backend: &Backend) -> Value {
    let trust = backend.session().map(|s| &s.trust);
    let model = match crate::sync::lock(&backend.models).config(None) {
        Ok(config) => json!({
            "name": config.model,
            "provider": format!("{:?}", config.provider).to_lowercase(),
            "endpoint": config.base_url,
        }),
        Err(err) => json!({"error": err.to_string()}),
    };
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "model": model,
        "recentRuns": backend.runs.recent(),
        // which checkers run on each open document, and which apply but are not installed
        "checkers": backend.observer().map(|observer| {
            let snapshots = backend.workspace().snapshots();
            snapshots
                .into_iter()
                .map(|snapshot| {
                    let coverage = observer.coverage(&snapshot);
                    let name = snapshot.path().and_then(|p| p.file_name().map(|n| n.to_string_lossy().to_string()));
                    let mut line = format!("{}: {}", name.unwrap_or_default(), coverage.checkers.join(", "));
                    if coverage.checkers.is_empty() {
                        line.push_str("syntax only");
                    }
                    if !coverage.not_found.is_empty() {
                        line.push_str(&format!(" (not installed: {})", coverage.not_found.join(", ")));
                    }
                    line
                })
                .collect::<Vec<_>>()
        }),
        "positionEncoding": backend.encoding().lsp_name(),
        "openDocuments": backend.workspace().open_documents(),
        "parses": backend.workspace().parse_counts(),
        "runs": super::runs::list(backend),
        "trusted": trust.is_some_and(|t| t.trusted),
        "trust": trust.map(|t| t.source.clone()),
        "auditLogs": backend.history().map(|h| h.audit_dir()),
        "context": super::context::status(backend),
        "approvals": backend.approvals.waiting(),
        "approval": backend.executor_context().map(|e| e.settings.approval.name()),
        // each MCP server and where it is: "ready (3 tools)", "starting", "down: why"
        "mcpServers": backend
            .session()
            .and_then(|s| s.mcp.as_ref())
            .map(|hub| hub.status().into_iter().collect::<std::collections::BTreeMap<_, _>>()),
    })
}

/// `tokamak.status` with where the model's commands run, as `tokamak sandbox` says it: finding
/// a container engine runs its CLI, so it is found off the message queue.
fn status_with_sandbox(
    backend: &Backend,
) -> impl std::future::Future<Output = Result<Value>> + Send + 'static {
    let mut value = status(backend);
    let settings = backend.executor_context().map(|e| e.settings.sandbox.clone());
    async move {
        if let Some(settings) = settings {
            let said = tokio::task::spawn_blocking(move || match crate::executor::placement(&settings) {
                Ok(placement) => placement.describe().to_string(),
                Err(err) => err.to_string(),
            });
            value["sandbox"] = json!(said.await.unwrap_or_default());
        }
        Ok(value)
    }
}

#[derive(Deserialize)]
struct DiagnosticsArgs {
    uri: Url,
    /// Run every checker on the current version and wait for all of them (the fix loop's
    /// "observe" step); answered off the message queue, so keystrokes go on meanwhile.
    #[serde(default)]
    wait: bool,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    30_000
}

/// `tokamak.diagnostics {uri, wait?, timeout_ms?}`: every source's diagnostics for the
/// document (the editor's own included), with which sources failed or did not answer.
fn diagnostics(
    backend: &Backend,
    args: DiagnosticsArgs,
) -> Result<impl std::future::Future<Output = Result<Value>> + Send + 'static> {
    let observer = backend.observer().ok_or_else(Error::internal_error)?.clone();
    let snapshot = backend
        .workspace()
        .snapshot(&args.uri)
        .ok_or_else(|| Error::invalid_params(format!("{} is not open", args.uri)))?;
    let encoding = backend.encoding();
    Ok(async move {
        let (diagnostics, failures, missing) = if args.wait {
            let settled = observer
                .settled(&args.uri, snapshot.version, Duration::from_millis(args.timeout_ms))
                .await
                .map_err(|err| Error::invalid_params(err.to_string()))?;
            (settled.diagnostics, settled.failures, settled.missing)
        } else {
            (observer.diagnostics(&args.uri), Vec::new(), Vec::new())
        };
        let uri = convert::uri(&snapshot.uri).ok_or_else(|| {
            Error::invalid_params(format!("{} cannot be said in the protocol", snapshot.uri))
        })?;
        let diagnostics: Vec<_> =
            diagnostics.iter().map(|d| convert::diagnostic(&uri, &snapshot.rope, d, encoding)).collect();
        let failures: Vec<_> = failures
            .into_iter()
            .map(|(source, reason)| json!({"source": source, "reason": reason}))
            .collect();
        Ok(json!({
            "uri": args.uri,
            "version": snapshot.version,
            "diagnostics": diagnostics,
            "failures": failures,
            "missing": missing,
        }))
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CheckModelArgs {
    /// Check the model of this role's profile.
    role: Option<String>,
}

/// `tokamak.checkModel {role?}`: one tiny request to the configured model. Answers
/// `{ok: true, provider, endpoint, model, latency_ms, prompt_tokens, completion_tokens,
/// estimated, reply}` or `{ok: false, error}` (a model that cannot be reached is an answer,
/// not a protocol error).
fn check_model(
    backend: &Backend,
    args: Option<CheckModelArgs>,
) -> impl std::future::Future<Output = Result<Value>> + Send + 'static {
    let args = args.unwrap_or_default();
    let models = Arc::clone(&backend.models);
    let reading = Arc::clone(&backend.reading_configuration);
    async move {
        let choice = super::configuration::settled_models(models, reading).await;
        check_model_with(choice, args).await
    }
}

async fn check_model_with(choice: super::ModelChoice, args: CheckModelArgs) -> Result<Value> {
    let result = match choice.config(args.role.as_deref()) {
        Ok(mut config) => {
            config.timeout = config.timeout.min(CHECK_MODEL_TIMEOUT);
            crate::model::run_check(config, false).await
        }
        Err(err) => Err(err),
    };
    Ok(match result {
        Ok(check) => json!({
            "ok": true,
            "provider": check.provider,
            "endpoint": check.endpoint,
            "model": check.model,
            "latency_ms": check.reply.latency.as_millis() as u64,
            "prompt_tokens": check.reply.usage.prompt_tokens,
            "completion_tokens": check.reply.usage.completion_tokens,
            "estimated": check.reply.usage.estimated,
            "reply": check.reply.text,
        }),
        Err(err) => {
            tracing::warn!("model check: {err}");
            json!({"ok": false, "error": err.to_string()})
        }
    })
}

/// `tokamak.pickers`: what a panel's pickers offer — `{roles: [{id, name, description}],
/// approvals: [{id, name, description}], model, served: [name]}`: the roles (`auto` first), the
/// approval levels (the settings' first), the model in use and those its server says it serves
/// (`/v1/models`, Ollama's tags).
fn pickers(backend: &Backend) -> impl std::future::Future<Output = Result<Value>> + Send + 'static {
    let models = Arc::clone(&backend.models);
    let reading = Arc::clone(&backend.reading_configuration);
    let named = |(id, name, description): (String, String, String)| json!({"id": id, "name": name, "description": description});
    let roles: Vec<Value> =
        backend.session().map(|s| s.roles()).unwrap_or_default().into_iter().map(named).collect();
    let approvals: Vec<Value> = crate::config::APPROVAL_PICKER
        .iter()
        .map(|(id, name, description)| named((id.to_string(), name.to_string(), description.to_string())))
        .collect();
    async move {
        let choice = super::configuration::settled_models(models, reading).await;
        let model = choice.config(None).map(|config| config.model).unwrap_or_default();
        let served = match choice.connect(None) {
            Ok(connected) => {
                tokio::time::timeout(CHECK_MODEL_TIMEOUT, connected.served()).await.unwrap_or_default()
            }
            Err(_) => Vec::new(),
        };
        Ok(json!({"roles": roles, "approvals": approvals, "model": model, "served": served}))
    }
}

fn debug_commands_enabled() -> bool {
    std::env::var("TOKAMAK_DEBUG_COMMANDS").is_ok_and(|v| v == "1")
}
