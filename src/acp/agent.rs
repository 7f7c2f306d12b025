//! What Tokamak answers an ACP client: `initialize`, `session/new` (the one session of
//! [`crate::session`] with the client's editor and approver), `session/prompt` (the task agent
//! on the prompt, its run rendered as updates, ended with the stop reason its exit says) and
//! `session/cancel`; one prompt at a time per session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::v1::Error as RpcError;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::commands;
use super::editor::{AcpApprover, AcpEditor, ClientCan};
use super::options::{self, Picked};
use super::store::Store;
use crate::agent::{Runs, TaskRequest, run_task};
use crate::config::Settings;
use crate::jsonrpc::Connection;
use crate::run::ExitReason;
use crate::session::{FrontEnd, Options, Session, new_plan_id};
use crate::sync::lock;

/// The JSON-RPC code of a request the agent cannot take now (a prompt while one runs, a
/// session reopened while its prompt runs). Not -32000: ACP means "authentication required"
/// by that, and a client would ask the user to sign in.
const BUSY: i32 = -32001;
/// Bytes of text one prompt may carry (its embedded resources included).
const MAX_PROMPT_BYTES: usize = 512 * 1024;
/// Images one prompt may carry, and the base64 bytes of each (about 7.5 MB of image).
const MAX_IMAGES: usize = 8;
const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// The agent side of one connection: what the client can do, and its sessions.
pub struct Agent {
    pub connection: Arc<Connection>,
    can: Mutex<ClientCan>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// Where sessions are kept between connections.
    store: Store,
}

/// One ACP session: a Tokamak session over its `cwd`, and the prompt going on.
struct AcpSession {
    session: Session,
    editor: Arc<AcpEditor>,
    runs: Runs,
    root_uri: url::Url,
    /// The prompt going on: its cancel.
    prompt: Mutex<Option<CancellationToken>>,
    /// What `session/new` asked that Tokamak does not do, said with the first prompt.
    notes: Mutex<Vec<String>>,
    /// The role and model the user picked.
    picked: Mutex<Picked>,
    /// Each model's context window once its settings or its server named it, by endpoint and
    /// model (a prompt connects its model anew).
    windows: Mutex<std::collections::HashMap<String, u32>>,
    /// The session's earlier prompts and how each ended (kept in the store across restarts).
    conversation: Mutex<Vec<crate::agent::Turn>>,
    /// The models the settings' server serves, once it said (the model picker offers them).
    served: Mutex<Vec<String>>,
    id: String,
}

impl AcpSession {
    fn config_options(&self) -> Vec<acp::SessionConfigOption> {
        options::config_options(&self.session, &lock(&self.picked), &lock(&self.served))
    }

    fn modes(&self) -> acp::SessionModeState {
        options::modes(&self.session, &lock(&self.picked))
    }

    /// The prompt's model's context window, asked of its server once it is not known yet.
    async fn window(&self, model: &dyn crate::model::Model) -> Option<u32> {
        let info = model.info();
        let key = format!("{} {}", info.endpoint, info.model);
        if let Some(window) = lock(&self.windows).get(&key) {
            return Some(*window);
        }
        let window = model.context_window().await?;
        lock(&self.windows).insert(key, window);
        Some(window)
    }
}

fn invalid_params(reason: impl std::fmt::Display) -> RpcError {
    RpcError::invalid_params().data(json!(reason.to_string()))
}

fn params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(params).map_err(invalid_params)
}

fn result(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(RpcError::into_internal_error)
}

impl Agent {
    pub fn new(connection: Arc<Connection>) -> Agent {
        Agent { connection, can: Mutex::default(), sessions: Mutex::default(), store: Store::new() }
    }

