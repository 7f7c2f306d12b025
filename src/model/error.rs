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
    ContextTooLong {
        endpoint: String,
        detail: String,
        /// The context length the server named, in tokens, when it did.
        limit: Option<u32>,
    },
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
    #[error("the model at {endpoint} cut its reply off before it was complete: {detail}")]
    BodyCut { endpoint: String, detail: String },
    #[error("the model at {endpoint} did not finish within {}", seconds(*.after))]
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
                | ModelError::BodyCut { .. }
                | ModelError::Timeout { .. }
                | ModelError::Unreachable { .. }
        )
    }
}

/// A duration as a person says it: "2 s", "2.5 s", "0.25 s".
pub fn seconds(duration: Duration) -> String {
    let text = format!("{:.3}", duration.as_secs_f64());
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_said_exactly() {
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(seconds(Duration::from_secs(2)), "2 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        let timeout = ModelError::Timeout { endpoint: "http://x".into(), after: Duration::from_millis(2500) };
        assert_eq!(timeout.to_string(), "the model at http://x did not finish within 2.5 s");
    }
}
