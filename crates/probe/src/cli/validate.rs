//! Checks on single flag values, and the limits they enforce. Each error is a [`UsageError`]
//! naming the flag and the fix.

use super::UsageError;
use crate::run::PongPath;
use aeron_latency::messaging::IdleStrategy;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Checks a channel URI flag with Aeron's syntax rules.
///
/// # Errors
/// `<flag>: invalid channel ...; use an Aeron URI such as ...`.
pub fn check_channel(flag: &str, channel: &str) -> Result<(), UsageError> {
    aeron_latency::messaging::validate_channel(channel).map_err(|e| UsageError::new(format!("{flag}: {e}")))
}

/// Parses an idle strategy flag, with Aeron's names.
///
/// # Errors
/// The list of valid names.
pub fn parse_idle(s: &str) -> Result<IdleStrategy, UsageError> {
    s.parse::<IdleStrategy>().map_err(|e| UsageError::new(e.to_string()))
}

/// Parses a rate in messages per second, with `k` and `M` suffixes (`10k`, `1M`).
///
/// # Errors
/// Not a number, or outside 1 to 100,000,000.
pub fn parse_rate(s: &str) -> Result<u64, UsageError> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000.0),
        Some('m') => (&t[..t.len() - 1], 1_000_000.0),
        _ => (t.as_str(), 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        UsageError::new(format!(
            "{s:?} is not a rate: use messages per second, e.g. 10000, 10k or 1M"
        ))
    })?;
    let r = (v * mult).round();
    if !(1.0..=100_000_000.0).contains(&r) {
        return Err(UsageError::new(format!(
            "{s}: a rate is 1 to 100,000,000 messages per second"
        )));
    }
    Ok(r as u64)
}

/// Checks a `--core` value against the cores this process may use.
///
/// # Errors
/// A message listing the usable cores.
pub fn check_core(flag: &str, core: Option<usize>) -> Result<(), UsageError> {
    if let Some(c) = core {
        let cores = aeron_latency::messaging::available_cores();
        if !cores.contains(&c) {
            return Err(UsageError::new(format!(
                "{flag} {c}: no such core (or not allowed for this process); pick one of {cores:?}"
            )));
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
pub fn seconds(flag: &str, s: f64) -> Result<Duration, UsageError> {
    if !(s.is_finite() && s >= 0.0) {
        return Err(UsageError::new(format!(
            "{flag} {s} is not a number of seconds: give 0 or more"
        )));
    }
    if s > MAX_SECONDS {
        return Err(UsageError::new(format!(
            "{flag} {s:e} is too long: give at most 10000000 seconds (about 116 days)"
        )));
    }
    Ok(Duration::from_secs_f64(s))
}

/// `--resolve`: the change a verdict of no change must rule out either way, a fraction.
///
/// # Errors
/// Not above 0, or 10 (1000%) and more.
pub fn resolve(r: f64) -> Result<(), UsageError> {
    if r > 0.0 && r < 10.0 {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "--resolve {r}: give the change a no change must rule out as a fraction above 0 and below 10 (0.05: 5%)"
    )))
}

/// `--confidence` (of `ab`, `compare` and `tap`): from 0.5 to 0.9999.
///
/// # Errors
/// Outside that range, with the flag's form (0.99 for 99%).
pub fn confidence(c: f64) -> Result<(), UsageError> {
    if (0.5..=0.9999).contains(&c) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "--confidence {c}: give a confidence from 0.5 to 0.9999 (0.99: 99%)"
    )))
}

