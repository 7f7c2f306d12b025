//! What Landlock does not mediate, kept to the writable folders: a file's mode, owner, times
//! and extended attributes (and its truncation by name, which kernels before 6.2 let through).
//! The confined command runs under a seccomp filter that hands each such call to the helper
//! (seccomp's user notification); the helper opens the very file the call names, as the
//! command would have, and does the call itself only when that file lies inside a folder the
//! policy lets the command write — anything else fails with EPERM and a line on the command's
//! stderr. Doing it on the file it opened, rather than letting the call go on, leaves no time
//! between the check and the change in which a link could be swapped. The command also gets a
//! Landlock domain of its own whose signal scope keeps it from killing the helper that reaps
//! what it leaves (Linux 6.12+).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What it adds, for `tokamak sandbox`.
pub const DESCRIBED: &str =
    "modes, owners, times and attributes change only inside the writable folders (seccomp)";

/// Syscall numbers newer than the `libc` crate knows (the same on every architecture).
const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_REMOVEXATTRAT: libc::c_long = 466;
const SYS_FILE_SETATTR: libc::c_long = 469;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// The calls handed to the helper.
fn watched() -> Vec<libc::c_long> {
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_fchmodat2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        libc::SYS_truncate,
        SYS_SETXATTRAT,
        SYS_REMOVEXATTRAT,
        SYS_FILE_SETATTR,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

/// Calls refused outright (EPERM): io_uring (its SETXATTR ops would pass the watch when the
/// network filter is off) and `userfaultfd` (a page fault could stall the helper's read).
fn refused() -> Vec<libc::c_long> {
    vec![
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_userfaultfd,
    ]
}

/// `ioctl` requests refused (EPERM), on any file: setting a file's flags (`chattr`), its
/// extended attributes' flags, or enabling fs-verity — only ownership is checked for them, and
/// Landlock mediates ioctls on devices only.
const REFUSED_IOCTLS: &[u32] = &[
    0x4008_6602, // FS_IOC_SETFLAGS
    0x4004_6602, // FS_IOC32_SETFLAGS
    0x401c_5820, // FS_IOC_FSSETXATTR
    0x4080_6685, // FS_IOC_ENABLE_VERITY
];

/// The seccomp program: refused calls fail, the watched calls go to the helper, every other
/// call goes on; a call of another architecture's ABI (x32, i386) kills the process, as it
/// could name the same operation by another number. With `truncate_hole` (Landlock before ABI
/// 3, which lets an open for reading truncate), an open for reading with `O_TRUNC` fails with
/// EACCES and `openat2`, whose flags a filter cannot see, with ENOSYS. Not `watching` (another
/// supervisor has the only listener), the watched calls go on — but `truncate` with the hole.
fn program(truncate_hole: bool, watching: bool) -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
    const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let errno = |errno: i32| libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA);
    // the low half of argument `n` (little-endian)
    let arg = |n: u32| op(LD_W_ABS, 0, 0, 16 + 8 * n);
    let nr = || op(LD_W_ABS, 0, 0, 0);
    // `then` when the call is `call`, else on past it; `then` ends in a return or reloads nr
    let when = |call: libc::c_long, then: Vec<libc::sock_filter>| {
        let mut block = vec![op(JEQ, 0, u8::try_from(then.len()).unwrap_or(u8::MAX), call as u32)];
        block.extend(then);
        block
    };
    let mut program = vec![
        op(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        op(JEQ, 1, 0, AUDIT_ARCH),
        op(RET, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        nr(),
        op(JSET, 0, 1, 0x4000_0000), // x32's calls
        op(RET, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
    ];
    for call in refused() {
        program.extend(when(call, vec![op(RET, 0, 0, errno(libc::EPERM))]));
    }
    let mut ioctl = vec![arg(1)];
    for &request in REFUSED_IOCTLS {
        ioctl.extend([op(JEQ, 0, 1, request), op(RET, 0, 0, errno(libc::EPERM))]);
    }
    ioctl.push(nr());
    program.extend(when(libc::SYS_ioctl, ioctl));
    if truncate_hole {
        let read_and_truncate = |flags: u32| {
            vec![
                arg(flags),
                op(AND, 0, 0, (libc::O_ACCMODE | libc::O_TRUNC) as u32),
                // read-only, or the access mode 3 that asks for no access at all
                op(JEQ, 1, 0, libc::O_TRUNC as u32),
                op(JEQ, 0, 1, (libc::O_TRUNC | libc::O_ACCMODE) as u32),
                op(RET, 0, 0, errno(libc::EACCES)),
                nr(),
            ]
        };
        program.extend(when(libc::SYS_openat, read_and_truncate(2)));
        if !watching {
            program.extend(when(libc::SYS_truncate, vec![op(RET, 0, 0, errno(libc::EPERM))]));
        }
        #[cfg(target_arch = "x86_64")]
        program.extend(when(libc::SYS_open, read_and_truncate(1)));
        program.extend(when(libc::SYS_openat2, vec![op(RET, 0, 0, errno(libc::ENOSYS))]));
    }
    for call in watched().into_iter().filter(|_| watching) {
        program.extend(when(call, vec![op(RET, 0, 0, libc::SECCOMP_RET_USER_NOTIF)]));
    }
    program.push(op(RET, 0, 0, libc::SECCOMP_RET_ALLOW));
    program
}

/// Made in the helper before the command starts: the program, the socket the command's
/// process sends its listener back on, and the command's own Landlock domain.
pub struct Setup {
    program: Vec<libc::sock_filter>,
    ours: OwnedFd,
    theirs: OwnedFd,
    /// The command's own Landlock domain: nothing it can ptrace or read of the helper's, nor,
    /// with scopes (ABI 6), signal.
    scope: OwnedFd,
    watching: bool,
}

impl Setup {
    /// For a kernel of Landlock ABI `abi`; `watching`: the watched calls go to the helper (else
    /// they go on, but for truncation where Landlock lets it by).
    pub fn new(abi: i64, watching: bool) -> io::Result<Setup> {
        let mut pair = [0; 2];
        // SAFETY: socketpair writes two descriptors into `pair`, a local array of two.
        if unsafe {
            libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, pair.as_mut_ptr())
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just made and are owned by nothing else.
        let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        Ok(Setup { program: program(abi < 3, watching), watching, ours, theirs, scope: own_domain(abi)? })
    }

    /// What runs in the command's process between `fork` and `exec` (the helper has one
    /// thread): its own Landlock domain, the filter, and the filter's listener sent back.
    pub fn in_child(&self) -> io::Result<()> {
        // SAFETY: landlock_restrict_self on a ruleset descriptor we own; no memory is passed.
        if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, self.scope.as_raw_fd(), 0u32) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let fprog = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: seccomp reads `fprog` and the program it points to, both alive here; no new
        // privileges is already set (Landlock needs it too).
        let install = |flags: libc::c_ulong| unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        // a signal that comes while the helper does the call must not interrupt the caller's
        // wait (it would see EINTR, or its call done twice): Linux 5.19+, else without
        if !self.watching {
            return if install(0) == 0 { Ok(()) } else { Err(io::Error::last_os_error()) };
        }
        let mut listener =
            install(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
        if listener < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            listener = install(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
        }
        if listener < 0 {
            return Err(io::Error::last_os_error());
        }
        let listener = listener as RawFd;
        let sent = send_fd(self.theirs.as_raw_fd(), listener);
        // SAFETY: closing the listener we were just given; the helper holds its copy.
        unsafe { libc::close(listener) };
        sent
    }

    /// After the command started: the watch over its calls (`None` when not watching).
    pub fn watch(self, writable: &[PathBuf]) -> io::Result<Option<Watch>> {
        drop(self.theirs);
        if !self.watching {
            return Ok(None);
        }
        let listener = receive_fd(self.ours.as_raw_fd())?;
        let roots = writable
            .iter()
            .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()))
            .collect();
        Ok(Some(Watch { listener, roots, said: 0, say: sayer() }))
    }

    /// Whether a watch can be set up here: `args` (a program that does nothing) run under it.
    /// `Err` EBUSY: another supervisor already watches this process (Tokamak inside Tokamak,
    /// LXD's syscall interception) — the kernel allows one listener to a chain.
    pub fn try_on(self, program: &std::ffi::OsStr, args: &[&str]) -> io::Result<()> {
        use std::os::unix::process::CommandExt;
        let setup = std::sync::Arc::new(self);
        let mut command = std::process::Command::new(program);
        command.args(args).stdin(std::process::Stdio::null());
        let shared = std::sync::Arc::clone(&setup);
        // SAFETY: as in the reaper: one thread, only syscalls between fork and exec.
        unsafe { command.pre_exec(move || shared.in_child()) };
        let spawned = command.spawn();
        drop(command);
        let mut child = spawned?;
        let setup =
            std::sync::Arc::try_unwrap(setup).map_err(|_| io::Error::other("the setup is still shared"))?;
        let _watch = setup.watch(&[])?;
        let status = child.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("the watched program ended {status}")))
        }
    }
}

