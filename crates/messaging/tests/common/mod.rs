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

/// Sends `n` messages (their index, 8 bytes) on a fresh IPC stream and receives them all, in
/// order; fails the test when one is missing, out of order, or the stream stalls for 10 s.
pub(crate) fn move_messages(client: &Client, stream: i32, n: u64) {
    let mut sub = client.subscription("aeron:ipc", stream).expect("subscription");
    let mut publ = client.publication("aeron:ipc", stream).expect("publication");
    wait_until_connected(&publ, &sub);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0..n {
        while let Err(e) = publ.offer(&i.to_le_bytes()) {
            assert!(e.is_retryable() && Instant::now() < deadline, "offer {i}: {e}");
            idle.idle_once();
        }
    }
    let mut next = 0;
    while next < n {
        assert!(Instant::now() < deadline, "received {next} of {n}");
        let got = sub
            .poll(
                &mut |m: &[u8], _: &MessageHeader<'_>| {
                    assert_eq!(m, next.to_le_bytes(), "message {next} out of order or wrong");
                    next += 1;
                },
                64,
            )
            .expect("the client has its driver");
        idle.idle(got);
    }
}

/// The Aeron C client (rusteron-client) connected to the driver in `dir`; keep the pair alive
/// while its publications and subscriptions are used, on the thread that made them.
pub(crate) fn c_client(dir: &std::path::Path) -> (rusteron_client::Aeron, rusteron_client::AeronContext) {
    let dir = std::ffi::CString::new(dir.to_string_lossy().into_owned()).unwrap();
    let context = rusteron_client::AeronContext::new().expect("C client context");
    context.set_dir(&dir).expect("C client dir");
    let aeron = rusteron_client::Aeron::new(&context).expect("C client");
    aeron.start().expect("starting the C client");
    (aeron, context)
}

/// A C client subscription to `channel`/`stream`.
pub(crate) fn c_subscription(
    c: &(rusteron_client::Aeron, rusteron_client::AeronContext),
    channel: &str,
    stream: i32,
) -> rusteron_client::AeronSubscription {
    let channel = std::ffi::CString::new(channel).unwrap();
    c.0.async_add_subscription(
        &channel,
        stream,
        rusteron_client::Handlers::NONE,
        rusteron_client::Handlers::NONE,
    )
    .and_then(|a| a.poll_blocking(Duration::from_secs(10)))
    .expect("C subscription")
}
