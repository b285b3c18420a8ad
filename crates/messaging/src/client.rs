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
use aeron_rs::concurrent::ring_buffer::ManyToOneRingBuffer;
use aeron_rs::context::Context;
use aeron_rs::utils::errors::{AeronError, GenericError};
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
#[must_use]
pub fn driver_status(dir: &Path, timeout: Duration) -> DriverStatus {
    let cnc = dir.join("cnc.dat");
    match std::fs::metadata(&cnc) {
        Ok(m) if m.len() > 0 => {}
        _ => return DriverStatus::Absent,
    }
    let map = match MemoryMappedFile::map_existing(cnc.clone(), false) {
        Ok(m) => m,
        Err(e) => return DriverStatus::Unreadable { detail: e.to_string() },
    };
    if cnc_file_descriptor::cnc_version_volatile(&map) == 0 {
        // Being created right now: treat as alive with unknown age; connecting will wait.
        return DriverStatus::Alive {
            heartbeat_age: Duration::ZERO,
        };
    }
    let ring = match ManyToOneRingBuffer::new(cnc_file_descriptor::create_to_driver_buffer(&map)) {
        Ok(r) => r,
        Err(e) => {
            return DriverStatus::Unreadable {
                detail: format!("{e:?}"),
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

/// The process id of the driver that owns `dir/cnc.dat` (Aeron writes it into the CnC
/// metadata), or `None` when there is no readable `cnc.dat` or it predates the field.
///
/// The probe uses it to watch the driver's threads for jitter diagnosis; it says nothing about
/// whether that process is still alive (see [`driver_status`]).
#[must_use]
pub fn driver_pid(dir: &Path) -> Option<u32> {
    let cnc = dir.join("cnc.dat");
    if std::fs::metadata(&cnc).map_or(true, |m| m.len() == 0) {
        return None;
    }
    let map = MemoryMappedFile::map_existing(cnc, false).ok()?;
    if cnc_file_descriptor::cnc_version_volatile(&map) == 0 {
        return None;
    }
    u32::try_from(cnc_file_descriptor::pid(&map)).ok().filter(|p| *p > 0)
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

    /// Connects to the driver.
    ///
    /// # Errors
    /// [`ConnectError::NoDriver`] when `cnc.dat` is missing, [`ConnectError::DriverDead`] when
    /// its heartbeat is older than the driver timeout, other variants for what aeron-rs reports.
    pub fn build(self) -> Result<Client, ConnectError> {
        let dir = self.dir.unwrap_or_else(default_aeron_dir);
        let timeout = self.driver_timeout.unwrap_or_else(|| {
            std::env::var(AERON_DRIVER_TIMEOUT_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(DEFAULT_DRIVER_TIMEOUT, Duration::from_millis)
        });
        match driver_status(&dir, timeout) {
            DriverStatus::Absent => return Err(ConnectError::NoDriver { dir }),
            DriverStatus::Dead { heartbeat_age } => return Err(ConnectError::DriverDead { dir, heartbeat_age }),
            DriverStatus::Unreadable { detail } => {
                return Err(ConnectError::Client {
                    dir,
                    detail: format!("cnc.dat is unreadable: {detail}"),
                })
            }
            DriverStatus::Alive { .. } => {}
        }
        let mut ctx = Context::new();
        ctx.set_aeron_dir(dir.to_string_lossy().into_owned());
        ctx.set_media_driver_timeout(timeout.as_millis() as u64);
        ctx.set_pre_touch_mapped_memory(self.pre_touch);
        ctx.set_agent_name("aeron-client");
        // Drive the client conductor from our own thread (see `conductor_loop`): aeron-rs's
        // AgentRunner sleeps its 4 ms idle *while holding* the conductor mutex (the guard is a
        // temporary in the `match` scrutinee), so any other thread that needs the conductor —
        // adding or closing a publication or subscription — waits until it wins a race
        // against that loop: measured here, 0.3 s to 40 s to drop one subscription.
        ctx.set_use_conductor_agent_invoker(true);
        // aeron-rs's default error handler prints to stdout; errors that matter reach us
        // through return values, the rest are counted here.
        ctx.set_error_handler(|e: AeronError| {
            eprintln!("aeron client: {e}");
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

fn connect_error(dir: &Path, e: AeronError) -> ConnectError {
    match e {
        AeronError::Generic(GenericError::CncVersionDoesntMatch { .. }) => ConnectError::VersionMismatch {
            dir: dir.to_owned(),
            detail: e.to_string(),
        },
        AeronError::DriverTimeout(_) => ConnectError::DriverDead {
            dir: dir.to_owned(),
            heartbeat_age: Duration::ZERO,
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

    /// A snapshot of the driver's counters (as AeronStat shows them): back-pressure events,
    /// errors, per-stream positions, client heartbeats, …
    #[must_use]
    pub fn counters(&self) -> Vec<DriverCounter> {
        let Ok(Ok(reader)) = self.inner.with_aeron(|a| a.counters_reader()) else {
            return Vec::new();
        };
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
    let invalid = |reason: &str| AddError::InvalidChannel {
        channel: channel.to_owned(),
        reason: reason.to_owned(),
    };
    if !channel.starts_with("aeron:") {
        return Err(invalid("it must start with \"aeron:\""));
    }
    let media = channel["aeron:".len()..].split('?').next().unwrap_or("");
    if !matches!(media, "ipc" | "udp") {
        return Err(invalid("the media must be ipc or udp"));
    }
    if channel.contains(char::is_whitespace) {
        return Err(invalid("it contains whitespace"));
    }
    CString::new(channel).map_err(|_| invalid("it contains a NUL byte"))
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
    fn default_dir_follows_aeron_dir_env() {
        // Only reads the env; does not set it (tests run in parallel).
        let d = default_aeron_dir();
        match std::env::var_os(AERON_DIR_ENV) {
            Some(v) if !v.is_empty() => assert_eq!(d, PathBuf::from(v)),
            _ => assert!(d.to_string_lossy().starts_with("/dev/shm/aeron-")),
        }
    }
}
