//! One tool-using loop: the model gets a goal and the actions, answers with actions — native
//! tool calls where the server takes tools (or the same calls left in the text by a server
//! without a tool parser, `calls.rs`), else one JSON action per reply (`protocol.rs`) — gets
//! each action's result from the executor, and goes on until it says the goal is done or a
//! guard stops it. With native tools, a reply in plain text is the model's final answer, as
//! in OpenAI's and Anthropic's own loops: the step's checks then judge it. Malformed
//! arguments, unknown tools, refusals and replies without an action go back to the model as
//! errors; they never end the loop by themselves — the limits do, and so does the same
//! action on the same state coming back a third time (SPEC G2). What the model only thought
//! (its reasoning) is never read as an action. A reply cut at the token limit is not acted
//! on past what it finished: the model is asked again with room for twice as many tokens.
//! A long step's history is compressed into a summary as it goes (`trajectory.rs`, SPEC C4).
//! A prompt the server finds too long for the model's context is made to fit (`fit.rs`): the
//! workspace view is cut, then the history compressed, and the request made again.
//! With `model.tools = "auto"`, a server that refuses tools gets the text protocol from then
//! on, and the user is told once.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::json;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::calls;
use super::fit;
use super::protocol::{self, Reply as TextReply};
use super::tools::{self, Called};
use super::trajectory::{self, Trajectory};
use crate::editor::MessageLevel;
use crate::executor::{Action, ChangedFile, Executor, LimitHit};
use crate::model::{
    CallOptions, FinishReason, Message, Model, ModelError, Reply, Request, ToolsMode, estimate_tokens,
};
use crate::run::{Check as RunCheck, ExitReason, Progress, RunEvent, Tokens};
use crate::sync::lock;

/// The third visit to the same state (the run's files, an action and its result) is a loop.
const REPEATS: usize = 3;
/// The most tokens a reply is given room for after replies were cut at the limit.
const MAX_REPLY_TOKENS: u32 = 32_768;
/// How many times one loop doubles the room for a cut action (a model that rambles to the
/// limit whatever the room is must not be given more each time).
const MAX_DOUBLINGS: u32 = 2;
/// The longest summary a plain-text final answer gives its step.
const SUMMARY_CHARS: usize = 400;

/// Endpoints that refused native tools in this process: they get the text protocol.
static REFUSED_TOOLS: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// What the loop works on.
pub struct ActRequest<'a> {
    /// The instructions every step shares (the system message: with the tools, the prefix
    /// a server's prompt cache keeps across steps).
    pub system: &'a str,
    /// The role's instructions, at the end of the first user message, before the goal.
    pub role: &'a str,
    pub goal: &'a str,
    /// The workspace as the prompt shows it (rules, ranked files): what is cut first when the
    /// prompt does not fit the model's context.
    pub workspace: &'a str,
    /// What else the model should know besides the goal: the plan, earlier steps.
    pub context: &'a str,
    /// Prompt plus completion tokens the loop may spend.
    pub max_tokens: u32,
    /// How long an edit's checks may take to settle (for an editor that shows them).
    pub settle: std::time::Duration,
    /// Images that came with the request, beside the first user message.
    pub images: &'a [crate::model::Image],
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActOutcome {
    pub exit_reason: ExitReason,
    pub summary: String,
    pub tokens: Tokens,
    /// Replies from the model.
    pub turns: u32,
    /// Whether it ended with a final answer in plain text rather than `done`.
    pub plain: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Native,
    Text,
}

