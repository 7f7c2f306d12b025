//! What a task run's prompts show of the workspace: the context room's view for the question
//! (the project's rules, the skills' one lines, the files ranked for it within `[context]
//! budget_tokens`, summaries of large ones made on the way), or, without an index, the rules and a file listing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::planner::workspace_view;
use crate::context::{
    Assist, Embeddings, ViewRequest, expand_query, project_rules, render_rules, view_with_summaries,
};
use crate::executor::ExecutorContext;
use crate::model::{Model, Usage};
use crate::run::Tokens;

/// The workspace as a prompt shows it.
#[derive(Debug, Default)]
pub struct WorkspaceView {
    pub text: String,
    /// The tokens the model spent on it: the question's words, and the summaries finished
    /// in the background since the last view.
    pub spent: Tokens,
    /// The files it shows whole, with their text: the model has read them, so a change to
    /// one before the run edits it is drift.
    pub read: Vec<(PathBuf, String)>,
    /// Files it shows by a cached summary, and files the budget kept out that one would show
    /// (asked for in the background): the summaries' cache hits and misses.
    pub summarized: usize,
    pub unsummarized: usize,
}

/// The workspace as a prompt shows it for `question`. `active` is the file the user is in
/// (ranked up; its nearest rules read).
pub async fn workspace_context(
    executor: &ExecutorContext,
    model: Option<&Arc<dyn Model>>,
    question: &str,
    active: Option<&Path>,
    cancel: &CancellationToken,
) -> WorkspaceView {
    let root = executor.confinement.root();
    let settings = &executor.settings.context;
    let Some(live) = &executor.index else {
        let rules =
            render_rules(&project_rules(root, active, executor.settings.trusted), settings.budget_tokens);
        let skills = executor.skills.index();
        return WorkspaceView {
            text: format!("{rules}{skills}{}", workspace_view(root)),
            ..Default::default()
        };
    };
    let mut spent = Tokens::default();
    let mut add = |usage: Usage| {
        spent.prompt = spent.prompt.saturating_add(usage.prompt_tokens);
        spent.completion = spent.completion.saturating_add(usage.completion_tokens);
    };
    // the model's words for the question, when asked for (SPEC C1: optional)
    let mut expanded = question.to_string();
    if let Some(model) = model.filter(|_| settings.expand_query) {
        match expand_query(model.as_ref(), question, cancel).await {
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
    let embeddings = settings.embeddings_model.as_deref().map(|m| Embeddings::for_project(root, m));
    let assist = Assist {
        model,
        summaries: &executor.summaries,
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
    WorkspaceView {
        text,
        spent,
        read: view.read,
        summarized: view.summarized,
        unsummarized: view.unsummarized.len(),
    }
}
