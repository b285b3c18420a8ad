//! The embedded driver's directory and files are not world-writable, even when the process
//! umask would allow it. (Its own test binary: the umask is per process.)
#![cfg(feature = "embedded-driver")]

mod common;

use common::driver;
use messaging::{world_writable, Client};

#[test]
fn the_embedded_driver_creates_nothing_world_writable_even_under_umask_0() {
    // SAFETY: umask only swaps the process's file-creation mask; this binary runs no other test.
    unsafe { libc::umask(0) };
    let driver = driver();
    let client = Client::connect(driver.dir()).expect("client");
    // A publication and a subscription make the driver create a log file too.
    let _publ = client.publication("aeron:ipc", 77).expect("publication");
    let _sub = client.subscription("aeron:ipc", 77).expect("subscription");
    let logs = std::fs::read_dir(driver.dir().join("publications"))
        .expect("publications dir")
        .count();
    assert!(logs > 0, "the driver created a log file to check");
    let open = world_writable(driver.dir());
    assert!(open.is_empty(), "world-writable under the driver's dir: {open:?}");
    // The check itself sees a world-writable log when there is one (a positive control).
    let planted = driver.dir().join("publications").join("planted.logbuffer");
    std::fs::write(&planted, b"x").unwrap();
    std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    assert_eq!(world_writable(driver.dir()), vec![(planted, 0o666)]);
}