/// Where a step's events go, each awaited before the step goes on: a tool call reaches the
/// editor before any question about it, and its result after it.
pub type Report<'a> = &'a (dyn Fn(RunEvent) -> futures::future::BoxFuture<'static, ()> + Send + Sync);

/// Runs the loop to its end. `report` hears the step's events: each action as a tool call and
/// its result, and what happened to the model's replies as progress lines.
pub async fn act(
    executor: &Executor,
    model: &dyn Model,
    request: &ActRequest<'_>,
    cancel: &CancellationToken,
    report: Report<'_>,
) -> ActOutcome {
    let say = |message: String| report(line(message));
    let info = model.info();
    let refused_before = lock(&REFUSED_TOOLS).as_ref().is_some_and(|set| set.contains(&info.endpoint));
    let mut protocol = match info.tools {
        ToolsMode::Text => Protocol::Text,
        ToolsMode::Auto if refused_before => Protocol::Text,
        _ => Protocol::Native,
    };
    let first = |view: &str| {
        format!(
            "{view}\n{}\n\nYour role in this step: {}\n\nGoal: {}",
            request.context, request.role, request.goal
        )
    };
    // the MCP servers' tools, once those still starting are up (or the wait is over); what
    // happened to a server is said once
    let mut outside = Vec::new();
    if let Some(toolbox) = executor.context().toolbox() {
        let within = std::time::Duration::from_secs(executor.context().settings.mcp_startup_timeout_s);
        tokio::select! {
            () = toolbox.ready(within) => {}
            () = cancel.cancelled() => {}
        }
        for news in toolbox.news() {
            executor.record("mcp", serde_json::json!({"news": news}));
            executor
                .context()
                .editor
                .show_message(crate::editor::MessageLevel::Warning, format!("Tokamak: {news}"))
                .await;
        }
        outside = toolbox.tools();
    }
    let outside = outside;
    let mut view = request.workspace.to_string();
    let mut messages = vec![
        Message::system(system_prompt(request.system, protocol, &outside)),
        Message::user(first(&view)).with_images(request.images.to_vec()),
    ];
    let mut fits = 0u32;
    let mut tokens = Tokens::default();
    let mut turns = 0u32;
    let tool_call_limit = executor.context().settings.limits.tool_calls;
    let mut trajectory = Trajectory::default();
    // room for a reply, raised after an action was cut at it
    let mut room: Option<u32> = None;
    let mut doublings = 0u32;
    let end = |exit_reason, summary: String, tokens, turns| ActOutcome {
        exit_reason,
        summary,
        tokens,
        turns,
        plain: false,
    };
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
        let compression = trajectory.compress_if_due(
            &mut messages,
            request.goal,
            &executor.changed_files(),
            &executor.context().settings.context,
        );
        if let Some((removed, before, after)) = compression {
            say(format!("compressed the step's history ({before} → {after} tokens)")).await;
            executor.record(
                "compressed",
                json!({"messages_removed": removed, "tokens_before": before, "tokens_after": after}),
            );
        }
        // a server that named its context length before: the prompt is fitted before it goes
        if let Some(limit) = fit::learned(&info.endpoint) {
            let reply_room = fit::room_within(Some(limit), room.unwrap_or(info.max_tokens));
            if reply_room < room.unwrap_or(info.max_tokens) {
                room = Some(reply_room);
            }
            let prompt = trajectory::tokens(&messages).saturating_add(tools_tokens(protocol, &outside));
            if fit::over(limit, prompt, reply_room) && !view.is_empty() {
                let rest = prompt.saturating_sub(estimate_tokens(&view));
                let (before, after) = fit::shrink(&mut view, fit::left(limit, rest, reply_room));
                trajectory.replace_first(&mut messages, first(&view));
                executor
                    .record("fitted", json!({"limit": limit, "view_before": before, "view_after": after}));
            }
        }
        let reply = match ask(model, &messages, protocol, &outside, room, cancel).await {
            Ok(reply) => reply,
            Err(ModelError::Cancelled { .. }) => {
                return end(ExitReason::Cancelled, "Cancelled".to_string(), tokens, turns);
            }
            Err(err)
                if protocol == Protocol::Native && info.tools == ToolsMode::Auto && refuses_tools(&err) =>
            {
                lock(&REFUSED_TOOLS).get_or_insert_with(HashSet::new).insert(info.endpoint.clone());
                let notice = format!(
                    "Tokamak: the model server at {} refused tool calls ({err}); using the text protocol instead (set model.tools = \"text\" to skip trying).",
                    info.endpoint
                );
                // logged at debug: the message itself reaches the user (and the editor's log)
                tracing::debug!("{notice}");
                executor.context().editor.show_message(MessageLevel::Warning, notice).await;
                protocol = Protocol::Text;
                messages[0] = Message::system(system_prompt(request.system, protocol, &outside));
                continue;
            }
            Err(ModelError::ContextTooLong { limit, .. }) if fits < fit::MAX_FITS => {
                fits += 1;
                if let Some(limit) = limit {
                    fit::learn(&info.endpoint, limit);
                }
                let context = limit.map_or_else(String::new, |l| format!(" ({l} tokens)"));
                let prompt = trajectory::tokens(&messages).saturating_add(tools_tokens(protocol, &outside));
                let shown = estimate_tokens(&view);
                let rest = prompt.saturating_sub(shown);
                let reply_room = fit::room_within(limit, room.unwrap_or(info.max_tokens));
                if reply_room < room.unwrap_or(info.max_tokens) {
                    room = Some(reply_room);
                }
                if shown > 0 {
                    let (before, after) =
                        fit::shrink(&mut view, fit::view_budget(limit, rest, reply_room, shown));
                    trajectory.replace_first(&mut messages, first(&view));
                    say(format!(
                        "the prompt was too long for the model's context{context}: the workspace view was cut from ~{before} to ~{after} tokens"
                    )).await;
                    executor.record(
                        "fitted",
                        json!({"limit": limit, "view_before": before, "view_after": after}),
                    );
                    continue;
                }
                let changed = executor.changed_files();
                if let Some((removed, before, after)) =
                    trajectory.compress(&mut messages, request.goal, &changed, 1)
                {
                    say(format!(
                        "the prompt was too long for the model's context{context}: the step's history was compressed ({before} → {after} tokens)"
                    )).await;
                    executor.record(
                        "compressed",
                        json!({"messages_removed": removed, "tokens_before": before, "tokens_after": after, "to_fit": limit}),
                    );
                    continue;
                }
                return end(ExitReason::Failed, fit::too_small(limit, rest), tokens, turns);
            }
            Err(err @ ModelError::ContextTooLong { .. }) => {
                let rest = trajectory::tokens(&messages);
                return end(
                    ExitReason::Failed,
                    format!("{err}; {}", fit::too_small(None, rest)),
                    tokens,
                    turns,
                );
            }
            Err(err) => {
                return end(ExitReason::Failed, format!("the model could not be used: {err}"), tokens, turns);
            }
        };
        turns += 1;
        trajectory.reply(&reply.text);
        executor.record(
            "prompt",
            json!({
                "turn": turns,
                "messages": messages.len(),
                "prompt_tokens": reply.usage.prompt_tokens,
                "cached_tokens": reply.usage.cached_prompt_tokens,
                "completion_tokens": reply.usage.completion_tokens,
                "estimated": reply.usage.estimated,
                "tool_calls": reply.tool_calls.len(),
            }),
        );
        tokens.add(crate::run::Tokens::of(&reply.usage));
        report(RunEvent::ContextUsed(reply.usage.total())).await;
        // what the model thought, and what it said beside its tool calls (or as its answer);
        // a text-protocol reply's text is its action, not words for the user
        if !reply.reasoning.trim().is_empty() {
            report(RunEvent::Thought(reply.reasoning.clone())).await;
        }
        if protocol == Protocol::Native && !reply.text.trim().is_empty() && !looks_like_an_action(&reply.text)
        {
            report(RunEvent::Said(reply.text.clone())).await;
        }

        // a refusal is the model's last word on the run, not a reply to read an action from
        if reply.finish == FinishReason::Refused && reply.tool_calls.is_empty() {
            let words = reply.text.trim();
            let said =
                if words.is_empty() { String::new() } else { format!(": {}", crate::text::cut(words, 300)) };
            return end(ExitReason::Refused, format!("the model refused to go on{said}"), tokens, turns);
        }
        let cut = reply.finish == FinishReason::Length;
        // a cut action gets twice the room, a few times; cut prose only a sentence
        let acting = !reply.tool_calls.is_empty() || looks_like_an_action(&reply.text);
        let mut cut_sentence = || {
            let limit = room.unwrap_or(info.max_tokens);
            if !acting || doublings >= MAX_DOUBLINGS {
                return (
                    format!("the reply was cut at the token limit ({limit})"),
                    format!(
                        "your reply was cut off at the token limit ({limit} tokens) before it ended, so nothing unfinished in it was done; answer shorter: one action, or a short final answer"
                    ),
                );
            }
            let more = limit.saturating_mul(2).min(MAX_REPLY_TOKENS);
            room = Some(more);
            doublings += 1;
            (
                format!("the reply was cut at the token limit ({limit}); asking again with room for {more}"),
                format!(
                    "your reply was cut off at the token limit ({limit} tokens) before it ended, so its unfinished action was not taken; send it again (an edit in smaller blocks, a long file in parts)"
                ),
            )
        };

        // tool calls: native, or left in the text by a server without a tool parser
        let native = !reply.tool_calls.is_empty();
        let calls =
            if native { reply.tool_calls.clone() } else { calls::in_text(&reply.text, tools::is_tool) };
        if !calls.is_empty() {
            messages.push(if native {
                Message::assistant_calls(reply.text.clone(), calls.clone()).with_signed(reply.signed.clone())
            } else {
                Message::assistant(reply.text.clone())
            });
            let mut answers = Vec::new();
            for (index, call) in calls.iter().enumerate() {
                let (key, answer) = match tools::read_call(call) {
                    Ok(Called::Done(summary)) => return end(ExitReason::Done, summary, tokens, turns),
                    Ok(Called::Act(action)) => {
                        match take(executor, &action, report, request.settle, &mut trajectory).await {
                            Ok(taken) => taken,
                            Err(hit) => return end(limit_reason(&hit), hit.to_string(), tokens, turns),
                        }
                    }
                    // the last call of a cut reply is unfinished, not malformed
                    Err(_) if cut && index + 1 == calls.len() => {
                        let (line, sentence) = cut_sentence();
                        say(line).await;
                        trajectory.unusable(&sentence);
                        (fingerprint(&["cut", &call.name, &call.arguments]), format!("Error: {sentence}"))
                    }
                    Err(reason) => {
                        say(format!("a tool call was not usable: {reason}")).await;
                        trajectory.unusable(&reason);
                        (fingerprint(&["unusable", &call.name, &call.arguments]), format!("Error: {reason}"))
                    }
                };
                if native {
                    messages.push(Message::tool_result(call, answer));
                } else {
                    answers.push(answer);
                }
                if visit(executor, request, &key) >= REPEATS {
                    return end(ExitReason::RepeatedState, repeated_sentence(), tokens, turns);
                }
            }
            if !native {
                messages.push(Message::user(answers.join("\n\n")));
            }
            continue;
        }

        // no tool call: the text protocol (also what a model without tools falls back to)
        messages.push(Message::assistant(reply.text.clone()));
        let (key, answer) = match protocol::parse(&reply.text) {
            Ok(TextReply::Done(summary)) => return end(ExitReason::Done, summary, tokens, turns),
            // an action of a cut reply may be missing its end (an edit's last block)
            Ok(TextReply::Act(_)) if cut => {
                let (line, sentence) = cut_sentence();
                say(line).await;
                trajectory.unusable(&sentence);
                (fingerprint(&["cut", &reply.text]), format!("Error: {sentence}"))
            }
            Ok(TextReply::Act(action)) => {
                match take(executor, &action, report, request.settle, &mut trajectory).await {
                    Ok(taken) => taken,
                    Err(hit) => return end(limit_reason(&hit), hit.to_string(), tokens, turns),
                }
            }
            Err(_) if cut => {
                let (line, sentence) = cut_sentence();
                say(line).await;
                trajectory.unusable(&sentence);
                (fingerprint(&["cut", &reply.text]), format!("Error: {sentence}"))
            }
            Err(reason) => {
                let no_action = reason.starts_with("your reply had no action");
                let said = !reply.text.trim().is_empty();
                // the model's final answer in plain text, as OpenAI's and Anthropic's own
                // agent loops end: the step's checks and tests decide, as for done
                if protocol == Protocol::Native && no_action && said && !looks_like_an_action(&reply.text) {
                    say("the model answered in plain text: the step ends there".to_string()).await;
                    return ActOutcome {
                        plain: true,
                        ..end(ExitReason::Done, summary_of(&reply.text), tokens, turns)
                    };
                }
                say(format!("the reply had no usable action: {reason}")).await;
                trajectory.unusable(&reason);
                let reason = match (protocol, no_action, said) {
                    (Protocol::Native, true, false) => {
                        "your reply was empty: call one of the tools to act, or done when the goal is reached"
                            .to_string()
                    }
                    (Protocol::Native, true, true) => {
                        "your reply called no tool and the action in it could not be read: call one of the tools to act, or done when the goal is reached".to_string()
                    }
                    _ => reason,
                };
                (fingerprint(&["unparsed", &reason]), format!("Error: {reason}"))
            }
        };
        messages.push(Message::user(answer));
        if visit(executor, request, &key) >= REPEATS {
            return end(ExitReason::RepeatedState, repeated_sentence(), tokens, turns);
        }
    }
}

