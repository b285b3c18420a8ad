//! `messaging` against Aeron's Java client (aeron-all 1.51, `tests/java/JavaClient.java`) on
//! one C media driver, each as the other's reader and writer:
//! - the Java client reads both our publications (exclusive, concurrent), over IPC and UDP;
//! - our subscriber reads both of the Java client's, over IPC and UDP;
//! - our two concurrent publications and the Java client's write one IPC log at once, read by
//!   our subscriber and the Java client's, each writer's messages in order.
//!
//! Every message arrives once, in order, whole ([`common::payload`]: each carries its
//! sequence, length and checksum) and with its reserved value, set in a claim or given to
//! `offer`, through about two dozen rotations of 64 KiB terms; sizes from 16 bytes to the
//! largest message, fragmented or not. Skipped, saying so, where Java 17 or the jar is
//! missing, unless `LATENCY_PROBE_REQUIRE_JAVA=1` (as `make test` sets where the bootstrap
//! installed them).
#![cfg(feature = "embedded-driver")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::payload::{payload, reserved_of, send_one, sizes, verify, Stamped};
use messaging::{Client, IdleStrategy, MessageHeader, Publication, PublicationKind, Subscriber};

/// Messages each side sends a stream: with 64 KiB terms, about 24 rotations.
const MESSAGES: u64 = 600;
/// The largest message on 64 KiB terms (Aeron's: an eighth of the term).
const MAX_MESSAGE: usize = 8 << 10;
/// The largest payload of one frame (the default MTU, 1408, less the 32-byte header).
const MAX_PAYLOAD: usize = 1376;

/// `JavaClient.java args...` on the jar's classpath, its standard output piped.
fn java_client(jar: &Path, args: &[&str]) -> Child {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/JavaClient.java");
    Command::new("java")
        .args([
            "--add-opens",
            "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-opens",
            "java.base/sun.nio.ch=ALL-UNNAMED",
            "-XX:+UseSerialGC",
            "-Xmx256m",
            "-cp",
        ])
        .arg(jar)
        .arg(source)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("java starts")
}

/// The channels: IPC, and UDP to `port` (64 KiB terms as the publisher's parameter).
///
/// Each publication kind gets a port of its own, below the ephemeral range (32768-60999 here):
/// a port in it can be taken by any socket bound to port 0 meanwhile, and a second subscriber
/// on the first one's port can find the driver still closing the first one's endpoint. Either
/// failed a CI run with "failed to bind(6, 127.0.0.1:40361) ... Address already in use".
fn channels(port: u16) -> [(String, String); 2] {
    [
        ("aeron:ipc".to_owned(), "aeron:ipc".to_owned()),
        (
            format!("aeron:udp?endpoint=localhost:{port}|term-length=65536"),
            format!("aeron:udp?endpoint=localhost:{port}"),
        ),
    ]
}

/// What is expected: every message, in order, with its reserved value.
fn expected() -> Stamped {
    (0..MESSAGES).map(|seq| Ok((seq, reserved_of(seq)))).collect()
}

/// A messages file as `JavaClient.java` reads and writes it: per message its length (i32),
/// its reserved value (i64), little-endian, and its bytes.
fn parse_messages(bytes: &[u8]) -> Stamped {
    let mut out = Stamped::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let len = i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let reserved = i64::from_le_bytes(bytes[at + 4..at + 12].try_into().unwrap());
        let end = (at + 12 + len).min(bytes.len());
        out.push(verify(&bytes[at + 12..end]).map(|seq| (seq, reserved)));
        at = end;
    }
    out
}

/// Writes messages `seqs` (sizes cycling as [`sizes`] gives them, by sequence) into a file
/// as `JavaClient.java write` reads it; returns its path.
fn messages_file(tag: &str, seqs: std::ops::Range<u64>) -> std::path::PathBuf {
    let file = std::env::temp_dir().join(format!("messaging-java-{tag}-{}", std::process::id()));
    let sizes = sizes(MAX_PAYLOAD, MAX_MESSAGE, seqs.end);
    let mut bytes = Vec::new();
    for seq in seqs {
        let len = sizes[seq as usize];
        bytes.extend_from_slice(&(len as i32).to_le_bytes());
        bytes.extend_from_slice(&reserved_of(seq).to_le_bytes());
        bytes.extend_from_slice(&payload(seq, len));
    }
    std::fs::write(&file, &bytes).expect("messages file");
    file
}

