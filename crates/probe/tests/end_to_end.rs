//! The probe binaries as a user runs them: separate processes over aeron:ipc.
//! Every run uses its own embedded driver (or one started here), a small term and
//! yield-idling hot threads, so the tests can run in parallel on two cores.

mod common;

use std::time::{Duration, Instant};

use common::{embedded_driver, read_json, run, stderr, tmp_json};

#[test]
fn two_hundred_thousand_messages_between_separate_processes_arrive_none_lost_all_in_order() {
    let json = tmp_json("200k");
    let out = run(
        "latency-probe",
        &[
            "--duration",
            "2",
            "--rate",
            "100000",
            "--warmup",
            "0",
            "--msg-size",
            "64",
            "--idle",
            "yield",
            "--term-length",
            "1048576",
            "--stream",
            "2001",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "latency-probe failed: {}", stderr(&out));
    let r = read_json(&json);
    assert_eq!(r["schema_version"], latency_probe::model::SCHEMA_VERSION, "{r}");
    assert_eq!(r["sent"], 200_000, "{r}");
    assert_eq!(r["received"], 200_000);
    assert_eq!(r["lost"], 0);
    assert_eq!(r["duplicates"], 0);
    assert_eq!(r["reordered"], 0);
    assert_eq!(r["decode_errors"], 0);
    assert_eq!(r["latency_ns"]["count"], 200_000);
    assert_eq!(r["latency_actual_ns"]["count"], 200_000);
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 20);
    let group_total: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(group_total, 200_000, "the groups add up to the overall count");
    assert_eq!(groups[0]["first_seq"], 0);
    assert_eq!(groups[19]["last_seq"], 199_999);
    assert_eq!(r["offer"]["ok"], 200_000, "one successful claim per message");
    assert!(r["rate_target"].as_f64().unwrap() > 99_000.0);
    for key in [
        "cpu_model",
        "cores",
        "kernel",
        "driver_kind",
        "driver_version",
        "client",
    ] {
        assert!(!r["env"][key].is_null(), "env.{key} missing");
    }
    assert!(r["timing_model"].as_str().unwrap().contains("CLOCK_MONOTONIC"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("20 time-ordered groups") && text.contains("p99.99"),
        "{text}"
    );
}

#[test]
fn latency_sub_without_a_driver_fails_with_the_cause_and_the_fix() {
    let out = run("latency-sub", &["--dir", "/nonexistent", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(
        e.contains("no media driver at /nonexistent") && e.contains("cnc.dat"),
        "{e}"
    );
}

#[test]
fn bad_flags_are_rejected_with_one_line_naming_the_flag() {
    for (args, needle) in [
        (&["--rate", "0"][..], "--rate 0"),
        (&["--duration", "0"][..], "--duration 0"),
        (&["--msg-size", "10"][..], "--msg-size"),
        (&["--pub-core", "999"][..], "--pub-core 999"),
    ] {
        let out = run("latency-probe", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = stderr(&out);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
    let out = run("latency-pub", &["--idle", "busy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("spin, noop, yield"), "{}", stderr(&out));
}

#[test]
fn two_probe_runs_back_to_back_on_one_driver_and_stream_do_not_stall() {
    let driver = embedded_driver(1 << 20, None);
    let dir = driver.dir().to_str().unwrap().to_owned();
    for round in 0..2 {
        let json = tmp_json(&format!("b2b-{round}"));
        let started = Instant::now();
        let out = run(
            "latency-probe",
            &[
                "--dir",
                &dir,
                "--duration",
                "0.5",
                "--rate",
                "20000",
                "--warmup",
                "1000",
                "--idle",
                "yield",
                "--stream",
                "2002",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
        let r = read_json(&json);
        assert_eq!(r["lost"], 0);
        assert_eq!(r["received"], 11_000);
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "round {round} took {:?}: leftovers of the previous run stalled it",
            started.elapsed()
        );
    }
}

#[test]
fn round_trip_mode_times_every_echo_on_pings_clock_and_relates_it_to_the_floor() {
    let json = tmp_json("rtt");
    let out = run(
        "latency-probe",
        &[
            "--mode",
            "rtt",
            "--duration",
            "1",
            "--rate",
            "20000",
            "--warmup",
            "1000",
            "--msg-size",
            "64",
            "--idle",
            "yield",
            "--term-length",
            "65536",
            "--stream",
            "2101",
            "--floor",
            "0.05",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "latency-probe --mode rtt failed: {}",
        stderr(&out)
    );
    let r = read_json(&json);
    assert_eq!(r["mode"], "rtt", "{r}");
    assert!(r["timing_model"].as_str().unwrap().starts_with("round trip"), "{r}");
    assert_eq!(r["sent"], 21_000, "{r}");
    assert_eq!(r["received"], 21_000, "every ping's echo came back");
    assert_eq!(r["lost"], 0);
    assert_eq!(r["duplicates"], 0);
    assert_eq!(r["reordered"], 0);
    assert_eq!(r["latency_ns"]["count"], 20_000);
    let groups = r["groups"].as_array().unwrap();
    let group_total: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(group_total, 20_000, "the groups add up to the overall count");
    assert_eq!(r["offer"]["ok"], 21_000, "one successful claim per ping");
    assert_eq!(r["latency_actual_ns"]["count"], 20_000);
    assert_eq!(r["publisher"]["sent"], 21_000, "ping's own report is merged in");
    // Pong's echo publication and ping's echo image were pre-faulted too, and both hot
    // threads' stacks.
    let pre = r["faults"]["prefaulted"].as_array().unwrap();
    assert_eq!(pre.len(), 6, "{pre:?}");
    let stacks = pre
        .iter()
        .filter(|p| p.as_str().unwrap().contains("hot thread's stack"))
        .count();
    assert_eq!(stacks, 2, "{pre:?}");
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("pong's one-way view")),
        "{notes:?}"
    );
    let floor = &r["floor"];
    assert!(
        floor["before"]["round_trip_ns"]["count"].as_u64().unwrap() > 100,
        "{floor}"
    );
    assert!(
        floor["after"]["round_trip_ns"]["count"].as_u64().unwrap() > 100,
        "{floor}"
    );
    let ratios = floor["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 6, "{floor}");
    let p50 = r["latency_ns"]["p50"].as_f64().unwrap() / floor["combined_ns"]["p50"].as_f64().unwrap();
    let got = ratios[0][1].as_f64().unwrap();
    assert!((got - p50).abs() <= 1e-9 * p50.max(1.0), "{got} vs {p50}: {floor}");
}

/// Below 64 bytes the probe sends compact samples (seq and intended time; the send time in the
/// frame's reserved value; the run's first message and the end marker full): every accounting
/// rule holds one-way and round trip, and the actual latency is read from the stamp (never
/// above the latency from the intended time, message by message, so at every percentile).
#[test]
fn compact_samples_are_accounted_like_full_ones_one_way_and_round_trip() {
    for (mode, size, stream) in [("one-way", "40", "2201"), ("rtt", "32", "2202")] {
        let json = tmp_json(&format!("compact-{mode}"));
        let args = format!(
            "--mode {mode} --duration 1 --rate 20000 --warmup 1000 --msg-size {size} --idle yield \
             --term-length 65536 --stream {stream} --floor 0.05 --json {}",
            json.display()
        );
        let out = run("latency-probe", &args.split_whitespace().collect::<Vec<_>>());
        assert!(out.status.success(), "{mode} at {size} B failed: {}", stderr(&out));
        let r = read_json(&json);
        assert_eq!(r["msg_size"], size.parse::<u64>().unwrap(), "{r}");
        assert_eq!(r["sent"], 21_000, "{mode}: {r}");
        assert_eq!(r["received"], 21_000, "{mode}");
        assert_eq!(r["warmup_received"], 1_000, "{mode}");
        for zero in ["lost", "duplicates", "reordered", "decode_errors"] {
            assert_eq!(r[zero], 0, "{mode}: {zero}");
        }
        assert_eq!(r["offer"]["ok"], 21_000, "{mode}: one claim per message");
        assert_eq!(r["latency_ns"]["count"], 20_000, "{mode}");
        assert_eq!(r["latency_actual_ns"]["count"], 20_000, "{mode}");
        let groups = r["groups"].as_array().unwrap();
        let total: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
        assert_eq!(total, 20_000, "{mode}: the groups add up");
        for p in ["p50", "p90", "p99", "max"] {
            let (intended, actual) = (&r["latency_ns"][p], &r["latency_actual_ns"][p]);
            assert!(
                actual.as_u64().unwrap() <= intended.as_u64().unwrap(),
                "{mode} {p}: {actual} > {intended}"
            );
        }
    }
}

/// `--publication` picks the publication both ping and pong write with; either carries every
/// round trip, and the report says which one did (`shared`, the flag's old name for the
/// concurrent one, still works and is reported by Aeron's name).
#[test]
fn both_publications_carry_every_round_trip_and_the_report_names_the_one_used() {
    for (publication, named, stream) in [
        ("exclusive", "exclusive", "2111"),
        ("concurrent", "concurrent", "2121"),
        ("shared", "concurrent", "2131"),
    ] {
        let json = tmp_json(&format!("rtt-{publication}"));
        let out = run(
            "latency-probe",
            &[
                "--mode",
                "rtt",
                "--publication",
                publication,
                "--duration",
                "0.5",
                "--rate",
                "20000",
                "--warmup",
                "1000",
                "--msg-size",
                "64",
                "--idle",
                "yield",
                "--term-length",
                "65536",
                "--stream",
                stream,
                "--floor",
                "0.05",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "--publication {publication}: {}", stderr(&out));
        let r = read_json(&json);
        assert_eq!(r["publisher"]["publication"], named, "{r}");
        assert_eq!(
            (r["sent"].as_u64(), r["received"].as_u64()),
            (Some(11_000), Some(11_000)),
            "{r}"
        );
        assert_eq!(r["lost"], 0);
        assert_eq!(r["reordered"], 0);
    }
}

#[test]
fn rtt_pong_refuses_the_ping_stream_as_its_echo_stream() {
    let out = run(
        "latency-probe",
        &[
            "--mode",
            "rtt",
            "--stream",
            "7",
            "--pong-stream",
            "7",
            "--duration",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("--pong-stream 7 is the ping stream on the same channel"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "one line: {e}");
}

/// `--plant-delay-ns` makes the publisher commit each message that long after its send stamp:
/// every measured message's latency, from the intended and from the actual send time, is at
/// least the planted delay, every message still arrives, and the report names it as planted.
#[test]
fn a_planted_publisher_delay_is_in_both_latency_columns_and_named_in_the_report() {
    let json = tmp_json("plant-delay");
    let out = run(
        "latency-probe",
        &[
            "--duration",
            "0.5",
            "--rate",
            "2000",
            "--warmup",
            "100",
            "--msg-size",
            "64",
            "--idle",
            "yield",
            "--term-length",
            "65536",
            "--stream",
            "2141",
            "--floor",
            "0",
            "--plant-delay-ns",
            "50000",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let r = read_json(&json);
    assert_eq!((r["sent"].as_u64(), r["lost"].as_u64()), (Some(1_100), Some(0)), "{r}");
    assert_eq!(r["publisher"]["plant_delay_ns"], 50_000);
    for column in ["latency_ns", "latency_actual_ns"] {
        let min = r[column]["min"].as_f64().unwrap();
        assert!(min >= 50_000.0, "{column} min {min} ns: the planted 50 us is missing");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("planted: the publisher busy-waits 50.00 µs"), "{text}");
    // A delay past a second is a typo, refused before anything starts.
    let bad = run("latency-pub", &["--plant-delay-ns", "2000000000"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("--plant-delay-ns 2000000000: at most"),
        "{}",
        stderr(&bad)
    );
}
