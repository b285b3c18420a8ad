//! Command-line flags shared by `latency-pub`, `latency-sub` and `latency-probe`, and the
//! one-line error convention: `<program>: <cause and fix>` on stderr, non-zero exit.
//!
//! Bad input is refused before anything starts (no driver, no child process, no measurement):
//! clap's own errors are folded into one line by [`parse_args`], and each program then runs
//! the checks below on every flag, each naming the flag and the fix, exit [`EXIT_SETUP`].

use crate::run::publisher::PubConfig;
use crate::run::subscriber::SubConfig;
use crate::run::PongPath;
use aeron_latency::messaging::IdleStrategy;
use clap::error::ErrorKind;
use clap::{Args, Parser};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    pub fn validate(&self) -> Result<(), String> {
        check_channel("--channel", &self.channel)
    }

    /// Checks that `--dir` (else `AERON_DIR`, else Aeron's default) holds a live media driver,
    /// without connecting to it.
    ///
    /// # Errors
    /// One line naming the directory and what to do (start a driver, pick the right directory).
    pub fn check_driver(&self) -> Result<(), String> {
        let dir = dir_or_default(self.dir.clone());
        aeron_latency::messaging::Client::builder()
            .dir(&dir)
            .check()
            .map_err(|e| e.to_string())
    }
}

/// Checks a channel URI flag with Aeron's syntax rules.
///
/// # Errors
/// `<flag>: invalid channel ...; use an Aeron URI such as ...`.
pub fn check_channel(flag: &str, channel: &str) -> Result<(), String> {
    aeron_latency::messaging::validate_channel(channel).map_err(|e| format!("{flag}: {e}"))
}

/// Parses the command line; a clap error (unknown flag, a value that does not parse, a value
/// outside a list) becomes one line, `<program>: <cause>; see <program> --help`, exit
/// [`EXIT_SETUP`]. `--help` and `--version` print as usual.
pub fn parse_args<T: Parser>(program: &str) -> T {
    match T::try_parse() {
        Ok(args) => args,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => fail(program, one_line(&e.render().to_string(), program), EXIT_SETUP),
        },
    }
}

/// clap's multi-line error as one line: the error itself, then any tips, then where to look.
fn one_line(rendered: &str, program: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad command line");
    let mut out = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    for tip in lines.filter_map(|l| l.strip_prefix("tip: ")) {
        out.push_str(&format!(" ({tip})"));
    }
    out.push_str(&format!("; see {program} --help"));
    out
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
    /// Checks that `--out` is, or can become, a directory.
    ///
    /// # Errors
    /// One line naming the flag and the fix.
    pub fn validate(&self) -> Result<(), String> {
        let Some(dir) = &self.out else { return Ok(()) };
        if dir.exists() && !dir.is_dir() {
            return Err(format!(
                "--out {} is a file; give a directory (it is created if missing)",
                dir.display()
            ));
        }
        Ok(())
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
    /// Checks that `--json` can be written where it points: not a directory, in a directory that
    /// exists (checked before the run rather than discovered after it).
    ///
    /// # Errors
    /// One line naming the flag and the fix.
    pub fn validate(&self) -> Result<(), String> {
        let Some(path) = &self.json else { return Ok(()) };
        if path.is_dir() {
            return Err(format!(
                "--json {} is a directory; give a file name, e.g. {}",
                path.display(),
                path.join("report.json").display()
            ));
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(format!(
                "--json {}: the directory {} does not exist; create it (mkdir -p {}) or write elsewhere",
                path.display(),
                parent.display(),
                parent.display()
            ));
        }
        Ok(())
    }

    /// Prints `text` unless `--quiet`, then writes `value` to `--json` (atomically); a write
    /// failure ends the program with [`EXIT_INCOMPLETE`] and a one-line cause.
    pub fn emit<T: serde::Serialize + ?Sized>(&self, program: &str, text: &str, value: &T) {
        if !self.quiet {
            print!("{text}");
        }
        if let Some(path) = &self.json {
            if let Err(e) = crate::render::files::write_json(value, path) {
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
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub duration: f64,
    /// Messages per second (the schedule; latency is measured from it), 1 to 100,000,000
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true)]
    pub rate: u64,
    /// Encoded message size in bytes (a multiple of 8, at least 64, at most one frame: 1376 with
    /// Aeron's default MTU)
    #[arg(long = "msg-size", default_value_t = 128, allow_negative_numbers = true)]
    pub msg_size: usize,
    /// Warm-up messages sent first at the same rate and left out of the statistics
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true)]
    pub warmup: u64,
}