    /// Answers a request.
    pub async fn handle(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => self.initialize(params),
            "session/new" => self.new_session(params),
            "session/load" => self.load_session(params),
            "session/resume" => self.resume_session(params),
            "session/close" => self.close_session(params),
            "session/list" => self.list_sessions(params),
            "session/set_config_option" => self.set_config_option(params),
            "session/set_mode" => self.set_mode(params),
            "session/prompt" => self.prompt(params).await,
            _ => Err(RpcError::method_not_found().data(json!(format!("Tokamak does not serve {method}")))),
        }
    }

    /// What follows an answer: a session begun, loaded or resumed learns its slash commands.
    /// `requested`: the session the request named.
    pub fn after(&self, method: &str, requested: Option<&str>, answer: &Result<Value, RpcError>) {
        let Ok(result) = answer else { return };
        let id = match method {
            "session/new" => result["sessionId"].as_str(),
            "session/load" | "session/resume" => requested,
            _ => None,
        };
        if let Some(session) = id.and_then(|id| lock(&self.sessions).get(id).cloned()) {
            session.editor.send(commands::available());
            // the models the server serves join the model picker when it says (beside the
            // session: a slow or silent server holds nothing)
            let picked = lock(&session.picked).clone();
            if let Ok(model) =
                options::models(&session.session, &picked).connect(Some(crate::agent::FIX_ROLE))
            {
                tokio::spawn(async move {
                    let served = model.served().await;
                    if served.is_empty() {
                        return;
                    }
                    *lock(&session.served) = served;
                    let options = session.config_options();
                    session
                        .editor
                        .send(acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(options)));
                });
            }
        }
    }

    /// Takes a notification; an unknown one is logged and dropped, as JSON-RPC says.
    pub fn notified(&self, method: &str, params: Value) {
        match method {
            "session/cancel" => match serde_json::from_value::<acp::CancelNotification>(params) {
                Ok(cancel) => {
                    let session = lock(&self.sessions).get(&*cancel.session_id.0).cloned();
                    if let Some(token) = session.and_then(|s| lock(&s.prompt).clone()) {
                        token.cancel();
                    }
                }
                Err(err) => tracing::warn!("acp: a session/cancel that could not be read: {err}"),
            },
            other => tracing::debug!("acp: ignored the notification {other}"),
        }
    }

    /// The client has gone: every prompt stops.
    pub fn shutdown(&self) {
        for session in lock(&self.sessions).values() {
            if let Some(token) = lock(&session.prompt).as_ref() {
                token.cancel();
            }
        }
    }

    fn initialize(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::InitializeRequest = params(params_)?;
        let fs = &request.client_capabilities.fs;
        *lock(&self.can) = ClientCan {
            read_text_file: fs.read_text_file,
            write_text_file: fs.write_text_file,
            terminal: request.client_capabilities.terminal,
        };
        let sessions = acp::SessionCapabilities::new()
            .list(acp::SessionListCapabilities::new())
            .resume(acp::SessionResumeCapabilities::new())
            .close(acp::SessionCloseCapabilities::new());
        let capabilities = acp::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(acp::PromptCapabilities::new().embedded_context(true).image(true))
            .mcp_capabilities(acp::McpCapabilities::new().http(true).sse(true))
            .session_capabilities(sessions);
        let info =
            acp::Implementation::new("tokamak", env!("CARGO_PKG_VERSION")).title("Tokamak".to_string());
        result(
            acp::InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .agent_info(info),
        )
    }

    fn new_session(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::NewSessionRequest = params(params_)?;
        let id = format!("tokamak-{:012x}", fastrand::u64(..1 << 48));
        let session = self.open(&id, &request.cwd, &request.mcp_servers, &request.additional_directories)?;
        result(
            acp::NewSessionResponse::new(id).config_options(session.config_options()).modes(session.modes()),
        )
    }

    /// `session/load`: the kept session again, its updates replayed before the answer.
    fn load_session(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::LoadSessionRequest = params(params_)?;
        let id = request.session_id.0.to_string();
        self.store.find(&id).ok_or_else(|| RpcError::session_not_found(request.session_id.clone()))?;
        let updates = self.store.updates(&id);
        let session = self.open(&id, &request.cwd, &request.mcp_servers, &request.additional_directories)?;
        for update in updates {
            session.editor.replay(update);
        }
        result(
            acp::LoadSessionResponse::new().config_options(session.config_options()).modes(session.modes()),
        )
    }

    /// `session/resume`: the kept session again, without a replay.
    fn resume_session(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::ResumeSessionRequest = params(params_)?;
        let id = request.session_id.0.to_string();
        self.store.find(&id).ok_or_else(|| RpcError::session_not_found(request.session_id.clone()))?;
        let session = self.open(&id, &request.cwd, &request.mcp_servers, &request.additional_directories)?;
        result(
            acp::ResumeSessionResponse::new().config_options(session.config_options()).modes(session.modes()),
        )
    }

    /// `session/close`: its prompt cancelled, the session let go (it stays kept for a load).
    fn close_session(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::CloseSessionRequest = params(params_)?;
        let session = lock(&self.sessions)
            .remove(&*request.session_id.0)
            .ok_or_else(|| RpcError::session_not_found(request.session_id.clone()))?;
        if let Some(token) = lock(&session.prompt).as_ref() {
            token.cancel();
        }
        result(acp::CloseSessionResponse::new())
    }

    /// `session/list`: the kept sessions, the latest first (over `cwd` when it is given).
    fn list_sessions(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::ListSessionsRequest = params(params_)?;
        let cwd = match &request.cwd {
            Some(cwd) => Some(canonical(cwd)?),
            None => None,
        };
        let sessions = self
            .store
            .list(cwd.as_deref())
            .into_iter()
            .map(|kept| acp::SessionInfo::new(kept.id, kept.cwd).title(kept.title).updated_at(kept.updated))
            .collect();
        result(acp::ListSessionsResponse::new(sessions))
    }

    fn session(&self, id: &acp::SessionId) -> Result<Arc<AcpSession>, RpcError> {
        lock(&self.sessions).get(&*id.0).cloned().ok_or_else(|| RpcError::session_not_found(id.clone()))
    }

    /// `session/set_config_option`: a picker set; the answer is every picker as it is now.
    fn set_config_option(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::SetSessionConfigOptionRequest = params(params_)?;
        let session = self.session(&request.session_id)?;
        let value = match &request.value {
            acp::SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
            _ => return Err(invalid_params("Tokamak's options take one of their values, not true or false")),
        };
        let served = lock(&session.served).clone();
        options::set(&session.session, &mut lock(&session.picked), &request.config_id.0, &value, &served)
            .map_err(invalid_params)?;
        result(acp::SetSessionConfigOptionResponse::new(session.config_options()))
    }

    /// `session/set_mode`: the legacy role picker.
    fn set_mode(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::SetSessionModeRequest = params(params_)?;
        let session = self.session(&request.session_id)?;
        options::set(&session.session, &mut lock(&session.picked), "mode", &request.mode_id.0, &[])
            .map_err(invalid_params)?;
        result(acp::SetSessionModeResponse::new())
    }

    /// Opens session `id` over `cwd` (new, loaded or resumed): the one Tokamak session with
    /// this client's editor and approver, kept in the store.
    fn open(
        &self,
        id: &str,
        cwd: &std::path::Path,
        mcp_servers: &[acp::McpServer],
        additional_directories: &[PathBuf],
    ) -> Result<Arc<AcpSession>, RpcError> {
        let root = canonical(cwd)?;
        // a session opened again while its prompt runs would run two prompts in one folder
        if let Some(open) = lock(&self.sessions).get(id)
            && lock(&open.prompt).is_some()
        {
            return Err(RpcError::new(BUSY, format!("session {id} has a prompt running; cancel it first")));
        }
        if let Some(kept) = self.store.find(id)
            && kept.cwd != root
        {
            return Err(invalid_params(format!(
                "session {id} is over {}, not {}",
                kept.cwd.display(),
                root.display()
            )));
        }
        let root_uri = url::Url::from_directory_path(&root)
            .map_err(|()| invalid_params(format!("{} is not a folder path", root.display())))?;
        let loaded = Settings::load(Some(&root), json!({})).map_err(|err| {
            RpcError::new(-32603, format!("Tokamak's settings for {} are invalid: {err}", root.display()))
        })?;
        if let Err(err) = self.store.begin(id, &root) {
            tracing::warn!("acp: session {id} will not be kept: {err}");
        }
        let can = *lock(&self.can);
        let log = self.store.log(id);
        let editor = Arc::new(AcpEditor::new(Arc::clone(&self.connection), id, &root, can, log));
        let approver = Arc::new(AcpApprover::new(Arc::clone(&editor)));
        let front = FrontEnd { editor: editor.clone(), approver };
        // the editor's MCP servers, started with the user's and a trusted project's
        let (mcp, unusable) = editor_servers(mcp_servers);
        let options = Options { history: true, agent: true, workspace: None, watch: true, mcp };
        let session = Session::build(Some(root.clone()), loaded.settings, loaded.trust, front, options);
        let mut notes: Vec<String> = session.problems.iter().map(|p| p.going_on()).collect();
        if let Some(message) = crate::trust::ignored_message(&root, &loaded.ignored, "start a new session") {
            notes.push(message);
        }
        notes.extend(unusable);
        if !additional_directories.is_empty() {
            notes.push(format!(
                "Tokamak acts only in {}; the additional directories ({}) are not read or changed.",
                root.display(),
                additional_directories.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        let acp_session = Arc::new(AcpSession {
            session,
            editor,
            runs: Runs::default(),
            root_uri,
            prompt: Mutex::new(None),
            notes: Mutex::new(notes),
            picked: Mutex::new(Picked::default()),
            windows: Mutex::default(),
            conversation: Mutex::new(self.store.turns(id)),
            served: Mutex::default(),
            id: id.to_string(),
        });
        lock(&self.sessions).insert(id.to_string(), Arc::clone(&acp_session));
        Ok(acp_session)
    }

    async fn prompt(&self, params_: Value) -> Result<Value, RpcError> {
        let request: acp::PromptRequest = params(params_)?;
        let session = lock(&self.sessions)
            .get(&*request.session_id.0)
            .cloned()
            .ok_or_else(|| RpcError::session_not_found(request.session_id.clone()))?;
        let goal = prompt_text(&request.prompt);
        if goal.trim().is_empty() {
            return Err(invalid_params("the prompt has no text"));
        }
        if goal.len() > MAX_PROMPT_BYTES {
            return Err(invalid_params(format!(
                "the prompt is {} KiB; Tokamak takes at most {} KiB (link large files instead of embedding them: the agent reads what it needs)",
                goal.len() / 1024,
                MAX_PROMPT_BYTES / 1024
            )));
        }
        let images = prompt_images(&request.prompt)?;
        let picked = lock(&session.picked).clone();
        let models = options::models(&session.session, &picked);
        let Some(mut context) = session.session.task_context_with(&models) else {
            return Err(RpcError::new(-32603, "the agent cannot act on this session's folder"));
        };
        context.approval = picked.approval_level();
        let handle = session.runs.start(&session.root_uri).map_err(|busy| {
            RpcError::new(
                BUSY,
                format!("{busy}: a prompt is already running in this session; cancel it first"),
            )
        })?;
        // cancellable from here on: a cancel that comes before the run starts still stops it
        let cancel = handle.cancel.clone();
        *lock(&session.prompt) = Some(cancel.clone());
        // the title is what the user wrote, not the files the prompt carries
        let words: String = request
            .prompt
            .iter()
            .filter_map(|block| match block {
                acp::ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        self.store.title(&request.session_id.0, if words.trim().is_empty() { &goal } else { &words });
        session.editor.keep_prompt(&request.prompt);
        for note in std::mem::take(&mut *lock(&session.notes)) {
            session.editor.say(&format!("{note}\n"));
        }
        if goal.trim() == "/compact" {
            // the session's conversation in one turn: what later prompts carry of it shrinks
            let text = {
                let mut turns = lock(&session.conversation);
                let before = turns.len();
                *turns = crate::agent::compact_conversation(&turns);
                self.store.keep_turns(&session.id, &turns);
                match before {
                    0 => "There is no conversation to compact yet.".to_string(),
                    1 => "The conversation is one request; nothing to compact.".to_string(),
                    n => format!(
                        "Compacted the {n} earlier requests into one: later prompts carry each by its first line."
                    ),
                }
            };
            session.editor.say(&text);
            lock(&session.prompt).take();
            drop(handle);
            return result(acp::PromptResponse::new(acp::StopReason::EndTurn));
        }
        // plan only: the prompt's plan, shown, not carried out
        let plan_only = picked.plan_only() && commands::parse(&goal).is_none();
        let command = if plan_only { Some(("plan", goal.clone())) } else { commands::parse(&goal) };
        if let Some((name, input)) = command {
            let text = tokio::select! {
                text = commands::run(&session.session, name, &input, &images, &cancel) => text,
                () = cancel.cancelled() => format!("/{name} was cancelled."),
            };
            session.editor.say(&text);
            lock(&session.prompt).take();
            drop(handle);
            let reason =
                if cancel.is_cancelled() { acp::StopReason::Cancelled } else { acp::StopReason::EndTurn };
            return result(acp::PromptResponse::new(reason));
        }
        // the context window is asked of the model's server beside the run, not before it: a
        // server slow to answer (or one that does not have the endpoint) must not hold the plan
        session.editor.set_context_window(None);
        if let Ok(model) = &context.model {
            let (asking, model) = (Arc::clone(&session), Arc::clone(model));
            tokio::spawn(async move {
                let window = asking.window(model.as_ref()).await;
                asking.editor.set_context_window(window);
            });
        }
        let conversation = lock(&session.conversation).clone();
        let task = TaskRequest {
            goal: goal.clone(),
            plan: None,
            selection: None,
            plan_id: new_plan_id(),
            role: picked.role,
            conversation,
            images,
        };
        let report = run_task(&context, task, handle).await;
        lock(&session.prompt).take();
        // remembered for the next prompt: what was asked, and how it ended in Tokamak's words and
        // the model's
        {
            let mut turns = lock(&session.conversation);
            crate::agent::remember_turn(&mut turns, crate::agent::turn_of(&goal, &report));
            self.store.keep_turns(&session.id, &turns);
        }
        // the buffers taken in for this prompt are the editor's again: the next prompt asks anew
        let observer = &session.session.observer;
        for document in observer.open_documents() {
            observer.close(&document.uri).await;
        }
        // after a session/cancel the turn ends cancelled, whatever the run made of it
        let reason =
            if cancel.is_cancelled() { acp::StopReason::Cancelled } else { stop_reason(report.exit_reason) };
        result(acp::PromptResponse::new(reason))
    }
}

/// The folder `cwd` names, absolute and with its links resolved.
fn canonical(cwd: &std::path::Path) -> Result<PathBuf, RpcError> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!("cwd must be an absolute path, not {}", cwd.display())));
    }
    let root = std::fs::canonicalize(cwd)
        .map_err(|err| invalid_params(format!("cannot open {}: {err}", cwd.display())))?;
    if !root.is_dir() {
        return Err(invalid_params(format!("cwd must be a folder, and {} is a file", cwd.display())));
    }
    Ok(root)
}

