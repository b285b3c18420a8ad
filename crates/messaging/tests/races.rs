//! Aeron's own race and edge tests, ported, against a real C media driver with the Aeron C
//! client as the other writer and the other reader:
//! - the shape of Aeron's `ConcurrentPublicationTermRotationRaceTest`: our threads mixing
//!   `offer` of whole and fragmented messages with `try_claim`, and a C client concurrent
//!   publication in another process, all writing one stream's log through hundreds of term
//!   rotations they race to make; read by our subscriber and the C client's;
//! - the exclusive publication started near a term's end (`init-term-id`, `term-id`,
//!   `term-offset`), ours and the C client's with the same sizes: the same positions, read
//!   whole by both readers;
//! - the end of the term-id space: `MaxPositionExceeded`, every time, not a loop;
//! - controlled poll's subscriber position after each call on a three-fragment message with a
//!   fragment limit of 1: abort, break, commit.
//!
//! `MESSAGING_RACE_ROUNDS` (default 1) repeats the race; `make conformance` runs 100.
#![cfg(feature = "embedded-driver")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use messaging::{Client, ControlledAction, IdleStrategy, MessageHeader, OfferError, Publication, PublicationKind};

/// Writer `w`'s message `i`: `[w, i (8 bytes), len (4 bytes), bytes that depend on all three]`,
/// 13 to 3,000 bytes (a third of them longer than one frame).
fn message(w: u8, i: u64) -> Vec<u8> {
    let len = 13 + (i as usize * 131 + usize::from(w) * 977) % 2_988;
    let mut m: Vec<u8> = (0..len).map(|k| (k as u64 * 7 + i * 31 + u64::from(w)) as u8).collect();
    m[0] = w;
    m[1..9].copy_from_slice(&i.to_le_bytes());
    m[9..13].copy_from_slice(&(len as u32).to_le_bytes());
    m
}

/// Which writer and message `m` is, if it is whole and intact.
fn identify(m: &[u8]) -> Result<(u8, u64), String> {
    if m.len() < 13 {
        return Err(format!("{} bytes: shorter than any message", m.len()));
    }
    let i = u64::from_le_bytes(m[1..9].try_into().unwrap());
    if m != message(m[0], i).as_slice() {
        return Err(format!(
            "writer {}'s message {i}: {} bytes, corrupt or spliced",
            m[0],
            m.len()
        ));
    }
    Ok((m[0], i))
}

/// Per-writer order: each writer's messages in sequence, none lost, none twice.
#[derive(Default)]
struct Order {
    next: [u64; 16],
    errors: Vec<String>,
}

impl Order {
    fn take(&mut self, m: &[u8]) {
        match identify(m) {
            Ok((w, i)) if i == self.next[usize::from(w)] => self.next[usize::from(w)] += 1,
            Ok((w, i)) => self.errors.push(format!(
                "writer {w}: message {i} where {} was due",
                self.next[usize::from(w)]
            )),
            Err(e) => self.errors.push(e),
        }
    }
}

/// Offers `msg` (claims it when `claim`), retrying what is retryable.
fn publish<K: PublicationKind>(p: &mut Publication<K>, msg: &[u8], claim: bool, deadline: Instant) {
    loop {
        let r = if claim && msg.len() <= p.max_payload_length() {
            p.try_claim(msg.len()).map(|mut c| {
                c.buffer_mut().copy_from_slice(msg);
                c.commit();
            })
        } else {
            p.offer(msg).map(drop)
        };
        match r {
            Ok(()) => return,
            Err(e) if e.is_retryable() && Instant::now() < deadline => std::thread::yield_now(),
            Err(e) => panic!("publishing {} bytes: {e}", msg.len()),
        }
    }
}

