//! The text protocol for models without native tool calls: one action per reply, as a JSON
//! object in a fenced block, read as tolerantly as edit blocks are — prose around it, a
//! missing or wrong fence, trailing commas. An `edit` may carry its SEARCH/REPLACE blocks
//! after the JSON instead of inside it, and a `create` its text as the next code block, so a
//! model need not escape code into JSON.

use serde_json::Value;

use crate::executor::{ACTION_NAMES, Action};

/// What a reply asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Act(Action),
    /// The model says the goal is reached (or cannot be), with its summary.
    Done(String),
}

/// How the tools are described to a model that reads this protocol.
pub const TOOLS: &str = r#"Act with exactly one action per reply: a JSON object in a ```json block. The actions:
- {"action": "read", "path": "src/app.py", "lines": "10-40"}  a file's text ("lines" is optional)
- {"action": "list", "dir": "src", "glob": "**/*.py"}  a folder's entries, or the files matching a glob (both optional)
- {"action": "search", "pattern": "def login", "glob": "*.py"}  lines matching a regular expression ("glob" optional)
- {"action": "symbols", "query": "validate email"}  definitions whose names are like the query
- {"action": "definition", "name": "User"}  where a name is defined, with its text
- {"action": "callers", "name": "login", "depth": 2}  who calls a function, and who calls those ("depth" 1-5, optional)
- {"action": "importers", "module": "app.models"}  the files that import a module
- {"action": "locate", "query": "where is the login handled"}  the files most relevant to a question
- {"action": "impact", "path": "app/models.py", "names": ["User"]}  callers, importers and tests a change reaches (without names: what this run changed)
- {"action": "skill", "name": "testing-strategy", "file": "examples.md"}  a skill's instructions in full (without file), or a file beside them
- {"action": "edit", "path": "src/app.py"}  followed, after the JSON block, by SEARCH/REPLACE blocks:
<<<<<<< SEARCH
exact lines from the file
=======
the lines that replace them
>>>>>>> REPLACE
- {"action": "create", "path": "tests/test_app.py"}  followed by one code block holding the whole new file
- {"action": "delete", "path": "old.py"}
- {"action": "rename", "from": "a.py", "to": "b.py"}
- {"action": "run", "command": "python -m pytest -q"}  a command in the workspace (no shell: no pipes or redirections)
- {"action": "git_commit", "message": "Add login"}  commit the files this run changed
- {"action": "done", "summary": "what was done, or why it cannot be"}  when the goal is reached
Paths are relative to the workspace root. After each action you get its result; then send the next action."#;

/// Reads the action a reply asks for; the error is one sentence for the model.
pub fn parse(reply: &str) -> Result<Reply, String> {
    let candidates = json_objects(reply);
    let unknown = candidates.iter().rev().find_map(|(v, _)| {
        let object = v.as_object()?;
        ["action", "tool"].iter().find_map(|key| object.get(*key)?.as_str().map(str::to_string))
    });
    let Some((value, end)) = candidates.into_iter().rev().find(|(v, _)| action_name(v).is_some()) else {
        if let Some(name) = unknown {
            return Err(format!(
                "there is no action {name:?}; the actions are {}, and done",
                ACTION_NAMES.join(", ")
            ));
        }
        return Err(
            "your reply had no action: send exactly one JSON object like {\"action\": \"read\", \"path\": \"...\"} in a ```json block".to_string(),
        );
    };
    let name = action_name(&value).unwrap_or_default();
    let mut object = match value {
        Value::Object(object) => object,
        _ => return Err("the action must be a JSON object".to_string()),
    };
    // the key that named the action goes; `name` stays an argument when `action` or `tool`
    // named it (`{"action": "definition", "name": "User"}`)
    if let Some(key) =
        ["action", "tool", "name"].into_iter().find(|key| object.get(*key).is_some_and(Value::is_string))
    {
        object.remove(key);
    }
    // `{"tool": "read", "arguments": {...}}` / `{"action": "read", "args": {...}}`
    for key in ["arguments", "args", "parameters", "input"] {
        if let Some(Value::Object(inner)) = object.remove(key) {
            object.extend(inner);
        }
    }
    if matches!(name.as_str(), "done" | "finish" | "finished" | "complete") {
        let summary = object
            .get("summary")
            .or_else(|| object.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("done")
            .to_string();
        return Ok(Reply::Done(summary));
    }
    let rest = after_closing_fence(&reply[end..]);
    if name == "edit" && !object.contains_key("blocks") {
        if !rest.contains("<<<<<<<") && !rest.contains("```diff") && !rest.contains("\n@@") {
            return Err("an edit needs SEARCH/REPLACE blocks after the JSON block (or \"blocks\" inside it)"
                .to_string());
        }
        object.insert("blocks".to_string(), Value::String(rest.to_string()));
    }
    if name == "create" && !object.contains_key("text") {
        let text = first_code_block(rest).ok_or_else(|| {
            "a create needs the file's text in a code block after the JSON block (or \"text\" inside it)"
                .to_string()
        })?;
        object.insert("text".to_string(), Value::String(text));
    }
    Action::from_call(&name, Value::Object(object)).map(Reply::Act)
}

/// The action's name in `value`, if it names one we know (or `done`).
fn action_name(value: &Value) -> Option<String> {
    let object = value.as_object()?;
    let name = ["action", "tool", "name"].iter().find_map(|key| object.get(*key)?.as_str())?;
    // an MCP server's tool is called by its name as offered, exactly
    if name.trim().starts_with(crate::action::TOOL_PREFIX) {
        return Some(name.trim().to_string());
    }
    let name = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    let name = match name.as_str() {
        "read_file" | "open" | "cat" => "read".to_string(),
        "ls" | "list_files" | "list_dir" => "list".to_string(),
        "grep" | "find" => "search".to_string(),
        "write" | "write_file" | "create_file" => "create".to_string(),
        "run_command" | "shell" | "exec" | "bash" => "run".to_string(),
        "commit" => "git_commit".to_string(),
        other => other.to_string(),
    };
    (ACTION_NAMES.contains(&name.as_str())
        || matches!(name.as_str(), "done" | "finish" | "finished" | "complete"))
    .then_some(name)
}

/// Every JSON object in `text` (fenced or not), with the byte offset where it ends. Trailing
/// commas and `//` line comments are forgiven.
pub(super) fn json_objects(text: &str) -> Vec<(Value, usize)> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    while let Some(open) = text[start..].find('{').map(|at| start + at) {
        match balanced_end(bytes, open) {
            Some(end) => {
                let raw = &text[open..end];
                if let Some(value) = lenient_json(raw) {
                    found.push((value, end));
                    start = end;
                    continue;
                }
                start = open + 1;
            }
            None => break,
        }
    }
    found
}

