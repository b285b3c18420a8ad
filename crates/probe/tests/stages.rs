//! `latency-probe stages` against real Aeron archives (Aeron's Java ArchivingMediaDriver):
//! every measured message is timed at every stage, the stages come in order, and an archive
//! killed mid-run is reported with nothing left running.
//!
//! They need Java and the aeron-all jar (scripts/bootstrap.sh installs both). Where those are
//! missing the tests say so and pass without running, unless `LATENCY_PROBE_REQUIRE_JAVA=1`
//! (set by `make test` when the bootstrap installed them) makes that a failure. The runs are
//! CPU-heavy (two JVMs and two hot threads on this machine's two cores), so they run one at a
//! time, each on its own ports.

mod common;

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{read_json, run_probe, stderr, tmp_json};
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn java_here() -> bool {
    match latency_probe::run::archive::Java::find() {
        Ok(_) => true,
        Err(why) if std::env::var_os("LATENCY_PROBE_REQUIRE_JAVA").is_some_and(|v| v == "1") => {
            panic!("LATENCY_PROBE_REQUIRE_JAVA=1 but the archive cannot run: {why}")
        }
        Err(why) => {
            eprintln!("stages not tested here: {why}");
            false
        }
    }
}

/// The lock that runs the archive tests one at a time, once Java is known to be here (`None`:
/// it is not, and the test passes without running; see [`java_here`]).
fn one_at_a_time_with_java() -> Option<std::sync::MutexGuard<'static, ()>> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    java_here().then_some(one)
}

/// Waits up to `limit` for `child` to exit; returns its status and everything it wrote on stderr.
fn finish(child: &mut std::process::Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let status = latency_probe::run::process::wait_bounded(child, limit).expect("it exits");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut err).unwrap();
    }
    (status, err)
}

/// Runs `latency-probe stages` for 1 s at 5,000 msg/s with `extra` flags; returns its report.
fn stages(tag: &str, port: u16, extra: &[&str]) -> Value {
    let json = tmp_json(tag);
    let port = port.to_string();
    let mut args = vec![
        "stages",
        "--duration",
        "1",
        "--rate",
        "5000",
        "--warmup",
        "2000",
        "--control-port",
        &port,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run_probe(&args);
    assert!(
        out.status.success(),
        "latency-probe {args:?} failed: {}\n{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    read_json(&json)
}

/// Every run timed every measured message at every stage, from the intended and from the actual
/// send time, and on both bases each stage's p50 is at least the p50 of the stage it comes
/// after. Two stages are not ordered: latency-sub and archive A are two consumers of the same
/// log, each after the offer, neither after the other (on a loaded machine the archive got a
/// message before latency-sub at p50: a CI run had received 1,274 µs and recorded 1,177 µs).
/// So "received" and "recorded by archive A" are each checked against "offer returned" (a round
/// trip has no such stage), the echo against "received", and the replica against the archive
/// it copies (per message too: the run is incomplete if a replica seems to hold a message
/// before its source). And a message is never sent before it is due: from the actual send time
/// no stage's p50 is above its p50 from the intended one.
fn every_message_at_every_stage(v: &Value, syncs: &[u64], names: &[&str]) {
    assert_eq!(v["complete"], true, "{v}");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), syncs.len());
    for (run, sync) in runs.iter().zip(syncs) {
        assert_eq!(run["sync"], *sync);
        let measured = run["measured"].as_u64().unwrap();
        assert_eq!(measured, 5_000, "1 s at 5,000 msg/s");
        let stages = run["stages"].as_array().unwrap();
        let got: Vec<&str> = stages.iter().map(|s| s["stage"].as_str().unwrap()).collect();
        assert_eq!(got, names);
        let p50 = |name: &str, basis: &str| {
            let s = stages.iter().find(|s| s["stage"] == name)?;
            let s = if basis == "actual" { &s["actual"] } else { s };
            s["latency_ns"]["p50"].as_u64()
        };
        for s in stages {
            let name = s["stage"].as_str().unwrap();
            assert_eq!(s["count"], measured, "every measured message at {name}: {s}");
            assert_eq!(
                s["actual"]["count"], measured,
                "every measured message at {name} from its actual send time: {s}"
            );
            let after = match name {
                "offer returned" => None,
                "replicated to archive B" => Some("recorded by archive A"),
                "echoed back" => Some("received"),
                _ => Some("offer returned"),
            };
            for basis in ["intended", "actual"] {
                let this = p50(name, basis).unwrap();
                if let Some(before) = after.and_then(|a| p50(a, basis)) {
                    assert!(
                        this >= before,
                        "{name} p50 {this} ns from the {basis} send time before {after:?}'s {before} ns"
                    );
                }
            }
            assert!(
                p50(name, "actual").unwrap() <= p50(name, "intended").unwrap(),
                "{name}: from the actual send time slower than from the intended one: {s}"
            );
            assert!(s["in_flight"].as_f64().unwrap() > 0.0, "{s}");
            assert!(!s["guarantees"].as_str().unwrap().is_empty());
        }
        let w = &run["watcher"];
        assert!(
            w["reads"].as_u64().unwrap() > 0 && w["cpu_ns"].as_u64().unwrap() > 0,
            "{w}"
        );
    }
}

