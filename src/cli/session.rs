//! The command line's session over one workspace: the one session of [`crate::session`] with
//! the terminal's editor and approvers — what `tokamak run`, `tokamak plan`, `tokamak
//! checkpoints` and `tokamak rollback` share.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::Headless;
use super::stdio::errln;
use crate::config::ApprovalLevel;
use crate::executor::{Approver, Decision, ExecutorContext, RefuseUnlisted, Request};
pub use crate::session::Session;
use crate::session::{FrontEnd, Options, Problem};

/// Who says yes to what the agent wants to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Nobody is asked: changes run freely (listing, checkpoints), commands need the
    /// allow-list.
    Unattended,
    /// The person at the terminal is asked before each change and unlisted command; without
    /// a terminal, changes are refused, saying how to allow them.
    Ask,
    /// `--yes`: changes are approved; commands still need the allow-list.
    Yes,
}

/// Opens the workspace at `root` (settings as [`super::load_settings`] reads them, with
/// `overrides` over them) as a session on the terminal: the one session every front end
/// builds ([`crate::session`]), with the terminal's editor and approver. `checkpoints`: keep
/// checkpoints and audit logs (not for a throw-away copy).
pub fn open(
    root: &Path,
    overrides: serde_json::Value,
    approval: Approval,
    progress: bool,
    checkpoints: bool,
) -> anyhow::Result<Session> {
    open_copy(root, None, overrides, approval, progress, checkpoints)
}

/// [`open`] on `root`; when it is a copy of the project at `project` (a dry run's), with that
/// project's trust.
pub fn open_copy(
    root: &Path,
    project: Option<&Path>,
    overrides: serde_json::Value,
    approval: Approval,
    progress: bool,
    checkpoints: bool,
) -> anyhow::Result<Session> {
    let root = std::fs::canonicalize(root)
        .map_err(|err| anyhow::anyhow!("cannot open the workspace {}: {err}", root.display()))?;
    let loaded = super::load_settings_as(&root, project.unwrap_or(&root), overrides)?;
    let mut settings = loaded.settings;
    // `--yes` answers the changes' questions in advance; listing and rollback ask nothing
    if approval != Approval::Ask {
        settings.approval = ApprovalLevel::Low;
    }
    let terminal = super::stdio::interactive();
    let approver: Arc<dyn Approver> = match approval {
        Approval::Ask if terminal => Arc::new(TerminalApprover),
        Approval::Ask => Arc::new(NoTerminal),
        Approval::Yes => Arc::new(ApproveChanges),
        Approval::Unattended => Arc::new(RefuseUnlisted),
    };
    let front = FrontEnd { editor: Arc::new(Headless::new(Some(&root), false, progress)), approver };
    let options =
        Options { history: checkpoints, agent: true, workspace: None, watch: false, mcp: Vec::new() };
    checked(Session::build(Some(root), settings, loaded.trust, front, options))
}

/// A session whose settings could be used as they are; otherwise the first problem, as the
/// command's error (the editor goes on with defaults; a command says what to fix). What is only to be said (a folder's agent files not used, or used otherwise than they
/// say) is said on stderr, and the command goes on.
pub fn checked(mut session: Session) -> anyhow::Result<Session> {
    for problem in session.problems.drain(..) {
        match problem {
            Problem::Checkers(err) => return Err(err.into()),
            Problem::Untrusted(_) | Problem::Note(_) => errln!("tokamak: {problem}"),
            problem => return Err(problem.into()),
        }
    }
    Ok(session)
}

/// The session's executor: every session this module opens has one.
pub fn executor(session: &Session) -> anyhow::Result<&Arc<ExecutorContext>> {
    session.executor.as_ref().ok_or_else(|| anyhow::anyhow!("the agent cannot act on this workspace"))
}

/// Asks the person at the terminal (on stderr, reading stdin).
struct TerminalApprover;

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, _run_id: &str, request: &Request) -> Decision {
        let verb = match request {
            Request::Command { .. } => "Run it",
            Request::Commit { .. } => "Commit",
            Request::Change { .. } => "Apply it",
            Request::Look { .. } => "Allow it",
            Request::Tool { .. } => "Call it",
        };
        let question = format!(
            "{}Tokamak wants to {}. {verb}? [y/N, or say why not] ",
            request.diff(),
            request.summary()
        );
        let answer = tokio::task::spawn_blocking(move || super::stdio::ask(&question)).await;
        match answer {
            Ok(Ok(line)) => match line.trim() {
                yes if matches!(yes.to_ascii_lowercase().as_str(), "y" | "yes") => Decision::Approve,
                no if no.is_empty() || matches!(no.to_ascii_lowercase().as_str(), "n" | "no") => {
                    Decision::Reject("the user said no".to_string())
                }
                reason => Decision::Reject(reason.to_string()),
            },
            _ => Decision::Refuse("the question could not be asked".to_string()),
        }
    }
}

/// No terminal to ask: changes are refused, saying how to allow them.
struct NoTerminal;

#[async_trait]
impl Approver for NoTerminal {
    async fn decide(&self, run_id: &str, request: &Request) -> Decision {
        match request {
            Request::Change { .. } => Decision::Refuse(
                "there is no terminal to ask whether to change files, so nothing was changed; run tokamak run with --yes to allow changes, or set approval = \"low\" in your Tokamak settings"
                    .to_string(),
            ),
            Request::Look { action, .. } if action == crate::executor::GO_ON => Decision::Refuse(
                "there is no terminal to ask whether to go on; check the file and run again (or run tokamak run with --yes)".to_string(),
            ),
            Request::Look { .. } => Decision::Refuse(
                "approval = \"high\" asks before every action and there is no terminal to ask; run tokamak run with --yes, or lower approval".to_string(),
            ),
            other => RefuseUnlisted.decide(run_id, other).await,
        }
    }
}

/// `--yes`: changes go ahead; commands and commits still follow the settings.
struct ApproveChanges;

#[async_trait]
impl Approver for ApproveChanges {
    async fn decide(&self, run_id: &str, request: &Request) -> Decision {
        match request {
            Request::Change { .. } | Request::Look { .. } => Decision::Approve,
            other => RefuseUnlisted.decide(run_id, other).await,
        }
    }
}
