//! A service's tap as `latency-probe attach` reads it: found through its status file
//! (`tap.json`, in the directory the service's tap writes to, found through the files the
//! process holds open when not given), one figure picked, and after the watch that figure's
//! intervals and its slowest messages over the watched period, as the samples the probe's band
//! analysis lines up with the episodes of the threads that recorded them.
//!
//! # Guarantees
//! - Read-only: the tap's files are read, never written or locked.
//! - Only intervals that lie wholly inside the watched period count (their distribution gives
//!   the band edges), and only the slowest messages received inside it (their windows
//!   `[sent, received]` are what the episodes are lined up with).
//! - The samples are each interval's slowest N (the tap's `slowest`): a band is covered whole
//!   when its lower edge is at or above every interval's N-th slowest; the report says from
//!   which latency up it is (`complete_above_ns`).
//! - Timing model: the tap's clock (`CLOCK_MONOTONIC` for one host; a `CLOCK_REALTIME` tap's
//!   times are moved onto the monotonic clock by the offset between the two read now).

use std::path::{Path, PathBuf};

use aeron_latency::messaging::tap::{SLOWEST_FILE, SLOWEST_FILE_OLD, STATUS_FILE};
use aeron_latency::messaging::StampClock;
use hdrhistogram::Histogram;
use serde::Deserialize;

use crate::model::{parse_hlog, AttachTap, Octave, SlowSample};
use crate::sys::thread::{id_in_namespace, namespace_tids};

/// The most samples a watch keeps (about 48 MiB of them), its slowest: memory stays bounded
/// however long the watch and however many the tap keeps.
pub const MAX_SAMPLES: usize = 1 << 20;

/// The slowest messages' files, older part first.
const SLOWEST_FILES: [&str; 2] = [SLOWEST_FILE_OLD, SLOWEST_FILE];

/// The status file, the parts attach reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Status {
    /// The process that writes it (as its own PID namespace sees it).
    pub pid: u32,
    /// `monotonic` or `realtime`.
    pub clock: String,
    /// The interval, seconds.
    pub interval_s: f64,
    /// The slowest messages' file and how many each source keeps per interval.
    #[serde(default)]
    pub slowest: Option<SlowestInfo>,
    /// Its figures.
    pub figures: Vec<StatusFigure>,
}

/// Where the slowest messages go.
#[derive(Debug, Clone, Deserialize)]
pub struct SlowestInfo {
    /// How many each source keeps per interval.
    pub per_interval: usize,
}

/// One figure of the status file.
#[derive(Debug, Clone, Deserialize)]
pub struct StatusFigure {
    /// Its name.
    pub name: String,
    /// The stream its subscriptions read (`None`: a figure the service records itself, or
    /// several streams).
    #[serde(default)]
    pub stream_id: Option<i32>,
    /// Its logs, oldest first.
    pub files: Vec<String>,
    /// The threads recording into it.
    #[serde(default)]
    pub recording_tids: Vec<i32>,
}

/// A service's tap, found.
#[derive(Debug, Clone)]
pub struct ServiceTap {
    /// Its directory.
    pub dir: PathBuf,
    /// Its status file.
    pub status: Status,
}

/// Why the tap could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TapReadError {
    /// `--tap DIR` has no readable status file.
    NoStatus {
        /// The directory.
        dir: PathBuf,
        /// What the system or the parser said.
        why: String,
    },
    /// The status file is another process's.
    OtherProcess {
        /// The directory.
        dir: PathBuf,
        /// The pid attached to.
        pid: u32,
        /// The pid the status file names.
        writer: u32,
    },
    /// `--hop` names no figure of the tap.
    NoFigure {
        /// The name asked for.
        name: String,
        /// The figures the tap has.
        present: Vec<String>,
    },
    /// `--stream` names a stream no figure's subscriptions read.
    NoStream {
        /// The stream asked for.
        stream: i32,
        /// The figures the tap has, with their streams.
        present: Vec<String>,
    },
    /// The tap records no slowest messages (an older `messaging`, or `slowest(0)`).
    NoSlowest {
        /// The directory.
        dir: PathBuf,
    },
}

