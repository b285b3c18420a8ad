//! Where the counters come from: perf events (per thread, through `perf-event2`) and `/proc`.
//!
//! Everything here is opened before measuring; `ThreadReader::read` is what runs at a group
//! boundary: one `read` of the perf group and one or two `pread`s of `/proc` files into a stack
//! buffer. No allocation, no lock.

mod switch;

use crate::model::Counts;
use crate::model::OffCpu;
use perf_event::events::{Software, Tracepoint};
use perf_event::{Builder, Clock, Counter, Group, ReadFormat, SampleFlag, Sampler};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use switch::{SwitchFormat, SwitchSampler, PERF_RECORD_LOST, PERF_RECORD_SAMPLE};

/// Futex syscalls counted per thread: the classic one and the futex2 calls (Linux 5.16+).
const FUTEX_TRACEPOINTS: [&str; 5] = [
    "syscalls/sys_enter_futex",
    "syscalls/sys_enter_futex_wait",
    "syscalls/sys_enter_futex_wake",
    "syscalls/sys_enter_futex_waitv",
    "syscalls/sys_enter_futex_requeue",
];

/// Where tracefs may be mounted.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Ring buffer for the page-fault samples of one hot thread, largest first: 32 bytes a fault,
/// so 4 MiB holds ~130,000 faults (a run that never pre-faults takes one per page it touches).
const FAULT_RING_BYTES: [usize; 3] = [4 << 20, 1 << 20, 256 << 10];

/// The perf setup shared by every thread: tracepoint ids and the sched_switch field offsets.
#[derive(Debug, Clone)]
pub(crate) struct PerfSetup {
    futex_ids: Vec<u64>,
    switch: Option<SwitchFormat>,
}

/// The events [`PerfSetup::probe`] opened to check perf: held until the threads' own are open
/// (closing a tracepoint's last event waits for the kernel's RCU grace period), then closed
/// with them through [`close_later`].
#[derive(Debug)]
pub(crate) struct PerfCheck(#[allow(dead_code)] PerfGroup);

/// The name of [`close_later`]'s threads (not the measured process's: never watched).
pub(crate) const CLOSING_THREAD: &str = "perf-close";

/// Closes `events` on a thread of their own: closing a tracepoint's last perf event waits for
/// an RCU tasks-trace grace period (`perf_trace_event_unreg`), seen to take 2-8 s on a 2-core
/// host with both cores busy, and the report need not wait for it (an exiting process still
/// does). Closed here when no thread can be started.
pub(crate) fn close_later<T: Send + 'static>(events: T) {
    let _ = std::thread::Builder::new()
        .name(CLOSING_THREAD.into())
        .spawn(move || drop(events));
}

fn tracefs_events() -> Option<PathBuf> {
    TRACEFS
        .iter()
        .map(|d| Path::new(d).join("events"))
        .find(|p| p.join("syscalls").is_dir() || p.join("sched").is_dir())
}

/// Mounts tracefs when it is missing and we may (root): perf itself does the same.
fn mount_tracefs() {
    if tracefs_events().is_none() && Path::new(TRACEFS[0]).is_dir() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS[0]])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

fn read_id(events: &Path, name: &str) -> Option<u64> {
    std::fs::read_to_string(events.join(name).join("id"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Why perf events cannot be used for the diagnostics; `Display` says it with the fix.
#[derive(Debug)]
pub enum PerfUnavailable {
    /// tracefs is not mounted (and could not be mounted).
    NoTracefs,
    /// tracefs is there but this user may not read it (it is root's, mode 700, by default).
    TracefsNotReadable {
        /// The tracefs directory.
        dir: PathBuf,
    },
    /// The kernel has no futex syscall tracepoints.
    NoFutexTracepoint {
        /// Where the tracepoints were looked for.
        events: PathBuf,
    },
    /// perf_event_open failed on this thread.
    Open(io::Error),
}

impl std::fmt::Display for PerfUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PerfUnavailable::NoTracefs => f.write_str(
                "tracefs is not mounted, so the futex tracepoint cannot be found (as root: mount -t tracefs nodev \
                 /sys/kernel/tracing)",
            ),
            PerfUnavailable::TracefsNotReadable { dir } => write!(
                f,
                "{} is not readable by this user, so the futex tracepoint cannot be found: run as root, or \
                 grant CAP_PERFMON and read access to tracefs",
                dir.display()
            ),
            PerfUnavailable::NoFutexTracepoint { events } => write!(
                f,
                "no syscalls:sys_enter_futex tracepoint under {} (kernel built without CONFIG_FTRACE_SYSCALLS)",
                events.display()
            ),
            PerfUnavailable::Open(e) => f.write_str(&explain_open_error(e)),
        }
    }
}

