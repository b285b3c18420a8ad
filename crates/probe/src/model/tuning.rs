//! What the tuning calculators take and give (`latency-probe nak`, `latency-probe buffers`):
//! plain data, every input next to every output, so a `--json` file says what it was computed
//! from. The arithmetic is in `analysis::tuning`; seed 000 ("NAK Timer Tuning") and seed 003
//! (bigger receive buffers are not better) are where the formulas come from.

use serde::{Deserialize, Serialize};

/// Aeron's defaults (C driver, Aeron 1.54: `aeron_driver_context.c`; the Java driver's
/// `Configuration` has the same) for the settings the calculators derive.
pub mod aeron_default {
    /// `aeron.nak.multicast.max.backoff`: 10 ms.
    pub const NAK_MULTICAST_MAX_BACKOFF_NS: u64 = 10_000_000;
    /// `aeron.nak.multicast.group.size`: 10.
    pub const NAK_MULTICAST_GROUP_SIZE: u32 = 10;
    /// `aeron.retransmit.unicast.linger`: 10 ms.
    pub const RETRANSMIT_UNICAST_LINGER_NS: u64 = 10_000_000;
    /// `aeron.nak.unicast.delay`: 1 µs (what the embedded C driver 1.54 reads back with no
    /// `AERON_NAK_UNICAST_DELAY`; `latency-probe doctor` prints it).
    pub const NAK_UNICAST_DELAY_NS: u64 = 1_000;
    /// `aeron.nak.unicast.retry.delay.ratio`: 100 (a repeated unicast NAK waits 100 x the delay).
    pub const NAK_UNICAST_RETRY_DELAY_RATIO: u64 = 100;
    /// `aeron.socket.so_rcvbuf`: 128 KiB.
    pub const SOCKET_SO_RCVBUF: u64 = 128 * 1024;
    /// `aeron.rcv.initial.window.length`: 128 KiB.
    pub const RCV_INITIAL_WINDOW_LENGTH: u64 = 128 * 1024;
    /// `aeron.term.buffer.length` (network publications): 16 MiB.
    pub const TERM_BUFFER_LENGTH: u64 = 16 * 1024 * 1024;
}

/// Aeron's data frame header: every message pays it.
pub const FRAME_HEADER: u64 = 32;
/// Frames are aligned to this many bytes in the term.
pub const FRAME_ALIGNMENT: u64 = 32;

/// A check's outcome, as `doctor` and the calculators print it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "UPPERCASE")]
pub enum CheckStatus {
    /// Fine for the run asked for.
    Pass,
    /// Works, but costs latency or is outside what was proven.
    Warn,
    /// Will not do what was asked: fix it first.
    Fail,
}

impl CheckStatus {
    /// `PASS`, `WARN` or `FAIL`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            CheckStatus::Pass => "PASS",
            CheckStatus::Warn => "WARN",
            CheckStatus::Fail => "FAIL",
        }
    }
}

/// One check: what was measured or computed, what it should be, the outcome, and the fix.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Short name (`isolated recoveries`, `rmem_max`, …).
    pub check: String,
    /// The value found, with its numbers.
    pub measured: String,
    /// What it should be for the run asked for.
    pub expected: String,
    /// The outcome.
    pub status: CheckStatus,
    /// Why, and what to do (one line; empty on a plain pass).
    pub fix: String,
}

/// The three timers and the two unicast NAK settings, in Aeron's units.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct NakSettings {
    /// `aeron.nak.multicast.max.backoff`, ns.
    pub nak_multicast_max_backoff_ns: u64,
    /// `aeron.nak.multicast.group.size`.
    pub nak_multicast_group_size: u32,
    /// `aeron.retransmit.unicast.linger`, ns.
    pub retransmit_unicast_linger_ns: u64,
    /// `aeron.nak.unicast.delay`, ns.
    pub nak_unicast_delay_ns: u64,
    /// `aeron.nak.unicast.retry.delay.ratio`.
    pub nak_unicast_retry_delay_ratio: u64,
}