/// The Aeron directory: the flag, else `AERON_DIR`, else Aeron's default.
#[must_use]
pub fn dir_or_default(dir: Option<PathBuf>) -> PathBuf {
    dir.unwrap_or_else(aeron_latency::messaging::default_aeron_dir)
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

/// The embedded driver's flags, checked before it starts: `--term-length`, `--driver-dir`, and
/// `--msg-size` against what its publications on `channel` (and the echo path) take: one frame
/// through try_claim, see [`embedded_max_message`].
///
/// # Errors
/// One line naming the flag and the fix.
#[cfg(feature = "embedded-driver")]
pub fn check_embedded(
    term_length: Option<usize>,
    driver_dir: Option<&Path>,
    channel: &str,
    pong: Option<&PongPath>,
    msg_size: usize,
) -> Result<(), UsageError> {
    if let Some(t) = term_length {
        aeron_latency::messaging::check_term_length(t)
            .map_err(|e| UsageError::new(format!("--term-length {t}: {e}")))?;
    }
    if let Some(d) = driver_dir {
        if !d.exists() {
            return Err(UsageError::new(format!(
                "--driver-dir {}: no such directory; create it (mkdir -p {}) or pick an existing one (a tmpfs such \
                 as /dev/shm keeps the driver off the disk)",
                d.display(),
                d.display()
            )));
        }
        if !d.is_dir() {
            return Err(UsageError::new(format!(
                "--driver-dir {} is a file, not a directory; pick a directory (the driver makes its own inside it)",
                d.display()
            )));
        }
    }
    let mut b = aeron_latency::messaging::EmbeddedDriver::builder();
    if let Some(t) = term_length {
        b = b.ipc_term_length(t);
    }
    let ipc_term = b.effective_ipc_term_length();
    let pong = pong.map(|p| ("--pong-channel", p.channel.as_str()));
    for (flag, channel) in std::iter::once(("--channel", channel)).chain(pong) {
        let (max, why) = embedded_max_message(channel, ipc_term);
        if msg_size > max {
            return Err(UsageError::new(format!(
                "--msg-size {msg_size} does not fit {flag} {channel}: {why}"
            )));
        }
    }
    Ok(())
}

/// Without the embedded driver there is nothing to check (latency-probe then needs `--dir`).
///
/// # Errors
/// None.
#[cfg(not(feature = "embedded-driver"))]
pub fn check_embedded(
    _term_length: Option<usize>,
    _driver_dir: Option<&Path>,
    _channel: &str,
    _pong: Option<&PongPath>,
    _msg_size: usize,
) -> Result<(), UsageError> {
    Ok(())
}

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

/// The most receivers the calculators take (far beyond any Aeron group measured).
pub const MAX_RECEIVERS: u32 = 100_000;

/// Checks `--receivers` of the tuning calculators: 1 to [`MAX_RECEIVERS`].
///
/// # Errors
/// One line naming the flag and the range.
pub fn check_receivers(n: u32) -> Result<(), UsageError> {
    if n == 0 {
        return Err(UsageError::new("--receivers 0: a stream has at least one receiver"));
    }
    if n > MAX_RECEIVERS {
        return Err(UsageError::new(format!("--receivers {n}: give 1 to {MAX_RECEIVERS}")));
    }
    Ok(())
}

/// Checks `--msg-size` of the tuning calculators: 1 byte to Aeron's largest message, 16 MiB.
///
/// # Errors
/// One line naming the flag and the range.
pub fn check_msg_size(n: u64) -> Result<(), UsageError> {
    if n == 0 || n > 16 << 20 {
        return Err(UsageError::new(format!(
            "--msg-size {n}: give 1 to 16777216 bytes (Aeron's largest message is 16 MiB)"
        )));
    }
    Ok(())
}

/// Checks that the file `flag` names can be written: not a directory, in a directory that
/// exists (checked before the run rather than discovered after it).
///
/// # Errors
/// One line naming the flag and the fix.
pub fn output_file(flag: &str, path: &Path) -> Result<(), UsageError> {
    if path.is_dir() {
        return Err(UsageError::new(format!(
            "{flag} {} is a directory; give a file name, e.g. {}",
            path.display(),
            path.join("report.json").display()
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(UsageError::new(format!(
            "{flag} {}: the directory {} does not exist; create it (mkdir -p {}) or write elsewhere",
            path.display(),
            parent.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Makes the directory `flag` names (when missing) and checks that a file can be written in
/// it: before the run, so that a run is not measured only to find its files have nowhere to go.
///
/// # Errors
/// One line naming the flag, the cause and the fix.
pub fn output_dir(flag: &str, dir: &Path) -> Result<(), UsageError> {
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError::new(format!(
            "{flag} {} is a file; give a directory (it is created if missing)",
            dir.display()
        )));
    }
    let cannot = |e: std::io::Error| {
        UsageError::new(format!(
            "{flag} {}: cannot write there ({e}); give a directory you can write (it is created if missing)",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(cannot)?;
    let check = dir.join(format!(".latency-probe-check-{}", std::process::id()));
    std::fs::write(&check, b"").map_err(cannot)?;
    // Only the check's own empty file; a directory that lets it be made lets it go.
    let _ = std::fs::remove_file(&check);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolve_is_a_fraction_above_zero() {
        assert!(resolve(0.05).is_ok() && resolve(9.0).is_ok());
        for bad in [0.0, -0.05, 10.0, f64::NAN, f64::INFINITY] {
            let e = resolve(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--resolve {bad}: give")) && e.contains("0.05: 5%"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_confidence_is_from_half_to_four_nines() {
        assert!(confidence(0.5).is_ok() && confidence(0.99).is_ok() && confidence(0.9999).is_ok());
        for bad in [0.49, 0.99995, 1.0, 1.5, f64::NAN] {
            let e = confidence(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--confidence {bad}: give")) && e.contains("0.99: 99%"),
                "{e}"
            );
        }
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

    #[test]
    fn rates_take_k_and_m_and_refuse_the_rest_in_one_line() {
        assert_eq!(parse_rate("10k"), Ok(10_000));
        assert_eq!(parse_rate("1M"), Ok(1_000_000));
        assert_eq!(parse_rate(" 250 "), Ok(250));
        assert_eq!(
            parse_rate("x").unwrap_err().to_string(),
            "\"x\" is not a rate: use messages per second, e.g. 10000, 10k or 1M"
        );
        assert_eq!(
            parse_rate("0").unwrap_err().to_string(),
            "0: a rate is 1 to 100,000,000 messages per second"
        );
    }

    #[test]
    fn an_output_dir_is_made_and_checked_before_the_run() {
        let base = std::env::temp_dir().join(format!("latency-probe-outdir-{}", std::process::id()));
        let made = base.join("a/b");
        output_dir("--out", &made).expect("a missing directory is made");
        assert!(made.is_dir());
        assert_eq!(
            std::fs::read_dir(&made).unwrap().count(),
            0,
            "the check leaves nothing behind"
        );
        let file = base.join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = output_dir("--out", &file).unwrap_err().to_string();
        assert!(
            e.starts_with("--out ") && e.contains("is a file; give a directory"),
            "{e}"
        );
        let under_a_file = file.join("x");
        let e = output_dir("--out", &under_a_file).unwrap_err().to_string();
        assert!(
            e.contains("cannot write there") && e.contains("give a directory you can write"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn seconds_name_the_flag() {
        assert_eq!(seconds("--wait", 1.5), Ok(Duration::from_millis(1500)));
        assert_eq!(
            seconds("--wait", -1.0).unwrap_err().message(),
            "--wait -1 is not a number of seconds: give 0 or more"
        );
        assert_eq!(
            seconds("--wait", 2e7).unwrap_err().message(),
            "--wait 2e7 is too long: give at most 10000000 seconds (about 116 days)"
        );
    }
}
