//! The recording side of the tap: what a polling thread (or a service's own code) records, and
//! how it reaches the writer without a lock, an allocation or a syscall per message.
//!
//! Each source (one session of a subscription's figure, or one [`FigureRecorder`]) owns a
//! [`Phaser`] of two [`Counts`] allocated when the source is made. A subscription's poll
//! reads the clock once, at the first stamped message, opens the writer section of the
//! session's sources at the first message the handler keeps, records each kept message
//! straight into the open interval, and leaves at the end of the poll: one atomic add and one store per
//! source and poll, not per message. The tap's writer waits for a section to end before it
//! takes an interval, so a handler that runs long delays the writer, never the poll.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;

use super::phaser::Phaser;
use super::stamp::{Latency, Stamp};
use super::writer::{Shared, Tap};
use super::StampClock;
use crate::error::TapError;

/// What one source recorded in one interval.
#[derive(Debug, Clone)]
pub(crate) struct Counts {
    /// Latencies from 0 up, nanoseconds (values above the highest trackable value are recorded
    /// as that value and counted in `saturated`).
    pub(crate) histogram: Histogram<u64>,
    /// Latencies below zero (a receiver's clock behind the sender's), counted, not recorded.
    pub(crate) negative: u64,
    /// Latencies above the histogram's range (recorded at its highest value), plus forwarded
    /// stamps whose age saturated (end to end is then a lower bound).
    pub(crate) saturated: u64,
    /// Messages without a stamp (reserved value 0): not recorded.
    pub(crate) unstamped: u64,
    /// The sum of the recorded latencies, nanoseconds (Prometheus's `_sum`).
    pub(crate) sum_ns: u64,
}

impl Counts {
    pub(crate) fn new(highest_ns: u64) -> Counts {
        Counts {
            histogram: Histogram::new_with_bounds(1, highest_ns, 3).expect("1 <= highest, 3 digits"),
            negative: 0,
            saturated: 0,
            unstamped: 0,
            sum_ns: 0,
        }
    }

    /// Records one latency: no allocation (the histogram does not resize).
    #[inline]
    pub(crate) fn record(&mut self, ns: i64) {
        if ns < 0 {
            self.negative += 1;
            return;
        }
        let high = self.histogram.high();
        let v = (ns as u64).min(high);
        if ns as u64 > high {
            self.saturated += 1;
        }
        self.histogram.saturating_record(v);
        self.sum_ns = self.sum_ns.saturating_add(v);
    }

    /// Stamped messages counted: recorded plus negative.
    pub(crate) fn messages(&self) -> u64 {
        self.histogram.len() + self.negative
    }

    /// Adds `other` (same range) into this one.
    pub(crate) fn add(&mut self, other: &Counts) {
        self.histogram
            .add(&other.histogram)
            .expect("same range, no resize needed");
        self.negative += other.negative;
        self.saturated += other.saturated;
        self.unstamped += other.unstamped;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
    }

    pub(crate) fn reset(&mut self) {
        self.histogram.reset();
        self.negative = 0;
        self.saturated = 0;
        self.unstamped = 0;
        self.sum_ns = 0;
    }
}

/// One source of one figure, as the writer holds it.
pub(crate) struct Source {
    pub(crate) figure: usize,
    /// Its tag in the figure's log: `session-<id>` or `recorder-<n>`.
    pub(crate) tag: String,
    pub(crate) counts: Phaser<Counts>,
    /// The Linux thread id that records into it (0 until it first records).
    pub(crate) tid: AtomicI32,
    /// Set (Release) once nothing records into it any more: the writer takes its last interval
    /// and lets it go.
    pub(crate) retired: AtomicBool,
}

impl Source {
    pub(crate) fn new(figure: usize, tag: String, highest_ns: u64) -> Source {
        Source {
            figure,
            tag,
            counts: Phaser::new(Counts::new(highest_ns), Counts::new(highest_ns)),
            tid: AtomicI32::new(0),
            retired: AtomicBool::new(false),
        }
    }

    /// Nothing records into it from now on (its recorder or session is gone).
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    fn note_thread(&self) {
        if self.tid.load(Ordering::Relaxed) == 0 {
            self.tid.store(crate::thread::current_tid(), Ordering::Relaxed);
        }
    }
}

/// What a subscription records: the figure its hop goes to and, optionally, the figure for end
/// to end (from the origin, through any forwarders: see [`Stamp`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLatency {
    pub(crate) hop: String,
    pub(crate) end_to_end: Option<String>,
}