impl std::error::Error for PerfUnavailable {}

impl PerfSetup {
    /// Finds the tracepoints and checks that this process may count kernel events of a thread.
    ///
    /// # Errors
    /// Why perf cannot be used here.
    pub(crate) fn probe() -> Result<(PerfSetup, PerfCheck), PerfUnavailable> {
        mount_tracefs();
        let events = tracefs_events().ok_or_else(|| {
            let denied = TRACEFS
                .iter()
                .map(Path::new)
                .find(|d| std::fs::read_dir(d).is_err_and(|e| e.kind() == io::ErrorKind::PermissionDenied));
            match denied {
                Some(dir) => PerfUnavailable::TracefsNotReadable { dir: dir.to_path_buf() },
                None => PerfUnavailable::NoTracefs,
            }
        })?;
        let futex_ids: Vec<u64> = FUTEX_TRACEPOINTS.iter().filter_map(|n| read_id(&events, n)).collect();
        if futex_ids.is_empty() {
            return Err(PerfUnavailable::NoFutexTracepoint { events });
        }
        let setup = PerfSetup {
            futex_ids,
            switch: switch::parse_switch_format(&events),
        };
        // Try the real thing on this thread.
        let check = setup
            .open_group(crate::sys::thread::current_tid())
            .map_err(PerfUnavailable::Open)?;
        Ok((setup, PerfCheck(check)))
    }

