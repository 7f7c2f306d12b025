//! What can go wrong talking to a model, each in one sentence that names the endpoint and
//! says what to do. No message ever contains an API key.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("model settings: {reason}")]
    Config { reason: String },
    #[error("cannot reach the model at {endpoint} ({reason}){hint}")]
    Unreachable { endpoint: String, reason: String, hint: String },
    #[error("the model at {endpoint} refused the request ({status}): {detail}{hint}")]
    Unauthorized { endpoint: String, status: u16, detail: String, hint: String },
    #[error("the model at {endpoint} has no model {model:?} ({detail})")]
    ModelNotFound { endpoint: String, model: String, detail: String },
    #[error("the prompt is too long for the model at {endpoint}: {detail}")]
    ContextTooLong { endpoint: String, detail: String },
    #[error(
        "the model at {endpoint} is rate-limiting (429) and still was after {attempts} attempts: {detail}"
    )]
    RateLimited { endpoint: String, attempts: u32, detail: String },
    #[error("the model at {endpoint} failed ({status}) after {attempts} attempt(s): {detail}")]
    Server { endpoint: String, status: u16, attempts: u32, detail: String },
    #[error("the model at {endpoint} rejected the request ({status}): {detail}")]
    Rejected { endpoint: String, status: u16, detail: String },
    #[error("the model at {endpoint} sent a reply Tokamak cannot read: {detail}")]
    BadReply { endpoint: String, detail: String },
    #[error("the model at {endpoint} cut its streamed reply off after {received} characters: {detail}")]
    StreamCut { endpoint: String, received: usize, detail: String },
    #[error("the model at {endpoint} did not finish within {} s", .after.as_secs())]
    Timeout { endpoint: String, after: Duration },
    #[error("the model call to {endpoint} was cancelled")]
    Cancelled { endpoint: String },
}

impl ModelError {
    /// Whether trying again later may help (the fix loop stops on the others).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Server { .. }
                | ModelError::StreamCut { .. }
                | ModelError::Timeout { .. }
                | ModelError::Unreachable { .. }
        )
    }
}
