//! Helpers shared by the messaging crate's integration tests (each test binary has `mod common;`
//! and uses a subset): an embedded driver per test and a bounded wait for a stream to connect.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use messaging::{Client, EmbeddedDriver, IdleStrategy, MessageHeader, Publisher, Subscriber};

/// An embedded media driver of this test's own, in a private directory, with 64 KiB IPC terms.
pub(crate) fn driver() -> EmbeddedDriver {
    EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .spawn()
        .expect("driver starts")
}

/// Waits until `publisher` is connected and `subscriber` has its image; fails the test after 10 s.
pub(crate) fn wait_until_connected(publisher: &Publisher, subscriber: &Subscriber) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publisher.is_connected() || subscriber.image_count() == 0 {
        assert!(Instant::now() < deadline, "the subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends `n` messages on a fresh IPC stream and receives them all; returns how many arrived.
pub(crate) fn move_messages(client: &Client, stream: i32, n: u64) -> u64 {
    let mut sub = client.subscription("aeron:ipc", stream).expect("subscription");
    let mut publ = client.publication("aeron:ipc", stream).expect("publication");
    wait_until_connected(&publ, &sub);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let mut received = 0;
    for i in 0..n {
        while let Err(e) = publ.offer(&i.to_le_bytes()) {
            assert!(e.is_retryable(), "{e}");
            idle.idle_once();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while received < n {
        assert!(Instant::now() < deadline, "received {received} of {n}");
        let got = sub
            .poll(&mut |_: &[u8], _: &MessageHeader<'_>| received += 1, 64)
            .expect("the client has its driver");
        idle.idle(got);
    }
    received
}
