//! Running one checker on one document: started confined (`sandbox::tools`), feeding it the
//! buffer's text, a timeout, bounded output, killing its whole process group when it is
//! cancelled or too slow, and reading what it printed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::shadow::{Mirror, mirror};
use super::{Checker, Kind};

use crate::checker::{InputMode, ParseContext, excerpt};
use crate::diagnostic::Diagnostic;
use crate::workspace::DocumentSnapshot;

/// More output than this is not read: the run fails with a clear reason (32 MiB).
const MAX_STDOUT: usize = 32 * 1024 * 1024;
/// Enough of stderr to explain a failure.
const MAX_STDERR: usize = 64 * 1024;
/// After the tool exits, how long its output may take to end.
const LEFT_BEHIND_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// Most diagnostics kept from one run of one checker on one file.
const MAX_DIAGNOSTICS: usize = 5_000;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{name} timed out after {} s and was stopped", .after.as_secs_f32())]
    Timeout { name: String, after: Duration },
    #[error("cannot start {name} ({program}): {reason}")]
    Spawn { name: String, program: String, reason: std::io::Error },
    #[error("cannot prepare {name}'s input: {reason}")]
    Input { name: String, reason: std::io::Error },
    #[error("{name} failed ({status}): {detail}")]
    Failed { name: String, status: String, detail: String },
    #[error("{name} printed more than {} MiB; its output was not read", MAX_STDOUT / (1024 * 1024))]
    TooMuchOutput { name: String },
    #[error("{name}: {reason}")]
    Unreadable { name: String, reason: String },
    #[error(
        "{name} exited but left a process running that held its output open; that process was stopped and the run not used"
    )]
    LeftBehind { name: String },
    /// The project has not set the tool up (eslint without a configuration), said by the tool
    /// or known before it was started: not a failure of the tool.
    #[error("{name} is not configured for this project: {detail}")]
    NotConfigured { name: String, detail: String },
}

/// Everything a run needs besides the checker.
pub struct RunInput<'a> {
    pub program: &'a Path,
    pub snapshot: &'a DocumentSnapshot,
    /// The document's path on disk.
    pub path: &'a Path,
    /// The workspace root (the tool's working directory).
    pub root: &'a Path,
    /// The other open documents whose text is not the disk's (absolute path, text): a tool
    /// that reads other files sees these texts for them, so a check of one document
    /// resolves its imports against what the user has, not what was last saved.
    pub overlays: &'a [(PathBuf, String)],
    /// The `PATH` the tool runs with (`None`: Tokamak's own): in a project not trusted, one
    /// without its folders, so a tool's own children (pyright's `node`) are not the project's.
    pub search_path: Option<std::ffi::OsString>,
    /// How it is started: confined to its caches and a scratch folder where this machine can.
    pub confinement: &'a crate::sandbox::tools::Confinement,
}

