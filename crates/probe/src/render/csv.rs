//! The group table as CSV: one row per group, latencies and jitter counters.

use crate::render::files::io_context;
use crate::render::points::{counter_names, counter_value, GroupPoint};
use std::io::{self, Write};

/// The fixed columns of [`write_groups_csv`], before the counters.
pub const GROUPS_CSV_COLUMNS: [&str; 12] = [
    "index",
    "start_s",
    "end_s",
    "count",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "actual_p50_ns",
    "actual_p99_ns",
    "actual_p999_ns",
    "actual_max_ns",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Writes the group table as CSV (RFC 4180, `\n` line ends): a header of
/// [`GROUPS_CSV_COLUMNS`] then one column per counter name found in any group (in order of
/// first appearance, quoted when needed), and one row per group, times in seconds with 6
/// decimals, latencies in ns, 0 where a group lacks a counter.
///
/// # Errors
/// `out` failed; the message says so.
pub fn write_groups_csv<W: Write>(rows: &[GroupPoint], mut out: W) -> io::Result<()> {
    use std::fmt::Write as _;
    let names = counter_names(rows);
    let mut s = GROUPS_CSV_COLUMNS.join(",");
    for name in &names {
        s.push(',');
        s.push_str(&csv_field(name));
    }
    s.push('\n');
    for r in rows {
        let _ = write!(
            s,
            "{},{:.6},{:.6},{},{},{},{},{},{},{},{},{}",
            r.index,
            r.start_s,
            r.end_s,
            r.count,
            r.p50_ns,
            r.p99_ns,
            r.p999_ns,
            r.max_ns,
            r.actual_p50_ns,
            r.actual_p99_ns,
            r.actual_p999_ns,
            r.actual_max_ns
        );
        for name in &names {
            let _ = write!(s, ",{}", counter_value(r, name));
        }
        s.push('\n');
    }
    out.write_all(s.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| io_context(e, "writing the group table CSV"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::groups;

    #[test]
    fn groups_csv_has_a_header_and_one_row_per_group_with_counters_as_columns() {
        let rows = groups();
        let mut out = Vec::new();
        write_groups_csv(&rows, &mut out).expect("writes to a Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 21);
        assert_eq!(
            lines[0],
            "index,start_s,end_s,count,p50_ns,p99_ns,p999_ns,max_ns,actual_p50_ns,actual_p99_ns,\
             actual_p999_ns,actual_max_ns,futex waits,involuntary switches"
        );
        for (line, r) in lines[1..].iter().zip(&rows) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 14, "{line}");
            assert_eq!(f[0].parse::<usize>().ok(), Some(r.index));
            assert!((f[1].parse::<f64>().expect("start") - r.start_s).abs() < 1e-6);
            assert!((f[2].parse::<f64>().expect("end") - r.end_s).abs() < 1e-6);
            let numbers: Vec<u64> = f[3..].iter().map(|x| x.parse().expect("integer")).collect();
            let futex = counter_value(r, "futex waits");
            let involuntary = counter_value(r, "involuntary switches");
            assert_eq!(
                numbers,
                [
                    r.count,
                    r.p50_ns,
                    r.p99_ns,
                    r.p999_ns,
                    r.max_ns,
                    r.actual_p50_ns,
                    r.actual_p99_ns,
                    r.actual_p999_ns,
                    r.actual_max_ns,
                    futex,
                    involuntary
                ]
            );
        }
        assert!(lines[4].ends_with(",0,4"), "group 3 lacks futex waits: {}", lines[4]);
        assert!(lines[11].ends_with(",41,118"), "the bad group: {}", lines[11]);
    }

    #[test]
    fn groups_csv_quotes_counter_names_that_need_it() {
        let mut rows = groups();
        rows.truncate(1);
        rows[0].counters = vec![("waits, \"odd\"".to_owned(), 2)];
        let mut out = Vec::new();
        write_groups_csv(&rows, &mut out).expect("writes to a Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.lines()
                .next()
                .expect("header")
                .ends_with(",\"waits, \"\"odd\"\"\""),
            "{text}"
        );
    }
}
