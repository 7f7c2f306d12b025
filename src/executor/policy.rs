//! Which commands and commits run without asking (SPEC X2): the allow-list from the user's
//! settings (and, in a trusted folder, the project's), the test command; everything else
//! goes to an [`Approver`] — the person at the editor or terminal — and so do changes to
//! files and every action as the `approval` level says (SPEC M4). The default approver
//! refuses and says how to allow.

use std::time::{Duration, Instant};

use async_trait::async_trait;

/// What the agent wants to do that needs a person's yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Run a command (not on the allow-list, or any command at `approval = "high"`).
    /// `unconfined`: nothing confines commands on this machine (why an allowed one is asked).
    Command { argv: Vec<String>, unconfined: bool },
    /// Commit the run's changes to the project's git.
    Commit { message: String, files: Vec<String> },
    /// Change files: the action (`edit`, `create`, `delete`, `rename`), what it does, the
    /// diff, and the file's text before and after (`None`: absent) for editors that show a
    /// diff of their own.
    Change { action: String, summary: String, diff: String, file: Option<ChangedFile> },
    /// Look at the project (`approval = "high"`): the action and what it looks at.
    Look { action: String, summary: String },
    /// Call an MCP server's tool (one the settings do not allow, or any at `approval =
    /// "high"`): its name as offered, its server, and the arguments (cut).
    Tool { name: String, server: String, arguments: String },
}

impl Request {
    /// The action's name, as the model calls it.
    pub fn action(&self) -> &str {
        match self {
            Request::Command { .. } => "run",
            Request::Commit { .. } => "git_commit",
            Request::Change { action, .. } | Request::Look { action, .. } => action,
            Request::Tool { name, .. } => name,
        }
    }

    /// What the agent wants to do, as the end of "Tokamak wants to …".
    pub fn summary(&self) -> String {
        match self {
            Request::Command { argv, unconfined: false } => format!("run `{}`", argv.join(" ")),
            Request::Command { argv, unconfined: true } => {
                format!(
                    "run `{}` without a sandbox (nothing confines commands on this machine: it runs as you, in a copy of the workspace whose dependency folders, such as node_modules and .venv, are your own)",
                    argv.join(" ")
                )
            }
            Request::Commit { message, files } => {
                format!("commit {} with the message {message:?}", files.join(", "))
            }
            Request::Change { summary, .. } | Request::Look { summary, .. } => summary.clone(),
            Request::Tool { name, server, arguments } => {
                let tool = name.rsplit("__").next().unwrap_or(name);
                format!("call the tool {tool} of the MCP server {server} with {arguments}")
            }
        }
    }

    /// The change as a unified diff (empty when nothing in a file changes).
    pub fn diff(&self) -> &str {
        match self {
            Request::Change { diff, .. } => diff,
            _ => "",
        }
    }

    /// The changed file's texts, for a change of one file's content.
    pub fn file(&self) -> Option<&ChangedFile> {
        match self {
            Request::Change { file, .. } => file.as_ref(),
            _ => None,
        }
    }
}

pub use crate::action::ChangedFile;

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// A person said no, with the reason that goes back to the model (which then looks at
    /// the code again before it may change anything).
    Reject(String),
    /// Nobody could be asked, or the policy says no: the sentence says how to allow it.
    Refuse(String),
}

/// Asks a person: the terminal, the editor (`tokamak/approvalRequested`,
/// `window/showMessageRequest`), or nobody.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides about `request`, which run `run_id` makes. May wait for the person as long as
    /// they take; the executor stops waiting when the run is cancelled.
    async fn decide(&self, run_id: &str, request: &Request) -> Decision;
}

/// The time a run spent waiting for a person: it does not count against the run's time
/// limits (`limits.wall_time_s`, `fix.time_limit_s`).
#[derive(Debug, Default)]
pub struct WaitClock {
    /// The waits that ended, and the start of the one going on.
    state: std::sync::Mutex<(Duration, Option<Instant>, usize)>,
}

