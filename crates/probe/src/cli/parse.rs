//! Flag values with units, as Aeron writes them: durations (`35us`), byte sizes (`16m`), and
//! embedded driver settings (`KEY=VALUE`). Shared by the subcommands that take them.

use super::UsageError;

/// `KEY=VALUE` for `--driver-opt`: an embedded driver setting by name.
///
/// # Errors
/// No `=`, an unknown setting (listing those it takes), or a value that does not parse.
pub fn parse_driver_opt(s: &str) -> Result<aeron_latency::messaging::DriverOption, UsageError> {
    let (k, v) = s.split_once('=').ok_or_else(|| {
        UsageError::new(format!(
            "{s:?}: give KEY=VALUE, e.g. aeron.nak.multicast.max.backoff=500us"
        ))
    })?;
    aeron_latency::messaging::DriverOption::parse(k, v).map_err(UsageError::new)
}

/// A duration with a unit, as Aeron writes them: `500ns`, `35us` (or `µs`), `2ms`, `1s`; `0`.
///
/// # Errors
/// No unit, not a number, negative, or over an hour.
pub fn parse_duration(s: &str) -> Result<u64, UsageError> {
    let t = s.trim();
    if t == "0" {
        return Ok(0);
    }
    let units: [(&str, f64); 5] = [("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];
    let bad = || {
        UsageError::new(format!(
            "{s:?} is not a duration: give a number and a unit, e.g. 35us, 2ms, 500ns"
        ))
    };
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .ok_or_else(bad)?;
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let ns = v * mult;
    if !(ns.is_finite() && (0.0..=3.6e12).contains(&ns)) {
        return Err(UsageError::new(format!("{s}: give a duration from 0 to 1 hour")));
    }
    Ok(ns.round() as u64)
}

/// Bytes, with binary `k`, `m`, `g` suffixes as Aeron reads them (`64k` = 65,536).
///
/// # Errors
/// Not a number, or over 1 TiB.
pub fn parse_bytes(s: &str) -> Result<u64, UsageError> {
    let t = s.trim().to_ascii_lowercase();
    let (num, shift) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        _ => (t.as_str(), 0),
    };
    let v: u64 = num
        .parse()
        .map_err(|_| UsageError::new(format!("{s:?} is not a size: give bytes, e.g. 131072, 128k or 16m")))?;
    v.checked_shl(shift)
        .filter(|b| *b >> shift == v && *b <= 1 << 40)
        .ok_or_else(|| UsageError::new(format!("{s}: give a size up to 1 TiB")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit_and_read_as_aeron_writes_them() {
        assert_eq!(parse_duration("35us").unwrap(), 35_000);
        assert_eq!(parse_duration("35µs").unwrap(), 35_000);
        assert_eq!(parse_duration("2ms").unwrap(), 2_000_000);
        assert_eq!(parse_duration("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration("500ns").unwrap(), 500);
        assert_eq!(parse_duration("1s").unwrap(), 1_000_000_000);
        assert_eq!(parse_duration("0").unwrap(), 0);
        assert!(parse_duration("35").unwrap_err().message().contains("e.g. 35us"));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("2h").is_err());
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_bytes("64k").unwrap(), 65_536);
        assert_eq!(parse_bytes("16m").unwrap(), 16 << 20);
        assert_eq!(parse_bytes("212992").unwrap(), 212_992);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("99999999g").is_err());
    }
}
