//! An embedded driver never harms another driver: started on a directory where a driver is
//! alive, it is refused with the running driver's pid and the fix, and the running driver and
//! its clients carry on untouched. Where the driver that left its files has died (its process
//! gone or a zombie), a new one starts there at once, without waiting for the old heartbeat to
//! age past the driver timeout; one that is alive but stopped is refused, saying so.
#![cfg(feature = "embedded-driver")]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::move_messages;
use messaging::{Client, DriverLaunchError, DriverProcessState, DriverStatus, EmbeddedDriver};

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

    // Nor with a driver timeout shorter than the live driver's heartbeat is old (it writes it
    // once a second): that driver took the directory over (the C driver deleted its cnc.dat).
    let short = Duration::from_millis(200);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !matches!(messaging::driver_status(&dir, short), DriverStatus::Dead { .. }) {
        assert!(std::time::Instant::now() < deadline, "the heartbeat never aged 200 ms");
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = EmbeddedDriver::builder()
        .dir(&dir)
        .ipc_term_length(64 << 10)
        .driver_timeout(short)
        .spawn()
        .expect_err("a short timeout must not take a live driver's directory over");
    assert!(matches!(e, DriverLaunchError::ActiveDriver { .. }), "{e:?}");
    assert!(dir.join("cnc.dat").exists());
    move_messages(&client, 13, 10);
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
    let publ = client.publication("aeron:ipc", 77).expect("publication");
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

/// The body of [`common::DriverProcess`], run in the child.
#[test]
#[ignore = "runs only as the child process of the tests that kill a driver"]
fn driver_process() {
    common::driver_process_body();
}

/// A driver whose heartbeat is fresher than its 10 s timeout, but whose process was killed:
/// a new embedded driver starts in its directory a second later, and clients use it.
fn restart_after_kill(tag: &str, reap: bool) {
    let dir = PathBuf::from(format!("/dev/shm/messaging-driver-dir-{}-{tag}", std::process::id()));
    let timeout = Duration::from_secs(10);
    let mut old = common::DriverProcess::spawn(&dir, timeout);
    {
        let client = Client::connect(&dir).expect("client of the old driver");
        move_messages(&client, 13, 10);
    }
    old.signal("-KILL");
    if reap {
        let _ = old.child.wait();
    } else {
        // This test binary is the parent and has not reaped it: a zombie.
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        matches!(messaging::driver_status(&dir, timeout), DriverStatus::Alive { .. }),
        "the old heartbeat is still within the timeout: Aeron's rule alone would refuse"
    );
    let expected = if reap {
        DriverProcessState::Gone
    } else {
        DriverProcessState::Zombie
    };
    assert_eq!(messaging::driver_process_state(&dir), expected);
    let new = EmbeddedDriver::builder()
        .dir(&dir)
        .ipc_term_length(64 << 10)
        .driver_timeout(timeout)
        .spawn()
        .expect("a new driver starts where the old one died");
    assert_eq!(messaging::driver_pid(&dir), Some(std::process::id()));
    let client = Client::connect(&dir).expect("client of the new driver");
    move_messages(&client, 14, 10);
    drop(client);
    drop(new);
}

#[test]
fn a_driver_starts_at_once_where_a_killed_one_left_a_fresh_heartbeat() {
    restart_after_kill("killed", true);
}

#[test]
fn a_driver_starts_at_once_where_a_killed_unreaped_one_left_a_fresh_heartbeat() {
    restart_after_kill("zombie", false);
}

/// A driver that is alive but stopped (SIGSTOP) keeps its directory until its heartbeat is
/// older than the timeout; the refusal says the process is alive and has stopped beating.
#[test]
fn a_stopped_driver_is_refused_and_the_error_says_it_stopped_beating() {
    let dir = PathBuf::from(format!("/dev/shm/messaging-driver-dir-{}-stopped", std::process::id()));
    let timeout = Duration::from_secs(10);
    let old = common::DriverProcess::spawn(&dir, timeout);
    old.signal("-STOP");
    std::thread::sleep(Duration::from_millis(2_500));
    let e = EmbeddedDriver::builder()
        .dir(&dir)
        .ipc_term_length(64 << 10)
        .driver_timeout(timeout)
        .spawn()
        .expect_err("a live driver's directory is refused");
    assert!(
        matches!(e, DriverLaunchError::ActiveDriver { process: DriverProcessState::Running, pid: Some(p), .. } if p == old.child.id()),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("pid {} is running", old.child.id())) && msg.contains("has not beaten"),
        "{msg}"
    );
}

/// A setting the C driver refuses is named in one line, in Aeron's words, with where Aeron
/// said it: not the C binding's error struct (it printed `AeronCError { code: -1, kind:
/// GenericError, lastError: "(22) Invalid argument\n[...` over several lines).
#[test]
fn a_setting_the_c_driver_refuses_is_one_line_in_aeron_s_words() {
    let e = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .option(messaging::DriverOption::parse("aeron.mtu.length", "7").expect("a well-formed option"))
        .spawn()
        .expect_err("an MTU of 7 is refused");
    let said = e.to_string();
    assert!(
        said.contains("mtuLength=7") && said.contains("in aeron_driver_context_validate_mtu_length"),
        "{said}"
    );
    assert!(!said.contains("AeronCError") && !said.contains('\n'), "{said}");
}
