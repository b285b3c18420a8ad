//! [`ClientBuilder`]: the settings, the checks before connecting, and the connection in steps
//! (aeron-rs's context, `cnc.dat` mapped, our conductor thread started).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aeron_rs::aeron::Aeron;
use aeron_rs::cnc_file_descriptor;
use aeron_rs::concurrent::ring_buffer::ManyToOneRingBuffer;
use aeron_rs::context::Context;
use aeron_rs::utils::errors::{AeronError, DriverInteractionError, GenericError};
use aeron_rs::utils::memory_mapped_file::MemoryMappedFile;

use super::Client;
use crate::cnc::{default_aeron_dir, driver_status, DriverStatus};
use crate::conductor::{
    conductor_loop, guarded, print_error, stop_on_panic, DriverErrors, ErrorHandler, Inner, Lost, Shared, ACTIVE,
    CLIENT_TIMED_OUT, DRIVER_TIMED_OUT,
};
use crate::error::{AsyncError, ConnectError};
use crate::thread::{PinnedThread, ThreadBuilder};

/// Configures and connects a [`Client`].
#[derive(Clone)]
pub struct ClientBuilder {
    dir: Option<PathBuf>,
    driver_timeout: Option<Duration>,
    pre_touch: bool,
    on_error: Option<ErrorHandler>,
    conductor_core: Option<usize>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("dir", &self.dir)
            .field("driver_timeout", &self.driver_timeout)
            .field("conductor_core", &self.conductor_core)
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
            conductor_core: None,
        }
    }

    /// Where the client's asynchronous errors go ([`AsyncError`]: the loss of the driver, once,
    /// and what aeron-rs's conductor reports), instead of a line on stderr. Called from the
    /// client's conductor thread: keep it short, and never call back into the client. A panic
    /// in it is caught (and told on stderr with the error it was handed): the conductor goes on.
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
    /// release; 0 in debug). For that guarantee call
    /// [`Publication::prefault`](crate::Publication::prefault) and, once the publishers
    /// connected, [`Subscriber::prefault`](crate::Subscriber::prefault).
    #[must_use]
    pub fn pre_touch_mapped_memory(mut self, on: bool) -> Self {
        self.pre_touch = on;
        self
    }

    /// Pins the client's conductor thread (`aeron-conductor`) to `core`. Default: not pinned
    /// by the client, so it inherits the affinity of the thread that calls
    /// [`build`](Self::build), as the conductors of Aeron's own clients do. A client built on a
    /// hot thread pinned to its core thus has its conductor on that core, where each of the
    /// conductor's wake-ups (hundreds a second) takes the core from the hot thread: name a
    /// core the hot threads do not spin on. `None` keeps the default.
    ///
    /// ```
    /// # #[cfg(feature = "embedded-driver")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
    /// // The hot thread spins on the second-to-last core; its client's conductor goes to the last.
    /// let helpers = messaging::available_cores().last().copied();
    /// let client = messaging::Client::builder()
    ///     .dir(driver.dir())
    ///     .conductor_core(helpers)
    ///     .build()?;
    /// # drop(client);
    /// # Ok(()) }
    /// # #[cfg(not(feature = "embedded-driver"))] fn main() {}
    /// ```
    #[must_use]
    pub fn conductor_core(mut self, core: Option<usize>) -> Self {
        self.conductor_core = core;
        self
    }

    /// Checks, without connecting (no thread, no mapping kept, no wait), what
    /// [`build`](Self::build) checks first: that the directory holds a live media driver's
    /// `cnc.dat`. For programs that validate their input before starting anything.
    ///
    /// # Errors
    /// As [`build`](Self::build), except the errors only connecting can find.
    pub fn check(&self) -> Result<(), ConnectError> {
        let (dir, timeout) = self.clone().resolve()?;
        check_dir(&dir, timeout)
    }

    /// The directory and driver timeout, with the defaults applied (a timeout checked, and
    /// the conductor's core, before anything is mapped or started).
    fn resolve(self) -> Result<(PathBuf, Duration), ConnectError> {
        let dir = self.dir.unwrap_or_else(default_aeron_dir);
        let timeout = crate::cnc::driver_timeout(self.driver_timeout)
            .map_err(|detail| ConnectError::BadDriverTimeout { detail })?;
        if let Some(Err(source)) = self.conductor_core.map(crate::thread::check_core) {
            return Err(ConnectError::ConductorThread { dir, source });
        }
        Ok((dir, timeout))
    }

    /// Connects to the driver.
    ///
    /// # Errors
    /// [`ConnectError::NoDriver`] when `cnc.dat` is missing, [`ConnectError::NotADirectory`]
    /// when the directory is a file, [`ConnectError::DriverDead`] when its heartbeat is older
    /// than the driver timeout, [`ConnectError::BadCnc`] when `cnc.dat` is not a driver's
    /// (garbage, truncated, never initialised), [`ConnectError::ConductorThread`] when the
    /// conductor thread cannot start or be pinned ([`conductor_core`](Self::conductor_core)),
    /// other variants for what aeron-rs reports.
    pub fn build(self) -> Result<Client, ConnectError> {
        let (pre_touch, conductor_core) = (self.pre_touch, self.conductor_core);
        let on_error: ErrorHandler = guarded(self.on_error.clone().unwrap_or_else(|| Arc::new(print_error)));
        let (dir, timeout) = self.resolve()?;
        check_dir(&dir, timeout)?;
        let lost = Lost {
            state: Arc::new(AtomicU8::new(ACTIVE)),
            on_error,
            dir: dir.clone(),
            timeout,
        };
        let aeron = Aeron::new(context(&dir, timeout, pre_touch, lost.clone())).map_err(|e| connect_error(&dir, e))?;
        let client_id = aeron.client_id();
        let cnc = MemoryMappedFile::map_existing(dir.join("cnc.dat"), false).map_err(|e| ConnectError::Client {
            dir: dir.clone(),
            detail: e.to_string(),
        })?;
        let to_driver = to_driver_buffer(&dir, &cnc)?;
        let heartbeat = to_driver_buffer(&dir, &cnc)?;
        let shared = Arc::new(Shared {
            aeron: Mutex::new(Some(aeron)),
            stop: AtomicBool::new(false),
            lost,
            heartbeat,
            timeout_ms: timeout.as_millis() as i64,
            cnc,
            abandoned: Mutex::default(),
        });
        let conductor = start_conductor(&shared, &dir, conductor_core)?;
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

/// aeron-rs's context for this client: the directory, the timeout, the pre-touch, our
/// conductor thread instead of aeron-rs's, and its errors routed to `lost`.
fn context(dir: &Path, timeout: Duration, pre_touch: bool, lost: Lost) -> Context {
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
    ctx.set_error_handler(move |e: AeronError| match e {
        AeronError::DriverTimeout(_) => lost.mark(DRIVER_TIMED_OUT),
        AeronError::ClientTimeoutException
        | AeronError::Generic(GenericError::ClientHeartbeatNotActive)
        | AeronError::Generic(GenericError::TimeoutBetweenServiceCallsOverTimeout(_)) => {
            lost.mark(CLIENT_TIMED_OUT);
        }
        e => (lost.on_error)(&AsyncError::Client { message: e.to_string() }),
    });
    ctx
}

/// A handle on the driver's command ring buffer in `cnc.dat`.
fn to_driver_buffer(dir: &Path, cnc: &MemoryMappedFile) -> Result<ManyToOneRingBuffer, ConnectError> {
    ManyToOneRingBuffer::new(cnc_file_descriptor::create_to_driver_buffer(cnc)).map_err(|e| ConnectError::Client {
        dir: dir.to_owned(),
        detail: format!("{e:?}"),
    })
}

/// Starts this client's conductor thread (`conductor_loop`), its driver error log primed,
/// pinned to `core` when asked.
fn start_conductor(shared: &Arc<Shared>, dir: &Path, core: Option<usize>) -> Result<PinnedThread<()>, ConnectError> {
    let shared2 = shared.clone();
    let errors = DriverErrors::primed(&shared.cnc);
    ThreadBuilder::new()
        .name("aeron-conductor")
        .affinity_opt(core)
        .spawn(move || stop_on_panic(&shared2.lost, || conductor_loop(&shared2, errors)))
        .map_err(|source| ConnectError::ConductorThread {
            dir: dir.to_owned(),
            source,
        })
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
        DriverStatus::NoAccess { detail } => Err(ConnectError::PermissionDenied {
            dir: dir.to_owned(),
            detail,
        }),
        // A client writes its commands into cnc.dat: reading it is not enough.
        DriverStatus::Alive { .. } => match std::fs::OpenOptions::new().write(true).open(dir.join("cnc.dat")) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(ConnectError::PermissionDenied {
                dir: dir.to_owned(),
                detail: format!("{} is not writable by this process: {e}", dir.join("cnc.dat").display()),
            }),
            _ => Ok(()),
        },
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
