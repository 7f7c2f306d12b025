//! Files that are not open: read from disk on demand, and walked with `.gitignore` respected.

use std::path::{Path, PathBuf};

use crate::text::Language;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {reason}", path.display())]
    Io { path: PathBuf, reason: std::io::Error },
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{} looks binary (it contains NUL bytes)", path.display())]
    Binary { path: PathBuf },
}

/// Reads a text file. Binary and non-UTF-8 files are refused with a clear error.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let bytes = std::fs::read(path).map_err(|reason| ReadError::Io { path: path.to_path_buf(), reason })?;
    if bytes.contains(&0) {
        return Err(ReadError::Binary { path: path.to_path_buf() });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8 { path: path.to_path_buf() })
}

/// The files under `roots` that Tokamak parses: a file named directly is always included;
/// folders are walked with `.gitignore`, `.ignore` and hidden-file rules applied (also
/// outside a git repository). Sorted, without duplicates.
pub fn source_files(roots: &[PathBuf]) -> Result<Vec<PathBuf>, ReadError> {
    let mut files = Vec::new();
    for root in roots {
        let metadata =
            std::fs::metadata(root).map_err(|reason| ReadError::Io { path: root.clone(), reason })?;
        if !metadata.is_dir() {
            files.push(root.clone());
            continue;
        }
        files.extend(crate::walk::project(root).files().filter(|path| Language::from_path(path).is_parsed()));
    }
    files.sort();
    files.dedup();
    Ok(files)
}
