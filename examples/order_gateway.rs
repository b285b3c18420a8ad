//! The shape of a trading service on `messaging`: a market-data **feed** publishes ticks on
//! stream 10, an order **gateway** turns each tick into one order on stream 20, and an
//! **exchange** reads the orders. One process, three threads, one embedded media driver, all on
//! `aeron:ipc`, so it runs anywhere with one command:
//!
//! ```text
//! cargo run --release --example order_gateway -- --ticks 200000 --restart-at 100000
//! ```
//!
//! What it shows:
//! - **back-pressure without loss**: the gateway reads ticks with `controlled_poll`; when its
//!   order publication is back-pressured (the exchange is slow: `--exchange-delay-us`), it
//!   answers `ControlledAction::Abort`, so the tick stays in the log and comes again: no tick is
//!   dropped and none is buffered in the gateway;
//! - **shutdown**: the feed ends with an end tick (repeated until the exchange saw one, since a
//!   restart may lose it); the gateway forwards it; the exchange stops at the first and tells
//!   the others; every thread is joined;
//! - **a driver restart**: with `--restart-at N` the media driver is stopped in order after the
//!   feed sent N ticks and a new one is started in the same directory. Each thread sees its
//!   client's liveness turn false (`LivenessError::DriverClosed`), builds a new client and
//!   carries on; the exchange counts what was lost at the switch (ticks in the old driver's
//!   logs that nobody had read yet) from the gaps in the sequence.
//!
//! Timing model: none; this example counts messages, it does not time them.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use messaging::{
    Client, ConcurrentPublication, ControlledAction, EmbeddedDriver, IdleStrategy, MessageHeader, OfferError,
    Subscriber,
};

const TICKS: i32 = 10;
const ORDERS: i32 = 20;
/// The end tick's sequence number.
const END: u64 = u64::MAX;
/// How long a thread waits for a new driver after losing one.
const RECONNECT_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct Args {
    ticks: u64,
    restart_at: Option<u64>,
    exchange_delay_us: u64,
}

fn parse_args() -> Args {
    let mut a = Args {
        ticks: 100_000,
        restart_at: None,
        exchange_delay_us: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| die(&format!("{flag} needs a whole number")))
        };
        match flag.as_str() {
            "--ticks" => a.ticks = value(),
            "--restart-at" => a.restart_at = Some(value()),
            "--exchange-delay-us" => a.exchange_delay_us = value(),
            _ => die(&format!(
                "unknown flag {flag}; flags: --ticks N, --restart-at N, --exchange-delay-us N"
            )),
        }
    }
    a
}

fn die(msg: &str) -> ! {
    eprintln!("order_gateway: {msg}");
    std::process::exit(2)
}

fn spawn_driver(dir: &Path) -> EmbeddedDriver {
    EmbeddedDriver::builder()
        .dir(dir)
        .ipc_term_length(64 << 10)
        .spawn()
        .unwrap_or_else(|e| die(&e.to_string()))
}

