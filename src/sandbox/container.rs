//! The container backend (seed 003's worker, on an engine people already run): each command
//! in a fresh container of a Docker- or Podman-compatible engine, through its CLI — the image
//! the project names, no network by default, the engine's own CPU, memory and process limits,
//! no capabilities, the container's processes all gone when its command ends (`--init`,
//! `--rm`). On a local engine the run's copy is mounted at the workspace's own path (tests
//! that look at their path, editable installs and `.pth` files behave as on disk), the shared
//! folders read-only; on a remote one (`DOCKER_HOST`, `CONTAINER_HOST`, a Docker context or
//! a Podman connection naming another machine) the copy is sent into the container instead
//! (`cp` of a tar stream), and the container removed after. Each container is named and
//! labelled with the project, this machine and Tokamak's pid: a timeout removes it by name,
//! and the next start removes those a killed Tokamak of this machine left.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::config::ContainerSettings;

/// The label every container of Tokamak's carries: the project's key.
const PROJECT_LABEL: &str = "tokamak.project";
/// The label with the pid of the Tokamak that started it.
const PID_LABEL: &str = "tokamak.pid";
/// The label naming the machine that Tokamak runs on: an engine several machines share sees
/// the same project path and pid from more than one.
const MACHINE_LABEL: &str = "tokamak.machine";

/// An engine that can run the image: its CLI, the image, and whether it is another machine's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    pub cli: PathBuf,
    pub image: String,
    /// `DOCKER_HOST` / `CONTAINER_HOST` names another machine: the copy is sent, not mounted.
    pub remote: Option<String>,
}

/// The engine the settings name (or the one on PATH), when it answers and has the image —
/// found once per process for each setting.
pub fn engine(settings: &ContainerSettings) -> Result<Engine, String> {
    /// (engine, image) as set → what was found.
    type Found = ((Option<String>, Option<String>), Result<Engine, String>);
    static FOUND: Mutex<Vec<Found>> = Mutex::new(Vec::new());
    let key = (settings.engine.clone(), settings.image.clone());
    if let Some((_, found)) = crate::sync::lock(&FOUND).iter().find(|(k, _)| *k == key) {
        return found.clone();
    }
    let found = find_engine(settings);
    crate::sync::lock(&FOUND).push((key, found.clone()));
    found
}

fn find_engine(settings: &ContainerSettings) -> Result<Engine, String> {
    let image = settings.image.clone().ok_or("no image is named ([sandbox] image)")?;
    let cli = match settings.engine.as_deref() {
        Some(named) => which::which(named).map_err(|_| format!("the engine {named} is not installed"))?,
        None => which::which("docker")
            .or_else(|_| which::which("podman"))
            .map_err(|_| "no container engine is installed (docker or podman)".to_string())?,
    };
    let output = std::process::Command::new(&cli)
        .args(["image", "inspect", "--format", "{{.Id}}", &image])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("{} cannot be started ({err})", cli.display()))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let line = said.trim().lines().next().unwrap_or("it failed").to_string();
        return Err(format!("{} cannot run {image} ({line})", cli.display()));
    }
    Ok(Engine { remote: remote_host(&cli), cli, image })
}

/// The other machine the engine's CLI talks to, if it does: `DOCKER_HOST` or `CONTAINER_HOST`
/// when set, else Docker's current context (`DOCKER_CONTEXT` or `docker context use`) or
/// Podman's default connection (`CONTAINER_CONNECTION`) — an endpoint that is no local socket.
fn remote_host(cli: &Path) -> Option<String> {
    let podman = is_podman(cli);
    // each CLI's own variable: Docker's reads DOCKER_HOST, Podman's CONTAINER_HOST
    let variable = if podman { "CONTAINER_HOST" } else { "DOCKER_HOST" };
    if let Some(host) = std::env::var(variable).ok().filter(|host| !host.is_empty()) {
        return (!is_local(&host)).then_some(host);
    }
    let args: &[&str] = if podman {
        &["system", "connection", "list", "--format", "{{.Name}} {{.URI}} {{.Default}}"]
    } else {
        &["context", "inspect", "--format", "{{.Name}} {{.Endpoints.docker.Host}}"]
    };
    let output =
        std::process::Command::new(cli).args(args).stdin(std::process::Stdio::null()).output().ok()?;
    let listed = String::from_utf8_lossy(&output.stdout);
    let wanted = std::env::var("CONTAINER_CONNECTION").ok();
    endpoint(&listed, podman, wanted.as_deref())
}