/// Where the refusals are said: the command's stderr, written by a thread of its own, so a
/// stderr that blocks (a terminal stopped with ^S) never stalls the helper; a line that
/// cannot be queued is dropped.
fn sayer() -> std::sync::mpsc::SyncSender<String> {
    let (said, lines) = std::sync::mpsc::sync_channel::<String>(TOLD);
    std::thread::spawn(move || {
        use std::io::Write;
        for line in lines {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    });
    said
}

/// A Landlock ruleset for the command's own domain: it handles making block devices (which it
/// could not anyway) and grants nothing more, so the command is in a domain below the
/// helper's — Landlock keeps it from ptracing the helper or reading its memory — and, from ABI
/// 6 (Linux 6.12), the signal scope keeps it from killing the helper.
fn own_domain(abi: i64) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct Attr {
        fs: u64,
        net: u64,
        scoped: u64,
    }
    const MAKE_BLOCK: u64 = 1 << 11;
    const SCOPE_SIGNAL: u64 = 1 << 1;
    // a kernel that knows fewer fields takes the larger struct when the rest is zero
    let attr = Attr { fs: MAKE_BLOCK, net: 0, scoped: if abi >= 6 { SCOPE_SIGNAL } else { 0 } };
    // SAFETY: landlock_create_ruleset reads `attr`, a local of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const Attr,
            std::mem::size_of::<Attr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned to us and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn send_fd(socket: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u64; 4]; // room for one descriptor's cmsg, aligned
    // SAFETY: the message's buffers are the locals above, CMSG_* stay within `control`
    // (CMSG_SPACE of one int is 24 bytes, it holds 32), and sendmsg only reads them.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        if libc::sendmsg(socket, &message, 0) != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn receive_fd(socket: RawFd) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u64; 4];
    // SAFETY: as in `send_fd`; recvmsg writes only into the locals the message points to, and
    // the descriptor read back is checked to be one SCM_RIGHTS message of one int.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = std::mem::size_of_val(&control) as _;
        if libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC) != 1 {
            return Err(io::Error::other("the command's process sent no seccomp listener"));
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("the command's process sent no seccomp listener"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// The helper's side: answers the command's watched calls.
pub struct Watch {
    listener: OwnedFd,
    roots: Vec<PathBuf>,
    said: usize,
    say: std::sync::mpsc::SyncSender<String>,
}

/// How many refusals are told on the command's stderr (a `chmod -R` could make thousands).
const TOLD: usize = 5;

impl Watch {
    /// Waits up to `timeout` for a call and answers it. `false` once no process is left under
    /// the filter (the watch is over).
    pub fn serve(&mut self, timeout: std::time::Duration) -> bool {
        let mut poll = libc::pollfd { fd: self.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let millis = timeout.as_millis().min(1000) as libc::c_int;
        // SAFETY: poll on one pollfd, a local.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready <= 0 {
            return true;
        }
        if poll.revents & libc::POLLIN != 0 {
            self.answer();
            return true;
        }
        poll.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) == 0
    }

    fn answer(&mut self) {
        // SAFETY: the kernel wants a zeroed notification to fill; ioctl writes only into it.
        let mut notice: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: NOTIF_RECV writes one seccomp_notif into `notice`.
        if unsafe { libc::ioctl(self.listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notice) } != 0
        {
            return; // the caller was killed meanwhile, or a signal
        }
        let error = match self.decide(&notice) {
            Ok(()) => 0,
            Err(errno) => -errno,
        };
        let mut response = libc::seccomp_notif_resp { id: notice.id, val: 0, error, flags: 0 };
        // SAFETY: NOTIF_SEND reads one seccomp_notif_resp; a caller gone since is ENOENT.
        unsafe { libc::ioctl(self.listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
    }

    /// Does the call for the command, or says why not: `Err` is an errno.
    fn decide(&mut self, notice: &libc::seccomp_notif) -> Result<(), i32> {
        let call = Call::of(notice.data.nr as libc::c_long, notice.data.args)?;
        let pid = notice.pid;
        let memory = File::open(format!("/proc/{pid}/mem")).map_err(|_| libc::EPERM)?;
        let target = open_target(pid, &memory, &call.target)?;
        let operation = call.operation.read(&memory)?;
        // the process we read is the one that asked (its pid was not reused meanwhile)
        let mut id = notice.id;
        // SAFETY: NOTIF_ID_VALID reads one u64.
        if unsafe { libc::ioctl(self.listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) } != 0
        {
            return Err(libc::ENOENT);
        }
        let Ok(named) = std::fs::read_link(format!("/proc/self/fd/{}", target.as_raw_fd())) else {
            return Err(libc::EPERM);
        };
        if !self.may_change(&named) {
            if self.said < TOLD {
                // not the helper's own prefix: the command ran, this is no refusal to run it
                let _ = self.say.try_send(format!(
                    "tokamak-sandbox refused {}: {} is outside the folders this command may change",
                    call.name,
                    named.display()
                ));
                self.said += 1;
            }
            return Err(libc::EPERM);
        }
        operation.perform(&target)
    }

    /// Whether the file at `named` (as `/proc/self/fd` names it) lies in a writable folder, or
    /// is no file of the user's at all (a pipe, a socket, a memfd).
    fn may_change(&self, named: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let bytes = named.as_os_str().as_bytes();
        if !bytes.starts_with(b"/") || bytes.starts_with(b"/memfd:") {
            return true;
        }
        let kept = bytes.strip_suffix(b" (deleted)").unwrap_or(bytes);
        let named = Path::new(std::ffi::OsStr::from_bytes(kept));
        self.roots.iter().any(|root| named.starts_with(root))
    }
}

/// A watched call, read from its number and arguments.
struct Call {
    name: &'static str,
    target: Target,
    operation: Operation<u64>,
}

/// The file a call names.
enum Target {
    /// `path` (an address in the caller) from `dirfd` (or its working folder); the last
    /// link followed or not; an empty path naming `dirfd` itself when allowed.
    Path { dirfd: i32, path: u64, follow: bool, empty: bool },
    /// An open descriptor of the caller's.
    Fd(i32),
}

/// What a call does to the file; `A` is an address in the caller before it is read.
enum Operation<A> {
    Mode(libc::mode_t),
    Owner(libc::uid_t, libc::gid_t),
    /// Two timespecs, or now.
    Times(Option<A>),
    /// Two timevals (`utimes`, `futimesat`), or now.
    TimeVals(Option<A>),
    /// A `utimbuf` (`utime`): two whole seconds, or now.
    TimeBuf(Option<A>),
    SetAttribute {
        name: A,
        value: A,
        size: usize,
        flags: i32,
    },
    RemoveAttribute {
        name: A,
    },
    Truncate(i64),
}

/// What the operation needs, read from the caller's memory.
enum Operands {
    Mode(libc::mode_t),
    Owner(libc::uid_t, libc::gid_t),
    Times(Option<[libc::timespec; 2]>),
    SetAttribute { name: CString, value: Vec<u8>, flags: i32 },
    RemoveAttribute { name: CString },
    Truncate(i64),
}

const AT_FDCWD: i32 = libc::AT_FDCWD;

impl Call {
    fn of(number: libc::c_long, args: [u64; 6]) -> Result<Call, i32> {
        let at = |dirfd: u64, path: u64, flags: u64| Target::Path {
            dirfd: dirfd as i32,
            path,
            follow: flags as i32 & libc::AT_SYMLINK_NOFOLLOW == 0,
            empty: flags as i32 & libc::AT_EMPTY_PATH != 0,
        };
        let path = |path: u64, follow: bool| Target::Path { dirfd: AT_FDCWD, path, follow, empty: false };
        let set = |name, value, size: u64, flags: u64| Operation::SetAttribute {
            name,
            value,
            size: size as usize,
            flags: flags as i32,
        };
        let (name, target, operation) = match number {
            libc::SYS_fchmod => {
                ("chmod", Target::Fd(args[0] as i32), Operation::Mode(args[1] as libc::mode_t))
            }
            libc::SYS_fchmodat => {
                ("chmod", at(args[0], args[1], 0), Operation::Mode(args[2] as libc::mode_t))
            }
            libc::SYS_fchmodat2 => {
                ("chmod", at(args[0], args[1], args[3]), Operation::Mode(args[2] as libc::mode_t))
            }
            libc::SYS_fchown => ("chown", Target::Fd(args[0] as i32), owner(args[1], args[2])),
            libc::SYS_fchownat => ("chown", at(args[0], args[1], args[4]), owner(args[2], args[3])),
            libc::SYS_utimensat => {
                let times = Operation::Times((args[2] != 0).then_some(args[2]));
                if args[1] == 0 {
                    // utimensat(fd, NULL, …) changes the descriptor's file (futimens)
                    ("touch", Target::Fd(args[0] as i32), times)
                } else {
                    ("touch", at(args[0], args[1], args[3]), times)
                }
            }
            libc::SYS_setxattr => ("setxattr", path(args[0], true), set(args[1], args[2], args[3], args[4])),
            libc::SYS_lsetxattr => {
                ("setxattr", path(args[0], false), set(args[1], args[2], args[3], args[4]))
            }
            libc::SYS_fsetxattr => {
                ("setxattr", Target::Fd(args[0] as i32), set(args[1], args[2], args[3], args[4]))
            }
            libc::SYS_removexattr => {
                ("removexattr", path(args[0], true), Operation::RemoveAttribute { name: args[1] })
            }
            libc::SYS_lremovexattr => {
                ("removexattr", path(args[0], false), Operation::RemoveAttribute { name: args[1] })
            }
            libc::SYS_fremovexattr => {
                ("removexattr", Target::Fd(args[0] as i32), Operation::RemoveAttribute { name: args[1] })
            }
            libc::SYS_truncate => ("truncate", path(args[0], true), Operation::Truncate(args[1] as i64)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chmod => ("chmod", path(args[0], true), Operation::Mode(args[1] as libc::mode_t)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chown => ("chown", path(args[0], true), owner(args[1], args[2])),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_lchown => ("chown", path(args[0], false), owner(args[1], args[2])),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_utimes => {
                ("touch", path(args[0], true), Operation::TimeVals((args[1] != 0).then_some(args[1])))
            }
            #[cfg(target_arch = "x86_64")]
            libc::SYS_futimesat if args[1] == 0 => {
                ("touch", Target::Fd(args[0] as i32), Operation::TimeVals((args[2] != 0).then_some(args[2])))
            }
            #[cfg(target_arch = "x86_64")]
            libc::SYS_futimesat => {
                ("touch", at(args[0], args[1], 0), Operation::TimeVals((args[2] != 0).then_some(args[2])))
            }
            #[cfg(target_arch = "x86_64")]
            libc::SYS_utime => {
                ("touch", path(args[0], true), Operation::TimeBuf((args[1] != 0).then_some(args[1])))
            }
            // the *xattrat calls (Linux 6.13) and file_setattr (6.17) are not done for the
            // command: it is told they do not exist, and C libraries fall back
            _ => return Err(libc::ENOSYS),
        };
        Ok(Call { name, target, operation })
    }
}

fn owner(uid: u64, gid: u64) -> Operation<u64> {
    Operation::Owner(uid as libc::uid_t, gid as libc::gid_t)
}

/// The longest path and attribute name and value a call may pass (PATH_MAX, XATTR_NAME_MAX,
/// XATTR_SIZE_MAX).
const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;
const VALUE_MAX: usize = 65536;

impl Operation<u64> {
    fn read(&self, memory: &File) -> Result<Operands, i32> {
        Ok(match *self {
            Operation::Mode(mode) => Operands::Mode(mode),
            Operation::Owner(uid, gid) => Operands::Owner(uid, gid),
            Operation::Times(None) | Operation::TimeVals(None) | Operation::TimeBuf(None) => {
                Operands::Times(None)
            }
            Operation::TimeVals(Some(address)) => {
                let mut bytes = [0u8; 32];
                memory.read_exact_at(&mut bytes, address).map_err(|_| libc::EFAULT)?;
                let word = |at: usize| i64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
                if [word(8), word(24)].iter().any(|micros| !(0..1_000_000).contains(micros)) {
                    return Err(libc::EINVAL);
                }
                let spec =
                    |seconds: i64, micros: i64| libc::timespec { tv_sec: seconds, tv_nsec: micros * 1000 };
                Operands::Times(Some([spec(word(0), word(8)), spec(word(16), word(24))]))
            }
            Operation::TimeBuf(Some(address)) => {
                let mut bytes = [0u8; 16];
                memory.read_exact_at(&mut bytes, address).map_err(|_| libc::EFAULT)?;
                let word = |at: usize| i64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
                let spec = |seconds: i64| libc::timespec { tv_sec: seconds, tv_nsec: 0 };
                Operands::Times(Some([spec(word(0)), spec(word(8))]))
            }
            Operation::Times(Some(address)) => {
                let mut bytes = [0u8; 2 * std::mem::size_of::<libc::timespec>()];
                memory.read_exact_at(&mut bytes, address).map_err(|_| libc::EFAULT)?;
                // SAFETY: two timespecs are plain integers; every bit pattern is one.
                Operands::Times(Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) }))
            }
            Operation::SetAttribute { name, value, size, flags } => {
                if size > VALUE_MAX {
                    return Err(libc::E2BIG);
                }
                let mut bytes = vec![0u8; size];
                if size > 0 {
                    memory.read_exact_at(&mut bytes, value).map_err(|_| libc::EFAULT)?;
                }
                Operands::SetAttribute {
                    name: read_string(memory, name, NAME_MAX + 1, libc::ERANGE)?,
                    value: bytes,
                    flags,
                }
            }
            Operation::RemoveAttribute { name } => {
                Operands::RemoveAttribute { name: read_string(memory, name, NAME_MAX + 1, libc::ERANGE)? }
            }
            Operation::Truncate(length) => Operands::Truncate(length),
        })
    }
}

impl Operands {
    /// Does it to `target`, a descriptor of the helper's for the file the call named.
    fn perform(self, target: &OwnedFd) -> Result<(), i32> {
        let fd = target.as_raw_fd();
        let through = CString::new(format!("/proc/self/fd/{fd}")).map_err(|_| libc::EINVAL)?;
        let link = is_link(fd);
        // SAFETY (each call below): the strings and buffers passed are locals alive for the
        // call; the descriptor is ours; none keeps a pointer.
        let result = unsafe {
            match self {
                // Linux has no modes on links; following /proc/self/fd to one would go past it
                Operands::Mode(_) if link => return Err(libc::EOPNOTSUPP),
                Operands::Mode(mode) => libc::chmod(through.as_ptr(), mode),
                Operands::Owner(uid, gid) => libc::fchownat(fd, c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH),
                Operands::Times(times) => {
                    let pointer = times.as_ref().map_or(std::ptr::null(), |times| times.as_ptr());
                    libc::utimensat(fd, c"".as_ptr(), pointer, libc::AT_EMPTY_PATH)
                }
                // user attributes are refused on links by Linux as well
                Operands::SetAttribute { .. } | Operands::RemoveAttribute { .. } if link => {
                    return Err(libc::EPERM);
                }
                Operands::SetAttribute { name, value, flags } => {
                    libc::setxattr(through.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), flags)
                }
                Operands::RemoveAttribute { name } => libc::removexattr(through.as_ptr(), name.as_ptr()),
                Operands::Truncate(length) => libc::truncate(through.as_ptr(), length),
            }
        };
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM))
        }
    }
}

