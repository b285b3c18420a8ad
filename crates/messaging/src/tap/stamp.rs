//! What a stamp in the reserved value says, and the forwarded stamp a service that relays
//! messages writes so the next hop sees both its own hop and the age since the origin.
//!
//! The reserved value's 64 bits, read as a signed `i64`:
//! - **0**: no stamp (Aeron's default reserved value).
//! - **positive**: a send stamp, nanoseconds on the [`StampClock`](super::StampClock) (what
//!   [`Publication::stamp_send_time`](crate::Publication::stamp_send_time) writes). Both clocks
//!   read positive for the next 290 years.
//! - **negative** (bit 63 set): a forwarded stamp. Bits 0-31 are the forwarder's send time,
//!   truncated to its low 32 bits (nanoseconds, wrapping every 4.29 s); bits 32-62 are the
//!   message's **age** when it was forwarded: nanoseconds since its origin's send stamp, at
//!   most 2^31 - 1 (2.147 s; an older message carries that maximum, marked saturated).
//!
//! A receiver of a forwarded stamp computes its hop as the difference of the low 32 bits of
//! its own clock and of the stamp, read as a signed 32-bit number: right for hops within
//! ±2.147 s (a longer hop aliases by a multiple of 4.29 s, so the hop and the end-to-end figure
//! are then wrong). End to end is the hop plus the age. Forwarders compose: each adds the age
//! it received and its own time inside, so a chain of services keeps the origin.
//!
//! One 8-byte field cannot carry two full timestamps; this split keeps both figures exact to
//! the nanosecond within those ranges, which cover a trading path's hops by three orders of
//! magnitude.

/// Bit 63: a forwarded stamp.
const FORWARDED: u64 = 1 << 63;
/// The largest age a forwarded stamp carries, nanoseconds (2^31 - 1).
pub const MAX_AGE_NS: i64 = (1 << 31) - 1;
/// The longest hop a forwarded stamp measures right, either way, nanoseconds (2^31 - 1).
pub const MAX_FORWARDED_HOP_NS: i64 = (1 << 31) - 1;

/// A reserved value read as a stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// Zero: the message carries no stamp.
    Absent,
    /// A send stamp: nanoseconds on the publisher's [`StampClock`](super::StampClock).
    Sent(i64),
    /// A forwarded stamp.
    Forwarded {
        /// The forwarder's send time, its low 32 bits.
        sent_low: u32,
        /// Nanoseconds from the origin's send stamp to the forwarder's send time, at most
        /// [`MAX_AGE_NS`].
        age_ns: u32,
    },
}

/// A stamp read against the receiver's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// This hop: receive time minus the last sender's stamp, nanoseconds (negative when the
    /// receiver's clock is behind the sender's: `CLOCK_REALTIME` across hosts).
    pub hop_ns: i64,
    /// From the origin's send stamp to the receive time, nanoseconds: the hop for a send stamp,
    /// the hop plus the age for a forwarded one.
    pub end_to_end_ns: i64,
    /// The age in a forwarded stamp reached [`MAX_AGE_NS`]: `end_to_end_ns` is a lower bound.
    pub age_saturated: bool,
}

impl Stamp {
    /// Reads a frame's reserved value.
    #[inline]
    #[must_use]
    pub fn from_reserved(value: i64) -> Stamp {
        let bits = value as u64;
        if value == 0 {
            Stamp::Absent
        } else if bits & FORWARDED == 0 {
            Stamp::Sent(value)
        } else {
            let (sent_low, age_ns) = forwarded_fields(value);
            Stamp::Forwarded { sent_low, age_ns }
        }
    }

    /// The stamp a forwarder writes when it sends at `sent_at` (its clock, the same clock as the
    /// stamps it received) a message that was `age_ns` old at that moment (clamped to
    /// 0..=[`MAX_AGE_NS`]).
    #[inline]
    #[must_use]
    pub fn forwarded(sent_at: i64, age_ns: i64) -> Stamp {
        Stamp::Forwarded {
            sent_low: sent_at as u32,
            age_ns: age_ns.clamp(0, MAX_AGE_NS) as u32,
        }
    }

    /// The value to write into the reserved value.
    #[inline]
    #[must_use]
    pub fn to_reserved(self) -> i64 {
        match self {
            Stamp::Absent => 0,
            Stamp::Sent(at) => at,
            Stamp::Forwarded { sent_low, age_ns } => {
                // An age above the field's 31 bits is written as the largest it holds.
                let age = u64::from(age_ns).min(MAX_AGE_NS as u64);
                (FORWARDED | (age << 32) | u64::from(sent_low)) as i64
            }
        }
    }

    /// The latency of a message with this stamp received at `now` (same clock), or `None`
    /// without a stamp.
    #[inline]
    #[must_use]
    pub fn latency(self, now: i64) -> Option<Latency> {
        match self {
            Stamp::Absent => None,
            Stamp::Sent(at) => Some(Latency::sent(at, now)),
            Stamp::Forwarded { sent_low, age_ns } => Some(Latency::forwarded(sent_low, age_ns, now)),
        }
    }
}

