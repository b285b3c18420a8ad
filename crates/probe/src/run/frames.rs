//! Where a run's messages lie in its stream: stream positions to message counts and back, for
//! the publisher (how many a subscriber that went away had read) and the stages (when an
//! archive recorded each message). A message that does not fit in the rest of a term is
//! preceded by a padding frame that fills it, as Aeron's appenders do.

/// The encoded length of a compact run's full messages (its first, which carries the run's
/// counts, and its end marker): a full sample padded to 96 bytes, so that its frame is 128
/// bytes, two whole cache lines, and the compact frames after it each fill one line. At 64
/// bytes (a 96-byte frame) every later frame started halfway into a line and straddled two,
/// one of them shared with the frame written next, which slowed the 32 B round trip
/// (docs/results/2026-11-26-probe-compact-rtt.md).
pub const COMPACT_RUN_FULL_LEN: usize = 96;

/// The frame lengths of a run's messages: its first message's and every later one's. They
/// differ in a run of compact samples (below 64 bytes), whose first message is a full sample
/// of [`COMPACT_RUN_FULL_LEN`] bytes (it carries the run's counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frames {
    /// The first message's frame, bytes.
    pub first: i64,
    /// Every later message's frame, bytes.
    pub rest: i64,
}

impl Frames {
    /// The frames of a run of `--msg-size` `msg_size`.
    #[must_use]
    pub fn for_msg_size(msg_size: usize) -> Frames {
        let frame = |n: usize| crate::analysis::tuning::frame_bytes(n as u64) as i64;
        Frames {
            first: frame(if msg_size < aeron_latency::wire::MIN_ENCODED_LEN {
                COMPACT_RUN_FULL_LEN
            } else {
                msg_size
            }),
            rest: frame(msg_size),
        }
    }

    /// Every message the same `frame`.
    #[must_use]
    pub fn uniform(frame: i64) -> Frames {
        Frames {
            first: frame,
            rest: frame,
        }
    }

    /// How many of the run's whole messages lie between `start`, where its first message
    /// begins (or the padding before it), and `pos`, in terms of `term` bytes.
    #[must_use]
    pub fn messages_between(self, start: i64, pos: i64, term: i64) -> u64 {
        if self.first == self.rest {
            return messages_between(start, pos, term, self.rest);
        }
        if self.first <= 0 || term < self.first || pos <= start {
            return 0;
        }
        let first_at = if term - start.rem_euclid(term) < self.first {
            start - start.rem_euclid(term) + term // padding to the term's end first
        } else {
            start
        };
        let after_first = first_at + self.first;
        if pos < after_first {
            return 0;
        }
        1 + messages_between(after_first, pos, term, self.rest)
    }

    /// The stream position right after message `n - 1` of a run that starts at position 0.
    #[must_use]
    pub fn end_position(self, n: u64, term: i64) -> i64 {
        if self.first == self.rest {
            return end_position(n, term, self.rest);
        }
        if n == 0 || self.rest <= 0 || term < self.first {
            return 0;
        }
        // The later messages that fit in the first term after the first one.
        let in_first_term = ((term - self.first) / self.rest) as u64;
        let later = n - 1;
        if later <= in_first_term {
            self.first + later as i64 * self.rest
        } else {
            term + end_position(later - in_first_term, term, self.rest)
        }
    }

    /// The frame of message `k`.
    #[must_use]
    pub fn of(self, k: u64) -> i64 {
        if k == 0 {
            self.first
        } else {
            self.rest
        }
    }
}

/// How many whole messages of `frame` bytes fit between stream positions `start` and `pos`
/// in terms of `term` bytes (a message that does not fit in the rest of a term is preceded
/// by a padding frame that fills it).
#[must_use]
pub fn messages_between(start: i64, pos: i64, term: i64, frame: i64) -> u64 {
    if frame <= 0 || term <= 0 || pos <= start {
        return 0;
    }
    let (mut cur, mut n) = (start, 0u64);
    while cur < pos {
        let offset = cur.rem_euclid(term);
        let term_end = cur - offset + term;
        if pos >= term_end {
            n += ((term - offset) / frame) as u64;
            cur = term_end;
        } else {
            n += ((pos - cur) / frame) as u64;
            break;
        }
    }
    n
}

