//! An embedded Aeron C media driver (Aeron 1.54 via `rusteron-media-driver`, statically linked).
//!
//! Guarantees:
//! - [`EmbeddedDriver`] is a guard: dropping it stops the driver, joins its thread and
//!   removes its directory;
//! - it starts in Aeron's default directory (`AERON_DIR`, else `/dev/shm/aeron-$USER`) unless
//!   given one, and never in a directory whose driver is alive;
//!   [`EmbeddedDriverBuilder::private_dir`] gives tests and concurrent runs a fresh one each;
//! - it never spins: SHARED threading (one agent thread) with Aeron's `backoff` idle strategy
//!   unless the environment or the builder says otherwise, because on small machines the hot
//!   threads own the cores;
//! - configuration is layered the Aeron way: compiled default, then the `AERON_*` environment
//!   variables the C driver reads (`AERON_THREADING_MODE`, `AERON_TERM_BUFFER_LENGTH`,
//!   `AERON_IPC_TERM_BUFFER_LENGTH`, `AERON_SHARED_IDLE_STRATEGY`, `AERON_DRIVER_TIMEOUT`,
//!   `AERON_TERM_BUFFER_SPARSE_FILE`, …),
//!   then the builder's setters;
//! - space for the log buffers is checked before the driver starts, with the amount needed.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = messaging::Client::connect(driver.dir())?;
//! # drop(client);
//! # Ok(()) }
//! ```

use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use rusteron_media_driver::bindings::aeron_threading_mode_enum;
use rusteron_media_driver::{AeronDriver, AeronDriverContext};

use crate::error::DriverLaunchError;

/// Our default idle strategy for the driver's agent: Aeron's `backoff` (parks up to 1 ms).
pub const DEFAULT_DRIVER_IDLE: &str = "backoff";

