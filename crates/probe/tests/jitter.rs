//! The jitter detector against planted causes, as a user runs it: `latency-probe` with a clean
//! inline delivery, `--delivery channel` and `--hot-path-lock`, each with perf and with the
//! `/proc` fallback.
//!
//! The hot threads busy-spin (`--idle spin`, the default a user runs): a spinning loop never
//! blocks by itself, which is what lets the `/proc` fallback call voluntary context switches
//! blocking calls. Spinning threads must not share the two cores with another spinning run, so
//! the tests in this file run one at a time (cargo runs test binaries one after another).

mod common;

use std::sync::Mutex;

use common::{read_json, run_probe, stderr, tmp_json};
use latency_probe::model::Mode;

use latency_probe::measure::monitor::Monitor;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs latency-probe for 1 s at 5,000 msg/s with `extra` flags and returns its JSON report.
fn probe(tag: &str, extra: &[&str]) -> Value {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let json = tmp_json(tag);
    let mut args = vec![
        "--duration",
        "1",
        "--rate",
        "5000",
        "--warmup",
        "1000",
        "--idle",
        "spin",
        "--term-length",
        "1048576",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--hiccup") {
        args.extend(["--hiccup", "off"]);
    }
    let out = run_probe(&args);
    assert!(out.status.success(), "latency-probe {args:?} failed: {}", stderr(&out));
    read_json(&json)
}

/// Whether perf may be used here (root or CAP_PERFMON); tests of the perf path say so and
/// pass without running when it may not, unless `LATENCY_PROBE_REQUIRE_PERF=1` (set by
/// `make test` where perf works) makes that a failure.
fn perf_permitted() -> bool {
    match Monitor::new(Mode::Perf) {
        Ok(_) => true,
        Err(why) if std::env::var_os("LATENCY_PROBE_REQUIRE_PERF").is_some_and(|v| v == "1") => {
            panic!("LATENCY_PROBE_REQUIRE_PERF=1 but perf is not usable: {why}")
        }
        Err(why) => {
            eprintln!("perf not permitted, perf path not tested here: {why}");
            false
        }
    }
}

fn hot_threads(v: &Value) -> Vec<&Value> {
    v["jitter"]["threads"]
        .as_array()
        .expect("jitter.threads")
        .iter()
        .filter(|t| matches!(t["role"].as_str(), Some("publisher" | "subscriber" | "consumer")))
        .collect()
}

fn thread<'a>(v: &'a Value, role: &str) -> &'a Value {
    v["jitter"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["role"] == role)
        .unwrap_or_else(|| panic!("no {role} thread in {}", v["jitter"]["threads"]))
}

fn findings<'a>(v: &'a Value, cause: &str) -> Vec<&'a Value> {
    v["jitter"]["verdict"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["cause"] == cause)
        .collect()
}

/// Per-group counters of `tid` add up to its total.
fn groups_add_up(v: &Value, tid: i64, field: &str) {
    let total = thread_by_tid(v, tid)["total"][field].as_u64().unwrap();
    let sum: u64 = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["jitter"]["threads"].as_array())
        .flat_map(|ts| ts.iter())
        .filter(|t| t["tid"] == tid)
        .map(|t| t["counts"][field].as_u64().unwrap())
        .sum();
    assert_eq!(sum, total, "groups of tid {tid} add up to the total {field}");
}

fn thread_by_tid(v: &Value, tid: i64) -> &Value {
    v["jitter"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"] == tid)
        .unwrap()
}

fn clean_inline(mode: &str) {
    let v = probe(&format!("clean-{mode}"), &["--diagnostics", mode]);
    assert_eq!(v["lost"], 0);
    let j = &v["jitter"];
    assert_eq!(j["source"]["name"], mode);
    assert_eq!(j["verdict"]["futex"], "clean", "verdict: {}", j["verdict"]);
    for t in hot_threads(&v) {
        if mode == "perf" {
            assert_eq!(t["total"]["futex"], 0, "{t}");
        } else {
            // A spinning hot thread does not block (a stray wait on a page may happen).
            let vol = t["total"]["voluntary"].as_u64().unwrap();
            assert!(vol < latency_probe::analysis::verdict::PROC_BLOCKS_MIN, "{t}");
        }
    }
    assert!(findings(&v, "futex").is_empty());
    // Both sides were watched, with their helpers.
    for role in ["subscriber", "publisher", "conductor", "driver"] {
        thread(&v, role);
    }
    let sub = thread(&v, "subscriber")["tid"].as_i64().unwrap();
    groups_add_up(&v, sub, "involuntary");
    groups_add_up(&v, sub, "minor_faults");
    let reads = j["probe_cost"]["reads"].as_u64().unwrap();
    assert!(
        (4..=42).contains(&reads),
        "at most 21 reads a side (20 group starts and the end): {reads}"
    );
    let rows = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g.get("jitter").is_some())
        .count();
    assert_eq!(rows, 20, "every group row carries its counters");
    assert!(j["hiccup"]["status"]
        .as_str()
        .unwrap()
        .starts_with("skipped: --hiccup off"));
}

