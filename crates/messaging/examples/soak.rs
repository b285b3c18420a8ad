//! Soak of `messaging`'s fast path: `--messages` (default 10^8) through each publication
//! (exclusive, then concurrent) on one IPC stream, read at once by our `Subscriber` and by the
//! Aeron C client's subscription (with its fragment assembler), each on its own thread. Every
//! message carries its sequence number and bytes derived from it; one in `--fragmented-every`
//! is longer than a frame, so reassembly runs at scale too. Each reader counts what it got:
//! lost, duplicated, reordered and corrupt must all be 0 (exit 1 otherwise).
//!
//! `make soak` runs it; by hand:
//! `cargo run --release -p messaging --features embedded-driver --example soak -- --messages 1000000`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use messaging::{
    Client, Concurrent, EmbeddedDriver, Exclusive, IdleStrategy, MessageHeader, Publication, PublicationKind,
    Subscriber,
};

/// The usual message: 32 bytes, one 64-byte frame with Aeron's header.
const SMALL: usize = 32;
/// The occasional long one: three frames at the IPC MTU.
const LONG: usize = 3_000;

/// Message `seq`: its sequence, then bytes derived from it.
fn fill(buf: &mut [u8], seq: u64) {
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for b in &mut buf[8..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// What one reader counted.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    received: u64,
    lost: u64,
    duplicates: u64,
    reordered: u64,
    corrupt: u64,
    next: u64,
}

impl Tally {
    fn take(&mut self, m: &[u8], scratch: &mut Vec<u8>, every: u64) {
        self.received += 1;
        if m.len() < 8 {
            self.corrupt += 1;
            return;
        }
        let seq = u64::from_le_bytes(m[..8].try_into().unwrap());
        let len = if every > 0 && seq % every == every - 1 {
            LONG
        } else {
            SMALL
        };
        scratch.resize(len, 0);
        fill(scratch, seq);
        if m != scratch.as_slice() {
            self.corrupt += 1;
            return;
        }
        match seq.cmp(&self.next) {
            std::cmp::Ordering::Equal => self.next += 1,
            std::cmp::Ordering::Greater => {
                self.lost += seq - self.next;
                self.next = seq + 1;
            }
            std::cmp::Ordering::Less => {
                // Seen before (a duplicate) or arriving after a later one (reordered): the
                // sequence is strictly increasing in the log, so either is a fault.
                self.duplicates += 1;
                self.reordered += 1;
            }
        }
    }

    fn clean(&self, sent: u64) -> bool {
        self.received == sent && self.lost == 0 && self.duplicates == 0 && self.reordered == 0 && self.corrupt == 0
    }
}

struct Args {
    messages: u64,
    fragmented_every: u64,
    term_length: usize,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        messages: 100_000_000,
        fragmented_every: 1_000,
        term_length: 1 << 20,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.replace('_', "").parse().ok())
                .ok_or_else(|| format!("{name} takes a whole number"))
        };
        match flag.as_str() {
            "--messages" => a.messages = value("--messages")?,
            "--fragmented-every" => a.fragmented_every = value("--fragmented-every")?,
            "--term-length" => a.term_length = value("--term-length")? as usize,
            "-h" | "--help" => {
                return Err(
                    "usage: soak [--messages N (10^8)] [--fragmented-every N (1000, 0: never)] \
                            [--term-length BYTES (1 MiB)]"
                        .into(),
                )
            }
            other => return Err(format!("{other}: not a flag of soak; see --help")),
        }
    }
    Ok(a)
}

/// Adds a publication of kind `K` (what the soak runs twice).
trait Add: PublicationKind {
    fn add(client: &Client, stream: i32) -> Publication<Self>;
}

impl Add for Exclusive {
    fn add(client: &Client, stream: i32) -> Publication<Self> {
        client
            .exclusive_publication("aeron:ipc", stream)
            .expect("exclusive publication")
    }
}

impl Add for Concurrent {
    fn add(client: &Client, stream: i32) -> Publication<Self> {
        client.publication("aeron:ipc", stream).expect("concurrent publication")
    }
}

/// One soak: `K`'s publication on `stream`, our reader and the C client's.
fn soak<K: Add>(driver: &EmbeddedDriver, stream: i32, a: &Args) -> bool {
    let client = Client::connect(driver.dir()).expect("client");
    let mut sub = client.subscription("aeron:ipc", stream).expect("subscription");
    let mut publ = K::add(&client, stream);
    let done = AtomicBool::new(false);
    // The C reader's thread says when its subscription sees the publication.
    let c_ready = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !publ.is_connected() || sub.image_count() == 0 {
        assert!(Instant::now() < deadline, "our subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let started = Instant::now();
    let ((ours, ours_end), (theirs, theirs_end), sent) = std::thread::scope(|s| {
        let dir = driver.dir();
        let c_reader = s.spawn(|| c_read(dir, stream, a, &done, &c_ready));
        let our_reader = s.spawn(|| our_read(&mut sub, a, &done));
        while !c_ready.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline, "the C subscriber never connected");
            std::thread::sleep(Duration::from_millis(1));
        }
        let sent = publish_all(&mut publ, a);
        // Readers stop once they have everything, or once nothing more comes after this (a
        // second that the rate does not count: it runs until the last reader ended).
        std::thread::sleep(Duration::from_secs(1));
        done.store(true, Ordering::Release);
        (our_reader.join().unwrap(), c_reader.join().unwrap(), sent)
    });
    let wall = (ours_end.max(theirs_end) - started).as_secs_f64();
    let mut clean = true;
    for (reader, t) in [("messaging Subscriber", ours), ("Aeron C client", theirs)] {
        println!(
            "| {} | {reader} | {sent} | {} | {} | {} | {} | {} | {:.0} | {wall:.1} s |",
            K::NAME,
            t.received,
            t.lost,
            t.duplicates,
            t.reordered,
            t.corrupt,
            sent as f64 / wall
        );
        clean &= t.clean(sent);
    }
    clean
}

