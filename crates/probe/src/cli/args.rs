//! The flag groups the three programs share, with the checks that span a group's flags, and
//! the run configurations built from them.

use super::validate::{check_channel, MAX_MESSAGES};
use super::{Failure, UsageError};
use crate::run::publisher::PubConfig;
use crate::run::subscriber::SubConfig;
use crate::run::PongPath;
use aeron_latency::messaging::IdleStrategy;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

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
    #[arg(long, default_value_t = 1001, allow_negative_numbers = true)]
    pub stream: i32,
}

impl StreamArgs {
    /// Checks `--channel` (Aeron's URI syntax, see [`validate_channel`]).
    ///
    /// # Errors
    /// One line naming the flag, the reason and a valid example.
    ///
    /// [`validate_channel`]: aeron_latency::messaging::validate_channel
    pub fn validate(&self) -> Result<(), UsageError> {
        check_channel("--channel", &self.channel)
    }

    /// Checks that `--dir` (else `AERON_DIR`, else Aeron's default) holds a live media driver,
    /// without connecting to it.
    ///
    /// # Errors
    /// One line naming the directory and what to do (start a driver, pick the right directory).
    pub fn check_driver(&self) -> Result<(), UsageError> {
        let dir = super::dir_or_default(self.dir.clone());
        aeron_latency::messaging::Client::builder()
            .dir(&dir)
            .check()
            .map_err(|e| UsageError::new(crate::run::connect_error(&e)))
    }
}

/// `--out DIR`: the report and its files (latency-sub, latency-probe).
#[derive(Debug, Clone, Args)]
pub struct OutDirArgs {
    /// Write the report and its files into this directory (created if missing): report.json,
    /// latency.hgrm and latency-actual.hgrm (percentile distributions, µs), latency.hlog (an
    /// HdrHistogram interval log, one interval per group), groups.csv, spectrum.svg, groups.svg
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl OutDirArgs {
    /// Makes `--out` (when missing) and checks that it can be written, before the run.
    ///
    /// # Errors
    /// One line naming the flag and the fix.
    pub fn validate(&self) -> Result<(), UsageError> {
        match &self.out {
            Some(dir) => super::validate::output_dir("--out", dir),
            None => Ok(()),
        }
    }

    /// Writes the report's directory, if `--out` was given, and says so on stderr; false (after
    /// a one-line cause) when it could not.
    pub fn write(&self, program: &str, report: &crate::model::Report) -> bool {
        let Some(dir) = &self.out else { return true };
        match crate::render::out_dir::write_dir(report, dir) {
            Ok(files) => {
                let names: Vec<String> = files
                    .iter()
                    .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                eprintln!("{program}: wrote {}/: {}", dir.display(), names.join(" "));
                true
            }
            Err(e) => {
                eprintln!("{program}: {e}");
                false
            }
        }
    }

    /// With several runs, writes `runs.csv` (the variation per percentile) and each run's own
    /// report (`run-1.json`, …) next to the report, if `--out` was given; false (after a
    /// one-line cause per file) when a file could not be written.
    pub fn write_runs(
        &self,
        program: &str,
        summary: Option<&crate::model::RunsSummary>,
        reports: &[crate::model::Report],
    ) -> bool {
        let (Some(dir), Some(summary)) = (&self.out, summary) else {
            return true;
        };
        let mut ok = true;
        let csv = dir.join("runs.csv");
        if let Err(e) = crate::render::files::write_atomically(&csv, |out| out.write_all(summary.csv().as_bytes())) {
            eprintln!("{program}: --out: could not write {}: {e}", csv.display());
            ok = false;
        }
        for (i, r) in reports.iter().enumerate() {
            let p = dir.join(format!("run-{}.json", i + 1));
            if let Err(e) = crate::render::files::write_json(r, &p) {
                eprintln!("{program}: --out: could not write {}: {e}", p.display());
                ok = false;
            }
        }
        ok
    }
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
    /// Print the whole report: the timing model, the environment, offer outcomes, faults, the
    /// driver's counters, every note and the whole jitter diagnosis with each finding's
    /// evidence and fix (by default the report fits a screen; JSON and --out always hold
    /// everything)
    #[arg(long, short = 'v')]
    pub detail: bool,
}

impl OutputArgs {
    /// Checks that `--json` can be written where it points: not a directory, in a directory that
    /// exists (checked before the run rather than discovered after it).
    ///
    /// # Errors
    /// One line naming the flag and the fix.
    pub fn validate(&self) -> Result<(), UsageError> {
        match &self.json {
            Some(path) => super::validate::output_file("--json", path),
            None => Ok(()),
        }
    }

