//! Every number and time a report prints, formatted in one place: nanoseconds auto-scaled to
//! µs/ms/s, thousands separators, means, plurals, UTC timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

/// `n` with a comma between groups of three digits: 1,234,567.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n one` or `n many`: "1 file", "3 files".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Formats a duration in nanoseconds with a unit chosen per value: `ns` below 10 µs, `µs`
/// below 10 ms, `ms` below 10 s, else `s`; two decimals below 100 of the unit, else one.
pub fn format_ns(ns: u64) -> String {
    if ns < 10_000 {
        return format!("{ns} ns");
    }
    let (unit_ns, unit): (u128, &str) = if ns < 10_000_000 {
        (1_000, "µs")
    } else if ns < 10_000_000_000 {
        (1_000_000, "ms")
    } else {
        (1_000_000_000, "s")
    };
    let ns = u128::from(ns);
    if ns < 100 * unit_ns {
        let step = unit_ns / 100;
        let v = (ns + step / 2) / step;
        format!("{}.{:02} {unit}", v / 100, v % 100)
    } else {
        let step = unit_ns / 10;
        let v = (ns + step / 2) / step;
        format!("{}.{} {unit}", v / 10, v % 10)
    }
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ` (UTC, RFC 3339); times before 1970 are written as the epoch.
pub fn utc_timestamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// A mean in nanoseconds, formatted like the percentiles (printed raw when not finite or negative).
pub fn fmt_mean(mean: f64) -> String {
    if mean.is_finite() && mean >= 0.0 {
        format_ns(mean.round() as u64)
    } else {
        format!("{mean}")
    }
}
