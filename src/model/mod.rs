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
mod reasoning;
mod usage;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use check::{ModelCheck, probe, run_check};
pub use config::{ModelConfig, ModelSettings, Provider, Secret, ToolsMode};
pub use error::ModelError;
pub use http::tls_ready;
pub use usage::{Usage, UsageMeter, estimate_tokens};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, for the assistant's next turn.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// An assistant's tool calls (native tool calling).
    pub tool_calls: Vec<ToolCall>,
    /// A tool result: the call it answers (its id, and its name for providers that key by it).
    pub answers: Option<ToolCall>,
    /// Thinking the provider signed and wants back with the tool calls it led to (Anthropic's
    /// extended thinking): sent back as it came, never read.
    pub signed: Vec<serde_json::Value>,
    /// Images the user's message carries (a screenshot pasted into an ACP prompt), for a
    /// model that reads them.
    pub images: Vec<Image>,
}

/// An image in a prompt: its MIME type and its bytes in base64, as the providers take them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub mime: String,
    pub base64: String,
}

impl Image {
    /// As a `data:` URL (OpenAI-compatible servers).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64)
    }
}

impl Message {
    fn of(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            answers: None,
            signed: Vec::new(),
            images: Vec::new(),
        }
    }

    /// This message with `images` beside its text.
    pub fn with_images(self, images: Vec<Image>) -> Message {
        Message { images, ..self }
    }

    /// This assistant turn with the provider's signed thinking that came with it.
    pub fn with_signed(self, signed: Vec<serde_json::Value>) -> Message {
        Message { signed, ..self }
    }

    pub fn system(content: impl Into<String>) -> Message {
        Message::of(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message::of(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message::of(Role::Assistant, content)
    }

    /// An assistant's turn that called tools.
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Message {
        Message { tool_calls: calls, ..Message::of(Role::Assistant, content) }
    }

    /// The result of `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Message {
        Message { answers: Some(call.clone()), ..Message::of(Role::Tool, content) }
    }
}

/// A tool the model may call (native tool calling): a name, what it does, and its
/// arguments as a JSON Schema object.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

impl Tool {
    /// As OpenAI's function calling declares it (which Ollama and vLLM take as it is).
    fn as_function(&self) -> serde_json::Value {
        serde_json::json!({"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}})
    }
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id for it (made up for providers without ids).
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them: JSON text, perhaps malformed.
    pub arguments: String,
}

/// What to ask. `None` fields take the configured defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub input: Input,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    /// Tools the model may call natively (empty: none offered).
    pub tools: Vec<Tool>,
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
                let mut text: Vec<&str> = Vec::new();
                for message in messages {
                    text.push(&message.content);
                    text.extend(message.tool_calls.iter().map(|c| c.arguments.as_str()));
                }
                let tools: Vec<String> =
                    self.tools.iter().map(|t| format!("{} {}", t.description, t.parameters)).collect();
                text.extend(tools.iter().map(String::as_str));
                text.join("\n")
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
    /// The model called tools and waits for their results.
    ToolCalls,
    /// The model (or its provider's filter) would not answer: Anthropic's `refusal`, OpenAI's
    /// `content_filter`.
    Refused,
    Other(String),
}

impl FinishReason {
    fn from_openai(reason: Option<&str>) -> FinishReason {
        match reason {
            Some("stop") | Some("eos") | None => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
            Some("content_filter") => FinishReason::Refused,
            Some(other) => FinishReason::Other(other.to_string()),
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The answer: what the agent reads actions and edits from, without the model's thinking.
    pub text: String,
    /// What the model thought before answering (a server's reasoning field, `<think>`
    /// blocks taken out of the text): never read as an action, never sent back.
    pub reasoning: String,
    /// Tools it called (native tool calling), in order.
    pub tool_calls: Vec<ToolCall>,
    /// The provider's signed thinking blocks, as they came (Anthropic's `thinking` with its
    /// signature, `redacted_thinking`): what must go back with the tool calls.
    pub signed: Vec<serde_json::Value>,
    pub usage: Usage,
    pub finish: FinishReason,
    /// The model that answered, as the server names it.
    pub model: String,
    pub latency: Duration,
}

impl Reply {
    /// The reply with its `<think>` blocks moved from the text to the reasoning.
    fn separated(mut self) -> Reply {
        let (answer, thought) = reasoning::split(&self.text);
        if !thought.is_empty() {
            if !self.reasoning.is_empty() {
                self.reasoning.push('\n');
            }
            self.reasoning.push_str(&thought);
            self.text = answer;
        }
        self
    }
}

/// How a call is made: streamed text deltas go to `deltas` when given (the request is then
/// streamed, as every request is with `model.stream`); `cancel` stops the request (the
/// connection is dropped).
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
    /// How the agent calls this model's tools (`model.tools`).
    pub tools: ToolsMode,
    /// The room a reply gets unless a request asks for more (`model.max_tokens`).
    pub max_tokens: u32,
    /// How many requests the server takes at once (`model.parallel`; `None`: not said).
    pub parallel: Option<u32>,
}

/// The one interface the agent uses.
#[async_trait]
pub trait Model: Send + Sync {
    fn info(&self) -> ModelInfo;

