//! Ctrl-C (SIGINT) and SIGTERM in the commands that run other runs: `ab` (latency-probe per
//! arm), `sweep` (latency-probe per rate) and `loss` (drivers, latency-sub and latency-pub per
//! arm). Each stops within its grace, exits 1, and keeps what was measured: `ab` its verdict over
//! the rounds done, `sweep` the rates done, `loss` the arms done and what the stopped arm's
//! receivers got, nothing lost. Some tests signal the whole process group (a terminal's
//! Ctrl-C), others the command alone (a `kill`, which it hands on to the run it waits for).
//! `latency-probe driver` stops at SIGTERM, and at the end of its stdin when that is a pipe.
//! (latency-probe, latency-pub and latency-sub themselves: `faults.rs`.)

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{read_json, scratch, spawn_in_own_group, tmp_json};

/// latency-probe with `args` in its own process group, its stdout and stderr in files.
struct Run {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Run {
    fn start(args: &[&str], tag: &str) -> Run {
        let (stdout, stderr) = (scratch(&format!("{tag}.out")), scratch(&format!("{tag}.err")));
        let child = spawn_in_own_group("latency-probe", args, Some(&stdout), &stderr);
        Run { child, stdout, stderr }
    }

    /// What it printed on stdout so far.
    fn printed(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    fn said(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits up to `limit` for `ready` to hold (the run got as far as the test wants).
    fn until(&self, limit: Duration, what: &str, ready: impl Fn(&Run) -> bool) {
        let t = Instant::now();
        while !ready(self) {
            assert!(
                t.elapsed() < limit,
                "{what} not within {limit:?}; stderr: {}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` to the whole group or to the command alone; waits up to `limit` for it to
    /// exit and returns its exit code, how long it took, and its stderr.
    fn interrupt(&mut self, signal: &str, whole_group: bool, limit: Duration) -> (Option<i32>, Duration, String) {
        let pid = self.child.id() as i32;
        let target = if whole_group { -pid } else { pid };
        let ok = Command::new("kill").args([signal, "--", &target.to_string()]).status();
        assert!(ok.is_ok_and(|s| s.success()), "kill {signal} {target}");
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return (s.code(), t.elapsed(), self.said());
            }
            assert!(
                t.elapsed() < limit,
                "still running {limit:?} after {signal}; stderr: {}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // A failed test leaves no run behind (the whole group: its children too).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
        let _ = std::fs::remove_file(&self.stdout);
    }
}

/// The flags of every probe run here: short, light, and quiet on a 2-core machine.
const PROBE_FLAGS: [&str; 10] = [
    "--floor",
    "0.1",
    "--idle",
    "yield",
    "--term-length",
    "1048576",
    "--diagnostics",
    "off",
    "--warmup",
    "1000",
];

#[test]
fn sigterm_to_ab_alone_stops_its_arm_and_gives_the_verdict_over_the_rounds_done() {
    let json = tmp_json("interrupted-ab");
    let mut args = vec!["ab", "--rounds", "8", "--duration", "1", "--no-early-stop"];
    args.extend([
        "--json",
        json.to_str().unwrap(),
        "--",
        "--rate",
        "10000",
        "--stream",
        "3120",
    ]);
    args.extend(PROBE_FLAGS);
    let mut ab = Run::start(&args, "interrupted-ab");
    ab.until(Duration::from_secs(90), "ab's first round", |r| {
        r.said().contains("ab: round 1 ")
    });
    let (code, took, err) = ab.interrupt("-TERM", false, Duration::from_secs(60));
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(20), "it took {took:?} to stop");
    assert!(err.contains("ab: interrupted (SIGINT or SIGTERM) in round "), "{err}");
    let r = &read_json(&json)["ab"];
    assert_eq!(r["complete"], false, "{r}");
    assert!(
        r["incomplete_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("of 8 rounds done before it"),
        "{r}"
    );
    let rounds = r["rounds"].as_array().expect("rounds").len();
    assert!((1..8).contains(&rounds), "{rounds} rounds: {r}");
    let p50 = &r["percentiles"][0];
    assert_eq!(
        (&p50["percentile"], p50["rounds"].as_u64()),
        (&"p50".into(), Some(rounds as u64)),
        "{r}"
    );
    assert!(p50["a_ns"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
}

#[test]
fn ctrl_c_ends_sweep_with_the_rates_done_and_the_running_one_marked_incomplete() {
    let out = scratch("interrupted-sweep");
    let mut args = vec!["sweep", "--rates", "2000,4000,8000", "--duration", "3", "--out"];
    args.extend([out.to_str().unwrap(), "--", "--stream", "3121"]);
    args.extend(PROBE_FLAGS);
    let mut sweep = Run::start(&args, "interrupted-sweep");
    sweep.until(Duration::from_secs(60), "the second rate", |r| {
        r.said().contains("at 4000 msg/s")
    });
    std::thread::sleep(Duration::from_millis(1500));
    let (code, took, err) = sweep.interrupt("-INT", true, Duration::from_secs(60));
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(20), "it took {took:?} to stop");
    assert!(
        err.contains("interrupted (SIGINT or SIGTERM): 2 of 3 rates ran"),
        "{err}"
    );
    // The rate the sweep did not reach was never tried: the best is of the rates run.
    let table = sweep.printed();
    assert!(
        table.contains("highest rate of the 2 rates run that met its target")
            || table.contains("no rate of the 2 rates run met its target"),
        "{table}"
    );
    let svg = std::fs::read_to_string(out.join("sweep.svg")).expect("sweep.svg");
    assert!(svg.contains("cut short: 2 of 3 rates ran"), "the chart's title says so");
    let summary = read_json(&out.join("sweep.json"));
    assert_eq!(summary["rates_planned"], 3, "{summary}");
    let points = summary["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "{summary}");
    assert_eq!(
        (&points[0]["complete"], &points[1]["complete"]),
        (&true.into(), &false.into()),
        "{summary}"
    );
    let second = read_json(&out.join("rate-4000.json"));
    let why = second["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("interrupted (SIGINT or SIGTERM)"), "{why}");
    assert_eq!(
        (&second["received"], &second["lost"]),
        (&second["sent"], &0.into()),
        "{second}"
    );
    assert!(!out.join("rate-8000.json").exists(), "the third rate ran");
    let _ = std::fs::remove_dir_all(&out);
}

/// The processes whose command line names `dir` (the loss arms' drivers and probes run there).
fn processes_in(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle) && !c.contains("--work-dir"))
        .collect()
}

#[test]
fn sigterm_to_loss_alone_ends_the_running_arm_with_what_its_receiver_got_and_runs_no_more() {
    let work = scratch("interrupted-loss");
    std::fs::create_dir_all(&work).unwrap();
    let json = tmp_json("interrupted-loss");
    let args = [
        "loss",
        "--receivers",
        "1",
        "--duration",
        "6",
        "--rate",
        "5000",
        "--warmup",
        "1000",
        "--arms",
        "min-buffers,big-buffers",
        "--port",
        "24640",
        "--work-dir",
        work.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let mut loss = Run::start(&args, "interrupted-loss");
    // The arm's drivers start, its receiver waits 1.5 s for them, then the publisher sends.
    loss.until(Duration::from_secs(60), "the publisher", |_| {
        processes_in(&work).iter().any(|c| c.contains("latency-pub"))
    });
    std::thread::sleep(Duration::from_millis(2000));
    let (code, took, err) = loss.interrupt("-TERM", false, Duration::from_secs(60));
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(20), "it took {took:?} to stop");
    assert!(
        err.contains("interrupted (SIGINT or SIGTERM): 1 of 2 arms ran"),
        "{err}"
    );
    let r = read_json(&json);
    let arms = r["arms"].as_array().expect("arms");
    assert_eq!(arms.len(), 1, "{r}");
    let arm = &arms[0];
    assert_eq!(
        (&arm["arm"], &arm["complete"], &arm["lost"]),
        (&"min-buffers".into(), &false.into(), &0.into()),
        "{arm}"
    );
    assert!(arm["received"].as_u64().unwrap_or(0) > 1000, "{arm}");
    let problems = arm["problems"].to_string();
    assert!(problems.contains("the arms after it did not run"), "{problems}");
    assert!(
        problems.contains("stopped at message"),
        "the publisher's own words: {problems}"
    );
    assert_eq!(processes_in(&work), Vec::<String>::new(), "left running");
    let _ = std::fs::remove_dir_all(&work);
}

/// `latency-probe driver --dir DIR` with `stdin`, its stderr in a file; waits until its driver
/// is up (`cnc.dat`).
fn start_driver(dir: &Path, stdin: std::process::Stdio, stderr: &Path) -> Child {
    let child = Command::new(common::bin("latency-probe"))
        .args(["driver", "--dir"])
        .arg(dir)
        .stdin(stdin)
        .stderr(std::fs::File::create(stderr).expect("stderr file"))
        .spawn()
        .expect("latency-probe driver runs");
    let t = Instant::now();
    while !dir.join("cnc.dat").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no driver in {}: {}",
            dir.display(),
            std::fs::read_to_string(stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Waits up to 10 s for `child` to exit: its exit code and stderr.
fn exit_of(child: &mut Child, stderr: &Path) -> (Option<i32>, String) {
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!(
                "still running 10 s later: {}",
                std::fs::read_to_string(stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), std::fs::read_to_string(stderr).unwrap_or_default())
}

#[test]
fn the_driver_with_no_stdin_runs_until_sigterm_and_with_a_pipe_until_it_closes() {
    // A script's background job gets /dev/null: an at-once end of stdin, not a stop.
    let (dir, err) = (scratch("driver-null"), scratch("driver-null.err"));
    let mut child = start_driver(&dir, std::process::Stdio::null(), &err);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "it stopped: {}",
        std::fs::read_to_string(&err).unwrap()
    );
    let ok = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    assert!(ok.is_ok_and(|s| s.success()));
    let (code, said) = exit_of(&mut child, &err);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("until Ctrl-C or SIGTERM") && said.contains("stopped: Ctrl-C or SIGTERM"),
        "{said}"
    );
    assert!(!dir.join("cnc.dat").exists(), "its directory stays: {said}");

    // The loss experiment's drivers: a parent that closes the pipe, or dies, stops the driver.
    let (dir, err) = (scratch("driver-pipe"), scratch("driver-pipe.err"));
    let mut child = start_driver(&dir, std::process::Stdio::piped(), &err);
    drop(child.stdin.take());
    let (code, said) = exit_of(&mut child, &err);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("stopped: its stdin closed"), "{said}");
    // `scratch` removes what is there: the stderr files.
    for tag in ["driver-null.err", "driver-pipe.err"] {
        scratch(tag);
    }
}
