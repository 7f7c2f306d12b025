//! The command line's standard streams: the process's own, or two writers that a caller
//! running the command line inside its own process (the tests) puts in their place for a
//! while. Everything the command line prints goes through here (`outln!`, `errln!`, the log).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writers standing in for stdout and stderr, while a [`Redirected`] lives.
struct Streams {
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
}

static REDIRECTED: Mutex<Option<Streams>> = Mutex::new(None);

/// Whether a write failed for another reason than a reader that went away.
static WRITE_FAILED: AtomicBool = AtomicBool::new(false);

/// Which of the two streams.
#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

fn write(stream: Stream, text: std::fmt::Arguments<'_>) {
    // formatted before the lock is taken: a value whose formatting logs would otherwise wait on
    // the lock its own line holds (the log writes here too)
    let text = text.to_string();
    let written = {
        let mut redirected = REDIRECTED.lock().unwrap_or_else(|e| e.into_inner());
        match (redirected.as_mut(), stream) {
            (Some(streams), Stream::Out) => streams.out.write_all(text.as_bytes()),
            (Some(streams), Stream::Err) => streams.err.write_all(text.as_bytes()),
            // the process's own streams, without holding the stand-ins' lock
            (None, _) => {
                drop(redirected);
                match stream {
                    Stream::Out => std::io::stdout().lock().write_all(text.as_bytes()),
                    Stream::Err => std::io::stderr().lock().write_all(text.as_bytes()),
                }
            }
        }
    };
    failed(stream, written);
}

/// Flushes stdout (or its stand-in): what a last line without its newline left buffered is
/// written before the command's status is read.
pub fn flush_out() {
    let flushed = {
        let mut redirected = REDIRECTED.lock().unwrap_or_else(|e| e.into_inner());
        match redirected.as_mut() {
            Some(streams) => streams.out.flush(),
            None => {
                drop(redirected);
                std::io::stdout().lock().flush()
            }
        }
    };
    failed(Stream::Out, flushed);
}

/// Takes note of a write that failed.
fn failed(stream: Stream, written: std::io::Result<()>) {
    match written {
        // a closed pipe (`tokamak check … | head`): what is left is not shown, and that is all
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        // a full disk under `--format json > out.json`: said once, and the command fails
        Err(err) if matches!(stream, Stream::Out) => {
            if !WRITE_FAILED.swap(true, Ordering::SeqCst) {
                let _ = writeln!(std::io::stderr(), "tokamak: cannot write the output: {err}");
            }
        }
        // stderr itself: nowhere left to say it, and the answer is whole
        Err(_) => {}
        Ok(()) => {}
    }
}

/// Whether a write failed for another reason than a reader that went away (then the command's
/// answer is not whole, and it does not end well).
pub fn write_failed() -> bool {
    WRITE_FAILED.load(Ordering::SeqCst)
}

/// Writes to stdout (or its stand-in); `outln!` and `out!` say it shorter.
pub fn to_out(text: std::fmt::Arguments<'_>) {
    write(Stream::Out, text);
}

/// Writes to stderr (or its stand-in); `errln!` says it shorter.
pub fn to_err(text: std::fmt::Arguments<'_>) {
    write(Stream::Err, text);
}

/// Whether the streams are stand-ins, not the process's.
pub fn redirected() -> bool {
    REDIRECTED.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// Whether a person can be asked: stdin is a terminal and the streams are the process's.
pub fn interactive() -> bool {
    !redirected() && std::io::stdin().is_terminal()
}

/// Asks the person at the terminal: `question` on stderr, their line from stdin.
pub fn ask(question: &str) -> std::io::Result<String> {
    {
        // held for the question only, not while the person thinks
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(question.as_bytes())?;
        stderr.flush()?;
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line)
}

/// The two streams replaced by `out` and `err` until it drops.
pub struct Redirected(());

impl Redirected {
    pub fn new(out: Box<dyn Write + Send>, err: Box<dyn Write + Send>) -> Redirected {
        *REDIRECTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Streams { out, err });
        Redirected(())
    }
}

impl Drop for Redirected {
    fn drop(&mut self) {
        if let Some(mut streams) = REDIRECTED.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = streams.out.flush();
            let _ = streams.err.flush();
        }
    }
}

/// stderr as the log's writer: the log lines go where the command's own lines go.
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        write(Stream::Err, format_args!("{}", String::from_utf8_lossy(bytes)));
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `println!` for the command line.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::stdio::to_out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` for the command line.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::stdio::to_out(format_args!($($arg)*)) };
}

/// `eprintln!` for the command line.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::stdio::to_err(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {errln, out, outln};
