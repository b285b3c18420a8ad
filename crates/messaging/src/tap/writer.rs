//! The tap's owner and its background writer: [`Tap`] registers figures and their sources;
//! its thread (named `aeron-tap`, pinnable, never spinning: it sleeps until the next interval,
//! and in 20 µs naps while it waits for the polling threads' handovers) takes every source's
//! interval, writes one interval log per figure, rotates the logs, and rewrites the status file
//! and the Prometheus textfile.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use super::builder::TapBuilder;
use super::collect::collect;
use super::deflate::Deflate;
use super::export::{self, FigureView};
use super::handover::Handover;
use super::record::{Counts, FigureRecorder, Source};
use super::slowest::{SlowestFile, SLOWEST_DEFAULT, SLOWEST_FILE, SLOWEST_FILE_OLD};
use super::summary::{FigureSummary, TapSummary};
use super::StampClock;
use crate::error::TapError;
use crate::thread::{PinnedThread, ThreadBuilder};

/// The status file's name in the tap's directory.
pub const STATUS_FILE: &str = "tap.json";
/// The Prometheus textfile's name in the tap's directory (node_exporter's textfile collector
/// reads `*.prom`).
pub const PROMETHEUS_FILE: &str = "tap.prom";

/// [`TapBuilder::start`]: creates the directory and starts the writer thread.
pub(crate) fn start(b: TapBuilder) -> Result<Tap, TapError> {
    let dir_err = |source| TapError::Dir {
        dir: b.dir.clone(),
        source,
    };
    std::fs::create_dir_all(&b.dir).map_err(dir_err)?;
    let earlier = std::fs::read_dir(&b.dir)
        .map_err(dir_err)?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| {
            n.ends_with(".hlog") || [STATUS_FILE, PROMETHEUS_FILE, SLOWEST_FILE, SLOWEST_FILE_OLD].contains(&n.as_str())
        });
    if let Some(file) = earlier {
        return Err(TapError::NotEmpty { dir: b.dir, file });
    }
    let highest_ns = u64::try_from(b.highest.as_nanos()).unwrap_or(u64::MAX).max(2);
    let shared = Arc::new(Shared {
        clock: b.clock,
        dir: b.dir.clone(),
        highest_ns,
        slowest: b.slowest,
        registry: Mutex::default(),
        stop: AtomicBool::new(false),
        recorders: AtomicU64::new(0),
        error: Mutex::default(),
        write_errors: AtomicU64::new(0),
    });
    let mut w = Writer::new(shared.clone(), &b);
    // The first exports, before the writer starts: a directory it cannot write fails here.
    for written in w.exports() {
        written.map_err(|e| match e {
            TapError::Write { source, .. } => dir_err(source),
            other => other,
        })?;
    }
    let thread = ThreadBuilder::new()
        .name("aeron-tap")
        .affinity_opt(b.writer_core)
        .spawn(move || w.run())
        .map_err(TapError::Spawn)?;
    Ok(Tap {
        shared,
        thread: Some(thread),
    })
}

/// The tap of one process: the figures its subscriptions and recorders record, and the thread
/// that writes them. Start it with [`Tap::builder`]; hand it to
/// [`Subscriber::record_latency`](crate::Subscriber::record_latency) and
/// [`Tap::figure`]; end it with [`Tap::stop`], which writes the last interval and says whether
/// every write succeeded.
pub struct Tap {
    shared: Arc<Shared>,
    thread: Option<PinnedThread<TapSummary>>,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap")
            .field("dir", &self.shared.dir)
            .field("clock", &self.shared.clock)
            .finish_non_exhaustive()
    }
}

impl Tap {
    /// A tap writing into `dir` (made if missing; it must not hold an earlier tap's files).
    #[must_use]
    pub fn builder(dir: impl Into<PathBuf>) -> TapBuilder {
        TapBuilder {
            dir: dir.into(),
            interval: Duration::from_secs(1),
            rotate_bytes: None,
            rotate_every: None,
            clock: StampClock::Monotonic,
            highest: Duration::from_secs(10),
            writer_core: None,
            prometheus: true,
            slowest: SLOWEST_DEFAULT,
        }
    }