/// The remote endpoint in what `docker context inspect` or `podman system connection list`
/// printed (`name endpoint [default]` a line), as "endpoint (context name)".
fn endpoint(listed: &str, podman: bool, wanted: Option<&str>) -> Option<String> {
    let chosen =
        listed.lines().map(|line| line.split_whitespace().collect::<Vec<_>>()).find(|words| {
            match (podman, wanted) {
                (false, _) => words.len() >= 2,
                (true, Some(name)) => words.first() == Some(&name),
                (true, None) => words.get(2) == Some(&"true"),
            }
        })?;
    let (name, host) = (chosen[0], *chosen.get(1)?);
    let kind = if podman { "podman connection" } else { "docker context" };
    (!is_local(host)).then(|| format!("{host} ({kind} {name})"))
}

/// A socket of this machine's, or ssh to this machine (Podman's machine on macOS: a VM that
/// shares the home folder, so the copy can be mounted). TCP to loopback stays remote: it is how
/// an engine is reached through a tunnel to another machine.
fn is_local(host: &str) -> bool {
    let ssh_here = host.strip_prefix("ssh://").is_some_and(|rest| {
        let authority = rest.split('/').next().unwrap_or_default();
        let machine = authority.rsplit('@').next().unwrap_or_default();
        let name = machine.rsplit_once(':').map_or(machine, |(name, _)| name);
        matches!(name, "127.0.0.1" | "localhost" | "[::1]")
    });
    host.is_empty() || host.starts_with("unix://") || host.starts_with("npipe://") || ssh_here
}

fn is_podman(cli: &Path) -> bool {
    cli.file_name().is_some_and(|name| name.to_string_lossy().contains("podman"))
}

/// This machine, for the label: its systemd machine id, else its host name.
fn machine() -> String {
    static MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MACHINE
        .get_or_init(|| {
            if let Ok(id) = std::fs::read_to_string("/etc/machine-id")
                && !id.trim().is_empty()
            {
                return id.trim().to_string();
            }
            let mut name = [0u8; 256];
            // SAFETY: gethostname writes at most `name.len()` bytes into the local buffer.
            let ok = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            if ok { String::from_utf8_lossy(&name[..end]).into_owned() } else { "unknown".to_string() }
        })
        .clone()
}

/// One command to run in a container.
pub struct ContainerRun<'a> {
    /// The container's name (removed by it after a timeout).
    pub name: &'a str,
    /// The workspace's path: where the copy is, inside.
    pub root: &'a Path,
    /// The run's copy.
    pub copy: &'a Path,
    /// Folders and files (workspace-relative) shared read-only from the workspace.
    pub binds: &'a [PathBuf],
    pub argv: &'a [String],
    /// The container's environment.
    pub env: &'a [(OsString, OsString)],
    pub network: bool,
    /// The project's key (its cache folder's name), for the label.
    pub project: &'a str,
}

