//! What a command answered, for an editor that shows none of it: Helix drops the result of
//! `:lsp-workspace-command`, so the plan of `tokamak.plan`, the status, the checkpoints, the
//! ranked files and the conversation are written as a readable document in Tokamak's cache
//! and opened with `window/showDocument`; a one-line answer (`tokamak.checkModel`) is a
//! message.

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{MessageType, ShowDocumentParams, Uri};

/// Whether the editor named `client` drops what a workspace command answers.
pub fn drops_results(client: Option<&str>) -> bool {
    client.is_some_and(|name| name.eq_ignore_ascii_case("helix"))
}

/// Shows `result` of `command` through what the editor shows: a document, or a message.
pub async fn show(client: &Client, command: &str, result: &Value) {
    if command == "tokamak.checkModel" {
        let line = if result["ok"] == true {
            format!(
                "Tokamak: model {} at {} answered in {} ms",
                result["model"], result["endpoint"], result["latency_ms"]
            )
        } else {
            format!(
                "Tokamak: the model is not reachable: {}",
                result["error"].as_str().unwrap_or("no answer")
            )
        };
        client.show_message(MessageType::INFO, line.replace('"', "")).await;
        return;
    }
    let Some(text) = readable(command, result) else { return };
    // a new file each time: Helix reuses an open buffer of the same file without reading it again
    static SHOWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = SHOWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = command.trim_start_matches("tokamak.");
    let path =
        crate::places::cache_dir().join("answers").join(format!("{}-{n}-{name}.md", std::process::id()));
    let written =
        path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, &text));
    if let Err(err) = written {
        tracing::warn!("cannot write the answer of {command} to {}: {err}", path.display());
        return;
    }
    let Some(uri) = Uri::from_file_path(&path) else { return };
    let params = ShowDocumentParams { uri, external: Some(false), take_focus: Some(true), selection: None };
    // an editor that never answers must not hold the command's own answer
    match tokio::time::timeout(std::time::Duration::from_secs(5), client.show_document(params)).await {
        Ok(Err(err)) => tracing::warn!("the editor did not open the answer of {command}: {}", err.message),
        Err(_) => tracing::warn!("the editor did not say in 5 s whether it opened the answer of {command}"),
        Ok(Ok(_)) => {}
    }
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| if value.is_null() { String::new() } else { value.to_string() })
}

