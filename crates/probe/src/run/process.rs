//! The child processes latency-probe runs: where their binaries are, starting them, and
//! waiting for them without disturbing the hot threads.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The exit code with which latency-pub, latency-sub and latency-probe refuse a setup before
/// measuring anything (the CLI's `EXIT_SETUP`); latency-probe reads it back from its children.
pub const EXIT_REFUSED: i32 = 2;

/// The directory of the running executable, where `latency-pub` and `latency-sub` live
/// (empty when it cannot be told).
#[must_use]
pub fn bin_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default()
}

/// Where `latency-pub` / `latency-sub` live: next to the running executable.
#[must_use]
pub fn sibling(name: &str) -> PathBuf {
    bin_dir().join(name)
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

/// A child binary that could not be started.
#[derive(Debug)]
pub struct SpawnError {
    /// The binary.
    pub bin: PathBuf,
    /// Why it did not start.
    pub source: std::io::Error,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not start {}: {}; build it first (cargo build --release -p latency-probe)",
            self.bin.display(),
            self.source
        )
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Spawns a child (stdin and stdout null, stderr inherited).
///
/// # Errors
/// The binary could not be started; the message says to build it.
pub fn spawn(bin: &Path, args: &[String]) -> Result<Child, SpawnError> {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| SpawnError {
            bin: bin.to_path_buf(),
            source,
        })
}

/// Waits for a child up to `limit`, killing it after that, or at once when SIGINT/SIGTERM
/// arrived and is being caught ([`crate::sys::signals`]).
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    wait_until(child, Some(Instant::now() + limit), Interrupts::EndTheWait).or_else(|| kill(child))
}

/// How long latency-sub or latency-pub, handed SIGINT, may take to write its report and exit.
pub const INTERRUPTED_CHILD_GRACE: Duration = Duration::from_secs(10);

/// How long a latency-probe child (an arm of `ab`, a rate of `sweep`), handed SIGINT, may take:
/// it gives each of its own two children [`INTERRUPTED_CHILD_GRACE`] in turn, then writes.
pub const INTERRUPTED_PROBE_GRACE: Duration = Duration::from_secs(30);

/// Waits for latency-sub or latency-pub up to `limit`. Past it, or when SIGINT or SIGTERM
/// arrived and is being caught ([`crate::sys::signals`]), hands the child SIGINT (a terminal's
/// Ctrl-C gave it one already; a `kill` of this process alone did not) and waits up to 10 s
/// more (`INTERRUPTED_CHILD_GRACE`) for it to write its report; kills it only after that.
pub fn wait_forwarding_interrupts(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    wait_handing_on(child, Some(Instant::now() + limit), INTERRUPTED_CHILD_GRACE)
}

/// A child's exit in words, for a one-line cause: "exit 1", "killed by signal: 9 (SIGKILL)",
/// or "exit unknown (it could not be waited for)".
#[must_use]
pub fn exit_words(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => s
            .code()
            .map_or_else(|| format!("killed by {s}"), |c| format!("exit {c}")),
        None => "exit unknown (it could not be waited for)".to_owned(),
    }
}

/// Waits for a child that bounds its own run (a latency-probe run by `ab` or `sweep`, a
/// latency-pub run to its end) with no limit of this process's; on a caught SIGINT or SIGTERM,
/// hands it SIGINT, as [`wait_forwarding_interrupts`] does, and waits up to `grace` for its
/// report before killing it. Its exit status (a killed child's has no code); `None` only when
/// it could not be waited for.
pub fn wait_for_run(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    wait_handing_on(child, None, grace)
}

/// Waits until `deadline` (none: until it exits). On an interrupt, or past the deadline, hands
/// SIGINT on, so that the child stops and writes what it measured, and waits up to `grace`
/// more (on an interrupt never past the deadline); kills the child when it still runs then.
fn wait_handing_on(child: &mut Child, deadline: Option<Instant>, grace: Duration) -> Option<ExitStatus> {
    if let Some(s) = wait_until(child, deadline, Interrupts::EndTheWait) {
        return Some(s);
    }
    // SAFETY: kill(2) of our own child, not yet reaped (its pid cannot have been reused); it
    // only sends a signal.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let graced = Instant::now() + grace;
    let until = match deadline {
        Some(d) if crate::sys::signals::interrupted() => d.min(graced),
        _ => graced,
    };
    wait_until(child, Some(until), Interrupts::Ignore).or_else(|| kill(child))
}

