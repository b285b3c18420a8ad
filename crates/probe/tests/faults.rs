//! Faults in the middle of a run, as users meet them next to a real driver: the media driver
//! killed, the subscriber killed, the publisher killed, a foreign publisher on our stream, a
//! malformed frame in a log, a late subscriber, Ctrl-C, and the two sides started in either
//! order. Each test is bounded in time and checks what the probes say and what they keep: exit
//! codes, the one-line cause, and the report written with everything measured so far.
//!
//! The driver that gets killed runs in a child process: this test binary itself, re-run with
//! `FAULT_TEST_DRIVER_DIR` set, executes [`driver_process_for_fault_tests`].

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use aeron_latency::messaging::{self, DriverStatus, EmbeddedDriver};
use aeron_latency::wire::{self, Kind, Sample};
use common::{bin, embedded_driver, read_json, scratch, spawn_in_own_group, tmp_json, wait_until, SideArgs};
use serde_json::Value;

/// Driver timeout given to the driver and the clients (ms): short, so the tests are too.
const DRIVER_TIMEOUT_MS: u64 = 2000;
/// How much later than the driver timeout a side may notice a dead driver.
const MARGIN: Duration = Duration::from_secs(4);

/// A probe process with its stderr in a file (read once it exited).
struct Proc {
    child: Child,
    stderr: PathBuf,
}

impl Proc {
    fn spawn(name: &str, args: &[&str], tag: &str) -> Proc {
        let stderr = scratch(&format!("{tag}.err"));
        let child = Command::new(bin(name))
            .args(args)
            .env("AERON_DRIVER_TIMEOUT", DRIVER_TIMEOUT_MS.to_string())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("binary runs");
        Proc { child, stderr }
    }