/// `result` as lines a person reads; `None` for a command whose answer says nothing more than
/// its progress and ending will (`tokamak.run`, `tokamak.approve`, …).
pub fn readable(command: &str, result: &Value) -> Option<String> {
    let mut out = Vec::new();
    match command {
        "tokamak.plan" => {
            out.push(format!("# Plan {} — {}", text(&result["plan_id"]), text(&result["goal"])));
            out.push(String::new());
            for step in result["steps"].as_array().into_iter().flatten() {
                let depends: Vec<String> =
                    step["depends_on"].as_array().into_iter().flatten().map(text).collect();
                let depends = if depends.is_empty() {
                    String::new()
                } else {
                    format!(" [depends: {}]", depends.join(", "))
                };
                out.push(format!("{}. {}{depends}", text(&step["id"]), text(&step["title"])));
                let detail = text(&step["detail"]);
                if !detail.is_empty() {
                    out.extend(detail.lines().map(|line| format!("   {line}")));
                }
            }
            out.push(String::new());
            out.push("Carry it out: :lsp-workspace-command tokamak.implement".to_string());
        }
        "tokamak.status" => {
            out.push("# Tokamak status".to_string());
            out.push(String::new());
            let model = &result["model"];
            out.push(match model["error"].as_str() {
                Some(error) => format!("Model:    not set up: {error}"),
                None => format!(
                    "Model:    {} ({} at {})",
                    text(&model["name"]),
                    text(&model["provider"]),
                    text(&model["endpoint"])
                ),
            });
            let trusted = if result["trusted"] == true { "trusted" } else { "not trusted" };
            out.push(format!("Trust:    {trusted} ({})", text(&result["trust"])));
            out.push(format!("Approval: {}", text(&result["approval"])));
            if !result["sandbox"].is_null() {
                out.push(format!("Sandbox:  {}", text(&result["sandbox"])));
            }
            for line in result["checkers"].as_array().into_iter().flatten() {
                out.push(format!("Checkers: {}", text(line)));
            }
            out.push(String::new());
            let runs = result["runs"].as_array().cloned().unwrap_or_default();
            if runs.is_empty() {
                out.push("No run is going on.".to_string());
            }
            for run in runs {
                let mode = run["mode"].as_str().map(|m| format!(" — {m}")).unwrap_or_default();
                out.push(format!("Running: {}{mode}", text(&run["run_id"])));
            }
            let ended = result["recentRuns"].as_array().cloned().unwrap_or_default();
            if !ended.is_empty() {
                out.push(String::new());
                out.push("Ended:".to_string());
                for run in ended {
                    out.push(format!(
                        "- {} {}: {}",
                        text(&run["run_id"]),
                        text(&run["exit_reason"]).replace('_', " "),
                        text(&run["summary"])
                    ));
                }
            }
            let waiting = result["approvals"].as_array().map_or(0, Vec::len);
            if waiting > 0 {
                out.push(String::new());
                out.push(format!("{waiting} approval(s) waiting: tokamak.approve / tokamak.reject"));
            }
        }
        "tokamak.checkpoints" => {
            out.push("# Checkpoints (newest first)".to_string());
            out.push(String::new());
            let list = result.as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                out.push("No run has left a checkpoint in this workspace yet.".to_string());
            }
            for checkpoint in list {
                let files: Vec<String> =
                    checkpoint["files"].as_array().into_iter().flatten().map(text).collect();
                out.push(format!(
                    "- {}  {}  {} ({})",
                    text(&checkpoint["time"]),
                    text(&checkpoint["run_id"]),
                    text(&checkpoint["goal"]),
                    if files.is_empty() { "no files".to_string() } else { files.join(", ") }
                ));
            }
            out.push(String::new());
            out.push("Undo one: :lsp-workspace-command tokamak.rollback \"RUN_ID\"".to_string());
        }
        "tokamak.context" => {
            out.push("# The files that answer it, best first".to_string());
            out.push(String::new());
            for file in result.as_array().into_iter().flatten() {
                let why: Vec<String> = file["reasons"].as_array().into_iter().flatten().map(text).collect();
                out.push(format!("- {} ({})", text(&file["path"]), why.join(", ")));
            }
        }
        "tokamak.conversation" => {
            out.push("# The conversation so far".to_string());
            for turn in result["turns"].as_array().into_iter().flatten() {
                out.push(String::new());
                out.push(format!("> {}", text(&turn["asked"]).replace('\n', "\n> ")));
                out.push(text(&turn["answered"]));
            }
        }
        _ => return None,
    }
    Some(out.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plan_and_a_status_read_as_text_and_helix_is_the_editor_that_needs_it() {
        let plan = json!({"plan_id": "p1", "goal": "add it", "steps": [
            {"id": "1", "title": "Add it", "detail": "in user.py", "depends_on": []},
            {"id": "2", "title": "Test it", "depends_on": ["1"]},
        ]});
        let text = readable("tokamak.plan", &plan).unwrap();
        assert!(text.starts_with("# Plan p1 — add it\n"), "{text}");
        assert!(text.contains("1. Add it\n   in user.py\n2. Test it [depends: 1]\n"), "{text}");
        let status = json!({"model": {"name": "qwen", "provider": "openai", "endpoint": "http://x"}, "trusted": true,
            "trust": "the editor", "approval": "medium", "runs": [], "recentRuns": [
            {"run_id": "r1", "exit_reason": "tests_failing", "summary": "1 test fails"}]});
        let text = readable("tokamak.status", &status).unwrap();
        assert!(text.contains("Model:    qwen (openai at http://x)"), "{text}");
        assert!(text.contains("- r1 tests failing: 1 test fails"), "{text}");
        assert!(readable("tokamak.run", &json!({"run_id": "r"})).is_none());
        assert!(drops_results(Some("helix")) && !drops_results(Some("Neovim")) && !drops_results(None));
    }
}
