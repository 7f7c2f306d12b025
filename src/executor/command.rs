//! Running one command for the agent (SPEC X2): allowed by the policy or a person, placed in
//! the run's shadow copy of the workspace holding the editor's text and confined by the
//! machine's sandbox (bubblewrap, Landlock or Seatbelt; with none, said once and the model's
//! every command asked), its output's paths pointed back at the project; the process itself
//! with no standard input, a timeout, output captured and cut (head and tail kept), the whole
//! process group killed on timeout or cancel (the Landlock helper first asked to kill what it
//! reaped), and an environment by allow-list (`sandbox::environment`).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::process::{ProcessGroup, clean_output};
use crate::text::cut;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::{Executor, Origin, Placement, Request, ShadowCopy, placement, policy};
use crate::action::ActionResult;
use crate::config::{ApprovalLevel, SandboxSettings};
use crate::editor::{MessageLevel, TerminalCommand};
use crate::sync::lock;

/// Output read from a command before the rest is drained unread (per stream).
const MAX_CAPTURE: usize = 8 * 1024 * 1024;

/// What to run.
pub struct CommandSpec<'a> {
    pub argv: &'a [String],
    /// The folder it runs in (absolute; inside the workspace).
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Output kept for the model (both streams together).
    pub max_output: usize,
    /// Its whole environment (`None`: this process's, for tests of the runner itself).
    pub env: Option<&'a [(OsString, OsString)]>,
    /// Run through the sandbox's program with these arguments (bwrap's, the Landlock
    /// helper's, sandbox-exec's), which end with the command.
    pub wrapper: Option<(&'a Path, Vec<String>)>,
    /// The wrapper reaps what the command leaves: on a timeout or a cancel it is sent SIGTERM
    /// first, to kill it all, before its group is killed.
    pub reaper: bool,
    /// Run after a timeout or a cancel killed it (a container's removal).
    pub after_kill: Option<(&'a Path, Vec<String>)>,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The exit status; `None` when it was killed (timeout, cancel or a signal).
    pub status: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl CommandOutcome {
    /// "exit status 1 after 0.4 s", "stopped at the 120 s timeout", …
    pub fn describe(&self, timeout: Duration) -> String {
        let seconds = self.elapsed.as_secs_f32();
        if self.timed_out {
            format!("stopped at the {} s timeout (it was killed with its child processes)", timeout.as_secs())
        } else if self.cancelled {
            format!("cancelled after {seconds:.1} s")
        } else {
            match self.status {
                Some(code) => format!("exit status {code} after {seconds:.1} s"),
                None => format!("killed by a signal after {seconds:.1} s"),
            }
        }
    }
}

/// Runs `spec` to its end, its timeout or `cancel`.
/// Whether `argv` runs tests: the project's test command, or a test runner by name.
fn is_test_run(argv: &[String], test: Option<&[String]>) -> bool {
    if test.is_some_and(|t| !t.is_empty() && argv.starts_with(t)) {
        return true;
    }
    let program = argv.first().and_then(|p| Path::new(p).file_name()).and_then(|n| n.to_str()).unwrap_or("");
    let module = match argv {
        [_, flag, module, ..] if flag == "-m" => module.as_str(),
        _ => "",
    };
    ["pytest", "py.test", "vitest", "jest", "unittest"].iter().any(|r| program == *r || module == *r)
}

pub async fn run(spec: CommandSpec<'_>, cancel: &CancellationToken) -> std::io::Result<CommandOutcome> {
    let mut command = match &spec.wrapper {
        Some((wrapper, args)) => {
            let mut command = tokio::process::Command::new(wrapper);
            command.args(args).current_dir(spec.cwd);
            command
        }
        None => {
            let mut command = tokio::process::Command::new(&spec.argv[0]);
            command.args(&spec.argv[1..]).current_dir(spec.cwd);
            command
        }
    };
    if let Some(env) = spec.env {
        command.env_clear().envs(env.iter().map(|(name, value)| (name, value)));
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let leader = child.id();
    let group = ProcessGroup::new(leader);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let collect = async {
        let (out, err) = tokio::join!(read_capped(stdout), read_capped(stderr));
        let status = child.wait().await;
        (out, err, status)
    };
    let (mut timed_out, mut cancelled) = (false, false);
    let finished = tokio::select! {
        done = tokio::time::timeout(spec.timeout, collect) => match done {
            Ok(done) => Some(done),
            Err(_) => {
                timed_out = true;
                None
            }
        },
        () = cancel.cancelled() => {
            cancelled = true;
            None
        }
    };
    let elapsed = started.elapsed();
    let Some((stdout, stderr, status)) = finished else {
        if spec.reaper
            && let Some(pid) = leader.and_then(|pid| i32::try_from(pid).ok())
        {
            // SAFETY: kill(2) on our own child's pid; it touches no memory.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
        group.kill();
        if let Some((program, args)) = &spec.after_kill {
            let removal = tokio::process::Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .status();
            let _ = tokio::time::timeout(crate::sandbox::container::REMOVAL_TIMEOUT, removal).await;
        }
        return Ok(CommandOutcome {
            status: None,
            timed_out,
            cancelled,
            stdout: String::new(),
            stderr: String::new(),
            elapsed,
        });
    };
    let status = status?;
    // the leader is gone; whatever it left running in its group goes too
    group.kill();
    let half = spec.max_output / 2;
    Ok(CommandOutcome {
        status: status.code(),
        timed_out,
        cancelled,
        stdout: cut(&clean_output(&stdout), half),
        stderr: cut(&clean_output(&stderr), half),
        elapsed,
    })
}

/// `program args` as the editor's terminal runs it, with the command's environment (the
/// editor starts it with its own, the one Tokamak was started with): under Tokamak's helper,
/// which reads the environment from a file in `env_dir` (a folder of Tokamak's own, out of
/// every command's reach; no value in a command line `ps` shows) and can be stopped by `tag` —
/// a helper already there given the file, else one that only reaps around it; without a
/// helper (macOS), through `env -i`.
fn for_terminal(
    program: String,
    args: Vec<String>,
    env: &[(OsString, OsString)],
    env_dir: &Path,
    tag: &str,
) -> (String, Vec<String>) {
    #[cfg(target_os = "linux")]
    if let Some(helper) = crate::places::own_binary() {
        use std::os::unix::fs::DirBuilderExt;
        let file = env_dir.join(format!("tokamak-env-{tag}"));
        let made = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(env_dir);
        if made.is_ok() && crate::sandbox::landlock::write_env_file(&file, env).is_ok() {
            let helper_text = helper.to_string_lossy().into_owned();
            let line = if program == helper_text {
                args
            } else {
                let mut line =
                    vec![crate::sandbox::landlock::SUBCOMMAND.to_string(), "--unconfined".to_string()];
                line.push("--".to_string());
                line.push(program);
                line.extend(args);
                line
            };
            return (helper_text, crate::sandbox::landlock::with_env_file(line, &file, tag));
        }
    }
    let _ = (env_dir, tag);
    with_environment(&program, &args, env)
}

/// Stops a command the editor's terminal runs, on a timeout or a cancel: its helper asked to
/// kill all it started (and remove its container), else the container removed here.
fn stop_in_terminal(tag: &str, after_kill: Option<&(PathBuf, Vec<String>)>) {
    #[cfg(target_os = "linux")]
    if crate::sandbox::landlock::stop_tagged(tag) > 0 {
        return;
    }
    let _ = tag;
    if let Some((program, args)) = after_kill {
        let (program, args) = (program.clone(), args.clone());
        std::thread::spawn(move || {
            let _ = std::process::Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        });
    }
}

/// `program args` through `env -i` with the command's environment.
fn with_environment(program: &str, args: &[String], env: &[(OsString, OsString)]) -> (String, Vec<String>) {
    let mut wrapped = vec!["-i".to_string()];
    wrapped.extend(
        env.iter().map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy())),
    );
    wrapped.push(program.to_string());
    wrapped.extend(args.iter().cloned());
    ("env".to_string(), wrapped)
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let Some(stream) = stream else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut limited = stream.take(MAX_CAPTURE as u64);
    let _ = limited.read_to_end(&mut out).await;
    // keep draining so the command is not blocked on a full pipe until the timeout
    let mut rest = limited.into_inner();
    let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    out
}

/// `text` with the path `from` written as `to` wherever it stands as a whole path or a path's
/// start (`/p/proj` in `/p/proj/a.py`, not in `/p/proj2`).
pub(super) fn repoint(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        let whole = after.chars().next().is_none_or(|c| !(c.is_alphanumeric() || "-_.".contains(c)));
        out.push_str(&rest[..at]);
        out.push_str(if whole { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A command placed in a run's copy: where it runs, its arguments (pointed at the copy when
/// it runs at the copy's own path), the sandbox's program and arguments that confine it, and
/// its environment.
pub(super) struct Placed {
    pub cwd: PathBuf,
    pub argv: Vec<String>,
    pub wrapper: Option<(PathBuf, Vec<String>)>,
    pub env: Vec<(OsString, OsString)>,
    /// It runs in the copy mounted at the workspace's path (bwrap).
    at_workspace: bool,
    /// The Landlock helper reaps what it leaves.
    pub reaper: bool,
    /// What removes it after a timeout or a cancel (a container).
    pub after_kill: Option<(PathBuf, Vec<String>)>,
    /// It runs in a container: the engine's own exit statuses (125–127) say it did not run.
    in_container: bool,
}

/// Places `argv` in `copy` of the workspace at `root` as `placement` says, under `sandbox`'s
/// policy: under bwrap, the copy mounted at the workspace's own path; else the copy's
/// folder, with the workspace's path in the arguments pointed there, confined by Landlock or
/// Seatbelt when the machine has them.
pub(super) fn place(
    placement: &Placement,
    copy: &ShadowCopy,
    root: &Path,
    argv: &[String],
    sandbox: &SandboxSettings,
) -> Placed {
    if let Placement::Container(engine) = placement {
        use crate::sandbox::container;
        let name = format!("tokamak-{:016x}", fastrand::u64(..));
        let env = container::environment(std::env::vars_os(), &sandbox.env);
        let project = crate::places::project_key(root);
        let run = container::ContainerRun {
            name: &name,
            root,
            copy: copy.dir(),
            binds: copy.binds(),
            argv,
            env: &env,
            network: sandbox.network,
            project: &project,
        };
        let (cli, args) = container::command_line(engine, &sandbox.container, &run);
        let (removal, removal_args) = container::removal(engine, &name);
        // the engine's CLI under the reaping helper (where there is one): killed with Tokamak,
        // it still removes the container
        #[cfg(target_os = "linux")]
        let wrapper = match crate::places::own_binary() {
            Some(helper) => {
                let mut cleanup = vec![removal.to_string_lossy().into_owned()];
                cleanup.extend(removal_args.iter().cloned());
                let mut line = vec![cli.to_string_lossy().into_owned()];
                line.extend(args);
                (helper, crate::sandbox::landlock::reaping_line(&cleanup, &line))
            }
            None => (cli, args),
        };
        #[cfg(not(target_os = "linux"))]
        let wrapper = (cli, args);
        return Placed {
            cwd: root.to_path_buf(),
            argv: argv.to_vec(),
            wrapper: Some(wrapper),
            env: container::cli_environment(std::env::vars_os()),
            at_workspace: true,
            reaper: true,
            after_kill: Some((removal, removal_args)),
            in_container: true,
        };
    }
    // the secrets and the host's environment are this machine's: a container has neither
    let real_home = dirs::home_dir();
    let hidden =
        crate::sandbox::secrets::hidden(real_home.as_deref(), &sandbox.hide, &crate::places::cache_dir());
    let (private_home, private_tmp) = copy.private_folders();
    let environment = |home: &Path, tmp: &Path| {
        crate::sandbox::environment::allowed(
            std::env::vars_os(),
            &sandbox.env,
            real_home.as_deref(),
            home,
            tmp,
        )
    };
    if let Placement::Bwrap(bwrap) = placement {
        return Placed {
            cwd: root.to_path_buf(),
            argv: argv.to_vec(),
            wrapper: Some((bwrap.clone(), copy.bwrap_args(Path::new(""), argv, &hidden, sandbox.network))),
            env: environment(Path::new(super::sandbox::BWRAP_HOME), Path::new("/tmp")),
            at_workspace: true,
            reaper: false,
            after_kill: None,
            in_container: false,
        };
    }
    let (from, to) = (root.to_string_lossy(), copy.dir().to_string_lossy());
    let argv: Vec<String> = argv.iter().map(|a| repoint(a, &from, &to)).collect();
    let policy = crate::sandbox::Policy {
        writable: vec![copy.dir().to_path_buf(), private_home.to_path_buf(), private_tmp.to_path_buf()],
        hidden,
        network: sandbox.network,
    };
    let wrapper = match placement {
        #[cfg(target_os = "linux")]
        Placement::Landlock { helper, .. } => {
            Some((helper.clone(), crate::sandbox::landlock::command_line(&policy, &argv)))
        }
        Placement::Seatbelt(sandbox_exec) => {
            Some((sandbox_exec.clone(), crate::sandbox::seatbelt::command_line(&policy, &argv)))
        }
        _ => None,
    };
    Placed {
        cwd: copy.dir().to_path_buf(),
        argv,
        reaper: matches!(placement, Placement::Landlock { .. }),
        wrapper,
        env: environment(private_home, private_tmp),
        at_workspace: false,
        after_kill: None,
        in_container: false,
    }
}

impl Placed {
    /// Why the command did not run when the sandbox could not start `program` (not installed
    /// in the sandbox's view) or could not confine it: it did not run.
    pub(super) fn not_started(&self, outcome: &CommandOutcome, program: &str) -> Option<String> {
        if self.in_container && matches!(outcome.status, Some(125..=127)) {
            let said = outcome.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("the engine failed");
            return Some(format!("`{program}` did not run in the container: {}", said.trim()));
        }
        if self.wrapper.is_none() || !matches!(outcome.status, Some(1) | Some(126) | Some(127)) {
            return None;
        }
        let prefixes = ["bwrap: execvp ", crate::sandbox::HELPER_SAYS];
        let line = outcome.stderr.lines().find(|l| prefixes.iter().any(|p| l.starts_with(p)))?;
        let said = prefixes.iter().fold(line, |line, p| line.trim_start_matches(p));
        if line.starts_with("bwrap: execvp ") || said.starts_with("execvp ") {
            let said = said.trim_start_matches("execvp ");
            return Some(format!("`{program}` could not be started: execvp {said}"));
        }
        Some(format!("`{program}` did not run: {said}"))
    }

    /// What a command run at the copy's own path printed, with the workspace's paths.
    pub(super) fn repoint_back(&self, outcome: &mut CommandOutcome, copy: &ShadowCopy, root: &Path) {
        if !self.at_workspace {
            let (from, to) = (copy.dir().to_string_lossy(), root.to_string_lossy());
            outcome.stdout = repoint(&outcome.stdout, &from, &to);
            outcome.stderr = repoint(&outcome.stderr, &from, &to);
        }
    }
}

impl super::ExecutorContext {
    /// Says once per workspace that commands run without a sandbox, when the placement has a
    /// notice for the user (`sandbox = "auto"` on a machine with none).
    pub(super) async fn tell_unsandboxed(&self, placement: &Placement) {
        if let Placement::Copy { notice: Some(notice), .. } = placement
            && !self.sandbox_told.swap(true, Ordering::Relaxed)
        {
            self.editor.show_message(MessageLevel::Warning, notice.clone()).await;
        }
    }
}

impl Executor {
    pub(super) async fn run(&self, argv: &[String], timeout: Option<u64>, origin: Origin) -> ActionResult {
        let settings = &self.context.settings;
        let listed = settings.trusted
            && (policy::allowed(argv, &settings.commands.allow, settings.test_command.as_deref())
                || (origin == Origin::Run
                    && policy::allowed_measured(
                        argv,
                        &settings.commands.allow,
                        settings.test_command.as_deref(),
                    )));
        let placement = match self.placement() {
            Ok(placement) => placement,
            Err(reason) => return ActionResult::refused(reason),
        };
        self.context.tell_unsandboxed(&placement).await;
        // nothing confines it on this machine: the model's every command is asked
        let unconfined = matches!(placement, Placement::Copy { ask: true, .. });
        let ask_anyway = origin == Origin::Model && (self.approval() == ApprovalLevel::High || unconfined);
        if !listed || ask_anyway {
            let request = Request::Command { argv: argv.to_vec(), unconfined };
            if let Err(reason) = self.ask(&request, origin).await {
                let reason = if settings.trusted || listed {
                    reason
                } else {
                    format!(
                        "{reason} (the folder is not trusted, so no command runs without the user's approval)"
                    )
                };
                return ActionResult::refused(reason);
            }
        }
        let timeout = Duration::from_secs(
            timeout.unwrap_or(settings.commands.timeout_s).clamp(1, settings.commands.timeout_s.max(1)),
        );
        let mut notes = Vec::new();
        // every command runs in the run's copy, which holds the editor's text: a command never
        // sees a disk that lags a buffer, with or without bubblewrap
        let mut shadow = self.shadow.lock().await;
        if shadow.is_none() {
            let dir = crate::places::project_cache(self.root()).join("sandbox").join(&self.run_id);
            match ShadowCopy::new(self.root(), &dir, &placement) {
                Ok(copy) => *shadow = Some(copy),
                Err(err) => return ActionResult::refused(err.to_string()),
            }
        }
        let Some(copy) = shadow.as_mut() else {
            return ActionResult::refused("the sandbox copy is missing");
        };
        let buffers: HashMap<PathBuf, String> = self
            .buffers()
            .into_iter()
            .filter_map(|(path, text)| Some((path.strip_prefix(self.root()).ok()?.to_path_buf(), text)))
            .collect();
        let started = Instant::now();
        match copy.sync(&buffers) {
            Ok(stats) => {
                tracing::debug!("{}: sandbox copy {stats:?} in {:?}", self.run_id, started.elapsed())
            }
            Err(err) => return ActionResult::refused(err.to_string()),
        }
        // without bwrap the copy is at a path of its own: the command is pointed there, and
        // what it prints is shown with the workspace's paths
        let placed = place(&placement, copy, self.root(), argv, &settings.sandbox);
        let (cwd, argv_run, wrapper) = (&placed.cwd, &placed.argv, &placed.wrapper);
        let spec = CommandSpec {
            argv: argv_run,
            cwd,
            timeout,
            max_output: settings.commands.max_output_bytes,
            env: Some(&placed.env),
            wrapper: wrapper.as_ref().map(|(path, args)| (path.as_path(), args.clone())),
            reaper: placed.reaper,
            after_kill: placed.after_kill.as_ref().map(|(path, args)| (path.as_path(), args.clone())),
        };
        // in the editor's terminal when it offers one (the user watches it there), placed the
        // same way; else here
        let (program, args) = match &spec.wrapper {
            Some((wrapper, args)) => (wrapper.to_string_lossy().into_owned(), args.clone()),
            None => (argv_run[0].clone(), argv_run[1..].to_vec()),
        };
        static TERMINALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let tag =
            format!("{}-{}-{}", std::process::id(), self.run_id, TERMINALS.fetch_add(1, Ordering::Relaxed));
        // the environment's file where no command can reach it: Tokamak's own cache
        let env_dir = crate::places::project_cache(self.root()).join("terminal");
        let (program, args) = for_terminal(program, args, &placed.env, &env_dir, &tag);
        let env_file = env_dir.join(format!("tokamak-env-{tag}"));
        let after_kill = placed.after_kill.clone();
        let stop = move || stop_in_terminal(&tag, after_kill.as_ref());
        let in_terminal = TerminalCommand {
            program: &program,
            args: &args,
            cwd,
            output_limit: settings.commands.max_output_bytes,
            timeout,
            stop: &stop,
        };
        let started = Instant::now();
        let terminal = self.context.editor.run_in_terminal(&self.run_id, in_terminal, &self.cancel).await;
        // read and removed by the helper, unless the terminal never started it
        let _ = std::fs::remove_file(&env_file);
        let where_ran = if terminal.is_some() { " in the editor's terminal" } else { "" };
        let mut outcome = match terminal {
            Some(Ok(ran)) => CommandOutcome {
                status: ran.status,
                timed_out: ran.timed_out,
                cancelled: ran.cancelled,
                stdout: cut(&clean_output(ran.output.as_bytes()), settings.commands.max_output_bytes),
                stderr: String::new(),
                elapsed: started.elapsed(),
            },
            // the editor refused it (its user said no) or could not run it: it did not run
            Some(Err(reason)) => {
                return ActionResult::refused(format!(
                    "the editor did not run `{}` in its terminal: {reason}",
                    argv.join(" ")
                ));
            }
            None => match run(spec, &self.cancel).await {
                Ok(outcome) => outcome,
                Err(err) => {
                    return ActionResult::refused(format!("`{}` could not be started: {err}", argv[0]));
                }
            },
        };
        if let Some(reason) = placed.not_started(&outcome, &argv[0]) {
            return ActionResult::refused(reason);
        }
        placed.repoint_back(&mut outcome, copy, self.root());
        let changed = copy.changed_by_command();
        if !changed.is_empty() {
            let shown: Vec<&str> = changed.iter().take(20).map(String::as_str).collect();
            notes.push(format!(
                "it ran in a copy of the workspace, so what it wrote ({}{}) was not kept",
                shown.join(", "),
                if changed.len() > 20 { ", …" } else { "" }
            ));
        }
        drop(shadow);
        *lock(&self.commands_ran) = Some(placement.describe());
        if is_test_run(argv, settings.test_command.as_deref()) && !outcome.timed_out && !outcome.cancelled {
            lock(&self.state).tests_failing = outcome.status != Some(0);
        }
        let described = outcome.describe(timeout);
        let mut text = format!("$ {}\n{described} ({}{where_ran})", argv.join(" "), placement.describe());
        text.push('\n');
        for (name, stream) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
            if !stream.is_empty() {
                text.push_str(&format!("--- {name} ---\n{stream}"));
                if !stream.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        for note in &notes {
            text.push_str(&format!("Note: {note}.\n"));
        }
        // it ran: whether it succeeded is in the text (a failing test is a result, not a refusal)
        ActionResult {
            exit_status: outcome.status,
            ..ActionResult::done(text, format!("ran `{}`{where_ran}: {described}", argv.join(" ")))
        }
    }

    pub(super) fn placement(&self) -> Result<Placement, String> {
        lock(&self.placement)
            .get_or_insert_with(|| placement(&self.context.settings.sandbox).map_err(|err| err.to_string()))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_repointed_only_where_it_stands_whole() {
        let text = "/p/proj /p/proj/a.py /p/proj2/b.py '/p/proj' /p/proj.bak";
        assert_eq!(repoint(text, "/p/proj", "/c"), "/c /c/a.py /p/proj2/b.py '/c' /p/proj.bak");
    }

    #[test]
    fn a_command_for_the_editors_terminal_gets_only_its_environment() {
        let env = vec![
            (OsString::from("PATH"), OsString::from("/usr/bin:/bin")),
            (OsString::from("ONLY"), OsString::from("this")),
        ];
        let (program, args) = with_environment("sh", &argv(&["-c", "echo ${HOME:-gone} $ONLY"]), &env);
        assert_eq!(program, "env");
        let ran = std::process::Command::new(&program).args(&args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "gone this\n");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn in_the_editors_terminal_the_values_stay_out_of_the_command_line_and_a_stop_ends_it_all() {
        let tmp = tempfile::tempdir().unwrap();
        let env = vec![
            (OsString::from("PATH"), OsString::from("/usr/bin:/bin")),
            (OsString::from("ONLY"), OsString::from("the-value-0xBEEF")),
        ];
        let tag = format!("unit-{}", std::process::id());
        let (program, args) =
            for_terminal("sh".to_string(), argv(&["-c", "echo ${HOME:-gone} $ONLY"]), &env, tmp.path(), &tag);
        assert!(program.ends_with("tokamak"), "under the helper: {program}");
        assert!(!args.iter().any(|a| a.contains("0xBEEF")), "{args:?}");
        let ran = std::process::Command::new(&program).args(&args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "gone the-value-0xBEEF\n", "{ran:?}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "the file is gone once read");

        // stopped by its tag (as on a terminal's timeout), it and what it started go
        let marker = format!("sleep {}", 3_000_000 + std::process::id());
        let script = format!("setsid {marker} & {marker}");
        let (program, args) = for_terminal("sh".to_string(), argv(&["-c", &script]), &env, tmp.path(), &tag);
        let mut child = std::process::Command::new(&program).args(&args).spawn().unwrap();
        let alive = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
                std::fs::read(entry.path().join("cmdline"))
                    .is_ok_and(|line| String::from_utf8_lossy(&line).replace('\0', " ").trim() == marker)
            })
        };
        let started = std::time::Instant::now();
        while !alive() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(alive(), "the command started");
        stop_in_terminal(&tag, None);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(), "nothing it started is left");
    }

    fn spec<'a>(argv: &'a [String], cwd: &'a Path, timeout: Duration) -> CommandSpec<'a> {
        CommandSpec {
            argv,
            cwd,
            timeout,
            max_output: 1000,
            env: None,
            wrapper: None,
            reaper: false,
            after_kill: None,
        }
    }

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn runs_without_stdin_or_keys_and_stops_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let command = argv(&["sh", "-c", "printf 'out\\033[31m red\\033[0m\\n'; echo err >&2; cat; env"]);
        // the environment given is the whole of it
        let env = vec![(OsString::from("PATH"), std::env::var_os("PATH").unwrap())];
        let mut with_env = spec(&command, dir.path(), Duration::from_secs(20));
        with_env.env = Some(&env);
        with_env.max_output = 100_000;
        let outcome = run(with_env, &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.status, Some(0), "{outcome:?}");
        assert!(outcome.stdout.starts_with("out red\n"), "{:?}", outcome.stdout);
        assert_eq!(outcome.stderr, "err\n");
        assert!(!outcome.stdout.contains("\nHOME="), "a variable not given was passed on");
        assert!(outcome.stdout.contains("\nPATH="));

        let slow = argv(&["sh", "-c", "sleep 30 & sleep 30"]);
        let outcome = run(spec(&slow, dir.path(), Duration::from_millis(300)), &CancellationToken::new())
            .await
            .unwrap();
        assert!(outcome.timed_out && outcome.status.is_none(), "{outcome:?}");
        assert!(outcome.describe(Duration::from_secs(1)).contains("timeout"));

        let cancel = CancellationToken::new();
        let stopper = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            stopper.cancel();
        });
        let outcome = run(spec(&slow, dir.path(), Duration::from_secs(30)), &cancel).await.unwrap();
        assert!(outcome.cancelled, "{outcome:?}");

        let missing = argv(&["tokamak-no-such-program"]);
        assert!(
            run(spec(&missing, dir.path(), Duration::from_secs(1)), &CancellationToken::new()).await.is_err()
        );
    }
}
