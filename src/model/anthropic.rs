//! The Anthropic Messages API: `x-api-key` and `anthropic-version` headers, the system prompt
//! apart from the messages, streamed as typed SSE events (`message_start`,
//! `content_block_start`, `content_block_delta`, `message_delta`, `message_stop`, `error`).
//! Tools go as `tools` with an `input_schema`; calls come back as `tool_use` blocks (streamed:
//! a block start with the name, then `input_json_delta` pieces), and their results go back
//! as `tool_result` blocks in the next user message. With extended thinking on
//! (`model.thinking_tokens`), the thinking blocks and their signatures go back, as they came,
//! before the tool calls they led to — the API requires it — and are otherwise never read.

use std::time::Instant;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

use super::http::{self, Client};
use super::{
    CallOptions, FinishReason, Input, Message, Model, ModelError, ModelInfo, Reply, Request, Role, ToolCall,
    Usage, written_text,
};

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
                (system, conversation(messages, config.thinking_tokens.is_some()))
            }
            // no completion endpoint: a prompt is one user message
            Input::Prompt(prompt) => (Vec::new(), vec![json!({"role": "user", "content": prompt})]),
        };
        let room = request.max_tokens.unwrap_or(config.max_tokens);
        let mut body = json!({
            "model": config.model,
            "max_tokens": room,
            "temperature": request.temperature.unwrap_or(config.temperature),
            "messages": messages,
            "stream": stream,
        });
        // extended thinking: its budget is part of max_tokens, and it takes no temperature
        if let Some(budget) = config.thinking_tokens {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
            body["max_tokens"] = json!(room.saturating_add(budget));
            if let Some(body) = body.as_object_mut() {
                body.remove("temperature");
            }
        }
        // cache breakpoints (at most four): the system prompt, the tools, and the conversation
        // so far, so the next request of a step — this one and one more turn — reads its
        // prefix from the cache at a tenth of the price
        let breakpoint = json!({"type": "ephemeral"});
        if !system.is_empty() {
            body["system"] =
                json!([{"type": "text", "text": system.join("\n\n"), "cache_control": breakpoint}]);
        }
        if let Some(last) = body["messages"].as_array_mut().and_then(|m| m.last_mut()) {
            if let Some(text) = last["content"].as_str().map(str::to_string) {
                last["content"] = json!([{"type": "text", "text": text}]);
            }
            if let Some(block) = last["content"].as_array_mut().and_then(|b| b.last_mut()) {
                block["cache_control"] = breakpoint.clone();
            }
        }
        if !request.stop.is_empty() {
            body["stop_sequences"] = json!(request.stop);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            if let Some(last) = body["tools"].as_array_mut().and_then(|t| t.last_mut()) {
                last["cache_control"] = json!({"type": "ephemeral"});
            }
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

/// The messages as the API takes them: tool calls as `tool_use` blocks of the assistant's
/// turn, their results as `tool_result` blocks of the next user turn (turns of one role in a
/// row are merged: the API wants them alternating). With extended thinking on (`thinking`),
/// an assistant turn's signed thinking goes first; otherwise thinking never goes back.
fn conversation(messages: &[Message], thinking: bool) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = match m.role {
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.answers.as_ref().map(|c| c.id.as_str()).unwrap_or_default(),
                    "content": m.content,
                })],
            ),
            Role::Assistant => {
                // signed thinking first, as it came: the API checks it with the tool calls
                let mut blocks = if thinking { m.signed.clone() } else { Vec::new() };
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for call in &m.tool_calls {
                    let input: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                    blocks
                        .push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                ("assistant", blocks)
            }
            _ => {
                // images before the text that asks about them, as Anthropic advises
                let mut blocks: Vec<Value> = m
                    .images
                    .iter()
                    .map(|i| json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.base64}}))
                    .collect();
                blocks.push(json!({"type": "text", "text": m.content}));
                ("user", blocks)
            }
        };
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| match content.as_slice() {
            // a turn of plain text is sent as a string, the API's simplest form
            [only] if only["type"] == "text" => json!({"role": role, "content": only["text"]}),
            _ => json!({"role": role, "content": content}),
        })
        .collect()
}

/// Whether a content block is thinking the API signed (`thinking` with its `signature`, or
/// `redacted_thinking`): it goes back with the tool calls it led to.
fn is_signed(block: &Value) -> bool {
    matches!(block["type"].as_str(), Some("thinking" | "redacted_thinking"))
}

fn finish(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::Refused,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

fn tokens(value: &Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok())
}

/// `(prompt, cached)` of a usage object: the prompt is every input token — those after the
/// last cache breakpoint (`input_tokens`), those written to the cache and those read from it.
fn prompt_tokens(usage: &Value) -> (Option<u32>, Option<u32>) {
    let read = tokens(&usage["cache_read_input_tokens"]);
    let written = tokens(&usage["cache_creation_input_tokens"]).unwrap_or(0);
    let prompt = tokens(&usage["input_tokens"])
        .map(|input| input.saturating_add(written).saturating_add(read.unwrap_or(0)));
    (prompt, read)
}

