//! The approver as an ACP client is it: each question asked with `session/request_permission`,
//! showing the change's diff, in the tool call going on; an "always" answer holds for the rest
//! of the session and that kind of action (a command: that whole command).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1 as acp;
use async_trait::async_trait;

use super::AcpEditor;
use crate::executor::{Approver, Decision, Request};
use crate::sync::lock;

/// What a person answered "always" to in this session, by kind of action.
#[derive(Default)]
pub struct Remembered(Mutex<HashMap<String, bool>>);

/// Asks the client's user with `session/request_permission`, showing the change's diff; an
/// "always" answer holds for the rest of the session and that kind of action.
pub struct AcpApprover {
    pub editor: Arc<AcpEditor>,
    pub remembered: Arc<Remembered>,
    questions: std::sync::atomic::AtomicU32,
}

impl AcpApprover {
    pub fn new(editor: Arc<AcpEditor>) -> AcpApprover {
        AcpApprover { editor, remembered: Arc::default(), questions: Default::default() }
    }
}

/// What an "always" answer holds for: the kind of action, and for a command the whole command
/// (an "always" for `python` must not let any Python through).
fn remembered_as(request: &Request) -> String {
    match request {
        Request::Command { argv, .. } => format!("run `{}`", argv.join(" ")),
        other => other.action().to_string(),
    }
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

#[async_trait]
impl Approver for AcpApprover {
    async fn decide(&self, run_id: &str, request: &Request) -> Decision {
        let key = remembered_as(request);
        match lock(&self.remembered.0).get(&key) {
            Some(true) => return Decision::Approve,
            Some(false) => {
                return Decision::Reject(format!("the user said never to {key} in this session"));
            }
            None => {}
        }
        let editor = &self.editor;
        let current = editor.current_call();
        let id = current.clone().unwrap_or_else(|| {
            let number = self.questions.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            format!("{run_id}/ask-{number}")
        });
        let tool_kind = match request {
            Request::Command { .. } | Request::Commit { .. } => acp::ToolKind::Execute,
            Request::Change { action, .. } => match action.as_str() {
                "delete" => acp::ToolKind::Delete,
                "rename" => acp::ToolKind::Move,
                _ => acp::ToolKind::Edit,
            },
            Request::Look { .. } => acp::ToolKind::Read,
            Request::Tool { .. } => acp::ToolKind::Other,
        };
        let mut content: Vec<acp::ToolCallContent> = Vec::new();
        if let Some(file) = request.file() {
            content.push(editor.diff(file));
        } else if !request.diff().is_empty() {
            content.push(request.diff().to_string().into());
        } else if let Request::Tool { .. } = request {
            // what would be sent to the server
            content.push(request.summary().into());
        }
        // a question about the tool call going on keeps its title and status; one of its own
        // (a commit, an unlisted command of the engine's) says what it is
        let mut fields = acp::ToolCallUpdateFields::new().kind(tool_kind).content(content);
        if current.is_none() {
            fields = fields
                .title(format!("Tokamak wants to {}", request.summary()))
                .status(acp::ToolCallStatus::Pending);
        }
        let options = vec![
            acp::PermissionOption::new(ALLOW_ONCE, "Allow", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Always allow {key}"),
                acp::PermissionOptionKind::AllowAlways,
            ),
            acp::PermissionOption::new(REJECT_ONCE, "Reject", acp::PermissionOptionKind::RejectOnce),
            acp::PermissionOption::new(
                REJECT_ALWAYS,
                format!("Never allow {key}"),
                acp::PermissionOptionKind::RejectAlways,
            ),
        ];
        let question = acp::RequestPermissionRequest::new(
            editor.session_id.clone(),
            acp::ToolCallUpdate::new(id, fields),
            options,
        );
        // a person takes as long as they take: the run's cancel ends the wait
        let answer = editor
            .connection
            .request::<acp::RequestPermissionResponse>("session/request_permission", &question, None)
            .await;
        match answer {
            Ok(response) => match response.outcome {
                acp::RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                    ALLOW_ONCE => Decision::Approve,
                    ALLOW_ALWAYS => {
                        lock(&self.remembered.0).insert(key, true);
                        Decision::Approve
                    }
                    REJECT_ALWAYS => {
                        lock(&self.remembered.0).insert(key, false);
                        Decision::Reject("the user said no".to_string())
                    }
                    REJECT_ONCE => Decision::Reject("the user said no".to_string()),
                    other => Decision::Refuse(format!(
                        "the editor answered with an option never offered ({other})"
                    )),
                },
                acp::RequestPermissionOutcome::Cancelled => {
                    Decision::Refuse("the prompt was cancelled before the user answered".to_string())
                }
                _ => Decision::Refuse("the editor's answer was not one Tokamak knows".to_string()),
            },
            Err(err) => Decision::Refuse(format!("the question could not be asked: {err}")),
        }
    }
}
