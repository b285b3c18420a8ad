//! The sched_switch sampler of a hot thread: its off-CPU episodes, each with why it left the CPU
//! (blocked, preempted, or yielded in `sched_yield`) and who ran instead.

use std::io;
use std::path::Path;
use std::sync::OnceLock;

use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, SampleFlag, Sampler};

use crate::model::OffCpu;
use crate::model::OffCpuKind;

/// Ring buffer for the switch records of one hot thread (bytes, a power of two), largest
/// first. About 270 bytes per off-CPU episode by the layouts below (the sample with a chain of
/// ~10 frames and sched_switch's 68 raw bytes, a switch-out and a switch-in record): 32 MiB
/// holds ~120,000 episodes (a thread that blocks per message at 10,000 msg/s for 12 s).
const RING_BYTES: [usize; 4] = [32 << 20, 8 << 20, 1 << 20, 256 << 10];

/// Kernel frames kept per switch-out (fewer where `kernel.perf_event_max_stack` allows fewer):
/// from the tracepoint down to the syscall entry is about 8.
const MAX_STACK: u16 = 16;

/// [`MAX_STACK`], or the kernel's limit when lower (the kernel refuses a sampler asking more).
fn max_stack() -> u16 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|s| s.trim().parse::<u16>().ok())
        .map_or(MAX_STACK, |limit| limit.min(MAX_STACK))
}

/// Offsets of the `sched:sched_switch` fields we read, from its tracefs `format` file.
#[derive(Debug, Clone, Copy)]
pub(super) struct SwitchFormat {
    id: u64,
    /// Whether the samples carry their kernel call chain (if the kernel refuses it, no yield is
    /// told apart), and at most how many frames.
    chain: bool,
    max_stack: u16,
    /// Where `sched_yield`'s kernel code lies (`[start, end)`, from `/proc/kallsyms`): a
    /// switch-out whose kernel call chain passes through it gave the CPU away.
    yields: &'static [(u64, u64)],
    prev_state: (usize, usize),
    next_comm: (usize, usize),
    next_pid: (usize, usize),
}

pub(super) fn parse_switch_format(events: &Path) -> Option<SwitchFormat> {
    let id = super::read_id(events, "sched/sched_switch")?;
    let text = std::fs::read_to_string(events.join("sched/sched_switch/format")).ok()?;
    let field = |name: &str| -> Option<(usize, usize)> {
        let line = text.lines().find(|l| {
            l.split(';')
                .next()
                .is_some_and(|decl| decl.trim_end().ends_with(name) || decl.contains(&format!(" {name}[")))
        })?;
        let num = |key: &str| -> Option<usize> {
            let at = line.find(key)? + key.len();
            line[at..].split(';').next()?.trim().parse().ok()
        };
        Some((num("offset:")?, num("size:")?))
    };
    Some(SwitchFormat {
        id,
        chain: true,
        max_stack: max_stack(),
        yields: yield_text(),
        prev_state: field("prev_state")?,
        next_comm: field("next_comm")?,
        next_pid: field("next_pid")?,
    })
}

/// Opens the switch sampler of thread `tid`: each switch-out a sample with its kernel call
/// chain (up to `fmt.max_stack` frames, so a yield is told from a preemption), each switch-in a
/// record; without the chain if the kernel refuses it.
pub(super) fn open(fmt: SwitchFormat, tid: i32) -> io::Result<SwitchSampler> {
    open_with(fmt, tid).or_else(|_| open_with(SwitchFormat { chain: false, ..fmt }, tid))
}