/// The images a prompt carries, for the model (a screenshot, a diagram), within bounds.
fn prompt_images(blocks: &[acp::ContentBlock]) -> Result<Vec<crate::model::Image>, RpcError> {
    let mut images = Vec::new();
    for block in blocks {
        let acp::ContentBlock::Image(image) = block else { continue };
        // what every provider reads (Anthropic takes these four and no other)
        if !["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&image.mime_type.as_str()) {
            return Err(invalid_params(format!(
                "an image of type {} cannot go to the model: PNG, JPEG, GIF or WebP can",
                image.mime_type
            )));
        }
        if image.data.len() > MAX_IMAGE_BYTES {
            return Err(invalid_params(format!(
                "an image of {} KiB is too large; Tokamak takes images up to {} KiB",
                image.data.len() / 1024,
                MAX_IMAGE_BYTES / 1024
            )));
        }
        images.push(crate::model::Image { mime: image.mime_type.clone(), base64: image.data.clone() });
    }
    if images.len() > MAX_IMAGES {
        return Err(invalid_params(format!(
            "the prompt carries {} images; Tokamak takes at most {MAX_IMAGES}",
            images.len()
        )));
    }
    Ok(images)
}

/// The prompt as one goal: its text, with the resources it embeds and the ones it links.
fn prompt_text(blocks: &[acp::ContentBlock]) -> String {
    let mut goal = String::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(text) => goal.push_str(&text.text),
            acp::ContentBlock::Resource(resource) => {
                if let acp::EmbeddedResourceResource::TextResourceContents(contents) = &resource.resource {
                    goal.push_str(&format!("\n\n{}:\n```\n{}\n```\n", contents.uri, contents.text));
                }
            }
            acp::ContentBlock::ResourceLink(link) => goal.push_str(&format!(" ({})", link.uri)),
            _ => {}
        }
    }
    goal
}

