//! The connection to a media driver.
//!
//! Guarantees:
//! - [`ClientBuilder::build`] fails fast with a typed [`ConnectError`] naming the directory when
//!   there is no driver (`cnc.dat` missing) or it is dead (stale heartbeat), instead of
//!   aeron-rs's 10 s wait;
//! - the Aeron directory follows Aeron's rule: builder setting, else `AERON_DIR`, else
//!   `/dev/shm/aeron-$USER` (aeron-rs ignores `AERON_DIR` by itself);
//! - closing is explicit and complete: when the last handle (the [`Client`], a
//!   [`Publisher`], a [`Subscriber`]) goes, each publication and subscription sends its
//!   remove and the client sends `CLIENT_CLOSE`, so the driver frees the streams at once
//!   (aeron-rs 0.1.8 never sends `CLIENT_CLOSE`; the driver would time the client out ~10 s
//!   later and a new publisher on the same IPC stream would stall that long).

use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aeron_rs::aeron::Aeron;
use aeron_rs::cnc_file_descriptor;
use aeron_rs::command::control_protocol_events::AeronCommand;
use aeron_rs::command::correlated_message_flyweight::CORRELATED_MESSAGE_LENGTH;
use aeron_rs::concurrent::atomic_buffer::AtomicBuffer;
use aeron_rs::concurrent::ring_buffer::{ManyToOneRingBuffer, TRAILER_LENGTH};
use aeron_rs::context::Context;
use aeron_rs::utils::errors::{AeronError, DriverInteractionError, GenericError};
use aeron_rs::utils::memory_mapped_file::MemoryMappedFile;

use crate::error::{AddError, ConnectError};
use crate::publication::Publisher;
use crate::subscription::Subscriber;

/// Environment variable naming the Aeron directory (Aeron's `AERON_DIR`).
pub const AERON_DIR_ENV: &str = "AERON_DIR";
/// Environment variable for the driver timeout in ms (Aeron's `AERON_DRIVER_TIMEOUT`).
pub const AERON_DRIVER_TIMEOUT_ENV: &str = "AERON_DRIVER_TIMEOUT";
/// Aeron's default driver timeout: 10 s.
pub const DEFAULT_DRIVER_TIMEOUT: Duration = Duration::from_secs(10);

/// Aeron's default directory on Linux: `/dev/shm/aeron-$USER`, unless `AERON_DIR` is set.
#[must_use]
pub fn default_aeron_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(AERON_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "default".to_owned());
    PathBuf::from(format!("/dev/shm/aeron-{user}"))
}

/// What `cnc.dat` says about a driver directory, without connecting.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverStatus {
    /// No `cnc.dat` (or an empty one): no driver has run here.
    Absent,
    /// `cnc.dat` exists but the driver's heartbeat is older than the timeout.
    Dead {
        /// How old the heartbeat is.
        heartbeat_age: Duration,
    },
    /// `cnc.dat` exists but could not be mapped or understood.
    Unreadable {
        /// What failed.
        detail: String,
    },
    /// The driver's heartbeat is fresh.
    Alive {
        /// How old the heartbeat is.
        heartbeat_age: Duration,
    },
}

/// Reads the driver heartbeat in `dir/cnc.dat` and classifies it against `timeout`.
///
/// Never panics and never waits: a `cnc.dat` whose header does not describe a file of its
/// size (garbage, truncated, another program's file) is [`DriverStatus::Unreadable`] before
/// anything in it is mapped; one whose version is still 0 (a driver creating it right now)
/// counts as alive unless it was last written longer than `timeout` ago.
#[must_use]
pub fn driver_status(dir: &Path, timeout: Duration) -> DriverStatus {
    let cnc = dir.join("cnc.dat");
    let meta = match std::fs::metadata(&cnc) {
        Ok(m) if m.len() > 0 => m,
        _ => return DriverStatus::Absent,
    };
    match check_cnc_header(&cnc, meta.len()) {
        Err(detail) => return DriverStatus::Unreadable { detail },
        Ok(0) => {
            let written = meta
                .modified()
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .unwrap_or_default();
            if written > timeout {
                return DriverStatus::Unreadable {
                    detail: format!(
                        "was never initialised (its version field is 0) and was last written {:.1} s ago: the \
                         driver that created it died while starting, or it is not a media driver's file",
                        written.as_secs_f64()
                    ),
                };
            }
            // Being created right now: treat as alive with unknown age; connecting will wait.
            return DriverStatus::Alive {
                heartbeat_age: Duration::ZERO,
            };
        }
        Ok(_) => {}
    }
    let map = match MemoryMappedFile::map_existing(cnc.clone(), false) {
        Ok(m) => m,
        Err(e) => {
            return DriverStatus::Unreadable {
                detail: format!("could not be mapped: {e}"),
            }
        }
    };
    if cnc_file_descriptor::cnc_version_volatile(&map) == 0 {
        return DriverStatus::Alive {
            heartbeat_age: Duration::ZERO,
        };
    }
    let ring = match ManyToOneRingBuffer::new(cnc_file_descriptor::create_to_driver_buffer(&map)) {
        Ok(r) => r,
        Err(e) => {
            return DriverStatus::Unreadable {
                detail: format!("has no valid to-driver ring buffer ({e:?})"),
            }
        }
    };
    let hb_ms = ring.consumer_heartbeat_time();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let heartbeat_age = Duration::from_millis((now_ms - hb_ms).max(0) as u64);
    if heartbeat_age > timeout {
        DriverStatus::Dead { heartbeat_age }
    } else {
        DriverStatus::Alive { heartbeat_age }
    }
}

