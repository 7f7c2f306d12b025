//! `textDocument/codeAction`: "Fix with Tokamak" (`quickfix`) on each diagnostic at the range,
//! whatever its source, and "Fix all with Tokamak" (`source.fixAll.tokamak`) for the file.
//! Both run the `tokamak.fix` command, so the fix loop runs on its own task with progress
//! instead of blocking the menu. The diagnostics in the request's context are observed.

use serde_json::json;
use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, CodeActionResponse, Command,
    Diagnostic,
};

use super::{Backend, convert};
use crate::observer::CODE_ACTION_SOURCE;

/// The kind of the whole-file action.
pub const FIX_ALL: &str = "source.fixAll.tokamak";

/// Longest diagnostic message quoted in an action's title.
const TITLE_MESSAGE_CHARS: usize = 60;

pub async fn code_action(backend: &Backend, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
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
    observer.observe_editor(&snapshot, CODE_ACTION_SOURCE, snapshot.version, seen);

    let wants = |kind: &CodeActionKind| match &params.context.only {
        None => true,
        Some(only) => only
            .iter()
            .any(|o| kind.as_str() == o.as_str() || kind.as_str().starts_with(&format!("{}.", o.as_str()))),
    };
    let mut actions = Vec::new();
    if wants(&CodeActionKind::QUICKFIX) {
        for diagnostic in &params.context.diagnostics {
            actions.push(quick_fix(&uri, diagnostic));
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
    Ok(Some(actions))
}

fn quick_fix(uri: &tower_lsp::lsp_types::Url, diagnostic: &Diagnostic) -> CodeActionOrCommand {
    let first_line = diagnostic.message.lines().next().unwrap_or_default();
    let mut message: String = first_line.chars().take(TITLE_MESSAGE_CHARS).collect();
    if message.len() < first_line.len() {
        message.push('…');
    }
    let title = format!("Fix with Tokamak: {message}");
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.clone(),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        command: Some(Command {
            title,
            command: "tokamak.fix".to_string(),
            arguments: Some(vec![json!({"uri": uri, "diagnostics": [diagnostic]})]),
        }),
        ..CodeAction::default()
    })
}