/// The command line that runs `run` on `engine` with `limits`: the engine's CLI and its
/// arguments (local), or `sh` and a short script (remote).
pub fn command_line(
    engine: &Engine,
    limits: &ContainerSettings,
    run: &ContainerRun,
) -> (PathBuf, Vec<String>) {
    let root = run.root.to_string_lossy().into_owned();
    let mut flags: Vec<String> = vec![
        "--name".into(),
        run.name.into(),
        "--label".into(),
        format!("{PROJECT_LABEL}={}", run.project),
        "--label".into(),
        format!("{PID_LABEL}={}", std::process::id()),
        "--label".into(),
        format!("{MACHINE_LABEL}={}", machine()),
        "--init".into(),
        "--cap-drop".into(),
        "ALL".into(),
        "--security-opt".into(),
        "no-new-privileges".into(),
        "--cpus".into(),
        format!("{}", limits.cpus),
        "--memory".into(),
        format!("{}m", limits.memory_mb),
        "--memory-swap".into(),
        format!("{}m", limits.memory_mb),
        "--pids-limit".into(),
        limits.pids.to_string(),
        "--user".into(),
        user(),
        "-w".into(),
        root.clone(),
    ];
    if !run.network {
        flags.extend(["--network".into(), "none".into()]);
    }
    // rootless Podman maps the user to root inside unless told to keep the ids: the copy it
    // writes must stay the user's
    // SAFETY: getuid cannot fail and touches no memory.
    if is_podman(&engine.cli) && unsafe { libc::getuid() } != 0 {
        flags.push("--userns=keep-id".into());
    }
    for (name, value) in run.env {
        flags.extend(["-e".into(), format!("{}={}", name.to_string_lossy(), value.to_string_lossy())]);
    }
    if engine.remote.is_none() {
        // a private /tmp (the container's home); on a remote engine the container's own file
        // system is private already, and a tmpfs would hide a copy sent under /tmp
        flags.extend(["--tmpfs".into(), "/tmp:exec".into()]);
        flags.extend(["-v".into(), format!("{}:{root}", run.copy.display())]);
        for bind in run.binds {
            let at = run.root.join(bind).to_string_lossy().into_owned();
            flags.extend(["-v".into(), format!("{at}:{at}:ro")]);
        }
        let mut args = vec!["run".to_string(), "--rm".to_string()];
        args.extend(flags);
        args.push(engine.image.clone());
        args.extend(run.argv.iter().cloned());
        return (engine.cli.clone(), args);
    }
    // another machine: create the container, send it the copy at the workspace's path, run
    // it attached, remove it
    let script = r#"set -e
engine="$1"; name="$2"; copy="$3"; dest="$4"; shift 4
"$engine" create "$@" >/dev/null
trap '"$engine" rm -f "$name" >/dev/null 2>&1' EXIT
tar -C "$copy" -cf - --transform "s|^\.|$dest|" . | "$engine" cp - "$name:/"
"$engine" start -a "$name""#;
    let mut args = vec![
        "-c".to_string(),
        script.to_string(),
        "tokamak-container".to_string(),
        engine.cli.to_string_lossy().into_owned(),
        run.name.to_string(),
        run.copy.to_string_lossy().into_owned(),
        root.trim_start_matches('/').to_string(),
    ];
    args.extend(flags);
    args.push(engine.image.clone());
    args.extend(run.argv.iter().cloned());
    (PathBuf::from("sh"), args)
}

/// The command that removes the container `name` (after a timeout or a cancel: the CLI
/// killed, the container would run on).
pub fn removal(engine: &Engine, name: &str) -> (PathBuf, Vec<String>) {
    (engine.cli.clone(), vec!["rm".to_string(), "-f".to_string(), name.to_string()])
}

/// The container's environment: the locale and terminal, `HOME` and `TMPDIR` in its private
/// `/tmp`, and what `[sandbox] env` names — never the host's `PATH` or toolchain paths, which
/// mean nothing in the image.
pub fn environment(
    from: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = from
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            ["LANG", "LANGUAGE", "TERM", "TZ", "NO_COLOR", "COLORTERM"].contains(&name.as_ref())
                || name.starts_with("LC_")
                || extra.iter().any(|e| e.as_str() == name.as_ref())
        })
        .collect();
    env.retain(|(name, _)| name != "HOME" && name != "TMPDIR");
    env.extend([("HOME".into(), "/tmp".into()), ("TMPDIR".into(), "/tmp".into())]);
    env.sort();
    env
}

/// The environment the engine's CLI itself needs (where its engine is, its configuration).
pub fn cli_environment(from: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    from.into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            ["PATH", "HOME", "XDG_RUNTIME_DIR", "CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINERS_CONF"]
                .contains(&name.as_ref())
                || name.starts_with("DOCKER_")
        })
        .collect()
}

/// The user the container runs as: this process's, so what it writes in the copy is the
/// user's.
fn user() -> String {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    format!("{uid}:{gid}")
}

/// Removes the containers of `project` whose Tokamak is gone (killed mid-run). Returns how
/// many.
pub fn sweep(engine: &Engine, project: &str) -> usize {
    let cli = |args: &[&str]| {
        std::process::Command::new(&engine.cli)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
    };
    // `ps -q` and `inspect` read the same in Docker and Podman (their `ps` templates differ)
    let project = format!("label={PROJECT_LABEL}={project}");
    let machine = format!("label={MACHINE_LABEL}={}", machine());
    let Some(listed) = cli(&["ps", "-aq", "--filter", &project, "--filter", &machine]) else { return 0 };
    let mut removed = 0;
    for id in listed.split_whitespace() {
        let pid = cli(&["inspect", "--format", &format!("{{{{index .Config.Labels \"{PID_LABEL}\"}}}}"), id])
            .and_then(|said| said.trim().parse::<i32>().ok());
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let alive = pid.is_some_and(|pid| pid > 0 && unsafe { libc::kill(pid, 0) } == 0);
        if !alive && cli(&["rm", "-f", id]).is_some() {
            removed += 1;
        }
    }
    removed
}

