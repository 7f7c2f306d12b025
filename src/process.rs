//! Child processes Tokamak starts (checkers, the agent's commands and tests): each leads a
//! process group of its own, which is killed whole when its run is cancelled or too slow, and
//! every group still alive is killed when Tokamak exits — nothing outlives the editor. And
//! what they print, made fit to show (`clean_output`); and the `PATH` they get when a project
//! is not trusted to supply programs (`path_outside`).

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::sync::lock;

/// The process groups alive now (their leaders' pids).
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// A process group led by a child started with `process_group(0)`. Dropping it kills the
/// group, unless [`ProcessGroup::disarm`] said the child ended normally.
#[derive(Debug)]
pub struct ProcessGroup(Option<i32>, bool);

impl ProcessGroup {
    /// Registers the group led by `pid` (`None`: the child has already been reaped).
    pub fn new(pid: Option<u32>) -> ProcessGroup {
        let pid = pid.and_then(|pid| i32::try_from(pid).ok()).filter(|&pid| pid > 0);
        if let Some(pid) = pid {
            lock(&GROUPS).insert(pid);
        }
        ProcessGroup(pid, false)
    }

    /// The same for a leader that reaps what its command leaves (the Landlock helper): it is
    /// asked first (SIGTERM), and the group killed a moment later — a SIGKILL at once would
    /// leave what the command started in a session of its own.
    pub fn with_reaper(pid: Option<u32>) -> ProcessGroup {
        ProcessGroup(ProcessGroup::new(pid).take(), true)
    }

    fn take(&mut self) -> Option<i32> {
        self.0.take()
    }

    /// The leader exited by itself: forget the group without killing it.
    pub fn disarm(mut self) {
        if let Some(pid) = self.0.take() {
            lock(&GROUPS).remove(&pid);
        }
    }

    /// Kills the whole group now, without asking its leader first (it has been waited for: its
    /// pid may be another process's by now).
    pub fn kill_now(mut self) {
        if let Some(pid) = self.0.take() {
            kill_group(pid);
        }
    }

    /// Kills the whole group now.
    pub fn kill(mut self) {
        if let Some(pid) = self.0.take() {
            stop_group(pid, self.1);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            stop_group(pid, self.1);
        }
    }
}

fn stop_group(pid: i32, reaper: bool) {
    if !reaper {
        return kill_group(pid);
    }
    // SAFETY: kill(2) on the group's leader; it touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    std::thread::spawn(move || {
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rfind(')')
                    .and_then(|end| stat[end + 1..].split_whitespace().next())
                    .is_some_and(|s| s != "Z")
            })
        };
        let started = std::time::Instant::now();
        while alive() && started.elapsed() < std::time::Duration::from_secs(1) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        kill_group(pid);
    });
}

fn kill_group(pid: i32) {
    lock(&GROUPS).remove(&pid);
    // SAFETY: kill(2) with a negative pid signals the process group `pid` leads (it was
    // started with `process_group(0)`); it touches no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// Kills every group still registered (at exit). Returns how many there were.
pub fn kill_all() -> usize {
    let groups: Vec<i32> = std::mem::take(&mut *lock(&GROUPS)).into_iter().collect();
    for &pid in &groups {
        // SAFETY: as in `kill_group`.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    groups.len()
}

/// Output as text the model can read: invalid UTF-8 replaced, terminal control sequences
/// and other control characters (but tabs and line breaks) removed.
pub fn clean_output(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ … final byte in @–~
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `PATH` without its folders inside `root` (and without relative ones, which resolve
/// against wherever a child runs): what a child gets when the project at `root` is not
/// trusted, so neither Tokamak's own git nor a checker's `node` is a program the project
/// planted on a `PATH` that leads into it. `None` when there is no `PATH`.
pub fn path_outside(root: &std::path::Path) -> Option<std::ffi::OsString> {
    let path = std::env::var_os("PATH")?;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| !std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()).starts_with(&root))
        .collect();
    std::env::join_paths(kept).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_removed() {
        assert_eq!(clean_output(b"a\x1b[1;31mb\x1b[0m\r\nc\x07\td\xff"), "ab\nc\td\u{fffd}");
    }
    use std::os::unix::process::CommandExt;

    #[test]
    fn dropping_a_group_kills_its_children_too() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line)
            .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let group = ProcessGroup::new(Some(child.id()));
        drop(group);
        assert!(child.wait().is_ok());
        // the grandchild is gone too (kill(pid, 0) fails once it has been reaped by init; give
        // it a moment)
        let mut alive = true;
        for _ in 0..50 {
            // SAFETY: signal 0 only checks for existence.
            alive = unsafe { libc::kill(grandchild, 0) } == 0 && !is_zombie(grandchild);
            if !alive {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!alive, "the grandchild {grandchild} survived");
    }

    fn is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
            .unwrap_or(false)
    }
}
