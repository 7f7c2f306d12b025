//! bubblewrap (`bwrap`): whether it works on this machine — installed, and able to make its
//! namespaces here (a container or a kernel setting may forbid them) — tried once per
//! process. Its arguments are made where the command's copy is (`executor/sandbox.rs`) and,
//! for a checker, in `tools.rs`.

use std::path::PathBuf;
use std::sync::OnceLock;

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
