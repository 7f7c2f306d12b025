//! The Landlock backend (Linux 5.13+): Tokamak's own helper, `tokamak __confine`, started in
//! place of the command, confines itself — Landlock grants reading everything but the hidden
//! paths (`secrets::readable_cover`) and writing only the policy's folders and `/dev/null`;
//! seccomp refuses every socket, Unix ones too (and io_uring, which could open one behind
//! seccomp's back), unless the network is allowed; Landlock's scopes keep signals and abstract
//! sockets inside — and then runs the command as its child, reaping whatever it leaves
//! (`reaper.rs`). The helper is a separate process started fresh, so nothing is applied
//! between `fork` and `exec` of a threaded server.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::Policy;

/// The helper's first argument.
pub const SUBCOMMAND: &str = "__confine";
/// What the probe says when another supervisor already watches Tokamak (Tokamak run inside
/// Tokamak's own sandbox, LXD's syscall interception): commands are confined by Landlock, but
/// what it does not mediate is not watched.
/// Set when the probe found the watch refused (see [`NOT_WATCHED`]).
static UNWATCHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
const NOT_WATCHED: &str =
    "modes, owners and times are not watched (another seccomp supervisor already watches Tokamak)";
/// The ABI whose file-system rights are asked for (the latest that adds any); older kernels
/// enforce what they have.
const FS_ABI: ABI = ABI::V5;

/// What the helper is asked to do.
#[derive(Debug, Default, PartialEq, Eq)]
struct Request {
    policy: Policy,
    probe: bool,
    /// Do nothing (what the probe runs under the watch: no program on PATH is needed).
    nothing: bool,
    /// Without the watch over what Landlock does not mediate: another supervisor has it.
    no_watch: bool,
    /// Only reap: another backend confines the command (a container's CLI).
    unconfined: bool,
    /// Run when the command is stopped or Tokamak is gone (a container's removal).
    cleanup: Vec<OsString>,
    /// The command's environment, read from this file (then removed) instead of inherited:
    /// a command an editor's terminal runs, whose values stay out of its command line.
    env_file: Option<PathBuf>,
    /// A name Tokamak finds this helper by ([`stop_tagged`]) when it did not start it.
    tag: Option<String>,
    argv: Vec<OsString>,
}

/// The helper's command line for `argv` under `policy`: `helper` is Tokamak's binary.
pub fn command_line(policy: &Policy, argv: &[String]) -> Vec<String> {
    let mut args = vec![SUBCOMMAND.to_string()];
    if UNWATCHED.load(std::sync::atomic::Ordering::Relaxed) {
        args.push("--no-watch".to_string());
    }
    if policy.network {
        args.push("--network".to_string());
    }
    for (flag, paths) in [("--write", &policy.writable), ("--hide", &policy.hidden)] {
        for path in paths {
            args.extend([flag.to_string(), path.to_string_lossy().into_owned()]);
        }
    }
    args.push("--".to_string());
    args.extend(argv.iter().cloned());
    args
}

/// The helper's command line that only reaps `argv` — confined by something else — and runs
/// `cleanup` when it is stopped or Tokamak is gone.
pub fn reaping_line(cleanup: &[String], argv: &[String]) -> Vec<String> {
    let mut args = vec![SUBCOMMAND.to_string(), "--unconfined".to_string()];
    for word in cleanup {
        args.extend(["--cleanup".to_string(), word.clone()]);
    }
    args.push("--".to_string());
    args.extend(argv.iter().cloned());
    args
}

fn parse(args: &[OsString]) -> Result<Request, String> {
    let mut request = Request::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("--") => {
                request.argv = rest.cloned().collect();
                break;
            }
            Some("--probe") => request.probe = true,
            Some("--nothing") => request.nothing = true,
            Some("--no-watch") => request.no_watch = true,
            Some("--network") => request.policy.network = true,
            Some("--unconfined") => request.unconfined = true,
            Some("--cleanup") => request.cleanup.push(rest.next().ok_or("--cleanup needs a word")?.clone()),
            Some("--env-file") => {
                request.env_file = Some(PathBuf::from(rest.next().ok_or("--env-file needs a path")?))
            }
            Some("--tag") => {
                request.tag = Some(rest.next().ok_or("--tag needs a name")?.to_string_lossy().into_owned())
            }
            Some(flag @ ("--write" | "--hide")) => {
                let path = PathBuf::from(rest.next().ok_or_else(|| format!("{flag} needs a path"))?);
                if flag == "--write" {
                    request.policy.writable.push(path);
                } else {
                    request.policy.hidden.push(path);
                }
            }
            _ => return Err(format!("unknown argument {}", arg.to_string_lossy())),
        }
    }
    if request.argv.is_empty() && !request.probe && !request.nothing {
        return Err("no command after --".to_string());
    }
    Ok(request)
}

