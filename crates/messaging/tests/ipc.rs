//! End-to-end behaviour over aeron:ipc through an embedded C media driver.
//! Each test gets its own driver (private dir, 64 KiB terms) and idles with `yield`/`backoff`
//! so parallel tests do not starve each other on small machines.
#![cfg(feature = "embedded-driver")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::driver;
use messaging::{
    Client, ConcurrentPublication, EmbeddedDriver, Handoff, HandoffEnd, HandoffOptions, IdleStrategy, MessageHeader,
    OfferError, Subscriber,
};

fn offer_retrying(p: &mut ConcurrentPublication, msg: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    loop {
        match p.offer(msg) {
            Ok(_) => return,
            Err(e) if e.is_retryable() && Instant::now() < deadline => idle.idle_once(),
            Err(e) => panic!("offer failed: {e}"),
        }
    }
}

fn receive(sub: &mut Subscriber, n: usize) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    while got.len() < n {
        assert!(Instant::now() < deadline, "timed out with {} of {n}", got.len());
        let k = sub
            .poll(&mut |m: &[u8], _: &MessageHeader<'_>| got.push(m.to_vec()), 64)
            .expect("the client has its driver");
        idle.idle(k);
    }
    got
}

fn wait_connected(p: &ConcurrentPublication) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.is_connected() {
        assert!(Instant::now() < deadline, "publisher never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn offered_and_claimed_messages_arrive_whole_and_in_order() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 1).unwrap();
    let mut publ = client.publication("aeron:ipc", 1).unwrap();
    wait_connected(&publ);
    for i in 0u32..1000 {
        if i % 2 == 0 {
            offer_retrying(&mut publ, &i.to_le_bytes());
        } else {
            loop {
                match publ.try_claim(4) {
                    Ok(mut c) => {
                        c.buffer_mut().copy_from_slice(&i.to_le_bytes());
                        c.commit();
                        break;
                    }
                    Err(e) if e.is_retryable() => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        if i % 100 == 99 {
            let got = receive(&mut sub, 100);
            for (k, m) in got.iter().enumerate() {
                assert_eq!(u32::from_le_bytes(m[..].try_into().unwrap()), i - 99 + k as u32);
            }
        }
    }
}

#[test]
fn a_message_larger_than_one_frame_is_reassembled() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 2).unwrap();
    let mut publ = client.publication("aeron:ipc", 2).unwrap();
    wait_connected(&publ);
    let big: Vec<u8> = (0..(publ.max_payload_length() * 3 + 17))
        .map(|i| (i % 251) as u8)
        .collect();
    offer_retrying(&mut publ, &big);
    offer_retrying(&mut publ, b"after");
    let got = receive(&mut sub, 2);
    assert_eq!(got[0], big);
    assert_eq!(got[1], b"after");
}

#[test]
fn an_aborted_or_dropped_claim_is_skipped_by_the_subscriber() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 3).unwrap();
    let mut publ = client.publication("aeron:ipc", 3).unwrap();
    wait_connected(&publ);
    publ.try_claim(8).unwrap().abort();
    drop(publ.try_claim(8).unwrap());
    offer_retrying(&mut publ, b"kept");
    assert_eq!(receive(&mut sub, 1), vec![b"kept".to_vec()]);
}

#[test]
fn claims_longer_than_one_frame_are_refused_with_the_limit() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let publ = client.publication("aeron:ipc", 4).unwrap();
    let max = publ.max_payload_length();
    let result = publ.try_claim(max + 1).map(|c| c.len());
    assert_eq!(result, Err(OfferError::MessageTooLong { length: max + 1, max }));
    // A length whose frame would overflow `usize` is refused the same way (tests build in
    // debug, where the overflow panicked).
    let huge = publ.try_claim(usize::MAX - 8).map(|c| c.len());
    assert_eq!(
        huge,
        Err(OfferError::MessageTooLong {
            length: usize::MAX - 8,
            max
        })
    );
    assert_eq!(ConcurrentPublication::frame_length(usize::MAX) % 32, 0);
}

#[test]
fn offers_without_a_subscriber_are_not_connected_and_retryable() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let publ = client.publication("aeron:ipc", 5).unwrap();
    let e = publ.offer(b"x").unwrap_err();
    assert_eq!(e, OfferError::NotConnected);
    assert!(e.is_retryable());
}

