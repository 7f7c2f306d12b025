//! A headless session over one workspace: its settings and trust, the Observer, the
//! terminal's editor and approver, and the executor the agent acts through — what
//! `tokamak run`, `tokamak plan`, `tokamak checkpoints` and `tokamak rollback` share.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::Headless;
use crate::config::Settings;
use crate::context::LiveIndex;
use crate::editor::Editor;
use crate::executor::{
    Approver, Confinement, Decision, ExecutorContext, ExecutorSettings, RefuseUnlisted, Request,
};
use crate::history::History;
use crate::observer::Observer;
use crate::observer::checkers::Checkers;
use crate::workspace::Workspace;

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

pub struct Session {
    pub root: PathBuf,
    pub settings: Settings,
    pub history: Option<Arc<History>>,
    pub executor: Arc<ExecutorContext>,
}

impl Session {
    /// Opens the workspace at `root` (settings as [`super::load_settings`] reads them, with
    /// `overrides` over them). `checkpoints`: keep checkpoints and audit logs (not for a
    /// throw-away copy).
    pub fn open(
        root: &Path,
        overrides: serde_json::Value,
        approval: Approval,
        progress: bool,
        checkpoints: bool,
    ) -> anyhow::Result<Session> {
        Session::open_copy(root, None, overrides, approval, progress, checkpoints)
    }

    /// [`Session::open`] on `root`; when it is a copy of the project at `project` (a dry
    /// run's), with that project's trust.
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
        let settings = loaded.settings;
        let mut checkers = Checkers::from_settings(&settings.checkers)?;
        checkers.trusted = loaded.trust.trusted;
        let editor = Arc::new(Headless::new(Some(&root), false, progress));
        let workspace = Arc::new(Mutex::new(Workspace::new(settings.syntax.clone())));
        let observer =
            Observer::new(workspace, Arc::clone(&editor) as Arc<dyn Editor>, checkers, Some(root.clone()));
        let history =
            checkpoints.then(|| History::new(&root, settings.checkpoints.clone(), settings.key_variables()));
        let terminal = std::io::stdin().is_terminal();
        let approver: Arc<dyn Approver> = match approval {
            Approval::Ask if terminal => Arc::new(TerminalApprover),
            Approval::Ask => Arc::new(NoTerminal),
            Approval::Yes => Arc::new(ApproveChanges),
            Approval::Unattended => Arc::new(RefuseUnlisted),
        };
        let mut executor_settings = ExecutorSettings::from_settings(&settings, loaded.trust.trusted);
        // `--yes` answers the changes' questions in advance; listing and rollback ask nothing
        if approval != Approval::Ask {
            executor_settings.approval = crate::config::ApprovalLevel::Low;
        }
        let executor = ExecutorContext::new(
            Confinement::new(&root)?,
            observer,
            Arc::clone(&editor) as Arc<dyn Editor>,
            executor_settings,
            approver,
            history.clone(),
            Some(LiveIndex::new(&root, Some(LiveIndex::cache_file(&root)))),
        );
        Ok(Session { root, settings, history, executor })
    }
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
        };
        let question = format!(
            "{}Tokamak wants to {}. {verb}? [y/N, or say why not] ",
            request.diff(),
            request.summary()
        );
        let answer = tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
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
