//! The builder and the start: [`EmbeddedDriverBuilder`]'s setters, then
//! [`spawn`](EmbeddedDriverBuilder::spawn) in named steps (refuse a live driver's directory,
//! check the term length and the space, remove stale directories, build the context, start the
//! driver's thread).

use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use rusteron_media_driver::bindings::aeron_threading_mode_enum;
use rusteron_media_driver::{AeronCError, AeronDriver, AeronDriverContext};

use super::dir::{
    deny_world_write, free_bytes, private_dir_name, private_prefix, refuse_live_driver, remove_stale_dirs,
};
use super::settings::{env_bytes, env_set, DriverSettings};
use super::{EmbeddedDriver, DEFAULT_DRIVER_IDLE};
use crate::channel::check_term_length;
use crate::conductor::ErrorHandler;
use crate::error::DriverLaunchError;

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
    expected_logs: Option<u32>,
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
            .field("expected_logs", &self.expected_logs)
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

    /// Term length for network publications (power of two, 64 KiB..512 MiB: see
    /// [`check_term_length`]).
    #[must_use]
    pub fn term_length(mut self, bytes: usize) -> Self {
        self.term_length = Some(bytes);
        self
    }

    /// Term length for IPC publications (power of two, 64 KiB..512 MiB). Small terms keep
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

    /// How many publication logs the caller will have this driver create, for the free-space
    /// check [`spawn`](Self::spawn) makes before it starts: it refuses to start
    /// ([`DriverLaunchError::NoSpace`]) unless the filesystem of the driver's directory has
    /// room for `logs` logs of three IPC terms each
    /// ([`effective_ipc_term_length`](Self::effective_ipc_term_length)), plus 16 MiB for
    /// `cnc.dat` and slack. Default 1 (one stream); a round trip's ping and pong are 2.
    ///
    /// The check is an estimate made once, before the start: it cannot reserve the space, and
    /// logs created later still fail ([`AddError::Rejected`](crate::AddError::Rejected)) if
    /// the space runs out then. Give 0 to check only for `cnc.dat` and slack.
    #[must_use]
    pub fn expected_logs(mut self, logs: u32) -> Self {
        self.expected_logs = Some(logs);
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
        let timeout = crate::cnc::driver_timeout(self.driver_timeout).map_err(|detail| DriverLaunchError::Config {
            setting: "driver timeout",
            detail,
        })?;
        let dead_driver_left = refuse_live_driver(&dir, timeout)?;
        let ipc_term = self.checked_ipc_term_length()?;
        let parent = dir.parent().unwrap_or(Path::new("/dev/shm"));
        // Directories of embedded drivers whose process was killed (SIGKILL skips our Drop)
        // hold their full, non-sparse term buffers until removed: remove them first.
        let stale_removed = if self.remove_stale {
            remove_stale_dirs(parent, &private_prefix(&crate::default_aeron_dir()))
        } else {
            Vec::new()
        };
        check_space(parent, self.expected_logs.unwrap_or(1), ipc_term)?;
        // The driver creates its directory and files with mode 0777/0666 minus the umask:
        // make sure "others" never get write access (cnc.dat and the term buffers would let
        // any local user inject messages). The umask is per process and stays set: the driver
        // keeps creating log files for as long as it runs.
        deny_world_write();
        let ctx = self.context(&dir, self.delete_on_start || dead_driver_left)?;
        let settings = DriverSettings::read(&ctx);
        check_logs(&settings)?;
        let on_error =
            crate::conductor::guarded(self.on_error.unwrap_or_else(|| Arc::new(crate::conductor::print_error)));
        let started = start(ctx, on_error.clone())?;
        Ok(EmbeddedDriver {
            ipc_term_length: settings.ipc_term_buffer_length,
            settings,
            stale_removed,
            dir,
            stop: started.stop,
            handle: Some(started.handle),
            tid: started.tid,
            on_error,
        })
    }

    /// The IPC term length the driver will use, checked against Aeron's rule and what a
    /// `messaging` client maps ([`check_term_length`]); `check_logs` checks the terms the
    /// driver's context ends up with, options and page size included.
    fn checked_ipc_term_length(&self) -> Result<usize, DriverLaunchError> {
        let ipc_term = self.effective_ipc_term_length();
        check_term_length(ipc_term).map_err(|detail| DriverLaunchError::Config {
            setting: "ipc term length",
            detail,
        })?;
        Ok(ipc_term)
    }

    /// The driver's context: its directory, then the settings, then the options by name.
    fn context(&self, dir: &Path, delete_on_start: bool) -> Result<AeronDriverContext, DriverLaunchError> {
        // SAFETY: clears this thread's Aeron error text (thread-local, no arguments), so that
        // `c_words` below reads the failing call's own text, never one an earlier launch on
        // this thread left.
        unsafe { rusteron_media_driver::bindings::aeron_err_clear() };
        let ctx = AeronDriverContext::new().map_err(rejected("context"))?;
        let dir_c = CString::new(dir.to_string_lossy().as_bytes()).map_err(|_| DriverLaunchError::Config {
            setting: "dir",
            detail: "the path contains a NUL byte".into(),
        })?;
        ctx.set_dir(&dir_c).map_err(rejected("dir"))?;
        // Never on a live driver's directory (refused before); a dead driver's directory is
        // cleaned by the driver itself (Aeron's rule), or deleted first with the opt-in.
        ctx.set_dir_delete_on_start(delete_on_start)
            .map_err(rejected("dir delete on start"))?;
        ctx.set_dir_delete_on_shutdown(true)
            .map_err(rejected("dir delete on shutdown"))?;
        self.apply_settings(&ctx)?;
        for o in &self.options {
            apply(&ctx, o).map_err(|e| DriverLaunchError::Config {
                setting: o.property(),
                detail: c_words(&e),
            })?;
        }
        Ok(ctx)
    }

    /// This builder's setters onto the context, where the environment does not say otherwise
    /// (threading mode, idle strategy) or always (the rest).
    fn apply_settings(&self, ctx: &AeronDriverContext) -> Result<(), DriverLaunchError> {
        if !env_set("AERON_THREADING_MODE") {
            ctx.set_threading_mode(aeron_threading_mode_enum::AERON_THREADING_MODE_SHARED)
                .map_err(rejected("threading mode"))?;
        }
        let idle = self
            .idle
            .clone()
            .or_else(|| (!env_set("AERON_SHARED_IDLE_STRATEGY")).then(|| DEFAULT_DRIVER_IDLE.to_owned()));
        if let Some(idle) = &idle {
            let c = CString::new(idle.as_str()).map_err(|_| DriverLaunchError::Config {
                setting: "idle strategy",
                detail: format!("{idle:?} holds a NUL byte; name one of Aeron's idle strategies"),
            })?;
            ctx.set_shared_idle_strategy(&c)
                .map_err(rejected("shared idle strategy"))?;
            ctx.set_conductor_idle_strategy(&c)
                .map_err(rejected("conductor idle strategy"))?;
            ctx.set_sender_idle_strategy(&c)
                .map_err(rejected("sender idle strategy"))?;
            ctx.set_receiver_idle_strategy(&c)
                .map_err(rejected("receiver idle strategy"))?;
            ctx.set_sharednetwork_idle_strategy(&c)
                .map_err(rejected("shared network idle strategy"))?;
        }
        if let Some(t) = self.term_length {
            ctx.set_term_buffer_length(t).map_err(rejected("term length"))?;
        }
        if let Some(t) = self.ipc_term_length {
            ctx.set_ipc_term_buffer_length(t).map_err(rejected("ipc term length"))?;
        }
        if let Some(sparse) = self.sparse {
            ctx.set_term_buffer_sparse_file(sparse)
                .map_err(rejected("term buffer sparse file"))?;
        }
        if let Some(t) = self.driver_timeout {
            ctx.set_driver_timeout_ms(t.as_millis() as u64)
                .map_err(rejected("driver timeout"))?;
            ctx.set_client_liveness_timeout_ns(t.as_nanos() as u64)
                .map_err(rejected("client liveness timeout"))?;
        }
        if let Some(t) = self.linger {
            ctx.set_publication_linger_timeout_ns(t.as_nanos() as u64)
                .map_err(rejected("publication linger timeout"))?;
        }
        Ok(())
    }
}

