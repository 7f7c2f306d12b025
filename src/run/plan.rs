//! Plans (SPEC P2): steps with ids, titles, details and dependencies, read from a model's
//! reply — a JSON list, a numbered list, or bullets with `[depends: 1, 2]` — and checked as
//! a graph: self-dependencies and unknown ids are dropped, a cycle is broken where a step
//! depends on one that comes later in the plan (the order the model wrote is its intent),
//! and what cannot be repaired is refused with a sentence saying why.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A step's state, with the glyph editors show. Done only when its change landed and its
/// checks and tests passed on the user's text; each way of not being done is said as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Running,
    Done,
    /// It could not finish: errors or failing tests left, the model gave up, a limit.
    Failed,
    /// Every change it asked for was rejected by the user (or refused by a rule), and none
    /// landed.
    Rejected,
    /// It asked for changes and none of them landed (none applied, or all refused).
    NothingChanged,
    /// A change it needed was approved but did not land (the user typed on its lines, the
    /// file changed under it, the editor refused the write).
    NotApplied,
    /// The run was stopped while it ran.
    Cancelled,
}

impl StepStatus {
    pub fn glyph(self) -> &'static str {
        match self {
            StepStatus::Pending => "○",
            StepStatus::Running => "⚡",
            StepStatus::Done => "✓",
            StepStatus::Failed
            | StepStatus::Rejected
            | StepStatus::NothingChanged
            | StepStatus::NotApplied => "✗",
            StepStatus::Cancelled => "⊘",
        }
    }

    /// Whether the step ended without being done (its dependants cannot run).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            StepStatus::Failed
                | StepStatus::Rejected
                | StepStatus::NothingChanged
                | StepStatus::NotApplied
                | StepStatus::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Running => "running",
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
            StepStatus::Rejected => "rejected",
            StepStatus::NothingChanged => "nothing_changed",
            StepStatus::NotApplied => "not_applied",
            StepStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub id: String,
    pub title: String,
    pub detail: String,
    pub depends_on: Vec<String>,
    pub status: StepStatus,
    /// Why it failed, or what it did (filled in as it runs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Files it changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The role and mode it is carried out in, and why (`tester, test (for 테스트)`), once
    /// it has started.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// The mode it is in while it runs (`test`, `debug` …), the last one after: each outcome's
    /// transition changes it (SPEC M1).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
    /// The steps a re-plan put in its place after it failed: it stays in the plan, failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced_by: Vec<String>,
}

impl PlanStep {
    /// A step as a plan reads it, not started.
    pub fn pending(id: String, title: String, detail: String, depends_on: Vec<String>) -> PlanStep {
        PlanStep {
            id,
            title,
            detail,
            depends_on,
            status: StepStatus::Pending,
            note: String::new(),
            files: Vec::new(),
            role: String::new(),
            mode: String::new(),
            replaced_by: Vec::new(),
        }
    }
}

/// A plan for a goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub plan_id: String,
    pub goal: String,
    pub steps: Vec<PlanStep>,
    /// What was repaired when the plan was read (for the user and the audit log).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
}

/// Why a reply is not a usable plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the reply holds no plan: write the steps as a numbered list (1. …) or a JSON list")]
    Empty,
    #[error("the plan has {count} steps, more than the {max} allowed (plan.max_steps); merge steps")]
    TooLong { count: usize, max: usize },
    #[error(
        "the steps {0} depend on each other in a circle, and the order they were written in does not say which comes first"
    )]
    Cycle(String),
}

impl Plan {
    /// Reads a plan for `goal` from a model's reply, repairing what can be repaired.
    pub fn read(plan_id: &str, goal: &str, reply: &str, max_steps: usize) -> Result<Plan, PlanError> {
        let steps = read_json(reply).unwrap_or_else(|| read_list(reply));
        if steps.is_empty() {
            return Err(PlanError::Empty);
        }
        if steps.len() > max_steps {
            return Err(PlanError::TooLong { count: steps.len(), max: max_steps });
        }
        let mut plan =
            Plan { plan_id: plan_id.to_string(), goal: goal.to_string(), steps, repairs: Vec::new() };
        plan.repair()?;
        Ok(plan)
    }

