//! OpenAI-compatible servers: `/v1/chat/completions` and, for base models that only continue
//! text, `/v1/completions`; streamed as SSE `data:` lines ending with `[DONE]`. Tools go as
//! `tools` (type `function`) with `tool_choice: "auto"`; calls come back as `tool_calls`, whole
//! or, streamed, as deltas keyed by `index` whose `arguments` arrive in pieces.

use std::time::Instant;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

use super::http::{self, Client};
use super::{
    CallOptions, FinishReason, Input, Message, Model, ModelError, ModelInfo, Reply, Request, Role, ToolCall,
    Usage, tokens_in, written_text,
};

const EMBEDDINGS: &str = "/v1/embeddings";
const CHAT: &str = "/v1/chat/completions";
const COMPLETIONS: &str = "/v1/completions";

pub struct OpenAi {
    client: Client,
}

impl OpenAi {
    pub fn new(client: Client) -> OpenAi {
        OpenAi { client }
    }

    fn body(&self, request: &Request, stream: bool) -> (&'static str, Value) {
        let config = &self.client.config;
        let mut body = json!({
            "model": config.model,
            "temperature": request.temperature.unwrap_or(config.temperature),
            "max_tokens": request.max_tokens.unwrap_or(config.max_tokens),
            "stream": stream,
        });
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        match &request.input {
            Input::Chat(messages) => {
                body["messages"] = messages.iter().map(message).collect();
                if !request.tools.is_empty() {
                    body["tools"] = request.tools.iter().map(super::Tool::as_function).collect();
                    body["tool_choice"] = json!("auto");
                }
                (CHAT, body)
            }
            Input::Prompt(prompt) => {
                body["prompt"] = json!(prompt);
                (COMPLETIONS, body)
            }
        }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.client.config.api_key {
            Some(key) => vec![("authorization", format!("Bearer {}", key.expose()))],
            None => Vec::new(),
        }
    }
}

/// A message as the chat API takes it: tool calls on the assistant's turn, a tool result
/// keyed by the call's id.
fn message(m: &Message) -> Value {
    match m.role {
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.answers.as_ref().map(|c| c.id.as_str()).unwrap_or_default(),
            "content": m.content,
        }),
        Role::Assistant if !m.tool_calls.is_empty() => json!({
            "role": "assistant",
            "content": if m.content.is_empty() { Value::Null } else { json!(m.content) },
            "tool_calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })).collect::<Vec<_>>(),
        }),
        // text and images as content parts, the vision API's form
        _ if !m.images.is_empty() => {
            let mut parts = vec![json!({"type": "text", "text": m.content})];
            parts.extend(
                m.images.iter().map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
            );
            json!({"role": m.role.as_str(), "content": parts})
        }
        _ => json!({"role": m.role.as_str(), "content": m.content}),
    }
}

/// The tool calls of a whole reply's message.
fn tool_calls(message: &Value) -> Vec<ToolCall> {
    let Some(calls) = message["tool_calls"].as_array() else {
        return Vec::new();
    };
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            id: call["id"].as_str().map_or_else(|| format!("call_{index}"), str::to_string),
            name: call["function"]["name"].as_str().unwrap_or_default().to_string(),
            arguments: arguments_text(&call["function"]["arguments"]),
        })
        .collect()
}

/// Arguments as JSON text: servers send a string, a few an object.
fn arguments_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Streamed tool-call deltas, gathered by their `index`.
#[derive(Default)]
struct StreamedCalls(Vec<ToolCall>);