    /// Waits up to `limit`; kills it and fails the test if it is still running then.
    fn wait(&mut self, limit: Duration, what: &str) -> (ExitStatus, Duration, String) {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                let _ = std::fs::remove_file(&self.stderr);
                return (s, t.elapsed(), err);
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                panic!("{what} still running after {limit:?}; its stderr: {err}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A media driver in its own process (this test binary, re-run), so it can be SIGKILLed.
struct DriverProcess {
    child: Child,
    dir: PathBuf,
}

impl DriverProcess {
    fn spawn(tag: &str) -> DriverProcess {
        let dir = PathBuf::from(format!("/dev/shm/latency-probe-faults-{}-{tag}", std::process::id()));
        let child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "driver_process_for_fault_tests", "--ignored", "--nocapture"])
            .env("FAULT_TEST_DRIVER_DIR", &dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("driver process starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        wait_until(deadline, "the driver process did not start", || {
            matches!(
                messaging::driver_status(&dir, Duration::from_millis(DRIVER_TIMEOUT_MS)),
                DriverStatus::Alive { .. }
            )
        });
        DriverProcess { child, dir }
    }

    fn kill(&mut self) {
        // SIGKILL: nothing is cleaned up, as when the OOM killer or `kill -9` strikes.
        self.child.kill().expect("SIGKILL the driver");
        let _ = self.child.wait();
    }
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Not a test: the body of [`DriverProcess`]. Does nothing unless `FAULT_TEST_DRIVER_DIR` is set.
#[test]
#[ignore = "runs only as the child process of the fault tests"]
fn driver_process_for_fault_tests() {
    let Some(dir) = std::env::var_os("FAULT_TEST_DRIVER_DIR") else {
        return;
    };
    let _driver = EmbeddedDriver::builder()
        .dir(PathBuf::from(dir))
        .ipc_term_length(1 << 20)
        .driver_timeout(Duration::from_millis(DRIVER_TIMEOUT_MS))
        .spawn()
        .expect("driver");
    // Until killed (bounded, should the parent die without killing it).
    std::thread::sleep(Duration::from_secs(120));
}

/// A media driver in this process, with 1 MiB IPC terms and the short driver timeout.
fn in_process_driver() -> EmbeddedDriver {
    embedded_driver(1 << 20, Some(Duration::from_millis(DRIVER_TIMEOUT_MS)))
}

#[test]
fn a_killed_media_driver_stops_both_sides_with_the_cause_and_the_subscriber_keeps_its_report() {
    let mut driver = DriverProcess::spawn("killed");
    let dir = driver.dir.to_str().unwrap().to_owned();
    let (sub_json, pub_json) = (tmp_json("killed-sub"), tmp_json("killed-pub"));
    let sub_args = SideArgs::sub(&dir, 3001, 60).json(&sub_json);
    let mut sub = Proc::spawn("latency-sub", &sub_args.args(), "killed-sub");
    let pub_args = SideArgs::publ(&dir, 3001, 60, 100).json(&pub_json);
    let mut publ = Proc::spawn("latency-pub", &pub_args.args(), "killed-pub");
    std::thread::sleep(Duration::from_millis(2500));
    driver.kill();
    let killed = Instant::now();

    let limit = Duration::from_millis(DRIVER_TIMEOUT_MS) + MARGIN;
    let (s, _, err) = sub.wait(limit + Duration::from_secs(10), "latency-sub");
    let took = killed.elapsed();
    assert_eq!(s.code(), Some(1), "latency-sub: {err}");
    assert!(took <= limit, "latency-sub took {took:?} to notice (limit {limit:?})");
    let cause = format!("media driver at {dir} stopped responding");
    assert!(
        err.contains(&cause),
        "latency-sub's stderr does not name the cause: {err}"
    );
    let (s, _, err) = publ.wait(limit + Duration::from_secs(10), "latency-pub");
    let took = killed.elapsed();
    assert_eq!(s.code(), Some(1), "latency-pub: {err}");
    assert!(took <= limit, "latency-pub took {took:?} to notice (limit {limit:?})");
    assert!(
        err.contains(&cause),
        "latency-pub's stderr does not name the cause: {err}"
    );

    let r = read_json(&sub_json);
    assert_eq!(r["complete"], false, "{r}");
    assert!(
        r["incomplete_reason"].as_str().unwrap().contains(&cause),
        "{}",
        r["incomplete_reason"]
    );
    let received = r["received"].as_u64().unwrap();
    assert!(
        received > 100,
        "the messages measured before the driver died are kept: {r}"
    );
    assert_eq!(r["lost"], 0, "nothing sent before the driver died was lost: {r}");
    assert_eq!(r["latency_ns"]["count"].as_u64().unwrap(), received - 100);
    let p = read_json(&pub_json);
    assert_eq!(p["driver_lost"], true, "{p}");
    assert_eq!(p["complete"], false);
    assert_eq!(
        p["sent"].as_u64().unwrap(),
        received,
        "the subscriber read everything the publisher sent"
    );
}

#[test]
fn a_killed_subscriber_is_noticed_and_the_publisher_says_what_was_sent_before_and_after() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let pub_json = tmp_json("subkilled-pub");
    let sub_args = SideArgs::sub(&dir, 3002, 60);
    let mut sub = Proc::spawn("latency-sub", &sub_args.args(), "subkilled-sub");
    let pub_args = SideArgs::publ(&dir, 3002, 60, 100).wait(2).json(&pub_json);
    let mut publ = Proc::spawn("latency-pub", &pub_args.args(), "subkilled-pub");
    std::thread::sleep(Duration::from_millis(2500));
    sub.child.kill().expect("SIGKILL latency-sub");
    let _ = sub.child.wait();

    // Back-pressure until the driver drops the dead client (its liveness timeout), then not
    // connected for --wait; or back-pressure for 2 x --wait, whichever comes first.
    let limit = Duration::from_millis(DRIVER_TIMEOUT_MS) + Duration::from_secs(2) + MARGIN;
    let (s, took, err) = publ.wait(limit + Duration::from_secs(10), "latency-pub");
    assert_eq!(s.code(), Some(1), "latency-pub: {err}");
    assert!(took <= limit, "latency-pub took {took:?} to stop (limit {limit:?})");
    assert!(
        err.contains("the subscriber went away") || err.contains("the subscriber stopped reading"),
        "{err}"
    );
    let p = read_json(&pub_json);
    assert_eq!(p["complete"], false);
    assert_eq!(p["end_marker_sent"], false);
    let sent = p["sent"].as_u64().unwrap();
    let lost = &p["subscriber_lost"];
    let (before, after) = (
        lost["read_before"].as_u64().unwrap(),
        lost["sent_after"].as_u64().unwrap(),
    );
    assert_eq!(before + after, sent, "{p}");
    // Killed 2.5 s after latency-pub started: it had read the 100 warm-up messages and up to
    // 2.5 s of 5,000 msg/s (measured here: 12,411 and 12,417); a slow start or a late kill on
    // a loaded machine moves that by a second either way.
    assert!(
        (5_000..=17_600).contains(&before),
        "it read for ~1-3.5 s at 5,000 msg/s before it was killed: {p}"
    );
    // After that the publisher can only fill the window ahead of the dead subscriber's position:
    // half the 1 MiB term (the IPC publication window, 524,288 B) in 160-byte frames (128 B
    // messages + the 32 B header); a claim may start anywhere below the limit, so at most
    // ceil(524,288 / 160) = 3,277. Measured here 2,923 to 3,277 (the limit the driver last
    // published can trail the subscriber's final position a little).
    assert!(
        (2_500..=3_277).contains(&after),
        "sent after it vanished: up to one publication window of frames: {p}"
    );
    assert!(
        after > 0,
        "the publisher kept sending into the log until it filled: {p}"
    );
    assert!(err.contains(&format!("{after} were sent after that")), "{err}");
    drop(driver);
}

#[test]
fn a_killed_publisher_ends_the_subscriber_at_its_timeout_with_a_partial_report_and_nothing_lost() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let sub_json = tmp_json("pubkilled-sub");
    let sub_args = SideArgs::sub(&dir, 3003, 5).json(&sub_json);
    let started = Instant::now();
    let mut sub = Proc::spawn("latency-sub", &sub_args.args(), "pubkilled-sub");
    let pub_args = SideArgs::publ(&dir, 3003, 60, 100);
    let mut publ = Proc::spawn("latency-pub", &pub_args.args(), "pubkilled-pub");
    std::thread::sleep(Duration::from_millis(2000));
    publ.child.kill().expect("SIGKILL latency-pub");
    let _ = publ.child.wait();

