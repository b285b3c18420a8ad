//! Command-line flags shared by `latency-pub`, `latency-sub` and `latency-probe`, and the
//! one-line error convention: `<program>: <cause and fix>` on stderr, non-zero exit.

use std::path::PathBuf;
use std::time::Duration;

use aeron_latency::messaging::IdleStrategy;
use clap::Args;

use crate::publisher::PubConfig;
use crate::subscriber::SubConfig;

/// Exit code for bad input or an unusable setup (nothing was measured).
pub const EXIT_SETUP: i32 = 2;
/// Exit code for a run that measured something but lost messages or stopped early.
pub const EXIT_INCOMPLETE: i32 = 1;

/// Where the media driver is and which stream to use.
#[derive(Debug, Clone, Args)]
pub struct StreamArgs {
    /// Aeron directory of a running media driver [latency-pub/-sub default: $AERON_DIR, else
    /// /dev/shm/aeron-$USER; latency-probe default: its own embedded driver]
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Channel URI
    #[arg(long, default_value = "aeron:ipc")]
    pub channel: String,
    /// Stream id
    #[arg(long, default_value_t = 1001)]
    pub stream: i32,
}

/// Where the report goes.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the report as JSON to this file
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Do not print the report (the JSON is still written)
    #[arg(long)]
    pub quiet: bool,
}

impl OutputArgs {
    /// Prints `text` unless `--quiet`, then writes `value` to `--json` (atomically); a write
    /// failure ends the program with [`EXIT_INCOMPLETE`] and a one-line cause.
    pub fn emit<T: serde::Serialize + ?Sized>(&self, program: &str, text: &str, value: &T) {
        if !self.quiet {
            print!("{text}");
        }
        if let Some(path) = &self.json {
            if let Err(e) = crate::report::write_json(value, path) {
                fail(
                    program,
                    format!("could not write --json {}: {e}", path.display()),
                    EXIT_INCOMPLETE,
                );
            }
        }
    }
}

/// How the publisher runs (shared by latency-pub and latency-probe).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Measured duration in seconds (after the warm-up)
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Messages per second (the schedule; latency is measured from it)
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// Encoded message size in bytes (a multiple of 8, at least 64)
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: usize,
    /// Warm-up messages sent first at the same rate and left out of the statistics
    #[arg(long, default_value_t = 10_000)]
    pub warmup: u64,
}

impl RunArgs {
    /// Checks the values; the error is one line naming the flag and the fix.
    ///
    /// # Errors
    /// A message for the first bad flag.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.duration.is_finite() && self.duration > 0.0) {
            return Err(format!(
                "--duration {} must be a positive number of seconds",
                self.duration
            ));
        }
        if self.rate == 0 || self.rate > 100_000_000 {
            return Err(format!(
                "--rate {} must be between 1 and 100,000,000 messages per second",
                self.rate
            ));
        }
        let planned = self.duration * self.rate as f64;
        if planned < 1.0 {
            return Err(format!(
                "--duration {} x --rate {} plans no message; lengthen the run or raise the rate",
                self.duration, self.rate
            ));
        }
        if planned > f64::from(u32::MAX) {
            return Err(format!(
                "--duration {} x --rate {} plans more than 4,294,967,295 messages; shorten the run",
                self.duration, self.rate
            ));
        }
        aeron_latency::wire::padding_for_size(self.msg_size).map_err(|e| format!("--msg-size: {e}"))?;
        Ok(())
    }
}

/// Parses an idle strategy flag, with Aeron's names.
///
/// # Errors
/// The list of valid names.
pub fn parse_idle(s: &str) -> Result<IdleStrategy, String> {
    s.parse::<IdleStrategy>().map_err(|e| e.to_string())
}

/// Checks a `--core` value against the cores this process may use.
///
/// # Errors
/// A message listing the usable cores.
pub fn check_core(flag: &str, core: Option<usize>) -> Result<(), String> {
    if let Some(c) = core {
        let cores = aeron_latency::messaging::available_cores();
        if !cores.contains(&c) {
            return Err(format!("{flag} {c}: no such core; this machine lets us use {cores:?}"));
        }
    }
    Ok(())
}

