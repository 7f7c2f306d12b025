//! Writing files headless (SPEC E4): atomically (a temporary file in the same folder, then a
//! rename), and only when the file on disk is still what the run read — never over a change
//! someone else made meanwhile.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{} changed on disk since it was read; not overwriting it", path.display())]
    Changed { path: PathBuf },
    #[error("cannot write {}: {reason}", path.display())]
    Io { path: PathBuf, reason: std::io::Error },
}

/// Replaces `path`'s content by `new` if it still is `expected` (byte for byte), keeping its
/// permissions. Readers see the old file or the new one, never half of either.
pub fn write_if_unchanged(path: &Path, expected: &str, new: &str) -> Result<(), WriteError> {
    write_bytes_if_unchanged(path, expected.as_bytes(), new.as_bytes())
}

/// [`write_if_unchanged`] for bytes that need not be UTF-8.
pub fn write_bytes_if_unchanged(path: &Path, expected: &[u8], new: &[u8]) -> Result<(), WriteError> {
    let io = |reason| WriteError::Io { path: path.to_path_buf(), reason };
    let current = std::fs::read(path).map_err(io)?;
    if current != expected {
        return Err(WriteError::Changed { path: path.to_path_buf() });
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temporary = tempfile::Builder::new().prefix(".tokamak-").tempfile_in(folder).map_err(io)?;
    temporary.write_all(new).map_err(io)?;
    temporary.as_file().sync_all().map_err(io)?;
    let permissions = std::fs::metadata(path).map_err(io)?.permissions();
    std::fs::set_permissions(temporary.path(), permissions).map_err(io)?;
    temporary.persist(path).map_err(|err| io(err.error))?;
    Ok(())
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
        write_if_unchanged(&path, "x = (\n", "x = ()\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x = ()\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);

        // someone else changed it: left alone
        let err = write_if_unchanged(&path, "x = (\n", "y\n").unwrap_err();
        assert!(err.to_string().contains("changed on disk since it was read"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x = ()\n");
        let leftovers: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
    }
}
