//! The server's own refusals as JSON-RPC errors, each knowing its code: LSP's
//! `RequestFailed` (-32803) for a valid request that cannot be carried out now (a run is going
//! on that document), the first server error (-32000) for work that was tried and failed.

use tower_lsp_server::jsonrpc::{Error, ErrorCode};

/// Why the server did not do what a request asked, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Valid, but not now: another run holds the document or the workspace.
    #[error("{0}")]
    Busy(String),
    /// Tried, and it failed.
    #[error("{0}")]
    Failed(String),
}

impl Refusal {
    /// The JSON-RPC error code the client sees.
    pub const fn code(&self) -> i64 {
        match self {
            Refusal::Busy(_) => -32803,
            Refusal::Failed(_) => -32000,
        }
    }
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Error {
        Error {
            code: ErrorCode::ServerError(refusal.code()),
            message: refusal.to_string().into(),
            data: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_carries_its_code() {
        let busy: Error = Refusal::Busy("a run is going on".to_string()).into();
        assert_eq!((busy.code.code(), busy.message.as_ref()), (-32803, "a run is going on"));
        let failed: Error = Refusal::Failed("no plan".to_string()).into();
        assert_eq!(failed.code.code(), -32000);
    }
}
