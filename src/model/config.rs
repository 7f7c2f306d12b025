//! Which model to talk to, and how: `[model]` and `[profiles.<role>]` settings over the
//! environment over defaults, resolved into a [`ModelConfig`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::error::ModelError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// `/v1/chat/completions` and `/v1/completions`: OpenAI, vLLM, llama.cpp's server, Ollama's
    /// `/v1`, LM Studio, a LiteLLM proxy.
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
    /// Ollama's own `/api/chat` and `/api/generate`.
    Ollama,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
        }
    }

    fn parse(name: &str) -> Result<Provider, ModelError> {
        match name {
            "openai" | "openai-compatible" | "vllm" | "llama.cpp" | "llamacpp" | "lmstudio" | "litellm" => {
                Ok(Provider::OpenAi)
            }
            "anthropic" => Ok(Provider::Anthropic),
            "ollama" => Ok(Provider::Ollama),
            other => Err(ModelError::Config {
                reason: format!(
                    "model.provider {other:?} is not one of \"openai\" (any OpenAI-compatible server), \"anthropic\", \"ollama\""
                ),
            }),
        }
    }
}

/// An API key: never printed, not even by `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced (error bodies sometimes quote it).
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 { text.to_string() } else { text.replace(&self.0, "[redacted]") }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// `[model]` (and each `[profiles.<role>]`) as written in `tokamak.toml` or sent in
/// `initializationOptions`; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSettings {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The environment variable holding the API key (default: `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY` by provider).
    pub api_key_env: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub connect_timeout_ms: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
    pub retry_base_ms: Option<u64>,
    /// How the agent calls tools: `auto` (native, falling back to text once if the server
    /// refuses tools), `native` or `text` (one JSON action per reply).
    pub tools: Option<String>,
    /// Whether every request is streamed (`false`: only where someone reads the text as it
    /// comes).
    pub stream: Option<bool>,
    /// Anthropic's extended thinking: the tokens the model may think before it answers
    /// (unset: off).
    pub thinking_tokens: Option<u32>,
    /// The model's context window in tokens, when the server does not say (unset: asked of
    /// the server where it can say).
    pub context_window: Option<u32>,
    /// How many requests the server takes at once (unset: as many as are sent; `1`: one at a
    /// time, as a llama.cpp server started with one slot).
    pub parallel: Option<u32>,
}

impl ModelSettings {
    /// `self` with every field `top` sets replaced.
    pub fn overlay(&self, top: &ModelSettings) -> ModelSettings {
        ModelSettings {
            provider: top.provider.clone().or_else(|| self.provider.clone()),
            base_url: top.base_url.clone().or_else(|| self.base_url.clone()),
            model: top.model.clone().or_else(|| self.model.clone()),
            api_key_env: top.api_key_env.clone().or_else(|| self.api_key_env.clone()),
            temperature: top.temperature.or(self.temperature),
            max_tokens: top.max_tokens.or(self.max_tokens),
            connect_timeout_ms: top.connect_timeout_ms.or(self.connect_timeout_ms),
            timeout_ms: top.timeout_ms.or(self.timeout_ms),
            max_retries: top.max_retries.or(self.max_retries),
            retry_base_ms: top.retry_base_ms.or(self.retry_base_ms),
            tools: top.tools.clone().or_else(|| self.tools.clone()),
            stream: top.stream.or(self.stream),
            thinking_tokens: top.thinking_tokens.or(self.thinking_tokens),
            context_window: top.context_window.or(self.context_window),
            parallel: top.parallel.or(self.parallel),
        }
    }
}

/// llama.cpp's server listens here by default: the model Tokamak uses with nothing set.
pub const DEFAULT_LOCAL_URL: &str = "http://127.0.0.1:8080";
const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";
const DEFAULT_ANTHROPIC_URL: &str = "https://api.anthropic.com";

/// Everything needed to call one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub provider: Provider,
    /// Without a trailing `/`, `/v1` or `/api`: endpoints are appended.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// Where the key came from (for messages: "set OPENAI_API_KEY").
    pub api_key_env: Option<String>,
    pub temperature: f32,
    pub max_tokens: u32,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub max_retries: u32,
    pub retry_base: Duration,
    /// Nothing was configured: the error for an unreachable server says what to set.
    pub defaulted: bool,
    /// How the agent calls tools.
    pub tools: ToolsMode,
    /// Every request streamed (`model.stream`), not only those whose text someone reads.
    pub stream: bool,
    /// Anthropic's extended thinking budget (`model.thinking_tokens`), when on.
    pub thinking_tokens: Option<u32>,
    /// The context window in tokens as the settings give it (`model.context_window`).
    pub context_window: Option<u32>,
    /// How many requests the server takes at once (`model.parallel`), when the settings say.
    pub parallel: Option<u32>,
}

/// `model.tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsMode {
    /// Native tool calls; if the server refuses them, the text protocol (said once).
    Auto,
    Native,
    /// One JSON action per reply, in a fenced block.
    Text,
}

