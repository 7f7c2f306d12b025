//! An MCP server's tool called for the model: offered by the session's toolbox, asked about
//! like a command unless the settings allow it (and always at `approval = "high"`), bounded by
//! the call timeout, the run's cancel and `[mcp] max_result_bytes`; audited with the run's
//! other actions.

use std::time::Duration;

use serde_json::Value;

use super::{ActionResult, Executor, Origin, Request};
use crate::config::ApprovalLevel;

impl Executor {
    pub(super) async fn call_tool(&self, name: &str, arguments: &Value, origin: Origin) -> ActionResult {
        let Some(toolbox) = self.context.toolbox().cloned() else {
            return ActionResult::refused(format!("there is no tool {name}: no MCP server is set up"));
        };
        let offered = toolbox.tools();
        let Some(tool) = offered.iter().find(|t| t.name == name) else {
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            return ActionResult::refused(if names.is_empty() {
                format!("there is no tool {name}: no MCP server offers tools now")
            } else {
                format!("there is no tool {name}; the MCP tools are {}", names.join(", "))
            });
        };
        let settings = &self.context.settings;
        if !tool.allowed || self.approval() == ApprovalLevel::High {
            let shown = crate::text::cut(&arguments.to_string(), 600);
            let request =
                Request::Tool { name: name.to_string(), server: tool.server.clone(), arguments: shown };
            if let Err(reason) = self.ask(&request, origin).await {
                return ActionResult::refused(reason);
            }
        }
        let timeout = Duration::from_secs(settings.mcp_call_timeout_s.max(1));
        let call = toolbox.call(name, arguments.clone(), timeout);
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = self.cancel.cancelled() => Err(format!("the call of {name} was cancelled with the run")),
        };
        match outcome {
            Ok(result) => {
                let text = crate::text::cut(&result.text, settings.mcp_max_result_bytes);
                let summary = format!(
                    "{} {} ({} bytes)",
                    if result.ok { "called" } else { "the tool failed:" },
                    tool.name,
                    result.text.len()
                );
                ActionResult { ok: result.ok, ..ActionResult::done(text, summary) }
            }
            Err(reason) => ActionResult::refused(reason),
        }
    }
}
