//! What a client sees when its media driver goes away, against real drivers: an orderly stop
//! (the driver writes the null heartbeat), a SIGKILL and a SIGSTOP of a driver in another
//! process (its heartbeat goes stale), and a client paused for longer than the driver's client
//! liveness timeout. Each checks the typed cause, how soon it is noticed
//! (within the driver timeout plus slack), and that what was received before stays received
//! (with feature `tap`, also in a recording subscription's figure). And a live driver too busy
//! to answer an add within the client's timeout.
#![cfg(feature = "embedded-driver")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::move_messages;
use messaging::{
    AddError, AsyncError, Client, ControlledAction, DriverLiveness, EmbeddedDriver, HandoffEnd, HandoffOptions,
    LivenessError, MessageHeader, OfferError, PollError,
};

/// Held by the tests that time how soon a loss is noticed (within `TIMEOUT + SLACK`), and by
/// the one that keeps a driver busy filling 3 GiB of logs (which would eat into their slack).
static TIMED: Mutex<()> = Mutex::new(());

/// [`TIMED`], held for the rest of the test.
fn timed() -> std::sync::MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The driver timeout of these tests: short, so a lost driver is noticed quickly.
const TIMEOUT: Duration = Duration::from_secs(2);
/// What a loaded 2-core machine may add to it.
const SLACK: Duration = Duration::from_secs(3);

