//! Both publications write the log themselves (the exclusive one from its own tail, the
//! concurrent one claiming space with an atomic add): these tests check they write Aeron's format,
//! read back by aeron-rs's reader and by the Aeron C client (rusteron-client), through many term
//! rotations (64 KiB terms), fragmented messages, padding, claims committed and aborted, a late
//! subscriber, back-pressure and the loss of the driver; and the other way round, our
//! subscriber reading the C client's exclusive publication, a publication closed under its
//! reader, and threads sharing one concurrent publication. (A killed and a stopped driver:
//! `liveness.rs`.)
#![cfg(feature = "embedded-driver")]

mod common;

use std::time::{Duration, Instant};

use messaging::{
    Client, EmbeddedDriver, IdleStrategy, MessageHeader, OfferError, Publication, PublicationKind, Subscriber,
};

/// A small, fast, seeded generator (xorshift64*): the same seed, the same sizes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Message `seq` of `len` bytes: its sequence number, then bytes that depend on both.
fn message(seq: u64, len: usize) -> Vec<u8> {
    let mut m: Vec<u8> = (0..len).map(|i| (seq as usize * 31 + i * 7) as u8).collect();
    if len >= 8 {
        m[..8].copy_from_slice(&seq.to_le_bytes());
    }
    m
}

/// Offers until accepted (retrying what is retryable); fails the test after 10 s.
fn offer<K: PublicationKind>(publ: &Publication<K>, msg: &[u8], reserved: Option<i64>) -> u64 {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = match reserved {
            Some(v) => publ.offer_with_reserved_value(msg, v),
            None => publ.offer(msg),
        };
        match r {
            Ok(p) => return p,
            Err(e) if e.is_retryable() && Instant::now() < deadline => idle.idle_once(),
            Err(e) => panic!("offer of {} bytes: {e}", msg.len()),
        }
    }
}

fn wait_connected<K: PublicationKind>(publ: &Publication<K>, sub: &Subscriber) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Random sizes from 0 to the largest message, through hundreds of term rotations: every
/// message arrives once, in order, intact, with its reserved value, and the positions the
/// publisher returned match the ones the subscriber sees. Three seeds over IPC (set
/// `MESSAGING_PROPERTY_SEED` to try another), one over UDP, where the receiving driver places
/// each frame by the term id and term offset in its header: a wrong header field loses data.
#[test]
fn random_sizes_through_many_rotations_arrive_once_in_order_intact() {
    let seeds: Vec<u64> = match std::env::var("MESSAGING_PROPERTY_SEED") {
        Ok(s) => vec![s.parse().expect("MESSAGING_PROPERTY_SEED is a number")],
        Err(_) => vec![1, 0x9E37_79B9_7F4A_7C15, 424_242],
    };
    for seed in seeds {
        random_sizes(
            &|c: &Client, ch, st| c.exclusive_publication(ch, st).unwrap(),
            "aeron:ipc",
            seed,
            6_000,
        );
        random_sizes(
            &|c: &Client, ch, st| c.publication(ch, st).unwrap(),
            "aeron:ipc",
            seed,
            6_000,
        );
    }
    let udp = "aeron:udp?endpoint=localhost:24994";
    random_sizes(
        &|c: &Client, ch, st| c.exclusive_publication(ch, st).unwrap(),
        udp,
        7,
        3_000,
    );
    random_sizes(&|c: &Client, ch, st| c.publication(ch, st).unwrap(), udp, 8, 3_000);
}