fn is_link(fd: RawFd) -> bool {
    // SAFETY: fstatat writes one stat into a zeroed local.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstatat(fd, c"".as_ptr(), &mut stat, libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW) == 0
            && stat.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}

/// Opens the file a call names, as the caller would reach it, without rights (`O_PATH`).
fn open_target(pid: u32, memory: &File, target: &Target) -> Result<OwnedFd, i32> {
    match *target {
        Target::Fd(fd) => open_path(&format!("/proc/{pid}/fd/{fd}")),
        Target::Path { dirfd, path, follow, empty } => {
            if path == 0 {
                return Err(libc::EFAULT);
            }
            let path = as_the_caller(read_string(memory, path, PATH_MAX, libc::ENAMETOOLONG)?, pid);
            let bytes = path.as_bytes();
            if bytes.is_empty() && !empty {
                return Err(libc::ENOENT);
            }
            let base = if bytes.first() == Some(&b'/') {
                None
            } else if dirfd == AT_FDCWD {
                Some(open_path(&format!("/proc/{pid}/cwd"))?)
            } else {
                Some(open_path(&format!("/proc/{pid}/fd/{dirfd}"))?)
            };
            if bytes.is_empty() {
                return base.ok_or(libc::ENOENT);
            }
            let flags = libc::O_PATH | libc::O_CLOEXEC | if follow { 0 } else { libc::O_NOFOLLOW };
            let from = base.as_ref().map_or(AT_FDCWD, AsRawFd::as_raw_fd);
            // SAFETY: openat with a NUL-terminated path we own; the result is checked.
            let fd = unsafe { libc::openat(from, path.as_ptr(), flags) };
            if fd < 0 {
                return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOENT));
            }
            // SAFETY: a descriptor just returned to us.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    }
}