/// A forwarded stamp's fields (bit 63 set): the forwarder's send time, low 32 bits, and the
/// age (bits 32-62).
#[inline(always)]
fn forwarded_fields(reserved: i64) -> (u32, u32) {
    let bits = reserved as u64;
    (bits as u32, ((bits & !FORWARDED) >> 32) as u32)
}

impl Latency {
    /// [`Stamp::latency`] of a reserved value that is not 0 (a stamp), read in place: a send
    /// stamp costs a compare and a subtraction, with no enum built and taken apart (a
    /// recording poll's per-message path).
    #[inline(always)]
    pub(crate) fn of_stamp(reserved: i64, now: i64) -> Latency {
        debug_assert_ne!(reserved, 0, "a stamp");
        if reserved > 0 {
            Latency::sent(reserved, now)
        } else {
            let (sent_low, age_ns) = forwarded_fields(reserved);
            Latency::forwarded(sent_low, age_ns, now)
        }
    }

    #[inline(always)]
    fn sent(at: i64, now: i64) -> Latency {
        let hop = now.wrapping_sub(at);
        Latency {
            hop_ns: hop,
            end_to_end_ns: hop,
            age_saturated: false,
        }
    }

    #[inline(always)]
    fn forwarded(sent_low: u32, age_ns: u32, now: i64) -> Latency {
        let hop = i64::from((now as u32).wrapping_sub(sent_low) as i32);
        Latency {
            hop_ns: hop,
            end_to_end_ns: hop + i64::from(age_ns),
            age_saturated: i64::from(age_ns) == MAX_AGE_NS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_no_stamp_and_a_send_stamp_reads_back() {
        assert_eq!(Stamp::from_reserved(0), Stamp::Absent);
        assert_eq!(Stamp::Absent.latency(5), None);
        let s = Stamp::from_reserved(1_000);
        assert_eq!(s, Stamp::Sent(1_000));
        let l = s.latency(1_250).unwrap();
        assert_eq!((l.hop_ns, l.end_to_end_ns, l.age_saturated), (250, 250, false));
        assert_eq!(Stamp::Sent(1_000).latency(900).unwrap().hop_ns, -100, "negative kept");
    }

    #[test]
    fn a_forwarded_stamp_carries_the_hop_and_the_age_across_the_32_bit_wrap() {
        // The forwarder sends just before its clock's low 32 bits wrap; the receiver reads just
        // after: the hop is still 300 ns.
        let sent = (7_i64 << 32) + i64::from(u32::MAX) - 100;
        let r = Stamp::forwarded(sent, 40_000).to_reserved();
        assert!(r < 0, "bit 63 marks it");
        let s = Stamp::from_reserved(r);
        assert_eq!(
            s,
            Stamp::Forwarded {
                sent_low: u32::MAX - 100,
                age_ns: 40_000
            }
        );
        let l = s.latency(sent + 300).unwrap();
        assert_eq!((l.hop_ns, l.end_to_end_ns, l.age_saturated), (300, 40_300, false));
        // A receiver behind the forwarder's clock: a negative hop, not a 4 s one.
        assert_eq!(s.latency(sent - 50).unwrap().hop_ns, -50);
    }

    #[test]
    fn a_stamp_read_in_place_reads_as_the_decoded_one() {
        let sent = (7_i64 << 32) + i64::from(u32::MAX) - 100;
        let stamps = [
            1,
            1_000,
            i64::MAX,
            Stamp::forwarded(sent, 40_000).to_reserved(),
            Stamp::forwarded(sent, 0).to_reserved(),
            Stamp::forwarded(10, 5_000_000_000).to_reserved(),
            i64::MIN,
            -1,
        ];
        for reserved in stamps {
            for now in [0, 900, 1_250, sent - 50, sent + 300, i64::MAX] {
                assert_eq!(
                    Some(Latency::of_stamp(reserved, now)),
                    Stamp::from_reserved(reserved).latency(now),
                    "reserved {reserved:#x} at {now}"
                );
            }
        }
    }

    #[test]
    fn the_age_saturates_and_says_so() {
        let s = Stamp::from_reserved(Stamp::forwarded(10, 5_000_000_000).to_reserved());
        let l = s.latency(20).unwrap();
        assert_eq!(l.end_to_end_ns, 10 + MAX_AGE_NS);
        assert!(l.age_saturated);
        let built = Stamp::Forwarded {
            sent_low: 1,
            age_ns: u32::MAX,
        }
        .to_reserved();
        assert_eq!(
            Stamp::from_reserved(built),
            Stamp::Forwarded {
                sent_low: 1,
                age_ns: MAX_AGE_NS as u32
            },
            "an age over 31 bits is clamped, not written into bit 63"
        );
        let neg = Stamp::from_reserved(Stamp::forwarded(10, -3).to_reserved());
        assert_eq!(
            neg,
            Stamp::Forwarded {
                sent_low: 10,
                age_ns: 0
            },
            "a negative age is clamped"
        );
    }

    #[test]
    fn a_send_stamp_from_either_clock_is_never_read_as_forwarded() {
        for clock in [super::super::StampClock::Monotonic, super::super::StampClock::Realtime] {
            let now = clock.now_ns();
            assert_eq!(Stamp::from_reserved(now), Stamp::Sent(now), "{clock}");
        }
    }
}
