//! A subscription's intervals, handed from its polling thread to the tap's writer when the
//! writer asks: the poll pays one relaxed load per poll and records with plain writes; the
//! writer, not the poll, pays for the handover.
//!
//! Each source of a subscription's recorder has two slots. One [`Handoff`] per recorder
//! counts the swaps the writer has `asked` for (only the writer stores it) and the swaps the
//! polling thread has made, `answered` (only the poller stores it). The active slot of every
//! source of the recorder is `answered & 1`.
//! - **Poller**: at the end of each poll it loads `asked` (Relaxed). When it differs from the
//!   swaps it made (the writer asked), it issues an Acquire fence (the writer's emptying of
//!   the slot it now takes happened before), switches its sources to the other slot, and
//!   stores `answered` (Release: its writes to the slot it left happen before the writer
//!   reads them).
//! - **Writer**: it asks (stores `asked + 1`, Release) only when the last ask was answered,
//!   and after its Acquire load sees the answer it empties each source's inactive slot,
//!   `(answered & 1) ^ 1`, before it asks again. A poller that does not answer within the
//!   writer's wait (a thread that stopped polling) keeps its counts in its active slot; they
//!   are taken at a later interval, once it answers, or when its sources retire.
//! - **Retired**: a source that nothing records into any more (its recorder dropped, its
//!   session gone) is marked with a Release store after its last write; the writer then
//!   takes both slots.
//!
//! The model checker checks the protocol (`make loom`, `tap::handoff::model`).

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
pub(crate) struct Handoff {
    asked: AtomicU64,
    answered: AtomicU64,
}

impl Handoff {
    /// Poller: the swap the writer asked for, when it asked for one since the poller's
    /// `answered` (the swaps it made): one relaxed load.
    #[inline]
    pub(crate) fn asked_since(&self, answered: u64) -> Option<u64> {
        let asked = self.asked.load(Ordering::Relaxed);
        (asked != answered).then_some(asked)
    }

    /// Poller: it switched its sources to slot `asked & 1`; tells the writer.
    pub(crate) fn answer(&self, asked: u64) {
        self.answered.store(asked, Ordering::Release);
    }

    /// Poller: before it writes the slot it switches to (the writer emptied it).
    pub(crate) fn acquire() {
        fence(Ordering::Acquire);
    }

    /// Writer: asks for a swap unless the last one is unanswered. Whether it asked.
    pub(crate) fn ask(&self) -> bool {
        let asked = self.asked.load(Ordering::Relaxed); // only the writer stores it
        if self.answered.load(Ordering::Acquire) != asked {
            return false;
        }
        self.asked.store(asked + 1, Ordering::Release);
        true
    }

    /// Writer: the inactive slot of every source of this recorder when the last ask is
    /// answered (the writer may take it until it asks again); `None` while unanswered.
    pub(crate) fn inactive(&self) -> Option<usize> {
        let answered = self.answered.load(Ordering::Acquire);
        (answered == self.asked.load(Ordering::Relaxed)).then_some((answered & 1) as usize ^ 1)
    }
}

/// Writer: asks each recorder of `handoffs` for its intervals (those whose last ask is
/// answered) and waits up to `wait` for every ask to be answered, sleeping between looks.
/// Returns how many asks were left unanswered (their recorders hand over later).
pub(crate) fn ask_all(handoffs: &[&Handoff], wait: std::time::Duration) -> u64 {
    for h in handoffs {
        h.ask();
    }
    let deadline = std::time::Instant::now() + wait;
    loop {
        let unanswered = handoffs.iter().filter(|h| h.inactive().is_none()).count() as u64;
        if unanswered == 0 || std::time::Instant::now() >= deadline {
            return unanswered;
        }
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
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

    /// Writer: runs `take` on what the source holds that it may take now: its inactive slot
    /// when `handoff`'s last ask is answered, or both slots when the source `retired` (a
    /// Release store after its last write, loaded with Acquire).
    ///
    /// # Safety
    /// Only the writer calls it, and never between [`Handoff::ask`] and seeing the answer
    /// other than through this method's own check.
    pub(crate) unsafe fn take(&self, handoff: &Handoff, retired: bool, mut take: impl FnMut(&mut T)) {
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
        } else if let Some(i) = handoff.inactive() {
            one(i);
        }
    }
}

