//! The recording side of the tap: what a polling thread (or a service's own code) records, and
//! how it reaches the writer without a lock, an allocation or a syscall per message.
//!
//! Each source (one session of a subscription's figure, or one [`FigureRecorder`]) owns two
//! interval [`Tally`]s allocated when the source is made.
//! - A subscription's poll reads the clock once, at the first stamped message, and records
//!   each message the handler keeps straight into its session's active interval with plain
//!   writes. At the start of the poll it loads one word to see whether the tap's writer asked
//!   for the intervals, and at its end switches them when it did ([`Handover`]): per poll,
//!   one relaxed load and no atomic read-modify-write. A handler that runs long delays the
//!   handover, never the poll.
//! - What does not depend on the clock (that word, the session's active intervals) is read
//!   before the poll's clock read, alongside the read of the message: the vDSO orders its
//!   TSC read after the instructions before it, so loads left after a poll's clock read
//!   lengthen what the next poll's clock read waits for. Only the record itself (the latency,
//!   its counts index, the increment) follows the clock read.
//! - A [`FigureRecorder`] records inside a writer section of its [`Phaser`] (one atomic add
//!   and one store per value): it records when the service has something to record, so it
//!   cannot be asked to hand over.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;

use super::handover::{Handover, Slots};
use super::phaser::Phaser;
use super::slowest::Slow;
use super::stamp::Latency;
use super::tally::Tally;
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
    /// The interval's slowest values with their times (one source's; not added by [`add`](Self::add)).
    pub(crate) slowest: Vec<Slow>,
}

impl Counts {
    pub(crate) fn new(highest_ns: u64) -> Counts {
        Counts {
            histogram: Histogram::new_with_bounds(1, highest_ns, 3).expect("1 <= highest, 3 digits"),
            negative: 0,
            saturated: 0,
            unstamped: 0,
            sum_ns: 0,
            slowest: Vec::new(),
        }
    }

    /// Records one latency (the reference a [`Tally`] is checked against).
    #[cfg(test)]
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
        self.slowest.clear();
    }
}

/// How a source's two intervals pass from the recording thread to the writer.
pub(crate) enum Intervals {
    /// A [`FigureRecorder`]'s: a writer section per value.
    Phased(Phaser<Tally>),
    /// A subscription's: switched by its polling thread when the writer asks.
    HandedOver(Slots<Tally>, Arc<Handover>),
}

/// One source of one figure, as the writer holds it.
pub(crate) struct Source {
    pub(crate) figure: usize,
    /// Its tag in the figure's log: `session-<id>` or `recorder-<n>`.
    pub(crate) tag: String,
    pub(crate) intervals: Intervals,
    /// The Linux thread id that records into it (0 until it first records).
    pub(crate) tid: AtomicI32,
    /// Set (Release) once nothing records into it any more: the writer takes its last interval
    /// and lets it go.
    pub(crate) retired: AtomicBool,
}