    /// A recorder for a figure the service measures itself (e.g. receive to publish).
    ///
    /// # Errors
    /// [`TapError::BadName`] for a name other than letters, digits, `-`, `_` and `.`.
    pub fn figure(&self, name: &str) -> Result<FigureRecorder, TapError> {
        FigureRecorder::new(self, name)
    }

    /// The directory the logs go to.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The clock receive times are read from.
    #[must_use]
    pub fn clock(&self) -> StampClock {
        self.shared.clock
    }

    /// The writer thread's Linux thread id.
    #[must_use]
    pub fn writer_tid(&self) -> i32 {
        self.thread.as_ref().map_or(0, PinnedThread::tid)
    }

    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Writes the last interval, closes the logs and says what was recorded. Stop recording
    /// first ([`Subscriber::stop_recording`](crate::Subscriber::stop_recording) or drop the
    /// subscriber; drop the [`FigureRecorder`]s): the tap then takes all they hold. A
    /// subscription still recording hands its last interval over only if it is polled while
    /// the writer waits (at most 50 ms); [`TapSummary::unanswered`] counts those that were
    /// not. What is recorded after the last interval is taken is not written.
    ///
    /// # Errors
    /// [`TapError::WritesFailed`] when some writes failed (the writer goes on after one: later
    /// intervals may have been written), with the first of them and the summary;
    /// [`TapError::WriterPanicked`].
    pub fn stop(mut self) -> Result<TapSummary, TapError> {
        let summary = self.halt()?;
        match self.shared.error.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(first) => Err(TapError::WritesFailed {
                failed: self.write_errors(),
                first: Box::new(first),
                summary: Box::new(summary),
            }),
            None => Ok(summary),
        }
    }

    /// Writes that failed so far, one per file and interval: a figure's log, the slowest
    /// messages' file, the status file, the Prometheus textfile (the last two also count them,
    /// as `write_errors` and `aeron_tap_write_errors_total`). The writer goes on after one;
    /// [`stop`](Self::stop) returns the first. One load: a service's health check may read it
    /// as often as it likes.
    #[must_use]
    pub fn write_errors(&self) -> u64 {
        self.shared.write_errors.load(Ordering::Relaxed)
    }

    fn halt(&mut self) -> Result<TapSummary, TapError> {
        self.shared.stop.store(true, Ordering::Release);
        let thread = self.thread.take().ok_or(TapError::WriterPanicked)?;
        thread.thread().unpark();
        thread.join().map_err(|_| TapError::WriterPanicked)
    }
}

impl Drop for Tap {
    /// Stops the writer (the last interval is written); call [`Tap::stop`] to get errors. A
    /// failed write or a writer that panicked, which only `stop` would return, is told on
    /// stderr in one line.
    fn drop(&mut self) {
        if self.thread.is_some() {
            let halted = self.halt();
            let first = self.shared.error.lock().unwrap_or_else(PoisonError::into_inner).take();
            let unread = match (halted, first) {
                (Err(e), _) => Some(e.to_string()),
                (Ok(_), Some(first)) => Some(format!("{} writes failed, the first: {first}", self.write_errors())),
                (Ok(_), None) => None,
            };
            if let Some(words) = unread {
                let _ = writeln!(
                    std::io::stderr(),
                    "messaging: the tap in {} was dropped unstopped: {words} (Tap::stop returns it)",
                    self.shared.dir.display()
                );
            }
        }
    }
}

/// One figure as the registry holds it.
struct Figure {
    name: String,
    stream: Option<i32>,
}

#[derive(Default)]
struct Registry {
    figures: Vec<Figure>,
    sources: Vec<Arc<Source>>,
}

