//! Where Tokamak keeps its own state, outside every project: the user's settings
//! (`$XDG_CONFIG_HOME/tokamak`) and the per-project cache (`$XDG_CACHE_HOME/tokamak/<key>`:
//! checkpoints, audit logs, sandbox copies); and Tokamak's own binary, which the sandbox
//! starts as the Landlock helper.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// `$XDG_CONFIG_HOME/tokamak` (or `~/.config/tokamak`).
pub fn config_dir() -> PathBuf {
    dirs::config_dir().unwrap_or_else(|| std::env::temp_dir().join("tokamak-config")).join("tokamak")
}

/// The user's own settings file: `config_dir()/config.toml`.
pub fn user_config_file() -> PathBuf {
    config_dir().join("config.toml")
}

/// `$XDG_CACHE_HOME/tokamak` (or `~/.cache/tokamak`).
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir().unwrap_or_else(|| std::env::temp_dir().join("tokamak-cache")).join("tokamak")
}

/// Makes [`cache_dir`] readable by its owner only (0700), created if need be: it holds
/// checkpoints, audit logs and sandbox copies of projects — their `.env` files among them —
/// which no other user of the machine may read.
pub fn make_cache_private() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = cache_dir();
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    let mode = std::fs::metadata(&dir)?.permissions().mode() & 0o777;
    if mode != 0o700 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(dir)
}

/// The cache folder of one project: keyed by a hash of its canonical path, with the folder's
/// name in front so a person can find it.
pub fn project_cache(root: &Path) -> PathBuf {
    cache_dir().join("projects").join(project_key(root))
}

/// `<name>-<16 hex digits of sha256(canonical path)>`.
pub fn project_key(root: &Path) -> String {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let name: String = canonical
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .take(32)
                .collect()
        })
        .unwrap_or_default();
    let name = if name.is_empty() { "root".to_string() } else { name };
    format!("{name}-{}", hex(&digest[..8]))
}

/// Lower-case hexadecimal of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of `bytes` in hexadecimal.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The user's Claude Code folder: `CLAUDE_CONFIG_DIR` when set (as Claude Code reads it), else
/// `~/.claude` — where the user's own `CLAUDE.md` and skills are.
pub fn claude_home() -> Option<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => dirs::home_dir().map(|home| home.join(".claude")),
    }
}

/// Tokamak's own binary: this process's (whatever an editor's package named it), but for a
/// test binary of the library (cargo's `target/*/deps/`), which is not Tokamak: then the
/// `tokamak` built beside it.
pub fn own_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let folder = exe.parent()?;
    if folder.file_name().is_none_or(|name| name != "deps") {
        return Some(exe);
    }
    let beside = folder.parent()?.join("tokamak");
    beside.is_file().then_some(beside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_keys_are_stable_and_distinct() {
        let a = project_key(Path::new("/nonexistent/some project/app"));
        assert_eq!(a, project_key(Path::new("/nonexistent/some project/app")));
        assert!(a.starts_with("app-") && a.len() == "app-".len() + 16, "{a}");
        assert_ne!(a, project_key(Path::new("/nonexistent/other/app")));
        assert!(project_key(Path::new("/")).starts_with("root-"));
        assert_eq!(sha256_hex(b"abc").len(), 64);
    }
}