/// A client on `dir`, waiting (bounded) for a driver to be there: after a restart the new
/// driver may not be up yet.
fn connect(dir: &Path, role: &str) -> Client {
    let deadline = Instant::now() + RECONNECT_WITHIN;
    loop {
        match Client::builder()
            .dir(dir)
            .driver_timeout(Duration::from_secs(2))
            .build()
        {
            Ok(c) => return c,
            Err(e) if Instant::now() > deadline => die(&format!("{role}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The feed: ticks 0..n (8 bytes each, the sequence number), then the end tick until the
/// exchange is done. After losing the driver it reconnects and goes on from the first tick that
/// was not published.
fn feed(dir: PathBuf, n: u64, published: Arc<AtomicU64>, finished: Arc<AtomicBool>) {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let mut seq = 0;
    while !finished.load(Ordering::Acquire) {
        let client = connect(&dir, "feed");
        let mut publ = client
            .publication("aeron:ipc", TICKS)
            .unwrap_or_else(|e| die(&e.to_string()));
        while !finished.load(Ordering::Acquire) {
            // After the last tick, the end tick again and again until the exchange saw one: a
            // driver restart may have lost it with the old driver's logs.
            let tick = if seq >= n { END } else { seq };
            match publ.offer(&tick.to_le_bytes()) {
                Ok(_) if tick == END => std::thread::sleep(Duration::from_millis(1)),
                Ok(_) => {
                    seq += 1;
                    published.store(seq, Ordering::Release);
                }
                Err(OfferError::ClientClosed) => break, // the driver went: a new client
                Err(e) if e.is_retryable() => idle.idle_once(),
                Err(e) => die(&format!("feed: {e}")),
            }
        }
    }
}

/// The gateway: one order per tick (end ticks too), until the exchange is done. A
/// back-pressured order publication refuses the tick (`Abort`), so it comes again on the next
/// poll.
fn gateway(dir: PathBuf, refused: Arc<AtomicU64>, finished: Arc<AtomicBool>) {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    while !finished.load(Ordering::Acquire) {
        let client = connect(&dir, "gateway");
        let mut ticks: Subscriber = client
            .subscription("aeron:ipc", TICKS)
            .unwrap_or_else(|e| die(&e.to_string()));
        let mut orders: ConcurrentPublication = client
            .publication("aeron:ipc", ORDERS)
            .unwrap_or_else(|e| die(&e.to_string()));
        loop {
            let polled = ticks.controlled_poll(
                &mut |tick: &[u8], _: &MessageHeader<'_>| match orders.try_claim(tick.len()) {
                    Ok(mut claim) => {
                        claim.buffer_mut().copy_from_slice(tick);
                        claim.commit();
                        ControlledAction::Continue
                    }
                    Err(e) if e.is_retryable() => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        ControlledAction::Abort
                    }
                    Err(OfferError::ClientClosed) => ControlledAction::Abort, // handled below
                    Err(e) => die(&format!("gateway: {e}")),
                },
                16,
            );
            match polled {
                Ok(_) if finished.load(Ordering::Acquire) => break,
                Ok(n) => idle.idle(n),
                Err(_) => break, // the driver went: a new client, the same loop
            }
        }
    }
}

/// What the exchange saw.
#[derive(Debug, Default)]
struct Received {
    orders: u64,
    out_of_order: u64,
    gaps: u64,
}

/// The exchange: reads orders until the end order, checks the sequence.
fn exchange(dir: PathBuf, delay: Duration, finished: Arc<AtomicBool>) -> Received {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let mut r = Received::default();
    let mut next = 0_u64;
    let mut done = false;
    while !done {
        let client = connect(&dir, "exchange");
        let mut orders = client
            .subscription("aeron:ipc", ORDERS)
            .unwrap_or_else(|e| die(&e.to_string()));
        loop {
            let polled = orders.poll(
                &mut |order: &[u8], _: &MessageHeader<'_>| {
                    let seq = u64::from_le_bytes(order.try_into().unwrap_or([0; 8]));
                    if seq == END {
                        done = true;
                        return;
                    }
                    r.orders += 1;
                    if seq < next {
                        r.out_of_order += 1;
                    } else {
                        r.gaps += seq - next;
                        next = seq + 1;
                    }
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                },
                16,
            );
            match polled {
                Ok(n) if !done => idle.idle(n),
                Ok(_) => break,
                Err(_) => break,
            }
        }
    }
    finished.store(true, Ordering::Release);
    r
}

fn main() {
    let a = parse_args();
    let dir = PathBuf::from(format!("/dev/shm/order-gateway-{}", std::process::id()));
    let mut driver = Some(spawn_driver(&dir));
    let published = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let delay = Duration::from_micros(a.exchange_delay_us);
    let finished = Arc::new(AtomicBool::new(false));
    let exchange = std::thread::spawn({
        let (dir, finished) = (dir.clone(), finished.clone());
        move || exchange(dir, delay, finished)
    });
    let gateway = std::thread::spawn({
        let (dir, refused, finished) = (dir.clone(), refused.clone(), finished.clone());
        move || gateway(dir, refused, finished)
    });
    let feed = std::thread::spawn({
        let (dir, published, finished, n) = (dir.clone(), published.clone(), finished.clone(), a.ticks);
        move || feed(dir, n, published, finished)
    });
    let restarted = Arc::new(AtomicBool::new(false));
    if let Some(at) = a.restart_at {
        while published.load(Ordering::Acquire) < at && !feed.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !feed.is_finished() {
            println!(
                "restart: stopping the media driver after {} ticks",
                published.load(Ordering::Acquire)
            );
            if let Some(old) = driver.take() {
                old.stop();
            }
            driver = Some(spawn_driver(&dir));
            restarted.store(true, Ordering::Release);
        }
    }
    feed.join().expect("feed");
    gateway.join().expect("gateway");
    let r = exchange.join().expect("exchange");
    drop(driver);
    println!(
        "ticks {} (+ end), orders received {}, lost at the restart {}, out of order {}, refused for \
         back-pressure {} (each came again), {:.2} s{}",
        a.ticks,
        r.orders,
        a.ticks - r.orders,
        r.out_of_order,
        refused.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
        if restarted.load(Ordering::Acquire) {
            ", driver restarted once"
        } else {
            ""
        }
    );
    if r.out_of_order > 0 || (!restarted.load(Ordering::Acquire) && r.orders != a.ticks) {
        std::process::exit(1);
    }
}