/// Runs `checker` on the snapshot's text and returns what it found in that document.
pub async fn run(checker: &Checker, input: RunInput<'_>) -> Result<Vec<Diagnostic>, RunError> {
    let name = checker.name.clone();
    if let Some(detail) = checker.unconfigured(input.path) {
        return Err(RunError::NotConfigured { name, detail });
    }
    let text = input.snapshot.rope.to_string();
    let prepared =
        prepare(checker, &input, &text).map_err(|reason| RunError::Input { name: name.clone(), reason })?;

    let writes: Vec<PathBuf> = checker.writes.iter().map(|folder| prepared.cwd.join(folder)).collect();
    let started = input.confinement.start(input.program, &prepared.args, &prepared.cwd, &writes);
    let mut command = Command::new(&started.program);
    if let Some(env) = &started.env {
        command.env_clear().envs(env.iter().map(|(name, value)| (name, value)));
    }
    command
        .args(&started.args)
        .current_dir(&prepared.cwd)
        .stdin(if prepared.stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // the Landlock helper is asked to stop first (its group killed a moment later): a kill on
        // drop would kill it before it could kill what the checker left
        .kill_on_drop(!started.reaper)
        .process_group(0);
    if let Some(search) = &input.search_path {
        command.env("PATH", search);
    }
    let mut child = command.spawn().map_err(|reason| RunError::Spawn {
        name: name.clone(),
        program: input.program.display().to_string(),
        reason,
    })?;
    let group = if started.reaper {
        crate::process::ProcessGroup::with_reaper(child.id())
    } else {
        crate::process::ProcessGroup::new(child.id())
    };

    if let Some(mut stdin) = child.stdin.take() {
        // A tool that exits without reading all of it closes the pipe: not our error.
        tokio::spawn(async move {
            let _ = stdin.write_all(text.as_bytes()).await;
        });
    }
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // the output is read to its end while the tool runs; when the tool has exited and the
    // output still has not ended, a process it left behind holds it open
    let reading = async { tokio::join!(read_capped(stdout, MAX_STDOUT), read_capped(stderr, MAX_STDERR)) };
    tokio::pin!(reading);
    let collect = async {
        tokio::select! {
            output = &mut reading => (Some(output), child.wait().await),
            status = child.wait() => match tokio::time::timeout(LEFT_BEHIND_GRACE, &mut reading).await {
                Ok(output) => (Some(output), status),
                Err(_) => (None, status),
            },
        }
    };
    let (output, status) = match tokio::time::timeout(checker.timeout, collect).await {
        Ok(done) => done,
        Err(_) => return Err(RunError::Timeout { name, after: checker.timeout }),
    };
    let status = status.map_err(|reason| RunError::Spawn {
        name: name.clone(),
        program: input.program.display().to_string(),
        reason,
    })?;
    let Some((stdout, stderr)) = output else {
        // the leader has been waited for: its group, not its pid
        group.kill_now();
        return Err(RunError::LeftBehind { name });
    };
    group.disarm();
    let (stdout, truncated) = stdout;
    if truncated {
        return Err(RunError::TooMuchOutput { name });
    }
    let stdout = String::from_utf8_lossy(&stdout);
    // what a tool says goes to the user: without terminal colours or other control characters
    let stderr = crate::process::clean_output(&stderr.0);
    let code = status.code();
    let status_text = code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit status {c}"));
    let failed = |detail: &str| RunError::Failed {
        name: name.clone(),
        status: status_text.clone(),
        detail: if detail.is_empty() { "it printed nothing".to_string() } else { detail.to_string() },
    };
    if let Some(detail) = checker.not_configured(code, &stderr) {
        return Err(RunError::NotConfigured { name, detail });
    }
    let context = ParseContext {
        rope: &input.snapshot.rope,
        source: &checker.name,
        checked_file: &prepared.checked_file,
        cwd: &prepared.cwd,
    };
    let parsed = checker.parse(&stdout, &context);
    let normal_exit = code.is_some_and(|code| checker.reported(code));
    let mut diagnostics = match parsed {
        // mypy exits 2 on a syntax error yet reports it: what it printed is the answer
        Ok(diagnostics) if normal_exit || !diagnostics.is_empty() => diagnostics,
        Ok(_) => return Err(failed(&excerpt(if stderr.trim().is_empty() { &stdout } else { &stderr }))),
        Err(reason) if !normal_exit || !stderr.trim().is_empty() => {
            return Err(failed(&format!(
                "{reason}; it said: {}",
                excerpt(if stderr.trim().is_empty() { &stdout } else { &stderr })
            )));
        }
        Err(reason) => return Err(RunError::Unreadable { name, reason }),
    };
    if diagnostics.is_empty()
        && code.is_some_and(|c| c != 0)
        && matches!(checker.kind, Kind::Pattern { .. })
        && !stderr.trim().is_empty()
    {
        // a generic tool that failed and printed nothing we recognise has not checked anything
        return Err(failed(&excerpt(&stderr)));
    }
    diagnostics.truncate(MAX_DIAGNOSTICS);
    Ok(diagnostics)
}

struct Prepared {
    args: Vec<String>,
    cwd: PathBuf,
    stdin: bool,
    /// The path the tool is given for the document.
    checked_file: PathBuf,
    /// Kept alive for the run; removed when dropped.
    _mirror: Option<Mirror>,
    _buffers: Vec<tempfile::NamedTempFile>,
}

fn prepare(checker: &Checker, input: &RunInput<'_>, text: &str) -> std::io::Result<Prepared> {
    let root = input.root.to_path_buf();
    let project = nearest_with(input.path, &root, checker.project_markers()).unwrap_or_else(|| root.clone());
    let mut prepared = Prepared {
        args: Vec::new(),
        cwd: project.clone(),
        stdin: false,
        checked_file: input.path.to_path_buf(),
        _mirror: None,
        _buffers: Vec::new(),
    };
    let same_as_disk = checker.input != InputMode::Stdin
        && std::fs::read(input.path).ok().as_deref() == Some(text.as_bytes());
    let overlays: Vec<&(PathBuf, String)> =
        input.overlays.iter().filter(|(path, _)| path != input.path && path.starts_with(&root)).collect();
    let mut buffer_path = None;
    // mypy: one more `--shadow-file` pair for each other buffer (Python files only)
    let mut shadows: Vec<String> = Vec::new();
    let buffer = |text: &str, suffix: &str| -> std::io::Result<tempfile::NamedTempFile> {
        let mut file = tempfile::Builder::new().prefix("tokamak-buffer-").suffix(suffix).tempfile()?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        Ok(file)
    };
    match checker.input {
        InputMode::Stdin => prepared.stdin = true,
        InputMode::ShadowFile => {
            if !same_as_disk {
                let file = buffer(text, ".py")?;
                buffer_path = Some(file.path().to_path_buf());
                prepared._buffers.push(file);
            }
            for (path, other) in overlays.iter().filter(|(p, _)| is_python(p)) {
                let suffix = if path.extension().is_some_and(|e| e == "pyi") { ".pyi" } else { ".py" };
                let file = buffer(other, suffix)?;
                shadows.extend([
                    "--shadow-file".to_string(),
                    path.display().to_string(),
                    file.path().display().to_string(),
                ]);
                prepared._buffers.push(file);
            }
        }
        InputMode::Mirror if same_as_disk && overlays.is_empty() => {}
        InputMode::Mirror => {
            let others: Vec<(PathBuf, String)> =
                overlays.iter().map(|(p, t)| (p.clone(), t.clone())).collect();
            let shadow = mirror(&root, input.path, text, &others)?;
            prepared.cwd = shadow.root().join(project.strip_prefix(&root).unwrap_or(Path::new("")));
            prepared.checked_file = shadow.file.clone();
            prepared._mirror = Some(shadow);
        }
    }
    // a config file the tool's arguments name (tsc's tsconfig.json), found where the tool runs
    let config_at = |config: &str| {
        nearest_with(input.path, &root, &[config])
            .map(|dir| prepared.cwd.join(dir.strip_prefix(&project).unwrap_or(Path::new(""))).join(config))
    };
    let mut templates = checker.arg_templates(config_at, input.path, input.snapshot.language);
    if checker.input == InputMode::ShadowFile {
        if same_as_disk
            && let Some(at) = templates.windows(3).position(|w| w == ["--shadow-file", "{file}", "{buffer}"])
        {
            // the file is what it checks: no shadow of it
            templates.drain(at..at + 3);
        }
        let shadowed = !same_as_disk || !shadows.is_empty();
        templates.splice(0..0, shadows);
        if shadowed {
            // mypy's cache answers for the files on disk even with --shadow-file (mypy 2.4)
            templates.insert(0, "--no-incremental".to_string());
        }
    }
    let file = prepared.checked_file.display().to_string();
    let buffer = buffer_path.map(|p| p.display().to_string()).unwrap_or_default();
    let root_text = prepared.cwd.display().to_string();
    let values = [("{file}", file.as_str()), ("{buffer}", buffer.as_str()), ("{root}", root_text.as_str())];
    prepared.args = templates.iter().map(|arg| substitute(arg, &values)).collect();
    Ok(prepared)
}

fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py" || e == "pyi")
}

