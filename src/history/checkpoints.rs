//! Checkpoints (SPEC K1, K2): a shadow git repository outside the project (under its cache
//! folder) with the project as its work tree, driven with the `git` command. The project's
//! own `.git` is never read or written: every call names the shadow `--git-dir`, ignores the
//! environment's `GIT_*` variables and the system and global git settings, and runs no hooks.
//!
//! A snapshot holds every file of the project that `.gitignore` keeps, except nested
//! repositories, symbolic links, binary files and files over the size limit; the text of
//! open documents replaces what is on disk (what the user sees is what is saved). Each run
//! that edits gets two commits — before and after — under `refs/tokamak/<run_id>/`, with the
//! run's id, goal, time and changed files in the commit message.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

/// How many bytes of a file are looked at to tell binary from text (as git does).
const BINARY_PROBE: usize = 8000;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoints need git, which was not found ({0}); install git to make runs undoable")]
    GitMissing(String),
    #[error("git {command} failed: {detail}")]
    Git { command: String, detail: String },
    #[error("cannot prepare checkpoints in {}: {reason}", path.display())]
    Io { path: PathBuf, reason: std::io::Error },
    #[error("no checkpoint {0}; `tokamak checkpoints` lists them")]
    NotFound(String),
    #[error("checkpoint {0} is not complete (its run did not finish), so there is nothing to roll back")]
    Incomplete(String),
}

/// Before or after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Before,
    After,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::Before => "before",
            Stage::After => "after",
        }
    }
}

/// Text that replaces a file's content in a snapshot (an open document's buffer).
#[derive(Debug, Clone)]
pub struct Overlay {
    /// Relative to the project root, `/`-separated.
    pub relative: String,
    pub text: String,
}

/// What a commit's message carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Meta {
    run_id: String,
    goal: String,
    stage: Stage,
    /// Milliseconds since the epoch (runs of one second stay in order).
    time_ms: u64,
    #[serde(default)]
    files: Vec<String>,
}

/// One run's checkpoint, as `tokamak.checkpoints` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointInfo {
    /// The first 12 hex digits of the "before" commit.
    pub id: String,
    pub run_id: String,
    /// When the run began (RFC 3339, UTC).
    pub time: String,
    #[serde(skip)]
    pub millis: u64,
    pub goal: String,
    /// Files the run changed (empty until it finished).
    pub files: Vec<String>,
    /// The run finished and its "after" checkpoint was taken.
    pub complete: bool,
}

/// A file a run changed: its content before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub relative: String,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// The shadow repository of one project.
pub struct Checkpoints {
    git_dir: PathBuf,
    root: PathBuf,
    /// Tokamak's own git and the `PATH` it runs with: never a program inside the project (a
    /// cloned repository's `bin/git` on a `PATH` that leads into it).
    git: PathBuf,
    search_path: Option<std::ffi::OsString>,
    max_file_bytes: u64,
    /// One git operation on the index at a time; the classification of files by (size,
    /// modification time), so unchanged files are not read again.
    state: tokio::sync::Mutex<HashMap<PathBuf, (u64, SystemTime, bool)>>,
}

impl Checkpoints {
    /// Opens (creating it the first time) the shadow repository in `dir` for `root`.
    pub async fn open(root: &Path, dir: &Path, max_file_bytes: u64) -> Result<Checkpoints, CheckpointError> {
        let root = std::fs::canonicalize(root)
            .map_err(|reason| CheckpointError::Io { path: root.to_path_buf(), reason })?;
        let git_dir = dir.join("checkpoints.git");
        let search_path = crate::process::path_outside(&root);
        let git = search_path
            .as_ref()
            .and_then(|search| which::which_in("git", Some(search), &root).ok())
            .unwrap_or_else(|| PathBuf::from("git"));
        let checkpoints = Checkpoints {
            git_dir: git_dir.clone(),
            root,
            git,
            search_path,
            max_file_bytes,
            state: tokio::sync::Mutex::new(HashMap::new()),
        };
        if !git_dir.join("HEAD").is_file() {
            std::fs::create_dir_all(&git_dir)
                .map_err(|reason| CheckpointError::Io { path: git_dir.clone(), reason })?;
            checkpoints.git(&["init", "--quiet"], None).await?;
            checkpoints.git(&["config", "core.bare", "false"], None).await?;
            tracing::info!("checkpoints for {} in {}", checkpoints.root.display(), git_dir.display());
        }
        Ok(checkpoints)
    }

    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// Runs git on the shadow repository and returns its stdout.
    async fn git(&self, args: &[&str], stdin: Option<Vec<u8>>) -> Result<Vec<u8>, CheckpointError> {
        self.git_with(args, stdin, &[]).await
    }

