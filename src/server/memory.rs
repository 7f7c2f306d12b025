//! How much memory the language server holds on a real workspace (`tokamak bench memory
//! DIR`): the server started on DIR, its index built, then documents of some ten thousand
//! lines opened (made of DIR's own source files, so they are real code), resident memory read
//! after each stage — as a user with a large project and many big files open would have it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::latency::LatencyError;
use super::lean_client::Server;

/// What to open.
#[derive(Debug, Clone)]
pub struct MemoryOptions {
    /// Documents opened.
    pub open: usize,
    /// Lines in each, at least.
    pub lines: usize,
    /// How long the index's build may take.
    pub timeout: Duration,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        MemoryOptions { open: 20, lines: 10_000, timeout: Duration::from_secs(600) }
    }
}

/// The server's memory at each stage, in MiB.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryFigures {
    pub server: String,
    pub root: PathBuf,
    /// Files in the index, and how long it took to build (from the cache, when it had one).
    pub files_indexed: u64,
    pub index_build_ms: u64,
    pub open_documents: usize,
    pub lines_each: usize,
    pub started_mib: Option<f64>,
    pub indexed_mib: Option<f64>,
    pub opened_mib: Option<f64>,
    pub peak_mib: Option<f64>,
}

/// Starts `command` on `root` and measures it (see the module's comment).
pub fn measure_memory(
    command: &[String],
    root: &Path,
    options: &MemoryOptions,
) -> Result<MemoryFigures, LatencyError> {
    let root = std::fs::canonicalize(root)
        .map_err(|source| LatencyError::Read { path: root.to_path_buf(), source })?;
    let documents = documents(&root, options.open, options.lines);
    if documents.is_empty() {
        return Err(LatencyError::NoSources { root });
    }
    let uri = |path: &Path| url::Url::from_file_path(path).map_or_else(|()| String::new(), String::from);
    let root_uri = url::Url::from_directory_path(&root).map_or_else(|()| String::new(), String::from);
    let mut server = Server::start(command, &root, Duration::from_secs(60))?;
    server.request(
        "initialize",
        json!({
            "processId": std::process::id(),
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "bench"}],
            "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": true}}},
        }),
    )?;
    server.notify("initialized", json!({}))?;
    let started_mib = server.memory().0;

    // the index, built (or read from its cache) in the background
    let deadline = Instant::now() + options.timeout;
    let index = loop {
        let status = status(&mut server)?;
        let index = &status["context"]["index"];
        if !index.is_null() {
            break index.clone();
        }
        if Instant::now() > deadline {
            return Err(LatencyError::Silent {
                command: command.join(" "),
                what: "finish indexing".to_string(),
                seconds: options.timeout.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let indexed_mib = server.memory().0;

    // the documents, open and parsed, and the index told of them
    for (n, (path, text)) in documents.iter().enumerate() {
        let uri = uri(path);
        server.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        )?;
        server.diagnostics(&uri, 1)?;
        tracing::debug!("opened document {n}");
    }
    let parsed = Instant::now() + options.timeout;
    while Instant::now() < parsed {
        let status = status(&mut server)?;
        let counts = status["parses"].as_array().cloned().unwrap_or_default();
        if counts.len() >= documents.len() && counts.iter().all(|c| c["parses"].as_u64().unwrap_or(0) > 0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let query = json!({"command": "tokamak.context", "arguments": [{"query": "parse the arguments"}]});
    server.request("workspace/executeCommand", query)?;
    let (opened_mib, peak_mib) = server.memory();
    server.stop();
    Ok(MemoryFigures {
        server: command.join(" "),
        root,
        files_indexed: index["files"].as_u64().unwrap_or(0),
        index_build_ms: index["buildMs"].as_u64().unwrap_or(0),
        open_documents: documents.len(),
        lines_each: options.lines,
        started_mib,
        indexed_mib,
        opened_mib,
        peak_mib,
    })
}

fn status(server: &mut Server) -> Result<Value, LatencyError> {
    let answer = server
        .request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": [{}]}))?;
    Ok(answer["result"].clone())
}

/// `count` documents of at least `lines` lines each, each made of the root's Python files
/// one after another from a different starting file, named as new files in the root.
fn documents(root: &Path, count: usize, lines: usize) -> Vec<(PathBuf, String)> {
    let files: Vec<PathBuf> =
        crate::walk::project(root).files().filter(|p| p.extension().is_some_and(|x| x == "py")).collect();
    let texts: Vec<String> = files.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    if texts.is_empty() {
        return Vec::new();
    }
    (0..count)
        .map(|n| {
            let mut text = String::new();
            let mut next = n * texts.len() / count.max(1);
            let mut taken = 0;
            while text.lines().count() < lines && taken < texts.len() {
                text.push_str(&texts[next % texts.len()]);
                text.push('\n');
                next += 1;
                taken += 1;
            }
            (root.join(format!("tokamak-memory-{n}.py")), text)
        })
        .collect()
}

/// The figures for a person.
pub fn table(figures: &MemoryFigures) -> String {
    let mib = |value: Option<f64>| value.map_or_else(|| "?".to_string(), |v| format!("{v:.1} MiB"));
    format!(
        "{}\n  {} files indexed in {} ms\n  resident: {} started, {} indexed, {} with {} documents of {} lines open (peak {})\n",
        figures.server,
        figures.files_indexed,
        figures.index_build_ms,
        mib(figures.started_mib),
        mib(figures.indexed_mib),
        mib(figures.opened_mib),
        figures.open_documents,
        figures.lines_each,
        mib(figures.peak_mib),
    )
}
