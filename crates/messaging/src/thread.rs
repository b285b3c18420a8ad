//! Threads pinned to a core.
//!
//! Guarantees: [`ThreadBuilder::spawn`] returns only after the new thread has tried to pin
//! itself, so a pinning failure is an error at the call site (or, with
//! [`ThreadBuilder::require_pin`]`(false)`, a value you can read: [`PinnedThread::core`]).
//! The thread's Linux thread id is known before `spawn` returns, so per-thread counters
//! (`/proc/self/task/<tid>/…`, perf) can be opened for it.
//!
//! ```
//! use messaging::ThreadBuilder;
//! let t = ThreadBuilder::new().name("hot").affinity(0).spawn(|| 40 + 2)?;
//! assert!(t.tid() > 0);
//! assert_eq!(t.join().unwrap(), 42);
//! # Ok::<(), messaging::SpawnError>(())
//! ```

use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::error::SpawnError;

/// Builds a thread with a name and an optional core affinity (consuming setters, then `spawn`).
#[derive(Debug, Clone)]
pub struct ThreadBuilder {
    name: Option<String>,
    core: Option<usize>,
    require_pin: bool,
}

impl Default for ThreadBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// A running thread started by [`ThreadBuilder`].
#[derive(Debug)]
pub struct PinnedThread<T> {
    /// `None` only when the thread was told not to run `f` (a failed pin), and then no
    /// `PinnedThread` is handed out.
    handle: JoinHandle<Option<T>>,
    core: Option<usize>,
    tid: i32,
}

impl<T> PinnedThread<T> {
    /// The core it is pinned to, `None` when it was not pinned.
    #[must_use]
    pub fn core(&self) -> Option<usize> {
        self.core
    }

    /// The thread's Linux thread id (`gettid`).
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The std handle (to unpark it).
    #[cfg(feature = "tap")]
    pub(crate) fn thread(&self) -> &std::thread::Thread {
        self.handle.thread()
    }

    /// Whether the thread has returned.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the thread; `Err` carries its panic payload.
    ///
    /// # Errors
    /// The thread panicked.
    pub fn join(self) -> std::thread::Result<T> {
        self.handle
            .join()
            .map(|v| v.expect("a handed-out thread always runs its closure"))
    }
}

/// The cores this process may run on: its main thread's affinity mask, the same whichever
/// thread asks (a thread pinned to one core still sees the process's cores, so it can start a
/// thread pinned to another).
#[must_use]
pub fn available_cores() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size given; with the process id,
    // sched_getaffinity reads the main thread's mask and only writes into `set`.
    let rc = unsafe { libc::sched_getaffinity(libc::getpid(), std::mem::size_of::<libc::cpu_set_t>(), &raw mut set) };
    if rc != 0 {
        // The calling thread's mask, as a last resort.
        return core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
    }
    // SAFETY: CPU_ISSET reads the set for an index below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// `core` is one of [`available_cores`], or [`SpawnError::NoSuchCore`] naming them.
pub(crate) fn check_core(core: usize) -> Result<(), SpawnError> {
    let available = available_cores();
    if available.contains(&core) {
        Ok(())
    } else {
        Err(SpawnError::NoSuchCore { core, available })
    }
}

/// The calling thread's Linux thread id.
#[must_use]
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

impl ThreadBuilder {
    /// A builder for an unpinned, unnamed thread.
    #[must_use]
    pub fn new() -> Self {
        Self {
            name: None,
            core: None,
            require_pin: true,
        }
    }

    /// The thread's name (shown by `top -H`, perf, /proc; at most 15 bytes are kept by Linux).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Pin the thread to this core.
    #[must_use]
    pub fn affinity(mut self, core: usize) -> Self {
        self.core = Some(core);
        self
    }

    /// Pin to `core` if `Some`.
    #[must_use]
    pub fn affinity_opt(mut self, core: Option<usize>) -> Self {
        self.core = core;
        self
    }

