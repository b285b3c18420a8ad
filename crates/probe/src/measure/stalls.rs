//! Recording into a [`StallLog`]: the hot loop hands it every clock reading it takes, and it
//! logs the gaps of at least its threshold, without allocating (the log is sized and
//! pre-touched before the run; stalls beyond its capacity are counted, not logged).

use crate::measure::histogram::pretouch;
use crate::model::StallLog;

impl StallLog {
    /// A log for up to `capacity` stalls of at least `threshold_ns`.
    #[must_use]
    pub fn new(threshold_ns: u64, capacity: usize) -> StallLog {
        let mut stalls = Vec::with_capacity(capacity);
        pretouch(&mut stalls);
        StallLog {
            threshold_ns,
            stalls,
            not_logged: 0,
            count: 0,
            total_ns: 0,
            max_ns: 0,
            last: 0,
        }
    }

    /// Called with each clock reading of the loop. No allocation: stalls beyond the capacity
    /// are counted, not logged.
    #[inline]
    pub fn tick(&mut self, now: i64) {
        let gap = now - self.last;
        if self.last != 0 && gap >= self.threshold_ns as i64 {
            self.note(self.last, gap as u64);
        }
        self.last = now;
    }

    #[cold]
    fn note(&mut self, start: i64, len: u64) {
        self.count += 1;
        self.total_ns += len;
        self.max_ns = self.max_ns.max(len);
        if self.stalls.len() < self.stalls.capacity() {
            self.stalls.push((start, len));
        } else {
            self.not_logged += 1;
        }
    }

    /// Logs an interval measured elsewhere (e.g. a run of polls that found a lock held), if it
    /// is at least the threshold.
    #[inline]
    pub fn interval(&mut self, start: i64, len: i64) {
        if len >= self.threshold_ns as i64 {
            self.note(start, len as u64);
        }
    }

    /// Forget the gap up to now (after the loop paused on purpose, e.g. to read counters).
    #[inline]
    pub fn restart(&mut self, now: i64) {
        self.last = now;
    }
}