/// The version string of the embedded Aeron C driver, e.g. `aeron version=1.54.0 ...`.
#[must_use]
pub fn driver_version() -> String {
    rusteron_media_driver::Aeron::version_full().to_owned()
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Configures an [`EmbeddedDriver`]; consuming setters, then [`spawn`](Self::spawn).
#[derive(Clone, Default)]
pub struct EmbeddedDriverBuilder {
    dir: Option<PathBuf>,
    term_length: Option<usize>,
    ipc_term_length: Option<usize>,
    idle: Option<String>,
    driver_timeout: Option<Duration>,
    sparse: Option<bool>,
    remove_stale: bool,
    delete_on_start: bool,
    linger: Option<Duration>,
    on_error: Option<crate::conductor::ErrorHandler>,
    options: Vec<crate::driver_option::DriverOption>,
}

impl fmt::Debug for EmbeddedDriverBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedDriverBuilder")
            .field("dir", &self.dir)
            .field("term_length", &self.term_length)
            .field("ipc_term_length", &self.ipc_term_length)
            .field("idle", &self.idle)
            .field("driver_timeout", &self.driver_timeout)
            .field("sparse", &self.sparse)
            .field("remove_stale", &self.remove_stale)
            .field("delete_on_start", &self.delete_on_start)
            .field("linger", &self.linger)
            .field("error_handler", &self.on_error.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl EmbeddedDriverBuilder {
    /// The driver's directory; default: Aeron's, `AERON_DIR` or else `/dev/shm/aeron-$USER`,
    /// where clients look by default ([`default_aeron_dir`](crate::default_aeron_dir)).
    #[must_use]
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// A fresh directory of this driver's own beside Aeron's default one,
    /// `<default dir>-<pid>-<n>` (e.g. `/dev/shm/aeron-$USER-4242-0`): for tests and for a process
    /// that owns its driver, so that it never meets another driver. Give it to clients with
    /// [`EmbeddedDriver::dir`].
    #[must_use]
    pub fn private_dir(mut self) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        self.dir = Some(private_dir_name(&crate::default_aeron_dir(), std::process::id(), n));
        self
    }

    /// Term length for network publications (power of two, 64 KiB..1 GiB).
    #[must_use]
    pub fn term_length(mut self, bytes: usize) -> Self {
        self.term_length = Some(bytes);
        self
    }

    /// Term length for IPC publications (power of two, 64 KiB..1 GiB). Small terms keep
    /// tests light; large ones absorb bursts.
    #[must_use]
    pub fn ipc_term_length(mut self, bytes: usize) -> Self {
        self.ipc_term_length = Some(bytes);
        self
    }

    /// Idle strategy of the driver's shared agent (`backoff`, `sleep-ns`, `yield`, …).
    /// Never `spin` on a machine whose cores the hot threads own.
    #[must_use]
    pub fn idle(mut self, alias: impl Into<String>) -> Self {
        self.idle = Some(alias.into());
        self
    }

    /// How long clients may stay silent before the driver drops them, and vice versa.
    #[must_use]
    pub fn driver_timeout(mut self, t: Duration) -> Self {
        self.driver_timeout = Some(t);
        self
    }

    /// How long a closed publication's log stays after its subscribers drained it (Aeron's
    /// `AERON_PUBLICATION_LINGER_TIMEOUT`, default 5 s); its subscribers' images go
    /// unavailable when it ends.
    #[must_use]
    pub fn publication_linger(mut self, t: Duration) -> Self {
        self.linger = Some(t);
        self
    }

    /// Sets one driver setting by name ([`DriverOption::parse`](crate::DriverOption::parse)),
    /// applied after the environment and after this builder's other setters (an option wins),
    /// as `aeronmd` would take `AERON_<NAME>`, but for this driver only.
    #[must_use]
    pub fn option(mut self, o: crate::driver_option::DriverOption) -> Self {
        self.options.push(o);
        self
    }

    /// Where the driver's own failures go instead of stderr: its work loop failing (the driver
    /// then stops: [`EmbeddedDriver::is_running`] turns false, and its clients see it as a
    /// driver that stopped). The errors the driver logs while it runs (its distinct error
    /// log) reach every client's [`ClientBuilder::error_handler`](crate::ClientBuilder::error_handler)
    /// as [`AsyncError::Driver`](crate::AsyncError::Driver). Called on the driver's thread.
    #[must_use]
    pub fn error_handler(mut self, handler: impl Fn(&crate::AsyncError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(std::sync::Arc::new(handler));
        self
    }

    /// Aeron's `AERON_TERM_BUFFER_SPARSE_FILE` (the C driver's default: `true`). The C media
    /// driver has no `pre_touch_mapped_memory` setting (`AERON_PRE_TOUCH_MAPPED_MEMORY` is a
    /// client setting); this is its pre-touch.
    ///
    /// With `false`, the driver allocates every page of each log buffer when it creates it
    /// (`fallocate`) and maps them all into its own address space (`MAP_POPULATE`, then a
    /// touch of each page), so its own threads take no page fault on the log later (for an
    /// embedded driver: none on its mapping while you measure), and clients find every page
    /// already allocated, which makes their own first touch a cheaper fault. It does not map
    /// the pages into the clients' address spaces: for that, call
    /// [`Publication::prefault`](crate::Publication::prefault) and
    /// [`Subscriber::prefault`](crate::Subscriber::prefault). The cost: creating a publication
    /// takes longer and uses its whole `/dev/shm` space up front (3 × term length).
    #[must_use]
    pub fn term_buffer_sparse_file(mut self, sparse: bool) -> Self {
        self.sparse = Some(sparse);
        self
    }

    /// Before starting, delete the directory if a dead driver left it (Aeron's
    /// `dirDeleteOnStart`, `AERON_DIR_DELETE_ON_START`). Off by default: the driver then cleans a
    /// dead driver's directory itself, after reporting the errors it logged. Either way a
    /// directory whose driver is alive is never touched: [`spawn`](Self::spawn) refuses it with
    /// [`DriverLaunchError::ActiveDriver`].
    #[must_use]
    pub fn dir_delete_on_start(mut self, on: bool) -> Self {
        self.delete_on_start = on;
        self
    }

    /// Before starting, remove the `<default dir>-<pid>-<n>` ([`private_dir`](Self::private_dir)) directories beside this driver's
    /// own whose process no longer exists and whose driver is dead (a stale heartbeat, or no
    /// `cnc.dat` for over a minute): what runs killed with SIGKILL leave behind, with their
    /// non-sparse term buffers. Off by default; see [`EmbeddedDriver::stale_dirs_removed`].
    #[must_use]
    pub fn remove_stale_dirs(mut self, on: bool) -> Self {
        self.remove_stale = on;
        self
    }

    /// The IPC term length the driver will use (builder, else `AERON_IPC_TERM_BUFFER_LENGTH`,
    /// else Aeron's 64 MiB).
    #[must_use]
    pub fn effective_ipc_term_length(&self) -> usize {
        self.ipc_term_length
            .or_else(|| env_bytes("AERON_IPC_TERM_BUFFER_LENGTH"))
            .unwrap_or(64 << 20)
    }

    /// Starts the driver on its own thread and waits until its directory is ready.
    ///
    /// With [`remove_stale_dirs`](Self::remove_stale_dirs) it first removes what killed runs
    /// left beside its directory.
    ///
    /// Nothing it creates is world-writable: this adds `0o002` to the process's umask, for
    /// good (the driver creates log files for as long as it runs).
    ///
    /// # Errors
    /// [`DriverLaunchError`]: a live driver already in the directory, no space for the buffers,
    /// a rejected setting, a failed start.
    pub fn spawn(self) -> Result<EmbeddedDriver, DriverLaunchError> {
        let dir = self.dir.clone().unwrap_or_else(crate::default_aeron_dir);
        let timeout = self
            .driver_timeout
            .unwrap_or_else(crate::cnc::configured_driver_timeout);
        // A fresh heartbeat refuses the directory, as Aeron's drivers refuse it, unless this
        // host sees the driver's process gone (then the dead driver's files are deleted, as
        // Aeron deletes them once the heartbeat is older than the timeout).
        let mut delete_on_start = self.delete_on_start;
        if let crate::DriverStatus::Alive { heartbeat_age } = crate::cnc::driver_status(&dir, timeout) {
            let process = crate::driver_process_state(&dir);
            if !process.is_dead() {
                return Err(DriverLaunchError::ActiveDriver {
                    pid: crate::cnc::driver_pid(&dir),
                    dir,
                    heartbeat_age,
                    process,
                });
            }
            delete_on_start = true;
        }
        let ipc_term = self.effective_ipc_term_length();
        if let Err(reason) = check_term_length(ipc_term) {
            return Err(DriverLaunchError::Config {
                setting: "ipc term length",
                detail: reason,
            });
        }
        // Two streams (round trip) of three terms each, plus cnc.dat and slack.
        let needed = 2 * 3 * ipc_term as u64 + (16 << 20);
        let parent = dir.parent().unwrap_or(Path::new("/dev/shm"));
        // Directories of embedded drivers whose process was killed (SIGKILL skips our Drop)
        // hold their full, non-sparse term buffers until removed: remove them first.
        let stale_removed = if self.remove_stale {
            remove_stale_dirs(parent, &private_prefix(&crate::default_aeron_dir()))
        } else {
            Vec::new()
        };
        if let Some(available) = free_bytes(parent) {
            if available < needed {
                return Err(DriverLaunchError::NoSpace {
                    dir: parent.to_owned(),
                    needed,
                    available,
                    term_length: ipc_term as u64,
                });
            }
        }

        let cfg = |setting: &'static str| {
            move |e: rusteron_media_driver::AeronCError| DriverLaunchError::Config {
                setting,
                detail: format!("{e:?}"),
            }
        };
        // The driver creates its directory and files with mode 0777/0666 minus the umask:
        // make sure "others" never get write access (cnc.dat and the term buffers would let
        // any local user inject messages). The umask is per process and stays set: the driver
        // keeps creating log files for as long as it runs.
        deny_world_write();
        let ctx = AeronDriverContext::new().map_err(cfg("context"))?;
        let dir_c = CString::new(dir.to_string_lossy().as_bytes()).map_err(|_| DriverLaunchError::Config {
            setting: "dir",
            detail: "the path contains a NUL byte".into(),
        })?;
        ctx.set_dir(&dir_c).map_err(cfg("dir"))?;
        // Never on a live driver's directory (refused above); a dead driver's directory is
        // cleaned by the driver itself (Aeron's rule), or deleted first with the opt-in.
        ctx.set_dir_delete_on_start(delete_on_start)
            .map_err(cfg("dir delete on start"))?;
        ctx.set_dir_delete_on_shutdown(true)
            .map_err(cfg("dir delete on shutdown"))?;
        if !env_set("AERON_THREADING_MODE") {
            ctx.set_threading_mode(aeron_threading_mode_enum::AERON_THREADING_MODE_SHARED)
                .map_err(cfg("threading mode"))?;
        }
        let idle = self
            .idle
            .clone()
            .or_else(|| (!env_set("AERON_SHARED_IDLE_STRATEGY")).then(|| DEFAULT_DRIVER_IDLE.to_owned()));
        if let Some(idle) = &idle {
            let c = CString::new(idle.as_str()).unwrap_or_default();
            ctx.set_shared_idle_strategy(&c).map_err(cfg("shared idle strategy"))?;
            ctx.set_conductor_idle_strategy(&c)
                .map_err(cfg("conductor idle strategy"))?;
            ctx.set_sender_idle_strategy(&c).map_err(cfg("sender idle strategy"))?;
            ctx.set_receiver_idle_strategy(&c)
                .map_err(cfg("receiver idle strategy"))?;
            ctx.set_sharednetwork_idle_strategy(&c)
                .map_err(cfg("shared network idle strategy"))?;
        }
        if let Some(t) = self.term_length {
            ctx.set_term_buffer_length(t).map_err(cfg("term length"))?;
        }
        if let Some(t) = self.ipc_term_length {
            ctx.set_ipc_term_buffer_length(t).map_err(cfg("ipc term length"))?;
        }
        if let Some(sparse) = self.sparse {
            ctx.set_term_buffer_sparse_file(sparse)
                .map_err(cfg("term buffer sparse file"))?;
        }
        if let Some(t) = self.driver_timeout {
            ctx.set_driver_timeout_ms(t.as_millis() as u64)
                .map_err(cfg("driver timeout"))?;
            ctx.set_client_liveness_timeout_ns(t.as_nanos() as u64)
                .map_err(cfg("client liveness timeout"))?;
        }

        if let Some(t) = self.linger {
            ctx.set_publication_linger_timeout_ns(t.as_nanos() as u64)
                .map_err(cfg("publication linger timeout"))?;
        }
        for o in &self.options {
            apply(&ctx, o).map_err(|e| DriverLaunchError::Config {
                setting: o.property(),
                detail: format!("{e:?}"),
            })?;
        }
        let settings = DriverSettings::read(&ctx);
        let on_error = self
            .on_error
            .clone()
            .unwrap_or_else(|| Arc::new(crate::conductor::print_error));

        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<i32, String>>(1);
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("aeron-driver".into())
            .spawn(move || {
                let driver = match AeronDriver::new(&ctx).and_then(|d| d.start(true).map(|_| d)) {
                    Ok(d) => d,
                    Err(e) => {
                        let msg = e.message().map_or_else(|| format!("{e:?}"), str::to_owned);
                        let _ = ready_tx.send(Err(msg));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(crate::thread::current_tid()));
                while !stop2.load(Ordering::Acquire) {
                    match driver.main_do_work() {
                        Ok(work) => driver.main_idle_strategy(work),
                        Err(e) => {
                            let message = e.message().map_or_else(|| format!("{e:?}"), str::to_owned);
                            on_error(&crate::AsyncError::Driver {
                                message: format!(
                                    "the embedded driver's work loop failed, the driver stopped: {message}"
                                ),
                                observations: 1,
                            });
                            break;
                        }
                    }
                }
                drop(driver);
                drop(ctx);
            })
            .map_err(|e| DriverLaunchError::Start { detail: e.to_string() })?;
        let tid = match ready_rx.recv() {
            Ok(Ok(tid)) => tid,
            Ok(Err(detail)) => {
                let _ = handle.join();
                return Err(DriverLaunchError::Start { detail });
            }
            Err(_) => {
                let _ = handle.join();
                return Err(DriverLaunchError::Start {
                    detail: "the driver thread ended before it was ready".into(),
                });
            }
        };
        Ok(EmbeddedDriver {
            ipc_term_length: settings.ipc_term_buffer_length,
            settings,
            stale_removed,
            dir,
            stop,
            handle: Some(handle),
            tid,
        })
    }
}

/// Sets one option on the context.
fn apply(
    ctx: &AeronDriverContext,
    o: &crate::driver_option::DriverOption,
) -> Result<i32, rusteron_media_driver::AeronCError> {
    use crate::driver_option::OptionValue;
    use aeron_threading_mode_enum as M;
    let n = match o.value() {
        OptionValue::Number(n) => *n,
        OptionValue::Threading(m) => {
            let mode = match *m {
                "DEDICATED" => M::AERON_THREADING_MODE_DEDICATED,
                "SHARED_NETWORK" => M::AERON_THREADING_MODE_SHARED_NETWORK,
                _ => M::AERON_THREADING_MODE_SHARED,
            };
            return ctx.set_threading_mode(mode);
        }
    };
    let size = usize::try_from(n).unwrap_or(usize::MAX);
    match o.property() {
        "aeron.nak.multicast.max.backoff" => ctx.set_nak_multicast_max_backoff_ns(n),
        "aeron.nak.multicast.group.size" => ctx.set_nak_multicast_group_size(size),
        "aeron.nak.unicast.delay" => ctx.set_nak_unicast_delay_ns(n),
        "aeron.nak.unicast.retry.delay.ratio" => ctx.set_nak_unicast_retry_delay_ratio(n),
        "aeron.retransmit.unicast.linger" => ctx.set_retransmit_unicast_linger_ns(n),
        "aeron.socket.so_rcvbuf" => ctx.set_socket_so_rcvbuf(size),
        "aeron.socket.so_sndbuf" => ctx.set_socket_so_sndbuf(size),
        "aeron.rcv.initial.window.length" => ctx.set_rcv_initial_window_length(size),
        "aeron.mtu.length" => ctx.set_mtu_length(size),
        "aeron.ipc.mtu.length" => ctx.set_ipc_mtu_length(size),
        "aeron.term.buffer.length" => ctx.set_term_buffer_length(size),
        "aeron.ipc.term.buffer.length" => ctx.set_ipc_term_buffer_length(size),
        "aeron.publication.linger.timeout" => ctx.set_publication_linger_timeout_ns(n),
        "aeron.file.page.size" => ctx.set_file_page_size(size),
        // DriverOption::parse only makes the properties above.
        other => unreachable!("no setter for {other}"),
    }
}

fn env_bytes(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    let v = v.trim().to_ascii_lowercase();
    let (num, mult) = match v.chars().last()? {
        'k' => (&v[..v.len() - 1], 1 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v.as_str(), 1),
    };
    num.parse::<usize>().ok().map(|n| n * mult)
}

/// Aeron's rule for term lengths: a power of two from 64 KiB to 1 GiB.
///
/// # Errors
/// A sentence saying what is wrong with `len`.
pub fn check_term_length(len: usize) -> Result<(), String> {
    const MIN: usize = 64 << 10;
    const MAX: usize = 1 << 30;
    if !(MIN..=MAX).contains(&len) || !len.is_power_of_two() {
        return Err(format!(
            "term length {len} must be a power of two from 65536 (64 KiB) to 1073741824 (1 GiB)"
        ));
    }
    Ok(())
}

/// Adds `0o002` to the process umask, once, without ever lowering or briefly changing it
/// otherwise: the current mask is read from `/proc/self/status`, and the change is made under
/// a lock (the read-and-set `umask` call is not atomic between threads).
fn deny_world_write() {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let current = std::fs::read_to_string("/proc/self/status").ok().and_then(|st| {
        st.lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| libc::mode_t::from_str_radix(v.trim(), 8).ok())
    });
    match current {
        Some(m) if m & 0o002 != 0 => {}
        Some(m) => {
            // SAFETY: umask only sets the process's file-creation mask; it cannot fail.
            unsafe { libc::umask(m | 0o002) };
        }
        None => {
            // No /proc: read by setting (briefly a stricter mask, never a looser one).
            // SAFETY: as above.
            let old = unsafe { libc::umask(0o077) };
            // SAFETY: as above.
            unsafe { libc::umask(old | 0o002) };
        }
    }
}

/// `<default dir>-<pid>-<n>`: a private directory ([`EmbeddedDriverBuilder::private_dir`]),
/// beside the default one (a trailing `/` in `AERON_DIR` does not put it inside).
fn private_dir_name(default: &Path, pid: u32, n: u64) -> PathBuf {
    let parent = default.parent().unwrap_or(Path::new("/dev/shm"));
    parent.join(format!("{}{pid}-{n}", private_prefix(default)))
}

/// The file-name prefix of private directories: `<default dir's name>-`.
fn private_prefix(default: &Path) -> String {
    format!(
        "{}-",
        default
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

/// Removes the `<prefix><pid>-<n>` directories under `parent` whose process is gone
/// (`kill(pid, 0)` says ESRCH) and whose driver is dead (stale heartbeat, or no readable
/// `cnc.dat` and untouched for a minute); returns what it removed.
fn remove_stale_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(pid, n)| {
                !pid.is_empty() && !n.is_empty() && pid.bytes().chain(n.bytes()).all(|b| b.is_ascii_digit())
            })
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if pid <= 0 || pid.unsigned_abs() == std::process::id() {
            continue;
        }
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        let gone =
            unsafe { libc::kill(pid, 0) } == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let path = e.path();
        let dead = match crate::cnc::driver_status(&path, crate::DEFAULT_DRIVER_TIMEOUT) {
            crate::DriverStatus::Dead { .. } => true,
            crate::DriverStatus::Alive { .. } => false,
            // No (readable) cnc.dat: a driver that died while starting, or one starting now in
            // another pid namespace; only the former is old.
            _ => std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60))),
        };
        if gone && dead && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Free bytes on the filesystem holding `dir` (statvfs), if it can be read.