#[test]
fn one_archive_times_every_message_at_sync_0_and_1() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let v = stages("one-archive", 18_110, &["--sync", "0,1"]);
    every_message_at_every_stage(&v, &[0, 1], &["offer returned", "received", "recorded by archive A"]);
}

/// Compact samples (32 B) in the stages mode: every measured message timed at every stage.
/// (The first message is a full one, so later frames lie 32 bytes further on than in a uniform
/// run; `run::frames`' tests check that mapping, which this run is too coarse to catch.)
#[test]
fn compact_samples_are_timed_at_every_stage() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let v = stages("compact", 18_170, &["--sync", "0", "--msg-size", "32"]);
    every_message_at_every_stage(&v, &[0], &["offer returned", "received", "recorded by archive A"]);
}

#[test]
fn round_trips_add_the_echo_stage() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let v = stages("rtt", 18_130, &["--sync", "0", "--mode", "rtt"]);
    every_message_at_every_stage(&v, &[0], &["received", "echoed back", "recorded by archive A"]);
    assert_eq!(v["runs"][0]["rtt"], true);
}

#[test]
fn a_replica_times_every_message_after_the_archive_it_copies() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let v = stages("replica", 18_120, &["--sync", "0,1", "--replicate"]);
    every_message_at_every_stage(
        &v,
        &[0, 1],
        &[
            "offer returned",
            "received",
            "recorded by archive A",
            "replicated to archive B",
        ],
    );
}