fn private_dir(tag: &str) -> PathBuf {
    let d = PathBuf::from(format!("/dev/shm/messaging-liveness-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// An embedded driver in `dir` with this file's short driver timeout.
fn embedded_driver(dir: &Path) -> EmbeddedDriver {
    EmbeddedDriver::builder()
        .dir(dir)
        .ipc_term_length(64 << 10)
        .driver_timeout(TIMEOUT)
        .spawn()
        .expect("driver starts")
}

fn client(dir: &Path) -> Client {
    Client::builder()
        .dir(dir)
        .driver_timeout(TIMEOUT)
        .build()
        .expect("client connects")
}

/// What a client's error handler received.
type Errors = Arc<Mutex<Vec<AsyncError>>>;

/// A client whose asynchronous errors are collected instead of printed.
fn client_with_errors(dir: &Path) -> (Client, Errors) {
    let errors = Errors::default();
    let sink = errors.clone();
    let client = Client::builder()
        .dir(dir)
        .driver_timeout(TIMEOUT)
        .error_handler(move |e| sink.lock().unwrap().push(e.clone()))
        .build()
        .expect("client connects");
    (client, errors)
}

/// The liveness errors the handler received (after giving a repeating aeron-rs a moment).
fn liveness_errors(errors: &Errors) -> Vec<LivenessError> {
    std::thread::sleep(Duration::from_millis(100));
    errors
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AsyncError::Liveness(l) => Some(l.clone()),
            _ => None,
        })
        .collect()
}

/// Waits until `live` is inactive; returns how long it took, or fails after `limit`.
fn time_to_notice(live: &DriverLiveness, since: Instant, limit: Duration) -> Duration {
    while live.is_active() {
        assert!(since.elapsed() < limit, "still active after {:?}", since.elapsed());
        std::thread::sleep(Duration::from_millis(1));
    }
    since.elapsed()
}

#[test]
fn after_a_driver_restart_a_new_client_carries_on() {
    let _timed = timed();
    let dir = private_dir("restart");
    let spawn = || embedded_driver(&dir);
    let first = spawn();
    let old = client(&dir);
    move_messages(&old, 14, 50);
    first.stop();
    time_to_notice(&old.liveness(), Instant::now(), TIMEOUT + SLACK);
    // The documented way on: a new driver in the same directory, a new client; the old client
    // is dropped whenever convenient (its close goes to the old, unlinked cnc.dat).
    let _second = spawn();
    let new = client(&dir);
    assert!(new.liveness().is_active());
    move_messages(&new, 14, 50);
    assert!(old.is_closed());
    drop(old);
    move_messages(&new, 15, 50);
}

#[test]
fn an_orderly_driver_stop_is_noticed_as_closed_at_once() {
    let _timed = timed();
    let dir = private_dir("orderly");
    let driver = embedded_driver(&dir);
    let (client, errors) = client_with_errors(&dir);
    let live = client.liveness();
    move_messages(&client, 10, 100);
    assert!(live.is_active() && !client.is_closed() && live.error().is_none());
    let publ = client.publication("aeron:ipc", 13).expect("publication");
    let mut sub = client.subscription("aeron:ipc", 13).expect("subscription");
    common::wait_until_connected(&publ, &sub);
    assert!(sub.is_connected());

    let stopped = Instant::now();
    driver.stop();
    let took = time_to_notice(&live, stopped, TIMEOUT + SLACK);
    assert_eq!(live.error(), Some(LivenessError::DriverClosed { dir: dir.clone() }));
    assert!(client.is_closed());
    // Neither side says it is connected any more, whatever its image count last was.
    assert!(!publ.is_connected() && !sub.is_connected());
    // The next offer and claim say so, typed, instead of back-pressure that never clears.
    assert_eq!(publ.offer(b"after the stop"), Err(OfferError::ClientClosed));
    assert_eq!(publ.try_claim(8).err(), Some(OfferError::ClientClosed));
    assert_eq!(
        sub.poll(&mut |_: &[u8], _: &MessageHeader<'_>| (), 10),
        Err(PollError::ClientClosed)
    );
    assert_eq!(
        sub.controlled_poll(&mut |_: &[u8], _: &MessageHeader<'_>| ControlledAction::Continue, 10),
        Err(PollError::ClientClosed)
    );
    // Adding fails at once, not after the driver timeout (the conductor no longer runs).
    let asked = Instant::now();
    assert!(matches!(
        client.publication("aeron:ipc", 99),
        Err(AddError::ClientClosed)
    ));
    assert!(asked.elapsed() < TIMEOUT, "took {:?}", asked.elapsed());
    // The error handler heard it once.
    assert_eq!(
        liveness_errors(&errors),
        [LivenessError::DriverClosed { dir: dir.clone() }]
    );
    let msg = live.describe();
    assert!(
        msg.contains(&dir.display().to_string()) && msg.contains("closed"),
        "{msg}"
    );
    // The null heartbeat is seen by the next duty cycle, long before the driver timeout.
    assert!(took < TIMEOUT, "noticed after {took:?}");
    eprintln!("orderly stop noticed after {took:?}");
}

/// `Client::subscribe`'s thread stops when its client loses the driver, and says so; the
/// consumer sees the channel end.
#[test]
fn the_hand_off_thread_ends_when_the_driver_stops() {
    let _timed = timed();
    let dir = private_dir("handoff");
    let driver = embedded_driver(&dir);
    let client = client(&dir);
    let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handoff = client
        .subscribe("aeron:ipc", 16, tx, stop, HandoffOptions::default())
        .expect("subscribe");
    let publ = client.publication("aeron:ipc", 16).expect("publication");
    let connected = Instant::now();
    while publ.offer(b"one").is_err() {
        assert!(connected.elapsed() < TIMEOUT + SLACK, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(rx.recv_timeout(TIMEOUT + SLACK).expect("handed over"), b"one");
    let stopped = Instant::now();
    driver.stop();
    assert_eq!(
        rx.recv_timeout(TIMEOUT + SLACK),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected),
        "the channel ends with the thread"
    );
    eprintln!("hand-off thread ended {:?} after the stop", stopped.elapsed());
    assert_eq!(handoff.end(), Some(HandoffEnd::ClientClosed));
    assert_eq!((handoff.delivered(), handoff.poll_errors()), (1, 0));
    assert_eq!(handoff.stop(), HandoffEnd::ClientClosed);
}

/// The body of [`common::DriverProcess`], run in the child.
#[test]
#[ignore = "runs only as the child process of the tests that kill or stop a driver"]
fn driver_process() {
    common::driver_process_body();
}

fn a_driver_that_stops_beating(sig: &str, tag: &str) {
    let _timed = timed();
    let driver = common::DriverProcess::spawn(&private_dir(tag), TIMEOUT);
    let (client, errors) = client_with_errors(&driver.dir);
    let live = client.liveness();
    move_messages(&client, 20, 100);
    // The exclusive publication writes the log without aeron-rs: it must see the loss too.
    let mut sub = client.subscription("aeron:ipc", 21).unwrap();
    let excl = client.exclusive_publication("aeron:ipc", 21).unwrap();
    let mut got = 0u64;
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0..100u64 {
        while let Err(e) = excl.offer(&i.to_le_bytes()) {
            assert!(
                e.is_retryable() && Instant::now() < deadline,
                "exclusive offer {i}: {e}"
            );
            std::thread::yield_now();
        }
    }
    while got < 100 {
        assert!(
            Instant::now() < deadline,
            "received {got} of 100 from the exclusive publication"
        );
        sub.poll(
            &mut |m: &[u8], _: &MessageHeader<'_>| {
                assert_eq!(m, got.to_le_bytes());
                got += 1;
            },
            16,
        )
        .unwrap();
    }
    let at = Instant::now();
    driver.signal(sig);
    let took = time_to_notice(&live, at, TIMEOUT + SLACK);
    assert_eq!(excl.offer(b"after"), Err(OfferError::ClientClosed));
    assert!(matches!(excl.try_claim(8), Err(OfferError::ClientClosed)));
    assert_eq!(excl.position(), Err(OfferError::ClientClosed));
    assert!(!excl.is_connected());
    assert!(!sub.is_connected(), "the subscriber follows the client's liveness too");
    assert_eq!(
        live.error(),
        Some(LivenessError::DriverTimedOut {
            dir: driver.dir.clone(),
            timeout: TIMEOUT
        })
    );
    assert!(client.is_closed());
    assert!(live.describe().contains("stopped responding"), "{}", live.describe());
    // Once, although aeron-rs reports its own driver timeout on every duty cycle after it.
    assert_eq!(
        liveness_errors(&errors),
        [LivenessError::DriverTimedOut {
            dir: driver.dir.clone(),
            timeout: TIMEOUT
        }]
    );
    // Not before the timeout (the heartbeat was fresh when the signal went), and not long after.
    assert!(took + Duration::from_millis(1_100) >= TIMEOUT, "noticed after {took:?}");
    eprintln!("{sig}: noticed after {took:?}");
}

/// A subscription that records latency (feature `tap`) and loses its driver: its polls fail
/// typed, and still hand over what was recorded before the loss, so the tap's logs and summary
/// hold every message received although the service never stopped recording.
#[cfg(feature = "tap")]
#[test]
fn a_recording_subscription_hands_its_counts_over_after_its_driver_is_killed() {
    let _timed = timed();
    use messaging::tap::{RecordLatency, Tap};
    use messaging::StampClock;

    let driver = common::DriverProcess::spawn(&private_dir("tapkilled"), TIMEOUT);
    let client = client(&driver.dir);
    let live = client.liveness();
    let logs = private_dir("tapkilled-logs");
    let tap = Tap::builder(&logs).interval(Duration::from_millis(5)).start().unwrap();
    let mut sub = client.subscription("aeron:ipc", 22).unwrap();
    sub.record_latency(&tap, RecordLatency::hop("k")).unwrap();
    let mut publ = client.exclusive_publication("aeron:ipc", 22).unwrap();
    publ.stamp_send_time(Some(StampClock::Monotonic));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::yield_now();
    }
    for i in 0..100u64 {
        while publ.offer(&i.to_le_bytes()).is_err() {
            assert!(Instant::now() < deadline, "offer {i}");
            std::thread::yield_now();
        }
    }
    let mut got = 0;
    while got < 100 {
        assert!(Instant::now() < deadline, "received {got} of 100");
        got += sub.poll(&mut |_: &[u8], _: &MessageHeader<'_>| (), 100).unwrap();
    }
    // No poll until the loss is noticed: the writer's asks meanwhile stay unanswered, and the
    // last poll's records sit in the recorder's active interval.
    driver.signal("-KILL");
    time_to_notice(&live, Instant::now(), TIMEOUT + SLACK);
    // The service goes on polling, also while the tap stops.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(tap.stop()).unwrap());
    let summary = loop {
        assert_eq!(
            sub.poll(&mut |_: &[u8], _: &MessageHeader<'_>| (), 100),
            Err(PollError::ClientClosed)
        );
        match rx.try_recv() {
            Ok(stopped) => break stopped.unwrap(),
            Err(_) => {
                assert!(Instant::now() < deadline + TIMEOUT + SLACK, "the tap never stopped");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    let k = summary.figures.iter().find(|f| f.name == "k").unwrap();
    assert_eq!((k.recorded, summary.unanswered), (100, 0), "{summary:?}");
    drop(sub);
    let _ = std::fs::remove_dir_all(&logs);
}

#[test]
fn a_killed_driver_is_noticed_as_timed_out_within_the_driver_timeout() {
    a_driver_that_stops_beating("-KILL", "killed");
}

#[test]
fn a_stopped_driver_is_noticed_as_timed_out_within_the_driver_timeout() {
    a_driver_that_stops_beating("-STOP", "stopped");
}

/// Not a test: a client in a child process for `a_paused_client_...`. Connects to
/// `LIVENESS_TEST_CLIENT_DIR`, moves messages, says `ready`, then waits until its liveness
/// turns false and prints the cause (`{:?}`) and how long after the resume it noticed, or
/// `lost-before-stop` when its loop never saw the stop (the driver had already timed it out).
#[test]
#[ignore = "runs only as the child process of the liveness tests"]
fn client_process_for_liveness_tests() {
    let Some(dir) = std::env::var_os("LIVENESS_TEST_CLIENT_DIR") else {
        return;
    };
    let client = client(Path::new(&dir));
    let live = client.liveness();
    move_messages(&client, 30, 100);
    println!("ready");
    let started = Instant::now();
    let mut last = Instant::now();
    let mut resumed = None;
    // A gap between two clock reads is the SIGSTOP (one read a turn, so no stop falls between
    // reads unseen): the time to notice counts from the resume.
    let gap = Duration::from_millis(500);
    while live.is_active() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
        let now = Instant::now();
        if now - last > gap {
            resumed = Some(now);
        }
        last = now;
    }
    // Already lost at the first look after the resume: noticed at once.
    let took = resumed
        .map(|r| r.elapsed())
        .or_else(|| (last.elapsed() > gap).then_some(Duration::ZERO));
    let when = took.map_or("lost-before-stop".to_string(), |d| {
        format!("after-resume-ms {}", d.as_secs_f64() * 1e3)
    });
    println!("cause {:?} closed {} {when}", live.error(), client.is_closed());
}

/// One round of `a_paused_client_...`: a client process stopped for 2.5 s under a driver that
/// forgets a silent client after 1 s. Returns what the client process said once it ended.
fn pause_a_client(driver: &common::DriverProcess) -> String {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "client_process_for_liveness_tests",
            "--ignored",
            "--nocapture",
        ])
        .env("LIVENESS_TEST_CLIENT_DIR", &driver.dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("client process starts");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead as _;
    while !line.contains("ready") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the client process ended before it was ready"
        );
    }
    common::signal(&child, "-STOP");
    std::thread::sleep(Duration::from_millis(2_500));
    common::signal(&child, "-CONT");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let _ = child.wait();
    rest
}

#[test]
fn a_paused_client_the_driver_timed_out_is_noticed_as_client_timed_out() {
    let _timed = timed();
    // The driver forgets a silent client after 1 s; the client is stopped for 2.5 s.
    let driver = common::DriverProcess::spawn_with(
        &private_dir("paused-client"),
        TIMEOUT,
        &[("AERON_CLIENT_LIVENESS_TIMEOUT", "1s")],
    );
    let want = format!("cause Some(ClientTimedOut {{ dir: {:?} }}) closed true", driver.dir);
    // A loaded machine can starve the client's keepalive for 1 s before the stop: that round
    // says so and is run again (at most three rounds).
    let mut said = Vec::new();
    let rest = loop {
        let rest = pause_a_client(&driver);
        assert!(rest.contains(&want), "client process said: {rest}");
        if !rest.contains("lost-before-stop") {
            break rest;
        }
        said.push(rest);
        assert!(said.len() < 3, "every client was timed out before its stop: {said:?}");
    };
    let took: f64 = rest
        .split("after-resume-ms ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::MAX);
    eprintln!(
        "paused client: {} (rounds lost before the stop: {})",
        rest.trim(),
        said.len()
    );
    assert!(
        took < (TIMEOUT + SLACK).as_millis() as f64,
        "noticed {took} ms after the resume"
    );
}

/// A subscription whose add the driver answers only after the client's driver timeout, while
/// its heartbeat stays fresh: the client reports the timeout, the pending add is dropped, and
/// the driver's late answer does not hang the client's close (aeron-rs would hold the new
/// subscription until the close and drop it under its own conductor lock). The driver is kept
/// busy by two publications whose logs (1.5 GiB each, in /dev/shm) it fills with zeros before it
/// reads the next command; in its dedicated threading mode that work is off the conductor,
/// which goes on beating.
#[test]
fn a_subscription_the_driver_answers_after_the_timeout_never_hangs_the_client() {
    const SHORT: Duration = Duration::from_millis(400);
    let _timed = timed();
    let free = messaging::free_bytes(Path::new("/dev/shm")).unwrap_or(0);
    if free < 4 << 30 {
        eprintln!(
            "skipped: {} MiB free in /dev/shm, the busy driver needs 3 GiB",
            free >> 20
        );
        return;
    }
    // The client's keepalives wait behind the busy command too: the driver's client liveness
    // timeout (its driver timeout here) is long, the client's own driver timeout short.
    let driver = common::DriverProcess::spawn_with(
        &private_dir("late"),
        Duration::from_secs(10),
        &[("AERON_THREADING_MODE", "DEDICATED"), ("AERON_TIMER_INTERVAL", "10ms")],
    );
    let dir = driver.dir.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let client = Client::builder().dir(&dir).driver_timeout(SHORT).build().unwrap();
        let started = Instant::now();
        let big: Vec<_> = [70, 71]
            .map(|stream| client.async_add_publication("aeron:ipc?term-length=512m|sparse=false", stream))
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut late = client.async_add_subscription("aeron:ipc", 72).unwrap();
        let refused = loop {
            match late.poll() {
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                Ok(Some(_)) => break None,
                Err(e) => break Some(e),
            }
        };
        let answered_late = matches!(refused, Some(AddError::Timeout { .. }));
        // The conductor looks at the dropped add while the driver is still busy.
        drop(late);
        std::thread::sleep(Duration::from_millis(20));
        // Once a later add is answered, the driver has answered the dropped one too, and the
        // conductor has taken that answer (the driver answers in order).
        let deadline = Instant::now() + Duration::from_secs(20);
        let after = loop {
            match client.subscription("aeron:ipc", 73) {
                Ok(s) => break s,
                Err(AddError::Timeout { .. }) if Instant::now() < deadline => {}
                Err(e) => panic!("a later subscription: {e}"),
            }
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !client.is_closed(),
            "the client lost its driver: {}",
            client.liveness().describe()
        );
        eprintln!(
            "the driver answered the later add {:?} after the first",
            started.elapsed()
        );
        drop((after, big));
        drop(client);
        let _ = tx.send(answered_late);
    });
    let answered_late = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(late) => late,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the client hung closing after the driver answered a dropped subscription late")
        }
        Err(e) => panic!("the client's thread failed (its panic is above): {e}"),
    };
    assert!(
        answered_late,
        "the driver answered within the timeout: nothing was tested"
    );
}
