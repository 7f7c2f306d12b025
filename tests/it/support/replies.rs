//! A scripted model's replies in the text protocol (an action as a fenced JSON block, an
//! edit's SEARCH/REPLACE after it), and what the model was told back.

use serde_json::{Value, json};

use super::model_server::{ModelServer, Scripted, openai_chat};

pub fn action(value: Value) -> Scripted {
    openai_chat(&format!("```json\n{value}\n```\n"))
}

pub fn edit(path: &str, search: &str, replace: &str) -> Scripted {
    openai_chat(&format!(
        "```json\n{}\n```\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n",
        json!({"action": "edit", "path": path})
    ))
}

pub fn create(path: &str, text: &str) -> Scripted {
    openai_chat(&format!("```json\n{}\n```\n```\n{text}\n```\n", json!({"action": "create", "path": path})))
}

pub fn done(summary: &str) -> Scripted {
    action(json!({"action": "done", "summary": summary}))
}

/// What the model was told after each of its actions ("Result of …" or "Refused of …").
pub fn told(model: &ModelServer) -> Vec<String> {
    model
        .requests()
        .iter()
        .filter_map(|r| {
            let last = r.body["messages"].as_array()?.last()?.clone();
            let content = last["content"].as_str().unwrap_or_default().to_string();
            (content.starts_with("Result of") || content.starts_with("Refused of")).then_some(content)
        })
        .collect()
}
