//! Threads: the calling one's id and page faults, and the threads of a process.

/// Linux thread id of the calling thread.
#[must_use]
pub fn current_tid() -> i32 {
    aeron_latency::messaging::current_tid()
}

/// The threads of process `pid`, by id, with their names (`/proc/PID/task/TID/comm`, at most
/// 15 bytes; empty when unreadable).
///
/// # Errors
/// The process's task directory cannot be read (`NotFound`: no such process).
pub fn threads_of(pid: u32) -> std::io::Result<Vec<(i32, String)>> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids
        .into_iter()
        .map(|tid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
            (tid, name.trim_end().to_owned())
        })
        .collect())
}

/// The id of process or thread `task` (a `/proc` path: `PID` or `PID/task/TID`) in its own PID
/// namespace: the last field of its status's `NSpid` line (the same as the host's outside a
/// container).
#[must_use]
pub fn id_in_namespace(task: &str) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{task}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// The threads of process `pid` as `(id on this host, id in the process's PID namespace)`: how
/// a thread id a containerised service reports of itself (`gettid`) is found on the host.
///
/// # Errors
/// The process's task directory cannot be read.
pub fn namespace_tids(pid: u32) -> std::io::Result<Vec<(i32, i32)>> {
    Ok(threads_of(pid)?
        .into_iter()
        .filter_map(|(tid, _)| Some((tid, id_in_namespace(&format!("{pid}/task/{tid}"))?)))
        .collect())
}

/// `getrusage(who)`: one syscall.
#[allow(unsafe_code)]
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable rusage for the whole call; getrusage only writes into
    // it (RUSAGE_THREAD is supported since Linux 2.6.26).
    let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    // SAFETY: getrusage returned 0, so it filled `ru` (and it was zeroed before).
    (rc == 0).then(|| unsafe { ru.assume_init() })
}

/// Minor + major page faults of the calling thread so far (`getrusage(RUSAGE_THREAD)`: one
/// syscall; the probe reads it at the start and the end of the measured phase only).
#[must_use]
pub fn thread_faults() -> Option<u64> {
    let ru = rusage(libc::RUSAGE_THREAD)?;
    Some((ru.ru_minflt + ru.ru_majflt).max(0) as u64)
}

/// What this process used so far, every thread of it: `(cpu_s, system_s, max_rss_kib)`, CPU time
/// user and system, of it system, and its peak resident set (`getrusage(RUSAGE_SELF)`).
#[must_use]
pub fn process_usage() -> Option<(f64, f64, u64)> {
    let ru = rusage(libc::RUSAGE_SELF)?;
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let system = secs(ru.ru_stime);
    Some((secs(ru.ru_utime) + system, system, ru.ru_maxrss.max(0) as u64))
}

/// Bytes of stack [`prefault_stack`] touches. A hot loop and what its thread runs at the end
/// of a run stay well inside it: the deepest frame there, the monitor's last counter read,
/// holds 4.4 KiB.
pub const STACK_PREFAULT: usize = 256 * 1024;

/// Touches the [`STACK_PREFAULT`] bytes of the calling thread's stack below this call, so that
/// the thread takes no page fault growing its stack later (as the PREEMPT_RT wiki's
/// `stack_prefault` does). Without it, a latency-sub run took one minor fault at the end of
/// its measured phase: the monitor's last read, called from a deeper frame than the loop's
/// reads, touched a new stack page; the report named the fault and blamed the setup. Call it
/// first on a hot thread, before measuring: it zeroes a local array of that size (the
/// compiler's stack probes and the fill touch every page), no allocation, no syscall.
#[inline(never)]
pub fn prefault_stack() {
    std::hint::black_box(&mut [0u8; STACK_PREFAULT]);
}

/// How long this process has run (`/proc/self/stat`'s start time against `/proc/uptime`: to a
/// clock tick, 10 ms).
#[allow(unsafe_code)]
#[must_use]
pub fn process_age() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 22, counting from the pid; the name (field 2) may hold spaces: count after its ')'.
    let start_ticks: f64 = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system setting.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| std::time::Duration::from_secs_f64((uptime - start_ticks / hz as f64).max(0.0)))
}