/// The helper: `args` are those after [`SUBCOMMAND`]. Confines this process, then runs the
/// command and returns its exit status (128 + the signal that killed it); 126 with one line
/// on stderr when it could not be confined, 127 when the command could not be started.
pub fn helper_main(args: &[OsString]) -> i32 {
    let request = match parse(args) {
        Ok(request) => request,
        Err(reason) => {
            eprintln!("{}{reason}", super::HELPER_SAYS);
            return 2;
        }
    };
    if request.nothing {
        return 0;
    }
    let env = match &request.env_file {
        Some(file) => match read_env_file(file) {
            Ok(env) => Some(env),
            Err(err) => {
                eprintln!(
                    "{}the command was not run: its environment ({}): {err}",
                    super::HELPER_SAYS,
                    file.display()
                );
                return 126;
            }
        },
        None => None,
    };
    let env = env.as_deref();
    if request.unconfined {
        return super::reaper::run(&request.argv, &request.cleanup, env, None);
    }
    let enforced = match confine(&request.policy) {
        Ok(enforced) => enforced,
        Err(reason) => {
            eprintln!(
                "{}the command was not run: Landlock could not confine it ({reason})",
                super::HELPER_SAYS
            );
            return 126;
        }
    };
    // without the watch (another supervisor has the only listener) the rest stays: the
    // command's own domain, the refused calls, truncation refused where Landlock lets it by
    let setup = match super::supervisor::Setup::new(kernel_abi().unwrap_or(1), !request.no_watch) {
        Ok(setup) => setup,
        Err(err) => {
            eprintln!("{}the command was not run: its watch could not be set up ({err})", super::HELPER_SAYS);
            return 126;
        }
    };
    if request.probe {
        // the watch is tried on a program that does nothing: a kernel that cannot give it
        // leaves this backend unused rather than a command unwatched — but for another
        // supervisor's watch over Tokamak itself, which the kernel lets be the only one
        let Ok(me) = std::env::current_exe() else {
            eprintln!("{}the command was not run: Tokamak's own binary was not found", super::HELPER_SAYS);
            return 126;
        };
        return match setup.try_on(me.as_os_str(), &[SUBCOMMAND, "--nothing"]) {
            Ok(()) => {
                println!("{enforced}; {}", super::supervisor::DESCRIBED);
                0
            }
            Err(err) if err.raw_os_error() == Some(libc::EBUSY) => {
                println!("{enforced}; {NOT_WATCHED}");
                0
            }
            Err(err) => {
                eprintln!(
                    "{}the command was not run: its watch could not be set up ({err})",
                    super::HELPER_SAYS
                );
                126
            }
        };
    }
    super::reaper::run(&request.argv, &request.cleanup, env, Some((setup, &request.policy.writable)))
}

/// The helper's command line `line` (starting with [`SUBCOMMAND`]) given the command's
/// environment in `env_file` and a `tag` to be stopped by.
pub fn with_env_file(mut line: Vec<String>, env_file: &Path, tag: &str) -> Vec<String> {
    let at = usize::from(line.first().is_some_and(|first| first == SUBCOMMAND));
    let added = [
        "--env-file".to_string(),
        env_file.to_string_lossy().into_owned(),
        "--tag".to_string(),
        tag.to_string(),
    ];
    line.splice(at..at, added);
    line
}

/// Writes `env` for [`with_env_file`]: `NAME=VALUE` pairs separated by NUL, readable by
/// the user alone.
pub fn write_env_file(path: &Path, env: &[(OsString, OsString)]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    let mut bytes = Vec::new();
    for (name, value) in env {
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(b'=');
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    file.write_all(&bytes)
}

/// Reads what [`write_env_file`] wrote, and removes it: only a regular file of this user's,
/// readable by no one else, with no other name — never through a link, never a FIFO.
fn read_env_file(path: &Path) -> std::io::Result<Vec<(OsString, OsString)>> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    std::fs::remove_file(path)?;
    let meta = file.metadata()?;
    // SAFETY: getuid cannot fail and touches no memory.
    let mine = meta.uid() == unsafe { libc::getuid() };
    if !meta.file_type().is_file() || !mine || meta.mode() & 0o077 != 0 || meta.nlink() != 0 {
        return Err(std::io::Error::other("it is not the file Tokamak wrote"));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes
        .split(|&byte| byte == 0)
        .filter_map(|pair| {
            let at = pair.iter().position(|&byte| byte == b'=')?;
            let (name, value) = (&pair[..at], &pair[at + 1..]);
            Some((
                std::ffi::OsStr::from_bytes(name).to_os_string(),
                std::ffi::OsStr::from_bytes(value).to_os_string(),
            ))
        })
        .collect())
}

