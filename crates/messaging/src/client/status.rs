//! What a client reads without the conductor's lock: its driver's liveness
//! ([`DriverLiveness`]), the driver's status, the subscriber positions and the counters.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::Client;
use crate::cnc::{driver_status, list_counters, DriverCounter, DriverStatus, SUBSCRIBER_POSITION_COUNTER_TYPE_ID};
use crate::conductor::{liveness_error, ACTIVE};
use crate::error::LivenessError;

/// Whether a [`Client`] can still work with its media driver.
///
/// Guarantees: [`is_active`](Self::is_active) is one atomic load (no lock, no syscall), so a
/// hot loop may ask it as often as it likes. It turns false, for good, within one conductor duty
/// cycle ([`CONDUCTOR_IDLE`](crate::CONDUCTOR_IDLE)) of any of these, and
/// [`error`](Self::error) says which ([`LivenessError`]):
/// - the driver closed in order (it writes a null heartbeat when it stops; aeron-rs 0.1.8
///   never notices);
/// - the driver's heartbeat is older than the driver timeout (`AERON_DRIVER_TIMEOUT`, default
///   10 s): it was killed, hangs, or is stopped;
/// - the driver timed this client out (the client did not keep in touch for longer than the
///   driver's client liveness timeout, e.g. its process was paused): its publications and
///   subscriptions are gone.
///
/// The driver's heartbeat is read from `cnc.dat` by this client's conductor thread, not by
/// the hot path. Cloning is cheap.
///
/// ```
/// # #[cfg(feature = "embedded-driver")]
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
/// let client = messaging::Client::connect(driver.dir())?;
/// let live = client.liveness();
/// while live.is_active() {
///     // poll, offer, ...
/// #   break;
/// }
/// if let Some(e) = live.error() {
///     eprintln!("{e}");
/// }
/// # Ok(()) }
/// # #[cfg(not(feature = "embedded-driver"))] fn main() {}
/// ```
#[derive(Debug, Clone)]
pub struct DriverLiveness {
    state: Arc<AtomicU8>,
    dir: PathBuf,
    timeout: Duration,
}

impl DriverLiveness {
    /// False once the client lost its driver (see [`error`](Self::error) for why).
    #[inline]
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ACTIVE
    }

    /// Why the client lost its driver, or `None` while it has it.
    #[must_use]
    pub fn error(&self) -> Option<LivenessError> {
        liveness_error(self.state.load(Ordering::Acquire), &self.dir, self.timeout)
    }

    /// The driver timeout this client applies.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// One line for the user: which driver, what happened, what to do (empty while active).
    #[must_use]
    pub fn describe(&self) -> String {
        self.error().map(|e| e.to_string()).unwrap_or_default()
    }
}

impl Client {
    /// The driver directory this client is connected to.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The id the driver knows this client by.
    #[must_use]
    pub fn client_id(&self) -> i64 {
        self.inner.client_id
    }

    /// The driver's heartbeat status right now.
    #[must_use]
    pub fn driver_status(&self) -> DriverStatus {
        driver_status(&self.inner.dir, self.inner.timeout)
    }

    /// True once this client lost its driver (closed, timed out, or this client timed out by
    /// it): one atomic load, never the conductor's lock. See [`DriverLiveness`].
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.shared.lost.state.load(Ordering::Relaxed) != ACTIVE
    }

    /// Whether the driver still answers, as this client sees it: a cheap handle for hot loops.
    #[must_use]
    pub fn liveness(&self) -> DriverLiveness {
        DriverLiveness {
            state: self.inner.shared.lost.state.clone(),
            dir: self.inner.dir.clone(),
            timeout: self.inner.timeout,
        }
    }

    /// The positions of the subscribers reading the stream `stream_id` of publication
    /// `session_id` (Aeron's `sub-pos` counters, one per subscriber, as AeronStat shows them).
    /// Empty when nobody reads it. Reads the counters through this client's own mapping of
    /// `cnc.dat` (plain loads, never the conductor's lock), but scans them all and allocates:
    /// not for a hot loop.
    #[must_use]
    pub fn subscriber_positions(&self, session_id: i32, stream_id: i32) -> Vec<i64> {
        let reader = self.inner.counters_reader();
        let mut ids = Vec::new();
        reader.for_each(|id, type_id, key, _label| {
            // Aeron's stream counter key: registration id (i64), session id (i32), stream id (i32).
            if type_id == SUBSCRIBER_POSITION_COUNTER_TYPE_ID
                && key.get::<i32>(8) == session_id
                && key.get::<i32>(12) == stream_id
            {
                ids.push(id);
            }
        });
        ids.into_iter()
            .filter_map(|id| reader.counter_value(id).ok())
            .map(|v| v as i64)
            .collect()
    }

    /// A snapshot of the driver's counters (as AeronStat shows them): back-pressure events,
    /// errors, per-stream positions, client heartbeats, … Plain loads through this client's
    /// own mapping of `cnc.dat`, never the conductor's lock; allocates the list.
    #[must_use]
    pub fn counters(&self) -> Vec<DriverCounter> {
        list_counters(&self.inner.counters_reader())
    }
}

#[cfg(all(test, feature = "embedded-driver"))]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;
    use crate::{EmbeddedDriver, IdleStrategy};

    /// Status reads are Aeron's plain reads: they answer while every lock aeron-rs's conductor
    /// takes (the client's, the publication's, the subscription's) is held by someone else.
    #[test]
    fn status_reads_never_wait_for_the_conductor_s_locks() {
        let d = EmbeddedDriver::builder()
            .private_dir()
            .ipc_term_length(64 << 10)
            .spawn()
            .unwrap();
        let client = Client::connect(d.dir()).unwrap();
        let sub = client.subscription("aeron:ipc", 60).unwrap();
        let publ = client.publication("aeron:ipc", 60).unwrap();
        let mut idle: IdleStrategy = "yield".parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Err(e) = publ.offer(&[1; 40]) {
            assert!(e.is_retryable() && Instant::now() < deadline, "{e}");
            idle.idle_once();
        }
        while sub.image_count() == 0 {
            assert!(Instant::now() < deadline, "no image");
            idle.idle_once();
        }
        let crate::publication::Registration::Concurrent(publication) = &*publ.registration else {
            unreachable!("a concurrent publication")
        };
        let (shared, publication, subscription) = (
            client.inner.shared.clone(),
            publication.clone(),
            sub.subscription.clone(),
        );
        let (tx, rx) = mpsc::channel();
        let answered = std::thread::scope(|s| {
            let held = (
                shared.aeron.lock().unwrap(),
                publication.lock().unwrap(),
                subscription.lock().unwrap(),
            );
            let client = &client;
            s.spawn(move || {
                let status = (
                    publ.is_connected(),
                    publ.position(),
                    sub.image_count(),
                    sub.is_connected(),
                    client.counters().is_empty(),
                    client.is_closed(),
                );
                let _ = tx.send(status);
            });
            let answered = rx.recv_timeout(Duration::from_secs(5));
            // Let a reader that did wait finish, so the scope can join it.
            drop(held);
            answered
        });
        // The raw aeron-rs clones are now the last references: drop them as `AeronHandle`
        // does, under the lock the conductor holds while it may hold an upgraded clone, so the
        // last drop is ours and never the conductor's (which would take its own lock again).
        let cycle = shared.aeron.lock().unwrap();
        drop((publication, subscription));
        drop(cycle);
        let status = answered.expect("a status read waited for a lock the conductor takes");
        // One 40-byte message: a 32-byte header, 72 bytes aligned to 96.
        assert_eq!(status, (true, Ok(96), 1, true, false, false));
    }
}
