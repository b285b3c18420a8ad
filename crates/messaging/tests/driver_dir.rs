//! An embedded driver never harms another driver: started on a directory where a driver is
//! alive, it is refused with the running driver's pid and the fix, and the running driver and
//! its clients carry on untouched.
#![cfg(feature = "embedded-driver")]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::wait_until_connected;
use messaging::{Client, DriverLaunchError, EmbeddedDriver, IdleStrategy, MessageHeader};

/// Sends `n` messages on a fresh IPC stream and receives them all; returns how many arrived.
fn move_messages(client: &Client, stream: i32, n: u64) -> u64 {
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
            .poll(&mut |_: &[u8], _: &MessageHeader| received += 1, 64)
            .expect("the client has its driver");
        idle.idle(got);
    }
    received
}

#[test]
fn a_second_embedded_driver_on_a_live_directory_is_refused_naming_the_pid() {
    let dir = PathBuf::from(format!("/dev/shm/messaging-driver-dir-{}-second", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = EmbeddedDriver::builder()
        .dir(&dir)
        .ipc_term_length(64 << 10)
        .spawn()
        .expect("first driver starts");
    let client = Client::connect(&dir).expect("client connects");
    assert_eq!(move_messages(&client, 11, 10), 10);

    let e = EmbeddedDriver::builder()
        .dir(&dir)
        .ipc_term_length(64 << 10)
        .dir_delete_on_start(true)
        .spawn()
        .expect_err("a second driver on a live directory must be refused");
    assert!(
        matches!(&e, DriverLaunchError::ActiveDriver { dir: d, pid: Some(p), .. } if *d == dir && *p == std::process::id()),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("pid {}", std::process::id())) && msg.contains(&dir.display().to_string()),
        "{msg}"
    );
    // The first driver and its client are untouched: the stream still moves messages.
    assert!(first.is_running());
    assert!(client.liveness().is_active());
    assert_eq!(move_messages(&client, 12, 10), 10);
}
