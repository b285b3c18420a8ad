//! Helpers shared by the messaging crate's integration tests (each test binary has `mod common;`
//! and uses a subset): an embedded driver per test and a bounded wait for a stream to connect.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use messaging::{EmbeddedDriver, Publisher, Subscriber};

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