impl WaitClock {
    /// Times `wait` as waiting for a person.
    pub async fn time<T>(&self, wait: impl std::future::Future<Output = T>) -> T {
        {
            let mut state = crate::sync::lock(&self.state);
            if state.2 == 0 {
                state.1 = Some(Instant::now());
            }
            state.2 += 1;
        }
        // ends the wait however `wait` ends (also when it is dropped)
        struct End<'a>(&'a WaitClock);
        impl Drop for End<'_> {
            fn drop(&mut self) {
                let mut state = crate::sync::lock(&self.0.state);
                state.2 = state.2.saturating_sub(1);
                if state.2 == 0
                    && let Some(since) = state.1.take()
                {
                    state.0 += since.elapsed();
                }
            }
        }
        let _end = End(self);
        wait.await
    }

    /// All the time spent waiting so far, the wait going on included.
    pub fn waited(&self) -> Duration {
        let state = crate::sync::lock(&self.state);
        state.0 + state.1.map(|since| since.elapsed()).unwrap_or_default()
    }

    /// Resolves once `limit` has passed since `start`, not counting the waits.
    pub async fn deadline(&self, start: Instant, limit: Duration) {
        loop {
            let budget = limit + self.waited();
            let elapsed = start.elapsed();
            if elapsed >= budget {
                return;
            }
            tokio::time::sleep(budget - elapsed).await;
        }
    }
}

/// An approver that asks on behalf of another run (a task's own fix loop asks as the task),
/// timing the wait on that run's clock.
pub struct OnBehalfOf {
    pub approver: std::sync::Arc<dyn Approver>,
    pub run_id: String,
    pub clock: std::sync::Arc<WaitClock>,
}

#[async_trait]
impl Approver for OnBehalfOf {
    async fn decide(&self, _run_id: &str, request: &Request) -> Decision {
        self.clock.time(self.approver.decide(&self.run_id, request)).await
    }
}

/// Asks nobody: refuses everything, saying how to allow it.
pub struct RefuseUnlisted;

#[async_trait]
impl Approver for RefuseUnlisted {
    async fn decide(&self, _run_id: &str, request: &Request) -> Decision {
        Decision::Refuse(match request {
            Request::Command { argv, unconfined: true } => format!(
                "`{}` was not run: nothing confines commands on this machine, so each needs the user's approval, and nobody could be asked; install bubblewrap (or use Linux 5.13+ with Landlock), or set sandbox = \"off\" to run allowed commands unasked and unconfined",
                argv.join(" ")
            ),
            Request::Command { argv, .. } => format!(
                "`{}` is not on the allow-list, so it was not run; the user can allow it with [commands] allow = [[{}]] in their Tokamak settings",
                argv.join(" "),
                argv.iter().take(2).map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ")
            ),
            Request::Commit { .. } => {
                "commits need the user's approval or auto_commit = true in their Tokamak settings; nothing was committed"
                    .to_string()
            }
            Request::Change { .. } => {
                "changes need the user's approval (approval = \"medium\"), and nobody could be asked; nothing was changed"
                    .to_string()
            }
            Request::Look { action, .. } if action == super::GO_ON => {
                "nobody could be asked whether to go on".to_string()
            }
            Request::Look { .. } => {
                "every action needs the user's approval (approval = \"high\"), and nobody could be asked".to_string()
            }
            Request::Tool { name, server, .. } => format!(
                "{name} was not called: the MCP server {server}'s tools need the user's approval, and nobody could be asked; the user can allow them with allow = true (or the tool's name) under [mcp.servers.{server}] in their Tokamak settings"
            ),
        })
    }
}

