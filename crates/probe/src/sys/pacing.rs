//! Open-loop pacing of the publisher on the probe clock.
//!
//! Guarantees:
//! - Message `i` has the intended send time `start + i * 1e9 / rate` (integer nanoseconds,
//!   rounded down), computed from `i` in 128-bit integer arithmetic every time: there is no
//!   accumulated floating-point or rounding drift, however long the run.
//! - The schedule is open-loop: a late message does not move the schedule of later messages.
//!   This is what lets the subscriber measure latency from the intended time
//!   (coordinated-omission correction, see [`crate::sys::clock::TIMING_MODEL`]).
//! - [`Pacer::wait_until`] busy-spins ([`std::hint::spin_loop`]) on the caller's clock: no
//!   sleep, no syscall, no allocation, no lock. It returns the clock reading that ended the
//!   wait, so the caller can reuse it as the actual send stamp; when the publisher is already
//!   behind schedule it reads the clock exactly once.
//! - Rates are whole messages per second in `1..=1_000_000_000`; anything else is rejected by
//!   [`Pacer::new`] with a one-line cause and fix.

use std::fmt;

/// Nanoseconds per second.
const NS_PER_SEC: u128 = 1_000_000_000;

/// Within this much of a message's intended time the pacing loop spins without the spin-loop
/// hint ([`Pacer::wait_until`]).
const NEAR_DUE_NS: i64 = 200;

/// Highest accepted rate: one message per nanosecond.
pub const MAX_RATE_PER_SEC: u64 = 1_000_000_000;

/// Why a [`Pacer`] could not be built. `Display` is one line: the cause, then the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacingError {
    /// A rate of zero messages per second would never send anything.
    ZeroRate,
    /// The rate asks for more than one message per nanosecond.
    RateTooHigh {
        /// The rejected rate, in messages per second.
        rate_per_sec: u64,
    },
}

impl fmt::Display for PacingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacingError::ZeroRate => write!(
                f,
                "rate 0 msg/s would never send a message; pass a rate from 1 to {MAX_RATE_PER_SEC} msg/s"
            ),
            PacingError::RateTooHigh { rate_per_sec } => write!(
                f,
                "rate {rate_per_sec} msg/s is above one message per nanosecond; pass a rate from 1 to {MAX_RATE_PER_SEC} msg/s"
            ),
        }
    }
}

impl std::error::Error for PacingError {}

/// A fixed-rate, drift-free send schedule starting at `start_ns` on the probe clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pacer {
    start_ns: i64,
    rate_per_sec: u64,
    /// Nominal interval (`1e9 / rate`), for display only: schedules never accumulate it.
    interval_ns: f64,
}

impl Pacer {
    /// A schedule of `rate_per_sec` messages per second whose message 0 is due at `start_ns`.
    ///
    /// Rejects a rate of 0 and rates above [`MAX_RATE_PER_SEC`].
    pub fn new(start_ns: i64, rate_per_sec: u64) -> Result<Self, PacingError> {
        if rate_per_sec == 0 {
            return Err(PacingError::ZeroRate);
        }
        if rate_per_sec > MAX_RATE_PER_SEC {
            return Err(PacingError::RateTooHigh { rate_per_sec });
        }
        Ok(Pacer {
            start_ns,
            rate_per_sec,
            interval_ns: 1e9 / rate_per_sec as f64,
        })
    }

    /// When message 0 is due.
    pub fn start_ns(&self) -> i64 {
        self.start_ns
    }

    /// The rate, in messages per second.
    pub fn rate_per_sec(&self) -> u64 {
        self.rate_per_sec
    }

    /// The nominal interval between two messages, in nanoseconds (may be fractional).
    pub fn interval_ns(&self) -> f64 {
        self.interval_ns
    }

    /// The intended send time of message `i`: `start + floor(i * 1e9 / rate)`.
    ///
    /// Exact for every `i` (128-bit arithmetic); saturates at `i64::MAX` instead of wrapping.
    #[inline]
    pub fn intended_ns(&self, i: u64) -> i64 {
        let offset = u128::from(i) * NS_PER_SEC / u128::from(self.rate_per_sec);
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        self.start_ns.saturating_add(offset)
    }

    /// Busy-spins until `now() >= intended_ns(i)` and returns that last reading of `now`.
    ///
    /// If message `i` is already due, `now` is called exactly once. The return value is a
    /// fresh reading of the clock, fit to be used as the message's actual send stamp.
    #[inline]
    pub fn wait_until(&self, i: u64, mut now: impl FnMut() -> i64) -> i64 {
        let due = self.intended_ns(i);
        loop {
            let t = now();
            if t >= due {
                return t;
            }
            // The spin-loop hint (PAUSE: tens of ns on recent x86) only while far from due:
            // close to it, each iteration is one clock read, so the send starts at most one
            // read after its intended time rather than a read and a pause.
            if due - t > NEAR_DUE_NS {
                std::hint::spin_loop();
            }
        }
    }

