//! Running one command for the agent (SPEC X2): no standard input, a timeout, output captured
//! and cut (head and tail kept), the whole process group killed on timeout or cancel, and an
//! environment without API keys or tokens — in the workspace or, through bwrap, in the
//! run's shadow copy of it.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::history::audit::is_secret_name;
use crate::process::{ProcessGroup, clean_output};
use crate::text::cut;

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
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if is_secret_name(&text) || spec.key_variables.iter().any(|k| k.as_str() == text) {
            command.env_remove(&name);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
