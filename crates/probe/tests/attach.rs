//! `latency-probe attach` against processes this test starts: the report of a running one, a
//! process that ends while watched, and bad input.

use std::process::{Child, Command, Output, Stdio};

const PROBE: &str = env!("CARGO_BIN_EXE_latency-probe");

/// A child that is killed and reaped when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(script: &str) -> Reaped {
    Reaped(
        Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::null())
            .spawn()
            .expect("starting sh"),
    )
}

fn attach(args: &[&str]) -> Output {
    Command::new(PROBE)
        .arg("attach")
        .args(args)
        .output()
        .expect("running latency-probe attach")
}

/// `attach --pid PID --duration 1 --diagnostics proc --json JSON`.
fn attach_a_second(pid: &str, json: &std::path::Path) -> Output {
    let json = json.to_str().unwrap();
    attach(&["--pid", pid, "--duration", "1", "--diagnostics", "proc", "--json", json])
}

fn json_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("attach-{name}-{}.json", std::process::id()))
}

/// A service with a tap in `dir` (100 ms intervals): thread `svc` records figure `svc-inside`
/// every 0.5 ms (2 µs, every 50th 80 µs) until `stop`.
fn tap_service(
    dir: &std::path::Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (aeron_latency::messaging::tap::Tap, std::thread::JoinHandle<()>) {
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    let tap = aeron_latency::messaging::tap::Tap::builder(dir)
        .interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let mut figure = tap.figure("svc-inside").unwrap();
    let svc = std::thread::Builder::new()
        .name("svc".into())
        .spawn(move || {
            let mut n = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                figure.record(if n.is_multiple_of(50) { 80_000 } else { 2_000 });
                std::thread::sleep(Duration::from_micros(500));
            }
        })
        .unwrap();
    (tap, svc)
}

/// Whether the tap in `dir` lists a thread recording `figure` in its status file: what attach
/// reads (the figure's log exists from the start; the status lists it at the next interval).
fn recording(dir: &std::path::Path, figure: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("tap.json")) else {
        return false;
    };
    let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    status["figures"].as_array().is_some_and(|figures| {
        figures
            .iter()
            .any(|f| f["name"] == figure && f["recording_tids"].as_array().is_some_and(|t| !t.is_empty()))
    })
}

