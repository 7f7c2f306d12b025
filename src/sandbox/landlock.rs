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
/// The ABI whose file-system rights are asked for (the latest that adds any); older kernels
/// enforce what they have.
const FS_ABI: ABI = ABI::V5;

/// What the helper is asked to do.
#[derive(Debug, Default, PartialEq, Eq)]
struct Request {
    policy: Policy,
    probe: bool,
    /// Only reap: another backend confines the command (a container's CLI).
    unconfined: bool,
    /// Run when the command is stopped or Tokamak is gone (a container's removal).
    cleanup: Vec<OsString>,
    argv: Vec<OsString>,
}

/// The helper's command line for `argv` under `policy`: `helper` is Tokamak's binary.
pub fn command_line(policy: &Policy, argv: &[String]) -> Vec<String> {
    let mut args = vec![SUBCOMMAND.to_string()];
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
            Some("--network") => request.policy.network = true,
            Some("--unconfined") => request.unconfined = true,
            Some("--cleanup") => request.cleanup.push(rest.next().ok_or("--cleanup needs a word")?.clone()),
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
    if request.argv.is_empty() && !request.probe {
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
    if request.unconfined {
        return super::reaper::run(&request.argv, &request.cleanup);
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
    if request.probe {
        println!("{enforced}");
        return 0;
    }
    super::reaper::run(&request.argv, &request.cleanup)
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

/// Tokamak's binary, to start the helper with: this process's own (whatever an editor's
/// package named it), but for a test binary of the library (cargo's `target/*/deps/`),
/// which has no helper: then the `tokamak` built beside it.
pub fn helper_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let folder = exe.parent()?;
    if folder.file_name().is_none_or(|name| name != "deps") {
        return Some(exe);
    }
    let beside = folder.parent()?.join("tokamak");
    beside.is_file().then_some(beside)
}

/// Whether the helper confines a command here: `Ok` (the helper's path and what it
/// enforces) or why not — tried once per process.
pub fn usable() -> &'static Result<(PathBuf, String), String> {
    static USABLE: std::sync::OnceLock<Result<(PathBuf, String), String>> = std::sync::OnceLock::new();
    USABLE.get_or_init(|| {
        kernel_abi().ok_or("this kernel has no Landlock (it needs Linux 5.13 or later, enabled at boot)")?;
        let helper = helper_binary().ok_or("Tokamak's own binary, which applies it, was not found")?;
        probe(&helper)
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
