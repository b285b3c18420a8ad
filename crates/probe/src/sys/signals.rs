//! Ctrl-C and SIGTERM for the commands that start processes of their own (`latency-probe
//! stages`): instead of dying with archives and directories left behind, the process notes the
//! signal, its waits kill their children, and it stops and cleans up what it started.
//!
//! # Guarantees
//! - [`catch_interrupts`] installs a handler for SIGINT and SIGTERM that only stores to a static
//!   atomic (async-signal-safe); [`interrupted`] reads it. Without the handler installed,
//!   [`interrupted`] is always false and the signals keep their default action.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Release);
}

/// Installs the handler for SIGINT and SIGTERM.
///
/// # Errors
/// `sigaction` failed.
#[allow(unsafe_code)]
pub fn catch_interrupts() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid starting value; the handler is an extern "C"
        // fn that only stores to an atomic, which is async-signal-safe; sigaction copies the
        // struct and does not keep the pointer.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`].
#[must_use]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Acquire)
}