    /// Drops self-dependencies and unknown ids; breaks cycles where a step depends on a later
    /// one; refuses what is still circular.
    fn repair(&mut self) -> Result<(), PlanError> {
        let ids: Vec<String> = self.steps.iter().map(|s| s.id.clone()).collect();
        let position = |id: &str| ids.iter().position(|i| i == id);
        let mut repairs = Vec::new();
        for step in &mut self.steps {
            let mut kept = Vec::new();
            for dependency in std::mem::take(&mut step.depends_on) {
                match position(&dependency) {
                    _ if dependency == step.id => {
                        repairs.push(format!("step {} depended on itself", step.id))
                    }
                    None => repairs
                        .push(format!("step {} depended on {dependency}, which is not a step", step.id)),
                    Some(_) if kept.contains(&dependency) => {}
                    Some(_) => kept.push(dependency),
                }
            }
            step.depends_on = kept;
        }
        // a cycle: drop the dependencies on later steps of the steps in it
        while let Some(cycle) = find_cycle(&self.steps) {
            let mut broke = false;
            for id in &cycle {
                let Some(index) = position(id) else { continue };
                let later: Vec<String> = self.steps[index]
                    .depends_on
                    .iter()
                    .filter(|d| position(d).is_some_and(|p| p > index) && cycle.contains(*d))
                    .cloned()
                    .collect();
                if !later.is_empty() {
                    self.steps[index].depends_on.retain(|d| !later.contains(d));
                    repairs.push(format!(
                        "step {id} depended on later step(s) {}; that was dropped",
                        later.join(", ")
                    ));
                    broke = true;
                }
            }
            if !broke {
                return Err(PlanError::Cycle(cycle.join(" → ")));
            }
        }
        self.repairs = repairs;
        Ok(())
    }

    /// The next step to run: pending, with every dependency done.
    pub fn next_ready(&self) -> Option<usize> {
        self.steps.iter().position(|step| {
            step.status == StepStatus::Pending
                && step.depends_on.iter().all(|d| self.status_of(d) == Some(StepStatus::Done))
        })
    }

    pub fn status_of(&self, id: &str) -> Option<StepStatus> {
        self.steps.iter().find(|s| s.id == id).map(|s| s.status)
    }

    /// Marks every pending step that depends (directly or not) on one that ended without
    /// being done as failed. Returns the ids failed this way.
    pub fn fail_dependants(&mut self) -> Vec<String> {
        let mut failed_now = Vec::new();
        loop {
            let failed: BTreeSet<String> =
                self.steps.iter().filter(|s| s.status.is_failure()).map(|s| s.id.clone()).collect();
            let mut changed = false;
            for step in &mut self.steps {
                if step.status == StepStatus::Pending
                    && let Some(cause) = step.depends_on.iter().find(|d| failed.contains(*d))
                {
                    step.status = StepStatus::Failed;
                    step.note = format!("not run: it depends on step {cause}, which was not done");
                    failed_now.push(step.id.clone());
                    changed = true;
                }
            }
            if !changed {
                return failed_now;
            }
        }
    }

    /// Puts a re-plan's steps in place of what is left: the steps that ended without being
    /// done stay, marked as replaced by the new ones (so the plan and the ending still show
    /// them), the pending ones give way, and the new steps follow.
    pub fn replace(&mut self, new: Vec<PlanStep>) {
        let ids: Vec<String> = new.iter().map(|s| s.id.clone()).collect();
        let gone: Vec<String> =
            self.steps.iter().filter(|s| s.status == StepStatus::Pending).map(|s| s.id.clone()).collect();
        self.steps.retain(|s| s.status != StepStatus::Pending);
        for step in &mut self.steps {
            if step.status.is_failure() && step.replaced_by.is_empty() {
                step.replaced_by = ids.clone();
            } else if step.replaced_by.iter().any(|id| gone.contains(id)) {
                // an earlier re-plan's step that gave way: what replaces it stands in its place
                let mut by: Vec<String> = Vec::new();
                for id in &step.replaced_by {
                    let instead = if gone.contains(id) { ids.clone() } else { vec![id.clone()] };
                    for id in instead {
                        if !by.contains(&id) {
                            by.push(id);
                        }
                    }
                }
                step.replaced_by = by;
            }
        }
        self.steps.extend(new);
    }