fn random_sizes<K: PublicationKind>(
    add: &dyn Fn(&Client, &str, i32) -> Publication<K>,
    channel: &str,
    seed: u64,
    n: u64,
) {
    let d = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .term_length(64 << 10)
        .spawn()
        .unwrap();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription(channel, 70).unwrap();
    let publ = add(&client, channel, 70);
    wait_connected(&publ, &sub);
    let max = publ.max_message_length();
    assert_eq!((publ.term_length(), max), (64 << 10, 8 << 10));
    let mut rng = Rng(seed);
    let sizes: Vec<usize> = (0..n)
        .map(|_| match rng.next() % 4 {
            // Small, around one MTU (fragmentation's edges), and up to the maximum.
            0 => (rng.next() % 64) as usize,
            1 => publ.max_payload_length() - 2 + (rng.next() % 4) as usize,
            _ => (rng.next() % (max as u64 + 1)) as usize,
        })
        .collect();
    let start = publ.position().unwrap();
    let (positions, received) = std::thread::scope(|s| {
        let sizes = &sizes;
        let publishing = s.spawn(move || {
            let mut positions = Vec::with_capacity(n as usize);
            for (seq, &len) in sizes.iter().enumerate() {
                positions.push(offer(&publ, &message(seq as u64, len), Some(seq as i64)));
            }
            positions
        });
        let mut received = Vec::with_capacity(n as usize);
        let mut idle: IdleStrategy = "yield".parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while received.len() < n as usize {
            assert!(
                Instant::now() < deadline,
                "{channel} seed {seed}: received {} of {n}",
                received.len()
            );
            let k = sub
                .poll(
                    &mut |m: &[u8], h: &MessageHeader<'_>| {
                        let seq = received.len() as u64;
                        assert_eq!(m.len(), sizes[seq as usize], "seed {seed}: message {seq}'s length");
                        assert!(m == message(seq, m.len()), "seed {seed}: message {seq} corrupted");
                        assert_eq!(
                            h.reserved_value(),
                            seq as i64,
                            "seed {seed}: message {seq}'s reserved value"
                        );
                        received.push(h.position());
                    },
                    64,
                )
                .unwrap();
            idle.idle(k);
        }
        (publishing.join().unwrap(), received)
    });
    assert_eq!(positions.iter().map(|&p| p as i64).collect::<Vec<_>>(), received);
    let rotations = (*received.last().unwrap() - start) / (64 << 10);
    assert!(rotations > 50, "{channel} seed {seed}: only {rotations} term rotations");
    println!(
        "{} on {channel}, seed {seed}: {n} messages, {rotations} term rotations",
        K::NAME
    );
}