#[must_use]
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path and `st` points to writable memory of the
    // right type; statvfs fills it on success (return 0), which is checked before reading.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// A running embedded media driver; stops and removes its directory when dropped.
pub struct EmbeddedDriver {
    stale_removed: Vec<PathBuf>,
    dir: PathBuf,
    ipc_term_length: usize,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    tid: i32,
    settings: DriverSettings,
}

/// What an embedded driver runs with, in Aeron's units, as its context holds them after the
/// environment and the builder applied: what `doctor` checks and a report records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverSettings {
    /// `aeron.threading.mode`: `SHARED`, `SHARED_NETWORK`, `DEDICATED` or `INVOKER`.
    pub threading_mode: String,
    /// `aeron.shared.idle.strategy` (the one agent of SHARED mode).
    pub shared_idle_strategy: String,
    /// `aeron.conductor.idle.strategy`.
    pub conductor_idle_strategy: String,
    /// `aeron.sender.idle.strategy`.
    pub sender_idle_strategy: String,
    /// `aeron.receiver.idle.strategy`.
    pub receiver_idle_strategy: String,
    /// `aeron.term.buffer.length` (network publications), bytes.
    pub term_buffer_length: usize,
    /// `aeron.ipc.term.buffer.length`, bytes.
    pub ipc_term_buffer_length: usize,
    /// `aeron.mtu.length`, bytes.
    pub mtu_length: usize,
    /// `aeron.socket.so_rcvbuf`, bytes.
    pub socket_so_rcvbuf: usize,
    /// `aeron.socket.so_sndbuf`, bytes (0: the OS default).
    pub socket_so_sndbuf: usize,
    /// `aeron.rcv.initial.window.length`, bytes.
    pub rcv_initial_window_length: usize,
    /// `aeron.nak.multicast.max.backoff`, ns.
    pub nak_multicast_max_backoff_ns: u64,
    /// `aeron.nak.multicast.group.size`.
    pub nak_multicast_group_size: usize,
    /// `aeron.nak.unicast.delay`, ns.
    pub nak_unicast_delay_ns: u64,
    /// `aeron.nak.unicast.retry.delay.ratio`.
    pub nak_unicast_retry_delay_ratio: u64,
    /// `aeron.retransmit.unicast.linger`, ns.
    pub retransmit_unicast_linger_ns: u64,
    /// `aeron.publication.linger.timeout`, ns.
    pub publication_linger_timeout_ns: u64,
    /// `aeron.term.buffer.sparse.file`.
    pub term_buffer_sparse_file: bool,
    /// `aeron.file.page.size`, bytes: log files are rounded up to it.
    pub file_page_size: usize,
}

