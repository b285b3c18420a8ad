//! A subscription's intervals, handed from its polling thread to the tap's writer when the
//! writer asks: the poll pays one relaxed load per poll and records with plain writes; the
//! writer, not the poll, pays for the handover.
//!
//! Each source of a subscription's recorder has two slots. One [`Handover`] per recorder
//! counts the swaps the writer has `asked` for (only the writer stores it) and the swaps the
//! polling thread has made, `answered` (only the poller stores it). The active slot of every
//! source of the recorder is `answered & 1`.
//! - **Poller**: at the start of each poll it loads `asked` (Relaxed). When it differs from
//!   the swaps it made (the writer asked), at the end of the poll it issues an Acquire fence
//!   (the writer's emptying of the slot it now takes happened before), switches its sources
//!   to the other slot, and stores `answered` (Release: its writes to the slot it left,
//!   that poll's included, happen before the writer reads them).
//! - **Writer**: each interval it first takes what an answer since its last take left in the
//!   inactive slots (`(answered & 1) ^ 1`, `answered` read once per recorder and pass), then
//!   asks (stores `asked + 1`, Release) only if the `answered` that take saw answers its last
//!   ask (an answer that came after the take waits for the next take), waits a little for
//!   the answer (Acquire), and takes the inactive slots again. It never asks with a slot
//!   untaken, so the poller never switches back onto counts the writer has not taken (the
//!   model checker found that reading `answered` again to decide the ask does). A poller that does not answer within the wait (a thread that stopped
//!   polling) keeps its counts; they are taken once it answers, or when its sources retire.
//! - **Retired**: a source that nothing records into any more (its recorder dropped, its
//!   session gone) is marked with a Release store after its last write; the writer then
//!   takes both slots.
//!
//! The model checker checks the protocol (`make loom`, `tap::handover::model`).

#[cfg(not(messaging_loom))]
use std::cell::UnsafeCell;
#[cfg(not(messaging_loom))]
use std::sync::atomic::{fence, AtomicU64, Ordering};

#[cfg(messaging_loom)]
use loom::cell::UnsafeCell;
#[cfg(messaging_loom)]
use loom::sync::atomic::{fence, AtomicU64, Ordering};

/// The swaps asked for and made, for one polling thread's recorder.
#[derive(Debug, Default)]
pub(crate) struct Handover {
    asked: AtomicU64,
    answered: AtomicU64,
}

impl Handover {
    /// Poller, at the start of each poll, `answered` being the swaps it made: the swaps asked
    /// for when the writer asked for one more (one relaxed load and a compare when it did not),
    /// for [`answer`](Self::answer) at the end of the poll. Loaded and compared at the start,
    /// they are done by the time the poll reads the clock; the messages that poll records go
    /// to the slot that was active when it began.
    #[inline(always)]
    pub(crate) fn asked_since(&self, answered: u64) -> Option<u64> {
        let asked = self.asked.load(Ordering::Relaxed);
        (asked != answered).then_some(asked)
    }

    /// Poller, at the end of a poll that began with [`asked_since`](Self::asked_since) giving
    /// `asked`: runs `switch` with the slot to write from now on, after an Acquire fence (the
    /// writer's emptying of that slot happened before), and then answers (Release: its writes
    /// to the other slot happen before the writer takes them). Out of the poll's way (once an
    /// interval).
    #[cold]
    #[inline(never)]
    pub(crate) fn answer(&self, asked: u64, answered: &mut u64, switch: impl FnOnce(usize)) {
        fence(Ordering::Acquire);
        *answered = asked;
        switch((asked & 1) as usize);
        self.answered.store(asked, Ordering::Release);
    }

    /// Writer: asks for a swap, if `answered` (what its last take saw, [`seen`](Self::seen))
    /// answers its last ask: the inactive slots it took are the ones the poller switches to.
    /// Whether it asked.
    pub(crate) fn ask_after(&self, answered: u64) -> bool {
        let asked = self.asked.load(Ordering::Relaxed); // only the writer stores it
        if answered != asked {
            return false;
        }
        self.asked.store(asked + 1, Ordering::Release);
        true
    }

    /// Writer: the inactive slot of every source of this recorder when the last ask is
    /// answered (the writer may take it until it asks again); `None` while unanswered.
    pub(crate) fn inactive(&self) -> Option<usize> {
        self.seen().0
    }

    /// Writer: [`inactive`](Self::inactive), and the answers it saw (one Acquire load): take
    /// by the first, then ask with the second ([`ask_after`](Self::ask_after)).
    pub(crate) fn seen(&self) -> (Option<usize>, u64) {
        let answered = self.answered.load(Ordering::Acquire);
        let inactive = (answered == self.asked.load(Ordering::Relaxed)).then_some((answered & 1) as usize ^ 1);
        (inactive, answered)
    }
}

