//! HTTP for every provider: one reqwest client, retries with exponential backoff and jitter
//! on 429/5xx/connection resets (honouring `Retry-After`), cancellation, the total timeout,
//! and turning failures into [`ModelError`]s. Headers are never logged; keys are redacted
//! from every message.

use std::future::Future;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::StatusCode;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ModelInfo;
use super::config::{DEFAULT_LOCAL_URL, ModelConfig};
use super::error::ModelError;

/// Longest wait between two attempts, whatever the server asks for.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

pub struct Client {
    pub config: ModelConfig,
    http: reqwest::Client,
    /// The context window the server named, once it has (a server that has not loaded the
    /// model yet is asked again).
    window: std::sync::Mutex<Option<u32>>,
}

/// How long a question about the model (its context window) may take: it is never worth a
/// wait.
const INFO_TIMEOUT: Duration = Duration::from_secs(3);

/// Makes rustls's ring provider the process's, once, before any HTTP client is built (reqwest
/// is built without a provider of its own).
pub fn tls_ready() {
    static READY: std::sync::Once = std::sync::Once::new();
    READY.call_once(|| {
        // another part of the process may have installed one first: that one serves
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl Client {
    pub fn new(config: ModelConfig) -> Result<Client, ModelError> {
        tls_ready();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("tokamak/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| ModelError::Config { reason: format!("cannot set up HTTP: {err}") })?;
        Ok(Client { config, http, window: std::sync::Mutex::new(None) })
    }

    /// The model's context window: the settings' (`model.context_window`), else what `ask`
    /// learns from the server (kept once it has said).
    pub async fn context_window<F: Future<Output = Option<u32>>>(
        &self,
        ask: impl FnOnce() -> F,
    ) -> Option<u32> {
        if let Some(window) = self.config.context_window.or(*crate::sync::lock(&self.window)) {
            return Some(window);
        }
        let said = ask().await;
        if said.is_some() {
            *crate::sync::lock(&self.window) = said;
        }
        said
    }

    /// GETs `path` as JSON, once and within a few seconds: `None` when the server does not
    /// answer it with JSON (it has no such endpoint).
    pub async fn get_json(&self, path: &str, headers: &[(&str, String)]) -> Option<Value> {
        let endpoint = self.endpoint(path);
        let mut request = self.http.get(&endpoint).timeout(INFO_TIMEOUT);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        match request.send().await {
            Ok(response) if response.status().is_success() => response.json().await.ok(),
            Ok(response) => {
                tracing::debug!("GET {endpoint}: {}", response.status());
                None
            }
            Err(err) => {
                tracing::debug!("GET {endpoint}: {}", root_cause(&err));
                None
            }
        }
    }

    /// The names of the models the server at `path` lists (`Model::served`); none when it does
    /// not answer.
    pub async fn served(&self, path: &str, headers: &[(&str, String)]) -> Vec<String> {
        match self.get_json(path, headers).await {
            Some(reply) => super::served_names(&reply),
            None => Vec::new(),
        }
    }

    pub fn endpoint(&self, path: &str) -> String {
        self.config.endpoint(path)
    }

    /// Describes the model behind `path`.
    pub fn info(&self, path: &str) -> ModelInfo {
        ModelInfo {
            provider: self.config.provider,
            model: self.config.model.clone(),
            endpoint: self.endpoint(path),
            tools: self.config.tools,
            max_tokens: self.config.max_tokens,
            parallel: self.config.parallel,
        }
    }

    /// Runs a whole call (request and reading the reply) under the total timeout and the
    /// cancellation token.
    pub async fn call<T>(
        &self,
        path: &str,
        cancel: &CancellationToken,
        call: impl Future<Output = Result<T, ModelError>>,
    ) -> Result<T, ModelError> {
        let endpoint = self.endpoint(path);
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ModelError::Cancelled { endpoint }),
            result = tokio::time::timeout(self.config.timeout, call) => match result {
                Ok(result) => result,
                Err(_) => Err(ModelError::Timeout { endpoint, after: self.config.timeout }),
            },
        }
    }

    /// POSTs `body` to `path` with `headers`, retrying what may pass; the response is a
    /// success (2xx), anything else is an error.
    pub async fn post(
        &self,
        path: &str,
        body: &Value,
        headers: &[(&str, String)],
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ModelError> {
        let endpoint = self.endpoint(path);
        let attempts = self.config.max_retries.saturating_add(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            tracing::debug!("POST {endpoint} (model {}, attempt {attempt} of {attempts})", self.config.model);
            let mut request = self.http.post(&endpoint).json(body);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let retry_in = match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    let retry_after = retry_after(&response);
                    let text = response.text().await.unwrap_or_default();
                    let detail = self.redact(&error_detail(&text, status));
                    if !retryable(status) || attempt >= attempts {
                        let error = match self.status_error(&endpoint, status, detail, attempt) {
                            ModelError::ContextTooLong { endpoint, detail, .. } => {
                                ModelError::ContextTooLong { endpoint, detail, limit: context_limit(&text) }
                            }
                            other => other,
                        };
                        return Err(error);
                    }
                    tracing::warn!("{endpoint} answered {status} ({detail}); trying again");
                    retry_after.unwrap_or_else(|| self.backoff(attempt))
                }
                Err(err) if is_reset(&err) && attempt < attempts => {
                    tracing::warn!("{endpoint}: the connection was reset; trying again");
                    self.backoff(attempt)
                }
                Err(err) => return Err(self.transport_error(&endpoint, &err)),
            };
            tokio::select! {
                _ = cancel.cancelled() => return Err(ModelError::Cancelled { endpoint }),
                _ = tokio::time::sleep(retry_in.min(MAX_RETRY_DELAY)) => {}
            }
        }
    }

    /// base × 2^(attempt−1), times a random factor in [0.5, 1.5).
    fn backoff(&self, attempt: u32) -> Duration {
        let exponential =
            self.config.retry_base.saturating_mul(1 << (attempt - 1).min(16)).min(MAX_RETRY_DELAY);
        exponential.mul_f64(0.5 + fastrand::f64())
    }

    /// One vector per text from the embeddings model `model` at `path` (both the
    /// OpenAI-compatible and Ollama's endpoints take `{model, input}`).
    pub async fn embed(
        &self,
        path: &str,
        model: &str,
        texts: &[String],
        headers: &[(&str, String)],
        cancel: &CancellationToken,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        let body = serde_json::json!({"model": model, "input": texts});
        self.call(path, cancel, async {
            let response = self.post(path, &body, headers, cancel).await?;
            let reply = self.json(path, response).await?;
            super::read_vectors(&reply, texts.len()).map_err(|detail| self.bad_reply(path, detail))
        })
        .await
    }

    pub fn redact(&self, text: &str) -> String {
        match &self.config.api_key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        }
    }

    fn status_error(&self, endpoint: &str, status: StatusCode, detail: String, attempts: u32) -> ModelError {
        let endpoint = endpoint.to_string();
        let lower = detail.to_lowercase();
        let code = status.as_u16();
        match code {
            401 | 403 => {
                let var = self.config.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".to_string());
                let hint = if self.config.api_key.is_some() {
                    format!("; check the key in {var}")
                } else {
                    format!("; no API key was sent: set {var} (or api_key_env in [model])")
                };
                ModelError::Unauthorized { endpoint, status: code, detail, hint }
            }
            404 if lower.contains("model") => {
                ModelError::ModelNotFound { endpoint, model: self.config.model.clone(), detail }
            }
            404 => ModelError::Rejected {
                endpoint,
                status: code,
                detail: format!("{detail} (is base_url right?)"),
            },
            429 => ModelError::RateLimited { endpoint, attempts, detail },
            _ if is_context_error(&lower) => ModelError::ContextTooLong { endpoint, detail, limit: None },
            500..=599 => ModelError::Server { endpoint, status: code, attempts, detail },
            _ => ModelError::Rejected { endpoint, status: code, detail },
        }
    }

    fn transport_error(&self, endpoint: &str, err: &reqwest::Error) -> ModelError {
        let endpoint = endpoint.to_string();
        let reason = self.redact(&root_cause(err));
        if err.is_timeout() {
            return ModelError::Timeout { endpoint, after: self.config.connect_timeout };
        }
        let hint = if self.config.defaulted {
            format!(
                ". Nothing is configured, so Tokamak tried a local llama.cpp server at {DEFAULT_LOCAL_URL}: start one \
                 (llama-server -m MODEL.gguf --port 8080), or set TOKAMAK_LLM_URL and TOKAMAK_MODEL, or [model] base_url \
                 and model in tokamak.toml"
            )
        } else {
            String::new()
        };
        ModelError::Unreachable { endpoint, reason, hint }
    }

    /// Reads a whole JSON body.
    pub async fn json(&self, path: &str, response: reqwest::Response) -> Result<Value, ModelError> {
        let text = response
            .text()
            .await
            .map_err(|err| ModelError::BodyCut { endpoint: self.endpoint(path), detail: root_cause(&err) })?;
        serde_json::from_str(&text).map_err(|err| ModelError::BadReply {
            endpoint: self.endpoint(path),
            detail: format!("{err} in {:?}", self.redact(&shorten(&text))),
        })
    }

    pub fn bad_reply(&self, path: &str, detail: impl Into<String>) -> ModelError {
        ModelError::BadReply { endpoint: self.endpoint(path), detail: self.redact(&detail.into()) }
    }

    pub fn stream_cut(&self, path: &str, received: usize, detail: impl Into<String>) -> ModelError {
        ModelError::StreamCut { endpoint: self.endpoint(path), received, detail: self.redact(&detail.into()) }
    }
}