/// Replaces each placeholder in one pass, so a path that itself contains `{root}` is left
/// alone.
fn substitute(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    'scan: while !rest.is_empty() {
        for (placeholder, value) in values {
            if let Some(after) = rest.strip_prefix(placeholder) {
                out.push_str(value);
                rest = after;
                continue 'scan;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

/// The nearest folder, from the file's up to the root, that holds one of `names`.
fn nearest_with(file: &Path, root: &Path, names: &[&str]) -> Option<PathBuf> {
    if names.is_empty() {
        return None;
    }
    let mut dir = file.parent();
    while let Some(candidate) = dir {
        if names.iter().any(|name| candidate.join(name).is_file()) {
            return Some(candidate.to_path_buf());
        }
        if candidate == root || !candidate.starts_with(root) {
            return None;
        }
        dir = candidate.parent();
    }
    None
}

/// Reads at most `cap` bytes; the flag says whether there was more.
async fn read_capped(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let Some(stream) = stream else {
        return (Vec::new(), false);
    };
    let mut out = Vec::new();
    let mut limited = stream.take(cap as u64 + 1);
    let _ = limited.read_to_end(&mut out).await;
    let truncated = out.len() > cap;
    out.truncate(cap);
    if truncated {
        // keep draining so the tool is not blocked on a full pipe until the timeout
        let mut rest = limited.into_inner();
        let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    }
    (out, truncated)
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_replaced_once() {
        let values = [("{file}", "/p/{root}/a.py"), ("{buffer}", "/tmp/b"), ("{root}", "/p")];
        assert_eq!(super::substitute("--x={file} {root}", &values), "--x=/p/{root}/a.py /p");
    }
}
