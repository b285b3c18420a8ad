//! `messaging` writes and reads Aeron's log as Aeron 1.54's C client does, checked where it once
//! did not, against real drivers and the C client as the other side:
//! - log files on pages above 4 KiB (`aeron.file.page.size`), whose metadata is not right after
//!   the three terms, with a C driver and a Java driver, both publications, IPC and UDP, read by
//!   our subscriber and the C client's at once, each message with its reserved value (set in a
//!   claim, as the tap's send stamp is, or given to `offer`) through about two dozen term rotations;
//! - one frame longer than an eighth of the term (an MTU above term/8);
//! - reassembly after a loss on an unreliable stream: a deterministic gap (the C driver's
//!   multi-gap loss interceptor) and random loss, nothing spliced from two messages;
//! - the header a reassembled message is handed with, field for field the C client's;
//! - a malformed frame (as a process writing into the log could leave it): an error, not a
//!   crash.
//!
//! Every payload carries its own sequence number, length and checksum ([`payload`]), so a
//! message delivered short, long or spliced from two is caught, not only a missing one.
#![cfg(feature = "embedded-driver")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::payload::{payload, reserved_of, send_one, sizes, verify, Stamped};
use messaging::{
    Client, DriverOption, EmbeddedDriver, HandoffEnd, HandoffOptions, HeaderValues, IdleStrategy, MessageHeader,
    Publication, PublicationKind, Subscriber,
};

/// What a subscriber handed over: each message's sequence, or what was wrong with it.
type Received = Vec<Result<u64, String>>;

/// What a C client subscription's fragment assembler handed its handler.
type CGot = Arc<Mutex<Received>>;

/// Sends a [`payload`] of each of `sizes` on `publ` (a few in flight at a time) while our `sub`
/// and the C client's `c_sub` read them; both must get every one, once, in order, intact, with
/// its reserved value, through as many term rotations as the sizes fill.
fn exchange<K: PublicationKind>(
    publ: &mut Publication<K>,
    sub: &mut Subscriber,
    c_sub: &rusteron_client::AeronSubscription,
    sizes: &[usize],
) {
    let what = format!("{} on {}", K::NAME, publ.channel());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !publ.is_connected() || sub.image_count() == 0 || !c_sub.is_connected() {
        assert!(Instant::now() < deadline, "{what}: never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let n = sizes.len() as u64;
    let c_got = Arc::new(Mutex::new(Stamped::new()));
    let sink = c_got.clone();
    let (assembler, _delegate) =
        rusteron_client::Handler::with_fragment_assembler(move |m: &[u8], h: rusteron_client::AeronHeader| {
            let reserved = h.get_values().expect("header values").frame().reserved_value();
            sink.lock().unwrap().push(verify(m).map(|seq| (seq, reserved)));
        })
        .expect("C fragment assembler");
    let mut ours: Stamped = Vec::new();
    let mut sent = 0usize;
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let theirs = c_got.lock().unwrap().len();
        if ours.len() == sizes.len() && theirs == sizes.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: sent {sent}, ours received {}, the C client {theirs}",
            ours.len()
        );
        if sent < sizes.len() && sent < ours.len().min(theirs) + 4 {
            match send_one(publ, sent as u64, sizes[sent]) {
                Ok(()) => sent += 1,
                Err(e) => assert!(e.is_retryable(), "{what}: publishing {sent}: {e}"),
            }
        }
        let k = sub
            .poll(
                &mut |m: &[u8], h: &MessageHeader<'_>| ours.push(verify(m).map(|seq| (seq, h.reserved_value()))),
                16,
            )
            .expect("our poll");
        let c = c_sub.poll(Some(&assembler), 16).expect("C poll");
        idle.idle(k + c.max(0) as usize);
    }
    let expected: Stamped = (0..n).map(|seq| Ok((seq, reserved_of(seq)))).collect();
    assert_eq!(
        ours, expected,
        "{what}: what our subscriber received (sequence, reserved value)"
    );
    assert_eq!(
        *c_got.lock().unwrap(),
        expected,
        "{what}: what the C client received (sequence, reserved value)"
    );
}

