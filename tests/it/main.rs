//! The integration tests, one binary (as rust-analyzer keeps them): one link instead of one per
//! file, and every test in one list for the runner. Each module is one area; `support` is the
//! harness they share (an LSP client, a scripted model server, seed 000's scenario).

mod support;

mod acp;
mod actions;
mod actions_lsp;
mod approvals;
mod bench_latency;
mod candidates;
mod claude_project;
mod cli_check;
mod cli_fix;
mod cli_model;
mod context;
mod drift;
mod edit_properties;
mod editor_helix;
mod editor_neovim;
mod editor_vscode;
mod endings;
mod fix_loop;
mod fixbench;
mod lsp_conversation;
mod lsp_documents;
mod lsp_lifecycle;
mod lsp_reliability;
mod lsp_robustness;
mod lsp_snapshots;
mod lsp_symbols;
mod mcp;
mod mode_runs;
mod model_providers;
mod observer_checkers;
mod observer_robustness;
mod reply_styles;
mod roles;
mod same_text_same_diagnostics;
mod sandbox;
mod sandbox_container;
mod sandbox_holes;
mod task_agent;
mod taskbench;
mod tidy;
mod trust;
