//! `latency-probe stages`: one run timed at each durability stage (seed 004), per archive
//! sync level.

use crate::model::Stats;
use serde::{Deserialize, Serialize};

/// How each stage is timed; the report carries it verbatim.
pub const STAGES_TIMING_MODEL: &str = "every stage is timed twice on CLOCK_MONOTONIC, one clock for every \
process on this host: from each measured message's intended send time (its place in the fixed-rate schedule, \
which latency-pub reports: what a caller on a schedule waits, the publisher's own lateness included) and from \
its actual send time (the clock read stamped into the message when its claim succeeded, which latency-pub logs \
per message: the publisher's lateness left out). offer returned: latency-pub's clock read after the commit (one-way mode \
only: a round trip has no clock read there); received: latency-sub's clock read when it decoded the message (in round trips, after it sent the echo); \
echoed back (--mode rtt): latency-pub's clock read when it decoded latency-sub's echo; recorded by archive A (B): a watcher thread in latency-probe reads archive A's \
(B's) recording position counter (type 100) from its media driver's cnc.dat, sleeping between reads, and a \
message counts as recorded at the first read that shows the recording past its last byte. A recorded stage is \
therefore late by up to one watcher period (its resolution: the gaps between the watcher's reads, printed with \
the stages), never early";

/// What each stage guarantees once a message reached it.
const GUARANTEES: [(&str, &str); 5] = [
    (
        "offer returned",
        "in the publication's log in shared memory: survives nothing of the publisher's (a crash of its \
         process loses what no one read yet)",
    ),
    (
        "received",
        "in another process: survives the publisher's crash, not a host crash",
    ),
    (
        "echoed back",
        "the sender knows another process holds it (an acknowledgement): it may forget it, unless it must \
         survive that process's host",
    ),
    (
        "recorded by archive A",
        "written to archive A's file: sync 0 in the page cache (survives a process crash, not a host crash), \
         sync 1/2 fsynced (survives a host crash, not the disk's loss)",
    ),
    (
        "replicated to archive B",
        "in a second archive's file (here on the same host; on another host it survives the loss of the \
         first host and its disk)",
    ),
];

/// What a message that reached `stage` is safe from (empty for a stage this version does not
/// name).
#[must_use]
pub fn stage_guarantees(stage: &str) -> &'static str {
    GUARANTEES.iter().find(|(n, _)| *n == stage).map_or("", |(_, g)| g)
}

/// The stage `stage` follows, whose p50 its `+p50` is taken over: received and recorded by
/// A each follow the offer (two consumers of one log, not ordered between them), the echo
/// follows receipt, B follows A.
#[must_use]
pub fn stage_follows(stage: &str) -> Option<&'static str> {
    match stage {
        "received" | "recorded by archive A" => Some("offer returned"),
        "echoed back" => Some("received"),
        "replicated to archive B" => Some("recorded by archive A"),
        _ => None,
    }
}

/// One stage of one sync level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// `offer returned`, `received`, `echoed back`, `recorded by archive A`, `replicated to
    /// archive B`.
    pub stage: String,
    /// What surviving this stage means (process crash, host crash, disk loss).
    pub guarantees: String,
    /// The stage timed from each message's intended send time (its fields sit at the top level
    /// of the stage in JSON).
    #[serde(flatten)]
    pub intended: StageTiming,
    /// The same stage timed from each message's actual send time (none: latency-pub logged no
    /// send times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<StageTiming>,
}

/// A stage timed from one send time: the intended one or the actual one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTiming {
    /// Measured messages timed at this stage.
    pub count: u64,
    /// Latency from that send time, ns.
    pub latency_ns: Stats,
    /// p50 added over that of the stage this one follows (from the same send time), ns: received
    /// and recorded by archive A follow offer returned, echoed back follows received, replicated
    /// to archive B follows recorded by archive A. None for the first stage, and where either
    /// stage timed no message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_p50_ns: Option<i64>,
    /// Little's law: achieved rate x mean latency at this stage, messages a service waiting for
    /// this stage must hold in flight.
    pub in_flight: f64,
    /// The histogram (HdrHistogram V2 + DEFLATE, base64).
    pub histogram: String,
}

/// The watcher that times the archive stages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Watcher {
    /// The sleep asked for between reads, ns.
    pub sleep_ns: u64,
    /// Reads made.
    pub reads: u64,
    /// The gaps between its reads (its resolution), ns.
    pub gap_ns: Stats,
    /// CPU time it used over the run, ns (its own cost).
    pub cpu_ns: u64,
    /// Position changes it saw but could not log (log full).
    pub overflow: u64,
}

/// One sync level's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncRun {
    /// `aeron.archive.file.sync.level` of the archives (0: page cache; 1: fsync data; 2: fsync
    /// data and metadata).
    pub sync: u8,
    /// Whether archive B replicated archive A's recording live.
    pub replicated: bool,
    /// Round trips (`--mode rtt`): latency-sub echoed every message.
    #[serde(default)]
    pub rtt: bool,
    /// Measured messages sent.
    pub measured: u64,
    /// Messages per second achieved.
    pub rate_achieved: f64,
    /// The stages, in order.
    pub stages: Vec<Stage>,
    /// The watcher's cost and resolution.
    pub watcher: Watcher,
    /// Whether every stage timed every measured message, in order.
    pub complete: bool,
    /// What went wrong or is worth knowing.
    pub notes: Vec<String>,
}

/// The `stages` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagesReport {
    /// One run per sync level, in the order asked for.
    pub runs: Vec<SyncRun>,
    /// [`STAGES_TIMING_MODEL`].
    pub timing_model: String,
    /// Message size, bytes.
    pub msg_size: u64,
    /// Target rate, messages per second.
    pub rate: u64,
    /// Aeron's Java archive and driver version used.
    pub archive: String,
    /// Whether every run is complete.
    pub complete: bool,
}
