//! One tool-using loop: the model gets a goal and the actions, answers with one action at a
//! time, gets each action's result from the executor, and goes on until it says the goal is
//! done or a guard stops it. Malformed replies, unknown actions and refusals go back to the
//! model as errors; they never end the loop by themselves — the limits do, and so does the
//! same action on the same state coming back a third time (SPEC G2).

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::protocol::{self, Reply};
use super::report::{ExitReason, Tokens};
use crate::executor::{Executor, LimitHit};
use crate::model::{CallOptions, Message, Model, ModelError, Request};

/// The third visit to the same (action, result) is a loop.
const REPEATS: usize = 3;

/// What the loop works on.
pub struct ActRequest<'a> {
    /// The role's instructions.
    pub system: &'a str,
    pub goal: &'a str,
    /// What the model should know besides the goal: the workspace, the plan, earlier steps.
    pub context: &'a str,
    /// Prompt plus completion tokens the loop may spend.
    pub max_tokens: u32,
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActOutcome {
    pub exit_reason: ExitReason,
    pub summary: String,
    pub tokens: Tokens,
    /// Replies from the model.
    pub turns: u32,
}

/// Runs the loop to its end. `report` hears one line per action, for progress.
pub async fn act(
    executor: &Executor,
    model: &dyn Model,
    request: &ActRequest<'_>,
    cancel: &CancellationToken,
    report: &(dyn Fn(String) + Send + Sync),
) -> ActOutcome {
    let mut messages = vec![
        Message::system(format!("{}\n\n{}", request.system, protocol::TOOLS)),
        Message::user(format!("{}\n\nGoal: {}", request.context, request.goal)),
    ];
    let mut tokens = Tokens::default();
    let mut turns = 0u32;
    let mut seen: HashMap<[u8; 32], usize> = HashMap::new();
    let tool_call_limit = executor.context().settings.limits.tool_calls;
    let end =
        |exit_reason, summary: String, tokens, turns| ActOutcome { exit_reason, summary, tokens, turns };
    loop {
        if tokens.total() >= request.max_tokens {
            return end(
                ExitReason::TokenLimit,
                format!(
                    "stopped after spending {} tokens (limits.tokens is {})",
                    tokens.total(),
                    request.max_tokens
                ),
                tokens,
                turns,
            );
        }
        // replies with no usable action count against the actions too: a model that only
        // talks must not run forever
        if turns >= tool_call_limit.saturating_mul(2) {
            return end(
                ExitReason::ToolCallLimit,
                format!("stopped after {turns} replies (limits.tool_calls is {tool_call_limit})"),
                tokens,
                turns,
            );
        }
        let options = CallOptions { deltas: None, cancel: cancel.child_token() };
        let reply = match model.send(&Request::chat(messages.clone()), &options).await {
            Ok(reply) => reply,
            Err(ModelError::Cancelled { .. }) => {
                return end(ExitReason::Cancelled, "Cancelled".to_string(), tokens, turns);
            }
            Err(err) => {
                return end(ExitReason::Failed, format!("the model could not be used: {err}"), tokens, turns);
            }
        };
        turns += 1;
        executor.record(
            "prompt",
            serde_json::json!({
                "turn": turns,
                "messages": messages.len(),
                "prompt_tokens": reply.usage.prompt_tokens,
                "completion_tokens": reply.usage.completion_tokens,
                "estimated": reply.usage.estimated,
            }),
        );
        tokens.prompt = tokens.prompt.saturating_add(reply.usage.prompt_tokens);
        tokens.completion = tokens.completion.saturating_add(reply.usage.completion_tokens);
        messages.push(Message::assistant(reply.text.clone()));
        let (key, answer) = match protocol::parse(&reply.text) {
            Err(reason) => {
                report(format!("the reply had no usable action: {reason}"));
                (fingerprint(&["unparsed", &reason]), format!("Error: {reason}"))
            }
            Ok(Reply::Done(summary)) => return end(ExitReason::Done, summary, tokens, turns),
            Ok(Reply::Act(action)) => {
                let result = match executor.execute(&action).await {
                    Ok(result) => result,
                    Err(hit) => return end(limit_reason(hit), hit.to_string(), tokens, turns),
                };
                report(result.summary.clone());
                let arguments = serde_json::to_string(&action).unwrap_or_default();
                let key = fingerprint(&[&arguments, &result.text]);
                let label = if result.ok { "Result" } else { "Refused" };
                (key, format!("{label} of {}:\n{}", action.name(), result.text))
            }
        };
        let visits = seen.entry(key).or_insert(0);
        *visits += 1;
        if *visits >= REPEATS {
            return end(
                ExitReason::RepeatedState,
                "stopped: the same action came back with the same result three times".to_string(),
                tokens,
                turns,
            );
        }
        messages.push(Message::user(answer));
    }
}

fn limit_reason(hit: LimitHit) -> ExitReason {
    match hit {
        LimitHit::ToolCalls(_) => ExitReason::ToolCallLimit,
        LimitHit::Revisions(_) => ExitReason::RevisionLimit,
        LimitHit::Files(_) => ExitReason::FileLimit,
    }
}

fn fingerprint(parts: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().into()
}
