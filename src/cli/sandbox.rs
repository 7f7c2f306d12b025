//! `tokamak sandbox`: which backend confines the agent's commands in this project on this
//! machine, what it confines, and why the others are not used — as `tokamak model check`
//! and `:checkhealth` do for theirs.

use std::path::Path;

use crate::config::SandboxMode;
use crate::executor::{Placement, placement, survey};

/// What `tokamak sandbox` found.
#[derive(Debug)]
pub struct SandboxCheck {
    pub lines: Vec<String>,
    /// A backend confines the commands (or the user said `off`): nothing is asked for want of
    /// one.
    pub confined: bool,
}

/// The sandbox `root`'s settings choose here.
pub fn check_sandbox(root: &Path) -> Result<SandboxCheck, crate::config::ConfigError> {
    let settings = super::load_settings(root, serde_json::Value::Null)?.settings.sandbox;
    let mut lines =
        vec![format!("sandbox for {} (backend = \"{}\")", root.display(), settings.backend.name())];
    let home = dirs::home_dir();
    let hidden =
        crate::sandbox::secrets::hidden(home.as_deref(), &settings.hide, &crate::places::cache_dir());
    let policy =
        crate::sandbox::Policy { writable: Vec::new(), hidden: hidden.clone(), network: settings.network };
    let confined = match placement(&settings) {
        Ok(Placement::Copy { ask, .. }) => {
            if settings.backend == SandboxMode::Off {
                lines.push("  in force: none (sandbox = \"off\"): commands run unconfined and unasked, in a copy of the workspace".to_string());
            } else {
                lines.push("  in force: none — no backend works here: each command the model asks for is asked of you first".to_string());
            }
            !ask
        }
        Ok(placed) => {
            let detail = survey(&settings)
                .into_iter()
                .find(|(name, _)| *name == placed.backend())
                .and_then(|(_, found)| found.ok())
                .unwrap_or_default();
            lines.push(format!("  in force: {} — {detail}", placed.backend()));
            let confines = match &placed {
                Placement::Container(engine) => format!(
                    "each command in a fresh container of {}: the run's copy at the workspace's path and nothing else of this machine; {}; at most {} CPUs, {} MiB, {} processes",
                    engine.image,
                    if settings.network { "network allowed" } else { "no network" },
                    settings.container.cpus,
                    settings.container.memory_mb,
                    settings.container.pids
                ),
                _ => policy.describe(),
            };
            lines.push(format!("  confines: {confines}"));
            true
        }
        Err(err) => {
            lines.push(format!("  in force: none — {err}; commands are refused"));
            false
        }
    };
    let shown: Vec<String> = hidden
        .iter()
        .map(|path| match home.as_deref().and_then(|home| path.strip_prefix(home).ok()) {
            Some(inside) => format!("~/{}", inside.display()),
            None => path.display().to_string(),
        })
        .collect();
    let shown = if shown.is_empty() { "nothing found".to_string() } else { shown.join(", ") };
    let extra =
        if settings.env.is_empty() { String::new() } else { format!(" and {}", settings.env.join(", ")) };
    if settings.backend == SandboxMode::Container {
        // a container sees none of this machine but the copy, and none of its environment
        lines.push("  hidden: all of this machine but the run's copy (and, on a local engine, the dependency folders, read-only)".to_string());
        lines.push(format!("  environment: the image's own PATH, the locale, TERM{extra}; HOME and TMPDIR in the container's /tmp"));
    } else {
        lines.push(format!("  hidden: {shown}"));
        lines.push(format!(
            "  environment: PATH, the locale, TERM, the toolchains' variables{extra}; HOME and TMPDIR private"
        ));
    }
    let checkers = crate::sandbox::tools::Confinement::choose(&settings);
    lines.push(if checkers.confines() {
        format!(
            "  checkers: confined by {} — they read the project and the system but not {shown}, write only their caches and a scratch folder, no network",
            checkers.describe()
        )
    } else if settings.backend == SandboxMode::Off {
        "  checkers: not confined (sandbox = \"off\")".to_string()
    } else {
        "  checkers: not confined — no backend works here".to_string()
    });
    for (name, found) in survey(&settings) {
        lines.push(match found {
            Ok(detail) => format!("  {name}: usable ({detail})"),
            Err(reason) => format!("  {name}: not usable ({reason})"),
        });
    }
    Ok(SandboxCheck { lines, confined })
}
