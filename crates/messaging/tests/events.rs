//! What reaches a service besides messages, against a real driver: image available and
//! unavailable events (with the publisher's session, in order, counted exactly), and errors the
//! media driver logs, handed to the client's error handler instead of stderr.
#![cfg(feature = "embedded-driver")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use messaging::{AsyncError, Client, EmbeddedDriver, ImageEvent, ImageEventKind, Subscriber};

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
    const CHANNEL: &str = "aeron:udp?endpoint=localhost:40993";
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
    let refused = client.publication("aeron:udp?endpoint=localhost:40991|mtu=1000000", 51);
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