/// Whether a reply without a readable action tried to write one (a call marker, a JSON code
/// block, an object naming an action or a tool): then it is not a final answer.
fn looks_like_an_action(text: &str) -> bool {
    const SIGNS: [&str; 9] = [
        "<tool_call>",
        "[TOOL_CALLS]",
        "<|python_tag|>",
        "```json",
        "\"action\"",
        "\"tool\"",
        "\"name\"",
        "\"arguments\"",
        "'action'",
    ];
    SIGNS.iter().any(|sign| text.contains(sign))
}

/// A plain-text final answer as a step's summary: its first paragraphs, at most
/// [`SUMMARY_CHARS`] characters.
fn summary_of(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= SUMMARY_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(SUMMARY_CHARS).collect();
    format!("{}…", cut.trim_end())
}

async fn ask(
    model: &dyn Model,
    messages: &[Message],
    protocol: Protocol,
    outside: &[crate::toolbox::OutsideTool],
    room: Option<u32>,
    cancel: &CancellationToken,
) -> Result<Reply, ModelError> {
    let mut request = Request::chat(messages.to_vec());
    request.max_tokens = room;
    if protocol == Protocol::Native {
        request.tools = tools::tools_with(outside);
    }
    let options = CallOptions { deltas: None, cancel: cancel.child_token() };
    model.send(&request, &options).await
}