    /// Whether a step is done, or ended without being done and every step that replaced it
    /// is (a failure the re-plan made good).
    pub fn made_good(&self, step: &PlanStep) -> bool {
        self.made_good_within(step, 0)
    }

    fn made_good_within(&self, step: &PlanStep, depth: usize) -> bool {
        if step.status == StepStatus::Done {
            return true;
        }
        if !step.status.is_failure() || step.replaced_by.is_empty() || depth > self.steps.len() {
            return false;
        }
        step.replaced_by.iter().all(|id| {
            self.steps.iter().find(|s| s.id == *id).is_some_and(|s| self.made_good_within(s, depth + 1))
        })
    }

    /// The plan as a numbered list, for prompts and the terminal.
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            out.push_str(&format!("{} {}. {}", step.status.glyph(), step.id, step.title));
            if !step.depends_on.is_empty() {
                out.push_str(&format!(" [depends: {}]", step.depends_on.join(", ")));
            }
            if !step.role.is_empty() {
                out.push_str(&format!(" — {}", step.role));
            }
            if !step.replaced_by.is_empty() {
                out.push_str(&format!(" (replaced by {})", step.replaced_by.join(", ")));
            }
            out.push('\n');
            if !step.detail.is_empty() {
                for line in step.detail.lines() {
                    out.push_str(&format!("     {line}\n"));
                }
            }
        }
        out
    }
}

/// The ids of one cycle in the dependency graph, if there is one.
fn find_cycle(steps: &[PlanStep]) -> Option<Vec<String>> {
    let edges: BTreeMap<&str, Vec<&str>> =
        steps.iter().map(|s| (s.id.as_str(), s.depends_on.iter().map(String::as_str).collect())).collect();
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Unseen,
        Open,
        Closed,
    }
    let mut marks: BTreeMap<&str, Mark> = edges.keys().map(|k| (*k, Mark::Unseen)).collect();
    fn visit<'a>(
        id: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match marks.get(id).copied() {
            Some(Mark::Closed) | None => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|p| *p == id).unwrap_or(0);
                return Some(path[start..].iter().map(|s| s.to_string()).collect());
            }
            Some(Mark::Unseen) => {}
        }
        marks.insert(id, Mark::Open);
        path.push(id);
        for next in edges.get(id).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(id, Mark::Closed);
        None
    }
    let ids: Vec<&str> = edges.keys().copied().collect();
    for id in ids {
        let mut path = Vec::new();
        if let Some(cycle) = visit(id, &edges, &mut marks, &mut path) {
            return Some(cycle);
        }
    }
    None
}

/// A JSON plan: a list of steps, or an object with `steps`. Ids default to positions.
fn read_json(reply: &str) -> Option<Vec<PlanStep>> {
    let start = reply.find(['[', '{'])?;
    let candidates = [&reply[start..], reply.trim()];
    let value: Value = candidates.iter().find_map(|c| {
        let end = c.rfind([']', '}'])?;
        serde_json::from_str(&c[..=end]).ok()
    })?;
    let list = match &value {
        Value::Array(list) => list.clone(),
        Value::Object(object) => object.get("steps").and_then(Value::as_array).cloned()?,
        _ => return None,
    };
    let steps: Vec<PlanStep> = list
        .iter()
        .enumerate()
        .filter_map(|(index, item)| {
            let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::trim).map(str::to_string);
            let title = text("title").or_else(|| text("step")).or_else(|| text("description"))?;
            let id = match item.get("id") {
                Some(Value::String(id)) => id.trim().to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => (index + 1).to_string(),
            };
            let depends_on = item
                .get("depends_on")
                .or_else(|| item.get("depends"))
                .or_else(|| item.get("dependencies"))
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|d| match d {
                            Value::String(s) => Some(s.trim().to_string()),
                            Value::Number(n) => Some(n.to_string()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(PlanStep::pending(
                id,
                title,
                text("detail").or_else(|| text("details")).unwrap_or_default(),
                depends_on,
            ))
        })
        .collect();
    (!steps.is_empty()).then_some(steps)
}

/// A numbered list (`1.`, `2)`, `Step 3:`) or bullets (`-`, `*`): each item a step, its
/// indented or following plain lines its detail, `[depends: 1, 2]` (or `(after 1)`) its
/// dependencies. Without any marker, a step depends on nothing. Plain lines after a blank one
/// belong to the step above only when another step follows them: after the last, they are the
/// reply's own words ("Let me know if…").
fn read_list(reply: &str) -> Vec<PlanStep> {
    let mut steps: Vec<PlanStep> = Vec::new();
    let mut in_fence = false;
    let mut after_blank = false;
    // plain lines after a blank one, the last step's only if a step follows
    let mut unsure: Vec<&str> = Vec::new();
    for line in reply.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if trimmed.is_empty() {
            after_blank = true;
            continue;
        }
        let indented = line.starts_with("  ") || line.starts_with('\t');
        let listed = item(trimmed).filter(|_| !indented || steps.is_empty());
        if listed.is_none() && !indented && (after_blank || !unsure.is_empty()) {
            unsure.push(trimmed);
            after_blank = false;
            continue;
        }
        after_blank = false;
        match steps.last_mut() {
            Some(step) => unsure.drain(..).for_each(|line| add_detail(step, line)),
            // before the first step there is nothing for them to belong to
            None => unsure.clear(),
        }
        match listed {
            Some((number, text)) => {
                let (title, depends_on) = dependencies(text);
                let id = number.unwrap_or_else(|| (steps.len() + 1).to_string());
                steps.push(PlanStep::pending(
                    id,
                    title.trim().trim_matches('*').trim().to_string(),
                    String::new(),
                    depends_on,
                ));
            }
            None => {
                if let Some(step) = steps.last_mut() {
                    add_detail(step, trimmed);
                }
            }
        }
    }
    steps.retain(|s| !s.title.is_empty());
    steps
}