    /// How far `now_ns` is behind the intended send time of message `i`
    /// (positive: late; negative: early).
    #[inline]
    pub fn lag_ns(&self, i: u64, now_ns: i64) -> i64 {
        now_ns.saturating_sub(self.intended_ns(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn rejects_zero_and_too_high_with_cause_and_fix() {
        let e = Pacer::new(0, 0).unwrap_err();
        assert_eq!(e, PacingError::ZeroRate);
        let msg = e.to_string();
        assert!(!msg.contains('\n'));
        assert!(msg.contains("rate 0") && msg.contains("pass a rate from 1 to"));

        let e = Pacer::new(0, MAX_RATE_PER_SEC + 1).unwrap_err();
        assert_eq!(
            e,
            PacingError::RateTooHigh {
                rate_per_sec: 1_000_000_001
            }
        );
        let msg = e.to_string();
        assert!(!msg.contains('\n'));
        assert!(msg.contains("1000000001") && msg.contains("pass a rate from 1 to"));

        assert!(Pacer::new(0, 1).is_ok());
        assert!(Pacer::new(0, MAX_RATE_PER_SEC).is_ok());
    }

    #[test]
    fn intended_times_exact_without_drift() {
        let start = 123_456_789_i64;
        for rate in [1_u64, 3, 7, 10_000, 1_000_000, 999_983, MAX_RATE_PER_SEC] {
            let p = Pacer::new(start, rate).unwrap();
            assert_eq!(p.intended_ns(0), start);
            // Every whole second lands exactly on the second: no drift however far out.
            for k in [1_u64, 2, 10, 3_600, 86_400, 365 * 86_400] {
                assert_eq!(
                    p.intended_ns(k * rate),
                    start + (k as i64) * 1_000_000_000,
                    "rate {rate}, {k} s"
                );
            }
            // Dense check over many i against an independent exact formula, and spacing
            // never deviates from the nominal interval by more than the 1 ns rounding.
            let lo = (1_000_000_000 / rate) as i64;
            let mut prev = p.intended_ns(0);
            for i in 1..200_000_u64 {
                let t = p.intended_ns(i);
                let exact = start + ((i as u128 * 1_000_000_000) / rate as u128) as i64;
                assert_eq!(t, exact, "rate {rate}, i {i}");
                let d = t - prev;
                assert!(d == lo || d == lo + 1, "rate {rate}, i {i}: step {d}");
                prev = t;
            }
        }
    }

    #[test]
    fn intended_times_specific_values() {
        let p = Pacer::new(0, 3).unwrap();
        assert_eq!(p.intended_ns(1), 333_333_333);
        assert_eq!(p.intended_ns(2), 666_666_666);
        assert_eq!(p.intended_ns(3), 1_000_000_000);
        let p = Pacer::new(0, 7).unwrap();
        assert_eq!(p.intended_ns(7_000_000), 1_000_000_000_000_000); // 10^6 s
        assert_eq!(p.intended_ns(1), 142_857_142);
        // Accumulating a float interval would have drifted here; we do not.
        let p = Pacer::new(0, 1_000_000).unwrap();
        assert_eq!(p.intended_ns(1_000_000_000_000), 1_000_000_000_000_000);
    }

    #[test]
    fn intended_saturates_instead_of_wrapping() {
        let p = Pacer::new(i64::MAX - 10, 1).unwrap();
        assert_eq!(p.intended_ns(u64::MAX), i64::MAX);
        let p = Pacer::new(0, 1).unwrap();
        assert_eq!(p.intended_ns(u64::MAX), i64::MAX);
    }

    #[test]
    fn wait_until_returns_first_reading_at_or_after_due() {
        let p = Pacer::new(1_000, 1_000_000).unwrap(); // 1 µs interval
        let due = p.intended_ns(5);
        assert_eq!(due, 6_000);
        // Fake clock that advances 700 ns per read.
        let t = Cell::new(0_i64);
        let reads = Cell::new(0_u32);
        let got = p.wait_until(5, || {
            reads.set(reads.get() + 1);
            let now = t.get();
            t.set(now + 700);
            now
        });
        // Readings 0, 700, ..., 5600, 6300: the first >= 6000 is 6300, the 10th read.
        assert_eq!(got, 6_300);
        assert_eq!(reads.get(), 10);
        assert!(got >= due);
    }

    #[test]
    fn wait_until_exact_hit_returns_due() {
        let p = Pacer::new(0, 1_000).unwrap();
        let t = Cell::new(0_i64);
        let got = p.wait_until(2, || {
            let now = t.get();
            t.set(now + 1_000_000);
            now
        });
        assert_eq!(got, 2_000_000);
    }

    #[test]
    fn wait_until_reads_clock_once_when_late() {
        let p = Pacer::new(0, 1_000).unwrap();
        let reads = Cell::new(0_u32);
        let got = p.wait_until(3, || {
            reads.set(reads.get() + 1);
            50_000_000
        });
        assert_eq!(got, 50_000_000);
        assert_eq!(reads.get(), 1);
        assert_eq!(p.lag_ns(3, got), 47_000_000);
    }

    #[test]
    fn lag_sign() {
        let p = Pacer::new(100, 10).unwrap();
        assert_eq!(p.lag_ns(1, 100_000_100), 0);
        assert_eq!(p.lag_ns(1, 100_000_000), -100);
        assert_eq!(p.lag_ns(1, 100_000_600), 500);
        assert!((p.interval_ns() - 1e8).abs() < 1e-6);
        assert_eq!(p.rate_per_sec(), 10);
        assert_eq!(p.start_ns(), 100);
    }

    #[test]
    fn wait_until_on_real_clock() {
        let now = crate::sys::clock::now_ns;
        let p = Pacer::new(now(), 100_000).unwrap(); // 10 µs
        for i in 0..100 {
            let t = p.wait_until(i, now);
            assert!(t >= p.intended_ns(i));
        }
    }
}
