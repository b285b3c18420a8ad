//! Proves `Publisher::prefault` and `Subscriber::prefault` take the page faults out of the
//! measured phase: minor faults of the publishing thread and of the polling thread
//! (`getrusage(RUSAGE_THREAD)`) while they move four terms' worth of messages through a
//! 1 MiB-term aeron:ipc stream, so every page of all three terms is written and read.
//!
//! Without prefault the publishing thread takes one fault per 4 KiB page it writes first, the
//! polling thread one per 1 to 16 pages it reads first (fault-around), the test prints the
//! counts; with it, none. Each test has its own embedded driver and two clients.
#![cfg(feature = "embedded-driver")]

mod common;

use std::time::{Duration, Instant};

use std::path::Path;

use common::driver;
use messaging::{
    Client, EmbeddedDriver, IdleStrategy, MessageHeader, PrefaultError, Publication, PublicationKind, Subscriber,
};

/// 1 MiB: 256 pages of 4 KiB per term.
const TERM: usize = 1 << 20;
/// 224 B of payload + Aeron's 32 B header: 256 B frames, 4,096 per term.
const PAYLOAD: usize = 224;
/// Four terms' worth: all three terms are written and read, and the first one again.
const MESSAGES: u64 = (4 * TERM / 256) as u64;
/// Faults a prefaulted thread may still take: the counters in cnc.dat (publication limit,
/// subscriber position), a stack page of a path first taken in the measured phase.
const PREFAULTED_MAX: u64 = 10;
const DEADLINE: Duration = Duration::from_secs(60);