/// Aeron's CnC metadata (`aeron_cnc_metadata_t`): version, five buffer lengths (i32 each), then
/// the client liveness timeout, start timestamp and pid (i64 each).
const CNC_HEADER_LEN: usize = 6 * 4 + 3 * 8;

/// Reads the CnC header of `cnc` (`len` bytes long) without mapping it and checks that it
/// describes a file of that size, so that mapping its buffers cannot read out of bounds (aeron-rs
/// would panic or fault on a garbage header). Returns the version field: 0 while a driver is
/// still creating the file (its lengths are not written yet).
fn check_cnc_header(cnc: &Path, len: u64) -> Result<i32, String> {
    use std::io::Read;
    let meta_len = *cnc_file_descriptor::META_DATA_LENGTH as u64;
    if len < meta_len {
        return Err(format!(
            "is {len} bytes long, shorter than the {meta_len}-byte header of a media driver's cnc.dat"
        ));
    }
    let mut head = [0u8; CNC_HEADER_LEN];
    std::fs::File::open(cnc)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(|e| format!("could not be read: {e}"))?;
    let field = |i: usize| i32::from_le_bytes([head[4 * i], head[4 * i + 1], head[4 * i + 2], head[4 * i + 3]]);
    let version = field(0);
    if version == 0 {
        return Ok(0);
    }
    let lengths = [field(1), field(2), field(3), field(4), field(5)];
    let to_driver = i64::from(lengths[0]);
    let capacity = to_driver - i64::from(TRAILER_LENGTH);
    let total = lengths.iter().map(|&l| i64::from(l)).sum::<i64>() + meta_len as i64;
    if lengths.iter().any(|&l| l < 0) || capacity <= 0 || (capacity & (capacity - 1)) != 0 || total > len as i64 {
        return Err(format!(
            "has a header that does not describe a media driver's cnc.dat of {len} bytes (version field {version:#x}, \
             buffer lengths {lengths:?})"
        ));
    }
    Ok(version)
}

/// The process id of the driver that owns `dir/cnc.dat` (Aeron writes it into the CnC
/// metadata), or `None` when there is no readable `cnc.dat` or it predates the field.
///
/// The probe uses it to watch the driver's threads for jitter diagnosis; it says nothing about
/// whether that process is still alive (see [`driver_status`]).
#[must_use]
pub fn driver_pid(dir: &Path) -> Option<u32> {
    let map = map_initialised_cnc(dir)?;
    u32::try_from(cnc_file_descriptor::pid(&map)).ok().filter(|p| *p > 0)
}

/// `dir/cnc.dat` mapped, if its header is a media driver's and the driver initialised it.
fn map_initialised_cnc(dir: &Path) -> Option<MemoryMappedFile> {
    let cnc = dir.join("cnc.dat");
    let len = std::fs::metadata(&cnc).map_or(0, |m| m.len());
    if len == 0 || check_cnc_header(&cnc, len).ok()? == 0 {
        return None;
    }
    let map = MemoryMappedFile::map_existing(cnc, false).ok()?;
    (cnc_file_descriptor::cnc_version_volatile(&map) != 0).then_some(map)
}

/// The driver's counters read straight from `dir/cnc.dat`, as AeronStat reads them: no client
/// is connected (nothing joins the driver, no conductor thread starts). `None` when there is no
/// readable, initialised `cnc.dat`.
#[must_use]
pub fn read_driver_counters(dir: &Path) -> Option<Vec<DriverCounter>> {
    let map = map_initialised_cnc(dir)?;
    let reader = aeron_rs::concurrent::counters::CountersReader::new(
        cnc_file_descriptor::create_counter_metadata_buffer(&map),
        cnc_file_descriptor::create_counter_values_buffer(&map),
    );
    Some(list_counters(&reader))
}

/// Every allocated counter of `reader`, with its value.
fn list_counters(reader: &aeron_rs::concurrent::counters::CountersReader) -> Vec<DriverCounter> {
    let mut out = Vec::new();
    reader.for_each(|id, type_id, _key, label| {
        out.push(DriverCounter {
            id,
            type_id,
            label: label.to_string_lossy().into_owned(),
            value: reader.counter_value(id).map_or(0, |v| v as i64),
        });
    });
    out
}

/// One of the driver's counters, read from `cnc.dat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverCounter {
    /// The counter id.
    pub id: i32,
    /// Aeron's counter type id (e.g. 11 = client heartbeat, 0 = system counter).
    pub type_id: i32,
    /// The label AeronStat prints.
    pub label: String,
    /// The value.
    pub value: i64,
}

/// Aeron's counter type id for a client's heartbeat timestamp (one per connected client).
pub const CLIENT_HEARTBEAT_COUNTER_TYPE_ID: i32 = 11;

/// Aeron's counter type id for a subscriber's position in a stream (`sub-pos`).
pub const SUBSCRIBER_POSITION_COUNTER_TYPE_ID: i32 = 4;

