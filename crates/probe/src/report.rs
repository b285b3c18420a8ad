//! The report model and its two renderings: JSON for scripts, a text table for people.
//!
//! Guarantees:
//! - The JSON field names of [`Report`] (and of its `groups`, `env`, `tool` and stats entries)
//!   are a contract: scripts rely on them, and tests pin them. Add fields, never rename.
//! - Every report carries the timing model ([`crate::clock::TIMING_MODEL`]) and says which
//!   latency is which: `latency_ns` is measured from the intended (scheduled) send time,
//!   `latency_actual_ns` from the actual send time.
//! - The numbers always add up or the report says they do not: the text accounting line checks
//!   `received + lost == sent`, and [`Report::from_recorder`] adds a note for every anomaly
//!   (publisher vanished, negative or clamped latencies, sequence numbers beyond the plan, ...).
//! - [`write_json`] never leaves a half-written file at the target path: it writes a temporary
//!   file in the same directory, syncs it, then renames it over the target.
//! - Nothing here is on the hot path; it allocates freely.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::clock::TIMING_MODEL;
use crate::recorder::{Accounting, GroupRow, Recorder, GROUPS};
use crate::stats::Stats;

/// What is written where a value could not be read.
pub const UNKNOWN: &str = "unknown";
/// The Aeron client this project uses.
pub const CLIENT: &str = "aeron-rs 0.1.8";
/// `Env::driver_kind` for the embedded Aeron C media driver.
pub const DRIVER_EMBEDDED: &str = "embedded C";
/// `Env::driver_kind` for a media driver run outside the probe (aeronmd, Java MediaDriver).
pub const DRIVER_EXTERNAL: &str = "external";

/// Offer/try_claim outcome names, in the order the text report lists them.
pub const OFFER_OUTCOMES: [&str; 7] = [
    "ok",
    "not_connected",
    "back_pressured",
    "admin_action",
    "closed",
    "max_position_exceeded",
    "other",
];

/// The program that wrote the report.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
}

impl Tool {
    /// This crate's name and version.
    pub fn this() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The machine and software the run happened on. Every field is best effort: [`UNKNOWN`]
/// (or 0 cores) when it could not be read.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// CPUs this process may run on (`std::thread::available_parallelism`).
    pub cores: usize,
    /// Kernel release from /proc/sys/kernel/osrelease.
    pub kernel: String,
    /// [`DRIVER_EMBEDDED`] or [`DRIVER_EXTERNAL`].
    pub driver_kind: String,
    /// Media driver version, as far as known.
    pub driver_version: String,
    /// The Aeron client, [`CLIENT`].
    pub client: String,
    /// cpu0's cpufreq scaling governor.
    pub governor: String,
}

impl Env {
    /// Reads the host's CPU model, core count, kernel and governor (each best effort). The
    /// driver fields are [`UNKNOWN`] until set with [`Env::with_driver`].
    pub fn detect() -> Env {
        let cpu_model = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| parse_cpu_model(&s))
            .unwrap_or_else(|| UNKNOWN.to_string());
        Env {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            driver_kind: UNKNOWN.to_string(),
            driver_version: UNKNOWN.to_string(),
            client: CLIENT.to_string(),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        }
    }

    /// Sets the media driver kind ([`DRIVER_EMBEDDED`] / [`DRIVER_EXTERNAL`]) and version.
    pub fn with_driver(mut self, kind: &str, version: &str) -> Env {
        self.driver_kind = kind.to_string();
        self.driver_version = version.to_string();
        self
    }
}

fn read_trimmed(path: &str) -> String {
    match fs::read_to_string(path) {
        Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => UNKNOWN.to_string(),
    }
}

/// The CPU model from /proc/cpuinfo text: `model name` (x86), else `Hardware` or `Processor`
/// (some ARM kernels), else `cpu model` (MIPS) or `cpu` (POWER).
fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Hardware", "Processor", "cpu model", "cpu"] {
        for line in cpuinfo.lines() {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim();
                if k.trim() == key && !v.is_empty() {
                    return Some(v.split_whitespace().collect::<Vec<_>>().join(" "));
                }
            }
        }
    }
    None
}

