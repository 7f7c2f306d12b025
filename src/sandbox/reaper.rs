//! The helper's second half (Linux): runs the confined command as its child and, as a
//! child subreaper, inherits everything the command leaves running — a `setsid` daemon, a
//! server started with `&` — and kills it all when the command ends, when Tokamak asks
//! (SIGTERM: a timeout or a cancel) or when Tokamak is gone (killed with -9: its parent
//! changes), then runs the cleanup it was given (a container's removal: the container's
//! processes are not the helper's children). Nothing the command started outlives its run.
//! Under Landlock it also answers the command's calls that Landlock does not mediate
//! (`supervisor.rs`) while it waits.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::supervisor::Setup;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Runs `argv` and returns its exit status (128 + a signal), having killed whatever it left;
/// `cleanup` is run when it was stopped before its end; `env`, the command's environment
/// in place of the helper's. With `watch`, the command's process
/// is set up by it and its calls that Landlock does not mediate are answered here
/// (`supervisor.rs`) while the command runs.
pub fn run(
    argv: &[OsString],
    cleanup: &[OsString],
    env: Option<&[(OsString, OsString)]>,
    watch: Option<(Setup, &[PathBuf])>,
) -> i32 {
    let parent = std::os::unix::process::parent_id();
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) and sigaction with a handler that only stores to
    // an atomic are async-signal-safe and touch no memory of ours but the handler's address.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_stop as *const () as usize;
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    let mut command = std::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Some(env) = env {
        command.env_clear().envs(env.iter().map(|(name, value)| (name, value)));
    }
    let (setup, writable) = match watch {
        Some((setup, writable)) => (Some(Arc::new(setup)), writable),
        None => (None, &[][..]),
    };
    if let Some(setup) = &setup {
        let setup = Arc::clone(setup);
        // SAFETY: the helper has one thread; between fork and exec only syscalls run, on
        // memory made before the fork (`Setup::in_child`).
        unsafe { command.pre_exec(move || setup.in_child()) };
    }
    let spawned = command.spawn();
    drop(command);
    let child = match spawned {
        Ok(child) => child,
        Err(err) => {
            eprintln!("{}execvp {}: {err}", super::HELPER_SAYS, argv[0].to_string_lossy());
            return 127;
        }
    };
    let pid = child.id() as libc::pid_t;
    let mut watch = match setup.map(Arc::try_unwrap) {
        Some(Ok(setup)) => match setup.watch(writable) {
            Ok(watch) => watch,
            Err(err) => {
                // the command runs with calls nobody answers: stop it rather than leave it hanging
                eprintln!("{}the command was stopped: {err}", super::HELPER_SAYS);
                kill_children();
                return 126;
            }
        },
        _ => None,
    };
    let mut pause = Duration::from_millis(1);
    let status = loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status of a child of ours into `status`, a local.
        let reaped = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if reaped == pid {
            break exit_code(status);
        }
        if reaped > 0 {
            continue; // an orphan the command left, now gone
        }
        if STOP.load(Ordering::SeqCst) || std::os::unix::process::parent_id() != parent {
            kill_children();
            if let Some((program, args)) = cleanup.split_first() {
                // in a group of its own: an editor that kills the helper's group mid-cleanup
                // must not take the container's removal with it
                let _ = std::process::Command::new(program)
                    .args(args)
                    .process_group(0)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            return 128 + libc::SIGTERM;
        }
        match &mut watch {
            Some(serving) => {
                if !serving.serve(pause) {
                    watch = None; // nothing left under the filter
                }
            }
            None => std::thread::sleep(pause),
        }
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    kill_children();
    status
}

fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) }
}

/// Kills every process whose parent is this one, round after round (each killed one's own
/// children come to us), and reaps them.
fn kill_children() {
    let me = std::process::id() as libc::pid_t;
    for _ in 0..200 {
        let children = children_of(me);
        for &child in &children {
            // SAFETY: kill(2) on a pid that is our child; it touches no memory.
            unsafe {
                libc::kill(child, libc::SIGKILL);
            }
        }
        loop {
            let mut status = 0;
            // SAFETY: as in `run`.
            let reaped = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if reaped <= 0 {
                break;
            }
        }
        if children.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The pids whose parent is `parent`, read from `/proc`.
fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid …": comm may hold spaces and parentheses
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid: libc::pid_t = after.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}