/// The program profiling runs pytest with (`python -c PROFILE_PYTEST ARGS…`): pytest under
/// cProfile, the table sorted by cumulative time with full paths (`python -m cProfile` strips
/// them, and with them what tells the project's code from the rest).
pub const PROFILE_PYTEST: &str = "import cProfile, os, pstats, re, sys\nimport pytest\nprofile = cProfile.Profile()\nprofile.enable()\ncode = pytest.main(sys.argv[1:])\nprofile.disable()\npstats.Stats(profile).sort_stats('cumulative').print_stats(re.escape(os.getcwd()), 60)\nsys.exit(code)\n";

/// The program coverage runs pytest with (`python -c COVER_PYTEST FILES ARGS…`): pytest with
/// a line tracer on the listed files only (comma-separated, relative to the folder it runs
/// in) — Python's own `sys.settrace`, so it needs nothing installed —, their executed lines
/// printed last as `TOKAMAK-COVERAGE {"path": [line, …]}`.
pub const COVER_PYTEST: &str = "import json, os, sys, threading
wanted = {os.path.abspath(p) for p in sys.argv[1].split(',') if p}
hits = {}
def local(frame, event, arg):
    if event == 'line':
        hits.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
    return local
def trace(frame, event, arg):
    if frame.f_code.co_filename not in wanted:
        return None
    hits.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
    return local
sys.settrace(trace)
threading.settrace(trace)
import pytest
code = pytest.main(sys.argv[2:])
sys.settrace(None)
root = os.getcwd()
print('\\nTOKAMAK-COVERAGE ' + json.dumps({os.path.relpath(k, root): sorted(v) for k, v in hits.items()}))
sys.exit(code)
";

/// The program profiling runs a Node test command with (`node -e PROFILE_NODE COMMAND…`):
/// the command with V8's CPU profiler on in every Node process it starts (a preload given in
/// `NODE_OPTIONS=--require`, which Node 20 allows where it refuses `--cpu-prof`, starting the
/// inspector's profiler and writing its profile into a temporary folder at exit), then the
/// project's functions — outside
/// `node_modules` — as cProfile's table prints them (own and cumulative seconds, sampled, so
/// no call counts), for the same reading.
pub const PROFILE_NODE: &str = "const { spawnSync } = require('child_process');\nconst fs = require('fs'), os = require('os'), path = require('path');\nconst dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokamak-prof-'));\nconst preload = path.join(dir, 'preload.js');\nfs.writeFileSync(preload, \"try {\\n  const inspector = require('inspector'), fs = require('fs');\\n  const session = new inspector.Session();\\n  session.connect();\\n  session.post('Profiler.enable');\\n  session.post('Profiler.start');\\n  process.on('exit', () => session.post('Profiler.stop', (error, result) => {\\n    if (!error) fs.writeFileSync(\" + JSON.stringify(dir) + \" + '/' + process.pid + '.cpuprofile', JSON.stringify(result.profile));\\n  }));\\n} catch (e) {}\\n\");\nconst [command, ...args] = process.argv.slice(1);\nconst env = { ...process.env, NODE_OPTIONS: ((process.env.NODE_OPTIONS || '') + ' --require \"' + preload + '\"').trim() };\nconst run = spawnSync(command, args, { stdio: 'inherit', env });\nconst root = 'file://' + process.cwd() + '/';\nconst own = new Map(), cumulative = new Map();\nfor (const name of fs.readdirSync(dir).filter(n => n.endsWith('.cpuprofile'))) {\n  let profile;\n  try { profile = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')); } catch (e) { continue; }\n  const span = (profile.endTime - profile.startTime) / 1e6 / Math.max(1, profile.samples.length);\n  const byId = new Map(profile.nodes.map(n => [n.id, n]));\n  const total = n => {\n    if (n.total === undefined) n.total = (n.hitCount || 0) * span + (n.children || []).reduce((s, c) => s + total(byId.get(c)), 0);\n    return n.total;\n  };\n  for (const n of profile.nodes) {\n    const url = n.callFrame.url;\n    if (!url.startsWith(root) || url.includes('/node_modules/')) continue;\n    const key = url.slice(root.length) + ':' + (n.callFrame.lineNumber + 1) + '(' + (n.callFrame.functionName || '<anonymous>') + ')';\n    own.set(key, (own.get(key) || 0) + (n.hitCount || 0) * span);\n    cumulative.set(key, (cumulative.get(key) || 0) + total(n));\n  }\n}\nconsole.log('\\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)');\nfor (const [key, time] of [...cumulative].sort((a, b) => b[1] - a[1]).slice(0, 60)) {\n  console.log('        - ' + own.get(key).toFixed(3) + '    0.000 ' + time.toFixed(3) + '    0.000 ' + key);\n}\nfs.rmSync(dir, { recursive: true, force: true });\nprocess.exit(run.status === null ? 1 : run.status);\n";

