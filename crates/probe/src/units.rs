//! Every number and time a report prints, formatted in one place: nanoseconds auto-scaled to
//! µs/ms/s, thousands separators, means, plurals, counts, UTC timestamps, Java's `%.Nf` for the
//! `.hgrm`, and the tick and legend labels of the plots.
//!
//! Some formatters look alike but print different text, and the report formats rely on each:
//! - [`format_ns`] (text report: whole ns below 10 µs, then 2 or 1 decimals) and
//!   [`format_latency`] (plot legends: the unit changes at 1,000, about three significant
//!   digits): "1500 ns" against "1.50 µs".
//! - [`format_us`] (a µs value on a log axis, computed as 10^y and so never an exact integer:
//!   thousands separators within 1e-6 of an integer, relatively) and [`format_tick`] (a plain
//!   linear tick: separators only within 1e-9, and a sign): 1000.0004 is "1,000" against "1000".
//! - [`fmt_mean`] is [`format_ns`] of a rounded mean, and raw when the mean is not a number.

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

/// "once", "2 times", "1,234 times": how often something happened, for a sentence.
pub fn times(n: u64) -> String {
    if n == 1 {
        "once".into()
    } else {
        format!("{} times", thousands(n))
    }
}

/// A count, or "-" when it is unknown: "12", "-".
pub fn count_or_dash(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
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

/// Java `Formatter` `%.{precision}f` (Locale.US) of a double: rounds half-up on the shortest
/// decimal form of `x` (so 0.35 → "0.4" at one digit, where Rust's `{:.1}` says "0.3").
pub fn java_fixed(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let negative = x.is_sign_negative() && x != 0.0;
    // Shortest round-trip digits: "d.ddd e exp".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    // value = 0.d1d2d3... × 10^(exp + 1); keep the digits down to 10^-precision.
    let keep = exp + 1 + precision as i64;
    let mut kept: Vec<u8> = if keep <= 0 {
        Vec::new()
    } else {
        let keep = keep as usize;
        let mut k: Vec<u8> = digits.iter().copied().take(keep).collect();
        k.resize(keep, 0);
        k
    };
    let first_dropped = if keep < 0 {
        0
    } else {
        digits.get(keep as usize).copied().unwrap_or(0)
    };
    if first_dropped >= 5 {
        // Half-up: carry through the kept digits.
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, 1);
                break;
            }
            i -= 1;
            if kept[i] == 9 {
                kept[i] = 0;
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    // `kept` is round(x × 10^precision) in decimal digits; place the point.
    while kept.len() < precision + 1 {
        kept.insert(0, 0);
    }
    let split = kept.len() - precision;
    let mut s = String::with_capacity(kept.len() + 2);
    if negative && kept.iter().any(|&d| d != 0) {
        s.push('-');
    }
    let int_part: String = kept[..split].iter().map(|d| char::from(b'0' + d)).collect();
    let int_part = int_part.trim_start_matches('0');
    s.push_str(if int_part.is_empty() { "0" } else { int_part });
    if precision > 0 {
        s.push('.');
        s.extend(kept[split..].iter().map(|d| char::from(b'0' + d)));
    }
    s
}

/// "1,250", "12", "1.5", "0.05": a tick value in µs on a log axis (thousands separators for
/// values of 1 or more within a millionth of an integer, else up to 3 decimals).
pub fn format_us(us: f64) -> String {
    if us >= 1.0 && (us - us.round()).abs() < 1e-6 * us {
        thousands(us.round() as u64)
    } else {
        let s = format!("{us:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_owned()
    }
}

/// "12", "2.5", "1,000", "-3": a plain tick on a linear axis (thousands separators for whole
/// numbers, else up to 3 decimals).
pub fn format_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        if v < 0.0 {
            format!("-{}", thousands((-v).round() as u64))
        } else {
            thousands(v.round() as u64)
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// "1.20 µs", "350 ns", "4.10 ms": a latency for a plot legend (unit from 1,000 of the smaller
/// one, 2 decimals below 10, 1 below 100, none above).
pub fn format_latency(ns: u64) -> String {
    let ns = ns as f64;
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// "250k", "1.5M", "800": a rate in messages per second for an axis tick or a legend.
pub fn format_rate(rate: f64) -> String {
    let (v, suffix) = if rate >= 1e6 {
        (rate / 1e6, "M")
    } else if rate >= 1e3 {
        (rate / 1e3, "k")
    } else {
        (rate, "")
    };
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suffix}")
}

/// "0%", "90%", "99%", "99.9%"...: the percentile p at `decades` = log10(1/(1-p)), the x axis
/// of a percentile spectrum (one decimal between the nines).
pub fn format_nines(decades: f64) -> String {
    let k = decades.round() as i32;
    if (decades - f64::from(k)).abs() > 1e-9 {
        let p = 100.0 * (1.0 - 10f64.powf(-decades));
        return format!("{p:.1}%");
    }
    match k {
        i32::MIN..=0 => "0%".to_owned(),
        1 => "90%".to_owned(),
        2 => "99%".to_owned(),
        k => format!("99.{}%", "9".repeat((k - 2) as usize)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn java_fixed_rounds_half_up_on_the_shortest_decimal_like_java_formatter() {
        // (x, "%.2f|%.1f|%.0f|%.3f|%.12f") as printed by OpenJDK 17's String.format(Locale.US).
        let java = [
            (0.125, "0.13|0.1|0|0.125|0.125000000000"),
            (0.35, "0.35|0.4|0|0.350|0.350000000000"),
            (2.5, "2.50|2.5|3|2.500|2.500000000000"),
            (0.0005, "0.00|0.0|0|0.001|0.000500000000"),
            (1.0005, "1.00|1.0|1|1.001|1.000500000000"),
            (999.9995, "1000.00|1000.0|1000|1000.000|999.999500000000"),
            (1e-7, "0.00|0.0|0|0.000|0.000000100000"),
            (
                123_456_789.012_5,
                "123456789.01|123456789.0|123456789|123456789.013|123456789.012500000000",
            ),
            (1.111_111_111_111_111_2, "1.11|1.1|1|1.111|1.111111111111"),
            (0.999_999_046_325_683_6, "1.00|1.0|1|1.000|0.999999046326"),
            (
                1_048_576.0,
                "1048576.00|1048576.0|1048576|1048576.000|1048576.000000000000",
            ),
            (0.15, "0.15|0.2|0|0.150|0.150000000000"),
        ];
        for (x, expected) in java {
            let ours = [2, 1, 0, 3, 12].map(|p| java_fixed(x, p)).join("|");
            assert_eq!(ours, expected, "formatting {x}");
        }
        assert_eq!(java_fixed(0.0, 3), "0.000");
        assert_eq!(java_fixed(-1.5, 0), "-2");
    }
    #[test]
    fn unit_formatting_table() {
        let table: [(u64, &str); 17] = [
            (0, "0 ns"),
            (999, "999 ns"),
            (1_500, "1500 ns"),
            (9_999, "9999 ns"),
            (10_000, "10.00 µs"),
            (12_345, "12.35 µs"),
            (99_994, "99.99 µs"),
            (100_000, "100.0 µs"),
            (123_456, "123.5 µs"),
            (2_500_000, "2500.0 µs"),
            (9_999_949, "9999.9 µs"),
            (10_000_000, "10.00 ms"),
            (123_456_789, "123.5 ms"),
            (9_999_000_000, "9999.0 ms"),
            (15_000_000_000, "15.00 s"),
            (3_600_000_000_000, "3600.0 s"),
            (u64::MAX, "18446744073.7 s"),
        ];
        for (ns, want) in table {
            assert_eq!(format_ns(ns), want, "{ns} ns");
        }
        assert_eq!(fmt_mean(1_234.4), "1234 ns");
        assert_eq!(fmt_mean(0.0), "0 ns");
    }

    #[test]
    fn timestamps() {
        let at = |s: u64| utc_timestamp(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(at(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(
            utc_timestamp(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00Z"
        );
        let now = utc_timestamp(SystemTime::now());
        assert_eq!(now.len(), 20);
        assert!(now.starts_with("20") && now.ends_with('Z'));
    }

    #[test]
    fn thousands_groups_digits_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn plural_picks_the_word_for_the_count() {
        assert_eq!(plural(1, "file", "files"), "1 file");
        assert_eq!(plural(0, "file", "files"), "0 files");
        assert_eq!(plural(3, "file", "files"), "3 files");
    }

    #[test]
    fn times_says_once_then_counts() {
        assert_eq!(times(0), "0 times");
        assert_eq!(times(1), "once");
        assert_eq!(times(2), "2 times");
        assert_eq!(times(1_234), "1,234 times");
    }

    #[test]
    fn count_or_dash_prints_the_count_or_a_dash() {
        assert_eq!(count_or_dash(Some(0)), "0");
        assert_eq!(count_or_dash(Some(12_345)), "12345");
        assert_eq!(count_or_dash(None), "-");
    }

    #[test]
    fn fmt_mean_rounds_and_prints_non_numbers_raw() {
        assert_eq!(fmt_mean(1_234.6), "1235 ns");
        assert_eq!(fmt_mean(12_345.0), "12.35 µs");
        assert_eq!(fmt_mean(f64::NAN), "NaN");
        assert_eq!(fmt_mean(-1.0), "-1");
    }

    #[test]
    fn format_us_groups_near_integers_and_trims_decimals() {
        assert_eq!(format_us(1_250.0), "1,250");
        assert_eq!(format_us(12.0), "12");
        assert_eq!(format_us(1.5), "1.5");
        assert_eq!(format_us(0.05), "0.05");
        assert_eq!(format_us(0.0), "0");
        // 10^(log10(200)) is not exactly 200.
        assert_eq!(format_us(10f64.powf(200f64.log10())), "200");
        assert_eq!(format_us(1_000.000_4), "1,000");
    }

    #[test]
    fn format_tick_groups_whole_numbers_and_keeps_the_sign() {
        assert_eq!(format_tick(12.0), "12");
        assert_eq!(format_tick(2.5), "2.5");
        assert_eq!(format_tick(1_000.0), "1,000");
        assert_eq!(format_tick(-3_000.0), "-3,000");
        assert_eq!(format_tick(0.125), "0.125");
        // Unlike format_us: not within 1e-9 of an integer.
        assert_eq!(format_tick(1_000.000_4), "1000");
    }

    #[test]
    fn format_latency_scales_to_three_significant_digits() {
        assert_eq!(format_latency(0), "0.00 ns");
        assert_eq!(format_latency(350), "350 ns");
        assert_eq!(format_latency(1_200), "1.20 µs");
        assert_eq!(format_latency(12_345), "12.3 µs");
        assert_eq!(format_latency(4_100_000), "4.10 ms");
        assert_eq!(format_latency(2_000_000_000), "2.00 s");
    }

    #[test]
    fn format_rate_uses_k_and_m() {
        assert_eq!(format_rate(800.0), "800");
        assert_eq!(format_rate(250_000.0), "250k");
        assert_eq!(format_rate(1_500_000.0), "1.5M");
        assert_eq!(format_rate(930_000.0), "930k");
        assert_eq!(format_rate(12_345.0), "12.35k");
    }

    #[test]
    fn format_nines_names_the_percentile_of_each_decade() {
        assert_eq!(format_nines(0.0), "0%");
        assert_eq!(format_nines(1.0), "90%");
        assert_eq!(format_nines(2.0), "99%");
        assert_eq!(format_nines(3.0), "99.9%");
        assert_eq!(format_nines(5.0), "99.999%");
        assert_eq!(format_nines(2f64.log10()), "50.0%");
    }
}