/// What the driver's directory holds besides its logs: `cnc.dat` (about 1 MiB by default)
/// and slack.
const SPACE_BESIDES_LOGS: u64 = 16 << 20;

/// Bytes the driver's directory needs for `logs` publication logs of three `term`-byte terms
/// each, plus [`SPACE_BESIDES_LOGS`].
fn space_needed(logs: u32, term: usize) -> u64 {
    u64::from(logs)
        .saturating_mul(3)
        .saturating_mul(term as u64)
        .saturating_add(SPACE_BESIDES_LOGS)
}

/// Refuses the start when the filesystem holding `parent` has less room than `logs` logs of
/// `ipc_term` need (nothing is refused when its free space cannot be read).
fn check_space(parent: &Path, logs: u32, ipc_term: usize) -> Result<(), DriverLaunchError> {
    let needed = space_needed(logs, ipc_term);
    match free_bytes(parent) {
        Some(available) if available < needed => Err(DriverLaunchError::NoSpace {
            dir: parent.to_owned(),
            needed,
            available,
            term_length: ipc_term as u64,
        }),
        _ => Ok(()),
    }
}

/// The error for a setting the driver's context rejected.
fn rejected(setting: &'static str) -> impl Fn(AeronCError) -> DriverLaunchError {
    move |e| DriverLaunchError::Config {
        setting,
        detail: c_words(&e),
    }
}

/// The C driver's error in one line (`error::aeron_error_line`), or the binding's words when
/// Aeron left no text.
fn c_words(e: &AeronCError) -> String {
    crate::error::aeron_error_line(e.get_last_err_message()).unwrap_or_else(|| e.to_string())
}

