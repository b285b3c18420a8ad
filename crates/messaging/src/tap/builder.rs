//! [`TapBuilder`]: where a [`Tap`] writes, how often, how it rotates, on which clock.

use std::path::PathBuf;
use std::time::Duration;

use super::slowest::SLOWEST_MAX;
#[cfg(doc)]
use super::slowest::{SLOWEST_DEFAULT, SLOWEST_FILE};
use super::writer::Tap;
#[cfg(doc)]
use super::writer::PROMETHEUS_FILE;
use super::StampClock;
use crate::error::TapError;

/// Starts a [`Tap`]: where it writes, how often, how it rotates, on which clock.
#[derive(Debug, Clone)]
pub struct TapBuilder {
    pub(crate) dir: PathBuf,
    pub(crate) interval: Duration,
    pub(crate) rotate_bytes: Option<u64>,
    pub(crate) rotate_every: Option<Duration>,
    pub(crate) clock: StampClock,
    pub(crate) highest: Duration,
    pub(crate) writer_core: Option<usize>,
    pub(crate) prometheus: bool,
    pub(crate) slowest: usize,
}

impl TapBuilder {
    /// How often an interval is written (default 1 s, HdrHistogram's usual). At least 1 ms;
    /// at most [`MAX_INTERVAL`](Self::MAX_INTERVAL), which (as `Duration::MAX` does) means one
    /// interval, written when the tap stops.
    #[must_use]
    pub fn interval(mut self, every: Duration) -> Self {
        self.interval = every.clamp(Duration::from_millis(1), Self::MAX_INTERVAL);
        self
    }

    /// The longest [`interval`](Self::interval): a year.
    pub const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);

    /// Starts a figure's next log once its current one holds this many bytes (default: never).
    #[must_use]
    pub fn rotate_bytes(mut self, bytes: u64) -> Self {
        self.rotate_bytes = Some(bytes);
        self
    }

    /// Starts a figure's next log once its current one is this old (default: never).
    #[must_use]
    pub fn rotate_every(mut self, age: Duration) -> Self {
        self.rotate_every = Some(age);
        self
    }

    /// The clock the subscriptions read receive times from; the publishers must stamp on the
    /// same one (default [`StampClock::Monotonic`]: one host). Recorded in the status file.
    #[must_use]
    pub fn clock(mut self, clock: StampClock) -> Self {
        self.clock = clock;
        self
    }

    /// The highest latency the histograms hold (default 10 s); above it a latency is recorded
    /// at the highest value and counted as saturated.
    #[must_use]
    pub fn highest(mut self, highest: Duration) -> Self {
        self.highest = highest.max(Duration::from_micros(1));
        self
    }

    /// Pins the writer thread to `core` (default: not pinned; keep it off the hot cores).
    #[must_use]
    pub fn writer_core(mut self, core: Option<usize>) -> Self {
        self.writer_core = core;
        self
    }

    /// How many of each interval's slowest messages each source keeps, with their receive
    /// times, for [`SLOWEST_FILE`] (default [`SLOWEST_DEFAULT`], at most [`SLOWEST_MAX`]; 0:
    /// none and no file). Cover the band you want explained: the p99 band needs more than 1%
    /// of an interval's messages (at 10,000 a second and 1 s intervals, 100). A source holds
    /// `2 * 4 * n` of 16 B (16 KiB at the default).
    #[must_use]
    pub fn slowest(mut self, n: usize) -> Self {
        self.slowest = n.min(SLOWEST_MAX);
        self
    }

    /// Whether to write the Prometheus textfile [`PROMETHEUS_FILE`] (default yes).
    #[must_use]
    pub fn prometheus(mut self, on: bool) -> Self {
        self.prometheus = on;
        self
    }

    /// Creates the directory and starts the writer thread.
    ///
    /// # Errors
    /// [`TapError::Dir`] when the directory cannot be made or written,
    /// [`TapError::NotEmpty`] when it holds an earlier tap's files, [`TapError::Spawn`] when
    /// the writer thread cannot start or be pinned.
    pub fn start(self) -> Result<Tap, TapError> {
        super::writer::start(self)
    }
}