/// Pages [`fault_cost_ns`] touches.
const FAULT_PAGES: usize = 256;

/// What one minor page fault costs on this machine, ns: the mean time (less the slowest 1%) to
/// touch each page of a fresh shared anonymous mapping (shared memory, as Aeron's log buffers are) for the first
/// time. Measured once per report (256 pages, well under a millisecond), after the run. `None`
/// when the mapping cannot be made.
#[allow(unsafe_code)]
#[must_use]
pub fn fault_cost_ns() -> Option<u64> {
    // SAFETY: sysconf only reads a system setting.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| *p > 0)
        .unwrap_or(4096);
    let len = FAULT_PAGES * page;
    // SAFETY: a new anonymous mapping, not aliased; checked for MAP_FAILED below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let base = p.cast::<u8>();
    let mut times = [0_u64; FAULT_PAGES];
    for (i, t) in times.iter_mut().enumerate() {
        let start = crate::sys::clock::now_ns();
        // SAFETY: `i * page` is inside the `len`-byte mapping made above.
        unsafe { std::ptr::write_volatile(base.add(i * page), 1) };
        *t = (crate::sys::clock::now_ns() - start).max(0) as u64;
    }
    // SAFETY: unmaps exactly the mapping made above; nothing refers to it any more.
    unsafe { libc::munmap(p, len) };
    // The mean, not the median: the line-up charges each fault this cost, and what it explains
    // of a band is the faults' total time, which a skewed distribution's median understates.
    // The slowest 1% is left out (a preemption of the measuring thread, not a fault).
    times.sort_unstable();
    let kept = &times[..FAULT_PAGES - FAULT_PAGES / 100];
    Some(kept.iter().sum::<u64>() / kept.len() as u64)
}

#[cfg(test)]
mod tests {
    /// Grows the stack by 64 KiB below the caller.
    #[inline(never)]
    fn deep_frame() {
        let mut frame = [0u8; 64 * 1024];
        std::hint::black_box(&mut frame);
    }

    /// This thread's faults in a 64 KiB deeper frame, on a fresh thread of its own whose stack
    /// is `stack` bytes (a size no cached stack has, so its pages are new), pre-faulted or not.
    fn faults_growing_a_fresh_stack(stack: usize, prefault: bool) -> u64 {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || {
                if prefault {
                    super::prefault_stack();
                }
                let before = super::thread_faults().expect("getrusage");
                deep_frame();
                super::thread_faults().expect("getrusage") - before
            })
            .expect("a thread")
            .join()
            .expect("it ran")
    }

    #[test]
    fn a_pre_faulted_stack_grows_without_a_fault() {
        // Without it the same frame faults: the test can tell.
        assert!(faults_growing_a_fresh_stack(7 * 1024 * 1024 + 3 * 4096, false) > 0);
        assert_eq!(faults_growing_a_fresh_stack(7 * 1024 * 1024 + 5 * 4096, true), 0);
    }

    #[test]
    fn a_page_fault_is_measured() {
        let c = super::fault_cost_ns().expect("an anonymous mapping");
        assert!(c > 0, "{c} ns");
    }

    #[test]
    fn outside_a_container_a_thread_s_namespace_id_is_its_own() {
        let me = std::process::id();
        let tid = super::current_tid();
        assert_eq!(super::id_in_namespace(&me.to_string()), Some(me as i32));
        let tids = super::namespace_tids(me).unwrap();
        assert!(tids.contains(&(tid, tid)), "{tids:?}");
        assert!(tids.iter().all(|(host, ns)| host == ns), "{tids:?}");
    }

    #[test]
    fn this_process_s_usage_grows_with_its_work() {
        let (cpu, system, rss) = super::process_usage().unwrap();
        let mut x = 0_u64;
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let (later, _, _) = super::process_usage().unwrap();
        assert!(later > cpu && system <= cpu && rss > 0, "{cpu} {later} {system} {rss}");
        let age = super::process_age().unwrap();
        // To a clock tick each (10 ms): the start and the uptime.
        let ticks = std::time::Duration::from_millis(20);
        assert!(
            age + ticks >= start.elapsed() && age < std::time::Duration::from_secs(3600),
            "{age:?}"
        );
    }
}
