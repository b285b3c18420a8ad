//! The driver's counters over a small IPC run through a real embedded C media driver: what
//! [`latency_probe::measure::counters::diff`] makes of two real snapshots. Prints every counter the
//! driver reports and the rendered section, so the real labels can be checked against the
//! module's tables (`cargo test -p latency-probe --test counters -- --nocapture`).

mod common;

use std::time::{Duration, Instant};

use aeron_latency::messaging::{Client, ConcurrentPublication, DriverCounter, MessageHeader, Subscriber};
use common::{embedded_driver, wait_until};
use latency_probe::measure::counter_window::CounterWindow;
use latency_probe::measure::counters::diff;
use latency_probe::measure::counters::POSITION_TYPE_IDS;
use latency_probe::measure::counters::TIMESTAMP_TYPE_IDS;
use latency_probe::measure::counters::WATCHED_SYSTEM_COUNTERS;
use latency_probe::render::counters::render;

const MESSAGES: u32 = 1000;

/// Offers `msg`, draining `sub` while back-pressured (one thread plays both sides).
fn offer(p: &mut ConcurrentPublication, sub: &mut Subscriber, got: &mut u32, msg: &[u8], deadline: Instant) {
    loop {
        match p.offer(msg) {
            Ok(_) => return,
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                if drain(sub, got) == 0 {
                    std::thread::yield_now();
                }
            }
            Err(e) => panic!("offer failed: {e}"),
        }
    }
}

fn drain(sub: &mut Subscriber, got: &mut u32) -> usize {
    sub.poll(&mut |_: &[u8], _: &MessageHeader<'_>| *got += 1, 64)
        .expect("the client has its driver")
}

/// Sends [`MESSAGES`] and receives them all, on this thread.
fn move_messages(publ: &mut ConcurrentPublication, sub: &mut Subscriber, deadline: Instant) {
    let mut got = 0u32;
    for i in 0..MESSAGES {
        offer(publ, sub, &mut got, &[i as u8; 32], deadline);
    }
    while got < MESSAGES {
        assert!(Instant::now() < deadline, "received {got} of {MESSAGES}");
        if drain(sub, &mut got) == 0 {
            std::thread::yield_now();
        }
    }
    assert_eq!(got, MESSAGES);
}

fn print_all(title: &str, counters: &[DriverCounter]) {
    println!("{title}:");
    for c in counters {
        println!("  {:>3} {:>3} {}: {}", c.id, c.type_id, c.label, c.value);
    }
}

#[test]
fn a_real_ipc_run_shows_positions_in_the_note_errors_watched_and_no_timestamps_moved() {
    let driver = embedded_driver(64 * 1024, None);
    let client = Client::connect(driver.dir()).expect("client connects");
    let before = client.counters();
    assert!(!before.is_empty(), "no counters read from {}", driver.dir().display());

    let mut sub = client.subscription("aeron:ipc", 7001).expect("subscription");
    let mut publ = client.publication("aeron:ipc", 7001).expect("publication");
    let deadline = Instant::now() + Duration::from_secs(20);
    wait_until(deadline, "publication never connected", || publ.is_connected());
    move_messages(&mut publ, &mut sub, deadline);
    let after = client.counters();
    print_all("every counter after the run", &after);
    // latency-probe reads them from cnc.dat without a client: the same counters, same labels.
    let direct = aeron_latency::messaging::read_driver_counters(driver.dir()).expect("cnc.dat readable");
    let labels = |v: &[aeron_latency::messaging::DriverCounter]| -> Vec<(i32, i32, String)> {
        v.iter().map(|c| (c.id, c.type_id, c.label.clone())).collect()
    };
    assert_eq!(
        labels(&direct),
        labels(&after),
        "cnc.dat read directly = through the client"
    );
    assert!(direct.iter().any(|c| c.type_id == 0 && c.label.starts_with("Errors")));
    assert!(aeron_latency::messaging::read_driver_counters(std::path::Path::new("/nonexistent")).is_none());

    let d = diff(&before, &after);
    println!("{}", render(&d));

    let note = d.note.as_deref().expect("a note");
    assert!(note.contains("positions: "), "{note}");
    assert!(
        d.watched
            .iter()
            .any(|w| w.type_id == 0 && w.label.starts_with("Errors: version=") && w.delta == 0),
        "{:?}",
        d.watched
    );
    for m in &d.moved {
        assert!(
            !TIMESTAMP_TYPE_IDS.iter().any(|(t, _)| *t == m.type_id),
            "timestamp counter in moved: {m:?}"
        );
        assert!(
            !POSITION_TYPE_IDS.iter().any(|(t, _)| *t == m.type_id),
            "position counter in moved: {m:?}"
        );
    }
    // Every watched system counter exists under the label this driver gives it.
    let system: Vec<&str> = after
        .iter()
        .filter(|c| c.type_id == 0)
        .map(|c| c.label.as_str())
        .collect();
    for (_, name) in WATCHED_SYSTEM_COUNTERS {
        assert!(
            d.watched
                .iter()
                .any(|w| w.label == name || w.label.starts_with(&format!("{name}: "))),
            "watched counter {name:?} not found among the driver's system counters {system:?}"
        );
    }
}

#[test]
fn a_window_from_the_connect_leaves_making_the_logs_to_the_setup() {
    let driver = embedded_driver(64 * 1024, None);
    let window = CounterWindow::start(driver.dir().to_path_buf(), vec![7002]);
    let client = Client::connect(driver.dir()).expect("client connects");
    let mut sub = client.subscription("aeron:ipc", 7002).expect("subscription");
    let mut publ = client.publication("aeron:ipc", 7002).expect("publication");
    let deadline = Instant::now() + Duration::from_secs(20);
    wait_until(deadline, "publication never connected", || publ.is_connected());
    wait_until(deadline, "the window never saw the connect", || !window.waiting());
    move_messages(&mut publ, &mut sub, deadline);
    let end = aeron_latency::messaging::read_driver_counters(driver.dir()).expect("cnc.dat readable");
    let d = window.finish(&end);
    println!("{}", render(&d));
    // The log was made and mapped before the connect: setup, not the run.
    let setup = d.setup.expect("the connect was seen");
    let mapped = |l: &[latency_probe::model::CounterDelta]| {
        l.iter()
            .any(|x| x.label.starts_with("Bytes currently mapped") && x.delta > 0)
    };
    assert!(mapped(&setup), "{setup:?}");
    assert!(!mapped(&d.moved), "{:?}", d.moved);
    // The run's positions advanced from the connect on: none was created during it.
    let note = d.note.as_deref().expect("a note");
    assert!(
        note.contains("positions: ") && !note.contains("created during the run"),
        "{note}"
    );
}