/// The Aeron C client's subscription reads what the exclusive publication writes: whole and
/// fragmented messages (reassembled from its fragments by their flags), reserved values,
/// padding and rotations; and a C subscriber that joins late starts at the live position.
#[test]
fn the_aeron_c_client_reads_our_exclusive_publication() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let publ = client.exclusive_publication("aeron:ipc", 71).unwrap();
    // Before anyone listens: not connected, nothing written.
    assert_eq!(publ.offer(b"nobody"), Err(OfferError::NotConnected));

    let c = common::c_client(d.dir());
    let sub = common::c_subscription(&c, "aeron:ipc", 71);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() {
        assert!(Instant::now() < deadline, "the C subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let max = publ.max_message_length();
    let sizes: Vec<usize> = (0..3_000).map(|i| (i * 977) % (max + 1)).collect();
    let mut got: Vec<(Vec<u8>, i64)> = Vec::new();
    let mut partial: Vec<u8> = Vec::new();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < sizes.len() {
        assert!(Instant::now() < deadline, "received {} of {}", got.len(), sizes.len());
        // Keep a few messages in flight, never more than the 64 KiB window.
        if sent < sizes.len() && sent < got.len() + 4 {
            offer(&publ, &message(sent as u64, sizes[sent]), Some(-(sent as i64)));
            sent += 1;
        }
        sub.poll_fn(
            |bytes: &[u8], header| {
                let frame = header.get_values().expect("header values").frame();
                let flags = frame.flags();
                if flags & 0x80 != 0 {
                    partial.clear();
                }
                partial.extend_from_slice(bytes);
                if flags & 0x40 != 0 {
                    got.push((std::mem::take(&mut partial), frame.reserved_value()));
                }
            },
            16,
        )
        .expect("C poll");
    }
    for (seq, (m, reserved)) in got.iter().enumerate() {
        assert_eq!(m.len(), sizes[seq], "message {seq}'s length");
        assert!(*m == message(seq as u64, m.len()), "message {seq} corrupted");
        assert_eq!(*reserved, -(seq as i64), "message {seq}'s reserved value");
    }
    let position = publ.position().unwrap();
    assert!(position > 10 * (64 << 10), "too few rotations: position {position}");

    // A late C subscriber sees what is published after it joined, starting at a frame.
    let late = common::c_subscription(&c, "aeron:ipc", 71);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !late.is_connected() {
        assert!(Instant::now() < deadline, "the late C subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    offer(&publ, &message(99, 100), None);
    let mut late_got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while late_got.is_empty() {
        assert!(Instant::now() < deadline, "the late subscriber received nothing");
        late.poll_fn(|bytes: &[u8], _| late_got.push(bytes.to_vec()), 16)
            .expect("C poll");
        sub.poll_fn(|_: &[u8], _| {}, 16).expect("C poll");
    }
    assert_eq!(late_got, vec![message(99, 100)]);
}

/// Claims: committed ones arrive with their reserved value, aborted and dropped ones are
/// skipped as padding; nothing else is seen.
#[test]
fn claims_commit_abort_and_drop_as_aeron_s_buffer_claim() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 72).unwrap();
    let publ = client.exclusive_publication("aeron:ipc", 72).unwrap();
    wait_connected(&publ, &sub);
    assert!(matches!(
        publ.try_claim(publ.max_payload_length() + 1),
        Err(OfferError::MessageTooLong { .. })
    ));
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let mut got: Vec<(u64, i64)> = Vec::new();
    let drain = |sub: &mut Subscriber, got: &mut Vec<(u64, i64)>| {
        sub.poll(
            &mut |m: &[u8], h: &MessageHeader<'_>| {
                assert_eq!(m.len(), 40);
                got.push((u64::from_le_bytes(m[..8].try_into().unwrap()), h.reserved_value()));
            },
            64,
        )
        .unwrap()
    };
    for i in 0..3_000u64 {
        loop {
            match publ.try_claim(40) {
                Ok(mut claim) => {
                    claim.buffer_mut()[..8].copy_from_slice(&i.to_le_bytes());
                    claim.set_reserved_value(i as i64 * 3);
                    match i % 3 {
                        0 => claim.commit(),
                        1 => claim.abort(),
                        _ => drop(claim),
                    }
                    break;
                }
                Err(e) if e.is_retryable() => {
                    // The window is full: read (the subscriber is on this thread).
                    drain(&mut sub, &mut got);
                    idle.idle_once();
                }
                Err(e) => panic!("claim {i}: {e}"),
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < 1_000 {
        assert!(Instant::now() < deadline, "received {} of 1000", got.len());
        let n = drain(&mut sub, &mut got);
        idle.idle(n);
    }
    std::thread::sleep(Duration::from_millis(20));
    drain(&mut sub, &mut got);
    let expected: Vec<(u64, i64)> = (0..3_000u64)
        .filter(|i| i % 3 == 0)
        .map(|i| (i, i as i64 * 3))
        .collect();
    assert_eq!(
        got, expected,
        "only the committed claims, in order, with their reserved values"
    );
}

/// A subscriber that stops reading back-pressures the publication once the window is full;
/// reading again lets it go on; the driver gone, every call says so.
#[test]
fn back_pressure_then_the_driver_gone() {
    let d = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .driver_timeout(Duration::from_secs(2))
        .spawn()
        .unwrap();
    let client = Client::builder()
        .dir(d.dir())
        .driver_timeout(Duration::from_secs(2))
        .error_handler(|_| {})
        .build()
        .unwrap();
    let mut sub = client.subscription("aeron:ipc", 73).unwrap();
    let publ = client.exclusive_publication("aeron:ipc", 73).unwrap();
    wait_connected(&publ, &sub);
    let msg = [5u8; 1000];
    let mut accepted = 0usize;
    let refusal = loop {
        match publ.offer(&msg) {
            Ok(_) => accepted += 1,
            Err(OfferError::AdminAction) => {}
            Err(e) => break e,
        }
        assert!(accepted < 1_000, "never back-pressured");
    };
    assert_eq!(refusal, OfferError::BackPressured);
    let mut read = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while read < accepted {
        assert!(Instant::now() < deadline, "read {read} of {accepted}");
        sub.poll(
            &mut |m: &[u8], _: &MessageHeader<'_>| {
                assert_eq!(m, msg);
                read += 1;
            },
            64,
        )
        .unwrap();
    }
    offer(&publ, &msg, None);

    drop(d);
    let deadline = Instant::now() + Duration::from_secs(5);
    let e = loop {
        match publ.offer(&msg) {
            Err(OfferError::ClientClosed) => break OfferError::ClientClosed,
            _ if Instant::now() > deadline => panic!("the driver's stop was never noticed"),
            _ => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    assert!(!e.is_retryable());
    assert!(matches!(publ.try_claim(8), Err(OfferError::ClientClosed)));
    assert!(!publ.is_connected());
}

/// The other direction: the Aeron C client's exclusive publication writes, our subscriber
/// reads, reassembling fragmented messages across rotations.
#[test]
fn our_subscriber_reads_the_aeron_c_client_s_exclusive_publication() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 74).unwrap();
    let c = common::c_client(d.dir());
    let publ =
        c.0.async_add_exclusive_publication(c"aeron:ipc", 74)
            .and_then(|a| a.poll_blocking(Duration::from_secs(10)))
            .expect("C exclusive publication");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let max = 8 << 10;
    let sizes: Vec<usize> = (0..2_000).map(|i| (i * 1_531) % (max + 1)).collect();
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < sizes.len() {
        assert!(Instant::now() < deadline, "received {} of {}", got.len(), sizes.len());
        if sent < sizes.len() && sent < got.len() + 4 {
            let m = message(sent as u64, sizes[sent]);
            if publ.offer(&m).is_ok() {
                sent += 1;
            }
        }
        sub.poll(&mut |m: &[u8], _: &MessageHeader<'_>| got.push(m.to_vec()), 16)
            .unwrap();
    }
    for (seq, m) in got.iter().enumerate() {
        assert_eq!(m.len(), sizes[seq], "message {seq}'s length");
        assert!(*m == message(seq as u64, m.len()), "message {seq} corrupted");
    }
}

/// The exclusive publication closed under a reader: the reader is told (an unavailable image
/// event), keeps everything it had, and polls on without an error.
#[test]
fn an_exclusive_publication_closed_under_its_reader_is_an_unavailable_image() {
    let d = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .publication_linger(Duration::from_millis(20))
        .spawn()
        .unwrap();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 75).unwrap();
    let publ = client.exclusive_publication("aeron:ipc", 75).unwrap();
    wait_connected(&publ, &sub);
    let session = publ.session_id();
    for i in 0..50u64 {
        offer(&publ, &message(i, 64), None);
    }
    publ.close();
    let mut got = 0u64;
    let mut gone = false;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone || got < 50 {
        assert!(Instant::now() < deadline, "received {got} of 50, unavailable: {gone}");
        sub.poll(
            &mut |m: &[u8], _: &MessageHeader<'_>| {
                assert!(m == message(got, 64), "message {got}");
                got += 1;
            },
            16,
        )
        .expect("polling after the publication closed is no error");
        sub.poll_image_events(|e| {
            if e.kind == messaging::ImageEventKind::Unavailable && e.session_id == session {
                gone = true;
            }
        });
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sub.image_count(), 0);
}

/// The concurrent publication shares its log: two of ours on two threads and the Aeron C
/// client's publication on a third append to one stream at once, through hundreds of term
/// rotations they race to make. Every message arrives once, intact, each writer's in its order.
#[test]
fn concurrent_writers_ours_and_the_c_client_s_share_one_log() {
    const PER_WRITER: u64 = 4_000;
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 76).unwrap();
    let ours: Vec<_> = (0..2).map(|_| client.publication("aeron:ipc", 76).unwrap()).collect();
    wait_connected(&ours[0], &sub);
    assert!(ours.iter().all(|p| p.session_id() == ours[0].session_id()), "one log");
    // Writer w's message i: [w, i (8 bytes), filler], 24 to 1,000 bytes.
    let msg = |w: u8, i: u64| {
        let mut m = vec![w; 24 + (i as usize * 37 + w as usize * 101) % 977];
        m[1..9].copy_from_slice(&i.to_le_bytes());
        m
    };
    let next = std::thread::scope(|s| {
        for (w, p) in ours.into_iter().enumerate() {
            s.spawn(move || {
                for i in 0..PER_WRITER {
                    offer(&p, &msg(w as u8, i), None);
                }
            });
        }
        let dir = d.dir();
        s.spawn(move || {
            // The C client's handles stay on the thread that made them.
            let c = common::c_client(dir);
            let c_publ =
                c.0.async_add_publication(c"aeron:ipc", 76)
                    .and_then(|a| a.poll_blocking(Duration::from_secs(10)))
                    .expect("C publication");
            let deadline = Instant::now() + Duration::from_secs(30);
            for i in 0..PER_WRITER {
                let m = msg(2, i);
                while c_publ.offer(&m).is_err() {
                    assert!(Instant::now() < deadline, "the C publication stalled at {i}");
                    std::thread::yield_now();
                }
            }
        });
        receive_in_order(&mut sub, PER_WRITER, msg)
    });
    assert_eq!(next, [PER_WRITER; 3]);
}