    /// Sends `request`, streaming when `options.deltas` is set or `model.stream` is on.
    async fn send(&self, request: &Request, options: &CallOptions) -> Result<Reply, ModelError>;

    /// The model's context window in tokens: `model.context_window`, else what the server
    /// says of the model it serves (asked once); `None` when neither says.
    async fn context_window(&self) -> Option<u32> {
        None
    }

    /// The models the server serves, by the names a request takes (`/v1/models`, Ollama's
    /// `/api/tags`), asked within a few seconds; empty when it does not say.
    async fn served(&self) -> Vec<String> {
        Vec::new()
    }

    /// One vector per text from the embeddings model `model` on the same server
    /// (`/v1/embeddings` or Ollama's `/api/embed`); a provider without embeddings says so.
    async fn embed(
        &self,
        model: &str,
        texts: &[String],
        cancel: &CancellationToken,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        let _ = (model, texts, cancel);
        Err(ModelError::Config {
            reason: format!("{} has no embeddings endpoint", self.info().provider.name()),
        })
    }
}

/// The names in a model list: `data[].id` (OpenAI-compatible, Anthropic) or `models[].name`
/// (Ollama's tags).
fn served_names(reply: &serde_json::Value) -> Vec<String> {
    let listed = reply["data"]
        .as_array()
        .map(|data| data.iter().filter_map(|m| m["id"].as_str()).collect::<Vec<_>>())
        .or_else(|| {
            reply["models"].as_array().map(|m| m.iter().filter_map(|m| m["name"].as_str()).collect())
        });
    let mut names: Vec<String> = listed.unwrap_or_default().into_iter().map(str::to_string).collect();
    names.truncate(64);
    names
}

/// Reads the vectors out of an embeddings reply: `data[i].embedding` (OpenAI-compatible) or
/// `embeddings[i]` (Ollama), one per text asked for.
fn read_vectors(reply: &serde_json::Value, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let rows: Vec<&serde_json::Value> = match (reply["data"].as_array(), reply["embeddings"].as_array()) {
        (Some(data), _) => data.iter().map(|d| &d["embedding"]).collect(),
        (None, Some(embeddings)) => embeddings.iter().collect(),
        _ => return Err("the reply has neither data nor embeddings".to_string()),
    };
    if rows.len() != expected {
        return Err(format!("{} vectors for {expected} texts", rows.len()));
    }
    rows.into_iter()
        .map(|row| {
            row.as_array()
                .ok_or_else(|| "an embedding is not a list of numbers".to_string())?
                .iter()
                .map(|x| {
                    x.as_f64().map(|x| x as f32).ok_or_else(|| "an embedding holds a non-number".to_string())
                })
                .collect()
        })
        .collect()
}

/// A positive whole number of tokens, as a server writes one.
fn tokens_in(value: &serde_json::Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|&n| n > 0)
}

/// Everything a reply wrote (its text and its calls' arguments), for estimating its tokens.
fn written_text(text: &str, calls: &[ToolCall]) -> String {
    let mut written = text.to_string();
    for call in calls {
        written.push_str(&call.name);
        written.push_str(&call.arguments);
    }
    written
}

/// A role's model (SPEC L5): `[model]` under `[profiles.<role>]`, with a model name (a role
/// file's `model`) over both — or, when the name is a `[profiles.NAME]`, that profile's
/// settings; Claude Code's `opus`, `sonnet`, `haiku` and `inherit` that no profile maps are the
/// role's own model.
pub type RoleModels = Arc<dyn Fn(&str, Option<&str>) -> Result<Arc<dyn Model>, ModelError> + Send + Sync>;

/// The role models of these settings (keys from the environment, as for the run's model).
pub fn role_models(
    base: ModelSettings,
    profiles: std::collections::BTreeMap<String, ModelSettings>,
) -> RoleModels {
    Arc::new(move |role, name| {
        let env = |variable: &str| std::env::var(variable).ok();
        let mut profiles = profiles.clone();
        match name {
            // a `[profiles.NAME]` of the settings: how the user maps Claude Code's `opus`,
            // `sonnet` and `haiku` (or any name) onto their servers
            Some(name) if profiles.contains_key(name) && name != role => {
                let named = profiles[name].clone();
                let merged = profiles.get(role).map_or_else(|| named.clone(), |p| p.overlay(&named));
                profiles.insert(role.to_string(), merged);
            }
            // Claude Code's family names, unmapped: the role's own model, not a name no local
            // server has
            Some("opus" | "sonnet" | "haiku" | "inherit") | None => {}
            Some(name) => {
                let top = ModelSettings { model: Some(name.to_string()), ..ModelSettings::default() };
                let merged = profiles.get(role).map_or_else(|| top.clone(), |p| p.overlay(&top));
                profiles.insert(role.to_string(), merged);
            }
        }
        ModelConfig::resolve(&base, &profiles, Some(role), &env).and_then(connect)
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn embeddings_replies_in_both_shapes() {
        let openai = json!({"data": [{"embedding": [0.5, 1]}, {"embedding": [0, -1.5]}]});
        assert_eq!(read_vectors(&openai, 2), Ok(vec![vec![0.5, 1.0], vec![0.0, -1.5]]));
        let ollama = json!({"model": "m", "embeddings": [[1, 2, 3]]});
        assert_eq!(read_vectors(&ollama, 1), Ok(vec![vec![1.0, 2.0, 3.0]]));
        assert_eq!(read_vectors(&ollama, 2), Err("1 vectors for 2 texts".to_string()));
        assert!(read_vectors(&json!({"data": [{"embedding": ["x"]}]}), 1).is_err());
        assert!(read_vectors(&json!({"error": "no"}), 1).unwrap_err().contains("neither"));
    }

    #[test]
    fn a_role_files_model_is_a_profile_of_that_name_or_a_model_name() {
        let base = ModelSettings {
            base_url: Some("http://127.0.0.1:9".into()),
            model: Some("local".into()),
            ..ModelSettings::default()
        };
        let mut profiles = std::collections::BTreeMap::new();
        profiles.insert(
            "opus".to_string(),
            ModelSettings { model: Some("big-model".into()), ..ModelSettings::default() },
        );
        let models = role_models(base, profiles);
        let named =
            |name: Option<&str>| models("architect", name).map(|m| m.info().model).unwrap_or_default();
        assert_eq!(named(Some("opus")), "big-model", "Claude Code's opus through [profiles.opus]");
        assert_eq!(named(Some("sonnet")), "local", "an unmapped family name: the role's own model");
        assert_eq!(named(Some("inherit")), "local");
        assert_eq!(named(Some("qwen2.5-coder:7b")), "qwen2.5-coder:7b", "a model name on the role's server");
        assert_eq!(named(None), "local");
    }
}