/// Both publications, over IPC and over UDP (on `port`), on the driver in `dir`: each read by
/// our subscriber and the C client's at once.
fn both_publications_both_media(dir: &Path, port: u16, stream: i32) {
    let client = Client::connect(dir).expect("client");
    let c = common::c_client(dir);
    let udp = format!("aeron:udp?endpoint=localhost:{port}");
    for (i, channel) in ["aeron:ipc", udp.as_str()].into_iter().enumerate() {
        let stream = stream + 2 * i as i32;
        let mut sub = client.subscription(channel, stream).expect("subscription");
        let c_sub = common::c_subscription(&c, channel, stream);
        let mut exclusive = client
            .exclusive_publication(channel, stream)
            .expect("exclusive publication");
        let sizes = sizes(exclusive.max_payload_length(), exclusive.max_message_length(), 600);
        exchange(&mut exclusive, &mut sub, &c_sub, &sizes);
        drop(exclusive);

        let stream = stream + 1;
        let mut sub = client.subscription(channel, stream).expect("subscription");
        let c_sub = common::c_subscription(&c, channel, stream);
        let mut concurrent = client.publication(channel, stream).expect("concurrent publication");
        exchange(&mut concurrent, &mut sub, &c_sub, &sizes);
    }
}

/// The lengths of the publication logs in `dir`.
fn log_lengths(dir: &Path) -> Vec<u64> {
    std::fs::read_dir(dir.join("publications"))
        .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).collect())
        .unwrap_or_default()
}

/// A C media driver on 64 KiB pages: its log files are 3 x 64 KiB + 4 KiB rounded up to
/// 256 KiB, with the metadata in the last 4 KiB, not after the third term. Both publications
/// open them, over IPC and UDP.
#[test]
fn a_c_driver_on_64_kib_pages_carries_both_publications_over_ipc_and_udp() {
    let page = DriverOption::parse("aeron.file.page.size", "64k").unwrap();
    let d = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .term_length(64 << 10)
        .option(page)
        .spawn()
        .expect("driver starts");
    assert_eq!(d.settings().file_page_size, 64 << 10);
    both_publications_both_media(d.dir(), 40_321, 800);
    let lengths = log_lengths(d.dir());
    assert!(
        !lengths.is_empty() && lengths.iter().all(|&l| l == 256 << 10),
        "log lengths {lengths:?}: 256 KiB each expected on 64 KiB pages"
    );
}

/// The same with Aeron's Java media driver (`aeron-all`): skipped, saying so, where Java 17 or
/// the jar is missing, unless `LATENCY_PROBE_REQUIRE_JAVA=1` (as `make test` sets where the
/// bootstrap installed them).
#[test]
fn a_java_driver_on_64_kib_pages_carries_both_publications_over_ipc_and_udp() {
    let Some(driver) = JavaDriver::start("page64k", &["-Daeron.file.page.size=65536"]) else {
        return;
    };
    both_publications_both_media(&driver.dir, 40_331, 810);
    let lengths = log_lengths(&driver.dir);
    assert!(
        !lengths.is_empty() && lengths.iter().all(|&l| l == 256 << 10),
        "log lengths {lengths:?}: 256 KiB each expected on 64 KiB pages"
    );
}

