//! The summary the bench prints after the criterion cases: the setup, the round-trip table
//! against the floor, throughput, and each side alone (the paired rounds print their own,
//! `paired.rs`).

use hdrhistogram::Histogram;
use latency_probe::model::Stats;

use crate::common::{Mode, Plan, Row, ThroughputRow, BIG_TERM, MSG_LEN, ROUND_TRIP_TERM, TP_FRAGMENT_LIMIT};
use crate::figures::{self, Better};
use crate::split::SplitRow;

/// What the run measured, for the summary.
pub(crate) struct Summary {
    pub(crate) mode: Mode,
    pub(crate) plan: Plan,
    pub(crate) cores: (Option<usize>, Option<usize>),
    pub(crate) pinned: bool,
    pub(crate) load: (String, String),
    pub(crate) version: String,
    pub(crate) floor: (Histogram<u64>, Histogram<u64>),
    pub(crate) rows: Vec<Row>,
    /// Why a round-trip row is missing (a peer that could not run), printed under the table.
    pub(crate) missing: Vec<String>,
    pub(crate) tp_rows: Vec<ThroughputRow>,
    pub(crate) split: Vec<SplitRow>,
    pub(crate) mutex_ns: f64,
    pub(crate) clock_ns: u64,
    /// The embedded driver's settings (none: an external driver, unreadable).
    pub(crate) settings: Option<Vec<(String, String)>>,
    pub(crate) doctor: latency_probe::model::Doctor,
}

/// Prints the summary.
pub(crate) fn print_summary(s: &Summary) {
    print_setup(s);
    print_round_trips(s);
    print_throughput(s);
    print_split(s);
}

/// The summary's head: the cores, the driver, doctor's findings, and how the cases measure.
fn print_setup(s: &Summary) {
    let core = |c: Option<usize>| c.map_or_else(|| "any".to_owned(), |c| c.to_string());
    println!();
    println!(
        "== roundtrip summary{} ==",
        if s.mode == Mode::Test {
            " (test mode: tiny counts, figures meaningless)"
        } else {
            ""
        }
    );
    println!(
        "cores: bench thread {} ({}), responder {}; {}; load average before: {}, after: {}",
        core(s.cores.0),
        if s.pinned { "pinned" } else { "NOT pinned" },
        core(s.cores.1),
        s.version,
        s.load.0,
        s.load.1
    );
    match &s.settings {
        Some(p) => {
            let kv: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "driver settings (embedded; AERON_*, then BENCH_DRIVER_OPT): {}",
                kv.join(" ")
            );
        }
        None => println!("driver settings: unknown (an external driver does not publish them)"),
    }
    let names = |st: latency_probe::model::CheckStatus| -> Vec<&str> {
        s.doctor
            .checks
            .iter()
            .filter(|c| c.status == st)
            .map(|c| c.check.as_str())
            .collect()
    };
    println!(
        "doctor: {} PASS, WARN: {}, FAIL: {} (latency-probe doctor for each fix)",
        s.doctor.count(latency_probe::model::CheckStatus::Pass),
        names(latency_probe::model::CheckStatus::Warn).join(", "),
        names(latency_probe::model::CheckStatus::Fail).join(", ")
    );
    println!(
        "messages {MSG_LEN} B; round-trip term {} KiB (driver default), offer_poll / throughput term {} MiB; idle: spin \
         (hot threads), backoff (driver)",
        ROUND_TRIP_TERM >> 10,
        BIG_TERM >> 20
    );
    println!(
        "percentiles: {} individually timed operations per case after {} warm-up. Floor = raw cache-line round trip \
         (latency_probe::measure::floor::measure), {:.2} s right before and right after each case; each case's percentiles \
         are divided by its own floor (before + after merged) at the same percentile. The global floor, {:.2} s \
         before and after everything, is in the first two rows (ratios to the two merged).",
        s.plan.measured_ops,
        s.plan.warmup_ops,
        s.plan.local_floor.as_secs_f64(),
        s.plan.floor_each.as_secs_f64()
    );
}

/// The round-trip table: the global floor's two rows, then each case against its own floor,
/// with the warnings when a floor moved.
fn print_round_trips(s: &Summary) {
    let before = Stats::from_histogram(&s.floor.0);
    let after = Stats::from_histogram(&s.floor.1);
    let mut both = s.floor.0.clone();
    let _ = both.add(&s.floor.1);
    let combined = Stats::from_histogram(&both);
    let raw_batch = s.rows.iter().find(|r| r.name == "raw").and_then(|r| r.batch_median_ns);
    println!();
    println!(
        "{:<25} {:>9} {:>9} {:>7} {:>7} {:>7} {:>9} {:>7} {:>15} {:>7} {:>7} {:>8}",
        "case",
        "batch med",
        "batch/raw",
        "p50",
        "p99",
        "p99.9",
        "max",
        "mean",
        "floor p50 b/a",
        "p50/fl",
        "p99/fl",
        "p99.9/fl"
    );
    let global = (before.p50, after.p50);
    let line = |name: &str, batch: Option<f64>, st: &Stats, fl: &Stats, fl_pair: (u64, u64)| {
        print_round_trip_row(name, (batch, raw_batch), st, fl, fl_pair);
    };
    line("floor before", None, &before, &combined, global);
    line("floor after", None, &after, &combined, global);
    let mut any_moved = false;
    for r in &s.rows {
        let (b, a) = (&r.local_floor.0, &r.local_floor.1);
        let mut merged = b.clone();
        let _ = merged.add(a);
        let pair = (b.value_at_quantile(0.5), a.value_at_quantile(0.5));
        any_moved |= latency_probe::model::regime_moved(pair.0, pair.1);
        line(
            &r.name,
            r.batch_median_ns,
            &r.stats,
            &Stats::from_histogram(&merged),
            pair,
        );
    }
    print_round_trip_notes(s, any_moved, global);
}

