//! The actions the agent can take (SPEC X1), as typed values read from the model's tool
//! calls, and what each one gives back: a short text for the model and a line for the audit
//! log.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One action. The JSON form is `{"action": "<name>", …arguments}` (or the tool's name and
/// its arguments, for models with native tool calls).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// A file's text, whole or some lines of it.
    Read {
        path: String,
        #[serde(default, deserialize_with = "line_span", skip_serializing_if = "Option::is_none")]
        lines: Option<(usize, usize)>,
    },
    /// A folder's entries, or the files matching a glob.
    List {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dir: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        glob: Option<String>,
    },
    /// Lines matching a regular expression, in files the project does not ignore.
    Search {
        pattern: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        glob: Option<String>,
    },
    /// Definitions whose names are like `query` (fuzzy, case-insensitive), best first.
    Symbols {
        query: String,
    },
    /// Where a name is defined, with the definition's text.
    Definition {
        name: String,
    },
    /// Who calls a function, and who calls those, up to `depth` levels (1 to 5; 2 unless said).
    Callers {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        depth: Option<usize>,
    },
    /// The files that import a module (`pkg.models`, `src/util`).
    Importers {
        module: String,
    },
    /// The files most relevant to a question (English or Korean), with why.
    Locate {
        query: String,
    },
    /// What a change reaches: callers, importers and the tests that reach it. `names` in
    /// `path`, or without names what this run changed in `path` (or in every file).
    Impact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        names: Option<Vec<String>>,
    },
    /// A skill's instructions in full, or one of the files beside its `SKILL.md`.
    Skill {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    },
    /// SEARCH/REPLACE blocks (or a diff, or the whole new text) for one file.
    Edit {
        path: String,
        blocks: String,
    },
    /// A new file with this text.
    Create {
        path: String,
        text: String,
    },
    Delete {
        path: String,
    },
    Rename {
        from: String,
        to: String,
    },
    /// A command (an argument list, or a line split like a shell would, without its
    /// operators) in the workspace.
    Run {
        #[serde(deserialize_with = "command_line")]
        command: Vec<String>,
        /// Seconds; at most the configured timeout.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
    /// Stage the run's own changes and commit them to the project's git.
    GitCommit {
        message: String,
    },
    /// A tool of an MCP server, by the name it is offered under (`mcp__server__tool`), with
    /// its arguments as the tool's schema wants them.
    Tool {
        name: String,
        #[serde(default)]
        arguments: Value,
    },
}

/// What kind of thing an action does, for permissions and approvals (an MCP server's tool is a
/// command: a program outside Tokamak acts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Read,
    Write,
    Command,
    Commit,
}

