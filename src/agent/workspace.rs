//! What a task run's prompts show of the workspace: the context room's view for the question
//! (the project's rules, the files ranked for it within `[context] budget_tokens`, summaries
//! of large ones made on the way), or, without an index, the rules and a file listing.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::planner::workspace_view;
use super::report::Tokens;
use crate::context::{Summaries, ViewRequest, project_rules, render_rules, view_with_summaries};
use crate::executor::ExecutorContext;
use crate::model::Model;

/// The workspace as a prompt shows it for `question`, and the tokens its summaries cost.
/// `active` is the file the user is in (ranked up; its nearest rules read).
pub async fn workspace_context(
    executor: &ExecutorContext,
    model: Option<&dyn Model>,
    question: &str,
    active: Option<&Path>,
    cancel: &CancellationToken,
) -> (String, Tokens) {
    let root = executor.confinement.root();
    let settings = &executor.settings.context;
    let Some(live) = &executor.index else {
        let rules = render_rules(&project_rules(root, active), settings.budget_tokens);
        return (format!("{rules}{}", workspace_view(root)), Tokens::default());
    };
    let request = ViewRequest {
        question,
        active,
        budget_tokens: settings.budget_tokens,
        large_file_lines: settings.large_file_lines,
    };
    let source = |path: &Path| executor.current_text(path);
    let summaries = Summaries::for_project(root);
    let (view, usage) =
        view_with_summaries(live, &request, &source, &summaries, model, settings.summaries, cancel).await;
    tracing::debug!(
        "context for {question:?}: {} files shown, {} left out, {} rules, ~{} tokens",
        view.files.len(),
        view.left_out,
        view.rules.len(),
        view.tokens
    );
    (view.text, Tokens { prompt: usage.prompt_tokens, completion: usage.completion_tokens })
}