/// The most messages one run plans (warm-up and measured each): the wire format's `u32` sequence.
pub const MAX_MESSAGES: u64 = u32::MAX as u64;

/// Aeron's frame header (`AERON_DATA_HEADER_LENGTH`): an MTU carries this much less payload.
pub const FRAME_HEADER_LEN: usize = 32;

/// Aeron's default MTU for IPC and UDP publications (`AERON_IPC_MTU_LENGTH_DEFAULT`,
/// `AERON_MTU_LENGTH_DEFAULT` in the C driver's `aeron_driver_context.c`).
pub const DEFAULT_MTU: usize = 1408;

/// Aeron's default term length for UDP publications (`AERON_TERM_BUFFER_LENGTH_DEFAULT`).
pub const DEFAULT_UDP_TERM_LENGTH: usize = 16 << 20;

/// The largest message the embedded driver's publications take through `try_claim` on
/// `channel`, and why: one frame's payload (the MTU less the 32-byte frame header) and at most
/// Aeron's longest message, an eighth of the term.
///
/// The MTU is the channel's `mtu=`, else what the C driver reads from the environment
/// (`AERON_IPC_MTU_LENGTH` for `aeron:ipc`, `AERON_MTU_LENGTH` for `aeron:udp`), else 1408; the
/// term is the channel's `term-length=`, else `ipc_term` for IPC (the driver's IPC term
/// length), else `AERON_TERM_BUFFER_LENGTH`, else 16 MiB.
#[must_use]
pub fn embedded_max_message(channel: &str, ipc_term: usize) -> (usize, String) {
    let ipc = !channel.starts_with("aeron:udp");
    let (mtu_env, term_env) = if ipc {
        ("AERON_IPC_MTU_LENGTH", None)
    } else {
        ("AERON_MTU_LENGTH", Some("AERON_TERM_BUFFER_LENGTH"))
    };
    let (mtu, mtu_from) = match channel_param(channel, "mtu").and_then(parse_size) {
        Some(m) => (m, "from mtu= in the channel".to_owned()),
        None => match std::env::var(mtu_env).ok().as_deref().and_then(parse_size) {
            Some(m) => (m, format!("from {mtu_env}")),
            None => (DEFAULT_MTU, "Aeron's default".to_owned()),
        },
    };
    let term = channel_param(channel, "term-length")
        .and_then(parse_size)
        .or_else(|| {
            term_env
                .and_then(|v| std::env::var(v).ok())
                .as_deref()
                .and_then(parse_size)
        })
        .unwrap_or(if ipc { ipc_term } else { DEFAULT_UDP_TERM_LENGTH });
    let frame = mtu.saturating_sub(FRAME_HEADER_LEN);
    let longest = term / 8;
    if frame <= longest {
        (
            frame,
            format!(
                "try_claim takes at most {frame} bytes: one frame, an MTU of {mtu} ({mtu_from}) less the 32-byte \
                 frame header; use --msg-size {frame} or less, or a larger MTU ({mtu_env} or mtu= in the channel, up \
                 to 65504)"
            ),
        )
    } else {
        (
            longest,
            format!(
                "Aeron's longest message for a term of {term} bytes is {longest} (an eighth of the term); use \
                 --msg-size {longest} or less, or a larger --term-length"
            ),
        )
    }
}

/// The value of `key` in a channel URI's parameters (the last one, as Aeron reads it).
fn channel_param<'a>(channel: &'a str, key: &str) -> Option<&'a str> {
    let (_, params) = channel.split_once('?')?;
    params
        .rsplit('|')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// A size as Aeron's `aeron_config_parse_size64` reads it: digits with an optional `k`, `m` or
/// `g` suffix (any case).
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, shift) = match s.as_bytes().last()?.to_ascii_lowercase() {
        b'k' => (&s[..s.len() - 1], 10),
        b'm' => (&s[..s.len() - 1], 20),
        b'g' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift)
}

