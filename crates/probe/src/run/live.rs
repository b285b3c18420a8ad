//! The live line: once a second on stderr while a run goes, what arrived and the current p99.
//!
//! Guarantees:
//! - The hot thread only stores: per measured message one relaxed load and three relaxed
//!   stores into memory it alone writes (a count, the highest sequence, one slot of a ring of
//!   the last [`WINDOW`] latencies). No lock, no syscall, no allocation, no read-modify-write.
//! - The printing thread is not a hot thread: it sleeps a second, copies the ring, sorts the
//!   copy and prints. "Current p99" is the p99 of the last [`WINDOW`] measured messages (from
//!   the intended send time), read without stopping the hot thread, so a slot may be one
//!   message newer than the count it was read with.
//! - Off by default when stdout is not a terminal (`--live auto`).

use crate::units::format_ns;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many of the latest latencies the p99 is taken over.
pub const WINDOW: usize = 4096;

/// `--live`: auto (when stdout is a terminal), on, off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LiveMode {
    /// On when stdout is a terminal.
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl LiveMode {
    /// Whether the line is printed.
    #[must_use]
    pub fn enabled(self) -> bool {
        match self {
            LiveMode::On => true,
            LiveMode::Off => false,
            LiveMode::Auto => std::io::IsTerminal::is_terminal(&std::io::stdout()),
        }
    }

    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            LiveMode::Auto => "auto",
            LiveMode::On => "on",
            LiveMode::Off => "off",
        }
    }
}

/// What the hot thread shares with the printer.
#[derive(Debug)]
pub struct Live {
    received: AtomicU64,
    highest: AtomicU64,
    ring: Box<[AtomicU64]>,
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}

impl Live {
    /// Empty, its ring written once (no page fault on the hot thread later).
    #[must_use]
    pub fn new() -> Live {
        let ring: Box<[AtomicU64]> = (0..WINDOW).map(|_| AtomicU64::new(0)).collect();
        // The collect becomes a zeroed allocation the kernel maps lazily (malloc + zeroing ->
        // calloc): hide that it is zero and write every slot now.
        let ring = std::hint::black_box(ring);
        for slot in ring.iter() {
            slot.store(0, Ordering::Relaxed);
        }
        Live {
            received: AtomicU64::new(0),
            highest: AtomicU64::new(0),
            ring,
        }
    }

    /// One measured message (hot thread only: single writer).
    #[inline]
    pub fn record(&self, seq: u64, latency_ns: u64) {
        let n = self.received.load(Ordering::Relaxed);
        self.ring[(n as usize) % WINDOW].store(latency_ns, Ordering::Relaxed);
        self.received.store(n + 1, Ordering::Relaxed);
        if seq > self.highest.load(Ordering::Relaxed) {
            self.highest.store(seq, Ordering::Relaxed);
        }
    }

    /// (measured messages received, highest sequence seen, p99 of the last [`WINDOW`]).
    #[must_use]
    pub fn snapshot(&self) -> (u64, u64, Option<u64>) {
        let n = self.received.load(Ordering::Relaxed);
        let k = (n as usize).min(WINDOW);
        let mut v: Vec<u64> = self.ring[..k].iter().map(|a| a.load(Ordering::Relaxed)).collect();
        let p99 = (!v.is_empty()).then(|| {
            v.sort_unstable();
            v[((v.len() * 99).div_ceil(100)).saturating_sub(1)]
        });
        (n, self.highest.load(Ordering::Relaxed), p99)
    }

    /// The line for `elapsed` into the run.
    #[must_use]
    pub fn line(&self, program: &str, elapsed: Duration) -> String {
        let (n, highest, p99) = self.snapshot();
        format!(
            "{program}: {:.0} s: received {n} measured, highest sequence {highest} (sent at least {}), p99 of the \
             last {}: {}",
            elapsed.as_secs_f64(),
            if n == 0 { 0 } else { highest + 1 },
            n.min(WINDOW as u64),
            p99.map_or_else(|| "-".to_owned(), format_ns)
        )
    }
}

/// The printing thread; stops (and prints nothing more) when dropped. It wakes once per line.
/// On a terminal each line overwrites the one before (carriage return, erase line) and the
/// last is erased when it stops, so the live line never pushes the report off the screen;
/// elsewhere (a file, a pipe) each is a line of its own.
#[derive(Debug)]
pub struct Printer {
    stop: Option<crossbeam_channel::Sender<()>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Printer {
    /// Prints `live`'s line every `every` until dropped.
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn spawn(live: Arc<Live>, program: &'static str, every: Duration) -> std::io::Result<Printer> {
        // Dropping the sender ends the wait at once.
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let handle = std::thread::Builder::new().name("live-line".into()).spawn(move || {
            let started = Instant::now();
            let mut next = started + every;
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(next.saturating_duration_since(Instant::now()))
            {
                let line = live.line(program, started.elapsed());
                let mut err = std::io::stderr().lock();
                let _ = if terminal {
                    write!(err, "\r\x1b[2K{line}").and_then(|()| err.flush())
                } else {
                    writeln!(err, "{line}")
                };
                next += every;
            }
            if terminal {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            }
        })?;
        Ok(Printer {
            stop: Some(stop),
            handle: Some(handle),
        })
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p99_is_over_the_last_window_and_the_counts_add_up() {
        let live = Live::new();
        assert_eq!(live.snapshot(), (0, 0, None));
        // 10,000 messages: the first 5,000 slow (1 ms), then fast ones 1..=5,000 ns.
        for i in 0..5_000u64 {
            live.record(i, 1_000_000);
        }
        for i in 0..5_000u64 {
            live.record(5_000 + i, i + 1);
        }
        let (n, highest, p99) = live.snapshot();
        assert_eq!((n, highest), (10_000, 9_999));
        // The window holds the last 4,096 fast ones: 905..=5,000 ns; their p99 is the
        // ceil(0.99 x 4,096) = 4,056th smallest: 905 + 4,055.
        assert_eq!(p99, Some(905 + 4_055));
        let line = live.line("latency-sub", Duration::from_secs(3));
        assert!(
            line.contains("received 10000 measured")
                && line.contains("sent at least 10000")
                && line.contains("last 4096"),
            "{line}"
        );
    }

    #[test]
    fn a_late_lower_sequence_does_not_lower_the_highest() {
        let live = Live::new();
        live.record(7, 10);
        live.record(3, 10);
        assert_eq!(live.snapshot().1, 7);
    }
}
