//! The tap (feature `tap`): latency of a service's own traffic. This part is the send stamp: a
//! publication that stamps writes the time it sends each message into the frame's reserved
//! value ([`Publication::stamp_send_time`](crate::Publication::stamp_send_time)), so a
//! subscriber can tell how long the message took without a byte added to the payload.
//!
//! Guarantees:
//! - off by default: a publication that does not stamp writes the reserved value as before
//!   (zero, or what [`offer_with_reserved_value`](crate::Publication::offer_with_reserved_value)
//!   and [`Claim::set_reserved_value`](crate::Claim::set_reserved_value) give), so services that
//!   use the reserved value for their own purpose keep it;
//! - one meaning: the stamp is nanoseconds on the stated [`StampClock`], read once per attempt
//!   right before the space for the message is claimed (the probe's "actual send" point), or the
//!   time the caller already read ([`offer_stamped`](crate::Publication::offer_stamped),
//!   [`try_claim_stamped`](crate::Publication::try_claim_stamped): no second clock read);
//! - the clock read is `clock_gettime`, which Linux serves from the vDSO: no syscall, no lock,
//!   no allocation.

/// The clock a send stamp is read from. Both are nanoseconds as `clock_gettime` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StampClock {
    /// `CLOCK_MONOTONIC`: publisher and subscriber on one host (the default choice).
    Monotonic,
    /// `CLOCK_REALTIME`: hosts whose clocks are synchronised (PTP); a receiver's clock behind
    /// the sender's gives negative latencies, which a reader should count, not drop.
    Realtime,
}

impl StampClock {
    /// Its name where figures are recorded: `"monotonic"` or `"realtime"`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            StampClock::Monotonic => "monotonic",
            StampClock::Realtime => "realtime",
        }
    }

    /// Now on this clock, nanoseconds.
    #[inline]
    #[must_use]
    pub fn now_ns(self) -> i64 {
        let id = match self {
            StampClock::Monotonic => libc::CLOCK_MONOTONIC,
            StampClock::Realtime => libc::CLOCK_REALTIME,
        };
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec for the call; both clock ids exist on every
        // Linux kernel, so clock_gettime only writes `ts`.
        let rc = unsafe { libc::clock_gettime(id, &raw mut ts) };
        debug_assert_eq!(rc, 0, "clock_gettime({self}) failed");
        // `time_t` and `c_long` are i64 on 64-bit Linux but narrower on some 32-bit targets.
        #[allow(clippy::unnecessary_cast)]
        let ns = (ts.tv_sec as i64) * 1_000_000_000 + ts.tv_nsec as i64;
        ns
    }
}

impl std::fmt::Display for StampClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::StampClock;

    #[test]
    fn the_clocks_read_as_clock_gettime_gives_them() {
        let (a, b) = (StampClock::Monotonic.now_ns(), StampClock::Monotonic.now_ns());
        assert!(a > 0 && b >= a, "monotonic: {a} then {b}");
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let real = StampClock::Realtime.now_ns();
        assert!(
            (real - wall).abs() < 1_000_000_000,
            "realtime {real} vs the system time {wall}"
        );
        assert_eq!(StampClock::Realtime.to_string(), "realtime");
        assert_eq!(StampClock::Monotonic.name(), "monotonic");
    }
}
