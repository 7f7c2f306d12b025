//! `workspace/executeCommand`: the `tokamak.*` commands.

use serde_json::{Value, json};
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::ExecuteCommandParams;

use super::Backend;

/// The commands advertised at `initialize`. The agent's commands (`tokamak.fix`,
/// `tokamak.plan`, …) join as they are built.
pub const COMMANDS: &[&str] = &["tokamak.status"];

/// Panics on purpose, to prove a panicking handler does not take the server down. Only
/// accepted when `TOKAMAK_DEBUG_COMMANDS=1` is set in the server's environment.
const DEBUG_PANIC: &str = "tokamak.debug.panic";

pub async fn execute_command(backend: &Backend, params: ExecuteCommandParams) -> Result<Option<Value>> {
    match params.command.as_str() {
        "tokamak.status" => Ok(Some(status(backend))),
        DEBUG_PANIC if debug_commands_enabled() => panic!("{DEBUG_PANIC} was asked to panic"),
        other => Err(Error::invalid_params(format!("unknown command {other:?}"))),
    }
}

fn status(backend: &Backend) -> Value {
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "positionEncoding": backend.encoding().lsp_name(),
        "openDocuments": backend.workspace().open_documents(),
    })
}

fn debug_commands_enabled() -> bool {
    std::env::var("TOKAMAK_DEBUG_COMMANDS").is_ok_and(|v| v == "1")
}
