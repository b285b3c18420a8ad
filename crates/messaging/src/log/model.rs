//! The log's lock-free protocol under the loom model checker: [`ModelLog`] is a [`LogMemory`]
//! made of loom's atomics and cells, and the models below run the shipped appenders and term
//! reader over it, in every interleaving loom explores (bounded by `LOOM_MAX_PREEMPTIONS`).
//!
//! Loom checks the orderings Aeron's protocol relies on: a frame's bytes are plain memory in
//! [`loom::cell::UnsafeCell`]s, so a reader that could see a published length without the
//! bytes written before it (a missing release or acquire) is a causality violation, and a
//! writer that could write where another writes or reads (two claims of one range) is a data
//! race; either fails the model. The models assert what a subscriber must see: every message
//! once, whole, each writer's in order.
//!
//! The models cover one rotation (the race to pad and rotate), not a partition's reuse three
//! terms later, which needs the driver's cleaning and window; the stress test in `log::tests`
//! (threads pinned to one core, many rotations) covers that.
//!
//! Run with `make loom` (`RUSTFLAGS="--cfg messaging_loom" cargo test -p messaging --lib
//! --release log::model`).

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use loom::sync::Arc;

use super::descriptor::PARTITION_COUNT;
use super::frame::{DataHeader, DATA_HEADER_LEN, FRAME_ALIGNMENT};
use super::memory::LogMemory;

/// The model's memory unit: one frame-aligned slot.
const SLOT: usize = FRAME_ALIGNMENT;

/// A log in loom's model: the tails, the active term count, one frame-length atomic per
/// 32-byte slot, and the slots' bytes as cells (a frame's header is its first slot, bytes 4 to
/// 32; its payload the slots after it).
pub(crate) struct ModelLog {
    term_length: i32,
    tails: [AtomicI64; 3],
    active_term_count: AtomicI32,
    lengths: Vec<AtomicI32>,
    slots: Vec<UnsafeCell<[u8; SLOT]>>,
}

impl ModelLog {
    /// Zeroed terms whose tails start the stream at `initial_term_id` (as
    /// [`HeapLog::new`](super::memory::HeapLog::new)).
    pub(crate) fn new(term_length: i32, initial_term_id: i32) -> Arc<ModelLog> {
        let slots = PARTITION_COUNT as usize * term_length as usize / SLOT;
        let tail = |i: i32| {
            let term_id = if i == 0 {
                initial_term_id
            } else {
                initial_term_id.wrapping_add(i - PARTITION_COUNT as i32)
            };
            AtomicI64::new(i64::from(term_id) << 32)
        };
        Arc::new(ModelLog {
            term_length,
            tails: [tail(0), tail(1), tail(2)],
            active_term_count: AtomicI32::new(0),
            lengths: (0..slots).map(|_| AtomicI32::new(0)).collect(),
            slots: (0..slots).map(|_| UnsafeCell::new([0; SLOT])).collect(),
        })
    }

    fn slot(&self, index: usize, offset: i32) -> usize {
        (index * self.term_length as usize + offset as usize) / SLOT
    }

    /// Copies `bytes` into the slots from byte `at` of slot `first` on.
    fn put(&self, first: usize, at: usize, bytes: &[u8]) {
        let mut pos = first * SLOT + at;
        for chunk in bytes.chunks(SLOT) {
            let mut done = 0;
            while done < chunk.len() {
                let (slot, within) = (pos / SLOT, pos % SLOT);
                let n = (SLOT - within).min(chunk.len() - done);
                self.slots[slot].with_mut(|p| {
                    // SAFETY: the cell's pointer is valid; loom checks this write against every
                    // other access of the slot.
                    let cell = unsafe { &mut *p };
                    cell[within..within + n].copy_from_slice(&chunk[done..done + n]);
                });
                done += n;
                pos += n;
            }
        }
    }

    /// `len` bytes from byte `at` of slot `first` on.
    fn get(&self, first: usize, at: usize, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        let mut pos = first * SLOT + at;
        while out.len() < len {
            let (slot, within) = (pos / SLOT, pos % SLOT);
            let n = (SLOT - within).min(len - out.len());
            self.slots[slot].with(|p| {
                // SAFETY: the cell's pointer is valid; loom checks this read against every
                // other access of the slot.
                let cell = unsafe { &*p };
                out.extend_from_slice(&cell[within..within + n]);
            });
            pos += n;
        }
        out
    }
}

impl LogMemory for Arc<ModelLog> {
    type Bytes<'a> = Vec<u8>;

    fn term_length(&self) -> i32 {
        self.term_length
    }

    fn tail_load(&self, index: usize, order: Ordering) -> i64 {
        self.tails[index].load(order)
    }

    fn tail_store(&self, index: usize, value: i64, order: Ordering) {
        self.tails[index].store(value, order);
    }

    fn tail_fetch_add(&self, index: usize, delta: i64, order: Ordering) -> i64 {
        self.tails[index].fetch_add(delta, order)
    }