/// A plain line under a step: its detail, and the dependencies it names.
fn add_detail(step: &mut PlanStep, line: &str) {
    let (text, more) = dependencies(line.trim_start_matches(['-', '*', '•']).trim());
    step.depends_on.extend(more);
    if !text.trim().is_empty() {
        if !step.detail.is_empty() {
            step.detail.push('\n');
        }
        step.detail.push_str(text.trim());
    }
}

/// `1. text`, `2) text`, `Step 3: text`, `- text` → (the number, if any; the text).
fn item(line: &str) -> Option<(Option<String>, &str)> {
    let lower = line.to_ascii_lowercase();
    let body = if lower.starts_with("step ") { &line[5..] } else { line };
    let digits: String = body.chars().take_while(char::is_ascii_digit).collect();
    if !digits.is_empty() {
        let rest = &body[digits.len()..];
        if let Some(text) = rest.strip_prefix(['.', ')', ':']) {
            return Some((Some(digits), text.trim()));
        }
        return None;
    }
    for bullet in ["- ", "* ", "• "] {
        if let Some(text) = line.strip_prefix(bullet) {
            return Some((None, text.trim()));
        }
    }
    None
}

/// Takes `[depends: 1, 2]`, `(depends on 1)` or `(after 1 and 2)` out of `text`.
fn dependencies(text: &str) -> (String, Vec<String>) {
    let lower = text.to_ascii_lowercase();
    for (open, close) in [('[', ']'), ('(', ')')] {
        let Some(start) = lower.find(open) else { continue };
        let Some(len) = lower[start..].find(close) else { continue };
        let inside = &lower[start + 1..start + len];
        let words = ["depends on", "depends:", "depends", "depend on", "after", "requires", "needs"];
        let Some(word) = words.iter().find(|w| inside.trim_start().starts_with(**w)) else { continue };
        let list = inside.trim_start()[word.len()..].replace(" and ", ",").replace("step", "");
        let ids: Vec<String> = list
            .split([',', ' ', ':'])
            .map(|s| s.trim().trim_start_matches('#'))
            .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
            .map(str::to_string)
            .collect();
        let mut title = text[..start].to_string();
        title.push_str(&text[start + len + 1..]);
        return (title.trim().to_string(), ids);
    }
    (text.to_string(), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replan_keeps_the_failed_steps_and_what_replaces_them_stays_reachable() {
        let step = |id: &str, status: StepStatus| PlanStep {
            status,
            ..PlanStep::pending(id.to_string(), id.to_string(), String::new(), Vec::new())
        };
        let mut plan = Plan {
            plan_id: "p".into(),
            goal: "g".into(),
            steps: vec![step("1", StepStatus::Failed), step("2", StepStatus::Failed)],
            repairs: Vec::new(),
        };
        plan.replace(vec![step("r1.1", StepStatus::Pending), step("r1.2", StepStatus::Pending)]);
        assert_eq!(plan.steps[0].replaced_by, ["r1.1", "r1.2"]);
        // r1.1 fails, r1.2 gives way to the second re-plan
        plan.steps[2].status = StepStatus::Failed;
        plan.replace(vec![step("r2.1", StepStatus::Pending)]);
        let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "r1.1", "r2.1"]);
        assert_eq!(plan.steps[0].replaced_by, ["r1.1", "r2.1"], "no id left dangling");
        assert!(!plan.made_good(&plan.steps[0]));
        plan.steps[3].status = StepStatus::Done;
        assert!(plan.made_good(&plan.steps[0]), "every step that replaced it is made good");
        assert!(plan.made_good(&plan.steps[2]));
    }

    fn read(reply: &str) -> Result<Plan, PlanError> {
        Plan::read("plan-1", "goal", reply, 8)
    }

    fn shape(plan: &Plan) -> Vec<(String, String, Vec<String>)> {
        plan.steps.iter().map(|s| (s.id.clone(), s.title.clone(), s.depends_on.clone())).collect()
    }

    fn step(id: &str, title: &str, deps: &[&str]) -> (String, String, Vec<String>) {
        (id.into(), title.into(), deps.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn reads_numbered_lists_bullets_and_json() {
        let numbered = "Here is the plan:\n\n1. Add `validate_email` to `User`\n   It checks for one @ and a dot.\n2. Write a test for it [depends: 1]\n3) Run the tests (after 1, 2)\n";
        let plan = read(numbered).unwrap();
        assert_eq!(
            shape(&plan),
            [
                step("1", "Add `validate_email` to `User`", &[]),
                step("2", "Write a test for it", &["1"]),
                step("3", "Run the tests", &["1", "2"]),
            ]
        );
        assert_eq!(plan.steps[0].detail, "It checks for one @ and a dot.");
        let bullets = "- **Read the code**\n- Change it [depends: 1]\n";
        assert_eq!(
            shape(&read(bullets).unwrap()),
            [step("1", "Read the code", &[]), step("2", "Change it", &["1"])]
        );
        let json = r#"```json
{"steps": [{"id": "a", "title": "First", "detail": "d"}, {"id": "b", "title": "Second", "depends_on": ["a"]}]}
```"#;
        assert_eq!(shape(&read(json).unwrap()), [step("a", "First", &[]), step("b", "Second", &["a"])]);
        let list = r#"[{"title": "One"}, {"title": "Two", "depends_on": [1]}]"#;
        assert_eq!(shape(&read(list).unwrap()), [step("1", "One", &[]), step("2", "Two", &["1"])]);
        let korean = "1. User 클래스에 validate_email 추가\n2. 테스트 작성 [depends: 1]\n";
        assert_eq!(read(korean).unwrap().steps[1].depends_on, ["1"]);
    }

    #[test]
    fn repairs_what_it_can_and_refuses_the_rest() {
        let plan = read("1. One [depends: 1, 9]\n2. Two [depends: 1]\n").unwrap();
        assert_eq!(shape(&plan), [step("1", "One", &[]), step("2", "Two", &["1"])]);
        assert_eq!(plan.repairs.len(), 2, "{:?}", plan.repairs);
        // a cycle through a later step: the written order decides
        let plan = read("1. One [depends: 2]\n2. Two [depends: 1]\n").unwrap();
        assert_eq!(shape(&plan), [step("1", "One", &[]), step("2", "Two", &["1"])]);
        assert!(plan.repairs[0].contains("later step"), "{:?}", plan.repairs);
        assert_eq!(read("I cannot plan this."), Err(PlanError::Empty));
        let long: String = (1..=10).map(|n| format!("{n}. Step {n}\n")).collect();
        assert_eq!(read(&long), Err(PlanError::TooLong { count: 10, max: 8 }));
    }

    /// What `tokamak plan` prints of a plan (and `plan_updated` shows): its outline, then
    /// each repair made to what the model wrote.
    fn shown(reply: &str) -> String {
        match read(reply) {
            Ok(plan) => {
                let repairs: String = plan.repairs.iter().map(|r| format!("repaired: {r}\n")).collect();
                format!("{}{repairs}", plan.outline())
            }
            Err(err) => format!("refused: {err}\n"),
        }
    }

    #[test]
    fn plans_from_untidy_replies_as_the_outline_shows_them() {
        use expect_test::expect;
        expect![[r#"
            ○ 1. Add `validate_email` to `User`
                 It checks for one @ and a dot.
            ○ 2. Write a test for it [depends: 1]
            ○ 3. Run the tests [depends: 1, 2]
                 with -q
        "#]]
        .assert_eq(&shown(
            "Sure! Here is the plan:\n\n1. Add `validate_email` to `User`\n   It checks for one @ and a dot.\n\
             2. Write a test for it\n\n(after 1)\n\n3) Run the tests (after 1, 2)\n\n   with -q\n\nLet me know!\nI can also add docs.",
        ));
        expect![[r#"
            ○ a. Read the code
            ○ b. Change it [depends: a]
                 in small steps
        "#]]
        .assert_eq(&shown(
            "<think>which files?</think>\n```json\n{\"steps\": [{\"id\": \"a\", \"title\": \"Read the code\", \"role\": \"architect\"},\
             {\"id\": \"b\", \"title\": \"Change it\", \"detail\": \"in small steps\", \"depends_on\": [\"a\"], \"role\": \"coder\"}]}\n```",
        ));
        expect![[r#"
            ○ 1. One
            ○ 2. Two [depends: 1]
            repaired: step 1 depended on itself
            repaired: step 1 depended on 9, which is not a step
        "#]]
        .assert_eq(&shown("1. One [depends: 1, 9]\n2. Two [depends: 1]\n"));
        expect![[r#"
            refused: the reply holds no plan: write the steps as a numbered list (1. …) or a JSON list
        "#]]
        .assert_eq(&shown("I cannot plan this."));
    }

    #[test]
    fn a_plan_through_a_run_as_the_outline_shows_it() {
        use expect_test::expect;
        let mut plan = read(
            "1. Read the code\n2. Change it [depends: 1]\n3. Test it [depends: 2]\n4. Update the notes\n",
        )
        .unwrap();
        plan.steps[0].status = StepStatus::Done;
        plan.steps[1].status = StepStatus::Failed;
        plan.steps[1].note = "the edit did not apply".to_string();
        plan.fail_dependants();
        plan.steps[3].status = StepStatus::Running;
        expect![[r#"
            ✓ 1. Read the code
            ✗ 2. Change it [depends: 1]
            ✗ 3. Test it [depends: 2]
            ⚡ 4. Update the notes
        "#]]
        .assert_eq(&plan.outline());
        let again = read("1. Change it in two edits\n2. Test it [depends: 1]\n").unwrap();
        let mut new = again.steps;
        for (n, step) in new.iter_mut().enumerate() {
            step.id = format!("r1.{}", n + 1);
            step.depends_on = step.depends_on.iter().map(|d| format!("r1.{d}")).collect();
        }
        plan.replace(new);
        plan.steps[3].status = StepStatus::Done;
        plan.steps[4].status = StepStatus::Done;
        plan.steps[5].status = StepStatus::Cancelled;
        expect![[r#"
            ✓ 1. Read the code
            ✗ 2. Change it [depends: 1] (replaced by r1.1, r1.2)
            ✗ 3. Test it [depends: 2] (replaced by r1.1, r1.2)
            ✓ 4. Update the notes
            ✓ r1.1. Change it in two edits
            ⊘ r1.2. Test it [depends: r1.1]
        "#]]
        .assert_eq(&plan.outline());
        assert!(plan.steps[2].note.contains("step 2"), "{}", plan.steps[2].note);
    }

    #[test]
    fn dependencies_decide_the_order_and_failures_spread() {
        let mut plan = read("1. A\n2. B [depends: 1]\n3. C\n4. D [depends: 2]\n").unwrap();
        assert_eq!(plan.next_ready(), Some(0));
        plan.steps[0].status = StepStatus::Failed;
        assert_eq!(plan.fail_dependants(), ["2", "4"]);
        assert_eq!(plan.next_ready(), Some(2), "an independent step still runs");
        assert!(plan.steps[3].note.contains("step 2"), "{}", plan.steps[3].note);
        assert!(plan.outline().starts_with("✗ 1. A\n✗ 2. B [depends: 1]"), "{}", plan.outline());
    }
}