/// The stop reason a run's exit means for the client.
fn stop_reason(reason: ExitReason) -> acp::StopReason {
    match reason {
        ExitReason::Cancelled => acp::StopReason::Cancelled,
        ExitReason::TokenLimit => acp::StopReason::MaxTokens,
        ExitReason::Refused => acp::StopReason::Refusal,
        ExitReason::ToolCallLimit | ExitReason::IterationLimit | ExitReason::MaxAttempts => {
            acp::StopReason::MaxTurnRequests
        }
        // done, or stopped by a guard the report explains in the agent's message
        _ => acp::StopReason::EndTurn,
    }
}

/// The MCP servers an ACP client gives in `session/new`, as the session starts them, and the
/// ones that cannot be (one sentence each).
fn editor_servers(given: &[acp::McpServer]) -> (Vec<crate::mcp::ServerSpec>, Vec<String>) {
    use crate::config::McpServerSettings;
    let mut specs = Vec::new();
    let mut unusable = Vec::new();
    for server in given {
        let (name, settings) = match server {
            acp::McpServer::Stdio(stdio) => (
                &stdio.name,
                McpServerSettings {
                    kind: Some("stdio".into()),
                    command: Some(stdio.command.display().to_string()),
                    args: stdio.args.clone(),
                    env: stdio.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
                    ..Default::default()
                },
            ),
            acp::McpServer::Http(http) => (
                &http.name,
                McpServerSettings {
                    kind: Some("http".into()),
                    url: Some(http.url.clone()),
                    headers: http.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
                    ..Default::default()
                },
            ),
            acp::McpServer::Sse(sse) => (
                &sse.name,
                McpServerSettings {
                    kind: Some("sse".into()),
                    url: Some(sse.url.clone()),
                    headers: sse.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
                    ..Default::default()
                },
            ),
            other => {
                unusable.push(format!(
                    "Tokamak cannot start the MCP server {other:?}: its transport is not one it speaks."
                ));
                continue;
            }
        };
        // a name the client gives may hold spaces: the tools' names take the cleaned one
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        match crate::mcp::ServerSpec::from_settings(&clean, &settings, "the editor") {
            Ok(spec) => specs.push(spec),
            Err(reason) => unusable.push(format!("Tokamak: {reason}.")),
        }
    }
    (specs, unusable)
}
