//! A prompt's view of the workspace within a token budget (SPEC C1, C2): the project's rules,
//! the README's and the architecture document's openings, then the files ranked for the question — the first ones whole, the
//! next ones as their summary or outline, the rest by path — and what was left out, said.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::index::Index;
use super::live::LiveIndex;
use super::rank::{Ranked, rank};
use super::rules::{RuleFile, project_rules, render_rules};
use super::semantic::Embeddings;
use super::summary::Summaries;
use crate::model::{Model, Usage, estimate_tokens};

/// Files ranked for a view at most.
const RANKED: usize = 40;
/// Files shown whole at most.
const WHOLE: usize = 3;
/// Where a project describes its own structure, the first found read.
const ARCHITECTURE_DOCUMENTS: &[&str] =
    &["ARCHITECTURE.md", "docs/ARCHITECTURE.md", "docs/architecture.md", "DESIGN.md", "docs/DESIGN.md"];
/// Tokens a listed path costs, about.
const PATH_TOKENS: usize = 12;

/// What the view is for.
#[derive(Debug, Clone)]
pub struct ViewRequest<'a> {
    /// The goal or the question: what the files are ranked for.
    pub question: &'a str,
    /// The file the user is in, if any (ranked up; its nearest rules are read).
    pub active: Option<&'a Path>,
    pub budget_tokens: usize,
    /// A file of more lines is shown by its summary or outline.
    pub large_file_lines: usize,
    /// The folder is trusted: its rules files are read (else only the user's own).
    pub trusted: bool,
}

/// How a file is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Whole,
    Summary,
    Outline,
    Path,
}

/// A view, with what it holds.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub text: String,
    /// The files shown, in rank order, relative to the root.
    pub files: Vec<(PathBuf, Shown)>,
    /// Ranked files left out for the budget.
    pub left_out: usize,
    /// The rules files read.
    pub rules: Vec<PathBuf>,
    /// The view's estimated tokens.
    pub tokens: usize,
    /// Files the budget kept out that a summary would show: large files shown by their
    /// outline, and others of at least half that size listed by path.
    pub unsummarized: Vec<PathBuf>,
    /// Files shown by a summary (found in the cache).
    pub summarized: usize,
    /// The files shown whole, by absolute path, with the text shown: the model has read them.
    pub read: Vec<(PathBuf, String)>,
}

/// The view of `index` for `request`; `source` gives a file's current text (an open
/// document's, else the disk's), `summaries` the summaries made so far.
pub fn view(
    index: &Index,
    request: &ViewRequest<'_>,
    source: &dyn Fn(&Path) -> Option<String>,
    summaries: Option<&Summaries>,
) -> View {
    let ranked = rank(index, request.question, request.active, RANKED);
    view_ranked(index, request, &ranked, source, summaries)
}

