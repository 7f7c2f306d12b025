//! What confines a command the agent runs on this machine (SPEC X3), whatever runs it:
//! the policy every backend carries out — write only to the run's copy and a private home
//! and temp folder, read the system, the project and the toolchain but not the user's
//! secrets, no network unless the project allows it, no process left behind, an environment
//! by allow-list — and the backends that carry it out without bubblewrap: Landlock and
//! seccomp applied by Tokamak's own helper (`landlock.rs`, Linux 5.13+), which also reaps
//! every process the command leaves (`reaper.rs`), and Seatbelt profiles for macOS's
//! `sandbox-exec` (`seatbelt.rs`), and containers of a Docker- or Podman-compatible engine,
//! local or remote (`container.rs`). Bubblewrap's arguments are made with the copy
//! (`executor/sandbox.rs`), from the same policy.

pub mod bwrap;
pub mod container;
pub mod environment;
#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(target_os = "linux")]
mod reaper;
pub mod seatbelt;
pub mod secrets;
#[cfg(target_os = "linux")]
mod supervisor;
pub mod tools;

use std::path::PathBuf;

/// How the Landlock helper's own complaints start (a command it could not confine or start).
pub const HELPER_SAYS: &str = "tokamak-sandbox: ";

/// What a confined command may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Folders it may write (and read): the run's copy, its private home and temp folder.
    pub writable: Vec<PathBuf>,
    /// Paths it may not read: the user's secrets, Tokamak's own state, what the user added.
    pub hidden: Vec<PathBuf>,
    /// It may reach the network.
    pub network: bool,
}

impl Policy {
    /// One line for `tokamak sandbox` and a command's result.
    pub fn describe(&self) -> String {
        format!(
            "writes only to the run's copy and a private home and temp folder; {} hidden; {}",
            match self.hidden.len() {
                1 => "1 secret path".to_string(),
                n => format!("{n} secret paths"),
            },
            if self.network { "network allowed" } else { "no network" }
        )
    }
}
