//! An embedded Aeron C media driver (Aeron 1.54 via `rusteron-media-driver`, statically linked).
//!
//! Guarantees:
//! - [`EmbeddedDriver`] is a guard: dropping it stops the driver, joins its thread and
//!   removes its directory;
//! - it starts in Aeron's default directory (`AERON_DIR`, else `/dev/shm/aeron-$USER`) unless
//!   given one, and never in a directory whose driver is alive;
//!   [`EmbeddedDriverBuilder::private_dir`] gives tests and concurrent runs a fresh one each;
//! - it never spins: SHARED threading (one agent thread) with Aeron's `backoff` idle strategy
//!   unless the environment or the builder says otherwise, because on small machines the hot
//!   threads own the cores;
//! - configuration is layered the Aeron way: compiled default, then the `AERON_*` environment
//!   variables the C driver reads (`AERON_THREADING_MODE`, `AERON_TERM_BUFFER_LENGTH`,
//!   `AERON_IPC_TERM_BUFFER_LENGTH`, `AERON_SHARED_IDLE_STRATEGY`, `AERON_DRIVER_TIMEOUT`,
//!   `AERON_TERM_BUFFER_SPARSE_FILE`, …),
//!   then the builder's setters;
//! - space for the log buffers is checked before the driver starts, with the amount needed.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = messaging::Client::connect(driver.dir())?;
//! # drop(client);
//! # Ok(()) }
//! ```

mod dir;
mod launch;
mod settings;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use dir::free_bytes;
pub use launch::EmbeddedDriverBuilder;
pub use settings::DriverSettings;

/// Our default idle strategy for the driver's agent: Aeron's `backoff` (parks up to 1 ms).
pub const DEFAULT_DRIVER_IDLE: &str = "backoff";

/// The version string of the embedded Aeron C driver, e.g. `aeron version=1.54.0 ...`.
#[must_use]
pub fn driver_version() -> String {
    rusteron_media_driver::Aeron::version_full().to_owned()
}

/// A running embedded media driver; stops and removes its directory when dropped.
pub struct EmbeddedDriver {
    stale_removed: Vec<PathBuf>,
    dir: PathBuf,
    ipc_term_length: usize,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    tid: i32,
    settings: DriverSettings,
    /// Where a failed stop is told ([`EmbeddedDriverBuilder::error_handler`]).
    on_error: crate::conductor::ErrorHandler,
}

impl fmt::Debug for EmbeddedDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedDriver")
            .field("dir", &self.dir)
            .field("ipc_term_length", &self.ipc_term_length)
            .field("running", &self.is_running())
            .finish()
    }
}

impl EmbeddedDriver {
    /// A builder with the defaults described in the module docs.
    #[must_use]
    pub fn builder() -> EmbeddedDriverBuilder {
        EmbeddedDriverBuilder::default()
    }

    /// The driver's directory: give it to clients (`Client::connect`, `--dir`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The IPC term length in use.
    #[must_use]
    pub fn ipc_term_length(&self) -> usize {
        self.ipc_term_length
    }

    /// The Linux thread id of the driver's agent thread (for per-thread counters).
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The settings it runs with (compiled defaults, then `AERON_*`, then the builder), read
    /// back from the driver's context when it started.
    #[must_use]
    pub fn settings(&self) -> &DriverSettings {
        &self.settings
    }

    /// The directories of killed runs' embedded drivers that [`EmbeddedDriverBuilder::spawn`]
    /// removed before starting this one.
    #[must_use]
    pub fn stale_dirs_removed(&self) -> &[PathBuf] {
        &self.stale_removed
    }

    /// Whether the driver thread is still running.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Stops the driver now (same as dropping it). A driver thread that panicked, or a
    /// directory that could not be removed (its term buffers stay in `/dev/shm`), goes to the
    /// builder's error handler.
    pub fn stop(self) {}
}

impl Drop for EmbeddedDriver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let joined = self.handle.take().map_or(Ok(()), JoinHandle::join);
        let removed = match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        for message in stop_failures(&self.dir, joined, removed) {
            (self.on_error)(&crate::AsyncError::Driver {
                message,
                observations: 1,
            });
        }
    }
}

/// What went wrong stopping the embedded driver in `dir`, in words for the error handler.
fn stop_failures(dir: &Path, joined: std::thread::Result<()>, removed: std::io::Result<()>) -> Vec<String> {
    let mut said = Vec::new();
    if let Err(panic) = joined {
        said.push(format!(
            "the embedded driver's thread panicked ({}); please report it",
            crate::conductor::panic_words(panic.as_ref())
        ));
    }
    if let Err(e) = removed {
        said.push(format!(
            "the embedded driver's directory {} could not be removed: {e}; remove it by hand (its term \
             buffers take room in /dev/shm until then)",
            dir.display()
        ));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_stop_is_told_and_a_clean_one_is_not() {
        let dir = Path::new("/dev/shm/aeron-x");
        assert!(stop_failures(dir, Ok(()), Ok(())).is_empty());
        let panicked = std::thread::spawn(|| panic!("in the work loop")).join().map(|_| ());
        let denied = Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        let said = stop_failures(dir, panicked, denied);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("panicked (in the work loop)"), "{}", said[0]);
        assert!(said[1].contains("/dev/shm/aeron-x could not be removed") && said[1].contains("by hand"));
    }

    #[test]
    fn driver_starts_in_a_private_dir_and_removes_it_on_drop() {
        let d = EmbeddedDriver::builder()
            .private_dir()
            .ipc_term_length(64 << 10)
            .spawn()
            .unwrap();
        let dir = d.dir().to_owned();
        assert!(dir.join("cnc.dat").exists());
        assert!(d.is_running());
        drop(d);
        assert!(!dir.exists(), "{} should be removed", dir.display());
    }
}