impl StreamedCalls {
    fn add(&mut self, deltas: &Value) {
        let Some(deltas) = deltas.as_array() else { return };
        for delta in deltas {
            let index = delta["index"].as_u64().map_or(self.0.len().saturating_sub(1), |i| i as usize);
            while self.0.len() <= index {
                let n = self.0.len();
                self.0.push(ToolCall {
                    id: format!("call_{n}"),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let call = &mut self.0[index];
            if let Some(id) = delta["id"].as_str() {
                call.id = id.to_string();
            }
            if let Some(name) = delta["function"]["name"].as_str() {
                call.name.push_str(name);
            }
            call.arguments.push_str(&arguments_text(&delta["function"]["arguments"]));
        }
    }
}

/// The reasoning of one choice, when the server keeps it apart (`reasoning_content`: llama.cpp,
/// vLLM, DeepSeek; `reasoning`: OpenRouter, newer vLLM).
fn choice_reasoning(choice: &Value) -> Option<&str> {
    ["message", "delta"].iter().find_map(|part| {
        choice[part]["reasoning_content"].as_str().or_else(|| choice[part]["reasoning"].as_str())
    })
}

/// The text of one choice: a chat message's content, a streamed delta's, or a completion's.
fn choice_text(choice: &Value) -> Option<&str> {
    choice["message"]["content"]
        .as_str()
        .or_else(|| choice["delta"]["content"].as_str())
        .or_else(|| choice["text"].as_str())
}

/// The prompt tokens read from the server's cache: OpenAI's (and vLLM's)
/// `usage.prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`.
fn cached_tokens(reply: &Value) -> Option<u32> {
    reply["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .or_else(|| reply["timings"]["cache_n"].as_u64())
        .and_then(|n| u32::try_from(n).ok())
}

fn usage_numbers(usage: &Value) -> (Option<u32>, Option<u32>) {
    let number = |key: &str| usage[key].as_u64().and_then(|n| u32::try_from(n).ok());
    (number("prompt_tokens"), number("completion_tokens"))
}

#[async_trait]
impl Model for OpenAi {
    fn info(&self) -> ModelInfo {
        self.client.info(CHAT)
    }

    async fn embed(
        &self,
        model: &str,
        texts: &[String],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        self.client.embed(EMBEDDINGS, model, texts, &self.headers(), cancel).await
    }

    async fn served(&self) -> Vec<String> {
        self.client.served("/v1/models", &self.headers()).await
    }

    /// llama.cpp's `/props` (the context it was started with), else vLLM's `/v1/models`
    /// (`max_model_len` of the model served).
    async fn context_window(&self) -> Option<u32> {
        let client = &self.client;
        client
            .context_window(|| async {
                let headers = self.headers();
                if let Some(props) = client.get_json("/props", &headers).await
                    && let Some(n) = tokens_in(&props["default_generation_settings"]["n_ctx"])
                        .or_else(|| tokens_in(&props["n_ctx"]))
                {
                    return Some(n);
                }
                let models = client.get_json("/v1/models", &headers).await?;
                let served = models["data"].as_array()?;
                let model = served
                    .iter()
                    .find(|m| m["id"].as_str() == Some(client.config.model.as_str()))
                    .or_else(|| served.first().filter(|_| served.len() == 1))?;
                tokens_in(&model["max_model_len"])
            })
            .await
    }

    async fn send(&self, request: &Request, options: &CallOptions) -> Result<Reply, ModelError> {
        let stream = options.deltas.is_some() || self.client.config.stream;
        let (path, body) = self.body(request, stream);
        let client = &self.client;
        client
            .call(path, &options.cancel, async {
                let started = Instant::now();
                let response = client.post(path, &body, &self.headers(), &options.cancel).await?;
                let prompt_text = request.input_text();
                if !stream {
                    let json = client.json(path, response).await?;
                    let choice = json["choices"]
                        .get(0)
                        .ok_or_else(|| client.bad_reply(path, "no choices in the reply"))?;
                    let text = choice_text(choice).unwrap_or_default().to_string();
                    let (prompt, completion) = usage_numbers(&json["usage"]);
                    let calls = tool_calls(&choice["message"]);
                    let written = written_text(&text, &calls);
                    return Ok(Reply {
                        tool_calls: calls,
                        signed: Vec::new(),
                        usage: Usage::reported_or_estimated(prompt, completion, &prompt_text, &written)
                            .with_cached(cached_tokens(&json)),
                        finish: FinishReason::from_openai(choice["finish_reason"].as_str()),
                        model: json["model"].as_str().unwrap_or(&client.config.model).to_string(),
                        latency: started.elapsed(),
                        text,
                        reasoning: choice_reasoning(choice).unwrap_or_default().to_string(),
                    }
                    .separated());
                }
                let mut events = http::bytes(response).eventsource();
                let mut text = String::new();
                let mut reasoning = String::new();
                let mut calls = StreamedCalls::default();
                let (mut finish, mut model, mut usage) = (None::<String>, None::<String>, (None, None));
                let mut cached = None;
                let mut done = false;
                while let Some(event) = events.next().await {
                    let event = event.map_err(|err| client.stream_cut(path, text.len(), err.to_string()))?;
                    if event.data.trim() == "[DONE]" {
                        done = true;
                        break;
                    }
                    let chunk: Value = serde_json::from_str(&event.data).map_err(|err| {
                        client.bad_reply(
                            path,
                            format!("a streamed chunk is not JSON ({err}): {:?}", event.data),
                        )
                    })?;
                    if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
                        let message =
                            error["message"].as_str().or_else(|| error.as_str()).unwrap_or("an error");
                        return Err(client.stream_cut(
                            path,
                            text.len(),
                            format!("the server reported {message}"),
                        ));
                    }
                    if let Some(choice) = chunk["choices"].get(0) {
                        if let Some(delta) = choice_text(choice).filter(|d| !d.is_empty()) {
                            text.push_str(delta);
                            options.emit(delta);
                        }
                        if let Some(thought) = choice_reasoning(choice) {
                            reasoning.push_str(thought);
                        }
                        calls.add(&choice["delta"]["tool_calls"]);
                        if let Some(reason) = choice["finish_reason"].as_str() {
                            finish = Some(reason.to_string());
                        }
                    }
                    if chunk["usage"].is_object() {
                        usage = usage_numbers(&chunk["usage"]);
                    }
                    cached = cached_tokens(&chunk).or(cached);
                    if let Some(name) = chunk["model"].as_str() {
                        model = Some(name.to_string());
                    }
                }
                if !done && finish.is_none() {
                    return Err(client.stream_cut(path, text.len(), "the stream ended without [DONE]"));
                }
                let written = written_text(&text, &calls.0);
                Ok(Reply {
                    tool_calls: calls.0,
                    signed: Vec::new(),
                    usage: Usage::reported_or_estimated(usage.0, usage.1, &prompt_text, &written)
                        .with_cached(cached),
                    finish: FinishReason::from_openai(finish.as_deref()),
                    model: model.unwrap_or_else(|| client.config.model.clone()),
                    latency: started.elapsed(),
                    text,
                    reasoning,
                }
                .separated())
            })
            .await
    }
}
