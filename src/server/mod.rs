//! The language server: the only layer that knows LSP, JSON-RPC and tower-lsp-server.
//!
//! One file per LSP method family; each converts the protocol's types to Tokamak's (see
//! `convert.rs`) and calls into the workspace, the Observer and, later, the agent.
//!
//! Ordering: handlers run one at a time, in the order the editor sent the messages
//! (`concurrency_level(1)`), so changes to a document can never be applied out of order.
//! A handler therefore never waits on anything slow; long work (checkers, agent runs) is
//! spawned onto its own task with a snapshot of what it needs. Answers to our own requests
//! to the client do not pass through that queue, so awaiting them cannot deadlock.

mod answers;
mod approvals;
mod checkpoints;
mod client_diagnostics;
mod code_action;
mod configuration;
mod context;
pub mod convert;
mod document_symbol;
mod editor;
mod error;
mod execute_command;
mod guard;
mod initialize;
pub mod latency;
mod lean_client;
mod log_message;
pub mod memory;
mod pipe;
mod runs;
mod stream;
mod tasks;
mod text_sync;
mod transport;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

pub use log_message::{LogMessageLayer, LogMessageQueue, channel as log_message_channel};

use crate::observer::Observer;
use crate::session::{ModelChoice, Session};
use crate::text::PositionEncoding;
use crate::workspace::Workspace;
use editor::{ClientSupport, LspEditor};

/// Shared by every handler: the connection, what was negotiated with the client, and the one
/// [`Session`] that holds the server's state — settings, Observer, checkpoints, index,
/// executor, watcher —, built once at `initialize` and reached by every handler the same way.
pub struct Backend {
    client: Client,
    /// Decided once, at `initialize`.
    encoding: OnceLock<PositionEncoding>,
    /// The editor's documents, shared with the session's Observer.
    workspace: Arc<Mutex<Workspace>>,
    /// The workspace's session, built at `initialize` once the encoding, the root and the
    /// settings are known.
    session: OnceLock<Session>,
    /// The model choice in use: the session's (`tokamak.toml`, `initializationOptions`) with
    /// the editor's settings over it, which change while the server runs
    /// (`workspace/configuration`, `didChangeConfiguration`).
    models: Arc<Mutex<ModelChoice>>,
    /// Held while the editor is being asked for its settings: work that starts then and
    /// depends on the model (off the message queue) waits for the answer, at most
    /// `configuration::TIMEOUT`.
    reading_configuration: Arc<tokio::sync::Mutex<()>>,
    /// Answers written without tower-lsp-server (deferred requests).
    outbox: transport::Outbox,
    /// The client answers `workspace/configuration` requests.
    client_configuration: OnceLock<bool>,
    /// What the client supports (progress, versioned edits), from `initialize`.
    support: OnceLock<ClientSupport>,
    /// The plans made in this session.
    plans: tasks::Plans,
    /// The agent runs going on.
    runs: crate::agent::Runs,
    log_queue: Mutex<Option<LogMessageQueue>>,
    /// The client registers file watchers on request (`workspace/didChangeWatchedFiles`).
    watch_files: OnceLock<bool>,
    /// The questions the runs wait on (`tokamak.approve`, `tokamak.reject`).
    approvals: Arc<approvals::Approvals>,
}

impl Backend {
    fn new(client: Client, log_queue: Option<LogMessageQueue>, outbox: transport::Outbox) -> Backend {
        Backend {
            approvals: approvals::Approvals::new(client.clone()),
            client,
            encoding: OnceLock::new(),
            workspace: Arc::new(Mutex::new(Workspace::default())),
            session: OnceLock::new(),
            models: Arc::new(Mutex::new(ModelChoice::default())),
            reading_configuration: Arc::new(tokio::sync::Mutex::new(())),
            outbox,
            client_configuration: OnceLock::new(),
            support: OnceLock::new(),
            plans: tasks::Plans::default(),
            runs: crate::agent::Runs::default(),
            log_queue: Mutex::new(log_queue),
            watch_files: OnceLock::new(),
        }
    }

    /// The session; `None` only before `initialize`, when tower-lsp-server refuses everything
    /// else.
    fn session(&self) -> Option<&Session> {
        self.session.get()
    }

    /// The workspace's conversation, which each task run continues.
    fn conversation(&self) -> Option<Arc<crate::session::Conversation>> {
        self.session().and_then(|s| s.conversation.clone())
    }

    fn encoding(&self) -> PositionEncoding {
        self.encoding.get().copied().unwrap_or_default()
    }

    fn workspace(&self) -> MutexGuard<'_, Workspace> {
        crate::sync::lock(&self.workspace)
    }

    fn editor(&self) -> LspEditor {
        LspEditor {
            client: self.client.clone(),
            encoding: self.encoding(),
            support: self.support.get().copied().unwrap_or_default(),
        }
    }

    /// The workspace root, when the editor named one.
    fn root(&self) -> Option<std::path::PathBuf> {
        self.session()?.root.clone()
    }

    fn history(&self) -> Option<Arc<crate::history::History>> {
        self.session()?.history.clone()
    }

    fn executor_context(&self) -> Option<Arc<crate::executor::ExecutorContext>> {
        self.session()?.executor.clone()
    }

    /// The workspace index (`tokamak.context`, the agent's navigation), when there is a root.
    fn index(&self) -> Option<&Arc<crate::context::LiveIndex>> {
        self.session()?.index.as_ref()
    }

    /// The Observer; `None` only before `initialize`.
    fn observer(&self) -> Option<&Arc<Observer>> {
        let observer = self.session().map(|s| &s.observer);
        if observer.is_none() {
            tracing::warn!("a message arrived before initialize; ignored");
        }
        observer
    }
}

