//! Bad input (issue 5): every flag of `latency-probe`, `latency-pub` and `latency-sub` is refused
//! before anything starts, with one line `<program>: <cause and fix>` on stderr and exit code 2.
//!
//! Each case asserts: exit code 2 (`cli::EXIT_SETUP`), exactly one line on stderr that starts
//! with the program's name, names the flag and carries a distinctive part of the fix, nothing on
//! stdout, and a quick return (under 3 s: no driver was started, no child spawned, nothing
//! measured). For latency-probe it also checks that no embedded driver directory of that process
//! was left in /dev/shm (the program exits without running destructors, so a driver started
//! before the refusal would leave one).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{bin, scratch};

/// Generous: a behaviour check (nothing started), not a timing test.
const FAST: Duration = Duration::from_secs(3);

/// Environment variables that would change what a case expects; removed for every run.
const CLEARED_ENV: [&str; 6] = [
    "AERON_DIR",
    "AERON_DRIVER_TIMEOUT",
    "AERON_IPC_MTU_LENGTH",
    "AERON_MTU_LENGTH",
    "AERON_IPC_TERM_BUFFER_LENGTH",
    "AERON_TERM_BUFFER_LENGTH",
];

struct Case<'a> {
    program: &'static str,
    args: Vec<String>,
    env: &'a [(&'a str, &'a str)],
    /// The flag the line must name.
    flag: &'a str,
    /// A distinctive part of the fix the line must carry.
    fix: &'a str,
}

fn case<'a>(program: &'static str, args: &[&str], flag: &'a str, fix: &'a str) -> Case<'a> {
    Case {
        program,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: &[],
        flag,
        fix,
    }
}

/// Runs the case and returns the one line, after checking everything the module doc promises.
fn refuse(c: &Case<'_>) -> String {
    let mut cmd = Command::new(bin(c.program));
    cmd.args(&c.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in CLEARED_ENV {
        cmd.env_remove(v);
    }
    cmd.envs(c.env.iter().copied());
    let started = Instant::now();
    let spawned_at = SystemTime::now() - Duration::from_secs(1);
    let child = cmd.spawn().expect("binary runs");
    let pid = child.id();
    let out = child.wait_with_output().expect("binary finishes");
    let took = started.elapsed();
    let what = format!("{} {:?}", c.program, c.args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: exit {:?}, stderr: {err}",
        out.status
    );
    assert_eq!(err.lines().count(), 1, "{what}: one line on stderr, got: {err}");
    assert!(
        err.starts_with(&format!("{}: ", c.program)),
        "{what}: the line starts with the program: {err}"
    );
    assert!(err.contains(c.flag), "{what}: names {}: {err}", c.flag);
    assert!(err.contains(c.fix), "{what}: says the fix ({}): {err}", c.fix);
    assert!(out.stdout.is_empty(), "{what}: nothing on stdout");
    assert!(
        took < FAST,
        "{what}: took {took:?}; something was started before the refusal"
    );
    if c.program == "latency-probe" {
        // Made by this very process: its pid, and not older than its start (pids are reused,
        // and an earlier process that exited with a driver running leaves its directory).
        // Private driver directories are `<Aeron's default dir>-<pid>-<n>`.
        let default = aeron_latency::messaging::default_aeron_dir();
        let prefix = format!("{}-{pid}-", default.file_name().unwrap().to_string_lossy());
        let left: Vec<_> = std::fs::read_dir("/dev/shm")
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                    .filter(|e| e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t >= spawned_at))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "{what}: an embedded driver was started: {left:?}");
    }
    err
}

/// Removes the paths it holds when dropped, also when the test fails.
#[derive(Default)]
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes a `cnc.dat` laid out as Aeron's (CnC version 0.2.0): the 128-byte header with the
/// to-driver buffer length, then a to-driver ring buffer of 1024 bytes plus its 768-byte
/// trailer, whose consumer heartbeat (trailer offset 640) is `heartbeat_ms`.
fn synthetic_cnc(dir: &Path, heartbeat_ms: i64) {
    const META: usize = 128;
    const TRAILER: usize = 768;
    const HEARTBEAT: usize = 640;
    let to_driver = 1024 + TRAILER;
    let mut f = vec![0u8; META + to_driver];
    f[0..4].copy_from_slice(&0x0200_i32.to_le_bytes());
    f[4..8].copy_from_slice(&(to_driver as i32).to_le_bytes());
    let hb = META + 1024 + HEARTBEAT;
    f[hb..hb + 8].copy_from_slice(&heartbeat_ms.to_le_bytes());
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("cnc.dat"), f).unwrap();
}

