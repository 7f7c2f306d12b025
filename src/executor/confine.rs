//! Path confinement (SPEC X2): every path an action names is resolved against the workspace
//! root, and refused — with one sentence for the model — when it leads outside (`..`, an
//! absolute path elsewhere, a symlink out) or into what an action never touches (`.git/`,
//! Tokamak's own state and settings).

use std::path::{Component, Path, PathBuf};

/// Why a path was refused; the text goes back to the model as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// What the path is wanted for: reading may look at more than writing may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A path inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// Absolute, under the canonical root; symlinks resolved for what exists.
    pub path: PathBuf,
    /// Relative to the root with `/` separators, as the model and the user see it (`.` for
    /// the root itself).
    pub relative: String,
    /// The path as named is itself a symbolic link (to `path`).
    pub link: bool,
}

/// The workspace root and what inside it is off limits.
#[derive(Debug, Clone)]
pub struct Confinement {
    root: PathBuf,
    /// Tokamak's own state (the cache folder), wherever it is.
    state: Vec<PathBuf>,
}

impl Confinement {
    /// `root` must exist; it is canonicalised once.
    pub fn new(root: &Path) -> std::io::Result<Confinement> {
        let root = std::fs::canonicalize(root)?;
        let state = [crate::places::cache_dir(), crate::places::config_dir()]
            .into_iter()
            .map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
            .collect();
        Ok(Confinement { root, state })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `raw` (relative to the root, or absolute) for `access`.
    pub fn resolve(&self, raw: &str, access: Access) -> Result<Confined, Refused> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(Refused("the path is empty".to_string()));
        }
        if trimmed.contains('\0') {
            return Err(Refused(format!("{trimmed:?} contains a NUL byte and is not a path")));
        }
        // models write Windows separators now and then; a backslash is never a file name's
        // part in a path an agent should touch
        let normal = trimmed.replace('\\', "/");
        let candidate = Path::new(&normal);
        let mut lexical = if candidate.is_absolute() { PathBuf::from("/") } else { self.root.clone() };
        for component in candidate.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {}
                Component::CurDir => {}
                Component::ParentDir => {
                    lexical.pop();
                }
                Component::Normal(part) => lexical.push(part),
            }
        }
        if !lexical.starts_with(&self.root) {
            let why = if candidate.is_absolute() {
                "it is outside the workspace"
            } else {
                "its `..` leads outside the workspace"
            };
            return Err(Refused(format!(
                "{trimmed} is refused: {why} ({}); use a path inside the workspace",
                self.root.display()
            )));
        }
        let resolved = resolve_links(&lexical);
        if !resolved.starts_with(&self.root) {
            return Err(Refused(format!(
                "{trimmed} is refused: it leads through a symbolic link to {}, outside the workspace",
                resolved.display()
            )));
        }
        let relative_path = resolved.strip_prefix(&self.root).unwrap_or(Path::new(""));
        if relative_path.components().any(|c| c.as_os_str() == ".git") {
            return Err(Refused(format!(
                "{trimmed} is refused: actions never read or write inside .git (use `run` with git for history)"
            )));
        }
        if self.state.iter().any(|state| resolved.starts_with(state)) {
            return Err(Refused(format!("{trimmed} is refused: it is Tokamak's own state")));
        }
        let relative = if relative_path.as_os_str().is_empty() {
            ".".to_string()
        } else {
            relative_path.to_string_lossy().to_string()
        };
        if access == Access::Write {
            if relative == "." {
                return Err(Refused(format!("{trimmed} is refused: it is the workspace root itself")));
            }
            if relative == crate::config::CONFIG_FILE || relative.starts_with(".tokamak/agents") {
                return Err(Refused(format!(
                    "{trimmed} is refused: it holds Tokamak's own settings and permissions, which only the user changes"
                )));
            }
        }
        let link = std::fs::symlink_metadata(&lexical).is_ok_and(|m| m.file_type().is_symlink());
        Ok(Confined { path: resolved, relative, link })
    }

    /// A path under the root as the model sees it (relative, `/`-separated).
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .map_or_else(|_| path.display().to_string(), |p| p.to_string_lossy().to_string())
    }
}

