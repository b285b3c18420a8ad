//! The client conductor: our thread that runs aeron-rs's conductor duty cycle, and the state
//! every handle of a client shares, which tells the driver the client closed when it goes.

use std::collections::HashMap;
use std::io::Write as _;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aeron_rs::aeron::Aeron;
use aeron_rs::cnc_file_descriptor;
use aeron_rs::command::control_protocol_events::AeronCommand;
use aeron_rs::command::correlated_message_flyweight::CORRELATED_MESSAGE_LENGTH;
use aeron_rs::concurrent::atomic_buffer::AtomicBuffer;
use aeron_rs::concurrent::counters::CountersReader;
use aeron_rs::concurrent::ring_buffer::ManyToOneRingBuffer;
use aeron_rs::utils::errors::{error_log_reader, AeronError};
use aeron_rs::utils::memory_mapped_file::MemoryMappedFile;

use crate::error::{AddError, AsyncError, LivenessError};

/// How long the conductor thread sleeps between duty cycles: aeron-rs's own 4 ms
/// (`IDLE_SLEEP_MS`). Each wake-up briefly takes a core; a late publisher is noticed within it.
pub const CONDUCTOR_IDLE: Duration = Duration::from_millis(4);

/// [`Lost::state`]: the client works with its driver.
pub(crate) const ACTIVE: u8 = 0;
/// The driver closed in order (it wrote the null heartbeat).
pub(crate) const DRIVER_CLOSED: u8 = 1;
/// The driver's heartbeat is older than the driver timeout (killed, hung, stopped).
pub(crate) const DRIVER_TIMED_OUT: u8 = 2;
/// The driver timed this client out (it did not hear from it for the client liveness timeout).
pub(crate) const CLIENT_TIMED_OUT: u8 = 3;
/// The client's conductor thread panicked and stopped.
pub(crate) const CONDUCTOR_STOPPED: u8 = 4;

/// Where a client's asynchronous errors go.
pub(crate) type ErrorHandler = Arc<dyn Fn(&AsyncError) + Send + Sync>;

/// The default handler: one line on stderr. Not `eprintln!`, which panics when stderr is gone
/// (a closed pipe): that would take the thread reporting the error down with it.
pub(crate) fn print_error(e: &AsyncError) {
    let _ = writeln!(std::io::stderr(), "{e}");
}

/// `handler`, made safe to call from the client's and the driver's own threads: a panic in it
/// is caught and told on stderr with the error it was handed, and the thread goes on (an
/// uncaught one would stop the conductor, and with it the client, with nothing said).
pub(crate) fn guarded(handler: ErrorHandler) -> ErrorHandler {
    Arc::new(move |e: &AsyncError| {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| handler(e))) {
            let _ = writeln!(
                std::io::stderr(),
                "messaging: the error handler panicked ({}) when handed: {e}",
                panic_words(panic.as_ref())
            );
        }
    })
}

/// A panic's message, as far as it is a string.
pub(crate) fn panic_words(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// Runs `body` (the conductor's loop); if it panics, the client is marked
/// [`CONDUCTOR_STOPPED`] so that every handle says so, instead of waiting for answers that
/// would never come.
pub(crate) fn stop_on_panic(lost: &Lost, body: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(body)).is_err() {
        lost.mark(CONDUCTOR_STOPPED);
    }
}

/// The liveness error for state `code` (`None` while [`ACTIVE`]).
pub(crate) fn liveness_error(code: u8, dir: &Path, timeout: Duration) -> Option<LivenessError> {
    let dir = dir.to_owned();
    match code {
        ACTIVE => None,
        DRIVER_CLOSED => Some(LivenessError::DriverClosed { dir }),
        DRIVER_TIMED_OUT => Some(LivenessError::DriverTimedOut { dir, timeout }),
        CONDUCTOR_STOPPED => Some(LivenessError::ConductorStopped { dir }),
        _ => Some(LivenessError::ClientTimedOut { dir }),
    }
}

/// A client's liveness state and where its errors go; shared by the conductor thread and
/// aeron-rs's error handler.
#[derive(Clone)]
pub(crate) struct Lost {
    /// [`ACTIVE`], or why the client lost its driver (read with one load).
    pub(crate) state: Arc<AtomicU8>,
    pub(crate) on_error: ErrorHandler,
    pub(crate) dir: PathBuf,
    pub(crate) timeout: Duration,
}

