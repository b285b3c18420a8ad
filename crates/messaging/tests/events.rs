//! What reaches a service besides messages, against a real driver: image available and
//! unavailable events (with the publisher's session, in order, counted exactly), an image
//! counted is one the next poll reads, dropping subscribers and pending subscriptions never hangs
//! the client, and errors the media driver logs, handed to the client's error handler instead
//! of stderr.
#![cfg(feature = "embedded-driver")]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use messaging::{AsyncError, Client, EmbeddedDriver, ImageEvent, ImageEventKind, MessageHeader, Subscriber};

/// Takes image events until `done` says so; fails the test after 10 s.
fn events_until(sub: &mut Subscriber, mut done: impl FnMut(&[ImageEvent]) -> bool) -> Vec<ImageEvent> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while !done(&got) {
        assert!(Instant::now() < deadline, "image events so far: {got:#?}");
        sub.poll_image_events(|e| got.push(e.clone()));
        std::thread::sleep(Duration::from_millis(1));
    }
    got
}

/// A driver of the test's own whose closed publications linger 50 ms instead of 5 s.
fn quick_driver() -> EmbeddedDriver {
    EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .term_length(64 << 10)
        .publication_linger(Duration::from_millis(50))
        .spawn()
        .unwrap()
}

#[test]
fn images_come_and_go_as_events_and_the_count_follows_them() {
    // One driver's publications on a channel and stream share one session: a second image
    // needs a second driver publishing to the same UDP endpoint.
    const CHANNEL: &str = "aeron:udp?endpoint=localhost:24993";
    let (near, far) = (quick_driver(), quick_driver());
    let subscribing = Client::connect(near.dir()).unwrap();
    let mut sub = subscribing.subscription(CHANNEL, 50).unwrap();
    assert_eq!((sub.image_count(), sub.is_connected()), (0, false));

    let first = Client::connect(near.dir()).unwrap().publication(CHANNEL, 50).unwrap();
    let second = Client::connect(far.dir()).unwrap().publication(CHANNEL, 50).unwrap();
    let joined = events_until(&mut sub, |e| e.len() >= 2);
    assert!(
        joined.iter().all(|e| e.kind == ImageEventKind::Available),
        "{joined:#?}"
    );
    let mut sessions: Vec<i32> = joined.iter().map(|e| e.session_id).collect();
    sessions.sort_unstable();
    let mut expected = vec![first.session_id(), second.session_id()];
    expected.sort_unstable();
    assert_eq!(sessions, expected);
    assert!(
        joined.iter().all(|e| e.source_identity.starts_with("127.0.0.1:")),
        "{joined:#?}"
    );
    assert_eq!((sub.image_count(), sub.is_connected()), (2, true));

    let gone = second.session_id();
    let closed = Instant::now();
    drop(second);
    let left = events_until(&mut sub, |e| !e.is_empty());
    println!("unavailable {:?} after the publication closed", closed.elapsed());
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!((left[0].kind, left[0].session_id), (ImageEventKind::Unavailable, gone));
    assert_eq!(sub.image_count(), 1);

    let gone = first.session_id();
    drop(first);
    let left = events_until(&mut sub, |e| !e.is_empty());
    assert_eq!((left[0].kind, left[0].session_id), (ImageEventKind::Unavailable, gone));
    assert_eq!((sub.image_count(), sub.is_connected()), (0, false));
    assert_eq!(sub.image_events_dropped(), 0);
    // Nothing more: every event was handed over exactly once.
    assert_eq!(sub.poll_image_events(|e| panic!("unexpected {e}")), 0);
}

/// A subscriber that saw `image_count() > 0` reads the image in its very next poll (Aeron's
/// contract: `isConnected` and `poll` see the same images), and dropping it right after never
/// hangs the client. Each round adds a subscription to a connected stream, spins until it
/// counts its image, offers one message, polls once (the message must be there) and drops the
/// subscriber while the client conductor may still be handling that image: the rounds give
/// the conductor many chances to be caught in either window.
#[test]
fn an_image_counted_is_read_by_the_next_poll_and_dropping_it_then_never_hangs() {
    const ROUNDS: u64 = 200;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let d = common::driver();
        let client = Client::connect(d.dir()).unwrap();
        let mut keeper = client.subscription("aeron:ipc", 52).unwrap();
        let publ = client.exclusive_publication("aeron:ipc", 52).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !publ.is_connected() {
            assert!(Instant::now() < deadline, "the publication never connected");
            std::thread::sleep(Duration::from_millis(1));
        }
        for round in 0..ROUNDS {
            let mut sub = client.subscription("aeron:ipc", 52).unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while sub.image_count() == 0 {
                assert!(Instant::now() < deadline, "round {round}: no image in 10 s");
                std::thread::yield_now();
            }
            let sent: [u8; 8] = u64::to_le_bytes(round);
            while let Err(e) = publ.offer(&sent) {
                assert!(e.is_retryable(), "round {round}: {e}");
                std::thread::yield_now();
            }
            // An IPC image joins where the slowest subscriber is (Aeron's join position), so
            // it may start a few of the keeper's messages back: this round's comes last.
            let mut got = Vec::new();
            let read = sub.poll(&mut |m: &[u8], _: &MessageHeader<'_>| got.push(m.to_vec()), 1_000);
            assert_eq!(
                (read.map(|n| n == got.len()), got.last()),
                (Ok(true), Some(&sent.to_vec())),
                "round {round}: the image was counted but the poll did not read it"
            );
            drop(sub);
            // The first subscription keeps the stream connected; drained, it never holds it back.
            keeper.poll(&mut |_: &[u8], _: &MessageHeader<'_>| {}, 10).unwrap();
            let _ = tx.send(round);
        }
    });
    let mut done = 0;
    while done < ROUNDS {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(round) => done = round + 1,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("round {done} of {ROUNDS} hung for 30 s: the client's conductor is stuck")
            }
            // The rounds' thread panicked: its message is above.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("round {done} failed"),
        }
    }
}