/// [`view`] of files already ranked (re-ranked by meaning, say).
pub fn view_ranked(
    index: &Index,
    request: &ViewRequest<'_>,
    ranked: &[Ranked],
    source: &dyn Fn(&Path) -> Option<String>,
    summaries: Option<&Summaries>,
) -> View {
    let root = index.root();
    let relative = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_path_buf();
    let budget_bytes = request.budget_tokens.saturating_mul(crate::text::CHARS_PER_TOKEN);
    let mut out = View::default();

    let rules: Vec<RuleFile> = project_rules(root, request.active, request.trusted);
    out.rules = rules.iter().map(|r| r.path.clone()).collect();
    let mut text = render_rules(&rules, budget_bytes / 4);
    if let Some(readme) = ["README.md", "README.rst", "README"]
        .iter()
        .find_map(|n| std::fs::read_to_string(root.join(n)).ok().map(|t| (n, t)))
    {
        let cut = crate::text::cut(readme.1.trim(), (budget_bytes / 10).max(400));
        text.push_str(&format!("The project's {} (its opening):\n{cut}\n", readme.0));
    }
    // the project's map of itself, where it keeps one (seed 001: README and architecture
    // documents weigh more than other files)
    if let Some((name, map)) =
        ARCHITECTURE_DOCUMENTS.iter().find_map(|n| std::fs::read_to_string(root.join(n)).ok().map(|t| (n, t)))
    {
        let cut = crate::text::cut(map.trim(), (budget_bytes / 12).max(300));
        text.push_str(&format!("The project's {name} (its opening):\n{cut}\n"));
    }

    text.push_str(&format!(
        "\nThe workspace has {} indexed source files. The files most relevant to the goal{}:\n",
        index.len(),
        if ranked.is_empty() { " (none matched its words)" } else { "" }
    ));
    let mut left = request.budget_tokens.saturating_sub(estimate_tokens(&text) as usize);
    let mut listed: Vec<String> = Vec::new();
    let mut whole = 0;
    for file in ranked {
        let rel = relative(&file.path);
        let shown = rel.display().to_string();
        let why: Vec<&str> = file.reasons.iter().rev().take(2).map(String::as_str).collect();
        let why = why.join("; ");
        let body = source(&file.path);
        let lines = body.as_deref().map_or(0, |b| b.lines().count());
        let language = crate::text::Language::from_path(&file.path).name();
        // whole: small enough, and leaving room for the others
        if let Some(body) = body.as_deref().filter(|_| whole < WHOLE && lines <= request.large_file_lines) {
            let block = format!("\n### {shown} — {why}\n```{language}\n{}\n```\n", body.trim_end());
            let cost = estimate_tokens(&block) as usize;
            if cost <= left * 3 / 5 {
                text.push_str(&block);
                left -= cost;
                whole += 1;
                out.files.push((rel, Shown::Whole));
                out.read.push((file.path.clone(), body.to_string()));
                continue;
            }
        }
        // a summary, else the outline
        let summary = body.as_deref().and_then(|b| summaries?.cached(b));
        let (kind, detail) = match summary {
            Some(summary) => (Shown::Summary, format!("(its summary; {lines} lines)\n{}", summary.trim())),
            None => {
                let outline = outline(index, &file.path);
                if lines > request.large_file_lines {
                    out.unsummarized.push(rel.clone());
                }
                let room = (left / 3).saturating_mul(4).max(200);
                (
                    Shown::Outline,
                    format!(
                        "(its outline, line: definition; {lines} lines, read it for the bodies)\n{}",
                        crate::text::cut(&outline, room)
                    ),
                )
            }
        };
        let block = format!("\n### {shown} — {why}\n{detail}\n");
        let cost = estimate_tokens(&block) as usize;
        if cost <= left / 2 {
            text.push_str(&block);
            left -= cost;
            out.summarized += usize::from(kind == Shown::Summary);
            out.files.push((rel, kind));
            continue;
        }
        if kind == Shown::Outline && lines * 2 >= request.large_file_lines && !out.unsummarized.contains(&rel)
        {
            out.unsummarized.push(rel.clone());
        }
        if left > PATH_TOKENS * 2 {
            listed.push(shown);
            left -= PATH_TOKENS;
            out.files.push((rel, Shown::Path));
            continue;
        }
        out.left_out += 1;
    }
    if !listed.is_empty() {
        text.push_str(&format!("\nAlso relevant, by path: {}.\n", listed.join(", ")));
    }
    if out.left_out > 0 {
        text.push_str(&format!(
            "\n{} more ranked files were left out for the context budget; find them with locate, symbols or search.\n",
            out.left_out
        ));
    }
    out.tokens = estimate_tokens(&text) as usize;
    out.text = text;
    out
}

/// A file's definitions as an outline: `line: signature`, nested by container.
fn outline(index: &Index, path: &Path) -> String {
    let mut out = String::new();
    for definition in index.file_definitions(path) {
        let depth = usize::from(definition.container.is_some());
        out.push_str(&format!(
            "{}{}: {}\n",
            "  ".repeat(depth),
            definition.lines.0 + 1,
            definition.signature.trim()
        ));
    }
    out
}

/// What a model adds to a view, all optional.
pub struct Assist<'a> {
    pub model: Option<&'a Arc<dyn Model>>,
    pub summaries: &'a Summaries,
    /// Summaries asked for at most per view, in the background (0: outlines only).
    pub max_summaries: usize,
    /// Re-rank the candidates by meaning with these vectors.
    pub embeddings: Option<&'a Embeddings>,
    pub cancel: &'a CancellationToken,
}