impl Lost {
    /// Records the first reason the client lost its driver and hands it to the error handler;
    /// later reasons (aeron-rs repeats its own every duty cycle) change nothing.
    pub(crate) fn mark(&self, why: u8) {
        if self
            .state
            .compare_exchange(ACTIVE, why, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            if let Some(e) = liveness_error(why, &self.dir, self.timeout) {
                (self.on_error)(&AsyncError::Liveness(e));
            }
        }
    }
}

/// The aeron-rs client, the flag that stops our conductor thread, and what the conductor
/// watches of the driver.
pub(crate) struct Shared {
    pub(crate) aeron: Mutex<Option<Aeron>>,
    pub(crate) stop: AtomicBool,
    /// The liveness state: set by the duty cycle (the driver's heartbeat) and by aeron-rs's
    /// error handler (its timeouts).
    pub(crate) lost: Lost,
    /// The to-driver ring buffer in `cnc`: its consumer heartbeat is the driver's.
    pub(crate) heartbeat: ManyToOneRingBuffer,
    /// The driver timeout, ms.
    pub(crate) timeout_ms: i64,
    /// Our own mapping of the driver's cnc.dat (outlives `heartbeat` and `Inner::to_driver`).
    pub(crate) cnc: MemoryMappedFile,
    /// Subscriptions whose pending add was dropped before it handed them over
    /// ([`release_abandoned`]).
    pub(crate) abandoned: Mutex<Vec<i64>>,
}

// SAFETY: `Aeron` holds `Arc<Mutex<..>>`s and raw pointers into memory maps it owns for its
// whole life; aeron-rs itself shares it between the caller and its conductor thread. Here it
// is only ever touched through the Mutex above. `heartbeat` points into `cnc`, a shared
// mapping that lives as long as this struct; it is only read (one volatile load).
unsafe impl Send for Shared {}
// SAFETY: as above; all access goes through the Mutex, the atomics or read-only loads.
unsafe impl Sync for Shared {}

/// An aeron-rs subscription or publication that is only dropped between the conductor's duty
/// cycles. aeron-rs's conductor upgrades its weak reference to one while it handles an event
/// (an image that comes or goes, an error), holding aeron-rs's conductor lock; were that
/// clone the last, the handle's own `Drop` would take the same lock again on the conductor
/// thread and hang the client for ever. Dropped under [`Shared::aeron`], which the conductor
/// loop holds for each duty cycle, ours is always the last reference.
pub(crate) struct AeronHandle<T> {
    handle: ManuallyDrop<T>,
    shared: Arc<Shared>,
}

impl<T> AeronHandle<T> {
    pub(crate) fn new(handle: T, shared: Arc<Shared>) -> Self {
        Self {
            handle: ManuallyDrop::new(handle),
            shared,
        }
    }
}

impl<T> std::ops::Deref for AeronHandle<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.handle
    }
}

impl<T> Drop for AeronHandle<T> {
    fn drop(&mut self) {
        let cycle = self.shared.aeron.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.handle) };
        drop(cycle);
    }
}

/// Milliseconds since the epoch, the clock of the driver's heartbeat.
fn epoch_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Checks the driver's heartbeat (one load): a null heartbeat is an orderly close, an old one
/// a driver that was killed or hangs. aeron-rs 0.1.8 treats the null heartbeat as "never
/// times out", and checks the age only when its own conductor runs.
fn check_driver(shared: &Shared) {
    let hb = shared.heartbeat.consumer_heartbeat_time();
    if hb < 0 {
        shared.lost.mark(DRIVER_CLOSED);
    } else if hb > 0 && epoch_ms() - hb > shared.timeout_ms {
        shared.lost.mark(DRIVER_TIMED_OUT);
    }
}

/// How often the conductor reads the driver's error log.
const ERROR_LOG_PERIOD: Duration = Duration::from_millis(100);

/// What the conductor has seen of the driver's distinct error log (in `cnc.dat`): each
/// entry's observation count, keyed by when it was first observed and its text.
pub(crate) struct DriverErrors {
    seen: HashMap<(i64, String), i32>,
    last_scan: std::time::Instant,
}

