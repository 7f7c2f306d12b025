//! The executor's changes to files: edit (SEARCH/REPLACE, diffs or whole files, applied all or
//! nothing), create, delete and rename — open documents through the editor, other files
//! atomically on disk only over the text the run saw, each approved as the `approval` level
//! says, checkpointed before the run's first change, re-indexed and audited with its diff.

use std::path::Path;

use serde_json::json;

use super::look::{MAX_READ_BYTES, show_lines};
use super::{Access, ChangedFile, Confined, Executor, LimitHit, Stop, apply_to_document, file_uri};
use crate::action::ActionResult;
use crate::edit::{Block, apply_blocks, minimal_edits, parse_reply};
use crate::editor::{EditOutcome, FileOperation};
use crate::sync::lock;
use crate::workspace::{read_text, write_if_unchanged};

/// A unified diff of one file (`None`: absent on that side).
pub fn unified_diff(relative: &str, old: Option<&str>, new: Option<&str>) -> String {
    let old_name = if old.is_some() { format!("a/{relative}") } else { "/dev/null".to_string() };
    let new_name = if new.is_some() { format!("b/{relative}") } else { "/dev/null".to_string() };
    similar::TextDiff::from_lines(old.unwrap_or_default(), new.unwrap_or_default())
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string()
}

/// Lines added and removed between two texts.
pub(super) fn line_stats(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// Writes a new file atomically, failing if one appeared meanwhile.
pub(super) fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    write_new_bytes(path, text.as_bytes())
}

pub(super) fn write_new_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::atomic::create(path, bytes, crate::atomic::Mode::Source)
}

impl Executor {
    /// Refuses when the run saw `path` and it changed since, by someone else, or by the run's
    /// own fix since the model read it: a whole new text is only as good as the text it was
    /// made from ([`Executor::ground`]).
    pub(super) async fn unchanged_since_seen(
        &self,
        confined: &Confined,
        now: Option<&str>,
        what: &str,
    ) -> Result<(), Stop> {
        self.ground(confined, now, Some(what)).await.map(|_| ())
    }

    /// Counts a change to `files` against the limits before it is made, and takes the
    /// run's "before" checkpoint if this is its first change.
    pub(super) async fn before_change(&self, files: &[&Confined]) -> Result<(), Stop> {
        for file in files {
            if !lock(&self.state).originals.contains_key(&file.relative) {
                let text = self.text_of(&file.path).ok();
                lock(&self.state).originals.insert(file.relative.clone(), text);
            }
        }
        let limits = &self.context.settings.limits;
        {
            let state = lock(&self.state);
            if state.revisions >= limits.revisions {
                return Err(Stop::Limit(LimitHit::Revisions(limits.revisions)));
            }
            let new = files.iter().filter(|f| !state.changed.contains(&f.relative)).count();
            if state.changed.len() + new > limits.files as usize {
                return Err(Stop::Limit(LimitHit::Files(limits.files)));
            }
        }
        if let Some(journal) = &self.journal {
            let relative: Vec<&str> = files.iter().map(|f| f.relative.as_str()).collect();
            journal.before_change(&relative).await;
        }
        Ok(())
    }

    /// Before the run's own fix loop changes `relative` around the executor (a file the step's
    /// change reached): it is counted against the limits and taken into the run's checkpoint,
    /// so a rollback restores it. `Err`: why it may not be changed.
    pub async fn before_own_change(&self, relative: &str) -> Result<(), String> {
        let confined = self.confine(relative, Access::Write).map_err(Stop::into_reason)?;
        self.before_change(&[&confined]).await.map_err(Stop::into_reason)?;
        if self.journal.as_ref().is_some_and(|j| j.checkpoint_id().is_none()) {
            return Err(format!(
                "{relative} was not changed: the checkpoint that would restore it could not be taken"
            ));
        }
        Ok(())
    }

    /// After it: the file is one the run changed, when its text did change.
    pub fn after_own_change(&self, relative: &str) {
        let Ok(confined) = self.confine(relative, Access::Write) else { return };
        let original = self.original(relative).flatten();
        if self.text_of(&confined.path).ok() != original {
            self.after_change(&[&confined]);
        }
    }

