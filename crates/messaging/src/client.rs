//! The connection to a media driver.
//!
//! Guarantees:
//! - [`ClientBuilder::build`] fails fast with a typed [`ConnectError`] naming the directory when
//!   there is no driver (`cnc.dat` missing) or it is dead (stale heartbeat), instead of
//!   aeron-rs's 10 s wait;
//! - the Aeron directory follows Aeron's rule: builder setting, else `AERON_DIR`, else
//!   `/dev/shm/aeron-$USER` (aeron-rs ignores `AERON_DIR` by itself);
//! - closing is explicit and complete: when the last handle (the [`Client`], a
//!   [`ConcurrentPublication`], a [`Subscriber`]) goes, each publication and subscription sends its
//!   remove and the client sends `CLIENT_CLOSE`, so the driver frees the streams at once
//!   (aeron-rs 0.1.8 never sends `CLIENT_CLOSE`; the driver would time the client out ~10 s
//!   later and a new publisher on the same IPC stream would stall that long).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aeron_rs::aeron::Aeron;
use aeron_rs::cnc_file_descriptor;
use aeron_rs::concurrent::ring_buffer::ManyToOneRingBuffer;
use aeron_rs::context::Context;
use aeron_rs::image::Image;
use aeron_rs::utils::errors::{AeronError, DriverInteractionError, GenericError};
use aeron_rs::utils::memory_mapped_file::MemoryMappedFile;

use crate::channel::check_channel;
use crate::cnc::{
    default_aeron_dir, driver_status, list_counters, DriverCounter, DriverStatus, SUBSCRIBER_POSITION_COUNTER_TYPE_ID,
};
use crate::conductor::{
    conductor_loop, liveness_error, print_error, DriverErrors, ErrorHandler, Inner, Lost, Shared, ACTIVE,
    CLIENT_TIMED_OUT, DRIVER_TIMED_OUT,
};
use crate::error::{AddError, AsyncError, ConnectError, LivenessError};
use crate::images::Images;
use crate::publication::{ConcurrentPublication, ExclusivePublication, Publication, Registration};
use crate::reader::{Change, Counters, Feed};
use crate::subscription::Subscriber;

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