impl RunArgs {
    /// Checks the values; the error is one line naming the flag and the fix.
    ///
    /// # Errors
    /// A message for the first bad flag.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.duration.is_finite() && self.duration > 0.0) {
            return Err(format!(
                "--duration {} must be a positive number of seconds, e.g. --duration 10",
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
        if planned > MAX_MESSAGES as f64 {
            return Err(format!(
                "--duration {} x --rate {} plans more than 4,294,967,295 messages; shorten the run",
                self.duration, self.rate
            ));
        }
        if self.warmup > MAX_MESSAGES {
            return Err(format!(
                "--warmup {} is more than 4,294,967,295 messages; use fewer (the default is 10000)",
                self.warmup
            ));
        }
        aeron_latency::wire::padding_for_size(self.msg_size).map_err(|e| {
            format!(
                "--msg-size {}: {e}; use a multiple of 8 from 64 up to one frame's payload (1376 bytes with \
                 Aeron's default MTU of 1408)",
                self.msg_size
            )
        })?;
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
            return Err(format!(
                "{flag} {c}: no such core (or not allowed for this process); pick one of {cores:?}"
            ));
        }
    }
    Ok(())
}

/// The longest wait or timeout a flag takes, in seconds (about 116 days).
pub const MAX_SECONDS: f64 = 1e7;

/// Seconds as a `Duration`, rejecting negatives, NaN, infinity and more than [`MAX_SECONDS`].
///
/// # Errors
/// A message naming the flag.
pub fn seconds(flag: &str, s: f64) -> Result<Duration, String> {
    if !(s.is_finite() && s >= 0.0) {
        return Err(format!("{flag} {s} is not a number of seconds: give 0 or more"));
    }
    if s > MAX_SECONDS {
        return Err(format!(
            "{flag} {s:e} is too long: give at most 10000000 seconds (about 116 days)"
        ));
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
        diagnostics: crate::model::Mode::Auto,
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
        delivery: crate::run::Delivery::Inline,
        hot_path_lock: false,
        diagnostics: crate::model::Mode::Auto,
        echo: None,
        live: false,
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
}

impl ModeArgs {
    /// The echo path when the mode is rtt.
    ///
    /// # Errors
    /// `--pong-channel` is not a well-formed Aeron URI (checked in every mode), or the echo path
    /// is the ping path itself (one line naming the flags).
    pub fn pong(&self, stream: &StreamArgs) -> Result<Option<PongPath>, String> {
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
    pub diagnostics: crate::model::Mode,
    /// Write the raw jitter material (counters, off-CPU episodes, stalls, slowest samples) as
    /// JSON to this file (latency-probe uses it to analyse both sides together)
    #[arg(long = "jitter-raw", hide = true)]
    pub jitter_raw: Option<PathBuf>,
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
}

/// Prints `program: message` on stderr and exits with `code`.
pub fn fail(program: &str, message: impl std::fmt::Display, code: i32) -> ! {
    eprintln!("{program}: {message}");
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clap_error_becomes_one_line_with_its_tips_and_where_to_look() {
        let rendered = "error: unexpected argument '--flor' found\n\n  tip: a similar argument exists: '--floor'\n\n\
                        Usage: latency-probe --floor <FLOOR>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered, "latency-probe"),
            "unexpected argument '--flor' found (a similar argument exists: '--floor'); see latency-probe --help"
        );
    }

    #[test]
    fn sizes_read_like_aerons_with_k_m_g_suffixes() {
        assert_eq!(parse_size("1408"), Some(1408));
        assert_eq!(parse_size("8k"), Some(8192));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn the_embedded_limit_is_one_frame_or_an_eighth_of_the_term_whichever_is_smaller() {
        let (max, why) = embedded_max_message("aeron:ipc?mtu=4096", 64 << 20);
        assert_eq!(max, 4096 - 32);
        assert!(
            why.contains("from mtu= in the channel") && why.contains("--msg-size 4064 or less"),
            "{why}"
        );
        let (max, why) = embedded_max_message("aeron:ipc?mtu=65504|term-length=64k", 64 << 20);
        assert_eq!(max, 8192);
        assert!(why.contains("--term-length"), "{why}");
        // The last of repeated keys counts, as in Aeron.
        assert_eq!(embedded_max_message("aeron:ipc?mtu=512|mtu=1024", 64 << 20).0, 992);
        assert_eq!(
            embedded_max_message("aeron:udp?endpoint=localhost:1|mtu=2048", 64 << 20).0,
            2016
        );
    }
}
