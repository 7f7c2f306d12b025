//! The editor's stdin and stdout polled by the async runtime itself, when they are pipes or
//! sockets (as every editor starts a language server): a message read wakes the thread that
//! handles it, and a message written goes out from that thread, with no thread in between.
//! Tokio's own stdin and stdout read and write on its blocking threads, one hand-off each
//! way; on a machine whose cores sleep between keystrokes, each hand-off is a sleeping thread
//! to wake (a quarter of a millisecond on a small virtual machine, where a keystroke's own
//! work takes a twentieth of that).
//!
//! A pipe is opened again through `/proc/self/fd` (Linux), a description of Tokamak's own, so
//! making it non-blocking changes nothing for whoever else holds the editor's; a socket's
//! end is Tokamak's alone. Anything else (a terminal, a file, another system) is `None`, and
//! the caller reads and writes it the blocking way.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// A non-blocking pipe or socket registered with the runtime.
pub struct Pipe {
    fd: AsyncFd<std::fs::File>,
}

impl Pipe {
    /// The process's stdin, when it can be polled.
    pub fn stdin() -> Option<Pipe> {
        Pipe::open(0, false)
    }

    /// The process's stdout, when it can be polled.
    pub fn stdout() -> Option<Pipe> {
        Pipe::open(1, true)
    }

    fn open(fd: RawFd, write: bool) -> Option<Pipe> {
        let kind = kind(fd)?;
        let file = match kind {
            Kind::Fifo => reopen(fd, write)?,
            Kind::Socket => {
                // SAFETY: `fd` is open (fstat said so); the duplicate is owned from here on.
                let duplicate = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
                if duplicate < 0 {
                    return None;
                }
                // SAFETY: `duplicate` was just returned by fcntl and nothing else owns it.
                let owned = unsafe { OwnedFd::from_raw_fd(duplicate) };
                set_nonblocking(owned.as_raw_fd())?;
                std::fs::File::from(owned)
            }
        };
        let interest = if write { Interest::WRITABLE } else { Interest::READABLE };
        // SAFETY: the `File` owns its descriptor, which stays open and the same until the
        // `AsyncFd` (its owner from here on) drops it.
        match unsafe { AsyncFd::register_with_interest(file, interest) } {
            Ok(registered) => {
                tracing::debug!("fd {fd} is a {kind:?}, polled by the runtime");
                Some(Pipe { fd: registered })
            }
            Err(err) => {
                let (_, err) = err.into_parts();
                tracing::debug!("fd {fd} cannot be polled ({err}); it is read and written the blocking way");
                None
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Fifo,
    Socket,
}

fn kind(fd: RawFd) -> Option<Kind> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `stat` into the buffer it is given, or fails.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so the buffer is written.
    let mode = unsafe { stat.assume_init() }.st_mode & libc::S_IFMT;
    match mode {
        libc::S_IFIFO => Some(Kind::Fifo),
        libc::S_IFSOCK => Some(Kind::Socket),
        _ => None,
    }
}

/// A new description of the pipe `fd` is an end of, non-blocking.
#[cfg(target_os = "linux")]
fn reopen(fd: RawFd, write: bool) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{fd}"))
        .ok()
}

/// Elsewhere `/dev/fd` duplicates rather than reopens: the blocking way is kept.
#[cfg(not(target_os = "linux"))]
fn reopen(_fd: RawFd, _write: bool) -> Option<std::fs::File> {
    None
}

fn set_nonblocking(fd: RawFd) -> Option<()> {
    // SAFETY: F_GETFL and F_SETFL only read and set the flags of an open descriptor.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        (flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0).then_some(())
    }
}

impl AsyncRead for Pipe {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|file| file.get_ref().read(unfilled)) {
                Ok(read) => {
                    let read = read?;
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for Pipe {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            match ready.try_io(|file| file.get_ref().write(bytes)) {
                Ok(written) => return Poll::Ready(written),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Both ends of a pipe, the way an editor hands them over, read and written through
    /// `Pipe` — including a write larger than the pipe holds, which waits for the reader
    /// instead of failing or blocking the thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pipe_is_read_and_written_without_blocking() {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two new descriptors into the array, owned below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both were just created and nothing else owns them.
        let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let (Some(mut ours_in), Some(mut ours_out)) =
            (Pipe::open(reader.as_raw_fd(), false), Pipe::open(writer.as_raw_fd(), true))
        else {
            // FIXME: only Linux reopens a pipe; elsewhere the blocking way is the one in use
            #[cfg(target_os = "linux")]
            panic!("a pipe must be pollable on Linux");
            #[cfg(not(target_os = "linux"))]
            return;
        };
        let message: Vec<u8> = (0..1_000_000u32).map(|n| (n % 251) as u8).collect();
        let sent = message.clone();
        let writing = tokio::spawn(async move {
            ours_out.write_all(&sent).await.unwrap();
            drop(ours_out);
        });
        drop(writer); // the original description: the reader's end sees EOF once ours goes
        let mut got = Vec::new();
        ours_in.read_to_end(&mut got).await.unwrap();
        writing.await.unwrap();
        assert_eq!(got.len(), message.len());
        assert!(got == message, "the bytes arrived changed");
        // the original description stays blocking
        // SAFETY: reads the flags of a descriptor still open.
        let flags = unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }

    #[test]
    fn a_regular_file_is_left_to_the_blocking_way() {
        let file = tempfile::tempfile().unwrap();
        assert!(kind(file.as_raw_fd()).is_none());
    }
}
