//! Tools from outside Tokamak — MCP servers' — as the agent offers them and the executor calls
//! them: the [`Toolbox`] trait the MCP client (`mcp/`) implements, below the executor and the
//! agent so neither knows MCP.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

pub use crate::action::TOOL_PREFIX as PREFIX;

/// One tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideTool {
    /// As the model calls it: `mcp__<server>__<tool>` (at most 64 characters of
    /// `[A-Za-z0-9_-]`, what every provider accepts).
    pub name: String,
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    pub description: String,
    /// Its arguments' JSON Schema.
    pub schema: Value,
    /// Called without asking (the settings allow the server or the tool).
    pub allowed: bool,
}

/// What a call gave back: the text for the model (bounded), and whether the tool said it
/// failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideResult {
    pub ok: bool,
    pub text: String,
}

/// The tools of the servers a session started.
#[async_trait]
pub trait Toolbox: Send + Sync {
    /// The tools offered now: a server still starting, failed or gone offers none.
    fn tools(&self) -> Vec<OutsideTool>;

    /// Waits, at most `within`, for the servers still starting.
    async fn ready(&self, within: Duration);

    /// Calls the tool named `name` (as offered) with `arguments`, giving up after `timeout`.
    /// `Err`: one sentence for the model (no such tool, its server is gone, it timed out).
    async fn call(&self, name: &str, arguments: Value, timeout: Duration) -> Result<OutsideResult, String>;

    /// What happened to the servers since last asked (one failed to start, one stopped): each
    /// said once.
    fn news(&self) -> Vec<String>;
}