/// The tokens the tools take in a request of `protocol`.
fn tools_tokens(protocol: Protocol, outside: &[crate::toolbox::OutsideTool]) -> u32 {
    if protocol == Protocol::Native { tools::tokens(outside) } else { 0 }
}

fn system_prompt(role: &str, protocol: Protocol, outside: &[crate::toolbox::OutsideTool]) -> String {
    match protocol {
        Protocol::Native => format!(
            "{role}\n\nAct with the tools, one step at a time; after each you get its result. Paths are relative to the workspace root. When the goal is reached, or cannot be, call {}.",
            tools::DONE
        ),
        Protocol::Text => format!("{role}\n\n{}{}", protocol::TOOLS, tools::outside_in_text(outside)),
    }
}

/// Takes one action: `(state key, the text the model gets)`.
async fn take(
    executor: &Executor,
    action: &Action,
    report: Report<'_>,
    settle: std::time::Duration,
    trajectory: &mut Trajectory,
) -> Result<([u8; 32], String), LimitHit> {
    let id = format!("call-{}", executor.tool_calls() + 1);
    let paths = action.paths().into_iter().map(String::from).collect();
    report(RunEvent::ToolCall { id: id.clone(), kind: action.tool_kind(), title: action.title(), paths })
        .await;
    let result = executor.execute_for_model(action).await?;
    let check = match result.ok && executor.context().editor.checks_each_edit() {
        true => edit_check(executor, &result.files, settle).await,
        false => None,
    };
    report(RunEvent::ToolResult {
        id,
        ok: result.ok,
        summary: result.summary.clone(),
        changed: result.changed.clone(),
        files: result.files.clone(),
        check,
        output: (action.tool_kind() == crate::action::ToolKind::Execute).then(|| result.text.clone()),
    })
    .await;
    trajectory.action(action, &result);
    let arguments = serde_json::to_string(action).unwrap_or_default();
    let key = fingerprint(&[&arguments, &result.text]);
    let label = if result.ok { "Result" } else { "Refused" };
    let name = match action {
        Action::Tool { name, .. } => name.as_str(),
        other => other.name(),
    };
    Ok((key, format!("{label} of {name}:\n{}", result.text)))
}

