//! The executor's actions as the model's tools (native tool calling): each one's JSON
//! Schema and description, and a tool call read back into an action — or into one sentence
//! for the model when its arguments are malformed or the tool does not exist.

use serde_json::{Value, json};

use crate::executor::Action;
use crate::model::{Tool, ToolCall};
use crate::toolbox::OutsideTool;

/// The tool that ends a step: the goal is reached, or cannot be.
pub const DONE: &str = "done";

/// What a tool call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Called {
    Act(Action),
    Done(String),
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The tokens the tools take in a prompt (estimated from their descriptions and schemas), MCP
/// servers' tools included.
pub fn tokens(outside: &[OutsideTool]) -> u32 {
    tools_with(outside)
        .iter()
        .map(|t| {
            crate::model::estimate_tokens(&t.name)
                + crate::model::estimate_tokens(&t.description)
                + crate::model::estimate_tokens(&t.parameters.to_string())
        })
        .sum()
}

/// Every action, `done`, and the MCP servers' tools under their own names (`mcp__server__tool`,
/// which no action's name starts with).
pub fn tools_with(outside: &[OutsideTool]) -> Vec<Tool> {
    let mut all = tools();
    all.extend(outside.iter().map(|tool| Tool {
        name: tool.name.clone(),
        description: format!("{} (a tool of the MCP server {})", tool.description, tool.server),
        parameters: schema(&tool.schema),
    }));
    all
}

