//! The shape of a trading service on `messaging`: a market-data **feed** publishes ticks on
//! stream 10, an order **gateway** turns each tick into one order on stream 20, and an
//! **exchange** reads the orders. One process, three named threads, one embedded media driver,
//! all on `aeron:ipc`, so it runs anywhere with one command. The gateway is pinned to one core,
//! the exchange and the feed (which sleeps between ticks) to another, and the helpers to a
//! third when there is one: every client's conductor thread (`ClientBuilder::conductor_core`;
//! on two cores beside the exchange, since the gateway's, built on the gateway's pinned thread,
//! would otherwise wake on the gateway's core) and the tap's writer
//! (`TapBuilder::writer_core`; free on two cores). `--no-pin` leaves them all free:
//!
//! ```text
//! cargo run --release --example order_gateway -- --ticks 200000 --restart-at 100000
//! cargo run --release --example order_gateway -- --tap /tmp/tap --rate 20000 --ticks 200000
//! cargo run --release --example order_gateway -- --tap /tmp/tap --venue --idle spin
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
//!   logs that nobody had read yet) from the gaps in the sequence;
//! - **the tap, hop by hop** (`--tap DIR`): the feed stamps each tick's send time into the
//!   frame's reserved value; the gateway's subscription records **feed-to-gateway**; the
//!   gateway records **inside-gateway** itself (the tap's receive time to its own send time)
//!   and forwards a forwarded stamp (its send time's low 32 bits and the tick's age), so the
//!   exchange's subscription records **gateway-to-exchange** (its hop) and **feed-to-exchange**
//!   (end to end) from the one 8-byte field. Each figure gets an interval log in `DIR`
//!   (`<figure>.hlog`), beside `tap.json` and `tap.prom`; the end tick carries no stamp, so
//!   each figure's count is the ticks that went through. `--stall-us N --stall-every M` plants
//!   a busy stall of N µs in the gateway's handler every M ticks, to see it move the figures.
//!   `--tap-slowest N` keeps each interval's N slowest messages per figure (`slowest.jsonl`)
//!   for `latency-probe attach`;
//! - **the venue** (`--venue`): the feed and the exchange as one thread, `venue`, as a trading
//!   venue publishes market data and takes orders; it waits for each tick's time between polls
//!   of the orders instead of sleeping, so no thread sleeps until each tick (`gateway-send`
//!   of `--handoff` still wakes per order). On two cores the feed's wake-ups otherwise sit in
//!   the hop whose reader shares its core (measured in
//!   `docs/results/2026-11-29-order-gateway-venue.md`); with `--idle spin` the two hot threads
//!   never give their cores away by yielding. `--exchange-delay-us` then holds the feed too;
//! - **a channel hand-off** (`--handoff`): the gateway's handler sends each tick through a
//!   crossbeam channel to a second thread, `gateway-send`, which blocks in `recv` until one comes
//!   and publishes the order: the shape of a service that hands work to another thread, whose
//!   every message then waits for a futex wake-up (inside-gateway records it, on `gateway-send`).
//!
//! Timing model: without `--tap`, none (the example counts messages). With `--tap`, every
//! figure is `CLOCK_MONOTONIC` nanoseconds on this host: a hop is the receiving poll's clock
//! read (once per poll, at its first stamped message) minus the sender's stamp (read right
//! before its claim); inside-gateway is the gateway's send stamp minus that receive time, so
//! the figures of one tick add up: feed-to-exchange = feed-to-gateway + inside-gateway +
//! gateway-to-exchange.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use messaging::tap::{FigureRecorder, RecordLatency, Stamp, Tap};
use messaging::{
    AddError, Client, ConcurrentPublication, ControlledAction, EmbeddedDriver, IdleStrategy, MessageHeader, OfferError,
    PollError, StampClock, Subscriber, ThreadBuilder,
};

mod args;
mod report;
use report::Refused;
mod venue;
use args::parse_args;

