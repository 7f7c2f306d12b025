//! Which MCP servers a session starts, from where: the user's settings (`[mcp.servers.NAME]`),
//! a trusted project's `.mcp.json` (Claude Code's file: `{"mcpServers": {NAME: {...}}}`, with
//! `${VAR}` and `${VAR:-default}` taken from the environment) and the front end's own (ACP's
//! `session/new`). A name given twice is the earlier source's: the front end's, the user's,
//! then the project's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::config::{AllowTools, McpServerSettings, McpSettings};

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program speaking JSON-RPC on its standard input and output.
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String> },
    /// Streamable HTTP (MCP 2025-03-26 and later).
    Http { url: String, headers: BTreeMap<String, String> },
    /// The older HTTP+SSE transport (MCP 2024-11-05).
    Sse { url: String, headers: BTreeMap<String, String> },
}

/// One server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    /// Which of its tools are called without asking.
    pub allow: AllowTools,
    /// Where it was set up, as said to the user ("the editor", "settings", ".mcp.json").
    pub source: String,
}

/// `.mcp.json`'s shape.
#[derive(Debug, Deserialize)]
struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, McpServerSettings>,
}

impl ServerSpec {
    /// A server as settings or `.mcp.json` describe it; `Err`: why it cannot be started.
    pub fn from_settings(name: &str, server: &McpServerSettings, source: &str) -> Result<ServerSpec, String> {
        let kind = server.kind.as_deref().map(str::to_ascii_lowercase);
        let transport = match (kind.as_deref(), &server.command, &server.url) {
            (None | Some("stdio"), Some(command), _) => Transport::Stdio {
                command: command.clone(),
                args: server.args.clone(),
                env: server.env.clone(),
            },
            (None | Some("http") | Some("streamable-http") | Some("streamable_http"), _, Some(url)) => {
                Transport::Http { url: url.clone(), headers: server.headers.clone() }
            }
            (Some("sse"), _, Some(url)) => {
                Transport::Sse { url: url.clone(), headers: server.headers.clone() }
            }
            (Some(other), _, _)
                if !["stdio", "http", "sse", "streamable-http", "streamable_http"].contains(&other) =>
            {
                return Err(format!(
                    "the MCP server {name} ({source}) has the type {other:?}; the types are stdio, http and sse"
                ));
            }
            _ => {
                return Err(format!(
                    "the MCP server {name} ({source}) needs a command (stdio) or a url (http, sse)"
                ));
            }
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!(
                "the MCP server {name:?} ({source}) needs a name of letters, digits, - and _ (its tools are named after it)"
            ));
        }
        Ok(ServerSpec {
            name: name.to_string(),
            transport,
            allow: server.allow.clone(),
            source: source.to_string(),
        })
    }
}

/// The servers to start for a session over `root`: `given` (the front end's), then the user's
/// settings, then — when `trusted` and `[mcp] project_servers` — the project's `.mcp.json`.
/// Also what could not be used, each as one sentence.
pub fn servers(
    settings: &McpSettings,
    root: Option<&Path>,
    trusted: bool,
    given: Vec<ServerSpec>,
) -> (Vec<ServerSpec>, Vec<String>) {
    let env = |name: &str| std::env::var(name).ok();
    let mut out = given;
    let mut problems = Vec::new();
    let add = |spec: ServerSpec, out: &mut Vec<ServerSpec>| match out.iter().find(|s| s.name == spec.name) {
        Some(first) => {
            tracing::info!(
                "the MCP server {} of {} is given by {} already",
                spec.name,
                spec.source,
                first.source
            )
        }
        None => out.push(spec),
    };
    for (name, server) in settings.servers.iter().filter(|(_, s)| s.enabled) {
        match ServerSpec::from_settings(name, server, "settings") {
            Ok(spec) => add(spec, &mut out),
            Err(problem) => problems.push(problem),
        }
    }
    let file = root.map(|r| r.join(".mcp.json")).filter(|f| f.is_file());
    if let Some(file) = file.filter(|_| trusted && settings.project_servers) {
        match read_project_file(&file, &env) {
            Ok(servers) => {
                for (name, server) in servers.iter().filter(|(_, s)| s.enabled) {
                    match ServerSpec::from_settings(name, server, ".mcp.json") {
                        Ok(spec) => add(spec, &mut out),
                        Err(problem) => problems.push(problem),
                    }
                }
            }
            Err(problem) => problems.push(problem),
        }
    }
    // `[mcp] allow` names servers and tools as Claude Code's permissions do
    for spec in &mut out {
        let server = format!("{}{}", crate::toolbox::PREFIX, spec.name);
        if settings.allow.contains(&server) {
            spec.allow = AllowTools::All(true);
            continue;
        }
        let tools: Vec<String> = settings
            .allow
            .iter()
            .filter_map(|a| a.strip_prefix(&format!("{server}__")))
            .map(str::to_string)
            .collect();
        if !tools.is_empty() {
            spec.allow = match std::mem::replace(&mut spec.allow, AllowTools::All(false)) {
                AllowTools::All(true) => AllowTools::All(true),
                AllowTools::All(false) => AllowTools::Only(tools),
                AllowTools::Only(mut some) => {
                    some.extend(tools);
                    AllowTools::Only(some)
                }
            };
        }
    }
    (out, problems)
}

