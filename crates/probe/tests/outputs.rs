//! `--out DIR`, `--runs`, `compare` and `sweep` as a user runs them: the files are read back with
//! HdrHistogram's own readers (the crate's interval-log reader and V2 deserializer) and must
//! give the report's percentiles; the SVGs must parse and hold their series.

mod common;

use std::path::Path;

use common::{run_probe, scratch, stderr};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use latency_probe::model::{Report, Stats};

/// Small, quick, polite runs: yield-idling hot threads, a 1 MiB term, no floor.
const QUICK: [&str; 10] = [
    "--idle",
    "yield",
    "--term-length",
    "1048576",
    "--floor",
    "0",
    "--warmup",
    "500",
    "--rate",
    "10000",
];

/// The rows of an .hgrm file: (value in µs, percentile 0..1, total count).
fn hgrm_rows(text: &str) -> Vec<(f64, f64, u64)> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.trim_start().starts_with("Value"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

fn svg(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert!(
        !text.contains("NaN") && !text.contains("inf"),
        "{}: non-finite coordinates",
        path.display()
    );
    let lines = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "polyline" || n.tag_name().name() == "path")
        .count();
    assert!(lines >= 2, "{}: {lines} lines", path.display());
    doc.descendants().filter_map(|n| n.text()).collect::<Vec<_>>().join("|")
}

#[test]
fn out_dir_files_read_back_with_hdrhistograms_readers_give_the_reports_percentiles() {
    let dir = scratch("out");
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "--duration",
        "1.5",
        "--runs",
        "2",
        "--stream",
        "4001",
        "--quiet",
        "--live",
        "on",
        "--out",
        d,
    ];
    args.extend(QUICK);
    let out = run_probe(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Report = serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let l = &report.latency_ns;
    assert_eq!(l.count, 15_000);

    // The report carries the histograms; they give its percentiles.
    let h = report.histograms.as_ref().expect("histograms in the report");
    let overall = latency_probe::model::decode(&h.intended).unwrap();
    assert_eq!(overall.len(), l.count);
    assert_eq!(overall.value_at_quantile(0.99), l.p99);
    assert_eq!(h.groups.len(), 20);

    check_hgrm(&dir, l, &overall);
    check_hlog(&dir, l);
    check_csv_and_plots(&dir);
    check_runs(&dir, &report, &stderr(&out));
    check_compare(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// .hgrm: every row is the histogram's value at its percentile (µs, 3 decimals); the footer
/// has the count and the max.
fn check_hgrm(dir: &Path, l: &Stats, overall: &Histogram<u64>) {
    let hgrm = std::fs::read_to_string(dir.join("latency.hgrm")).unwrap();
    let rows = hgrm_rows(&hgrm);
    assert!(rows.len() > 20, "{hgrm}");
    for (us, p, _) in &rows {
        // Same value up to the histogram's resolution at that value (HdrHistogram prints a
        // bucket's highest equivalent value, 3 decimals in µs).
        let want = overall.value_at_quantile(*p);
        let slack = overall.equivalent_range(want) as f64 / 1000.0 + 0.0005;
        assert!(
            (us - want as f64 / 1000.0).abs() <= slack,
            "row at {p}: {us} µs, histogram says {want} ns"
        );
    }
    assert_eq!(rows.last().unwrap().2, l.count);
    let footer = hgrm.lines().find(|x| x.starts_with("#[Max")).expect("footer");
    let nums: Vec<f64> = footer
        .split(['=', ',', ']'])
        .filter_map(|x| x.trim().parse::<f64>().ok())
        .collect();
    assert_eq!(nums.len(), 2, "{footer}");
    assert_eq!(nums[1] as u64, l.count, "{footer}");
    let slack = overall.equivalent_range(l.max) as f64 / 1000.0 + 0.0005;
    assert!(
        (nums[0] - l.max as f64 / 1000.0).abs() <= slack,
        "{footer} vs max {} ns",
        l.max
    );
    let p99_row = rows.iter().find(|r| r.1 >= 0.99).unwrap();
    assert!(
        p99_row.0 * 1000.0 >= l.p99 as f64 - 1.0,
        "the p99 row is at or above the report's p99"
    );
}

/// .hlog: 20 intervals of intended latency (untagged) and 20 of actual (tag "actual"), adding
/// up to the overall histogram.
fn check_hlog(dir: &Path, l: &Stats) {
    let hlog = std::fs::read(dir.join("latency.hlog")).unwrap();
    let mut merged: Option<Histogram<u64>> = None;
    let (mut untagged, mut tagged, mut last_start, mut covered) = (0, 0, -1.0, 0.0);
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&hlog) {
        if let LogEntry::Interval(iv) = entry.expect("a valid interval log line") {
            let bytes =
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, iv.encoded_histogram()).unwrap();
            let hist: Histogram<u64> = de.deserialize(&mut bytes.as_slice()).unwrap();
            if let Some(tag) = iv.tag() {
                assert_eq!(tag.as_str(), "actual");
                tagged += 1;
            } else {
                untagged += 1;
                let start = iv.start_timestamp().as_secs_f64();
                assert!(start >= last_start, "intervals in time order");
                assert!(
                    start < 2.0,
                    "interval starts are relative to the log's StartTime: {start}"
                );
                if last_start >= 0.0 {
                    // Each group starts where the previous ended: 1,500 messages at 10,000/s.
                    assert!((start - last_start - 0.075).abs() < 1e-3, "{start} after {last_start}");
                }
                last_start = start;
                covered += iv.duration().as_secs_f64();
                match &mut merged {
                    Some(m) => m.add(&hist).unwrap(),
                    None => merged = Some(hist),
                }
            }
        }
    }
    assert_eq!((untagged, tagged), (20, 20));
    assert!(
        (covered - 1.5).abs() < 1e-3,
        "the intervals tile the 1.5 s schedule: {covered}"
    );
    let text = String::from_utf8_lossy(&hlog);
    let start_time: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("#[StartTime: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("a #[StartTime: line");
    assert!(
        (now_s - 120.0..now_s).contains(&start_time),
        "StartTime is the Unix time of this run's first intended send: {start_time} (now {now_s})"
    );
    let merged = merged.unwrap();
    assert_eq!(merged.len(), l.count, "the groups add up to the run");
    assert_eq!(merged.value_at_quantile(0.5), l.p50);
    assert_eq!(merged.value_at_quantile(0.999), l.p999);
    assert_eq!(merged.max(), l.max);
}

/// groups.csv has a row per group; the plots parse and hold their series.
fn check_csv_and_plots(dir: &Path) {
    let csv = std::fs::read_to_string(dir.join("groups.csv")).unwrap();
    assert_eq!(csv.lines().count(), 21, "{csv}");
    let texts = svg(&dir.join("spectrum.svg"));
    assert!(
        texts.contains("from the intended send time") && texts.contains("from the actual send time"),
        "{texts}"
    );
    assert!(texts.contains("99.9%"), "{texts}");
    let texts = svg(&dir.join("groups.svg"));
    for series in ["p50", "p99", "p99.9", "max"] {
        assert!(texts.contains(series), "groups.svg lacks {series}: {texts}");
    }
}

/// --runs 2: each run's report, the runs table, the variation; and the live lines on `err`.
fn check_runs(dir: &Path, report: &Report, err: &str) {
    let runs = report.runs.as_ref().expect("runs summary");
    assert_eq!(runs.runs.len(), 2);
    assert_eq!(
        runs.runs[1].latency_ns, report.latency_ns,
        "the report is the last run's"
    );
    assert!(dir.join("run-1.json").exists() && dir.join("run-2.json").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("runs.csv")).unwrap().lines().count(),
        3
    );
    assert!(report.in_flight.is_some(), "Little's law figure");
    let counters = report.driver_counters.as_ref().expect("driver counters");
    assert!(
        counters.watched.iter().any(|w| w.label.starts_with("Errors")),
        "the driver's Errors counter is watched: {counters:?}"
    );
    assert!(err.contains("run 2/2"), "{err}");
    assert!(
        err.contains("latency-sub: 1 s: received") && err.contains("p99 of the last"),
        "--live on: a line a second from latency-sub: {err}"
    );
}

