//! Tokamak as an MCP client (`rmcp`, the official SDK): the servers of a session — from the
//! front end (ACP's `session/new`), the user's settings and a trusted project's `.mcp.json`
//! (`servers.rs`) — started over stdio, streamable HTTP or the older SSE (`sse.rs`), their
//! tools offered to the model as `mcp__<server>__<tool>` through the [`Toolbox`] trait the
//! executor calls. Each server starts in the background within `[mcp] startup_timeout_s`; one
//! that fails to start or stops is said once and its tools withdrawn; a call is bounded by
//! its timeout and never waits on a server that is gone.

mod servers;
mod sse;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

pub use servers::{ServerSpec, Transport, expand, has_project_file, servers};

use crate::sync::lock;
use crate::toolbox::{OutsideResult, OutsideTool, PREFIX, Toolbox};

/// Characters of a tool's name providers accept.
const MAX_NAME: usize = 64;
/// Lines of a stdio server's stderr kept to say why it stopped.
const STDERR_LINES: usize = 8;

type Client = RunningService<RoleClient, ClientConfig>;

/// Where one server is.
enum State {
    Starting,
    Ready {
        client: Arc<Client>,
        tools: Vec<OutsideTool>,
    },
    /// It could not start, or it stopped: why.
    Down(String),
}

struct Server {
    spec: ServerSpec,
    state: State,
    /// The last lines its program wrote to stderr.
    stderr: Arc<Mutex<Vec<String>>>,
}

/// The MCP servers of one session.
pub struct McpHub {
    servers: Mutex<Vec<Server>>,
    news: Mutex<Vec<String>>,
    /// How many servers are still starting.
    starting: tokio::sync::watch::Sender<usize>,
}

