//! `messaging` against Aeron's Java client (aeron-all 1.51, `tests/java/JavaClient.java`) on
//! one C media driver, each as the other's reader and writer:
//! - the Java client reads both our publications (exclusive, concurrent), over IPC and UDP;
//! - our subscriber reads both of the Java client's, over IPC and UDP.
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
use messaging::{Client, EmbeddedDriver, IdleStrategy, MessageHeader, Publication, PublicationKind};

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

/// A C driver with 64 KiB IPC terms, in a directory of its own.
fn driver() -> EmbeddedDriver {
    common::driver()
}

/// The channels: IPC, and UDP to `port` (64 KiB terms as the publisher's parameter).
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
        loop {
            match send_one(publ, seq as u64, len) {
                Ok(()) => break,
                Err(e) => {
                    assert!(e.is_retryable(), "{what}: publishing {seq}: {e}");
                    assert!(
                        Instant::now() < deadline + Duration::from_secs(30),
                        "{what}: stuck at {seq}"
                    );
                    idle.idle_once();
                }
            }
        }
        idle.reset();
    }
    // About two dozen 64 KiB terms filled.
    let position = publ.position().expect("position");
    assert!(position >= 20 * 65_536, "{what}: only {position} bytes published");
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
    let driver = driver();
    let client = Client::connect(driver.dir()).expect("client");
    for (i, (ours, theirs)) in channels(40_361).iter().enumerate() {
        let stream = 830 + 2 * i as i32;
        let mut exclusive = client.exclusive_publication(ours, stream).expect("exclusive");
        let got = java_reads(&jar, driver.dir(), &mut exclusive, theirs);
        assert_eq!(
            got,
            expected(),
            "what the Java client read of the exclusive publication on {ours}"
        );
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
    let driver = driver();
    let client = Client::connect(driver.dir()).expect("client");
    let file = std::env::temp_dir().join(format!("messaging-java-write-{}", std::process::id()));
    let mut bytes = Vec::new();
    for (seq, len) in sizes(MAX_PAYLOAD, MAX_MESSAGE, MESSAGES).into_iter().enumerate() {
        let m = payload(seq as u64, len);
        bytes.extend_from_slice(&(len as i32).to_le_bytes());
        bytes.extend_from_slice(&reserved_of(seq as u64).to_le_bytes());
        bytes.extend_from_slice(&m);
    }
    std::fs::write(&file, &bytes).expect("messages file");
    for (i, (java_channel, ours)) in channels(40_363).iter().enumerate() {
        for (j, kind) in ["exclusive", "concurrent"].into_iter().enumerate() {
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
            let mut java = java_client(&jar, &args);
            let mut got = Stamped::new();
            let mut terms = std::collections::BTreeSet::new();
            let mut idle: IdleStrategy = "yield".parse().unwrap();
            let deadline = Instant::now() + Duration::from_secs(90);
            while (got.len() as u64) < MESSAGES {
                assert!(Instant::now() < deadline, "{what}: read {} of {MESSAGES}", got.len());
                if let Some(status) = java.try_wait().expect("try_wait") {
                    panic!("{what}: the Java client exited {status} after we read {}", got.len());
                }
                let n = sub
                    .poll(
                        &mut |m: &[u8], h: &MessageHeader<'_>| {
                            terms.insert(h.term_id());
                            got.push(verify(m).map(|seq| (seq, h.reserved_value())));
                        },
                        16,
                    )
                    .expect("our poll");
                idle.idle(n);
            }
            drop(java.stdin.take()); // it closes its publication once we have read everything
            let said = wait_for(java, &what, Duration::from_secs(30));
            assert!(said.contains(&format!("wrote {MESSAGES}")), "{what}: it said {said}");
            assert_eq!(got, expected(), "what our subscriber read of {what}");
            assert!(terms.len() >= 20, "{what}: only {} terms", terms.len());
        }
    }
    let _ = std::fs::remove_file(&file);
}
