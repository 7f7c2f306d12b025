//! Models: the one interface the agent asks a model through, and its providers —
//! OpenAI-compatible (chat and completions), Anthropic Messages and Ollama's native API —
//! with streaming, token usage, timeouts, retries, cancellation and one-sentence errors.

mod anthropic;
mod check;
mod config;
mod error;
mod http;
mod ollama;
mod openai;
mod usage;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use check::{ModelCheck, probe, run_check};
pub use config::{ModelConfig, ModelSettings, Provider, Secret};
pub use error::ModelError;
pub use usage::{Usage, UsageMeter, estimate_tokens};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: Role::System, content: content.into() }
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message { role: Role::User, content: content.into() }
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: Role::Assistant, content: content.into() }
    }
}

/// What to ask. `None` fields take the configured defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub input: Input,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
}

/// A chat, or a plain text prompt for base models that only continue text (OpenAI-compatible
/// `/v1/completions`, Ollama `/api/generate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Chat(Vec<Message>),
    Prompt(String),
}

impl Default for Input {
    fn default() -> Self {
        Input::Chat(Vec::new())
    }
}

impl Request {
    pub fn chat(messages: Vec<Message>) -> Request {
        Request { input: Input::Chat(messages), ..Request::default() }
    }

    pub fn prompt(prompt: impl Into<String>) -> Request {
        Request { input: Input::Prompt(prompt.into()), ..Request::default() }
    }

    /// The characters of everything sent, for estimating prompt tokens.
    fn input_text(&self) -> String {
        match &self.input {
            Input::Chat(messages) => {
                messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
            }
            Input::Prompt(prompt) => prompt.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model finished (or hit a stop sequence).
    Stop,
    /// `max_tokens` was reached: the text is cut.
    Length,
    Other(String),
}

impl FinishReason {
    fn from_openai(reason: Option<&str>) -> FinishReason {
        match reason {
            Some("stop") | Some("eos") | None => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some(other) => FinishReason::Other(other.to_string()),
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub usage: Usage,
    pub finish: FinishReason,
    /// The model that answered, as the server names it.
    pub model: String,
    pub latency: Duration,
}

/// How a call is made: streamed text deltas go to `deltas` when given; `cancel` stops the
/// request (the connection is dropped).
#[derive(Clone, Default)]
pub struct CallOptions {
    pub deltas: Option<UnboundedSender<String>>,
    pub cancel: CancellationToken,
}

impl CallOptions {
    /// Passes a streamed piece of text on, if anyone listens.
    fn emit(&self, delta: &str) {
        if let Some(deltas) = &self.deltas {
            let _ = deltas.send(delta.to_string());
        }
    }
}

/// Where a model is, for messages and `tokamak model check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub provider: Provider,
    pub model: String,
    pub endpoint: String,
}

/// The one interface the agent uses.
#[async_trait]
pub trait Model: Send + Sync {
    fn info(&self) -> ModelInfo;

    /// Sends `request`, streaming when `options.deltas` is set.
    async fn send(&self, request: &Request, options: &CallOptions) -> Result<Reply, ModelError>;
}

/// The provider for a configuration.
pub fn connect(config: ModelConfig) -> Result<Arc<dyn Model>, ModelError> {
    let client = http::Client::new(config)?;
    Ok(match client.config.provider {
        Provider::OpenAi => Arc::new(openai::OpenAi::new(client)),
        Provider::Anthropic => Arc::new(anthropic::Anthropic::new(client)),
        Provider::Ollama => Arc::new(ollama::Ollama::new(client)),
    })
}
