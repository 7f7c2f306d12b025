//! The run stream as an ACP client shows it: `session/update`s for the plan (a step that
//! ended undone is completed, its words saying how), each tool call with its kind, locations,
//! diffs and the diagnostics its edit brought, a step's checks as a tool call of their own, the
//! model's words and thoughts, the context's use, and the report.

use super::AcpEditor;
use agent_client_protocol_schema::v1 as acp;

use crate::diagnostic::Diagnostic;
use crate::editor::{Progress, RunEvent, ToolKind};
use crate::run::plan::{Plan, StepStatus};
use crate::run::{Check, RunReport, TestOutcome};
use crate::sync::lock;

impl AcpEditor {
    /// One event of a run as the updates that show it.
    pub(super) fn render(&self, run_id: &str, event: &RunEvent) {
        let id = |id: &str| format!("{run_id}/{id}");
        match event {
            RunEvent::Plan(plan) => self.plan(plan),
            RunEvent::Progress(Progress::Begin { title, .. }) => self.think(&format!("{title}\n")),
            RunEvent::Progress(Progress::Report { message, .. }) => self.think(&format!("{message}\n")),
            RunEvent::Progress(Progress::End { .. }) => {}
            RunEvent::ToolCall { id: call, kind: tool, title, paths } => {
                let call = id(call);
                *lock(&self.current_call) = Some(call.clone());
                let locations = paths.iter().map(|p| acp::ToolCallLocation::new(self.absolute(p))).collect();
                let call = acp::ToolCall::new(call, title.clone())
                    .kind(kind(*tool))
                    .status(acp::ToolCallStatus::InProgress)
                    .locations(locations);
                self.update(acp::SessionUpdate::ToolCall(call));
            }
            RunEvent::ToolResult { id: call, ok, summary, files, check, output, .. } => {
                lock(&self.current_call).take();
                let status = if *ok { acp::ToolCallStatus::Completed } else { acp::ToolCallStatus::Failed };
                let mut content: Vec<acp::ToolCallContent> = files.iter().map(|f| self.diff(f)).collect();
                let terminal = lock(&self.terminals).remove(&id(call));
                if let Some(terminal) = &terminal {
                    content.push(acp::ToolCallContent::Terminal(acp::Terminal::new(terminal.clone())));
                }
                content.push(summary.clone().into());
                if let Some(check) = check {
                    content.push(diagnostics_report(check).into());
                }
                // a command that ran in the client's terminal shows its output there
                if let Some(output) = output.as_ref().filter(|o| terminal.is_none() && !o.trim().is_empty()) {
                    content.push(format!("```\n{}\n```", output.trim_end()).into());
                }
                let fields = acp::ToolCallUpdateFields::new().status(status).content(content);
                self.update(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id(call), fields)));
            }
            RunEvent::Thought(thought) => self.think(thought),
            RunEvent::Said(text) => self.say(&format!("{}\n", text.trim_end())),
            // ACP's usage is the context's fill against its size: sent only once the size is known
            RunEvent::ContextUsed(tokens) => {
                if let Some(size) = *lock(&self.window) {
                    let used = acp::UsageUpdate::new(u64::from(*tokens), u64::from(size));
                    self.send(acp::SessionUpdate::UsageUpdate(used));
                }
            }
            RunEvent::Checked(check) => self.checked(run_id, check),
            RunEvent::Finished(report) => self.finished(report),
        }
    }

    fn finished(&self, report: &RunReport) {
        self.say(&report.summary);
    }

    fn plan(&self, plan: &Plan) {
        let entries = plan
            .steps
            .iter()
            .map(|step| {
                // ACP's plan has no state for a step that ended without being done: it is
                // completed, and its words say how it ended (✗ and why)
                let status = match step.status {
                    StepStatus::Pending => acp::PlanEntryStatus::Pending,
                    StepStatus::Running => acp::PlanEntryStatus::InProgress,
                    _ => acp::PlanEntryStatus::Completed,
                };
                let mut content = match step.status {
                    status if status.is_failure() => format!(
                        "{} {} ({}: {})",
                        status.glyph(),
                        step.title,
                        status.as_str().replace('_', " "),
                        step.note
                    ),
                    // the running step's current mode, as each outcome moves it
                    StepStatus::Running if !step.mode.is_empty() => format!("{} ({})", step.title, step.mode),
                    _ => step.title.clone(),
                };
                if !step.replaced_by.is_empty() {
                    content.push_str(&format!(" — replaced by {}", step.replaced_by.join(", ")));
                }
                acp::PlanEntry::new(content, acp::PlanEntryPriority::Medium, status)
            })
            .collect();
        self.update(acp::SessionUpdate::Plan(acp::Plan::new(entries)));
    }

    /// A step's checks, as a tool call of their own: what the checkers found on the text the
    /// agent wrote, and the tests.
    fn checked(&self, run_id: &str, check: &Check) {
        let number = self.checks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("{run_id}/check-{number}");
        let step = check.step.as_deref().map(|s| format!(" of step {s}")).unwrap_or_default();
        let mut text = String::new();
        for (file, diagnostics) in &check.introduced {
            for diagnostic in diagnostics {
                text.push_str(&format!("{file}: {}\n", describe(diagnostic)));
            }
        }
        if check.introduced.is_empty() {
            text.push_str(&format!("No new errors in {}.\n", list(&check.files)));
        }
        for (file, diagnostics) in &check.resolved {
            for diagnostic in diagnostics {
                text.push_str(&format!("fixed in {file}: {}\n", describe(diagnostic)));
            }
        }
        match &check.tests {
            Some(TestOutcome { passed: true, .. }) => text.push_str("The tests pass.\n"),
            Some(TestOutcome { ran: false, output, .. }) => {
                text.push_str(&format!("The tests did not run: {}\n", crate::text::cut(output, 2048)))
            }
            Some(TestOutcome { passed: false, output, .. }) => {
                text.push_str(&format!("The tests fail:\n{}\n", crate::text::cut(output, 2048)))
            }
            None => {}
        }
        let status = if check.clean() { acp::ToolCallStatus::Completed } else { acp::ToolCallStatus::Failed };
        let locations = check.files.iter().map(|f| acp::ToolCallLocation::new(self.absolute(f))).collect();
        let call = acp::ToolCall::new(id, format!("Checks{step}: {}", check.describe()))
            .kind(acp::ToolKind::Think)
            .status(status)
            .locations(locations)
            .content(vec![text.into()]);
        self.update(acp::SessionUpdate::ToolCall(call));
    }
}

/// What the checkers found on an edit's text: each error that appeared and went away.
fn diagnostics_report(check: &Check) -> String {
    let mut text = String::new();
    for (file, diagnostics) in &check.introduced {
        for diagnostic in diagnostics {
            text.push_str(&format!("new in {file}: {}\n", describe(diagnostic)));
        }
    }
    for (file, diagnostics) in &check.resolved {
        for diagnostic in diagnostics {
            text.push_str(&format!("gone from {file}: {}\n", describe(diagnostic)));
        }
    }
    if text.is_empty() {
        text = format!("The checkers found no new errors in {}.\n", list(&check.files));
    }
    text
}

fn list(files: &[String]) -> String {
    if files.is_empty() { "the changed files".to_string() } else { files.join(", ") }
}

/// One diagnostic, as a line of a tool call's content.
fn describe(diagnostic: &Diagnostic) -> String {
    let code = diagnostic.code.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
    format!("{} ({}{code}): {}", diagnostic.severity.as_str(), diagnostic.source, diagnostic.message)
}

/// ACP's kind of a tool call.
pub fn kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Delete => acp::ToolKind::Delete,
        ToolKind::Move => acp::ToolKind::Move,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Other => acp::ToolKind::Other,
    }
}
