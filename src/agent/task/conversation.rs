//! What a session remembers between its prompts (issue 41: "a session remembers"): each earlier
//! request and how it ended, shown to the planner and every step of the next run within a
//! bounded budget — the latest turns whole (each cut), older ones to their first line, the
//! oldest left out and counted — and compacted on request (`/compact`).

use serde::{Deserialize, Serialize};

/// One earlier request of the session and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// What the user asked.
    pub asked: String,
    /// How the run ended: Tokamak's summary and the model's own words for each step.
    pub answered: String,
}

/// Characters the conversation may take in a prompt.
const BUDGET: usize = 6_000;
/// The turns shown whole (each cut to `WHOLE` characters); older ones by their first line.
const RECENT: usize = 3;
const WHOLE: usize = 1_200;
const LINE: usize = 200;

/// The conversation as a prompt shows it (empty without earlier turns).
pub fn render(turns: &[Turn]) -> String {
    if turns.is_empty() {
        return String::new();
    }
    let mut shown: Vec<String> = Vec::new();
    let mut used = 0;
    let mut left_out = 0;
    for (age, turn) in turns.iter().rev().enumerate() {
        let (asked, answered) = if age < RECENT {
            (crate::text::cut(&turn.asked, WHOLE), crate::text::cut(&turn.answered, WHOLE))
        } else {
            (first_line(&turn.asked), first_line(&turn.answered))
        };
        let entry = format!("- The user asked: {}\n  It ended: {}\n", asked.trim(), answered.trim());
        if used + entry.len() > BUDGET {
            left_out = turns.len() - age;
            break;
        }
        used += entry.len();
        shown.push(entry);
    }
    shown.reverse();
    let mut out = String::from(
        "The conversation so far in this session (the user's earlier requests, oldest first, and how each ended; the new request may refer to them):\n",
    );
    if left_out > 0 {
        out.push_str(&format!("({left_out} earlier request(s) left out)\n"));
    }
    for entry in shown {
        out.push_str(&entry);
    }
    out
}

/// The turns compacted into one: each earlier request by its first line and ending.
pub fn compact(turns: &[Turn]) -> Vec<Turn> {
    if turns.len() <= 1 {
        return turns.to_vec();
    }
    let answered = turns
        .iter()
        .map(|t| format!("{} → {}", first_line(&t.asked), first_line(&t.answered)))
        .collect::<Vec<_>>()
        .join("\n");
    vec![Turn { asked: format!("({} earlier requests, compacted)", turns.len()), answered }]
}

/// Turns a conversation keeps whole or compacted; past them the oldest are compacted into one.
pub const MAX_TURNS: usize = 30;

/// The turn a run makes of `goal`: what was asked, and how it ended in Tokamak's words and the
/// model's (each step's note).
pub fn turn_of(goal: &str, report: &crate::run::RunReport) -> Turn {
    let mut answered = report.summary.clone();
    for step in &report.step_endings {
        answered.push_str(&format!("\nStep {} ({}): {}", step.id, step.title, step.note));
    }
    Turn { asked: crate::text::cut(goal, 4_000), answered: crate::text::cut(&answered, 4_000) }
}

/// Adds `turn` to `turns`, compacting the oldest into the first past [`MAX_TURNS`].
pub fn remember(turns: &mut Vec<Turn>, turn: Turn) {
    turns.push(turn);
    if turns.len() > MAX_TURNS {
        let excess = turns.len() - MAX_TURNS + 1;
        let old: Vec<_> = turns.drain(..excess).collect();
        let mut kept = compact(&old);
        kept.append(turns);
        *turns = kept;
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    crate::text::cut(line, LINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: usize) -> Turn {
        Turn {
            asked: format!("request {n}\nwith details"),
            answered: format!("ended {n}: {}", "x".repeat(500)),
        }
    }

    #[test]
    fn the_latest_turns_are_whole_the_older_by_a_line_and_the_budget_holds() {
        assert!(render(&[]).is_empty());
        let one =
            render(&[Turn { asked: "Remember the codeword BANANA-42".into(), answered: "done".into() }]);
        assert!(
            one.contains("- The user asked: Remember the codeword BANANA-42\n  It ended: done\n"),
            "{one}"
        );
        let many: Vec<Turn> = (1..=40).map(turn).collect();
        let shown = render(&many);
        assert!(shown.len() <= BUDGET + 300, "{}", shown.len());
        assert!(shown.contains("request 40\nwith details"), "the latest whole");
        assert!(shown.contains("- The user asked: request 30\n"), "an older one by its first line");
        assert!(shown.contains("earlier request(s) left out"), "{shown}");
        let mut kept = Vec::new();
        for n in 1..=MAX_TURNS + 5 {
            remember(&mut kept, turn(n));
        }
        assert_eq!(kept.len(), MAX_TURNS, "the oldest compacted into one");
        assert!(kept[0].asked.contains("earlier requests, compacted"), "{:?}", kept[0]);
        assert_eq!(kept[MAX_TURNS - 1], turn(MAX_TURNS + 5));
        let compacted = compact(&many);
        assert_eq!(compacted.len(), 1);
        assert!(compacted[0].answered.starts_with("request 1 → ended 1"));
    }
}
