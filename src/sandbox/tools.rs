//! The checkers confined (SPEC X3): ruff, mypy, pyright, tsc, eslint and the user's own read
//! what the model wrote and may run the project's code (eslint's configuration, mypy's
//! plugins), so they start under the best backend this machine has — bubblewrap, else
//! Landlock, else Seatbelt — reading the system and the project but not the user's secrets,
//! writing only a scratch folder of their own and the caches they keep, reaching no network
//! and leaving no process behind. Their environment is the commands' allow-list, with the
//! real home (their own settings live there) and the scratch folder as the temp folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::{SandboxMode, SandboxSettings};

/// Variables a checker may read besides the commands' allow-list: its own settings.
const TOOL_PREFIXES: &[&str] =
    &["MYPY", "RUFF_", "ESLINT", "PYRIGHT", "TSC_", "TS_NODE", "XDG_CONFIG_", "XDG_DATA_"];

/// How checkers start on this machine.
#[derive(Debug, Default)]
pub struct Confinement {
    backend: Backend,
    hidden: Vec<PathBuf>,
    extra_env: Vec<String>,
    /// Made at the first checker's start, removed with the confinement.
    scratch: std::sync::OnceLock<Option<tempfile::TempDir>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Backend {
    Bwrap(PathBuf),
    Landlock(PathBuf),
    Seatbelt(PathBuf),
    /// Not confined: why.
    #[default]
    None,
}

/// A checker's process as it is started: the program, its arguments, and the environment it
/// gets in place of Tokamak's (`None`: Tokamak's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Option<Vec<(OsString, OsString)>>,
    /// Started under the Landlock helper, which reaps what the checker leaves when asked to
    /// stop (SIGTERM) rather than killed.
    pub reaper: bool,
}

impl Confinement {
    /// The best backend for `settings`: none with `backend = "off"`; else bubblewrap,
    /// Landlock or Seatbelt, whichever works here first (a container runs the model's commands,
    /// not the checkers, which run where the editor is).
    pub fn choose(settings: &SandboxSettings) -> Confinement {
        let backend = if settings.backend == SandboxMode::Off { Backend::None } else { best() };
        let home = dirs::home_dir();
        let hidden = super::secrets::hidden(home.as_deref(), &settings.hide, &crate::places::cache_dir());
        Confinement { backend, hidden, extra_env: settings.env.clone(), scratch: Default::default() }
    }

    /// What confines the checkers, for `tokamak sandbox` and the log.
    pub fn describe(&self) -> &'static str {
        match self.backend {
            Backend::Bwrap(_) => "bubblewrap",
            Backend::Landlock(_) => "Landlock",
            Backend::Seatbelt(_) => "Seatbelt",
            Backend::None => "nothing",
        }
    }

    pub fn confines(&self) -> bool {
        self.backend != Backend::None
    }

    fn scratch(&self) -> Option<&Path> {
        self.scratch
            .get_or_init(|| tempfile::Builder::new().prefix("tokamak-checkers-").tempdir().ok())
            .as_ref()
            .map(tempfile::TempDir::path)
    }

    /// How `program args` starts, able to write only `writable` (its caches; made here when
    /// missing) and its scratch folder. Unconfined as it is without a backend or a scratch
    /// folder.
    /// `writable` must lie below `cwd`.
    pub fn start(&self, program: &Path, args: &[String], cwd: &Path, writable: &[PathBuf]) -> Started {
        let plain = Started { program: program.to_path_buf(), args: args.to_vec(), env: None, reaper: false };
        let Some(scratch) = self.scratch().filter(|_| self.confines()) else { return plain };
        // a cache folder that is a link (a repository may commit `.mypy_cache -> ~`) or leads
        // out of where the checker runs is not made writable
        let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let below = |path: &Path| std::fs::canonicalize(path).is_ok_and(|real| real.starts_with(&real_cwd));
        let inside = |path: &PathBuf| {
            // what exists of it already leads nowhere else (`build -> ~` makes no `~/cache`)
            let existing = path.ancestors().find(|at| std::fs::symlink_metadata(at).is_ok());
            existing.is_some_and(below)
                && std::fs::create_dir_all(path).is_ok()
                && std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
                && below(path)
        };
        let mut writable: Vec<PathBuf> = writable.iter().filter(|path| inside(path)).cloned().collect();
        writable.push(scratch.to_path_buf());
        let env = Some(self.environment(scratch));
        let mut argv = vec![program.to_string_lossy().into_owned()];
        argv.extend(args.iter().cloned());
        let policy = super::Policy { writable, hidden: self.hidden.clone(), network: false };
        let (program, args) = match &self.backend {
            Backend::Bwrap(bwrap) => (bwrap.clone(), bwrap_args(&policy, &argv)),
            #[cfg(target_os = "linux")]
            Backend::Landlock(helper) => (helper.clone(), super::landlock::command_line(&policy, &argv)),
            Backend::Seatbelt(sandbox_exec) => {
                (sandbox_exec.clone(), super::seatbelt::command_line(&policy, &argv))
            }
            _ => return plain,
        };
        let reaper = matches!(self.backend, Backend::Landlock(_));
        Started { program, args, env, reaper }
    }

    fn environment(&self, scratch: &Path) -> Vec<(OsString, OsString)> {
        let from: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let mut extra = self.extra_env.clone();
        extra.extend(
            from.iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .filter(|name| TOOL_PREFIXES.iter().any(|prefix| name.starts_with(prefix))),
        );
        let home = dirs::home_dir();
        let real = home.clone().unwrap_or_else(|| scratch.to_path_buf());
        super::environment::allowed(from, &extra, home.as_deref(), &real, scratch)
    }
}

