//! Context (SPEC C1–C7): what the model sees of the workspace. One file's facts
//! (`extract.rs`), the workspace index and its queries (`index.rs`), kept live and cached by
//! content hash (`live.rs`); files ranked for a question in English or Korean (`rank.rs`,
//! `terms.rs`), optionally helped by a model (`semantic.rs`); the project's rules
//! (`rules.rs`), summaries of large files (`summary.rs`) and a prompt's budgeted view
//! (`view.rs`); what a change reaches, tests included (`impact.rs`).

mod entry;
mod extract;
mod fingerprint;
mod impact;
mod index;
mod live;
mod pieces;
mod rank;
mod rules;
mod semantic;
mod skills;
mod summary;
mod terms;
mod view;

pub use entry::split_words;
pub use extract::{Call, Definition, FileFacts, Import, facts, facts_of_tree};
pub use fingerprint::{Drift, Fingerprint};
pub use impact::{
    Impact, TestTarget, changed_definitions, describe as describe_impact, focused_test_command, impact,
    is_test_file,
};
pub use index::{Caller, Found, Index, MAX_CALLER_DEPTH, MAX_FILE_BYTES, Skipped, module_name};
pub use live::{BuildReport, LiveIndex};
pub use rank::{Ranked, RankedSymbol, plain_bm25, query_words, rank};
pub use rules::{RULE_FILES, RuleFile, project_rules, render_rules, unread_rules};
pub use semantic::{Embeddings, cosine, expand_query};
pub use skills::{Skill, Skills};
pub use summary::Summaries;
pub use terms::{english_words, term_count};
pub use view::{Assist, Shown, View, ViewRequest, view, view_ranked, view_with_summaries};

/// A temporary project holding `files` (path, text), for the room's tests.
#[cfg(test)]
pub(crate) fn test_project<T: AsRef<[u8]>>(files: &[(&str, T)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}
