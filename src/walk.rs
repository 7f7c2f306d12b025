//! The one way Tokamak walks a folder: the `ignore` crate's walker, set one way. Never through
//! a link; a project's files are what its ignore files leave — `.gitignore` read whether or not
//! the folder is a repository, `.ignore`, git's own excludes — with no hidden file or folder
//! and never `.git`, unless asked for otherwise. The index, the planner's listing, `list` and
//! `search`, the checkpoints and the watcher walk through it, so they agree on what a
//! project's files are; the shadow copies walk [`everything`]. A folder is copied one way too
//! ([`copy`]: a dry run's workspace, a benchmark's case, a sandbox's repository).

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use ignore::DirEntry;

/// Which entries a walk leaves out, with all they hold; `true`: walked.
type Keep = Arc<dyn Fn(&DirEntry) -> bool + Send + Sync>;

/// A walk under one folder, set up by [`project`] or [`everything`] and the methods below.
#[derive(Clone)]
pub struct Walk {
    root: PathBuf,
    hidden: bool,
    ignore_files: bool,
    git: bool,
    keep: Option<Keep>,
}

/// The project's files under `root`, as every reader of them sees them: its ignore files
/// respected (with or without git), hidden files and folders and `.git` left out, no link
/// followed.
pub fn project(root: &Path) -> Walk {
    Walk { root: root.to_path_buf(), hidden: false, ignore_files: true, git: false, keep: None }
}

/// Every file, folder and link under `root`, `.git`, hidden and ignored ones too; no link
/// followed. For the copies that must hold a project whole.
pub fn everything(root: &Path) -> Walk {
    Walk { root: root.to_path_buf(), hidden: true, ignore_files: false, git: true, keep: None }
}

impl Walk {
    /// Hidden files and folders too (`.github/`, `.env.example`); `.git` still not.
    pub fn with_hidden(mut self) -> Walk {
        self.hidden = true;
        self
    }

    /// Files the ignore files name too (a build's output, a log).
    pub fn with_ignored(mut self) -> Walk {
        self.ignore_files = false;
        self
    }

    /// Leaves out each entry `keep` says no to, and everything a folder so left holds.
    pub fn keeping(mut self, keep: impl Fn(&DirEntry) -> bool + Send + Sync + 'static) -> Walk {
        self.keep = Some(Arc::new(keep));
        self
    }

    /// Every entry walked, the root first, the names in each folder in order; a part that
    /// cannot be read is skipped (said in the log).
    pub fn entries(&self) -> impl Iterator<Item = DirEntry> + use<> {
        let mut builder = ignore::WalkBuilder::new(&self.root);
        builder
            .follow_links(false)
            .hidden(!self.hidden)
            .parents(self.ignore_files)
            .ignore(self.ignore_files)
            .git_ignore(self.ignore_files)
            .git_global(self.ignore_files)
            .git_exclude(self.ignore_files)
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        let (git, keep) = (self.git, self.keep.clone());
        builder.filter_entry(move |entry| {
            (git || entry.depth() == 0 || entry.file_name() != ".git")
                && keep.as_ref().is_none_or(|keep| keep(entry))
        });
        let project = !self.git;
        builder.build().filter_map(move |entry| match entry {
            Ok(entry) => Some(entry),
            // a project's part unread is worth a line; a copy's (a command's `chmod`) is not
            Err(err) if project => {
                tracing::warn!("a part of the project was not read: {err}");
                None
            }
            Err(err) => {
                tracing::debug!("a part of a folder was not walked: {err}");
                None
            }
        })
    }

    /// The regular files walked (not folders, not links), in the walk's order.
    pub fn files(&self) -> impl Iterator<Item = PathBuf> + use<> {
        self.entries().filter(|entry| entry.file_type().is_some_and(|t| t.is_file())).map(DirEntry::into_path)
    }

    /// The regular files walked, relative to the root with `/` between names, sorted.
    pub fn relative_files(&self) -> Vec<String> {
        let root = self.root.clone();
        let mut files: Vec<String> = self
            .files()
            .filter_map(|path| {
                let relative = path.strip_prefix(&root).ok()?;
                let names: Vec<String> =
                    relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                Some(names.join("/"))
            })
            .collect();
        files.sort();
        files
    }
}

/// What [`copy`] makes of one entry of the folder it copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// A file copied, a folder copied with all it holds, a link made again as it is.
    Copy,
    /// A link to the entry (a dependency folder: read, never changed).
    Link,
    /// An empty folder in its place (`.git`: the copy is still a project's root).
    Empty,
    /// Nothing.
    Left,
}

