//! The runs: the publisher and subscriber sides with their hot loops, what a receiving side
//! records per message, the live line, and what `latency-probe` runs over both.
//!
//! - [`publisher`], [`subscriber`], [`receive`], [`send`], [`live`]: latency-pub and latency-sub
//! - [`experiment`], latency-probe's experiment (the driver, `--runs` measurements); it runs
//!   [`trial`] (one measurement: the floor, both children, the combined report) through
//!   [`driver`] (embedded or `--dir`) and [`process`] (spawning and waiting for the children)
//! - [`sweep`], the experiment at each rate; [`compare`], two kept reports
//!
//! These take plain values and return typed errors; the exit codes are the CLI's.
//! Names `report`, `measure`, `sys`, `render`, the model and units; nothing below names it.

pub mod ab;
pub mod archive;
pub mod attach;
pub mod compare;
pub mod doctor;
pub mod driver;
pub mod experiment;
pub mod frames;
pub mod live;
pub mod loss;
pub mod process;
pub mod publication;
pub mod publisher;
pub mod receive;
pub mod send;
pub mod service_tap;
pub mod stages;
pub mod stop;
pub mod subscriber;
pub mod sweep;
pub mod tap;
pub mod trial;

use serde::{Deserialize, Serialize};

/// Where pong's echoes go in round-trip mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PongPath {
    /// Channel URI.
    pub channel: String,
    /// Stream id.
    pub stream: i32,
}

impl std::fmt::Display for PongPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} stream {}", self.channel, self.stream)
    }
}

/// How received messages reach the code that measures them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// Handled inside the poll loop (the fast path).
    Inline,
    /// Copied into a crossbeam channel by the messaging crate's hand-off thread
    /// ([`Client::subscribe`](aeron_latency::messaging::Client::subscribe)) and consumed by a second thread with `recv_timeout`: seed 002's
    /// shape, which parks on a futex per message.
    Channel,
}

impl std::str::FromStr for Delivery {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "inline" => Ok(Delivery::Inline),
            "channel" => Ok(Delivery::Channel),
            _ => Err(format!("'{s}' is not a delivery; use inline or channel")),
        }
    }
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Delivery::Inline => "inline",
            Delivery::Channel => "channel",
        })
    }
}

/// Why a run could not start (bad driver dir, channel, size, core…); the message says how to
/// fix it. Nothing was measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// The client both run sides use: connected to the driver at `dir`, its mapped files pre-touched
/// unless `pre_touch` is false (`--no-prefault`).
///
/// # Errors
/// The driver is missing, dead or unreadable (the message names the directory and the fix).
pub fn connect(dir: &std::path::Path, pre_touch: bool) -> Result<aeron_latency::messaging::Client, SetupError> {
    aeron_latency::messaging::Client::builder()
        .dir(dir)
        .pre_touch_mapped_memory(pre_touch)
        // A lost driver is reported by the run itself, in its words (driver_lost); the rest
        // as the library prints it.
        .error_handler(|e| {
            if !matches!(e, aeron_latency::messaging::AsyncError::Liveness(_)) {
                eprintln!("{e}");
            }
        })
        .build()
        .map_err(|e| SetupError(connect_error(&e)))
}

/// The report's words for a hot thread's pre-faulted stack
/// ([`prefault_stack`](crate::sys::thread::prefault_stack)), `side` `"pub"` or `"sub"`.
pub(crate) fn stack_prefaulted(side: &str) -> String {
    format!(
        "{side} hot thread's stack: {} KiB, touched by the thread before it measures",
        crate::sys::thread::STACK_PREFAULT / 1024
    )
}

/// How to start a media driver in `dir`, right for each of the three programs (latency-pub
/// and latency-sub have no driver of their own; [`OWN_DRIVER`] adds latency-probe's).
fn how_to_start(dir: &std::path::Path) -> String {
    #[cfg(feature = "embedded-driver")]
    return format!(
        "latency-probe driver --dir {}, aeronmd or the Java MediaDriver",
        dir.display()
    );
    #[cfg(not(feature = "embedded-driver"))]
    {
        let _ = dir;
        "aeronmd or the Java MediaDriver".to_owned()
    }
}