/// The view of the live index for `request`: the candidates re-ranked by meaning when there
/// are embeddings (a failure is logged and the ranking stays); the files the budget kept out
/// that a summary would show are summarized in the background, up to `max_summaries`, for the
/// later prompts (this one shows their outline or path). Returns the view and the tokens the
/// model spent on it, and on the summaries finished since the last view.
pub async fn view_with_summaries(
    live: &Arc<LiveIndex>,
    request: &ViewRequest<'_>,
    source: &(dyn Fn(&Path) -> Option<String> + Sync),
    assist: &Assist<'_>,
) -> (View, Usage) {
    let mut ranked = {
        let index = live.current().await;
        rank(&index, request.question, request.active, RANKED)
    };
    let mut usage = assist.summaries.take_spent();
    if let (Some(model), Some(embeddings)) = (assist.model, assist.embeddings) {
        match embeddings
            .rerank(model.as_ref(), live.root(), request.question, ranked.clone(), source, assist.cancel)
            .await
        {
            Ok(reranked) => ranked = reranked,
            Err(err) => tracing::info!("the files were not ranked by meaning: {err}"),
        }
    }
    let view = {
        let index = live.current().await;
        view_ranked(&index, request, &ranked, source, Some(assist.summaries))
    };
    if let Some(model) = assist.model.filter(|_| assist.max_summaries > 0) {
        let root = live.root();
        let mut asked = 0;
        for rel in &view.unsummarized {
            if asked == assist.max_summaries {
                break;
            }
            let Some(text) = source(&root.join(rel)) else { continue };
            asked +=
                usize::from(assist.summaries.request(Arc::clone(model), rel.display().to_string(), text));
        }
    }
    let spent = assist.summaries.take_spent();
    usage.prompt_tokens = usage.prompt_tokens.saturating_add(spent.prompt_tokens);
    usage.completion_tokens = usage.completion_tokens.saturating_add(spent.completion_tokens);
    (view, usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let files: &[(&str, String)] = &[
            ("AGENTS.md", "Run the tests with pytest.\n".to_string()),
            ("README.md", "# Shop\nA small shop.\n".to_string()),
            ("docs/ARCHITECTURE.md", "# Architecture\nauth.py logs users in; cart.py holds carts.\n".to_string()),
            ("app/auth.py", "def login(name, password):\n    return check_password(name, password)\n\n\ndef check_password(name, password):\n    return bool(password)\n".to_string()),
            ("app/session.py", "from app.auth import login\n\n\ndef login_session(request):\n    return login(request.name, request.password)\n".to_string()),
            (
                "app/big_login.py",
                (0..600).map(|i| format!("def login_helper_{i}(x):\n    return x + {i}\n")).collect::<String>(),
            ),
            ("app/cart.py", "def add_to_cart(cart, item):\n    cart.append(item)\n".to_string()),
        ];
        crate::context::test_project(files)
    }

    #[test]
    fn the_budget_decides_whole_outline_path_or_left_out() {
        let dir = project();
        let index = Index::build(dir.path());
        let source = |p: &Path| std::fs::read_to_string(p).ok();
        let request = |budget| ViewRequest {
            question: "로그인 login",
            active: None,
            budget_tokens: budget,
            large_file_lines: 400,
            trusted: true,
        };

        let roomy = view(&index, &request(6000), &source, None);
        assert_eq!(roomy.rules, [PathBuf::from("AGENTS.md")]);
        assert!(
            roomy.text.starts_with("The project's rules:\n--- AGENTS.md ---\nRun the tests with pytest."),
            "{}",
            roomy.text
        );
        assert!(roomy.text.contains("The project's README.md (its opening):\n# Shop"), "{}", roomy.text);
        assert!(
            roomy
                .text
                .contains("The project's docs/ARCHITECTURE.md (its opening):\n# Architecture\nauth.py logs"),
            "{}",
            roomy.text
        );
        let how = |v: &View, name: &str| v.files.iter().find(|(p, _)| p == Path::new(name)).map(|(_, s)| *s);
        assert_eq!(how(&roomy, "app/auth.py"), Some(Shown::Whole), "{:?}", roomy.files);
        assert_eq!(how(&roomy, "app/big_login.py"), Some(Shown::Outline), "a large file: {:?}", roomy.files);
        assert!(
            roomy.text.contains("1: def login_helper_0(x)\n3: def login_helper_1(x)"),
            "the outline has lines and signatures: {}",
            roomy.text
        );
        assert_eq!(roomy.unsummarized, [PathBuf::from("app/big_login.py")]);
        assert_eq!(how(&roomy, "app/cart.py"), None, "not about logging in");
        assert!(roomy.tokens <= 6000, "{}", roomy.tokens);

        // a small budget: fewer files whole, the rest listed or left out, and it says so
        let tight = view(&index, &request(150), &source, None);
        assert!(tight.tokens <= 170, "about the budget: {}\n{}", tight.tokens, tight.text);
        assert!(
            tight.files.iter().any(|(_, s)| *s == Shown::Path) || tight.left_out > 0,
            "{:?}",
            tight.files
        );
        if tight.left_out > 0 {
            assert!(tight.text.contains("were left out for the context budget"), "{}", tight.text);
        }

        // a cached summary replaces the outline
        let summaries = Summaries::new(dir.path().join(".summaries"));
        let big = std::fs::read_to_string(dir.path().join("app/big_login.py")).unwrap();
        std::fs::create_dir_all(dir.path().join(".summaries")).unwrap();
        std::fs::write(
            dir.path().join(".summaries").join(format!("{}.txt", crate::places::sha256_hex(big.as_bytes()))),
            "Six hundred login helpers that add numbers.",
        )
        .unwrap();
        let summarized = view(&index, &request(6000), &source, Some(&summaries));
        assert_eq!(how(&summarized, "app/big_login.py"), Some(Shown::Summary));
        assert!(
            summarized.text.contains("(its summary; 1200 lines)\nSix hundred login helpers"),
            "{}",
            summarized.text
        );
        assert!(summarized.unsummarized.is_empty());
    }
}