#[test]
fn a_clean_inline_run_is_clean_with_perf() {
    if perf_permitted() {
        clean_inline("perf");
    }
}

#[test]
fn a_clean_inline_run_is_clean_with_the_proc_fallback() {
    clean_inline("proc");
}

fn channel(mode: &str) {
    let v = probe(
        &format!("channel-{mode}"),
        &["--diagnostics", mode, "--delivery", "channel"],
    );
    assert_eq!(v["lost"], 0);
    let j = &v["jitter"];
    assert_eq!(j["verdict"]["futex"], "futex-driven", "verdict: {}", j["verdict"]);
    let consumer = thread(&v, "consumer");
    assert!(consumer["total"]["voluntary"].as_u64().unwrap() > 0, "{consumer}");
    if mode == "perf" {
        assert!(consumer["total"]["futex"].as_u64().unwrap() > 0, "{consumer}");
    }
    let f = findings(&v, "futex");
    let first = f.first().expect("a futex finding");
    assert!(
        first["thread"]
            .as_str()
            .unwrap()
            .contains("consumer of the channel hand-off"),
        "{first}"
    );
    assert!(first["fix"].as_str().unwrap().contains("--delivery inline"), "{first}");
    assert!(j["verdict"]["headline"]
        .as_str()
        .unwrap()
        .starts_with("futex-driven jitter: latency-sub"));
}

#[test]
fn channel_delivery_is_named_futex_driven_with_perf() {
    if perf_permitted() {
        channel("perf");
    }
}

#[test]
fn channel_delivery_is_named_futex_driven_with_the_proc_fallback() {
    channel("proc");
}

fn lock(mode: &str) {
    let v = probe(&format!("lock-{mode}"), &["--diagnostics", mode, "--hot-path-lock"]);
    assert_eq!(v["lost"], 0);
    assert_eq!(
        v["jitter"]["verdict"]["futex"], "futex-driven",
        "{}",
        v["jitter"]["verdict"]
    );
    thread(&v, "lock-helper");
    let f = findings(&v, "futex");
    let sub = f
        .iter()
        .find(|f| f["thread"].as_str().unwrap().contains("subscriber poll loop"))
        .expect("the subscriber is named");
    assert!(sub["fix"].as_str().unwrap().contains("lock-helper"), "{sub}");
}

#[test]
fn a_shared_hot_path_lock_is_named_futex_driven_with_perf() {
    if perf_permitted() {
        lock("perf");
    }
}

#[test]
fn a_shared_hot_path_lock_is_named_futex_driven_with_the_proc_fallback() {
    lock("proc");
}

#[test]
fn diagnostics_off_leaves_the_jitter_section_out() {
    let v = probe("off", &["--diagnostics", "off"]);
    assert_eq!(v["lost"], 0);
    assert!(v.get("jitter").is_none(), "{}", v["jitter"]);
    assert!(v["groups"][0].get("jitter").is_none());
}

#[test]
fn a_hiccup_core_that_does_not_exist_is_refused() {
    let out = run_probe(&["--duration", "1", "--hiccup", "4096"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("--hiccup 4096: no such core"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn perf_without_permission_is_refused_with_the_reason() {
    if perf_permitted() {
        return; // cannot be checked where perf works
    }
    let out = run_probe(&["--duration", "1", "--diagnostics", "perf"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--diagnostics perf"));
}

#[test]
fn a_forced_hiccup_meter_reports_its_gaps_per_group_and_warns() {
    let core = aeron_latency::messaging::available_cores()[0].to_string();
    let v = probe("hiccup", &["--diagnostics", "proc", "--hiccup", &core]);
    let h = &v["jitter"]["hiccup"];
    assert_eq!(h["status"], format!("ran on core {core}"), "{h}");
    assert!(h["iterations"].as_u64().unwrap() > 0);
    assert_eq!(
        h["gaps"]["count"], h["iterations"],
        "every iteration's gap is in the histogram"
    );
    let windows = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["jitter"].get("hiccup").is_some())
        .count();
    assert_eq!(windows, 20, "each group carries the meter's window");
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("spins on a hot thread's core")),
        "{notes:?}"
    );
}