impl McpHub {
    /// Starts `specs` in the background (on the current Tokio runtime), each within
    /// `startup`. `None` without servers.
    pub fn start(specs: Vec<ServerSpec>, startup: Duration) -> Option<Arc<McpHub>> {
        if specs.is_empty() {
            return None;
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (starting, _) = tokio::sync::watch::channel(specs.len());
        let hub = Arc::new(McpHub {
            servers: Mutex::new(
                specs
                    .iter()
                    .map(|spec| Server { spec: spec.clone(), state: State::Starting, stderr: Arc::default() })
                    .collect(),
            ),
            news: Mutex::new(Vec::new()),
            starting,
        });
        for spec in specs {
            let hub = Arc::clone(&hub);
            runtime.spawn(async move {
                let stderr = hub.stderr_of(&spec.name);
                let started = tokio::time::timeout(startup, connect(&spec, stderr, startup)).await;
                let state = match started {
                    Ok(Ok(client)) => match client.list_all_tools().await {
                        Ok(tools) => {
                            let offered = tools.iter().map(|tool| offered(&spec, tool)).collect();
                            tracing::info!(
                                "the MCP server {} ({}) offers {} tools",
                                spec.name,
                                spec.source,
                                tools.len()
                            );
                            State::Ready { client: Arc::new(client), tools: offered }
                        }
                        Err(err) => State::Down(format!("it did not list its tools: {err}")),
                    },
                    Ok(Err(reason)) => State::Down(reason),
                    Err(_) => State::Down(format!("it did not start within {} s", startup.as_secs())),
                };
                hub.settle(&spec.name, state);
            });
        }
        Some(hub)
    }

    fn stderr_of(&self, name: &str) -> Arc<Mutex<Vec<String>>> {
        lock(&self.servers)
            .iter()
            .find(|s| s.spec.name == name)
            .map(|s| Arc::clone(&s.stderr))
            .unwrap_or_default()
    }

    /// A server that was starting is ready or down.
    fn settle(&self, name: &str, state: State) {
        let mut servers = lock(&self.servers);
        let Some(server) = servers.iter_mut().find(|s| s.spec.name == name) else { return };
        if let State::Down(reason) = &state {
            let said = last_words(&server.stderr);
            lock(&self.news).push(format!(
                "the MCP server {name} ({}) could not be started: {reason}{said}; its tools are not offered",
                server.spec.source
            ));
        }
        server.state = state;
        drop(servers);
        self.starting.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// A ready server found stopped: its tools are withdrawn and that is said once.
    fn went_down(&self, name: &str, why: &str) {
        let mut servers = lock(&self.servers);
        let Some(server) = servers.iter_mut().find(|s| s.spec.name == name) else { return };
        if !matches!(server.state, State::Ready { .. }) {
            return;
        }
        let said = last_words(&server.stderr);
        lock(&self.news).push(format!(
            "the MCP server {name} ({}) stopped ({why}{said}); its tools are withdrawn",
            server.spec.source
        ));
        server.state = State::Down(why.to_string());
    }

    /// The servers by name with where each is: "ready (3 tools)", "starting", "down: why".
    pub fn status(&self) -> Vec<(String, String)> {
        lock(&self.servers)
            .iter()
            .map(|s| {
                let state = match &s.state {
                    State::Starting => "starting".to_string(),
                    State::Ready { tools, .. } => format!("ready ({} tools)", tools.len()),
                    State::Down(why) => format!("down: {why}"),
                };
                (s.spec.name.clone(), state)
            })
            .collect()
    }
}

#[async_trait]
impl Toolbox for McpHub {
    fn tools(&self) -> Vec<OutsideTool> {
        // a server whose connection closed since is gone before its tools are offered again
        let closed: Vec<String> = lock(&self.servers)
            .iter()
            .filter_map(|s| match &s.state {
                State::Ready { client, .. } if client.is_closed() => Some(s.spec.name.clone()),
                _ => None,
            })
            .collect();
        for name in closed {
            self.went_down(&name, "its connection closed");
        }
        lock(&self.servers)
            .iter()
            .flat_map(|s| match &s.state {
                State::Ready { tools, .. } => tools.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    async fn ready(&self, within: Duration) {
        let mut starting = self.starting.subscribe();
        let _ = tokio::time::timeout(within, starting.wait_for(|n| *n == 0)).await;
    }

    async fn call(&self, name: &str, arguments: Value, timeout: Duration) -> Result<OutsideResult, String> {
        let found = lock(&self.servers).iter().find_map(|s| match &s.state {
            State::Ready { client, tools } => {
                tools.iter().find(|t| t.name == name).map(|t| (Arc::clone(client), t.clone()))
            }
            _ => None,
        });
        let Some((client, tool)) = found else {
            return Err(format!("there is no MCP tool {name} now"));
        };
        let arguments = match arguments {
            Value::Object(object) => object,
            Value::Null => serde_json::Map::new(),
            other => return Err(format!("the arguments of {name} must be a JSON object, not {other}")),
        };
        let params = CallToolRequestParams::new(tool.tool.clone()).with_arguments(arguments);
        match tokio::time::timeout(timeout, client.call_tool(params)).await {
            Err(_) => {
                Err(format!("{name} gave no answer within {} s (mcp.call_timeout_s)", timeout.as_secs()))
            }
            Ok(Err(err)) => {
                // a server that died mid-call: its connection is seen closed a moment later
                let closed = matches!(err, rmcp::ServiceError::TransportClosed) || {
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
                    while !client.is_closed() && tokio::time::Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    client.is_closed()
                };
                if closed {
                    self.went_down(&tool.server, &err.to_string());
                    Err(format!("the MCP server {} stopped during the call of {name}: {err}", tool.server))
                } else {
                    Err(format!("{name} failed: {err}"))
                }
            }
            Ok(Ok(result)) => {
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                let failed = value.get("isError").and_then(Value::as_bool).unwrap_or(false);
                Ok(OutsideResult { ok: !failed, text: result_text(&value) })
            }
        }
    }

    fn news(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.news))
    }
}

/// Connects to a server as its spec says.
async fn connect(
    spec: &ServerSpec,
    stderr: Arc<Mutex<Vec<String>>>,
    within: Duration,
) -> Result<Client, String> {
    let info = client_info();
    match &spec.transport {
        Transport::Stdio { command, args, env } => {
            let mut program = tokio::process::Command::new(command);
            program.args(args).envs(env).stdin(std::process::Stdio::piped());
            let (transport, err) = rmcp::transport::TokioChildProcess::builder(program)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|err| format!("`{command}` could not be started: {err}"))?;
            if let Some(err) = err {
                tokio::spawn(keep_stderr(err, stderr));
            }
            info.serve(transport).await.map_err(|err| format!("it did not answer initialize: {err}"))
        }
        Transport::Http { url, headers } => {
            let config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                )
                .custom_headers(
                    header_map(headers)?.into_iter().filter_map(|(k, v)| Some((k?, v))).collect(),
                );
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(http()?, config);
            info.serve(transport).await.map_err(|err| format!("{url} did not answer initialize: {err}"))
        }
        Transport::Sse { url, headers } => {
            let transport = sse::SseTransport::connect(http()?, url, headers, within).await?;
            info.serve(transport).await.map_err(|err| format!("{url} did not answer initialize: {err}"))
        }
    }
}

/// Tokamak as it introduces itself to a server.
fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("tokamak", env!("CARGO_PKG_VERSION")),
    )
}

