//! Planted jitter for demonstrations and for testing the detector (`--hot-path-lock`,
//! `--plant-helper`).
//!
//! # Guarantees
//! - [`LockPlant`] shares one `std::sync::Mutex` between the hot loop and a helper thread
//!   named `lock-helper` that takes it every [`EVERY`] and holds it across a [`HOLD`] sleep
//!   (like I/O or a blocking call under a lock). A hot loop that takes the lock meanwhile parks
//!   on a futex; the helper's unlock wakes it with another. That is exactly the shape of a real
//!   hot-path lock shared with a background thread (a stats snapshot, a config reload, a log
//!   flush). Sleeping while holding it makes the contention happen even when the helper has no
//!   core of its own.
//! - The helper stops and is joined when the plant is dropped.
//!
//! ```
//! let plant = latency_probe::sys::plant::LockPlant::spawn().unwrap();
//! let lock = plant.lock();
//! *lock.lock().unwrap() += 1; // what the hot loop does once per message
//! drop(plant);
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the helper holds the lock each time (sleeping).
pub const HOLD: Duration = Duration::from_micros(100);

/// How often the helper takes the lock.
pub const EVERY: Duration = Duration::from_millis(1);

/// The helper thread and the mutex it shares.
#[derive(Debug)]
pub struct LockPlant {
    lock: Arc<Mutex<u64>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LockPlant {
    /// Starts the `lock-helper` thread.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub fn spawn() -> std::io::Result<LockPlant> {
        let lock = Arc::new(Mutex::new(0_u64));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (lock.clone(), stop.clone());
        let thread = std::thread::Builder::new().name("lock-helper".into()).spawn(move || {
            while !s.load(Ordering::Acquire) {
                {
                    let mut g = l.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    std::thread::sleep(HOLD);
                    *g += 1;
                }
                std::thread::sleep(EVERY);
            }
        })?;
        Ok(LockPlant {
            lock,
            stop,
            thread: Some(thread),
        })
    }

    /// The shared mutex: the hot loop locks it once per message.
    #[must_use]
    pub fn lock(&self) -> Arc<Mutex<u64>> {
        self.lock.clone()
    }
}

impl Drop for LockPlant {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long the planted helper ([`HelperPlant`]) stays on its CPU each time it wakes.
pub const HELPER_BUSY: Duration = Duration::from_micros(200);

/// How long it sleeps between.
pub const HELPER_EVERY: Duration = Duration::from_millis(2);

/// One of our own helper threads waking on a hot core (`--plant-helper`): a thread named
/// `plant-helper`, pinned to the given core, that wakes every [`HELPER_EVERY`] and works for
/// [`HELPER_BUSY`] (like a stats flusher or a logger someone pinned next to the hot loop).
/// Each wake-up preempts the hot thread on that core. Stopped and joined on drop.
#[derive(Debug)]
pub struct HelperPlant {
    stop: Arc<AtomicBool>,
    thread: Option<aeron_latency::messaging::PinnedThread<()>>,
}

impl HelperPlant {
    /// Starts `plant-helper` on `core` (unpinned when `None`).
    ///
    /// # Errors
    /// When the thread cannot be started or pinned.
    pub fn spawn(core: Option<usize>) -> std::io::Result<HelperPlant> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = aeron_latency::messaging::ThreadBuilder::new()
            .name("plant-helper")
            .affinity_opt(core)
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    let start = std::time::Instant::now();
                    while start.elapsed() < HELPER_BUSY {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(HELPER_EVERY);
                }
            })
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(HelperPlant {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for HelperPlant {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