/// A tool call's kind as editors show it (the Agent Client Protocol's `ToolKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Search,
    Edit,
    Delete,
    Move,
    Execute,
    /// An MCP server's tool.
    Other,
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Read { .. } => "read",
            Action::List { .. } => "list",
            Action::Search { .. } => "search",
            Action::Symbols { .. } => "symbols",
            Action::Definition { .. } => "definition",
            Action::Callers { .. } => "callers",
            Action::Importers { .. } => "importers",
            Action::Locate { .. } => "locate",
            Action::Impact { .. } => "impact",
            Action::Skill { .. } => "skill",
            Action::Edit { .. } => "edit",
            Action::Create { .. } => "create",
            Action::Delete { .. } => "delete",
            Action::Rename { .. } => "rename",
            Action::Run { .. } => "run",
            Action::GitCommit { .. } => "git_commit",
            Action::Tool { .. } => "tool",
        }
    }

    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Read { .. }
            | Action::List { .. }
            | Action::Search { .. }
            | Action::Symbols { .. }
            | Action::Definition { .. }
            | Action::Callers { .. }
            | Action::Importers { .. }
            | Action::Locate { .. }
            | Action::Impact { .. }
            | Action::Skill { .. } => ActionKind::Read,
            Action::Edit { .. } | Action::Create { .. } | Action::Delete { .. } | Action::Rename { .. } => {
                ActionKind::Write
            }
            Action::Run { .. } | Action::Tool { .. } => ActionKind::Command,
            Action::GitCommit { .. } => ActionKind::Commit,
        }
    }

    /// Reads an action from a tool call: `name` and its JSON arguments. The error is one
    /// sentence for the model.
    pub fn from_call(name: &str, arguments: Value) -> Result<Action, String> {
        let mut object = match arguments {
            Value::Object(object) => object,
            Value::Null => serde_json::Map::new(),
            other => return Err(format!("the arguments of {name} must be a JSON object, not {other}")),
        };
        if name.starts_with(TOOL_PREFIX) {
            return Ok(Action::Tool { name: name.to_string(), arguments: Value::Object(object) });
        }
        if !ACTION_NAMES.contains(&name) {
            return Err(format!("there is no action {name:?}; the actions are {}", ACTION_NAMES.join(", ")));
        }
        object.insert("action".to_string(), Value::String(name.to_string()));
        serde_json::from_value(Value::Object(object))
            .map_err(|err| format!("bad arguments for {name}: {err}"))
    }

    /// The arguments as the audit log shows them: long texts replaced by their size.
    /// What kind of tool call it is, as an editor shows one (ACP's kinds).
    pub fn tool_kind(&self) -> ToolKind {
        match self {
            Action::Read { .. } | Action::List { .. } | Action::Skill { .. } => ToolKind::Read,
            Action::Search { .. }
            | Action::Symbols { .. }
            | Action::Definition { .. }
            | Action::Callers { .. }
            | Action::Importers { .. }
            | Action::Locate { .. }
            | Action::Impact { .. } => ToolKind::Search,
            Action::Edit { .. } | Action::Create { .. } => ToolKind::Edit,
            Action::Delete { .. } => ToolKind::Delete,
            Action::Rename { .. } => ToolKind::Move,
            Action::Run { .. } | Action::GitCommit { .. } => ToolKind::Execute,
            Action::Tool { .. } => ToolKind::Other,
        }
    }

    /// The files it names (relative paths as the model gave them).
    pub fn paths(&self) -> Vec<&str> {
        match self {
            Action::Read { path, .. }
            | Action::Edit { path, .. }
            | Action::Create { path, .. }
            | Action::Delete { path } => vec![path.as_str()],
            Action::Rename { from, to } => vec![from.as_str(), to.as_str()],
            Action::List { dir, .. } => dir.iter().map(String::as_str).collect(),
            Action::Impact { path, .. } => path.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// One line naming it: "edit src/a.py", "run pytest -q", "search 'parse_'".
    pub fn title(&self) -> String {
        let what = match self {
            Action::Run { command, .. } => command.join(" "),
            Action::Search { pattern, .. } => format!("{pattern:?}"),
            Action::Symbols { query } | Action::Locate { query, .. } => format!("{query:?}"),
            Action::Definition { name } | Action::Callers { name, .. } => name.clone(),
            Action::Importers { module } => module.clone(),
            Action::Skill { name, file } => match file {
                Some(file) => format!("{name}/{file}"),
                None => name.clone(),
            },
            Action::GitCommit { message } => format!("{message:?}"),
            // the tool's own name says what it is
            Action::Tool { name, arguments } => {
                return format!("{name} {}", crate::text::cut(&arguments.to_string(), 80));
            }
            other => other.paths().join(" → "),
        };
        if what.is_empty() { self.name().to_string() } else { format!("{} {what}", self.name()) }
    }

    pub fn audit_arguments(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(object) = value.as_object_mut() {
            object.remove("action");
            for key in ["text", "blocks"] {
                if let Some(Value::String(text)) = object.get(key) {
                    let summary = format!("[{} bytes, {} lines]", text.len(), text.lines().count());
                    object.insert(key.to_string(), Value::String(summary));
                }
            }
            // an outside tool's arguments, as long as they are short
            if let Some(arguments) = object.get("arguments").map(Value::to_string)
                && arguments.len() > 2000
            {
                let summary = format!("[{} bytes] {}", arguments.len(), crate::text::cut(&arguments, 400));
                object.insert("arguments".to_string(), Value::String(summary));
            }
        }
        value
    }
}

/// The prefix of every MCP server's tool's name (`mcp__server__tool`): none of Tokamak's own
/// actions starts with it, so an outside tool can never shadow one (Claude Code names MCP tools
/// the same way).
pub const TOOL_PREFIX: &str = "mcp__";

/// Every action's name.
pub const ACTION_NAMES: &[&str] = &[
    "read",
    "list",
    "search",
    "symbols",
    "definition",
    "callers",
    "importers",
    "locate",
    "impact",
    "skill",
    "edit",
    "create",
    "delete",
    "rename",
    "run",
    "git_commit",
];

/// What an action gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionResult {
    /// Whether it did what was asked; a refusal or a failure is not an error of the run —
    /// the text goes back to the model.
    pub ok: bool,
    /// For the model: the content read, what changed, or why not (long output cut with a
    /// marker).
    pub text: String,
    /// One line for the audit log and progress.
    pub summary: String,
    /// Files the action changed (relative paths).
    pub changed: Vec<String>,
    /// A command's exit status (`None`: not a command, or it was killed).
    pub exit_status: Option<i32>,
    /// Each changed file's text before and after, for an editor to show the change as a diff.
    pub files: Vec<ChangedFile>,
}