fn open_with(fmt: SwitchFormat, tid: i32) -> io::Result<SwitchSampler> {
    let mut b = Builder::new(Tracepoint::with_id(fmt.id));
    b.observe_pid(tid).any_cpu().include_kernel();
    if fmt.chain {
        b.sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::CALLCHAIN | SampleFlag::RAW)
            .exclude_callchain_user(true)
            .sample_max_stack(fmt.max_stack);
    } else {
        b.sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::RAW);
    }
    b.sample_period(1)
        .sample_id_all(true)
        .context_switch(true)
        .clockid(Clock::MONOTONIC);
    let mut last = None;
    for bytes in RING_BYTES {
        let counter = b.build()?;
        match counter.sampled(bytes) {
            Ok(mut s) => {
                s.enable()?;
                return Ok(SwitchSampler {
                    sampler: s,
                    fmt,
                    lost: 0,
                });
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no ring size worked")))
}

/// The sched_switch sampler of one thread.
pub(super) struct SwitchSampler {
    sampler: Sampler,
    fmt: SwitchFormat,
    lost: u64,
}

pub(super) const PERF_RECORD_LOST: u32 = 2;

pub(super) const PERF_RECORD_SAMPLE: u32 = 9;

pub(super) const PERF_RECORD_SWITCH: u32 = 14;

const PERF_RECORD_MISC_SWITCH_OUT: u16 = 0x2000;

/// `TASK_REPORT_MAX` in sched_switch's prev_state: the task was preempted while runnable.
const STATE_PREEMPTED: i64 = 0x100;

impl std::fmt::Debug for SwitchSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchSampler").field("lost", &self.lost).finish()
    }
}

impl SwitchSampler {
    /// Stops recording (what was recorded can still be drained).
    pub(super) fn disable(&mut self) {
        let _ = self.sampler.disable();
    }

    pub(super) fn drain(&mut self, out: &mut Vec<OffCpu>) -> u64 {
        while let Some(r) = self.sampler.next_record() {
            if out.len() >= crate::model::MAX_EPISODES && r.ty() == PERF_RECORD_SAMPLE {
                // A new episode past the bound: counted, not kept. (A switch-in still closes
                // the last one kept; later ones find it closed.)
                self.lost += 1;
                continue;
            }
            let b = r.to_contiguous();
            self.lost += apply_record(r.ty(), r.misc(), &b, &self.fmt, out);
        }
        self.lost
    }
}

/// Applies one perf record (its bytes after the 8-byte header) to the episode list; returns
/// the records the kernel reports lost. Pure, so it is tested with byte fixtures.
///
/// Layouts (sample_type = TID | TIME | CPU | CALLCHAIN | RAW, sample_id_all):
/// SAMPLE: pid u32, tid u32, time u64, cpu u32, res u32, nr u64, ips[nr] u64, size u32,
/// raw[size] (without `fmt.chain`, no `nr` and `ips`); SWITCH: sample_id = pid u32, tid u32,
/// time u64, cpu u32, res u32; LOST: id u64, lost u64.
fn apply_record(ty: u32, misc: u16, b: &[u8], fmt: &SwitchFormat, out: &mut Vec<OffCpu>) -> u64 {
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
    };
    match ty {
        PERF_RECORD_SAMPLE => {
            apply_sample(b, fmt, out);
            0
        }
        PERF_RECORD_SWITCH if misc & PERF_RECORD_MISC_SWITCH_OUT == 0 => {
            // Switch-in: closes the latest open episode.
            if let (Some(time), Some(last)) = (u64_at(8), out.last_mut()) {
                if last.in_ns.is_none() {
                    last.in_ns = Some(time as i64);
                }
            }
            0
        }
        PERF_RECORD_LOST => u64_at(8).unwrap_or(0),
        _ => 0,
    }
}