/// How long the removal of a timed-out container may take.
pub const REMOVAL_TIMEOUT: Duration = Duration::from_secs(20);

#[cfg(test)]
mod tests {
    use super::*;

    fn run<'a>(
        argv: &'a [String],
        env: &'a [(OsString, OsString)],
        binds: &'a [PathBuf],
    ) -> ContainerRun<'a> {
        ContainerRun {
            name: "tokamak-abc",
            root: Path::new("/home/me/proj"),
            copy: Path::new("/cache/sandbox/run-1"),
            binds,
            argv,
            env,
            network: false,
            project: "proj-0123",
        }
    }

    #[test]
    fn a_local_engine_mounts_the_copy_at_the_workspaces_path() {
        let engine = Engine { cli: PathBuf::from("/usr/bin/docker"), image: "img:1".into(), remote: None };
        let argv = vec!["pytest".to_string(), "-q".to_string()];
        let env = environment(
            [
                ("PATH".into(), "/host/bin".into()),
                ("LANG".into(), "C.UTF-8".into()),
                ("MINE".into(), "1".into()),
            ],
            &["MINE".to_string()],
        );
        let binds = [PathBuf::from(".venv")];
        let (program, args) = command_line(&engine, &ContainerSettings::default(), &run(&argv, &env, &binds));
        assert_eq!(program, PathBuf::from("/usr/bin/docker"));
        let line = args.join(" ");
        assert!(line.starts_with("run --rm --name tokamak-abc --label tokamak.project=proj-0123"), "{line}");
        for expected in [
            "--network none",
            "--cap-drop ALL",
            "--memory 4096m --memory-swap 4096m",
            "--pids-limit 1024",
            "-w /home/me/proj",
            "-v /cache/sandbox/run-1:/home/me/proj",
            "-v /home/me/proj/.venv:/home/me/proj/.venv:ro",
            "-e HOME=/tmp",
            "-e LANG=C.UTF-8 -e MINE=1",
        ] {
            assert!(line.contains(expected), "{expected}: {line}");
        }
        assert!(!line.contains("/host/bin"), "the host's PATH means nothing in the image: {line}");
        assert!(line.ends_with("img:1 pytest -q"), "{line}");
    }

    #[test]
    fn a_context_or_connection_elsewhere_is_a_remote_engine() {
        assert_eq!(endpoint("default unix:///var/run/docker.sock\n", false, None), None);
        assert_eq!(
            endpoint("worker ssh://me@worker\n", false, None).as_deref(),
            Some("ssh://me@worker (docker context worker)")
        );
        let podman =
            "local unix:///run/podman/podman.sock false\nbox ssh://me@box:22/run/podman/podman.sock true\n";
        assert_eq!(
            endpoint(podman, true, None).as_deref(),
            Some("ssh://me@box:22/run/podman/podman.sock (podman connection box)")
        );
        assert_eq!(endpoint(podman, true, Some("local")), None);
        // Podman's machine on macOS: ssh to this machine's VM, which mounts the home folder
        assert!(is_local("ssh://core@127.0.0.1:50000/run/user/501/podman/podman.sock"));
        assert!(is_local("ssh://localhost/run/podman.sock"));
        assert!(!is_local("ssh://me@worker/run/podman.sock"));
        assert!(!is_local("tcp://127.0.0.1:2375"), "a tunnel's end");
        assert!(!machine().is_empty());
    }

    #[test]
    fn a_remote_engine_is_sent_the_copy() {
        let engine = Engine {
            cli: PathBuf::from("docker"),
            image: "img:1".into(),
            remote: Some("tcp://worker:2375".into()),
        };
        let argv = vec!["true".to_string()];
        let (program, args) = command_line(&engine, &ContainerSettings::default(), &run(&argv, &[], &[]));
        assert_eq!(program, PathBuf::from("sh"));
        assert_eq!(args[3..7], ["docker", "tokamak-abc", "/cache/sandbox/run-1", "home/me/proj"]);
        assert!(!args.iter().any(|a| a == "-v"), "nothing mounted from this machine: {args:?}");
        assert!(args.join(" ").ends_with("img:1 true"));
        assert_eq!(removal(&engine, "tokamak-abc").1, ["rm", "-f", "tokamak-abc"]);
    }
}