impl DriverSettings {
    fn read(ctx: &AeronDriverContext) -> DriverSettings {
        use aeron_threading_mode_enum as M;
        let threading_mode = match ctx.get_threading_mode() {
            M::AERON_THREADING_MODE_DEDICATED => "DEDICATED",
            M::AERON_THREADING_MODE_SHARED_NETWORK => "SHARED_NETWORK",
            M::AERON_THREADING_MODE_SHARED => "SHARED",
            M::AERON_THREADING_MODE_INVOKER => "INVOKER",
        };
        DriverSettings {
            threading_mode: threading_mode.to_owned(),
            shared_idle_strategy: ctx.get_shared_idle_strategy().to_owned(),
            conductor_idle_strategy: ctx.get_conductor_idle_strategy().to_owned(),
            sender_idle_strategy: ctx.get_sender_idle_strategy().to_owned(),
            receiver_idle_strategy: ctx.get_receiver_idle_strategy().to_owned(),
            term_buffer_length: ctx.get_term_buffer_length(),
            ipc_term_buffer_length: ctx.get_ipc_term_buffer_length(),
            mtu_length: ctx.get_mtu_length(),
            socket_so_rcvbuf: ctx.get_socket_so_rcvbuf(),
            socket_so_sndbuf: ctx.get_socket_so_sndbuf(),
            rcv_initial_window_length: ctx.get_rcv_initial_window_length(),
            nak_multicast_max_backoff_ns: ctx.get_nak_multicast_max_backoff_ns(),
            nak_multicast_group_size: ctx.get_nak_multicast_group_size(),
            nak_unicast_delay_ns: ctx.get_nak_unicast_delay_ns(),
            nak_unicast_retry_delay_ratio: ctx.get_nak_unicast_retry_delay_ratio(),
            retransmit_unicast_linger_ns: ctx.get_retransmit_unicast_linger_ns(),
            publication_linger_timeout_ns: ctx.get_publication_linger_timeout_ns(),
            term_buffer_sparse_file: ctx.get_term_buffer_sparse_file(),
            file_page_size: ctx.get_file_page_size(),
        }
    }