impl std::fmt::Display for TapReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TapReadError::NoStatus { dir, why } => write!(
                f,
                "--tap {}: no status file {STATUS_FILE} there ({why}); give the directory the service's tap writes to",
                dir.display()
            ),
            TapReadError::OtherProcess { dir, pid, writer } => write!(
                f,
                "--tap {}: its tap is process {writer}'s, not {pid}'s; give the directory of this process's tap",
                dir.display()
            ),
            TapReadError::NoFigure { name, present } => write!(
                f,
                "--hop {name}: the tap has no such figure; it has {}",
                listed(present)
            ),
            TapReadError::NoStream { stream, present } => write!(
                f,
                "--stream {stream}: no figure of the tap reads that stream; its figures: {}",
                listed(present)
            ),
            TapReadError::NoSlowest { dir } => write!(
                f,
                "--tap {}: the tap keeps no slowest messages; build the service with a messaging that writes \
                 slowest.jsonl (TapBuilder::slowest above 0)",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for TapReadError {}

/// The tap's figures for a message, comma-separated.
fn listed(present: &[String]) -> String {
    if present.is_empty() {
        "none yet".into()
    } else {
        present.join(", ")
    }
}

/// The directory of the tap process `pid` writes, from the files it holds open (its logs), if
/// it has one and its open files can be read.
#[must_use]
pub fn find_dir(pid: u32) -> Option<PathBuf> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|p| p.extension().is_some_and(|e| e == "hlog" || e == "jsonl"))
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        // A process in a container names its files in its own mount namespace.
        .map(|d| {
            if d.join(STATUS_FILE).exists() {
                d
            } else {
                in_root(pid, &d)
            }
        })
        .find(|d| d.join(STATUS_FILE).exists())
}

/// `path` as seen from process `pid`'s root (`/proc/PID/root`: its container's files).
fn in_root(pid: u32, path: &Path) -> PathBuf {
    Path::new(&format!("/proc/{pid}/root")).join(path.strip_prefix("/").unwrap_or(path))
}

impl ServiceTap {
    /// Reads the status file in `dir` (or, for a process in a container, in `dir` under its
    /// root) and checks it is process `pid`'s.
    ///
    /// # Errors
    /// No status file there, or another process's.
    pub fn open(dir: &Path, pid: u32) -> Result<ServiceTap, TapReadError> {
        let inside = in_root(pid, dir);
        let dir = if !dir.join(STATUS_FILE).exists() && inside.join(STATUS_FILE).exists() {
            &inside
        } else {
            dir
        };
        let no_status = |why: String| TapReadError::NoStatus {
            dir: dir.to_path_buf(),
            why,
        };
        let text = std::fs::read_to_string(dir.join(STATUS_FILE)).map_err(|e| no_status(e.to_string()))?;
        let mut status: Status = serde_json::from_str(&text).map_err(|e| no_status(e.to_string()))?;
        if status.pid != pid {
            if id_in_namespace(&pid.to_string()) != i32::try_from(status.pid).ok() {
                return Err(TapReadError::OtherProcess {
                    dir: dir.to_path_buf(),
                    pid,
                    writer: status.pid,
                });
            }
            // In a container: the service wrote its threads' ids as its PID namespace sees them.
            let tids = namespace_tids(pid).unwrap_or_default();
            for f in &mut status.figures {
                f.recording_tids = to_host(&f.recording_tids, &tids);
            }
        }
        if status.slowest.as_ref().is_none_or(|s| s.per_interval == 0) {
            return Err(TapReadError::NoSlowest { dir: dir.to_path_buf() });
        }
        Ok(ServiceTap {
            dir: dir.to_path_buf(),
            status,
        })
    }

    /// The figure `pick` asks for.
    ///
    /// # Errors
    /// No such figure (by name or stream), or none yet.
    pub fn figure(&self, pick: Pick<'_>) -> Result<&StatusFigure, TapReadError> {
        let figures = &self.status.figures;
        let found = match pick {
            Pick::Named(n) => figures.iter().find(|f| f.name == n),
            Pick::Stream(stream) => {
                return figures
                    .iter()
                    .find(|f| f.stream_id == Some(stream))
                    .ok_or_else(|| TapReadError::NoStream {
                        stream,
                        present: figures
                            .iter()
                            .map(|f| match f.stream_id {
                                Some(s) => format!("{} (stream {s})", f.name),
                                None => format!("{} (the service's own)", f.name),
                            })
                            .collect(),
                    })
            }
            Pick::RecordedBy(tids) => {
                let ours = |f: &&StatusFigure| tids.is_empty() || f.recording_tids.iter().any(|t| tids.contains(t));
                let hop = figures.iter().filter(ours).find(|f| f.stream_id.is_some());
                hop.or_else(|| figures.iter().find(ours))
            }
        };
        found.ok_or_else(|| TapReadError::NoFigure {
            name: match pick {
                Pick::Named(n) => n.to_owned(),
                _ => "(a figure a watched thread records)".to_owned(),
            },
            present: figures.iter().map(|f| f.name.clone()).collect(),
        })
    }
}