#[test]
fn a_publisher_that_joins_late_is_picked_up() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 6).unwrap();
    // Poll for a while with nobody publishing.
    for _ in 0..100 {
        assert_eq!(
            sub.poll(&mut |_: &[u8], _: &MessageHeader<'_>| panic!("nothing was sent"), 10)
                .expect("the client has its driver"),
            0
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let other = Client::connect(d.dir()).unwrap();
    let mut publ = other.publication("aeron:ipc", 6).unwrap();
    wait_connected(&publ);
    offer_retrying(&mut publ, b"late");
    assert_eq!(receive(&mut sub, 1), vec![b"late".to_vec()]);
}

#[test]
fn a_second_client_right_after_the_first_closes_does_not_stall() {
    let d = driver();
    for round in 0..3 {
        let started = Instant::now();
        let sub_client = Client::connect(d.dir()).unwrap();
        let pub_client = Client::connect(d.dir()).unwrap();
        let mut sub = sub_client.subscription("aeron:ipc", 7).unwrap();
        let mut publ = pub_client.publication("aeron:ipc", 7).unwrap();
        wait_connected(&publ);
        let msg = format!("round {round}");
        offer_retrying(&mut publ, msg.as_bytes());
        assert_eq!(receive(&mut sub, 1), vec![msg.into_bytes()]);
        drop((publ, sub, pub_client, sub_client));
        // aeron-rs alone leaves the client to time out (~10 s); with CLIENT_CLOSE it is immediate.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "round {round} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn closing_a_client_removes_it_from_the_driver_at_once() {
    let d = driver();
    let watcher = Client::connect(d.dir()).unwrap();
    // The driver lists a client (its heartbeat counter) once it has asked for something.
    let _registered = watcher.subscription("aeron:ipc", 99).unwrap();
    let clients = || {
        watcher
            .counters()
            .iter()
            .filter(|c| c.type_id == messaging::CLIENT_HEARTBEAT_COUNTER_TYPE_ID)
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while clients() < 1 {
        assert!(
            Instant::now() < deadline,
            "the watcher's own heartbeat counter never appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = clients();
    let other = Client::connect(d.dir()).unwrap();
    let publ = other.publication("aeron:ipc", 9).unwrap();
    while clients() < before + 1 {
        assert!(Instant::now() < deadline, "the second client never registered");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop((publ, other));
    // aeron-rs alone never sends CLIENT_CLOSE: the driver would keep the client ~10 s.
    let closed = Instant::now();
    while clients() > before {
        assert!(
            closed.elapsed() < Duration::from_secs(3),
            "the driver still lists the closed client"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn subscribe_hands_owned_messages_to_a_channel_until_stopped() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let (tx, rx) = crossbeam_channel::bounded(16);
    let stop = Arc::new(AtomicBool::new(false));
    let handoff = client
        .subscribe("aeron:ipc", 8, tx, stop.clone(), HandoffOptions::default())
        .unwrap();
    assert!(handoff.tid() > 0);
    let mut publ = client.publication("aeron:ipc", 8).unwrap();
    wait_connected(&publ);
    for i in 0u8..100 {
        offer_retrying(&mut publ, &[i; 3]);
    }
    for i in 0u8..100 {
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), vec![i; 3]);
    }
    assert_eq!(handoff.delivered(), 100);
    stop.store(true, Ordering::Release);
    handoff.stop();
}

/// `Client::subscribe` on IPC stream `stream` into `tx`, and a publication to it, connected.
fn handoff_on(
    client: &Client,
    stream: i32,
    tx: crossbeam_channel::Sender<Vec<u8>>,
) -> (Handoff, ConcurrentPublication) {
    let stop = Arc::new(AtomicBool::new(false));
    let handoff = client
        .subscribe("aeron:ipc", stream, tx, stop, HandoffOptions::default())
        .unwrap();
    let publ = client.publication("aeron:ipc", stream).unwrap();
    wait_connected(&publ);
    (handoff, publ)
}

/// A consumer that stops reading while its bounded channel is full and messages keep coming:
/// what does not fit stays in the log and is handed over, in order, once there is room
/// (nothing dropped), and `stop` returns at once with the channel full (the thread no longer
/// blocks in `send`).
#[test]
fn subscribe_holds_what_does_not_fit_and_stops_while_its_channel_is_full() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let (tx, rx) = crossbeam_channel::bounded(2);
    let (handoff, mut publ) = handoff_on(&client, 17, tx);
    let deadline = Instant::now() + Duration::from_secs(10);
    let delivered = |n: u64| {
        while handoff.delivered() < n {
            assert!(Instant::now() < deadline, "{} of {n} handed over", handoff.delivered());
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    for i in 0u8..10 {
        offer_retrying(&mut publ, &[i; 3]);
    }
    delivered(2);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(handoff.delivered(), 2, "only what fits is handed over");
    let got: Vec<Vec<u8>> = (0..10)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("the held messages come")
        })
        .collect();
    assert_eq!(
        got,
        (0u8..10).map(|i| vec![i; 3]).collect::<Vec<_>>(),
        "all ten, in order"
    );
    for i in 10u8..20 {
        offer_retrying(&mut publ, &[i; 3]);
    }
    delivered(12);
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = done_tx.send(handoff.stop());
    });
    assert_eq!(
        done_rx.recv_timeout(Duration::from_secs(5)),
        Ok(HandoffEnd::Stopped),
        "stop returns with the channel full"
    );
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [vec![10; 3], vec![11; 3]]);
}

/// A zero-capacity channel whose consumer only tries (`try_recv`): each message is handed over
/// while the hand-off thread waits in `send` for it.
#[test]
fn subscribe_hands_over_through_a_zero_capacity_channel_to_a_consumer_that_only_tries() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let (tx, rx) = crossbeam_channel::bounded(0);
    let (handoff, mut publ) = handoff_on(&client, 18, tx);
    for i in 0u8..5 {
        offer_retrying(&mut publ, &[i; 3]);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < 5 {
        assert!(Instant::now() < deadline, "got {got:?}");
        match rx.try_recv() {
            Ok(m) => got.push(m),
            Err(_) => std::thread::yield_now(),
        }
    }
    assert_eq!(got, (0u8..5).map(|i| vec![i; 3]).collect::<Vec<_>>());
    assert_eq!(handoff.stop(), HandoffEnd::Stopped);
}

/// A channel the driver refuses comes back as `AddError::Rejected` in one line, in the
/// driver's words with where it said them (its error text is several lines).
#[test]
fn a_channel_the_driver_refuses_is_named_in_one_line() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let e = client
        .publication("aeron:udp?endpoint=localhost:0", 1)
        .expect_err("port 0 is refused for a publication");
    assert!(matches!(e, messaging::AddError::Rejected { .. }), "{e:?}");
    let said = e.to_string();
    assert!(
        said.contains("endpoint has port=0")
            && said.contains("in aeron_driver_conductor_validate_endpoint_for_publication"),
        "{said}"
    );
    assert!(!said.contains('\n'), "one line: {said}");
}

#[test]
fn a_bad_channel_is_refused_before_the_driver_sees_it() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let e = client.publication("udp://localhost:1", 1).unwrap_err();
    assert!(e.to_string().contains("aeron:ipc"), "{e}");
}

#[test]
fn a_dead_driver_directory_is_reported_with_the_heartbeat_age() {
    let d = EmbeddedDriver::builder()
        .ipc_term_length(64 << 10)
        .dir(format!("/dev/shm/aeron-latency-dead-{}", std::process::id()))
        .spawn()
        .unwrap();
    let dir = d.dir().to_owned();
    // Keep a copy of cnc.dat, stop the driver, put the stale file back.
    let cnc = std::fs::read(dir.join("cnc.dat")).unwrap();
    drop(d);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cnc.dat"), cnc).unwrap();
    // Older than the shortest driver timeout a client takes.
    std::thread::sleep(messaging::MIN_DRIVER_TIMEOUT + Duration::from_millis(100));
    let e = Client::builder()
        .dir(&dir)
        .driver_timeout(messaging::MIN_DRIVER_TIMEOUT)
        .build()
        .unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
    let s = e.to_string();
    assert!(
        s.contains("not running") && s.contains(&dir.display().to_string()),
        "{s}"
    );
}

#[test]
fn the_driver_pid_is_read_from_cnc_and_absent_without_a_driver() {
    let d = driver();
    // The embedded driver runs in this process.
    assert_eq!(messaging::driver_pid(d.dir()), Some(std::process::id()));
    let empty = std::env::temp_dir().join(format!("aeron-latency-no-driver-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(messaging::driver_pid(&empty), None);
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn a_new_embedded_driver_removes_the_directories_killed_runs_left_and_nothing_else() {
    let parent = std::env::temp_dir().join(format!("messaging-stale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&parent);
    // Private directories are `<Aeron's default dir>-<pid>-<n>` (EmbeddedDriverBuilder::private_dir).
    let p = format!(
        "{}-",
        messaging::default_aeron_dir().file_name().unwrap().to_string_lossy()
    );
    // A pid that exists nowhere (probing down from the top of the pid range).
    let gone = (100_000..4_000_000)
        .rev()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .expect("a free pid");
    let stale = parent.join(format!("{p}{gone}-0"));
    let ours = parent.join(format!("{p}{}-9", std::process::id()));
    let alive = parent.join(format!("{p}1-0")); // pid 1 always exists
    let foreign = parent.join(format!("{p}notapid-0"));
    // A dead pid but no cnc.dat and fresh: a driver starting in another pid namespace.
    let starting = parent.join(format!("{p}{gone}-2"));
    for d in [&stale, &ours, &alive, &foreign, &starting] {
        std::fs::create_dir_all(d.join("publications")).unwrap();
        std::fs::write(d.join("publications").join("1.logbuffer"), [0u8; 4096]).unwrap();
    }
    // The stale one: untouched for two minutes (no cnc.dat).
    let old = std::time::SystemTime::now() - Duration::from_secs(120);
    std::fs::File::open(&stale).unwrap().set_modified(old).unwrap();
    // A dead pid in the name but a live heartbeat (this process runs it): kept.
    let live = EmbeddedDriver::builder()
        .dir(parent.join(format!("{p}{gone}-1")))
        .ipc_term_length(64 * 1024)
        .spawn()
        .expect("driver with a live heartbeat");
    // Off by default.
    let plain = EmbeddedDriver::builder()
        .dir(parent.join("plain"))
        .ipc_term_length(64 * 1024)
        .spawn()
        .expect("driver");
    assert!(plain.stale_dirs_removed().is_empty() && stale.exists());
    drop(plain);
    let driver = EmbeddedDriver::builder()
        .dir(parent.join("driver"))
        .ipc_term_length(64 * 1024)
        .remove_stale_dirs(true)
        .spawn()
        .expect("driver");
    assert_eq!(driver.stale_dirs_removed(), std::slice::from_ref(&stale));
    assert!(!stale.exists());
    for kept in [&ours, &alive, &foreign, &starting, &live.dir().to_path_buf()] {
        assert!(kept.exists(), "{} must be kept", kept.display());
    }
    drop(driver);
    drop(live);
    std::fs::remove_dir_all(&parent).unwrap();
}

/// A subscription reads its images round robin, as Aeron's clients do: each poll starts at the
/// next image, so with one fragment a poll and three sessions that all have messages waiting,
/// every three polls in a row read each session once, and no session waits for another to
/// drain.
#[test]
fn polls_start_at_the_next_image_in_turn() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 7).unwrap();
    let mut pubs: Vec<_> = (0..3)
        .map(|_| client.exclusive_publication("aeron:ipc", 7).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sub.image_count() < 3 || !pubs.iter().all(|p| p.is_connected()) {
        assert!(Instant::now() < deadline, "{} of 3 images", sub.image_count());
        std::thread::sleep(Duration::from_millis(1));
    }
    let per_session = 20;
    for p in &mut pubs {
        for i in 0u32..per_session {
            let deadline = Instant::now() + Duration::from_secs(10);
            while p.offer(&i.to_le_bytes()).is_err() {
                assert!(Instant::now() < deadline, "offer never succeeded");
                std::thread::yield_now();
            }
        }
    }
    let mut order = Vec::new();
    while order.len() < 3 * per_session as usize {
        let n = sub
            .poll(&mut |_: &[u8], h: &MessageHeader<'_>| order.push(h.session_id()), 1)
            .expect("the client has its driver");
        assert_eq!(n, 1, "every image has a message waiting until the last poll");
    }
    let sessions: std::collections::HashSet<i32> = pubs.iter().map(|p| p.session_id()).collect();
    for (k, window) in order.chunks(3).enumerate() {
        let seen: std::collections::HashSet<i32> = window.iter().copied().collect();
        assert_eq!(seen, sessions, "polls {}..{}: {window:?}", 3 * k, 3 * k + 3);
    }
    assert_eq!(order[0..3], order[3..6], "the same rotation each round: {order:?}");
}
