//! The physical floor: the raw cache-line round trip between the two hot cores.
//!
//! # Guarantees
//! - [`measure`] runs two threads pinned to the given cores that bounce one counter on its own
//!   128-byte-aligned cache line (no Aeron, no allocation, no syscall in the loop) and records
//!   every round trip in an HdrHistogram.
//! - Timing model: [`FLOOR_TIMING_MODEL`]. Each round trip is timed with the same clock
//!   ([`now_ns`], `CLOCK_MONOTONIC` through the vDSO) and the same two readings per round trip
//!   as the probe's own round trips, so a ratio to it cancels the clock's cost and the machine's
//!   inter-core distance; what remains is what the messaging stack adds.
//! - On a VM the inter-core round trip can jump between regimes for seconds at a time.
//!   `latency-probe` measures the floor right before and right after every measured phase
//!   ([`Floor`]) and warns when the two differ by more than [`MOVED_FACTOR`](crate::model::MOVED_FACTOR): then no ratio
//!   from that run is trustworthy.
//!
//! ```no_run
//! let h = latency_probe::measure::floor::measure(Some(0), Some(1), std::time::Duration::from_millis(200))?;
//! println!("raw round trip p50 {} ns", h.value_at_quantile(0.5));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::measure::histogram::new_latency_histogram;
use crate::measure::histogram::record_saturating;
use crate::model::ratios;
use crate::model::regime_moved;
use crate::model::Floor;
use crate::model::FloorSample;
use crate::model::Stats;
use crate::model::FLOOR_TIMING_MODEL;
use crate::sys::clock::now_ns;
use aeron_latency::messaging::{SpawnError, ThreadBuilder};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Why the floor could not be measured.
#[derive(Debug)]
pub enum FloorError {
    /// A thread could not be started or pinned (e.g. a core that does not exist).
    Thread(SpawnError),
    /// The measuring thread panicked.
    Panicked,
}

impl std::fmt::Display for FloorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FloorError::Thread(e) => write!(f, "floor: {e}"),
            FloorError::Panicked => f.write_str("floor: the measuring thread panicked"),
        }
    }
}

impl std::error::Error for FloorError {}

/// Default length of each floor measurement (before and after the run), seconds.
pub const DEFAULT_FLOOR_SECONDS: f64 = 0.25;

/// Round trips run first and not recorded (page-in, cache and predictor warm-up), for at most a
/// tenth of the measurement.
const WARMUP_ROUND_TRIPS: u64 = 10_000;

/// The bounced counter, alone on its cache line (128 bytes: adjacent-line prefetch pairs lines).
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Line(pub AtomicU64);

/// The responder's stop value (the initiator only ever stores odd values).
pub const STOP: u64 = u64::MAX - 1;

