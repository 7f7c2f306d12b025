//! Shadow folders: a temporary mirror of the project in which the checked file holds the
//! buffer's unsaved text, and every other open document whose text is not the disk's holds
//! that text, for checkers that read files, not stdin (pyright, tsc, generic ones).
//!
//! Along the path from the root to the file, directories are real and every other entry is
//! a symlink to the project's, so relative imports, `node_modules`, `tsconfig.json` and
//! `pyproject.toml` all resolve as they would in the project. Dropping the mirror removes it.

use std::path::{Component, Path, PathBuf};

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

/// Mirrors `root` with `text` in place of `file` (which must be inside `root`), and each of
/// `others` (path, text; those outside `root` are left out) in place of its file: the other
/// open documents whose text is not the disk's, so an import of one resolves to what the
/// user has. An other that cannot be placed is left as the disk has it (said in the log): it
/// never costs the check of `file`.
pub fn mirror(root: &Path, file: &Path, text: &str, others: &[(PathBuf, String)]) -> std::io::Result<Mirror> {
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
        link_siblings(&real, &shadow, Some(name))?;
        real.push(name);
        shadow.push(name);
        if index + 1 < components.len() {
            std::fs::create_dir(&shadow)?;
        }
    }
    std::fs::write(&shadow, text)?;
    for (path, other) in others {
        let Ok(inside) = path.strip_prefix(root) else { continue };
        if inside == relative || !inside.components().all(|c| matches!(c, Component::Normal(_))) {
            continue;
        }
        if let Err(err) = overlay(root, dir.path(), inside, other) {
            tracing::debug!("{} is checked against the disk's text: {err}", path.display());
        }
    }
    Ok(Mirror { dir, file: shadow })
}

/// Puts `text` at `relative` in the mirror at `mirror`: each folder on the way that is a link
/// into the project becomes a real folder of links, and the file's link a real file.
fn overlay(root: &Path, mirror: &Path, relative: &Path, text: &str) -> std::io::Result<()> {
    let mut real = root.to_path_buf();
    let mut shadow = mirror.to_path_buf();
    let components: Vec<_> = relative.components().collect();
    for (index, component) in components.iter().enumerate() {
        real.push(component);
        shadow.push(component);
        let kind = std::fs::symlink_metadata(&shadow).map(|m| m.file_type());
        if index + 1 == components.len() {
            if kind.is_ok() {
                std::fs::remove_file(&shadow)?;
            }
            return std::fs::write(&shadow, text);
        }
        match kind {
            Ok(kind) if kind.is_symlink() => {
                std::fs::remove_file(&shadow)?;
                std::fs::create_dir(&shadow)?;
                link_siblings(&real, &shadow, None)?;
            }
            Ok(kind) if kind.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!("{} is not a folder", real.display())));
            }
            // a folder the disk does not have (a new, unsaved file's)
            Err(_) => std::fs::create_dir(&shadow)?,
        }
    }
    Ok(())
}

/// Symlinks every entry of `real` but `except` into `shadow`.
fn link_siblings(real: &Path, shadow: &Path, except: Option<&std::ffi::OsStr>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(real) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        if Some(entry.file_name().as_os_str()) == except {
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

        let mirror = mirror(root, &root.join("src/pkg/main.ts"), "in the buffer", &[]).unwrap();
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

    #[test]
    fn other_buffers_are_real_files_in_the_mirror() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        std::fs::create_dir_all(root.join("pkg/sub")).unwrap();
        std::fs::write(root.join("models.py"), "on disk").unwrap();
        std::fs::write(root.join("test_models.py"), "test on disk").unwrap();
        std::fs::write(root.join("pkg/sub/deep.py"), "deep on disk").unwrap();
        std::fs::write(root.join("pkg/other.py"), "other").unwrap();
        let others = vec![
            (root.join("models.py"), "models in the buffer".to_string()),
            (root.join("pkg/sub/deep.py"), "deep in the buffer".to_string()),
            (root.join("pkg/new.py"), "a new unsaved file".to_string()),
            (PathBuf::from("/elsewhere/x.py"), "outside".to_string()),
        ];
        let mirror = mirror(root, &root.join("test_models.py"), "test in the buffer", &others).unwrap();
        let read = |p: &str| std::fs::read_to_string(mirror.root().join(p)).unwrap();
        assert_eq!(read("test_models.py"), "test in the buffer");
        assert_eq!(read("models.py"), "models in the buffer");
        assert!(!mirror.root().join("models.py").is_symlink());
        assert_eq!(read("pkg/sub/deep.py"), "deep in the buffer");
        assert_eq!(read("pkg/new.py"), "a new unsaved file");
        assert!(mirror.root().join("pkg/other.py").is_symlink());
        assert_eq!(read("pkg/other.py"), "other");
        assert_eq!(std::fs::read_to_string(root.join("models.py")).unwrap(), "on disk");
        assert!(!mirror.root().join("elsewhere").exists());
        // an other that cannot be placed (a file where its folder should be) costs nothing
        let clash = vec![(root.join("models.py/inner.py"), "x".to_string())];
        let mirror = super::mirror(root, &root.join("test_models.py"), "t", &clash).unwrap();
        assert_eq!(std::fs::read_to_string(mirror.root().join("test_models.py")).unwrap(), "t");
    }
}
