//! What a task run's prompts show of the workspace: the context room's view for the question
//! (the project's rules, the skills' one lines, the files ranked for it within `[context]
//! budget_tokens`, summaries of large ones made on the way), or, without an index, the rules and a file listing.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::planner::workspace_view;
use crate::context::{
    Assist, Embeddings, Summaries, ViewRequest, expand_query, project_rules, render_rules,
    view_with_summaries,
};
use crate::executor::ExecutorContext;
use crate::model::{Model, Usage};
use crate::run::Tokens;

/// The workspace as a prompt shows it for `question`, the tokens its summaries cost, and the
/// files it shows whole with their text (the model has read them: a change to one before the
/// run edits it is drift). `active` is the file the user is in (ranked up; its nearest rules
/// read).
pub async fn workspace_context(
    executor: &ExecutorContext,
    model: Option<&dyn Model>,
    question: &str,
    active: Option<&Path>,
    cancel: &CancellationToken,
) -> (String, Tokens, Vec<(PathBuf, String)>) {
    let root = executor.confinement.root();
    let settings = &executor.settings.context;
    let Some(live) = &executor.index else {
        let rules =
            render_rules(&project_rules(root, active, executor.settings.trusted), settings.budget_tokens);
        let skills = executor.skills.index();
        return (format!("{rules}{skills}{}", workspace_view(root)), Tokens::default(), Vec::new());
    };
    let mut spent = Tokens::default();
    let mut add = |usage: Usage| {
        spent.prompt = spent.prompt.saturating_add(usage.prompt_tokens);
        spent.completion = spent.completion.saturating_add(usage.completion_tokens);
    };
    // the model's words for the question, when asked for (SPEC C1: optional)
    let mut expanded = question.to_string();
    if let Some(model) = model.filter(|_| settings.expand_query) {
        match expand_query(model, question, cancel).await {
            Ok((words, usage)) => {
                add(usage);
                tracing::debug!("the question's words from the model: {}", words.join(" "));
                expanded = format!("{question}\n{}", words.join(" "));
            }
            Err(err) => tracing::info!("the question was not expanded: {err}"),
        }
    }
    let request = ViewRequest {
        question: &expanded,
        active,
        budget_tokens: settings.budget_tokens,
        large_file_lines: settings.large_file_lines,
        trusted: executor.settings.trusted,
    };
    let source = |path: &Path| executor.current_text(path);
    let summaries = Summaries::for_project(root);
    let embeddings = settings.embeddings_model.as_deref().map(|m| Embeddings::for_project(root, m));
    let assist = Assist {
        model,
        summaries: &summaries,
        max_summaries: settings.summaries,
        embeddings: embeddings.as_ref(),
        cancel,
    };
    let (view, usage) = view_with_summaries(live, &request, &source, &assist).await;
    add(usage);
    tracing::debug!(
        "context for {question:?}: {} files shown, {} left out, {} rules, ~{} tokens",
        view.files.len(),
        view.left_out,
        view.rules.len(),
        view.tokens
    );
    // every plan and step sees each skill's one line (SKILL.md's description)
    let skills = executor.skills.index();
    let text = if skills.is_empty() { view.text } else { format!("{skills}\n{}", view.text) };
    (text, spent, view.read)
}
