//! `tokamak checkpoints`, `tokamak rollback ID` and `tokamak trust [PATH]`: the runs that can
//! be undone, undoing one, and trusting a folder's own settings and programs.

use std::path::Path;

use super::session::{self, Approval};
use crate::executor::{RollbackError, RollbackReport};
use crate::history::CheckpointInfo;

/// The checkpoints of the workspace at `root`, newest first.
pub async fn checkpoints(root: &Path) -> anyhow::Result<Vec<CheckpointInfo>> {
    let session = session::open(root, serde_json::Value::Null, Approval::Unattended, false, true)?;
    let history = session.history.as_ref().ok_or_else(|| anyhow::anyhow!("no checkpoints"))?;
    let checkpoints =
        history.checkpoints().await.map_err(|reason| anyhow::anyhow!("no checkpoints: {reason}"))?;
    Ok(checkpoints.list().await?)
}

/// Rolls back the run of checkpoint `id` in the workspace at `root`.
pub async fn rollback(root: &Path, id: &str, force: bool) -> anyhow::Result<RollbackReport> {
    let session = session::open(root, serde_json::Value::Null, Approval::Unattended, false, true)?;
    let run_id = format!("tokamak-rollback-{:06x}", fastrand::u32(..0x100_0000));
    match crate::executor::rollback(session::executor(&session)?, id, force, &run_id).await {
        Ok(report) => Ok(report),
        // the flag that does it, by name
        Err(err @ (RollbackError::ChangedSince(_) | RollbackError::CannotRestore(_))) => {
            Err(anyhow::anyhow!("{err}: tokamak rollback {id} --force"))
        }
        Err(err) => Err(err.into()),
    }
}

/// Trusts (or, with `remove`, stops trusting) `folder`; returns the message to print.
pub fn trust(folder: &Path, remove: bool) -> anyhow::Result<String> {
    let file = crate::places::user_config_file();
    if remove {
        let folder = crate::trust::untrust_folder(folder)?;
        return Ok(format!("{} is no longer trusted ({}).", folder.display(), file.display()));
    }
    let folder = crate::trust::trust_folder(folder)?;
    Ok(format!(
        "Trusted {}: its tokamak.toml settings and the programs inside it are used from now on (written to {}).",
        folder.display(),
        file.display()
    ))
}