/// With an MTU above an eighth of the term (16 KiB frames, 64 KiB terms), a message longer than
/// term/8 that fits one frame is taken, as Aeron's C client takes it (it checks its maximum
/// message length on the fragmented path only): by `offer` and `try_claim` of both
/// publications, read whole by our subscriber and the C client's.
#[test]
fn one_frame_longer_than_an_eighth_of_the_term_is_taken_as_aeron_takes_it() {
    let mtu = DriverOption::parse("aeron.ipc.mtu.length", "16k").unwrap();
    let d = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .option(mtu)
        .spawn()
        .expect("driver starts");
    let client = Client::connect(d.dir()).expect("client");
    let c = common::c_client(d.dir());
    let one_frame = (16 << 10) - 32;
    let sizes = [12_000, one_frame, 100, 9_000];
    let mut sub = client.subscription("aeron:ipc", 820).unwrap();
    let c_sub = common::c_subscription(&c, "aeron:ipc", 820);
    let mut exclusive = client.exclusive_publication("aeron:ipc", 820).unwrap();
    assert_eq!(
        (exclusive.max_payload_length(), exclusive.max_message_length()),
        (one_frame, one_frame)
    );
    exchange(&mut exclusive, &mut sub, &c_sub, &sizes);
    claim_one_frame(&mut exclusive, &mut sub, &c_sub, sizes.len() as u64);
    drop(exclusive);

    let mut sub = client.subscription("aeron:ipc", 821).unwrap();
    let c_sub = common::c_subscription(&c, "aeron:ipc", 821);
    let mut concurrent = client.publication("aeron:ipc", 821).unwrap();
    assert_eq!(concurrent.max_message_length(), one_frame);
    exchange(&mut concurrent, &mut sub, &c_sub, &sizes);
    assert!(matches!(
        concurrent.offer(&vec![0; one_frame + 1]),
        Err(messaging::OfferError::MessageTooLong { max, .. }) if max == one_frame
    ));
}

