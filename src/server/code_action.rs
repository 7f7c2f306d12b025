//! `textDocument/codeAction`: "Fix with Tokamak" (`quickfix`) once per line of the
//! diagnostics at the range, whatever their sources, and "Fix all with Tokamak" (`source.fixAll.tokamak`) for the file,
//! both running `tokamak.fix`; "Implement with Tokamak" (`refactor.tokamak`) on a selection
//! or a `TODO`/`FIXME` comment, running `tokamak.run` with the goal, the selection and its
//! scope; and "Plan with Tokamak…", whose `tokamak.askGoal` the editor's plugin handles by
//! asking for a goal. Every action runs a command, so the work happens on its own task with
//! progress instead of blocking the menu. The diagnostics in the request's context are
//! observed.

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, CodeActionResponse,
    CodeActionTriggerKind, Command, Diagnostic, DiagnosticSeverity, Position, Range,
};

use super::{Backend, convert};
use crate::observer::{CODE_ACTION_SOURCE, SOURCE};
use crate::syntax::todo_comment;
use crate::workspace::DocumentSnapshot;

/// The kind of the whole-file action.
pub const FIX_ALL: &str = "source.fixAll.tokamak";

/// The kind of the task agent's actions.
pub const TASK: &str = "refactor.tokamak";

/// The command "Plan with Tokamak…" runs: the editor's plugin asks for a goal and sends
/// `tokamak.plan`; a server that gets it says how to give one (see `execute_command`).
pub const ASK_GOAL: &str = "tokamak.askGoal";

/// Longest diagnostic message quoted in an action's title.
const TITLE_MESSAGE_CHARS: usize = 60;

pub async fn code_action(backend: &Backend, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let Some(uri) = convert::url(&params.text_document.uri) else { return Ok(Some(Vec::new())) };
    let snapshot = backend.workspace().snapshot(&uri);
    let (Some(snapshot), Some(observer)) = (snapshot, backend.observer()) else {
        tracing::debug!("code actions asked for {uri}, which is not open");
        return Ok(Some(Vec::new()));
    };
    let encoding = backend.encoding();
    let seen = params
        .context
        .diagnostics
        .iter()
        .map(|d| convert::diagnostic_from_lsp(&snapshot.rope, d, encoding))
        .collect();
    if observer.observe_editor(&snapshot, CODE_ACTION_SOURCE, snapshot.version, seen) {
        let observer = std::sync::Arc::clone(observer);
        let uri = snapshot.uri.clone();
        // not in the menu's way
        tokio::spawn(async move { observer.republish(&uri).await });
    }

    let wants = |kind: &CodeActionKind| match &params.context.only {
        None => true,
        Some(only) => only
            .iter()
            .any(|o| kind.as_str() == o.as_str() || kind.as_str().starts_with(&format!("{}.", o.as_str()))),
    };
    let mut actions = Vec::new();
    if wants(&CodeActionKind::QUICKFIX) {
        // one action per line, however many sources reported there (the editor's own servers
        // and Tokamak's publish can say the same thing several times)
        let mut lines: Vec<(u32, Vec<Diagnostic>)> = Vec::new();
        for diagnostic in &params.context.diagnostics {
            let line = diagnostic.range.start.line;
            match lines.iter_mut().find(|(l, _)| *l == line) {
                Some((_, group)) => group.push(diagnostic.clone()),
                None => lines.push((line, vec![diagnostic.clone()])),
            }
        }
        for (_, group) in lines {
            actions.push(quick_fix(&uri, group));
        }
    }
    let fix_all = CodeActionKind::from(FIX_ALL.to_string());
    let has_problems = !observer.diagnostics(&uri).is_empty() || !params.context.diagnostics.is_empty();
    // asked for by kind (on save, say) it is always offered; in the menu, only when there is
    // something to fix
    if wants(&fix_all) && (params.context.only.is_some() || has_problems) {
        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: "Fix all with Tokamak".to_string(),
            kind: Some(fix_all),
            command: Some(Command {
                title: "Fix all with Tokamak".to_string(),
                command: "tokamak.fix".to_string(),
                arguments: Some(vec![json!({"uri": uri})]),
            }),
            ..CodeAction::default()
        }));
    }
    let task = CodeActionKind::from(TASK.to_string());
    if wants(&task) {
        let explicit = params.context.trigger_kind == Some(CodeActionTriggerKind::INVOKED);
        actions.extend(task_actions(backend, &snapshot, params.range, explicit));
    }
    Ok(Some(actions))
}