/// Writer: asks each recorder of `handovers` for its intervals, each with the answers its
/// take saw ([`Handover::ask_after`]: those whose last ask was answered, and taken), and waits
/// up to `wait` for those asks to be answered (for every one of `handovers`, `all`), sleeping
/// between looks. How long it waited.
pub(crate) fn ask_all(handovers: &[(&Handover, u64)], wait: std::time::Duration, all: bool) -> std::time::Duration {
    let asked: Vec<&Handover> = handovers
        .iter()
        .filter(|(h, seen)| h.ask_after(*seen))
        .map(|(h, _)| *h)
        .collect();
    let everyone: Vec<&Handover> = handovers.iter().map(|(h, _)| *h).collect();
    let waiting = if all { &everyone[..] } else { &asked[..] };
    let began = std::time::Instant::now();
    while waiting.iter().any(|h| h.inactive().is_none()) && began.elapsed() < wait {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
    began.elapsed()
}

/// The two slots of one source of a subscription's recorder.
pub(crate) struct Slots<T> {
    slots: [UnsafeCell<T>; 2],
}

// SAFETY: a slot is touched by one thread at a time: the poller writes only the active slot
// (`answered & 1`) and switches only when asked; the writer takes only the inactive slot
// after seeing the answer and before asking again, or both once the source retired (module
// docs); `T: Send` moves between the two threads.
unsafe impl<T: Send> Sync for Slots<T> {}
// SAFETY: as above; the slots are owned values.
unsafe impl<T: Send> Send for Slots<T> {}

impl<T> Slots<T> {
    pub(crate) fn new(a: T, b: T) -> Self {
        Self {
            slots: [UnsafeCell::new(a), UnsafeCell::new(b)],
        }
    }

    /// Poller: slot `i`, to write while it is active.
    ///
    /// # Safety
    /// Only the polling thread of the recorder calls it, with `i` its active slot, and writes
    /// through the pointer only until it switches or retires the source.
    #[inline]
    pub(crate) unsafe fn slot(&self, i: usize) -> *mut T {
        #[cfg(not(messaging_loom))]
        let p = self.slots[i].get();
        // Under the model the pointer escapes loom's tracking; the model checks `write`,
        // which takes the same steps with the access inside them.
        #[cfg(messaging_loom)]
        let p = self.slots[i].with_mut(|p| p);
        p
    }

    /// Poller, under the model: runs `write` on active slot `i` (the steps of `slot`).
    ///
    /// # Safety
    /// As [`slot`](Self::slot).
    #[cfg(messaging_loom)]
    pub(crate) unsafe fn write(&self, i: usize, write: impl FnOnce(&mut T)) {
        // SAFETY: the caller's contract.
        self.slots[i].with_mut(|p| write(unsafe { &mut *p }));
    }

    /// Writer: runs `take` on what the source holds that it may take now: both slots when the
    /// source `retired` (a Release store after its last write, loaded with Acquire), else its
    /// `inactive` slot when its recorder's last ask is answered ([`Handover::inactive`], read
    /// once for all the recorder's sources in one pass).
    ///
    /// # Safety
    /// Only the writer calls it, with `inactive` read from this source's [`Handover`] since the
    /// writer's last [`Handover::ask_after`].
    pub(crate) unsafe fn take(&self, inactive: Option<usize>, retired: bool, mut take: impl FnMut(&mut T)) {
        let mut one = |i: usize| {
            #[cfg(not(messaging_loom))]
            // SAFETY: slot `i` is not the poller's (the module docs, the caller's contract).
            take(unsafe { &mut *self.slots[i].get() });
            #[cfg(messaging_loom)]
            // SAFETY: as above.
            self.slots[i].with_mut(|p| take(unsafe { &mut *p }));
        };
        if retired {
            one(0);
            one(1);
        } else if let Some(i) = inactive {
            one(i);
        }
    }
}

/// The writer's side of one interval over sources sharing `h`, as the tap's writer runs it
/// (the tests and the model use it): take what a late answer left, ask, look `looks` times
/// for the answer, take again. `take` gets each source's slot(s) to empty. Returns the answers
/// its last pass saw: everything the poller wrote before that answer has been taken.
#[cfg(test)]
fn writer_interval<T>(h: &Handover, sources: &[&Slots<T>], looks: usize, mut take: impl FnMut(&mut T)) -> u64 {
    let mut pass = || {
        let (inactive, answered) = h.seen();
        for s in sources {
            // SAFETY: the only writer-side caller; `inactive` read since its last ask.
            unsafe { s.take(inactive, false, &mut take) };
        }
        answered
    };
    let seen = pass();
    h.ask_after(seen);
    for _ in 0..looks {
        if h.inactive().is_some() {
            break;
        }
        #[cfg(not(messaging_loom))]
        std::thread::yield_now();
        #[cfg(messaging_loom)]
        loom::thread::yield_now();
    }
    pass()
}

#[cfg(all(test, not(messaging_loom)))]
mod tests {
    use super::{writer_interval, Handover, Slots};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A poller adds 1 per message to each of two sources and answers when asked; the writer
    /// runs intervals as the tap's does, then takes the retired sources' two slots: nothing
    /// lost, nothing twice.
    #[test]
    fn every_write_is_taken_once() {
        let h = Arc::new(Handover::default());
        let s = Arc::new([Slots::new(0_u64, 0_u64), Slots::new(0_u64, 0_u64)]);
        let retired = Arc::new(AtomicBool::new(false));
        let n = if cfg!(miri) { 300 } else { 200_000 };
        let poller = std::thread::spawn({
            let (h, s, retired) = (h.clone(), s.clone(), retired.clone());
            move || {
                let (mut answered, mut active) = (0, 0);
                for _ in 0..n {
                    let asked = h.asked_since(answered);
                    for source in s.iter() {
                        // SAFETY: this thread is the poller; `active` is its active slot.
                        unsafe { *source.slot(active) += 1 };
                    }
                    if let Some(asked) = asked {
                        h.answer(asked, &mut answered, |slot| active = slot);
                    }
                }
                retired.store(true, Ordering::Release);
            }
        });
        let mut sum = 0;
        let mut intervals = 0;
        while !retired.load(Ordering::Acquire) {
            writer_interval(&h, &[&s[0], &s[1]], 3, |c| sum += std::mem::take(c));
            intervals += 1;
        }
        poller.join().unwrap();
        for source in s.iter() {
            // SAFETY: as above; the sources retired.
            unsafe { source.take(None, true, |c| sum += std::mem::take(c)) };
        }
        assert_eq!(sum, 2 * n, "after {intervals} intervals");
    }

    /// An ask the poller has not answered gives the writer nothing, and the writer does not
    /// ask again until it is answered; the answer names the slot to take.
    #[test]
    fn an_unanswered_ask_takes_nothing_and_is_not_repeated() {
        let h = Handover::default();
        let s = Slots::new(5_u64, 7_u64);
        assert!(h.ask_after(h.seen().1));
        assert_eq!(h.inactive(), None, "unanswered: nothing to take");
        assert!(!h.ask_after(h.seen().1), "one ask at a time");
        let mut answered = 0;
        let mut switched = None;
        let asked = h.asked_since(answered).expect("asked");
        h.answer(asked, &mut answered, |slot| switched = Some(slot));
        assert_eq!((answered, switched), (1, Some(1)));
        assert_eq!(h.asked_since(answered), None, "not asked again");
        let mut seen = Vec::new();
        // SAFETY: one thread plays both sides, in the protocol's order.
        unsafe { s.take(h.inactive(), false, |c| seen.push(*c)) };
        assert_eq!(seen, [5], "answered 1: slot 1 is active, slot 0 is taken");
    }
}

#[cfg(all(test, messaging_loom))]
mod model {
    use super::{writer_interval, Handover, Slots};
    use loom::sync::atomic::{AtomicU64, Ordering};
    use loom::sync::Arc;

    /// Every interleaving of a poller that writes two sources twice (reading the ask before
    /// each round of writes and answering it after them, as a recording poll does) and never
    /// retires, against a writer running two intervals as the tap's writer does: after its
    /// last pass the writer has taken exactly what was written before the last answer it saw
    /// (no answer strands counts in a slot it does not take again), and no slot is touched by
    /// both threads at once (loom's cells fail the model on a race).
    #[test]
    fn the_writer_takes_all_written_before_the_answer_it_saw() {
        loom::model(|| {
            let h = Arc::new(Handover::default());
            let s = Arc::new([Slots::new(0_u64, 0_u64), Slots::new(0_u64, 0_u64)]);
            // Writes made before answer k (k = 1, 2), stored before the answer.
            let before: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
            let poller = loom::thread::spawn({
                let (h, s, before) = (h.clone(), s.clone(), before.clone());
                move || {
                    let (mut answered, mut active, mut written) = (0, 0, 0);
                    for _ in 0..2 {
                        // A poll: the ask read at its start, answered at its end.
                        let asked = h.asked_since(answered);
                        for source in s.iter() {
                            // SAFETY: the poller, on its active slot.
                            unsafe { source.write(active, |n| *n += 1) };
                            written += 1;
                        }
                        let k = answered as usize + 1;
                        if let Some(asked) = asked {
                            h.answer(asked, &mut answered, |slot| {
                                active = slot;
                                before[k].store(written, Ordering::Relaxed);
                            });
                        }
                    }
                }
            });
            let mut sum = 0;
            let mut seen = 0;
            for _ in 0..2 {
                seen = writer_interval(&h, &[&s[0], &s[1]], 1, |n| sum += std::mem::take(n));
            }
            let expected = before[seen as usize].load(Ordering::Relaxed);
            poller.join().unwrap();
            assert_eq!(sum, expected, "taken, and written before answer {seen}");
        });
    }
}