/// The stream position right after message `n - 1` (of fixed `frame` bytes, in terms of
/// `term` bytes: a message that does not fit in the rest of a term starts the next one).
#[must_use]
pub fn end_position(n: u64, term: i64, frame: i64) -> i64 {
    if n == 0 || frame <= 0 || term < frame {
        return 0;
    }
    let per_term = (term / frame) as u64;
    let last = n - 1;
    (last / per_term) as i64 * term + ((last % per_term) + 1) as i64 * frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compact_runs_32_byte_frames_each_fill_one_cache_line() {
        let f = Frames::for_msg_size(32);
        assert_eq!(f.rest, 64, "a 32 B compact sample and Aeron's header");
        // Through several 64 KiB terms: each message starts on a cache line.
        for k in 0..5_000 {
            assert_eq!(f.end_position(k, 65_536) % 64, 0, "message {k} starts on a cache line");
        }
        // Full sizes keep their own frames.
        assert_eq!(Frames::for_msg_size(64), Frames::uniform(96));
        assert_eq!(Frames::for_msg_size(40).first, 128);
    }

    #[test]
    fn messages_between_counts_whole_frames_and_skips_the_padding_at_each_term_end() {
        // 1,000-byte terms, 160-byte frames: 6 per term (960 B), 40 B of padding.
        let (t, f) = (1_000, 160);
        assert_eq!(messages_between(0, 0, t, f), 0);
        assert_eq!(messages_between(0, 159, t, f), 0, "a frame not yet whole");
        assert_eq!(messages_between(0, 160, t, f), 1);
        assert_eq!(messages_between(0, 960, t, f), 6);
        assert_eq!(messages_between(0, 1_000, t, f), 6, "the padding holds no message");
        assert_eq!(messages_between(0, 1_160, t, f), 7, "the next term starts with a frame");
        assert_eq!(messages_between(0, 3_000, t, f), 18, "three whole terms");
        // Starting mid-term (a publication joined at 480): 3 more fit in the first term.
        assert_eq!(messages_between(480, 1_000, t, f), 3);
        assert_eq!(messages_between(480, 1_320, t, f), 5);
        // Nothing for a position at or before the start, or a nonsense geometry.
        assert_eq!(messages_between(500, 400, t, f), 0);
        assert_eq!(messages_between(0, 1_000, 0, f), 0);
        assert_eq!(messages_between(0, 1_000, t, 0), 0);
        // A frame that divides the term: no padding.
        assert_eq!(messages_between(0, 4_096, 1_024, 32), 128);
    }

    #[test]
    fn end_positions_agree_with_the_message_count() {
        let (term, frame) = (65_536_i64, 96_i64);
        for n in [1_u64, 2, 682, 683, 684, 5_000] {
            let p = end_position(n, term, frame);
            assert_eq!(messages_between(0, p, term, frame), n, "n = {n}");
            assert_eq!(messages_between(0, p - 1, term, frame), n - 1, "n = {n}");
        }
    }

    #[test]
    fn a_compact_run_s_first_message_is_a_full_frame_and_the_rest_follow_it() {
        let f = Frames::for_msg_size(32);
        assert_eq!((f.first, f.rest), (128, 64));
        assert_eq!(Frames::for_msg_size(128), Frames::uniform(160));
        let term = 1_000;
        // 128, then 13 of 64 B (960), 40 B of padding; the next term holds 15.
        assert_eq!(f.messages_between(0, 127, term), 0);
        assert_eq!(f.messages_between(0, 128, term), 1);
        assert_eq!(f.messages_between(0, 960, term), 14);
        assert_eq!(f.messages_between(0, 1_000, term), 14, "the padding holds no message");
        assert_eq!(f.messages_between(0, 2_000, term), 29);
        for n in [1_u64, 2, 14, 15, 16, 29, 30, 100] {
            let p = f.end_position(n, term);
            assert_eq!(f.messages_between(0, p, term), n, "n = {n}");
            assert_eq!(f.messages_between(0, p - 1, term), n - 1, "n = {n}");
            assert!(p - f.of(n - 1) >= 0);
        }
        // A run that starts where its first (full) frame does not fit: padding, then the term.
        assert_eq!(f.messages_between(960, 1_000 + 128, term), 1);
        assert_eq!(f.messages_between(960, 1_000 + 127, term), 0);
        assert_eq!(f.messages_between(960, 1_000 + 192, term), 2);
        // Uniform frames are the plain count.
        let u = Frames::uniform(96);
        assert_eq!(u.end_position(683, 65_536), end_position(683, 65_536, 96));
    }
}
