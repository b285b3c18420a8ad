//! Channel URIs: checked as Aeron's own parsers check them, before they reach the driver.

use std::ffi::CString;

use crate::error::AddError;
#[cfg(doc)]
use crate::Client;

pub(crate) fn check_channel(channel: &str) -> Result<CString, AddError> {
    validate_channel(channel)?;
    CString::new(channel).map_err(|_| AddError::InvalidChannel {
        channel: channel.to_owned(),
        reason: "it contains a NUL byte".to_owned(),
    })
}

/// [`check_channel`] for a publication: also refuses a `term-length` whose log the client could
/// not map ([`MAX_MAPPED_TERM_LENGTH`]). Every `term-length` given counts: Aeron's C driver
/// takes the first of repeated keys, its Java client the last.
pub(crate) fn check_publication_channel(channel: &str) -> Result<CString, AddError> {
    let c = check_channel(channel)?;
    let params = channel.split_once('?').map_or("", |(_, p)| p);
    let terms = params.split('|').filter_map(|p| p.strip_prefix("term-length="));
    for len in terms.filter_map(parse_bytes) {
        check_mapped_term_length(len).map_err(|reason| AddError::InvalidChannel {
            channel: channel.to_owned(),
            reason: format!("its term-length: {reason}"),
        })?;
    }
    Ok(c)
}

/// The longest term whose log a `messaging` client maps: 512 MiB. aeron-rs 0.1.8, which maps
/// the logs of a client's publications and images, addresses a log with 32-bit offsets, and a
/// log of three 1 GiB terms (Aeron's largest) is over 2 GiB: the client crashes mapping it.
/// (Three 512 MiB terms and the 4 KiB of metadata fit, with the driver's file page size up to
/// 256 MiB: [`check_mapped_log`]; `EmbeddedDriver` refuses a larger page.)
pub(crate) const MAX_MAPPED_TERM_LENGTH: usize = 512 << 20;

/// Refuses a term length above [`MAX_MAPPED_TERM_LENGTH`], saying why and what to use.
pub(crate) fn check_mapped_term_length(len: usize) -> Result<(), String> {
    if len > MAX_MAPPED_TERM_LENGTH {
        return Err(format!(
            "term length {len} makes a log over 2 GiB, which messaging's client (aeron-rs 0.1.8) cannot map (it \
             would crash mapping it); use 512m (536870912) or less"
        ));
    }
    Ok(())
}

/// Aeron's rule for term lengths (a power of two from 64 KiB to 1 GiB), and the limit of
/// `messaging`'s clients: at most 512 MiB, since aeron-rs 0.1.8, which maps the logs of a
/// client's publications and images, crashes mapping a log of 2 GiB or more (three 1 GiB
/// terms; with 512 MiB terms, a file page size over 256 MiB, which `EmbeddedDriverBuilder::spawn`
/// checks too, with feature `embedded-driver`). Available without that feature: a tool that
/// checks a term for another driver uses it too.
///
/// # Errors
/// A sentence saying what is wrong with `len` and what to use.
pub fn check_term_length(len: usize) -> Result<(), String> {
    const MIN: usize = 64 << 10;
    const MAX: usize = 1 << 30;
    if !(MIN..=MAX).contains(&len) || !len.is_power_of_two() {
        return Err(format!(
            "term length {len} must be a power of two from 65536 (64 KiB) to 536870912 (512 MiB) \
             (Aeron allows 1 GiB, whose logs messaging's clients cannot map)"
        ));
    }
    check_mapped_term_length(len)
}

/// Refuses terms whose log, as the driver sizes it (three terms and 4 KiB of metadata, rounded
/// up to its file page size), is 2 GiB or more: what aeron-rs 0.1.8 cannot map.
#[cfg_attr(not(feature = "embedded-driver"), allow(dead_code))]
pub(crate) fn check_mapped_log(term: usize, page: usize) -> Result<(), String> {
    check_mapped_term_length(term)?;
    let log = (3 * term as u64 + 4096).next_multiple_of(page.max(1) as u64);
    if log > i32::MAX as u64 {
        return Err(format!(
            "terms of {term} with a file page size of {page} make a log of {log} bytes, 2 GiB or more, which \
             messaging's client (aeron-rs 0.1.8) cannot map (it would crash mapping it); use a smaller term or \
             page size"
        ));
    }
    Ok(())
}

