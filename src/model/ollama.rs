//! Ollama's own API: `/api/chat` (and `/api/generate` for a plain prompt), streamed as one
//! JSON object a line until `"done": true`. Tools go as `tools` (type `function`); calls come
//! back in `message.tool_calls` with their arguments as an object and no id (Tokamak numbers
//! them), and results go back as `tool` messages naming the tool.

use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::io::StreamReader;

use super::http::{self, Client};
use super::{
    CallOptions, FinishReason, Input, Message, Model, ModelError, ModelInfo, Reply, Request, Role, ToolCall,
    Usage, tokens_in, written_text,
};

const EMBEDDINGS: &str = "/api/embed";
const CHAT: &str = "/api/chat";
const GENERATE: &str = "/api/generate";

/// Longest NDJSON line accepted (a line is one small object; this only stops a runaway).
const MAX_LINE: usize = 8 * 1024 * 1024;

pub struct Ollama {
    client: Client,
}

impl Ollama {
    pub fn new(client: Client) -> Ollama {
        Ollama { client }
    }

    fn body(&self, request: &Request, stream: bool) -> (&'static str, Value) {
        let config = &self.client.config;
        let mut options = json!({
            "temperature": request.temperature.unwrap_or(config.temperature),
            "num_predict": request.max_tokens.unwrap_or(config.max_tokens),
        });
        if !request.stop.is_empty() {
            options["stop"] = json!(request.stop);
        }
        let mut body = json!({"model": config.model, "stream": stream, "options": options});
        match &request.input {
            Input::Chat(messages) => {
                body["messages"] = messages.iter().map(message).collect();
                if !request.tools.is_empty() {
                    body["tools"] = request.tools.iter().map(super::Tool::as_function).collect();
                }
                (CHAT, body)
            }
            Input::Prompt(prompt) => {
                body["prompt"] = json!(prompt);
                body["raw"] = json!(true);
                (GENERATE, body)
            }
        }
    }
}

fn message(m: &Message) -> Value {
    match m.role {
        Role::Tool => json!({
            "role": "tool",
            "content": m.content,
            "tool_name": m.answers.as_ref().map(|c| c.name.as_str()).unwrap_or_default(),
        }),
        Role::Assistant if !m.tool_calls.is_empty() => json!({
            "role": "assistant",
            "content": m.content,
            "tool_calls": m.tool_calls.iter().map(|c| {
                let arguments: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                json!({"function": {"name": c.name, "arguments": arguments}})
            }).collect::<Vec<_>>(),
        }),
        _ if !m.images.is_empty() => json!({
            "role": m.role.as_str(),
            "content": m.content,
            "images": m.images.iter().map(|i| i.base64.as_str()).collect::<Vec<_>>(),
        }),
        _ => json!({"role": m.role.as_str(), "content": m.content}),
    }
}

/// The tool calls in a chat line's message, numbered from `first`.
fn tool_calls(line: &Value, first: usize) -> Vec<ToolCall> {
    let Some(calls) = line["message"]["tool_calls"].as_array() else {
        return Vec::new();
    };
    calls
        .iter()
        .enumerate()
        .map(|(n, call)| ToolCall {
            id: call["id"].as_str().map_or_else(|| format!("call_{}", first + n), str::to_string),
            name: call["function"]["name"].as_str().unwrap_or_default().to_string(),
            arguments: match &call["function"]["arguments"] {
                Value::String(text) => text.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            },
        })
        .collect()
}

/// A chat line's `message.content`, or a generate line's `response`.
fn piece(line: &Value) -> Option<&str> {
    line["message"]["content"].as_str().or_else(|| line["response"].as_str())
}

/// The model's thinking, which Ollama keeps apart (`message.thinking`; `thinking` of
/// `/api/generate`).
fn thinking(line: &Value) -> Option<&str> {
    line["message"]["thinking"].as_str().or_else(|| line["thinking"].as_str())
}

fn count(value: &Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok())
}

