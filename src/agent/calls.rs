//! Tool calls wherever a model puts them. A server without a tool parser for the model (a
//! llama.cpp or vLLM started without one, a chat template that does not know tools) hands
//! the model's calls back as text: Hermes' and Qwen's `<tool_call>` blocks, Mistral's
//! `[TOOL_CALLS]`, Llama 3's `<|python_tag|>` or its bare `{"name": …, "parameters": …}`,
//! fenced or not, several in one reply. They are read here into the same calls native tool
//! calling gives, in order; and the arguments of any call are read as models write them.

use serde_json::Value;

use super::protocol::{json_objects, lenient_json};
use crate::model::ToolCall;

/// The markers that say "a call follows" in a model's text.
const MARKERS: [&str; 3] = ["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"];

/// The calls in `text`, in order: those after a call marker, and the JSON objects shaped as
/// calls (`name` of a tool — one `is_tool` knows — and `arguments` or `parameters`). Empty
/// when there are none: the reply is then prose, or the text protocol's one action.
pub fn in_text(text: &str, is_tool: impl Fn(&str) -> bool) -> Vec<ToolCall> {
    let marked = MARKERS.iter().any(|marker| text.contains(marker));
    let mut calls = Vec::new();
    // Mistral's newer form: [TOOL_CALLS]read[ARGS]{"path": "a.py"}
    for piece in text.split("[TOOL_CALLS]").skip(1) {
        if let Some((name, rest)) = piece.split_once("[ARGS]")
            && is_tool(name.trim())
            && let Some((value, _)) = json_objects(rest).into_iter().next()
        {
            calls.push(call(calls.len(), name.trim(), &value));
        }
    }
    if !calls.is_empty() {
        return calls;
    }
    for (value, _) in json_objects(text) {
        let Some(object) = value.as_object() else { continue };
        // {"type": "function", "function": {"name": …, "arguments": …}} as OpenAI writes it
        let object = object.get("function").and_then(Value::as_object).unwrap_or(object);
        let Some(name) = object.get("name").and_then(Value::as_str) else { continue };
        let arguments = object.get("arguments").or_else(|| object.get("parameters"));
        // outside a marker, only what is unmistakably a call: a tool's name and its arguments
        if !is_tool(name) || (arguments.is_none() && !marked) {
            continue;
        }
        calls.push(call(calls.len(), name, arguments.unwrap_or(&Value::Null)));
    }
    calls
}

fn call(index: usize, name: &str, arguments: &Value) -> ToolCall {
    let arguments = match arguments {
        Value::Null => "{}".to_string(),
        // arguments as a JSON string, as the wire format has them
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    ToolCall { id: format!("text_call_{index}"), name: name.to_string(), arguments }
}

/// A call's arguments as a JSON object, repaired when the meaning is unambiguous: a JSON
/// object inside a JSON string, trailing commas, single quotes, Python's `True`/`None`. The
/// error is one sentence for the model.
pub fn arguments(call: &ToolCall) -> Result<Value, String> {
    let text = call.arguments.trim();
    if text.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let value = match lenient_json(text) {
        // a JSON object inside a JSON string
        Some(Value::String(inner)) => lenient_json(inner.trim()),
        other => other,
    };
    match value {
        Some(Value::Object(object)) => Ok(Value::Object(object)),
        Some(other) => {
            Err(format!("the arguments of {} must be one JSON object, not {}", call.name, kind(&other)))
        }
        None => Err(format!(
            "the arguments of {} are not valid JSON; send them as one JSON object, as {{\"path\": \"a.py\"}}",
            call.name
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(String, String)> {
        let tool = |name: &str| crate::executor::ACTION_NAMES.contains(&name) || name == "done";
        in_text(text, tool).into_iter().map(|c| (c.name, c.arguments)).collect()
    }

    #[test]
    fn calls_are_found_in_every_style_models_write_them() {
        let read = || ("read".to_string(), r#"{"path":"a.py"}"#.to_string());
        // Hermes / Qwen, two in one reply
        let hermes = "I'll look.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.py\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"list\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(names(hermes), [read(), ("list".to_string(), "{}".to_string())]);
        // Mistral, both forms
        assert_eq!(
            names("[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"a.py\"}}]"),
            [read()]
        );
        assert_eq!(names("[TOOL_CALLS]read[ARGS]{\"path\": \"a.py\"}"), [read()]);
        // Llama 3.1 and 3.2
        assert_eq!(
            names("<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a.py\"}}"),
            [read()]
        );
        assert_eq!(names("{\"name\": \"read\", \"parameters\": {\"path\": \"a.py\"}}"), [read()]);
        // fenced, and OpenAI's own shape written out
        assert_eq!(
            names("```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.py\"}}\n```"),
            [read()]
        );
        assert_eq!(
            names(
                "{\"type\": \"function\", \"function\": {\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"a.py\\\"}\"}}"
            ),
            [("read".to_string(), "{\"path\": \"a.py\"}".to_string())]
        );
        // not calls: prose, the text protocol's action, a package.json's name, an unknown tool
        assert!(names("All done: the tests pass.").is_empty());
        assert!(names("{\"action\": \"read\", \"path\": \"a.py\"}").is_empty());
        assert!(names("{\"name\": \"my-app\", \"version\": \"1.0.0\"}").is_empty());
        assert!(names("{\"name\": \"teleport\", \"arguments\": {}}").is_empty());
    }

    #[test]
    fn arguments_are_read_as_models_write_them() {
        let call =
            |arguments: &str| ToolCall { id: "c".into(), name: "read".into(), arguments: arguments.into() };
        let want = serde_json::json!({"path": "a.py", "force": true, "lines": null});
        for written in [
            r#"{"path": "a.py", "force": true, "lines": null}"#,
            r#"{"path": "a.py", "force": true, "lines": null,}"#,
            r#"{'path': 'a.py', 'force': True, 'lines': None}"#,
            r#""{\"path\": \"a.py\", \"force\": true, \"lines\": null}""#,
        ] {
            assert_eq!(arguments(&call(written)), Ok(want.clone()), "{written}");
        }
        // a quote inside a single-quoted string, and words that only look like Python's
        assert_eq!(
            arguments(&call(r#"{'text': 'say "None"', 'path': 'Nonesuch.py'}"#)),
            Ok(serde_json::json!({"text": "say \"None\"", "path": "Nonesuch.py"}))
        );
        assert_eq!(arguments(&call("")), Ok(serde_json::json!({})));
        assert!(arguments(&call(r#"{"path": "a.py""#)).unwrap_err().contains("not valid JSON"));
        assert!(arguments(&call(r#"["a.py"]"#)).unwrap_err().contains("not a list"));
    }
}