/// latency-probe's other way: a driver of its own.
#[cfg(feature = "embedded-driver")]
const OWN_DRIVER: &str = "; latency-probe without --dir runs its own";
#[cfg(not(feature = "embedded-driver"))]
const OWN_DRIVER: &str = "";

/// Why the probe could not connect to a media driver, with the probe's flags as the fix (the
/// library's message names the builder and `AERON_DIR`).
#[must_use]
pub fn connect_error(e: &aeron_latency::messaging::ConnectError) -> String {
    use aeron_latency::messaging::ConnectError;
    match e {
        ConnectError::NoDriver { dir } => format!(
            "no media driver at {}: {} is missing; start one there ({}) or point --dir / AERON_DIR at the \
             driver's directory{OWN_DRIVER}",
            dir.display(),
            dir.join("cnc.dat").display(),
            how_to_start(dir)
        ),
        ConnectError::NotADirectory { dir } => format!(
            "no media driver at {}: it is a file, not a directory; point --dir / AERON_DIR at the media driver's \
             directory (the one holding cnc.dat){}",
            dir.display(),
            OWN_DRIVER
        ),
        ConnectError::BadCnc { dir, detail } => format!(
            "no usable media driver at {}: {} {detail}; start a media driver there (after deleting the stale \
             directory), or point --dir / AERON_DIR at a running driver's directory",
            dir.display(),
            dir.join("cnc.dat").display()
        ),
        ConnectError::DriverDead { dir, heartbeat_age } => format!(
            "media driver at {} is not running: its last heartbeat is {:.1} s old; restart the driver (or delete \
             the stale directory), or point --dir / AERON_DIR at a running driver's directory",
            dir.display(),
            heartbeat_age.as_secs_f64()
        ),
        ConnectError::Client { dir, detail } => format!(
            "could not connect to the media driver at {}: {detail}; check that the driver is running and that \
             --dir / AERON_DIR name its directory",
            dir.display()
        ),
        ConnectError::PermissionDenied { dir, detail } => format!(
            "no access to the media driver at {}: {detail}; run as the driver's user (or a member of its group, \
             the driver started under umask 007), or point --dir / AERON_DIR at a driver of your own{}",
            dir.display(),
            OWN_DRIVER
        ),
        other => other.to_string(),
    }
}

/// Who launched the embedded driver whose launch failed: the fix names that command's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// latency-probe's own driver for a run (`--driver-dir`, `--term-length`).
    Run,
    /// `latency-probe driver --dir D`, a driver for other processes.
    DriverCommand,
}

/// The library's words for a live driver, up to its fix (which names the library's API).
const ACTIVE_DRIVER_FIX: &str = ": connect to it with Client::connect";

/// Why the embedded driver did not start, with the flags of the command that launched it as
/// the fix.
#[must_use]
pub fn launch_error(e: &aeron_latency::messaging::DriverLaunchError, by: Launcher) -> String {
    use aeron_latency::messaging::DriverLaunchError;
    let (dir_flag, term_flag) = match by {
        Launcher::Run => ("latency-probe --driver-dir", "latency-probe --term-length, "),
        Launcher::DriverCommand => ("--dir", ""),
    };
    match e {
        DriverLaunchError::NoSpace {
            dir,
            needed,
            available,
            term_length,
        } => format!(
            "not enough space for the media driver's term buffers in {}: needs about {} MiB ({} streams x 3 \
             terms of {} + 16 MiB), {} MiB free; use a smaller term length ({term_flag}\
             AERON_IPC_TERM_BUFFER_LENGTH), give the tmpfs more room (mount -o remount,size=2G /dev/shm; in \
             Docker: docker run --shm-size=2g) or put the driver where there is room ({dir_flag})",
            dir.display(),
            needed.div_ceil(1 << 20),
            driver::LOGS_PER_RUN,
            if term_length % (1 << 20) == 0 {
                format!("{} MiB", term_length >> 20)
            } else {
                format!("{} KiB", term_length.div_ceil(1 << 10))
            },
            available / (1 << 20)
        ),
        DriverLaunchError::ActiveDriver { dir, .. } => {
            let words = e.to_string();
            let what = words.split(ACTIVE_DRIVER_FIX).next().unwrap_or(&words);
            let fix = match by {
                Launcher::Run => format!(
                    "run against it with --dir {} in place of --driver-dir, or give --driver-dir another directory",
                    dir.display()
                ),
                Launcher::DriverCommand => format!(
                    "use it (--dir {} with latency-probe, latency-pub and latency-sub), or start this one in \
                     another directory (--dir)",
                    dir.display()
                ),
            };
            format!("{what}; {fix}")
        }
        other => other.to_string(),
    }
}