fn finish(line: &Value) -> FinishReason {
    match line["done_reason"].as_str() {
        Some("length") => FinishReason::Length,
        Some("stop") | None => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

#[async_trait]
impl Model for Ollama {
    fn info(&self) -> ModelInfo {
        self.client.info(CHAT)
    }

    async fn embed(
        &self,
        model: &str,
        texts: &[String],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        self.client.embed(EMBEDDINGS, model, texts, &[], cancel).await
    }

    async fn served(&self) -> Vec<String> {
        self.client.served("/api/tags", &[]).await
    }

    /// `/api/ps`: the context the model is loaded with (Ollama's own choice or `num_ctx`), when
    /// it is loaded.
    async fn context_window(&self) -> Option<u32> {
        let client = &self.client;
        client
            .context_window(|| async {
                let running = client.get_json("/api/ps", &[]).await?;
                let model = client.config.model.as_str();
                running["models"]
                    .as_array()?
                    .iter()
                    .find(|m| m["name"].as_str() == Some(model) || m["model"].as_str() == Some(model))
                    .and_then(|m| tokens_in(&m["context_length"]))
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
                let response = client.post(path, &body, &[], &options.cancel).await?;
                let prompt_text = request.input_text();
                let reply = |text: String, reasoning: String, calls: Vec<ToolCall>, last: &Value| {
                    Reply {
                        usage: Usage::reported_or_estimated(
                            count(&last["prompt_eval_count"]),
                            count(&last["eval_count"]),
                            &prompt_text,
                            &written_text(&text, &calls),
                        ),
                        finish: if calls.is_empty() { finish(last) } else { FinishReason::ToolCalls },
                        tool_calls: calls,
                        signed: Vec::new(),
                        model: last["model"].as_str().unwrap_or(&client.config.model).to_string(),
                        latency: started.elapsed(),
                        text,
                        reasoning,
                    }
                    .separated()
                };
                if !stream {
                    let json = client.json(path, response).await?;
                    let text = piece(&json)
                        .ok_or_else(|| client.bad_reply(path, "no message in the reply"))?
                        .to_string();
                    let calls = tool_calls(&json, 0);
                    let reasoning = thinking(&json).unwrap_or_default().to_string();
                    return Ok(reply(text, reasoning, calls, &json));
                }
                let reader = StreamReader::new(
                    http::bytes(response).map(|chunk| chunk.map_err(std::io::Error::other)),
                );
                let mut lines = FramedRead::new(reader, LinesCodec::new_with_max_length(MAX_LINE));
                let mut text = String::new();
                let mut reasoning = String::new();
                let mut calls: Vec<ToolCall> = Vec::new();
                // a line that is not JSON is a bad reply if more follows, and a cut stream if
                // it was the end (the server closed the connection in the middle of a line)
                let mut unreadable: Option<String> = None;
                while let Some(line) = lines.next().await {
                    let line = line.map_err(|err| client.stream_cut(path, text.len(), err.to_string()))?;
                    if let Some(detail) = unreadable.take() {
                        return Err(client.bad_reply(path, detail));
                    }
                    if line.trim().is_empty() {
                        continue;
                    }
                    let json: Value = match serde_json::from_str(&line) {
                        Ok(json) => json,
                        Err(err) => {
                            unreadable = Some(format!("a streamed line is not JSON ({err}): {line:?}"));
                            continue;
                        }
                    };
                    if let Some(error) = json["error"].as_str() {
                        return Err(client.stream_cut(
                            path,
                            text.len(),
                            format!("the server reported {error}"),
                        ));
                    }
                    if let Some(delta) = piece(&json).filter(|d| !d.is_empty()) {
                        text.push_str(delta);
                        options.emit(delta);
                    }
                    if let Some(thought) = thinking(&json) {
                        reasoning.push_str(thought);
                    }
                    let more = tool_calls(&json, calls.len());
                    calls.extend(more);
                    if json["done"].as_bool() == Some(true) {
                        return Ok(reply(text, reasoning, calls, &json));
                    }
                }
                Err(client.stream_cut(path, text.len(), "the stream ended before \"done\": true"))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Image;

    #[test]
    fn a_users_images_go_as_ollamas_base64_list() {
        let image = Image { mime: "image/png".into(), base64: "iVBOR".into() };
        let value = message(&Message::user("what is this?").with_images(vec![image]));
        assert_eq!(value, json!({"role": "user", "content": "what is this?", "images": ["iVBOR"]}));
        assert_eq!(message(&Message::user("hi")), json!({"role": "user", "content": "hi"}));
    }
}
