//! The send stamp (feature `tap`): a publication that stamps writes the time it sends each
//! message into the frame's reserved value, on the clock asked, through `offer` and
//! `try_claim` of both publications, fragmented messages included; it is off by default, and
//! what the caller gives (a reserved value, a time already read) wins.
#![cfg(all(feature = "tap", feature = "embedded-driver"))]

mod common;

use std::time::{Duration, Instant};

use messaging::{
    Client, IdleStrategy, MessageHeader, OfferError, Publication, PublicationKind, StampClock, Subscriber,
};

/// One way to send a message.
type Send<'a, K> = dyn FnMut(&mut Publication<K>) -> Result<(), OfferError> + 'a;

fn wait_connected<K: PublicationKind>(publ: &Publication<K>, sub: &Subscriber) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends one message with `send` (retried while retryable) and receives it: the reserved value
/// the subscriber read and the message's length, with `clock` read before and after the send.
fn send_one<K: PublicationKind>(
    publ: &mut Publication<K>,
    sub: &mut Subscriber,
    clock: StampClock,
    mut send: impl FnMut(&mut Publication<K>) -> Result<(), OfferError>,
) -> (i64, usize, i64, i64) {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let before = clock.now_ns();
    loop {
        match send(publ) {
            Ok(()) => break,
            Err(e) if e.is_retryable() && Instant::now() < deadline => idle.idle_once(),
            Err(e) => panic!("send: {e}"),
        }
    }
    let after = clock.now_ns();
    let mut got = None;
    while got.is_none() {
        assert!(Instant::now() < deadline, "the message never arrived");
        let n = sub
            .poll(
                &mut |m: &[u8], h: &MessageHeader<'_>| got = Some((h.reserved_value(), m.len())),
                10,
            )
            .expect("the client has its driver");
        idle.idle(n);
    }
    let (value, len) = got.unwrap();
    (value, len, before, after)
}

fn offer<K: PublicationKind>(msg: &[u8]) -> impl FnMut(&mut Publication<K>) -> Result<(), OfferError> + '_ {
    move |p| p.offer(msg).map(|_| ())
}

fn claim<K: PublicationKind>(len: usize) -> impl FnMut(&mut Publication<K>) -> Result<(), OfferError> {
    move |p| {
        let mut c = p.try_claim(len)?;
        c.buffer_mut().fill(7);
        c.commit();
        Ok(())
    }
}

/// Stamps on `clock` through offer, try_claim and a fragmented offer: each stamp lies between
/// the clock's readings around its send.
fn stamps_on<K: PublicationKind>(mut publ: Publication<K>, mut sub: Subscriber, clock: StampClock) {
    wait_connected(&publ, &sub);
    assert_eq!(publ.send_stamp(), None, "off by default");
    let (v, _, _, _) = send_one(&mut publ, &mut sub, clock, offer(b"not stamped"));
    assert_eq!(
        v, 0,
        "a publication that does not stamp leaves the reserved value alone"
    );
    publ.stamp_send_time(Some(clock));
    assert_eq!(publ.send_stamp(), Some(clock));
    let long = vec![1u8; publ.max_payload_length() * 2 + 100];
    let cases: [(&str, Box<Send<'_, K>>); 3] = [
        ("offer", Box::new(offer(b"stamped"))),
        ("try_claim", Box::new(claim(24))),
        ("a fragmented offer", Box::new(offer(&long))),
    ];
    for (what, mut send) in cases {
        let (v, len, before, after) = send_one(&mut publ, &mut sub, clock, &mut send);
        assert!(
            before <= v && v <= after,
            "{} {what} ({len} B) on {clock}: stamp {v} outside [{before}, {after}]",
            K::NAME
        );
    }
    publ.stamp_send_time(None);
    let (v, _, _, _) = send_one(&mut publ, &mut sub, clock, offer(b"off again"));
    assert_eq!(v, 0, "stamping stopped");
}

#[test]
fn both_publications_stamp_the_send_time_on_the_clock_asked() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    for (stream, clock) in [(11, StampClock::Monotonic), (12, StampClock::Realtime)] {
        let sub = client.subscription("aeron:ipc", stream).unwrap();
        stamps_on(client.exclusive_publication("aeron:ipc", stream).unwrap(), sub, clock);
        let sub = client.subscription("aeron:ipc", stream + 10).unwrap();
        stamps_on(client.publication("aeron:ipc", stream + 10).unwrap(), sub, clock);
    }
}

#[test]
fn what_the_caller_gives_wins_over_the_stamp() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 21).unwrap();
    let mut publ = client.exclusive_publication("aeron:ipc", 21).unwrap();
    wait_connected(&publ, &sub);
    publ.stamp_send_time(Some(StampClock::Monotonic));
    let clock = StampClock::Monotonic;
    let with_value = |p: &mut Publication<_>| p.offer_with_reserved_value(b"mine", 7).map(|_| ());
    assert_eq!(send_one(&mut publ, &mut sub, clock, with_value).0, 7);
    let set_on_claim = |p: &mut Publication<_>| {
        let mut c = p.try_claim(8)?;
        c.set_reserved_value(9);
        c.commit();
        Ok(())
    };
    assert_eq!(send_one(&mut publ, &mut sub, clock, set_on_claim).0, 9);
    let read_already = |p: &mut Publication<_>| p.offer_stamped(b"read already", 12_345).map(|_| ());
    assert_eq!(send_one(&mut publ, &mut sub, clock, read_already).0, 12_345);
    let claim_stamped = |p: &mut Publication<_>| {
        let c = p.try_claim_stamped(8, 555)?;
        c.commit();
        Ok(())
    };
    assert_eq!(send_one(&mut publ, &mut sub, clock, claim_stamped).0, 555);
}