/// Configures and connects a [`Client`].
#[derive(Clone)]
pub struct ClientBuilder {
    dir: Option<PathBuf>,
    driver_timeout: Option<Duration>,
    pre_touch: bool,
    on_error: Option<ErrorHandler>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("dir", &self.dir)
            .field("driver_timeout", &self.driver_timeout)
            .field("pre_touch", &self.pre_touch)
            .field("error_handler", &self.on_error.as_ref().map(|_| "custom"))
            .finish()
    }
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
            on_error: None,
        }
    }

    /// Where the client's asynchronous errors go ([`AsyncError`]: the loss of the driver, once,
    /// and what aeron-rs's conductor reports), instead of a line on stderr. Called from the
    /// client's conductor thread: keep it short, and never call back into the client.
    ///
    /// ```
    /// # #[cfg(feature = "embedded-driver")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
    /// let client = messaging::Client::builder()
    ///     .dir(driver.dir())
    ///     .error_handler(|e| eprintln!("order-gateway: {e}"))
    ///     .build()?;
    /// # drop(client);
    /// # Ok(()) }
    /// # #[cfg(not(feature = "embedded-driver"))] fn main() {}
    /// ```
    #[must_use]
    pub fn error_handler(mut self, handler: impl Fn(&AsyncError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(handler));
        self
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
    /// release; 0 in debug). For that guarantee call [`Publication::prefault`] and, once the
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
        let timeout = self
            .driver_timeout
            .unwrap_or_else(crate::cnc::configured_driver_timeout);
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
        let on_error: ErrorHandler = self.on_error.clone().unwrap_or_else(|| Arc::new(print_error));
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
        let lost = Lost {
            state: Arc::new(AtomicU8::new(ACTIVE)),
            on_error: on_error.clone(),
            dir: dir.clone(),
            timeout,
        };
        let lost2 = lost.clone();
        ctx.set_error_handler(move |e: AeronError| match e {
            AeronError::DriverTimeout(_) => lost2.mark(DRIVER_TIMED_OUT),
            AeronError::ClientTimeoutException
            | AeronError::Generic(GenericError::ClientHeartbeatNotActive)
            | AeronError::Generic(GenericError::TimeoutBetweenServiceCallsOverTimeout(_)) => {
                lost2.mark(CLIENT_TIMED_OUT);
            }
            e => (lost2.on_error)(&AsyncError::Client { message: e.to_string() }),
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
        let heartbeat = ManyToOneRingBuffer::new(cnc_file_descriptor::create_to_driver_buffer(&cnc)).map_err(|e| {
            ConnectError::Client {
                dir: dir.clone(),
                detail: format!("{e:?}"),
            }
        })?;
        let shared = Arc::new(Shared {
            aeron: Mutex::new(Some(aeron)),
            stop: AtomicBool::new(false),
            lost,
            heartbeat,
            timeout_ms: timeout.as_millis() as i64,
            cnc,
        });
        let shared2 = shared.clone();
        let errors = DriverErrors::primed(&shared.cnc);
        let conductor = std::thread::Builder::new()
            .name("aeron-conductor".into())
            .spawn(move || conductor_loop(&shared2, errors))
            .map_err(|e| ConnectError::Client {
                dir: dir.clone(),
                detail: format!("could not start the conductor thread: {e}"),
            })?;
        Ok(Client {
            inner: Arc::new(Inner {
                shared,
                conductor: Some(conductor),
                to_driver,
                client_id,
                dir,
                timeout,
                pre_touch,
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

    /// Adds a publication and waits until the driver has created it.
    ///
    /// # Errors
    /// [`AddError`]: bad channel, rejected by the driver, no answer within the driver timeout.
    pub fn publication(&self, channel: &str, stream_id: i32) -> Result<ConcurrentPublication, AddError> {
        let mut pending = self.async_add_publication(channel, stream_id)?;
        wait_for(|| pending.poll())
    }

    /// Adds a subscription and waits until the driver has created it. Publishers that join
    /// later are picked up by the client conductor between polls.
    ///
    /// # Errors
    /// [`AddError`]: bad channel, rejected by the driver, no answer within the driver timeout.
    pub fn subscription(&self, channel: &str, stream_id: i32) -> Result<Subscriber, AddError> {
        let mut pending = self.async_add_subscription(channel, stream_id)?;
        wait_for(|| pending.poll())
    }

    /// Adds an exclusive publication (Aeron's `addExclusivePublication`) and waits until the
    /// driver has created it: a publication of its own session that one thread owns and that
    /// writes the log buffer itself, with no lock (see [`ExclusivePublication`]). The fastest
    /// way to publish; use [`publication`](Self::publication) when several threads publish to
    /// one stream.
    ///
    /// # Errors
    /// [`AddError`]: bad channel, rejected by the driver, no answer within the driver timeout,
    /// or the log file could not be mapped.
    pub fn exclusive_publication(&self, channel: &str, stream_id: i32) -> Result<ExclusivePublication, AddError> {
        let mut pending = self.async_add_exclusive_publication(channel, stream_id)?;
        wait_for(|| pending.poll())
    }

    /// Starts adding an exclusive publication and returns at once (Aeron's
    /// `asyncAddExclusivePublication`): poll the [`PendingExclusivePublication`].
    ///
    /// # Errors
    /// [`AddError`]: a bad channel, or the command could not be sent.
    pub fn async_add_exclusive_publication(
        &self,
        channel: &str,
        stream_id: i32,
    ) -> Result<PendingExclusivePublication, AddError> {
        let c = check_channel(channel)?;
        let started = Instant::now();
        let id = self
            .inner
            .with_aeron(|a| a.add_exclusive_publication(c, stream_id))?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        Ok(PendingExclusivePublication(Pending::new(
            self, id, channel, stream_id, started,
        )))
    }

    /// Starts adding a publication and returns at once (Aeron's `asyncAddPublication`): call
    /// [`PendingPublication::poll`] from the service's own loop until it hands over the
    /// [`ConcurrentPublication`], instead of blocking in [`publication`](Self::publication).
    ///
    /// # Errors
    /// [`AddError`]: a bad channel, or the command could not be sent.
    pub fn async_add_publication(&self, channel: &str, stream_id: i32) -> Result<PendingPublication, AddError> {
        let c = check_channel(channel)?;
        let started = Instant::now();
        let id = self
            .inner
            .with_aeron(|a| a.add_publication(c, stream_id))?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        Ok(PendingPublication(Pending::new(self, id, channel, stream_id, started)))
    }

    /// Starts adding a subscription and returns at once (Aeron's `asyncAddSubscription`): call
    /// [`PendingSubscription::poll`] until it hands over the [`Subscriber`].
    ///
    /// # Errors
    /// [`AddError`]: a bad channel, or the command could not be sent.
    pub fn async_add_subscription(&self, channel: &str, stream_id: i32) -> Result<PendingSubscription, AddError> {
        let c = check_channel(channel)?;
        let started = Instant::now();
        let images = Images::new();
        let values = cnc_file_descriptor::create_counter_values_buffer(&self.inner.shared.cnc);
        // The handlers hold the counters' address, not the client: the client's mapping of
        // cnc.dat outlives every image the subscriber reads (the subscriber holds the client).
        let (feed, changes) = Feed::new(Counters {
            base: values.buffer() as usize,
            capacity: values.capacity().max(0) as usize,
        });
        let (on_available, on_unavailable) = ((images.clone(), feed.clone()), (images.clone(), feed));
        let id = self
            .inner
            .with_aeron(|a| {
                a.add_subscription_opt(
                    c,
                    stream_id,
                    Box::new(move |image: &Image| {
                        on_available.0.on_available(image);
                        on_available.1.available(image);
                    }),
                    Box::new(move |image: &Image| {
                        on_unavailable.0.on_unavailable(image);
                        on_unavailable.1.unavailable(image);
                    }),
                )
            })?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        Ok(PendingSubscription {
            pending: Pending::new(self, id, channel, stream_id, started),
            images,
            changes: Some(changes),
        })
    }

    /// Drops this handle. The driver is told the client closed once every publisher and
    /// subscriber made from it is dropped too.
    pub fn close(self) {}
}

/// Polls `poll` until it hands something over, backing off from 100 µs to 5 ms.
fn wait_for<T>(mut poll: impl FnMut() -> Result<Option<T>, AddError>) -> Result<T, AddError> {
    let mut pause = Duration::from_micros(100);
    loop {
        if let Some(t) = poll()? {
            return Ok(t);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// What a pending add knows: the registration and since when it waits.
struct Pending {
    inner: Arc<Inner>,
    id: i64,
    channel: String,
    stream_id: i32,
    started: Instant,
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("registration_id", &self.id)
            .field("channel", &self.channel)
            .field("stream_id", &self.stream_id)
            .field("waiting", &self.started.elapsed())
            .finish()
    }
}

impl Pending {
    fn new(client: &Client, id: i64, channel: &str, stream_id: i32, started: Instant) -> Pending {
        Pending {
            inner: client.inner.clone(),
            id,
            channel: channel.to_owned(),
            stream_id,
            started,
        }
    }

    /// One look: the resource, `None` while the driver has not answered, or why it failed
    /// (including no answer within the driver timeout).
    fn poll<T>(
        &self,
        find: impl FnOnce(&mut Aeron, i64) -> Result<Option<T>, AeronError>,
    ) -> Result<Option<T>, AddError> {
        match self.inner.with_aeron(|a| find(a, self.id))? {
            Ok(Some(t)) => Ok(Some(t)),
            Err(e) => Err(AddError::from_aeron(
                &self.channel,
                self.stream_id,
                self.started.elapsed(),
                e,
            )),
            Ok(None) if self.started.elapsed() > self.inner.timeout => Err(AddError::Timeout {
                channel: self.channel.clone(),
                waited: self.started.elapsed(),
            }),
            Ok(None) => Ok(None),
        }
    }
}

/// A publication being added ([`Client::async_add_publication`]). Dropped before it handed
/// over the [`ConcurrentPublication`], the publication stays with the driver until the client closes.
#[derive(Debug)]
#[must_use = "poll it until it hands over the ConcurrentPublication"]
pub struct PendingPublication(Pending);

impl PendingPublication {
    /// The [`ConcurrentPublication`] once the driver created it, `None` while it has not answered yet.
    /// Takes the client's lock for one look (never waits for the driver).
    ///
    /// # Errors
    /// [`AddError`]: the driver refused it, or did not answer within the driver timeout.
    pub fn poll(&mut self) -> Result<Option<ConcurrentPublication>, AddError> {
        let found = self.0.poll(|a, id| match a.find_publication(id) {
            Err(AeronError::PublicationNotReady(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(p) => Ok(Some(p)),
        })?;
        let Some(p) = found else { return Ok(None) };
        let spec = crate::mapped::log_spec!(p, &self.0.inner, self.0.stream_id);
        Publication::new(Registration::Concurrent(p), spec, self.0.inner.clone(), &self.0.channel).map(Some)
    }
}

/// An exclusive publication being added ([`Client::async_add_exclusive_publication`]).
#[derive(Debug)]
#[must_use = "poll it until it hands over the ExclusivePublication"]
pub struct PendingExclusivePublication(Pending);

impl PendingExclusivePublication {
    /// The [`ExclusivePublication`] once the driver created it, `None` while it has not answered
    /// yet. Takes the client's lock for one look (never waits for the driver).
    ///
    /// # Errors
    /// [`AddError`]: the driver refused it, did not answer within the driver timeout, or the
    /// log file could not be mapped.
    pub fn poll(&mut self) -> Result<Option<ExclusivePublication>, AddError> {
        let found = self.0.poll(|a, id| match a.find_exclusive_publication(id) {
            Err(AeronError::Generic(GenericError::ExclusivePublicationNotReadyYet { .. })) => Ok(None),
            Err(e) => Err(e),
            Ok(p) => Ok(Some(p)),
        })?;
        let Some(p) = found else { return Ok(None) };
        let spec = crate::mapped::log_spec!(p, &self.0.inner, self.0.stream_id);
        Publication::new(Registration::Exclusive(p), spec, self.0.inner.clone(), &self.0.channel).map(Some)
    }
}

/// A subscription being added ([`Client::async_add_subscription`]). Dropped before it handed
/// over the [`Subscriber`], the subscription stays with the driver until the client closes.
#[must_use = "poll it until it hands over the Subscriber"]
pub struct PendingSubscription {
    pending: Pending,
    /// Fed by the image handlers from the moment the subscription was asked for.
    images: Arc<Images>,
    /// The images the subscriber will read (taken when it is handed over).
    changes: Option<crossbeam_channel::Receiver<Change>>,
}

impl fmt::Debug for PendingSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pending.fmt(f)
    }
}

impl PendingSubscription {
    /// The [`Subscriber`] once the driver created it, `None` while it has not answered yet.
    /// Takes the client's lock for one look (never waits for the driver).
    ///
    /// # Errors
    /// [`AddError`]: the driver refused it, or did not answer within the driver timeout.
    pub fn poll(&mut self) -> Result<Option<Subscriber>, AddError> {
        let p = &self.pending;
        let found = p.poll(|a, id| match a.find_subscription(id) {
            Err(AeronError::SubscriptionNotReady(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(s) => Ok(Some(s)),
        })?;
        let Some(s) = found else {
            return Ok(None);
        };
        let changes = self.changes.take().ok_or(AddError::ClientClosed)?;
        Ok(Some(Subscriber::new(
            s,
            p.inner.clone(),
            self.images.clone(),
            changes,
            &p.channel,
            p.stream_id,
        )))
    }
}

#[cfg(all(test, feature = "embedded-driver"))]
mod tests {
    use std::sync::mpsc;

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
        let mut publ = client.publication("aeron:ipc", 60).unwrap();
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
        let crate::publication::Registration::Concurrent(publication) = &publ.registration else {
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
        let status = answered.expect("a status read waited for a lock the conductor takes");
        // One 40-byte message: a 32-byte header, 72 bytes aligned to 96.
        assert_eq!(status, (true, Ok(96), 1, true, false, false));
    }
}
