//! A media driver's `cnc.dat` (Aeron's CnC file), read without connecting: where it lives
//! (`AERON_DIR`), whether its driver is alive, its pid and its counters.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aeron_rs::cnc_file_descriptor;
use aeron_rs::concurrent::ring_buffer::{CONSUMER_HEARTBEAT_OFFSET, TRAILER_LENGTH};
use aeron_rs::utils::memory_mapped_file::MemoryMappedFile;

/// Environment variable naming the Aeron directory (Aeron's `AERON_DIR`).
pub const AERON_DIR_ENV: &str = "AERON_DIR";
/// Environment variable for the driver timeout in ms (Aeron's `AERON_DRIVER_TIMEOUT`).
pub const AERON_DRIVER_TIMEOUT_ENV: &str = "AERON_DRIVER_TIMEOUT";
/// Aeron's default driver timeout: 10 s.
pub const DEFAULT_DRIVER_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest driver timeout a client or an embedded driver takes: 1 ms (the timeout is
/// whole milliseconds; under one it would be 0, and every driver dead). Keep it above the
/// driver's timer interval (`AERON_TIMER_INTERVAL`, 1 s by default), how often a driver writes
/// its heartbeat: a live driver's heartbeat may be that old, and a shorter timeout calls it
/// dead. (An embedded driver judges a driver already in its directory by at least
/// [`DEFAULT_DRIVER_TIMEOUT`], so a short timeout never makes it take over a live one's.)
pub const MIN_DRIVER_TIMEOUT: Duration = Duration::from_millis(1);

/// The longest driver timeout a client or an embedded driver takes: a year. (aeron-rs
/// subtracts the timeout from the time since the epoch in ms: past some 56 years that
/// overflows, and a client waits for ever or calls a live driver dead.)
pub const MAX_DRIVER_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// The driver timeout a client or embedded driver uses: `given`, else `AERON_DRIVER_TIMEOUT`
/// (ms; empty counts as unset), else [`DEFAULT_DRIVER_TIMEOUT`]. An error, in words that end
/// with the fix, when the variable is not a number of ms or the timeout is under
/// [`MIN_DRIVER_TIMEOUT`] or past [`MAX_DRIVER_TIMEOUT`].
pub(crate) fn driver_timeout(given: Option<Duration>) -> Result<Duration, String> {
    timeout_from(given, std::env::var(AERON_DRIVER_TIMEOUT_ENV).ok())
}

/// [`driver_timeout`] with the variable's value (`env`) passed in.
fn timeout_from(given: Option<Duration>, env: Option<String>) -> Result<Duration, String> {
    let (t, source) = match (given, env.filter(|v| !v.trim().is_empty())) {
        (Some(t), _) => (t, "the driver timeout given"),
        (None, Some(v)) => match v.trim().parse::<u64>() {
            Ok(ms) => (Duration::from_millis(ms), AERON_DRIVER_TIMEOUT_ENV),
            Err(_) => {
                return Err(format!(
                    "{AERON_DRIVER_TIMEOUT_ENV} is `{v}`, not a whole number of milliseconds; set it to \
                     one (10000 is Aeron's default, 10 s) or unset it"
                ))
            }
        },
        (None, None) => return Ok(DEFAULT_DRIVER_TIMEOUT),
    };
    if t < MIN_DRIVER_TIMEOUT {
        Err(format!(
            "{source} is {} µs, under a millisecond: the driver timeout is whole milliseconds, and 0 would call \
             every driver dead; use more than the driver's timer interval (AERON_TIMER_INTERVAL, 1 s by \
             default; Aeron's default timeout is 10 s)",
            t.as_micros()
        ))
    } else if t > MAX_DRIVER_TIMEOUT {
        Err(format!(
            "{source} is {} s, past the longest this client takes, a year ({} s); use a year or less",
            t.as_secs(),
            MAX_DRIVER_TIMEOUT.as_secs()
        ))
    } else {
        Ok(t)
    }
}

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
    /// This process may not read the directory or `cnc.dat` (the driver runs as another user).
    NoAccess {
        /// What was refused.
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
/// Never panics and never waits, and maps nothing (it reads the header and the heartbeat, so
/// a user who may only read the file learns what it says): a `cnc.dat` whose header does not
/// describe a file of its size (garbage, truncated, another program's file) is
/// [`DriverStatus::Unreadable`]; one this process may not read is [`DriverStatus::NoAccess`];
/// one whose version is still 0 (a driver creating it right now) counts as alive unless it was
/// last written longer than `timeout` ago.
#[must_use]
pub fn driver_status(dir: &Path, timeout: Duration) -> DriverStatus {
    let cnc = dir.join("cnc.dat");
    let meta = match std::fs::metadata(&cnc) {
        Ok(m) if m.len() > 0 => m,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return DriverStatus::NoAccess {
                detail: format!("{} could not be looked at: {e}", cnc.display()),
            }
        }
        _ => return DriverStatus::Absent,
    };
    let heartbeat_at = match check_cnc_header(&cnc, meta.len()) {
        Err(Refused::NoAccess(e)) => {
            return DriverStatus::NoAccess {
                detail: format!("{} could not be read: {e}", cnc.display()),
            }
        }
        Err(Refused::Unreadable(detail)) => return DriverStatus::Unreadable { detail },
        Ok(None) => {
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
        Ok(Some(at)) => at,
    };
    // Read, not mapped (aeron-rs maps even a "read-only" file for writing): a user who may
    // read but not write the file (another user's driver) learns that the driver is alive.
    let hb_ms = match read_heartbeat(&cnc, heartbeat_at) {
        Ok(ms) => ms,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return DriverStatus::NoAccess {
                detail: format!("{} could not be read: {e}", cnc.display()),
            }
        }
        Err(e) => {
            return DriverStatus::Unreadable {
                detail: format!("could not be read: {e}"),
            }
        }
    };
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

/// Why [`check_cnc_header`] refused a `cnc.dat`.
enum Refused {
    /// This process may not read it.
    NoAccess(std::io::Error),
    /// It is not a driver's: the rest of a sentence that starts with its path.
    Unreadable(String),
}

/// Aeron's CnC metadata (`aeron_cnc_metadata_t`): version, five buffer lengths (i32 each), then
/// the client liveness timeout, start timestamp and pid (i64 each).
const CNC_HEADER_LEN: usize = 6 * 4 + 3 * 8;

/// Reads the CnC header of `cnc` (`len` bytes long) without mapping it and checks that it
/// describes a file of that size, so that mapping its buffers cannot read out of bounds (aeron-rs
/// would panic or fault on a garbage header). Returns where the driver's heartbeat (the
/// to-driver ring buffer's consumer heartbeat, ms since the epoch) is in the file, or `None`
/// while its version field is 0: a driver still creating it (the lengths are not written yet).
fn check_cnc_header(cnc: &Path, len: u64) -> Result<Option<u64>, Refused> {
    use std::io::Read;
    let meta_len = *cnc_file_descriptor::META_DATA_LENGTH as u64;
    if len < meta_len {
        return Err(Refused::Unreadable(format!(
            "is {len} bytes long, shorter than the {meta_len}-byte header of a media driver's cnc.dat"
        )));
    }
    let mut head = [0u8; CNC_HEADER_LEN];
    std::fs::File::open(cnc)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => Refused::NoAccess(e),
            _ => Refused::Unreadable(format!("could not be read: {e}")),
        })?;
    let field = |i: usize| i32::from_le_bytes([head[4 * i], head[4 * i + 1], head[4 * i + 2], head[4 * i + 3]]);
    let version = field(0);
    if version == 0 {
        return Ok(None);
    }
    let lengths = [field(1), field(2), field(3), field(4), field(5)];
    let to_driver = i64::from(lengths[0]);
    let capacity = to_driver - i64::from(TRAILER_LENGTH);
    let total = lengths.iter().map(|&l| i64::from(l)).sum::<i64>() + meta_len as i64;
    if lengths.iter().any(|&l| l < 0) || capacity <= 0 || (capacity & (capacity - 1)) != 0 || total > len as i64 {
        return Err(Refused::Unreadable(format!(
            "has a header that does not describe a media driver's cnc.dat of {len} bytes (version field {version:#x}, \
             buffer lengths {lengths:?})"
        )));
    }
    Ok(Some(meta_len + capacity as u64 + CONSUMER_HEARTBEAT_OFFSET as u64))
}

