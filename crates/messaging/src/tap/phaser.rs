//! Two interval slots, one writer, one reader: the writer records into the active slot with no
//! lock, no allocation and no syscall; the reader swaps the slots and takes the one the writer
//! left. It is HdrHistogram's `Recorder` with its `WriterReaderPhaser`, cut down to the one
//! writer a [`FigureRecorder`](super::FigureRecorder) has (the thread that holds it): a
//! section costs the writer one read-modify-write and one plain store. (A subscription's
//! recorder hands its intervals over when asked instead, [`super::handover`]: cheaper per poll.)
//!
//! Two words. `word` holds the active slot in bit 0 and, above it, how many sections the writer
//! has begun; `done` how many it has ended (only the writer stores it).
//! - The writer **begins** a section with `word.fetch_add(2)` (one `lock xadd` on x86): the
//!   value it replaced names the active slot, which it writes until it **ends** the section
//!   by storing `done + 1` (Release; a plain store).
//! - The reader **swaps** with `word.fetch_xor(1)`. Every begin is a read-modify-write of the
//!   same word, so each falls before or after the swap in that word's one modification order:
//!   one after it reads the new slot; the ones before it (`begun`, the count the swap replaced)
//!   used the old slot, and the reader waits until `done` reaches `begun` (its Acquire load of
//!   the ending store makes their writes visible). Sections begun before the previous swap used
//!   the other slot and were waited for then.
//!
//! No sequentially consistent access is needed, so the model checker checks the protocol as it
//! ships (`make loom`, `tap::phaser::model`).

#[cfg(not(messaging_loom))]
use std::cell::UnsafeCell;
#[cfg(not(messaging_loom))]
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(messaging_loom)]
use loom::cell::UnsafeCell;
#[cfg(messaging_loom)]
use loom::sync::atomic::{AtomicU64, Ordering};

/// The two slots and the phase words. Share it in an `Arc`; one thread writes (by contract),
/// one reads ([`Phaser::swap`], by contract).
pub(crate) struct Phaser<T> {
    slots: [UnsafeCell<T>; 2],
    /// Bit 0: the active slot; above: sections begun.
    word: AtomicU64,
    /// Sections ended.
    done: AtomicU64,
}

// SAFETY: a slot is touched by one thread at a time: the writer only inside a section on the
// slot `word` named at its begin, the reader only on the other slot after `swap` waited for
// every section on it to end (see the module docs); `T: Send` moves between the two threads.
unsafe impl<T: Send> Sync for Phaser<T> {}
// SAFETY: as above; the slots are owned values.
unsafe impl<T: Send> Send for Phaser<T> {}

impl<T> Phaser<T> {
    pub(crate) fn new(a: T, b: T) -> Self {
        Self {
            slots: [UnsafeCell::new(a), UnsafeCell::new(b)],
            word: AtomicU64::new(0),
            done: AtomicU64::new(0),
        }
    }

    /// Begins a section: the active slot's index.
    #[inline]
    fn open(&self) -> usize {
        (self.word.fetch_add(2, Ordering::Acquire) & 1) as usize
    }

    /// Ends the section the writer began last.
    #[inline]
    fn close(&self) {
        let ended = self.done.load(Ordering::Relaxed); // only the writer stores it
        self.done.store(ended + 1, Ordering::Release);
    }

    /// Runs `write` on the active slot inside one section.
    ///
    /// # Safety
    /// Only one thread ever calls `enter` on a given phaser (the writer), and never from inside
    /// `write`.
    #[inline]
    pub(crate) unsafe fn enter<R>(&self, write: impl FnOnce(&mut T) -> R) -> R {
        let i = self.open();
        #[cfg(not(messaging_loom))]
        // SAFETY: the single writer (the caller's contract) owns slot `i` until it closes: the
        // reader takes a slot only after `swap` saw every section on it closed (module docs).
        let r = write(unsafe { &mut *self.slots[i].get() });
        #[cfg(messaging_loom)]
        // SAFETY: as above.
        let r = self.slots[i].with_mut(|p| write(unsafe { &mut *p }));
        self.close();
        r
    }

    /// Makes the other slot active and runs `read` on the slot the writer used until now, once
    /// every section on it has ended. Waits (yielding) at most for one writer's section.
    ///
    /// # Safety
    /// Only one thread at a time calls `swap` (the reader).
    pub(crate) unsafe fn swap<R>(&self, read: impl FnOnce(&mut T) -> R) -> R {
        let was = self.word.fetch_xor(1, Ordering::AcqRel);
        let begun = was >> 1;
        while self.done.load(Ordering::Acquire) < begun {
            #[cfg(not(messaging_loom))]
            std::thread::yield_now();
            #[cfg(messaging_loom)]
            loom::thread::yield_now();
        }
        let old = (was & 1) as usize;
        #[cfg(not(messaging_loom))]
        // SAFETY: every section on slot `old` has ended and later ones use the other slot
        // (module docs); one reader at a time (the caller's contract).
        let r = read(unsafe { &mut *self.slots[old].get() });
        #[cfg(messaging_loom)]
        // SAFETY: as above.
        let r = self.slots[old].with_mut(|p| read(unsafe { &mut *p }));
        r
    }
}

#[cfg(all(test, not(messaging_loom)))]
mod tests {
    use super::Phaser;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A writer adds 1 per entry while a reader swaps and sums: nothing lost, nothing twice.
    #[test]
    fn every_write_is_read_once() {
        let p = Arc::new(Phaser::new(0_u64, 0_u64));
        let done = Arc::new(AtomicBool::new(false));
        // Miri runs it slowly, and each of its runs explores other interleavings.
        let n = if cfg!(miri) { 300 } else { 200_000 };
        let writer = std::thread::spawn({
            let (p, done) = (p.clone(), done.clone());
            move || {
                for _ in 0..n {
                    // SAFETY: this thread is the only writer.
                    unsafe { p.enter(|n| *n += 1) };
                }
                done.store(true, Ordering::Release);
            }
        });
        let mut sum = 0;
        let mut swaps = 0;
        while !done.load(Ordering::Acquire) {
            // SAFETY: this thread is the only reader.
            sum += unsafe { p.swap(std::mem::take) };
            swaps += 1;
            std::thread::yield_now();
        }
        writer.join().unwrap();
        // SAFETY: as above; two swaps empty both slots.
        sum += unsafe { p.swap(std::mem::take) } + unsafe { p.swap(std::mem::take) };
        assert_eq!(sum, n, "after {swaps} swaps");
    }
}

#[cfg(all(test, messaging_loom))]
mod model {
    use super::Phaser;
    use loom::sync::Arc;

    /// Every interleaving of two writes and two swaps: each write is read exactly once, and a
    /// slot is never touched by both threads at once (loom's cells fail the model on a race).
    #[test]
    fn writes_and_swaps_in_every_interleaving() {
        loom::model(|| {
            let p = Arc::new(Phaser::new(0_u64, 0_u64));
            let w = loom::thread::spawn({
                let p = p.clone();
                move || {
                    for _ in 0..2 {
                        // SAFETY: the only writer.
                        unsafe { p.enter(|n| *n += 1) };
                    }
                }
            });
            // SAFETY: the only reader (the writer is joined before the last two swaps).
            let mut sum = unsafe { p.swap(std::mem::take) };
            w.join().unwrap();
            // SAFETY: as above.
            sum += unsafe { p.swap(std::mem::take) } + unsafe { p.swap(std::mem::take) };
            assert_eq!(sum, 2);
        });
    }
}