const TICKS: i32 = 10;
const ORDERS: i32 = 20;
/// The end tick's sequence number.
const END: u64 = u64::MAX;
/// How long a thread waits for a new driver after losing one.
const RECONNECT_WITHIN: Duration = Duration::from_secs(10);
/// The figures of the tap, in path order.
const FIGURES: [&str; 4] = [
    "feed-to-gateway",
    "inside-gateway",
    "gateway-to-exchange",
    "feed-to-exchange",
];

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

/// A client on the driver's directory, its conductor thread on the helpers' core, waiting
/// (bounded) for a driver to be there: after a restart the new driver may not be up yet.
fn connect(s: &Shared, role: &str) -> Client {
    let deadline = Instant::now() + RECONNECT_WITHIN;
    loop {
        let who = role.to_owned();
        match Client::builder()
            .dir(&s.dir)
            // Not the calling thread's core: the gateway's conductor would wake on the gateway's.
            .conductor_core(s.helpers_core)
            .driver_timeout(Duration::from_secs(2))
            // Each client says so when the driver goes: name which one.
            .error_handler(move |e| eprintln!("{who}: {e}"))
            .build()
        {
            Ok(c) => return c,
            Err(e) if Instant::now() > deadline => die(&format!("{role}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// What the threads share.
struct Shared {
    dir: PathBuf,
    /// Where the clients' conductor threads run: a spare core, else the exchange's (or the
    /// venue's).
    helpers_core: Option<usize>,
    published: AtomicU64,
    refused: Refused,
    finished: AtomicBool,
    /// The gateway's order publication reached the exchange: the path is up end to end.
    ready: AtomicBool,
    tap: Option<Tap>,
}

/// Waits until tick `seq`'s turn at `rate` ticks per second from `start`, sleeping (the feed
/// never spins or yields: on two cores the gateway and the exchange may spin). Linux's timer
/// slack (50 µs by default) makes a short sleep longer, so ticks come in small bursts behind
/// their schedule, as market data does.
fn pace(start: Instant, rate: Option<u64>, seq: u64) {
    let Some(rate) = rate else { return };
    let due = due(start, rate, seq);
    let now = Instant::now();
    if now < due {
        std::thread::sleep(due - now);
    }
}

/// When tick `seq` is due at `rate` ticks per second from `start`.
fn due(start: Instant, rate: u64, seq: u64) -> Instant {
    start + Duration::from_nanos(seq.saturating_mul(1_000_000_000) / rate)
}

/// What an add returned: the handle, or `None` when the client closed meanwhile (the driver
/// went, as in a restart: build a new client); any other error ends the example.
fn added<T>(r: Result<T, AddError>) -> Option<T> {
    match r {
        Ok(handle) => Some(handle),
        Err(AddError::ClientClosed) => None,
        Err(e) => die(&e.to_string()),
    }
}

/// The feed's publication of ticks, stamping their send time when the tap records; `None`
/// when the client closed meanwhile.
fn tick_publication(client: &Client, s: &Shared) -> Option<ConcurrentPublication> {
    let mut publ = added(client.publication("aeron:ipc", TICKS))?;
    if s.tap.is_some() {
        publ.stamp_send_time(Some(StampClock::Monotonic));
    }
    Some(publ)
}

/// The exchange's subscription to orders, recording the last hop and end to end when the tap
/// records; `None` when the client closed meanwhile.
fn order_subscription(client: &Client, s: &Shared) -> Option<Subscriber> {
    let mut orders = added(client.subscription("aeron:ipc", ORDERS))?;
    if let Some(tap) = &s.tap {
        orders
            .record_latency(tap, RecordLatency::hop(FIGURES[2]).end_to_end(FIGURES[3]))
            .unwrap_or_else(|e| die(&e.to_string()));
    }
    Some(orders)
}

/// The feed: ticks 0..n (8 bytes each, the sequence number), paced at `rate`, stamped when the
/// tap records; then the end tick (unstamped) until the exchange is done. After losing the
/// driver it reconnects and goes on from the first tick that was not published.
fn feed(s: Arc<Shared>, n: u64, rate: Option<u64>) {
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let mut seq = 0;
    // The first ticks wait for the path to be up (as a service starts its feed once its
    // downstream is connected), so no figure holds the connections' set-up.
    let deadline = Instant::now() + RECONNECT_WITHIN;
    while !s.ready.load(Ordering::Acquire) {
        if Instant::now() > deadline {
            die("feed: the gateway never reached the exchange");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    while !s.finished.load(Ordering::Acquire) {
        let client = connect(&s, "feed");
        let Some(publ) = tick_publication(&client, &s) else {
            continue;
        };
        while !s.finished.load(Ordering::Acquire) {
            // After the last tick, the end tick again and again until the exchange saw one: a
            // driver restart may have lost it with the old driver's logs.
            let tick = if seq >= n { END } else { seq };
            if tick != END {
                pace(start, rate, seq);
            }
            let sent = if tick == END {
                publ.offer_with_reserved_value(&tick.to_le_bytes(), 0)
            } else {
                publ.offer(&tick.to_le_bytes())
            };
            match sent {
                Ok(_) if tick == END => std::thread::sleep(Duration::from_millis(1)),
                Ok(_) => {
                    seq += 1;
                    s.published.store(seq, Ordering::Release);
                }
                Err(OfferError::ClientClosed) => break, // the driver went: a new client
                Err(e) if e.is_retryable() => idle.idle_once(),
                Err(e) => die(&format!("feed: {e}")),
            }
        }
    }
}

/// The gateway's planted stall: `us` µs of busy work every `every` ticks.
#[derive(Clone, Copy)]
struct Stall {
    us: u64,
    every: u64,
}

/// Forwards one tick as one order: reads its send time right before the claim, writes a
/// forwarded stamp when the tick had one, and records the time the tick spent inside.
fn forward(
    orders: &mut ConcurrentPublication,
    tick: &[u8],
    h: &MessageHeader<'_>,
    inside: Option<&mut FigureRecorder>,
    refused: &Refused,
) -> ControlledAction {
    let received = h.received_ns();
    let now = received.map(|_| StampClock::Monotonic.now_ns());
    match orders.try_claim(tick.len()) {
        Ok(mut claim) => {
            claim.buffer_mut().copy_from_slice(tick);
            if let Some(stamp) = now.and_then(|now| h.forwarded_stamp(now)) {
                claim.set_reserved_value(stamp.to_reserved());
            }
            claim.commit();
            // After the commit: the exchange reads the order while the gateway records (a
            // claim left open holds the exchange at that frame).
            if let (Some(r), Some(now), Some(inside)) = (received, now, inside) {
                inside.record_at(now - r, now);
            }
            ControlledAction::Continue
        }
        Err(e) if e.is_retryable() => {
            refused.offer(&e);
            ControlledAction::Abort
        }
        Err(OfferError::ClientClosed) => ControlledAction::Abort, // handled by the poll loop
        Err(e) => die(&format!("gateway: {e}")),
    }
}

/// One tick handed to `gateway-send`: its bytes and, when it was stamped, the tap's receive
/// time and the tick's age then.
type Handed = ([u8; 8], Option<(i64, i64)>);

/// Where the gateway's handler puts an order: straight into the publication, or through the
/// channel to `gateway-send` (`--handoff`).
enum Out {
    Direct(ConcurrentPublication),
    Channel(crossbeam_channel::Sender<Handed>),
}

/// Hands one tick to `gateway-send`; a full channel refuses it (`Abort`: it comes again).
fn hand_off(
    tx: &crossbeam_channel::Sender<Handed>,
    tick: &[u8],
    h: &MessageHeader<'_>,
    refused: &Refused,
) -> ControlledAction {
    let stamp = h.received_ns().and_then(|r| {
        let age = Stamp::from_reserved(h.reserved_value()).latency(r)?.end_to_end_ns;
        Some((r, age))
    });
    match tx.try_send((tick.try_into().unwrap_or([0; 8]), stamp)) {
        Ok(()) => ControlledAction::Continue,
        Err(crossbeam_channel::TrySendError::Full(_)) => {
            refused.channel_full.fetch_add(1, Ordering::Relaxed);
            ControlledAction::Abort
        }
        Err(crossbeam_channel::TrySendError::Disconnected(_)) => {
            // gateway-send went with the old driver: the gateway builds a new one.
            refused.not_connected.fetch_add(1, Ordering::Relaxed);
            ControlledAction::Abort
        }
    }
}

/// `gateway-send` (`--handoff`): blocks in `recv` until a tick comes, publishes it as an order
/// with a forwarded stamp, and records the time the tick spent inside the gateway (channel and
/// wake-up included). Ends when the channel closes or the driver goes; gives the recorder back.
fn gateway_send(
    orders: ConcurrentPublication,
    rx: crossbeam_channel::Receiver<Handed>,
    mut inside: Option<FigureRecorder>,
    s: Arc<Shared>,
) -> Option<FigureRecorder> {
    while !orders.is_connected() && !s.finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
    s.ready.store(true, Ordering::Release);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    while let Ok((tick, stamp)) = rx.recv() {
        loop {
            let now = StampClock::Monotonic.now_ns();
            let sent = match stamp {
                Some((received, age)) => {
                    orders.offer_with_reserved_value(&tick, Stamp::forwarded(now, age + (now - received)).to_reserved())
                }
                None => orders.offer(&tick),
            };
            match sent {
                Ok(_) => {
                    if let (Some(r), Some((received, _))) = (inside.as_mut(), stamp) {
                        r.record_at(now - received, now);
                    }
                    break;
                }
                // The exchange is done: nothing reads an order any more (an end tick after the
                // one it saw would be refused, not connected, for ever).
                Err(_) if s.finished.load(Ordering::Acquire) => return inside,
                Err(e) if e.is_retryable() => {
                    s.refused.offer(&e);
                    idle.idle_once();
                }
                Err(_) => return inside, // the driver went
            }
        }
    }
    inside
}

/// The gateway: one order per tick (end ticks too), until the exchange is done. An order
/// publication that refuses the order (back-pressured, at a term's end, not connected), or a
/// full hand-off channel, refuses the tick (`Abort`), so it comes again on the next poll.
fn gateway(s: Arc<Shared>, idle: &str, stall: Stall, handoff: Option<Option<usize>>) {
    let mut idle: IdleStrategy = idle.parse().unwrap();
    let mut inside = s
        .tap
        .as_ref()
        .map(|t| t.figure(FIGURES[1]).unwrap_or_else(|e| die(&e.to_string())));
    while !s.finished.load(Ordering::Acquire) {
        let client = connect(&s, "gateway");
        let Some(mut ticks) = added(client.subscription("aeron:ipc", TICKS)) else {
            continue;
        };
        if let Some(tap) = &s.tap {
            ticks
                .record_latency(tap, RecordLatency::hop(FIGURES[0]))
                .unwrap_or_else(|e| die(&e.to_string()));
        }
        let Some(orders) = added(client.publication("aeron:ipc", ORDERS)) else {
            continue;
        };
        let (mut out, sender) = match handoff {
            None => (Out::Direct(orders), None),
            Some(core) => {
                let (tx, rx) = crossbeam_channel::bounded(1024);
                let (s, recorder) = (s.clone(), inside.take());
                let sender = spawn("gateway-send", core, move || gateway_send(orders, rx, recorder, s));
                (Out::Channel(tx), Some(sender))
            }
        };
        loop {
            if let Out::Direct(orders) = &out {
                if !s.ready.load(Ordering::Relaxed) && orders.is_connected() {
                    s.ready.store(true, Ordering::Release);
                }
            }
            let polled = ticks.controlled_poll(
                &mut |tick: &[u8], h: &MessageHeader<'_>| {
                    if stall.us > 0 {
                        let seq = u64::from_le_bytes(tick.try_into().unwrap_or([0; 8]));
                        if seq != END && seq % stall.every == stall.every - 1 {
                            let until = Instant::now() + Duration::from_micros(stall.us);
                            while Instant::now() < until {
                                std::hint::spin_loop();
                            }
                        }
                    }
                    match &mut out {
                        Out::Direct(orders) => forward(orders, tick, h, inside.as_mut(), &s.refused),
                        Out::Channel(tx) => hand_off(tx, tick, h, &s.refused),
                    }
                },
                16,
            );
            match polled {
                Ok(_) if s.finished.load(Ordering::Acquire) => break,
                Ok(n) => idle.idle(n),
                Err(PollError::ClientClosed) => break, // the driver went: a new client, the same loop
                Err(e) => polled_past("gateway", &e),  // one feed's log is unreadable: read the others
            }
        }
        drop(out); // closes the channel: gateway-send ends
        if let Some(sender) = sender {
            inside = sender.join().expect("gateway-send");
        }
    }
}

/// What the exchange saw.
#[derive(Debug, Default)]
struct Received {
    orders: u64,
    out_of_order: u64,
    gaps: u64,
    /// The sequence number the next order should have.
    next: u64,
}

impl Received {
    /// Counts one order and checks its sequence; true for the end order.
    fn take(&mut self, order: &[u8]) -> bool {
        let seq = u64::from_le_bytes(order.try_into().unwrap_or([0; 8]));
        if seq == END {
            return true;
        }
        self.orders += 1;
        if seq < self.next {
            self.out_of_order += 1;
        } else {
            self.gaps += seq - self.next;
            self.next = seq + 1;
        }
        false
    }
}

/// The exchange: reads orders until the end order, checks the sequence; its subscription
/// records the last hop and end to end when the tap is on.
fn exchange(s: Arc<Shared>, idle: &str, delay: Duration) -> Received {
    let mut idle: IdleStrategy = idle.parse().unwrap();
    let mut r = Received::default();
    let mut done = false;
    while !done {
        let client = connect(&s, "exchange");
        let Some(mut orders) = order_subscription(&client, &s) else {
            continue;
        };
        loop {
            let polled = orders.poll(
                &mut |order: &[u8], _: &MessageHeader<'_>| {
                    if r.take(order) {
                        // Said now, not once this client has closed: the gateway and the feed
                        // stop instead of offering end ticks to a subscription that is going.
                        s.finished.store(true, Ordering::Release);
                        done = true;
                        return;
                    }
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                },
                16,
            );
            match polled {
                Ok(n) if !done => idle.idle(n),
                Ok(_) | Err(PollError::ClientClosed) => break,
                Err(e) => polled_past("exchange", &e),
            }
        }
    }
    s.finished.store(true, Ordering::Release);
    r
}

/// A poll error that leaves the subscription readable (a malformed frame in one publisher's
/// log, said once for that image): the other images are still read, so say it and poll on.
#[cold]
fn polled_past(role: &str, e: &PollError) {
    eprintln!("order_gateway: {role}: {e}");
}

/// Starts a named thread, pinned to `core` when asked (a failed pin is an error: the run would
/// not be what was asked for).
fn spawn<T: Send + 'static>(
    name: &str,
    core: Option<usize>,
    f: impl FnOnce() -> T + Send + 'static,
) -> messaging::PinnedThread<T> {
    ThreadBuilder::new()
        .name(name)
        .affinity_opt(core)
        .spawn(f)
        .unwrap_or_else(|e| die(&format!("{name}: {e}")))
}

/// Stops the media driver once `at` ticks were published and starts a new one in its
/// directory (the clients notice and reconnect); false when the feed ended first.
fn restart_driver_at(at: u64, shared: &Shared, fed: impl Fn() -> bool, driver: &mut Option<EmbeddedDriver>) -> bool {
    while shared.published.load(Ordering::Acquire) < at && !fed() {
        std::thread::sleep(Duration::from_millis(1));
    }
    if fed() {
        return false;
    }
    println!(
        "restart: stopping the media driver after {} ticks",
        shared.published.load(Ordering::Acquire)
    );
    if let Some(old) = driver.take() {
        old.stop();
    }
    *driver = Some(spawn_driver(&shared.dir));
    true
}

/// Where the threads run (`None`: unpinned). Two threads may spin: the gateway on the
/// second-to-last core, the exchange on the last with the feed, which sleeps between ticks
/// (with --venue, one thread, the venue, does both). The helpers (the clients' conductors,
/// the tap's writer) get the core before them when there is one; on two cores the conductors
/// go beside the exchange and the writer stays free.
struct Cores {
    gateway: Option<usize>,
    exchange: Option<usize>,
    spare: Option<usize>,
}

impl Cores {
    fn place(pin: bool) -> Cores {
        let (gateway, exchange, spare) = match messaging::available_cores().as_slice() {
            [.., h, g, e] if pin => (Some(*g), Some(*e), Some(*h)),
            [.., g, e] if pin => (Some(*g), Some(*e), None),
            _ => (None, None, None),
        };
        Cores {
            gateway,
            exchange,
            spare,
        }
    }
}

/// The running threads: the exchange (or the venue), the gateway, and the feed (none with
/// --venue).
struct Threads {
    exchange: messaging::PinnedThread<Received>,
    gateway: messaging::PinnedThread<()>,
    feed: Option<messaging::PinnedThread<()>>,
}

fn start_threads(a: &args::Args, shared: &Arc<Shared>, cores: &Cores) -> Threads {
    let delay = Duration::from_micros(a.exchange_delay_us);
    let stall = Stall {
        us: a.stall_us,
        every: a.stall_every,
    };
    let exchange = if a.venue {
        spawn("venue", cores.exchange, {
            let (s, idle, n, rate) = (shared.clone(), a.idle.clone(), a.ticks, a.rate);
            move || venue::venue(s, n, rate, &idle, delay)
        })
    } else {
        spawn("exchange", cores.exchange, {
            let (s, idle) = (shared.clone(), a.idle.clone());
            move || exchange(s, &idle, delay)
        })
    };
    // gateway-send blocks between orders: it shares the exchange's core, off the gateway's.
    let handoff = a.handoff.then_some(cores.exchange);
    let gateway = spawn("gateway", cores.gateway, {
        let (s, idle) = (shared.clone(), a.idle.clone());
        move || gateway(s, &idle, stall, handoff)
    });
    let feed = (!a.venue).then(|| {
        spawn("feed", cores.exchange, {
            let (s, n, rate) = (shared.clone(), a.ticks, a.rate);
            move || feed(s, n, rate)
        })
    });
    Threads {
        exchange,
        gateway,
        feed,
    }
}

fn main() {
    let a = parse_args();
    let dir = PathBuf::from(format!("/dev/shm/order-gateway-{}", std::process::id()));
    let cores = Cores::place(a.pin);
    let tap = a.tap.as_ref().map(|d| {
        Tap::builder(d)
            .interval(Duration::from_millis(a.tap_interval_ms))
            .slowest(a.tap_slowest)
            .writer_core(cores.spare)
            .start()
            .unwrap_or_else(|e| die(&e.to_string()))
    });
    let mut driver = Some(spawn_driver(&dir));
    let shared = Arc::new(Shared {
        dir: dir.clone(),
        helpers_core: cores.spare.or(cores.exchange),
        published: AtomicU64::new(0),
        refused: Refused::default(),
        finished: AtomicBool::new(false),
        ready: AtomicBool::new(false),
        tap,
    });
    let started = Instant::now();
    let t = start_threads(&a, &shared, &cores);
    let fed = || match &t.feed {
        Some(feed) => feed.is_finished(),
        None => t.exchange.is_finished(),
    };
    let restarted = a
        .restart_at
        .is_some_and(|at| restart_driver_at(at, &shared, fed, &mut driver));
    if let Some(feed) = t.feed {
        feed.join().expect("feed");
    }
    t.gateway.join().expect("gateway");
    let r = t.exchange.join().expect("exchange");
    drop(driver);
    println!(
        "ticks {} (+ end), orders received {}, lost at the restart {}, out of order {}, {}, {:.2} s{}",
        a.ticks,
        r.orders,
        a.ticks - r.orders,
        r.out_of_order,
        shared.refused.text(),
        started.elapsed().as_secs_f64(),
        if restarted { ", driver restarted once" } else { "" }
    );
    let mut ok = r.out_of_order == 0 && (restarted || r.orders == a.ticks);
    let tap = Arc::into_inner(shared).and_then(|s| s.tap);
    if let Some(tap) = tap {
        // After a restart the figures hold what each hop handed over, which differs by the ticks
        // lost in the old driver's logs.
        let reported = report::report_tap(tap, r.orders);
        ok &= (reported.adds_up || restarted) && reported.written;
    }
    if !ok {
        std::process::exit(1);
    }
}