/// The directories `--dir` must refuse, each with a distinctive part of its message.
fn bad_driver_dirs(tag: &str) -> Vec<(PathBuf, &'static str)> {
    let missing = scratch(&format!("{tag}-missing"));
    let file = scratch(&format!("{tag}-file"));
    std::fs::write(&file, b"not a directory").unwrap();
    let garbage = scratch(&format!("{tag}-garbage"));
    std::fs::create_dir_all(&garbage).unwrap();
    let noise: Vec<u8> = (0..70_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8 | 1)
        .collect();
    std::fs::write(garbage.join("cnc.dat"), noise).unwrap();
    let short = scratch(&format!("{tag}-short"));
    std::fs::create_dir_all(&short).unwrap();
    std::fs::write(short.join("cnc.dat"), b"cnc").unwrap();
    let dead = scratch(&format!("{tag}-dead"));
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    synthetic_cnc(&dead, now_ms - 60_000);
    vec![
        (
            missing,
            "cnc.dat is missing; start one there (latency-probe driver --dir",
        ),
        (file, "it is a file, not a directory"),
        (garbage, "start a media driver there"),
        (short, "shorter than the 128-byte header"),
        (dead, "restart the driver"),
    ]
}

/// latency-probe, in the messages.
const PROBE: &str = "latency-probe";

#[test]
fn latency_probe_refuses_bad_rates_durations_and_sizes_with_one_line_before_starting_anything() {
    let p = PROBE;
    let cases = [
        case(p, &["--rate", "0"], "--rate 0", "between 1 and 100,000,000"),
        case(
            p,
            &["--rate", "100000001"],
            "--rate 100000001",
            "between 1 and 100,000,000",
        ),
        case(p, &["--rate", "-5"], "'--rate", "see latency-probe --help"),
        case(p, &["--rate", "lots"], "'--rate", "see latency-probe --help"),
        case(p, &["--duration", "0"], "--duration 0", "e.g. --duration 10"),
        case(p, &["--duration", "-1"], "--duration -1", "e.g. --duration 10"),
        case(p, &["--duration", "NaN"], "--duration NaN", "e.g. --duration 10"),
        case(p, &["--duration", "0.000000001"], "--duration", "lengthen the run"),
        case(p, &["--warmup", "5000000000"], "--warmup 5000000000", "use fewer"),
        case(p, &["--msg-size", "24"], "--msg-size 24", "multiple of 8 from 32"),
        case(
            p,
            &["--msg-size", "32", "--delivery", "channel"],
            "--msg-size 32 sends compact samples",
            "use --delivery inline or --msg-size 64 or more",
        ),
        case(
            p,
            &["--msg-size", "100"],
            "--msg-size 100",
            "nearest valid sizes are 96 and 104",
        ),
        case(
            p,
            &["--msg-size", "2048"],
            "--msg-size 2048",
            "use --msg-size 1376 or less",
        ),
        case(
            p,
            &["--msg-size", "2048", "--channel", "aeron:ipc?mtu=1024"],
            "--msg-size 2048",
            "use --msg-size 992 or less",
        ),
        case(
            p,
            &[
                "--mode",
                "rtt",
                "--msg-size",
                "1024",
                "--pong-channel",
                "aeron:ipc?mtu=512",
            ],
            "--pong-channel",
            "use --msg-size 480 or less",
        ),
        case(
            p,
            &[
                "--msg-size",
                "16384",
                "--channel",
                "aeron:ipc?mtu=65504",
                "--term-length",
                "65536",
            ],
            "--msg-size 16384",
            "a larger --term-length",
        ),
    ];
    for c in &cases {
        refuse(c);
    }
    let mtu_env = [("AERON_IPC_MTU_LENGTH", "4096")];
    refuse(&Case {
        env: &mtu_env,
        ..case(
            p,
            &["--msg-size", "8192"],
            "--msg-size 8192",
            "(from AERON_IPC_MTU_LENGTH)",
        )
    });
}

