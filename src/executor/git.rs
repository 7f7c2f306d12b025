//! The executor's commit: the run's changed files committed in the project's own git
//! repository with the model's message, approved as the `approval` level says.

use serde_json::json;

use super::{Executor, LimitHit, Origin, Request};
use crate::action::ActionResult;
use crate::config::ApprovalLevel;
use crate::process::clean_output;
use crate::text::cut;

impl Executor {
    /// The model's `git_commit`: every file the run changed.
    pub(super) async fn commit(&self, message: &str) -> ActionResult {
        self.commit_only(message, self.changed_files(), Origin::Model).await
    }

    /// The run's own commit (the git mode's): `files` only, counted against the run's
    /// actions.
    pub async fn commit_files(&self, message: &str, files: Vec<String>) -> Result<ActionResult, LimitHit> {
        let action = crate::action::Action::GitCommit { message: message.to_string() };
        self.count_call(&action)?;
        Ok(self.commit_only(message, files, Origin::Run).await)
    }

    async fn commit_only(&self, message: &str, files: Vec<String>, origin: Origin) -> ActionResult {
        if files.is_empty() {
            return ActionResult::refused("this run changed no files, so there is nothing to commit");
        }
        if message.trim().is_empty() {
            return ActionResult::refused("the commit message is empty");
        }
        let unsaved: Vec<String> = self
            .buffers()
            .into_iter()
            .filter(|(path, text)| std::fs::read(path).ok().as_deref() != Some(text.as_bytes()))
            .map(|(path, _)| self.context.confinement.relative(&path))
            .filter(|relative| files.contains(relative))
            .collect();
        if !unsaved.is_empty() {
            return ActionResult::refused(format!(
                "{} has unsaved changes in the editor; the user must save before a commit",
                unsaved.join(", ")
            ));
        }
        let settings = &self.context.settings;
        if !(settings.auto_commit && settings.trusted) || self.approval() == ApprovalLevel::High {
            let request = Request::Commit { message: message.to_string(), files: files.clone() };
            if let Err(reason) = self.ask(&request, origin).await {
                return ActionResult::refused(reason);
            }
        }
        let git = |args: Vec<String>| {
            // a project not trusted supplies no program: not git, nor what git runs
            let search = (!settings.trusted).then(|| crate::process::path_outside(self.root())).flatten();
            let program = search
                .as_ref()
                .and_then(|path| which::which_in("git", Some(path), self.root()).ok())
                .unwrap_or_else(|| std::path::PathBuf::from("git"));
            let mut command = tokio::process::Command::new(program);
            if let Some(path) = &search {
                command.env("PATH", path);
            }
            // the run's file names are names, never patterns: a file the model called `*`
            // must not stage the user's other files
            command.arg("-C").arg(self.root()).arg("--literal-pathspecs");
            if !settings.trusted {
                command.args(["-c", "core.hooksPath=/dev/null"]);
            }
            command.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
            for (name, _) in std::env::vars_os() {
                let text = name.to_string_lossy();
                if text.starts_with("GIT_") || crate::history::audit::is_secret_name(&text) {
                    command.env_remove(&name);
                }
            }
            command
        };
        let mut add = vec!["add".to_string(), "-A".to_string(), "--".to_string()];
        add.extend(files.iter().cloned());
        let mut commit = vec![
            "commit".to_string(),
            "--only".to_string(),
            "-m".to_string(),
            message.to_string(),
            "--".to_string(),
        ];
        commit.extend(files.iter().cloned());
        for args in [add, commit] {
            match git(args.clone()).output().await {
                Ok(output) if output.status.success() => {}
                Ok(output) => {
                    let detail = clean_output(&[output.stdout, output.stderr].concat());
                    return ActionResult::refused(format!(
                        "git {} failed: {}",
                        args[0],
                        cut(detail.trim(), 1000)
                    ));
                }
                Err(err) => return ActionResult::refused(format!("git could not be started: {err}")),
            }
        }
        let head =
            git(vec!["rev-parse".to_string(), "--short".to_string(), "HEAD".to_string()]).output().await;
        let head = head.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        if let Some(journal) = &self.journal {
            journal.record("commit", json!({"commit": head, "files": files}));
        }
        ActionResult::done(
            format!(
                "committed {} file(s) as {head}: {}",
                files.len(),
                message.lines().next().unwrap_or_default()
            ),
            format!("committed {head}"),
        )
    }
}