/// The pids of running `ArchiveStage` helpers whose command line holds `needle`.
fn helpers(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("ArchiveStage") && cmd.contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// A long `latency-probe stages` run at 5,000 msg/s (2,000 warm-up), stderr piped, with `args`.
fn long_run(args: &[&str]) -> std::process::Child {
    Command::new(common::bin("latency-probe"))
        .args(["stages", "--rate", "5000", "--warmup", "2000"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("latency-probe starts")
}

/// The archives' Aeron directories latency-probe `pid` left under /dev/shm.
fn shm_left_by(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("latency-stages-{pid}-")))
        .collect()
}

#[test]
fn an_archive_killed_mid_run_is_reported_and_nothing_is_left_running() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let port = "18130";
    let mut child = long_run(&["--sync", "0", "--duration", "20", "--control-port", port, "--replicate"]);
    let probe_pid = child.id();
    // Archive A is the helper on this control port (B replicates from it: --replicate-from).
    let needle = format!("--control-port {port} ");
    let deadline = Instant::now() + Duration::from_secs(60);
    let a = loop {
        // Once B runs too, the run is under way.
        let a = helpers(&needle);
        if a.len() == 1 && !helpers(&format!("--replicate-from {port}")).is_empty() {
            break a[0];
        }
        assert!(Instant::now() < deadline, "the archives never came up");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(3));
    let killed = Command::new("kill").args(["-9", &a.to_string()]).status().unwrap();
    assert!(killed.success());
    let (status, err) = finish(&mut child, Duration::from_secs(120));
    assert_eq!(status.code(), Some(1), "exit 1 (incomplete): {err}");
    assert!(err.contains("archive A exited"), "names archive A: {err}");
    assert!(helpers(port).is_empty(), "an archive was left running");
    let left = shm_left_by(probe_pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn no_java_is_one_line_with_the_fix_and_exit_2() {
    let out = Command::new(common::bin("latency-probe"))
        .args(["stages", "--duration", "1"])
        .env_remove("JAVA_HOME")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("latency-probe stages: no java found") && err.contains("openjdk-17-jre-headless"),
        "{err}"
    );
}

#[test]
fn a_java_that_fails_to_start_the_archive_is_named_and_leaves_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // A stand-in `java` that fails at once, as a broken JVM would.
    let home = common::scratch("fake-java");
    std::fs::create_dir_all(home.join("bin")).unwrap();
    let java = home.join("bin/java");
    std::fs::write(
        &java,
        "#!/bin/sh\necho 'Error: could not create the Java Virtual Machine.' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&java, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let jar = home.join("aeron-all.jar");
    std::fs::write(&jar, b"").unwrap();
    let child = Command::new(common::bin("latency-probe"))
        .args(["stages", "--duration", "1", "--control-port", "18140"])
        .env("JAVA_HOME", &home)
        .env("AERON_ALL_JAR", &jar)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("archive A exited") && err.contains("could not create the Java Virtual Machine"),
        "{err}"
    );
    assert!(helpers("18140").is_empty());
    let work = std::env::temp_dir().join(format!("latency-stages-{pid}"));
    assert!(!work.exists(), "{} was left behind", work.display());
    assert!(!std::path::Path::new(&format!("/dev/shm/latency-stages-{pid}-0-1")).exists());
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_busy_port_is_refused_before_anything_starts() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let _taken = std::net::UdpSocket::bind(("127.0.0.1", 18_150)).unwrap();
    let out = run_probe(&["stages", "--duration", "1", "--control-port", "18150"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("archive A: UDP port 18150 on 127.0.0.1 is taken") && err.contains("--control-port"),
        "{err}"
    );
    assert!(helpers("18150").is_empty());
}

#[test]
fn sigterm_stops_the_run_and_leaves_nothing_behind() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let port = "18160";
    let mut child = long_run(&["--sync", "0,1", "--duration", "30", "--control-port", port]);
    let probe_pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Mid-run: once latency-pub (a child of latency-probe) is sending.
    while !children_named(probe_pid, "latency-pub") {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    let sent = Command::new("kill")
        .args(["-TERM", &probe_pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let started = Instant::now();
    let (status, err) = finish(&mut child, Duration::from_secs(60));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it stopped in {:?}, not at once",
        started.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted (SIGINT or SIGTERM)"), "{err}");
    assert!(helpers(port).is_empty(), "an archive was left running");
    let left = shm_left_by(probe_pid);
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!std::env::temp_dir()
        .join(format!("latency-stages-{probe_pid}"))
        .exists());
    assert!(!children_named(probe_pid, "latency-pub") && !children_named(probe_pid, "latency-sub"));
}

/// Whether a process named `name` whose parent is `parent` runs.
fn children_named(parent: u32, name: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            return false;
        };
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        &stat[open + 1..close] == name && ppid == Some(parent)
    })
}