/// What the checkers found on the text a change wrote against the text before, file by file
/// (SPEC A3); none when it changed no file's text.
async fn edit_check(
    executor: &Executor,
    files: &[ChangedFile],
    settle: std::time::Duration,
) -> Option<RunCheck> {
    let mut check = RunCheck {
        step: None,
        files: Vec::new(),
        introduced: Vec::new(),
        resolved: Vec::new(),
        warned: Vec::new(),
        tests: None,
    };
    for file in files {
        let Some((appeared, gone)) = super::checks::check_change(executor.context(), file, settle).await
        else {
            continue;
        };
        check.files.push(file.path.clone());
        if !appeared.is_empty() {
            check.introduced.push((file.path.clone(), appeared));
        }
        if !gone.is_empty() {
            check.resolved.push((file.path.clone(), gone));
        }
    }
    (!check.files.is_empty()).then_some(check)
}

/// Whether an error of a request that offered tools means the server does not take them
/// (llama.cpp without `--jinja`, older vLLM and Ollama versions, proxies): it refused the
/// request itself, not the key or the rate.
fn refuses_tools(err: &ModelError) -> bool {
    match err {
        ModelError::Rejected { status, .. } => !matches!(status, 401 | 403 | 429),
        ModelError::Server { detail, .. } => detail.to_ascii_lowercase().contains("tool"),
        _ => false,
    }
}