    let (s, _, err) = sub.wait(Duration::from_secs(20), "latency-sub");
    assert_eq!(s.code(), Some(1), "latency-sub: {err}");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "it ended at its --timeout, not before"
    );
    assert!(err.contains("--timeout 5.0 s reached"), "{err}");
    let r = read_json(&sub_json);
    assert_eq!(r["complete"], false);
    assert_eq!(r["publisher_vanished"], true, "no end marker: the publisher vanished");
    assert_eq!(
        r["sent"],
        Value::Null,
        "what was sent is unknown without the end marker"
    );
    assert!(r["received"].as_u64().unwrap() > 100, "{r}");
    assert_eq!(
        r["lost"], 0,
        "lost counts only what was sent (gaps), not what the publisher never sent: {r}"
    );
    assert!(
        r["incomplete_reason"].as_str().unwrap().contains("no end marker"),
        "{}",
        r["incomplete_reason"]
    );
    drop(driver);
}

/// No publisher ever comes: latency-sub ends at its --timeout and names the flag's value (it
/// named what was left of it after waiting for a publisher: "--timeout 0.0 s").
#[test]
fn a_publisher_that_never_comes_ends_the_subscriber_naming_its_timeout() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let sub_args = SideArgs::sub(&dir, 3017, 2);
    let mut sub = Proc::spawn("latency-sub", &sub_args.args(), "nopub-sub");
    let (s, took, err) = sub.wait(Duration::from_secs(20), "latency-sub");
    assert_eq!(s.code(), Some(1), "latency-sub: {err}");
    assert!(took >= Duration::from_secs(2), "it ended at its --timeout, not before");
    assert!(err.contains("--timeout 2.0 s reached"), "{err}");
    drop(driver);
}

#[test]
fn foreign_bytes_on_our_stream_are_decode_errors_and_the_totals_still_add_up() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let (sub_json, pub_json) = (tmp_json("foreign-sub"), tmp_json("foreign-pub"));
    let sub_args = SideArgs::sub(&dir, 3004, 60).json(&sub_json);
    let mut sub = Proc::spawn("latency-sub", &sub_args.args(), "foreign-sub");
    let pub_args = SideArgs::publ(&dir, 3004, 3, 500).json(&pub_json);
    let mut publ = Proc::spawn("latency-pub", &pub_args.args(), "foreign-pub");

    // A publisher that is not ours, on the same stream, while the run is in full swing.
    let client = messaging::Client::connect(&dir).expect("client");
    let foreign = client.publication("aeron:ipc", 3004).expect("publication");
    std::thread::sleep(Duration::from_millis(800));
    let mut sent = 0u64;
    for i in 0..200u32 {
        let msg = format!("not a latency sample #{i}");
        let t = Instant::now();
        loop {
            match foreign.offer(msg.as_bytes()) {
                Ok(_) => break,
                Err(e) if e.is_retryable() && t.elapsed() < Duration::from_secs(2) => std::thread::yield_now(),
                Err(e) => panic!("foreign offer {i}: {e}"),
            }
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(foreign);
    drop(client);

    let (s, _, err) = publ.wait(Duration::from_secs(30), "latency-pub");
    assert!(s.success(), "latency-pub: {err}");
    let (s, _, err) = sub.wait(Duration::from_secs(30), "latency-sub");
    assert!(s.success(), "latency-sub: {err}");
    let r = read_json(&sub_json);
    let p = read_json(&pub_json);
    assert_eq!(r["decode_errors"], sent, "every foreign message is a decode error: {r}");
    assert_eq!(r["sent"], p["sent"]);
    assert_eq!(r["received"], p["sent"], "every message of ours arrived: {r}");
    assert_eq!(r["lost"], 0);
    assert_eq!(r["duplicates"], 0);
    assert_eq!(r["complete"], true, "{r}");
    assert_eq!(r["latency_ns"]["count"], 15_000, "ours were all measured");
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains("200")),
        "the report points out the undecodable payloads: {notes:?}"
    );
    drop(driver);
}

/// Publishes, through a claim on `publ`, a frame whose length field says `length`: what a
/// process writing into the log without Aeron's rules could leave there.
fn plant_frame_length(publ: &mut messaging::ConcurrentPublication, length: i32) {
    let t = Instant::now();
    let mut claim = loop {
        match publ.try_claim(64) {
            Ok(c) => break c,
            Err(e) if e.is_retryable() && t.elapsed() < Duration::from_secs(2) => std::thread::yield_now(),
            Err(e) => panic!("claim: {e}"),
        }
    };
    let payload = claim.buffer_mut().as_mut_ptr();
    // SAFETY: a claim's buffer starts right after its frame's 32-byte header, inside the mapped
    // log, and the frame is ours until published; its length field is the header's first 4
    // bytes, which Aeron's readers load atomically. The claim is forgotten so that its drop
    // does not publish the frame as padding over what is planted.
    #[allow(unsafe_code)]
    unsafe {
        (*payload.sub(32).cast::<std::sync::atomic::AtomicI32>()).store(length, std::sync::atomic::Ordering::Release);
    }
    std::mem::forget(claim);
}