    /// How much of the report the text shows (`--detail`).
    #[must_use]
    pub fn view(&self) -> crate::render::text::View {
        if self.detail {
            crate::render::text::View::Detail
        } else {
            crate::render::text::View::Summary
        }
    }

    /// Prints `text` unless `--quiet`, then writes `value` to `--json` (atomically).
    ///
    /// # Errors
    /// The JSON could not be written: [`EXIT_INCOMPLETE`](super::EXIT_INCOMPLETE) with a
    /// one-line cause.
    pub fn emit<T: serde::Serialize + ?Sized>(&self, text: &str, value: &T) -> Result<(), Failure> {
        if !self.quiet {
            print!("{text}");
        }
        if let Some(path) = &self.json {
            if let Err(e) = crate::render::files::write_json(value, path) {
                return Err(Failure::incomplete(format!(
                    "could not write --json {}: {e}",
                    path.display()
                )));
            }
        }
        Ok(())
    }
}

/// How the publisher runs (shared by latency-pub and latency-probe).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Measured duration in seconds (after the warm-up)
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub duration: f64,
    /// Messages per second (the schedule; latency is measured from it), 1 to 100,000,000
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true)]
    pub rate: u64,
    /// Encoded message size in bytes (a multiple of 8, at least 32, at most one frame: 1376 with
    /// Aeron's default MTU). Below 64, samples are compact (seq and intended time, the send
    /// time in the frame's reserved value), except the run's first message and its end marker
    /// (64 bytes each)
    #[arg(long = "msg-size", default_value_t = 128, allow_negative_numbers = true)]
    pub msg_size: usize,
    /// Warm-up messages sent first at the same rate and left out of the statistics
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true)]
    pub warmup: u64,
}

impl RunArgs {
    /// Checks the values; the error is one line naming the flag and the fix.
    ///
    /// # Errors
    /// A message for the first bad flag.
    pub fn validate(&self) -> Result<(), UsageError> {
        if !(self.duration.is_finite() && self.duration > 0.0) {
            return Err(UsageError::new(format!(
                "--duration {} must be a positive number of seconds, e.g. --duration 10",
                self.duration
            )));
        }
        if self.rate == 0 || self.rate > 100_000_000 {
            return Err(UsageError::new(format!(
                "--rate {} must be between 1 and 100,000,000 messages per second",
                self.rate
            )));
        }
        let planned = self.duration * self.rate as f64;
        if planned < 1.0 {
            return Err(UsageError::new(format!(
                "--duration {} x --rate {} plans no message; lengthen the run or raise the rate",
                self.duration, self.rate
            )));
        }
        if planned > MAX_MESSAGES as f64 {
            return Err(UsageError::new(format!(
                "--duration {} x --rate {} plans more than 4,294,967,295 messages; shorten the run",
                self.duration, self.rate
            )));
        }
        if self.warmup > MAX_MESSAGES {
            return Err(UsageError::new(format!(
                "--warmup {} is more than 4,294,967,295 messages; use fewer (the default is 10000)",
                self.warmup
            )));
        }
        let size = if self.msg_size < aeron_latency::wire::MIN_ENCODED_LEN {
            aeron_latency::wire::compact_padding_for_size(self.msg_size).map(|_| ())
        } else {
            aeron_latency::wire::padding_for_size(self.msg_size).map(|_| ())
        };
        size.map_err(|e| {
            UsageError::new(format!(
                "--msg-size {}: {e}; use a multiple of 8 from 32 up to one frame's payload (1376 bytes with \
                 Aeron's default MTU of 1408)",
                self.msg_size
            ))
        })?;
        Ok(())
    }

    /// Messages sent: the warm-up and the measured ones.
    #[must_use]
    pub fn total_messages(&self) -> u64 {
        self.warmup + (self.duration * self.rate as f64).round() as u64
    }

    /// Seconds from the first warm-up message to the last measured one, on schedule.
    #[must_use]
    pub fn seconds(&self) -> f64 {
        (self.warmup as f64 + self.duration * self.rate as f64) / self.rate as f64
    }
}

/// `--term-length`: the embedded driver's IPC term, in bytes or fitted to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermLength {
    /// This many bytes (checked against Aeron's rule later).
    Bytes(usize),
    /// The smallest that holds the run twice over ([`TermLength::fit`]).
    Fit,
}

impl TermLength {
    /// `fit`, or bytes with binary suffixes (`1m`).
    ///
    /// # Errors
    /// Neither `fit` nor a size.
    pub fn parse(s: &str) -> Result<Self, UsageError> {
        if s.trim().eq_ignore_ascii_case("fit") {
            return Ok(TermLength::Fit);
        }
        let b = super::parse::parse_bytes(s)
            .map_err(|e| UsageError::new(format!("{}, or fit (sized to the run)", e.message())))?;
        usize::try_from(b)
            .map(TermLength::Bytes)
            .map_err(|_| UsageError::new(format!("{s}: too large for this machine")))
    }