/// The best backend this machine has.
fn best() -> Backend {
    if let Ok(bwrap) = super::bwrap::usable() {
        return Backend::Bwrap(bwrap.clone());
    }
    #[cfg(target_os = "linux")]
    if let Ok((helper, _)) = super::landlock::usable() {
        return Backend::Landlock(helper.clone());
    }
    let sandbox_exec = Path::new(super::seatbelt::SANDBOX_EXEC);
    if cfg!(target_os = "macos") && sandbox_exec.is_file() {
        return Backend::Seatbelt(sandbox_exec.to_path_buf());
    }
    Backend::None
}

/// bubblewrap's arguments for a checker: the whole system read-only (its own `/tmp`
/// included: the buffers and mirrors it reads are there), the hidden paths covered, the
/// writable folders bound writable, no network, its own process and IPC namespaces.
fn bwrap_args(policy: &super::Policy, argv: &[String]) -> Vec<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut args: Vec<String> =
        ["--die-with-parent", "--new-session", "--unshare-net"].iter().map(|s| s.to_string()).collect();
    args.extend(super::bwrap::SYSTEM.iter().map(|s| s.to_string()));
    // a writable folder inside a hidden one stays
    args.extend(super::bwrap::hiding(&policy.hidden, |secret| {
        policy.writable.iter().any(|w| w.starts_with(secret))
    }));
    for folder in &policy.writable {
        args.extend(["--bind".to_string(), path(folder), path(folder)]);
    }
    args.push("--".to_string());
    args.extend(argv.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bubblewrap_hides_the_secrets_and_binds_only_the_writable() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".netrc"), "x").unwrap();
        let cache = tempfile::tempdir().unwrap();
        let policy = super::super::Policy {
            writable: vec![cache.path().to_path_buf()],
            hidden: vec![home.path().join(".ssh"), home.path().join(".netrc")],
            network: false,
        };
        let args = bwrap_args(&policy, &["mypy".to_string(), "app.py".to_string()]);
        let text = args.join(" ");
        assert!(text.contains(&format!("--tmpfs {}", home.path().join(".ssh").display())), "{text}");
        assert!(
            text.contains(&format!("--ro-bind /dev/null {}", home.path().join(".netrc").display())),
            "{text}"
        );
        assert!(text.contains(&format!("--bind {0} {0}", cache.path().display())), "{text}");
        assert!(text.contains("--unshare-net") && text.ends_with("-- mypy app.py"), "{text}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_cache_folder_that_is_a_link_is_not_made_writable() {
        let project = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), project.path().join(".mypy_cache")).unwrap();
        let confinement = Confinement {
            backend: Backend::Landlock(PathBuf::from("/bin/tokamak")),
            hidden: Vec::new(),
            extra_env: Vec::new(),
            scratch: Default::default(),
        };
        std::os::unix::fs::symlink(elsewhere.path(), project.path().join("out")).unwrap();
        let cache = project.path().join(".mypy_cache");
        let through = project.path().join("out/cache");
        let own = project.path().join("build");
        let started =
            confinement.start(Path::new("/bin/mypy"), &[], project.path(), &[cache, through, own.clone()]);
        assert!(!elsewhere.path().join("cache").exists(), "no folder is made through a link");
        let line = started.args.join(" ");
        assert!(!line.contains(&elsewhere.path().display().to_string()), "{line}");
        assert!(!line.contains(".mypy_cache"), "{line}");
        assert!(line.contains(&format!("--write {}", own.display())), "{line}");
    }

    #[test]
    fn off_starts_a_checker_as_it_is() {
        let settings = SandboxSettings { backend: SandboxMode::Off, ..SandboxSettings::default() };
        let confinement = Confinement::choose(&settings);
        assert!(!confinement.confines());
        let started = confinement.start(Path::new("/bin/ruff"), &["check".to_string()], Path::new("/p"), &[]);
        assert_eq!(
            started,
            Started {
                program: PathBuf::from("/bin/ruff"),
                args: vec!["check".to_string()],
                env: None,
                reaper: false
            }
        );
    }
}