/// A byte count as Aeron's C driver reads one (`aeron_parse_size64`): decimal digits after
/// optional leading whitespace and `+`, then optionally `k`, `m` or `g` in either case (what
/// follows that letter is not looked at: `1gb` is 1 GiB); `None` for anything else.
pub(crate) fn parse_bytes(v: &str) -> Option<usize> {
    let v = v.trim_start();
    let v = v.strip_prefix('+').unwrap_or(v);
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: usize = v[..digits].parse().ok()?;
    let mult = match v[digits..].chars().next() {
        None => 1,
        Some('k' | 'K') => 1 << 10,
        Some('m' | 'M') => 1 << 20,
        Some('g' | 'G') => 1 << 30,
        Some(_) => return None,
    };
    n.checked_mul(mult)
}

/// The longest channel URI Aeron takes, in bytes (`AERON_URI_MAX_LENGTH`, 4096 with the NUL).
pub const MAX_CHANNEL_LENGTH: usize = 4095;

/// Checks that `channel` is a well-formed Aeron channel URI, by the rules of Aeron's own
/// parsers (C `aeron_uri_parse` and `aeron_udp_channel_parse`, Java `ChannelUri.parse`), without
/// a media driver. [`Client::publication`] and [`Client::subscription`] call it first; programs
/// call it to reject a bad URI before they start anything.
///
/// - `aeron:ipc` or `aeron:udp`, then `?key=value|key=value…` (optional for `ipc`, required for
///   `udp`);
/// - every parameter is `key=value` with a non-empty key and value (so no bare `?`, no `||`, no
///   trailing `|`); a value may contain `=`; the last of repeated keys counts, as in Aeron;
/// - `udp` names `endpoint`, `control` or `tags`, or says `control-mode=manual` (or
///   `response`); `control-mode` is `manual`, `dynamic` (which needs `control`) or `response`;
/// - `endpoint` and `control` are `host:port` or `[ipv6]:port`, with a decimal port from 0 to
///   65535 (0: any free port);
/// - no whitespace, no NUL, at most [`MAX_CHANNEL_LENGTH`] bytes.
///
/// What only the driver can judge (whether a host resolves, a port is free, the value of other
/// parameters such as `mtu` or `term-length`) is left to it.
///
/// # Errors
/// [`AddError::InvalidChannel`], whose message gives the reason and a valid example.
///
/// ```
/// assert!(messaging::validate_channel("aeron:udp?endpoint=localhost:40123|mtu=8k").is_ok());
/// let e = messaging::validate_channel("aeron:udp?endpoint=localhost").unwrap_err();
/// assert!(e.to_string().contains("has no port"), "{e}");
/// ```
pub fn validate_channel(channel: &str) -> Result<(), AddError> {
    channel_syntax(channel).map_err(|reason| AddError::InvalidChannel {
        channel: channel.to_owned(),
        reason,
    })
}

