//! The environment a command gets (issue 39's H7): an allow-list, not a deny-list — the few
//! variables a program needs to run (`PATH`, the locale, the terminal), `HOME` and the temp
//! folder pointed at private ones, the toolchains' own variables (virtual environments,
//! pyenv, rustup, nvm, Go, Java, …), and what the project lists in `[sandbox] env`. Nothing
//! else: no keys, no tokens, no agent sockets, no database URLs.

use std::ffi::OsString;
use std::path::Path;

/// Passed on as they are.
const PASSED: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    // Python
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONDONTWRITEBYTECODE",
    // JavaScript
    "NODE_PATH",
    "NODE_OPTIONS",
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "PNPM_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    // Rust, Go, JVM, .NET, Ruby
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "JAVA_HOME",
    "DOTNET_ROOT",
    "GEM_HOME",
    "GEM_PATH",
    "RBENV_ROOT",
    // building native code
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    // certificates (a corporate CA the toolchain needs)
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Toolchain homes that default to a folder in `HOME`: with `HOME` private, each is set to
/// where the user's is, when it exists and is not set already (so pyenv's shims, rustup's
/// proxies and nvm still find their toolchains).
const HOME_DEFAULTS: &[(&str, &str)] = &[
    ("PYENV_ROOT", ".pyenv"),
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
    ("NVM_DIR", ".nvm"),
    ("VOLTA_HOME", ".volta"),
    ("RBENV_ROOT", ".rbenv"),
    ("GOPATH", "go"),
];

/// The environment for a command: from `from` (this process's variables), those allowed and
/// those named in `extra`, with `HOME` at `home` and the temp folder at `tmp`, and the
/// toolchains that lived in the real home (`real_home`) still found.
pub fn allowed(
    from: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
    real_home: Option<&Path>,
    home: &Path,
    tmp: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = from
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            PASSED.contains(&name.as_ref())
                || name.starts_with("LC_")
                || extra.iter().any(|e| e.as_str() == name.as_ref())
        })
        .collect();
    if let Some(real_home) = real_home {
        for (name, folder) in HOME_DEFAULTS {
            let path = real_home.join(folder);
            if !env.iter().any(|(n, _)| n == name) && path.is_dir() {
                env.push((OsString::from(name), path.into_os_string()));
            }
        }
    }
    let xdg_cache = home.join(".cache");
    for (name, value) in
        [("HOME", home.as_os_str()), ("TMPDIR", tmp.as_os_str()), ("XDG_CACHE_HOME", xdg_cache.as_os_str())]
    {
        env.retain(|(n, _)| n != name);
        env.push((OsString::from(name), value.to_os_string()));
    }
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(n, v)| (OsString::from(n), OsString::from(v))).collect()
    }

    #[test]
    fn only_the_allowed_pass_and_home_is_private() {
        let real_home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(real_home.path().join(".pyenv")).unwrap();
        let from = vars(&[
            ("PATH", "/usr/bin"),
            ("LC_ALL", "C.UTF-8"),
            ("HOME", "/home/me"),
            ("PGPASSWORD", "x"),
            ("DATABASE_URL", "postgres://u:p@h/db"),
            ("AZURE_OPENAI_KEY", "k"),
            ("NPM_CONFIG__AUTH", "a"),
            ("SLACK_WEBHOOK_URL", "https://hooks"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("MY_FLAG", "1"),
            ("VIRTUAL_ENV", "/p/.venv"),
        ]);
        let env = allowed(
            from,
            &["MY_FLAG".to_string()],
            Some(real_home.path()),
            Path::new("/private/home"),
            Path::new("/private/tmp"),
        );
        let names: Vec<String> = env.iter().map(|(n, _)| n.to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            ["HOME", "LC_ALL", "MY_FLAG", "PATH", "PYENV_ROOT", "TMPDIR", "VIRTUAL_ENV", "XDG_CACHE_HOME"]
        );
        let value = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(value("HOME"), "/private/home");
        assert_eq!(value("PYENV_ROOT"), real_home.path().join(".pyenv").as_os_str());
    }
}