impl NakSettings {
    /// Aeron's defaults.
    #[must_use]
    pub fn aeron_defaults() -> NakSettings {
        NakSettings {
            nak_multicast_max_backoff_ns: aeron_default::NAK_MULTICAST_MAX_BACKOFF_NS,
            nak_multicast_group_size: aeron_default::NAK_MULTICAST_GROUP_SIZE,
            retransmit_unicast_linger_ns: aeron_default::RETRANSMIT_UNICAST_LINGER_NS,
            nak_unicast_delay_ns: aeron_default::NAK_UNICAST_DELAY_NS,
            nak_unicast_retry_delay_ratio: aeron_default::NAK_UNICAST_RETRY_DELAY_RATIO,
        }
    }
}

/// What the NAK calculator is given.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NakInputs {
    /// Round-trip time between publisher and receivers, ns.
    pub rtt_ns: u64,
    /// The most one lost packet may add to a message's latency, ns.
    pub budget_ns: u64,
    /// Receivers of the stream (MDC destinations, multicast members, cluster followers).
    pub receivers: u32,
    /// Messages per second.
    pub rate: u64,
    /// Fraction of packets lost, 0 to 1 (0.0001 = 0.01%).
    pub loss: f64,
    /// Term length of the publication, bytes.
    pub term_length: u64,
    /// How far the slowest receiver runs behind the publisher, ns.
    pub lag_ns: u64,
    /// Message size, bytes (the frame adds [`FRAME_HEADER`], aligned to [`FRAME_ALIGNMENT`]).
    pub msg_size: u64,
}

/// What each setting may be, and what the calculator chose.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NakPlan {
    /// Everything it was given.
    pub inputs: NakInputs,
    /// Backoff floor: 2 x RTT (the first NAK's suppression must reach the others in time).
    pub backoff_floor_ns: u64,
    /// Backoff ceiling: budget - 2 x RTT (a single loss costs about backoff + 2 x RTT).
    pub backoff_ceiling_ns: u64,
    /// Linger floor: backoff + RTT (absorbs late NAKs for the same loss).
    pub linger_floor_ns: u64,
    /// The derived settings.
    pub chosen: NakSettings,
    /// Aeron's defaults, for comparison.
    pub defaults: NakSettings,
    /// Worst-case single-loss cost on a multicast/MDC stream with `chosen`: backoff + 2 x RTT.
    pub single_loss_ns: u64,
    /// Worst-case double-loss cost (the retransmit lost too): linger + backoff + 2 x RTT.
    pub double_loss_ns: u64,
    /// The same two with Aeron's defaults.
    pub default_single_loss_ns: u64,
    /// See [`NakPlan::default_single_loss_ns`].
    pub default_double_loss_ns: u64,
    /// Unicast single loss with `chosen`: NAK delay + RTT.
    pub unicast_single_loss_ns: u64,
    /// Unicast double loss with `chosen`: the later of the retry delay and the linger, + NAK
    /// delay + RTT.
    pub unicast_double_loss_ns: u64,
    /// Expected NAKs per loss from the whole group (Aeron's `OptimalMulticastDelayGenerator`:
    /// `exp(1.2 x lambda / (2 x backoff / RTT))`, `lambda = ln(group size) + 1`).
    pub expected_naks_per_loss: f64,
    /// The checks: the per-loss budget, and seed 000's three (isolated recoveries,
    /// retransmit-store coverage, implosion guard).
    pub checks: Vec<Check>,
}