fn channel_syntax(channel: &str) -> Result<(), String> {
    if channel.is_empty() {
        return Err("it is empty".into());
    }
    if channel.contains('\0') {
        return Err("it contains a NUL byte".into());
    }
    if channel.contains(char::is_whitespace) {
        return Err("it contains whitespace".into());
    }
    if channel.len() > MAX_CHANNEL_LENGTH {
        return Err(format!(
            "it is {} bytes long, Aeron takes at most {MAX_CHANNEL_LENGTH}",
            channel.len()
        ));
    }
    // A spy subscription (Aeron's `aeron-spy:` prefix) reads a network publication of this
    // driver straight from its log.
    let (spy, channel) = match channel.strip_prefix("aeron-spy:") {
        Some(inner) => (true, inner),
        None => (false, channel),
    };
    let Some(rest) = channel.strip_prefix("aeron:") else {
        return Err("it must start with \"aeron:\" (or \"aeron-spy:aeron:udp\" for a spy)".into());
    };
    if spy && !rest.starts_with("udp") {
        return Err("a spy (aeron-spy:) watches a network publication: aeron-spy:aeron:udp?endpoint=...".into());
    }
    let (media, params) = match rest.split_once('?') {
        Some((media, params)) => (media, Some(params)),
        None => (rest, None),
    };
    match (media, params) {
        ("ipc", _) | ("udp", Some(_)) => {}
        ("udp", None) => {
            return Err("aeron:udp needs parameters, at least ?endpoint=<host>:<port> or ?control=<host>:<port>".into())
        }
        _ => return Err(format!("the media {media:?} is neither ipc nor udp")),
    }
    let pairs = key_values(params)?;
    let get = |key: &str| pairs.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let control_mode = get("control-mode");
    if let Some(mode) = control_mode {
        if !matches!(mode, "manual" | "dynamic" | "response") {
            return Err(format!(
                "control-mode={mode} is not one of Aeron's: manual, dynamic or response"
            ));
        }
    }
    if media == "udp" {
        check_udp(&get, control_mode)?;
    }
    Ok(())
}

/// The `key=value` parameters after the `?`, in the order given.
fn key_values(params: Option<&str>) -> Result<Vec<(&str, &str)>, String> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    if let Some(params) = params {
        if params.is_empty() {
            return Err("nothing follows '?': add key=value parameters or drop the '?'".into());
        }
        for param in params.split('|') {
            let Some((key, value)) = param.split_once('=') else {
                return Err(if param.is_empty() {
                    "it has an empty parameter (\"||\", or a '|' at the end)".into()
                } else {
                    format!("parameter {param:?} has no '=': parameters are key=value, separated by '|'")
                });
            };
            if key.is_empty() {
                return Err(format!("parameter {param:?} has an empty key"));
            }
            if value.is_empty() {
                return Err(format!("parameter {key:?} has an empty value"));
            }
            pairs.push((key, value));
        }
    }
    Ok(pairs)
}

/// A udp channel's addressing, in the order Aeron checks it: dynamic control needs a control
/// address; some address (or tags, or manual or response control) is needed; each address is
/// `host:port`.
fn check_udp<'a>(get: &dyn Fn(&str) -> Option<&'a str>, control_mode: Option<&str>) -> Result<(), String> {
    let (endpoint, control) = (get("endpoint"), get("control"));
    // In the order Aeron checks them.
    if control_mode == Some("dynamic") && control.is_none() {
        return Err("control-mode=dynamic needs control=<host>:<port>".into());
    }
    if endpoint.is_none()
        && control.is_none()
        && get("tags").is_none()
        && !matches!(control_mode, Some("manual" | "response"))
    {
        return Err(
            "a udp channel needs endpoint=<host>:<port> (or control=<host>:<port>, tags, control-mode=manual)".into(),
        );
    }
    for (key, value) in [("endpoint", endpoint), ("control", control)] {
        if let Some(value) = value {
            check_host_port(key, value)?;
        }
    }
    Ok(())
}