/// A process that is not an Aeron client writes a malformed frame into the log of another
/// publication on our stream: latency-sub reads our publisher to the end, every message, and
/// its report names the unreadable log (it used to pass over it without a word).
#[test]
fn a_malformed_frame_on_our_stream_is_named_and_ours_all_arrive() {
    malformed_frame_named_and_ours_all_arrive("inline", 3013);
}

/// The same through messaging's hand-off thread (`--delivery channel`), which used to stop
/// handing over anything at the first poll error, whichever image it came from.
#[test]
fn a_malformed_frame_on_our_stream_leaves_the_hand_off_thread_delivering() {
    malformed_frame_named_and_ours_all_arrive("channel", 3014);
}

fn malformed_frame_named_and_ours_all_arrive(delivery: &str, stream: u32) {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let tag = format!("malformed-{delivery}");
    let (sub_json, pub_json) = (tmp_json(&format!("{tag}-sub")), tmp_json(&format!("{tag}-pub")));
    let sub_args = SideArgs::sub(&dir, stream, 60)
        .flag("--delivery", delivery)
        .json(&sub_json);
    let mut sub = Proc::spawn("latency-sub", &sub_args.args(), &tag);
    let pub_args = SideArgs::publ(&dir, stream, 2, 500).json(&pub_json);
    let mut publ = Proc::spawn("latency-pub", &pub_args.args(), &tag);

    let client = messaging::Client::connect(&dir).expect("client");
    let mut foreign = client.publication("aeron:ipc", stream as i32).expect("publication");
    std::thread::sleep(Duration::from_millis(800));
    plant_frame_length(&mut foreign, 7);

    let (s, _, err) = publ.wait(Duration::from_secs(30), "latency-pub");
    assert!(s.success(), "latency-pub: {err}");
    let (s, _, err) = sub.wait(Duration::from_secs(30), "latency-sub");
    assert!(s.success(), "latency-sub: {err}");
    drop(foreign);
    drop(client);
    let r = read_json(&sub_json);
    let p = read_json(&pub_json);
    assert_eq!(r["received"], p["sent"], "every message of ours arrived: {r}");
    assert_eq!((&r["lost"], &r["complete"]), (&0.into(), &true.into()), "{r}");
    // The subscriber's own run: the size it received, the time it started (before the
    // publisher, which started later; timestamps to the second sort as text).
    assert!(p["msg_size"].as_u64().unwrap() > 0, "{p}");
    for report in [&r, &p] {
        assert_eq!(
            report["schema_version"],
            latency_probe::model::SCHEMA_VERSION,
            "{report}"
        );
    }
    assert_eq!(r["msg_size"], p["msg_size"], "{r}");
    assert!(
        r["started_at"].as_str().unwrap() <= p["started_at"].as_str().unwrap(),
        "the subscriber started first: {} after {}",
        r["started_at"],
        p["started_at"]
    );
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("holds a frame of length 7 at position")),
        "the report names the unreadable log: {notes:?}"
    );
    drop(driver);
}

/// Ping (here, this test) takes its echoes, goes away, and only then does its end marker reach
/// pong. Ping never waits for that echo, so pong ends at once with its report complete; it
/// used to retry the echo for `--wait` (10 s) before it ended.
/// Offers one of the probe's messages, `seq` of a plan of 1 warm-up and 3 measured, whose send
/// times are this clock's now plus `offset_ns` (another host's clock, when not 0).
fn send_sample(publ: &mut messaging::ExclusivePublication, seq: u64, kind: Kind, offset_ns: i64, deadline: Instant) {
    let t = latency_probe::sys::clock::now_ns() + offset_ns;
    let sample = Sample {
        seq,
        intended_ns: t,
        sent_ns: t,
        publisher_id: 1,
        kind,
        warmup: 1,
        planned: 3,
    };
    let padding = 64;
    let mut buf = vec![0; wire::encoded_len(padding)];
    wire::encode_into(&mut buf, &sample, padding).expect("encode");
    while let Err(e) = publ.offer(&buf) {
        assert!(e.is_retryable() && Instant::now() < deadline, "{e}");
    }
}