/// The first line the Java client prints (read a byte at a time: the rest stays for
/// [`wait_for`]); empty if it ended without one.
fn first_line(child: &mut Child) -> String {
    use std::io::Read as _;
    let out = child.stdout.as_mut().expect("piped");
    let mut line = Vec::new();
    let mut byte = [0u8];
    while out.read(&mut byte).expect("the Java client's output") == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line).into_owned()
}

/// `JavaClient.java write ...`, once its publication is connected: it writes when [`go`] says so.
fn java_writer(jar: &Path, args: &[&str]) -> Child {
    let mut java = java_client(jar, args);
    let line = first_line(&mut java);
    assert_eq!(line, "connected", "the Java writer said {line:?}");
    java
}

/// Tells a [`java_writer`] to write.
fn go(java: &mut Child) {
    use std::io::Write as _;
    let input = java.stdin.as_mut().expect("piped");
    input
        .write_all(b"go\n")
        .and_then(|()| input.flush())
        .expect("telling the Java writer to go");
}

/// Waits for the Java client to end; fails the test when it fails or runs past `limit`.
fn wait_for(mut child: Child, what: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut said = String::new();
            if let Some(out) = child.stdout.take() {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    said.push_str(&line);
                    said.push('\n');
                }
            }
            assert!(status.success(), "{what}: the Java client exited {status}: {said}");
            return said;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: the Java client still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Publishes every message on `publ` (retrying what is retryable) once a subscriber is there.