/// Whether a [`Client`]'s media driver still answers (Aeron's `isDriverActive`).
///
/// Guarantees: [`is_active`](Self::is_active) is one atomic load (no lock, no syscall), so a
/// hot loop may ask it as often as it likes; it turns false, for good, once the client
/// conductor saw no driver heartbeat for longer than the driver timeout
/// (`AERON_DRIVER_TIMEOUT`, default 10 s). Cloning is cheap.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = messaging::Client::connect("/dev/shm/aeron-root")?;
/// let live = client.liveness();
/// while live.is_active() {
///     // poll, offer, ...
/// #   break;
/// }
/// if !live.is_active() {
///     eprintln!("{}", live.describe());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DriverLiveness {
    lost: Arc<AtomicBool>,
    dir: PathBuf,
    timeout: Duration,
}

impl DriverLiveness {
    /// False once the driver stopped answering.
    #[inline]
    #[must_use]
    pub fn is_active(&self) -> bool {
        !self.lost.load(Ordering::Relaxed)
    }

    /// The driver timeout this client applies.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// One line for the user: which driver, for how long, what to do.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "media driver at {} stopped responding (no heartbeat for over {:.1} s, the driver timeout \
             {AERON_DRIVER_TIMEOUT_ENV}); check that it is running (it may have been killed) and start the run again",
            self.dir.display(),
            self.timeout.as_secs_f64()
        )
    }
}