/// Whether a caught SIGINT or SIGTERM ends a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupts {
    EndTheWait,
    Ignore,
}

/// Kills a child and reaps it.
fn kill(child: &mut Child) -> Option<ExitStatus> {
    let _ = child.kill();
    child.wait().ok()
}

/// Waits for a child to exit, up to `deadline` (none: no limit) and, with
/// [`Interrupts::EndTheWait`], until a caught SIGINT or SIGTERM; `None` when it still runs then.
///
/// Wakes when the child exits (`poll` on its pidfd), else every 250 ms to look at the
/// deadline and the signal flag: on a machine whose cores are all taken by the hot threads,
/// each wake-up of this thread preempts one of them, and the jitter report would name it.
/// Without a pidfd (Linux < 5.3) it looks every 5 ms at first, backing off to 250 ms.
fn wait_until(child: &mut Child, deadline: Option<Instant>, interrupts: Interrupts) -> Option<ExitStatus> {
    let exit = crate::sys::child::ExitSignal::open(child);
    let mut pause = Duration::from_millis(5);
    let tick = Duration::from_millis(250);
    loop {
        let left = deadline.map_or(tick, |d| d.saturating_duration_since(Instant::now()));
        let stop = left.is_zero() || (interrupts == Interrupts::EndTheWait && crate::sys::signals::interrupted());
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if !stop => match &exit {
                Some(e) => e.wait(left.min(tick)),
                None => {
                    std::thread::sleep(pause.min(left));
                    pause = (pause * 2).min(tick);
                }
            },
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_gives_the_exit_status_and_kills_a_child_past_its_limit() {
        let mut quick = Command::new("sh").args(["-c", "sleep 0.05; exit 3"]).spawn().unwrap();
        let s = wait_bounded(&mut quick, Duration::from_secs(30)).unwrap();
        assert_eq!(s.code(), Some(3));
        let mut slow = Command::new("sleep").arg("30").spawn().unwrap();
        let s = wait_bounded(&mut slow, Duration::from_millis(100)).unwrap();
        assert_eq!(s.code(), None, "killed by a signal: {s:?}");
    }

    #[test]
    fn a_child_past_its_deadline_is_handed_sigint_and_killed_only_after_the_grace() {
        use std::os::unix::process::ExitStatusExt as _;
        let looping = |on_int: &str| {
            let script = format!("trap '{on_int}' INT; while :; do sleep 0.02; done");
            Command::new("sh").args(["-c", &script]).spawn().unwrap()
        };
        let soon = || Some(Instant::now() + Duration::from_millis(100));
        // One that stops in order at SIGINT (latency-pub writing its report): its own exit.
        let s = wait_handing_on(&mut looping("exit 7"), soon(), Duration::from_secs(20)).unwrap();
        assert_eq!(s.code(), Some(7));
        // One that does not: killed once the grace is over.
        let t = Instant::now();
        let s = wait_handing_on(&mut looping(""), soon(), Duration::from_millis(300)).unwrap();
        assert_eq!(s.signal(), Some(libc::SIGKILL));
        assert!(t.elapsed() >= Duration::from_millis(400), "{:?}", t.elapsed());
    }

    #[test]
    fn an_exit_reads_as_words_not_as_a_debug_struct() {
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(exit_words(Some(ExitStatus::from_raw(3 << 8))), "exit 3");
        assert_eq!(
            exit_words(Some(ExitStatus::from_raw(9))),
            "killed by signal: 9 (SIGKILL)"
        );
        assert_eq!(exit_words(None), "exit unknown (it could not be waited for)");
    }

    #[test]
    fn a_missing_binary_says_to_build_it() {
        let e = spawn(Path::new("/nonexistent/latency-sub"), &[]).unwrap_err();
        assert!(
            e.to_string().starts_with("could not start /nonexistent/latency-sub: ")
                && e.to_string()
                    .ends_with("; build it first (cargo build --release -p latency-probe)"),
            "{e}"
        );
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound);
    }
}