/// The HTTP client MCP servers are reached with.
fn http() -> Result<reqwest::Client, String> {
    crate::model::tls_ready();
    reqwest::Client::builder().build().map_err(|err| format!("no HTTP client: {err}"))
}

/// Headers from settings; `Err`: one that is not a header.
fn header_map(headers: &BTreeMap<String, String>) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|err| format!("{name:?} is not a header name: {err}"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|err| format!("the header {name} has a value that cannot be sent: {err}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Keeps the last lines a server's program writes to stderr.
async fn keep_stderr(err: tokio::process::ChildStderr, kept: Arc<Mutex<Vec<String>>>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!("mcp server: {line}");
        let mut kept = lock(&kept);
        kept.push(crate::text::cut(&line, 300));
        let excess = kept.len().saturating_sub(STDERR_LINES);
        kept.drain(..excess);
    }
}

/// What a server's program said last, for the sentence saying it stopped.
fn last_words(stderr: &Mutex<Vec<String>>) -> String {
    let lines = lock(stderr);
    match lines.last() {
        Some(line) => format!("; it said: {line}"),
        None => String::new(),
    }
}

/// A server's tool as the model is offered it.
fn offered(spec: &ServerSpec, tool: &rmcp::model::Tool) -> OutsideTool {
    let name = tool.name.to_string();
    OutsideTool {
        name: tool_name(&spec.name, &name),
        server: spec.name.clone(),
        description: tool.description.as_deref().unwrap_or(&name).to_string(),
        schema: Value::Object((*tool.input_schema).clone()),
        allowed: spec.allow.allows(&name),
        tool: name,
    }
}

/// `mcp__<server>__<tool>`, each part in the characters providers accept, at most 64 of them
/// (a longer one keeps its start and a hash of the whole).
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
    };
    let name = format!("{PREFIX}{}__{}", clean(server), clean(tool));
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = &crate::places::sha256_hex(name.as_bytes())[..8];
    format!("{}_{hash}", &name[..MAX_NAME - 9])
}

/// A tool's result as text for the model: its text content, what else it holds named, and its
/// structured content when it gave no text.
fn result_text(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let part = match block.get("type").and_then(Value::as_str) {
            Some("text") => block.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
            Some("image") | Some("audio") => format!(
                "[{} {}, {} bytes of base64]",
                block["type"].as_str().unwrap_or_default(),
                block.get("mimeType").and_then(Value::as_str).unwrap_or("?"),
                block.get("data").and_then(Value::as_str).map_or(0, str::len)
            ),
            Some("resource") => {
                let resource = &block["resource"];
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => format!("{}:\n{text}", resource["uri"].as_str().unwrap_or("resource")),
                    None => format!("[resource {}]", resource["uri"].as_str().unwrap_or("?")),
                }
            }
            Some("resource_link") => format!("[link {}]", block["uri"].as_str().unwrap_or("?")),
            _ => block.to_string(),
        };
        parts.push(part);
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_are_named_after_their_server_within_64_characters() {
        assert_eq!(tool_name("rag", "search"), "mcp__rag__search");
        assert_eq!(tool_name("my docs", "find.page"), "mcp__my_docs__find_page");
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        assert_ne!(long, tool_name("server", &"x".repeat(101)), "the hash tells them apart");
    }

    #[test]
    fn results_are_text_for_the_model() {
        let result = json!({"content": [
            {"type": "text", "text": "found 2"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a.md", "text": "# A"}}
        ], "isError": false});
        assert_eq!(result_text(&result), "found 2\n[image image/png, 4 bytes of base64]\nfile:///a.md:\n# A");
        assert_eq!(result_text(&json!({"content": [], "structuredContent": {"n": 2}})), "{\"n\":2}");
    }
}
