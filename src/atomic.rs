//! Writing a file whole or not at all, the one way every part of Tokamak does it: the bytes go
//! to a temporary file in the target's own folder, are synced, given their mode (and owner),
//! then renamed over the target — a reader sees the old file or the new one, never half of
//! either — or, for a file that must be new, linked in only if none appeared there meanwhile.

use std::io::Write;
use std::path::Path;

/// The mode the written file gets.
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
    /// Readable by the user alone (0600): what Tokamak keeps of a project, conversations.
    Private,
    /// A new source file (0644).
    Source,
    /// The file it replaces: its permissions, and its owner and group where the process may.
    Like(&'a std::fs::Metadata),
}

/// Replaces `path` by `bytes` (creating it when missing).
pub fn replace(path: &Path, bytes: &[u8], mode: Mode<'_>) -> std::io::Result<()> {
    written(path, bytes, mode)?.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// Creates `path` with `bytes`, failing with `AlreadyExists` if a file appeared there.
pub fn create(path: &Path, bytes: &[u8], mode: Mode<'_>) -> std::io::Result<()> {
    written(path, bytes, mode)?.persist_noclobber(path).map_err(|err| err.error)?;
    Ok(())
}

fn written(path: &Path, bytes: &[u8], mode: Mode<'_>) -> std::io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // a temporary file is private (0600) until it is given its mode
    let mut temporary = tempfile::Builder::new().prefix(".tokamak-").tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    match mode {
        Mode::Private => {}
        Mode::Source => std::fs::set_permissions(temporary.path(), std::fs::Permissions::from_mode(0o644))?,
        Mode::Like(old) => {
            std::fs::set_permissions(temporary.path(), old.permissions())?;
            // a file of another user's keeps its group at least when we are in it; a failure
            // changes nothing
            if let Err(err) = std::os::unix::fs::fchown(temporary.as_file(), Some(old.uid()), Some(old.gid()))
            {
                tracing::debug!("could not keep the owner of a rewritten file: {err}");
            }
        }
    }
    Ok(temporary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_is_replaced_whole_with_the_mode_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.json");
        replace(&path, b"[1]", Mode::Private).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"[1]");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
        let old = std::fs::metadata(&script).unwrap();
        replace(&script, b"new", Mode::Like(&old)).unwrap();
        assert_eq!(std::fs::read(&script).unwrap(), b"new");
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o750);

        let new = dir.path().join("new.py");
        create(&new, b"x = 1\n", Mode::Source).unwrap();
        assert_eq!(std::fs::metadata(&new).unwrap().permissions().mode() & 0o777, 0o644);
        let again = create(&new, b"y = 2\n", Mode::Source).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&new).unwrap(), b"x = 1\n", "a file that appeared is never overwritten");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(".tokamak-"))
            .collect();
        assert!(left.is_empty(), "no temporary file is left: {left:?}");
    }
}
