//! A child process's exit as something to wait on: its pidfd, so a waiting thread wakes once,
//! when the child exits, and not on a timer.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Child;
use std::time::Duration;

/// A child's pidfd: readable once the child has exited.
#[derive(Debug)]
pub struct ExitSignal(OwnedFd);

impl ExitSignal {
    /// The child's pidfd, or none where the kernel has no `pidfd_open`.
    #[must_use]
    #[allow(unsafe_code)]
    pub fn open(child: &Child) -> Option<Self> {
        let pid = libc::pid_t::try_from(child.id()).ok()?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; nothing
        // is borrowed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let fd = RawFd::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: `fd` was just returned by pidfd_open, is open and owned by nobody else.
        Some(ExitSignal(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Returns when the child has exited, `at_most` has passed, or a signal arrived.
    #[allow(unsafe_code)]
    pub fn wait(&self, at_most: Duration) {
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(at_most.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd for the duration of the call; the descriptor stays open
        // (owned by `self`). An error (EINTR) only ends this wait early.
        unsafe { libc::poll(&raw mut p, 1, ms) };
    }
}
