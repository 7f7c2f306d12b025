//! One run per folder at a time, across every session, front end and process (issue 41): a run
//! holds an exclusive `flock` on a file in the project's cache folder for as long as it goes on,
//! with its id and pid written in it for whoever is refused; the lock goes with the process, so
//! a killed run never leaves the folder locked.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The folder's lock, held.
pub struct FolderLock {
    file: std::fs::File,
}

impl FolderLock {
    /// Takes `root`'s lock for run `run_id`; `Err`: who holds it, as the sentence for the user.
    pub fn take(root: &Path, run_id: &str) -> Result<FolderLock, String> {
        let dir = crate::places::project_cache(root);
        std::fs::create_dir_all(&dir).map_err(|err| format!("the run lock cannot be made: {err}"))?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("run.lock"))
            .map_err(|err| format!("the run lock cannot be opened: {err}"))?;
        // SAFETY: flock on a descriptor this function owns for the call; it neither reads nor
        // writes memory
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !taken {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(format!(
                "another Tokamak run is working in this folder ({}); wait for it to end or cancel it, then ask again",
                if holder.is_empty() { "its id is not known" } else { holder }
            ));
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{run_id}, process {}", std::process::id());
        Ok(FolderLock { file })
    }

    /// Who holds `root`'s lock now, if anyone: the sentence for the user.
    pub fn holder(root: &Path) -> Option<String> {
        FolderLock::take(root, "a look").err()
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        // SAFETY: as in `take`; closing the file would release it too
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_in_the_folder_is_refused_naming_the_first_until_it_ends() {
        let cache = tempfile::tempdir().unwrap();
        let root = cache.path().join("project");
        std::fs::create_dir_all(&root).unwrap();
        let first = FolderLock::take(&root, "run-1").unwrap();
        let refused = FolderLock::take(&root, "run-2").err().unwrap();
        assert!(
            refused.contains("another Tokamak run is working in this folder (run-1, process"),
            "{refused}"
        );
        assert!(FolderLock::holder(&root).is_some());
        drop(first);
        assert!(FolderLock::holder(&root).is_none());
        assert!(FolderLock::take(&root, "run-2").is_ok());
    }
}
