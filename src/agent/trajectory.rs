//! Trajectory compression (SPEC C4): a step's conversation past `[context] compress_turns`
//! replies or `compress_tokens` tokens is replaced by a structured summary — the request, the
//! names looked up, the files read and changed, each action with its outcome, the state and
//! the model's next step — written into the step's first message, with the last
//! `keep_turns` replies (and their results) kept as they were.

use std::collections::BTreeSet;

use crate::config::ContextSettings;
use crate::executor::{Action, ActionResult};
use crate::model::{Message, Role, estimate_tokens};

/// Action lines a summary lists at most (older ones are counted).
const MAX_ACTION_LINES: usize = 30;
/// Characters of the model's last stated intent kept.
const MAX_INTENT_CHARS: usize = 400;

/// What a step did so far, for its summary.
#[derive(Debug, Default)]
pub struct Trajectory {
    /// The step's first message as it was, before any summary was added to it.
    first: Option<String>,
    actions: Vec<String>,
    concepts: BTreeSet<String>,
    read: BTreeSet<String>,
    last_intent: String,
    last_outcome: String,
    /// Replies since the last compression.
    replies: usize,
    /// Replies in all.
    total_replies: usize,
    pub compressions: usize,
}

impl Trajectory {
    /// A reply from the model (its text: what it says it will do).
    pub fn reply(&mut self, text: &str) {
        self.replies += 1;
        self.total_replies += 1;
        if !text.trim().is_empty() {
            self.last_intent = text.trim().chars().take(MAX_INTENT_CHARS).collect();
        }
    }

    /// An action taken and its result.
    pub fn action(&mut self, action: &Action, result: &ActionResult) {
        match action {
            Action::Read { path, .. } => {
                self.read.insert(path.clone());
            }
            Action::Symbols { query } | Action::Locate { query } => {
                self.concepts.insert(query.clone());
            }
            Action::Definition { name } | Action::Callers { name, .. } => {
                self.concepts.insert(name.clone());
            }
            Action::Importers { module } => {
                self.concepts.insert(module.clone());
            }
            Action::Search { pattern, .. } => {
                self.concepts.insert(pattern.clone());
            }
            _ => {}
        }
        let mark = if result.ok { "→" } else { "✗" };
        let line = format!("{} {mark} {}", action.name(), first_line(&result.summary));
        self.last_outcome = line.clone();
        self.actions.push(line);
    }

    /// A reply that had no usable action, with the reason it was sent back.
    pub fn unusable(&mut self, reason: &str) {
        let line = format!("(no usable action: {})", first_line(reason));
        self.last_outcome = line.clone();
        self.actions.push(line);
    }

    /// Compresses `messages` when the step has gone past the settings' turns or tokens;
    /// returns `(messages removed, tokens before, tokens after)` when it did.
    pub fn compress_if_due(
        &mut self,
        messages: &mut Vec<Message>,
        goal: &str,
        changed: &[String],
        settings: &ContextSettings,
    ) -> Option<(usize, u32, u32)> {
        let before = tokens(messages);
        let due = self.replies > settings.compress_turns || before as usize > settings.compress_tokens;
        if !due {
            return None;
        }
        self.compress(messages, goal, changed, settings.keep_turns)
    }

    /// Compresses `messages` now, keeping the last `keep_turns` replies (a prompt that is too
    /// long for the model's context); `None` when there is nothing before them.
    pub fn compress(
        &mut self,
        messages: &mut Vec<Message>,
        goal: &str,
        changed: &[String],
        keep_turns: usize,
    ) -> Option<(usize, u32, u32)> {
        let before = tokens(messages);
        if messages.len() < 3 {
            return None;
        }
        // the kept tail starts at an assistant message: a tool result never loses its call
        let replies: Vec<usize> =
            (2..messages.len()).filter(|&i| messages[i].role == Role::Assistant).collect();
        if replies.len() <= keep_turns {
            return None;
        }
        let cut = replies[replies.len() - keep_turns];
        let removed = cut - 2;
        if removed == 0 {
            return None;
        }
        messages.drain(2..cut);
        let first = self.first.get_or_insert_with(|| messages[1].content.clone()).clone();
        self.compressions += 1;
        self.replies = keep_turns;
        messages[1].content = format!("{first}\n\n{}", self.summary(goal, changed, keep_turns));
        Some((removed, before, tokens(messages)))
    }

    /// Puts `first` in place of the step's first message, keeping a summary written after it.
    pub fn replace_first(&mut self, messages: &mut [Message], first: String) {
        let Some(message) = messages.get_mut(1) else { return };
        match &self.first {
            Some(old) => {
                let tail = message.content.get(old.len()..).unwrap_or_default().to_string();
                message.content = format!("{first}{tail}");
                self.first = Some(first);
            }
            None => message.content = first,
        }
    }