/// Offers `a.messages` messages, every `a.fragmented_every`-th one long enough to be
/// fragmented; returns how many went out.
fn publish_all<K: PublicationKind>(publ: &mut Publication<K>, a: &Args) -> u64 {
    let (messages, every) = (a.messages, a.fragmented_every);
    let mut buf = vec![0u8; LONG];
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let mut sent = 0;
    while sent < messages {
        let len = if every > 0 && sent % every == every - 1 {
            LONG
        } else {
            SMALL
        };
        fill(&mut buf[..len], sent);
        match publ.offer(&buf[..len]) {
            Ok(_) => {
                sent += 1;
                idle.reset();
            }
            Err(e) if e.is_retryable() => idle.idle_once(),
            Err(e) => panic!("offer {sent}: {e}"),
        }
    }
    sent
}

/// Our reader: polls until it has every message, or nothing more comes once `done`; returns
/// what it read and when it ended.
fn our_read(sub: &mut Subscriber, a: &Args, done: &AtomicBool) -> (Tally, Instant) {
    let (messages, every) = (a.messages, a.fragmented_every);
    let mut tally = Tally::default();
    let mut scratch = Vec::with_capacity(LONG);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    while tally.received < messages {
        let n = sub
            .poll(
                &mut |m: &[u8], _h: &MessageHeader<'_>| tally.take(m, &mut scratch, every),
                256,
            )
            .expect("our poll");
        if n == 0 && done.load(Ordering::Acquire) {
            break;
        }
        idle.idle(n);
    }
    (tally, Instant::now())
}

/// The C client's reader (its fragment assembler), on a client of its own: says `ready` once
/// its subscription sees the publication, then polls as [`our_read`] does.
fn c_read(dir: &std::path::Path, stream: i32, a: &Args, done: &AtomicBool, ready: &AtomicBool) -> (Tally, Instant) {
    let (messages, every) = (a.messages, a.fragmented_every);
    let c = c_client(dir);
    let c_sub =
        c.0.async_add_subscription(
            c"aeron:ipc",
            stream,
            rusteron_client::Handlers::NONE,
            rusteron_client::Handlers::NONE,
        )
        .and_then(|x| x.poll_blocking(Duration::from_secs(10)))
        .expect("C subscription");
    while !c_sub.is_connected() {
        std::thread::sleep(Duration::from_millis(1));
    }
    ready.store(true, Ordering::Release);
    let tally = Arc::new(Mutex::new((Tally::default(), Vec::new())));
    let sink = tally.clone();
    let (assembler, _delegate) =
        rusteron_client::Handler::with_fragment_assembler(move |m: &[u8], _h: rusteron_client::AeronHeader| {
            let mut t = sink.lock().unwrap();
            let (tally, scratch) = &mut *t;
            tally.take(m, scratch, every);
        })
        .expect("C fragment assembler");
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    loop {
        let n = c_sub.poll(Some(&assembler), 256).expect("C poll").max(0) as usize;
        let got = tally.lock().unwrap().0.received;
        if got >= messages || (n == 0 && done.load(Ordering::Acquire)) {
            break;
        }
        idle.idle(n);
    }
    let ended = Instant::now();
    let t = tally.lock().unwrap().0;
    (t, ended)
}

fn c_client(dir: &std::path::Path) -> (rusteron_client::Aeron, rusteron_client::AeronContext) {
    let dir = std::ffi::CString::new(dir.to_string_lossy().into_owned()).unwrap();
    let context = rusteron_client::AeronContext::new().expect("C client context");
    context.set_dir(&dir).expect("C client dir");
    let aeron = rusteron_client::Aeron::new(&context).expect("C client");
    aeron.start().expect("starting the C client");
    (aeron, context)
}

fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    };
    let driver = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(a.term_length)
        .spawn()
        .unwrap_or_else(|e| {
            eprintln!("soak: {e}");
            std::process::exit(2);
        });
    println!(
        "soak: {} messages a publication ({} B, one in {} of {} B), {} B IPC terms",
        a.messages, SMALL, a.fragmented_every, LONG, a.term_length
    );
    println!("| publication | reader | sent | received | lost | duplicates | reordered | corrupt | msg/s | wall |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let clean = soak::<Exclusive>(&driver, 2001, &a) & soak::<Concurrent>(&driver, 2002, &a);
    if !clean {
        eprintln!("soak: a reader lost, duplicated, reordered or corrupted messages (table above)");
        std::process::exit(1);
    }
}