#[async_trait]
impl Model for Anthropic {
    fn info(&self) -> ModelInfo {
        self.client.info(MESSAGES)
    }

    async fn served(&self) -> Vec<String> {
        self.client.served("/v1/models", &self.headers()).await
    }

    /// The settings' only: the API does not say.
    async fn context_window(&self) -> Option<u32> {
        self.client.config.context_window
    }

    async fn send(&self, request: &Request, options: &CallOptions) -> Result<Reply, ModelError> {
        let stream = options.deltas.is_some() || self.client.config.stream;
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
                    let reasoning: String = blocks
                        .iter()
                        .filter(|b| b["type"] == "thinking")
                        .filter_map(|b| b["thinking"].as_str())
                        .collect();
                    let signed: Vec<Value> = blocks.iter().filter(|b| is_signed(b)).cloned().collect();
                    let calls: Vec<ToolCall> = blocks
                        .iter()
                        .filter(|b| b["type"] == "tool_use")
                        .map(|b| ToolCall {
                            id: b["id"].as_str().unwrap_or_default().to_string(),
                            name: b["name"].as_str().unwrap_or_default().to_string(),
                            arguments: b["input"].to_string(),
                        })
                        .collect();
                    let usage = &json["usage"];
                    let written = written_text(&text, &calls);
                    let (prompt, cached) = prompt_tokens(usage);
                    return Ok(Reply {
                        tool_calls: calls,
                        signed,
                        usage: Usage::reported_or_estimated(
                            prompt,
                            tokens(&usage["output_tokens"]),
                            &prompt_text,
                            &written,
                        )
                        .with_cached(cached),
                        finish: finish(json["stop_reason"].as_str()),
                        model: json["model"].as_str().unwrap_or(&client.config.model).to_string(),
                        latency: started.elapsed(),
                        text,
                        reasoning,
                    }
                    .separated());
                }
                let mut events = http::bytes(response).eventsource();
                let mut text = String::new();
                let mut reasoning = String::new();
                // tool_use blocks by their index: (index, call)
                let mut calls: Vec<(u64, ToolCall)> = Vec::new();
                // thinking and redacted_thinking blocks by their index, as they came
                let mut signed: Vec<(u64, Value)> = Vec::new();
                let (mut input_tokens, mut output_tokens, mut stop_reason, mut model) =
                    (None, None, None::<String>, None::<String>);
                let mut cached = None;
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
                            (input_tokens, cached) = prompt_tokens(&message["usage"]);
                            output_tokens = tokens(&message["usage"]["output_tokens"]);
                            model = message["model"].as_str().map(str::to_string);
                        }
                        "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                            let block = &data["content_block"];
                            calls.push((
                                data["index"].as_u64().unwrap_or(0),
                                ToolCall {
                                    id: block["id"].as_str().unwrap_or_default().to_string(),
                                    name: block["name"].as_str().unwrap_or_default().to_string(),
                                    arguments: String::new(),
                                },
                            ));
                        }
                        "content_block_start" if is_signed(&data["content_block"]) => {
                            signed.push((data["index"].as_u64().unwrap_or(0), data["content_block"].clone()));
                        }
                        "content_block_delta" => {
                            let index = data["index"].as_u64().unwrap_or(0);
                            if let Some((_, block)) = signed.iter_mut().find(|(i, _)| *i == index) {
                                for key in ["thinking", "signature"] {
                                    if let Some(piece) = data["delta"][key].as_str() {
                                        let whole =
                                            format!("{}{piece}", block[key].as_str().unwrap_or_default());
                                        block[key] = json!(whole);
                                    }
                                }
                            }
                            if let Some(delta) = data["delta"]["text"].as_str() {
                                text.push_str(delta);
                                options.emit(delta);
                            }
                            if let Some(thought) = data["delta"]["thinking"].as_str() {
                                reasoning.push_str(thought);
                            }
                            if let Some(piece) = data["delta"]["partial_json"].as_str() {
                                let index = data["index"].as_u64().unwrap_or(0);
                                if let Some((_, call)) = calls.iter_mut().find(|(i, _)| *i == index) {
                                    call.arguments.push_str(piece);
                                }
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
                let calls: Vec<ToolCall> = calls
                    .into_iter()
                    .map(|(_, mut call)| {
                        // a call without arguments streams none
                        if call.arguments.trim().is_empty() {
                            call.arguments = "{}".to_string();
                        }
                        call
                    })
                    .collect();
                let written = written_text(&text, &calls);
                Ok(Reply {
                    tool_calls: calls,
                    signed: signed.into_iter().map(|(_, block)| block).collect(),
                    usage: Usage::reported_or_estimated(input_tokens, output_tokens, &prompt_text, &written)
                        .with_cached(cached),
                    finish: finish(stop_reason.as_deref()),
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
