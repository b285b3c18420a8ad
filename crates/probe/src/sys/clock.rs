//! The probe's one clock.
//!
//! Guarantees:
//! - [`now_ns`] reads `CLOCK_MONOTONIC` through `clock_gettime`, which Linux serves from the
//!   vDSO: no syscall, no allocation, no lock. It is safe to call once or twice per message.
//! - `CLOCK_MONOTONIC` is one clock for every process on a host (not per process, not per
//!   thread), so a timestamp taken by the publisher process and one taken by the subscriber
//!   process on the same host can be subtracted to get a valid one-way latency. Across hosts it
//!   is meaningless: use round-trip mode there.
//! - Readings never go backwards on one host; they are not affected by NTP steps (only slewed).
//! - [`TIMING_MODEL`] is the sentence every report prints so the reader knows what was measured.

/// The timing model in one sentence; every report (text and JSON) carries it verbatim.
pub const TIMING_MODEL: &str = "latency = receive time - send time on CLOCK_MONOTONIC (one clock \
for every process on this host); 'intended' measures from the scheduled send time \
(coordinated-omission corrected, what a user of the stream sees), 'actual' from the moment the \
publisher wrote the message (what the transport adds)";

/// The round-trip timing model (`--mode rtt`); every round-trip report carries it verbatim.
pub const RTT_TIMING_MODEL: &str = "round trip = ping's clock reading when the echo arrives - its reading \
when it sent the message, both on ping's hot thread (CLOCK_MONOTONIC; no clock is shared with pong, so it \
holds across hosts); one message in flight: ping sends, then polls the pong stream until the echo of that \
message arrives; 'intended' measures from the scheduled send time (a slow round trip delays the next send, \
and that delay counts: coordinated-omission corrected), 'actual' from the moment ping wrote the message; \
in between: ping's claim + encode + commit, pong's poll + claim + copy + commit, ping's poll + decode";

/// Nanoseconds on `CLOCK_MONOTONIC`: one clock for every process on this host.
///
/// Served by the vDSO (no syscall). The epoch is unspecified (usually boot), so only differences
/// between readings on the same host mean anything. The reading is messaging's
/// [`StampClock::Monotonic`](aeron_latency::messaging::StampClock), the clock a stamping
/// publication writes into the reserved value: one reader for both.
#[inline]
pub fn now_ns() -> i64 {
    aeron_latency::messaging::StampClock::Monotonic.now_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_positive() {
        let mut prev = now_ns();
        assert!(prev > 0);
        for _ in 0..100_000 {
            let t = now_ns();
            assert!(t >= prev, "clock went backwards: {prev} -> {t}");
            prev = t;
        }
    }

    #[test]
    fn advances_with_real_time() {
        let a = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = now_ns();
        assert!(b - a >= 5_000_000, "slept 5 ms but clock advanced {} ns", b - a);
    }

    #[test]
    fn matches_std_instant_rate() {
        // std's Instant is also CLOCK_MONOTONIC on Linux: both must agree on elapsed time.
        let (a, ia) = (now_ns(), std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (b, ib) = (now_ns(), std::time::Instant::now());
        let ours = b - a;
        let theirs = i64::try_from(ib.duration_since(ia).as_nanos()).unwrap();
        assert!((ours - theirs).abs() < 2_000_000, "ours {ours} vs std {theirs}");
    }

    #[test]
    fn timing_model_names_both_latencies() {
        assert!(TIMING_MODEL.contains("CLOCK_MONOTONIC"));
        assert!(TIMING_MODEL.contains("'intended'"));
        assert!(TIMING_MODEL.contains("'actual'"));
        assert!(!TIMING_MODEL.contains("  "));
        assert_eq!(
            TIMING_MODEL,
            "latency = receive time - send time on CLOCK_MONOTONIC (one clock for every process on this host); 'intended' measures from the scheduled send time (coordinated-omission corrected, what a user of the stream sees), 'actual' from the moment the publisher wrote the message (what the transport adds)"
        );
    }
}