    /// Every setting as (Aeron property name, value), values in Aeron's syntax (`10ms`,
    /// `131072`): for a report and `doctor`.
    #[must_use]
    pub fn properties(&self) -> Vec<(&'static str, String)> {
        let ns = |v: u64| {
            if v != 0 && v.is_multiple_of(1_000_000) {
                format!("{}ms", v / 1_000_000)
            } else if v != 0 && v.is_multiple_of(1_000) {
                format!("{}us", v / 1_000)
            } else {
                format!("{v}ns")
            }
        };
        vec![
            ("aeron.threading.mode", self.threading_mode.clone()),
            ("aeron.shared.idle.strategy", self.shared_idle_strategy.clone()),
            ("aeron.conductor.idle.strategy", self.conductor_idle_strategy.clone()),
            ("aeron.sender.idle.strategy", self.sender_idle_strategy.clone()),
            ("aeron.receiver.idle.strategy", self.receiver_idle_strategy.clone()),
            ("aeron.term.buffer.length", self.term_buffer_length.to_string()),
            ("aeron.ipc.term.buffer.length", self.ipc_term_buffer_length.to_string()),
            ("aeron.mtu.length", self.mtu_length.to_string()),
            ("aeron.socket.so_rcvbuf", self.socket_so_rcvbuf.to_string()),
            ("aeron.socket.so_sndbuf", self.socket_so_sndbuf.to_string()),
            (
                "aeron.rcv.initial.window.length",
                self.rcv_initial_window_length.to_string(),
            ),
            ("aeron.nak.multicast.max.backoff", ns(self.nak_multicast_max_backoff_ns)),
            (
                "aeron.nak.multicast.group.size",
                self.nak_multicast_group_size.to_string(),
            ),
            ("aeron.nak.unicast.delay", ns(self.nak_unicast_delay_ns)),
            (
                "aeron.nak.unicast.retry.delay.ratio",
                self.nak_unicast_retry_delay_ratio.to_string(),
            ),
            ("aeron.retransmit.unicast.linger", ns(self.retransmit_unicast_linger_ns)),
            (
                "aeron.publication.linger.timeout",
                ns(self.publication_linger_timeout_ns),
            ),
            (
                "aeron.term.buffer.sparse.file",
                self.term_buffer_sparse_file.to_string(),
            ),
            ("aeron.file.page.size", self.file_page_size.to_string()),
        ]
    }
}