fn publish_all<K: PublicationKind>(publ: &mut Publication<K>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !publ.is_connected() {
        assert!(Instant::now() < deadline, "{what}: the Java subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let sizes = sizes(publ.max_payload_length(), publ.max_message_length(), MESSAGES);
    for (seq, &len) in sizes.iter().enumerate() {
        send_retrying(publ, seq as u64, len, &mut idle, what);
    }
    // About two dozen 64 KiB terms filled.
    let position = publ.position().expect("position");
    assert!(position >= 20 * 65_536, "{what}: only {position} bytes published");
}

/// Sends message `seq` of `len` bytes with [`send_one`], retrying what is retryable for up to
/// a minute.
fn send_retrying<K: PublicationKind>(
    publ: &mut Publication<K>,
    seq: u64,
    len: usize,
    idle: &mut IdleStrategy,
    what: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(e) = send_one(publ, seq, len) {
        assert!(e.is_retryable(), "{what}: publishing {seq}: {e}");
        assert!(Instant::now() < deadline, "{what}: stuck at {seq}");
        idle.idle_once();
    }
    idle.reset();
}

/// The Java client reads `publ`'s stream: what it received.
fn java_reads<K: PublicationKind>(jar: &Path, dir: &Path, publ: &mut Publication<K>, java_channel: &str) -> Stamped {
    let what = format!("{} on {}", K::NAME, publ.channel());
    let out = std::env::temp_dir().join(format!(
        "messaging-java-read-{}-{}",
        std::process::id(),
        publ.stream_id()
    ));
    let stream = publ.stream_id().to_string();
    let count = MESSAGES.to_string();
    let args = [
        "read",
        dir.to_str().unwrap(),
        java_channel,
        &stream,
        &count,
        out.to_str().unwrap(),
    ];
    let java = java_client(jar, &args);
    publish_all(publ, &what);
    let said = wait_for(java, &what, Duration::from_secs(90));
    assert!(
        said.contains(&format!("read {MESSAGES}")),
        "{what}: the Java client said {said}"
    );
    let got = parse_messages(&std::fs::read(&out).expect("the Java client's messages"));
    let _ = std::fs::remove_file(&out);
    got
}

#[test]
fn the_java_client_reads_both_our_publications_over_ipc_and_udp() {
    let Some(jar) = common::aeron_jar() else { return };
    let driver = common::driver();
    let client = Client::connect(driver.dir()).expect("client");
    let [exclusive_channels, concurrent_channels] = [channels(24_361), channels(24_362)];
    for (i, (on_exclusive, on_concurrent)) in exclusive_channels.iter().zip(&concurrent_channels).enumerate() {
        let stream = 830 + 2 * i as i32;
        let (ours, theirs) = on_exclusive;
        let mut exclusive = client.exclusive_publication(ours, stream).expect("exclusive");
        let got = java_reads(&jar, driver.dir(), &mut exclusive, theirs);
        assert_eq!(
            got,
            expected(),
            "what the Java client read of the exclusive publication on {ours}"
        );
        let (ours, theirs) = on_concurrent;
        let mut concurrent = client.publication(ours, stream + 1).expect("concurrent");
        let got = java_reads(&jar, driver.dir(), &mut concurrent, theirs);
        assert_eq!(
            got,
            expected(),
            "what the Java client read of the concurrent publication on {ours}"
        );
    }
}

#[test]
fn our_subscriber_reads_both_of_the_java_client_s_publications_over_ipc_and_udp() {
    let Some(jar) = common::aeron_jar() else { return };
    let driver = common::driver();
    let client = Client::connect(driver.dir()).expect("client");
    let file = messages_file("write", 0..MESSAGES);
    for i in 0..2 {
        for (j, kind) in ["exclusive", "concurrent"].into_iter().enumerate() {
            let (java_channel, ours) = &channels(24_363 + j as u16)[i];
            let stream = 840 + 2 * i as i32 + j as i32;
            let what = format!("the Java client's {kind} publication on {java_channel}");
            let mut sub = client.subscription(ours, stream).expect("subscription");
            let s = stream.to_string();
            let args = [
                "write",
                driver.dir().to_str().unwrap(),
                java_channel,
                &s,
                kind,
                file.to_str().unwrap(),
            ];
            let mut java = java_writer(&jar, &args);
            go(&mut java);
            let Read { got, terms, .. } = read(&mut sub, MESSAGES, &mut java, &what);
            drop(java.stdin.take()); // it closes its publication once we have read everything
            let said = wait_for(java, &what, Duration::from_secs(30));
            assert!(said.contains(&format!("wrote {MESSAGES}")), "{what}: it said {said}");
            assert_eq!(got, expected(), "what our subscriber read of {what}");
            assert!(terms.len() >= 20, "{what}: only {} terms", terms.len());
        }
    }
    let _ = std::fs::remove_file(&file);
}

/// What our subscriber read: each message's sequence and reserved value (or what was wrong with
/// it), and the term ids and sessions it came in.
struct Read {
    got: Stamped,
    terms: std::collections::BTreeSet<i32>,
    sessions: std::collections::BTreeSet<i32>,
}

/// Polls `sub` until it has `count` messages; fails the test when `java` (a writer) ends first
/// or nothing completes within 90 s.
fn read(sub: &mut Subscriber, count: u64, java: &mut Child, what: &str) -> Read {
    let mut r = Read {
        got: Stamped::new(),
        terms: Default::default(),
        sessions: Default::default(),
    };
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while (r.got.len() as u64) < count {
        assert!(Instant::now() < deadline, "{what}: read {} of {count}", r.got.len());
        if let Some(status) = java.try_wait().expect("try_wait") {
            panic!("{what}: the Java client exited {status} after we read {}", r.got.len());
        }
        let n = sub
            .poll(
                &mut |m: &[u8], h: &MessageHeader<'_>| {
                    r.terms.insert(h.term_id());
                    r.sessions.insert(h.session_id());
                    r.got.push(verify(m).map(|seq| (seq, h.reserved_value())));
                },
                16,
            )
            .expect("our poll");
        idle.idle(n);
    }
    r
}

/// Whether `got` holds every message of `writers` writers, `n` each (writer `w` sends
/// sequences `w * n..(w + 1) * n`), each writer's in order, whole, with its reserved value.
fn per_writer(got: &Stamped, writers: u64, n: u64) -> Result<(), String> {
    let mut next: Vec<u64> = (0..writers).map(|w| w * n).collect();
    for (i, m) in got.iter().enumerate() {
        let &(seq, reserved) = m.as_ref().map_err(|e| format!("message {i} read: {e}"))?;
        let w = (seq / n) as usize;
        if w >= next.len() || seq != next[w] {
            return Err(format!(
                "message {i} read: sequence {seq}, expected {next:?} (lost, repeated or out of order)"
            ));
        }
        if reserved != reserved_of(seq) {
            return Err(format!(
                "message {seq}: reserved value {reserved}, sent {}",
                reserved_of(seq)
            ));
        }
        next[w] += 1;
    }
    let done: Vec<u64> = (1..=writers).map(|w| w * n).collect();
    (next == done)
        .then_some(())
        .ok_or(format!("read up to {next:?} of {done:?}"))
}

/// Our two concurrent publications and the Java client's write one IPC log at once (Aeron
/// shares it between a stream's concurrent publications, across clients), messages whole and
/// fragmented; our subscriber and the Java client's both read each writer's messages in order,
/// whole, with their reserved values.
#[test]
fn ours_and_the_java_client_s_concurrent_publications_share_one_log() {
    const N: u64 = 600;
    let Some(jar) = common::aeron_jar() else { return };
    let driver = common::driver();
    let dir = driver.dir().to_str().unwrap();
    let client = Client::connect(driver.dir()).expect("client");
    let stream = 850;
    let mut sub = client.subscription("aeron:ipc", stream).expect("subscription");
    let mut ours: Vec<_> = (0..2)
        .map(|_| client.publication("aeron:ipc", stream).expect("publication"))
        .collect();
    let (s, count) = (stream.to_string(), (3 * N).to_string());
    let out = std::env::temp_dir().join(format!("messaging-java-shared-read-{}", std::process::id()));
    let mut reader = java_client(&jar, &["read", dir, "aeron:ipc", &s, &count, out.to_str().unwrap()]);
    // It reads from where it joins: let it join before anything is written.
    let line = first_line(&mut reader);
    assert_eq!(line, "subscribed", "the Java reader said {line:?}");
    let file = messages_file("shared", 2 * N..3 * N);
    let mut writer = java_writer(
        &jar,
        &["write", dir, "aeron:ipc", &s, "concurrent", file.to_str().unwrap()],
    );
    // Our publications stay open until the Java client wrote (it shares their log only while
    // one is open) and every writer starts at once.
    go(&mut writer);
    let Read { got, sessions, .. } = std::thread::scope(|scope| {
        for (w, p) in ours.iter_mut().enumerate() {
            scope.spawn(move || {
                let what = format!("our writer {w}");
                let deadline = Instant::now() + Duration::from_secs(30);
                while !p.is_connected() {
                    assert!(Instant::now() < deadline, "{what}: never connected");
                    std::thread::sleep(Duration::from_millis(1));
                }
                let sizes = sizes(MAX_PAYLOAD, MAX_MESSAGE, 3 * N);
                let mut idle: IdleStrategy = "yield".parse().unwrap();
                for seq in w as u64 * N..(w as u64 + 1) * N {
                    send_retrying(p, seq, sizes[seq as usize], &mut idle, &what);
                }
            });
        }
        read(&mut sub, 3 * N, &mut writer, "our subscriber")
    });
    drop(writer.stdin.take());
    let writer_said = wait_for(writer, "the Java writer", Duration::from_secs(30));
    assert!(
        writer_said.contains(&format!("wrote {N}")),
        "the Java writer said {writer_said}"
    );
    let said = wait_for(reader, "the Java reader", Duration::from_secs(60));
    assert!(said.contains(&format!("read {}", 3 * N)), "the Java reader said {said}");
    let theirs = parse_messages(&std::fs::read(&out).expect("the Java reader's messages"));
    let _ = (std::fs::remove_file(&out), std::fs::remove_file(&file));
    let ours_session = ours[0].session_id();
    assert!(
        writer_said.contains(&format!("(session {ours_session})")),
        "the Java writer wrote a log of its own: {writer_said}"
    );
    assert_eq!(sessions.len(), 1, "one log, one session: {sessions:?}");
    per_writer(&got, 3, N).unwrap_or_else(|e| panic!("our subscriber: {e}"));
    per_writer(&theirs, 3, N).unwrap_or_else(|e| panic!("the Java client's subscriber: {e}"));
}