/// What the tap's handles and its writer share.
pub(crate) struct Shared {
    pub(crate) clock: StampClock,
    dir: PathBuf,
    pub(crate) highest_ns: u64,
    slowest: usize,
    registry: Mutex<Registry>,
    stop: AtomicBool,
    recorders: AtomicU64,
    /// The first failed write.
    error: Mutex<Option<TapError>>,
    /// Failed writes.
    write_errors: AtomicU64,
}

impl Shared {
    /// Registers the figure `name` (once; cold: a subscription or recorder is being made).
    pub(crate) fn figure(&self, name: &str, stream: Option<i32>) -> Result<usize, TapError> {
        // `NAME.N.hlog` is the rotation of `NAME`: a name ending in `.` and digits would clash.
        let rotation_like = name
            .rsplit_once('.')
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let ok = !name.is_empty()
            && name.len() <= 64
            && !name.starts_with('.')
            && !rotation_like
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !ok {
            return Err(TapError::BadName { name: name.into() });
        }
        let mut r = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = r.figures.iter().position(|f| f.name == name) {
            if r.figures[i].stream != stream {
                r.figures[i].stream = None; // several streams, or recorders and a stream
            }
            return Ok(i);
        }
        r.figures.push(Figure {
            name: name.into(),
            stream,
        });
        Ok(r.figures.len() - 1)
    }

    /// A new source of the figure `name` (registered before), with its two intervals allocated.
    /// Its tag is `tag`, or `tag.N` when the figure has a source tagged `tag` already (a
    /// second subscription on the stream, or `record_latency` called again).
    pub(crate) fn source(
        &self,
        name: &str,
        stream: Option<i32>,
        tag: String,
        handover: Option<Arc<Handover>>,
    ) -> Arc<Source> {
        let figure = self.figure(name, stream).unwrap_or(0);
        let mut r = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = |t: &str| r.sources.iter().any(|s| s.figure == figure && s.tag == t);
        let tag = if taken(&tag) {
            (2..)
                .map(|n| format!("{tag}.{n}"))
                .find(|t| !taken(t))
                .expect("a free tag")
        } else {
            tag
        };
        let source = Arc::new(Source::new(figure, tag, (self.highest_ns, self.slowest), handover));
        r.sources.push(source.clone());
        source
    }

    pub(crate) fn next_recorder(&self) -> u64 {
        self.recorders.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn note_error(&self, e: TapError) {
        self.write_errors.fetch_add(1, Ordering::Relaxed);
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(e);
    }
}

/// One figure's current log.
struct LogFile {
    /// Not buffered: each interval's lines go in one write from a `Vec`.
    out: File,
    path: PathBuf,
    /// Its length up to the last whole write.
    bytes: u64,
    opened: Instant,
}

/// The writer thread's state.
struct Writer {
    shared: Arc<Shared>,
    interval: Duration,
    rotate_bytes: Option<u64>,
    rotate_every: Option<Duration>,
    prometheus: bool,
    started: SystemTime,
    /// The same moment on the monotonic clock: intervals are measured on it, so a step of the
    /// wall clock moves no interval.
    started_at: Instant,
    /// Per figure: where its next interval starts.
    from: Vec<Instant>,
    /// When the last interval's work began (none before the first).
    last_round: Option<Instant>,
    /// The writer thread's id (0 until it runs).
    tid: i32,
    /// How long the last interval's work took, and the longest so far (its own cost, which
    /// lands on whatever core it runs on).
    busy_last: Duration,
    busy_max: Duration,
    /// Asks a polling thread had not answered by the end of an interval, summed over the
    /// intervals (its counts then land in a later interval).
    late: u64,
    /// Those of the last interval (at stop: what stays unwritten).
    unanswered: u64,
    /// How long the last interval waited for the polling threads' answers.
    waited: Duration,
    /// Per figure: its totals since the start, its files, its current log.
    totals: Vec<Counts>,
    files: Vec<Vec<PathBuf>>,
    logs: Vec<Option<LogFile>>,
    interval_sum: Counts,
    /// Emptied counts of earlier intervals, for the next ones (no allocation per interval).
    spare: Vec<Counts>,
    serializer: Deflate,
    slowest: SlowestFile,
}

impl Writer {
    fn new(shared: Arc<Shared>, b: &TapBuilder) -> Writer {
        Writer {
            interval_sum: Counts::new(shared.highest_ns),
            spare: Vec::new(),
            shared,
            interval: b.interval,
            rotate_bytes: b.rotate_bytes,
            rotate_every: b.rotate_every,
            prometheus: b.prometheus,
            started: SystemTime::now(),
            started_at: Instant::now(),
            from: Vec::new(),
            last_round: None,
            tid: 0,
            busy_last: Duration::ZERO,
            busy_max: Duration::ZERO,
            late: 0,
            unanswered: 0,
            waited: Duration::ZERO,
            totals: Vec::new(),
            files: Vec::new(),
            logs: Vec::new(),
            serializer: Deflate::new(),
            slowest: SlowestFile::new(&b.dir),
        }
    }