/// Whether `argv` is an allowed test command run under a profiler ([`PROFILE_PYTEST`] for
/// `python -m pytest ARGS`, [`PROFILE_NODE`] for any), the line tracer ([`COVER_PYTEST`]) or
/// with Node's `--experimental-test-coverage`: what profiling and coverage run of the test
/// command.
pub fn allowed_measured(argv: &[String], allow: &[Vec<String>], test_command: Option<&[String]>) -> bool {
    // Node's test runner with its own coverage report: the test command with the flag added
    let flag = "--experimental-test-coverage";
    if argv.iter().filter(|a| *a == flag).count() == 1 {
        let plain: Vec<String> = argv.iter().filter(|a| *a != flag).cloned().collect();
        return allowed(&plain, allow, test_command);
    }
    if let [node, e, script, test @ ..] = argv
        && e == "-e"
        && script == PROFILE_NODE
    {
        return node == "node" && allowed(test, allow, test_command);
    }
    let rest = match argv {
        [_, c, script, rest @ ..] if c == "-c" && script == PROFILE_PYTEST => rest,
        [_, c, script, _files, rest @ ..] if c == "-c" && script == COVER_PYTEST => rest,
        _ => return false,
    };
    let mut plain = vec![argv[0].clone(), "-m".to_string(), "pytest".to_string()];
    plain.extend(rest.iter().cloned());
    allowed(&plain, allow, test_command)
}

/// Whether `argv` starts with one of the allowed argument lists (the test command counts as
/// allowed). The program must be written exactly as allowed: `./python` is not `python` —
/// it could be a file the agent wrote.
pub fn allowed(argv: &[String], allow: &[Vec<String>], test_command: Option<&[String]>) -> bool {
    let matches = |prefix: &[String]| !prefix.is_empty() && argv.starts_with(prefix);
    allow.iter().any(|prefix| matches(prefix)) || test_command.is_some_and(matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn commands_are_gated_by_prefix() {
        let allow = vec![argv("python -m pytest"), argv("ruff check")];
        let test = argv("npm test");
        let cases = [
            ("python -m pytest -q tests/a.py", true),
            ("python -m pytest", true),
            ("/usr/bin/python -m pytest", false),
            ("python -m pip install evil", false),
            ("python", false),
            ("ruff check src", true),
            ("ruff format", false),
            ("npm test", true),
            ("npm install", false),
            ("curl https://example.com", false),
            ("./python -m pytest", false),
        ];
        for (line, expected) in cases {
            assert_eq!(allowed(&argv(line), &allow, Some(&test)), expected, "{line}");
        }
        assert!(!allowed(&argv("anything"), &[vec![]], None), "an empty entry allows nothing");
    }

    #[tokio::test]
    async fn the_default_refuses_and_says_how_to_allow() {
        let decision = RefuseUnlisted
            .decide("r1", &Request::Command { argv: argv("curl -s x"), unconfined: false })
            .await;
        let Decision::Refuse(reason) = decision else { panic!("{decision:?}") };
        assert!(reason.contains("[commands] allow = [[\"curl\", \"-s\"]]"), "{reason}");
    }
}