/// `path` as the caller means it: `/proc/self`, `/proc/thread-self`, `/dev/fd` and
/// `/dev/std*` name the caller's own, not the helper's.
fn as_the_caller(path: CString, pid: u32) -> CString {
    let bytes = path.as_bytes();
    let own = format!("/proc/{pid}");
    let replaced: Option<Vec<u8>> = [
        (&b"/proc/self"[..], own.clone()),
        (&b"/proc/thread-self"[..], format!("{own}/task/{pid}")),
        (&b"/dev/fd"[..], format!("{own}/fd")),
        (&b"/dev/stdin"[..], format!("{own}/fd/0")),
        (&b"/dev/stdout"[..], format!("{own}/fd/1")),
        (&b"/dev/stderr"[..], format!("{own}/fd/2")),
    ]
    .into_iter()
    .find_map(|(prefix, theirs)| {
        let rest = bytes.strip_prefix(prefix)?;
        (rest.is_empty() || rest.starts_with(b"/")).then(|| [theirs.as_bytes(), rest].concat())
    });
    replaced.and_then(|bytes| CString::new(bytes).ok()).unwrap_or(path)
}

/// `O_PATH`-opens `/proc/…` (a magic link: the file the caller's descriptor or folder is).
fn open_path(path: &str) -> Result<OwnedFd, i32> {
    let path = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: as in `open_target`.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(match io::Error::last_os_error().raw_os_error() {
            Some(libc::ENOENT) => libc::EBADF,
            Some(errno) => errno,
            None => libc::EBADF,
        });
    }
    // SAFETY: a descriptor just returned to us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A NUL-terminated string of at most `max` bytes at `address` in the caller; `too_long` when