/// compare: run 1 against the report (2 runs recorded in B: the verdicts are judged); a file
/// that is no report is refused.
fn check_compare(dir: &Path) {
    let c = run_probe(&[
        "compare",
        dir.join("run-1.json").to_str().unwrap(),
        dir.join("report.json").to_str().unwrap(),
    ]);
    assert!(c.status.success(), "{}", stderr(&c));
    let t = String::from_utf8_lossy(&c.stdout);
    // One run against two (the first of fewer than three is counted): too few for a verdict,
    // and the text says what would support one.
    assert!(t.contains("p99.9") && t.contains("interval"), "{t}");
    assert!(t.contains("cannot tell") && t.contains("latency-probe ab"), "{t}");
    let bad = run_probe(&[
        "compare",
        dir.join("groups.csv").to_str().unwrap(),
        dir.join("report.json").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("is not a latency-probe or latency-sub JSON report"));
}

#[test]
fn sweep_runs_each_rate_and_draws_latency_against_offered_load() {
    let dir = scratch("sweep");
    let out = run_probe(&[
        "sweep",
        "--rates",
        "2k,5000",
        "--duration",
        "0.5",
        "--out",
        dir.to_str().unwrap(),
        "--",
        "--idle",
        "yield",
        "--term-length",
        "1048576",
        "--floor",
        "0",
        "--warmup",
        "200",
        "--stream",
        "4002",
        "--diagnostics",
        "off",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2000") && text.contains("5000"), "{text}");
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(summary["points"].as_array().unwrap().len(), 2);
    for p in summary["points"].as_array().unwrap() {
        assert_eq!(p["lost"], 0);
    }
    let texts = svg(&dir.join("sweep.svg"));
    for series in ["p50", "p99", "p99.9", "1/(1-ρ)"] {
        assert!(texts.contains(series), "sweep.svg lacks {series}: {texts}");
    }
    assert!(dir.join("rate-2000.json").exists() && dir.join("rate-5000.json").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