    pub(super) fn after_change(&self, files: &[&Confined]) {
        let mut state = lock(&self.state);
        state.revisions += 1;
        for file in files {
            state.writes.push(file.relative.clone());
            if !state.changed.contains(&file.relative) {
                state.changed.push(file.relative.clone());
            }
        }
    }

    pub(super) async fn edit(&self, raw: &str, reply: &str) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Write)?;
        let blocks = parse_reply(reply);
        if blocks.is_empty() {
            return Err(Stop::Refused(
                "the edit had no SEARCH/REPLACE block (or diff, or whole-file block), so nothing was changed"
                    .to_string(),
            ));
        }
        for block in &blocks {
            let named = match block {
                Block::SearchReplace { file, .. } | Block::WholeFile { file, .. } => file.as_deref(),
            };
            if let Some(named) = named
                && self.context.confinement.resolve(named, Access::Write).map(|c| c.path).ok()
                    != Some(confined.path.clone())
            {
                return Err(Stop::Refused(format!(
                    "a block names {named}, but this edit is for {}; edit one file per action",
                    confined.relative
                )));
            }
        }
        if !confined.path.is_file() {
            return Err(Stop::Refused(format!(
                "{} does not exist; use create for a new file",
                confined.relative
            )));
        }
        let uri = file_uri(&confined.path)?;
        let open = self.context.observer.snapshot(&uri);
        let base = match &open {
            Some(snapshot) => snapshot.rope.to_string(),
            None => read_text(&confined.path).map_err(|err| Stop::Refused(err.to_string()))?,
        };
        let whole = blocks.iter().any(|b| matches!(b, Block::WholeFile { .. })).then_some("replaced");
        let grounded = self.ground(&confined, Some(&base), whole).await?;
        if grounded.exact_only && !Executor::exact_blocks(&base, &blocks) {
            // unsure of the file: a change is made only where its SEARCH is found as it is
            self.doubt_path(&confined.path, &confined.relative, 15, "an edit did not apply exactly");
            self.remember(&confined.path, Some(&base));
            let why = match &grounded.drift {
                Some((drift, changed)) => {
                    format!("it changed since you read it ({} drift: {changed})", drift.as_str())
                }
                None => format!("Tokamak's confidence in it is {}", self.confidence_of(&confined.path).score),
            };
            let sentence = format!(
                "{} was not edited: {why}, so an edit is made only where each SEARCH is found exactly as it is now. Here it is now:\n{}",
                confined.relative,
                show_lines(&confined.relative, &base, None, MAX_READ_BYTES)
            );
            // the file changed under the run: the change did not land where it was meant to
            return Err(if grounded.drift.is_some() {
                Stop::NotApplied(sentence)
            } else {
                Stop::Refused(sentence)
            });
        }
        let applied = match apply_blocks(&base, &blocks, self.context.settings.similarity) {
            Ok(applied) => applied,
            Err(err) => {
                self.doubt_path(&confined.path, &confined.relative, 15, "an edit did not apply");
                let mut reason = format!("{err}; nothing from that edit was applied");
                if let Some((drift, changed)) = &grounded.drift {
                    reason.push_str(&format!(
                        ". {} changed since you read it ({} drift: {changed}); here it is now:\n{}",
                        confined.relative,
                        drift.as_str(),
                        show_lines(&confined.relative, &base, None, MAX_READ_BYTES)
                    ));
                    self.remember(&confined.path, Some(&base));
                }
                return Err(Stop::Refused(reason));
            }
        };
        if applied.text == base {
            return Err(Stop::AlreadyThere(format!(
                "the edit changes nothing in {}: what it puts there is already there",
                confined.relative
            )));
        }
        self.approve(
            "edit",
            format!("edit {}", confined.relative),
            unified_diff(&confined.relative, Some(&base), Some(&applied.text)),
            Some(ChangedFile {
                path: confined.relative.clone(),
                before: Some(base.clone()),
                after: Some(applied.text.clone()),
            }),
        )
        .await?;
        self.before_change(&[&confined]).await?;
        let edits = minimal_edits(&base, &applied.text);
        let label = format!("Tokamak: edit {}", confined.relative);
        let new_text = match open {
            Some(snapshot) => {
                let after = apply_to_document(
                    &self.context.observer,
                    self.context.editor.as_ref(),
                    &snapshot,
                    &edits,
                    &label,
                )
                .await
                .map_err(|err| Stop::NotApplied(format!("{} was not changed: {err}", confined.relative)))?;
                after.rope.to_string()
            }
            None => {
                match self.context.editor.write_file(&confined.path, Some(&base), &applied.text).await {
                    Some(EditOutcome::Applied { .. }) => {}
                    Some(EditOutcome::Rejected(why)) => {
                        return Err(Stop::NotApplied(format!(
                            "{} was not changed: {why}",
                            confined.relative
                        )));
                    }
                    None => write_if_unchanged(&confined.path, Some(self.root()), &base, &applied.text)
                        .map_err(|err| Stop::NotApplied(err.to_string()))?,
                }
                applied.text.clone()
            }
        };
        self.after_change(&[&confined]);
        self.remember_written(&confined.path, &confined.relative, &new_text);
        let (added, removed) = line_stats(&base, &new_text);
        if let Some(journal) = &self.journal {
            journal.record("edit", json!({"path": confined.relative, "added": added, "removed": removed}));
        }
        let mut said = format!("edited {} (+{added} -{removed} lines)", confined.relative);
        if let Some((drift, changed)) = &grounded.drift {
            // the model is shown the text it now works on
            said.push_str(&format!(
                "; it had changed since you read it ({} drift: {changed}), and the edit was made on its text as it is now:\n{}",
                drift.as_str(),
                show_lines(&confined.relative, &new_text, None, MAX_READ_BYTES)
            ));
        }
        Ok(ActionResult::done(said, format!("edited {} (+{added} -{removed})", confined.relative))
            .changed(vec![confined.relative.clone()])
            .with_files(vec![ChangedFile {
                path: confined.relative.clone(),
                before: Some(base),
                after: Some(new_text),
            }]))
    }

    pub(super) async fn create(&self, raw: &str, text: &str) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Write)?;
        if std::fs::symlink_metadata(&confined.path).is_ok() {
            return Err(Stop::Refused(format!(
                "{} already exists; use edit to change it",
                confined.relative
            )));
        }
        let file =
            ChangedFile { path: confined.relative.clone(), before: None, after: Some(text.to_string()) };
        self.approve(
            "create",
            format!("create {}", confined.relative),
            unified_diff(&confined.relative, None, Some(text)),
            Some(file.clone()),
        )
        .await?;
        self.before_change(&[&confined]).await?;
        if let Some(parent) = confined.path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                Stop::Refused(format!("cannot make the folder for {}: {err}", confined.relative))
            })?;
        }
        let operation = FileOperation::Create { uri: file_uri(&confined.path)? };
        let through_editor = self.through_editor(&operation).await?;
        if through_editor {
            // the editor made an empty file; the text goes in over exactly that
            write_if_unchanged(&confined.path, Some(self.root()), "", text)
                .map_err(|err| Stop::Refused(err.to_string()))?;
        } else {
            match self.context.editor.write_file(&confined.path, None, text).await {
                Some(EditOutcome::Applied { .. }) => {}
                Some(EditOutcome::Rejected(why)) => {
                    return Err(Stop::Refused(format!("{} was not created: {why}", confined.relative)));
                }
                None => write_new(&confined.path, text)
                    .map_err(|err| Stop::Refused(format!("cannot create {}: {err}", confined.relative)))?,
            }
        }
        self.after_change(&[&confined]);
        self.remember_written(&confined.path, &confined.relative, text);
        if let Some(journal) = &self.journal {
            journal.record("edit", json!({"path": confined.relative, "added": text.lines().count(), "removed": 0, "created": true}));
        }
        Ok(ActionResult::done(
            format!("created {} ({} lines)", confined.relative, text.lines().count()),
            format!("created {}", confined.relative),
        )
        .changed(vec![confined.relative.clone()])
        .with_files(vec![file]))
    }

    /// Checks that a file may be deleted or moved: a regular file (not a link or a folder)
    /// that a checkpoint holds, unchanged since the run saw it.
    pub(super) async fn removable(&self, confined: &Confined, what: &str) -> Result<(), Stop> {
        if confined.link {
            // what is named is a link: its target is what the path resolves to, and removing
            // or moving that would reach a file the model did not name
            return Err(Stop::Refused(format!(
                "the path named is a symbolic link to {}, so nothing was {what}: Tokamak does not delete or move links",
                confined.relative
            )));
        }
        let metadata = std::fs::symlink_metadata(&confined.path)
            .map_err(|_| Stop::Refused(format!("{} does not exist", confined.relative)))?;
        if metadata.is_dir() {
            return Err(Stop::Refused(format!(
                "{} is a folder; Tokamak {what} files one at a time",
                confined.relative
            )));
        }
        let checkpoints = match &self.context.history {
            Some(history) => history.checkpoints().await,
            None => Err("there is no workspace folder to keep checkpoints for".to_string()),
        };
        let checkpoints = checkpoints.map_err(|reason| {
            Stop::Refused(format!(
                "{} was not {what}: without checkpoints it could not be restored ({reason})",
                confined.relative
            ))
        })?;
        if !checkpoints.can_hold(&confined.path) {
            return Err(Stop::Refused(format!(
                "{} was not {what}: it is binary, larger than checkpoints.max_file_bytes, ignored by the project's .gitignore or inside a repository of its own, so a checkpoint could not restore it",
                confined.relative
            )));
        }
        let now = self.text_of(&confined.path).ok();
        self.unchanged_since_seen(confined, now.as_deref(), what).await
    }

    pub(super) async fn delete(&self, raw: &str) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Write)?;
        self.removable(&confined, "deleted").await?;
        let text = self.text_of(&confined.path).ok();
        let file = ChangedFile { path: confined.relative.clone(), before: text.clone(), after: None };
        self.approve(
            "delete",
            format!("delete {}", confined.relative),
            unified_diff(&confined.relative, text.as_deref(), None),
            Some(file.clone()),
        )
        .await?;
        self.before_change(&[&confined]).await?;
        if self.journal.as_ref().is_some_and(|j| j.checkpoint_id().is_none()) {
            return Err(Stop::Refused(format!(
                "{} was not deleted: the checkpoint that would restore it could not be taken",
                confined.relative
            )));
        }
        let operation = FileOperation::Delete { uri: file_uri(&confined.path)? };
        if !self.through_editor(&operation).await? {
            std::fs::remove_file(&confined.path)
                .map_err(|err| Stop::Refused(format!("cannot delete {}: {err}", confined.relative)))?;
        }
        if confined.path.exists() {
            return Err(Stop::Refused(format!("{} is still there after the delete", confined.relative)));
        }
        self.after_change(&[&confined]);
        self.remember(&confined.path, None);
        Ok(ActionResult::done(
            format!("deleted {}", confined.relative),
            format!("deleted {}", confined.relative),
        )
        .changed(vec![confined.relative.clone()])
        .with_files(vec![file]))
    }

    pub(super) async fn rename(&self, from: &str, to: &str) -> Result<ActionResult, Stop> {
        let source = self.confine(from, Access::Write)?;
        let target = self.confine(to, Access::Write)?;
        self.removable(&source, "moved").await?;
        if std::fs::symlink_metadata(&target.path).is_ok() {
            return Err(Stop::Refused(format!("{} already exists; nothing was moved", target.relative)));
        }
        self.approve(
            "rename",
            format!("move {} to {}", source.relative, target.relative),
            format!("rename from {}\nrename to {}\n", source.relative, target.relative),
            None,
        )
        .await?;
        self.before_change(&[&source, &target]).await?;
        if let Some(parent) = target.path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                Stop::Refused(format!("cannot make the folder for {}: {err}", target.relative))
            })?;
        }
        let text = self.text_of(&source.path).ok();
        let operation = FileOperation::Rename { from: file_uri(&source.path)?, to: file_uri(&target.path)? };
        if !self.through_editor(&operation).await? {
            // rename(2) would replace a file that appeared meanwhile; a hard link does not
            std::fs::hard_link(&source.path, &target.path)
                .and_then(|()| std::fs::remove_file(&source.path))
                .map_err(|err| {
                    Stop::Refused(format!("cannot move {} to {}: {err}", source.relative, target.relative))
                })?;
        }
        if source.path.exists() || !target.path.exists() {
            return Err(Stop::Refused(format!("{} was not moved to {}", source.relative, target.relative)));
        }
        self.after_change(&[&source, &target]);
        self.remember(&source.path, None);
        self.remember(&target.path, text.as_deref());
        Ok(ActionResult::done(
            format!("moved {} to {}", source.relative, target.relative),
            format!("moved {} to {}", source.relative, target.relative),
        )
        .changed(vec![source.relative.clone(), target.relative.clone()])
        .with_files(vec![
            ChangedFile { path: source.relative.clone(), before: text.clone(), after: None },
            ChangedFile { path: target.relative.clone(), before: None, after: text },
        ]))
    }

    /// Asks the editor to make a file operation when it makes such operations itself.
    /// `Ok(false)`: it does not, and the disk is changed directly (logged).
    pub(super) async fn through_editor(&self, operation: &FileOperation) -> Result<bool, Stop> {
        let editor = &self.context.editor;
        if !editor.makes_file_operation(operation) {
            tracing::info!(
                "{}: the editor does not make file operations; changing the disk: {operation:?}",
                self.run_id
            );
            return Ok(false);
        }
        match editor.file_operation(operation).await {
            EditOutcome::Applied { .. } => Ok(true),
            EditOutcome::Rejected(reason) => Err(Stop::Refused(format!("the editor refused it: {reason}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::action::Action;
    use crate::config::{ApprovalLevel, Settings};
    use crate::executor::{Confinement, DiskEditor, ExecutorContext, ExecutorSettings, RefuseUnlisted};
    use crate::observer::Observer;
    use crate::observer::checkers::Checkers;
    use crate::workspace::Workspace;

    #[tokio::test]
    async fn each_change_carries_the_files_texts_before_and_after() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        let settings = Settings::default();
        let editor: Arc<dyn crate::editor::Editor> = Arc::new(DiskEditor { root: root.clone() });
        let workspace = Arc::new(Mutex::new(Workspace::new(settings.syntax.clone())));
        let observer = Observer::new(workspace, Arc::clone(&editor), Checkers::default(), Some(root.clone()));
        let mut executor_settings = ExecutorSettings::from_settings(&settings, true);
        executor_settings.approval = ApprovalLevel::Low;
        let context = ExecutorContext::new(
            Confinement::new(&root).unwrap(),
            observer,
            editor,
            executor_settings,
            Arc::new(RefuseUnlisted),
            None,
            None,
        );
        let executor = Executor::new(context, "test", None, CancellationToken::new());
        let file = |path: &str, before: Option<&str>, after: Option<&str>| ChangedFile {
            path: path.to_string(),
            before: before.map(String::from),
            after: after.map(String::from),
        };
        let cases = [
            (
                Action::Edit {
                    path: "a.py".into(),
                    blocks: "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n".into(),
                },
                vec![file("a.py", Some("x = 1\n"), Some("x = 2\n"))],
            ),
            (
                Action::Create { path: "b.py".into(), text: "y = 1\n".into() },
                vec![file("b.py", None, Some("y = 1\n"))],
            ),
            (Action::Read { path: "a.py".into(), lines: None }, vec![]),
        ];
        for (action, files) in cases {
            let result = executor.execute(&action).await.unwrap();
            assert!(result.ok, "{}", result.text);
            assert_eq!(result.files, files, "{}", action.name());
        }
    }
}
