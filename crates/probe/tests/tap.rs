//! `latency-probe tap` over logs `messaging`'s tap wrote (its `FigureRecorder`, no driver
//! needed): the counts and percentiles of each figure, groups and intervals, a figure's rotated
//! logs read as one, the comparison paired by time or marked unpaired, the plots, and bad input
//! refused with one line and exit 2.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use aeron_latency::messaging::tap::Tap;
use common::{run, scratch};
use latency_probe::units::thousands;

/// A tap in `dir` with figures `fast` (1,000 ns + i) and `slow` (`slow_ns` + i), 200 latencies
/// each per 10 ms interval for about `intervals` intervals; returns what each recorded.
fn write_tap(dir: &Path, slow_ns: i64, intervals: u32, rotate: bool) -> (u64, u64) {
    let mut b = Tap::builder(dir).interval(Duration::from_millis(10));
    if rotate {
        b = b.rotate_bytes(1);
    }
    let tap = b.start().expect("tap starts");
    let (mut fast, mut slow) = (tap.figure("fast").unwrap(), tap.figure("slow").unwrap());
    for _ in 0..intervals {
        for i in 0..200 {
            fast.record(1_000 + i);
            slow.record(slow_ns + i);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = tap.stop().expect("tap writes");
    let count = |n: &str| s.figures.iter().find(|f| f.name == n).unwrap().recorded;
    (count("fast"), count("slow"))
}

fn stdout(args: &[&str]) -> String {
    let out = run("latency-probe", args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_tap_s_figures_read_with_their_counts_groups_and_intervals() {
    let dir = scratch("tap-read");
    let (fast, slow) = write_tap(&dir, 50_000, 30, true);
    let text = stdout(&["tap", s(&dir)]);
    assert!(text.starts_with("tap: 2 figures,"), "{text}");
    assert!(
        text.contains("CLOCK_MONOTONIC"),
        "the timing model names the clock: {text}"
    );
    let row = |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap().to_owned();
    assert!(row("fast").contains(&thousands(fast)), "{}", row("fast"));
    assert!(row("slow").contains(&thousands(slow)), "{}", row("slow"));
    assert!(
        row("slow").contains("50.11 µs") && row("fast").contains("1099 ns"),
        "{text}"
    );
    assert!(
        text.contains("fast (") && text.contains("groups"),
        "the groups of each figure: {text}"
    );
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert!(files > 6, "rotated into several logs a figure ({files} files)");
    let by_interval = stdout(&["tap", s(&dir), "--by", "intervals"]);
    let rows = by_interval
        .lines()
        .filter(|l| l.trim_start().starts_with(char::is_numeric))
        .count();
    assert!(
        rows >= 2 * 20,
        "every interval of both figures: {rows} rows\n{by_interval}"
    );
    let overall = stdout(&["tap", &format!("{}/fast.hlog", s(&dir)), "--by", "none"]);
    assert!(
        overall.starts_with("tap: 1 figure,"),
        "one file of a rotated figure: {overall}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_figures_of_one_tap_are_paired_and_two_taps_are_not() {
    let (a, b) = (scratch("tap-a"), scratch("tap-b"));
    write_tap(&a, 50_000, 25, false);
    write_tap(&b, 100_000, 25, false);
    let same_time = stdout(&[
        "tap",
        &format!("{}/fast.hlog", s(&a)),
        "--vs",
        &format!("{}/slow.hlog", s(&a)),
        "--by",
        "none",
    ]);
    assert!(same_time.contains("slow vs fast (paired by time"), "{same_time}");
    let p50 = same_time.lines().find(|l| l.trim_start().starts_with("p50")).unwrap();
    assert!(p50.ends_with("worse"), "{p50}");
    let two_runs = stdout(&[
        "tap",
        s(&a),
        "--vs",
        s(&b),
        "--by",
        "none",
        "--out",
        s(&a.join("plots")),
    ]);
    assert!(two_runs.contains("slow (UNPAIRED"), "{two_runs}");
    let slow = two_runs.split("slow (UNPAIRED").nth(1).unwrap();
    let p50 = slow.lines().find(|l| l.trim_start().starts_with("p50")).unwrap();
    assert!(
        p50.contains("+9") && p50.ends_with("worse"),
        "50 -> 100 µs is about +99%: {p50}"
    );
    for plot in ["spectrum.svg", "groups-fast.svg", "groups-slow.svg"] {
        let svg = std::fs::read_to_string(a.join("plots").join(plot)).unwrap();
        assert!(svg.starts_with("<svg"), "{plot}");
    }
    let periods = stdout(&["tap", s(&a), "--period", "0:0.1", "--vs-period", "0.1:", "--by", "none"]);
    assert!(
        periods.contains("UNPAIRED") && periods.contains("seconds 0.1..inf"),
        "{periods}"
    );
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::remove_dir_all(&b).unwrap();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = scratch("tap-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.hlog");
    std::fs::write(&junk, "#[StartTime: 1.0 (seconds since epoch)]\n0.0,1.0,2.0,@@@\n").unwrap();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let logs = scratch("tap-bad-logs");
    write_tap(&logs, 50_000, 3, false);
    let csv = dir.join("figures.csv");
    std::fs::write(&csv, "figure,p99_ns\nfeed,2100\n").unwrap();
    let missing = PathBuf::from("/nonexistent/x.hlog");
    let cases: [(Vec<&str>, &str); 9] = [
        (
            vec!["tap", s(&logs), "--period", "1000:"],
            "no interval lies in --period 1000:inf",
        ),
        (
            vec!["tap", s(&logs), "--period", "0:2", "--vs-period", "1:3"],
            "overlap",
        ),
        (vec!["tap", s(&missing)], "could not read /nonexistent/x.hlog"),
        (vec!["tap", s(&junk)], "is not an HdrHistogram interval log: line 2"),
        (vec!["tap", s(&csv)], "line 1 is not an HdrHistogram interval log line (expected \"[Tag=T,]start,length,max,HISTFAAA...\" or a #[StartTime: ...] / #[BaseTime: ...] comment, found \"figure,p99_ns\")"),
        (vec!["tap", s(&empty)], "holds no .hlog file"),
        (
            vec!["tap", s(&logs), "--tag", "session-9"],
            "has no interval tagged session-9",
        ),
        (
            vec!["tap", s(&logs), "--vs-period", "1:2"],
            "--vs-period needs --period",
        ),
        (vec!["tap", s(&logs), "--period", "5:1"], "give 0 <= FROM < TO"),
    ];
    for (args, needle) in cases {
        let out = run("latency-probe", &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&logs).unwrap();
}