/// `ns_tids` (thread ids in a process's PID namespace) as this host numbers them, by the
/// `(host, namespace)` pairs of its threads; a thread that has ended is left out.
fn to_host(ns_tids: &[i32], pairs: &[(i32, i32)]) -> Vec<i32> {
    ns_tids
        .iter()
        .filter_map(|t| pairs.iter().find(|(_, ns)| ns == t).map(|(host, _)| *host))
        .collect()
}

/// Which figure to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick<'a> {
    /// The one named (`--hop`).
    Named(&'a str),
    /// The one whose subscriptions read this stream (`--stream`).
    Stream(i32),
    /// The first one a thread of these records (any thread when empty), a hop before a figure
    /// the service records itself.
    RecordedBy(&'a [i32]),
}

/// A figure over the watched period: its distribution and its slowest messages as samples.
#[derive(Debug, Clone)]
pub struct TapWindow {
    /// What the report says about it.
    pub summary: AttachTap,
    /// The slowest messages received in the period, slowest first.
    pub slow: Vec<SlowSample>,
    /// The same by band, each with the messages the distribution has in it: one stratum per band
    /// (its index in [`Octave::octave`]), so each sample stands for its share of its band.
    pub octaves: Vec<Octave>,
    /// The distribution over the period.
    pub histogram: Histogram<u64>,
}

/// The watched period on both clocks.
#[derive(Debug, Clone, Copy)]
pub struct Period {
    /// Start and end, seconds since the Unix epoch (the logs' intervals).
    pub unix_s: (f64, f64),
    /// Start and end, `CLOCK_MONOTONIC` ns (the episodes).
    pub mono_ns: (i64, i64),
}

/// Reads figure `figure` of `tap` over `period`.
///
/// # Errors
/// A log or the slowest messages' file cannot be read or parsed: one line naming it.
pub fn read_window(tap: &ServiceTap, figure: &StatusFigure, period: Period) -> Result<TapWindow, String> {
    let (histogram, intervals) = window_histogram(tap, figure, period)?;
    let (slow, floor) = slowest_in(tap, figure, period)?;
    let per_interval = tap.status.slowest.as_ref().map_or(0, |s| s.per_interval);
    let q = |p: f64| {
        if histogram.is_empty() {
            0
        } else {
            histogram.value_at_quantile(p)
        }
    };
    let edges_ns = [q(0.5), q(0.9), q(0.99), q(0.999), histogram.max()];
    let octaves = strata(&histogram, edges_ns, &slow);
    let summary = AttachTap {
        dir: tap.dir.display().to_string(),
        figure: figure.name.clone(),
        figures: tap.status.figures.iter().map(|f| f.name.clone()).collect(),
        recording_tids: figure.recording_tids.clone(),
        clock: tap.status.clock.clone(),
        intervals,
        messages: histogram.len(),
        edges_ns,
        slowest_per_interval: per_interval,
        slowest_kept: slow.len(),
        complete_above_ns: floor,
    };
    Ok(TapWindow {
        summary,
        slow,
        octaves,
        histogram,
    })
}

/// A tolerance for where an interval starts and ends against the watched period, seconds.
const SLACK_S: f64 = 0.005;

/// Figure `figure`'s intervals that lie inside `period` (within [`SLACK_S`]), added up, and how
/// many there were.
fn window_histogram(
    tap: &ServiceTap,
    figure: &StatusFigure,
    period: Period,
) -> Result<(Histogram<u64>, usize), String> {
    let mut histogram = Histogram::<u64>::new(3).expect("3 digits");
    let mut intervals = 0;
    for file in &figure.files {
        let path = tap.dir.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let log = parse_hlog(&text, None).map_err(|e| format!("{}: {e}", path.display()))?;
        for i in log
            .intervals
            .iter()
            .filter(|i| i.start_s >= period.unix_s.0 - SLACK_S && i.end_s() <= period.unix_s.1 + SLACK_S)
        {
            histogram.add(&i.histogram).expect("auto-resizing");
            intervals += 1;
        }
    }
    Ok((histogram, intervals))
}

/// Figure `figure`'s slowest messages received inside `period` (at most `MAX_SAMPLES`, slowest
/// first), on `CLOCK_MONOTONIC`, and the latency above which every message is among them.
fn slowest_in(tap: &ServiceTap, figure: &StatusFigure, period: Period) -> Result<(Vec<SlowSample>, u64), String> {
    // The tap's clock onto CLOCK_MONOTONIC.
    let offset = if tap.status.clock == "realtime" {
        StampClock::Realtime.now_ns() - StampClock::Monotonic.now_ns()
    } else {
        0
    };
    let interval_ns = (tap.status.interval_s * 1e9) as i64;
    let slack_ns = (SLACK_S * 1e9) as i64;
    let (from, to) = period.mono_ns;
    let mut slow = Vec::new();
    let mut floor = 0_u64;
    let per_interval = tap.status.slowest.as_ref().map_or(0, |s| s.per_interval);
    for name in SLOWEST_FILES {
        let path = tap.dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let l: SlowestLine = match serde_json::from_str(line) {
                Ok(l) => l,
                // The writer appends whole lines; a last line without its newline is being written.
                Err(_) if n + 1 == text.lines().count() && !text.ends_with('\n') => continue,
                Err(e) => return Err(format!("{} line {}: {e}", path.display(), n + 1)),
            };
            let end = l.end_ns - offset;
            if l.figure != figure.name || end - interval_ns < from - slack_ns || end > to + slack_ns {
                continue;
            }
            if l.slowest.len() >= per_interval {
                floor = floor.max(l.slowest.iter().map(|p| p.1).min().unwrap_or(0));
            }
            slow.extend(l.slowest.iter().map(|&(at, latency_ns)| {
                let received_ns = at - offset;
                let sent_ns = received_ns - latency_ns as i64;
                SlowSample {
                    latency_ns,
                    seq: 0,
                    intended_ns: sent_ns,
                    sent_ns,
                    received_ns,
                }
            }));
            if slow.len() >= 2 * MAX_SAMPLES {
                keep_slowest(&mut slow, MAX_SAMPLES, &mut floor);
            }
        }
    }
    slow.retain(|s| s.received_ns >= from && s.received_ns <= to);
    keep_slowest(&mut slow, MAX_SAMPLES, &mut floor);
    Ok((slow, floor))
}