impl ModelConfig {
    /// Resolves `[model]` overlaid with `[profiles.<role>]` (when `role` has one), then the
    /// environment (`env` looks a variable up), then defaults.
    pub fn resolve(
        model: &ModelSettings,
        profiles: &BTreeMap<String, ModelSettings>,
        role: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ModelConfig, ModelError> {
        let settings = match role.and_then(|r| profiles.get(r)) {
            Some(profile) => model.overlay(profile),
            None => model.clone(),
        };
        let env_url = env("TOKAMAK_LLM_URL").filter(|v| !v.is_empty());
        let ollama_host = env("OLLAMA_HOST").filter(|v| !v.is_empty());
        let url = settings.base_url.clone().or(env_url);
        let provider = match &settings.provider {
            Some(name) => Provider::parse(name)?,
            None => match &url {
                Some(url) if url.contains("api.anthropic.com") => Provider::Anthropic,
                Some(_) => Provider::OpenAi,
                None if ollama_host.is_some() => Provider::Ollama,
                None => Provider::OpenAi,
            },
        };
        let defaulted = url.is_none() && settings.provider.is_none() && ollama_host.is_none();
        let base_url = match (url, provider) {
            (Some(url), _) => url,
            (None, Provider::Ollama) => {
                ollama_host.map_or_else(|| DEFAULT_OLLAMA_URL.to_string(), ollama_url)
            }
            (None, Provider::Anthropic) => DEFAULT_ANTHROPIC_URL.to_string(),
            (None, Provider::OpenAi) => DEFAULT_LOCAL_URL.to_string(),
        };
        let base_url = normalize_base(&base_url, provider)?;
        let model_name =
            match settings.model.clone().or_else(|| env("TOKAMAK_MODEL").filter(|v| !v.is_empty())) {
                Some(name) => name,
                None if provider == Provider::OpenAi => "local-model".to_string(),
                None => {
                    return Err(ModelError::Config {
                        reason: format!(
                            "no model named for {}: set model in [model] of tokamak.toml or TOKAMAK_MODEL",
                            provider.name()
                        ),
                    });
                }
            };
        let key_var = settings.api_key_env.clone().or_else(|| match provider {
            // a key for a hosted API is not sent to a server on this machine unless asked for
            Provider::OpenAi if !is_loopback(&base_url) => Some("OPENAI_API_KEY".to_string()),
            Provider::Anthropic => Some("ANTHROPIC_API_KEY".to_string()),
            _ => None,
        });
        // (a project's own base_url and api_key_env reach here only from a trusted folder:
        // see trust.rs)
        let api_key = key_var.as_deref().and_then(env).filter(|k| !k.is_empty()).map(Secret::new);
        if provider == Provider::Anthropic && api_key.is_none() {
            let var = key_var.as_deref().unwrap_or("ANTHROPIC_API_KEY");
            return Err(ModelError::Config { reason: format!("the Anthropic API needs a key: set {var}") });
        }
        let tools = match settings.tools.as_deref() {
            None | Some("auto") => ToolsMode::Auto,
            Some("native") => ToolsMode::Native,
            Some("text") => ToolsMode::Text,
            Some(other) => {
                return Err(ModelError::Config {
                    reason: format!("model.tools {other:?} is not one of \"auto\", \"native\", \"text\""),
                });
            }
        };
        let millis =
            |value: Option<u64>, default: u64| Duration::from_millis(value.unwrap_or(default).max(1));
        Ok(ModelConfig {
            provider,
            base_url,
            model: model_name,
            api_key,
            api_key_env: key_var,
            temperature: settings.temperature.unwrap_or(0.2),
            max_tokens: settings.max_tokens.unwrap_or(2048),
            connect_timeout: millis(settings.connect_timeout_ms, 5_000),
            timeout: millis(settings.timeout_ms, 120_000),
            max_retries: settings.max_retries.unwrap_or(3),
            retry_base: millis(settings.retry_base_ms, 500),
            defaulted,
            tools,
            stream: settings.stream.unwrap_or(false),
            thinking_tokens: settings.thinking_tokens.filter(|&t| t > 0),
            context_window: settings.context_window.filter(|&t| t > 0),
            parallel: settings.parallel.filter(|&n| n > 0),
        })
    }

    /// The full URL of an endpoint path such as `/v1/chat/completions`.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }
}

/// `OLLAMA_HOST` is often `host:port` or `0.0.0.0` (a bind address, not one to call).
fn ollama_url(host: String) -> String {
    let with_scheme = if host.contains("://") { host } else { format!("http://{host}") };
    let with_port = match url::Url::parse(&with_scheme) {
        Ok(url) if url.port().is_none() && !with_scheme.trim_end_matches('/').ends_with(":80") => {
            format!("{}:11434", with_scheme.trim_end_matches('/'))
        }
        _ => with_scheme,
    };
    with_port.replace("0.0.0.0", "127.0.0.1")
}

fn normalize_base(url: &str, provider: Provider) -> Result<String, ModelError> {
    let parsed = url::Url::parse(url).map_err(|err| ModelError::Config {
        reason: format!("model base_url {url:?} is not a URL: {err}"),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ModelError::Config {
            reason: format!("model base_url {url:?} must start with http:// or https://"),
        });
    }
    let mut base = url.trim_end_matches('/').to_string();
    let suffix = if provider == Provider::Ollama { "/api" } else { "/v1" };
    if base.ends_with(suffix) {
        base.truncate(base.len() - suffix.len());
    }
    Ok(base)
}

fn is_loopback(base_url: &str) -> bool {
    url::Url::parse(base_url).ok().and_then(|u| u.host_str().map(str::to_string)).is_some_and(|host| {
        host == "localhost"
            || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || host == "[::1]"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(settings: ModelSettings, vars: &[(&str, &str)]) -> Result<ModelConfig, ModelError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        ModelConfig::resolve(&settings, &BTreeMap::new(), None, &env)
    }

    #[test]
    fn nothing_configured_means_a_local_llama_cpp_server() {
        let config = resolve(ModelSettings::default(), &[("OPENAI_API_KEY", "sk-secret")]).unwrap();
        assert_eq!(config.provider, Provider::OpenAi);
        assert_eq!(config.endpoint("/v1/chat/completions"), "http://127.0.0.1:8080/v1/chat/completions");
        assert!(config.defaulted);
        assert_eq!(config.api_key, None, "a hosted key is not sent to a local server unasked");
    }

    #[test]
    fn settings_over_environment_over_defaults() {
        let vars = [
            ("TOKAMAK_LLM_URL", "https://llm.example.com/v1/"),
            ("TOKAMAK_MODEL", "env-model"),
            ("OPENAI_API_KEY", "sk-1"),
        ];
        let config = resolve(ModelSettings::default(), &vars).unwrap();
        assert_eq!(config.base_url, "https://llm.example.com");
        assert_eq!(config.model, "env-model");
        assert_eq!(config.api_key.as_ref().map(Secret::expose), Some("sk-1"));
        let settings = ModelSettings {
            model: Some("toml-model".into()),
            base_url: Some("http://10.0.0.5:8000".into()),
            ..Default::default()
        };
        let config = resolve(settings, &vars).unwrap();
        assert_eq!((config.model.as_str(), config.base_url.as_str()), ("toml-model", "http://10.0.0.5:8000"));
    }

    #[test]
    fn providers_are_inferred_and_checked() {
        let config =
            resolve(ModelSettings::default(), &[("OLLAMA_HOST", "0.0.0.0:11434"), ("TOKAMAK_MODEL", "qwen")])
                .unwrap();
        assert_eq!((config.provider, config.base_url.as_str()), (Provider::Ollama, "http://127.0.0.1:11434"));
        let config =
            resolve(ModelSettings::default(), &[("OLLAMA_HOST", "gpu-box"), ("TOKAMAK_MODEL", "qwen")])
                .unwrap();
        assert_eq!(config.base_url, "http://gpu-box:11434");
        let anthropic = ModelSettings {
            base_url: Some("https://api.anthropic.com".into()),
            model: Some("claude".into()),
            ..Default::default()
        };
        let err = resolve(anthropic.clone(), &[]).unwrap_err().to_string();
        assert!(err.contains("set ANTHROPIC_API_KEY"), "{err}");
        let config = resolve(anthropic, &[("ANTHROPIC_API_KEY", "sk-ant")]).unwrap();
        assert_eq!(config.provider, Provider::Anthropic);
        let err = resolve(ModelSettings { provider: Some("openia".into()), ..Default::default() }, &[])
            .unwrap_err();
        assert!(err.to_string().contains("\"openia\" is not one of"), "{err}");
        let err = resolve(ModelSettings { provider: Some("ollama".into()), ..Default::default() }, &[])
            .unwrap_err();
        assert!(err.to_string().contains("TOKAMAK_MODEL"), "{err}");
        let err = resolve(ModelSettings { base_url: Some("ftp://x".into()), ..Default::default() }, &[])
            .unwrap_err();
        assert!(err.to_string().contains("http://"), "{err}");
    }

    #[test]
    fn a_role_profile_overrides_the_model() {
        let mut profiles = BTreeMap::new();
        profiles.insert(
            "reviewer".to_string(),
            ModelSettings { model: Some("big".into()), ..Default::default() },
        );
        let base =
            ModelSettings { model: Some("small".into()), temperature: Some(0.7), ..Default::default() };
        let env = |_: &str| None;
        let config = ModelConfig::resolve(&base, &profiles, Some("reviewer"), &env).unwrap();
        assert_eq!((config.model.as_str(), config.temperature), ("big", 0.7));
        let config = ModelConfig::resolve(&base, &profiles, Some("coder"), &env).unwrap();
        assert_eq!(config.model, "small");
    }

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("sk-very-secret".into());
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(secret.redact("bad key sk-very-secret given"), "bad key [redacted] given");
    }
}