    /// Opens the counting group for `tid`: the futex tracepoints, migrations, minor and major
    /// faults. Values are read in that order by [`ThreadReader::read`].
    fn open_group(&self, tid: i32) -> io::Result<PerfGroup> {
        let mut leader = Builder::new(Software::DUMMY);
        leader
            .read_format(ReadFormat::GROUP)
            .observe_pid(tid)
            .any_cpu()
            .include_kernel();
        let mut group = leader.build_group()?;
        let mut members = Vec::new();
        let mut add = |b: &mut Builder<'_>, group: &mut Group| -> io::Result<()> {
            b.observe_pid(tid).any_cpu().include_kernel();
            members.push(b.build_with_group(&mut *group)?);
            Ok(())
        };
        for id in &self.futex_ids {
            add(&mut Builder::new(Tracepoint::with_id(*id)), &mut group)?;
        }
        add(&mut Builder::new(Software::CPU_MIGRATIONS), &mut group)?;
        add(&mut Builder::new(Software::PAGE_FAULTS_MIN), &mut group)?;
        add(&mut Builder::new(Software::PAGE_FAULTS_MAJ), &mut group)?;
        group.enable()?;
        let ids = members.iter().map(Counter::id).collect();
        let mut g = PerfGroup {
            group,
            _members: members,
            ids,
            futex: self.futex_ids.len(),
        };
        // Check the layout we parse against the kernel's answer once, here.
        let mut buf = [0_u64; GROUP_WORDS];
        g.read_raw(&mut buf)?;
        Ok(g)
    }

    /// Opens the switch sampler of a hot thread, if the sched_switch format was understood.
    fn open_sampler(&self, tid: i32) -> io::Result<Option<SwitchSampler>> {
        self.switch.map(|fmt| switch::open(fmt, tid)).transpose()
    }

    /// Opens the page-fault sampler of a hot thread: one sample (its CLOCK_MONOTONIC time) per
    /// fault, so a fault can be lined up with the samples whose window holds it. A pre-faulted
    /// hot loop takes none, so this costs nothing unless faults happen.
    fn open_fault_sampler(tid: i32) -> io::Result<FaultSampler> {
        let mut b = Builder::new(Software::PAGE_FAULTS);
        b.observe_pid(tid)
            .any_cpu()
            .include_kernel()
            .sample(SampleFlag::TIME)
            .sample_period(1)
            .clockid(Clock::MONOTONIC);
        let mut last = None;
        for bytes in FAULT_RING_BYTES {
            let counter = b.build()?;
            match counter.sampled(bytes) {
                Ok(mut s) => {
                    s.enable()?;
                    return Ok(FaultSampler { sampler: s, lost: 0 });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no ring size worked")))
    }
}

/// Whether a switch-out in `sched_yield` can be told from a preemption here (the kernel shows
/// its symbols' addresses to this process).
pub(crate) fn yields_known() -> bool {
    switch::yields_known()
}

/// Turns a perf_event_open error into the reason perf cannot be used, with the fix.
fn explain_open_error(e: &io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open is not permitted (kernel.perf_event_paranoid = {paranoid}, and this process lacks \
             CAP_PERFMON); run as root, grant CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=-1`"
        ),
        Some(libc::ENOSYS) | Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
            format!("perf events are not available here ({e}): a container or kernel without perf support")
        }
        _ => format!("perf_event_open failed: {e}"),
    }
}

/// Most counters in a group: DUMMY leader + 5 futex + 3 others, as (value, id) pairs.
const GROUP_WORDS: usize = 1 + 2 * 10;

struct PerfGroup {
    group: Group,
    _members: Vec<Counter>,
    ids: Vec<u64>,
    futex: usize,
}

impl std::fmt::Debug for PerfGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfGroup")
            .field("ids", &self.ids)
            .field("futex", &self.futex)
            .finish()
    }
}

impl PerfGroup {
    /// Reads the group (`PERF_FORMAT_GROUP | PERF_FORMAT_ID`: nr, then value/id pairs, leader
    /// first) into `buf` and checks the ids. Returns the number of members.
    #[allow(unsafe_code)]
    fn read_raw(&mut self, buf: &mut [u64; GROUP_WORDS]) -> io::Result<()> {
        let fd = self.group.as_counter().as_raw_fd();
        // SAFETY: `buf` is a valid, exclusively borrowed buffer of `size_of_val(buf)` bytes that
        // outlives the call, and `fd` is the open perf event owned by `self.group`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let nr = buf[0] as usize;
        if nr != self.ids.len() + 1 || (n as usize) < 8 * (1 + 2 * nr) {
            return Err(io::Error::other(format!(
                "unexpected perf group layout: {nr} counters, {n} bytes"
            )));
        }
        if self
            .ids
            .iter()
            .enumerate()
            .any(|(i, id)| buf[1 + 2 * (i + 1) + 1] != *id)
        {
            return Err(io::Error::other("perf group ids are not in creation order"));
        }
        Ok(())
    }
}

/// Reads one thread's counters.
#[derive(Debug)]
pub(crate) struct ThreadReader {
    perf: Option<PerfGroup>,
    /// `/proc/<pid>/task/<tid>/status`: voluntary / involuntary switches (hot threads only).
    status: Option<File>,
    /// `/proc/<pid>/task/<tid>/stat`: faults, when perf does not count them.
    stat: Option<File>,
    schedstat: Option<File>,
    sampler: Option<SwitchSampler>,
    faults: Option<FaultSampler>,
    last: Counts,
}

impl ThreadReader {
    /// Opens the readers of one thread. `hot` threads also get the voluntary/involuntary split
    /// and, with perf, the switch sampler.
    pub(crate) fn open(pid: u32, tid: i32, hot: bool, perf: Option<&PerfSetup>) -> io::Result<ThreadReader> {
        let dir = PathBuf::from(format!("/proc/{pid}/task/{tid}"));
        let schedstat = File::open(dir.join("schedstat")).ok();
        let (group, sampler, faults) = match perf {
            // A sampler that cannot be opened (e.g. no memory for its ring) leaves the thread
            // watched by its counters; the report says its episodes are missing.
            Some(p) if hot => (
                Some(p.open_group(tid)?),
                p.open_sampler(tid).ok().flatten(),
                PerfSetup::open_fault_sampler(tid).ok(),
            ),
            Some(p) => (Some(p.open_group(tid)?), None, None),
            None => (None, None, None),
        };
        // The voluntary/involuntary split of a hot thread comes from `status` (3 µs a read): exact
        // even when the switch sampler's ring overflows.
        let status = if hot {
            Some(File::open(dir.join("status"))?)
        } else {
            None
        };
        let stat = if group.is_none() {
            Some(File::open(dir.join("stat"))?)
        } else {
            None
        };
        Ok(ThreadReader {
            perf: group,
            status,
            stat,
            schedstat,
            sampler,
            faults,
            last: Counts::default(),
        })
    }

    /// Reads the counters now. Fields that could not be read stay at their previous meaning
    /// (`None` for what this source does not count). No allocation.
    pub(crate) fn read(&mut self) -> Counts {
        // A read that fails keeps the previous values, so the next group does not get the
        // thread's whole history.
        let mut c = self.last;
        let mut buf = [0_u8; 4096];
        if let Some(g) = &mut self.perf {
            let mut words = [0_u64; GROUP_WORDS];
            if g.read_raw(&mut words).is_ok() {
                let v = |i: usize| words[1 + 2 * (i + 1)];
                c.futex = Some((0..g.futex).map(v).sum());
                c.migrations = Some(v(g.futex));
                c.minor_faults = v(g.futex + 1);
                c.major_faults = v(g.futex + 2);
            }
        }
        if let Some(f) = &self.stat {
            if let Some(s) = pread(f, &mut buf) {
                let (minflt, majflt) = parse_stat_faults(s);
                c.minor_faults = minflt;
                c.major_faults = majflt;
            }
        }
        if let Some(f) = &self.status {
            if let Some(s) = pread(f, &mut buf) {
                c.voluntary = field_after(s, b"voluntary_ctxt_switches:");
                c.involuntary = field_after(s, b"nonvoluntary_ctxt_switches:");
            }
        }
        if let Some(f) = &self.schedstat {
            if let Some(s) = pread(f, &mut buf) {
                let mut it = s
                    .split(|b| *b == b' ' || *b == b'\n')
                    .filter(|w| !w.is_empty())
                    .map(parse_u64);
                c.run_ns = it.next().flatten().unwrap_or(0);
                c.runqueue_wait_ns = it.next().flatten().unwrap_or(0);
                c.wakeups = it.next().flatten().unwrap_or(0);
            }
        }
        self.last = c;
        c
    }

    /// Whether this thread's off-CPU episodes are recorded.
    pub(crate) fn has_sampler(&self) -> bool {
        self.sampler.is_some()
    }

    /// Stops recording switches (at the end of the measured period), so draining ends.
    pub(crate) fn stop_sampling(&mut self) {
        if let Some(s) = &mut self.sampler {
            s.disable();
        }
        if let Some(s) = &mut self.faults {
            let _ = s.sampler.disable();
        }
    }

    /// Whether this thread's page faults are timed.
    pub(crate) fn has_fault_sampler(&self) -> bool {
        self.faults.is_some()
    }

    /// Drains the page-fault samples gathered so far (their times, in order). Returns the
    /// samples the kernel dropped.
    pub(crate) fn drain_faults(&mut self, out: &mut Vec<i64>) -> u64 {
        match &mut self.faults {
            Some(s) => s.drain(out),
            None => 0,
        }
    }

    /// Drains the switch records gathered so far into off-CPU episodes (switch-out with its
    /// cause and who took the CPU, switch-in time). Returns the records the kernel dropped.
    pub(crate) fn drain_switches(&mut self, out: &mut Vec<OffCpu>) -> u64 {
        match &mut self.sampler {
            Some(s) => s.drain(out),
            None => 0,
        }
    }
}

/// Steal time of all CPUs from the first line of `/proc/stat` (8th value, USER_HZ ticks), ns.
pub(crate) fn total_steal_ns(stat: &File) -> Option<u64> {
    let mut buf = [0_u8; 256];
    parse_steal_ns(pread(stat, &mut buf)?)
}

fn parse_steal_ns(s: &[u8]) -> Option<u64> {
    let line = s.split(|b| *b == b'\n').next()?;
    let steal = line
        .split(|b| *b == b' ')
        .filter(|w| !w.is_empty())
        .nth(8)
        .and_then(parse_u64)?;
    // USER_HZ is 100 on every Linux ABI.
    Some(steal * 10_000_000)
}

fn pread<'a>(f: &File, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    let n = f.read_at(buf, 0).ok()?;
    Some(&buf[..n])
}

fn parse_u64(w: &[u8]) -> Option<u64> {
    if w.is_empty() || w.len() > 20 {
        return None;
    }
    w.iter().try_fold(0_u64, |acc, b| {
        b.is_ascii_digit()
            .then(|| acc.checked_mul(10)?.checked_add(u64::from(b - b'0')))
            .flatten()
    })
}

/// The number after `key` (the start of a line, colon included) on its line.
fn field_after(s: &[u8], key: &[u8]) -> Option<u64> {
    let line = s.split(|b| *b == b'\n').find(|l| l.starts_with(key))?;
    parse_u64(line[key.len()..].trim_ascii())
}

/// Minor and major faults from `/proc/.../stat` (fields 10 and 12; the command name in field 2
/// may contain spaces and parentheses, so count from the last `)`).
fn parse_stat_faults(s: &[u8]) -> (u64, u64) {
    let Some(close) = s.iter().rposition(|b| *b == b')') else {
        return (0, 0);
    };
    let mut fields = s[close + 1..].split(|b| *b == b' ').filter(|w| !w.is_empty());
    // After ')': field 3 (state) is index 0, so field n is index n - 3.
    let minflt = fields.nth(10 - 3).and_then(parse_u64).unwrap_or(0);
    let majflt = fields.nth(12 - 10 - 1).and_then(parse_u64).unwrap_or(0);
    (minflt, majflt)
}

/// The page-fault sampler of one hot thread.
struct FaultSampler {
    sampler: Sampler,
    lost: u64,
}

impl std::fmt::Debug for FaultSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultSampler").field("lost", &self.lost).finish()
    }
}

impl FaultSampler {
    fn drain(&mut self, out: &mut Vec<i64>) -> u64 {
        while let Some(r) = self.sampler.next_record() {
            let b = r.to_contiguous();
            self.lost += apply_fault_record(r.ty(), &b, out);
        }
        self.lost
    }
}

/// Applies one page-fault record (its bytes after the header; sample_type = TIME) to the list
/// of fault times; returns the records the kernel reports lost.
fn apply_fault_record(ty: u32, b: &[u8], out: &mut Vec<i64>) -> u64 {
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
    };
    match ty {
        PERF_RECORD_SAMPLE => {
            if let Some(t) = u64_at(0) {
                out.push(t as i64);
            }
            0
        }
        PERF_RECORD_LOST => u64_at(8).unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::switch::PERF_RECORD_SWITCH;
    use super::*;

    #[test]
    fn stat_faults_are_read_after_the_command_name() {
        let s = b"123 (a (weird) name) S 1 2 3 4 5 6 77 8 99 10 11 12\n";
        assert_eq!(parse_stat_faults(s), (77, 99));
    }

    #[test]
    fn status_fields_are_not_confused_with_their_suffixes() {
        let s = b"Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(field_after(s, b"voluntary_ctxt_switches:"), Some(12));
        assert_eq!(field_after(s, b"nonvoluntary_ctxt_switches:"), Some(3));
    }

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line_in_ticks() {
        let s = b"cpu  542772 0 44381 336229 1009 0 526 2945 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(parse_steal_ns(s), Some(2945 * 10_000_000));
        assert_eq!(parse_steal_ns(b"cpu 1 2 3\n"), None);
        let f = File::open("/proc/stat").unwrap();
        assert!(total_steal_ns(&f).is_some());
    }

    #[test]
    fn fault_records_become_times_and_lost_records_are_counted() {
        let mut out = Vec::new();
        assert_eq!(
            apply_fault_record(PERF_RECORD_SAMPLE, &1_234_u64.to_ne_bytes(), &mut out),
            0
        );
        assert_eq!(apply_fault_record(PERF_RECORD_SAMPLE, &[1, 2, 3], &mut out), 0);
        let mut lost = 7_u64.to_ne_bytes().to_vec();
        lost.extend(5_u64.to_ne_bytes());
        assert_eq!(apply_fault_record(PERF_RECORD_LOST, &lost, &mut out), 5);
        assert_eq!(
            apply_fault_record(PERF_RECORD_SWITCH, &9_u64.to_ne_bytes(), &mut out),
            0
        );
        assert_eq!(out, vec![1_234]);
    }

    #[test]
    fn numbers_parse_without_overflow_or_junk() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b""), None);
    }

    #[test]
    fn proc_readers_see_this_thread_switch_voluntarily() {
        let tid = crate::sys::thread::current_tid();
        let mut r = ThreadReader::open(std::process::id(), tid, true, None).unwrap();
        let a = r.read();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let b = r.read();
        assert!(b.voluntary.unwrap() >= a.voluntary.unwrap() + 5, "{a:?} -> {b:?}");
        assert!(b.run_ns >= a.run_ns && b.wakeups >= a.wakeups + 5, "{a:?} -> {b:?}");
        assert_eq!(b.futex, None, "/proc cannot count futex calls");
    }
}