impl Source {
    /// A source whose intervals the writer takes through `handover`, or in writer sections
    /// when it has none.
    pub(crate) fn new(
        figure: usize,
        tag: String,
        (highest_ns, slowest): (u64, usize),
        handover: Option<Arc<Handover>>,
    ) -> Source {
        let (a, b) = (Tally::new(highest_ns, slowest), Tally::new(highest_ns, slowest));
        Source {
            figure,
            tag,
            intervals: match handover {
                Some(h) => Intervals::HandedOver(Slots::new(a, b), h),
                None => Intervals::Phased(Phaser::new(a, b)),
            },
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

    /// `tid` records into it now (a subscription polled from another thread than before).
    fn moved_to(&self, tid: i32) {
        if self.tid.load(Ordering::Relaxed) != tid {
            self.tid.store(tid, Ordering::Relaxed);
        }
    }
}

/// What a subscription records: the figure its hop goes to and, optionally, the figure for end
/// to end (from the origin, through any forwarders: see [`Stamp`](super::Stamp)).
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

/// One session's sources, on the polling thread, and their active intervals.
struct Session {
    id: i32,
    hop: Arc<Source>,
    end_to_end: Option<Arc<Source>>,
    /// The active interval of `hop`, and of `end_to_end` (null: none).
    hop_now: *mut Tally,
    end_to_end_now: *mut Tally,
}

impl Session {
    /// Points at each source's slot `active`.
    fn activate(&mut self, active: usize) {
        self.hop_now = Self::slot(&self.hop, active);
        self.end_to_end_now = self
            .end_to_end
            .as_deref()
            .map_or(std::ptr::null_mut(), |s| Self::slot(s, active));
    }

    fn slot(source: &Source, active: usize) -> *mut Tally {
        match &source.intervals {
            // SAFETY: the polling thread (this recorder's holder) writes only its active slot
            // and switches only when the writer asked (`SubscriberTap::end_poll`).
            Intervals::HandedOver(slots, _) => unsafe { slots.slot(active) },
            Intervals::Phased(_) => unreachable!("a subscription's sources are handed over"),
        }
    }
}

/// A message a poll handed over, measured ([`SubscriberTap::measure`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    /// Its session's active intervals (hop, end to end or null), read before the clock read
    /// (which waits for them alongside the read of the message), so that after it the record
    /// starts from the latency rather than from a chain of loads that the next poll's clock
    /// read would wait for.
    hop: *mut Tally,
    end_to_end: *mut Tally,
    /// Its latency and receive time (the poll's clock read); `None`: it carried no stamp.
    stamped: Option<(Latency, i64)>,
}

impl Measured {
    /// The receive time, when it carried a stamp.
    #[inline(always)]
    pub(crate) fn received(&self) -> Option<i64> {
        self.stamped.map(|(_, at)| at)
    }
}

/// A subscription's recorder, held by its polling thread.
///
/// A poll records each message it keeps straight into its session's active intervals; at
/// its end it switches every session's intervals when the writer asked ([`Handover`]).
pub(crate) struct SubscriberTap {
    shared: Arc<Shared>,
    what: RecordLatency,
    stream_id: i32,
    clock: StampClock,
    sessions: Vec<Session>,
    /// The swaps asked for and made; the active slot is `answered & 1`.
    handover: Arc<Handover>,
    answered: u64,
    /// The receive time of this poll, 0 until a stamped message came.
    now: i64,
    /// The session of the last message measured, with its active intervals: a poll's
    /// messages mostly share one, which then costs one compare to find.
    last: LastSession,
}

/// [`SubscriberTap::last`]: a session's id and its active intervals (hop, end to end or null),
/// valid until the next handover or the session goes.
#[derive(Debug, Clone, Copy)]
struct LastSession {
    /// The session's id, or [`LastSession::NONE`] (no `i32` equals it).
    id: i64,
    hop: *mut Tally,
    end_to_end: *mut Tally,
}

impl LastSession {
    const NONE: LastSession = LastSession {
        id: i64::MIN,
        hop: std::ptr::null_mut(),
        end_to_end: std::ptr::null_mut(),
    };
}

// SAFETY: the raw pointers of the sessions and of `last` point into the active slots of sources
// the sessions hold (`Arc`; `last` is reset when its session goes), which only the thread
// holding this recorder writes (`&mut self`); moving the recorder to another thread between
// polls moves that role with it.
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
            handover: Arc::new(Handover::default()),
            answered: 0,
            now: 0,
            last: LastSession::NONE,
        })
    }

    /// The active intervals of session `id` (hop, end to end or null): one compare when it is
    /// the last message's session.
    #[inline(always)]
    fn intervals(&mut self, id: i32) -> (*mut Tally, *mut Tally) {
        if i64::from(id) != self.last.id {
            self.find_session(id);
        }
        (self.last.hop, self.last.end_to_end)
    }

    /// Makes session `id` the last one, making its sources when it is new (an image arrived).
    #[inline(never)]
    fn find_session(&mut self, id: i32) {
        let i = match self.sessions.iter().position(|s| s.id == id) {
            Some(i) => i,
            None => self.add_session(id),
        };
        let s = &self.sessions[i];
        self.last = LastSession {
            id: i64::from(id),
            hop: s.hop_now,
            end_to_end: s.end_to_end_now,
        };
    }

    #[cold]
    fn add_session(&mut self, id: i32) -> usize {
        let tag = format!("session-{id}");
        let handover = &self.handover;
        let source = |name: &str| {
            self.shared
                .source(name, Some(self.stream_id), tag.clone(), Some(handover.clone()))
        };
        let hop = source(&self.what.hop);
        let end_to_end = self.what.end_to_end.as_deref().map(source);
        hop.note_thread();
        if let Some(e2e) = &end_to_end {
            e2e.note_thread();
        }
        let mut session = Session {
            id,
            hop,
            end_to_end,
            hop_now: std::ptr::null_mut(),
            end_to_end_now: std::ptr::null_mut(),
        };
        session.activate((self.answered & 1) as usize);
        self.sessions.push(session);
        self.sessions.len() - 1
    }

    /// A message handed over, measured: [`keep`](Self::keep) records it once the handler
    /// kept it.
    #[inline(always)]
    pub(crate) fn measure(&mut self, session_id: i32, reserved: i64) -> Measured {
        let (hop, end_to_end) = self.intervals(session_id);
        if reserved == 0 {
            return Measured {
                hop,
                end_to_end,
                stamped: None,
            };
        }
        if self.now == 0 {
            self.now = self.clock.now_ns();
        }
        let mut latency = Latency::of_stamp(reserved, self.now);
        if latency.hop_ns < 0 {
            // Perhaps sent after this poll read the clock (the publisher appended meanwhile):
            // read it again rather than record a negative latency that is not one. Negative
            // after that, it is real (a receiver's clock behind the sender's) and counted as
            // such; such a message costs one more clock read.
            self.now = self.clock.now_ns();
            latency = Latency::of_stamp(reserved, self.now);
        }
        Measured {
            hop,
            end_to_end,
            stamped: Some((latency, self.now)),
        }
    }

    /// Records a measured message (the handler kept it).
    #[inline(always)]
    pub(crate) fn keep(&mut self, m: Measured) {
        // SAFETY: the session's active intervals, which only this thread writes (`Session`);
        // they stay active until the poll ends (`end_poll` switches them), and `m` is of this
        // poll.
        let hop = unsafe { &mut *m.hop };
        let Some((l, now)) = m.stamped else {
            hop.unstamped += 1;
            return;
        };
        hop.record(l.hop_ns, || now);
        // SAFETY: as above; null when the subscription records no end to end.
        if let Some(e2e) = unsafe { m.end_to_end.as_mut() } {
            let counted = e2e.saturated + e2e.negative;
            e2e.record(l.end_to_end_ns, || now);
            // A saturated age makes the value a lower bound: saturated, once.
            if l.age_saturated && e2e.saturated + e2e.negative == counted {
                e2e.saturated += 1;
            }
        }
    }

    /// At the start of a poll: the handover the tap's writer asked for, if it asked since the
    /// last one (one relaxed load and a compare, before the poll's clock read rather than
    /// after it), for [`end_poll`](Self::end_poll).
    #[inline(always)]
    pub(crate) fn asked(&self) -> Option<u64> {
        self.handover.asked_since(self.answered)
    }

    /// The end of a poll (also an empty one) whose start found `asked`: forgets its clock
    /// read, and hands the intervals over when the writer had asked.
    #[inline]
    pub(crate) fn end_poll(&mut self, asked: Option<u64>) {
        self.now = 0;
        let Some(asked) = asked else { return };
        let sessions = &mut self.sessions;
        let last = &mut self.last;
        self.handover.answer(asked, &mut self.answered, |slot| {
            // The last session's intervals were the ones handed over.
            *last = LastSession::NONE;
            // Once an interval, the thread that polls now is the sources' recording thread.
            let tid = polling_tid();
            for s in sessions.iter_mut() {
                s.activate(slot);
                s.hop.moved_to(tid);
                if let Some(e) = &s.end_to_end {
                    e.moved_to(tid);
                }
            }
        });
    }

    /// The images of `session_id` are gone: its sources retire (the writer takes their last
    /// interval and frees them); a publisher that comes back with that session gets new ones.
    /// Called between polls only.
    pub(crate) fn session_gone(&mut self, session_id: i32) {
        self.last = LastSession::NONE;
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
        for s in &self.sessions {
            s.hop.retire();
            if let Some(e) = &s.end_to_end {
                e.retire();
            }
        }
    }
}

