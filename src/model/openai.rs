//! OpenAI-compatible servers: `/v1/chat/completions` and, for base models that only continue
//! text, `/v1/completions`; streamed as SSE `data:` lines ending with `[DONE]`.

use std::time::Instant;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

use super::http::{self, Client};
use super::{CallOptions, FinishReason, Input, Model, ModelError, ModelInfo, Reply, Request, Usage};

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
                body["messages"] =
                    messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
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

/// The text of one choice: a chat message's content, a streamed delta's, or a completion's.
fn choice_text(choice: &Value) -> Option<&str> {
    choice["message"]["content"]
        .as_str()
        .or_else(|| choice["delta"]["content"].as_str())
        .or_else(|| choice["text"].as_str())
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

    async fn send(&self, request: &Request, options: &CallOptions) -> Result<Reply, ModelError> {
        let stream = options.deltas.is_some();
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
                    return Ok(Reply {
                        usage: Usage::reported_or_estimated(prompt, completion, &prompt_text, &text),
                        finish: FinishReason::from_openai(choice["finish_reason"].as_str()),
                        model: json["model"].as_str().unwrap_or(&client.config.model).to_string(),
                        latency: started.elapsed(),
                        text,
                    });
                }
                let mut events = http::bytes(response).eventsource();
                let mut text = String::new();
                let (mut finish, mut model, mut usage) = (None::<String>, None::<String>, (None, None));
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
                        if let Some(reason) = choice["finish_reason"].as_str() {
                            finish = Some(reason.to_string());
                        }
                    }
                    if chunk["usage"].is_object() {
                        usage = usage_numbers(&chunk["usage"]);
                    }
                    if let Some(name) = chunk["model"].as_str() {
                        model = Some(name.to_string());
                    }
                }
                if !done && finish.is_none() {
                    return Err(client.stream_cut(path, text.len(), "the stream ended without [DONE]"));
                }
                Ok(Reply {
                    usage: Usage::reported_or_estimated(usage.0, usage.1, &prompt_text, &text),
                    finish: FinishReason::from_openai(finish.as_deref()),
                    model: model.unwrap_or_else(|| client.config.model.clone()),
                    latency: started.elapsed(),
                    text,
                })
            })
            .await
    }
}