/// A `sched_switch` sample (this thread switched out): a new off-CPU episode, its kind read
/// from the previous task's state and the call chain (layout in [`apply_record`]).
fn apply_sample(b: &[u8], fmt: &SwitchFormat, out: &mut Vec<OffCpu>) {
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
    };
    let (Some(time), Some(cpu)) = (u64_at(8), u64_at(16)) else {
        return;
    };
    // The call chain (none without `fmt.chain`), then the raw tracepoint data.
    let chain: &[u8] = if fmt.chain {
        let Some(chain) = u64_at(24)
            .and_then(|nr| usize::try_from(nr).ok())
            .filter(|&n| n <= usize::from(MAX_STACK) + 8)
            .and_then(|n| b.get(32..32 + 8 * n))
        else {
            return;
        };
        chain
    } else {
        &[]
    };
    let at = if fmt.chain { 32 + chain.len() } else { 24 };
    let size = b
        .get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes(s.try_into().expect("4 bytes")));
    let Some(raw) = b.get(at + 4..at + 4 + size as usize) else {
        return;
    };
    let int = |(o, n): (usize, usize)| -> i64 {
        match raw.get(o..o + n) {
            Some(s) if n == 8 => i64::from_ne_bytes(s.try_into().expect("8 bytes")),
            Some(s) if n == 4 => i64::from(i32::from_ne_bytes(s.try_into().expect("4 bytes"))),
            _ => 0,
        }
    };
    let state = int(fmt.prev_state);
    // Runnable when switched out (state 0 "R", or the preempt flag "R+"): preempted (a
    // user-space spinner is preempted on return from an interrupt, which also shows as
    // "R") or, when the call chain passes through sched_yield, yielded; any task state
    // bit means it blocked.
    let kind = if state & STATE_PREEMPTED == 0 && state & 0xff != 0 {
        OffCpuKind::Blocked
    } else if state & STATE_PREEMPTED == 0 && in_yield(chain, fmt.yields) {
        OffCpuKind::Yielded
    } else {
        OffCpuKind::Preempted
    };
    if let Some(last) = out.last_mut() {
        if last.in_ns.is_none() {
            // Its switch-in was never seen: unknown length, count it as none rather
            // than stretch it to this switch-out.
            last.in_ns = Some(last.out_ns);
        }
    }
    let mut comm = [0_u8; 16];
    if let Some(c) = raw.get(fmt.next_comm.0..fmt.next_comm.0 + fmt.next_comm.1.min(16)) {
        comm[..c.len()].copy_from_slice(c);
    }
    out.push(OffCpu {
        out_ns: time as i64,
        in_ns: None,
        cpu: (cpu & 0xffff_ffff) as u32,
        kind,
        next_pid: int(fmt.next_pid) as i32,
        next_comm: comm,
    });
}

/// Where `sched_yield`'s kernel code lies, read once from `/proc/kallsyms`; empty when the
/// kernel hides its addresses (`kernel.kptr_restrict`, or not root): yields then count as
/// preemptions, as before this was read.
fn yield_text() -> &'static [(u64, u64)] {
    static TEXT: OnceLock<Vec<(u64, u64)>> = OnceLock::new();
    TEXT.get_or_init(|| {
        std::fs::read_to_string("/proc/kallsyms")
            .map(|s| yield_ranges(&s))
            .unwrap_or_default()
    })
}

/// Whether `sched_yield`'s code was found (see [`yield_text`]).
pub(super) fn yields_known() -> bool {
    !yield_text().is_empty()
}

/// The text ranges of the functions of `sched_yield`'s path (`do_sched_yield`,
/// `__x64_sys_sched_yield` and the other arches' and wrappers' `*sys_sched_yield`), each up to
/// the next text symbol, sorted.
fn yield_ranges(kallsyms: &str) -> Vec<(u64, u64)> {
    let (mut starts, mut yields) = (Vec::new(), Vec::new());
    for line in kallsyms.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(addr), Some(ty), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !matches!(ty, "t" | "T") {
            continue;
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if addr == 0 {
            return Vec::new();
        }
        starts.push(addr);
        if name == "do_sched_yield" || name.ends_with("sys_sched_yield") {
            yields.push(addr);
        }
    }
    starts.sort_unstable();
    starts.dedup();
    yields.sort_unstable();
    yields.dedup();
    yields
        .into_iter()
        .filter_map(|a| starts.get(starts.partition_point(|&s| s <= a)).map(|&end| (a, end)))
        .collect()
}