    fn tail_compare_exchange(&self, index: usize, current: i64, new: i64) -> Result<i64, i64> {
        self.tails[index].compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    fn active_term_count_load(&self, order: Ordering) -> i32 {
        self.active_term_count.load(order)
    }

    fn active_term_count_store(&self, value: i32, order: Ordering) {
        self.active_term_count.store(value, order);
    }

    fn active_term_count_compare_exchange(&self, current: i32, new: i32) -> Result<i32, i32> {
        self.active_term_count
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    fn is_connected(&self) -> bool {
        true
    }

    fn release_fence(&self) {
        loom::sync::atomic::fence(Ordering::Release);
    }

    fn frame_length_load(&self, index: usize, offset: i32, order: Ordering) -> i32 {
        self.lengths[self.slot(index, offset)].load(order)
    }

    fn frame_length_store(&self, index: usize, offset: i32, value: i32, order: Ordering) {
        self.lengths[self.slot(index, offset)].store(value, order);
    }

    unsafe fn write_header(&self, index: usize, offset: i32, h: &DataHeader) {
        let mut bytes = [0u8; DATA_HEADER_LEN - 4];
        bytes[0] = h.version;
        bytes[1] = h.flags;
        bytes[2..4].copy_from_slice(&h.frame_type.to_le_bytes());
        bytes[4..8].copy_from_slice(&h.term_offset.to_le_bytes());
        bytes[8..12].copy_from_slice(&h.session_id.to_le_bytes());
        bytes[12..16].copy_from_slice(&h.stream_id.to_le_bytes());
        bytes[16..20].copy_from_slice(&h.term_id.to_le_bytes());
        // The reserved value (bytes 20..28 here) is left as it is.
        self.put(self.slot(index, offset), 4, &bytes[..20]);
    }

    unsafe fn write_frame_type(&self, index: usize, offset: i32, frame_type: u16) {
        self.put(self.slot(index, offset), 6, &frame_type.to_le_bytes());
    }

    unsafe fn write_reserved_value(&self, index: usize, offset: i32, value: i64) {
        self.put(self.slot(index, offset), 24, &value.to_le_bytes());
    }

    unsafe fn write_payload(&self, index: usize, offset: i32, bytes: &[u8]) {
        self.put(self.slot(index, offset) + 1, 0, bytes);
    }

    unsafe fn read_header(&self, index: usize, offset: i32) -> DataHeader {
        let b = self.get(self.slot(index, offset), 4, DATA_HEADER_LEN - 4);
        let i32_at = |at: usize| i32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        DataHeader {
            frame_length: 0,
            version: b[0],
            flags: b[1],
            frame_type: u16::from_le_bytes([b[2], b[3]]),
            term_offset: i32_at(4),
            session_id: i32_at(8),
            stream_id: i32_at(12),
            term_id: i32_at(16),
            reserved_value: i64::from_le_bytes(b[20..28].try_into().unwrap()),
        }
    }

    unsafe fn payload(&self, index: usize, offset: i32, len: usize) -> Vec<u8> {
        self.get(self.slot(index, offset) + 1, 0, len)
    }
}

#[cfg(test)]
mod models {
    use loom::sync::atomic::Ordering;
    use loom::sync::Arc;

    use super::ModelLog;
    use crate::error::OfferError;
    use crate::log::appender::{reserve_concurrent, ExclusiveTail, Reserved, TermLog};
    use crate::log::frame::UNFRAGMENTED;
    use crate::log::memory::LogMemory as _;
    use crate::log::term_reader::{Frame, Step, TermReader};

    /// The checker, bounded as `LOOM_MAX_PREEMPTIONS` says (default 2: exhaustive within that
    /// bound, minutes at most).
    fn check(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(2);
        }
        builder.check(f);
    }

    /// Writer `w`'s message `i` of `len` bytes.
    fn message(w: u8, i: u8, len: usize) -> Vec<u8> {
        (0..len)
            .map(|k| {
                w.wrapping_mul(64)
                    .wrapping_add(i.wrapping_mul(16))
                    .wrapping_add(k as u8)
            })
            .collect()
    }

    /// Writes a reserved message, as a publication does after its appender reserved it.
    fn write(log: &TermLog<Arc<ModelLog>>, r: Reserved, msg: &[u8]) {
        if msg.len() <= log.max_payload {
            log.write_unfragmented(r.index, r.offset, r.term_id, msg, Some(7));
        } else {
            log.write_fragmented(r.index, r.offset, r.term_id, msg, Some(7));
        }
    }

    /// Reads until `n` messages came whole (as `Subscriber::poll` reassembles), yielding to the
    /// model between reads.
    fn read_all(log: &Arc<ModelLog>, initial_term_id: i32, n: usize) -> Vec<Vec<u8>> {
        let mut reader = TermReader::new(log.clone(), initial_term_id, 0);
        let mut got: Vec<Vec<u8>> = Vec::new();
        while got.len() < n {
            let mut deliver = |bytes: &[u8], f: &Frame<'_>| {
                assert_eq!(f.reserved_value(), 7, "the reserved value arrives with the bytes");
                got.push(bytes.to_vec());
                Step::Continue
            };
            let read = reader
                .read(
                    8,
                    &mut |assembly, bytes, frame| {
                        if frame.flags() & UNFRAGMENTED == UNFRAGMENTED {
                            deliver(bytes, frame)
                        } else {
                            assembly.fragment(bytes, frame, &mut deliver)
                        }
                    },
                    &mut |_| {},
                )
                .expect("no malformed frame");
            if read == 0 {
                loom::thread::yield_now();
            }
        }
        got
    }