/// Asks the helpers tagged `tag` to stop (SIGTERM: each kills its command and all it
/// started, and runs its cleanup) and waits for them to end (up to 2 s): for a command an
/// editor's terminal runs, which the editor may stop with SIGKILL, too late for the helper to
/// do anything. Returns how many.
pub fn stop_tagged(tag: &str) -> usize {
    let stopped = signal_tagged(tag);
    let started = std::time::Instant::now();
    // gone, or a zombie its parent (the editor) has not reaped yet
    let running = |pid: &libc::pid_t| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rfind(')')
                .and_then(|end| stat[end + 1..].split_whitespace().next())
                .is_some_and(|state| state != "Z")
        })
    };
    while stopped.iter().any(running) && started.elapsed() < std::time::Duration::from_secs(2) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stopped.len()
}

fn signal_tagged(tag: &str) -> Vec<libc::pid_t> {
    let helper = crate::places::own_binary();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut stopped = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<libc::pid_t>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if tagged(&cmdline, tag) && std::fs::read_link(entry.path().join("exe")).ok() == helper {
            // SAFETY: kill(2) touches no memory; a pid gone since is ESRCH.
            if unsafe { libc::kill(pid, libc::SIGTERM) } == 0 {
                stopped.push(pid);
            }
        }
    }
    stopped
}

/// Whether `cmdline` (NUL-separated) is a helper's tagged `tag`: its first argument the
/// helper's, `--tag TAG` among its own options (before `--`), not words of the command.
fn tagged(cmdline: &[u8], tag: &str) -> bool {
    let mut words = cmdline.split(|&byte| byte == 0).skip(1);
    if words.next() != Some(SUBCOMMAND.as_bytes()) {
        return false;
    }
    let own: Vec<&[u8]> = words.take_while(|word| *word != b"--").collect();
    own.windows(2).any(|pair| pair[0] == b"--tag" && pair[1] == tag.as_bytes())
}

/// Applies `policy` to this process and its future children. `Ok`: what is enforced, in a
/// few words ("Landlock ABI 7, fully").
fn confine(policy: &Policy) -> Result<String, String> {
    let abi = kernel_abi().ok_or("this kernel has no Landlock (Linux 5.13 or later, enabled at boot)")?;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(|err| err.to_string())?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(|err| err.to_string())?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|err| err.to_string())?;
    }
    let read = AccessFs::from_read(FS_ABI);
    let mut created = ruleset.create().map_err(|err| err.to_string())?;
    for path in super::secrets::readable_cover(&policy.hidden) {
        // a path that vanished since it was listed is simply not granted
        let Ok(fd) = PathFd::new(&path) else { continue };
        let access = if path.is_dir() { read } else { read & AccessFs::from_file(FS_ABI) };
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(|err| err.to_string())?;
    }
    for path in &policy.writable {
        let fd = PathFd::new(path).map_err(|err| format!("{}: {err}", path.display()))?;
        created = created
            .add_rule(PathBeneath::new(fd, AccessFs::from_all(FS_ABI)))
            .map_err(|err| err.to_string())?;
    }
    // not /dev/tty: a command that could reach the terminal could type into it (TIOCSTI)
    for device in ["/dev/null", "/dev/zero", "/dev/full"] {
        if let Ok(fd) = PathFd::new(device) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_file(FS_ABI)))
                .map_err(|err| err.to_string())?;
        }
    }
    let status = created.restrict_self().map_err(|err| err.to_string())?;
    let how = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully",
        RulesetStatus::PartiallyEnforced => "partly (an older kernel: some rights are not handled)",
        RulesetStatus::NotEnforced => return Err("the kernel enforced none of it".to_string()),
    };
    if !policy.network {
        deny_network()?;
    }
    Ok(format!("Landlock ABI {abi}, {how}"))
}

