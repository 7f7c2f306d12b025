//! Work off the editor's way — the workspace index's build, a document's background parse,
//! the language's own parse after a pause, the placement of syntax errors, freeing a large
//! tree — on threads at a lower scheduling priority, so that on a machine with few cores a
//! keystroke's handler gets a core first instead of waiting behind them (on two cores, the
//! index of a large workspace would otherwise hold both for seconds after the editor starts).

/// Why background work gave no result.
#[derive(Debug, thiserror::Error)]
pub enum BackgroundError {
    #[error("cannot start a background thread: {0}")]
    Spawn(std::io::Error),
    #[error("the background work panicked")]
    Panicked,
}

/// Runs `work` on a thread of its own at a lower priority and waits for its result without
/// holding an async thread.
pub async fn run<T, F>(work: F) -> Result<T, BackgroundError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tell, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("tokamak-background".to_string())
        .spawn(move || {
            lower_this_thread();
            let _ = tell.send(work());
        })
        .map_err(BackgroundError::Spawn)?;
    result.await.map_err(|_| BackgroundError::Panicked)
}

/// Drops `value` on a thread of its own at a lower priority, later. Freeing a large syntax
/// tree that nobody else holds takes milliseconds (2.4 ms for 10 000 lines of Python, a tree
/// parsed afresh sharing no node with the next), which a keystroke's handler, a lock or a
/// fix iteration should not wait on; so does giving the freed memory back to the system,
/// done there once the values waiting are dropped. Dropped here when that thread cannot be
/// started.
pub fn discard<T: Send + 'static>(value: T) {
    type Bin = std::sync::mpsc::Sender<Box<dyn Send>>;
    static BIN: std::sync::OnceLock<Option<Bin>> = std::sync::OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let (bin, taken) = std::sync::mpsc::channel::<Box<dyn Send>>();
        std::thread::Builder::new()
            .name("tokamak-discard".to_string())
            .spawn(move || {
                lower_this_thread();
                while let Ok(value) = taken.recv() {
                    drop(value);
                    taken.try_iter().for_each(drop);
                    give_back_memory();
                }
            })
            .ok()
            .map(|_| bin)
    });
    match bin {
        // the thread ends only with the process, so a send fails only then
        Some(bin) => {
            let _ = bin.send(Box::new(value));
        }
        None => drop(value),
    }
}

/// Lowers the calling thread's scheduling priority for good (a thread cannot raise it back
/// without privileges, so only threads of their own call this): nice 10 on Linux, where
/// niceness is per thread; the utility quality of service on macOS.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority only read their arguments; a failure (a sandbox that
        // forbids it) leaves the priority as it was, which is harmless.
        unsafe {
            let thread = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, 10);
        }
    }
    #[cfg(target_os = "macos")]
    {
        // SAFETY: sets the calling thread's own class; a failure leaves it as it was.
        unsafe {
            libc::pthread_set_qos_class_self_np(libc::qos_class_t::QOS_CLASS_UTILITY, 0);
        }
    }
}

/// Returns the memory freed after a large piece of work (the index's build frees the cache it
/// read, a hundred megabytes on a large workspace) to the system, where the allocator would
/// otherwise keep it for the process: glibc's `malloc_trim`; elsewhere nothing.
pub fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_the_work_at_a_lower_priority() {
        let (value, nice) = run(|| {
            #[cfg(target_os = "linux")]
            // SAFETY: reads the calling thread's own priority.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
            #[cfg(not(target_os = "linux"))]
            let nice = 10;
            (6 * 7, nice)
        })
        .await
        .unwrap();
        assert_eq!(value, 42);
        assert!(nice >= 10, "nice {nice}");
        let panicked = run(|| -> i32 { panic!("on purpose") }).await;
        assert!(matches!(panicked, Err(BackgroundError::Panicked)));
    }

    #[test]
    fn a_discarded_value_is_dropped_on_the_discarding_thread() {
        struct Told(std::sync::mpsc::Sender<Option<String>>);
        impl Drop for Told {
            fn drop(&mut self) {
                let _ = self.0.send(std::thread::current().name().map(str::to_string));
            }
        }
        let (tell, told) = std::sync::mpsc::channel();
        discard(Told(tell));
        let thread = told.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(thread.as_deref(), Some("tokamak-discard"));
    }
}