#[test]
fn latency_probe_refuses_bad_cores_idle_and_hiccup_with_one_line_before_starting_anything() {
    let p = PROBE;
    let cases = [
        case(
            p,
            &["--idle", "busy"],
            "--idle",
            "spin, noop, yield, sleep-ns[:N] (sleep N ns, N from 1 to 1000000000, e.g. sleep-ns:1000) or backoff",
        ),
        case(p, &["--pub-core", "999"], "--pub-core 999", "pick one of"),
        case(p, &["--sub-core", "999"], "--sub-core 999", "pick one of"),
        case(p, &["--sub-core", "-1"], "'--sub-core", "see latency-probe --help"),
        case(p, &["--hiccup", "999"], "--hiccup 999", "auto or off"),
        case(
            p,
            &["--hiccup", "sometimes"],
            "--hiccup",
            "expected auto, off or a core number",
        ),
    ];
    for c in &cases {
        refuse(c);
    }
}

#[test]
fn latency_probe_refuses_bad_channels_and_modes_with_one_line_before_starting_anything() {
    let p = PROBE;
    let cases = [
        case(
            p,
            &["--channel", "aeron:udp"],
            "--channel",
            "aeron:udp?endpoint=localhost:40123",
        ),
        case(
            p,
            &["--channel", "udp://localhost:40123"],
            "--channel",
            "aeron:udp?endpoint=localhost:40123",
        ),
        case(
            p,
            &["--channel", "aeron:udp?endpoint=localhost:70000"],
            "--channel",
            "out of range (0 to 65535)",
        ),
        case(
            p,
            &["--channel", "aeron:ipc?term-length="],
            "--channel",
            "has an empty value",
        ),
        case(
            p,
            &["--channel", "aeron:udp?interface=eth0"],
            "--channel",
            "needs endpoint=<host>:<port>",
        ),
        case(
            p,
            &["--mode", "rtt", "--pong-channel", "aeron:udp?endpoint=localhost"],
            "--pong-channel",
            "write endpoint=localhost:<port>",
        ),
        case(
            p,
            &["--mode", "rtt", "--stream", "7", "--pong-stream", "7"],
            "--pong-stream 7",
            "pick another stream id",
        ),
        case(p, &["--mode", "sideways"], "'--mode", "use one-way or rtt"),
        case(
            p,
            &["--publication", "both"],
            "'--publication",
            "use exclusive or concurrent",
        ),
        case(
            p,
            &["--mode", "rtt", "--delivery", "channel"],
            "--delivery",
            "use --delivery inline",
        ),
    ];
    for c in &cases {
        refuse(c);
    }
}

#[test]
fn latency_probe_refuses_bad_waits_and_floors_with_one_line_before_starting_anything() {
    let p = PROBE;
    let cases = [
        case(p, &["--wait", "-1"], "--wait -1", "give 0 or more"),
        case(p, &["--wait", "NaN"], "--wait NaN", "give 0 or more"),
        case(p, &["--wait", "1e300"], "--wait", "at most 10000000 seconds"),
        case(
            p,
            &["--wait", "6000000"],
            "--wait 6000000",
            "shorten the run or the wait",
        ),
        case(
            p,
            &["--duration", "20000000", "--rate", "1"],
            "--duration 20000000",
            "shorten the run or the wait",
        ),
        case(p, &["--floor", "-0.5"], "--floor -0.5", "give 0 or more"),
        case(p, &["--floor", "NaN"], "--floor NaN", "give 0 or more"),
        case(p, &["--floor", "60"], "--floor 60", "at most 10 seconds"),
    ];
    for c in &cases {
        refuse(c);
    }
}