#[test]
fn pong_does_not_hold_its_exit_to_echo_the_end_marker_to_a_ping_that_is_gone() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let sub_json = tmp_json("pong-gone");
    let pong_args = SideArgs::sub(&dir, 3015, 60)
        .flag("--mode", "rtt")
        .flag("--pong-stream", 3016)
        .json(&sub_json);
    let mut pong = Proc::spawn("latency-sub", &pong_args.args(), "pong-gone");

    let client = messaging::Client::connect(&dir).expect("client");
    let mut ping = client.exclusive_publication("aeron:ipc", 3015).expect("publication");
    let mut echoes = client.subscription("aeron:ipc", 3016).expect("subscription");
    let deadline = Instant::now() + Duration::from_secs(20);
    wait_until(deadline, "pong connected both ways", || {
        ping.is_connected() && echoes.is_connected()
    });
    let kinds = [Kind::Warmup, Kind::Measured, Kind::Measured, Kind::Measured];
    for (seq, kind) in kinds.into_iter().enumerate() {
        send_sample(&mut ping, seq as u64, kind, 0, deadline);
    }
    let (mut echoed, mut pong_session) = (0, 0);
    wait_until(deadline, "the four echoes", || {
        let _ = echoes.poll(
            &mut |_: &[u8], h: &messaging::MessageHeader<'_>| {
                echoed += 1;
                pong_session = h.session_id();
            },
            16,
        );
        echoed == kinds.len()
    });
    // Ping goes away (its echo subscription first: the driver drops its position on pong's
    // echo stream), then its end marker goes out.
    assert!(
        !client.subscriber_positions(pong_session, 3016).is_empty(),
        "ping reads pong's echoes"
    );
    drop(echoes);
    wait_until(deadline, "the driver dropped ping's echo subscription", || {
        client.subscriber_positions(pong_session, 3016).is_empty()
    });
    send_sample(&mut ping, kinds.len() as u64, Kind::End, 0, deadline);
    let (s, took, err) = pong.wait(Duration::from_secs(30), "pong");
    assert!(s.success(), "pong: {err}");
    drop((ping, client));
    let r = read_json(&sub_json);
    assert_eq!((&r["received"], &r["complete"]), (&4.into(), &true.into()), "{r}");
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("the end marker was not echoed")),
        "{notes:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "pong ended {took:?} after the end marker: {err}"
    );
    drop(driver);
}

#[test]
fn ping_interrupted_while_an_echo_is_in_flight_counts_it_neither_received_nor_lost() {
    // The test is a pong that never echoes: ping sends message 0 and waits for its echo.
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let json = tmp_json("ping-interrupted");
    let ping_args = SideArgs::publ(&dir, 3021, 30, 10)
        .flag("--mode", "rtt")
        .flag("--pong-stream", 3022)
        .wait(30)
        .json(&json);
    let mut ping = Proc::spawn("latency-pub", &ping_args.args(), "ping-interrupted");
    let client = messaging::Client::connect(&dir).expect("client");
    let mut pings = client.subscription("aeron:ipc", 3021).expect("subscription");
    let _silent = client.exclusive_publication("aeron:ipc", 3022).expect("publication");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = 0;
    wait_until(deadline, "ping's first message", || {
        let _ = pings.poll(&mut |_: &[u8], _: &messaging::MessageHeader<'_>| seen += 1, 16);
        seen > 0
    });
    let ok = Command::new("kill")
        .args(["-INT", &ping.child.id().to_string()])
        .status();
    assert!(ok.is_ok_and(|s| s.success()), "kill -INT ping");
    let (s, _, err) = ping.wait(Duration::from_secs(20), "ping");
    assert_eq!(s.code(), Some(1), "an interrupted run exits 1: {err}");
    let r = read_json(&json);
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("stopped waiting for the echo of message 0, 1 sent"),
        "{why}"
    );
    assert_eq!(
        (r["sent"].as_u64(), r["received"].as_u64(), r["lost"].as_u64()),
        (Some(0), Some(0), Some(0)),
        "{r}"
    );
    drop((pings, client, driver));
}

/// A warm-up message, three measured ones and the end marker.
const FULL_RUN: [Kind; 5] = [Kind::Warmup, Kind::Measured, Kind::Measured, Kind::Measured, Kind::End];