/// Orders `slow` slowest first and keeps at most `max` of them; when some go, `floor` rises to
/// the slowest one kept last (every message above it is still a sample).
fn keep_slowest(slow: &mut Vec<SlowSample>, max: usize, floor: &mut u64) {
    slow.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    if slow.len() > max {
        slow.truncate(max);
        *floor = (*floor).max(slow.last().map_or(0, |s| s.latency_ns));
    }
}

/// One line of the slowest messages' file.
#[derive(Debug, Deserialize)]
struct SlowestLine {
    figure: String,
    end_ns: i64,
    slowest: Vec<(i64, u64)>,
}

/// The samples as the band analysis weighs them: one stratum per band (p50-p90, ..., p99.9-max;
/// [`Octave::octave`] is the band's index), each with the messages the distribution has in it,
/// so each kept sample stands for `messages / kept` of its band: a band's count is the
/// distribution's, its shares those of its slowest messages where it is not covered whole.
fn strata(histogram: &Histogram<u64>, edges: [u64; 5], slow: &[SlowSample]) -> Vec<Octave> {
    (0..4)
        .map(|i| {
            let (lo, hi) = (edges[i], edges[i + 1]);
            let samples: Vec<SlowSample> = slow
                .iter()
                .filter(|s| s.latency_ns > lo && s.latency_ns <= hi)
                .cloned()
                .collect();
            let seen = in_band(histogram, lo, hi).max(samples.len() as u64);
            Octave {
                octave: i as u32,
                seen,
                samples,
            }
        })
        .collect()
}