/// Copies the folder `from` to `to` (made when missing), each entry as `choose` says given its
/// path relative to `from` and its type. No link is followed; anything but files, folders and
/// links (a socket, a fifo) is left out.
pub fn copy(
    from: &Path,
    to: &Path,
    choose: &dyn Fn(&Path, &std::fs::FileType) -> Copied,
) -> std::io::Result<()> {
    fn copy_under(
        from: &Path,
        to: &Path,
        relative: &Path,
        choose: &dyn Fn(&Path, &std::fs::FileType) -> Copied,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let (source, target) = (entry.path(), to.join(entry.file_name()));
            let relative = relative.join(entry.file_name());
            let kind = entry.file_type()?;
            match choose(&relative, &kind) {
                Copied::Left => {}
                Copied::Empty => std::fs::create_dir_all(&target)?,
                Copied::Link => std::os::unix::fs::symlink(&source, &target)?,
                Copied::Copy if kind.is_symlink() => {
                    std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
                }
                Copied::Copy if kind.is_dir() => copy_under(&source, &target, &relative, choose)?,
                Copied::Copy if kind.is_file() => {
                    std::fs::copy(&source, &target)?;
                }
                Copied::Copy => {}
            }
        }
        Ok(())
    }
    copy_under(from, to, Path::new(""), choose)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("src/app.py", "x = 1\n"),
            ("src/b.py", ""),
            ("build/out.js", ""),
            ("notes.log", ""),
            (".github/workflows/ci.yml", ""),
            (".env", "KEY=1\n"),
            (".git/config", ""),
            (".gitignore", "build/\n*.log\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("linked")).unwrap();
        dir
    }

    #[test]
    fn a_projects_files_leave_out_what_it_ignores_hidden_files_git_and_links() {
        let dir = tree();
        assert_eq!(project(dir.path()).relative_files(), ["src/app.py", "src/b.py"]);
        assert_eq!(
            project(dir.path()).with_hidden().relative_files(),
            [".env", ".github/workflows/ci.yml", ".gitignore", "src/app.py", "src/b.py"]
        );
        assert_eq!(
            project(dir.path()).with_ignored().relative_files(),
            ["build/out.js", "notes.log", "src/app.py", "src/b.py"]
        );
    }

    #[test]
    fn gitignore_counts_without_a_repository() {
        let dir = tree();
        std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
        assert_eq!(project(dir.path()).relative_files(), ["src/app.py", "src/b.py"]);
    }

    #[test]
    fn everything_holds_git_and_ignored_files_and_yields_links_unfollowed() {
        let dir = tree();
        let files = everything(dir.path()).relative_files();
        assert!(
            files.contains(&".git/config".to_string()) && files.contains(&"notes.log".to_string()),
            "{files:?}"
        );
        assert!(!files.iter().any(|f| f.starts_with("linked/")), "{files:?}");
        let link = everything(dir.path()).entries().find(|e| e.file_name() == "linked").unwrap();
        assert!(link.file_type().unwrap().is_symlink());
    }

    #[test]
    fn a_copy_does_with_each_entry_what_it_is_told() {
        let dir = tree();
        let to = tempfile::tempdir().unwrap();
        let copied = to.path().join("copy");
        copy(dir.path(), &copied, &|relative, kind| match relative.to_str().unwrap_or_default() {
            ".git" => Copied::Empty,
            "build" => Copied::Link,
            "notes.log" | ".github" => Copied::Left,
            _ if kind.is_dir() || kind.is_file() || kind.is_symlink() => Copied::Copy,
            _ => Copied::Left,
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(copied.join("src/app.py")).unwrap(), "x = 1\n");
        assert_eq!(std::fs::read_dir(copied.join(".git")).unwrap().count(), 0, "an empty .git");
        assert_eq!(std::fs::read_link(copied.join("build")).unwrap(), dir.path().join("build"));
        assert_eq!(std::fs::read_link(copied.join("linked")).unwrap(), dir.path().join("src"), "as it was");
        assert!(!copied.join("notes.log").exists() && !copied.join(".github").exists());
        // the copy is the source's but for what was left out or linked
        let mut expected = everything(dir.path()).relative_files();
        expected.retain(|f| !f.starts_with(".git/") && !f.starts_with(".github/") && f != "notes.log");
        expected.retain(|f| !f.starts_with("build/"));
        let got: Vec<String> = everything(&copied).relative_files();
        assert_eq!(got, expected);
    }

    #[test]
    fn what_keeping_refuses_is_not_walked_into() {
        let dir = tree();
        let walk = project(dir.path()).keeping(|entry| entry.file_name() != "src");
        assert!(walk.relative_files().is_empty());
        // files come in the order of their names, folder by folder
        let walk = everything(dir.path()).keeping(|entry| entry.file_name() != ".git");
        let order: Vec<PathBuf> = walk.files().collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert!(order.len() >= 6, "{order:?}");
        assert_eq!(order, sorted);
    }
}
