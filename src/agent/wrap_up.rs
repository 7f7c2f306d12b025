//! The model's wrap-up of a run stopped before its end (seed 002, P0-1: "Wrap-up 프롬프트
//! 없음 … 지금까지 작업을 요약해줘"): asked once, within `limits.wrap_up_tokens` kept beyond the
//! run's own budget and a short timeout, what it did and what is left — shown beside
//! Tokamak's own facts, marked as the model's words; no model or no budget, and the ending says
//! why there is none.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::{CallOptions, Message, Model, ModelError, Request, Usage};
use crate::run::{ExitReason, WrapUp};

/// How long the wrap-up may take: the run is over, the user waits for its ending.
const WRAP_UP_TIMEOUT: Duration = Duration::from_secs(30);
/// The same for a run the user cancelled: they asked it to stop now.
const CANCELLED_TIMEOUT: Duration = Duration::from_secs(5);
/// Characters of the run's facts the wrap-up's prompt shows at most.
const MAX_FACTS: usize = 6_000;

/// Whether a run that ended so gets a wrap-up: it was stopped before its end.
pub fn wanted(reason: ExitReason) -> bool {
    matches!(
        reason,
        ExitReason::TokenLimit
            | ExitReason::TimeLimit
            | ExitReason::ToolCallLimit
            | ExitReason::RevisionLimit
            | ExitReason::FileLimit
            | ExitReason::IterationLimit
            | ExitReason::RepeatedState
            | ExitReason::MaxAttempts
            | ExitReason::RepeatedError
            | ExitReason::Cancelled
            | ExitReason::Unsure
    )
}

/// Asks `model` once for its wrap-up of the run toward `goal` that stopped for `reason` with
/// `stopped` (Tokamak's sentence); `facts` are what the run did (its plan and what became of
/// each step, the files it changed). `budget`: the tokens kept for it. A cancelled run waits
/// for it [`CANCELLED_TIMEOUT`] at most, any other [`WRAP_UP_TIMEOUT`].
pub async fn wrap_up(
    model: Result<&Arc<dyn Model>, &ModelError>,
    (goal, reason): (&str, ExitReason),
    stopped: &str,
    facts: &str,
    budget: u32,
) -> (WrapUp, Option<Usage>) {
    let patience = if reason == ExitReason::Cancelled { CANCELLED_TIMEOUT } else { WRAP_UP_TIMEOUT };
    let none = |why: String| (WrapUp::None { why }, None);
    if budget == 0 {
        return none("limits.wrap_up_tokens is 0".to_string());
    }
    let model = match model {
        Ok(model) => model,
        Err(err) => return none(format!("no model could be asked ({err})")),
    };
    let system = "Your run as a coding agent was stopped before its end. In at most five short sentences, plain text, no code: say what you did and what is left for the user to do, naming files. Do not promise more work.";
    let user = format!(
        "The goal: {goal}\nWhy it stopped: {stopped}\nWhat the run did, as Tokamak recorded it:\n{}",
        crate::text::cut(facts, MAX_FACTS)
    );
    let prompt = crate::model::estimate_tokens(system) + crate::model::estimate_tokens(&user);
    // the reply's room is what the budget leaves after the prompt
    let Some(room) = budget.checked_sub(prompt).filter(|room| *room >= 64) else {
        return none(format!(
            "its prompt (~{prompt} tokens) leaves no room within limits.wrap_up_tokens ({budget})"
        ));
    };
    let mut request = Request::chat(vec![Message::system(system), Message::user(&user)]);
    request.max_tokens = Some(room);
    request.temperature = Some(0.2);
    // the run's own cancel has fired when it was cancelled: the wrap-up has a timeout instead
    let options = CallOptions { deltas: None, cancel: CancellationToken::new() };
    match tokio::time::timeout(patience, model.send(&request, &options)).await {
        Err(_) => none(format!("the model gave none within {} s", patience.as_secs())),
        Ok(Err(err)) => none(format!("the model could not be asked: {err}")),
        Ok(Ok(reply)) => {
            let text = reply.text.split_whitespace().collect::<Vec<_>>().join(" ");
            if text.is_empty() {
                return (WrapUp::None { why: "the model answered nothing".to_string() }, Some(reply.usage));
            }
            let tokens = reply.usage.prompt_tokens.saturating_add(reply.usage.completion_tokens);
            (WrapUp::Said { text: crate::text::cut(&text, 1_500), tokens }, Some(reply.usage))
        }
    }
}

/// The wrap-up as the ending's summary carries it.
pub fn sentence(wrap_up: &WrapUp) -> String {
    match wrap_up {
        WrapUp::Said { text, .. } => format!(" The model's wrap-up, in its words: \"{text}\""),
        WrapUp::None { why } => format!(" No wrap-up from the model: {why}."),
    }
}