/// Polls until each of three writers' `per_writer` messages came, each in its writer's order
/// and as `msg(writer, i)` made it (a message is `[writer, i (8 bytes), ...]`); fails the test
/// after 60 s. What came from each writer.
fn receive_in_order(sub: &mut Subscriber, per_writer: u64, msg: impl Fn(u8, u64) -> Vec<u8>) -> [u64; 3] {
    let mut next = [0u64; 3];
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    while next.iter().sum::<u64>() < 3 * per_writer {
        assert!(Instant::now() < deadline, "received {next:?} of {per_writer} each");
        let n = sub
            .poll(
                &mut |m: &[u8], _: &MessageHeader<'_>| {
                    let w = m[0] as usize;
                    let i = u64::from_le_bytes(m[1..9].try_into().unwrap());
                    assert_eq!(i, next[w], "writer {w}: lost, repeated or out of order");
                    assert!(m == msg(w as u8, i), "writer {w}'s message {i} corrupted");
                    next[w] += 1;
                },
                64,
            )
            .unwrap();
        idle.idle(n);
    }
    next
}

/// One concurrent publication shared by threads (it is `Sync`), as Aeron's
/// `ConcurrentPublication` is: three threads offer and claim through the same handle at once,
/// messages of 24 bytes to past one frame (fragmented); every message arrives once, in its
/// writer's order, intact.
#[test]
fn threads_share_one_concurrent_publication() {
    const PER_WRITER: u64 = 3_000;
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 77).unwrap();
    let publ = std::sync::Arc::new(client.publication("aeron:ipc", 77).unwrap());
    wait_connected(&publ, &sub);
    let frame = publ.max_payload_length();
    // Writer w's message i: [w, i (8 bytes), filler]; every 100th is longer than a frame.
    let msg = move |w: u8, i: u64| {
        let len = if i % 100 == 99 {
            frame + 500
        } else {
            24 + (i as usize * 37 + w as usize * 101) % 977
        };
        let mut m = vec![w.wrapping_add(i as u8); len];
        m[0] = w;
        m[1..9].copy_from_slice(&i.to_le_bytes());
        m
    };
    let writers: Vec<_> = (0..3_u8)
        .map(|w| {
            let publ = std::sync::Arc::clone(&publ);
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(30);
                for i in 0..PER_WRITER {
                    let m = msg(w, i);
                    if w == 2 && m.len() <= publ.max_payload_length() {
                        // The third writer claims in place.
                        loop {
                            match publ.try_claim(m.len()) {
                                Ok(mut claim) => {
                                    claim.buffer_mut().copy_from_slice(&m);
                                    claim.commit();
                                    break;
                                }
                                Err(e) if e.is_retryable() && Instant::now() < deadline => std::thread::yield_now(),
                                Err(e) => panic!("writer {w}'s claim {i}: {e}"),
                            }
                        }
                    } else {
                        offer(&publ, &m, None);
                    }
                }
            })
        })
        .collect();
    let next = receive_in_order(&mut sub, PER_WRITER, msg);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(next, [PER_WRITER; 3]);
}