/// Serves LSP on stdin/stdout until the client says `exit` or closes the stream; then the
/// process ends (status 0 after `shutdown`, 1 without), its child processes with it.
pub async fn run_stdio(log_queue: Option<LogMessageQueue>) -> ! {
    // the editor's pipes, polled by the runtime; anything else read and written the blocking way
    let (stdout, outbox) = match pipe::Pipe::stdout() {
        Some(pipe) => transport::output_async(pipe, transport::Ending::Process),
        None => transport::output(std::io::stdout()),
    };
    let lifecycle = Arc::new(transport::Lifecycle::default());
    let stdin = match pipe::Pipe::stdin() {
        Some(pipe) => transport::checked_input(pipe, outbox.clone(), Arc::clone(&lifecycle)),
        None => transport::checked_input(tokio::io::stdin(), outbox.clone(), Arc::clone(&lifecycle)),
    };
    serve(stdin, stdout, outbox, lifecycle, log_queue).await;
    // the writer ends the process once what is queued is written
    std::future::pending().await
}

/// Serves LSP on `input` and `output` inside this process — the tests' in-process server — as
/// [`run_stdio`] does on stdin and stdout, until the client says `exit` or closes `input`, or
/// `stop` comes (at once, without the grace the end of the input gets); then returns the
/// status `run_stdio` would have ended the process with, this process's child processes
/// stopped.
pub async fn serve_on<I, O>(
    input: I,
    output: O,
    log_queue: Option<LogMessageQueue>,
    stop: impl std::future::Future<Output = ()>,
) -> i32
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (ended, mut status) = tokio::sync::oneshot::channel();
    let (output, outbox) = transport::output_async(output, transport::Ending::Serving(ended));
    let lifecycle = Arc::new(transport::Lifecycle::default());
    let input = transport::checked_input(input, outbox.clone(), Arc::clone(&lifecycle));
    let serving = tokio::spawn(serve(input, output, outbox.clone(), Arc::clone(&lifecycle), log_queue));
    let code = tokio::select! {
        code = &mut status => code.unwrap_or(1),
        () = stop => {
            outbox.exit(lifecycle.exit_code());
            status.await.unwrap_or(1)
        }
    };
    serving.abort();
    code
}

/// tower-lsp-server over checked frames, one message at a time; at its end the outbox is told
/// the status to end with.
async fn serve(
    input: tokio::io::DuplexStream,
    output: tokio::io::DuplexStream,
    outbox: transport::Outbox,
    lifecycle: Arc<transport::Lifecycle>,
    log_queue: Option<LogMessageQueue>,
) {
    let for_backend = outbox.clone();
    let (service, socket) = LspService::build(move |client| Backend::new(client, log_queue, for_backend))
        .custom_method(client_diagnostics::METHOD, Backend::client_diagnostics)
        .custom_method(runs::CANCEL_PROGRESS, Backend::work_done_progress_cancel)
        .custom_method(transport::DEFERRED_METHOD, Backend::deferred)
        .finish();
    Server::new(input, output, socket).concurrency_level(1).serve(service).await;
    outbox.exit(lifecycle.exit_code());
}

impl Backend {
    async fn client_diagnostics(&self, params: client_diagnostics::ClientDiagnosticsParams) {
        guard::notification(client_diagnostics::METHOD, client_diagnostics::client_diagnostics(self, params))
            .await;
    }

    async fn deferred(&self, params: execute_command::DeferredParams) {
        guard::notification(transport::DEFERRED_METHOD, execute_command::deferred(self, params)).await;
    }

    async fn work_done_progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        guard::notification(runs::CANCEL_PROGRESS, runs::work_done_progress_cancel(self, params)).await;
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        guard::request("initialize", initialize::initialize(self, params)).await
    }

    async fn initialized(&self, _: InitializedParams) {
        guard::notification("initialized", initialize::initialized(self)).await;
    }

    async fn shutdown(&self) -> Result<()> {
        tracing::info!("shutting down");
        Ok(())
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        guard::notification(
            "workspace/didChangeConfiguration",
            configuration::did_change_configuration(self, params),
        )
        .await;
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        guard::notification("textDocument/didOpen", text_sync::did_open(self, params)).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        guard::notification("textDocument/didChange", text_sync::did_change(self, params)).await;
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        guard::notification("textDocument/didSave", text_sync::did_save(self, params)).await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        context::watched_files_changed(self, params);
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        guard::notification("textDocument/didClose", text_sync::did_close(self, params)).await;
    }

    async fn document_symbol(&self, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
        guard::request("textDocument/documentSymbol", document_symbol::document_symbol(self, params)).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guard::request("textDocument/codeAction", code_action::code_action(self, params)).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<serde_json::Value>> {
        guard::request("workspace/executeCommand", execute_command::execute_command(self, params)).await
    }
}