    /// The bytes for `run`.
    #[must_use]
    pub fn bytes(self, run: &RunArgs) -> usize {
        match self {
            TermLength::Bytes(b) => b,
            TermLength::Fit => Self::fit(run),
        }
    }

    /// The smallest power of two from 64 KiB that holds twice the run's frames (every message
    /// and 64 more, each a frame of the message and Aeron's 32-byte header, aligned to 32), at
    /// most Aeron's default of 64 MiB. A run on a new publication then never leaves its first
    /// term and never meets the publication window (half a term), as with the default term,
    /// while the driver allocates, and each client faults in and frees, far less (what that
    /// saves a short run: docs/results/2026-11-26-ab-term-fit.md).
    #[must_use]
    pub fn fit(run: &RunArgs) -> usize {
        const MIN: u64 = 64 << 10;
        let frame = (run.msg_size as u64 + 32).next_multiple_of(32);
        let bytes = (run.total_messages() + 64).saturating_mul(frame).saturating_mul(2);
        let term = bytes.checked_next_power_of_two().unwrap_or(u64::MAX);
        term.clamp(MIN, crate::run::doctor::AERON_IPC_TERM_DEFAULT) as usize
    }
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
        diagnostics: crate::model::Mode::Auto,
        pong: None,
        publication: crate::model::PublicationKind::default(),
        prefault: true,
        explain: crate::model::Explain::default(),
        keep_lags: false,
        plant_delay_ns: 0,
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
        delivery: crate::run::Delivery::Inline,
        hot_path_lock: false,
        diagnostics: crate::model::Mode::Auto,
        echo: None,
        live: false,
        publication: crate::model::PublicationKind::default(),
        plant_helper: false,
        prefault: true,
        explain: crate::model::Explain::default(),
    }
}

/// A planted slowdown of the publisher (latency-pub, latency-probe): a known truth for
/// checking that a comparison finds a change (`ab`'s calibration).
#[derive(Debug, Clone, Copy, Args)]
pub struct PlantArgs {
    /// Planted: the publisher busy-waits this many ns per message (from when the wait starts,
    /// on top of the claim and the encoding) between its actual-send stamp and the commit, so
    /// latency from both the intended and the actual send time grows by it; named as planted
    /// in the report (0: off)
    #[arg(long = "plant-delay-ns", default_value_t = 0, value_name = "NS")]
    pub plant_delay_ns: u64,
}

impl PlantArgs {
    /// At most a second: a planted delay longer than that is a typo.
    ///
    /// # Errors
    /// [`UsageError`] naming the flag.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.plant_delay_ns > 1_000_000_000 {
            return Err(UsageError::new(format!(
                "--plant-delay-ns {}: at most 1000000000 (1 s); it is a planted per-message delay",
                self.plant_delay_ns
            )));
        }
        Ok(())
    }
}

/// One-way or round trip (all three programs).
#[derive(Debug, Clone, Args)]
pub struct ModeArgs {
    /// one-way: publisher to subscriber on one host clock; rtt: ping (latency-pub) sends, pong
    /// (latency-sub) echoes each message on --pong-stream, ping times the round trip on its own
    /// clock (one message in flight; the honest mode across hosts)
    #[arg(long, default_value = "one-way")]
    pub mode: crate::model::RunMode,
    /// Stream id of the echoes in rtt mode [default: --stream + 1]
    #[arg(long = "pong-stream", allow_negative_numbers = true)]
    pub pong_stream: Option<i32>,
    /// Channel of the echoes in rtt mode (across hosts: an endpoint on ping's host) [default: --channel]
    #[arg(long = "pong-channel")]
    pub pong_channel: Option<String>,
    /// Publication the messages (and pong's echoes) are written with: exclusive (one thread's,
    /// no atomic read-modify-write per message) or concurrent (any number of writers, one
    /// atomic add on the tail per message; `shared` is its old name)
    #[arg(long, default_value = "exclusive")]
    pub publication: crate::model::PublicationKind,
    /// Do not map in the log buffers (nor touch the hot threads' stacks) before measuring: the
    /// hot threads take page faults on the pages they first touch while measuring (a cold
    /// start, or planted cold memory)
    #[arg(long = "no-prefault")]
    pub no_prefault: bool,
}

