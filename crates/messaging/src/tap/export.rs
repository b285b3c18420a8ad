//! What the tap's writer exports besides the logs: the status file (JSON, for tools that find
//! the logs and the recording threads) and the Prometheus textfile (the text exposition format
//! node_exporter's textfile collector reads). Both are rewritten whole each interval, through
//! a temporary file and a rename, so a reader never sees half of one. And how the logs are
//! appended to: whole writes only, and a log removed while open noticed.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::record::Counts;
use super::StampClock;
use crate::error::TapError;

/// The Prometheus histogram's bucket bounds, seconds: 1-2-5 steps from 100 ns to 10 s.
pub const BUCKETS_S: [f64; 27] = [
    1e-7, 2e-7, 5e-7, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1,
    0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0,
];

/// A counter of the textfile: its name, its help, its value.
type Counter = (&'static str, &'static str, fn(&Counts) -> u64);

/// One figure as the exports show it.
pub(crate) struct FigureView<'a> {
    pub(crate) name: String,
    pub(crate) stream: Option<i32>,
    /// Since the start.
    pub(crate) totals: &'a Counts,
    pub(crate) files: &'a [PathBuf],
    /// The threads that record into it, each once, in ascending order.
    pub(crate) tids: Vec<i32>,
    /// Its live sources: the sessions of its subscriptions and its recorders.
    pub(crate) sources: usize,
}

/// What the status file says.
pub(crate) struct Status<'a> {
    pub(crate) clock: StampClock,
    pub(crate) interval: Duration,
    pub(crate) started: SystemTime,
    pub(crate) writer_tid: i32,
    /// The writer's work on the last interval (taking the counts and writing the logs, not
    /// its wait for the polling threads' answers), and its longest so far.
    pub(crate) writer_busy: (Duration, Duration),
    /// Asks the polling threads had not answered by the end of an interval, summed so far.
    pub(crate) late_handovers: u64,
    /// Writes that failed so far ([`Tap::write_errors`](super::Tap::write_errors)).
    pub(crate) write_errors: u64,
    pub(crate) prometheus: Option<&'a str>,
    /// The slowest messages' file and how many each source keeps per interval.
    pub(crate) slowest: Option<(&'a str, usize)>,
    pub(crate) figures: &'a [FigureView<'a>],
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

/// A JSON string literal (the names are checked; paths may hold anything).
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The status file: format 1, one JSON object.
pub(crate) fn status_json(s: &Status<'_>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\"format\":1,\"pid\":{},\"clock\":{},\"unit\":\"ns\",\"interval_s\":{},\"started_unix_s\":{:.3},\
         \"updated_unix_s\":{:.3},\"writer_tid\":{},\"writer_busy_us\":{{\"last\":{},\"max\":{}}},\
         \"late_handovers\":{},\"write_errors\":{},\"prometheus\":{},\"slowest\":{},\"figures\":[",
        std::process::id(),
        json_str(s.clock.name()),
        s.interval.as_secs_f64(),
        unix_s(s.started),
        unix_s(SystemTime::now()),
        s.writer_tid,
        s.writer_busy.0.as_micros(),
        s.writer_busy.1.as_micros(),
        s.late_handovers,
        s.write_errors,
        s.prometheus.map_or_else(|| "null".into(), json_str),
        s.slowest.map_or_else(
            || "null".into(),
            |(file, n)| format!("{{\"file\":{},\"per_interval\":{n}}}", json_str(file))
        ),
    );
    for (i, f) in s.figures.iter().enumerate() {
        let files: Vec<String> = f
            .files
            .iter()
            .map(|p| json_str(&p.file_name().unwrap_or_default().to_string_lossy()))
            .collect();
        let tids: Vec<String> = f.tids.iter().map(i32::to_string).collect();
        let _ = write!(
            out,
            "{}{{\"name\":{},\"stream_id\":{},\"files\":[{}],\"recording_tids\":[{}],\"sources\":{},\
             \"recorded\":{},\"negative\":{},\"saturated\":{},\"unstamped\":{}}}",
            if i == 0 { "" } else { "," },
            json_str(&f.name),
            f.stream.map_or_else(|| "null".into(), |s| s.to_string()),
            files.join(","),
            tids.join(","),
            f.sources,
            f.totals.histogram.len(),
            f.totals.negative,
            f.totals.saturated,
            f.totals.unstamped,
        );
    }
    out.push_str("]}\n");
    out
}

