//! An embedded driver never harms another driver: started on a directory where a driver is
//! alive, it is refused with the running driver's pid and the fix, and the running driver and
//! its clients carry on untouched.
#![cfg(feature = "embedded-driver")]

mod common;

use std::path::PathBuf;

use common::move_messages;
use messaging::{Client, DriverLaunchError, EmbeddedDriver};

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
    move_messages(&client, 11, 10);

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
    move_messages(&client, 12, 10);
}
