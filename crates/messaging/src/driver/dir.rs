//! Directory safety: never a live driver's directory, private directory names, what killed
//! runs left behind, the free space, and files no other user may write.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::DriverLaunchError;

/// Refuses `dir` while a driver in it is alive, as Aeron's drivers refuse it: a heartbeat
/// fresher than `timeout` (or than [`DEFAULT_DRIVER_TIMEOUT`](crate::DEFAULT_DRIVER_TIMEOUT)
/// when `timeout` is shorter), unless this host sees the driver's process gone (a zombie, a
/// reused pid, no such process).
///
/// Returns whether `dir` holds such a dead driver's files, which must then be deleted before the
/// start (as Aeron deletes them once the heartbeat is older than the timeout).
///
/// # Errors
/// [`DriverLaunchError::ActiveDriver`] with the running driver's pid and heartbeat.
pub(super) fn refuse_live_driver(dir: &Path, timeout: Duration) -> Result<bool, DriverLaunchError> {
    // Judged by at least Aeron's default timeout: a live driver's heartbeat may be a timer
    // interval (1 s by default) old, and a shorter timeout must not hand its directory over.
    let judged_by = timeout.max(crate::DEFAULT_DRIVER_TIMEOUT);
    let crate::DriverStatus::Alive { heartbeat_age } = crate::cnc::driver_status(dir, judged_by) else {
        return Ok(false);
    };
    let process = crate::driver_process_state(dir);
    if process.is_dead() {
        return Ok(true);
    }
    Err(DriverLaunchError::ActiveDriver {
        pid: crate::cnc::driver_pid(dir),
        dir: dir.to_owned(),
        heartbeat_age,
        process,
    })
}

/// Adds `0o002` to the process umask, once, without ever lowering or briefly changing it
/// otherwise: the current mask is read from `/proc/self/status`, and the change is made under
/// a lock (the read-and-set `umask` call is not atomic between threads).
pub(super) fn deny_world_write() {
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

/// `<default dir>-<pid>-<n>`: a private directory
/// ([`EmbeddedDriverBuilder::private_dir`](super::EmbeddedDriverBuilder::private_dir)), beside
/// the default one (a trailing `/` in `AERON_DIR` does not put it inside).
pub(super) fn private_dir_name(default: &Path, pid: u32, n: u64) -> PathBuf {
    let parent = default.parent().unwrap_or(Path::new("/dev/shm"));
    parent.join(format!("{}{pid}-{n}", private_prefix(default)))
}

/// The file-name prefix of private directories: `<default dir's name>-`.
pub(super) fn private_prefix(default: &Path) -> String {
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
pub(super) fn remove_stale_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dir_names_sit_beside_the_default_and_share_one_prefix() {
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
    }
}
