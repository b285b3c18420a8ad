//! Aeron's client surface beyond offer and poll, against a real driver: the full frame header a
//! handler sees (stream, term id and offset, position, flags), the reserved value set on a
//! claim and on an offer (also across the fragments of a long message), and a spy subscription
//! reading a UDP publication from its log.
#![cfg(feature = "embedded-driver")]

mod common;

use std::time::{Duration, Instant};

use common::{driver, wait_until_connected};
use messaging::{
    AddError, Client, ConcurrentPublication, ControlledAction, HeaderValues, IdleStrategy, MessageHeader, OfferError,
    Subscriber,
};

/// Aeron's frame alignment and data header length.
const ALIGN: i64 = 32;
const HEADER: i64 = 32;

fn offer(publ: &mut ConcurrentPublication, mut f: impl FnMut(&mut ConcurrentPublication) -> Result<u64, OfferError>) {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match f(publ) {
            Ok(_) => return,
            Err(e) if e.is_retryable() && Instant::now() < deadline => idle.idle_once(),
            Err(e) => panic!("offer: {e}"),
        }
    }
}

/// Polls until `n` messages arrived; returns them with their headers.
fn receive(sub: &mut Subscriber, n: usize) -> Vec<(Vec<u8>, HeaderValues)> {
    let mut got = Vec::new();
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < n {
        assert!(Instant::now() < deadline, "received {} of {n}", got.len());
        let k = sub
            .poll(
                &mut |m: &[u8], h: &MessageHeader<'_>| got.push((m.to_vec(), h.values())),
                16,
            )
            .expect("the client has its driver");
        idle.idle(k);
    }
    got
}

#[test]
fn the_handler_sees_aeron_s_full_frame_header() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 40).unwrap();
    let mut publ = client.publication("aeron:ipc", 40).unwrap();
    wait_until_connected(&publ, &sub);
    let start = publ.position().unwrap();
    for len in [8_usize, 100, 8] {
        offer(&mut publ, |p| p.offer(&vec![7; len]));
    }
    let got = receive(&mut sub, 3);
    let mut at = start;
    for ((msg, h), len) in got.iter().zip([8_i64, 100, 8]) {
        assert_eq!(msg.len() as i64, len);
        assert_eq!(h.stream_id, 40);
        assert_eq!(h.session_id, publ.session_id());
        assert_eq!(h.flags, 0xC0, "unfragmented");
        assert_eq!(h.reserved_value, 0);
        // Each frame starts where the last ended; the position is just past this one.
        assert_eq!(i64::from(h.term_offset), at % publ.term_length() as i64, "{h:?}");
        at += (HEADER + len + ALIGN - 1) / ALIGN * ALIGN;
        assert_eq!(h.position, at, "{h:?}");
    }
}

#[test]
fn a_reserved_value_set_on_a_claim_or_an_offer_reaches_the_subscriber() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 41).unwrap();
    let mut publ = client.publication("aeron:ipc", 41).unwrap();
    wait_until_connected(&publ, &sub);
    offer(&mut publ, |p| {
        let mut claim = p.try_claim(8)?;
        claim.buffer_mut().copy_from_slice(&1_u64.to_le_bytes());
        claim.set_reserved_value(0x1234_5678_9abc);
        claim.commit();
        Ok(0)
    });
    offer(&mut publ, |p| p.offer_with_reserved_value(b"two", -42));
    // Longer than one frame: every fragment carries it, the reassembled message too.
    let long = vec![3_u8; 3 * publ.max_payload_length()];
    offer(&mut publ, |p| p.offer_with_reserved_value(&long, 77));
    offer(&mut publ, |p| p.offer(b"plain"));
    let got = receive(&mut sub, 4);
    let values: Vec<i64> = got.iter().map(|(_, h)| h.reserved_value).collect();
    assert_eq!(values, [0x1234_5678_9abc, -42, 77, 0]);
    assert_eq!(got[2].0, long);
    assert_eq!(got[2].1.flags & 0x40, 0x40, "the last fragment's header: end flag set");
}

#[test]
fn a_spy_subscription_reads_a_udp_publication_from_its_log() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let port = 20_000 + std::process::id() % 20_000;
    let channel = format!("aeron:udp?endpoint=localhost:{port}");
    let mut net = client.subscription(&channel, 42).unwrap();
    let mut spy = client.subscription(&format!("aeron-spy:{channel}"), 42).unwrap();
    let mut publ = client.publication(&channel, 42).unwrap();
    wait_until_connected(&publ, &net);
    let deadline = Instant::now() + Duration::from_secs(10);
    while spy.image_count() == 0 {
        assert!(Instant::now() < deadline, "the spy never saw the publication");
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..10_u64 {
        offer(&mut publ, |p| p.offer(&i.to_le_bytes()));
    }
    let seen: Vec<Vec<u8>> = receive(&mut spy, 10).into_iter().map(|(m, _)| m).collect();
    let sent: Vec<Vec<u8>> = (0..10_u64).map(|i| i.to_le_bytes().to_vec()).collect();
    assert_eq!(seen, sent);
    assert_eq!(receive(&mut net, 10).len(), 10);
}