/// The running kernel's Landlock ABI version, `None` without Landlock.
pub fn kernel_abi() -> Option<i64> {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag only
    // returns the ABI version (or -1); it reads and writes no memory.
    let version = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, 1u32)
    };
    (version > 0).then_some(version)
}

/// Seccomp: `socket` of every family, and io_uring, fail with EPERM. Unix sockets too:
/// Landlock does not stand between a command and a socket file (`/run/user/…/bus`, an agent's,
/// `docker.sock`), which may reach the user's services outside the sandbox. `socketpair`,
/// what programs use to talk to their own children, stays.
fn deny_network() -> Result<(), String> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let rules = [
        (libc::SYS_socket, vec![]),
        (libc::SYS_io_uring_setup, vec![]),
        (libc::SYS_io_uring_enter, vec![]),
        (libc::SYS_io_uring_register, vec![]),
    ]
    .into_iter()
    .collect();
    let arch = std::env::consts::ARCH.try_into().map_err(|err: seccompiler::BackendError| err.to_string())?;
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(|err| err.to_string())?;
    let program: BpfProgram = filter.try_into().map_err(|err: seccompiler::BackendError| err.to_string())?;
    seccompiler::apply_filter(&program).map_err(|err| err.to_string())
}

/// Whether the helper confines a command here: `Ok` (the helper's path and what it
/// enforces) or why not — tried once per process.
pub fn usable() -> &'static Result<(PathBuf, String), String> {
    static USABLE: std::sync::OnceLock<Result<(PathBuf, String), String>> = std::sync::OnceLock::new();
    USABLE.get_or_init(|| {
        kernel_abi().ok_or("this kernel has no Landlock (it needs Linux 5.13 or later, enabled at boot)")?;
        let helper =
            crate::places::own_binary().ok_or("Tokamak's own binary, which applies it, was not found")?;
        let found = probe(&helper)?;
        UNWATCHED.store(found.1.ends_with(NOT_WATCHED), std::sync::atomic::Ordering::Relaxed);
        Ok(found)
    })
}

fn probe(helper: &Path) -> Result<(PathBuf, String), String> {
    let tmp = std::env::temp_dir();
    let policy = Policy { writable: vec![tmp], hidden: Vec::new(), network: false };
    let mut args = command_line(&policy, &[]);
    args.insert(1, "--probe".to_string());
    let output = std::process::Command::new(helper)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("its helper cannot be started ({err})"))?;
    if output.status.success() {
        Ok((helper.to_path_buf(), String::from_utf8_lossy(&output.stdout).trim().to_string()))
    } else {
        let said = String::from_utf8_lossy(&output.stderr);
        Err(said
            .trim()
            .trim_start_matches(super::HELPER_SAYS)
            .lines()
            .next()
            .unwrap_or("it failed")
            .to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_is_found_by_its_own_tag_not_by_words_of_its_command() {
        let line = |words: &[&str]| words.join("\0").into_bytes();
        assert!(tagged(&line(&["/bin/tokamak", SUBCOMMAND, "--tag", "t1", "--", "sh"]), "t1"));
        assert!(!tagged(&line(&["/bin/tokamak", SUBCOMMAND, "--tag", "t1", "--", "sh"]), "t2"));
        assert!(
            !tagged(&line(&["/bin/tokamak", SUBCOMMAND, "--", "echo", "--tag", "t1"]), "t1"),
            "the command's words"
        );
        assert!(!tagged(&line(&["/bin/sh", "-c", "--tag", "t1"]), "t1"));
    }

    #[test]
    fn the_command_line_is_read_back_as_written() {
        let policy = Policy {
            writable: vec![PathBuf::from("/c/copy"), PathBuf::from("/c/home")],
            hidden: vec![PathBuf::from("/h/.ssh")],
            network: true,
        };
        let argv = vec!["sh".to_string(), "-c".to_string(), "echo --write".to_string()];
        let line = command_line(&policy, &argv);
        assert_eq!(line[0], SUBCOMMAND);
        let args: Vec<OsString> = line[1..].iter().map(OsString::from).collect();
        let request = parse(&args).unwrap();
        assert_eq!(request.policy, policy);
        assert_eq!(request.argv, argv.iter().map(OsString::from).collect::<Vec<_>>());
        assert!(parse(&[OsString::from("--write")]).is_err());
        assert!(parse(&[OsString::from("--bogus"), OsString::from("--"), OsString::from("x")]).is_err());
        assert!(parse(&[OsString::from("--")]).is_err(), "no command");
    }
}
