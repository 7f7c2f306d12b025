//! A workspace's own conversation, for a front end that has one session per workspace (the
//! language server): each request and how it ended, kept in the project's private cache
//! folder so that a follow-up after a restart still knows what came before.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::agent::Turn;
use crate::run::RunReport;
use crate::sync::lock;

/// The conversation of one workspace: its turns in memory, and the file that keeps them.
pub struct Conversation {
    file: PathBuf,
    turns: Mutex<Vec<Turn>>,
    /// Runs started whose turn is not remembered yet: a follow-up waits for them.
    pending: tokio::sync::watch::Sender<usize>,
}

/// A run's place in the conversation until its turn is remembered (or it ended without one:
/// dropped, on a panic too).
pub struct Pending(std::sync::Arc<Conversation>);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.pending.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// How long a follow-up waits for the turn of a run that ended just before it.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

impl Conversation {
    /// The conversation kept for `root` (none kept, or unreadable: an empty one).
    pub fn open(root: &Path) -> Conversation {
        Conversation::at(crate::places::project_cache(root).join("conversation.json"))
    }

    pub fn at(file: PathBuf) -> Conversation {
        let turns = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        Conversation { file, turns: Mutex::new(turns), pending: tokio::sync::watch::Sender::new(0) }
    }

    /// The turns so far, oldest first.
    pub fn turns(&self) -> Vec<Turn> {
        lock(&self.turns).clone()
    }

    /// The turns once every run started has had its turn remembered (a follow-up sent the
    /// moment the previous run's ending shows must see it), waiting at most 10 s.
    pub async fn settled_turns(&self) -> Vec<Turn> {
        let mut pending = self.pending.subscribe();
        let _ = tokio::time::timeout(SETTLE, pending.wait_for(|n| *n == 0)).await;
        self.turns()
    }

    /// A run starts: its turn is owed until [`Conversation::remember`] or the guard's drop.
    pub fn begin(self: &std::sync::Arc<Self>) -> Pending {
        self.pending.send_modify(|n| *n += 1);
        Pending(std::sync::Arc::clone(self))
    }

    /// Adds how run `report` answered `goal`, and keeps it.
    pub fn remember(&self, goal: &str, report: &RunReport) {
        self.add(crate::agent::turn_of(goal, report));
    }

    fn add(&self, turn: Turn) {
        let mut turns = lock(&self.turns);
        crate::agent::remember_turn(&mut turns, turn);
        self.keep(&turns);
    }

    /// Compacts the turns into one; how many there were.
    pub fn compact(&self) -> usize {
        let mut turns = lock(&self.turns);
        let before = turns.len();
        *turns = crate::agent::compact_conversation(&turns);
        self.keep(&turns);
        before
    }

    /// Forgets every turn (a new conversation); how many there were.
    pub fn clear(&self) -> usize {
        let mut turns = lock(&self.turns);
        let before = turns.len();
        turns.clear();
        self.keep(&turns);
        before
    }

    /// Writes `turns` whole or not at all, readable by the user alone (they hold their words).
    fn keep(&self, turns: &[Turn]) {
        let kept = (|| -> std::io::Result<()> {
            let folder = self.file.parent().ok_or_else(|| std::io::Error::other("no folder"))?;
            std::fs::create_dir_all(folder)?;
            std::fs::set_permissions(folder, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
            let text = serde_json::to_string(turns).map_err(std::io::Error::other)?;
            crate::atomic::replace(&self.file, text.as_bytes(), crate::atomic::Mode::Private)
        })();
        if let Err(err) = kept {
            tracing::warn!("the conversation could not be kept in {}: {err}", self.file.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_is_kept_across_opening_compacted_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p/conversation.json");
        let conversation = Conversation::at(file.clone());
        assert!(conversation.turns().is_empty());
        let turn = |asked: &str, answered: &str| Turn { asked: asked.into(), answered: answered.into() };
        conversation.add(turn("Remember the codeword BANANA-42", "Noted."));
        conversation.add(turn("What was the codeword?", "BANANA-42"));
        let again = Conversation::at(file.clone());
        assert_eq!(again.turns().len(), 2);
        assert_eq!(again.turns()[0].asked, "Remember the codeword BANANA-42");
        assert_eq!(again.turns()[1].answered, "BANANA-42");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
        assert_eq!(mode & 0o077, 0, "private to the user: {mode:o}");
        assert_eq!(again.compact(), 2);
        assert_eq!(Conversation::at(file.clone()).turns().len(), 1);
        assert_eq!(again.clear(), 1);
        assert!(Conversation::at(file).turns().is_empty());
    }
}