impl DriverErrors {
    /// What the log holds now, taken as already reported (older than this client).
    pub(crate) fn primed(cnc: &MemoryMappedFile) -> Self {
        let mut errors = Self {
            seen: HashMap::new(),
            last_scan: std::time::Instant::now(),
        };
        errors.scan(cnc, &mut |_| {});
        errors
    }

    /// Hands every entry that is new, or observed again, since the last scan to `report`.
    pub(crate) fn scan(&mut self, cnc: &MemoryMappedFile, report: &mut dyn FnMut(AsyncError)) {
        self.last_scan = std::time::Instant::now();
        let log = cnc_file_descriptor::create_error_log_buffer(cnc);
        if log.capacity() <= 0 {
            return;
        }
        let seen = &mut self.seen;
        error_log_reader::read(
            log,
            |count: i32, first: i64, _last: i64, text: std::ffi::CString| {
                let message = text.to_string_lossy().trim_end().to_owned();
                let before = seen.insert((first, message.clone()), count);
                if before.is_none_or(|b| b < count) {
                    report(AsyncError::Driver {
                        message: crate::error::aeron_error_line(&message).unwrap_or(message),
                        observations: count.max(0) as u32,
                    });
                }
            },
            0,
        );
    }

    fn due(&self) -> bool {
        self.last_scan.elapsed() >= ERROR_LOG_PERIOD
    }
}

/// One duty cycle every `CONDUCTOR_IDLE`, taking the lock only for the duty cycle itself; the
/// driver's error log every [`ERROR_LOG_PERIOD`].
pub(crate) fn conductor_loop(shared: &Shared, mut errors: DriverErrors) {
    while !shared.stop.load(Ordering::Acquire) {
        if errors.due() {
            errors.scan(&shared.cnc, &mut |e| (shared.lost.on_error)(&e));
        }
        // Once the driver is gone there is nothing to do but wait to be dropped.
        check_driver(shared);
        if shared.lost.state.load(Ordering::Acquire) != ACTIVE {
            std::thread::sleep(CONDUCTOR_IDLE);
            continue;
        }
        if let Ok(mut g) = shared.aeron.lock() {
            if let Some(a) = g.as_mut() {
                a.conductor_agent_invoker().invoke();
                release_abandoned(a, &shared.abandoned);
            }
        }
        std::thread::sleep(CONDUCTOR_IDLE);
    }
}

/// Drops the subscriptions whose pending add was dropped before it handed them over, once the
/// driver has answered. aeron-rs holds a strong reference to a new subscription until it is
/// found; were it still there when the client closes, aeron-rs would drop it under its own
/// conductor lock (`close_all_resources`) and hang, as [`AeronHandle`] explains. Found and
/// dropped here, between duty cycles, it is removed from the driver at once. Registrations the
/// driver has not answered yet stay listed, also past the driver timeout (a busy driver may
/// answer later, and aeron-rs then caches the subscription all the same); refused ones are
/// forgotten.
fn release_abandoned(aeron: &mut Aeron, abandoned: &Mutex<Vec<i64>>) {
    let mut ids = abandoned.lock().unwrap_or_else(PoisonError::into_inner);
    if !ids.is_empty() {
        ids.retain(|&id| {
            matches!(
                aeron.find_subscription(id),
                Err(AeronError::SubscriptionNotReady(_) | AeronError::DriverTimeout(_))
            )
        });
    }
}

pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) conductor: Option<crate::thread::PinnedThread<()>>,
    /// The to-driver ring buffer in `shared.cnc` (CLIENT_CLOSE goes there).
    pub(crate) to_driver: ManyToOneRingBuffer,
    pub(crate) client_id: i64,
    pub(crate) dir: PathBuf,
    pub(crate) timeout: Duration,
    /// Aeron's `preTouchMappedMemory`: fault in the logs this client maps itself too.
    pub(crate) pre_touch: bool,
}

// SAFETY: `ManyToOneRingBuffer` and `MemoryMappedFile` wrap a shared mapping of cnc.dat;
// the ring buffer is a multi-producer structure made for concurrent writers (it uses
// atomic claims), and the mapping is only unmapped on drop. `Shared` is Send + Sync.
unsafe impl Send for Inner {}
// SAFETY: see above; every method of `Inner` that touches shared state is either atomic
// (ring-buffer writes) or goes through the Mutex.
unsafe impl Sync for Inner {}

