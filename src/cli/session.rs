//! A headless session over one workspace: its settings and trust, the Observer, the
//! terminal's editor and approver, and the executor the agent acts through — what
//! `tokamak run`, `tokamak checkpoints` and `tokamak rollback` share.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::Headless;
use crate::config::Settings;
use crate::editor::Editor;
use crate::executor::{
    Approver, Confinement, Decision, ExecutorContext, ExecutorSettings, RefuseUnlisted, Request,
};
use crate::history::History;
use crate::observer::Observer;
use crate::observer::checkers::Checkers;
use crate::workspace::Workspace;

pub struct Session {
    pub root: PathBuf,
    pub settings: Settings,
    pub history: Arc<History>,
    pub executor: Arc<ExecutorContext>,
}

impl Session {
    /// Opens the workspace at `root` (settings as [`super::load_settings`] reads them, with
    /// `overrides` over them). `ask`: questions go to the terminal when there is one.
    pub fn open(
        root: &Path,
        overrides: serde_json::Value,
        ask: bool,
        progress: bool,
    ) -> anyhow::Result<Session> {
        let root = std::fs::canonicalize(root)
            .map_err(|err| anyhow::anyhow!("cannot open the workspace {}: {err}", root.display()))?;
        let loaded = super::load_settings(&root, overrides)?;
        let settings = loaded.settings;
        let mut checkers = Checkers::from_settings(&settings.checkers)?;
        checkers.trusted = loaded.trust.trusted;
        let editor = Arc::new(Headless::new(Some(&root), false, progress));
        let workspace = Arc::new(Mutex::new(Workspace::new(settings.syntax.clone())));
        let observer =
            Observer::new(workspace, Arc::clone(&editor) as Arc<dyn Editor>, checkers, Some(root.clone()));
        let history = History::new(&root, settings.checkpoints.clone(), settings.key_variables());
        let approver: Arc<dyn Approver> = if ask && std::io::stdin().is_terminal() {
            Arc::new(TerminalApprover)
        } else {
            Arc::new(RefuseUnlisted)
        };
        let executor = ExecutorContext::new(
            Confinement::new(&root)?,
            Arc::clone(&observer),
            Arc::clone(&editor) as Arc<dyn Editor>,
            ExecutorSettings::from_settings(&settings, loaded.trust.trusted),
            approver,
            Some(Arc::clone(&history)),
        );
        Ok(Session { root, settings, history, executor })
    }
}

/// Asks the person at the terminal (on stderr, reading stdin).
struct TerminalApprover;

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: &Request) -> Decision {
        let question = match request {
            Request::Command { argv } => format!("Tokamak wants to run `{}`. Run it? [y/N] ", argv.join(" ")),
            Request::Commit { message, files } => {
                format!(
                    "Tokamak wants to commit {} with the message {message:?}. Commit? [y/N] ",
                    files.join(", ")
                )
            }
        };
        let answer = tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                Decision::Approve
            }
            Ok(Ok(_)) => Decision::Reject("the user said no".to_string()),
            _ => Decision::Reject("the question could not be asked".to_string()),
        }
    }
}