/// `path` with every symlink resolved: the whole path when it exists, else its deepest
/// existing ancestor resolved and the rest appended (a file about to be created under a
/// link to elsewhere is elsewhere).
fn resolve_links(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    // a dangling link: where it points decides
    if let Ok(target) = std::fs::read_link(path) {
        let base = path.parent().unwrap_or(Path::new("/"));
        let joined = if target.is_absolute() { target } else { base.join(target) };
        if joined != path {
            return resolve_links(&lexically_normal(&joined));
        }
    }
    let mut rest = Vec::new();
    let mut ancestor = path.to_path_buf();
    while !ancestor.exists() && std::fs::symlink_metadata(&ancestor).is_err() {
        match (ancestor.file_name().map(|n| n.to_os_string()), ancestor.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                ancestor = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut resolved = if ancestor == path { ancestor } else { resolve_links(&ancestor) };
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    resolved
}

fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// `(path, access) → Ok(relative) | Err(part of the reason)`.
    #[test]
    fn paths_are_confined_to_the_workspace() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("src/app.py"), "x = 1\n").unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        symlink(outside.path().join("secret.txt"), root.join("src/secret.py")).unwrap();
        symlink(outside.path().join("missing.txt"), root.join("dangling.txt")).unwrap();
        symlink(root.join("src"), root.join("inner")).unwrap();
        symlink("app.py", root.join("src/alias.py")).unwrap();
        let confinement = Confinement::new(&root).unwrap();
        let real_root = std::fs::canonicalize(&root).unwrap();
        let absolute_inside = format!("{}/src/app.py", real_root.display());

        use Access::{Read, Write};
        let cases: Vec<(&str, Access, Result<&str, &str>)> = vec![
            ("src/app.py", Read, Ok("src/app.py")),
            ("./src/../src/app.py", Write, Ok("src/app.py")),
            ("src/new/file.py", Write, Ok("src/new/file.py")),
            (&absolute_inside, Write, Ok("src/app.py")),
            ("src\\app.py", Read, Ok("src/app.py")),
            ("src/한글 파일 😀.py", Write, Ok("src/한글 파일 😀.py")),
            ("inner/app.py", Write, Ok("src/app.py")),
            ("src/alias.py", Write, Ok("src/app.py")),
            (".", Read, Ok(".")),
            ("../x", Write, Err("`..` leads outside")),
            ("src/../../x", Read, Err("`..` leads outside")),
            ("..\\..\\etc\\passwd", Read, Err("`..` leads outside")),
            ("/etc/passwd", Read, Err("outside the workspace")),
            ("out/secret.txt", Read, Err("symbolic link")),
            ("out/new.txt", Write, Err("symbolic link")),
            ("src/secret.py", Write, Err("symbolic link")),
            ("dangling.txt", Write, Err("symbolic link")),
            (".git/config", Read, Err("inside .git")),
            ("src/../.git/HEAD", Write, Err("inside .git")),
            (".", Write, Err("the workspace root itself")),
            ("", Read, Err("empty")),
            ("a\0b", Read, Err("NUL")),
            ("tokamak.toml", Write, Err("Tokamak's own settings")),
            (".tokamak/agents/coder.md", Write, Err("Tokamak's own settings")),
        ];
        for (raw, access, expected) in cases {
            let got = confinement.resolve(raw, access);
            match (expected, got) {
                (Ok(relative), Ok(confined)) => {
                    assert_eq!(confined.relative, relative, "{raw}");
                    assert!(confined.path.starts_with(&real_root), "{raw}: {}", confined.path.display());
                }
                (Err(part), Err(Refused(reason))) => assert!(reason.contains(part), "{raw}: {reason}"),
                (expected, got) => panic!("{raw} ({access:?}): expected {expected:?}, got {got:?}"),
            }
        }
        assert!(confinement.resolve("tokamak.toml", Read).is_ok(), "settings can be read");
    }
}