/// A visit to the run's state, scoped to this loop's goal: a step that comes back to the same
/// state (through a fix round or a failing test) counts, another step that reads the same
/// file does not.
fn visit(executor: &Executor, request: &ActRequest<'_>, key: &[u8; 32]) -> usize {
    executor.visit(&[request.goal.as_bytes(), &[0], key].concat())
}

fn repeated_sentence() -> String {
    "stopped: the same action came back with the same result three times".to_string()
}

pub(super) fn limit_reason(hit: &LimitHit) -> ExitReason {
    match hit {
        LimitHit::ToolCalls(_) => ExitReason::ToolCallLimit,
        LimitHit::Revisions(_) => ExitReason::RevisionLimit,
        LimitHit::Files(_) => ExitReason::FileLimit,
        LimitHit::Drifted(_) | LimitHit::Unsure(_) => ExitReason::Unsure,
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

/// A progress line of the step.
fn line(message: String) -> RunEvent {
    RunEvent::Progress(Progress::Report { message, percentage: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_answer_is_prose_and_its_summary_is_short() {
        assert!(!looks_like_an_action("Done: validate_email is added and tested."));
        assert!(looks_like_an_action("```json\n{\"action\": \"read\", \"path\": }\n```"));
        assert!(looks_like_an_action("<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": 1"));
        assert_eq!(summary_of("  Done.\n"), "Done.");
        let long = "word ".repeat(200);
        let summary = summary_of(&long);
        assert!(summary.ends_with('…') && summary.chars().count() <= SUMMARY_CHARS + 1, "{summary}");
    }

    #[test]
    fn a_server_that_refuses_the_request_refuses_tools() {
        let rejected = |status| ModelError::Rejected { endpoint: "e".into(), status, detail: "d".into() };
        assert!(refuses_tools(&rejected(400)) && refuses_tools(&rejected(422)));
        assert!(!refuses_tools(&rejected(401)) && !refuses_tools(&rejected(429)));
        let server = |detail: &str| ModelError::Server {
            endpoint: "e".into(),
            status: 500,
            attempts: 1,
            detail: detail.into(),
        };
        assert!(refuses_tools(&server("tools param requires --jinja flag")));
        assert!(!refuses_tools(&server("out of memory")));
    }
}
