//! `latency-probe`: the whole experiment in one command.
//!
//! Starts the embedded media driver (or uses `--dir`), runs `latency-sub` and `latency-pub`
//! as separate processes with their hot threads pinned to different cores, and combines
//! their JSON reports into one. The child binaries are looked up next to this executable.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// Where `latency-pub` / `latency-sub` live: next to the running executable.
#[must_use]
pub fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default()
        .join(name)
}

/// Default cores for the two hot threads: the last two this process may use
/// (subscriber, publisher), or none when fewer than two exist.
#[must_use]
pub fn default_cores() -> (Option<usize>, Option<usize>) {
    let cores = aeron_latency::messaging::available_cores();
    match cores.len() {
        0 | 1 => (None, None),
        n => (Some(cores[n - 1]), Some(cores[n - 2])),
    }
}

/// Spawns a child, with a clear message when the binary is missing.
///
/// # Errors
/// The binary could not be started.
pub fn spawn(bin: &Path, args: &[String]) -> Result<Child, String> {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            format!(
                "could not start {}: {e}; build it first (cargo build --release -p latency-probe)",
                bin.display()
            )
        })
}

/// Waits for a child up to `limit`, killing it after that.
///
/// Checks rarely (every 250 ms once it has waited a while): on a machine whose cores are all
/// taken by the hot threads, each wake-up of this thread preempts one of them, and the jitter
/// report would name it.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    let mut pause = Duration::from_millis(5);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            _ => {
                let _ = child.kill();
                return child.wait().ok();
            }
        }
    }
}