/// A shell that wakes every 10 ms: its thread is found, watched over 20 groups, and its
/// wake-ups are counted (perf or /proc).
#[test]
fn a_running_process_s_threads_are_reported_per_group() {
    let child = spawn("while :; do sleep 0.01; done");
    let pid = child.0.id().to_string();
    let tid = i64::from(child.0.id());
    let json = json_path("running");
    let out = attach(&["--pid", &pid, "--duration", "1", "--json", json.to_str().unwrap()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("process sh (pid {pid})")), "{stdout}");
    assert!(stdout.contains("VERDICT:"), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert_eq!(r["complete"], true);
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 20);
    assert!(groups.iter().all(|g| !g.is_null()), "every group watched: {groups:?}");
    let sh = r["jitter"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"].as_i64() == Some(tid))
        .unwrap_or_else(|| panic!("the shell's thread is listed: {}", r["jitter"]["threads"]));
    assert_eq!(sh["role"], "service");
    let woke = sh["total"]["voluntary"].as_u64().unwrap();
    assert!(
        woke >= 20,
        "a shell that sleeps 10 ms at a time blocked {woke} times in 1 s"
    );
}

/// A process that ends while watched: the groups before are reported, marked incomplete,
/// exit 1 with one line saying so.
#[test]
fn a_process_that_ends_is_reported_so_far() {
    let child = spawn("sleep 0.5");
    let pid = child.0.id().to_string();
    let json = json_path("ends");
    let out = attach(&["--pid", &pid, "--duration", "5", "--json", json.to_str().unwrap()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("process {pid} ended after")), "{stderr}");
    assert!(stdout.contains("INCOMPLETE"), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert_eq!(r["complete"], false);
    let watched = r["watched_s"].as_f64().unwrap();
    assert!(
        watched < 4.0,
        "stopped when the process ended, not at --duration: {watched} s"
    );
    assert!(!r["groups"][0].is_null(), "the first group was watched");
    assert!(r["groups"][19].is_null(), "the last was not");
}

/// Ctrl-C (SIGINT) ends a long watch early: the groups reached are reported, marked
/// incomplete, exit 1 with one line saying so.
#[test]
fn ctrl_c_ends_the_watch_early_with_the_report_so_far() {
    let child = spawn("sleep 60");
    let pid = child.0.id().to_string();
    let json = json_path("interrupted");
    let watcher = Command::new(PROBE)
        .args([
            "attach",
            "--pid",
            &pid,
            "--duration",
            "30",
            "--diagnostics",
            "proc",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running latency-probe attach");
    let attach_pid = watcher.id().to_string();
    let signal = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(3));
        Command::new("kill").args(["-INT", &attach_pid]).status()
    });
    let t = std::time::Instant::now();
    let out = watcher.wait_with_output().expect("attach's output");
    let took = t.elapsed();
    assert!(signal.join().unwrap().is_ok_and(|s| s.success()), "kill -INT");
    assert!(
        took < std::time::Duration::from_secs(10),
        "attach ran {took:?}, not stopped by SIGINT"
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("interrupted (SIGINT or SIGTERM) after "), "{stderr}");
    assert!(stdout.contains("of a 30.0 s window"), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert_eq!(r["complete"], false);
    let watched = r["watched_s"].as_f64().unwrap();
    assert!((2.0..15.0).contains(&watched), "stopped at the signal: {watched} s");
    assert!(!r["groups"][0].is_null(), "the first group was watched");
    assert!(r["groups"][19].is_null(), "the last was not");
}

/// Bad input: one line with the cause and the fix, exit 2, nothing watched.
#[test]
fn bad_input_is_one_line_and_exit_2() {
    let child = spawn("sleep 30");
    let pid = child.0.id().to_string();
    for (args, says) in [
        (vec!["--pid", "4294967294", "--duration", "1"], "no process 4294967294"),
        (
            vec!["--pid", &pid, "--threads", "no-such-thread"],
            "no thread named no-such-thread",
        ),
        (vec!["--pid", &pid, "--duration", "0"], "--duration 0"),
        (vec!["--pid", &pid, "--diagnostics", "off"], "--diagnostics off"),
    ] {
        let out = attach(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing watched");
    }
}

/// A service with a tap (this test process: a thread named `svc` records a figure, mostly
/// 2 µs, every 50th 80 µs): attach finds the tap through the logs the process holds open,
/// watches the figure's recording thread, and lines the figure's slowest messages up; with
/// `--tap` and `--hop` it reads the one named; wrong ones are one line and exit 2.
#[test]
fn a_service_s_tap_is_found_and_its_figure_explained() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    let dir = std::env::temp_dir().join(format!("attach-tap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let stop = Arc::new(AtomicBool::new(false));
    let (tap, svc) = tap_service(&dir, stop.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !recording(&dir, "svc-inside") {
        assert!(std::time::Instant::now() < deadline, "the tap never listed its figure");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = std::process::id().to_string();
    let json = json_path("tap");
    let found = attach_a_second(&pid, &json);
    let named = attach(&["--pid", &pid, "--tap", dir.to_str().unwrap(), "--hop", "nope"]);
    let no_dir = attach(&["--pid", &pid, "--tap", "/nonexistent-tap", "--duration", "1"]);
    let no_stream = attach(&["--pid", &pid, "--stream", "99"]);
    stop.store(true, Ordering::Relaxed);
    svc.join().unwrap();
    drop(tap);
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(
        found.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&found.stderr)
    );
    assert!(stdout.contains("figure svc-inside"), "{stdout}");
    assert!(
        stdout.contains("slowest messages (the tap's latency, from the send stamp") && !stdout.contains("  seq "),
        "the tap's messages have no sequence number: {stdout}"
    );
    assert!(stdout.contains("attach's own cost: "), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cost = &r["own_cost"];
    assert!(
        cost["cpu_s"].as_f64() > Some(0.0)
            && cost["wall_s"].as_f64() >= Some(1.0)
            && cost["max_rss_kib"].as_u64() > Some(0),
        "{cost}"
    );
    std::fs::remove_file(&json).unwrap();
    let t = &r["tap"];
    assert_eq!(t["dir"], dir.to_str().unwrap(), "found through the open logs");
    assert_eq!(t["figure"], "svc-inside");
    let watched: Vec<&str> = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(watched, ["svc"], "the figure's recording thread is the one watched");
    let messages = t["messages"].as_u64().unwrap();
    assert!(t["intervals"].as_u64().unwrap() >= 5 && messages >= 500, "{t}");
    let kept = t["slowest_kept"].as_u64().unwrap();
    assert!(kept > 0 && kept <= messages, "{t}");
    let edges: Vec<u64> = t["edges_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_u64().unwrap())
        .collect();
    assert!(
        edges[0].abs_diff(2_000) <= 2 && edges[4].abs_diff(80_000) <= 80,
        "{edges:?}"
    );
    let bands = r["jitter"]["bands"].as_array().unwrap();
    assert_eq!(bands.len(), 4);
    // Every 50th message is 80 µs (p98 up): the band that ends there has them, lined up.
    let slow = bands
        .iter()
        .find(|b| b["samples"].as_u64() > Some(0) && b["to_ns"].as_u64() >= Some(80_000));
    let slow = slow.unwrap_or_else(|| panic!("a band of the 80 µs messages: {bands:?}"));
    assert!(slow["analysed"].as_u64().unwrap() >= 1, "{slow}");
    for (out, says) in [
        (&named, "--hop nope: the tap has no such figure; it has svc-inside"),
        (&no_dir, "--tap /nonexistent-tap: no status file tap.json there"),
        (
            &no_stream,
            "--stream 99: no figure of the tap reads that stream; its figures: svc-inside (the service's own)",
        ),
    ] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// As a user without perf rights (root runs the test as `nobody` through `setpriv`): attach
/// falls back to /proc and the report says why perf is not used and how to get it;
/// `--diagnostics perf` refuses in one line with the same cause. Skipped when not root or
/// without `setpriv`.
#[test]
fn without_perf_rights_attach_falls_back_to_proc_and_says_why() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let (true, Some(setpriv)) = (root, setpriv) else {
        eprintln!("skipped: needs root and setpriv to run attach as another user");
        return;
    };
    // A copy of the probe that user may run (target/ may not be reachable for it).
    let dir = std::env::temp_dir().join(format!("attach-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = dir.join("latency-probe");
    std::fs::copy(PROBE, &probe).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = spawn("sleep 30");
    let pid = child.0.id().to_string();
    let as_nobody = |extra: &[&str]| {
        Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&probe)
            .args(["attach", "--pid", &pid, "--duration", "0.2"])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let auto = as_nobody(&[]);
    let perf = as_nobody(&["--diagnostics", "perf"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8_lossy(&auto.stdout);
    assert!(
        auto.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&auto.stderr)
    );
    let source = stdout
        .lines()
        .find(|l| l.starts_with("jitter diagnosis"))
        .unwrap_or_default();
    assert!(
        source.contains("counters: proc (not perf:") && source.contains("root"),
        "{source}"
    );
    assert!(
        !source.contains("not mounted"),
        "tracefs is there, only not readable: {source}"
    );
    let stderr = String::from_utf8_lossy(&perf.stderr);
    assert_eq!(perf.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--diagnostics perf") && stderr.contains("root"),
        "{stderr}"
    );
}

/// The service [`a_service_in_a_container_is_found_from_the_host`] runs inside its namespaces:
/// this test binary again, with `ATTACH_TEST_TAP` set (without it, nothing).
#[test]
#[ignore = "run inside a PID and mount namespace by a_service_in_a_container_is_found_from_the_host"]
fn service_in_a_container() {
    let Some(dir) = std::env::var_os("ATTACH_TEST_TAP") else {
        return;
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (_tap, _svc) = tap_service(std::path::Path::new(&dir), stop);
    // Until the test that started it kills its namespace (or at most a minute).
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// A service in a container (its own PID and mount namespaces, as a container runtime makes
/// them; its tap on a tmpfs only it sees): attach finds the tap through `/proc/PID/root`,
/// accepts its status file (written as pid 1) by the process's `NSpid`, and watches the
/// recording thread under the id this host gives it, not the one the service wrote. Skipped
/// when not root or without `unshare`.
#[test]
fn a_service_in_a_container_is_found_from_the_host() {
    use std::time::{Duration, Instant};
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || Command::new("unshare").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and unshare to make a container's namespaces");
        return;
    }
    let inside = std::env::temp_dir().join(format!("attach-container-{}", std::process::id()));
    std::fs::create_dir_all(&inside).unwrap();
    let tap = inside.join("tap");
    let me = std::env::current_exe().unwrap();
    let ns = Reaped(
        Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "--mount", "--propagation", "private"])
            .args(["--mount-proc", "sh", "-c"])
            .arg(r#"mount -t tmpfs none "$1" && exec "$2" --exact service_in_a_container --ignored"#)
            .arg("sh")
            .arg(&inside)
            .arg(&me)
            .env("ATTACH_TEST_TAP", &tap)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let unshare = ns.0.id();
    // The service: unshare's child, pid 1 in its namespace; its tap seen through its root.
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        let children = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"));
        let pid: Option<u32> = children.ok().and_then(|c| c.split_whitespace().next()?.parse().ok());
        let seen = pid.filter(|p| {
            let path = format!("/proc/{p}/root{}", tap.display());
            recording(std::path::Path::new(&path), "svc-inside")
        });
        if let Some(p) = seen {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "the service in its namespaces did not start its tap"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        std::fs::read_dir(&inside).unwrap().next().is_none(),
        "the tap's tmpfs is the container's own: the host sees an empty directory"
    );
    let json = json_path("container");
    let out = attach_a_second(&pid.to_string(), &json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let t = &r["tap"];
    assert_eq!(t["dir"], format!("/proc/{pid}/root{}", tap.display()), "{t}");
    let watched = r["threads"].as_array().unwrap();
    assert_eq!(watched.len(), 1, "{watched:?}");
    assert_eq!(watched[0]["name"], "svc");
    let tid = watched[0]["tid"].as_i64().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
    let nspid: Vec<&str> = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(
        nspid.len() == 2 && nspid[0] == tid.to_string() && nspid[1] != nspid[0],
        "the host's id of a thread the container numbers apart: {nspid:?}"
    );
    drop(ns);
    std::fs::remove_dir(&inside).unwrap();
    assert_eq!(t["recording_tids"], serde_json::json!([tid]));
    assert!(t["messages"].as_u64().unwrap() > 0, "{t}");
}
