//! Two interval slots, one writer, one reader: the writer records into the active slot with no
//! lock, no allocation and no syscall; the reader swaps the slots and takes the one the writer
//! left. It is HdrHistogram's `Recorder` with its `WriterReaderPhaser`, cut down to the one
//! writer a subscription has (the thread that polls it): one word, and every access to it is a
//! read-modify-write, so all of them fall in its one modification order.
//!
//! The word: bit 0 is the active slot, bit 1 says the writer is inside, the bits above count
//! the writer's sections.
//! - The writer **enters** with `fetch_add(2)` (bit 1 was clear: it sets it) and writes the slot
//!   bit 0 named, until it **leaves** with `fetch_add(2)` again (bit 1 was set: it clears it and
//!   carries one into the count). Both are one `lock xadd` on x86.
//! - The reader **swaps** with `fetch_xor(1)`. If the value it replaced had bit 1 clear, the
//!   writer's next entry comes after it in the word's order and reads the new slot. If bit 1
//!   was set, the writer may be writing the old slot: the reader waits until the count moves
//!   (that section ended; its Acquire load of the leaving Release makes the writes visible).
//!
//! The model checker runs this protocol (`make loom`, `tap::phaser::model`).

#[cfg(not(messaging_loom))]
use std::cell::UnsafeCell;
#[cfg(not(messaging_loom))]
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(messaging_loom)]
use loom::cell::UnsafeCell;
#[cfg(messaging_loom)]
use loom::sync::atomic::{AtomicU64, Ordering};

/// Bit 1 of the word: the writer is inside a section.
const INSIDE: u64 = 2;

/// The two slots and the phase word. Share it in an `Arc`; one thread writes (through
/// [`Phaser::enter`], by contract), one reads ([`Phaser::swap`], by contract).
pub(crate) struct Phaser<T> {
    slots: [UnsafeCell<T>; 2],
    word: AtomicU64,
}

// SAFETY: a slot is touched by one thread at a time: the writer only inside a section on the
// slot the word named at its entry, the reader only on the other slot after `swap` waited the
// writer out of it (see the module docs); `T: Send` moves between those two threads.
unsafe impl<T: Send> Sync for Phaser<T> {}
// SAFETY: as above; the slots are owned values.
unsafe impl<T: Send> Send for Phaser<T> {}

impl<T> Phaser<T> {
    pub(crate) fn new(a: T, b: T) -> Self {
        Self {
            slots: [UnsafeCell::new(a), UnsafeCell::new(b)],
            word: AtomicU64::new(0),
        }
    }

    /// Opens the writer's section: the active slot, the writer's alone until [`leave`](Self::leave).
    ///
    /// # Safety
    /// Only one thread ever writes a given phaser (the writer); it opens one section at a time,
    /// uses the pointer only until it leaves, and always leaves (also when unwinding).
    #[cfg(not(messaging_loom))]
    #[inline]
    pub(crate) unsafe fn begin(&self) -> *mut T {
        let i = (self.word.fetch_add(INSIDE, Ordering::Acquire) & 1) as usize;
        self.slots[i].get()
    }

    /// Closes the section [`begin`](Self::begin) opened.
    ///
    /// # Safety
    /// As [`begin`](Self::begin): the writer, once per `begin`.
    #[cfg(not(messaging_loom))]
    #[inline]
    pub(crate) unsafe fn leave(&self) {
        self.word.fetch_add(INSIDE, Ordering::Release);
    }

    /// Enters the writer's section and runs `write` on the active slot (the same two adds as
    /// [`begin`](Self::begin) and [`leave`](Self::leave), which the model checks).
    ///
    /// # Safety
    /// Only one thread ever calls `enter` on a given phaser (the writer), and never from inside
    /// `write`.
    #[inline]
    pub(crate) unsafe fn enter<R>(&self, write: impl FnOnce(&mut T) -> R) -> R {
        let i = (self.word.fetch_add(INSIDE, Ordering::Acquire) & 1) as usize;
        #[cfg(not(messaging_loom))]
        // SAFETY: the single writer (the caller's contract) owns slot `i` until it leaves: the
        // reader takes a slot only after `swap` saw the writer leave it (module docs).
        let r = write(unsafe { &mut *self.slots[i].get() });
        #[cfg(messaging_loom)]
        // SAFETY: as above.
        let r = self.slots[i].with_mut(|p| write(unsafe { &mut *p }));
        self.word.fetch_add(INSIDE, Ordering::Release);
        r
    }

    /// Makes the other slot active and runs `read` on the slot the writer used until now, once
    /// the writer has left it. Waits (yielding) at most for one writer's section.
    ///
    /// # Safety
    /// Only one thread at a time calls `swap` (the reader).
    pub(crate) unsafe fn swap<R>(&self, read: impl FnOnce(&mut T) -> R) -> R {
        let was = self.word.fetch_xor(1, Ordering::AcqRel);
        if was & INSIDE != 0 {
            while self.word.load(Ordering::Acquire) >> 2 == was >> 2 {
                #[cfg(not(messaging_loom))]
                std::thread::yield_now();
                #[cfg(messaging_loom)]
                loom::thread::yield_now();
            }
        }
        let old = (was & 1) as usize;
        #[cfg(not(messaging_loom))]
        // SAFETY: the writer left slot `old` and enters only the other one from now on (module
        // docs); one reader at a time (the caller's contract).
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