#[cfg(all(test, not(messaging_loom)))]
mod tests {
    use super::{Handoff, Slots};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A poller adds 1 per message and answers when asked; the writer asks, takes, and at the
    /// end takes the retired source's two slots: nothing lost, nothing twice.
    #[test]
    fn every_write_is_taken_once() {
        let h = Arc::new(Handoff::default());
        let s = Arc::new(Slots::new(0_u64, 0_u64));
        let retired = Arc::new(AtomicBool::new(false));
        let n = if cfg!(miri) { 300 } else { 200_000 };
        let poller = std::thread::spawn({
            let (h, s, retired) = (h.clone(), s.clone(), retired.clone());
            move || {
                let mut answered = 0;
                for _ in 0..n {
                    // SAFETY: this thread is the poller; slot `answered & 1` is its active one.
                    unsafe { *s.slot((answered & 1) as usize) += 1 };
                    if let Some(asked) = h.asked_since(answered) {
                        Handoff::acquire();
                        answered = asked;
                        h.answer(asked);
                    }
                }
                retired.store(true, Ordering::Release);
            }
        });
        let mut sum = 0;
        let mut asks = 0;
        while !retired.load(Ordering::Acquire) {
            // SAFETY: this thread is the only writer-side caller.
            unsafe { s.take(&h, false, |c| sum += std::mem::take(c)) };
            asks += u64::from(h.ask());
            std::thread::yield_now();
        }
        poller.join().unwrap();
        // SAFETY: as above; the source retired.
        unsafe { s.take(&h, true, |c| sum += std::mem::take(c)) };
        assert_eq!(sum, n, "after {asks} asks");
        assert!(asks > 0 || cfg!(miri), "the writer asked");
    }

    /// An ask the poller has not answered gives the writer nothing, and the writer does not
    /// ask again until it is answered.
    #[test]
    fn an_unanswered_ask_takes_nothing_and_is_not_repeated() {
        let h = Handoff::default();
        let s = Slots::new(5_u64, 7_u64);
        assert!(h.ask());
        let mut seen = Vec::new();
        // SAFETY: one thread plays both sides, in the protocol's order.
        unsafe { s.take(&h, false, |c| seen.push(*c)) };
        assert!(seen.is_empty(), "unanswered: nothing to take");
        assert!(!h.ask(), "one ask at a time");
        assert_eq!(h.asked_since(0), Some(1));
        h.answer(1);
        assert_eq!(h.asked_since(1), None);
        // SAFETY: as above.
        unsafe { s.take(&h, false, |c| seen.push(*c)) };
        assert_eq!(seen, [5], "answered 1: slot 1 is active, slot 0 is taken");
    }
}

#[cfg(all(test, messaging_loom))]
mod model {
    use super::{Handoff, Slots};
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;

    /// Every interleaving of a poller writing twice (answering an ask after each write) and a
    /// writer asking, waiting a little, and taking: each write is taken exactly once, and no
    /// slot is touched by both threads at once (loom's cells fail the model on a race).
    #[test]
    fn writes_asks_and_takes_in_every_interleaving() {
        loom::model(|| {
            let h = Arc::new(Handoff::default());
            let s = Arc::new(Slots::new(0_u64, 0_u64));
            let retired = Arc::new(AtomicBool::new(false));
            let poller = loom::thread::spawn({
                let (h, s, retired) = (h.clone(), s.clone(), retired.clone());
                move || {
                    let mut answered = 0;
                    for _ in 0..2 {
                        // SAFETY: the poller, on its active slot.
                        unsafe { s.write((answered & 1) as usize, |n| *n += 1) };
                        if let Some(asked) = h.asked_since(answered) {
                            Handoff::acquire();
                            answered = asked;
                            h.answer(asked);
                        }
                    }
                    retired.store(true, Ordering::Release);
                }
            });
            let mut sum = 0;
            for _ in 0..2 {
                // SAFETY: the only writer-side caller.
                unsafe { s.take(&h, false, |n| sum += std::mem::take(n)) };
                h.ask();
                loom::thread::yield_now();
            }
            // SAFETY: as above.
            unsafe { s.take(&h, retired.load(Ordering::Acquire), |n| sum += std::mem::take(n)) };
            poller.join().unwrap();
            // SAFETY: as above; joined, so retired.
            unsafe { s.take(&h, retired.load(Ordering::Acquire), |n| sum += std::mem::take(n)) };
            assert_eq!(sum, 2);
        });
    }
}