/// The end (exclusive) of the `{…}` starting at `open`, minding strings.
fn balanced_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (index, &byte) in bytes.iter().enumerate().skip(open) {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(index + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `raw` read as JSON, forgiving what models write around it when the meaning is clear:
/// trailing commas, `//` comments, and Python's literals (single-quoted strings, `True`,
/// `False`, `None`).
pub(super) fn lenient_json(raw: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(raw) {
        return Some(value);
    }
    forgiving(raw).or_else(|| pythonish(raw).and_then(|json| forgiving(&json)))
}

/// `raw` without `//` comments and trailing commas, read as JSON.
fn forgiving(raw: &str) -> Option<Value> {
    let without_comments = outside_strings(raw, |c, rest, out| {
        if c == '/' && rest.starts_with('/') {
            // skip to the end of the line
            return rest.find('\n').map_or(rest.len(), |at| at) + 1;
        }
        out.push(c);
        0
    });
    let cleaned = outside_strings(&without_comments, |c, rest, out| {
        if c != ',' || !rest.trim_start().starts_with(['}', ']']) {
            out.push(c);
        }
        0
    });
    serde_json::from_str(&cleaned).ok()
}

/// A Python literal (`{'path': 'a.py', 'force': True}`) as JSON text: single-quoted strings
/// become double-quoted ones, `True`/`False`/`None` outside strings `true`/`false`/`null`.
/// `None` when nothing was changed or a string is left open.
fn pythonish(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices().peekable();
    let mut changed = false;
    while let Some((index, c)) = chars.next() {
        match c {
            '"' | '\'' => {
                changed |= c == '\'';
                out.push('"');
                let mut closed = false;
                while let Some((_, inner)) = chars.next() {
                    match inner {
                        '\\' => {
                            let (_, escaped) = chars.next()?;
                            // \' needs no escape in JSON; everything else stays escaped
                            if escaped != '\'' {
                                out.push('\\');
                            }
                            out.push(escaped);
                        }
                        _ if inner == c => {
                            closed = true;
                            break;
                        }
                        '"' => out.push_str("\\\""),
                        _ => out.push(inner),
                    }
                }
                if !closed {
                    return None;
                }
                out.push('"');
            }
            _ if c.is_ascii_alphabetic() => {
                let rest = &raw[index..];
                let word_len =
                    rest.find(|ch: char| !ch.is_ascii_alphanumeric() && ch != '_').unwrap_or(rest.len());
                let word = &rest[..word_len];
                let json = match word {
                    "True" => "true",
                    "False" => "false",
                    "None" => "null",
                    _ => word,
                };
                changed |= json != word;
                out.push_str(json);
                for _ in 1..word.chars().count() {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    changed.then_some(out)
}

/// Copies `text`, passing each character outside JSON strings to `visit` (which pushes what
/// to keep and returns how many of the following characters to skip); strings are copied.
fn outside_strings(text: &str, visit: impl Fn(char, &str, &mut String) -> usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut skip = 0usize;
    for (index, c) in text.char_indices() {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            out.push(c);
            continue;
        }
        let rest = &text[index + c.len_utf8()..];
        let skipped_bytes = visit(c, rest, &mut out);
        if skipped_bytes > 0 {
            skip = rest[..skipped_bytes.min(rest.len())].chars().count();
        }
    }
    out
}

/// `rest` (what follows the action's JSON) without the fence line that closes the JSON's
/// own code block.
fn after_closing_fence(rest: &str) -> &str {
    let trimmed = rest.trim_start_matches([' ', '\t', '\r', '\n']);
    if let Some(after) = trimmed.strip_prefix("```") {
        let line_end = after.find('\n').map_or(after.len(), |at| at + 1);
        if after[..line_end].trim().is_empty() {
            return &after[line_end..];
        }
    }
    rest
}

/// The content of the first fenced code block in `text`.
fn first_code_block(text: &str) -> Option<String> {
    let open = text.find("```")?;
    let after_fence = &text[open + 3..];
    let body_start = after_fence.find('\n')? + 1;
    let body = &after_fence[body_start..];
    let close = body.find("\n```").map(|at| at + 1).or_else(|| body.rfind("```"))?;
    Some(body[..close].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(reply: &str) -> Action {
        match parse(reply) {
            Ok(Reply::Act(action)) => action,
            other => panic!("{reply:?}: {other:?}"),
        }
    }

    #[test]
    fn reads_one_action_from_a_reply() {
        assert_eq!(
            act("I will look first.\n```json\n{\"action\": \"read\", \"path\": \"src/app.py\"}\n```"),
            Action::Read { path: "src/app.py".into(), lines: None }
        );
        // no fence, trailing comma, a comment, the tool spelled another way
        assert_eq!(
            act("{\"tool\": \"grep\", \"pattern\": \"login\", // where\n}"),
            Action::Search { pattern: "login".into(), glob: None }
        );
        // a wrong fence and nested arguments
        assert_eq!(
            act("```python\n{\"name\": \"list\", \"arguments\": {\"dir\": \"src\"}}\n```"),
            Action::List { dir: Some("src".into()), glob: None }
        );
        // the last action wins over an example quoted earlier
        assert_eq!(
            act(
                "Like {\"action\": \"read\", \"path\": \"x\"} but instead:\n{\"action\": \"run\", \"command\": \"pytest -q\"}"
            ),
            Action::Run { command: vec!["pytest".into(), "-q".into()], timeout: None }
        );
        assert_eq!(
            parse("```json\n{\"action\": \"done\", \"summary\": \"added it\"}\n```"),
            Ok(Reply::Done("added it".into()))
        );
    }

    #[test]
    fn edits_and_creates_carry_their_text_outside_the_json() {
        let reply = "```json\n{\"action\": \"edit\", \"path\": \"a.py\"}\n```\n<<<<<<< SEARCH\nx = {1}\n=======\nx = {2}\n>>>>>>> REPLACE\n";
        let Action::Edit { path, blocks } = act(reply) else { panic!() };
        assert_eq!(path, "a.py");
        assert!(blocks.contains("<<<<<<< SEARCH\nx = {1}"), "{blocks}");
        let reply = "```json\n{\"action\": \"create\", \"path\": \"t.py\"}\n```\n```python\ndef test():\n    assert {} == {}\n```\n";
        assert_eq!(
            act(reply),
            Action::Create { path: "t.py".into(), text: "def test():\n    assert {} == {}\n".into() }
        );
        assert!(parse("{\"action\": \"edit\", \"path\": \"a.py\"}").unwrap_err().contains("SEARCH/REPLACE"));
        assert!(parse("{\"action\": \"create\", \"path\": \"a.py\"}").unwrap_err().contains("code block"));
    }

    #[test]
    fn garbage_gets_a_sentence_back() {
        for reply in ["", "I think the bug is in line 3.", "{not json", "[1, 2]"] {
            let err = parse(reply).unwrap_err();
            assert!(err.contains("no action"), "{reply:?}: {err}");
        }
        let err = parse("{\"action\": \"fly\"}").unwrap_err();
        assert!(err.contains("there is no action \"fly\"; the actions are read, list"), "{err}");
        let err = parse("{\"action\": \"read\"}").unwrap_err();
        assert!(err.contains("missing field `path`"), "{err}");
    }
}