    /// Writes an interval every `interval` until stopped, then the last one.
    fn run(mut self) -> TapSummary {
        self.tid = crate::thread::current_tid();
        let mut next = Instant::now() + self.interval;
        loop {
            while !self.shared.stop.load(Ordering::Acquire) && Instant::now() < next {
                std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
            }
            let stopping = self.shared.stop.load(Ordering::Acquire);
            let began = Instant::now();
            self.write_interval(stopping);
            // The status file says how long the interval's work took up to here, and the
            // longest so far (the exports themselves, two small files, are not in it).
            self.busy_last = began.elapsed().saturating_sub(self.waited);
            self.busy_max = self.busy_max.max(self.busy_last);
            self.write_exports();
            if stopping {
                break;
            }
            next = (next + self.interval).max(Instant::now());
        }
        self.summary()
    }

    /// Takes every source's interval ([`collect`]) and writes each
    /// figure's lines: one tagged line per source that recorded something, then the figure's
    /// sum untagged (what HdrHistogram's tools read by default). Sources that had retired
    /// when they were taken are let go.
    /// A failed write (a file's, for this interval) is counted ([`Shared::note_error`]) and
    /// the others go on.
    fn write_interval(&mut self, stopping: bool) {
        let round = Instant::now();
        let shared = &self.shared;
        let snapshot = || {
            let r = shared.registry.lock().unwrap_or_else(PoisonError::into_inner);
            r.sources.clone()
        };
        let mut got = collect(snapshot, self.interval, stopping, shared.highest_ns, &mut self.spare);
        // The interval ends when everything is taken.
        let to = Instant::now();
        let figures = {
            let r = self.shared.registry.lock().unwrap_or_else(PoisonError::into_inner);
            r.figures.len()
        };
        while self.totals.len() < figures {
            self.totals.push(Counts::new(self.shared.highest_ns));
            self.files.push(Vec::new());
            self.logs.push(None);
            // A figure named since the last interval starts where that interval ended.
            self.from.push(self.last_round.unwrap_or(self.started_at));
        }
        self.unanswered = got.unanswered;
        self.late += got.unanswered;
        self.waited = got.waited;
        if let Err(e) = self.write_slowest(&got.sources, &mut got.counts) {
            self.shared.note_error(e);
        }
        for f in 0..figures {
            std::thread::yield_now(); // between chunks of work
            if let Err(e) = self.write_figure(f, &got.sources, &mut got.counts, to) {
                self.shared.note_error(e);
            }
        }
        self.last_round = Some(round);
        // Spare counts for the sources still there, no more: publishers that came and went do
        // not leave their histograms behind.
        let live = got.retired.iter().filter(|r| !**r).count();
        self.spare.truncate(live);
        if got.retired.iter().any(|r| *r) {
            let gone: Vec<&Arc<Source>> = got
                .sources
                .iter()
                .zip(&got.retired)
                .filter(|(_, r)| **r)
                .map(|(s, _)| s)
                .collect();
            let mut r = self.shared.registry.lock().unwrap_or_else(PoisonError::into_inner);
            r.sources.retain(|s| !gone.iter().any(|d| Arc::ptr_eq(s, d)));
        }
    }