    fn summary(&self, goal: &str, changed: &[String], kept: usize) -> String {
        let list = |set: &BTreeSet<String>| {
            if set.is_empty() {
                "none".to_string()
            } else {
                set.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        let mut out = format!(
            "Earlier in this step (compressed after {} replies; the last {kept} are below as they were):\n",
            self.total_replies
        );
        out.push_str(&format!("Request: {}\n", goal.lines().next().unwrap_or_default()));
        out.push_str(&format!("Concepts looked up: {}\n", list(&self.concepts)));
        out.push_str(&format!("Files read: {}\n", list(&self.read)));
        let changed = if changed.is_empty() { "none".to_string() } else { changed.join(", ") };
        out.push_str(&format!("Files changed by this run: {changed}\n"));
        out.push_str("Actions and results:\n");
        let skipped = self.actions.len().saturating_sub(MAX_ACTION_LINES);
        if skipped > 0 {
            out.push_str(&format!("- ({skipped} earlier actions)\n"));
        }
        for line in &self.actions[skipped..] {
            out.push_str(&format!("- {line}\n"));
        }
        out.push_str(&format!(
            "State: {}\n",
            if self.last_outcome.is_empty() { "nothing done yet" } else { &self.last_outcome }
        ));
        out.push_str(&format!("Next steps (as you said last): {}\n", self.last_intent.replace('\n', " ")));
        out
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().chars().take(200).collect()
}

/// The estimated tokens of a conversation.
pub fn tokens(messages: &[Message]) -> u32 {
    messages
        .iter()
        .map(|m| {
            estimate_tokens(&m.content)
                .saturating_add(m.tool_calls.iter().map(|c| estimate_tokens(&c.arguments)).sum::<u32>())
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    #[test]
    fn past_the_turns_the_middle_becomes_a_summary_and_calls_keep_their_results() {
        let settings = ContextSettings { compress_turns: 3, keep_turns: 2, ..ContextSettings::default() };
        let mut trajectory = Trajectory::default();
        let mut messages =
            vec![Message::system("role"), Message::user("context\n\nGoal: add validate_email")];
        for turn in 0..5 {
            let call = ToolCall {
                id: format!("c{turn}"),
                name: "read".into(),
                arguments: format!("{{\"path\": \"f{turn}.py\"}}"),
            };
            messages.push(Message::assistant_calls(format!("I will read f{turn}.py"), vec![call.clone()]));
            messages.push(Message::tool_result(&call, format!("Result of read:\nf{turn}.py (3 lines)")));
            trajectory.reply(&format!("I will read f{turn}.py"));
            let action = Action::Read { path: format!("f{turn}.py"), lines: None };
            trajectory.action(&action, &ActionResult::done("…", format!("read f{turn}.py (3 lines)")));
            if turn < 3 {
                assert!(
                    trajectory.compress_if_due(&mut messages, "add validate_email", &[], &settings).is_none()
                );
            }
        }
        let search = Action::Symbols { query: "User".into() };
        trajectory.action(&search, &ActionResult::refused("no symbol like \"User\""));
        let (removed, before, after) = trajectory
            .compress_if_due(&mut messages, "add validate_email", &["app/user.py".into()], &settings)
            .expect("compressed");
        assert_eq!(removed, 6, "three replies and their results");
        assert!(before > 0 && after > 0, "tiny messages: the summary may be the larger");
        assert_eq!(messages.len(), 2 + 4, "the last two replies and their results stay");
        assert_eq!(messages[2].role, Role::Assistant);
        assert!(messages[2].content.contains("f3.py"));
        let summary = &messages[1].content;
        assert!(summary.starts_with("context\n\nGoal: add validate_email\n\nEarlier in this step (compressed after 5 replies; the last 2 are below"), "{summary}");
        assert!(summary.contains("Request: add validate_email\n"), "{summary}");
        assert!(summary.contains("Concepts looked up: User\n"), "{summary}");
        assert!(summary.contains("Files read: f0.py, f1.py, f2.py, f3.py, f4.py\n"), "{summary}");
        assert!(summary.contains("Files changed by this run: app/user.py\n"), "{summary}");
        assert!(summary.contains("- read → read f0.py (3 lines)\n"), "{summary}");
        assert!(summary.contains("State: symbols ✗ no symbol like \"User\"\n"), "{summary}");
        assert!(summary.contains("Next steps (as you said last): I will read f4.py"), "{summary}");

        // the next compression replaces the summary instead of stacking another
        for turn in 5..9 {
            messages.push(Message::assistant(format!("reading g{turn}")));
            messages.push(Message::user("Result of read: ok"));
            trajectory.reply(&format!("reading g{turn}"));
        }
        trajectory.compress_if_due(&mut messages, "add validate_email", &[], &settings).expect("again");
        assert_eq!(messages[1].content.matches("Earlier in this step").count(), 1);
        assert!(messages[1].content.contains("compressed after 9 replies"));
        assert_eq!(trajectory.compressions, 2);
    }

    #[test]
    fn a_long_conversation_is_compressed_by_its_tokens() {
        let settings = ContextSettings { compress_tokens: 500, keep_turns: 1, ..ContextSettings::default() };
        let mut trajectory = Trajectory::default();
        let mut messages = vec![Message::system("role"), Message::user("context")];
        for turn in 0..3 {
            messages.push(Message::assistant("reading"));
            messages.push(Message::user("x".repeat(1000)));
            trajectory.reply("reading");
            let _ = turn;
        }
        let (_, before, after) =
            trajectory.compress_if_due(&mut messages, "goal", &[], &settings).expect("compressed");
        assert_eq!(messages.len(), 4);
        assert!(after * 2 < before, "{before} → {after}");
    }
}