/// A subscription added and dropped before its pending add handed it over, after the driver
/// answered: closing the client afterwards does not hang (aeron-rs held the last reference to
/// it and dropped it under its own conductor lock when the client closed), and the client goes
/// on adding and using other subscriptions meanwhile.
#[test]
fn a_pending_subscription_dropped_after_the_driver_answered_never_hangs_the_client() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let d = common::driver();
        let client = Client::connect(d.dir()).unwrap();
        let pending = client.async_add_subscription("aeron:ipc", 53).unwrap();
        // Longer than the driver takes to answer and the conductor to take the answer.
        std::thread::sleep(Duration::from_millis(300));
        drop(pending);
        let mut sub = client.subscription("aeron:ipc", 54).unwrap();
        let publ = client.publication("aeron:ipc", 54).unwrap();
        common::wait_until_connected(&publ, &sub);
        while publ.offer(b"after").is_err() {
            std::thread::yield_now();
        }
        let mut got = 0;
        while got == 0 {
            got = sub.poll(&mut |_: &[u8], _: &MessageHeader<'_>| {}, 10).unwrap();
        }
        drop((sub, publ));
        drop(client);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the client hung closing after a pending subscription was dropped");
}

#[test]
fn errors_the_driver_logs_reach_the_client_s_error_handler() {
    let d = common::driver();
    let errors: Arc<Mutex<Vec<AsyncError>>> = Arc::default();
    let sink = errors.clone();
    let client = Client::builder()
        .dir(d.dir())
        .error_handler(move |e| sink.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    // Well-formed as a URI, refused by the driver: an MTU above Aeron's 64 KiB limit.
    let asked = Instant::now();
    let refused = client.publication("aeron:udp?endpoint=localhost:24991|mtu=1000000", 51);
    assert!(refused.is_err(), "the driver accepted an MTU of 1,000,000");
    let deadline = Instant::now() + Duration::from_secs(5);
    let logged = loop {
        let found = errors.lock().unwrap().iter().find_map(|e| match e {
            AsyncError::Driver { message, observations } => Some((message.clone(), *observations)),
            _ => None,
        });
        if let Some(f) = found {
            println!(
                "the driver's error reached the handler {:?} after the request",
                asked.elapsed()
            );
            break f;
        }
        assert!(
            Instant::now() < deadline,
            "no driver error reached the handler: {:?}",
            errors.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(logged.0.to_lowercase().contains("mtu"), "{logged:?}");
    assert!(logged.1 >= 1);
    assert!(AsyncError::Driver {
        message: logged.0.clone(),
        observations: logged.1
    }
    .to_string()
    .starts_with("media driver"),);
}

#[test]
fn a_panicking_error_handler_leaves_the_client_working() {
    let d = common::driver();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let client = Client::builder()
        .dir(d.dir())
        .error_handler(move |e| {
            counted.fetch_add(1, Ordering::SeqCst);
            panic!("this handler fails on: {e}");
        })
        .build()
        .unwrap();
    // The driver refuses it and logs why: the conductor hands that to the handler.
    assert!(client
        .publication("aeron:udp?endpoint=localhost:24992|mtu=1000000", 52)
        .is_err());
    let deadline = Instant::now() + Duration::from_secs(5);
    while calls.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the driver's error never reached the handler"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The panic stopped the conductor thread before: the client still looked alive, and what
    // was added next waited for an answer that never came.
    std::thread::sleep(Duration::from_millis(50));
    assert!(client.liveness().is_active(), "{}", client.liveness().describe());
    let sub = client.subscription("aeron:ipc", 53).unwrap();
    let publ = client.publication("aeron:ipc", 53).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "the IPC publication never connected");
        std::thread::sleep(Duration::from_millis(10));
    }
}