/// The driver's heartbeat, the little-endian i64 at `at` in `path`, read (not mapped). A read
/// is not one 8-byte load: it is read again until two reads agree (the driver writes it once a
/// second), so that a torn value is not taken.
fn read_heartbeat(path: &Path, at: u64) -> std::io::Result<i64> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path)?;
    let read = || {
        let mut b = [0u8; 8];
        file.read_exact_at(&mut b, at).map(|()| i64::from_le_bytes(b))
    };
    let mut last = read()?;
    for _ in 0..3 {
        let again = read()?;
        if again == last {
            break;
        }
        last = again;
    }
    Ok(last)
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
pub(crate) fn map_initialised_cnc(dir: &Path) -> Option<MemoryMappedFile> {
    let cnc = dir.join("cnc.dat");
    let len = std::fs::metadata(&cnc).map_or(0, |m| m.len());
    if len == 0 || check_cnc_header(&cnc, len).ok()?.is_none() {
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
pub(crate) fn list_counters(reader: &aeron_rs::concurrent::counters::CountersReader) -> Vec<DriverCounter> {
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

/// A media driver's counters, mapped from `dir/cnc.dat` once and read as often as wanted,
/// without a client (nothing joins the driver): what a watcher polls.
///
/// # Guarantees
/// - [`CncCounters::value`] is one volatile 8-byte load from the mapped file: no allocation,
///   no lock, no syscall. [`CncCounters::find`] walks the counter metadata (it allocates each
///   label) and is meant to be called until the counter appears, then not again.
/// - The mapping stays valid while this value lives, even after the driver exits (the values
///   then stop moving).
///
/// ```no_run
/// let counters = messaging::CncCounters::open(std::path::Path::new("/dev/shm/aeron-root")).unwrap();
/// // An archive's recording position (type 100), once the recording has started.
/// if let Some(id) = counters.find(100) {
///     println!("recorded up to {}", counters.value(id));
/// }
/// ```
pub struct CncCounters {
    // Holds the mapping `reader` points into (declared after it, so dropped after it).
    reader: aeron_rs::concurrent::counters::CountersReader,
    _map: MemoryMappedFile,
}

impl std::fmt::Debug for CncCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CncCounters").finish_non_exhaustive()
    }
}

impl CncCounters {
    /// Maps `dir/cnc.dat`; `None` when there is no readable, initialised `cnc.dat`.
    #[must_use]
    pub fn open(dir: &Path) -> Option<CncCounters> {
        let map = map_initialised_cnc(dir)?;
        let reader = aeron_rs::concurrent::counters::CountersReader::new(
            cnc_file_descriptor::create_counter_metadata_buffer(&map),
            cnc_file_descriptor::create_counter_values_buffer(&map),
        );
        Some(CncCounters { reader, _map: map })
    }

    /// The id of the first allocated counter of `type_id` (the lowest id), if there is one.
    #[must_use]
    pub fn find(&self, type_id: i32) -> Option<i32> {
        let mut found = None;
        self.reader.for_each(|id, t, _key, _label| {
            if t == type_id && found.is_none() {
                found = Some(id);
            }
        });
        found
    }

    /// Every allocated counter, with its value (as [`read_driver_counters`] gives them).
    #[must_use]
    pub fn list(&self) -> Vec<DriverCounter> {
        list_counters(&self.reader)
    }

    /// The value of counter `id` (0 for an id outside the file).
    #[must_use]
    #[inline]
    pub fn value(&self, id: i32) -> i64 {
        self.reader.counter_value(id).map_or(0, |v| v as i64)
    }
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::client::Client;
    use crate::error::ConnectError;

    #[test]
    fn a_driver_timeout_is_checked_wherever_it_comes_from() {
        let env = |v: &str| Some(v.to_owned());
        assert_eq!(timeout_from(None, None), Ok(DEFAULT_DRIVER_TIMEOUT));
        assert_eq!(timeout_from(None, env(" 2500 ")), Ok(Duration::from_millis(2500)));
        let given = Some(Duration::from_secs(3));
        assert_eq!(
            timeout_from(given, env("nonsense")),
            Ok(Duration::from_secs(3)),
            "given wins"
        );
        let e = timeout_from(None, env("10s")).unwrap_err();
        assert!(e.contains("`10s`, not a whole number of milliseconds"), "{e}");
        assert_eq!(
            timeout_from(None, env(" ")),
            Ok(DEFAULT_DRIVER_TIMEOUT),
            "empty is unset"
        );
        for short in [Duration::ZERO, Duration::from_micros(999)] {
            let e = timeout_from(Some(short), None).unwrap_err();
            assert!(
                e.contains("under a millisecond") && e.contains("AERON_TIMER_INTERVAL"),
                "{e}"
            );
        }
        assert_eq!(timeout_from(None, env("1")), Ok(MIN_DRIVER_TIMEOUT));
        for long in [Some(Duration::MAX), Some(MAX_DRIVER_TIMEOUT + Duration::from_millis(1))] {
            let e = timeout_from(long, None).unwrap_err();
            assert!(e.contains("use a year or less"), "{e}");
        }
        let e = timeout_from(None, env("3153600000000")).unwrap_err();
        assert!(e.starts_with("AERON_DRIVER_TIMEOUT is 3153600000 s"), "{e}");
        assert_eq!(timeout_from(Some(MAX_DRIVER_TIMEOUT), None), Ok(MAX_DRIVER_TIMEOUT));
    }

    #[test]
    fn a_client_refuses_a_driver_timeout_it_cannot_use() {
        let dir = std::env::temp_dir().join(format!("no-driver-timeout-{}", std::process::id()));
        let e = Client::builder()
            .dir(&dir)
            .driver_timeout(Duration::MAX)
            .build()
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(e, ConnectError::BadDriverTimeout { .. }), "{e}");
        assert!(
            e.to_string().starts_with("cannot connect: the driver timeout given is"),
            "{e}"
        );
    }

    #[cfg(feature = "embedded-driver")]
    #[test]
    fn an_embedded_driver_refuses_a_driver_timeout_or_an_idle_alias_it_cannot_use() {
        let e = crate::EmbeddedDriver::builder()
            .private_dir()
            .driver_timeout(Duration::ZERO)
            .spawn()
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(
                e,
                crate::DriverLaunchError::Config {
                    setting: "driver timeout",
                    ..
                }
            ),
            "{e}"
        );
        // An idle strategy's alias goes to the C driver as a C string.
        let e = crate::EmbeddedDriver::builder()
            .private_dir()
            .idle("back\0off")
            .spawn()
            .map(|_| ())
            .unwrap_err();
        assert!(e.to_string().contains("holds a NUL byte"), "{e}");
    }

    #[test]
    fn a_dir_without_cnc_is_reported_as_no_driver_with_the_dir_in_the_message() {
        let e = Client::connect("/nonexistent/aeron").unwrap_err();
        assert!(matches!(e, ConnectError::NoDriver { .. }), "{e:?}");
        assert!(e.to_string().contains("/nonexistent/aeron/cnc.dat"), "{e}");
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
