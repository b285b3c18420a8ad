//! The tuning calculators as a user runs them: `latency-probe nak` and `latency-probe buffers`.
//! Seed 000's measured profile comes out of its inputs, `--json -` carries every input and
//! output, a failed validity check exits 1, and bad input is one line and exit 2.

mod common;

use std::process::{Command, Output};

use common::bin;
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(bin("latency-probe"))
        .args(args)
        .env_remove("AERON_SOCKET_SO_RCVBUF")
        .env_remove("AERON_RCV_INITIAL_WINDOW_LENGTH")
        .output()
        .expect("latency-probe runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `args`, which must be refused: exit 2, one line on stderr that starts with the program
/// and carries each of `parts` (the flag, a piece of the fix), nothing on stdout.
fn refused(args: &[&str], parts: &[&str]) {
    let out = run(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("latency-probe"), "{args:?}: {err}");
    for p in parts {
        assert!(err.contains(p), "{args:?}: no {p:?} in {err}");
    }
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn nak_prints_the_seed_s_profile_three_ways_and_exits_0() {
    let out = run(&[
        "nak",
        "--rtt",
        "35us",
        "--budget",
        "1ms",
        "--receivers",
        "3",
        "--rate",
        "50k",
        "--msg-size",
        "224",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for line in [
        "AERON_NAK_MULTICAST_MAX_BACKOFF=500us",
        "AERON_NAK_MULTICAST_GROUP_SIZE=3",
        "AERON_RETRANSMIT_UNICAST_LINGER=2ms",
        "-Daeron.nak.multicast.max.backoff=500us",
        "-Daeron.retransmit.unicast.linger=2ms",
        "--driver-opt aeron.nak.multicast.max.backoff=500us",
        "PASS  isolated recoveries",
        "PASS  retransmit-store coverage",
        "PASS  implosion guard",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

#[test]
fn nak_json_holds_every_input_and_output() {
    let out = run(&[
        "nak",
        "--rtt",
        "100us",
        "--budget",
        "1ms",
        "--receivers",
        "3",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["inputs"]["rtt_ns"], 100_000);
    assert_eq!(v["inputs"]["budget_ns"], 1_000_000);
    assert_eq!(v["inputs"]["receivers"], 3);
    assert_eq!(v["chosen"]["nak_multicast_max_backoff_ns"], 500_000);
    assert_eq!(v["chosen"]["retransmit_unicast_linger_ns"], 2_000_000);
    assert_eq!(v["defaults"]["nak_multicast_max_backoff_ns"], 10_000_000);
    assert_eq!(v["double_loss_ns"], 2_700_000);
    assert_eq!(v["checks"].as_array().map(Vec::len), Some(4));
    assert!(v["checks"].as_array().unwrap().iter().all(|c| c["status"] == "PASS"));
}

#[test]
fn overlapping_recoveries_fail_with_exit_1_and_say_to_stop_the_loss_first() {
    let out = run(&[
        "nak", "--rtt", "35us", "--budget", "1ms", "--loss", "0.02", "--rate", "100k",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FAIL  isolated recoveries"), "{stdout}");
    assert!(stdout.contains("stop the loss first"), "{stdout}");
    assert_eq!(text(&out.stderr).lines().count(), 1);
}

#[test]
fn buffers_flag_a_cap_below_the_request_and_an_oversized_buffer() {
    let out = run(&[
        "buffers",
        "--rate",
        "50k",
        "--msg-size",
        "224",
        "--rtt",
        "35us",
        "--receivers",
        "3",
        "--rmem-max",
        "64k",
        "--wmem-max",
        "4m",
        "--so-rcvbuf",
        "32m",
        "--rcv-window",
        "128k",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  net.core.rmem_max"), "{stdout}");
    assert!(stdout.contains("sysctl -w net.core.rmem_max=33554432"), "{stdout}");
    assert!(stdout.contains("WARN  driver SO_RCVBUF"), "{stdout}");
    assert!(stdout.contains("larger is not better"), "{stdout}");
    // Seed 003 is about receive buffers: a large wmem_max is only checked as a cap.
    assert!(stdout.contains("PASS  net.core.wmem_max"), "{stdout}");
    // Without --budget the recovery is Aeron's default timers' double loss.
    assert!(stdout.contains("Aeron's default timers"), "{stdout}");
}

#[test]
fn buffers_for_the_seed_s_stream_pass_with_aeron_s_defaults() {
    let out = run(&[
        "buffers",
        "--rate",
        "50k",
        "--msg-size",
        "224",
        "--rtt",
        "35us",
        "--receivers",
        "3",
        "--budget",
        "1ms",
        "--rmem-max",
        "208k",
        "--wmem-max",
        "208k",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["bdp_bytes"], 448);
    assert_eq!(v["rcvbuf_bytes"], 65_536);
    assert_eq!(v["inputs"]["recovery_ns"], 2_570_000);
    assert_eq!(v["inputs"]["so_rcvbuf"], 131_072);
}

/// Without --budget, buffers uses Aeron's default timers, whatever the RTT.
#[test]
fn buffers_without_a_budget_take_any_rtt() {
    let out = run(&[
        "buffers",
        "--rate",
        "10k",
        "--rtt",
        "15ms",
        "--rmem-max",
        "1m",
        "--wmem-max",
        "1m",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("recovery 50.00 ms"), "{}", text(&out.stdout));
}

#[test]
fn bad_calculator_input_is_one_line_and_exit_2() {
    let cases: [(&[&str], &str, &str); 8] = [
        // Neither round-trip source: the error names both.
        (&["nak", "--budget", "1ms"], "--rtt <RTT>", "--channel <CHANNEL>"),
        (
            &["nak", "--rtt", "35us", "--budget", "1ms", "--loss", "1.5"],
            "--loss",
            "fraction from 0 to 1",
        ),
        (
            &["nak", "--rtt", "35us", "--budget", "1ms", "--receivers", "0"],
            "--receivers",
            "at least one",
        ),
        (
            &["nak", "--rtt", "100us", "--budget", "150us"],
            "--budget",
            "give at least 200.0 µs",
        ),
        (&["nak", "--rtt", "35", "--budget", "1ms"], "--rtt", "e.g. 35us"),
        (
            &["nak", "--rtt", "35us", "--budget", "1ms", "--term-length", "100000"],
            "--term-length",
            "power of two",
        ),
        (
            &["buffers", "--rate", "10k", "--rtt", "35us", "--receivers", "0"],
            "--receivers",
            "at least one",
        ),
        (
            &["nak", "--rtt", "35us", "--budget", "1ms", "--receivers", "1000000"],
            "--receivers",
            "give 1 to 100000",
        ),
    ];
    for (args, flag, fix) in cases {
        refused(args, &[flag, fix]);
    }
}

#[test]
fn doctor_prints_every_check_and_exits_0_only_without_a_fail() {
    let out = run(&["doctor", "--steal", "0", "--json", "-"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let checks = v["checks"].as_array().expect("checks");
    let names: Vec<&str> = checks.iter().filter_map(|c| c["check"].as_str()).collect();
    for name in [
        "cores",
        "isolation",
        "other tasks",
        "IRQs",
        "CPU governor",
        "transparent huge pages",
        "swap",
        "clock source",
        "hypervisor steal",
        "log space",
        "vm.max_map_count",
        "perf_event_paranoid",
        "socket buffers",
        "driver threads",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for c in checks {
        assert!(["PASS", "WARN", "FAIL"].contains(&c["status"].as_str().unwrap()), "{c}");
        assert!(
            c["status"] == "PASS" || !c["fix"].as_str().unwrap().is_empty(),
            "no fix: {c}"
        );
    }
    let failed = checks.iter().any(|c| c["status"] == "FAIL");
    assert_eq!(
        out.status.code(),
        Some(if failed { 1 } else { 0 }),
        "{}",
        text(&out.stderr)
    );
    // The embedded driver's settings are read back from it.
    let driver = v["request"]["driver"].as_array().expect("embedded driver settings");
    assert!(driver.iter().any(|p| p[0] == "aeron.threading.mode"), "{driver:?}");
    // The cores a run would pin, publisher first (as --cores takes them): the probe's
    // subscriber takes the last usable core, its publisher the one before.
    let usable = aeron_latency::messaging::available_cores();
    if let [.., publisher, subscriber] = usable[..] {
        assert_eq!(
            v["request"]["hot_cores"],
            serde_json::json!([publisher, subscriber]),
            "{}",
            v["request"]
        );
    }
}

#[test]
fn doctor_on_udp_checks_socket_buffers_and_nak_timers() {
    let out = run(&[
        "doctor",
        "--steal",
        "0",
        "--channel",
        "aeron:udp?endpoint=127.0.0.1:24999",
        "--json",
        "-",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let names: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["check"].as_str())
        .collect();
    for name in [
        "net.core.rmem_max",
        "net.core.wmem_max",
        "driver SO_RCVBUF",
        "NAK timers",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
}

#[test]
fn doctor_and_the_calculators_refuse_bad_input_with_one_line() {
    for (args, flag) in [
        (&["doctor", "--cores", "9999,0"][..], "--cores"),
        (&["doctor", "--steal=-1"][..], "--steal"),
        (&["doctor", "--msg-size", "0"][..], "--msg-size"),
        // Before the checks run and print, not after them.
        (&["doctor", "--json", "/nonexistent-dir/d.json"][..], "mkdir -p"),
        (
            &[
                "buffers",
                "--rate",
                "10k",
                "--rtt",
                "50us",
                "--json",
                "/nonexistent-dir/b.json",
            ][..],
            "mkdir -p",
        ),
        (
            &[
                "nak",
                "--rtt",
                "35us",
                "--budget",
                "1ms",
                "--json",
                "/nonexistent-dir/n.json",
            ][..],
            "mkdir -p",
        ),
        (&["loss", "--json", "/nonexistent-dir/l.json"][..], "mkdir -p"),
    ] {
        refused(args, &[flag]);
    }
}

/// Every probe run records doctor's checks and the driver's settings (with --driver-opt) in
/// its report's env.
#[test]
fn a_probe_report_carries_doctor_s_checks_in_env() {
    let dir = common::scratch("doctor-env");
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let out = Command::new(bin("latency-probe"))
        .args([
            "--duration",
            "0.3",
            "--rate",
            "2000",
            "--msg-size",
            "64",
            "--warmup",
            "100",
            "--idle",
            "yield",
        ])
        .args(["--diagnostics", "off", "--floor", "0", "--live", "off"])
        .args([
            "--driver-opt",
            "aeron.nak.multicast.max.backoff=500us",
            "--driver-opt",
            "AERON_SOCKET_SO_RCVBUF=64k",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("probe runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let checks = v["env"]["doctor"].as_array().expect("env.doctor");
    assert!(checks.iter().any(|c| c["check"] == "log space"), "{checks:?}");
    assert!(text(&out.stdout).contains("doctor: "), "{}", text(&out.stdout));
    // The embedded driver's settings, with the options given, are recorded.
    let settings = v["env"]["driver_settings"].as_array().expect("env.driver_settings");
    for (k, want) in [
        ("aeron.nak.multicast.max.backoff", "500us"),
        ("aeron.socket.so_rcvbuf", "65536"),
    ] {
        assert!(
            settings.iter().any(|p| p[0] == k && p[1] == want),
            "{k}={want} in {settings:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_driver_options_are_refused_before_anything_starts() {
    for (args, fix) in [
        (&["--driver-opt", "aeron.bogus=1"][..], "not a driver setting"),
        (
            &["--driver-opt", "aeron.retransmit.unicast.linger=soon"][..],
            "a duration such as 500us",
        ),
        (&["--driver-opt", "nokeyvalue"][..], "give KEY=VALUE"),
        (
            &[
                "--dir",
                "/dev/shm/nowhere",
                "--driver-opt",
                "aeron.nak.unicast.delay=1us",
            ][..],
            "AERON_NAK_UNICAST_DELAY",
        ),
    ] {
        refused(args, &["--driver-opt", fix]);
    }
}

/// A short lossy arm over real UDP: the receiver's driver drops data frames, NAKs them, the
/// publisher's driver retransmits, and nothing is lost for good.
#[test]
fn a_short_loss_arm_naks_retransmits_and_loses_nothing() {
    let out = run(&[
        "loss",
        "--receivers",
        "1",
        "--duration",
        "1",
        "--rate",
        "5000",
        "--warmup",
        "1000",
        "--loss",
        "0.005",
        "--arms",
        "derived",
        "--port",
        "24620",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let arm = &v["arms"][0];
    assert_eq!(arm["arm"], "derived");
    assert_eq!(arm["complete"], true, "{arm}");
    assert_eq!(arm["lost"], 0, "{arm}");
    assert_eq!(arm["received"], 6000, "{arm}");
    assert!(arm["naks_sent"].as_i64().unwrap() > 0, "{arm}");
    assert!(arm["retransmits_sent"].as_i64().unwrap() > 0, "{arm}");
    assert_eq!(v["derived"]["chosen"]["nak_multicast_max_backoff_ns"], 500_000);
}

#[test]
fn bad_loss_experiment_input_is_one_line_and_exit_2() {
    for (args, flag) in [
        (&["loss", "--loss", "2"][..], "--loss"),
        (&["loss", "--receivers", "0"][..], "--receivers"),
        (&["loss", "--arms", "fast"][..], "--arms"),
        (&["loss", "--rtt", "1ms", "--budget", "1ms"][..], "--budget"),
        (&["loss", "--unicast", "--receivers", "2"][..], "--unicast"),
        (&["loss", "--duration", "0"][..], "--duration 0"),
        (&["loss", "--duration", "0.5", "--rate", "1"][..], "plans no message"),
    ] {
        refused(args, &[flag]);
    }
}

/// Without --rtt, nak measures the round trip on --channel with a short probe run.
#[test]
fn nak_measures_the_rtt_on_a_channel_when_not_given() {
    let out = run(&[
        "nak",
        "--channel",
        "aeron:udp?endpoint=localhost:24996",
        "--budget",
        "20ms",
        "--receivers",
        "1",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let rtt = v["inputs"]["rtt_ns"].as_u64().unwrap();
    assert!(rtt > 0 && rtt < 10_000_000, "{rtt}");
    assert!(text(&out.stderr).contains("RTT measured on aeron:udp?endpoint=localhost:24996"));
    // Neither: one line naming --rtt.
    let out = run(&["nak", "--budget", "1ms"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--rtt"), "{}", text(&out.stderr));
}

/// The same over unicast: one receiver, its NAKs go straight to the publisher.
#[test]
fn a_short_unicast_loss_arm_naks_and_loses_nothing() {
    let out = run(&[
        "loss",
        "--unicast",
        "--receivers",
        "1",
        "--duration",
        "1",
        "--rate",
        "5000",
        "--warmup",
        "1000",
        "--loss",
        "0.005",
        "--arms",
        "default",
        "--port",
        "24630",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["channel"], "aeron:udp?endpoint=127.0.0.1:24630");
    let arm = &v["arms"][0];
    assert_eq!(
        (arm["complete"].as_bool(), arm["lost"].as_u64()),
        (Some(true), Some(0)),
        "{arm}"
    );
    assert!(arm["naks_sent"].as_i64().unwrap() > 0, "{arm}");
}