/// Rounds of the race: `MESSAGING_RACE_ROUNDS`, else 1.
fn rounds() -> u32 {
    std::env::var("MESSAGING_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// Messages per writer in one round of the race.
const PER_WRITER: u64 = 2_000;

/// The child's side of the race: the Aeron C client's concurrent publication in its own
/// process writes `PER_WRITER` messages as writer 9 to the stream named by the environment.
#[test]
#[ignore = "runs only as the child process of the race test"]
fn c_publisher_process() {
    let (Some(dir), Some(stream)) = (
        std::env::var_os("RACE_DIR"),
        std::env::var("RACE_STREAM").ok().and_then(|s| s.parse::<i32>().ok()),
    ) else {
        return;
    };
    let c = common::c_client(std::path::Path::new(&dir));
    let publ =
        c.0.async_add_publication(c"aeron:ipc", stream)
            .and_then(|a| a.poll_blocking(Duration::from_secs(10)))
            .expect("C publication");
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..PER_WRITER {
        let m = message(9, i);
        while publ.offer(&m).is_err() {
            assert!(Instant::now() < deadline, "the C publication stalled at {i}");
            std::thread::yield_now();
        }
    }
    // Stay until our reader has it all: closing the publication early is not the point.
    std::thread::sleep(Duration::from_secs(2));
}

/// One round: two of our concurrent publications on two threads (one offering whole and
/// fragmented messages, one alternating `try_claim` and `offer`) and the C client's in another
/// process write one stream of 64 KiB terms at once; our subscriber and the C client's read it.
fn race_round(d: &messaging::EmbeddedDriver, stream: i32) {
    let client = Client::connect(d.dir()).unwrap();
    let c = common::c_client(d.dir());
    let mut sub = client.subscription("aeron:ipc", stream).unwrap();
    let c_sub = common::c_subscription(&c, "aeron:ipc", stream);
    let ours: Vec<_> = (0..2)
        .map(|_| client.publication("aeron:ipc", stream).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ours[0].is_connected() || sub.image_count() == 0 || !c_sub.is_connected() {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "c_publisher_process", "--ignored", "--nocapture"])
        .env("RACE_DIR", d.dir())
        .env("RACE_STREAM", stream.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the C publisher process starts");
    let c_order = Arc::new(Mutex::new(Order::default()));
    let sink = c_order.clone();
    let (assembler, _delegate) =
        rusteron_client::Handler::with_fragment_assembler(move |m: &[u8], _h: rusteron_client::AeronHeader| {
            sink.lock().unwrap().take(m);
        })
        .expect("C fragment assembler");
    let total = 3 * PER_WRITER;
    let mut order = Order::default();
    std::thread::scope(|s| {
        for (w, mut p) in ours.into_iter().enumerate() {
            s.spawn(move || {
                for i in 0..PER_WRITER {
                    publish(&mut p, &message(w as u8, i), w == 1 && i % 2 == 0, deadline);
                }
            });
        }
        let mut idle: IdleStrategy = "yield".parse().unwrap();
        let count = |o: &Order| o.next.iter().sum::<u64>() + o.errors.len() as u64;
        while count(&order) < total || count(&c_order.lock().unwrap()) < total {
            assert!(
                Instant::now() < deadline,
                "ours {:?}, C {:?}",
                &order.next[..10],
                &c_order.lock().unwrap().next[..10]
            );
            let n = sub
                .poll(&mut |m: &[u8], _h: &MessageHeader<'_>| order.take(m), 64)
                .unwrap();
            let k = c_sub.poll(Some(&assembler), 64).expect("C poll");
            idle.idle(n + k.max(0) as usize);
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    for (who, o) in [("ours", &order), ("the C client's", &c_order.lock().unwrap())] {
        assert!(o.errors.is_empty(), "{who}: {:?}", &o.errors[..o.errors.len().min(5)]);
        assert_eq!(
            &o.next[..10],
            [PER_WRITER, PER_WRITER, 0, 0, 0, 0, 0, 0, 0, PER_WRITER],
            "{who}"
        );
    }
}

#[test]
fn concurrent_publications_race_through_rotations_with_a_c_publisher_in_another_process() {
    let d = common::driver();
    for round in 0..rounds() {
        race_round(&d, 900 + round as i32);
    }
}

/// The exclusive publication started near a term's end, as Aeron's tests start it: ours and
/// the C client's, each on its own stream with the same channel parameters and message sizes,
/// land every message at the same position (the same layout: fragments, padding, rotation),
/// and our subscriber and the C client's read each stream whole.
#[test]
fn exclusive_publications_started_near_a_term_end_lay_out_the_log_as_the_c_client_does() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let c = common::c_client(d.dir());
    let channel = "aeron:ipc?term-length=65536|init-term-id=11|term-id=16|term-offset=48896|mtu=8192";
    let c_channel = std::ffi::CString::new(channel).unwrap();
    let (ours_stream, c_stream) = (950, 951);
    let mut sub = client.subscription("aeron:ipc", ours_stream).unwrap();
    let mut c_read_sub = client.subscription("aeron:ipc", c_stream).unwrap();
    let c_sub = common::c_subscription(&c, "aeron:ipc", ours_stream);
    let ours = client.exclusive_publication(channel, ours_stream).unwrap();
    let theirs =
        c.0.async_add_exclusive_publication(&c_channel, c_stream)
            .and_then(|a| a.poll_blocking(Duration::from_secs(10)))
            .expect("C exclusive publication");
    let start = 5 * 65_536 + 48_896;
    assert_eq!(ours.position(), Ok(start), "term-id 16 of init 11 at offset 48896");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ours.is_connected() || !theirs.is_connected() || !c_sub.is_connected() {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Sizes that cross the term end at once (8,192-byte frames), then fragment and pad.
    let sizes = [8_000, 8_160, 100, 8_161, 8_192, 5, 4_000, 40, 3_000, 8_192].repeat(3);
    let c_got = Arc::new(Mutex::new(Vec::new()));
    let sink = c_got.clone();
    let (assembler, _delegate) =
        rusteron_client::Handler::with_fragment_assembler(move |m: &[u8], h: rusteron_client::AeronHeader| {
            sink.lock().unwrap().push((m.to_vec(), h.position()));
        })
        .expect("C fragment assembler");
    let (mut got, mut got_c_stream, mut positions) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &len) in sizes.iter().enumerate() {
        let m = message(1, i as u64)[..13]
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect::<Vec<u8>>();
        let ours_at = loop {
            match ours.offer(&m) {
                Ok(p) => break p as i64,
                Err(e) => assert!(e.is_retryable() && Instant::now() < deadline, "offer: {e}"),
            }
        };
        let theirs_at = loop {
            match theirs.offer(&m) {
                Ok(p) => break p,
                Err(_) => assert!(Instant::now() < deadline, "the C offer of {len} bytes never went"),
            }
        };
        positions.push((ours_at, theirs_at));
        while got.len() <= i || got_c_stream.len() <= i || c_got.lock().unwrap().len() <= i {
            assert!(Instant::now() < deadline, "message {i} not read by all three");
            sub.poll(
                &mut |b: &[u8], h: &MessageHeader<'_>| got.push((b.to_vec(), h.position())),
                16,
            )
            .unwrap();
            c_read_sub
                .poll(
                    &mut |b: &[u8], h: &MessageHeader<'_>| got_c_stream.push((b.to_vec(), h.position())),
                    16,
                )
                .unwrap();
            c_sub.poll(Some(&assembler), 16).expect("C poll");
        }
        let want = (m, ours_at);
        assert_eq!(got[i], want, "our subscriber, our publication, message {i}");
        assert_eq!(
            c_got.lock().unwrap()[i],
            want,
            "the C subscriber, our publication, message {i}"
        );
        assert_eq!(
            got_c_stream[i],
            (want.0, theirs_at),
            "our subscriber, the C publication, message {i}"
        );
    }
    for (i, (o, t)) in positions.iter().enumerate() {
        assert_eq!(o, t, "message {i} ({} bytes): our position vs the C client's", sizes[i]);
    }
    assert!(
        positions.last().unwrap().0 > 7 * 65_536,
        "the stream went through rotations"
    );
}

/// A publication in the last term of the term-id space (`term-id` = `init-term-id` +
/// 2^31 - 1): once that term is full, every offer and claim says `MaxPositionExceeded`
/// (never `AdminAction`, which would make a caller retry for ever), a shorter one too (Aeron's
/// clients would still write it into the padding that ends the stream), and everything before
/// it was read.
#[test]
fn the_end_of_the_term_id_space_is_max_position_exceeded_every_time() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let channel = "aeron:ipc?term-length=65536|init-term-id=0|term-id=2147483647|term-offset=0";
    let mut sub = client.subscription("aeron:ipc", 960).unwrap();
    let publ = client.exclusive_publication(channel, 960).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = (1_i64 << 31) * 65_536;
    assert_eq!(publ.position(), Ok(end - 65_536));
    let (mut accepted, mut read) = (0, 0);
    let outcome = loop {
        match publ.offer(&[7; 1_000]) {
            Ok(_) => accepted += 1,
            Err(e) if e.is_retryable() && Instant::now() < deadline => {}
            Err(e) => break e,
        }
        sub.poll(
            &mut |m: &[u8], _h: &MessageHeader<'_>| {
                assert_eq!(m, [7; 1_000]);
                read += 1;
            },
            16,
        )
        .unwrap();
        assert!(accepted <= 64, "never refused");
    };
    assert_eq!(outcome, OfferError::MaxPositionExceeded);
    assert_eq!(accepted, 65_536 / 1_056, "the last term filled");
    for _ in 0..3 {
        assert_eq!(publ.offer(b"more"), Err(OfferError::MaxPositionExceeded));
        assert!(matches!(publ.try_claim(8), Err(OfferError::MaxPositionExceeded)));
        assert!(!OfferError::MaxPositionExceeded.is_retryable());
    }
    while read < accepted {
        assert!(Instant::now() < deadline, "read {read} of {accepted}");
        sub.poll(&mut |_: &[u8], _h: &MessageHeader<'_>| read += 1, 16).unwrap();
    }
}

/// Controlled poll with a fragment limit of 1 over a message of three fragments, then a whole
/// one: the subscriber position (as the driver sees it) after each call follows Aeron's
/// `ImageControlledFragmentAssembler`: the first two fragments are consumed (`Continue`, the
/// handler is not called); `Abort` on the whole message leaves the last fragment to come again;
/// `Break` consumes it; `Commit` on the next message moves the position at once.
#[test]
fn controlled_poll_positions_follow_abort_break_and_commit_fragment_by_fragment() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 970).unwrap();
    let mut publ = client.exclusive_publication("aeron:ipc", 970).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let max = publ.max_payload_length();
    let three = vec![3u8; 2 * max + 10];
    let frame = |len: usize| (32 + len).next_multiple_of(32) as i64;
    let (f1, f2, f3) = (frame(max), frame(max), frame(10));
    let start = publ.position().unwrap();
    publish(&mut publ, &three, false, deadline);
    publish(&mut publ, b"whole", false, deadline);
    let position = || {
        let p = client.subscriber_positions(publ.session_id(), 970);
        assert_eq!(p.len(), 1, "one subscriber");
        p[0]
    };
    let mut seen: Vec<(usize, ControlledAction)> = Vec::new();
    let mut step = |sub: &mut messaging::Subscriber, action: ControlledAction| {
        sub.controlled_poll(
            &mut |m: &[u8], _h: &MessageHeader<'_>| {
                seen.push((m.len(), action));
                action
            },
            1,
        )
        .unwrap()
    };
    use ControlledAction::{Abort, Break, Commit, Continue};
    // The whole message's handler is only called with the last fragment: the action given
    // for the first two calls is never used.
    assert_eq!((step(&mut sub, Abort), position()), (1, start + f1));
    assert_eq!((step(&mut sub, Abort), position()), (1, start + f1 + f2));
    assert_eq!(
        (step(&mut sub, Abort), position()),
        (0, start + f1 + f2),
        "aborted: not consumed"
    );
    assert_eq!((step(&mut sub, Break), position()), (1, start + f1 + f2 + f3));
    assert_eq!(
        (step(&mut sub, Commit), position()),
        (1, start + f1 + f2 + f3 + frame(5))
    );
    assert_eq!(
        (step(&mut sub, Continue), position()),
        (0, start + f1 + f2 + f3 + frame(5))
    );
    assert_eq!(seen, [(three.len(), Abort), (three.len(), Break), (5, Commit)]);
}