    async fn git_with(
        &self,
        args: &[&str],
        stdin: Option<Vec<u8>>,
        env: &[(&str, &Path)],
    ) -> Result<Vec<u8>, CheckpointError> {
        let mut command = tokio::process::Command::new(&self.git);
        if let Some(search) = &self.search_path {
            command.env("PATH", search);
        }
        command
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.root)
            .arg("--literal-pathspecs");
        for setting in [
            "core.autocrlf=false",
            "core.safecrlf=false",
            "core.fsmonitor=false",
            "core.hooksPath=/dev/null",
            "core.quotePath=false",
            "core.symlinks=true",
            "gc.auto=0",
            "commit.gpgSign=false",
            "user.name=Tokamak",
            "user.email=tokamak@localhost",
        ] {
            command.arg("-c").arg(setting);
        }
        command.args(args).current_dir(&self.root);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(name);
            }
        }
        command
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().map_err(|err| CheckpointError::GitMissing(err.to_string()))?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            tokio::spawn(async move {
                let _ = pipe.write_all(&input).await;
            });
        }
        let output = child.wait_with_output().await.map_err(|err| CheckpointError::Git {
            command: args.first().copied().unwrap_or_default().to_string(),
            detail: err.to_string(),
        })?;
        if !output.status.success() {
            return Err(CheckpointError::Git {
                command: args.join(" "),
                detail: String::from_utf8_lossy(&output.stderr).trim().chars().take(400).collect(),
            });
        }
        Ok(output.stdout)
    }

    /// The files a snapshot holds, relative and sorted.
    fn files(&self, known: &mut HashMap<PathBuf, (u64, SystemTime, bool)>) -> Vec<String> {
        let walker = self.walk(|_| true);
        let mut seen = HashSet::new();
        let mut files = Vec::new();
        for entry in walker {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(metadata) = entry.metadata() else { continue };
            let (len, modified) = (metadata.len(), metadata.modified().unwrap_or(UNIX_EPOCH));
            let path = entry.into_path();
            let keep = match known.get(&path) {
                Some(&(l, m, keep)) if l == len && m == modified => keep,
                _ => {
                    let keep = len <= self.max_file_bytes && !looks_binary(&path);
                    known.insert(path.clone(), (len, modified, keep));
                    keep
                }
            };
            seen.insert(path.clone());
            if keep && let Ok(relative) = path.strip_prefix(&self.root) {
                files.push(relative.to_string_lossy().to_string());
            }
        }
        known.retain(|path, _| seen.contains(path));
        files.sort();
        files
    }

    /// The walk a snapshot lists its files by — the project's ignore files respected, `.git`
    /// and nested repositories (their files belong to them) left out — going only where
    /// `within` says of each path (a folder to go down, a file to yield).
    fn walk(
        &self,
        within: impl Fn(&Path) -> bool + Send + Sync + 'static,
    ) -> impl Iterator<Item = crate::walk::DirEntry> {
        let root = self.root.clone();
        crate::walk::project(&self.root)
            .with_hidden()
            .keeping(move |entry| {
                if !entry.file_type().is_some_and(|t| t.is_dir()) {
                    return within(entry.path());
                }
                within(entry.path()) && (entry.path() == root || !entry.path().join(".git").exists())
            })
            .entries()
    }

    /// Whether a checkpoint can hold this file (text, under the size limit, and one a snapshot
    /// lists: not ignored by the project's `.gitignore`, not inside a repository of its own):
    /// only such files may be deleted or renamed by an action, since only they can be
    /// restored.
    pub fn can_hold(&self, path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= self.max_file_bytes)
            && !looks_binary(path)
            && self.listed(path)
    }

    /// Whether a snapshot lists `path`: the walk of [`Checkpoints::files`], going down only
    /// the folders on the way to it.
    fn listed(&self, path: &Path) -> bool {
        let Ok(path) = std::fs::canonicalize(path) else { return false };
        if !path.starts_with(&self.root) {
            return false;
        }
        let wanted = path.clone();
        self.walk(move |entry| wanted.starts_with(entry))
            .any(|entry| entry.path() == path && entry.file_type().is_some_and(|t| t.is_file()))
    }

    /// Writes the project's current state (with `overlays` over the disk) as a tree; returns
    /// its id.
    async fn snapshot(&self, overlays: &[Overlay]) -> Result<String, CheckpointError> {
        let mut known = self.state.lock().await;
        let files = self.files(&mut known);
        let listed: HashSet<&str> = files.iter().map(String::as_str).collect();
        let indexed = self.git(&["ls-files", "-z"], None).await?;
        let stale: Vec<&str> = split_nul(&indexed).filter(|path| !listed.contains(path)).collect();
        // `update-index` takes paths literally and trusts the index's stat data for files that
        // did not change (`git add` with thousands of pathspecs spends ~200 ms matching them)
        if !stale.is_empty() {
            let input = nul_joined(stale.iter().copied());
            self.git(&["update-index", "--force-remove", "-z", "--stdin"], Some(input)).await?;
        }
        if !files.is_empty() {
            let input = nul_joined(files.iter().map(String::as_str));
            self.git(&["update-index", "--add", "--remove", "-z", "--stdin"], Some(input)).await?;
        }
        let mut entries = String::new();
        for overlay in overlays {
            let on_disk = std::fs::read(self.root.join(&overlay.relative)).ok();
            if on_disk.as_deref() == Some(overlay.text.as_bytes()) {
                continue;
            }
            let sha =
                self.git(&["hash-object", "-w", "--stdin"], Some(overlay.text.clone().into_bytes())).await?;
            let sha = String::from_utf8_lossy(&sha).trim().to_string();
            let mode = if is_executable(&self.root.join(&overlay.relative)) { "100755" } else { "100644" };
            entries.push_str(&format!("{mode} {sha}\t{}\n", overlay.relative));
        }
        if !entries.is_empty() {
            self.git(&["update-index", "--add", "--index-info"], Some(entries.into_bytes())).await?;
        }
        let tree = self.git(&["write-tree"], None).await?;
        Ok(String::from_utf8_lossy(&tree).trim().to_string())
    }

    /// Takes a checkpoint of `stage` for a run; returns the commit. The "after" checkpoint
    /// records the files changed since "before".
    pub async fn record(
        &self,
        run_id: &str,
        goal: &str,
        stage: Stage,
        overlays: &[Overlay],
    ) -> Result<String, CheckpointError> {
        let tree = self.snapshot(overlays).await?;
        let before = match stage {
            Stage::Before => None,
            Stage::After => Some(self.resolve_ref(&run_ref(run_id, Stage::Before)).await?),
        };
        let mut files = Vec::new();
        let mut time_ms = now_millis();
        if let Some(before) = &before {
            let out = self
                .git(&["diff-tree", "-r", "-z", "--name-only", "--no-renames", before, &tree], None)
                .await?;
            files = split_nul(&out).map(str::to_string).collect();
            if let Some(meta) = self.meta(before).await? {
                time_ms = meta.time_ms;
            }
        }
        let meta = Meta { run_id: run_id.to_string(), goal: one_line(goal), stage, time_ms, files };
        let message = format!(
            "tokamak {} {run_id}\n\n{}\n",
            stage.as_str(),
            serde_json::to_string(&meta).unwrap_or_default()
        );
        let mut args = vec!["commit-tree", tree.as_str()];
        if let Some(before) = &before {
            args.extend(["-p", before.as_str()]);
        }
        args.extend(["-F", "-"]);
        let commit = self.git(&args, Some(message.into_bytes())).await?;
        let commit = String::from_utf8_lossy(&commit).trim().to_string();
        self.git(&["update-ref", &run_ref(run_id, stage), &commit], None).await?;
        Ok(commit)
    }

    async fn resolve_ref(&self, name: &str) -> Result<String, CheckpointError> {
        let out = self.git(&["rev-parse", "--verify", "--quiet", name], None).await;
        match out {
            Ok(out) => Ok(String::from_utf8_lossy(&out).trim().to_string()),
            Err(_) => Err(CheckpointError::NotFound(name.to_string())),
        }
    }

    async fn meta(&self, commit: &str) -> Result<Option<Meta>, CheckpointError> {
        let out = self.git(&["log", "-1", "--format=%b", commit], None).await?;
        Ok(String::from_utf8_lossy(&out).lines().find_map(|line| serde_json::from_str(line).ok()))
    }

    /// Every run's checkpoint, newest first.
    pub async fn list(&self) -> Result<Vec<CheckpointInfo>, CheckpointError> {
        let out = self
            .git(
                &[
                    "for-each-ref",
                    "--format=%(refname)%00%(objectname)%00%(contents:body)%00",
                    "refs/tokamak/",
                ],
                None,
            )
            .await?;
        let text = String::from_utf8_lossy(&out);
        // run id → ((before commit, its meta), the after commit's meta)
        type Pair = (Option<(String, Meta)>, Option<Meta>);
        let mut runs: BTreeMap<String, Pair> = BTreeMap::new();
        let mut fields = text.split('\0').map(|f| f.trim_matches('\n'));
        while let (Some(name), Some(sha), Some(body)) = (fields.next(), fields.next(), fields.next()) {
            let Some(meta) = body.lines().find_map(|line| serde_json::from_str::<Meta>(line).ok()) else {
                continue;
            };
            let entry = runs.entry(meta.run_id.clone()).or_default();
            if name.ends_with("/before") {
                entry.0 = Some((sha.to_string(), meta));
            } else if name.ends_with("/after") {
                entry.1 = Some(meta);
            }
        }
        let mut list: Vec<CheckpointInfo> = runs
            .into_values()
            .filter_map(|(before, after)| {
                let (sha, meta) = before?;
                Some(CheckpointInfo {
                    id: sha.chars().take(12).collect(),
                    run_id: meta.run_id,
                    time: humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(meta.time_ms))
                        .to_string(),
                    millis: meta.time_ms,
                    goal: meta.goal,
                    files: after.as_ref().map(|a| a.files.clone()).unwrap_or_default(),
                    complete: after.is_some(),
                })
            })
            .collect();
        list.sort_by(|a, b| b.millis.cmp(&a.millis).then_with(|| b.run_id.cmp(&a.run_id)));
        Ok(list)
    }

    /// The checkpoint named by its id (or a prefix of at least 4 digits) or its run id.
    pub async fn find(&self, wanted: &str) -> Result<CheckpointInfo, CheckpointError> {
        let wanted = wanted.trim();
        let list = self.list().await?;
        let matches: Vec<&CheckpointInfo> = list
            .iter()
            .filter(|c| c.run_id == wanted || (wanted.len() >= 4 && c.id.starts_with(wanted)))
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            _ => Err(CheckpointError::NotFound(wanted.to_string())),
        }
    }

    /// The files a run changed, with their content before and after it.
    pub async fn changes(&self, checkpoint: &CheckpointInfo) -> Result<Vec<FileChange>, CheckpointError> {
        if !checkpoint.complete {
            return Err(CheckpointError::Incomplete(checkpoint.id.clone()));
        }
        let before = self.resolve_ref(&run_ref(&checkpoint.run_id, Stage::Before)).await?;
        let after = self.resolve_ref(&run_ref(&checkpoint.run_id, Stage::After)).await?;
        let out = self.git(&["diff-tree", "-r", "-z", "--no-renames", &before, &after], None).await?;
        // ":<old mode> <new mode> <old sha> <new sha> <status>\0<path>\0" per file
        let mut fields = split_nul(&out);
        let mut wanted: Vec<(String, Option<String>, Option<String>)> = Vec::new();
        while let (Some(header), Some(path)) = (fields.next(), fields.next()) {
            let parts: Vec<&str> = header.trim_start_matches(':').split(' ').collect();
            if parts.len() < 5 {
                continue;
            }
            let blob = |sha: &str| (!sha.chars().all(|c| c == '0')).then(|| sha.to_string());
            wanted.push((path.to_string(), blob(parts[2]), blob(parts[3])));
        }
        let shas: Vec<&str> =
            wanted.iter().flat_map(|(_, b, a)| [b.as_deref(), a.as_deref()]).flatten().collect();
        let blobs = self.blobs(&shas).await?;
        Ok(wanted
            .into_iter()
            .map(|(relative, before, after)| FileChange {
                relative,
                before: before.and_then(|sha| blobs.get(&sha).cloned()),
                after: after.and_then(|sha| blobs.get(&sha).cloned()),
            })
            .collect())
    }

    /// The content of blobs, read with one `git cat-file --batch`.
    async fn blobs(&self, shas: &[&str]) -> Result<HashMap<String, Vec<u8>>, CheckpointError> {
        if shas.is_empty() {
            return Ok(HashMap::new());
        }
        let input: String = shas.iter().map(|sha| format!("{sha}\n")).collect();
        let out = self.git(&["cat-file", "--batch"], Some(input.into_bytes())).await?;
        let mut blobs = HashMap::new();
        let mut rest = out.as_slice();
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            let header = String::from_utf8_lossy(&rest[..newline]).to_string();
            rest = &rest[newline + 1..];
            let parts: Vec<&str> = header.split(' ').collect();
            let (Some(sha), Some(size)) = (parts.first(), parts.get(2).and_then(|s| s.parse::<usize>().ok()))
            else {
                continue; // "<sha> missing"
            };
            if rest.len() < size {
                break;
            }
            blobs.insert(sha.to_string(), rest[..size].to_vec());
            rest = rest.get(size + 1..).unwrap_or_default();
        }
        Ok(blobs)
    }

    /// Removes the checkpoints of all but the newest `keep_runs` runs and of runs older than
    /// `keep_days`, then the objects only they used. Returns the run ids removed.
    pub async fn prune(&self, keep_runs: usize, keep_days: u64) -> Result<Vec<String>, CheckpointError> {
        let list = self.list().await?;
        let oldest = now_millis().saturating_sub(keep_days.saturating_mul(86_400_000));
        let doomed: Vec<&CheckpointInfo> = list
            .iter()
            .enumerate()
            .filter(|(i, c)| *i >= keep_runs || c.millis < oldest)
            .map(|(_, c)| c)
            .collect();
        if doomed.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = String::new();
        for checkpoint in &doomed {
            for stage in [Stage::Before, Stage::After] {
                input.push_str(&format!("delete {}\n", run_ref(&checkpoint.run_id, stage)));
            }
        }
        let _guard = self.state.lock().await;
        self.git(&["update-ref", "--stdin"], Some(input.into_bytes())).await?;
        self.git(&["reflog", "expire", "--expire=now", "--all"], None).await?;
        self.git(&["gc", "--prune=now", "--quiet"], None).await?;
        Ok(doomed.iter().map(|c| c.run_id.clone()).collect())
    }

    /// Bytes the shadow repository takes on disk.
    pub fn disk_size(&self) -> u64 {
        fn size(path: &Path) -> u64 {
            std::fs::read_dir(path)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| match e.file_type() {
                            Ok(t) if t.is_dir() => size(&e.path()),
                            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        size(&self.git_dir)
    }
}

fn run_ref(run_id: &str, stage: Stage) -> String {
    format!("refs/tokamak/{run_id}/{}", stage.as_str())
}

fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(200).collect()
}