/// Seconds as a `Duration`, rejecting negatives and NaN.
///
/// # Errors
/// A message naming the flag.
pub fn seconds(flag: &str, s: f64) -> Result<Duration, String> {
    if !(s.is_finite() && s >= 0.0) {
        return Err(format!("{flag} {s} must be a non-negative number of seconds"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// The Aeron directory: the flag, else `AERON_DIR`, else Aeron's default.
#[must_use]
pub fn dir_or_default(dir: Option<PathBuf>) -> PathBuf {
    dir.unwrap_or_else(aeron_latency::messaging::default_aeron_dir)
}

/// Builds the publisher configuration.
#[must_use]
pub fn pub_config(
    stream: &StreamArgs,
    run: &RunArgs,
    dir: PathBuf,
    wait: Duration,
    core: Option<usize>,
    idle: IdleStrategy,
) -> PubConfig {
    PubConfig {
        dir,
        channel: stream.channel.clone(),
        stream: stream.stream,
        duration_s: run.duration,
        rate: run.rate,
        warmup: run.warmup,
        msg_size: run.msg_size,
        wait,
        core,
        idle,
        publisher_id: std::process::id(),
        diagnostics: crate::jitter::Mode::Auto,
        pong: None,
    }
}

/// Builds the subscriber configuration.
#[must_use]
pub fn sub_config(
    stream: &StreamArgs,
    dir: PathBuf,
    total: Option<u64>,
    timeout: Duration,
    core: Option<usize>,
    idle: IdleStrategy,
) -> SubConfig {
    SubConfig {
        dir,
        channel: stream.channel.clone(),
        stream: stream.stream,
        total,
        timeout,
        core,
        idle,
        delivery: crate::subscriber::Delivery::Inline,
        hot_path_lock: false,
        diagnostics: crate::jitter::Mode::Auto,
        echo: None,
    }
}

/// One-way or round trip (all three programs).
#[derive(Debug, Clone, Args)]
pub struct ModeArgs {
    /// one-way: publisher to subscriber on one host clock; rtt: ping (latency-pub) sends, pong
    /// (latency-sub) echoes each message on --pong-stream, ping times the round trip on its own
    /// clock (one message in flight; the honest mode across hosts)
    #[arg(long, default_value = "one-way")]
    pub mode: crate::report::RunMode,
    /// Stream id of the echoes in rtt mode [default: --stream + 1]
    #[arg(long = "pong-stream")]
    pub pong_stream: Option<i32>,
    /// Channel of the echoes in rtt mode (across hosts: an endpoint on ping's host) [default: --channel]
    #[arg(long = "pong-channel")]
    pub pong_channel: Option<String>,
}

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

impl ModeArgs {
    /// The echo path when the mode is rtt.
    ///
    /// # Errors
    /// The echo path is the ping path itself (one line naming the flags).
    pub fn pong(&self, stream: &StreamArgs) -> Result<Option<PongPath>, String> {
        if self.mode != crate::report::RunMode::Rtt {
            return Ok(None);
        }
        let p = PongPath {
            channel: self.pong_channel.clone().unwrap_or_else(|| stream.channel.clone()),
            stream: self.pong_stream.unwrap_or(stream.stream.wrapping_add(1)),
        };
        if p.channel == stream.channel && p.stream == stream.stream {
            return Err(format!(
                "--pong-stream {} is the ping stream on the same channel; pick another stream id (default: --stream + 1)",
                p.stream
            ));
        }
        Ok(Some(p))
    }
}

/// Jitter diagnostics flags (all three programs).
#[derive(Debug, Clone, Args)]
pub struct DiagnosticsArgs {
    /// Jitter diagnostics: auto (perf where permitted, else /proc), perf (or fail), proc, off
    #[arg(long, default_value = "auto")]
    pub diagnostics: crate::jitter::Mode,
    /// Write the raw jitter material (counters, off-CPU episodes, stalls, slowest samples) as
    /// JSON to this file (latency-probe uses it to analyse both sides together)
    #[arg(long = "jitter-raw", hide = true)]
    pub jitter_raw: Option<PathBuf>,
}

impl DiagnosticsArgs {
    /// Writes `raw` to `--jitter-raw`, if given; a failure is a one-line warning (the report
    /// itself is not affected).
    pub fn write_raw(&self, program: &str, raw: Option<&crate::jitter::RawJitter>) {
        if let (Some(path), Some(raw)) = (&self.jitter_raw, raw) {
            if let Err(e) = crate::report::write_json(raw, path) {
                eprintln!("{program}: could not write --jitter-raw {}: {e}", path.display());
            }
        }
    }
}

/// How the subscriber hands messages to the code that measures them, and planted jitter.
#[derive(Debug, Clone, Args)]
pub struct DeliveryArgs {
    /// inline: measure inside the poll loop; channel: the messaging crate's hand-off thread sends
    /// each message through a crossbeam channel to a consumer thread that waits in recv_timeout
    /// (seed 002's shape: futex-driven jitter to see and compare)
    #[arg(long, default_value = "inline")]
    pub delivery: crate::subscriber::Delivery,
    /// Make the subscriber's hot loop lock a std::sync::Mutex per message that a helper thread
    /// (lock-helper) takes every 1 ms and holds across a 100 µs sleep: planted futex jitter
    #[arg(long = "hot-path-lock")]
    pub hot_path_lock: bool,
}

/// Prints `program: message` on stderr and exits with `code`.
pub fn fail(program: &str, message: impl std::fmt::Display, code: i32) -> ! {
    eprintln!("{program}: {message}");
    std::process::exit(code)
}