/// it has no end within them. Read 4 KiB-aligned piece by piece, as the page after the
/// string's end may not be mapped.
fn read_string(memory: &File, address: u64, max: usize, too_long: i32) -> Result<CString, i32> {
    let mut bytes = Vec::new();
    let mut at = address;
    while bytes.len() < max {
        let piece = (4096 - (at % 4096) as usize).min(max - bytes.len());
        let mut buffer = vec![0u8; piece];
        memory.read_exact_at(&mut buffer, at).map_err(|_| libc::EFAULT)?;
        if let Some(end) = buffer.iter().position(|&byte| byte == 0) {
            bytes.extend_from_slice(&buffer[..end]);
            return CString::new(bytes).map_err(|_| libc::EINVAL);
        }
        bytes.extend_from_slice(&buffer);
        at += piece as u64;
    }
    Err(too_long)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_watched_call_is_read_and_the_others_are_not_done() {
        // only these are told they do not exist; every other watched call is done
        let not_done = [SYS_SETXATTRAT, SYS_REMOVEXATTRAT, SYS_FILE_SETATTR];
        for call in watched() {
            match Call::of(call, [3, 0x1000, 0o755, 0, 0, 0]) {
                Ok(read) => assert!(!read.name.is_empty() && !not_done.contains(&call), "call {call}"),
                Err(errno) => {
                    assert!(errno == libc::ENOSYS && not_done.contains(&call), "call {call}: {errno}")
                }
            }
        }
        assert_eq!(Call::of(libc::SYS_getpid, [0; 6]).err(), Some(libc::ENOSYS));
        let Ok(Call { target: Target::Path { dirfd, follow, empty, .. }, .. }) = Call::of(
            libc::SYS_fchownat,
            [7, 0x1000, 1, 1, (libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) as u64, 0],
        ) else {
            panic!("fchownat names a path");
        };
        assert_eq!((dirfd, follow, empty), (7, false, true));
        let Ok(Call { target: Target::Fd(9), .. }) = Call::of(libc::SYS_utimensat, [9, 0, 0, 0, 0, 0]) else {
            panic!("utimensat without a path is the descriptor's file");
        };
    }

    /// Runs `program` as the kernel would on one call (the few instructions it uses).
    fn verdict(program: &[libc::sock_filter], nr: libc::c_long, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&(nr as u32).to_ne_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH.to_ne_bytes());
        for (i, arg) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&arg.to_ne_bytes());
        }
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let op = program[pc];
            pc += 1;
            match op.code as u32 {
                code if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    let at = op.k as usize;
                    a = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
                }
                code if code == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => a &= op.k,
                code if code == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += if a == op.k { op.jt } else { op.jf } as usize
                }
                code if code == libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K => {
                    pc += if a & op.k != 0 { op.jt } else { op.jf } as usize
                }
                code if code == libc::BPF_RET | libc::BPF_K => return op.k,
                other => panic!("an instruction the test does not know: {other:#x}"),
            }
        }
    }

    #[test]
    fn the_program_sends_each_watched_call_to_the_helper_and_lets_the_rest_go() {
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for truncate_hole in [false, true] {
            let program = program(truncate_hole, true);
            for call in watched() {
                assert_eq!(verdict(&program, call, [0; 6]), libc::SECCOMP_RET_USER_NOTIF, "call {call}");
            }
            for call in refused() {
                assert_eq!(verdict(&program, call, [0; 6]), eperm, "call {call}");
            }
            for call in [libc::SYS_read, libc::SYS_write, libc::SYS_getpid, libc::SYS_mkdirat] {
                assert_eq!(verdict(&program, call, [0; 6]), libc::SECCOMP_RET_ALLOW, "call {call}");
            }
            assert_eq!(verdict(&program, libc::SYS_ioctl, [3, 0x4008_6602, 0, 0, 0, 0]), eperm, "chattr");
            assert_eq!(
                verdict(&program, libc::SYS_ioctl, [1, libc::TIOCGWINSZ, 0, 0, 0, 0]),
                libc::SECCOMP_RET_ALLOW
            );
            // an open for reading that truncates: refused only where Landlock lets it through
            let read_truncate = [0, 0x1000, (libc::O_RDONLY | libc::O_TRUNC) as u64, 0, 0, 0];
            let write_truncate =
                [0, 0x1000, (libc::O_WRONLY | libc::O_TRUNC | libc::O_CREAT) as u64, 0, 0, 0];
            let expected = if truncate_hole {
                libc::SECCOMP_RET_ERRNO | libc::EACCES as u32
            } else {
                libc::SECCOMP_RET_ALLOW
            };
            assert_eq!(verdict(&program, libc::SYS_openat, read_truncate), expected);
            let no_access_truncate = [0, 0x1000, (libc::O_ACCMODE | libc::O_TRUNC) as u64, 0, 0, 0];
            assert_eq!(verdict(&program, libc::SYS_openat, no_access_truncate), expected, "access mode 3");
            assert_eq!(verdict(&program, libc::SYS_openat, write_truncate), libc::SECCOMP_RET_ALLOW);
        }
        // x32's numbering is not let through
        let x32 = 0x4000_0000 | libc::SYS_fchmod;
        assert_eq!(verdict(&program(false, true), x32, [0; 6]), libc::SECCOMP_RET_KILL_PROCESS);
        // not watching: the watched calls go on, the refused ones do not, truncate neither where
        // Landlock lets it by
        let unwatched = program(true, false);
        assert_eq!(verdict(&unwatched, libc::SYS_fchmodat, [0; 6]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&unwatched, libc::SYS_truncate, [0; 6]), eperm);
        assert_eq!(verdict(&unwatched, libc::SYS_io_uring_setup, [0; 6]), eperm);
        assert_eq!(verdict(&program(false, false), libc::SYS_truncate, [0; 6]), libc::SECCOMP_RET_ALLOW);
    }

    #[test]
    fn paths_through_the_callers_own_proc_files_are_the_callers() {
        let as_theirs = |path: &str| as_the_caller(CString::new(path).unwrap(), 42).into_string().unwrap();
        assert_eq!(as_theirs("/proc/self/fd/3"), "/proc/42/fd/3");
        assert_eq!(as_theirs("/proc/thread-self/fd/3"), "/proc/42/task/42/fd/3");
        assert_eq!(as_theirs("/dev/fd/4"), "/proc/42/fd/4");
        assert_eq!(as_theirs("/dev/stdout"), "/proc/42/fd/1");
        assert_eq!(as_theirs("/proc/selfish"), "/proc/selfish");
        assert_eq!(as_theirs("src/app.py"), "src/app.py");
    }

    #[test]
    fn only_files_inside_the_writable_folders_may_change() {
        let watch = Watch {
            listener: File::open("/dev/null").unwrap().into(),
            roots: vec![PathBuf::from("/c/copy"), PathBuf::from("/c/home")],
            said: 0,
            say: std::sync::mpsc::sync_channel(1).0,
        };
        assert!(watch.may_change(Path::new("/c/copy/run.sh")));
        assert!(watch.may_change(Path::new("/c/home/.cache/x (deleted)")));
        assert!(watch.may_change(Path::new("pipe:[1234]")));
        assert!(!watch.may_change(Path::new("/c/copy-other/x")));
        assert!(!watch.may_change(Path::new("/home/user/.bashrc")));
        assert!(!watch.may_change(Path::new("/c")));
    }
}