#[test]
fn latency_probe_refuses_bad_driver_and_output_flags_with_one_line_before_starting_anything() {
    let tmp = scratch("probe");
    std::fs::create_dir_all(&tmp).unwrap();
    let _cleanup = Cleanup(vec![tmp.clone()]);
    let tmp_s = tmp.to_str().unwrap();
    let file = tmp.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let file_s = file.to_str().unwrap();
    let missing = tmp.join("missing");
    let missing_s = missing.to_str().unwrap();
    let json_in_missing = missing.join("r.json");
    let p = PROBE;
    let cases = [
        case(p, &["--term-length", "100000"], "--term-length 100000", "power of two"),
        case(p, &["--term-length", "32768"], "--term-length 32768", "power of two"),
        case(p, &["--driver-dir", missing_s], "--driver-dir", "mkdir -p"),
        case(p, &["--driver-dir", file_s], "--driver-dir", "pick a directory"),
        case(
            p,
            &["--dir", tmp_s, "--driver-dir", tmp_s],
            "--driver-dir",
            "pass one of the two",
        ),
        case(
            p,
            &["--dir", tmp_s, "--term-length", "65536"],
            "--term-length",
            "drop one of the two",
        ),
        case(p, &["--json", json_in_missing.to_str().unwrap()], "--json", "mkdir -p"),
        case(p, &["--json", tmp_s], "--json", "give a file name"),
        // Found before the run, not after it: the run's files would have nowhere to go.
        case(p, &["--out", file_s], "--out", "is a file; give a directory"),
        case(
            p,
            &["--out", "/dev/null/out"],
            "--out",
            "give a directory you can write",
        ),
        case(
            p,
            &["--diagnostics", "loud"],
            "'--diagnostics",
            "see latency-probe --help",
        ),
        case(p, &["--no-such-flag"], "--no-such-flag", "see latency-probe --help"),
        // A subcommand's flag: its own --help lists the flags meant.
        case(p, &["nak", "--rtt", "50us"], "--budget", "see latency-probe nak --help"),
        case(p, &["ab", "--rounds", "x"], "'--rounds", "see latency-probe ab --help"),
    ];
    for c in &cases {
        refuse(c);
    }
}

#[test]
fn latency_probe_refuses_a_dir_without_a_live_driver_with_one_line_before_starting_anything() {
    let p = PROBE;
    let dirs = bad_driver_dirs(p);
    let _cleanup = Cleanup(dirs.iter().map(|(d, _)| d.clone()).collect());
    for (dir, fix) in &dirs {
        let mut c = case(p, &["--dir"], "--dir", fix);
        c.args.push(dir.to_str().unwrap().to_owned());
        refuse(&c);
    }
    // The dead driver's line names its directory.
    let dead = &dirs[4].0;
    let line = refuse(&Case {
        args: vec!["--dir".into(), dead.to_str().unwrap().into()],
        ..case(p, &[], "AERON_DIR", "is not running")
    });
    assert!(line.contains(dead.to_str().unwrap()), "{line}");
}

#[test]
fn latency_pub_refuses_every_bad_flag_with_one_line_before_starting_anything() {
    let tmp = scratch("pub");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cleanup = Cleanup(vec![tmp.clone()]);
    let u = "latency-pub";
    let mut cases = vec![
        case(u, &["--rate", "0"], "--rate 0", "between 1 and 100,000,000"),
        case(
            u,
            &["--rate", "1000000000"],
            "--rate 1000000000",
            "between 1 and 100,000,000",
        ),
        case(u, &["--duration", "nan"], "--duration NaN", "e.g. --duration 10"),
        case(u, &["--duration", "-3"], "--duration -3", "e.g. --duration 10"),
        case(u, &["--msg-size", "60"], "--msg-size 60", "multiple of 8 from 32"),
        case(
            u,
            &["--msg-size", "65"],
            "--msg-size 65",
            "nearest valid sizes are 64 and 72",
        ),
        case(u, &["--warmup", "-1"], "'--warmup", "see latency-pub --help"),
        case(u, &["--wait", "-1"], "--wait -1", "give 0 or more"),
        case(u, &["--wait", "NaN"], "--wait NaN", "give 0 or more"),
        case(u, &["--core", "999"], "--core 999", "pick one of"),
        case(u, &["--idle", "fast"], "--idle", "spin, noop, yield, sleep-ns[:N]"),
        case(u, &["--channel", "aeron:ipc?"], "--channel", "nothing follows '?'"),
        case(u, &["--channel", "aeron:ipc?=1"], "--channel", "empty key"),
        case(
            u,
            &["--channel", "aeron:udp?endpoint=localhost:99999"],
            "--channel",
            "out of range",
        ),
        case(
            u,
            &["--mode", "rtt", "--pong-channel", "aeron:tcp?endpoint=x:1"],
            "--pong-channel",
            "aeron:udp?endpoint=localhost:40123",
        ),
        case(
            u,
            &["--mode", "rtt", "--stream", "3", "--pong-stream", "3"],
            "--pong-stream 3",
            "pick another stream id",
        ),
        case(u, &["--json", tmp.to_str().unwrap()], "--json", "give a file name"),
        case(u, &["--send-lags", "/nonexistent-dir/lags"], "--send-lags", "mkdir -p"),
        case(
            u,
            &["--send-lags", tmp.to_str().unwrap()],
            "--send-lags",
            "give a file name",
        ),
        case(u, &["--hiccup", "2"], "--hiccup", "see latency-pub --help"),
    ];
    let dirs = bad_driver_dirs(u);
    cleanup.0.extend(dirs.iter().map(|(d, _)| d.clone()));
    for (dir, fix) in &dirs {
        let mut c = case(u, &["--dir"], "--dir", fix);
        c.args.push(dir.to_str().unwrap().to_owned());
        cases.push(c);
    }
    for c in &cases {
        refuse(c);
    }
}

