//! Ctrl-C and SIGTERM: instead of dying with what it measured, the process notes the signal and
//! stops in order. `latency-probe stages` kills and cleans up the archives it started;
//! `latency-sub` and `latency-pub` stop their loops and write their reports, marked
//! incomplete (the publisher sends its end marker first, so the subscriber's totals add up).
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

/// Why a run stopped when it was interrupted: the reason its report gives.
pub const INTERRUPTED_REASON: &str = "interrupted (SIGINT or SIGTERM): the report holds what was measured until then";

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`].
#[must_use]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Acquire)
}