/// What the buffer calculator is given.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BufferInputs {
    /// Messages per second.
    pub rate: u64,
    /// Message size, bytes.
    pub msg_size: u64,
    /// Round-trip time, ns.
    pub rtt_ns: u64,
    /// Receivers (the sender sends one copy to each MDC destination).
    pub receivers: u32,
    /// The longest a receiver may stop reading (preempted, a GC, a page fault) without the
    /// kernel dropping what arrives meanwhile, ns.
    pub pause_ns: u64,
    /// How long a loss takes to recover (the retransmit must still be in the term), ns.
    pub recovery_ns: u64,
    /// Where `recovery_ns` came from.
    pub recovery_from: String,
    /// How far the slowest receiver runs behind, ns.
    pub lag_ns: u64,
    /// `net.core.rmem_max`, if known.
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`, if known.
    pub wmem_max: Option<u64>,
    /// The driver's `SO_RCVBUF` request (`aeron.socket.so_rcvbuf`).
    pub so_rcvbuf: u64,
    /// The driver's receiver window (`aeron.rcv.initial.window.length`).
    pub rcv_window: u64,
}

/// What the buffer calculator derives.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BufferPlan {
    /// Everything it was given.
    pub inputs: BufferInputs,
    /// One message's frame in the term, bytes.
    pub frame_bytes: u64,
    /// Bytes per second to each receiver.
    pub bytes_per_second: u64,
    /// Bytes per second the sender writes (one copy per receiver).
    pub send_bytes_per_second: u64,
    /// Bandwidth-delay product: bytes in flight to one receiver over one RTT.
    pub bdp_bytes: u64,
    /// What arrives while a receiver is paused for `pause_ns`.
    pub pause_bytes: u64,
    /// The receive buffer and receiver window that cover both: a power of two, at least 64 KiB.
    pub rcvbuf_bytes: u64,
    /// The send buffer: the sender's bytes over one RTT plus a pause, a power of two, >= 64 KiB.
    pub sndbuf_bytes: u64,
    /// The term that keeps `lag + recovery` of the stream within half a term (retransmits come
    /// from the term), a power of two, at least 64 KiB.
    pub term_length_bytes: u64,
    /// Checks of the system and the driver's settings against these.
    pub checks: Vec<Check>,
}

/// What `doctor` read from the host (`/proc`, `/sys`), each `None` where it could not be read.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct HostReadings {
    /// CPUs this process may use.
    pub usable_cores: Vec<usize>,
    /// The kernel command line.
    pub cmdline: Option<String>,
    /// `/sys/devices/system/cpu/isolated`, expanded.
    pub isolated: Option<Vec<usize>>,
    /// Tasks (other than ours and the kernel's per-CPU threads) allowed on each hot core:
    /// (core, count, a few names).
    pub tasks_on_hot_cores: Option<Vec<(usize, usize, Vec<String>)>>,
    /// IRQs whose affinity includes a hot core: (core, count).
    pub irqs_on_hot_cores: Option<Vec<(usize, usize)>>,
    /// Each hot core's cpufreq governor (`None`: no cpufreq, as in most VMs).
    pub governors: Vec<(usize, Option<String>)>,
    /// The selected value of `/sys/kernel/mm/transparent_hugepage/enabled`.
    pub thp: Option<String>,
    /// Active swap, KiB (from `/proc/swaps`).
    pub swap_kib: Option<u64>,
    /// `current_clocksource`.
    pub clocksource: Option<String>,
    /// Measured cost of one `clock_gettime(CLOCK_MONOTONIC)`, ns.
    pub clock_read_ns: Option<f64>,
    /// Hypervisor steal over the sampling interval, percent of CPU time.
    pub steal_pct: Option<f64>,
    /// Free bytes where the driver's logs go.
    pub shm_free: Option<u64>,
    /// `vm.max_map_count`.
    pub max_map_count: Option<u64>,
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: Option<i64>,
    /// Running as root (perf works whatever the paranoid level).
    pub root: bool,
    /// `net.core.rmem_max`.
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`.
    pub wmem_max: Option<u64>,
    /// DAMON's kdamonds that are on: empty without DAMON, `None` where its directory exists
    /// but could not be listed.
    #[serde(default)]
    pub kdamonds: Option<Vec<Kdamond>>,
}