/// One row of the round-trip table: `batch` is the case's and `raw`'s batch median.
fn print_round_trip_row(name: &str, batch: (Option<f64>, Option<f64>), st: &Stats, fl: &Stats, fl_pair: (u64, u64)) {
    let r = latency_probe::model::ratios(st, fl);
    let at = |label: &str| r.iter().find(|(n, _)| n == label).map_or(f64::NAN, |(_, x)| *x);
    for (label, v) in [("p50", st.p50), ("p99", st.p99), ("p99.9", st.p999)] {
        figures::ns("round trip", &format!("{name}: {label}"), v as f64);
    }
    figures::note(
        "round trip",
        &format!("{name}: p50 / floor"),
        "x",
        Better::Lower,
        at("p50"),
    );
    let moved = if latency_probe::model::regime_moved(fl_pair.0, fl_pair.1) {
        "!"
    } else {
        " "
    };
    println!(
        "{:<25} {:>9} {:>9} {:>7} {:>7} {:>7} {:>9} {:>7.0} {:>14}{} {:>6.1}x {:>6.1}x {:>7.1}x",
        name,
        batch.0.map_or_else(|| "-".to_owned(), |b| format!("{b:.0}")),
        match batch {
            (Some(b), Some(r)) if r > 0.0 => format!("{:.1}x", b / r),
            _ => "-".to_owned(),
        },
        st.p50,
        st.p99,
        st.p999,
        st.max,
        st.mean,
        format!("{}/{}", fl_pair.0, fl_pair.1),
        moved,
        at("p50"),
        at("p99"),
        at("p99.9"),
    );
}

/// Under the round-trip table: what its columns mean, the cases' notes, and the warnings when
/// a case's floor (`any_moved`) or the global one (`global`: before, after) moved.
fn print_round_trip_notes(s: &Summary, any_moved: bool, global: (u64, u64)) {
    println!(
        "(ns; batch med = median of criterion's per-batch means, ns per operation; floor p50 b/a = the case's floor \
         before / after it, '!' = moved more than {}x: that row's ratios are not trustworthy)",
        latency_probe::model::MOVED_FACTOR
    );
    println!(
        "(every percentile, the floor's included, contains the timing itself: two now_ns readings, median {} ns \
         back to back; criterion's batch figures do not)",
        s.clock_ns
    );
    if any_moved {
        println!("WARNING: the floor moved across at least one case (marked '!'); run again for trustworthy ratios");
    }
    for r in s.rows.iter().filter(|r| !r.notes.is_empty()) {
        println!("  {}: {}", r.name, r.notes);
    }
    for m in &s.missing {
        println!("  {m}");
    }
    if latency_probe::model::regime_moved(global.0, global.1) {
        println!(
            "WARNING: the floor moved during the run (p50 {} ns before, {} ns after, more than {}x apart): this \
             machine's inter-core latency changed regime, so no ratio from this run is trustworthy; run again",
            global.0,
            global.1,
            latency_probe::model::MOVED_FACTOR
        );
    }
}

/// The throughput table: messages/s per variant, and each variant's notes.
fn print_throughput(s: &Summary) {
    println!();
    println!(
        "throughput ({MSG_LEN} B messages, bench thread publishes, pinned subscriber polls; {} batches of {} after \
         a warm-up batch; M msg/s)",
        s.plan.batches, s.plan.batch
    );
    println!(
        "{:<30} {:>10} {:>8} {:>8} {:>8}",
        "variant", "criterion", "median", "min", "max"
    );
    for r in &s.tp_rows {
        let mut v = r.rates.clone();
        v.sort_by(f64::total_cmp);
        let m = |x: f64| format!("{:.2}", x / 1e6);
        let median = latency_probe::analysis::paired::median(&v);
        if let Some(median) = median {
            figures::note("throughput", r.name, "msg/s", Better::Higher, median);
        }
        println!(
            "{:<30} {:>10} {:>8} {:>8} {:>8}",
            r.name,
            r.batch_median_ns.map_or_else(|| "-".to_owned(), |ns| m(1e9 / ns)),
            median.map_or_else(|| "-".to_owned(), m),
            v.first().map_or_else(|| "-".to_owned(), |x| m(*x)),
            v.last().map_or_else(|| "-".to_owned(), |x| m(*x)),
        );
    }
    for r in &s.tp_rows {
        println!("  {}: {}", r.name, r.notes);
    }
}

/// Each side's cost alone, and the uncontended mutex's.
fn print_split(s: &Summary) {
    println!();
    println!(
        "each side alone (one thread: publish k messages back to back, then poll them all, {} fragments per poll; \
         median of {} rounds): the ceiling a pub/sub pair could reach if moving the data between cores were free",
        TP_FRAGMENT_LIMIT, s.plan.split_rounds
    );
    println!(
        "{:<32} {:>8} {:>11} {:>8} {:>12}  retried publishes",
        "", "k", "publish ns", "poll ns", "ceiling M/s"
    );
    for r in &s.split {
        figures::ns("each side alone", &format!("{}: publish", r.name), r.publish_ns);
        figures::ns("each side alone", &format!("{}: poll", r.name), r.poll_ns);
        println!(
            "{:<32} {:>8} {:>11.1} {:>8.1} {:>12.1}  {}",
            r.name,
            r.k,
            r.publish_ns,
            r.poll_ns,
            1e3 / r.publish_ns.max(r.poll_ns),
            r.retries
        );
    }
    println!(
        "uncontended std Mutex try_lock + unlock (what aeron-rs's publish and poll paths paid per call; messaging takes none): {:.1} ns",
        s.mutex_ns
    );
}