/// The logs of the terms the driver will use, as it sizes them (its options, environment and
/// file page size applied), and of a channel's term up to 512 MiB, are ones a `messaging`
/// client maps.
fn check_logs(settings: &DriverSettings) -> Result<(), DriverLaunchError> {
    let page = settings.file_page_size;
    // A channel may ask for any term up to 512 MiB: its log must fit with this page size too.
    crate::channel::check_mapped_log(crate::channel::MAX_MAPPED_TERM_LENGTH, page).map_err(|detail| {
        DriverLaunchError::Config {
            setting: "file page size",
            detail,
        }
    })?;
    for (setting, term) in [
        ("term length", settings.term_buffer_length),
        ("ipc term length", settings.ipc_term_buffer_length),
    ] {
        crate::channel::check_mapped_log(term, page).map_err(|detail| DriverLaunchError::Config { setting, detail })?;
    }
    Ok(())
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

/// The driver's thread, once its directory is ready.
struct Started {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
    tid: i32,
}

/// Starts the driver on a thread of its own and waits until it is ready (or failed).
fn start(ctx: AeronDriverContext, on_error: ErrorHandler) -> Result<Started, DriverLaunchError> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<i32, String>>(1);
    let stop2 = stop.clone();
    let handle = std::thread::Builder::new()
        .name("aeron-driver".into())
        .spawn(move || run(ctx, &ready_tx, &stop2, &on_error))
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
    Ok(Started { stop, handle, tid })
}

/// The driver's thread: start the driver, say so (its thread id, or why it failed), then run
/// its work loop until `stop`, or until the loop fails (reported to `on_error`).
fn run(
    ctx: AeronDriverContext,
    ready: &mpsc::SyncSender<Result<i32, String>>,
    stop: &AtomicBool,
    on_error: &ErrorHandler,
) {
    let driver = match AeronDriver::new(&ctx).and_then(|d| d.start(true).map(|_| d)) {
        Ok(d) => d,
        Err(e) => {
            let _ = ready.send(Err(c_words(&e)));
            return;
        }
    };
    let _ = ready.send(Ok(crate::thread::current_tid()));
    while !stop.load(Ordering::Acquire) {
        match driver.main_do_work() {
            Ok(work) => driver.main_idle_strategy(work),
            Err(e) => {
                let message = c_words(&e);
                on_error(&crate::AsyncError::Driver {
                    message: format!("the embedded driver's work loop failed, the driver stopped: {message}"),
                    observations: 1,
                });
                break;
            }
        }
    }
    drop(driver);
    drop(ctx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dirs_sit_beside_aeron_s_default() {
        let a = EmbeddedDriver::builder().private_dir().dir.unwrap();
        let b = EmbeddedDriver::builder().private_dir().dir.unwrap();
        assert_ne!(a, b, "each private dir is fresh");
        let default = crate::default_aeron_dir();
        let prefix = format!("{}-{}-", default.display(), std::process::id());
        assert!(a.to_string_lossy().starts_with(&prefix), "{} vs {prefix}", a.display());
        assert_eq!(a.parent(), default.parent());
        // Without a dir the driver goes where clients look by default.
        assert_eq!(EmbeddedDriver::builder().dir, None);
    }

    /// Terms whose logs a client could not map are refused before anything starts.
    #[test]
    fn terms_a_client_cannot_map_are_refused_before_the_start() {
        let opt = |name, value| crate::DriverOption::parse(name, value).unwrap();
        for (b, setting) in [
            (EmbeddedDriver::builder().term_length(1 << 30), "term length"),
            (EmbeddedDriver::builder().ipc_term_length(1 << 30), "ipc term length"),
            // By name (the probe's --driver-opt), and a page size that rounds a 512 MiB term's log
            // up to 2 GiB.
            (
                EmbeddedDriver::builder().option(opt("aeron.term.buffer.length", "1g")),
                "term length",
            ),
            (
                EmbeddedDriver::builder()
                    .ipc_term_length(64 << 10)
                    .option(opt("aeron.file.page.size", "512m")),
                "file page size",
            ),
        ] {
            // The space check before asks for 16 MiB only.
            let b = b.private_dir().expected_logs(0);
            let dir = b.dir.clone().unwrap();
            match b.spawn() {
                Err(DriverLaunchError::Config { setting: s, detail }) => {
                    assert_eq!(s, setting);
                    assert!(detail.contains("cannot map"), "{detail}");
                }
                other => panic!("{setting} of 1 GiB: {:?}", other.map(|_| ())),
            }
            assert!(!dir.exists(), "nothing was created");
        }
    }

    #[test]
    fn space_needed_is_three_terms_per_expected_log_plus_16_mib() {
        let mib = 1 << 20;
        assert_eq!(space_needed(1, 64 << 10), 3 * (64 << 10) + 16 * mib);
        // The probe's round trip: two streams of 64 MiB terms.
        assert_eq!(space_needed(2, 64 << 20), 2 * 3 * 64 * mib + 16 * mib);
        assert_eq!(space_needed(0, 1 << 30), 16 * mib);
        assert_eq!(
            space_needed(u32::MAX, 1 << 30),
            u64::from(u32::MAX) * 3 * (1 << 30) + 16 * mib
        );
        assert_eq!(EmbeddedDriver::builder().expected_logs, None, "one log unless asked");
    }
}
