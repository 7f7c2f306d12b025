//! A model health check: one tiny request, and what happened (provider, endpoint, model,
//! latency, tokens) — behind `tokamak model check` and the `tokamak.checkModel` command.

use super::{CallOptions, Message, ModelConfig, ModelError, Reply, Request, Usage, connect};

/// The request every check sends: short, cheap, and answerable by a small base model.
pub fn probe() -> Request {
    Request {
        max_tokens: Some(16),
        temperature: Some(0.0),
        ..Request::chat(vec![
            Message::system("You are a health check. Answer in one word."),
            Message::user("Reply with the single word: ok"),
        ])
    }
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct ModelCheck {
    pub provider: &'static str,
    pub endpoint: String,
    pub model: String,
    pub reply: Reply,
}

impl ModelCheck {
    pub fn lines(&self) -> Vec<String> {
        let Usage { prompt_tokens, completion_tokens, estimated, .. } = self.reply.usage;
        let answered_as = if self.reply.model != self.model {
            format!(" (answered as {})", self.reply.model)
        } else {
            String::new()
        };
        vec![
            format!("provider: {}", self.provider),
            format!("endpoint: {}", self.endpoint),
            format!("model:    {}{answered_as}", self.model),
            format!("latency:  {} ms", self.reply.latency.as_millis()),
            format!(
                "tokens:   {prompt_tokens} prompt + {completion_tokens} completion ({})",
                if estimated { "estimated: the server reported none" } else { "reported by the server" }
            ),
            format!("reply:    {:?}", self.reply.text.trim()),
        ]
    }
}

/// Sends [`probe`] to an already resolved model.
pub async fn run_check(config: ModelConfig, stream: bool) -> Result<ModelCheck, ModelError> {
    let provider = config.provider.name();
    let model = connect(config)?;
    let info = model.info();
    let mut options = CallOptions::default();
    let mut received = None;
    if stream {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        options.deltas = Some(sender);
        received = Some(receiver);
    }
    let reply = model.send(&probe(), &options).await?;
    if let Some(mut receiver) = received {
        let mut pieces = 0;
        while receiver.try_recv().is_ok() {
            pieces += 1;
        }
        tracing::debug!("{pieces} streamed pieces");
    }
    Ok(ModelCheck { provider, endpoint: info.endpoint, model: info.model, reply })
}
