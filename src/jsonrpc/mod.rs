//! JSON-RPC 2.0 as Tokamak speaks it with every peer, below any protocol built on it: messages
//! read and told apart (`message.rs`), requests to the client matched with their answers
//! (`connection.rs`), and the two framings — LSP's `Content-Length` headers (`headers.rs`) and
//! one message per line, as ACP and MCP speak over stdio (`lines.rs`). The LSP server, the ACP
//! agent and the benchmarks' clients frame through it.

mod connection;
pub mod headers;
pub mod lines;
mod message;

pub use connection::{ClientError, Connection};
pub use message::{Incoming, RpcError, read};