/// One file's text before and after a change (`None`: the file does not exist then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl ActionResult {
    pub fn done(text: impl Into<String>, summary: impl Into<String>) -> ActionResult {
        ActionResult {
            ok: true,
            text: text.into(),
            summary: summary.into(),
            changed: Vec::new(),
            exit_status: None,
            files: Vec::new(),
        }
    }

    pub fn refused(reason: impl Into<String>) -> ActionResult {
        let reason = reason.into();
        ActionResult {
            ok: false,
            summary: reason.clone(),
            text: reason,
            changed: Vec::new(),
            exit_status: None,
            files: Vec::new(),
        }
    }

    pub fn changed(mut self, files: Vec<String>) -> ActionResult {
        self.changed = files;
        self
    }

    /// The same with each changed file's texts before and after.
    pub fn with_files(mut self, files: Vec<ChangedFile>) -> ActionResult {
        self.files = files;
        self
    }
}

/// `lines`: `"10-40"`, `"12"`, `[10, 40]` or `{"start": 10, "end": 40}` (1-based, inclusive).
fn line_span<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<(usize, usize)>, D::Error> {
    use serde::de::Error;
    let value = Option::<Value>::deserialize(deserializer)?;
    let number = |v: &Value| v.as_u64().map(|n| n as usize).or_else(|| v.as_str()?.trim().parse().ok());
    let span = match &value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => {
            let text = text.trim();
            match text.split_once(['-', ':', ',']) {
                Some((a, b)) => a.trim().parse().ok().zip(b.trim().parse().ok()),
                None => text.parse().ok().map(|n| (n, n)),
            }
        }
        Some(Value::Number(_)) => value.as_ref().and_then(number).map(|n| (n, n)),
        Some(Value::Array(items)) if items.len() == 2 => number(&items[0]).zip(number(&items[1])),
        Some(Value::Object(object)) => {
            object.get("start").and_then(number).zip(object.get("end").and_then(number))
        }
        _ => None,
    };
    match span {
        Some((start, end)) if start >= 1 && end >= start => Ok(Some((start, end))),
        _ => Err(D::Error::custom(
            "lines must be \"START-END\" (1-based, START <= END), [START, END] or {\"start\", \"end\"}",
        )),
    }
}