#[test]
fn latency_sub_refuses_every_bad_flag_with_one_line_before_starting_anything() {
    let s = "latency-sub";
    let mut cases = vec![
        case(s, &["--timeout", "-1"], "--timeout -1", "give 0 or more"),
        case(s, &["--timeout", "NaN"], "--timeout NaN", "give 0 or more"),
        case(s, &["--timeout", "0"], "--timeout 0", "e.g. --timeout 60"),
        case(s, &["--total", "0"], "--total 0", "give at least 1"),
        case(s, &["--total", "-4"], "'--total", "see latency-sub --help"),
        case(s, &["--core", "999"], "--core 999", "pick one of"),
        case(
            s,
            &["--idle", "sleep-ns:0"],
            "--idle",
            "spin, noop, yield, sleep-ns[:N]",
        ),
        case(
            s,
            &["--channel", "aeron:udp?endpoint=[::1:40123"],
            "--channel",
            "no closing ']'",
        ),
        case(
            s,
            &["--channel", "aeron:udp?control-mode=dynamic"],
            "--channel",
            "needs control=<host>:<port>",
        ),
        case(
            s,
            &["--mode", "rtt", "--stream", "5", "--pong-stream", "5"],
            "--pong-stream 5",
            "pick another stream id",
        ),
        case(
            s,
            &["--mode", "rtt", "--pong-channel", "aeron:ipc|x"],
            "--pong-channel",
            "aeron:udp?endpoint=localhost:40123",
        ),
        case(
            s,
            &["--delivery", "carrier-pigeon"],
            "'--delivery",
            "use inline or channel",
        ),
        case(s, &["--json", "/nonexistent-dir/sub.json"], "--json", "mkdir -p"),
        case(
            s,
            &["--out", "/dev/null/out"],
            "--out",
            "give a directory you can write",
        ),
    ];
    let dirs = bad_driver_dirs(s);
    let _cleanup = Cleanup(dirs.iter().map(|(d, _)| d.clone()).collect());
    for (dir, fix) in &dirs {
        let mut c = case(s, &["--dir"], "--dir", fix);
        c.args.push(dir.to_str().unwrap().to_owned());
        cases.push(c);
    }
    for c in &cases {
        refuse(c);
    }
}

/// A tmpfs mounted for one test; unmounted (and its mount point removed) on drop, also when
/// the test fails.
struct TmpfsMount(PathBuf);

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(str::to_owned))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
}

#[test]
fn no_room_for_the_term_buffers_is_refused_with_what_is_needed_what_is_free_and_what_to_do() {
    if !is_root() {
        eprintln!("skipped: mounting the small tmpfs this test needs takes root (the CI machine is root)");
        return;
    }
    let point = scratch("tmpfs");
    std::fs::create_dir_all(&point).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&point)
        .status()
        .expect("mount runs");
    if !mounted.success() {
        let _ = std::fs::remove_dir(&point);
        eprintln!("skipped: root, but mount -t tmpfs failed here ({mounted}): no CAP_SYS_ADMIN in this container");
        return;
    }
    let mount = TmpfsMount(point);
    let line = refuse(&case(
        "latency-probe",
        &[
            "--driver-dir",
            mount.0.to_str().unwrap(),
            "--term-length",
            "1048576",
            "--duration",
            "1",
        ],
        "--term-length",
        "--shm-size",
    ));
    for part in [
        "needs about 22 MiB (2 streams x 3 terms of 1 MiB + 16 MiB)",
        "8 MiB free",
        mount.0.to_str().unwrap(),
        "--driver-dir",
        "mount -o remount,size=",
    ] {
        assert!(line.contains(part), "{part:?} missing: {line}");
    }
    let left: Vec<_> = std::fs::read_dir(&mount.0)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "the driver wrote nothing: {left:?}");
}