    /// Each source's slowest messages of the interval, one line each in [`SLOWEST_FILE`].
    fn write_slowest(&mut self, sources: &[Arc<Source>], counts: &mut [Option<Counts>]) -> Result<(), TapError> {
        let names: Vec<String> = {
            let r = self.shared.registry.lock().unwrap_or_else(PoisonError::into_inner);
            r.figures.iter().map(|f| f.name.clone()).collect()
        };
        let end_ns = self.shared.clock.now_ns();
        self.slowest
            .append_interval(&names, sources, counts, self.shared.slowest, end_ns)
    }

    /// Figure `f`'s interval, ending at `to`: the counts taken from its sources, its lines
    /// written. An encoding error does not stop the others, so every count reaches the totals.
    fn write_figure(
        &mut self,
        f: usize,
        sources: &[Arc<Source>],
        counts: &mut [Option<Counts>],
        to: Instant,
    ) -> Result<(), TapError> {
        self.interval_sum.reset();
        let mut taken: Vec<(&str, Counts)> = Vec::new();
        for (s, c) in sources.iter().zip(counts.iter_mut()).filter(|(s, _)| s.figure == f) {
            if let Some(c) = c.take() {
                self.interval_sum.add(&c);
                taken.push((&s.tag, c));
            }
        }
        let start = self.from[f].saturating_duration_since(self.started_at);
        let length = to.saturating_duration_since(self.from[f]);
        self.from[f] = to;
        // In the totals before anything is written: a log that cannot be opened loses its line,
        // not the summary's counts.
        self.totals[f].add(&self.interval_sum);
        if let Err(e) = self.rotate_if_due(f) {
            self.spare.extend(taken.into_iter().map(|(_, mut c)| {
                c.reset();
                c
            }));
            return Err(e);
        }
        let path = self.logs[f].as_ref().expect("opened by rotate_if_due").path.clone();
        let mut lines: Vec<u8> = Vec::new();
        let mut first_error = None;
        {
            let mut w = IntervalLogWriterBuilder::new()
                .begin_log_with(&mut lines, &mut self.serializer)
                .expect("writes to a Vec");
            let mut line = |h: &hdrhistogram::Histogram<u64>, tag: Option<Tag<'_>>| {
                if let Err(e) = w.write_histogram(h, start, length, tag) {
                    first_error.get_or_insert(TapError::Encode {
                        path: path.clone(),
                        detail: e.to_string(),
                    });
                }
            };
            for (tag, c) in &taken {
                line(&c.histogram, Tag::new(tag));
            }
            line(&self.interval_sum.histogram, None);
        }
        for (_, mut c) in taken {
            c.reset();
            self.spare.push(c);
        }
        let log = self.logs[f].as_mut().expect("opened by rotate_if_due");
        if let Err(source) = export::append_whole(&mut log.out, &mut log.bytes, &lines) {
            first_error.get_or_insert(TapError::Write { path, source });
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Opens figure `f`'s first log, or its next one when the current one is due to rotate.
    /// Every log's `StartTime` and `BaseTime` are the tap's start: HdrHistogram's readers skip
    /// intervals that start before a log's `StartTime` (by their rounded digits, so a later
    /// `StartTime` could hide the first interval), and times in every log read from one origin.
    fn rotate_if_due(&mut self, f: usize) -> Result<(), TapError> {
        // A log removed while open (a cleanup job, the directory deleted) would take every
        // later line with it, each write succeeding: start a new one, and say so.
        if let Some(log) = self.logs[f].take_if(|log| export::removed(&log.out)) {
            self.files[f].retain(|p| *p != log.path);
            self.shared.note_error(TapError::Removed { path: log.path });
        }
        let due = match &self.logs[f] {
            None => true,
            Some(log) => {
                self.rotate_bytes.is_some_and(|b| log.bytes >= b)
                    || self.rotate_every.is_some_and(|age| log.opened.elapsed() >= age)
            }
        };
        if !due {
            return Ok(());
        }
        let name = {
            let r = self.shared.registry.lock().unwrap_or_else(PoisonError::into_inner);
            r.figures[f].name.clone()
        };
        let n = self.files[f].len();
        let file = if n == 0 {
            format!("{name}.hlog")
        } else {
            format!("{name}.{n}.hlog")
        };
        let path = self.shared.dir.join(file);
        let write_err = |source| TapError::Write {
            path: path.clone(),
            source,
        };
        let mut out = File::create(&path).map_err(write_err)?;
        let mut header = Vec::new();
        IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "aeron-latency tap: figure {name}, clock {}, nanoseconds",
                self.shared.clock
            ))
            .with_start_time(self.started)
            .with_base_time(self.started)
            .begin_log_with(&mut header, &mut self.serializer)
            .expect("writes to a Vec");
        header.extend_from_slice(
            b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
        );
        let mut bytes = 0;
        export::append_whole(&mut out, &mut bytes, &header).map_err(write_err)?;
        self.files[f].push(path.clone());
        self.logs[f] = Some(LogFile {
            out,
            path,
            bytes,
            opened: Instant::now(),
        });
        Ok(())
    }