impl RecordLatency {
    /// Records each stamped message's hop (receive time minus the last sender's stamp) into the
    /// figure `name` (one `.hlog` per figure; letters, digits, `-`, `_`, `.`).
    #[must_use]
    pub fn hop(name: impl Into<String>) -> Self {
        Self {
            hop: name.into(),
            end_to_end: None,
        }
    }

    /// Also records end to end (receive time minus the origin's send stamp) into the figure
    /// `name`. For a send stamp it equals the hop.
    #[must_use]
    pub fn end_to_end(mut self, name: impl Into<String>) -> Self {
        self.end_to_end = Some(name.into());
        self
    }
}

/// One session's sources, on the polling thread.
struct Session {
    id: i32,
    hop: Arc<Source>,
    end_to_end: Option<Arc<Source>>,
}

/// A subscription's recorder, held by its polling thread.
///
/// A poll opens the writer sections of the session its messages come from (both of its
/// sources) at the first message it keeps and leaves them when the poll ends or a message of
/// another session comes: one atomic add and one store per source and poll, and each message is recorded
/// straight into the open interval. The plain polls close them on unwinding too (`EndPoll`).
pub(crate) struct SubscriberTap {
    shared: Arc<Shared>,
    what: RecordLatency,
    stream_id: i32,
    clock: StampClock,
    sessions: Vec<Session>,
    /// The receive time of this poll, 0 until a stamped message came.
    now: i64,
    /// The last message handed over: its session and latency (none: unstamped), until kept.
    last: Option<(usize, Option<Latency>)>,
    /// The session whose sections are open, and the open intervals (null: none, or no end to
    /// end figure). Only set inside a poll.
    open: Option<usize>,
    hop: *mut Counts,
    end_to_end: *mut Counts,
}

// SAFETY: the raw pointers point into the open sections of this recorder's own sources and are
// set only inside one poll on the polling thread (`end_poll` closes them before the poll
// returns, also on unwinding); between polls the recorder holds none, so moving it to another
// thread moves plain owned data.
unsafe impl Send for SubscriberTap {}

impl SubscriberTap {
    pub(crate) fn new(tap: &Tap, what: RecordLatency, stream_id: i32) -> Result<SubscriberTap, TapError> {
        let shared = tap.shared();
        shared.figure(&what.hop, Some(stream_id))?;
        if let Some(e2e) = &what.end_to_end {
            if *e2e == what.hop {
                return Err(TapError::SameFigure { name: e2e.clone() });
            }
            shared.figure(e2e, Some(stream_id))?;
        }
        Ok(SubscriberTap {
            clock: shared.clock,
            shared,
            what,
            stream_id,
            sessions: Vec::new(),
            now: 0,
            last: None,
            open: None,
            hop: std::ptr::null_mut(),
            end_to_end: std::ptr::null_mut(),
        })
    }

    /// The session's index, making its sources when it is new (cold: an image arrived).
    #[inline]
    fn session(&mut self, id: i32) -> usize {
        match self.open.filter(|&i| self.sessions[i].id == id) {
            Some(i) => i,
            None => match self.sessions.iter().position(|s| s.id == id) {
                Some(i) => i,
                None => self.add_session(id),
            },
        }
    }

    #[cold]
    fn add_session(&mut self, id: i32) -> usize {
        let tag = format!("session-{id}");
        let source = |name: &str| self.shared.source(name, Some(self.stream_id), tag.clone());
        let hop = source(&self.what.hop);
        let end_to_end = self.what.end_to_end.as_deref().map(source);
        hop.note_thread();
        if let Some(e2e) = &end_to_end {
            e2e.note_thread();
        }
        self.sessions.push(Session { id, hop, end_to_end });
        self.sessions.len() - 1
    }

    /// A message handed over: its latency, kept until [`keep`](Self::keep) records it.
    /// Returns the receive time (the poll's one clock read) when it carries a stamp.
    #[inline]
    pub(crate) fn on_message(&mut self, session_id: i32, reserved: i64) -> Option<i64> {
        let session = self.session(session_id);
        let latency = match Stamp::from_reserved(reserved) {
            Stamp::Absent => None,
            stamp => {
                if self.now == 0 {
                    self.now = self.clock.now_ns();
                }
                match stamp.latency(self.now) {
                    // Perhaps sent after this poll read the clock (the publisher appended
                    // meanwhile): read it again rather than record a negative latency that is
                    // not one. Negative after that, it is real (a receiver's clock behind the
                    // sender's) and counted as such; such a message costs one more clock read.
                    Some(l) if l.hop_ns < 0 => {
                        self.now = self.clock.now_ns();
                        stamp.latency(self.now)
                    }
                    l => l,
                }
            }
        };
        self.last = Some((session, latency));
        latency.map(|_| self.now)
    }