fn split_nul(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes.split(|&b| b == 0).filter(|s| !s.is_empty()).filter_map(|s| std::str::from_utf8(s).ok())
}

fn nul_joined<'a>(items: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        out.extend_from_slice(item.as_bytes());
        out.push(0);
    }
    out
}

/// A NUL byte in the first 8000 bytes, as git decides.
fn looks_binary(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    let mut head = Vec::with_capacity(BINARY_PROBE);
    if file.take(BINARY_PROBE as u64).read_to_end(&mut head).is_err() {
        return true;
    }
    head.contains(&0)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// The list as a table: id, time, run, files, goal.
pub fn table(list: &[CheckpointInfo]) -> String {
    if list.is_empty() {
        return "no checkpoints yet: a run that changes files leaves one\n".to_string();
    }
    let mut out = String::new();
    for checkpoint in list {
        let files = if checkpoint.complete {
            format!("{} file(s)", checkpoint.files.len())
        } else {
            "unfinished".to_string()
        };
        // the run's id first: it is what runs print and `tokamak rollback` takes
        out.push_str(&format!(
            "{}  {}  {:<11}  {}\n",
            checkpoint.run_id, checkpoint.time, files, checkpoint.goal
        ));
        for file in &checkpoint.files {
            out.push_str(&format!("    {file}\n"));
        }
    }
    out
}
