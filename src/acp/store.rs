//! Where ACP sessions are kept between connections (`session/list`, `session/load`,
//! `session/resume`): for each, a small description (its folder, title, last change) and every
//! update it sent, one JSON line each, in the user's cache folder. Loading a session replays
//! those updates; the agent's own state of a run is in its checkpoints and audit log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sync::lock;

/// A session as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    pub id: String,
    pub cwd: PathBuf,
    /// The first prompt's first line.
    pub title: Option<String>,
    /// When it last changed (RFC 3339).
    pub updated: String,
}

/// The folder of kept sessions.
pub struct Store {
    dir: PathBuf,
}

/// Whether `id` can name a kept session's files (the ids Tokamak makes can; a client's
/// `session/load` of anything else is refused before a path is made of it).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl Store {
    /// The store under the user's cache folder.
    pub fn new() -> Store {
        Store::at(crate::places::cache_dir().join("acp-sessions"))
    }

    pub fn at(dir: PathBuf) -> Store {
        Store { dir }
    }

    fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn log_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// The session `id`, if it is kept.
    pub fn find(&self, id: &str) -> Option<Kept> {
        if !valid_id(id) {
            return None;
        }
        let text = std::fs::read_to_string(self.meta_path(id)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The folder, made private to the user (sessions hold their code).
    fn folder(&self) -> std::io::Result<&Path> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::set_permissions(&self.dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        Ok(&self.dir)
    }

    /// Writes a session's description whole or not at all.
    fn write(&self, kept: &Kept) -> std::io::Result<()> {
        // the folder made, readable by the user alone
        self.folder()?;
        let text = serde_json::to_string(kept).map_err(std::io::Error::other)?;
        crate::atomic::replace(&self.meta_path(&kept.id), text.as_bytes(), crate::atomic::Mode::Private)
    }

    /// Keeps session `id` over `cwd` (again, when it is loaded or resumed: its title stays).
    pub fn begin(&self, id: &str, cwd: &Path) -> std::io::Result<()> {
        let title = self.find(id).and_then(|k| k.title);
        self.write(&Kept { id: id.to_string(), cwd: cwd.to_path_buf(), title, updated: now() })
    }

    /// Names the session by its first prompt, when it has no name yet.
    pub fn title(&self, id: &str, prompt: &str) {
        let Some(mut kept) = self.find(id) else { return };
        if kept.title.is_none() {
            let line = prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
            kept.title = Some(crate::text::cut(line, 80));
        }
        kept.updated = now();
        if let Err(err) = self.write(&kept) {
            tracing::warn!("acp: session {id} could not be kept: {err}");
        }
    }

    /// The kept sessions, the latest first; only those over `cwd` when it is given.
    pub fn list(&self, cwd: Option<&Path>) -> Vec<Kept> {
        let mut kept: Vec<Kept> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|e| e == "json"))
            .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
            .filter_map(|text| serde_json::from_str::<Kept>(&text).ok())
            .filter(|k| cwd.is_none_or(|cwd| k.cwd == cwd))
            .collect();
        kept.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
        kept
    }

    /// Session `id`'s conversation: its earlier prompts and how each ended (none kept: empty).
    pub fn turns(&self, id: &str) -> Vec<crate::agent::Turn> {
        std::fs::read_to_string(self.dir.join(format!("{id}.turns.json")))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Keeps session `id`'s conversation for its next load.
    pub fn keep_turns(&self, id: &str, turns: &[crate::agent::Turn]) {
        let kept = self.folder().and_then(|folder| {
            let text = serde_json::to_string(turns).map_err(std::io::Error::other)?;
            std::fs::write(folder.join(format!("{id}.turns.json")), text)
        });
        if let Err(err) = kept {
            tracing::warn!("acp: session {id}'s conversation could not be kept: {err}");
        }
    }

    /// Every update session `id` sent, in order (a line that cannot be read is skipped).
    pub fn updates(&self, id: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.log_path(id)).unwrap_or_default();
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }

    /// A writer of session `id`'s updates, appending to what it kept, up to [`MAX_LOG_BYTES`].
    pub fn log(&self, id: &str) -> Log {
        let file = self.folder().and_then(|folder| {
            std::fs::OpenOptions::new().create(true).append(true).open(folder.join(format!("{id}.jsonl")))
        });
        match file {
            Ok(file) => {
                let size = file.metadata().map(|m| m.len()).unwrap_or_default();
                Log(Mutex::new(Some((file, size))))
            }
            Err(err) => {
                tracing::warn!("acp: session {id}'s updates cannot be kept: {err}");
                Log(Mutex::new(None))
            }
        }
    }
}

/// How much of a session's updates are kept (a load replays at most this much).
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// Appends a session's updates to its log: the file and its size.
pub struct Log(Mutex<Option<(std::fs::File, u64)>>);

impl Log {
    pub fn append(&self, update: &impl Serialize) {
        let mut file = lock(&self.0);
        let Some((writer, size)) = file.as_mut() else { return };
        let line = match serde_json::to_string(update) {
            Ok(line) => line + "\n",
            Err(err) => return tracing::warn!("acp: an update could not be kept: {err}"),
        };
        if *size + line.len() as u64 > MAX_LOG_BYTES {
            tracing::warn!(
                "acp: the session's kept updates reached {MAX_LOG_BYTES} bytes; later ones are not kept"
            );
            *file = None;
            return;
        }
        // one write per line, so two writers never interleave within a line
        match writer.write_all(line.as_bytes()) {
            Ok(()) => *size += line.len() as u64,
            Err(err) => {
                tracing::warn!("acp: an update could not be kept, so the rest are not: {err}");
                *file = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_kept_titled_listed_and_its_updates_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("sessions"));
        assert!(store.list(None).is_empty());
        store.begin("tokamak-1", Path::new("/p")).unwrap();
        store.title("tokamak-1", "\n  add a login page\nwith a form");
        store.title("tokamak-1", "a second prompt does not rename it");
        let log = store.log("tokamak-1");
        log.append(&serde_json::json!({"sessionUpdate": "plan", "entries": []}));
        log.append(&serde_json::json!({"sessionUpdate": "agent_message_chunk"}));
        store.begin("tokamak-2", Path::new("/q")).unwrap();
        let kept = store.find("tokamak-1").unwrap();
        assert_eq!(kept.title.as_deref(), Some("add a login page"));
        assert_eq!(store.list(Some(Path::new("/p"))), [kept]);
        assert_eq!(store.list(None).len(), 2);
        let updates = store.updates("tokamak-1");
        assert_eq!(updates.len(), 2);
        assert_eq!(updates[0]["sessionUpdate"], "plan");
        assert!(store.find("../etc/passwd").is_none());
        assert!(!valid_id("a/b") && !valid_id("") && valid_id("tokamak-0a_B"));
    }
}