/// An MCP tool's input schema as providers take one: an object schema (a server that gives
/// none, or another type, gets an empty object's).
fn schema(given: &Value) -> Value {
    match given {
        Value::Object(object) if object.get("type").and_then(Value::as_str) == Some("object") => {
            given.clone()
        }
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// The MCP tools as the text protocol's prompt lists them (empty: none).
pub fn outside_in_text(outside: &[OutsideTool]) -> String {
    if outside.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nMCP servers' tools — call one as {\"action\": \"<its name>\", \"arguments\": {…as its schema says}}:\n",
    );
    for tool in outside {
        out.push_str(&format!(
            "- {}: {} Arguments: {}\n",
            tool.name,
            tool.description,
            crate::text::cut(&tool.schema.to_string(), 600)
        ));
    }
    out
}

/// Every action, and `done`.
pub fn tools() -> Vec<Tool> {
    let path = json!({"type": "string", "description": "a path relative to the workspace root"});
    let tool = |name: &str, description: &str, parameters: Value| Tool {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    };
    vec![
        tool(
            "read",
            "Read a file's text, whole or some lines of it.",
            object(
                json!({"path": path, "lines": {"type": "string", "description": "1-based lines, as \"10-40\""}}),
                &["path"],
            ),
        ),
        tool(
            "list",
            "List a folder's entries, or with glob the files under it matching the glob (\"**/*.py\").",
            object(json!({"dir": path, "glob": {"type": "string"}}), &[]),
        ),
        tool(
            "search",
            "Search the project's files (those .gitignore keeps) for lines matching a regular expression.",
            object(
                json!({"pattern": {"type": "string", "description": "a regular expression"}, "glob": {"type": "string", "description": "only files matching this glob"}}),
                &["pattern"],
            ),
        ),
        tool(
            "symbols",
            "Find definitions (classes, functions, methods) whose names are like the query, fuzzily and in any case; each with its file, line and signature.",
            object(json!({"query": {"type": "string"}}), &["query"]),
        ),
        tool(
            "definition",
            "Where a name is defined, with the definition's text.",
            object(json!({"name": {"type": "string"}}), &["name"]),
        ),
        tool(
            "callers",
            "Who calls a function (by name), and who calls those, up to depth levels; says when a call may be to another function of the same name.",
            object(
                json!({"name": {"type": "string"}, "depth": {"type": "integer", "minimum": 1, "maximum": 5}}),
                &["name"],
            ),
        ),
        tool(
            "importers",
            "The files that import a module (Python: dotted, as app.models; TypeScript/JavaScript: the path without extension, as src/util).",
            object(json!({"module": {"type": "string"}}), &["module"]),
        ),
        tool(
            "locate",
            "The files most relevant to a question in English or Korean (\"where is the login handled?\"), with why each ranks.",
            object(json!({"query": {"type": "string"}}), &["query"]),
        ),
        tool(
            "skill",
            "Read a skill's instructions in full (the skills are listed in the prompt), or with file one of the files beside its SKILL.md.",
            object(
                json!({"name": {"type": "string"}, "file": {"type": "string", "description": "a file of the skill's folder, as listed"}}),
                &["name"],
            ),
        ),
        tool(
            "impact",
            "What a change reaches: the changed definitions' callers, the importers of their modules, and the tests that reach them. With path and names: those definitions; with path only: what this run changed in that file; with neither: everything this run changed.",
            object(json!({"path": path, "names": {"type": "array", "items": {"type": "string"}}}), &[]),
        ),
        tool(
            "edit",
            "Change a file with SEARCH/REPLACE blocks: <<<<<<< SEARCH, the exact lines to find, =======, the lines to put there, >>>>>>> REPLACE. Copy the SEARCH lines exactly from the file.",
            object(json!({"path": path, "blocks": {"type": "string"}}), &["path", "blocks"]),
        ),
        tool(
            "create",
            "Create a new file with this text.",
            object(json!({"path": path, "text": {"type": "string"}}), &["path", "text"]),
        ),
        tool("delete", "Delete a file.", object(json!({"path": path}), &["path"])),
        tool("rename", "Move a file.", object(json!({"from": path, "to": path}), &["from", "to"])),
        tool(
            "run",
            "Run a command in the workspace (no shell: no pipes or redirections), such as the tests.",
            object(
                json!({"command": {"type": "string"}, "timeout": {"type": "integer", "description": "seconds"}}),
                &["command"],
            ),
        ),
        tool(
            "git_commit",
            "Commit the files this run changed to the project's git, with a message.",
            object(json!({"message": {"type": "string"}}), &["message"]),
        ),
        tool(
            DONE,
            "Say the goal is reached (or cannot be), with a short summary of what was done.",
            object(json!({"summary": {"type": "string"}}), &["summary"]),
        ),
    ]
}

/// Reads a tool call; the error is one sentence for the model (sent back as the call's result).
/// Whether `name` is one of the tools: an action, or done.
pub fn is_tool(name: &str) -> bool {
    crate::executor::ACTION_NAMES.contains(&name)
        || name == DONE
        || name.starts_with(crate::action::TOOL_PREFIX)
}

/// Reads a tool call into what it asks for; arguments are repaired as `calls::arguments`
/// says. The error is one sentence for the model, naming the tools when the name is none.
pub fn read_call(call: &ToolCall) -> Result<Called, String> {
    if call.name.trim().is_empty() {
        return Err(format!(
            "a tool call had no name; the tools are {}, and {DONE}",
            crate::executor::ACTION_NAMES.join(", ")
        ));
    }
    let arguments = super::calls::arguments(call)?;
    if call.name == DONE {
        let summary = arguments["summary"].as_str().unwrap_or("done").to_string();
        return Ok(Called::Done(summary));
    }
    Action::from_call(&call.name, arguments).map(Called::Act)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn tool_calls_become_actions_or_a_sentence() {
        assert_eq!(
            read_call(&call("read", r#"{"path": "a.py", "lines": "2-3"}"#)),
            Ok(Called::Act(Action::Read { path: "a.py".into(), lines: Some((2, 3)) }))
        );
        assert_eq!(read_call(&call("done", r#"{"summary": "ok"}"#)), Ok(Called::Done("ok".into())));
        assert!(read_call(&call("read", r#"{"path": "a.py""#)).unwrap_err().contains("not valid JSON"));
        assert!(read_call(&call("", "{}")).unwrap_err().contains("the tools are read, "));
        assert!(read_call(&call("teleport", "{}")).unwrap_err().contains("there is no action \"teleport\""));
        assert!(read_call(&call("read", "{}")).unwrap_err().contains("missing field `path`"));
        // every tool has an object schema, and every action a tool
        let tools = tools();
        for name in crate::executor::ACTION_NAMES {
            assert!(tools.iter().any(|t| t.name == *name), "{name}");
        }
        assert!(tools.iter().all(|t| t.parameters["type"] == "object"));
    }
}
