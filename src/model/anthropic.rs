//! The Anthropic Messages API: `x-api-key` and `anthropic-version` headers, the system prompt
//! apart from the messages, streamed as typed SSE events (`message_start`,
//! `content_block_delta`, `message_delta`, `message_stop`, `error`).

use std::time::Instant;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

use super::http::{self, Client};
use super::{CallOptions, FinishReason, Input, Model, ModelError, ModelInfo, Reply, Request, Role, Usage};

const MESSAGES: &str = "/v1/messages";
const VERSION: &str = "2023-06-01";

pub struct Anthropic {
    client: Client,
}

impl Anthropic {
    pub fn new(client: Client) -> Anthropic {
        Anthropic { client }
    }

    fn body(&self, request: &Request, stream: bool) -> Value {
        let config = &self.client.config;
        let (system, messages): (Vec<&str>, Vec<Value>) = match &request.input {
            Input::Chat(messages) => {
                let system =
                    messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
                let rest = messages
                    .iter()
                    .filter(|m| m.role != Role::System)
                    .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
                    .collect();
                (system, rest)
            }
            // no completion endpoint: a prompt is one user message
            Input::Prompt(prompt) => (Vec::new(), vec![json!({"role": "user", "content": prompt})]),
        };
        let mut body = json!({
            "model": config.model,
            "max_tokens": request.max_tokens.unwrap_or(config.max_tokens),
            "temperature": request.temperature.unwrap_or(config.temperature),
            "messages": messages,
            "stream": stream,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if !request.stop.is_empty() {
            body["stop_sequences"] = json!(request.stop);
        }
        body
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", VERSION.to_string())];
        if let Some(key) = &self.client.config.api_key {
            headers.push(("x-api-key", key.expose().to_string()));
        }
        headers
    }
}

fn finish(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

fn tokens(value: &Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok())
}

#[async_trait]
impl Model for Anthropic {
    fn info(&self) -> ModelInfo {
        self.client.info(MESSAGES)
    }

    async fn send(&self, request: &Request, options: &CallOptions) -> Result<Reply, ModelError> {
        let stream = options.deltas.is_some();
        let body = self.body(request, stream);
        let client = &self.client;
        client
            .call(MESSAGES, &options.cancel, async {
                let started = Instant::now();
                let response = client.post(MESSAGES, &body, &self.headers(), &options.cancel).await?;
                let prompt_text = request.input_text();
                if !stream {
                    let json = client.json(MESSAGES, response).await?;
                    let blocks = json["content"]
                        .as_array()
                        .ok_or_else(|| client.bad_reply(MESSAGES, "no content in the reply"))?;
                    let text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
                    let usage = &json["usage"];
                    return Ok(Reply {
                        usage: Usage::reported_or_estimated(
                            tokens(&usage["input_tokens"]),
                            tokens(&usage["output_tokens"]),
                            &prompt_text,
                            &text,
                        ),
                        finish: finish(json["stop_reason"].as_str()),
                        model: json["model"].as_str().unwrap_or(&client.config.model).to_string(),
                        latency: started.elapsed(),
                        text,
                    });
                }
                let mut events = http::bytes(response).eventsource();
                let mut text = String::new();
                let (mut input_tokens, mut output_tokens, mut stop_reason, mut model) =
                    (None, None, None::<String>, None::<String>);
                let mut stopped = false;
                while let Some(event) = events.next().await {
                    let event =
                        event.map_err(|err| client.stream_cut(MESSAGES, text.len(), err.to_string()))?;
                    if event.data.trim().is_empty() {
                        continue;
                    }
                    let data: Value = serde_json::from_str(&event.data).map_err(|err| {
                        client.bad_reply(MESSAGES, format!("an event is not JSON ({err}): {:?}", event.data))
                    })?;
                    match data["type"].as_str().unwrap_or(event.event.as_str()) {
                        "message_start" => {
                            let message = &data["message"];
                            input_tokens = tokens(&message["usage"]["input_tokens"]);
                            output_tokens = tokens(&message["usage"]["output_tokens"]);
                            model = message["model"].as_str().map(str::to_string);
                        }
                        "content_block_delta" => {
                            if let Some(delta) = data["delta"]["text"].as_str() {
                                text.push_str(delta);
                                options.emit(delta);
                            }
                        }
                        "message_delta" => {
                            stop_reason =
                                data["delta"]["stop_reason"].as_str().map(str::to_string).or(stop_reason);
                            output_tokens = tokens(&data["usage"]["output_tokens"]).or(output_tokens);
                        }
                        "message_stop" => {
                            stopped = true;
                            break;
                        }
                        "error" => {
                            let error = &data["error"];
                            let detail = format!(
                                "{} [{}]",
                                error["message"].as_str().unwrap_or("an error"),
                                error["type"].as_str().unwrap_or("error")
                            );
                            return Err(client.stream_cut(
                                MESSAGES,
                                text.len(),
                                format!("the server reported {detail}"),
                            ));
                        }
                        _ => {} // ping, content_block_start, content_block_stop
                    }
                }
                if !stopped {
                    return Err(client.stream_cut(
                        MESSAGES,
                        text.len(),
                        "the stream ended without message_stop",
                    ));
                }
                Ok(Reply {
                    usage: Usage::reported_or_estimated(input_tokens, output_tokens, &prompt_text, &text),
                    finish: finish(stop_reason.as_deref()),
                    model: model.unwrap_or_else(|| client.config.model.clone()),
                    latency: started.elapsed(),
                    text,
                })
            })
            .await
    }
}