/// One of the [`GROUPS`] time-ordered groups: its planned sequence range, the intended-time
/// latency flattened into the entry, and the actual-time latency nested under `actual`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GroupReport {
    /// Group index, in send order.
    pub index: usize,
    /// First planned sequence number of the group (global seq space, warm-up included).
    pub first_seq: u64,
    /// Last planned sequence number of the group (inclusive).
    pub last_seq: u64,
    /// Latency from the intended send time (its fields appear directly in the entry).
    #[serde(flatten)]
    pub latency: Stats,
    /// Latency from the actual send time.
    pub actual: Stats,
    /// What the OS counters did during this group (when diagnostics ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<crate::jitter::GroupJitter>,
}

impl From<&GroupRow> for GroupReport {
    fn from(g: &GroupRow) -> Self {
        GroupReport {
            index: g.index,
            first_seq: g.first_seq,
            last_seq: g.last_seq,
            latency: g.intended,
            actual: g.actual,
            jitter: None,
        }
    }
}

/// Everything a run reports. Field names are the JSON contract.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Report {
    /// Messages the publisher sent (warm-up included), from its end marker; `null` if none came.
    pub sent: Option<u64>,
    /// Unique messages received (warm-up included).
    pub received: u64,
    /// Messages never received.
    pub lost: u64,
    /// Messages received more than once (extra copies).
    pub duplicates: u64,
    /// Messages that arrived after a higher sequence number.
    pub reordered: u64,
    /// Payloads that were not our schema.
    pub decode_errors: u64,
    /// Target send rate, messages per second.
    pub rate_target: f64,
    /// Achieved send rate, messages per second.
    pub rate_achieved: f64,
    /// Latency from the intended send time (coordinated-omission corrected), nanoseconds.
    pub latency_ns: Stats,
    /// Latency from the actual send time (what the transport adds), nanoseconds.
    pub latency_actual_ns: Stats,
    /// The [`GROUPS`] time-ordered groups.
    pub groups: Vec<GroupReport>,
    /// Offer/try_claim outcome name -> count (see [`OFFER_OUTCOMES`]).
    pub offer: BTreeMap<String, u64>,
    /// Machine and software.
    pub env: Env,
    /// [`TIMING_MODEL`].
    pub timing_model: String,
    /// `false` if the run did not finish as planned (see `incomplete_reason`).
    pub complete: bool,
    /// Why the run is incomplete, in plain words.
    pub incomplete_reason: Option<String>,
    /// `true` if the publisher's end marker never arrived.
    pub publisher_vanished: bool,
    /// Messages with a sequence number beyond the plan (counted in `received`).
    pub out_of_range: u64,
    /// Unique warm-up messages received (counted in `received`, not in the latencies).
    pub warmup_received: u64,
    /// Message size in bytes.
    pub msg_size: u64,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// The program that wrote this report.
    pub tool: Tool,
    /// When the run started, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_at: String,
    /// Warnings, in plain words.
    pub notes: Vec<String>,
    /// The publisher's own report, when the run was driven by `latency-probe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<crate::publisher::PubReport>,
    /// Jitter diagnosis: counters, slowest samples and the verdict (absent with
    /// `--diagnostics off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<crate::jitter::JitterReport>,
    /// What the latencies are: one-way (publisher to subscriber) or round trips (ping to pong
    /// and back, timed on ping's thread).
    #[serde(default)]
    pub mode: RunMode,
    /// Page faults of the hot threads while measuring, and the log buffers pre-faulted before.
    #[serde(default)]
    pub faults: Faults,
    /// The raw cache-line round trip between the two hot cores right before and after the run,
    /// and every percentile as a ratio to it (`latency-probe` only; absent with `--floor 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<crate::floor::Floor>,
    /// The full HdrHistograms, overall and per group (see [`crate::results`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<crate::results::Histograms>,
    /// `latency-probe --runs N`: every run and the run-to-run variation (this report is the
    /// last run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<crate::runs::RunsSummary>,
    /// Little's law (seed 004): achieved rate x mean latency from the intended send time, the
    /// number of messages in flight on average (one-way: published, not yet handled; rtt: the
    /// fraction of time the one outstanding message is out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<f64>,
    /// The media driver's counters over the run (`latency-probe`, read from `cnc.dat` as
    /// AeronStat does): errors, back-pressure and what else moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_counters: Option<crate::counters::DriverCounters>,
}

impl Report {
    /// Little's law: `rate_achieved x mean latency` (see [`Report::in_flight`]).
    #[must_use]
    pub fn littles_law(&self) -> Option<f64> {
        let v = self.rate_achieved * self.latency_ns.mean / 1e9;
        (self.latency_ns.count > 0 && v.is_finite() && v >= 0.0).then_some(v)
    }
}

