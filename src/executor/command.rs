//! Running one command for the agent (SPEC X2): allowed by the policy or a person, placed in
//! the run's shadow copy of the workspace holding the editor's text (through bwrap where it
//! works, else a plain copy, said once), its output's paths pointed back at the project; the
//! process itself with no standard input, a timeout, output captured and cut (head and tail
//! kept), the whole process group killed on timeout or cancel, and an environment without API
//! keys or tokens.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::history::audit::is_secret_name;
use crate::process::{ProcessGroup, clean_output};
use crate::text::cut;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::{Executor, Origin, Placement, Request, ShadowCopy, placement, policy};
use crate::action::ActionResult;
use crate::config::ApprovalLevel;
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
    /// Variables that hold keys under names that do not say so (the configured
    /// `api_key_env`).
    pub key_variables: &'a [String],
    /// Run through bwrap with these arguments before `--` and the command (the sandbox's).
    pub bwrap: Option<(&'a Path, Vec<String>)>,
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
pub async fn run(spec: CommandSpec<'_>, cancel: &CancellationToken) -> std::io::Result<CommandOutcome> {
    let mut command = match &spec.bwrap {
        Some((bwrap, args)) => {
            let mut command = tokio::process::Command::new(bwrap);
            command.args(args);
            command
        }
        None => {
            let mut command = tokio::process::Command::new(&spec.argv[0]);
            command.args(&spec.argv[1..]).current_dir(spec.cwd);
            command
        }
    };
    for name in secret_variables(spec.key_variables) {
        command.env_remove(name);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let group = ProcessGroup::new(child.id());
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
        group.kill();
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

/// The variables of this process's environment that hold keys or tokens (by their names, or
/// named as the configured `api_key_env`): a command never sees them.
fn secret_variables(key_variables: &[String]) -> Vec<String> {
    std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .filter(|name| is_secret_name(name) || key_variables.iter().any(|k| k == name))
        .collect()
}

/// `program args` as the editor's terminal runs it: through `env -u` for each variable that
/// holds a key, since the editor starts it with its own environment (the one Tokamak was
/// started with).
fn without_secrets(program: &str, args: &[String], key_variables: &[String]) -> (String, Vec<String>) {
    let secrets = secret_variables(key_variables);
    if secrets.is_empty() {
        return (program.to_string(), args.to_vec());
    }
    let mut wrapped: Vec<String> = secrets.into_iter().flat_map(|name| ["-u".to_string(), name]).collect();
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
/// it runs at the copy's own path) and, under bubblewrap, bwrap's path and arguments.
pub(super) struct Placed {
    pub cwd: PathBuf,
    pub argv: Vec<String>,
    pub bwrap: Option<(PathBuf, Vec<String>)>,
}

/// Places `argv` in `copy` of the workspace at `root` as `placement` says: under bwrap, the
/// copy mounted at the workspace's own path; without it, the copy's folder, with the
/// workspace's path in the arguments pointed there.
pub(super) fn place(placement: &Placement, copy: &ShadowCopy, root: &Path, argv: &[String]) -> Placed {
    match placement {
        Placement::Bwrap(bwrap) => Placed {
            cwd: root.to_path_buf(),
            argv: argv.to_vec(),
            bwrap: Some((bwrap.clone(), copy.bwrap_args(Path::new(""), argv))),
        },
        Placement::Copy { .. } => {
            let (from, to) = (root.to_string_lossy(), copy.dir().to_string_lossy());
            Placed {
                cwd: copy.dir().to_path_buf(),
                argv: argv.iter().map(|a| repoint(a, &from, &to)).collect(),
                bwrap: None,
            }
        }
    }
}

impl Placed {
    /// Why the command did not run when bubblewrap could not start `program` (not installed
    /// in the sandbox's view): it did not run, as when it cannot be started without bubblewrap.
    pub(super) fn not_started(&self, outcome: &CommandOutcome, program: &str) -> Option<String> {
        if self.bwrap.is_none() || outcome.status != Some(1) {
            return None;
        }
        let line = outcome.stderr.lines().find(|l| l.starts_with("bwrap: execvp "))?;
        Some(format!("`{program}` could not be started: {}", line.trim_start_matches("bwrap: ")))
    }

    /// What a command run at the copy's own path printed, with the workspace's paths.
    pub(super) fn repoint_back(&self, outcome: &mut CommandOutcome, copy: &ShadowCopy, root: &Path) {
        if self.bwrap.is_none() {
            let (from, to) = (copy.dir().to_string_lossy(), root.to_string_lossy());
            outcome.stdout = repoint(&outcome.stdout, &from, &to);
            outcome.stderr = repoint(&outcome.stderr, &from, &to);
        }
    }
}

impl super::ExecutorContext {
    /// Says once per workspace that commands run without a sandbox, when the placement has a
    /// notice for the user (`sandbox = "auto"` without a working bwrap).
    pub(super) async fn tell_unsandboxed(&self, placement: &Placement) {
        if let Placement::Copy { notice: Some(notice) } = placement
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
            && policy::allowed(argv, &settings.commands.allow, settings.test_command.as_deref());
        let ask_anyway = origin == Origin::Model && settings.approval == ApprovalLevel::High;
        if !listed || ask_anyway {
            let request = Request::Command { argv: argv.to_vec() };
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
        let placement = match self.placement() {
            Ok(placement) => placement,
            Err(reason) => return ActionResult::refused(reason),
        };
        self.context.tell_unsandboxed(&placement).await;
        let mut notes = Vec::new();
        // every command runs in the run's copy, which holds the editor's text: a command never
        // sees a disk that lags a buffer, with or without bubblewrap
        let mut shadow = self.shadow.lock().await;
        if shadow.is_none() {
            let dir = crate::places::project_cache(self.root()).join("sandbox").join(&self.run_id);
            let isolated = matches!(placement, Placement::Bwrap(_));
            match ShadowCopy::new(self.root(), &dir, isolated) {
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
        let placed = place(&placement, copy, self.root(), argv);
        let (cwd, argv_run, bwrap) = (&placed.cwd, &placed.argv, &placed.bwrap);
        let spec = CommandSpec {
            argv: argv_run,
            cwd,
            timeout,
            max_output: settings.commands.max_output_bytes,
            key_variables: &settings.key_variables,
            bwrap: bwrap.as_ref().map(|(path, args)| (path.as_path(), args.clone())),
        };
        // in the editor's terminal when it offers one (the user watches it there), placed the
        // same way; else here
        let (program, args) = match &spec.bwrap {
            Some((bwrap, args)) => (bwrap.to_string_lossy().into_owned(), args.clone()),
            None => (argv_run[0].clone(), argv_run[1..].to_vec()),
        };
        let (program, args) = without_secrets(&program, &args, &settings.key_variables);
        let in_terminal = TerminalCommand {
            program: &program,
            args: &args,
            cwd,
            output_limit: settings.commands.max_output_bytes,
            timeout,
        };
        let started = Instant::now();
        let terminal = self.context.editor.run_in_terminal(&self.run_id, in_terminal, &self.cancel).await;
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
            .get_or_insert_with(|| placement(self.context.settings.sandbox).map_err(|err| err.to_string()))
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
    fn a_command_for_the_editors_terminal_goes_without_the_keys() {
        // HOME stands in for a key variable (setting one in a threaded test is not safe)
        let keys = argv(&["HOME"]);
        let (program, args) = without_secrets("sh", &argv(&["-c", "echo ${HOME:-gone}"]), &keys);
        assert_eq!(program, "env");
        assert!(args.windows(2).any(|w| w == ["-u", "HOME"]), "{args:?}");
        let ran = std::process::Command::new(&program).args(&args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "gone\n");
    }

    fn spec<'a>(argv: &'a [String], cwd: &'a Path, timeout: Duration) -> CommandSpec<'a> {
        CommandSpec { argv, cwd, timeout, max_output: 1000, key_variables: &[], bwrap: None }
    }

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn runs_without_stdin_or_keys_and_stops_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let command = argv(&["sh", "-c", "printf 'out\\033[31m red\\033[0m\\n'; echo err >&2; cat; env"]);
        // a configured key variable is stripped like the ones named *_API_KEY (HOME stands in
        // for one here: setting variables in a threaded test is not safe)
        let keys = argv(&["HOME"]);
        let mut with_keys = spec(&command, dir.path(), Duration::from_secs(20));
        with_keys.key_variables = &keys;
        with_keys.max_output = 100_000;
        let outcome = run(with_keys, &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.status, Some(0), "{outcome:?}");
        assert!(outcome.stdout.starts_with("out red\n"), "{:?}", outcome.stdout);
        assert_eq!(outcome.stderr, "err\n");
        assert!(!outcome.stdout.contains("\nHOME="), "the key variable was passed on");
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