    fn views(&self) -> Vec<FigureView<'_>> {
        let r = self.shared.registry.lock().unwrap_or_else(PoisonError::into_inner);
        r.figures
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < self.totals.len())
            .map(|(i, f)| {
                let sources: Vec<_> = r.sources.iter().filter(|s| s.figure == i).collect();
                // A thread that polls several sessions records into several sources: listed once.
                let mut tids: Vec<i32> = sources
                    .iter()
                    .map(|s| s.tid.load(Ordering::Relaxed))
                    .filter(|t| *t != 0)
                    .collect();
                tids.sort_unstable();
                tids.dedup();
                FigureView {
                    name: f.name.clone(),
                    stream: f.stream,
                    totals: &self.totals[i],
                    files: &self.files[i],
                    tids,
                    sources: sources.len(),
                }
            })
            .collect()
    }

    /// Rewrites the status file and (when asked) the Prometheus textfile, each atomically; a
    /// failed one is counted ([`Shared::note_error`]), and the other still written.
    fn write_exports(&mut self) {
        for e in self.exports().into_iter().filter_map(Result::err) {
            self.shared.note_error(e);
        }
    }

    /// The status file's and the Prometheus textfile's writes.
    fn exports(&mut self) -> [Result<(), TapError>; 2] {
        let views = self.views();
        let status = export::status_json(&export::Status {
            clock: self.shared.clock,
            interval: self.interval,
            started: self.started,
            writer_tid: self.tid,
            writer_busy: (self.busy_last, self.busy_max),
            late_handovers: self.late,
            write_errors: self.shared.write_errors.load(Ordering::Relaxed),
            prometheus: self.prometheus.then_some(PROMETHEUS_FILE),
            slowest: (self.shared.slowest > 0).then_some((SLOWEST_FILE, self.shared.slowest)),
            figures: &views,
        });
        let dir = &self.shared.dir;
        let written = export::replace(&dir.join(STATUS_FILE), status.as_bytes());
        let prometheus = if self.prometheus {
            let errors = self.shared.write_errors.load(Ordering::Relaxed);
            let text = export::prometheus(&views, self.shared.clock, errors);
            export::replace(&dir.join(PROMETHEUS_FILE), text.as_bytes())
        } else {
            Ok(())
        };
        [written, prometheus]
    }

    fn summary(&self) -> TapSummary {
        let views = self.views();
        TapSummary {
            unanswered: self.unanswered,
            figures: views
                .into_iter()
                .map(|v| FigureSummary {
                    recorded: v.totals.histogram.len(),
                    negative: v.totals.negative,
                    saturated: v.totals.saturated,
                    unstamped: v.totals.unstamped,
                    files: v.files.to_vec(),
                    histogram: v.totals.histogram.clone(),
                    stream_id: v.stream,
                    name: v.name,
                })
                .collect(),
        }
    }
}