/// Page faults the hot threads took during the measured phase (`getrusage(RUSAGE_THREAD)` at
/// its start and end), and what was pre-faulted before it so they take none.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// The publisher's (ping's) hot thread.
    pub publisher: Option<u64>,
    /// The subscriber's (pong's) hot thread.
    pub subscriber: Option<u64>,
    /// What was pre-faulted, one entry per log buffer (`"<side> <what>: <pages, method, time>"`).
    pub prefaulted: Vec<String>,
}

impl Faults {
    /// One line for the text report.
    #[must_use]
    pub fn render(&self) -> String {
        let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        let mut s = format!(
            "page faults while measuring (hot threads, getrusage): publisher {}, subscriber {}",
            n(self.publisher),
            n(self.subscriber)
        );
        if self.prefaulted.is_empty() {
            s.push_str("; nothing pre-faulted");
        } else {
            s.push_str("; pre-faulted before measuring: ");
            s.push_str(&self.prefaulted.join("; "));
        }
        s
    }
}

/// What a run measures.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RunMode {
    /// Publisher to subscriber, timestamps from one host clock (the default).
    #[default]
    OneWay,
    /// Ping to pong and back on two streams, both timestamps on ping's thread: the honest mode
    /// across hosts.
    Rtt,
}

impl RunMode {
    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::OneWay => "one-way",
            RunMode::Rtt => "rtt",
        }
    }
}

impl std::fmt::Display for RunMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "one-way" | "oneway" => Ok(RunMode::OneWay),
            "rtt" | "round-trip" => Ok(RunMode::Rtt),
            _ => Err(format!("'{s}' is not a mode; use one-way or rtt")),
        }
    }
}

impl Report {
    /// Attaches the jitter section and its per-group rows (replacing earlier ones).
    pub fn attach_jitter(&mut self, j: crate::jitter::JitterReport, rows: Vec<Option<crate::jitter::GroupJitter>>) {
        for (g, r) in self.groups.iter_mut().zip(rows) {
            g.jitter = r;
        }
        self.jitter = Some(j);
    }
}

/// Run parameters [`Report::from_recorder`] cannot know from the recorder.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// Target send rate, messages per second.
    pub rate_target: f64,
    /// Achieved send rate, messages per second.
    pub rate_achieved: f64,
    /// Message size in bytes.
    pub msg_size: u64,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// Start time, from [`utc_timestamp`].
    pub started_at: String,
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

impl Report {
    /// Builds the report from the subscriber's recorder and accounting, adding notes for every
    /// anomaly. `complete` is false when the publisher vanished or no measured message arrived.
    /// Non-finite rates or durations are written as 0 (JSON has no NaN).
    pub fn from_recorder(
        rec: &Recorder,
        acc: &Accounting,
        run: RunInfo,
        offer: BTreeMap<String, u64>,
        env: Env,
    ) -> Report {
        let mut notes = Vec::new();
        let mut incomplete_reason = None;
        if acc.publisher_vanished {
            incomplete_reason = Some(
                "no end marker from the publisher (it stopped or died mid-run): \
                 sent is unknown and lost counts only gaps below the highest sequence seen"
                    .to_string(),
            );
        } else if acc.received_measured == 0 {
            incomplete_reason = Some(
                "no measured message arrived: check that the publisher runs on the same \
                 channel, stream and Aeron dir"
                    .to_string(),
            );
        }
        if !acc.adds_up() {
            notes.push(format!(
                "accounting does not add up: received {} + lost {} != sent {} (fragments {}, \
                 duplicates {}, decode errors {}); messages beyond the end marker arrived \
                 (another publisher on this stream?) or duplicates beyond the plan went undetected",
                acc.received,
                acc.lost,
                acc.sent.map_or_else(|| "unknown".to_string(), |s| s.to_string()),
                acc.fragments,
                acc.duplicates,
                acc.decode_errors
            ));
        }
        if acc.negative_latency > 0 {
            notes.push(format!(
                "{} samples had a negative latency (clock anomaly: publisher and subscriber on \
                 different hosts or clocks?); recorded as 0",
                acc.negative_latency
            ));
        }
        if acc.clamped > 0 {
            notes.push(format!(
                "{} samples exceeded the histogram range (3,600 s) and were recorded as 3,600 s",
                acc.clamped
            ));
        }
        if acc.out_of_range > 0 {
            notes.push(format!(
                "{} messages had sequence numbers beyond warm-up + planned (publisher sent more \
                 than it announced?); counted as received, not checked for duplicates, measured \
                 ones are in the last group",
                acc.out_of_range
            ));
        }
        if acc.decode_errors > 0 {
            notes.push(format!(
                "{} fragments were not our message schema (another publisher on this stream, \
                 or a schema mismatch); counted, not measured",
                acc.decode_errors
            ));
        }
        if let Some((_, planned)) = rec.plan() {
            if (planned as usize) < GROUPS {
                notes.push(format!(
                    "only {planned} measured messages planned for {GROUPS} groups: some groups \
                     are empty"
                ));
            }
        }
        if env.governor != UNKNOWN && env.governor != "performance" {
            notes.push(format!(
                "CPU frequency governor is '{}': latency varies with clock ramp-up; set \
                 'performance' for stable results",
                env.governor
            ));
        }
        Report {
            sent: acc.sent,
            received: acc.received,
            lost: acc.lost,
            duplicates: acc.duplicates,
            reordered: acc.reordered,
            decode_errors: acc.decode_errors,
            rate_target: finite_or_zero(run.rate_target),
            rate_achieved: finite_or_zero(run.rate_achieved),
            latency_ns: Stats::from_histogram(rec.overall_intended()),
            latency_actual_ns: Stats::from_histogram(rec.overall_actual()),
            groups: rec.groups().iter().map(GroupReport::from).collect(),
            offer,
            env,
            timing_model: TIMING_MODEL.to_string(),
            complete: incomplete_reason.is_none(),
            incomplete_reason,
            publisher_vanished: acc.publisher_vanished,
            out_of_range: acc.out_of_range,
            warmup_received: acc.received_warmup,
            msg_size: run.msg_size,
            duration_s: finite_or_zero(run.duration_s),
            tool: Tool::this(),
            started_at: run.started_at,
            notes,
            publisher: None,
            jitter: None,
            mode: RunMode::OneWay,
            floor: None,
            faults: Faults::default(),
            histograms: None,
            runs: None,
            in_flight: None,
            driver_counters: None,
        }
    }
}