/// Whether a kernel call chain passes through `sched_yield`'s code.
fn in_yield(chain: &[u8], yields: &[(u64, u64)]) -> bool {
    chain.chunks_exact(8).any(|w| {
        let ip = u64::from_ne_bytes(w.try_into().expect("8 bytes"));
        let i = yields.partition_point(|&(start, _)| start <= ip);
        i > 0 && ip < yields[i - 1].1
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt() -> SwitchFormat {
        // The offsets of Linux 6.x's sched_switch.
        SwitchFormat {
            id: 0,
            chain: true,
            max_stack: MAX_STACK,
            yields: &[(0xffff_1000, 0xffff_1040), (0xffff_2000, 0xffff_2100)],
            prev_state: (32, 8),
            next_comm: (40, 16),
            next_pid: (56, 4),
        }
    }

    fn sample(time: u64, cpu: u32, state: i64, comm: &[u8], pid: i32) -> Vec<u8> {
        sample_with_chain(
            time,
            cpu,
            state,
            comm,
            pid,
            &[PERF_CONTEXT_KERNEL, 0xffff_0010, 0xffff_0020],
        )
    }

    /// `PERF_CONTEXT_KERNEL`: the marker a kernel call chain starts with.
    const PERF_CONTEXT_KERNEL: u64 = -128_i64 as u64;

    fn sample_with_chain(time: u64, cpu: u32, state: i64, comm: &[u8], pid: i32, chain: &[u64]) -> Vec<u8> {
        let mut raw = vec![0_u8; 64];
        raw[32..40].copy_from_slice(&state.to_ne_bytes());
        raw[40..40 + comm.len()].copy_from_slice(comm);
        raw[56..60].copy_from_slice(&pid.to_ne_bytes());
        let mut b = Vec::new();
        b.extend_from_slice(&7_u32.to_ne_bytes()); // pid
        b.extend_from_slice(&7_u32.to_ne_bytes()); // tid
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&cpu.to_ne_bytes());
        b.extend_from_slice(&0_u32.to_ne_bytes());
        b.extend_from_slice(&(chain.len() as u64).to_ne_bytes());
        for ip in chain {
            b.extend_from_slice(&ip.to_ne_bytes());
        }
        b.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
        b.extend_from_slice(&raw);
        b
    }

    fn switch(time: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&[7, 0, 0, 0, 7, 0, 0, 0]);
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn switch_records_become_episodes_with_cause_and_who_ran() {
        let f = fmt();
        let mut out = Vec::new();
        // Preempted ("R", state 0) by aeron-driver, back at 150.
        let s = sample(100, 1, 0, b"aeron-driver", 42);
        assert_eq!(apply_record(PERF_RECORD_SAMPLE, 0, &s, &f, &mut out), 0);
        apply_record(
            PERF_RECORD_SWITCH,
            PERF_RECORD_MISC_SWITCH_OUT,
            &switch(101),
            &f,
            &mut out,
        );
        apply_record(PERF_RECORD_SWITCH, 0, &switch(150), &f, &mut out);
        // Blocked ("S", state 1), the CPU went idle; its switch-in is lost.
        apply_record(PERF_RECORD_SAMPLE, 0, &sample(200, 1, 1, b"swapper/1", 0), &f, &mut out);
        // Preempted with the preempt flag ("R+"), never switched back in before the end.
        apply_record(
            PERF_RECORD_SAMPLE,
            0,
            &sample(300, 0, 0x100, b"kworker/0:1", 9),
            &f,
            &mut out,
        );
        let mut lost = Vec::new();
        lost.extend_from_slice(&5_u64.to_ne_bytes());
        lost.extend_from_slice(&3_u64.to_ne_bytes());
        assert_eq!(apply_record(PERF_RECORD_LOST, 0, &lost, &f, &mut out), 3);

        assert_eq!(out.len(), 3);
        assert_eq!(
            (out[0].out_ns, out[0].in_ns, out[0].kind),
            (100, Some(150), OffCpuKind::Preempted)
        );
        assert_eq!(
            (out[0].next_name(), out[0].next_pid, out[0].cpu),
            ("aeron-driver".to_owned(), 42, 1)
        );
        assert_eq!(out[1].kind, OffCpuKind::Blocked);
        assert_eq!(
            out[1].in_ns,
            Some(200),
            "a missing switch-in closes the episode at zero length"
        );
        assert_eq!(
            (out[2].kind, out[2].in_ns, out[2].cpu),
            (OffCpuKind::Preempted, None, 0)
        );
        // Truncated records are ignored, never a panic.
        let short = sample(400, 1, 0, b"x", 1);
        for n in 0..short.len() {
            apply_record(PERF_RECORD_SAMPLE, 0, &short[..n], &f, &mut out);
        }
        apply_record(PERF_RECORD_SWITCH, 0, &[1, 2, 3], &f, &mut out);
    }

    #[test]
    fn a_switch_out_inside_sched_yield_is_a_yield() {
        let f = fmt();
        let mut out = Vec::new();
        let chain = |ips: &[u64]| [&[PERF_CONTEXT_KERNEL][..], ips].concat();
        // "R" with do_sched_yield's code in the chain: yielded, the CPU to the driver.
        let yielded = sample_with_chain(100, 1, 0, b"aeron-driver", 42, &chain(&[0xffff_0f00, 0xffff_1008]));
        // "R" through the other range's last byte: yielded too.
        let last = sample_with_chain(200, 1, 0, b"x", 1, &chain(&[0xffff_20ff]));
        // "R" just past a range: preempted (on return from an interrupt).
        let past = sample_with_chain(300, 1, 0, b"x", 1, &chain(&[0xffff_1040, 0xffff_2100]));
        // "R+" (preempted in the kernel) inside sched_yield: preempted.
        let plus = sample_with_chain(400, 1, 0x100, b"x", 1, &chain(&[0xffff_1008]));
        // "S" inside it (cannot happen, but a state bit means blocked): blocked.
        let blocked = sample_with_chain(500, 1, 1, b"x", 1, &chain(&[0xffff_1008]));
        for s in [yielded, last, past, plus, blocked] {
            apply_record(PERF_RECORD_SAMPLE, 0, &s, &f, &mut out);
        }
        let kinds: Vec<OffCpuKind> = out.iter().map(|o| o.kind).collect();
        use OffCpuKind::{Blocked, Preempted, Yielded};
        assert_eq!(kinds, [Yielded, Yielded, Preempted, Preempted, Blocked]);
        assert_eq!((out[0].next_name(), out[0].next_pid), ("aeron-driver".to_owned(), 42));
        // A chain longer than asked for is malformed: ignored, never a panic.
        let long: Vec<u64> = (0..64).collect();
        apply_record(
            PERF_RECORD_SAMPLE,
            0,
            &sample_with_chain(600, 1, 0, b"x", 1, &long),
            &f,
            &mut out,
        );
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn samples_without_a_call_chain_read_as_before() {
        // The kernel refused the chain: the sample has no `nr` and `ips`; nothing is a yield.
        let f = SwitchFormat { chain: false, ..fmt() };
        let with_chain = sample_with_chain(100, 1, 0, b"aeron-driver", 42, &[]);
        // The same sample without its chain's `nr` word (bytes 24..32).
        let without = [&with_chain[..24], &with_chain[32..]].concat();
        let blocked = sample_with_chain(200, 1, 1, b"swapper/1", 0, &[]);
        let mut out = Vec::new();
        apply_record(PERF_RECORD_SAMPLE, 0, &without, &f, &mut out);
        apply_record(
            PERF_RECORD_SAMPLE,
            0,
            &[&blocked[..24], &blocked[32..]].concat(),
            &f,
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].kind, out[0].next_name(), out[0].next_pid),
            (OffCpuKind::Preempted, "aeron-driver".to_owned(), 42)
        );
        assert_eq!(out[1].kind, OffCpuKind::Blocked);
    }

    #[test]
    fn sched_yield_s_code_is_found_in_kallsyms_up_to_the_next_symbol() {
        let kallsyms = "\
ffffffff813c14a0 t __pfx_do_sched_yield
ffffffff813c14b0 t do_sched_yield
ffffffff813c1560 t yield_to
ffffffff813cf150 T __x64_sys_sched_yield
ffffffff81297bf0 t kvm_sched_yield
ffffffff813cf130 D some_data
ffffffff813cf170 T __x64_sys_sched_get_priority_max
ffffffffc0001000 t helper [some_module]
";
        assert_eq!(
            yield_ranges(kallsyms),
            [
                (0xffff_ffff_813c_14b0, 0xffff_ffff_813c_1560),
                (0xffff_ffff_813c_f150, 0xffff_ffff_813c_f170),
            ]
        );
        // Hidden addresses (kptr_restrict, not root): nothing found, yields stay preemptions.
        assert!(yield_ranges("0000000000000000 t do_sched_yield\n0000000000000000 T _text\n").is_empty());
        assert!(yield_ranges("").is_empty());
    }
}