/// Minor faults of the calling thread so far.
fn thread_minor_faults() -> u64 {
    /// Linux's `RUSAGE_THREAD` (getrusage(2)); the libc crate leaves it out for glibc.
    const RUSAGE_THREAD: libc::c_int = 1;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the right type; getrusage fills it.
    let rc = unsafe { libc::getrusage(RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    // SAFETY: zero-initialised, then filled by a successful getrusage.
    let usage = unsafe { usage.assume_init() };
    usage.ru_minflt as u64
}

/// Minor faults of thread `tid` of this process so far (field 10 of its `stat`).
fn task_minor_faults(tid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("the driver thread's stat");
    // The command name may contain spaces: count fields after its closing parenthesis.
    let after_name = &stat[stat.rfind(')').expect("a stat line") + 1..];
    after_name
        .split_ascii_whitespace()
        .nth(10 - 3)
        .and_then(|f| f.parse().ok())
        .expect("minflt")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefault {
    Nothing,
    SubscriberOnly,
    Both,
}

/// Minor faults taken while `MESSAGES` messages went through.
#[derive(Debug, Clone, Copy)]
struct Faults {
    publisher: u64,
    subscriber: u64,
    /// The embedded driver's agent thread (cleans each term behind the subscriber).
    driver: u64,
}

fn run(prefault: Prefault, sparse: Option<bool>) -> Faults {
    run_with(
        prefault,
        sparse,
        &|d| Client::connect(d).expect("client connects"),
        |c| c.publication("aeron:ipc", 1).expect("publication"),
    )
}

/// The same through the exclusive publication, its client built by `connect`.
fn run_exclusive(prefault: Prefault, connect: &dyn Fn(&Path) -> Client) -> Faults {
    run_with(prefault, None, connect, |c| {
        c.exclusive_publication("aeron:ipc", 1).expect("exclusive publication")
    })
}

fn run_with<K: PublicationKind>(
    prefault: Prefault,
    sparse: Option<bool>,
    connect: &dyn Fn(&Path) -> Client,
    add: impl Fn(&Client) -> Publication<K>,
) -> Faults {
    let mut builder = EmbeddedDriver::builder().private_dir().ipc_term_length(TERM);
    if let Some(sparse) = sparse {
        builder = builder.term_buffer_sparse_file(sparse);
    }
    let driver = builder.spawn().expect("driver starts");
    // Two clients, as two processes would have: one client maps an IPC log once for both
    // its publication and its image of it (aeron-rs keys mappings by the publication's
    // registration id), which would let one side's faults or prefault serve the other.
    let sub_client = Client::connect(driver.dir()).expect("client connects");
    let pub_client = connect(driver.dir());
    let mut subscriber = sub_client.subscription("aeron:ipc", 1).expect("subscription");
    let mut publisher = add(&pub_client);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publisher.is_connected() || subscriber.image_count() == 0 {
        assert!(Instant::now() < deadline, "the subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    if prefault != Prefault::Nothing {
        let stats = subscriber.prefault().expect("subscriber prefault");
        println!("{prefault:?}, sparse {sparse:?}: subscriber prefault: {stats}");
        assert_eq!(stats.mappings, 1, "one image");
        assert!(stats.bytes > 3 * TERM, "{stats}");
    }
    if prefault == Prefault::Both {
        let stats = publisher.prefault().expect("publisher prefault");
        println!("{prefault:?}, sparse {sparse:?}: publisher prefault: {stats}");
        // Every mapping of the file in this process: the publisher's own (which it writes),
        // aeron-rs's (which it keeps for the publication's life), the image's and the embedded
        // driver's.
        assert_eq!(stats.mappings, 4, "{stats}");
        assert!(stats.bytes > 4 * 3 * TERM, "{stats}");
    }
    let driver_before = task_minor_faults(driver.tid());
    let (publisher_faults, subscriber_faults) = std::thread::scope(|scope| {
        let publishing = scope.spawn(|| publish(&mut publisher));
        let polling = scope.spawn(|| receive(&mut subscriber));
        (
            publishing.join().expect("the publishing thread"),
            polling.join().expect("the polling thread"),
        )
    });
    let faults = Faults {
        publisher: publisher_faults,
        subscriber: subscriber_faults,
        driver: task_minor_faults(driver.tid()) - driver_before,
    };
    println!(
        "{prefault:?}, sparse {sparse:?}, {} KiB through {} KiB terms: {faults:?} (kernel {})",
        MESSAGES * 256 / 1024,
        TERM / 1024,
        kernel()
    );
    faults
}

/// Sends message 0 (warming this thread's stack and code paths), then counts the faults
/// taken sending `MESSAGES` more.
fn publish<K: PublicationKind>(publisher: &mut Publication<K>) -> u64 {
    let mut msg = [0_u8; PAYLOAD];
    let mut idle: IdleStrategy = "backoff".parse().unwrap();
    let started = Instant::now();
    let mut before = 0;
    for seq in 0..=MESSAGES {
        if seq == 1 {
            before = thread_minor_faults();
        }
        msg[..8].copy_from_slice(&seq.to_le_bytes());
        loop {
            match publisher.offer(&msg) {
                Ok(_) => break,
                Err(e) if e.is_retryable() => {
                    assert!(started.elapsed() < DEADLINE, "publisher stalled at {seq}: {e}");
                    idle.idle_once();
                }
                Err(e) => panic!("offer failed: {e}"),
            }
        }
        idle.reset();
    }
    thread_minor_faults() - before
}

/// Receives message 0, then counts the faults taken receiving `MESSAGES` more, in order.
fn receive(subscriber: &mut Subscriber) -> u64 {
    let mut idle: IdleStrategy = "backoff".parse().unwrap();
    let started = Instant::now();
    let mut next = 0_u64;
    let mut before = None;
    while next <= MESSAGES {
        if before.is_none() && next >= 1 {
            before = Some(thread_minor_faults());
        }
        let n = subscriber
            .poll(
                &mut |msg: &[u8], _: &MessageHeader<'_>| {
                    assert_eq!(msg.len(), PAYLOAD);
                    assert_eq!(
                        u64::from_le_bytes(msg[..8].try_into().unwrap()),
                        next,
                        "lost or repeated"
                    );
                    next += 1;
                },
                64,
            )
            .expect("the client has its driver");
        if n == 0 {
            assert!(started.elapsed() < DEADLINE, "subscriber stalled at {next}");
        }
        idle.idle(n);
    }
    thread_minor_faults() - before.expect("message 0 arrived")
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(|_| "?".into(), |s| s.trim().to_owned())
}

/// Pages in the three terms.
const PAGES: u64 = (3 * TERM / 4096) as u64;

/// Without prefault a writer takes one fault per page it writes first: at least half the
/// pages of the three terms, allowing for larger pages.
fn assert_many_writes(thread: &str, faults: u64) {
    assert!(
        faults >= PAGES / 2,
        "the {thread} thread took only {faults} faults without prefault (expected about {PAGES}): \
         this test can no longer tell prefault from no prefault"
    );
}

/// A reader takes fewer: a read fault also maps the neighbours already in the page cache
/// (Linux's fault-around, 16 pages), so between 1/16 of the pages and all of them, depending
/// on how far the publisher is ahead.
fn assert_many_reads(thread: &str, faults: u64) {
    assert!(
        faults >= PAGES / 20,
        "the {thread} thread took only {faults} faults without prefault (expected {} to {PAGES}): \
         this test can no longer tell prefault from no prefault",
        PAGES / 16
    );
}

fn assert_few(thread: &str, faults: u64) {
    assert!(
        faults < PREFAULTED_MAX,
        "the {thread} thread took {faults} faults after prefault"
    );
}

#[test]
fn without_prefault_the_hot_threads_fault_on_every_new_page() {
    let f = run(Prefault::Nothing, None);
    assert_many_writes("publishing", f.publisher);
    assert_many_reads("polling", f.subscriber);
    assert_many_writes("driver", f.driver);
}

#[test]
fn subscriber_prefault_covers_the_image_and_nothing_else() {
    let f = run(Prefault::SubscriberOnly, None);
    assert_few("polling", f.subscriber);
    assert_many_writes("publishing", f.publisher);
}

#[test]
fn with_prefault_the_hot_threads_take_no_page_fault() {
    let f = run(Prefault::Both, None);
    assert_few("publishing", f.publisher);
    assert_few("polling", f.subscriber);
    // The publisher's prefault covered the embedded driver's mapping of the same file too.
    assert_few("driver", f.driver);
}

#[test]
fn a_non_sparse_driver_pre_touches_its_own_mapping_only() {
    let f = run(Prefault::Nothing, Some(false));
    assert_few("driver", f.driver);
    // The clients still fault: the pages exist, but are not in their page tables.
    assert_many_writes("publishing", f.publisher);
    assert_many_reads("polling", f.subscriber);
    let f = run(Prefault::Both, Some(false));
    assert_few("publishing", f.publisher);
    assert_few("polling", f.subscriber);
}

#[test]
fn a_subscriber_without_an_image_is_told_to_wait_for_the_publisher() {
    let driver = driver();
    let client = Client::connect(driver.dir()).unwrap();
    let subscriber = client.subscription("aeron:ipc", 2).unwrap();
    let e = subscriber.prefault().unwrap_err();
    assert!(matches!(e, PrefaultError::NoImage { .. }), "{e:?}");
    assert!(e.to_string().contains("after a publisher has connected"), "{e}");
}

#[test]
fn the_exclusive_publisher_faults_without_prefault_and_not_with_it() {
    let f = run_exclusive(Prefault::Nothing, &|d| Client::connect(d).expect("client connects"));
    assert_many_writes("exclusive publishing", f.publisher);
    let f = run_exclusive(Prefault::Both, &|d| Client::connect(d).expect("client connects"));
    assert_few("exclusive publishing", f.publisher);
    assert_few("polling", f.subscriber);
}

#[test]
fn pre_touch_mapped_memory_faults_the_exclusive_log_in_when_it_is_added() {
    let f = run_exclusive(Prefault::SubscriberOnly, &|d| {
        Client::builder()
            .dir(d)
            .pre_touch_mapped_memory(true)
            .build()
            .expect("client connects")
    });
    assert_few("exclusive publishing", f.publisher);
}