/// `command`: `["python", "-m", "pytest"]` or `"python -m pytest"` (split as a shell would,
/// quotes and all; pipes, redirections and `;` are not shell here and are refused).
fn command_line<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    use serde::de::Error;
    let argv = match Value::deserialize(deserializer)? {
        Value::String(line) => {
            shlex::split(&line).ok_or_else(|| D::Error::custom("the command line has an unclosed quote"))?
        }
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                other => Err(D::Error::custom(format!("command arguments must be strings, not {other}"))),
            })
            .collect::<Result<_, _>>()?,
        other => return Err(D::Error::custom(format!("command must be a string or a list, not {other}"))),
    };
    if argv.is_empty() {
        return Err(D::Error::custom("the command is empty"));
    }
    if let Some(operator) =
        argv.iter().find(|a| ["|", "||", "&&", ";", ">", ">>", "<", "&"].contains(&a.as_str()))
    {
        return Err(D::Error::custom(format!(
            "commands run without a shell, so {operator:?} does nothing; run one command per action"
        )));
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_action_is_a_tool_call_of_its_kind_with_a_title() {
        let cases = [
            (json!({"action": "read", "path": "a.py"}), ToolKind::Read, "read a.py", vec!["a.py"]),
            (json!({"action": "search", "pattern": "parse_"}), ToolKind::Search, "search \"parse_\"", vec![]),
            (json!({"action": "callers", "name": "f"}), ToolKind::Search, "callers f", vec![]),
            (
                json!({"action": "edit", "path": "a.py", "blocks": "x"}),
                ToolKind::Edit,
                "edit a.py",
                vec!["a.py"],
            ),
            (json!({"action": "delete", "path": "b.py"}), ToolKind::Delete, "delete b.py", vec!["b.py"]),
            (
                json!({"action": "rename", "from": "a.py", "to": "b.py"}),
                ToolKind::Move,
                "rename a.py → b.py",
                vec!["a.py", "b.py"],
            ),
            (
                json!({"action": "run", "command": ["pytest", "-q"]}),
                ToolKind::Execute,
                "run pytest -q",
                vec![],
            ),
            (json!({"action": "list"}), ToolKind::Read, "list", vec![]),
        ];
        for (value, kind, title, paths) in cases {
            let action: Action = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(
                (action.tool_kind(), action.title(), action.paths()),
                (kind, title.to_string(), paths),
                "{value}"
            );
        }
    }
    use serde_json::json;

    #[test]
    fn actions_read_from_tool_calls() {
        let cases: Vec<(&str, Value, Result<Action, &str>)> = vec![
            ("read", json!({"path": "a.py"}), Ok(Action::Read { path: "a.py".into(), lines: None })),
            (
                "read",
                json!({"path": "a.py", "lines": "3-9"}),
                Ok(Action::Read { path: "a.py".into(), lines: Some((3, 9)) }),
            ),
            (
                "read",
                json!({"path": "a.py", "lines": [3, 9]}),
                Ok(Action::Read { path: "a.py".into(), lines: Some((3, 9)) }),
            ),
            (
                "read",
                json!({"path": "a.py", "lines": 4}),
                Ok(Action::Read { path: "a.py".into(), lines: Some((4, 4)) }),
            ),
            ("read", json!({"path": "a.py", "lines": "9-3"}), Err("START <= END")),
            ("read", json!({}), Err("missing field `path`")),
            ("read", json!({"path": "a", "colour": 1}), Err("unknown field `colour`")),
            (
                "run",
                json!({"command": "python -m pytest -q 'tests/a b.py'"}),
                Ok(Action::Run {
                    command: vec![
                        "python".into(),
                        "-m".into(),
                        "pytest".into(),
                        "-q".into(),
                        "tests/a b.py".into(),
                    ],
                    timeout: None,
                }),
            ),
            (
                "run",
                json!({"command": ["ls"], "timeout": 5}),
                Ok(Action::Run { command: vec!["ls".into()], timeout: Some(5) }),
            ),
            ("run", json!({"command": "cat x | sh"}), Err("without a shell")),
            ("run", json!({"command": ""}), Err("empty")),
            ("run", json!({"command": "echo 'open"}), Err("unclosed quote")),
            ("fly", json!({}), Err("there is no action \"fly\"")),
            ("edit", json!("text"), Err("must be a JSON object")),
            ("git_commit", json!({"message": "m"}), Ok(Action::GitCommit { message: "m".into() })),
            (
                "mcp__rag__search",
                json!({"query": "payments"}),
                Ok(Action::Tool { name: "mcp__rag__search".into(), arguments: json!({"query": "payments"}) }),
            ),
        ];
        for (name, arguments, expected) in cases {
            let got = Action::from_call(name, arguments.clone());
            match (expected, got) {
                (Ok(action), Ok(got)) => assert_eq!(got, action, "{name} {arguments}"),
                (Err(part), Err(reason)) => assert!(reason.contains(part), "{name} {arguments}: {reason}"),
                (expected, got) => panic!("{name} {arguments}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn audit_arguments_leave_out_long_text() {
        let action = Action::Create { path: "a.py".into(), text: "x = 1\ny = 2\n".into() };
        assert_eq!(action.audit_arguments(), json!({"path": "a.py", "text": "[12 bytes, 2 lines]"}));
        assert_eq!(action.kind(), ActionKind::Write);
    }
}