impl fmt::Debug for EmbeddedDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedDriver")
            .field("dir", &self.dir)
            .field("ipc_term_length", &self.ipc_term_length)
            .field("running", &self.is_running())
            .finish()
    }
}

impl EmbeddedDriver {
    /// A builder with the defaults described in the module docs.
    #[must_use]
    pub fn builder() -> EmbeddedDriverBuilder {
        EmbeddedDriverBuilder::default()
    }

    /// The driver's directory: give it to clients (`Client::connect`, `--dir`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The IPC term length in use.
    #[must_use]
    pub fn ipc_term_length(&self) -> usize {
        self.ipc_term_length
    }

    /// The Linux thread id of the driver's agent thread (for per-thread counters).
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The settings it runs with (compiled defaults, then `AERON_*`, then the builder), read
    /// back from the driver's context when it started.
    #[must_use]
    pub fn settings(&self) -> &DriverSettings {
        &self.settings
    }

    /// The directories of killed runs' embedded drivers that [`EmbeddedDriverBuilder::spawn`]
    /// removed before starting this one.
    #[must_use]
    pub fn stale_dirs_removed(&self) -> &[PathBuf] {
        &self.stale_removed
    }

    /// Whether the driver thread is still running.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Stops the driver now (same as dropping it).
    pub fn stop(self) {}
}

