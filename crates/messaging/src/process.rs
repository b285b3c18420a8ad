//! Whether the process a `cnc.dat` names as its driver still runs, as this host's `/proc` says.
//!
//! Aeron's drivers judge a directory by its heartbeat alone: a driver that crashed a second ago
//! looks alive until its heartbeat is older than the driver timeout (10 s by default), and a
//! new driver refuses the directory until then. On one host we can do better: `cnc.dat`
//! records the driver's pid and start time, so a pid that is gone, a zombie, or a process that
//! started after the driver did (the pid was reused) means the driver is dead.
//!
//! Only where every process of the host is visible: the pid in `cnc.dat` is the driver's in
//! its own PID namespace. This process must be in the host's initial PID namespace, and no
//! process of a nested namespace may have that pid there; otherwise (a container, or a driver
//! in one) the state is [`DriverProcessState::Unseen`] and the heartbeat rule stands.

use std::path::Path;

use aeron_rs::cnc_file_descriptor;

/// The inode of the host's initial PID namespace (`PROC_PID_INIT_INO`), fixed by the kernel.
const INITIAL_PID_NAMESPACE: &str = "pid:[4026531836]";

/// A process started this much after the driver's recorded start counts as a different one:
/// the boot time `/proc/stat` gives is whole seconds.
const START_SLACK_MS: i64 = 1_000;

/// What this host says about the process a driver directory's `cnc.dat` names as its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverProcessState {
    /// Running, and started before the driver's recorded start: it may be the driver.
    Running,
    /// No such process: the driver is dead.
    Gone,
    /// The process has exited and not been reaped (state Z): the driver is dead.
    Zombie,
    /// A process with that id started after the driver did: the id was reused, the driver is
    /// dead.
    Reused,
    /// Cannot be told here: no initialised `cnc.dat` or no pid in it, `/proc` unreadable, or
    /// the driver may be in a PID namespace this process does not see.
    Unseen,
}

impl DriverProcessState {
    /// Whether the driver is certainly dead (gone, a zombie or a reused pid).
    #[must_use]
    pub fn is_dead(self) -> bool {
        matches!(self, Self::Gone | Self::Zombie | Self::Reused)
    }

    /// In words, for an error message: "pid 7 has exited", ...
    pub(crate) fn describe(self, pid: Option<u32>) -> String {
        let pid = pid.map_or_else(|| "its process".to_owned(), |p| format!("pid {p}"));
        match self {
            Self::Running => format!("{pid} is running"),
            Self::Gone => format!("{pid} has exited"),
            Self::Zombie => format!("{pid} has exited (a zombie)"),
            Self::Reused => format!("{pid} is now another process"),
            Self::Unseen => format!("{pid} cannot be seen from here (another PID namespace?)"),
        }
    }
}

/// The state of the driver process `dir/cnc.dat` names, read from this host's `/proc`.
#[must_use]
pub fn driver_process_state(dir: &Path) -> DriverProcessState {
    let Some(map) = crate::cnc::map_initialised_cnc(dir) else {
        return DriverProcessState::Unseen;
    };
    let pid = cnc_file_descriptor::pid(&map);
    let started_ms = cnc_file_descriptor::start_timestamp(&map);
    let initial = std::fs::read_link("/proc/self/ns/pid").is_ok_and(|l| l.as_os_str() == INITIAL_PID_NAMESPACE);
    classify(Path::new("/proc"), initial, pid, started_ms)
}

/// [`driver_process_state`] over a `/proc` at `proc` (tests give a fake one): `initial` says
/// whether this process is in the initial PID namespace.
fn classify(proc: &Path, initial: bool, pid: i64, started_ms: i64) -> DriverProcessState {
    let Ok(pid) = u32::try_from(pid) else {
        return DriverProcessState::Unseen;
    };
    if pid == 0 || !initial {
        return DriverProcessState::Unseen;
    }
    let seen = seen_here(proc, pid, started_ms);
    // A dead verdict only counts if no process of a nested namespace is that pid there (the
    // driver in a container): a scan of every process, made only on this rare path.
    if seen.is_dead() && nested_namespace_has(proc, pid) {
        return DriverProcessState::Unseen;
    }
    seen
}