/// The body's bytes as a stream, errors as text.
pub fn bytes(response: reqwest::Response) -> impl Stream<Item = Result<bytes::Bytes, String>> {
    response.bytes_stream().map(|chunk| chunk.map_err(|err| root_cause(&err)))
}

fn retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504 | 529)
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds = value.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0)?;
    Some(Duration::from_secs_f64(seconds.min(MAX_RETRY_DELAY.as_secs_f64())))
}

fn is_context_error(lower: &str) -> bool {
    [
        "context length",
        // llama.cpp's server: "the request exceeds the available context size"
        "context size",
        "context_length",
        "context window",
        "too long",
        "maximum context",
        "exceeds the context",
        "too many tokens",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The context length an error body names: llama.cpp's `n_ctx`, or the number in OpenAI's and
/// vLLM's "maximum context length is N tokens", llama-cpp-python's "context window of N",
/// Anthropic's "N tokens > M maximum".
fn context_limit(body: &str) -> Option<u32> {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let error = if json["error"].is_object() { &json["error"] } else { &json };
        if let Some(n) = error["n_ctx"].as_u64() {
            return u32::try_from(n).ok();
        }
    }
    static PATTERNS: std::sync::LazyLock<Vec<regex::Regex>> = std::sync::LazyLock::new(|| {
        [
            r"maximum context length is (\d+)",
            r"context window of (\d+)",
            r"\d+ tokens > (\d+) maximum",
            r"context (?:length|size|window)(?: of| is)? \(?(\d+)",
        ]
        .iter()
        .filter_map(|p| regex::Regex::new(p).ok())
        .collect()
    });
    PATTERNS
        .iter()
        .find_map(|pattern| pattern.captures(body)?.get(1)?.as_str().parse().ok())
        .filter(|&n: &u32| n > 0)
}

fn is_reset(err: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if current.to_string().contains("connection closed before message completed") {
            return true;
        }
        source = current.source();
    }
    false
}