/// `host:port` or `[ipv6]:port`, as Aeron's `aeron_address_split` reads it (port required).
fn check_host_port(key: &str, value: &str) -> Result<(), String> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(format!("{key}={value}: the IPv6 address has no closing ']'"));
        };
        let Some(port) = after.strip_prefix(':') else {
            return Err(format!("{key}={value} has no port: write {key}=[{host}]:<port>"));
        };
        (host, port)
    } else {
        let Some((host, port)) = value.rsplit_once(':') else {
            return Err(format!("{key}={value} has no port: write {key}={value}:<port>"));
        };
        if host.contains(':') {
            return Err(format!(
                "{key}={value}: an IPv6 address goes in brackets, e.g. {key}=[::1]:40123"
            ));
        }
        (host, port)
    };
    if host.is_empty() {
        return Err(format!("{key}={value} has no host: write {key}=<host>:{port}"));
    }
    if port.is_empty() {
        return Err(format!("{key}={value} has no port: write {key}={host}:<port>"));
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{key}={value}: the port {port:?} is not a number"));
    }
    if port.len() > 5 || port.parse::<u32>().map_or(true, |p| p > 65_535) {
        return Err(format!("{key}={value}: the port {port} is out of range (0 to 65535)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_lengths_follow_aeron_rules() {
        assert!(check_term_length(64 << 10).is_ok());
        assert!(check_term_length(512 << 20).is_ok());
        for bad in [0, 1000, 32 << 10, (64 << 10) + 1, 2 << 30] {
            let e = check_term_length(bad).unwrap_err();
            assert!(
                e.contains("power of two") && e.contains("to 536870912 (512 MiB)"),
                "{e}"
            );
        }
        let e = check_term_length(1 << 30).unwrap_err();
        assert!(e.contains("cannot map") && e.contains("512m"), "{e}");
    }

    /// A publication's term-length whose log aeron-rs could not map is refused before the add;
    /// Aeron's own rules for it stay the driver's.
    #[test]
    fn a_publication_whose_log_the_client_cannot_map_is_refused() {
        for ok in [
            "aeron:ipc",
            "aeron:ipc?term-length=512m",
            "aeron:udp?endpoint=localhost:40123|term-length=536870912",
            "aeron:ipc?term-length=64k|term-length=512M",
            "aeron:ipc?term-length=lots",
        ] {
            assert!(check_publication_channel(ok).is_ok(), "{ok}");
        }
        for bad in [
            "aeron:ipc?term-length=1g",
            "aeron:ipc?term-length=1G",
            "aeron:ipc?term-length=1gb",
            "aeron:udp?endpoint=localhost:40123|term-length=1073741824",
            // The C driver takes the first, Java the last: either is refused.
            "aeron:ipc?term-length=1g|term-length=64k",
            "aeron:ipc?term-length=64k|term-length=2g",
        ] {
            let e = check_publication_channel(bad).unwrap_err().to_string();
            assert!(e.contains("cannot map") && e.contains("512m"), "{bad}: {e}");
        }
    }

    /// Sizes read as `aeron_parse_size64` reads them.
    #[test]
    fn sizes_are_read_as_aeron_reads_them() {
        for (text, bytes) in [
            ("65536", Some(65536)),
            ("64k", Some(64 << 10)),
            ("16M", Some(16 << 20)),
            ("1g", Some(1 << 30)),
            ("1gb", Some(1 << 30)),
            (" +2K", Some(2 << 10)),
            ("", None),
            ("k", None),
            ("-1", None),
            ("1t", None),
            ("1 k", None),
            ("99999999999999999g", None),
        ] {
            assert_eq!(parse_bytes(text), bytes, "{text:?}");
        }
    }

    /// A log as the driver sizes it must stay under 2 GiB, page size included.
    #[test]
    fn a_log_of_two_gib_or_more_is_refused() {
        assert!(check_mapped_log(512 << 20, 4096).is_ok());
        assert!(check_mapped_log(512 << 20, 256 << 20).is_ok());
        for (term, page) in [(512 << 20, 512 << 20), (512 << 20, 1 << 30), (1 << 30, 4096)] {
            let e = check_mapped_log(term, page).unwrap_err();
            assert!(e.contains("cannot map"), "{term} {page}: {e}");
        }
    }

    #[test]
    fn channels_are_checked_before_reaching_the_driver() {
        assert!(check_channel("aeron:ipc").is_ok());
        assert!(check_channel("aeron:udp?endpoint=localhost:40123").is_ok());
        for bad in ["ipc", "aeron:tcp", "aeron:ipc?x= 1", ""] {
            let e = check_channel(bad).unwrap_err().to_string();
            assert!(e.contains("aeron:ipc"), "{e}");
        }
    }

    #[test]
    fn well_formed_channels_pass_validate_channel() {
        for good in [
            "aeron-spy:aeron:udp?endpoint=localhost:40123",
            "aeron:ipc",
            "aeron:ipc?term-length=64k",
            "aeron:ipc?term-length=64k|mtu=8192|alias=a=b",
            "aeron:udp?endpoint=localhost:40123",
            "aeron:udp?endpoint=192.168.0.1:0",
            "aeron:udp?endpoint=[::1]:65535|interface=eth0",
            "aeron:udp?endpoint=[fe80::1%eth0]:40123",
            "aeron:udp?control=host-a:40124|control-mode=dynamic",
            "aeron:udp?control-mode=manual",
            "aeron:udp?control-mode=response|control=localhost:40125",
            "aeron:udp?tags=1001",
            "aeron:udp?endpoint=x:1|endpoint=localhost:40123",
        ] {
            assert!(validate_channel(good).is_ok(), "{good}: {:?}", validate_channel(good));
        }
    }

    #[test]
    fn malformed_channels_fail_validate_channel_with_the_reason_and_an_example() {
        let long = format!("aeron:ipc?alias={}", "a".repeat(MAX_CHANNEL_LENGTH));
        for (bad, reason) in [
            ("", "empty"),
            ("aeron:ipc\0", "NUL"),
            ("aeron:ipc?alias=a b", "whitespace"),
            (long.as_str(), "at most 4095"),
            (
                "aeron-spy:aeron:ipc",
                "a spy (aeron-spy:) watches a network publication",
            ),
            ("aeron-spy:ipc", "must start with \"aeron:\""),
            ("Aeron:ipc", "must start with \"aeron:\""),
            ("aeron:tcp?endpoint=localhost:1", "\"tcp\" is neither ipc nor udp"),
            ("aeron:ipcx", "\"ipcx\" is neither ipc nor udp"),
            ("aeron:", "\"\" is neither ipc nor udp"),
            ("aeron:udp", "needs parameters"),
            ("aeron:ipc?", "nothing follows '?'"),
            ("aeron:ipc?term-length", "has no '='"),
            ("aeron:ipc?=64k", "empty key"),
            ("aeron:ipc?term-length=", "\"term-length\" has an empty value"),
            ("aeron:ipc?mtu=8192|", "empty parameter"),
            ("aeron:ipc?mtu=8192||alias=x", "empty parameter"),
            ("aeron:ipc?control-mode=manul", "control-mode=manul is not one of"),
            ("aeron:udp?interface=eth0", "needs endpoint=<host>:<port>"),
            ("aeron:udp?control-mode=dynamic|endpoint=localhost:1", "needs control="),
            ("aeron:udp?endpoint=localhost", "has no port"),
            ("aeron:udp?endpoint=localhost:", "has no port"),
            ("aeron:udp?endpoint=:40123", "has no host"),
            ("aeron:udp?endpoint=localhost:4o123", "is not a number"),
            ("aeron:udp?endpoint=localhost:65536", "out of range"),
            ("aeron:udp?endpoint=localhost:99999999999", "out of range"),
            ("aeron:udp?endpoint=localhost:-1", "is not a number"),
            ("aeron:udp?control=::1:40123", "in brackets"),
            ("aeron:udp?endpoint=[::1:40123", "no closing ']'"),
            ("aeron:udp?endpoint=[::1]", "has no port"),
        ] {
            let e = validate_channel(bad).expect_err(bad);
            assert!(matches!(e, AddError::InvalidChannel { .. }), "{bad}: {e:?}");
            let msg = e.to_string();
            assert!(msg.contains(reason), "{bad:?}: {msg}");
            assert!(
                msg.contains("aeron:udp?endpoint=localhost:40123"),
                "an example of a valid URI: {msg}"
            );
            assert_eq!(msg.lines().count(), 1, "{msg}");
        }
    }
}