/// What this namespace's `/proc` says of `pid` against the driver's start time.
fn seen_here(proc: &Path, pid: u32, started_ms: i64) -> DriverProcessState {
    let Ok(stat) = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")) else {
        return if proc.join("self").exists() {
            DriverProcessState::Gone
        } else {
            DriverProcessState::Unseen
        };
    };
    // pid (comm) state ppid ... field 22 is starttime; comm may hold spaces and parentheses.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return DriverProcessState::Unseen;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return DriverProcessState::Zombie;
    }
    let start_ticks = fields.get(19).and_then(|t| t.parse::<i64>().ok());
    match (start_ticks, boot_time_s(proc)) {
        (Some(ticks), Some(boot)) => {
            let hz = clock_ticks_per_second();
            let process_started_ms = boot * 1_000 + ticks * 1_000 / hz;
            if process_started_ms > started_ms + START_SLACK_MS {
                DriverProcessState::Reused
            } else {
                DriverProcessState::Running
            }
        }
        _ => DriverProcessState::Running,
    }
}

/// Whether a process in a PID namespace nested in this one has `pid` there (its `NSpid` line
/// names more than one id and the last is `pid`): a driver in a container we see into.
fn nested_namespace_has(proc: &Path, pid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return true;
    };
    let wanted = pid.to_string();
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .any(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .is_some_and(|ids| {
                    let ids: Vec<&str> = ids.split_whitespace().collect();
                    ids.len() > 1 && ids.last() == Some(&wanted.as_str())
                })
        })
}

/// The host's boot time, seconds since the epoch (`btime` in `/proc/stat`).
fn boot_time_s(proc: &Path) -> Option<i64> {
    std::fs::read_to_string(proc.join("stat"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

fn clock_ticks_per_second() -> i64 {
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        i64::from(hz as i32)
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/proc` with `self`, a boot time of 1,000,000 s and the given processes
    /// (pid, state, start ticks after boot, NSpid line).
    fn fake_proc(tag: &str, processes: &[(u32, &str, i64, &str)]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("messaging-proc-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("self")).unwrap();
        std::fs::write(root.join("stat"), "cpu 1 2 3\nbtime 1000000\n").unwrap();
        for &(pid, state, ticks, nspid) in processes {
            let dir = root.join(pid.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            // Fields 4 to 21 (ppid to itrealvalue), then 22: starttime.
            let stat = format!("{pid} (aeron (driver)) {state}{} {ticks} 0 0\n", " 0".repeat(18));
            std::fs::write(dir.join("stat"), stat).unwrap();
            std::fs::write(dir.join("status"), format!("Name:\taeron\nNSpid:\t{nspid}\n")).unwrap();
        }
        root
    }

    #[test]
    fn a_driver_s_pid_is_judged_by_state_and_start_time() {
        let hz = clock_ticks_per_second();
        // The driver's recorded start: 1,000,100 s; process 10 started 50 s after boot (before
        // it), 11 started 200 s after boot (after it), 12 is a zombie.
        let started_ms = 1_000_100_000;
        let proc = fake_proc(
            "states",
            &[
                (10, "S", 50 * hz, "10"),
                (11, "R", 200 * hz, "11"),
                (12, "Z", 50 * hz, "12"),
            ],
        );
        assert_eq!(classify(&proc, true, 10, started_ms), DriverProcessState::Running);
        assert_eq!(classify(&proc, true, 11, started_ms), DriverProcessState::Reused);
        assert_eq!(classify(&proc, true, 12, started_ms), DriverProcessState::Zombie);
        assert_eq!(classify(&proc, true, 13, started_ms), DriverProcessState::Gone);
        assert_eq!(classify(&proc, true, 0, started_ms), DriverProcessState::Unseen);
        // Not the initial namespace: the driver may be where we cannot see.
        assert_eq!(classify(&proc, false, 13, started_ms), DriverProcessState::Unseen);
        let _ = std::fs::remove_dir_all(proc);
    }

    #[test]
    fn a_driver_in_a_nested_namespace_with_that_pid_is_not_called_dead() {
        let hz = clock_ticks_per_second();
        // Host process 500 is pid 13 in its container.
        let proc = fake_proc("nested", &[(500, "S", 50 * hz, "500\t13")]);
        assert_eq!(classify(&proc, true, 13, 1_000_100_000), DriverProcessState::Unseen);
        assert_eq!(classify(&proc, true, 14, 1_000_100_000), DriverProcessState::Gone);
        let _ = std::fs::remove_dir_all(proc);
    }

    #[test]
    fn this_process_is_running() {
        let initial = std::fs::read_link("/proc/self/ns/pid").is_ok_and(|l| l.as_os_str() == INITIAL_PID_NAMESPACE);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let me = i64::from(std::process::id());
        let expected = if initial {
            DriverProcessState::Running
        } else {
            DriverProcessState::Unseen
        };
        assert_eq!(classify(Path::new("/proc"), initial, me, now_ms), expected);
    }
}