/// Whether a side's messages pass through the media driver's sender and receiver: its
/// `channel` or, in a round trip, its `pong` path is UDP (`aeron:ipc` goes from log to log).
#[must_use]
pub fn driver_on_path(channel: &str, pong: Option<&PongPath>) -> bool {
    std::iter::once(channel)
        .chain(pong.map(|p| p.channel.as_str()))
        .any(|c| c.trim_start().starts_with("aeron:udp"))
}

/// Why a run side lost its media driver, in the probe's words (the library's message tells a
/// service to build a new client; a run is started again). Empty while the driver answers.
#[must_use]
pub fn driver_lost(live: &aeron_latency::messaging::DriverLiveness) -> String {
    use aeron_latency::messaging::LivenessError;
    match live.error() {
        None => String::new(),
        Some(LivenessError::DriverClosed { dir }) => format!(
            "media driver at {} closed (it shut down in order during the run); start it again ({}) and start \
             the run again{OWN_DRIVER}",
            dir.display(),
            how_to_start(&dir)
        ),
        Some(LivenessError::DriverTimedOut { dir, timeout }) => format!(
            "media driver at {} stopped responding (no heartbeat for over {:.1} s, the driver timeout \
             AERON_DRIVER_TIMEOUT); check that it is running (it may have been killed) and start the run again",
            dir.display(),
            timeout.as_secs_f64()
        ),
        Some(LivenessError::ClientTimedOut { dir }) => format!(
            "media driver at {} timed this process out (it was silent for longer than the driver's client \
             liveness timeout: was it stopped or starved of CPU?); start the run again",
            dir.display()
        ),
        Some(other) => format!("{other}; start the run again"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aeron_latency::messaging::{ConnectError, DriverLaunchError, DriverProcessState};
    use std::path::PathBuf;

    #[test]
    fn a_live_driver_s_fix_names_the_launching_command_s_flags_not_the_library_s_api() {
        let e = DriverLaunchError::ActiveDriver {
            dir: PathBuf::from("/dev/shm/d"),
            pid: Some(7),
            heartbeat_age: std::time::Duration::from_millis(3),
            process: DriverProcessState::Running,
        };
        assert!(
            e.to_string().contains(ACTIVE_DRIVER_FIX),
            "the library's words changed: {e}"
        );
        let run = launch_error(&e, Launcher::Run);
        let command = launch_error(&e, Launcher::DriverCommand);
        for m in [&run, &command] {
            assert!(m.starts_with("a media driver (pid 7) is running at /dev/shm/d"), "{m}");
            assert!(
                !m.contains("Client::connect") && !m.contains("EmbeddedDriverBuilder"),
                "{m}"
            );
        }
        assert!(run.ends_with("or give --driver-dir another directory"), "{run}");
        assert!(
            command.contains("use it (--dir /dev/shm/d with latency-probe"),
            "{command}"
        );
    }

    #[test]
    fn no_driver_says_how_to_start_one_with_what_each_program_has() {
        let m = connect_error(&ConnectError::NoDriver {
            dir: PathBuf::from("/x"),
        });
        #[cfg(feature = "embedded-driver")]
        assert!(
            m.contains("start one there (latency-probe driver --dir /x, aeronmd"),
            "{m}"
        );
        #[cfg(not(feature = "embedded-driver"))]
        assert!(m.contains("start one there (aeronmd or the Java MediaDriver)"), "{m}");
        assert!(
            !m.contains("drop --dir"),
            "latency-pub and latency-sub have no driver of their own: {m}"
        );
    }
}
