//! The tap (feature `tap`): the latency of a service's own traffic, per hop and end to end,
//! with no byte added to its messages.
//!
//! - **Stamp**: a publication that stamps writes the time it sends each message into the
//!   frame's reserved value ([`Publication::stamp_send_time`](crate::Publication::stamp_send_time)).
//!   A service that forwards messages writes a forwarded [`Stamp`] (its own send time and the
//!   message's age since the origin), so the next hop records both its hop and end to end.
//! - **Record**: a subscription that records
//!   ([`Subscriber::record_latency`](crate::Subscriber::record_latency)) puts each stamped
//!   message's receive time minus its stamp into an interval per session (HdrHistogram's
//!   counts, 3 significant digits), on the polling thread; a [`FigureRecorder`] records what a service measures itself (receive to publish).
//! - **Write**: the [`Tap`]'s thread writes one interval log (`.hlog`, HdrHistogram's format,
//!   readable by its `HistogramLogProcessor` and by `latency-probe tap`) per figure every
//!   interval, rotates them, and keeps a status file ([`STATUS_FILE`]) and a Prometheus textfile
//!   ([`PROMETHEUS_FILE`]) up to date.
//!
//! Guarantees:
//! - off by default: a publication that does not stamp writes the reserved value as before
//!   (zero, or what [`offer_with_reserved_value`](crate::Publication::offer_with_reserved_value)
//!   and [`Claim::set_reserved_value`](crate::Claim::set_reserved_value) give), so services that
//!   use the reserved value for their own purpose keep it; a subscription records only when
//!   asked;
//! - one meaning: a stamp is nanoseconds on the stated [`StampClock`], read once per attempt
//!   right before the space for the message is claimed (the probe's "actual send" point), or the
//!   time the caller already read ([`offer_stamped`](crate::Publication::offer_stamped),
//!   [`try_claim_stamped`](crate::Publication::try_claim_stamped): no second clock read);
//! - the receive time is read once per poll, when the poll reaches its first stamped message;
//!   the messages after it in the same poll share it (it is read again for a message stamped
//!   after it, which the publisher appended meanwhile), so the time they waited behind the
//!   handler's work on earlier ones counts as time inside the receiver, not on the hop (poll
//!   with a fragment limit of 1 to time each message on its own);
//! - nothing lost, nothing twice: every message a subscription hands over is counted once in
//!   its hop's figure (recorded, negative, or unstamped); with
//!   [`controlled_poll`](crate::Subscriber::controlled_poll), only when the handler keeps it
//!   (not on `Abort`, which hands it over again);
//! - the hot path takes no lock, allocates nothing and makes no syscall: the clock read is
//!   `clock_gettime` from the vDSO, a poll records each message it keeps straight into its
//!   session's interval with plain writes, and at its end loads one word to see whether the
//!   writer asked for the intervals (it then switches them: no atomic read-modify-write per
//!   poll); the histograms are allocated when a session first appears;
//! - stop recording before stopping the tap
//!   ([`Subscriber::stop_recording`](crate::Subscriber::stop_recording), or drop the
//!   subscriber): the tap then takes all it holds; a subscription still recording hands its
//!   last interval over only if it is polled while the writer waits, and
//!   [`TapSummary::unanswered`] counts those that were not;
//! - failures reach the caller: the writer keeps going after a failed write (a file is cut
//!   back to its last whole line), [`Tap::write_errors`] counts them as they happen, and
//!   [`Tap::stop`] returns [`TapError::WritesFailed`](crate::TapError::WritesFailed) with the
//!   first and the summary.
//!
//! ```
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use messaging::tap::{RecordLatency, StampClock, Tap};
//! use messaging::{Client, EmbeddedDriver};
//!
//! let dir = std::env::temp_dir().join(format!("tap-doc-{}", std::process::id()));
//! let driver = EmbeddedDriver::builder().private_dir().spawn()?;
//! let client = Client::builder().dir(driver.dir()).build()?;
//! let tap = Tap::builder(&dir).start()?;
//! let mut sub = client.subscription("aeron:ipc", 10)?;
//! sub.record_latency(&tap, RecordLatency::hop("feed"))?;
//! let mut publ = client.publication("aeron:ipc", 10)?;
//! publ.stamp_send_time(Some(StampClock::Monotonic));
//! while !sub.is_connected() {
//!     std::thread::yield_now();
//! }
//! let mut got = 0;
//! for _ in 0..100 {
//!     while publ.offer(b"tick").is_err() {
//!         std::thread::yield_now();
//!     }
//! }
//! while got < 100 {
//!     got += sub.poll(&mut |_, _| {}, 10)?;
//! }
//! sub.stop_recording(); // the tap takes all it holds
//! let summary = tap.stop()?;
//! assert_eq!(summary.unanswered, 0);
//! assert_eq!(summary.figures[0].recorded, 100);
//! assert!(dir.join("feed.hlog").exists());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "embedded-driver"))] fn main() {}
//! ```

mod builder;
mod collect;
mod deflate;
mod export;
mod handover;
mod phaser;
mod poll;
mod record;
mod slowest;
mod stamp;
mod summary;
mod tally;
mod writer;

pub use builder::TapBuilder;
pub use export::BUCKETS_S;
pub(crate) use record::SubscriberTap;
pub use record::{FigureRecorder, RecordLatency};
pub use slowest::{SLOWEST_DEFAULT, SLOWEST_FILE, SLOWEST_FILE_MAX, SLOWEST_FILE_OLD, SLOWEST_MAX};
pub use stamp::{Latency, Stamp, MAX_AGE_NS, MAX_FORWARDED_HOP_NS};
pub use summary::{FigureSummary, TapSummary};
pub use writer::{Tap, PROMETHEUS_FILE, STATUS_FILE};

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

/// Writes `fill` into every page of `items`, which holds `fill` everywhere (it was just made
/// with it), so that its pages are mapped now, where it is made, rather than at the first
/// write into each page on the recording thread, in the middle of what it measures (a page
/// fault: tens to hundreds of µs on a VM whose host maps the page in too). An array of a few
/// pages comes back from the allocator untouched when it is zeroed: `vec![0; n]`, and in a
/// release build `vec![T::default(); n]` of a type whose default is all zeros, whose fill the
/// optimiser turns into a zeroed allocation.
pub(crate) fn fault_in<T: Copy>(items: &mut [T], fill: T) {
    let per_page = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    for i in (0..items.len()).step_by(per_page) {
        // SAFETY: the pointer comes from a live `&mut` to an element, so it is valid for a
        // write and aligned; volatile, because a plain store of the value the element already
        // holds may be removed by the optimiser.
        unsafe { std::ptr::write_volatile(&raw mut items[i], fill) };
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