impl Drop for EmbeddedDriver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dirs_sit_beside_aeron_s_default_and_stale_cleanup_knows_their_names() {
        let a = EmbeddedDriver::builder().private_dir().dir.unwrap();
        let b = EmbeddedDriver::builder().private_dir().dir.unwrap();
        assert_ne!(a, b, "each private dir is fresh");
        let default = crate::default_aeron_dir();
        let prefix = format!("{}-{}-", default.display(), std::process::id());
        assert!(a.to_string_lossy().starts_with(&prefix), "{} vs {prefix}", a.display());
        assert_eq!(a.parent(), default.parent());
        assert_eq!(
            private_dir_name(Path::new("/dev/shm/aeron-ann"), 42, 7),
            PathBuf::from("/dev/shm/aeron-ann-42-7")
        );
        assert_eq!(
            private_dir_name(Path::new("/dev/shm/aeron-ann/"), 42, 7),
            PathBuf::from("/dev/shm/aeron-ann-42-7"),
            "a trailing slash does not put it inside the default directory"
        );
        assert_eq!(private_prefix(Path::new("/dev/shm/aeron-ann")), "aeron-ann-");
        // Without a dir the driver goes where clients look by default.
        assert_eq!(EmbeddedDriver::builder().dir, None);
    }

    #[test]
    fn term_lengths_follow_aeron_rules() {
        assert!(check_term_length(64 << 10).is_ok());
        assert!(check_term_length(1 << 30).is_ok());
        for bad in [0, 1000, 32 << 10, (64 << 10) + 1, 2 << 30] {
            assert!(check_term_length(bad).unwrap_err().contains("power of two"));
        }
    }

    #[test]
    fn driver_starts_in_a_private_dir_and_removes_it_on_drop() {
        let d = EmbeddedDriver::builder()
            .private_dir()
            .ipc_term_length(64 << 10)
            .spawn()
            .unwrap();
        let dir = d.dir().to_owned();
        assert!(dir.join("cnc.dat").exists());
        assert!(d.is_running());
        drop(d);
        assert!(!dir.exists(), "{} should be removed", dir.display());
    }
}
