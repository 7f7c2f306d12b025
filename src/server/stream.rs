//! The run stream for a client that shows a conversation (the VS Code agent panel): what the
//! model said and thought, each tool call with its result, diff and checks, and each step's
//! checks, as `tokamak/runEvent` notifications — sent only to a client that asks for them
//! with the experimental capability `tokamak.runEvents`.

use serde_json::{Value, json};
use tower_lsp_server::ls_types::notification::Notification;

use crate::diagnostic::Diagnostic;
use crate::editor::{Progress, RunEvent};
use crate::run::Check;

/// `tokamak/runEvent`: `{run_id, kind, …}` with `kind` one of `said {text}`, `thought {text}`,
/// `tool_call {id, tool, title, paths}`, `tool_result {id, ok, summary, changed, files: [{path,
/// diff, before?, after?}], check?, output?}`, `checked {step?, files, introduced, resolved,
/// warned, tests?, summary}`, `context {tokens}`, `progress {title?, message}` (what the run
/// is doing, in place of work-done progress).
pub enum RunEventNotification {}

impl Notification for RunEventNotification {
    type Params = Value;
    const METHOD: &'static str = "tokamak/runEvent";
}

/// A side of a changed file is sent whole up to this size, so the client can open a diff
/// editor on it; past it, only the unified diff.
const WHOLE_TEXT_BYTES: usize = 256 * 1024;
/// A unified diff is cut to this.
const DIFF_BYTES: usize = 64 * 1024;

/// The notification's params for `event`; `None` for the events the client has otherwise
/// (the plan, progress, the report).
pub fn params(run_id: &str, event: &RunEvent) -> Option<Value> {
    let mut value = match event {
        RunEvent::Said(text) => json!({"kind": "said", "text": text}),
        RunEvent::Thought(text) => json!({"kind": "thought", "text": text}),
        RunEvent::ContextUsed(tokens) => json!({"kind": "context", "tokens": tokens}),
        RunEvent::ToolCall { id, kind, title, paths } => json!({
            "kind": "tool_call",
            "id": id,
            "tool": format!("{kind:?}").to_lowercase(),
            "title": title,
            "paths": paths,
        }),
        RunEvent::ToolResult { id, ok, summary, changed, files, check, output } => {
            let files: Vec<Value> = files
                .iter()
                .map(|file| {
                    let diff = crate::executor::unified_diff(
                        &file.path,
                        file.before.as_deref(),
                        file.after.as_deref(),
                    );
                    let whole = |text: &Option<String>| match text {
                        Some(text) if text.len() <= WHOLE_TEXT_BYTES => json!(text),
                        _ => Value::Null,
                    };
                    json!({
                        "path": file.path,
                        "diff": crate::text::cut(&diff, DIFF_BYTES),
                        "before": whole(&file.before),
                        "after": whole(&file.after),
                        "created": file.before.is_none(),
                        "deleted": file.after.is_none(),
                    })
                })
                .collect();
            json!({
                "kind": "tool_result",
                "id": id,
                "ok": ok,
                "summary": summary,
                "changed": changed,
                "files": files,
                "check": check.as_ref().map(checked),
                "output": output,
            })
        }
        RunEvent::Checked(check) => {
            let mut value = checked(check);
            value["kind"] = json!("checked");
            value
        }
        // the client shows progress its own way (no work-done progress is sent to it)
        RunEvent::Progress(Progress::Begin { title, message }) => {
            json!({"kind": "progress", "title": title, "message": message})
        }
        RunEvent::Progress(Progress::Report { message, .. } | Progress::End { message }) => {
            json!({"kind": "progress", "message": message})
        }
        RunEvent::Plan(_) | RunEvent::Finished(_) => return None,
    };
    value["run_id"] = json!(run_id);
    Some(value)
}

fn checked(check: &Check) -> Value {
    let by_file = |found: &[(String, Vec<Diagnostic>)]| -> Vec<Value> {
        found
            .iter()
            .flat_map(|(path, diagnostics)| {
                diagnostics.iter().map(move |d| {
                    json!({
                        "path": path,
                        "severity": d.severity.as_str(),
                        "source": d.source,
                        "code": d.code,
                        "message": d.message,
                    })
                })
            })
            .collect()
    };
    json!({
        "step": check.step,
        "files": check.files,
        "introduced": by_file(&check.introduced),
        "resolved": by_file(&check.resolved),
        "warned": by_file(&check.warned),
        "tests": check.tests.as_ref().map(|t| json!({
            "passed": t.passed,
            "ran": t.ran,
            "output": crate::text::cut(&t.output, 8 * 1024),
        })),
        "summary": check.describe(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::ChangedFile;

    #[test]
    fn a_tool_result_carries_its_diff_and_both_texts_and_the_plan_is_left_to_its_own_notification() {
        let event = RunEvent::ToolResult {
            id: "call-1".into(),
            ok: true,
            summary: "edited user.py".into(),
            changed: vec!["user.py".into()],
            files: vec![ChangedFile {
                path: "user.py".into(),
                before: Some("a\n".into()),
                after: Some("a\nb\n".into()),
            }],
            check: None,
            output: None,
        };
        let value = params("run-1", &event).unwrap();
        assert_eq!(value["kind"], "tool_result");
        assert_eq!(value["run_id"], "run-1");
        let file = &value["files"][0];
        assert_eq!((file["before"].as_str(), file["after"].as_str()), (Some("a\n"), Some("a\nb\n")));
        assert!(file["diff"].as_str().unwrap().contains("+b\n"), "{file}");
        assert_eq!(file["created"], false);
        let said = params("run-1", &RunEvent::Said("Added it.".into())).unwrap();
        assert_eq!(said, json!({"kind": "said", "text": "Added it.", "run_id": "run-1"}));
        assert!(params("run-1", &RunEvent::ContextUsed(12)).is_some());
        let report = Progress::Report { message: "planning".into(), percentage: None };
        assert_eq!(params("run-1", &RunEvent::Progress(report)).unwrap()["message"], "planning");
        let plan = crate::run::plan::Plan::read("p", "goal", "1. Do it\n", 1).unwrap();
        assert!(params("run-1", &RunEvent::Plan(plan)).is_none(), "the plan has its own notification");
    }
}