    /// Records the last message handed over (the handler kept it).
    #[inline]
    pub(crate) fn keep(&mut self) {
        let Some((session, latency)) = self.last.take() else {
            return;
        };
        if self.open != Some(session) {
            self.open_session(session);
        }
        // SAFETY: `open_session` opened this session's sections, whose intervals these point
        // to, and only this thread writes them until `end_poll` leaves.
        let hop = unsafe { &mut *self.hop };
        match latency {
            None => hop.unstamped += 1,
            Some(l) => {
                hop.record(l.hop_ns);
                // SAFETY: as above; null when the subscription records no end to end.
                if let Some(e2e) = unsafe { self.end_to_end.as_mut() } {
                    let counted = e2e.saturated + e2e.negative;
                    e2e.record(l.end_to_end_ns);
                    // A saturated age makes the value a lower bound: saturated, once.
                    if l.age_saturated && e2e.saturated + e2e.negative == counted {
                        e2e.saturated += 1;
                    }
                }
            }
        }
    }

    /// Leaves the open session's sections and opens `session`'s.
    #[cold]
    fn open_session(&mut self, session: usize) {
        self.close();
        let s = &self.sessions[session];
        // SAFETY: this polling thread is the only writer of its sessions' sources; `close`
        // (at the end of the poll, or here) leaves each section it opens.
        unsafe {
            self.hop = s.hop.counts.begin();
            self.end_to_end = s.end_to_end.as_ref().map_or(std::ptr::null_mut(), |e| e.counts.begin());
        }
        self.open = Some(session);
    }

    fn close(&mut self) {
        let Some(i) = self.open.take() else { return };
        let s = &self.sessions[i];
        // SAFETY: `open_session` opened these two sections; they are left once.
        unsafe {
            s.hop.counts.leave();
            if let Some(e) = &s.end_to_end {
                e.counts.leave();
            }
        }
        self.hop = std::ptr::null_mut();
        self.end_to_end = std::ptr::null_mut();
    }

    /// The end of a poll: leaves the open sections and forgets its clock read.
    #[inline]
    pub(crate) fn end_poll(&mut self) {
        if self.open.is_some() {
            self.close();
        }
        self.last = None;
        self.now = 0;
    }

    /// The images of `session_id` are gone: its sources retire (the writer takes their last
    /// interval and frees them); a publisher that comes back with that session gets new ones.
    /// Called between polls only, when no section is open.
    pub(crate) fn session_gone(&mut self, session_id: i32) {
        debug_assert!(self.open.is_none(), "between polls");
        if let Some(i) = self.sessions.iter().position(|s| s.id == session_id) {
            let s = self.sessions.swap_remove(i);
            s.hop.retire();
            if let Some(e) = &s.end_to_end {
                e.retire();
            }
        }
    }
}

impl Drop for SubscriberTap {
    fn drop(&mut self) {
        self.end_poll();
        for s in &self.sessions {
            s.hop.retire();
            if let Some(e) = &s.end_to_end {
                e.retire();
            }
        }
    }
}

/// A figure a service records itself, e.g. the time a message spent inside it (receive to
/// publish). One per recording thread; [`record`](Self::record) takes no lock, allocates
/// nothing and makes no syscall (one uncontended atomic add and one store per call).
pub struct FigureRecorder {
    source: Arc<Source>,
    _shared: Arc<Shared>,
}

impl std::fmt::Debug for FigureRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FigureRecorder").field("tag", &self.source.tag).finish()
    }
}

impl Drop for FigureRecorder {
    fn drop(&mut self) {
        self.source.retire();
    }
}

impl FigureRecorder {
    pub(crate) fn new(tap: &Tap, name: &str) -> Result<FigureRecorder, TapError> {
        let shared = tap.shared();
        shared.figure(name, None)?;
        let n = shared.next_recorder();
        let source = shared.source(name, None, format!("recorder-{n}"));
        Ok(FigureRecorder {
            source,
            _shared: shared,
        })
    }

    /// Records one latency, nanoseconds (a negative one is counted, not recorded).
    #[inline]
    pub fn record(&mut self, ns: i64) {
        self.source.note_thread();
        // SAFETY: `&mut self` makes the thread that holds this recorder the source's only
        // writer (the recorder is not `Clone`; sharing `&FigureRecorder` does not allow
        // recording).
        unsafe { self.source.counts.enter(|c| c.record(ns)) };
    }
}