/// Claims a whole frame's payload on `publ`, fills it with message `seq` and commits it; our
/// `sub` and the C client's `c_sub` both read it intact.
fn claim_one_frame<K: PublicationKind>(
    publ: &mut Publication<K>,
    sub: &mut Subscriber,
    c_sub: &rusteron_client::AeronSubscription,
    seq: u64,
) {
    let len = publ.max_payload_length();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match publ.try_claim(len) {
            Ok(mut claim) => {
                claim.buffer_mut().copy_from_slice(&payload(seq, len));
                claim.commit();
                break;
            }
            Err(e) => assert!(e.is_retryable() && Instant::now() < deadline, "claim of {len}: {e}"),
        }
        std::thread::yield_now();
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    while ours.is_empty() || theirs.is_empty() {
        assert!(Instant::now() < deadline, "the claimed frame was not read by both");
        sub.poll(&mut |m: &[u8], _h: &MessageHeader<'_>| ours.push(verify(m)), 16)
            .unwrap();
        c_sub
            .poll_fn(|m: &[u8], _h| theirs.push(verify(m)), 16)
            .expect("C poll");
        std::thread::yield_now();
    }
    assert_eq!((ours, theirs), (vec![Ok(seq)], vec![Ok(seq)]));
}

/// Aeron's Java `MediaDriver` in a directory of its own, stopped (SIGTERM, then SIGKILL) and
/// its directory removed when dropped.
struct JavaDriver {
    child: std::process::Child,
    dir: PathBuf,
}

impl JavaDriver {
    /// Starts it with 64 KiB terms, shared threading and backoff idling, plus `props`, and
    /// waits for its heartbeat; `None` (after saying why) where Java or the jar is missing and
    /// not required.
    fn start(tag: &str, props: &[&str]) -> Option<JavaDriver> {
        let jar = common::aeron_jar()?;
        let dir = PathBuf::from(format!("/dev/shm/messaging-java-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let child = std::process::Command::new("java")
            .args([
                "--add-opens",
                "java.base/jdk.internal.misc=ALL-UNNAMED",
                "--add-opens",
                "java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens",
                "java.base/java.util.zip=ALL-UNNAMED",
                "-XX:+UseSerialGC",
                "-Xmx256m",
            ])
            .arg(format!("-Daeron.dir={}", dir.display()))
            .args([
                "-Daeron.term.buffer.length=65536",
                "-Daeron.ipc.term.buffer.length=65536",
                "-Daeron.threading.mode=SHARED",
                "-Daeron.shared.idle.strategy=org.agrona.concurrent.BackoffIdleStrategy",
                "-Daeron.dir.delete.on.start=true",
                "-Daeron.dir.delete.on.shutdown=true",
            ])
            .args(props)
            .arg("-cp")
            .arg(&jar)
            .arg("io.aeron.driver.MediaDriver")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("java starts");
        let driver = JavaDriver { child, dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!(
            messaging::driver_status(&driver.dir, Duration::from_secs(10)),
            messaging::DriverStatus::Alive { .. }
        ) || messaging::driver_pid(&driver.dir).is_none()
        {
            assert!(Instant::now() < deadline, "the Java driver did not start within 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            messaging::driver_pid(&driver.dir),
            Some(driver.child.id()),
            "the driver in the directory is the JVM"
        );
        Some(driver)
    }
}

impl Drop for JavaDriver {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = std::process::Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The body of [`common::DriverProcess`], run in the child.
#[test]
#[ignore = "runs only as the child process of the tests that need a driver with a loss interceptor"]
fn driver_process() {
    common::driver_process_body();
}

/// A fresh directory for a driver process of this test binary.
fn process_dir(tag: &str) -> PathBuf {
    PathBuf::from(format!("/dev/shm/messaging-conformance-{}-{tag}", std::process::id()))
}

/// Offers a [`payload`] of each of `sizes` on `publ` (retrying what is retryable, reading
/// meanwhile) while our `sub` and the C client's `c_sub` read the stream, which may lose
/// messages; reads on until nothing came for half a second. Returns what each received.
fn lossy_exchange<K: PublicationKind>(
    publ: &mut Publication<K>,
    sub: &mut Subscriber,
    c_sub: &rusteron_client::AeronSubscription,
    sizes: &[usize],
) -> (Received, Received) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !publ.is_connected() || sub.image_count() == 0 || !c_sub.is_connected() {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let c_got = CGot::default();
    let sink = c_got.clone();
    let (assembler, _delegate) =
        rusteron_client::Handler::with_fragment_assembler(move |m: &[u8], _h: rusteron_client::AeronHeader| {
            sink.lock().unwrap().push(verify(m));
        })
        .expect("C fragment assembler");
    let mut ours = Vec::new();
    let mut sent = 0;
    let mut last_news = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(60);
    while sent < sizes.len() || last_news.elapsed() < Duration::from_millis(500) {
        assert!(Instant::now() < deadline, "sent {sent} of {}", sizes.len());
        if sent < sizes.len() {
            match publ.offer(&payload(sent as u64, sizes[sent])) {
                Ok(_) => sent += 1,
                Err(e) => assert!(e.is_retryable(), "offer {sent}: {e}"),
            }
        }
        let k = sub
            .poll(&mut |m: &[u8], _h: &MessageHeader<'_>| ours.push(verify(m)), 64)
            .expect("our poll");
        let c = c_sub.poll(Some(&assembler), 64).expect("C poll");
        if k + c.max(0) as usize > 0 {
            last_news = Instant::now();
        } else {
            std::thread::yield_now();
        }
    }
    let theirs = c_got.lock().unwrap().clone();
    (ours, theirs)
}

/// An unreliable stream (`reliable=false`) loses the end of one fragmented message and the
/// start of the next: the C driver's multi-gap loss interceptor drops term 100's frames that
/// touch offsets 8192 to 9215, which are message 2's last two fragments and message 3's first
/// (each message 2 x 1376 + 100 bytes: three frames, 2,976 log bytes; one frame a datagram).
/// The receiving driver fills the gap with padding. Neither our subscriber nor the C client's
/// may hand over message 2's first fragment joined to message 3's last two: both deliver 0, 1
/// and 4 to 9, intact.
///
/// (Aeron's `fixed-loss` interceptor, which the issue names, drops from the first frame of the
/// term it sees up to its offset and length, so it cannot leave a message's first fragment
/// through and drop its last; the multi-gap interceptor drops by offset alone.)
#[test]
fn a_loss_on_an_unreliable_stream_never_splices_two_messages() {
    let driver = common::DriverProcess::spawn_with(
        &process_dir("splice"),
        Duration::from_secs(10),
        &[
            ("AERON_UDP_CHANNEL_INCOMING_INTERCEPTORS", "multi-gap-loss"),
            (
                "AERON_UDP_CHANNEL_TRANSPORT_BINDINGS_MULTI_GAP_LOSS_ARGS",
                "term-id=100|gap-radix=8192|gap-length=1024|total-gaps=1",
            ),
        ],
    );
    let client = Client::connect(&driver.dir).expect("client");
    let c = common::c_client(&driver.dir);
    let channel = "aeron:udp?endpoint=localhost:24341|reliable=false|mtu=1408|term-length=65536\
                   |init-term-id=100|term-id=100|term-offset=0";
    let mut sub = client.subscription(channel, 830).unwrap();
    let c_sub = common::c_subscription(&c, channel, 830);
    let mut publ = client.exclusive_publication(channel, 830).unwrap();
    assert_eq!(publ.max_payload_length(), 1376);
    let (ours, theirs) = lossy_exchange(&mut publ, &mut sub, &c_sub, &[2 * 1376 + 100; 10]);
    let expected: Vec<Result<u64, String>> = [0, 1, 4, 5, 6, 7, 8, 9].into_iter().map(Ok).collect();
    assert_eq!(ours, expected, "what our subscriber handed over");
    assert_eq!(theirs, expected, "what the C client's fragment assembler handed over");
}

/// The same with random loss: 8 KiB messages (six frames each) on an unreliable stream whose
/// receiver drops 5% of its data datagrams (the C driver's `loss` interceptor, seeded). Every
/// message handed over is intact, none twice or out of order, and our subscriber hands over
/// exactly what the C client's does; the messages lost are counted.
#[test]
fn random_loss_on_an_unreliable_stream_delivers_only_whole_messages() {
    let driver = common::DriverProcess::spawn_with(
        &process_dir("random-loss"),
        Duration::from_secs(10),
        &[
            ("AERON_UDP_CHANNEL_INCOMING_INTERCEPTORS", "loss"),
            (
                "AERON_UDP_CHANNEL_TRANSPORT_BINDINGS_LOSS_ARGS",
                "rate=0.05|recv-msg-mask=0x2|seed=4242",
            ),
        ],
    );
    let client = Client::connect(&driver.dir).expect("client");
    let c = common::c_client(&driver.dir);
    let channel = "aeron:udp?endpoint=localhost:24351|reliable=false|term-length=65536";
    let mut sub = client.subscription(channel, 840).unwrap();
    let c_sub = common::c_subscription(&c, channel, 840);
    let mut publ = client.publication(channel, 840).unwrap();
    let n = 3_000;
    let (ours, theirs) = lossy_exchange(&mut publ, &mut sub, &c_sub, &vec![8 << 10; n]);
    let corrupt: Vec<&String> = ours.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        corrupt.is_empty(),
        "{} corrupt deliveries, e.g. {:?}",
        corrupt.len(),
        corrupt.first()
    );
    let seqs: Vec<u64> = ours.iter().map(|r| *r.as_ref().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "a message twice or out of order");
    let lost = n - seqs.len();
    eprintln!(
        "random loss: {n} sent, {} delivered intact, {lost} lost, 0 corrupt",
        seqs.len()
    );
    assert!(
        lost > 0 && seqs.len() > n / 2,
        "{lost} of {n} lost: was anything dropped?"
    );
    assert_eq!(theirs, ours, "the C client's assembler and ours disagree");
}

/// The header a handler gets with a message reassembled from fragments is the one Aeron's C
/// client's fragment assembler hands its handler (`aeron_buffer_builder_complete_header`): the
/// first fragment's header, the whole message's frame length, begin and end flags, the
/// position after the last fragment. Compared field by field, for whole and fragmented
/// messages of one stream read by both.
#[test]
fn a_reassembled_message_s_header_is_the_c_client_s() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let c = common::c_client(d.dir());
    let mut sub = client.subscription("aeron:ipc", 850).unwrap();
    let c_sub = common::c_subscription(&c, "aeron:ipc", 850);
    let publ = client.exclusive_publication("aeron:ipc", 850).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publ.is_connected() || sub.image_count() == 0 || !c_sub.is_connected() {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    type CHeaders = Arc<Mutex<Vec<(usize, [i64; 8])>>>;
    let c_headers = CHeaders::default();
    let sink = c_headers.clone();
    let (assembler, _delegate) =
        rusteron_client::Handler::with_fragment_assembler(move |m: &[u8], h: rusteron_client::AeronHeader| {
            let f = h.get_values().expect("header values").frame();
            let fields = [
                i64::from(f.session_id()),
                i64::from(f.stream_id()),
                f.reserved_value(),
                i64::from(f.term_id()),
                i64::from(f.term_offset()),
                h.position(),
                i64::from(f.flags()),
                i64::from(f.frame_length()),
            ];
            sink.lock().unwrap().push((m.len(), fields));
        })
        .expect("C fragment assembler");
    let fields = |v: HeaderValues| {
        [
            i64::from(v.session_id),
            i64::from(v.stream_id),
            v.reserved_value,
            i64::from(v.term_id),
            i64::from(v.term_offset),
            v.position,
            i64::from(v.flags),
            i64::from(v.frame_length),
        ]
    };
    let max = publ.max_payload_length();
    let sizes = [100, 3 * max + 17, max, max + 1, 5_000, 40];
    let mut ours = Vec::new();
    for (seq, &len) in sizes.iter().enumerate() {
        while let Err(e) = publ.offer_with_reserved_value(&payload(seq as u64, len), 1_000 + seq as i64) {
            assert!(e.is_retryable(), "{e}");
        }
        while ours.len() <= seq || c_headers.lock().unwrap().len() <= seq {
            assert!(Instant::now() < deadline, "message {seq} not read by both");
            sub.poll(
                &mut |m: &[u8], h: &MessageHeader<'_>| ours.push((m.len(), fields(h.values()))),
                16,
            )
            .unwrap();
            c_sub.poll(Some(&assembler), 16).expect("C poll");
        }
    }
    let theirs = c_headers.lock().unwrap().clone();
    assert_eq!(
        ours, theirs,
        "(length, [session, stream, reserved, term id, term offset, position, flags, frame length])"
    );
    let (len, f) = ours[1];
    assert_eq!(
        (f[6], f[7]),
        (0xC0, 32 + len as i64),
        "a reassembled message: whole flags and length"
    );
}

/// Publishes, through a claim on `publ`, a frame whose length field says `length` (what a
/// process writing into the log without Aeron's rules could leave there).
fn plant_frame_length<K: PublicationKind>(publ: &mut Publication<K>, length: i32) {
    let mut claim = loop {
        match publ.try_claim(64) {
            Ok(c) => break c,
            Err(e) => assert!(e.is_retryable(), "{e}"),
        }
    };
    let payload = claim.buffer_mut().as_mut_ptr();
    // SAFETY: a claim's buffer starts right after its frame's 32-byte header, inside the mapped
    // log, and the frame is ours until published; its length field is the header's first 4
    // bytes, which Aeron's readers load atomically. The claim is forgotten so that its drop
    // does not publish the frame as padding over what is planted.
    unsafe {
        (*payload.sub(32).cast::<std::sync::atomic::AtomicI32>()).store(length, std::sync::atomic::Ordering::Release);
    }
    std::mem::forget(claim);
}

/// A frame no Aeron publisher writes, as another process sharing the log could leave it:
/// shorter than a header, or running past the end of its term. The poll that meets it hands
/// over what came before and returns `PollError::MalformedFrame` with the session, position and
/// length, instead of panicking or reading out of bounds; that image is read no further, the
/// subscription's other images still are.
#[test]
fn a_malformed_frame_is_an_error_for_its_image_only() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 860).unwrap();
    let good = client.exclusive_publication("aeron:ipc", 860).unwrap();
    let mut short = client.exclusive_publication("aeron:ipc", 860).unwrap();
    let mut long = client.exclusive_publication("aeron:ipc", 860).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sub.image_count() < 3 || !good.is_connected() || !short.is_connected() || !long.is_connected() {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    for (i, p) in [&mut short, &mut long].into_iter().enumerate() {
        while let Err(e) = p.offer(&payload(i as u64, 100)) {
            assert!(e.is_retryable(), "{e}");
        }
    }
    let (short_at, long_at) = (short.position().unwrap(), long.position().unwrap());
    plant_frame_length(&mut short, 7);
    plant_frame_length(&mut long, 1 << 20);
    let mut got = Vec::new();
    let mut errors = Vec::new();
    while errors.len() < 2 {
        assert!(Instant::now() < deadline, "errors so far: {errors:?}");
        match sub.poll(&mut |m: &[u8], _h: &MessageHeader<'_>| got.push(verify(m)), 16) {
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    errors.sort_by_key(|e| match e {
        messaging::PollError::MalformedFrame { frame_length, .. } => *frame_length,
        _ => 0,
    });
    assert_eq!(
        errors,
        [
            messaging::PollError::MalformedFrame {
                session_id: short.session_id(),
                position: short_at,
                frame_length: 7
            },
            messaging::PollError::MalformedFrame {
                session_id: long.session_id(),
                position: long_at,
                frame_length: 1 << 20
            },
        ]
    );
    assert!(
        errors[0].to_string().contains("no Aeron publisher writes"),
        "{}",
        errors[0]
    );
    got.sort_by_key(|r| r.clone().unwrap_or(u64::MAX));
    assert_eq!(got, [Ok(0), Ok(1)], "what came before the planted frames");
    // The good publisher's image is still read; the broken ones are not, and no error repeats.
    while let Err(e) = good.offer(&payload(2, 100)) {
        assert!(e.is_retryable(), "{e}");
    }
    while got.len() < 3 {
        assert!(Instant::now() < deadline, "the good image is no longer read");
        sub.poll(&mut |m: &[u8], _h: &MessageHeader<'_>| got.push(verify(m)), 16)
            .expect("no second error");
    }
    assert_eq!(got[2], Ok(2));
}

/// `Client::subscribe`'s thread meets a malformed frame in one publisher's log: it keeps the
/// error for the caller and goes on handing over the other publishers' messages (it used to
/// stop handing over anything, without a word).
#[test]
fn the_hand_off_thread_polls_past_a_malformed_frame_and_keeps_the_error() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut handoff = client
        .subscribe("aeron:ipc", 862, tx, stop, HandoffOptions::default())
        .unwrap();
    let good = client.exclusive_publication("aeron:ipc", 862).unwrap();
    let mut short = client.exclusive_publication("aeron:ipc", 862).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !good.is_connected() || !short.is_connected() {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let short_at = short.position().unwrap();
    plant_frame_length(&mut short, 7);
    while handoff.poll_errors() == 0 {
        assert!(Instant::now() < deadline, "the hand-off thread never met the frame");
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..100 {
        while let Err(e) = good.offer(&payload(i, 100)) {
            assert!(e.is_retryable() && Instant::now() < deadline, "{e}");
        }
    }
    for i in 0..100 {
        let m = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the good image is still handed over");
        assert_eq!(verify(&m), Ok(i));
    }
    assert_eq!(
        handoff.take_poll_errors(),
        [messaging::PollError::MalformedFrame {
            session_id: short.session_id(),
            position: short_at,
            frame_length: 7
        }]
    );
    assert!(handoff.take_poll_errors().is_empty(), "taken once");
    assert_eq!(
        (handoff.poll_errors(), handoff.delivered(), handoff.end()),
        (1, 100, None)
    );
    // With its receiver gone, the thread stops at the next message and says why.
    drop(rx);
    while let Err(e) = good.offer(&payload(100, 100)) {
        assert!(e.is_retryable() && Instant::now() < deadline, "{e}");
    }
    while handoff.end().is_none() {
        assert!(
            Instant::now() < deadline,
            "the hand-off thread never noticed its receiver gone"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // Closed, it still answers (and closing again changes nothing); stop gives the same end.
    assert_eq!(handoff.close(), HandoffEnd::ReceiverGone);
    assert_eq!((handoff.close(), handoff.poll_errors()), (HandoffEnd::ReceiverGone, 1));
    assert_eq!(handoff.stop(), HandoffEnd::ReceiverGone);
}