/// A DAMON kdamond that is on (`/sys/kernel/mm/damon/admin/kdamonds/N`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kdamond {
    /// `N`: its kernel thread is `kdamond.N`.
    pub index: usize,
    /// Its kernel thread's pid.
    pub pid: Option<u32>,
    /// Its schemes' actions (`pageout`, `lru_prio`, ...).
    pub actions: Vec<String>,
}

/// What the run `doctor` checks for needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DoctorRequest {
    /// The cores the hot threads will be pinned to.
    pub hot_cores: Vec<usize>,
    /// Where the driver's logs go, and the bytes the run's logs need there.
    pub shm_dir: String,
    /// See [`DoctorRequest::shm_dir`].
    pub shm_needed: u64,
    /// Whether the channel is UDP (socket buffers and NAK timers matter).
    pub udp: bool,
    /// Messages per second and message size (for the bandwidth-delay product).
    pub rate: u64,
    /// See [`DoctorRequest::rate`].
    pub msg_size: u64,
    /// The embedded driver's settings as (property, value); `None` for an external driver.
    pub driver: Option<Vec<(String, String)>>,
}

/// `doctor`'s result: what it checked for, and each check.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Doctor {
    /// What the run needs.
    pub request: DoctorRequest,
    /// What was read.
    pub readings: HostReadings,
    /// Every check, in order.
    pub checks: Vec<Check>,
}

impl Doctor {
    /// How many checks ended with `status`.
    #[must_use]
    pub fn count(&self, status: CheckStatus) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }
}

/// One arm of the loss experiment (`latency-probe loss`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LossArm {
    /// `default`, `derived`, `min-buffers` or `big-buffers`.
    pub arm: String,
    /// Fraction of data frames each receiver's driver dropped (the loss interceptor).
    pub loss: f64,
    /// The drivers' settings that differ between arms, as (AERON_* variable, value).
    pub settings: Vec<(String, String)>,
    /// Messages each receiver got, summed, and those it missed for good.
    pub received: u64,
    /// See [`LossArm::received`].
    pub lost: u64,
    /// Messages sent before a receiver joined the channel, summed (a late MDC receiver gets the
    /// stream from where it joins: not lost). Absent when zero.
    #[serde(default, skip_serializing_if = "crate::model::is_zero")]
    pub before_join: u64,
    /// NAKs the receivers' drivers sent, summed (their `NAKs sent` counters).
    pub naks_sent: i64,
    /// Retransmits the publisher's driver sent (`Retransmits sent`).
    pub retransmits_sent: i64,
    /// Latency from the intended send time, all receivers' histograms merged.
    pub latency: crate::model::Stats,
    /// The calculator's worst single-loss cost for these timers.
    pub predicted_single_loss_ns: u64,
    /// The calculator's worst double-loss cost for these timers.
    pub predicted_double_loss_ns: u64,
    /// Measured per-loss cost, roughly: this arm's max less the max of the zero-loss control
    /// run in the same invocation (16 x buffers, else the minimum), when one ran.
    pub max_over_no_loss_ns: Option<u64>,
    /// Whether every receiver and the publisher finished.
    pub complete: bool,
    /// Why not, when not.
    pub problems: Vec<String>,
}

/// `latency-probe loss`: the arms and what limited them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LossReport {
    /// Receivers, each with its own driver.
    pub receivers: u32,
    /// Messages per second, message size, measured seconds.
    pub rate: u64,
    /// See [`LossReport::rate`].
    pub msg_size: u64,
    /// See [`LossReport::rate`].
    pub duration_s: f64,
    /// The channel the publisher used (MDC, dynamic control).
    pub channel: String,
    /// The timers the calculator derived for the `derived` arm.
    pub derived: NakPlan,
    /// Each arm, in the order run.
    pub arms: Vec<LossArm>,
    /// What this host could not show, in plain words.
    pub limits: Vec<String>,
}

/// `0-3,8,10-11` as its CPUs; unparseable parts are skipped.
#[must_use]
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    out.extend(a..=b.min(a + 4096));
                }
            }
            None => {
                if let Ok(c) = part.parse() {
                    out.push(c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_expand() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("1"), vec![1]);
    }
}