impl Inner {
    /// A reader of the driver's counters over our own mapping of cnc.dat: plain loads, never
    /// the conductor's lock.
    pub(crate) fn counters_reader(&self) -> CountersReader {
        CountersReader::new(
            cnc_file_descriptor::create_counter_metadata_buffer(&self.shared.cnc),
            cnc_file_descriptor::create_counter_values_buffer(&self.shared.cnc),
        )
    }

    /// The driver directory this client is connected to.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn with_aeron<T>(&self, f: impl FnOnce(&mut Aeron) -> T) -> Result<T, AddError> {
        let mut guard = self.shared.aeron.lock().map_err(|_| AddError::ClientClosed)?;
        let aeron = guard.as_mut().ok_or(AddError::ClientClosed)?;
        // Lost its driver: the conductor no longer runs, nothing added would ever be answered.
        if aeron.is_closed() || self.shared.lost.state.load(Ordering::Acquire) != ACTIVE {
            return Err(AddError::ClientClosed);
        }
        Ok(f(aeron))
    }

    /// Writes `CLIENT_CLOSE` for this client's id into the driver's command ring.
    fn send_client_close(&self) {
        #[repr(C, align(8))]
        struct Msg([u8; 64]);
        let mut msg = Msg([0; 64]);
        // Aeron's CorrelatedMessage: client id (i64) then correlation id (i64), little endian.
        // aeron-rs keeps its flyweight crate-private, so write the two fields directly.
        msg.0[..8].copy_from_slice(&self.client_id.to_le_bytes());
        msg.0[8..16].copy_from_slice(&self.to_driver.next_correlation_id().to_le_bytes());
        let buf = AtomicBuffer::wrap_slice(&mut msg.0);
        let _ = self
            .to_driver
            .write(AeronCommand::ClientClose, buf, 0, CORRELATED_MESSAGE_LENGTH);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Every Publication/Subscriber holds an Arc<Inner>, so they are gone by now and have
        // sent their removes. Stop the conductor (no more keepalives), then tell the driver
        // this client is closed through our own mapping of cnc.dat.
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.conductor.take() {
            let _ = t.join();
        }
        if let Ok(mut g) = self.shared.aeron.lock() {
            if let Some(a) = g.as_mut() {
                release_abandoned(a, &self.shared.abandoned);
            }
            g.take();
        }
        self.send_client_close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost(seen: Arc<Mutex<Vec<AsyncError>>>) -> Lost {
        Lost {
            state: Arc::new(AtomicU8::new(ACTIVE)),
            on_error: guarded(Arc::new(move |e: &AsyncError| seen.lock().unwrap().push(e.clone()))),
            dir: PathBuf::from("/dev/shm/aeron-x"),
            timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_conductor_that_panics_marks_the_client_and_says_so() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let lost = lost(seen.clone());
        stop_on_panic(&lost, || panic!("inside the duty cycle"));
        assert_eq!(lost.state.load(Ordering::Acquire), CONDUCTOR_STOPPED);
        let e = LivenessError::ConductorStopped {
            dir: PathBuf::from("/dev/shm/aeron-x"),
        };
        assert_eq!(*seen.lock().unwrap(), vec![AsyncError::Liveness(e.clone())]);
        assert_eq!(liveness_error(CONDUCTOR_STOPPED, &lost.dir, lost.timeout), Some(e));
        // A loop that returns leaves the state alone.
        let quiet = self::lost(seen);
        stop_on_panic(&quiet, || ());
        assert_eq!(quiet.state.load(Ordering::Acquire), ACTIVE);
    }

    #[test]
    fn a_guarded_handler_survives_its_own_panic() {
        let calls = Arc::new(AtomicU8::new(0));
        let counted = calls.clone();
        let handler = guarded(Arc::new(move |_: &AsyncError| {
            counted.fetch_add(1, Ordering::SeqCst);
            panic!("a handler that fails");
        }));
        let e = AsyncError::Client { message: "x".into() };
        handler(&e);
        handler(&e);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