/// Formats a duration in nanoseconds with a unit chosen per value: `ns` below 10 µs, `µs`
/// below 10 ms, `ms` below 10 s, else `s`; two decimals below 100 of the unit, else one.
pub fn format_ns(ns: u64) -> String {
    if ns < 10_000 {
        return format!("{ns} ns");
    }
    let (unit_ns, unit): (u128, &str) = if ns < 10_000_000 {
        (1_000, "µs")
    } else if ns < 10_000_000_000 {
        (1_000_000, "ms")
    } else {
        (1_000_000_000, "s")
    };
    let ns = u128::from(ns);
    if ns < 100 * unit_ns {
        let step = unit_ns / 100;
        let v = (ns + step / 2) / step;
        format!("{}.{:02} {unit}", v / 100, v % 100)
    } else {
        let step = unit_ns / 10;
        let v = (ns + step / 2) / step;
        format!("{}.{} {unit}", v / 10, v % 10)
    }
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ` (UTC, RFC 3339); times before 1970 are written as the epoch.
pub fn utc_timestamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

fn fmt_mean(mean: f64) -> String {
    if mean.is_finite() && mean >= 0.0 {
        format_ns(mean.round() as u64)
    } else {
        format!("{mean}")
    }
}

/// The accounting sentence: the counts, and whether they add up.
fn accounting_line(r: &Report) -> String {
    let sent = r.sent.map_or_else(|| "unknown".to_string(), |s| s.to_string());
    let verdict = match r.sent {
        Some(sent) if r.received + r.lost == sent => "adds up (received + lost = sent)".to_string(),
        Some(sent) => format!(
            "DOES NOT ADD UP: received + lost = {} but sent = {sent}",
            r.received + r.lost
        ),
        None => "sent unknown (no end marker): lost counts only gaps below the highest \
                 sequence seen"
            .to_string(),
    };
    format!(
        "accounting: sent {sent}, received {} (warm-up {}), lost {}, duplicates {}, \
         reordered {}, decode errors {}, out of range {}: {verdict}",
        r.received, r.warmup_received, r.lost, r.duplicates, r.reordered, r.decode_errors, r.out_of_range
    )
}

/// The human-readable report: header (timing model, environment, run parameters), accounting,
/// overall latencies (intended and actual side by side), the [`GROUPS`] groups, offer outcomes
/// and notes; `INCOMPLETE: reason` first when the run is incomplete.
pub fn render_text(r: &Report) -> String {
    let mut out = String::new();
    // `write!` to a String cannot fail.
    let o = &mut out;
    if !r.complete {
        let reason = r.incomplete_reason.as_deref().unwrap_or("reason unknown");
        let _ = writeln!(o, "INCOMPLETE: {reason}\n");
    }
    let _ = writeln!(o, "{} {} report, started {}", r.tool.name, r.tool.version, r.started_at);
    let _ = writeln!(o, "timing model: {}", r.timing_model);
    let e = &r.env;
    let _ = writeln!(
        o,
        "env: {} ({} cores), kernel {}, governor {}, driver {} {}, client {}",
        e.cpu_model, e.cores, e.kernel, e.governor, e.driver_kind, e.driver_version, e.client
    );
    let _ = writeln!(
        o,
        "run: target {:.0} msg/s, achieved {:.1} msg/s, {} B messages, {:.2} s measured",
        r.rate_target, r.rate_achieved, r.msg_size, r.duration_s
    );
    let _ = writeln!(o, "{}", accounting_line(r));
    if let Some(n) = r.in_flight {
        let _ = writeln!(
            o,
            "Little's law: {:.0} msg/s x mean latency {} = {n:.3} messages in flight on average{}",
            r.rate_achieved,
            format_ns(r.latency_ns.mean.round() as u64),
            if r.mode == RunMode::Rtt {
                " (one outstanding at a time: the share of time a message is out)"
            } else {
                " (size buffers and concurrency from this, seed 004)"
            }
        );
    }

    // Overall table.
    let what = match r.mode {
        RunMode::OneWay => "latency",
        RunMode::Rtt => "round trip",
    };
    let _ = writeln!(o, "\noverall {what} (ns < 10 µs, µs < 10 ms, ms < 10 s, else s)");
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "", "from intended send", "from actual send");
    let (i, a) = (&r.latency_ns, &r.latency_actual_ns);
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "count", i.count, a.count);
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "min", format_ns(i.min), format_ns(a.min));
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "mean", fmt_mean(i.mean), fmt_mean(a.mean));
    for ((label, vi), (_, va)) in i.percentiles().into_iter().zip(a.percentiles()) {
        let _ = writeln!(o, "{:<8}{:>22}{:>22}", label, format_ns(vi), format_ns(va));
    }
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "max", format_ns(i.max), format_ns(a.max));
    if let Some(f) = &r.floor {
        let _ = write!(o, "\n{}", f.render());
    }

    // Group table.
    let _ = writeln!(
        o,
        "\n{} time-ordered groups (latency from intended send)",
        r.groups.len()
    );
    let _ = writeln!(
        o,
        "{:>5} {:>23} {:>9}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
        "group", "seq range", "count", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    for g in &r.groups {
        let s = &g.latency;
        let range = format!("{}..={}", g.first_seq, g.last_seq);
        let _ = writeln!(
            o,
            "{:>5} {:>23} {:>9}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
            g.index,
            range,
            s.count,
            fmt_mean(s.mean),
            format_ns(s.p50),
            format_ns(s.p90),
            format_ns(s.p99),
            format_ns(s.p999),
            format_ns(s.max)
        );
    }

    // Offer outcomes: the known ones in order, then any others.
    let mut offers: Vec<String> = OFFER_OUTCOMES
        .iter()
        .filter_map(|k| r.offer.get(*k).map(|v| format!("{k} {v}")))
        .collect();
    offers.extend(
        r.offer
            .iter()
            .filter(|(k, _)| !OFFER_OUTCOMES.contains(&k.as_str()))
            .map(|(k, v)| format!("{k} {v}")),
    );
    let offers = if offers.is_empty() {
        "none recorded".to_string()
    } else {
        offers.join(", ")
    };
    let _ = writeln!(o, "\noffer outcomes: {offers}");
    let _ = writeln!(o, "{}", r.faults.render());
    if let Some(c) = &r.driver_counters {
        o.push_str(&crate::counters::render(c));
    }
    if let Some(p) = &r.publisher {
        let c = &p.publish_cost_ns;
        let cost = if c.count == 0 {
            "publish-only cost not measured (a round trip takes no extra clock reading)".to_owned()
        } else {
            format!(
                "publish-only cost (claim+encode+commit) p50 {} p99 {} p99.9 {} max {}",
                format_ns(c.p50),
                format_ns(c.p99),
                format_ns(c.p999),
                format_ns(c.max)
            )
        };
        let _ = writeln!(
            o,
            "publisher: sent {} ({} warm-up + {} measured of {} planned), end marker {}, largest lag behind \
             schedule {}, {cost}",
            p.sent,
            p.warmup_sent,
            p.measured_sent,
            p.planned,
            if p.end_marker_sent { "sent" } else { "NOT sent" },
            format_ns(p.max_lag_ns),
        );
    }

    if !r.notes.is_empty() {
        let _ = writeln!(o, "\nnotes:");
        for n in &r.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    if let Some(j) = &r.jitter {
        let rows: Vec<Option<crate::jitter::GroupJitter>> = r.groups.iter().map(|g| g.jitter.clone()).collect();
        o.push_str(&crate::jitter::report::render(j, &rows));
    }
    out
}

/// Writes `report` as pretty JSON to `path`, atomically: a temporary file in the same
/// directory is written and synced, then renamed over `path`.
pub fn write_json<T: Serialize + ?Sized>(report: &T, path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a file path: pass a file name for the JSON report",
                path.display()
            ),
        )
    })?;
    let mut json = serde_json::to_vec_pretty(report).map_err(io::Error::other)?;
    json.push(b'\n');
    let tmp = path.with_file_name(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::SampleKind;
    use serde_json::Value;
    use std::collections::BTreeSet;

    fn sample_report() -> Report {
        let (warmup, planned) = (100_u32, 10_000_u32);
        let mut rec = Recorder::new();
        for s in 0..u64::from(warmup + planned) {
            if s == 5_000 || s == 7_777 {
                continue; // lost
            }
            let kind = if s < u64::from(warmup) {
                SampleKind::Warmup
            } else {
                SampleKind::Measured
            };
            let lat = 1_000 + (s % 1_000) as i64 * 50;
            rec.record(s, kind, warmup, planned, lat, lat / 2);
        }
        rec.record_decode_error();
        let acc = rec.finish(Some(u64::from(warmup + planned)));
        let mut offer = BTreeMap::new();
        offer.insert("ok".to_string(), 10_100);
        offer.insert("back_pressured".to_string(), 3);
        offer.insert("weird".to_string(), 1);
        let env = Env {
            cpu_model: "Test CPU @ 3.00GHz".into(),
            cores: 2,
            kernel: "6.1.0-test".into(),
            driver_kind: DRIVER_EMBEDDED.into(),
            driver_version: "1.54".into(),
            client: CLIENT.into(),
            governor: "performance".into(),
        };
        Report::from_recorder(
            &rec,
            &acc,
            RunInfo {
                rate_target: 10_000.0,
                rate_achieved: 9_999.5,
                msg_size: 64,
                duration_s: 1.01,
                started_at: utc_timestamp(UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)),
            },
            offer,
            env,
        )
    }

    fn keys(v: &Value) -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    const STATS_KEYS: [&str; 10] = [
        "count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "p9999", "max",
    ];

    #[test]
    fn json_field_names_are_the_contract() {
        let r = sample_report();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            keys(&v),
            set(&[
                "sent",
                "received",
                "lost",
                "duplicates",
                "reordered",
                "decode_errors",
                "rate_target",
                "rate_achieved",
                "latency_ns",
                "latency_actual_ns",
                "groups",
                "offer",
                "env",
                "timing_model",
                "complete",
                "incomplete_reason",
                "publisher_vanished",
                "out_of_range",
                "warmup_received",
                "msg_size",
                "duration_s",
                "tool",
                "started_at",
                "notes",
                "mode",
                "faults",
            ])
        );
        assert_eq!(v["mode"], "one-way");
        assert_eq!(keys(&v["faults"]), set(&["publisher", "subscriber", "prefaulted"]));
        assert_eq!(keys(&v["latency_ns"]), set(&STATS_KEYS));
        assert_eq!(keys(&v["latency_actual_ns"]), set(&STATS_KEYS));
        let groups = v["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 20);
        let mut group_keys = STATS_KEYS.to_vec();
        group_keys.extend(["index", "first_seq", "last_seq", "actual"]);
        for g in groups {
            assert_eq!(keys(g), set(&group_keys));
            assert_eq!(keys(&g["actual"]), set(&STATS_KEYS));
        }
        assert_eq!(
            keys(&v["env"]),
            set(&[
                "cpu_model",
                "cores",
                "kernel",
                "driver_kind",
                "driver_version",
                "client",
                "governor"
            ])
        );
        assert_eq!(keys(&v["tool"]), set(&["name", "version"]));
        assert_eq!(v["offer"]["ok"], 10_100);
        assert_eq!(v["offer"]["back_pressured"], 3);
        // Types scripts rely on.
        assert_eq!(v["sent"], 10_100);
        assert_eq!(v["received"], 10_098);
        assert_eq!(v["lost"], 2);
        assert_eq!(v["decode_errors"], 1);
        assert_eq!(v["warmup_received"], 100);
        assert!(v["rate_target"].is_f64());
        assert_eq!(v["incomplete_reason"], Value::Null);
        assert_eq!(v["complete"], true);
        assert_eq!(v["timing_model"], TIMING_MODEL);
        assert_eq!(v["started_at"], "2023-11-14T22:13:20Z");
        assert_eq!(v["groups"][0]["first_seq"], 100);
        assert_eq!(v["groups"][0]["last_seq"], 599);
        assert_eq!(v["groups"][19]["last_seq"], 10_099);
        assert_eq!(v["groups"][9]["count"], 499); // seq 5000 lost
        assert_eq!(v["groups"][9]["actual"]["count"], 499);
    }

    #[test]
    fn sent_null_when_unknown() {
        let mut r = sample_report();
        r.sent = None;
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["sent"], Value::Null);
        let back: Report = serde_json::from_value(v).unwrap();
        assert_eq!(back.sent, None);
    }

    #[test]
    fn json_round_trips() {
        let r = sample_report();
        let s = serde_json::to_string_pretty(&r).unwrap();
        let back: Report = serde_json::from_str(&s).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&r).unwrap());
        assert_eq!(back.groups, r.groups);
        assert_eq!(back.latency_ns, r.latency_ns);
        assert_eq!(back.env, r.env);
        assert_eq!(back.offer, r.offer);
    }

    #[test]
    fn write_json_is_atomic_and_readable() {
        let dir = std::env::temp_dir().join(format!("latency-probe-report-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.json");
        fs::write(&path, "old").unwrap();
        let r = sample_report();
        write_json(&r, &path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n'));
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back.received, r.received);
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "report.json")
            .collect();
        assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
        let err = write_json(&r, dir.join("missing-dir").join("r.json")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(write_json(&r, Path::new("/")).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn text_has_header_tables_and_twenty_groups() {
        let r = sample_report();
        let t = render_text(&r);
        assert!(!t.contains("INCOMPLETE"));
        assert!(t.starts_with(&format!("{} {} report", r.tool.name, r.tool.version)));
        assert!(t.contains(TIMING_MODEL));
        assert!(t.contains("Test CPU @ 3.00GHz (2 cores), kernel 6.1.0-test, governor performance"));
        assert!(t.contains("driver embedded C 1.54, client aeron-rs 0.1.8"));
        assert!(t.contains("target 10000 msg/s, achieved 9999.5 msg/s, 64 B messages"));
        assert!(t.contains(
            "accounting: sent 10100, received 10098 (warm-up 100), lost 2, duplicates 0, \
             reordered 0, decode errors 1, out of range 0: adds up"
        ));
        for row in [
            "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max",
        ] {
            assert!(
                t.lines().any(|l| l.starts_with(&format!("{row:<8}"))),
                "missing overall row {row}:\n{t}"
            );
        }
        assert!(t.contains("from intended send") && t.contains("from actual send"));
        let count_line = t.lines().find(|l| l.starts_with("count ")).unwrap();
        assert!(count_line.split_whitespace().skip(1).all(|c| c == "9998"));
        let group_rows: Vec<&str> = t
            .lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() >= 2 && f[0].parse::<usize>().is_ok() && f[1].contains("..=")
            })
            .collect();
        assert_eq!(group_rows.len(), 20, "{t}");
        assert!(group_rows[0].trim_start().starts_with("0 ") && group_rows[0].contains("100..=599"));
        assert!(group_rows[19].trim_start().starts_with("19 ") && group_rows[19].contains("..=10099"));
        // Fixed width: all group rows equally long (in chars).
        let widths: BTreeSet<usize> = group_rows.iter().map(|l| l.chars().count()).collect();
        assert_eq!(widths.len(), 1, "{widths:?}");
        assert!(t.contains("offer outcomes: ok 10100, back_pressured 3, weird 1"));
        // Decode error note.
        assert!(t.contains("notes:\n- 1 fragments were not our message schema"));
    }

    #[test]
    fn text_incomplete_and_not_adding_up() {
        let mut rec = Recorder::new();
        for s in [0_u64, 1, 2, 4] {
            rec.record(s, SampleKind::Measured, 0, 100, 500, 400);
        }
        let acc = rec.finish(None);
        let run = RunInfo {
            rate_target: 1_000.0,
            rate_achieved: f64::NAN,
            msg_size: 32,
            duration_s: 0.0,
            started_at: utc_timestamp(SystemTime::now()),
        };
        let env = Env::detect().with_driver(DRIVER_EXTERNAL, "1.46.0");
        let mut r = Report::from_recorder(&rec, &acc, run, BTreeMap::new(), env);
        assert!(!r.complete && r.publisher_vanished);
        assert_eq!(r.rate_achieved, 0.0, "NaN must not reach JSON");
        assert_eq!(r.lost, 1);
        let t = render_text(&r);
        assert!(t.starts_with("INCOMPLETE: no end marker from the publisher"), "{t}");
        assert!(t.contains("sent unknown (no end marker)"));
        assert!(t.contains("offer outcomes: none recorded"));
        serde_json::from_str::<Report>(&serde_json::to_string(&r).unwrap()).unwrap();

        r.sent = Some(3);
        let t = render_text(&r);
        assert!(t.contains("DOES NOT ADD UP: received + lost = 5 but sent = 3"), "{t}");
    }

    #[test]
    fn notes_for_anomalies() {
        let mut rec = Recorder::new();
        rec.record(0, SampleKind::Measured, 0, 5, -1, -1);
        rec.record(1, SampleKind::Measured, 0, 5, i64::MAX, 1);
        rec.record(9, SampleKind::Measured, 0, 5, 1, 1);
        let acc = rec.finish(Some(10));
        let mut env = Env::detect();
        env.governor = "powersave".into();
        let run = RunInfo {
            rate_target: 1.0,
            rate_achieved: 1.0,
            msg_size: 8,
            duration_s: 10.0,
            started_at: String::new(),
        };
        let r = Report::from_recorder(&rec, &acc, run, BTreeMap::new(), env);
        let all = r.notes.join("\n");
        assert!(all.contains("1 samples had a negative latency"), "{all}");
        assert!(all.contains("1 samples exceeded the histogram range"), "{all}");
        assert!(all.contains("1 messages had sequence numbers beyond"), "{all}");
        assert!(all.contains("only 5 measured messages planned for 20 groups"), "{all}");
        assert!(all.contains("governor is 'powersave'"), "{all}");
        assert!(r.complete);
    }

    #[test]
    fn unit_formatting_table() {
        let table: [(u64, &str); 17] = [
            (0, "0 ns"),
            (999, "999 ns"),
            (1_500, "1500 ns"),
            (9_999, "9999 ns"),
            (10_000, "10.00 µs"),
            (12_345, "12.35 µs"),
            (99_994, "99.99 µs"),
            (100_000, "100.0 µs"),
            (123_456, "123.5 µs"),
            (2_500_000, "2500.0 µs"),
            (9_999_949, "9999.9 µs"),
            (10_000_000, "10.00 ms"),
            (123_456_789, "123.5 ms"),
            (9_999_000_000, "9999.0 ms"),
            (15_000_000_000, "15.00 s"),
            (3_600_000_000_000, "3600.0 s"),
            (u64::MAX, "18446744073.7 s"),
        ];
        for (ns, want) in table {
            assert_eq!(format_ns(ns), want, "{ns} ns");
        }
        assert_eq!(fmt_mean(1_234.4), "1234 ns");
        assert_eq!(fmt_mean(0.0), "0 ns");
    }

    #[test]
    fn timestamps() {
        let at = |s: u64| utc_timestamp(UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(at(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(
            utc_timestamp(UNIX_EPOCH - std::time::Duration::from_secs(5)),
            "1970-01-01T00:00:00Z"
        );
        let now = utc_timestamp(SystemTime::now());
        assert_eq!(now.len(), 20);
        assert!(now.starts_with("20") && now.ends_with('Z'));
    }

    #[test]
    fn cpu_model_parsing() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\n";
        assert_eq!(parse_cpu_model(x86).unwrap(), "Intel(R) Xeon(R) CPU @ 2.20GHz");
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpu_model(arm).unwrap(), "BCM2835");
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
        let env = Env::detect();
        assert!(!env.cpu_model.is_empty() && !env.kernel.is_empty() && !env.governor.is_empty());
        assert_eq!(env.client, CLIENT);
        assert_eq!(env.driver_kind, UNKNOWN);
    }
}
