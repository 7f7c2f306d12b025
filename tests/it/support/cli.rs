//! `tokamak` as a user runs it from a shell, built like a `Command`: its output from the
//! command line run in the test's own process when it can be (its arguments, folder and
//! environment set for it and put back, stdout and stderr caught), else from the real binary.
//! A process has one in-process front end at most — a command line or a server — since the
//! environment, the current folder, the log and what the library learns once per process
//! (a sandbox found, a model's context) are the process's.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};

use super::in_process;

/// `tokamak` with its arguments, folder and environment.
pub struct Tokamak {
    /// The same, as the real binary: what runs when the test asks for a process.
    command: Command,
    args: Vec<OsString>,
    dir: Option<PathBuf>,
    /// Each variable set (`Some`) or removed (`None`), in order.
    env: Vec<(OsString, Option<OsString>)>,
    /// The test wants the process itself (its pipes, its pid).
    as_process: bool,
    /// Whether the last `output` came from the command line in this process.
    ran_here: bool,
}

impl Tokamak {
    pub fn new(args: &[&str]) -> Tokamak {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tokamak"));
        in_process::clean_env(&mut command);
        command.args(args);
        Tokamak {
            command,
            args: args.iter().map(OsString::from).collect(),
            dir: None,
            env: Vec::new(),
            as_process: false,
            ran_here: false,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Tokamak {
        self.command.arg(arg.as_ref());
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<S: AsRef<OsStr>>(&mut self, args: impl IntoIterator<Item = S>) -> &mut Tokamak {
        for arg in args {
            self.arg(arg);
        }
        self
    }

    pub fn current_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Tokamak {
        let dir = dir.into();
        self.command.current_dir(&dir);
        self.dir = Some(dir);
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Tokamak {
        self.command.env(key.as_ref(), value.as_ref());
        self.env.push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        &mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> &mut Tokamak {
        for (key, value) in vars {
            self.env(key, value);
        }
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Tokamak {
        self.command.env_remove(key.as_ref());
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// The process's stdin; the command line in this process reads none (it is no terminal).
    pub fn stdin(&mut self, stdin: impl Into<Stdio>) -> &mut Tokamak {
        self.command.stdin(stdin);
        self
    }

    /// Where the process's stdout goes: a process it is, then.
    pub fn stdout(&mut self, stdout: impl Into<Stdio>) -> &mut Tokamak {
        self.command.stdout(stdout);
        self.as_process = true;
        self
    }

    /// Where the process's stderr goes: a process it is, then.
    pub fn stderr(&mut self, stderr: impl Into<Stdio>) -> &mut Tokamak {
        self.command.stderr(stderr);
        self.as_process = true;
        self
    }

    /// The real binary's `Command`, for what only a process has (a `pre_exec`): a process it
    /// is, then.
    pub fn as_process(&mut self) -> &mut Command {
        self.as_process = true;
        &mut self.command
    }

    /// The real binary, run to its end.
    pub fn status(&mut self) -> std::io::Result<ExitStatus> {
        self.command.status()
    }

    /// The real binary, started.
    pub fn spawn(&mut self) -> std::io::Result<Child> {
        self.command.spawn()
    }

    /// Runs it to its end: its status, stdout and stderr.
    pub fn output(&mut self) -> std::io::Result<Output> {
        self.ran_here = false;
        if !self.as_process
            && let Some(output) = self.in_process()
        {
            self.ran_here = true;
            return output;
        }
        self.command.output()
    }

    /// Whether the last [`Tokamak::output`] came from the command line in this process.
    pub fn ran_in_this_process(&self) -> bool {
        self.ran_here
    }

    /// The command line in this process, when this process may have it.
    fn in_process(&self) -> Option<std::io::Result<Output>> {
        // on the test's own thread only: threads a test starts run theirs side by side, and the
        // environment and the folder are the process's
        let on_the_tests_thread = std::thread::current().name().is_some();
        if !on_the_tests_thread || !in_process::one_process_per_test() || !in_process::claim() {
            return None;
        }
        let out = Caught::default();
        let err = Caught::default();
        let code = {
            let _env = match Environment::set(&self.env, self.dir.as_deref()) {
                Ok(env) => env,
                // as starting the binary in a folder that is not there says
                Err(err) => return Some(Err(err)),
            };
            let _streams = tokamak::cli::stdio::Redirected::new(Box::new(out.clone()), Box::new(err.clone()));
            let args: Vec<OsString> =
                std::iter::once(OsString::from("tokamak")).chain(self.args.iter().cloned()).collect();
            // on a thread of its own, as `main` is: a runtime of its own, whatever the test's
            std::thread::spawn(move || {
                use tokamak::cli::command::{Parsed, execute, parse};
                match parse(args, false) {
                    Parsed::Command(command) => Some(execute(*command)),
                    Parsed::Exit(code) => Some(code),
                    // the protocols and the language server's benchmarks are the binary's
                    Parsed::Lsp | Parsed::Acp | Parsed::Latency(_) | Parsed::Memory(_) => None,
                }
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        };
        let code = code?;
        Some(Ok(Output {
            status: ExitStatus::from_raw(i32::from(code) << 8),
            stdout: out.take(),
            stderr: err.take(),
        }))
    }
}

/// Bytes a stream of the command line wrote.
#[derive(Clone, Default)]
struct Caught(Arc<Mutex<Vec<u8>>>);

impl Caught {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Write for Caught {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The environment and the current folder the command line runs in, put back when it drops.
struct Environment {
    dir: Option<PathBuf>,
}

impl Environment {
    /// Sets them, or says why the folder could not be entered (with everything put back).
    fn set(
        vars: &[(OsString, Option<OsString>)],
        dir: Option<&std::path::Path>,
    ) -> std::io::Result<Environment> {
        in_process::set_env(vars);
        let mut environment = Environment { dir: None };
        if let Some(dir) = dir {
            let before = std::env::current_dir()?;
            std::env::set_current_dir(dir)?;
            environment.dir = Some(before);
        }
        Ok(environment)
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        in_process::put_env_back();
        if let Some(dir) = self.dir.take() {
            let _ = std::env::set_current_dir(dir);
        }
    }
}
