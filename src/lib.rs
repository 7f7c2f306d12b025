//! Tokamak: a language server that puts an autonomous coding agent inside any LSP editor.
//!
//! Data flows text → syntax → observer → (agent → edits) → server; see
//! `docs/ARCHITECTURE.md` for the map and the rules on what may depend on what.

pub mod acp;
pub mod action;
pub mod agent;
pub mod atomic;
pub mod background;
pub mod checker;
pub mod cli;
pub mod config;
pub mod context;
pub mod diagnostic;
pub mod edit;
pub mod editor;
pub mod executor;
pub mod history;
pub mod jsonrpc;
pub mod language;
pub mod logging;
pub mod mcp;
pub mod model;
pub mod modes;
pub mod observer;
pub mod places;
pub mod process;
pub mod run;
pub mod sandbox;
pub mod server;
pub mod session;
pub mod sync;
pub mod syntax;
pub mod text;
pub mod toolbox;
pub mod trust;
pub mod walk;
pub mod workspace;