/// The responder's side of the ping-pong: answers every odd value `v` the initiator stores
/// with `v + 1`, spinning, until it sees [`STOP`]. Shared with the round-trip bench.
pub fn respond(line: &Line) {
    let mut last = 0;
    loop {
        let v = line.0.load(Ordering::Acquire);
        if v == STOP {
            return;
        }
        if v != last && v % 2 == 1 {
            last = v + 1;
            line.0.store(last, Ordering::Release);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Measures the raw cache-line round trip between `initiator` and `responder` cores for
/// `duration` (after a short warm-up) and returns every round trip in a histogram (ns).
///
/// Both threads busy-spin for the whole time: give it the two cores the hot threads will use,
/// while nothing else spins there.
///
/// # Errors
/// A core that does not exist or cannot be pinned (the message names it), or a thread that
/// could not start.
pub fn measure(
    initiator: Option<usize>,
    responder: Option<usize>,
    duration: Duration,
) -> Result<Histogram<u64>, FloorError> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let ready = Arc::new(AtomicBool::new(false));
    let (l2, r2, l3) = (line.clone(), ready.clone(), line.clone());
    let pong = ThreadBuilder::new()
        .name("floor-pong")
        .affinity_opt(responder)
        .spawn(move || {
            r2.store(true, Ordering::Release);
            respond(&l2);
        })
        .map_err(FloorError::Thread)?;
    let ping = ThreadBuilder::new()
        .name("floor-ping")
        .affinity_opt(initiator)
        .spawn(move || {
            // Stops the responder however this thread ends (a panic included).
            struct Stop(Arc<Line>);
            impl Drop for Stop {
                fn drop(&mut self) {
                    self.0 .0.store(STOP, Ordering::Release);
                }
            }
            let _stop = Stop(line.clone());
            while !ready.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let mut h = new_latency_histogram();
            let mut next: u64 = 1;
            // Returns the reading that ended the round trip and its length.
            let round_trip = |next: &mut u64| -> (i64, i64) {
                let t0 = now_ns();
                line.0.store(*next, Ordering::Release);
                while line.0.load(Ordering::Acquire) != *next + 1 {
                    std::hint::spin_loop();
                }
                let t1 = now_ns();
                *next += 2;
                (t1, t1 - t0)
            };
            // Both phases are bounded in time, not count: on a busy machine (another spinner on
            // these cores) one round trip can take a scheduler time slice.
            let start = now_ns();
            let warm_until = start + (duration.as_nanos() as i64 / 10).max(1_000_000);
            for _ in 0..WARMUP_ROUND_TRIPS {
                if round_trip(&mut next).0 >= warm_until {
                    break;
                }
            }
            let end = now_ns() + duration.as_nanos() as i64;
            loop {
                let (at, rtt) = round_trip(&mut next);
                record_saturating(&mut h, rtt.max(0) as u64);
                if at >= end {
                    break;
                }
            }
            h
        });
    let ping = match ping {
        Ok(p) => p,
        Err(e) => {
            l3.0.store(STOP, Ordering::Release);
            let _ = pong.join();
            return Err(FloorError::Thread(e));
        }
    };
    let h = ping.join().map_err(|_| FloorError::Panicked)?;
    let _ = pong.join();
    Ok(h)
}

/// Measures the floor before a phase; call [`FloorRun::after`] right after it (under the same
/// conditions: driver and meter still running) and [`FloorRun::finish`] once the run's
/// latencies are known.
#[derive(Debug)]
pub struct FloorRun {
    cores: (Option<usize>, Option<usize>),
    duration: Duration,
    before: Histogram<u64>,
    at_ns: i64,
    after: Option<(Histogram<u64>, i64)>,
}

impl FloorRun {
    /// Measures the "before" floor now.
    ///
    /// # Errors
    /// As [`measure`].
    pub fn before(
        initiator: Option<usize>,
        responder: Option<usize>,
        duration: Duration,
    ) -> Result<FloorRun, FloorError> {
        let at_ns = now_ns();
        let before = measure(initiator, responder, duration)?;
        Ok(FloorRun {
            cores: (initiator, responder),
            duration,
            before,
            at_ns,
            after: None,
        })
    }

    /// Measures the "after" floor now.
    pub fn after(&mut self) {
        let at_ns = now_ns();
        self.after = measure(self.cores.0, self.cores.1, self.duration)
            .ok()
            .map(|h| (h, at_ns));
    }

    /// Relates `latency` to the floor before and (if [`FloorRun::after`] ran) after.
    #[must_use]
    pub fn finish(self, latency: &Stats) -> Floor {
        let (after, at_ns) = match self.after {
            Some((h, at)) => (Some(h), at),
            None => (None, 0),
        };
        let mut combined = self.before.clone();
        if let Some(a) = &after {
            let _ = combined.add(a);
        }
        let combined_ns = Stats::from_histogram(&combined);
        let before = FloorSample {
            round_trip_ns: Stats::from_histogram(&self.before),
            at_ns: self.at_ns,
        };
        let after = after.map(|a| FloorSample {
            round_trip_ns: Stats::from_histogram(&a),
            at_ns,
        });
        let moved = after
            .as_ref()
            .is_some_and(|a| regime_moved(before.round_trip_ns.p50, a.round_trip_ns.p50));
        Floor {
            cores: self.cores,
            seconds_each: self.duration.as_secs_f64(),
            before,
            after,
            ratios: ratios(latency, &combined_ns),
            combined_ns,
            moved,
            timing_model: FLOOR_TIMING_MODEL.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::QUANTILES;

    #[test]
    fn a_floor_measurement_records_round_trips() {
        // Unpinned: this checks the mechanics, not the figures. On 2 cores another test may
        // spin beside it, so the two threads can share one core: give it time, ask for little.
        let h = measure(None, None, Duration::from_millis(200)).unwrap();
        assert!(h.len() >= 10, "only {} round trips", h.len());
        assert!(h.min() > 0);
    }

    #[test]
    fn a_core_that_does_not_exist_is_named() {
        let e = measure(Some(10_000), None, Duration::from_millis(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("10000"), "{e}");
    }

    #[test]
    fn regimes_130_and_500_ns_differ_but_130_and_160_do_not() {
        assert!(regime_moved(130, 500));
        assert!(regime_moved(500, 130));
        assert!(!regime_moved(130, 160));
        assert!(!regime_moved(0, 1));
    }

    #[test]
    fn ratios_divide_percentile_by_percentile() {
        let mut l = new_latency_histogram();
        let mut f = new_latency_histogram();
        for v in 1..=1000u64 {
            l.record(v * 3).unwrap();
            f.record(v).unwrap();
        }
        let r = ratios(&Stats::from_histogram(&l), &Stats::from_histogram(&f));
        assert_eq!(r.len(), QUANTILES.len());
        for (name, x) in r {
            assert!((x - 3.0).abs() < 0.05, "{name}: {x}");
        }
    }
}
