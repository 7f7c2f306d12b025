//! Shadow folders: a temporary mirror of the project in which one file holds the buffer's
//! unsaved text, for checkers that read files, not stdin (pyright, tsc, generic ones).
//!
//! Along the path from the root to the file, directories are real and every other entry is
//! a symlink to the project's, so relative imports, `node_modules`, `tsconfig.json` and
//! `pyproject.toml` all resolve as they would in the project. Dropping the mirror removes it.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

pub struct Mirror {
    dir: TempDir,
    /// The buffer's copy, at the file's relative path inside the mirror.
    pub file: PathBuf,
}

impl Mirror {
    /// The mirror's root, standing for the project's.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// Mirrors `root` with `text` in place of `file` (which must be inside `root`).
pub fn mirror(root: &Path, file: &Path, text: &str) -> std::io::Result<Mirror> {
    let relative = file.strip_prefix(root).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not inside {}", file.display(), root.display()),
        )
    })?;
    let dir = tempfile::Builder::new().prefix("tokamak-shadow-").tempdir()?;
    let mut real = root.to_path_buf();
    let mut shadow = dir.path().to_path_buf();
    let components: Vec<_> = relative.components().collect();
    for (index, component) in components.iter().enumerate() {
        let name = component.as_os_str();
        link_siblings(&real, &shadow, name)?;
        real.push(name);
        shadow.push(name);
        if index + 1 < components.len() {
            std::fs::create_dir(&shadow)?;
        }
    }
    std::fs::write(&shadow, text)?;
    Ok(Mirror { dir, file: shadow })
}

/// Symlinks every entry of `real` except `except` into `shadow`.
fn link_siblings(real: &Path, shadow: &Path, except: &std::ffi::OsStr) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(real) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_name() == except {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), shadow.join(entry.file_name()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_the_project_around_the_buffer() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        std::fs::create_dir_all(root.join("src/pkg")).unwrap();
        std::fs::write(root.join("tsconfig.json"), "{}").unwrap();
        std::fs::write(root.join("src/util.ts"), "export const u = 1;").unwrap();
        std::fs::write(root.join("src/pkg/main.ts"), "on disk").unwrap();
        std::fs::write(root.join("src/pkg/sibling.ts"), "sibling").unwrap();

        let mirror = mirror(root, &root.join("src/pkg/main.ts"), "in the buffer").unwrap();
        assert_eq!(mirror.file, mirror.root().join("src/pkg/main.ts"));
        assert_eq!(std::fs::read_to_string(&mirror.file).unwrap(), "in the buffer");
        assert_eq!(std::fs::read_to_string(root.join("src/pkg/main.ts")).unwrap(), "on disk");
        assert_eq!(
            std::fs::read_to_string(mirror.root().join("src/util.ts")).unwrap(),
            "export const u = 1;"
        );
        assert_eq!(std::fs::read_to_string(mirror.root().join("src/pkg/sibling.ts")).unwrap(), "sibling");
        assert!(mirror.root().join("tsconfig.json").is_symlink());
        let kept = mirror.root().to_path_buf();
        drop(mirror);
        assert!(!kept.exists(), "the mirror is removed when dropped");
    }
}