/// Configures and connects a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    dir: Option<PathBuf>,
    driver_timeout: Option<Duration>,
    pre_touch: bool,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientBuilder {
    /// Defaults: `AERON_DIR` or `/dev/shm/aeron-$USER`, `AERON_DRIVER_TIMEOUT` or 10 s.
    #[must_use]
    pub fn new() -> Self {
        Self {
            dir: None,
            driver_timeout: None,
            pre_touch: false,
        }
    }

    /// The media driver's directory (overrides `AERON_DIR`).
    #[must_use]
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// How long the driver may stay silent before it counts as dead (overrides `AERON_DRIVER_TIMEOUT`).
    #[must_use]
    pub fn driver_timeout(mut self, t: Duration) -> Self {
        self.driver_timeout = Some(t);
        self
    }

    /// aeron-rs's `pre_touch_mapped_memory` (Aeron's `preTouchMappedMemory`): read one `i32`
    /// per page of each log buffer when the client conductor maps it.
    ///
    /// Does **not** guarantee the hot path takes no page fault: aeron-rs 0.1.8 discards the
    /// value it reads with a plain (non-volatile) load, which release builds optimise away
    /// (measured: 767 faults on the publishing thread over three 1 MiB terms with it on, in
    /// release; 0 in debug). For that guarantee call [`Publisher::prefault`] and, once the
    /// publishers connected, [`Subscriber::prefault`].
    #[must_use]
    pub fn pre_touch_mapped_memory(mut self, on: bool) -> Self {
        self.pre_touch = on;
        self
    }

    /// Checks, without connecting (no thread, no mapping kept, no wait), what
    /// [`build`](Self::build) checks first: that the directory holds a live media driver's
    /// `cnc.dat`. For programs that validate their input before starting anything.
    ///
    /// # Errors
    /// As [`build`](Self::build), except the errors only connecting can find.
    pub fn check(&self) -> Result<(), ConnectError> {
        let (dir, timeout) = self.clone().resolve();
        check_dir(&dir, timeout)
    }

    /// The directory and driver timeout, with the defaults applied.
    fn resolve(self) -> (PathBuf, Duration) {
        let dir = self.dir.unwrap_or_else(default_aeron_dir);
        let timeout = self.driver_timeout.unwrap_or_else(|| {
            std::env::var(AERON_DRIVER_TIMEOUT_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(DEFAULT_DRIVER_TIMEOUT, Duration::from_millis)
        });
        (dir, timeout)
    }

    /// Connects to the driver.
    ///
    /// # Errors
    /// [`ConnectError::NoDriver`] when `cnc.dat` is missing, [`ConnectError::NotADirectory`]
    /// when the directory is a file, [`ConnectError::DriverDead`] when its heartbeat is older
    /// than the driver timeout, [`ConnectError::BadCnc`] when `cnc.dat` is not a driver's
    /// (garbage, truncated, never initialised), other variants for what aeron-rs reports.
    pub fn build(self) -> Result<Client, ConnectError> {
        let pre_touch = self.pre_touch;
        let (dir, timeout) = self.resolve();
        check_dir(&dir, timeout)?;
        let mut ctx = Context::new();
        ctx.set_aeron_dir(dir.to_string_lossy().into_owned());
        ctx.set_media_driver_timeout(timeout.as_millis() as u64);
        ctx.set_pre_touch_mapped_memory(pre_touch);
        ctx.set_agent_name("aeron-client");
        // Drive the client conductor from our own thread (see `conductor_loop`): aeron-rs's
        // AgentRunner sleeps its 4 ms idle *while holding* the conductor mutex (the guard is a
        // temporary in the `match` scrutinee), so any other thread that needs the conductor —
        // adding or closing a publication or subscription — waits until it wins a race
        // against that loop: measured here, 0.3 s to 40 s to drop one subscription.
        ctx.set_use_conductor_agent_invoker(true);
        // aeron-rs's default error handler prints to stdout; errors that matter reach us
        // through return values, the rest are counted here.
        // A driver timeout is reported once, by `DriverLiveness` (aeron-rs repeats it on
        // every duty cycle); everything else is printed as it comes.
        let lost = Arc::new(AtomicBool::new(false));
        let lost2 = lost.clone();
        ctx.set_error_handler(move |e: AeronError| {
            if matches!(e, AeronError::DriverTimeout(_)) {
                lost2.store(true, Ordering::Release);
            } else {
                eprintln!("aeron client: {e}");
            }
        });
        let aeron = Aeron::new(ctx).map_err(|e| connect_error(&dir, e))?;
        let cnc = MemoryMappedFile::map_existing(dir.join("cnc.dat"), false).map_err(|e| ConnectError::Client {
            dir: dir.clone(),
            detail: e.to_string(),
        })?;
        let to_driver = ManyToOneRingBuffer::new(cnc_file_descriptor::create_to_driver_buffer(&cnc)).map_err(|e| {
            ConnectError::Client {
                dir: dir.clone(),
                detail: format!("{e:?}"),
            }
        })?;
        let client_id = aeron.client_id();
        let shared = Arc::new(Shared {
            aeron: Mutex::new(Some(aeron)),
            stop: AtomicBool::new(false),
            lost,
        });
        let shared2 = shared.clone();
        let conductor = std::thread::Builder::new()
            .name("aeron-conductor".into())
            .spawn(move || conductor_loop(&shared2))
            .map_err(|e| ConnectError::Client {
                dir: dir.clone(),
                detail: format!("could not start the conductor thread: {e}"),
            })?;
        Ok(Client {
            inner: Arc::new(Inner {
                shared,
                conductor: Some(conductor),
                to_driver,
                _cnc: cnc,
                client_id,
                dir,
                timeout,
            }),
        })
    }
}

/// The checks [`ClientBuilder::build`] makes before it hands the directory to aeron-rs.
fn check_dir(dir: &Path, timeout: Duration) -> Result<(), ConnectError> {
    if dir.exists() && !dir.is_dir() {
        return Err(ConnectError::NotADirectory { dir: dir.to_owned() });
    }
    match driver_status(dir, timeout) {
        DriverStatus::Absent => Err(ConnectError::NoDriver { dir: dir.to_owned() }),
        DriverStatus::Dead { heartbeat_age } => Err(ConnectError::DriverDead {
            dir: dir.to_owned(),
            heartbeat_age,
        }),
        DriverStatus::Unreadable { detail } => Err(ConnectError::BadCnc {
            dir: dir.to_owned(),
            detail,
        }),
        DriverStatus::Alive { .. } => Ok(()),
    }
}

fn connect_error(dir: &Path, e: AeronError) -> ConnectError {
    match e {
        AeronError::Generic(GenericError::CncVersionDoesntMatch { .. }) => ConnectError::VersionMismatch {
            dir: dir.to_owned(),
            detail: e.to_string(),
        },
        AeronError::DriverTimeout(DriverInteractionError::CncNotCreated { .. }) => {
            ConnectError::NoDriver { dir: dir.to_owned() }
        }
        AeronError::DriverTimeout(DriverInteractionError::CncCreatedButNotInitialised { .. }) => ConnectError::BadCnc {
            dir: dir.to_owned(),
            detail: "was created but not initialised within the driver timeout: the driver died while starting, or \
                     it is not a media driver's file"
                .to_owned(),
        },
        AeronError::DriverTimeout(_) => ConnectError::DriverDead {
            dir: dir.to_owned(),
            // The age as it is now (aeron-rs does not say); zero if it cannot be read.
            heartbeat_age: match driver_status(dir, Duration::MAX) {
                DriverStatus::Alive { heartbeat_age } | DriverStatus::Dead { heartbeat_age } => heartbeat_age,
                _ => Duration::ZERO,
            },
        },
        other => ConnectError::Client {
            dir: dir.to_owned(),
            detail: other.to_string(),
        },
    }
}

/// How long the conductor thread sleeps between duty cycles: aeron-rs's own 4 ms
/// (`IDLE_SLEEP_MS`). Each wake-up briefly takes a core; a late publisher is noticed within it.
pub const CONDUCTOR_IDLE: Duration = Duration::from_millis(4);

/// The aeron-rs client and the flag that stops our conductor thread.
struct Shared {
    aeron: Mutex<Option<Aeron>>,
    stop: AtomicBool,
    /// Set by the error handler when aeron-rs reports the driver timed out.
    lost: Arc<AtomicBool>,
}

// SAFETY: `Aeron` holds `Arc<Mutex<..>>`s and raw pointers into memory maps it owns for its
// whole life; aeron-rs itself shares it between the caller and its conductor thread. Here it
// is only ever touched through the Mutex above.
unsafe impl Send for Shared {}
// SAFETY: as above; all access goes through the Mutex or the atomic flag.
unsafe impl Sync for Shared {}

/// One duty cycle every `CONDUCTOR_IDLE`, taking the lock only for the duty cycle itself.
fn conductor_loop(shared: &Shared) {
    while !shared.stop.load(Ordering::Acquire) {
        // Once the driver is gone there is nothing to do but wait to be dropped.
        if shared.lost.load(Ordering::Acquire) {
            std::thread::sleep(CONDUCTOR_IDLE);
            continue;
        }
        if let Ok(g) = shared.aeron.lock() {
            if let Some(a) = g.as_ref() {
                a.conductor_agent_invoker().invoke();
            }
        }
        std::thread::sleep(CONDUCTOR_IDLE);
    }
}

pub(crate) struct Inner {
    shared: Arc<Shared>,
    conductor: Option<std::thread::JoinHandle<()>>,
    to_driver: ManyToOneRingBuffer,
    _cnc: MemoryMappedFile,
    client_id: i64,
    dir: PathBuf,
    timeout: Duration,
}

// SAFETY: `ManyToOneRingBuffer` and `MemoryMappedFile` wrap a shared mapping of cnc.dat;
// the ring buffer is a multi-producer structure made for concurrent writers (it uses
// atomic claims), and the mapping is only unmapped on drop. `Shared` is Send + Sync.
unsafe impl Send for Inner {}
// SAFETY: see above; every method of `Inner` that touches shared state is either atomic
// (ring-buffer writes) or goes through the Mutex.
unsafe impl Sync for Inner {}

impl Inner {
    /// The driver directory this client is connected to.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn with_aeron<T>(&self, f: impl FnOnce(&mut Aeron) -> T) -> Result<T, AddError> {
        let mut guard = self.shared.aeron.lock().map_err(|_| AddError::ClientClosed)?;
        let aeron = guard.as_mut().ok_or(AddError::ClientClosed)?;
        if aeron.is_closed() {
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
        // Every Publisher/Subscriber holds an Arc<Inner>, so they are gone by now and have
        // sent their removes. Stop the conductor (no more keepalives), then tell the driver
        // this client is closed through our own mapping of cnc.dat.
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.conductor.take() {
            let _ = t.join();
        }
        if let Ok(mut g) = self.shared.aeron.lock() {
            g.take();
        }
        self.send_client_close();
    }
}

/// A connection to a media driver: creates publications and subscriptions.
///
/// Cloning is cheap (a reference count). The connection closes when the last clone and
/// the last publisher/subscriber made from it are dropped (or [`Client::close`]d).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("dir", &self.inner.dir)
            .field("client_id", &self.inner.client_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with Aeron's defaults.
    #[must_use]
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// Connects to the driver in `dir`.
    ///
    /// # Errors
    /// See [`ClientBuilder::build`].
    pub fn connect(dir: impl Into<PathBuf>) -> Result<Self, ConnectError> {
        ClientBuilder::new().dir(dir).build()
    }

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

    /// Whether the driver still answers, as this client sees it: a cheap handle for hot loops.
    #[must_use]
    pub fn liveness(&self) -> DriverLiveness {
        DriverLiveness {
            lost: self.inner.shared.lost.clone(),
            dir: self.inner.dir.clone(),
            timeout: self.inner.timeout,
        }
    }

    /// The positions of the subscribers reading the stream `stream_id` of publication
    /// `session_id` (Aeron's `sub-pos` counters, one per subscriber, as AeronStat shows them).
    /// Empty when nobody reads it. Takes the client lock: not for a hot loop.
    #[must_use]
    pub fn subscriber_positions(&self, session_id: i32, stream_id: i32) -> Vec<i64> {
        let Ok(Ok(reader)) = self.inner.with_aeron(|a| a.counters_reader()) else {
            return Vec::new();
        };
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
    /// errors, per-stream positions, client heartbeats, …
    #[must_use]
    pub fn counters(&self) -> Vec<DriverCounter> {
        let Ok(Ok(reader)) = self.inner.with_aeron(|a| a.counters_reader()) else {
            return Vec::new();
        };
        list_counters(&reader)
    }

    /// Adds a publication and waits until the driver has created it.
    ///
    /// # Errors
    /// [`AddError`]: bad channel, rejected by the driver, no answer within the driver timeout.
    pub fn publication(&self, channel: &str, stream_id: i32) -> Result<Publisher, AddError> {
        let c = check_channel(channel)?;
        let started = Instant::now();
        let id = self
            .inner
            .with_aeron(|a| a.add_publication(c, stream_id))?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        let publication = self.await_resource(channel, stream_id, started, |a| match a.find_publication(id) {
            Err(AeronError::PublicationNotReady(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(p) => Ok(Some(p)),
        })?;
        Ok(Publisher::new(publication, self.inner.clone(), channel, stream_id))
    }

    /// Adds a subscription and waits until the driver has created it. Publishers that join
    /// later are picked up by the client conductor between polls.
    ///
    /// # Errors
    /// [`AddError`]: bad channel, rejected by the driver, no answer within the driver timeout.
    pub fn subscription(&self, channel: &str, stream_id: i32) -> Result<Subscriber, AddError> {
        let c = check_channel(channel)?;
        let started = Instant::now();
        let id = self
            .inner
            .with_aeron(|a| a.add_subscription(c, stream_id))?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        let subscription = self.await_resource(channel, stream_id, started, |a| match a.find_subscription(id) {
            Err(AeronError::SubscriptionNotReady(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(s) => Ok(Some(s)),
        })?;
        Ok(Subscriber::new(subscription, self.inner.clone(), channel, stream_id))
    }

    fn await_resource<T>(
        &self,
        channel: &str,
        stream_id: i32,
        started: Instant,
        mut find: impl FnMut(&mut Aeron) -> Result<Option<T>, AeronError>,
    ) -> Result<T, AddError> {
        let mut pause = Duration::from_micros(100);
        loop {
            match self.inner.with_aeron(&mut find)? {
                Ok(Some(t)) => return Ok(t),
                Ok(None) => {}
                Err(e) => return Err(AddError::from_aeron(channel, stream_id, started.elapsed(), e)),
            }
            if started.elapsed() > self.inner.timeout {
                return Err(AddError::Timeout {
                    channel: channel.to_owned(),
                    waited: started.elapsed(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Drops this handle. The driver is told the client closed once every publisher and
    /// subscriber made from it is dropped too.
    pub fn close(self) {}
}

fn check_channel(channel: &str) -> Result<CString, AddError> {
    validate_channel(channel)?;
    CString::new(channel).map_err(|_| AddError::InvalidChannel {
        channel: channel.to_owned(),
        reason: "it contains a NUL byte".to_owned(),
    })
}

/// The longest channel URI Aeron takes, in bytes (`AERON_URI_MAX_LENGTH`, 4096 with the NUL).
pub const MAX_CHANNEL_LENGTH: usize = 4095;

/// Checks that `channel` is a well-formed Aeron channel URI, by the rules of Aeron's own
/// parsers (C `aeron_uri_parse` and `aeron_udp_channel_parse`, Java `ChannelUri.parse`), without
/// a media driver. [`Client::publication`] and [`Client::subscription`] call it first; programs
/// call it to reject a bad URI before they start anything.
///
/// - `aeron:ipc` or `aeron:udp`, then `?key=value|key=value…` (optional for `ipc`, required for
///   `udp`);
/// - every parameter is `key=value` with a non-empty key and value (so no bare `?`, no `||`, no
///   trailing `|`); a value may contain `=`; the last of repeated keys counts, as in Aeron;
/// - `udp` names `endpoint`, `control` or `tags`, or says `control-mode=manual` (or
///   `response`); `control-mode` is `manual`, `dynamic` (which needs `control`) or `response`;
/// - `endpoint` and `control` are `host:port` or `[ipv6]:port`, with a decimal port from 0 to
///   65535 (0: any free port);
/// - no whitespace, no NUL, at most [`MAX_CHANNEL_LENGTH`] bytes.
///
/// What only the driver can judge (whether a host resolves, a port is free, the value of other
/// parameters such as `mtu` or `term-length`) is left to it.
///
/// # Errors
/// [`AddError::InvalidChannel`], whose message gives the reason and a valid example.
///
/// ```
/// assert!(messaging::validate_channel("aeron:udp?endpoint=localhost:40123|mtu=8k").is_ok());
/// let e = messaging::validate_channel("aeron:udp?endpoint=localhost").unwrap_err();
/// assert!(e.to_string().contains("has no port"), "{e}");
/// ```
pub fn validate_channel(channel: &str) -> Result<(), AddError> {
    channel_syntax(channel).map_err(|reason| AddError::InvalidChannel {
        channel: channel.to_owned(),
        reason,
    })
}

fn channel_syntax(channel: &str) -> Result<(), String> {
    if channel.is_empty() {
        return Err("it is empty".into());
    }
    if channel.contains('\0') {
        return Err("it contains a NUL byte".into());
    }
    if channel.contains(char::is_whitespace) {
        return Err("it contains whitespace".into());
    }
    if channel.len() > MAX_CHANNEL_LENGTH {
        return Err(format!(
            "it is {} bytes long, Aeron takes at most {MAX_CHANNEL_LENGTH}",
            channel.len()
        ));
    }
    let Some(rest) = channel.strip_prefix("aeron:") else {
        return Err("it must start with \"aeron:\"".into());
    };
    let (media, params) = match rest.split_once('?') {
        Some((media, params)) => (media, Some(params)),
        None => (rest, None),
    };
    match (media, params) {
        ("ipc", _) | ("udp", Some(_)) => {}
        ("udp", None) => {
            return Err("aeron:udp needs parameters, at least ?endpoint=<host>:<port> or ?control=<host>:<port>".into())
        }
        _ => return Err(format!("the media {media:?} is neither ipc nor udp")),
    }
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    if let Some(params) = params {
        if params.is_empty() {
            return Err("nothing follows '?': add key=value parameters or drop the '?'".into());
        }
        for param in params.split('|') {
            let Some((key, value)) = param.split_once('=') else {
                return Err(if param.is_empty() {
                    "it has an empty parameter (\"||\", or a '|' at the end)".into()
                } else {
                    format!("parameter {param:?} has no '=': parameters are key=value, separated by '|'")
                });
            };
            if key.is_empty() {
                return Err(format!("parameter {param:?} has an empty key"));
            }
            if value.is_empty() {
                return Err(format!("parameter {key:?} has an empty value"));
            }
            pairs.push((key, value));
        }
    }
    let get = |key: &str| pairs.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let control_mode = get("control-mode");
    if let Some(mode) = control_mode {
        if !matches!(mode, "manual" | "dynamic" | "response") {
            return Err(format!(
                "control-mode={mode} is not one of Aeron's: manual, dynamic or response"
            ));
        }
    }
    if media == "udp" {
        let (endpoint, control) = (get("endpoint"), get("control"));
        // In the order Aeron checks them.
        if control_mode == Some("dynamic") && control.is_none() {
            return Err("control-mode=dynamic needs control=<host>:<port>".into());
        }
        if endpoint.is_none()
            && control.is_none()
            && get("tags").is_none()
            && !matches!(control_mode, Some("manual" | "response"))
        {
            return Err(
                "a udp channel needs endpoint=<host>:<port> (or control=<host>:<port>, tags, control-mode=manual)"
                    .into(),
            );
        }
        for (key, value) in [("endpoint", endpoint), ("control", control)] {
            if let Some(value) = value {
                check_host_port(key, value)?;
            }
        }
    }
    Ok(())
}

/// `host:port` or `[ipv6]:port`, as Aeron's `aeron_address_split` reads it (port required).
fn check_host_port(key: &str, value: &str) -> Result<(), String> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(format!("{key}={value}: the IPv6 address has no closing ']'"));
        };
        let Some(port) = after.strip_prefix(':') else {
            return Err(format!("{key}={value} has no port: write {key}=[{host}]:<port>"));
        };
        (host, port)
    } else {
        let Some((host, port)) = value.rsplit_once(':') else {
            return Err(format!("{key}={value} has no port: write {key}={value}:<port>"));
        };
        if host.contains(':') {
            return Err(format!(
                "{key}={value}: an IPv6 address goes in brackets, e.g. {key}=[::1]:40123"
            ));
        }
        (host, port)
    };
    if host.is_empty() {
        return Err(format!("{key}={value} has no host: write {key}=<host>:{port}"));
    }
    if port.is_empty() {
        return Err(format!("{key}={value} has no port: write {key}={host}:<port>"));
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{key}={value}: the port {port:?} is not a number"));
    }
    if port.len() > 5 || port.parse::<u32>().map_or(true, |p| p > 65_535) {
        return Err(format!("{key}={value}: the port {port} is out of range (0 to 65535)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_without_cnc_is_reported_as_no_driver_with_the_dir_in_the_message() {
        let e = Client::connect("/nonexistent/aeron").unwrap_err();
        assert!(matches!(e, ConnectError::NoDriver { .. }), "{e:?}");
        assert!(e.to_string().contains("/nonexistent/aeron/cnc.dat"), "{e}");
    }

    #[test]
    fn channels_are_checked_before_reaching_the_driver() {
        assert!(check_channel("aeron:ipc").is_ok());
        assert!(check_channel("aeron:udp?endpoint=localhost:40123").is_ok());
        for bad in ["ipc", "aeron:tcp", "aeron:ipc?x= 1", ""] {
            let e = check_channel(bad).unwrap_err().to_string();
            assert!(e.contains("aeron:ipc"), "{e}");
        }
    }

    #[test]
    fn well_formed_channels_pass_validate_channel() {
        for good in [
            "aeron:ipc",
            "aeron:ipc?term-length=64k",
            "aeron:ipc?term-length=64k|mtu=8192|alias=a=b",
            "aeron:udp?endpoint=localhost:40123",
            "aeron:udp?endpoint=192.168.0.1:0",
            "aeron:udp?endpoint=[::1]:65535|interface=eth0",
            "aeron:udp?endpoint=[fe80::1%eth0]:40123",
            "aeron:udp?control=host-a:40124|control-mode=dynamic",
            "aeron:udp?control-mode=manual",
            "aeron:udp?control-mode=response|control=localhost:40125",
            "aeron:udp?tags=1001",
            "aeron:udp?endpoint=x:1|endpoint=localhost:40123",
        ] {
            assert!(validate_channel(good).is_ok(), "{good}: {:?}", validate_channel(good));
        }
    }

    #[test]
    fn malformed_channels_fail_validate_channel_with_the_reason_and_an_example() {
        let long = format!("aeron:ipc?alias={}", "a".repeat(MAX_CHANNEL_LENGTH));
        for (bad, reason) in [
            ("", "empty"),
            ("aeron:ipc\0", "NUL"),
            ("aeron:ipc?alias=a b", "whitespace"),
            (long.as_str(), "at most 4095"),
            ("aeron-spy:aeron:ipc", "must start with \"aeron:\""),
            ("Aeron:ipc", "must start with \"aeron:\""),
            ("aeron:tcp?endpoint=localhost:1", "\"tcp\" is neither ipc nor udp"),
            ("aeron:ipcx", "\"ipcx\" is neither ipc nor udp"),
            ("aeron:", "\"\" is neither ipc nor udp"),
            ("aeron:udp", "needs parameters"),
            ("aeron:ipc?", "nothing follows '?'"),
            ("aeron:ipc?term-length", "has no '='"),
            ("aeron:ipc?=64k", "empty key"),
            ("aeron:ipc?term-length=", "\"term-length\" has an empty value"),
            ("aeron:ipc?mtu=8192|", "empty parameter"),
            ("aeron:ipc?mtu=8192||alias=x", "empty parameter"),
            ("aeron:ipc?control-mode=manul", "control-mode=manul is not one of"),
            ("aeron:udp?interface=eth0", "needs endpoint=<host>:<port>"),
            ("aeron:udp?control-mode=dynamic|endpoint=localhost:1", "needs control="),
            ("aeron:udp?endpoint=localhost", "has no port"),
            ("aeron:udp?endpoint=localhost:", "has no port"),
            ("aeron:udp?endpoint=:40123", "has no host"),
            ("aeron:udp?endpoint=localhost:4o123", "is not a number"),
            ("aeron:udp?endpoint=localhost:65536", "out of range"),
            ("aeron:udp?endpoint=localhost:99999999999", "out of range"),
            ("aeron:udp?endpoint=localhost:-1", "is not a number"),
            ("aeron:udp?control=::1:40123", "in brackets"),
            ("aeron:udp?endpoint=[::1:40123", "no closing ']'"),
            ("aeron:udp?endpoint=[::1]", "has no port"),
        ] {
            let e = validate_channel(bad).expect_err(bad);
            assert!(matches!(e, AddError::InvalidChannel { .. }), "{bad}: {e:?}");
            let msg = e.to_string();
            assert!(msg.contains(reason), "{bad:?}: {msg}");
            assert!(
                msg.contains("aeron:udp?endpoint=localhost:40123"),
                "an example of a valid URI: {msg}"
            );
            assert_eq!(msg.lines().count(), 1, "{msg}");
        }
    }

    /// Writes a `cnc.dat` laid out as Aeron's: header, a to-driver ring of 1024 + trailer bytes
    /// whose consumer heartbeat is `heartbeat_ms` (ms since the epoch), nothing else.
    fn synthetic_cnc(dir: &Path, version: i32, heartbeat_ms: i64) {
        let meta = *cnc_file_descriptor::META_DATA_LENGTH as usize;
        let to_driver = 1024 + TRAILER_LENGTH as usize;
        let mut f = vec![0u8; meta + to_driver];
        f[0..4].copy_from_slice(&version.to_le_bytes());
        f[4..8].copy_from_slice(&(to_driver as i32).to_le_bytes());
        let hb = meta + 1024 + aeron_rs::concurrent::ring_buffer::CONSUMER_HEARTBEAT_OFFSET as usize;
        f[hb..hb + 8].copy_from_slice(&heartbeat_ms.to_le_bytes());
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("cnc.dat"), f).unwrap();
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("messaging-cnc-test-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_garbage_cnc_is_reported_as_bad_without_panicking_or_waiting() {
        let dir = scratch("garbage");
        std::fs::create_dir_all(&dir).unwrap();
        let started = Instant::now();
        // Too short for a header, random bytes of a plausible size, and a header whose buffer
        // lengths point past the end of the file.
        let mut big = vec![0u8; 64 << 10];
        for (i, b) in big.iter_mut().enumerate() {
            *b = (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 1;
        }
        let mut lying = vec![0u8; 4096];
        lying[0..4].copy_from_slice(&0x0002_0000_i32.to_le_bytes());
        lying[4..8].copy_from_slice(&(1_048_576 + TRAILER_LENGTH).to_le_bytes());
        for content in [b"garbage".to_vec(), big, lying] {
            std::fs::write(dir.join("cnc.dat"), &content).unwrap();
            assert!(
                matches!(
                    driver_status(&dir, DEFAULT_DRIVER_TIMEOUT),
                    DriverStatus::Unreadable { .. }
                ),
                "{:?}",
                driver_status(&dir, DEFAULT_DRIVER_TIMEOUT)
            );
            assert_eq!(driver_pid(&dir), None);
            let e = Client::connect(&dir).unwrap_err();
            assert!(matches!(e, ConnectError::BadCnc { .. }), "{e:?}");
            let msg = e.to_string();
            assert!(
                msg.contains(&dir.display().to_string()) && msg.contains("AERON_DIR"),
                "{msg}"
            );
        }
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cnc_never_initialised_long_ago_is_bad_and_a_fresh_one_counts_as_starting() {
        let dir = scratch("zero");
        synthetic_cnc(&dir, 0, 0);
        assert_eq!(
            driver_status(&dir, Duration::from_secs(3600)),
            DriverStatus::Alive {
                heartbeat_age: Duration::ZERO
            }
        );
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(dir.join("cnc.dat"))
            .and_then(|f| f.set_modified(old))
            .unwrap();
        match driver_status(&dir, Duration::from_secs(10)) {
            DriverStatus::Unreadable { detail } => assert!(detail.contains("never initialised"), "{detail}"),
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stale_heartbeat_is_a_dead_driver_named_with_its_dir_and_the_fix() {
        let dir = scratch("dead");
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        synthetic_cnc(&dir, 0x0200, now_ms - 60_000);
        match driver_status(&dir, Duration::from_secs(10)) {
            DriverStatus::Dead { heartbeat_age } => assert!(heartbeat_age >= Duration::from_secs(59)),
            other => panic!("{other:?}"),
        }
        let e = Client::builder().dir(&dir).check().unwrap_err();
        assert!(matches!(e, ConnectError::DriverDead { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains(&dir.display().to_string()) && msg.contains("AERON_DIR"),
            "{msg}"
        );
        // The same file with a fresh heartbeat passes the check (connecting would then talk to it).
        synthetic_cnc(&dir, 0x0200, now_ms);
        assert!(Client::builder().dir(&dir).check().is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_given_as_the_dir_is_named_as_not_a_directory() {
        let file = scratch("file");
        std::fs::write(&file, b"x").unwrap();
        let e = Client::builder().dir(&file).check().unwrap_err();
        assert!(matches!(e, ConnectError::NotADirectory { .. }), "{e:?}");
        assert!(e.to_string().contains("not a directory"), "{e}");
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn default_dir_follows_aeron_dir_env() {
        // Only reads the env; does not set it (tests run in parallel).
        let d = default_aeron_dir();
        match std::env::var_os(AERON_DIR_ENV) {
            Some(v) if !v.is_empty() => assert_eq!(d, PathBuf::from(v)),
            _ => assert!(d.to_string_lossy().starts_with("/dev/shm/aeron-")),
        }
    }
}