/// A project's `.mcp.json`, its `${VAR}`s expanded; `Err`: why it cannot be read.
fn read_project_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, McpServerSettings>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|err| format!("{shown}: {err}"))?;
    let mut value: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| format!("{shown} is not JSON: {err}"))?;
    expand_value(&mut value, env);
    let file: ProjectFile = serde_path_to_error::deserialize(value)
        .map_err(|err| format!("{shown}: {} at {}", err.inner(), err.path()))?;
    Ok(file.servers)
}

/// Every string in `value` with its `${VAR}` and `${VAR:-default}` expanded.
fn expand_value(value: &mut serde_json::Value, env: &dyn Fn(&str) -> Option<String>) {
    match value {
        serde_json::Value::String(text) => *text = expand(text, env),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| expand_value(v, env)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| expand_value(v, env)),
        _ => {}
    }
}

/// `text` with `${VAR}` (empty when unset) and `${VAR:-default}` expanded, as Claude Code
/// expands `.mcp.json`.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inside = &after[..end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        let value = env(name).filter(|v| !v.is_empty()).or(default.map(str::to_string)).unwrap_or_default();
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether the project has a `.mcp.json` (said when an untrusted folder's is not used).
pub fn has_project_file(root: &Path) -> bool {
    root.join(".mcp.json").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_come_from_the_front_end_the_settings_and_a_trusted_projects_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {
                "rag": {"command": "python3", "args": ["rag.py", "${RAG_INDEX:-./index}"], "env": {"TOKEN": "${RAG_TOKEN}"}},
                "docs": {"type": "http", "url": "http://127.0.0.1:${DOCS_PORT}/mcp", "headers": {"Authorization": "Bearer ${DOCS_KEY}"}},
                "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                "mine": {"command": "shadowed"},
                "bad": {"type": "carrier-pigeon", "url": "x"}
            }}"#,
        )
        .unwrap();
        let mut settings = McpSettings::default();
        settings.servers.insert(
            "mine".into(),
            McpServerSettings {
                command: Some("my-server".into()),
                allow: AllowTools::All(true),
                ..Default::default()
            },
        );
        settings.allow = vec!["mcp__rag__search".into(), "mcp__docs".into()];
        settings.servers.insert(
            "off".into(),
            McpServerSettings { command: Some("x".into()), enabled: false, ..Default::default() },
        );
        let given = ServerSpec::from_settings(
            "editor",
            &McpServerSettings { url: Some("http://127.0.0.1:1/mcp".into()), ..Default::default() },
            "the editor",
        )
        .unwrap();
        let env = |name: &str| match name {
            "RAG_TOKEN" => Some("t0k".to_string()),
            "DOCS_PORT" => Some("8123".to_string()),
            _ => None,
        };
        assert_eq!(expand("a ${RAG_TOKEN} ${NOPE:-d} ${DOCS_KEY}.", &env), "a t0k d .");
        assert_eq!(expand("${unclosed", &env), "${unclosed");

        let (specs, problems) = servers(&settings, Some(dir.path()), true, vec![given]);
        let names: Vec<(&str, &str)> = specs.iter().map(|s| (s.name.as_str(), s.source.as_str())).collect();
        assert_eq!(
            names,
            [
                ("editor", "the editor"),
                ("mine", "settings"),
                ("docs", ".mcp.json"),
                ("old", ".mcp.json"),
                ("rag", ".mcp.json")
            ]
        );
        assert!(matches!(&specs[3].transport, Transport::Sse { url, .. } if url == "http://127.0.0.1:9/sse"));
        assert!(specs[1].allow.allows("anything") && !specs[4].allow.allows("anything"));
        assert!(specs[4].allow.allows("search") && specs[2].allow.allows("anything"), "[mcp] allow");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("carrier-pigeon"), "{problems:?}");

        let (untrusted, _) = servers(&settings, Some(dir.path()), false, Vec::new());
        assert_eq!(
            untrusted.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["mine"],
            "the user's own only"
        );
    }
}