/// latency-sub, or pong with `--mode rtt`, reading `kinds` whose send times are `offset_ns` off
/// its clock (a sender on another host, when not 0): its exit status, stderr and JSON report.
fn read_samples(tag: &str, stream: u32, offset_ns: i64, pong: bool, kinds: &[Kind]) -> (ExitStatus, String, Value) {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let json = tmp_json(tag);
    let mut args = SideArgs::sub(&dir, stream, 60).json(&json);
    if pong {
        args = args.flag("--mode", "rtt").flag("--pong-stream", stream + 1);
    }
    let mut sub = Proc::spawn("latency-sub", &args.args(), tag);
    let client = messaging::Client::connect(&dir).expect("client");
    let mut publ = client
        .exclusive_publication("aeron:ipc", stream as i32)
        .expect("publication");
    // Pong's echoes need a reader, as ping's.
    let echoes = pong.then(|| {
        client
            .subscription("aeron:ipc", stream as i32 + 1)
            .expect("subscription")
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    wait_until(deadline, "latency-sub connected", || {
        publ.is_connected() && echoes.as_ref().is_none_or(|e| e.is_connected())
    });
    for (seq, kind) in kinds.iter().enumerate() {
        send_sample(&mut publ, seq as u64, *kind, offset_ns, deadline);
    }
    let (s, _, err) = sub.wait(Duration::from_secs(30), tag);
    (s, err, read_json(&json))
}

#[test]
fn a_publisher_that_ends_in_its_warm_up_is_said_to_have_not_the_channel_blamed() {
    let (s, err, r) = read_samples("ended-in-warm-up", 3020, 0, false, &[Kind::Warmup, Kind::End]);
    assert_eq!(s.code(), Some(1), "{err}");
    let why = r["incomplete_reason"].as_str().expect("a reason");
    assert!(
        why.contains("the publisher's end marker came after 1 of its warm-up messages"),
        "{why}"
    );
    assert!(!why.contains("same channel"), "{why}");
}

#[test]
fn send_times_from_another_host_s_clock_are_named_not_reported_as_latency() {
    // A publisher whose clock is 100 s behind this one's: every latency over 100 s.
    let (s, err, r) = read_samples("other-clock-behind", 3017, -100_000_000_000, false, &FULL_RUN);
    assert_eq!(s.code(), Some(1), "{err}");
    let why = r["not_one_clock"].as_str().expect("named in the report");
    assert!(why.contains("the smallest of 3 latencies is "), "{why}");
    assert!(why.contains("--mode rtt"), "{why}");
    assert_eq!(
        (&r["complete"], &r["incomplete_reason"]),
        (&false.into(), &why.into()),
        "{r}"
    );
    assert!(err.contains("not on this host's clock"), "{err}");

    // Pong, with ping's clock ahead: every latency below zero. Its echoes are right; its one-way
    // figures are not latencies, and it says so without failing.
    let (s, err, r) = read_samples("other-clock-pong", 3018, 100_000_000_000, true, &FULL_RUN);
    assert!(s.success(), "{err}");
    let why = r["not_one_clock"].as_str().expect("named in the report");
    assert!(
        why.starts_with("ping's send times are not on this host's clock (3 of 3 latencies below zero"),
        "{why}"
    );
    assert_eq!(r["complete"], true, "{r}");
}

#[test]
fn a_subscriber_that_joins_a_running_stream_counts_what_came_before_apart_not_as_lost() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let (first_json, late_json, pub_json) = (tmp_json("join-first"), tmp_json("join-late"), tmp_json("join-pub"));
    let first_args = SideArgs::sub(&dir, 3009, 60).json(&first_json);
    let mut first = Proc::spawn("latency-sub", &first_args.args(), "join-first");
    let pub_args = SideArgs::publ(&dir, 3009, 3, 100).json(&pub_json);
    let mut publ = Proc::spawn("latency-pub", &pub_args.args(), "join-pub");
    // The second subscriber comes once measured messages are flowing (the warm-up takes 20 ms
    // of the 3 s): an IPC subscriber added to a running publication gets the stream from where
    // it joins.
    std::thread::sleep(Duration::from_millis(1_500));
    let late_args = SideArgs::sub(&dir, 3009, 60).json(&late_json);
    let mut late = Proc::spawn("latency-sub", &late_args.args(), "join-late");

    let (s, _, err) = publ.wait(Duration::from_secs(30), "latency-pub");
    assert!(s.success(), "latency-pub: {err}");
    let (s, _, err) = first.wait(Duration::from_secs(30), "first latency-sub");
    assert!(s.success(), "first latency-sub: {err}");
    let (s, _, err) = late.wait(Duration::from_secs(30), "late latency-sub");
    let (f, l) = (read_json(&first_json), read_json(&late_json));
    assert_eq!((f["lost"].as_u64(), f.get("before_join")), (Some(0), None), "{f}");
    let sent = l["sent"].as_u64().expect("the late one got the end marker");
    let (received, before) = (l["received"].as_u64().unwrap(), l["before_join"].as_u64().unwrap_or(0));
    assert_eq!(l["lost"], 0, "what came before the join is not lost: {l}");
    assert!(before > 100, "it joined after the warm-up: {l}");
    assert_eq!(received + before, sent, "{l}");
    assert_eq!(l["complete"], false, "{l}");
    let why = l["incomplete_reason"].as_str().unwrap();
    assert!(
        why.contains("joined the stream after") && why.contains("--warmup"),
        "{why}"
    );
    assert_eq!(s.code(), Some(1), "an incomplete run exits 1: {err}");
    drop(driver);
}

/// A 60 s run of latency-sub and latency-pub on `stream`, 2 s in, then SIGINT to the
/// subscriber too when `both` (as a terminal's Ctrl-C does), else to the publisher alone.
/// Returns the driver, both processes and their `--json` files.
fn interrupted_pair(tag: &str, stream: u32, both: bool) -> (EmbeddedDriver, [Proc; 2], [PathBuf; 2]) {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let (sub_tag, pub_tag) = (format!("{tag}-sub"), format!("{tag}-pub"));
    let (sub_json, pub_json) = (tmp_json(&sub_tag), tmp_json(&pub_tag));
    let sub_args = SideArgs::sub(&dir, stream, 60).json(&sub_json);
    let sub = Proc::spawn("latency-sub", &sub_args.args(), &sub_tag);
    let pub_args = SideArgs::publ(&dir, stream, 60, 100).json(&pub_json);
    let publ = Proc::spawn("latency-pub", &pub_args.args(), &pub_tag);
    std::thread::sleep(Duration::from_millis(2_000));
    let pids = [sub.child.id(), publ.child.id()];
    for pid in if both { &pids[..] } else { &pids[1..] } {
        let ok = Command::new("kill").args(["-INT", &pid.to_string()]).status();
        assert!(ok.is_ok_and(|s| s.success()), "kill -INT {pid}");
    }
    (driver, [sub, publ], [sub_json, pub_json])
}

#[test]
fn ctrl_c_ends_both_sides_with_their_reports_and_the_totals_add_up() {
    let (driver, [mut sub, mut publ], [sub_json, pub_json]) = interrupted_pair("interrupted", 3010, true);
    let (s, took, err) = publ.wait(Duration::from_secs(20), "latency-pub");
    assert_eq!(s.code(), Some(1), "latency-pub: {err}");
    assert!(took < Duration::from_secs(5), "latency-pub took {took:?} to stop");
    assert!(err.contains("interrupted (SIGINT or SIGTERM)"), "{err}");
    let (s, took, err) = sub.wait(Duration::from_secs(20), "latency-sub");
    assert_eq!(s.code(), Some(1), "latency-sub: {err}");
    assert!(took < Duration::from_secs(5), "latency-sub took {took:?} to stop");
    let (r, p) = (read_json(&sub_json), read_json(&pub_json));
    assert_eq!(p["complete"], false, "latency-pub: {p}");
    let why = p["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("interrupted (SIGINT or SIGTERM)"), "latency-pub: {why}");
    // The subscriber says it was interrupted, or, when the publisher's end marker came before
    // its own signal was handled (a loaded machine), that the publisher stopped early.
    assert_eq!(r["complete"], false, "latency-sub: {r}");
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("interrupted (SIGINT or SIGTERM)") || why.contains("the publisher stopped early"),
        "latency-sub: {why}"
    );
    // The publisher's end marker went out: the subscriber knows what was sent, and has it all.
    let sent = p["sent"].as_u64().unwrap();
    assert!(sent > 100, "it ran a while before the interrupt: {p}");
    assert_eq!(r["sent"].as_u64(), Some(sent), "{r}");
    assert_eq!(
        (r["received"].as_u64(), r["lost"].as_u64()),
        (Some(sent), Some(0)),
        "{r}"
    );
    assert_eq!(r["publisher_vanished"], false, "{r}");
    drop(driver);
}

#[test]
fn sigint_to_the_publisher_alone_ends_the_subscribers_run_incomplete_with_nothing_lost() {
    // The publisher on another terminal (or host), or a Ctrl-C the subscriber sees only after
    // the end marker: the subscriber was not interrupted, but the run is shorter than planned.
    let (driver, [mut sub, mut publ], [sub_json, pub_json]) = interrupted_pair("pub-interrupted", 3018, false);
    let (s, _, err) = publ.wait(Duration::from_secs(20), "latency-pub");
    assert_eq!(s.code(), Some(1), "latency-pub: {err}");
    let (s, took, err) = sub.wait(Duration::from_secs(20), "latency-sub");
    assert_eq!(s.code(), Some(1), "an incomplete run exits 1: {err}");
    assert!(
        took < Duration::from_secs(5),
        "latency-sub took {took:?} after the end marker"
    );
    assert!(err.contains("the publisher stopped early"), "{err}");
    let (r, p) = (read_json(&sub_json), read_json(&pub_json));
    let sent = p["sent"].as_u64().unwrap();
    assert_eq!(r["complete"], false, "{r}");
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains(&format!("it sent {sent} of the")), "{why}");
    assert!(!why.contains("interrupted"), "this side was not: {why}");
    assert_eq!(
        (r["sent"].as_u64(), r["received"].as_u64(), r["lost"].as_u64()),
        (Some(sent), Some(sent), Some(0)),
        "{r}"
    );
    drop(driver);
}