/// Messages above `lo` and at most `hi`, to the histogram's 3 digits: those in the buckets
/// above `lo`'s up to `hi`'s.
#[must_use]
pub fn in_band(histogram: &Histogram<u64>, lo: u64, hi: u64) -> u64 {
    if hi <= lo || histogram.is_empty() {
        return 0;
    }
    let bucket = |v: u64| histogram.lowest_equivalent(v);
    histogram
        .iter_recorded()
        .map(|v| (bucket(v.value_iterated_to()), v.count_at_value()))
        .filter(|(b, _)| *b > bucket(lo) && *b <= bucket(hi))
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_s_thread_ids_are_found_on_the_host() {
        // (host, namespace): a service in a container sees its threads as 1, 7 and 8.
        let pairs = [(28343, 1), (28348, 7), (28349, 8)];
        assert_eq!(to_host(&[8, 7], &pairs), [28349, 28348]);
        assert_eq!(to_host(&[9], &pairs), Vec::<i32>::new(), "an ended thread is left out");
    }

    fn sample(latency_ns: u64) -> SlowSample {
        SlowSample {
            latency_ns,
            seq: 0,
            intended_ns: 0,
            sent_ns: 0,
            received_ns: latency_ns as i64,
        }
    }

    /// Each band's stratum holds its samples and the distribution's messages in it, so a
    /// kept sample stands for its share of the band.
    #[test]
    fn strata_are_the_bands_with_their_messages() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(1_000, 900).unwrap();
        h.record_n(5_000, 90).unwrap();
        h.record_n(50_000, 9).unwrap();
        h.record(900_000).unwrap();
        let edges = [1_000, 5_000, 50_000, 50_000, h.max()];
        let slow: Vec<SlowSample> = [900_000, 50_000, 50_000, 5_000].map(sample).to_vec();
        let s = strata(&h, edges, &slow);
        let seen: Vec<u64> = s.iter().map(|o| o.seen).collect();
        let kept: Vec<usize> = s.iter().map(|o| o.samples.len()).collect();
        assert_eq!(seen, [90, 9, 0, 1]);
        assert_eq!(kept, [1, 2, 0, 1]);
        assert_eq!(in_band(&h, 0, h.max()), 1_000);
        assert_eq!(in_band(&h, 5_000, 5_000), 0);
    }

    /// A watch keeps its slowest samples, at most the bound, and says from where it is whole.
    #[test]
    fn a_long_watch_keeps_its_slowest_samples() {
        let mut slow: Vec<SlowSample> = [5, 9, 1, 7, 3].map(sample).to_vec();
        let mut floor = 2;
        keep_slowest(&mut slow, 3, &mut floor);
        let kept: Vec<u64> = slow.iter().map(|s| s.latency_ns).collect();
        assert_eq!((kept, floor), (vec![9, 7, 5], 5));
        keep_slowest(&mut slow, 3, &mut floor);
        assert_eq!((slow.len(), floor), (3, 5), "nothing goes: the floor stays");
    }

    #[test]
    fn a_figure_is_picked_by_name_stream_or_recording_thread() {
        let fig = |name: &str, stream_id: Option<i32>, tids: &[i32]| StatusFigure {
            name: name.into(),
            stream_id,
            files: Vec::new(),
            recording_tids: tids.to_vec(),
        };
        let tap = ServiceTap {
            dir: PathBuf::from("/t"),
            status: Status {
                pid: 1,
                clock: "monotonic".into(),
                interval_s: 1.0,
                slowest: Some(SlowestInfo { per_interval: 128 }),
                figures: vec![
                    fig("inside", None, &[7]),
                    fig("in", Some(10), &[7]),
                    fig("out", Some(20), &[8]),
                ],
            },
        };
        assert_eq!(tap.figure(Pick::RecordedBy(&[])).unwrap().name, "in");
        assert_eq!(tap.figure(Pick::RecordedBy(&[8])).unwrap().name, "out");
        assert_eq!(tap.figure(Pick::Named("inside")).unwrap().name, "inside");
        assert_eq!(tap.figure(Pick::Stream(20)).unwrap().name, "out");
        let e = tap.figure(Pick::Named("x")).unwrap_err().to_string();
        assert_eq!(e, "--hop x: the tap has no such figure; it has inside, in, out");
        let e = tap.figure(Pick::Stream(30)).unwrap_err().to_string();
        assert_eq!(
            e,
            "--stream 30: no figure of the tap reads that stream; its figures: inside (the service's own), \
             in (stream 10), out (stream 20)"
        );
    }
}