/// The calling thread's id, read from the kernel once per thread.
fn polling_tid() -> i32 {
    thread_local! {
        static TID: i32 = crate::thread::current_tid();
    }
    TID.with(|t| *t)
}

/// A figure a service records itself, e.g. the time a message spent inside it (receive to
/// publish). One per recording thread; [`record`](Self::record) takes no lock, allocates
/// nothing and makes no syscall (one uncontended atomic add, one store and a thread-local read
/// per call: it records whenever the service has a value, so the writer cannot wait for it to
/// hand over).
pub struct FigureRecorder {
    source: Arc<Source>,
    clock: StampClock,
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
        let source = shared.source(name, None, format!("recorder-{n}"), None);
        Ok(FigureRecorder {
            source,
            clock: shared.clock,
            _shared: shared,
        })
    }

    /// Records one latency, nanoseconds (a negative one is counted, not recorded). A value
    /// that may be among the interval's slowest is kept with the time it was recorded (one
    /// clock read, for those only). A caller that has read the clock already (the time that
    /// ended the span it measured) saves that read with [`record_at`](Self::record_at).
    #[inline]
    pub fn record(&mut self, ns: i64) {
        let clock = self.clock;
        self.record_with(ns, || clock.now_ns());
    }

    /// Records one latency, nanoseconds, as [`record`](Self::record) does, and ties it, if it
    /// may be among the interval's slowest, to `at_ns` (a time on the tap's
    /// [clock](super::Tap::clock), such as the clock read that ended the span): no
    /// clock read. The slowest are what `latency-probe attach` lines up with what the thread
    /// went through, so `at_ns` should be when the value was measured.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("record-at-{}", std::process::id()));
    /// use messaging::tap::Tap;
    /// let tap = Tap::builder(&dir).start()?;
    /// let mut inside = tap.figure("inside-service")?;
    /// let clock = tap.clock();
    /// let received = clock.now_ns();
    /// // ... the service handles the message ...
    /// let now = clock.now_ns();
    /// inside.record_at(now - received, now);
    /// # drop(inside); tap.stop()?; std::fs::remove_dir_all(&dir)?;
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn record_at(&mut self, ns: i64, at_ns: i64) {
        self.record_with(ns, || at_ns);
    }

    #[inline(always)]
    fn record_with(&mut self, ns: i64, at: impl FnOnce() -> i64) {
        // The thread that records now is the source's (a recorder handed to another thread is
        // listed there): a thread-local read and a compare.
        self.source.moved_to(polling_tid());
        match &self.source.intervals {
            // SAFETY: `&mut self` makes the thread that holds this recorder the source's only
            // writer (the recorder is not `Clone`; sharing `&FigureRecorder` does not allow
            // recording).
            Intervals::Phased(p) => unsafe { p.enter(|t| t.record(ns, at)) },
            Intervals::HandedOver(..) => unreachable!("a recorder's source is phased"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What each slot of session `id`'s hop source holds, emptied.
    fn take_counts(rec: &SubscriberTap, id: i32) -> [u64; 2] {
        let s = rec.sessions.iter().find(|s| s.id == id).expect("the session is there");
        let Intervals::HandedOver(slots, _) = &s.hop.intervals else {
            unreachable!("a subscription's sources are handed over")
        };
        [0, 1].map(|i| {
            let mut c = Counts::new(rec.shared.highest_ns);
            // SAFETY: this test is the only thread: no poll writes while it reads.
            unsafe { (*slots.slot(i)).drain_into(&mut c) };
            c.histogram.len()
        })
    }

    /// One poll that keeps one stamped message of session `id`.
    fn poll_one(rec: &mut SubscriberTap, id: i32) {
        let asked = rec.asked();
        let m = rec.measure(id, rec.clock.now_ns() - 1_000);
        rec.keep(m);
        rec.end_poll(asked);
    }

    /// A message goes to its session's active interval: also when it is the last message's
    /// session and the poll before it handed the intervals over, and for a session that went
    /// and came back (new sources).
    #[test]
    fn the_last_session_follows_the_handover_and_the_sessions() {
        let dir = std::env::temp_dir().join(format!("tap-last-{}", std::process::id()));
        let tap = Tap::builder(&dir).interval(Duration::from_secs(3600)).start().unwrap();
        let mut rec = SubscriberTap::new(&tap, RecordLatency::hop("h"), 1).unwrap();
        poll_one(&mut rec, 7);
        poll_one(&mut rec, 8);
        assert!(rec.handover.ask_after(0), "the writer asks, as each interval");
        poll_one(&mut rec, 8); // into slot 0, then switches to slot 1
        poll_one(&mut rec, 8);
        poll_one(&mut rec, 7);
        assert_eq!(take_counts(&rec, 7), [1, 1]);
        assert_eq!(take_counts(&rec, 8), [2, 1]);
        poll_one(&mut rec, 8); // the last session, when it goes
        rec.session_gone(8);
        poll_one(&mut rec, 8);
        assert_eq!(take_counts(&rec, 8), [0, 1], "new sources, in the active slot");
        drop(rec);
        tap.stop().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