/// The Prometheus text exposition of every figure since the start: the latency histogram with
/// cumulative buckets (so a fleet's can be summed), and counters of messages, negative
/// values, saturated values and unstamped messages, each labelled with the figure (the hop),
/// for a subscription's figure the stream, and the clock.
pub(crate) fn prometheus(figures: &[FigureView<'_>], clock: StampClock, write_errors: u64) -> String {
    let labels = |f: &FigureView<'_>| match f.stream {
        Some(s) => format!("figure=\"{}\",stream=\"{s}\",clock=\"{clock}\"", f.name),
        None => format!("figure=\"{}\",clock=\"{clock}\"", f.name),
    };
    let mut out = String::new();
    out.push_str(
        "# HELP aeron_tap_latency_seconds Latency of stamped messages: receive time minus the stamp.\n\
         # TYPE aeron_tap_latency_seconds histogram\n",
    );
    for f in figures {
        let l = labels(f);
        let h = &f.totals.histogram;
        for (le, n) in BUCKETS_S.iter().zip(cumulative(h)) {
            let _ = writeln!(out, "aeron_tap_latency_seconds_bucket{{{l},le=\"{le}\"}} {n}");
        }
        let _ = writeln!(out, "aeron_tap_latency_seconds_bucket{{{l},le=\"+Inf\"}} {}", h.len());
        let _ = writeln!(
            out,
            "aeron_tap_latency_seconds_sum{{{l}}} {}",
            f.totals.sum_ns as f64 / 1e9
        );
        let _ = writeln!(out, "aeron_tap_latency_seconds_count{{{l}}} {}", h.len());
    }
    let counters: [Counter; 4] = [
        (
            "messages",
            "Stamped messages received (recorded plus negative).",
            Counts::messages,
        ),
        (
            "negative",
            "Latencies below zero: counted, not in the histogram.",
            |c| c.negative,
        ),
        (
            "saturated",
            "Latencies above the histogram's range or with a saturated age.",
            |c| c.saturated,
        ),
        ("unstamped", "Messages without a stamp (reserved value 0).", |c| {
            c.unstamped
        }),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(
            out,
            "# HELP aeron_tap_{name}_total {help}\n# TYPE aeron_tap_{name}_total counter"
        );
        for f in figures {
            let _ = writeln!(out, "aeron_tap_{name}_total{{{}}} {}", labels(f), value(f.totals));
        }
    }
    let _ = writeln!(
        out,
        "# HELP aeron_tap_write_errors_total Writes of the tap's files that failed (the logs miss those \
         intervals).\n# TYPE aeron_tap_write_errors_total counter\naeron_tap_write_errors_total{{clock=\"{clock}\"}} \
         {write_errors}"
    );
    out
}

/// The count at or below each of [`BUCKETS_S`], in one pass over the recorded values (a value
/// counts in a bucket when its HdrHistogram range starts at or below the bound: within the
/// histogram's 3 significant digits).
fn cumulative(h: &hdrhistogram::Histogram<u64>) -> [u64; BUCKETS_S.len()] {
    let bounds = BUCKETS_S.map(|le| (le * 1e9).round() as u64);
    let mut per = [0_u64; BUCKETS_S.len()];
    for v in h.iter_recorded() {
        let value = h.lowest_equivalent(v.value_iterated_to());
        if let Some(i) = bounds.iter().position(|b| value <= *b) {
            per[i] += v.count_at_value();
        }
    }
    let mut running = 0;
    per.map(|n| {
        running += n;
        running
    })
}

/// Appends `data` to `file`, `len` bytes long up to its last whole write. A write that fails
/// part way (a full disk) is cut off again, so the file never ends in part of a line, which a
/// reader would take as a line (HdrHistogram's readers decode a cut-off histogram as one) or
/// join to the next write's; `len` then stays.
pub(crate) fn append_whole(file: &mut File, len: &mut u64, data: &[u8]) -> std::io::Result<()> {
    match std::io::Write::write_all(file, data) {
        Ok(()) => {
            *len += data.len() as u64;
            Ok(())
        }
        Err(e) => {
            // Best effort: the write's error is the one to report. (A file opened to append
            // writes at its end whatever the position; one that is not needs the seek.)
            let _ = file.set_len(*len).and_then(|()| file.seek(SeekFrom::Start(*len)));
            Err(e)
        }
    }
}

/// Whether `file`, open, has no name left (it was removed): what is written to it is lost.
pub(crate) fn removed(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| m.nlink() == 0)
}

/// Replaces `path` with `bytes` through a temporary file and a rename.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> Result<(), TapError> {
    let tmp = path.with_extension("tmp");
    let err = |source| TapError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(&tmp, bytes).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