#[test]
fn controlled_poll_aborts_breaks_and_hands_every_message_over_once_in_order() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 43).unwrap();
    let mut publ = client.publication("aeron:ipc", 43).unwrap();
    wait_until_connected(&publ, &sub);
    // Ten messages; the fifth is three frames long.
    let long_len = 3 * publ.max_payload_length();
    let messages: Vec<Vec<u8>> = (0..10_u8)
        .map(|i| if i == 4 { vec![i; long_len] } else { vec![i; 16] })
        .collect();
    for m in &messages {
        offer(&mut publ, |p| p.offer(m));
    }
    let mut consumed: Vec<Vec<u8>> = Vec::new();
    let mut aborted = Vec::new();
    let (mut polls, mut breaks) = (0, 0);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while consumed.len() < messages.len() {
        assert!(
            Instant::now() < deadline,
            "consumed {} of {}",
            consumed.len(),
            messages.len()
        );
        let before = consumed.len();
        let n = sub
            .controlled_poll(
                &mut |m: &[u8], _: &MessageHeader<'_>| {
                    let i = m[0];
                    // Refuse messages 2 and 4 (the long one) the first time they come.
                    if (i == 2 || i == 4) && !aborted.contains(&i) {
                        aborted.push(i);
                        return ControlledAction::Abort;
                    }
                    consumed.push(m.to_vec());
                    if i == 7 {
                        breaks += 1;
                        ControlledAction::Break
                    } else if i == 8 {
                        ControlledAction::Commit
                    } else {
                        ControlledAction::Continue
                    }
                },
                64,
            )
            .expect("the client has its driver");
        polls += 1;
        // The poll that handed over message 7 broke there: nothing after it in the same poll.
        if consumed[before..].iter().any(|m| m[0] == 7) {
            assert_eq!(consumed.last().map(|m| m[0]), Some(7), "Break stops the poll");
        }
        idle.idle(n);
    }
    assert_eq!(consumed, messages, "every message once, in order, the long one whole");
    assert_eq!(aborted, [2, 4]);
    assert_eq!(breaks, 1);
    assert!(
        polls >= 4,
        "two aborts and a break end three polls early: {polls} polls"
    );
}

#[test]
fn an_async_add_returns_at_once_and_hands_over_working_handles_when_polled() {
    let d = driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut pending_sub = client.async_add_subscription("aeron:ipc", 44).unwrap();
    let mut pending_pub = client.async_add_publication("aeron:ipc", 44).unwrap();
    let (mut sub, mut publ) = (None, None);
    let mut looks = 0_u32;
    let deadline = Instant::now() + Duration::from_secs(10);
    while sub.is_none() || publ.is_none() {
        assert!(Instant::now() < deadline, "the driver never created them");
        if sub.is_none() {
            sub = pending_sub.poll().unwrap();
        }
        if publ.is_none() {
            publ = pending_pub.poll().unwrap();
        }
        looks += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    eprintln!("async add: ready after {looks} looks");
    // Each hands its handle over once. A poll after the handover said the client was closed
    // (subscription), handed over a second handle (publication) or said the driver had
    // rejected it (exclusive publication).
    assert!(matches!(pending_sub.poll(), Err(AddError::HandedOver)));
    assert!(matches!(pending_pub.poll(), Err(AddError::HandedOver)));
    let mut pending_excl = client.async_add_exclusive_publication("aeron:ipc", 46).unwrap();
    while pending_excl.poll().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the driver never created it");
        std::thread::sleep(Duration::from_micros(200));
    }
    let again = pending_excl.poll().map(|p| p.is_some());
    assert!(matches!(again, Err(AddError::HandedOver)), "{again:?}");
    assert!(AddError::HandedOver.to_string().contains("already returned its handle"));
    let (mut sub, mut publ) = (sub.unwrap(), publ.unwrap());
    wait_until_connected(&publ, &sub);
    offer(&mut publ, |p| p.offer(b"async"));
    assert_eq!(receive(&mut sub, 1)[0].0, b"async");
    // A bad channel fails at the start, not at a poll.
    assert!(client.async_add_publication("aeron:tcp?endpoint=x:1", 44).is_err());
    // So does a log the client could not map (aeron-rs crashed mapping logs over 2 GiB),
    // from either publication; the client goes on.
    let big = "aeron:ipc?term-length=1g";
    for e in [
        client.async_add_publication(big, 45).unwrap_err(),
        client.async_add_exclusive_publication(big, 45).unwrap_err(),
        client.publication(big, 45).unwrap_err(),
    ] {
        assert!(
            matches!(e, AddError::InvalidChannel { .. }) && e.to_string().contains("512m"),
            "{e}"
        );
    }
    offer(&mut publ, |p| p.offer(b"after"));
    assert_eq!(receive(&mut sub, 1)[0].0, b"after");
}