/// `latency-probe` interrupted 4 s into a 30 s run: by a terminal's Ctrl-C (SIGINT to its
/// whole process group), or by SIGINT to it alone (it hands the signal to its children).
fn interrupt_latency_probe(whole_group: bool, stream: u32) {
    let json = tmp_json(&format!("interrupted-probe-{whole_group}"));
    let stream = stream.to_string();
    let args = [
        "--duration",
        "30",
        "--rate",
        "10000",
        "--idle",
        "yield",
        "--term-length",
        "1048576",
        "--diagnostics",
        "off",
        "--stream",
        &stream,
        "--json",
        json.to_str().unwrap(),
    ];
    let stderr = scratch(&format!("interrupted-probe-{whole_group}.err"));
    let child = spawn_in_own_group("latency-probe", &args, None, &stderr);
    let mut probe = Proc { child, stderr };
    std::thread::sleep(Duration::from_millis(4_000));
    let pid = probe.child.id() as i32;
    let target = if whole_group { -pid } else { pid };
    let ok = Command::new("kill").args(["-INT", "--", &target.to_string()]).status();
    assert!(ok.is_ok_and(|s| s.success()), "kill -INT {target}");
    let (s, took, err) = probe.wait(Duration::from_secs(40), "latency-probe");
    assert_eq!(s.code(), Some(1), "latency-probe: {err}");
    assert!(took < Duration::from_secs(15), "it took {took:?} to stop");
    let r = read_json(&json);
    assert_eq!(r["complete"], false, "{r}");
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("interrupted (SIGINT or SIGTERM)"), "{why}");
    // The publisher's own reason, not the subscriber's word for it.
    assert!(!why.contains("the publisher stopped early"), "{why}");
    let sent = r["sent"].as_u64().expect("the end marker arrived");
    assert!(sent > 1_000, "{r}");
    assert_eq!(
        (r["received"].as_u64(), r["lost"].as_u64()),
        (Some(sent), Some(0)),
        "{r}"
    );
}

