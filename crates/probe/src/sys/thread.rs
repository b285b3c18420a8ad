//! The calling thread: its Linux thread id and its page faults so far.

/// Linux thread id of the calling thread.
#[must_use]
pub fn current_tid() -> i32 {
    aeron_latency::messaging::current_tid()
}

/// Minor + major page faults of the calling thread so far (`getrusage(RUSAGE_THREAD)`: one
/// syscall; the probe reads it at the start and the end of the measured phase only).
#[allow(unsafe_code)]
pub fn thread_faults() -> Option<u64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable rusage for the whole call; RUSAGE_THREAD is supported
    // since Linux 2.6.26 and only writes into it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: getrusage returned 0, so it filled `ru` (and it was zeroed before).
    let ru = unsafe { ru.assume_init() };
    Some((ru.ru_minflt + ru.ru_majflt).max(0) as u64)
}