    /// Two concurrent publications (threads) race to claim space in one log with atomic adds,
    /// one of them crossing a term's end, padding it and rotating the log while the other
    /// appends; a reader on a third thread gets every message once, whole, each writer's in
    /// order.
    #[test]
    fn concurrent_writers_race_through_a_rotation_and_the_reader_sees_every_message() {
        check(|| {
            // 128-byte terms, 16-byte messages in 64-byte frames: two a term.
            let mem = ModelLog::new(128, 5);
            let mut writers = Vec::new();
            for w in 0..2u8 {
                let mem = mem.clone();
                writers.push(loom::thread::spawn(move || {
                    let log = TermLog::new(mem, 5, 1, 2, 64);
                    for i in 0..2u8 {
                        let msg = message(w, i, 16);
                        loop {
                            match reserve_concurrent(&log, i64::MAX, msg.len(), log.framed(msg.len())) {
                                Ok(r) => {
                                    write(&log, r, &msg);
                                    break;
                                }
                                Err(OfferError::AdminAction) => loom::thread::yield_now(),
                                Err(e) => panic!("writer {w}: {e}"),
                            }
                        }
                    }
                }));
            }
            let got = read_all(&mem, 5, 4);
            for w in writers {
                w.join().unwrap();
            }
            for w in 0..2u8 {
                let mine: Vec<&Vec<u8>> = got.iter().filter(|m| m[0] / 64 == w).collect();
                assert_eq!(mine, [&message(w, 0, 16), &message(w, 1, 16)], "writer {w}'s messages");
            }
            assert_eq!(mem.active_term_count.load(Ordering::Acquire), 1, "rotated once");
        });
    }

    /// The exclusive publication: one writer thread appends a whole message, a fragmented one
    /// (two frames) and, past the term's end, a third after padding and rotating; the reader on
    /// another thread reassembles and gets all three whole, in order.
    #[test]
    fn the_exclusive_writer_and_a_reader_agree_on_fragments_padding_and_rotation() {
        check(|| {
            // 256-byte terms, 32-byte frame payloads: a 48-byte message is two frames.
            let mem = ModelLog::new(256, -3);
            let writer_mem = mem.clone();
            let writer = loom::thread::spawn(move || {
                let log = TermLog::new(writer_mem, -3, 1, 2, 32);
                let mut tail = ExclusiveTail::new(&log);
                for (i, len) in [(0u8, 24usize), (1, 48), (2, 24)] {
                    let msg = message(1, i, len);
                    loop {
                        match tail.reserve(&log, i64::MAX, len, log.framed(len)) {
                            Ok(r) => {
                                write(&log, r, &msg);
                                break;
                            }
                            Err(OfferError::AdminAction) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    if i == 1 {
                        // An empty message (32 bytes of log): 32 bytes stay free, too few for
                        // the next message, which pads them and rotates.
                        let r = tail.reserve(&log, i64::MAX, 0, log.framed(0)).unwrap();
                        write(&log, r, &[]);
                    }
                }
            });
            let got = read_all(&mem, -3, 4);
            writer.join().unwrap();
            assert_eq!(
                got,
                [message(1, 0, 24), message(1, 1, 48), Vec::new(), message(1, 2, 24)]
            );
        });
    }

    /// A claim: the writer writes the header, fills the payload and commits (or aborts, the
    /// frame becoming padding); a reader sees the whole payload or nothing, never a half.
    #[test]
    fn a_claim_is_read_whole_once_committed_and_never_once_aborted() {
        check(|| {
            let mem = ModelLog::new(128, 0);
            let writer_mem = mem.clone();
            let writer = loom::thread::spawn(move || {
                let log = TermLog::new(writer_mem, 0, 1, 2, 64);
                let mut tail = ExclusiveTail::new(&log);
                for (i, commit) in [(0u8, false), (1, true)] {
                    let r = tail.reserve(&log, i64::MAX, 8, log.framed(8)).unwrap();
                    log.claim(r.index, r.offset, r.term_id, 8);
                    // SAFETY: the claimed frame is this thread's until committed or aborted.
                    unsafe {
                        log.mem.write_payload(r.index, r.offset, &message(2, i, 8));
                        log.mem.write_reserved_value(r.index, r.offset, 7);
                    }
                    if commit {
                        log.commit(r.index, r.offset, 8);
                    } else {
                        log.abort(r.index, r.offset, 8);
                    }
                }
            });
            let got = read_all(&mem, 0, 1);
            writer.join().unwrap();
            assert_eq!(got, [message(2, 1, 8)]);
        });
    }
}
