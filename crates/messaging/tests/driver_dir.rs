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

#[test]
fn settings_read_back_what_the_builder_set() {
    let driver = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .term_length(128 << 10)
        .publication_linger(std::time::Duration::from_millis(50))
        .idle("yield")
        .spawn()
        .expect("driver starts");
    let s = driver.settings();
    assert_eq!(s.ipc_term_buffer_length, 64 << 10);
    assert_eq!(s.term_buffer_length, 128 << 10);
    assert_eq!(s.publication_linger_timeout_ns, 50_000_000);
    for idle in [
        &s.shared_idle_strategy,
        &s.conductor_idle_strategy,
        &s.receiver_idle_strategy,
    ] {
        assert!(idle.contains("yield"), "{s:?}");
    }
    if std::env::var_os("AERON_THREADING_MODE").is_none() {
        assert_eq!(s.threading_mode, "SHARED");
    }
    let props = s.properties();
    assert!(
        props.contains(&("aeron.publication.linger.timeout", "50ms".to_owned())),
        "{props:?}"
    );
    assert!(
        props.contains(&("aeron.ipc.term.buffer.length", "65536".to_owned())),
        "{props:?}"
    );
}

#[test]
fn options_by_name_reach_the_driver_and_win_over_the_builder() {
    let opt = |k: &str, v: &str| messaging::DriverOption::parse(k, v).expect("a valid option");
    let driver = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .option(opt("aeron.nak.multicast.max.backoff", "500us"))
        .option(opt("AERON_RETRANSMIT_UNICAST_LINGER", "2ms"))
        .option(opt("socket.so_rcvbuf", "64k"))
        .option(opt("aeron.ipc.term.buffer.length", "128k"))
        .spawn()
        .expect("driver starts");
    let s = driver.settings();
    assert_eq!(s.nak_multicast_max_backoff_ns, 500_000);
    assert_eq!(s.retransmit_unicast_linger_ns, 2_000_000);
    assert_eq!(s.socket_so_rcvbuf, 64 << 10);
    assert_eq!(s.ipc_term_buffer_length, 128 << 10);
    assert_eq!(driver.ipc_term_length(), 128 << 10);
}

#[test]
fn cnc_counters_find_a_counter_by_type_and_follow_its_value() {
    let driver = common::driver();
    let counters = messaging::CncCounters::open(driver.dir()).expect("the driver's cnc.dat");
    assert_eq!(counters.find(i32::MAX), None, "no counter of an unknown type");
    assert_eq!(
        counters.find(messaging::SUBSCRIBER_POSITION_COUNTER_TYPE_ID),
        None,
        "no subscriber yet"
    );
    // A subscriber's position counter appears with its image and moves as it reads.
    let client = Client::connect(driver.dir()).expect("client");
    let mut sub = client.subscription("aeron:ipc", 77).expect("subscription");
    let mut publ = client.publication("aeron:ipc", 77).expect("publication");
    common::wait_until_connected(&publ, &sub);
    let id = counters
        .find(messaging::SUBSCRIBER_POSITION_COUNTER_TYPE_ID)
        .expect("the subscriber's position counter");
    assert_eq!(counters.value(id), 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while publ.offer(&[7_u8; 64]).is_err() {
        assert!(std::time::Instant::now() < deadline, "offer");
        std::thread::yield_now();
    }
    while counters.value(id) == 0 {
        let _ = sub.poll(&mut |_: &[u8], _: &messaging::MessageHeader<'_>| {}, 10);
        assert!(std::time::Instant::now() < deadline, "the position never moved");
    }
    // One 64-byte message in a 96-byte frame.
    assert_eq!(counters.value(id), 96);
    assert!(counters
        .list()
        .iter()
        .any(|c| c.id == id && c.type_id == messaging::SUBSCRIBER_POSITION_COUNTER_TYPE_ID));
    assert_eq!(counters.value(i32::MAX), 0, "an id outside the file reads 0");
}
