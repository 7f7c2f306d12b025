//! Writing files headless (SPEC E4): atomically (`crate::atomic`), and only when the file on disk is still what the run read — never over a change
//! someone else made meanwhile. A symbolic link is written through to its target (the link
//! stays a link), and only when that target is inside the workspace; the file keeps its
//! permissions and owner.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{} changed on disk since it was read; not overwriting it", path.display())]
    Changed { path: PathBuf },
    #[error("{} is a link to {}, outside the workspace; not writing there", path.display(), target.display())]
    OutsideWorkspace { path: PathBuf, target: PathBuf },
    #[error("cannot write {}: {reason}", path.display())]
    Io { path: PathBuf, reason: std::io::Error },
}

/// Replaces `path`'s content by `new` if it still is `expected` (byte for byte). Readers see
/// the old file or the new one, never half of either. `root`: the workspace, which a link
/// must not lead out of.
pub fn write_if_unchanged(
    path: &Path,
    root: Option<&Path>,
    expected: &str,
    new: &str,
) -> Result<(), WriteError> {
    write_bytes_if_unchanged(path, root, expected.as_bytes(), new.as_bytes())
}

/// [`write_if_unchanged`] for bytes that need not be UTF-8.
pub fn write_bytes_if_unchanged(
    path: &Path,
    root: Option<&Path>,
    expected: &[u8],
    new: &[u8],
) -> Result<(), WriteError> {
    let io = |reason| WriteError::Io { path: path.to_path_buf(), reason };
    let target = target_of(path, root)?;
    let current = std::fs::read(&target).map_err(io)?;
    if current != expected {
        return Err(WriteError::Changed { path: path.to_path_buf() });
    }
    let metadata = std::fs::metadata(&target).map_err(io)?;
    crate::atomic::replace(&target, new, crate::atomic::Mode::Like(&metadata)).map_err(io)
}

/// Where writing `path` goes: the file itself, or the end of its chain of links — refused
/// when that is outside `root`.
fn target_of(path: &Path, root: Option<&Path>) -> Result<PathBuf, WriteError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_path_buf());
    }
    let target =
        std::fs::canonicalize(path).map_err(|reason| WriteError::Io { path: path.to_path_buf(), reason })?;
    if let Some(root) = root {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if !target.starts_with(&root) {
            return Err(WriteError::OutsideWorkspace { path: path.to_path_buf(), target });
        }
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_only_over_what_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.py");
        std::fs::write(&path, "x = (\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_if_unchanged(&path, None, "x = (\n", "x = ()\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x = ()\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);

        // someone else changed it: left alone
        let err = write_if_unchanged(&path, None, "x = (\n", "y\n").unwrap_err();
        assert!(err.to_string().contains("changed on disk since it was read"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x = ()\n");
        let leftovers: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
    }

    #[test]
    fn a_link_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/app.py"), "x = (\n").unwrap();
        std::os::unix::fs::symlink("real/app.py", root.join("app.py")).unwrap();
        write_if_unchanged(&root.join("app.py"), Some(&root), "x = (\n", "x = ()\n").unwrap();
        assert!(std::fs::symlink_metadata(root.join("app.py")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(root.join("real/app.py")).unwrap(), "x = ()\n");

        // a link out of the workspace is not written through
        let outside = dir.path().join("outside.py");
        std::fs::write(&outside, "o = 1\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out.py")).unwrap();
        let err = write_if_unchanged(&root.join("out.py"), Some(&root), "o = 1\n", "o = 2\n").unwrap_err();
        assert!(matches!(err, WriteError::OutsideWorkspace { .. }), "{err}");
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "o = 1\n");
    }
}