#[test]
fn ctrl_c_ends_latency_probe_with_the_partial_report_of_its_children() {
    interrupt_latency_probe(true, 3011);
}

#[test]
fn sigint_to_latency_probe_alone_reaches_its_children() {
    interrupt_latency_probe(false, 3012);
}

fn both_orders(sub_first: bool) {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let stream = if sub_first { 3005 } else { 3006 };
    let tag = if sub_first { "subfirst" } else { "pubfirst" };
    let (sub_json, pub_json) = (tmp_json(&format!("{tag}-sub")), tmp_json(&format!("{tag}-pub")));
    let sub_side = SideArgs::sub(&dir, stream, 60).json(&sub_json);
    let pub_side = SideArgs::publ(&dir, stream, 1, 500).wait(20).json(&pub_json);
    let (sub_args, pub_args) = (sub_side.args(), pub_side.args());
    let (mut sub, mut publ) = if sub_first {
        let s = Proc::spawn("latency-sub", &sub_args, &format!("{tag}-sub"));
        std::thread::sleep(Duration::from_millis(1000));
        (s, Proc::spawn("latency-pub", &pub_args, &format!("{tag}-pub")))
    } else {
        let p = Proc::spawn("latency-pub", &pub_args, &format!("{tag}-pub"));
        std::thread::sleep(Duration::from_millis(1500));
        (Proc::spawn("latency-sub", &sub_args, &format!("{tag}-sub")), p)
    };
    let (s, _, err) = publ.wait(Duration::from_secs(40), "latency-pub");
    assert!(s.success(), "{tag}: latency-pub: {err}");
    let (s, _, err) = sub.wait(Duration::from_secs(40), "latency-sub");
    assert!(s.success(), "{tag}: latency-sub: {err}");
    let p = read_json(&pub_json);
    let r = read_json(&sub_json);
    assert_eq!(p["sent_before_connected"], 0, "{tag}: {p}");
    assert_eq!(p["sent"], 5_500, "{tag}");
    assert_eq!(r["received"], 5_500, "{tag}: {r}");
    assert_eq!(r["lost"], 0, "{tag}");
    assert_eq!(r["complete"], true, "{tag}");
    drop(driver);
}

#[test]
fn the_subscriber_may_start_before_the_publisher() {
    both_orders(true);
}

#[test]
fn the_subscriber_may_start_after_the_publisher_within_its_wait() {
    both_orders(false);
}

#[test]
fn a_world_writable_external_driver_dir_is_warned_about_in_the_report() {
    use std::os::unix::fs::PermissionsExt;
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    let cnc = driver.dir().join("cnc.dat");
    std::fs::set_permissions(&cnc, std::fs::Permissions::from_mode(0o666)).unwrap();
    let json = tmp_json("perms");
    let mut p = Proc::spawn(
        "latency-probe",
        &[
            "--dir",
            &dir,
            "--stream",
            "3007",
            "--idle",
            "yield",
            "--diagnostics",
            "off",
            "--floor",
            "0",
            "--duration",
            "0.2",
            "--rate",
            "5000",
            "--warmup",
            "100",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ],
        "perms",
    );
    let (s, _, err) = p.wait(Duration::from_secs(60), "latency-probe");
    assert!(s.success(), "{err}");
    let r = read_json(&json);
    let warnings: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| n.contains("world-writable"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning, not one per side: {:?}", r["notes"]);
    assert!(
        warnings[0].contains("cnc.dat") && warnings[0].contains("0666") && warnings[0].contains("chmod -R o-w"),
        "{}",
        warnings[0]
    );
    drop(driver);
}

#[test]
fn latency_probe_stops_at_once_when_latency_pub_refuses_an_external_drivers_setup() {
    let driver = in_process_driver();
    let dir = driver.dir().to_str().unwrap().to_owned();
    // Above one frame of the external driver's MTU: only latency-pub can tell, at setup.
    let mut p = Proc::spawn(
        "latency-probe",
        &[
            "--dir",
            &dir,
            "--stream",
            "3008",
            "--msg-size",
            "2048",
            "--floor",
            "0",
            "--diagnostics",
            "off",
            "--quiet",
        ],
        "pubrefused",
    );
    let (s, took, err) = p.wait(Duration::from_secs(60), "latency-probe");
    assert_eq!(s.code(), Some(2), "{err}");
    assert!(
        took < Duration::from_secs(20),
        "it did not wait for latency-sub's timeout: {took:?}"
    );
    assert!(
        err.contains("latency-pub: --msg-size 2048 is larger than one frame"),
        "{err}"
    );
    assert!(err.contains("latency-pub refused the setup"), "{err}");
    drop(driver);
}