/// A run whose recordings cannot fit where `--archive-dir` points is refused before anything
/// starts (no Java needed to get that far), with what it needs, what is free and the fixes; so
/// is an `--archive-dir` that is not a directory.
#[test]
fn an_archive_dir_without_room_is_refused_before_anything_starts() {
    // 4,000,000,000 messages of 1,056-byte frames: 4.2 TB, more than any disk this runs on.
    let out = run_probe(&[
        "stages",
        "--msg-size",
        "1024",
        "--rate",
        "1000000",
        "--duration",
        "4000",
        "--archive-dir",
        "/tmp",
        "--control-port",
        "18170",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("latency-probe stages: /tmp has ")
            && err.contains("MiB free and the run needs about 4,0")
            && err.contains("--archive-dir")
            && err.contains("--duration"),
        "{err}"
    );
    assert!(helpers("18170").is_empty());
    let out = run_probe(&["stages", "--archive-dir", "/nonexistent-archive-dir"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--archive-dir /nonexistent-archive-dir: not a directory") && err.contains("mkdir -p"),
        "{err}"
    );
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Mounted(std::path::PathBuf);

impl Mounted {
    /// Mounts a tmpfs of `mib` MiB (needs root; `None` where mounting is not allowed).
    fn tmpfs(tag: &str, mib: u64) -> Option<Mounted> {
        let dir = common::scratch(tag);
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(&dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            Some(Mounted(dir))
        } else {
            let _ = std::fs::remove_dir_all(&dir);
            None
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A disk that fills up while archive A records: the run still finishes and reports what it
/// measured (marked incomplete, the recorded stage cut short), the error names the archive,
/// the full disk and the fix, exit 1, and nothing is left running or on disk. The disk is a
/// 200 MiB tmpfs (Aeron Archive wants 128 MiB free to start a recording) that the test fills
/// once the recording has begun.
#[test]
fn a_disk_that_fills_up_mid_run_is_named_and_what_was_measured_is_kept() {
    let Some(_one) = one_at_a_time_with_java() else {
        return;
    };
    let Some(disk) = Mounted::tmpfs("stages-full-disk", 200) else {
        eprintln!("a full disk not tested here: mounting a tmpfs needs root");
        return;
    };
    let json = tmp_json("full-disk");
    let archive_dir = disk.0.to_str().unwrap().to_owned();
    let mut child = Command::new(common::bin("latency-probe"))
        .args([
            "stages",
            "--rate",
            "5000",
            "--warmup",
            "2000",
            "--duration",
            "6",
            "--sync",
            "0",
        ])
        .args(["--control-port", "18180", "--archive-dir", &archive_dir])
        .args(["--json", json.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("latency-probe starts");
    let probe_pid = child.id();
    // Once archive A's first segment file exists, the recording is under way: fill the disk.
    let archive = disk.0.join(format!("latency-stages-{probe_pid}/sync-0-archive-1"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(&archive)
        .map(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "rec")))
        .unwrap_or(false)
    {
        assert!(Instant::now() < deadline, "archive A never started recording");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    let filled = Command::new("dd")
        .args(["if=/dev/zero", "bs=1M"])
        .arg(format!("of={}", disk.0.join("filler").display()))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!filled.success(), "dd stops when the disk is full");
    let (status, err) = finish(&mut child, Duration::from_secs(120));
    assert_eq!(status.code(), Some(1), "exit 1 (incomplete): {err}");
    assert!(
        err.contains("archive A: the disk under")
            && err.contains("filled up during the run (No space left on device)")
            && err.contains("--archive-dir"),
        "{err}"
    );
    let v = read_json(&json);
    assert_eq!(v["complete"], false);
    let run = &v["runs"][0];
    assert_eq!(run["complete"], false);
    let measured = run["measured"].as_u64().unwrap();
    assert_eq!(measured, 30_000, "the run went on to the end: {run}");
    let count = |name: &str| {
        run["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .unwrap()["count"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(count("received"), measured, "latency-sub got every message");
    let recorded = count("recorded by archive A");
    assert!(recorded < measured, "the recording stopped early: {recorded}");
    assert!(
        run["notes"][0].as_str().unwrap().contains("No space left on device"),
        "{run}"
    );
    assert!(helpers("18180").is_empty(), "an archive was left running");
    assert!(shm_left_by(probe_pid).is_empty());
    assert!(!disk.0.join(format!("latency-stages-{probe_pid}")).exists());
}
