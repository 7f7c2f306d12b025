//! A server in the test's own process — the language server or the ACP agent — on a thread of
//! its own with its own runtime, over a socket pair: its environment set for it and put back,
//! its log kept as a process's stderr would be, stopped and joined when it drops. A process
//! has one such server at most (the environment, the log and the logging layer are the
//! process's); a test that needs more, or asks for processes, gets the real binary.

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::oneshot;

/// A server running in this process.
pub struct InProcess {
    /// The test's end of the connection.
    pub socket: UnixStream,
    /// The status it ended with, once it has.
    status: Arc<Mutex<Option<i32>>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _env: EnvGuard,
}

impl InProcess {
    /// Starts `serve` (given the server's ends of the connection and a stop) with `vars` set;
    /// `None` when this process has had its in-process server already, or the test asked for
    /// processes ([`servers_as_processes`]).
    pub fn start<F, Fut>(vars: &[(String, String)], serve: F) -> Option<InProcess>
    where
        F: FnOnce(OwnedReadHalf, OwnedWriteHalf, oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: Future<Output = i32>,
    {
        if !claim() {
            return None;
        }
        // a process has one in-process front end at most: its command line, or a server
        let env = EnvGuard::set(vars);
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let status = Arc::new(Mutex::new(None));
        let ended = Arc::clone(&status);
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
            let code = runtime.block_on(async move {
                theirs.set_nonblocking(true).expect("non-blocking");
                let (input, output) =
                    tokio::net::UnixStream::from_std(theirs).expect("a socket").into_split();
                serve(input, output, stopped).await
            });
            // what the server left running (a run's task, a blocking wait) goes with it
            runtime.shutdown_timeout(Duration::from_secs(5));
            *ended.lock().unwrap() = Some(code);
        });
        Some(InProcess { socket: ours, status, stop: Some(stop), thread: Some(thread), _env: env })
    }

    /// How it ended, as a process's status would say; `None` while it runs.
    pub fn status(&self) -> Option<ExitStatus> {
        self.status.lock().unwrap().map(|code| ExitStatus::from_raw((code & 0xff) << 8))
    }

    /// Closes its input, as an editor closing the server's stdin.
    pub fn close_input(&self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Write);
    }
}

impl Drop for InProcess {
    /// Stopped at once and waited for: nothing of it outlives the test's hold on it (its
    /// environment, the test's user folders).
    fn drop(&mut self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Environment variables set for the server in this process, put back when it drops.
struct EnvGuard;

/// What the in-process front end's environment replaced, while it is set: a process the test
/// starts meanwhile gets the environment from before (`clean_env`).
static REPLACED: Mutex<Vec<(OsString, Option<OsString>)>> = Mutex::new(Vec::new());

impl EnvGuard {
    fn set(vars: &[(String, String)]) -> EnvGuard {
        let vars: Vec<(OsString, Option<OsString>)> =
            vars.iter().map(|(key, value)| (key.into(), Some(value.into()))).collect();
        set_env(&vars);
        EnvGuard
    }
}

impl Drop for EnvGuard {
    fn drop(&mut self) {
        put_env_back();
    }
}

/// Sets (`Some`) or removes (`None`) each variable for this process's one in-process front end,
/// what each was before kept for [`put_env_back`] and [`clean_env`].
pub fn set_env(vars: &[(OsString, Option<OsString>)]) {
    let mut replaced = REPLACED.lock().unwrap_or_else(|e| e.into_inner());
    for (key, value) in vars {
        if !replaced.iter().any(|(replaced, _)| replaced == key) {
            replaced.push((key.clone(), std::env::var_os(key)));
        }
        // SAFETY: set before the front end's threads start, by the one in-process front end a
        // process ever has (`IN_PROCESS_USED`; each test is a process of its own under nextest,
        // and under `cargo test` only the first test to start a server sets it). Threads the
        // test started already (a model server's) may run meanwhile: they, like all of
        // Tokamak, read the environment through `std::env`, whose lock `set_var` takes; a
        // thread calling libc's `getenv` directly at this moment would not be safe.
        unsafe {
            match value {
                Some(value) => std::env::set_var(key, value),
                None => std::env::remove_var(key),
            }
        }
    }
}

/// Puts back every variable [`set_env`] replaced.
pub fn put_env_back() {
    let mut replaced = REPLACED.lock().unwrap_or_else(|e| e.into_inner());
    for (key, value) in replaced.drain(..) {
        // SAFETY: as in `set_env`: the front end's runtime has been shut down, and threads it left
        // behind (a sweep, a kill timer) read the environment through `std::env` only
        unsafe {
            match value {
                Some(value) => std::env::set_var(&key, value),
                None => std::env::remove_var(&key),
            }
        }
    }
}

/// A process the test starts gets the environment from before the in-process front end's.
pub fn clean_env(command: &mut Command) {
    for (key, value) in REPLACED.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
}

/// Whether this process has had its in-process front end (a server or a command line): the
/// next ones are real processes (the environment, the log and the logging layer are the
/// process's, once).
static IN_PROCESS_USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes this process's one in-process front end (a server or a command line): `false` when it
/// has had one already, or the test asked for processes.
pub fn claim() -> bool {
    !AS_PROCESSES.with(std::cell::Cell::get) && !IN_PROCESS_USED.swap(true, Ordering::SeqCst)
}

/// Whether each test runs in a process of its own (nextest's way, which the suite runs under),
/// so that setting the process's environment and folder for a command line disturbs no other
/// test; under `cargo test`'s threads a command line is the real binary.
pub fn one_process_per_test() -> bool {
    std::env::var("NEXTEST_EXECUTION_MODE").is_ok_and(|mode| mode == "process-per-test")
}

thread_local! {
    /// This test's servers are real processes ([`servers_as_processes`]).
    static AS_PROCESSES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Every server and command line this test starts from now on is the real binary: for what
/// only a process shows (its exit status, its children outliving it or not, a crash, its stderr).
pub fn servers_as_processes() {
    AS_PROCESSES.with(|it| it.set(true));
}

/// Everything in-process servers logged, as a process's stderr would hold it.
static LOG: Mutex<String> = Mutex::new(String::new());

/// Where the in-process servers' log lines go.
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).push_str(&String::from_utf8_lossy(bytes));
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything the in-process server logged so far.
pub fn log() -> String {
    LOG.lock().map(|s| s.clone()).unwrap_or_default()
}