    /// Whether a failed pin is an error (the default) or only leaves the thread unpinned.
    #[must_use]
    pub fn require_pin(mut self, required: bool) -> Self {
        self.require_pin = required;
        self
    }

    /// Starts the thread; returns once it has pinned itself (or failed to).
    ///
    /// # Errors
    /// [`SpawnError::NoSuchCore`] for a core outside this process's CPU set,
    /// [`SpawnError::PinFailed`] when the affinity call fails (only with `require_pin(true)`),
    /// [`SpawnError::Spawn`] when the OS cannot create the thread, [`SpawnError::BadName`] for
    /// a name with a NUL byte.
    pub fn spawn<F, T>(self, f: F) -> Result<PinnedThread<T>, SpawnError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if let Some(name) = self.name.as_ref().filter(|n| n.contains('\0')) {
            return Err(SpawnError::BadName { name: name.clone() });
        }
        if let Some(core) = self.core {
            check_core(core)?;
        }
        let (tx, rx) = mpsc::sync_channel::<(i32, bool)>(1);
        let (go_tx, go_rx) = mpsc::sync_channel::<bool>(1);
        let core = self.core;
        let mut builder = std::thread::Builder::new();
        if let Some(name) = &self.name {
            builder = builder.name(name.clone());
        }
        let handle = builder
            .spawn(move || {
                let pinned = core.is_none_or(|id| core_affinity::set_for_current(core_affinity::CoreId { id }));
                let _ = tx.send((current_tid(), pinned));
                // Wait for the spawner to accept the pin result before running `f`.
                if go_rx.recv().unwrap_or(false) {
                    Some(f())
                } else {
                    None
                }
            })
            .map_err(SpawnError::Spawn)?;
        let (tid, pinned) = rx.recv().unwrap_or((0, false));
        if !pinned && self.require_pin {
            let _ = go_tx.send(false);
            let _ = handle.join();
            return Err(SpawnError::PinFailed {
                core: core.unwrap_or(usize::MAX),
            });
        }
        let _ = go_tx.send(true);
        Ok(PinnedThread {
            handle,
            core: if pinned { core } else { None },
            tid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread pinned to one core sees the process's cores and can start a thread pinned to
    /// another (a service's hot thread starting its helper on the helpers' core).
    #[test]
    fn a_pinned_thread_sees_the_process_s_cores() {
        let all = available_cores();
        let (first, last) = (all[0], *all.last().unwrap());
        let seen = ThreadBuilder::new()
            .affinity(first)
            .spawn(move || {
                let inner = ThreadBuilder::new()
                    .affinity(last)
                    .spawn(|| 7)
                    .map(|t| t.join().unwrap());
                (available_cores(), inner.ok())
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(seen, (all, Some(7)));
    }

    #[test]
    fn a_core_that_does_not_exist_is_an_error_naming_the_available_ones() {
        let e = ThreadBuilder::new().affinity(10_000).spawn(|| ()).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("core 10000"), "{s}");
        assert!(matches!(e, SpawnError::NoSuchCore { .. }));
    }

    #[test]
    fn a_name_with_a_nul_byte_is_an_error_not_a_panic() {
        let e = ThreadBuilder::new().name("a\0b").spawn(|| ()).unwrap_err();
        assert!(matches!(e, SpawnError::BadName { ref name } if name == "a\0b"), "{e}");
        assert!(e.to_string().contains("NUL byte"), "{e}");
    }

    #[test]
    fn spawned_thread_runs_pinned_and_reports_its_tid() {
        let core = available_cores()[0];
        let t = ThreadBuilder::new()
            .name("pin-test")
            .affinity(core)
            .spawn(|| (current_tid(), std::thread::current().name().map(str::to_owned)))
            .unwrap();
        assert_eq!(t.core(), Some(core));
        let tid = t.tid();
        let (inner_tid, name) = t.join().unwrap();
        assert_eq!(tid, inner_tid);
        assert_eq!(name.as_deref(), Some("pin-test"));
    }
}