/// "Implement with Tokamak" on a selection or a `TODO` comment under the cursor, and "Plan
/// with Tokamak…" with them (or alone when the user asked for actions explicitly, so the
/// light bulb does not show everywhere).
fn task_actions(
    backend: &Backend,
    snapshot: &DocumentSnapshot,
    range: Range,
    explicit: bool,
) -> Vec<CodeActionOrCommand> {
    let uri = &snapshot.uri;
    let path = crate::agent::display_path(backend.root().as_deref(), uri);
    let mut actions = Vec::new();
    let task = || Some(CodeActionKind::from(TASK.to_string()));
    let line = range.start.line as usize;
    let todo = (line..=(range.end.line as usize).min(line + 20))
        .find_map(|l| todo_comment(snapshot.tree.as_ref(), &snapshot.rope, l));
    let selected = range.start != range.end;
    if let Some(todo) = &todo {
        let at = format!("the {} at {path}:{}", todo.marker, todo.lines.0 + 1);
        let goal = if todo.text.is_empty() {
            format!("Do what {at} asks, then remove the comment")
        } else {
            format!("{} ({at}; remove the comment when it is done)", todo.text)
        };
        let comment =
            Range::new(Position::new(todo.lines.0 as u32, 0), Position::new(todo.lines.1 as u32 + 1, 0));
        let title = format!("Implement with Tokamak: {}", short(&format!("{} {}", todo.marker, todo.text)));
        actions.push(command_action(
            &title,
            task(),
            "tokamak.run",
            json!({"goal": goal, "uri": uri, "range": comment}),
        ));
    } else if selected {
        // a selection of whole lines ends at the start of the next one
        let last = if range.end.character == 0 && range.end.line > range.start.line {
            range.end.line
        } else {
            range.end.line + 1
        };
        let goal = format!(
            "Implement what the selected code in {path} (lines {}-{last}) declares or describes",
            range.start.line + 1
        );
        actions.push(command_action(
            "Implement with Tokamak",
            task(),
            "tokamak.run",
            json!({"goal": goal, "uri": uri, "range": range}),
        ));
    }
    if todo.is_some() || selected || explicit {
        actions.push(command_action(
            "Plan with Tokamak…",
            task(),
            ASK_GOAL,
            json!({"uri": uri, "range": range}),
        ));
    }
    actions
}

fn command_action(
    title: &str,
    kind: Option<CodeActionKind>,
    command: &str,
    argument: Value,
) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.to_string(),
        kind,
        command: Some(Command {
            title: title.to_string(),
            command: command.to_string(),
            arguments: Some(vec![argument]),
        }),
        ..CodeAction::default()
    })
}

/// The first line of `text`, cut to [`TITLE_MESSAGE_CHARS`] characters.
fn short(text: &str) -> String {
    let first_line = text.trim().lines().next().unwrap_or_default();
    let mut out: String = first_line.chars().take(TITLE_MESSAGE_CHARS).collect();
    if out.len() < first_line.len() {
        out.push('…');
    }
    out
}

/// "Fix with Tokamak" for the diagnostics of one line, titled with the most severe (Tokamak's
/// own first among equals).
fn quick_fix(uri: &url::Url, diagnostics: Vec<Diagnostic>) -> CodeActionOrCommand {
    let headline = diagnostics.iter().min_by_key(|d| {
        let severity = d.severity.map_or(1, |s| if s == DiagnosticSeverity::ERROR { 1 } else { 2 });
        (severity, d.source.as_deref() != Some(SOURCE))
    });
    let title = format!("Fix with Tokamak: {}", short(headline.map_or("", |d| d.message.as_str())));
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.clone(),
        kind: Some(CodeActionKind::QUICKFIX),
        command: Some(Command {
            title,
            command: "tokamak.fix".to_string(),
            arguments: Some(vec![json!({"uri": uri, "diagnostics": diagnostics})]),
        }),
        diagnostics: Some(diagnostics),
        ..CodeAction::default()
    })
}
