//! The slash commands a session offers its client's user (`available_commands_update`): a
//! plan without carrying it out, what Tokamak sees here, the runs that can be undone and the
//! undoing of one (ACP has no checkpoint method of its own), and trusting the folder.

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::run::RunEvent;
use crate::session::{Session, new_plan_id};

/// Each command: its name, what it does, and the hint for its input (if it takes one).
const COMMANDS: &[(&str, &str, Option<&str>)] = &[
    ("plan", "Make a plan for a goal without carrying it out", Some("the goal")),
    ("status", "What Tokamak sees here: the model, the checkers, trust, approval, the tests", None),
    ("checkpoints", "The runs that can be undone, newest first", None),
    ("rollback", "Undo a run (the newest, or the checkpoint or run id given)", Some("checkpoint or run id")),
    ("trust", "Trust this folder: its tokamak.toml and its programs are used from the next session", None),
    ("compact", "Compact the conversation: later prompts carry each earlier request by its first line", None),
];

/// The update that tells the client the commands.
pub fn available() -> acp::SessionUpdate {
    let commands = COMMANDS
        .iter()
        .map(|(name, description, hint)| {
            let command = acp::AvailableCommand::new(*name, *description);
            match hint {
                Some(hint) => command.input(acp::AvailableCommandInput::Unstructured(
                    acp::UnstructuredCommandInput::new(*hint),
                )),
                None => command,
            }
        })
        .collect();
    acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(commands))
}

/// A prompt that is one of the commands: its name and the rest of the text.
pub fn parse(prompt: &str) -> Option<(&'static str, String)> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let (name, input) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (name, _, _) = COMMANDS.iter().find(|(known, _, _)| *known == name)?;
    Some((name, input.trim().to_string()))
}

/// Carries out command `name` in `session`; the text to tell the user.
pub async fn run(
    session: &Session,
    name: &str,
    input: &str,
    images: &[crate::model::Image],
    cancel: &CancellationToken,
) -> String {
    let result = match name {
        "plan" => plan(session, input, images, cancel).await,
        "status" => Ok(status(session)),
        "checkpoints" => checkpoints(session).await,
        "rollback" => rollback(session, input).await,
        "trust" => trust(session),
        other => Err(format!("there is no command /{other}")),
    };
    result.unwrap_or_else(|err| format!("/{name} did not work: {err}"))
}

async fn plan(
    session: &Session,
    goal: &str,
    images: &[crate::model::Image],
    cancel: &CancellationToken,
) -> Result<String, String> {
    if goal.is_empty() {
        return Err("say the goal after /plan".to_string());
    }
    let context = session.task_context().ok_or("the agent cannot act on this folder")?;
    let plan_id = new_plan_id();
    let (plan, _) = crate::agent::plan_goal(&context, goal, None, images, &plan_id, cancel)
        .await
        .map_err(|err| err.to_string())?;
    session.editor.run_event(&plan_id, &RunEvent::Plan(plan.clone())).await;
    Ok(format!(
        "The plan for \"{goal}\" (not carried out; ask for the goal to carry it out):\n{}",
        plan.outline()
    ))
}

fn status(session: &Session) -> String {
    let settings = &session.settings;
    let model = match session.models().config(None) {
        Ok(config) => format!("{} at {}", config.model, config.base_url),
        Err(err) => format!("none ({err})"),
    };
    let checkers = match &settings.checkers.enable {
        Some(names) if names.is_empty() => "none".to_string(),
        Some(names) => names.join(", "),
        None => "every built-in one that is installed".to_string(),
    };
    let root = session.root.as_deref().map(|r| r.display().to_string()).unwrap_or_default();
    let trust = if session.trust.trusted {
        "trusted (its tokamak.toml and programs are used)"
    } else {
        "not trusted (its tokamak.toml's commands, checkers and model are ignored; /trust)"
    };
    let tests = match &settings.test.command {
        Some(command) => command.join(" "),
        None => "none ([test] command)".to_string(),
    };
    format!(
        "Folder: {root}, {trust}\nModel: {model}\nCheckers: {checkers}\nApproval: {}\nTests: {tests}\n",
        settings.approval.name()
    )
}

async fn checkpoints(session: &Session) -> Result<String, String> {
    let history = session.history.as_ref().ok_or("this session keeps no checkpoints")?;
    let checkpoints = history.checkpoints().await?;
    let list = checkpoints.list().await.map_err(|err| err.to_string())?;
    Ok(crate::history::table(&list))
}

async fn rollback(session: &Session, wanted: &str) -> Result<String, String> {
    let executor = session.executor.as_ref().ok_or("the agent cannot act on this folder")?;
    // a run going on in the folder (this session's or another's) is said first; the rollback
    // itself holds the folder's lock while it works
    if let Some(going) = crate::history::FolderLock::holder(executor.confinement.root()) {
        return Err(going);
    }
    let wanted = if wanted.is_empty() {
        let history = session.history.as_ref().ok_or("this session keeps no checkpoints")?;
        let list = history.checkpoints().await?.list().await.map_err(|err| err.to_string())?;
        list.first().map(|c| c.id.clone()).ok_or("there is no run to undo yet")?
    } else {
        wanted.to_string()
    };
    let run_id = format!("tokamak-rollback-{:06x}", fastrand::u32(..0x100_0000));
    let report =
        crate::executor::rollback(executor, &wanted, false, &run_id).await.map_err(|err| err.to_string())?;
    Ok(report.describe("/rollback "))
}

fn trust(session: &Session) -> Result<String, String> {
    let root = session.root.as_deref().ok_or("this session has no folder")?;
    let folder = crate::trust::trust_folder(root).map_err(|err| err.to_string())?;
    Ok(format!(
        "Trusted {}: its tokamak.toml settings and the programs inside it are used from the next session on.",
        folder.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_is_a_command_only_when_it_names_one() {
        assert_eq!(parse("/plan add a login page"), Some(("plan", "add a login page".to_string())));
        assert_eq!(parse("  /status"), Some(("status", String::new())));
        assert_eq!(parse("/rollback\tcp-1 "), Some(("rollback", "cp-1".to_string())));
        assert_eq!(parse("/usr/bin is where python lives"), None);
        assert_eq!(parse("plan a login page"), None);
    }
}