/// The innermost cause, which is the informative one ("Connection refused").
pub fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    let text = current.to_string();
    // "Connection refused (os error 111)" reads better without the errno
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The message inside an error body (`{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"message": …}`), else the body itself, shortened.
fn error_detail(body: &str, status: StatusCode) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|json| {
        let error = &json["error"];
        error["message"]
            .as_str()
            .or_else(|| error.as_str())
            .or_else(|| json["message"].as_str())
            .or_else(|| json["detail"].as_str())
            .map(|message| match error["code"].as_str().or_else(|| error["type"].as_str()) {
                Some(code) => format!("{message} [{code}]"),
                None => message.to_string(),
            })
    });
    match from_json {
        Some(message) => shorten(&message),
        None if body.trim().is_empty() => status.canonical_reason().unwrap_or("no reason given").to_string(),
        None => shorten(body.trim()),
    }
}

fn shorten(text: &str) -> String {
    let mut out: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_length_is_read_from_each_servers_error() {
        let llama_cpp = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5304,"n_ctx":2048}}"#;
        assert!(is_context_error(&error_detail(llama_cpp, StatusCode::BAD_REQUEST).to_lowercase()));
        assert_eq!(context_limit(llama_cpp), Some(2048));
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(context_limit(openai), Some(8192));
        let python = r#"{"error":{"message":"Requested tokens (5304) exceed context window of 2048","type":"internal_server_error"}}"#;
        assert!(is_context_error(&error_detail(python, StatusCode::BAD_REQUEST).to_lowercase()));
        assert_eq!(context_limit(python), Some(2048));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert_eq!(context_limit(anthropic), Some(200_000));
        assert_eq!(context_limit(r#"{"error":"the prompt is too long"}"#), None);
    }
}