impl ModeArgs {
    /// The echo path when the mode is rtt.
    ///
    /// # Errors
    /// `--pong-channel` is not a well-formed Aeron URI (checked in every mode), or the echo path
    /// is the ping path itself (one line naming the flags).
    pub fn pong(&self, stream: &StreamArgs) -> Result<Option<PongPath>, UsageError> {
        if let Some(c) = &self.pong_channel {
            check_channel("--pong-channel", c)?;
        }
        if self.mode != crate::model::RunMode::Rtt {
            return Ok(None);
        }
        let p = PongPath {
            channel: self.pong_channel.clone().unwrap_or_else(|| stream.channel.clone()),
            stream: self.pong_stream.unwrap_or(stream.stream.wrapping_add(1)),
        };
        if p.channel == stream.channel && p.stream == stream.stream {
            return Err(UsageError::new(format!(
                "--pong-stream {} is the ping stream on the same channel; pick another stream id (default: --stream + 1)",
                p.stream
            )));
        }
        Ok(Some(p))
    }
}

/// Jitter diagnostics flags (all three programs).
#[derive(Debug, Clone, Args)]
pub struct DiagnosticsArgs {
    /// Jitter diagnostics: auto (perf where permitted, else /proc), perf (or fail), proc, off
    #[arg(long, default_value = "auto")]
    pub diagnostics: crate::model::Mode,
    /// Write the raw jitter material (counters, off-CPU episodes, stalls, slowest samples) as
    /// JSON to this file (latency-probe uses it to analyse both sides together)
    #[arg(long = "jitter-raw", hide = true)]
    pub jitter_raw: Option<PathBuf>,
    /// The percentile the verdict's headline explains: p90, p99, p99.9 or max. It names the
    /// cause of most of the excess over p50 in the band that ends there (p99: p90-p99)
    #[arg(long, default_value = "p99")]
    pub explain: crate::model::Explain,
}

impl DiagnosticsArgs {
    /// Writes `raw` to `--jitter-raw`, if given; a failure is a one-line warning (the report
    /// itself is not affected).
    pub fn write_raw(&self, program: &str, raw: Option<&crate::model::RawJitter>) {
        if let (Some(path), Some(raw)) = (&self.jitter_raw, raw) {
            if let Err(e) = crate::render::files::write_json(raw, path) {
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
    pub delivery: crate::run::Delivery,
    /// Make the subscriber's hot loop lock a std::sync::Mutex per message that a helper thread
    /// (lock-helper) takes every 1 ms and holds across a 100 µs sleep: planted futex jitter
    #[arg(long = "hot-path-lock")]
    pub hot_path_lock: bool,
    /// Start a helper thread (plant-helper) pinned to the subscriber's hot core that wakes every
    /// 2 ms and works for 200 µs: planted preemption by one of our own threads
    #[arg(long = "plant-helper")]
    pub plant_helper: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(duration: f64, rate: u64, msg_size: usize, warmup: u64) -> RunArgs {
        RunArgs {
            duration,
            rate,
            msg_size,
            warmup,
        }
    }

    #[test]
    fn a_fitted_term_holds_the_run_twice_within_aeron_s_bounds() {
        // 2,000 + 6,000 messages of 64 B: frames of 96 B, 776,448 B twice over: 2 MiB.
        assert_eq!(TermLength::Fit.bytes(&run(0.3, 20_000, 64, 2_000)), 2 << 20);
        // 128 B messages are 160 B frames: (10,000 + 10 + 64) x 160 x 2 = 3,223,680 B: 4 MiB.
        assert_eq!(TermLength::fit(&run(0.001, 10_000, 128, 10_000)), 4 << 20);
        assert_eq!(TermLength::fit(&run(0.001, 1_000, 64, 1)), 64 << 10, "at least 64 KiB");
        assert_eq!(
            TermLength::fit(&run(100.0, 1_000_000, 1024, 0)),
            64 << 20,
            "at most 64 MiB"
        );
        for r in [run(0.3, 20_000, 64, 2_000), run(2.0, 1_000_000, 256, 10_000)] {
            let t = TermLength::fit(&r);
            assert!(t.is_power_of_two());
            let frame = (r.msg_size as u64 + 32).next_multiple_of(32);
            assert!(t as u64 >= 2 * r.total_messages() * frame || t == 64 << 20);
        }
        assert_eq!(TermLength::Bytes(1 << 20).bytes(&run(0.3, 20_000, 64, 2_000)), 1 << 20);
    }

    #[test]
    fn term_lengths_read_as_fit_or_a_size() {
        assert_eq!(TermLength::parse("fit").unwrap(), TermLength::Fit);
        assert_eq!(TermLength::parse("FIT").unwrap(), TermLength::Fit);
        assert_eq!(TermLength::parse("1m").unwrap(), TermLength::Bytes(1 << 20));
        assert_eq!(TermLength::parse("65536").unwrap(), TermLength::Bytes(65_536));
        let e = TermLength::parse("big").unwrap_err();
        assert!(e.message().contains("or fit"), "{}", e.message());
    }
}
