//! bubblewrap (`bwrap`): whether it works on this machine — installed, and able to make its
//! namespaces here (a container or a kernel setting may forbid them) — tried once per
//! process — and what every sandbox of it starts from: the system read-only, the secrets
//! covered. The rest of its arguments are made where the command's copy is
//! (`executor/sandbox.rs`) and, for a checker, in `tools.rs`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What every bubblewrap sandbox of Tokamak's starts from: its own process, IPC and host-name
/// namespaces, the whole system read-only, its own `/dev` and `/proc`.
pub const SYSTEM: &[&str] = &[
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
];

/// The arguments that cover each of `hidden` — an empty folder over a folder, `/dev/null` over
/// a file — but those `keep` says stay and those reached through a link (each is hidden where
/// it lives: both are listed).
pub fn hiding(hidden: &[PathBuf], keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut args = Vec::new();
    for secret in hidden {
        let through_link = std::fs::canonicalize(secret).is_ok_and(|real| &real != secret);
        if through_link || keep(secret) {
            continue;
        }
        match std::fs::symlink_metadata(secret) {
            Ok(metadata) if metadata.is_dir() => args.extend(["--tmpfs".to_string(), path(secret)]),
            Ok(metadata) if !metadata.file_type().is_symlink() => {
                args.extend(["--ro-bind".to_string(), "/dev/null".to_string(), path(secret)])
            }
            _ => {}
        }
    }
    args
}

/// bwrap's path when it runs here, or why not.
pub fn usable() -> &'static Result<PathBuf, String> {
    static BWRAP: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BWRAP.get_or_init(|| {
        let path = which::which("bwrap").map_err(|_| "bubblewrap (bwrap) is not installed".to_string())?;
        let probe = std::process::Command::new(&path)
            .args(["--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output();
        match probe {
            Ok(output) if output.status.success() => Ok(path),
            Ok(output) => Err(format!(
                "bwrap does not work here ({})",
                String::from_utf8_lossy(&output.stderr).trim().lines().next().unwrap_or("it failed")
            )),
            Err(err) => Err(format!("bwrap cannot be started ({err})")),
        }
    })
}
