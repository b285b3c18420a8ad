//! Round trips and throughput of the messaging stack next to honest baselines, in one run, so
//! every ratio compares figures taken seconds apart on the same two cores.
//!
//! | criterion id | one operation |
//! |---|---|
//! | `roundtrip/raw` | one cache-line ping-pong: the bench thread stores a counter, a pinned responder spins until it sees it and stores it + 1, the bench thread spins until it sees that (the floor: `latency_probe::measure::floor`) |
//! | `roundtrip/crossbeam` | one 8-byte value through a `crossbeam_channel::bounded(1)` pair and back, `try_send` / `try_recv` spinning on both sides |
//! | `roundtrip/messaging` | ping: `try_claim` + write + commit of a 32-byte message on `aeron:ipc` stream 1002; a pinned pong thread polls it and echoes it with `try_claim` on stream 1003; the bench thread polls until the echo arrives |
//! | `roundtrip/messaging_exclusive` | the same through `ExclusivePublisher` (no atomic add on the tail), streams 1102 and 1103 |
//! | `roundtrip/messaging_exclusive_64` | the same with 64-byte messages (streams 1202 and 1203): the size of the probe's smallest Cap'n Proto sample, so `latency-probe --mode rtt --msg-size 64` has a like-for-like bench figure (a 96-byte frame spans two cache lines where a 64-byte one fills one) |
//! | `roundtrip/messaging_exclusive_paced` | the `messaging_exclusive` round trip (32 bytes, streams 1302 and 1303) after 10 µs spent spinning on the clock, left out of its timing: a round trip that does not follow another back to back, as `latency-probe --mode rtt` at 100,000 msg/s sends them |
//! | `roundtrip/offer_poll` | `offer` of 32 bytes, then `poll` until it comes back, one publication and one subscription on one stream, one thread: the stack's own cost, no cross-core transfer |
//! | `roundtrip/c_client` | the `messaging` round trip through the same driver with the Aeron C client (rusteron-client 0.2.16 = Aeron 1.54.0) on both sides, streams 2002 / 2003: what the protocol costs without aeron-rs and this crate |
//! | `roundtrip/c_client_64` | the `c_client` round trip with 64-byte messages (streams 2202 / 2203), next to `messaging_exclusive_64` |
//! | `roundtrip/iceoryx2`, `roundtrip/iceoryx2_64` | (cargo feature `iceoryx2`) the round trip over iceoryx2 0.10's publish-subscribe on shared memory, 32 and 64 bytes: the ping loans a `[u8; N]` sample, writes it in place and sends it; the pinned pong receives it, loans one of its own, copies and sends it; one node per side, history 0, subscriber buffer 1 (`iceoryx.rs`) |
//! | `java_ping`, `java_ping_64` (summary rows, not criterion cases) | Aeron's own Java Ping and Pong samples (aeron-all 1.51.0, exclusive publications, `aeron:ipc` through this bench's driver), two JVMs pinned with `taskset` to the bench's two cores, 32 and 64 bytes; Ping's own histogram, read from its output (`java.rs`; `BENCH_JAVA=skip` leaves them out) |
//! | one way after a wait (summary rows, not criterion cases) | the bench thread stamps a message with the clock right before it sends it, 10 µs or 100 µs after the last (the probe's pacing at 100,000 and 10,000 msg/s); the pinned receiver reads the clock when it sees it: the raw cache line (both directions) and `messaging`'s exclusive publication at 32 B, each against half the same transport's back-to-back round trip in the same round (`oneway.rs`) |
//! | `throughput/try_claim`, `throughput/offer`, `throughput/exclusive_try_claim`, `throughput/c_try_claim`, `throughput/iceoryx2` (feature `iceoryx2`) | one 32-byte message from the bench thread (publisher) to a pinned subscriber thread that polls 256 fragments at a time, 64 MiB term; criterion's elements/s is messages/s |
//!
//! After the criterion cases the binary prints a summary:
//! - each round-trip case's p50 / p99 / p99.9 / max / mean from a fixed-count run of
//!   individually timed operations, each percentile as a ratio to the raw floor at the same
//!   percentile, next to criterion's batch median and its ratio to `raw`'s. The floor
//!   (`latency_probe::measure::floor::measure`) is measured right before and right after each case
//!   (its ratios use the two merged) and before and after everything else; a case whose own
//!   floor moved by more than `latency_probe::model::MOVED_FACTOR` (1.5x) is marked `!` and a warning is printed,
//!   as it is when the global floor moved: this VM's inter-core round trip changes regime
//!   (between ~130 ns and ~500 ns) for seconds at a time, so a ratio is only worth something
//!   when the floor held still around it;
//! - messages/s of nine throughput variants, median / min / max of fixed batches of 1M:
//!   messaging try_claim / offer, fragment limit 256 / 16, term 64 / 8 / 1 MiB; the C client's
//!   concurrent / exclusive publication; and two diagnostic "lagging subscriber" variants whose
//!   subscriber waits 10 µs after a poll that read fewer than 128 fragments, so the publisher
//!   runs ahead instead of writing the very cache line the subscriber is polling;
//! - each side's cost alone (publish ns/msg, then poll ns/msg, on one thread, no cross-core
//!   transfer), for messaging, the probe's own 32 B compact and 64 B full sample path (encode +
//!   claim + commit; poll + decode), the C client and iceoryx2 (with its feature), the cost of
//!   an uncontended `std::sync::Mutex` `try_lock` + unlock, and of the timing itself (two clock
//!   readings);
//! - the paired rounds (`cargo bench` only, or `BENCH_PAIRED=1`): raw, messaging exclusive and
//!   concurrent, and the C client again, interleaved in short rounds with the floor before and
//!   after each case (a round in which a case's floor moved is re-run, at most 3), each client's
//!   p50 / p99 / p99.9 as a ratio to the C client and to the floor of the same rounds, with
//!   intervals, and the p50 ratios per floor regime where the rounds saw two; then throughput
//!   (messaging exclusive and concurrent, the C client's exclusive and concurrent publications)
//!   the same way, each messaging publication's ns per message against its C peer (`paired.rs`).
//! - the tap's cost (`tap.rs`): the send stamp and the latency recording of messaging's feature
//!   `tap`, each against the same path without it, in interleaved rounds on one thread; then
//!   a service's own figure (`figure.rs`): `FigureRecorder::record_at` and `record` per value,
//!   values steady and rising, against a loop that records nothing.
//! - one way after a wait (`oneway.rs`): in 8 rounds, the raw line's and `messaging`'s one-way
//!   p50 after 10 µs and 100 µs, each as a ratio to half its own back-to-back round trip of the
//!   same round: the like-for-like figure for `latency-probe`'s one-way mode.
//!
//! # Timing model
//!
//! - **What is timed:** round-trip cases: from just before the bench thread starts an
//!   operation until it has seen the answer, one operation in flight. The bench thread (the
//!   initiator, or the publisher) is pinned to the second-to-last core this process may use, the
//!   responder / subscriber thread to the last one (`messaging::available_cores`); both
//!   busy-spin with the CPU's spin-loop hint (Aeron's `spin` idle strategy). Throughput: from the
//!   first publish of a batch until the subscriber thread has counted its last message. Retries
//!   of retryable `try_claim` / `offer` failures (back pressure, admin action, aeron-rs's
//!   per-call lock held by its conductor) are inside the timed region.
//! - **Clock:** `std::time::Instant` / `latency_probe::sys::clock::now_ns`, both `CLOCK_MONOTONIC`
//!   through the vDSO (no syscall). Criterion (`iter_custom`) reads it once before and once
//!   after a batch of `iters` operations: its figure is the mean per operation within a batch
//!   (the clock's cost amortised away), the summary's "batch median" is the median of those
//!   per-batch means. The percentiles come from a separate fixed-count run that reads
//!   `now_ns` right before and right after every single operation and records the difference in
//!   an HdrHistogram: the same clock and the same two readings per round trip as
//!   `latency_probe::measure::floor::measure` and the probe's round trips, so a ratio to the floor divides
//!   out the machine's inter-core distance. Both sides of that ratio include the timing itself
//!   (two readings, printed as "timing itself"; ~30-40 ns here), so it is
//!   (operation + timing) / (floor + timing): it understates the operation's own ratio a little.
//! - **Excluded:** starting the embedded media driver (its idle strategy stays `backoff`, it is
//!   never spun; an external one keeps its own), running `doctor` once before the cases,
//!   connecting clients, adding publications and subscriptions and waiting for them to
//!   connect, starting and pinning threads, criterion's warm-up and analysis, and the
//!   fixed-count run's warm-up operations (page-in, caches, branch predictors).
//!
//! Driver: a running driver in `AERON_DIR` (a tuned `aeronmd`, or
//! `cargo run --release --example media_driver`) if one answers there, else the embedded one,
//! with the `AERON_*` environment and then `BENCH_DRIVER_OPT="KEY=VALUE;..."` (the names
//! `latency-probe --driver-opt` takes; criterion owns the command line). The summary prints
//! the driver's settings (an embedded driver's, read back from it) and `doctor`'s findings.
//!
//! Run: `cargo bench -p latency-probe --bench roundtrip` (about 40 s once built;
//! `BENCH_TAP_ONLY=1` runs the tap's cost alone, `BENCH_TAP_VARIANT=I[,J]` only those of its
//! variants (`make poll-instructions` counts each one's instructions), `BENCH_ONEWAY_ONLY=1` one
//! way after a wait alone; `BENCH_FIGURES=PATH` also writes the summary's figures to `PATH` as
//! JSON lines, which `scripts/bench-builds.py` compares across builds, pass by pass);
//! `cargo test --benches -p latency-probe` runs every case once plus a tiny summary, as a test.
//!
//! Files: `raw` (`raw`, `crossbeam`), `iceoryx` (iceoryx2's round trip, flow and split row),
//! `java` (Aeron's Java Ping/Pong), `messaging` (`messaging`, `offer_poll`, its throughput
//! flows), `c_client` (the C client's round trip and flows), `split` (each side alone, the mutex,
//! the timing itself), `figure` (a service's own figure), `oneway` (one way after a wait), `paired` (the interleaved rounds), `figures` (`BENCH_FIGURES`), `common` (what they share, and the
//! harness that runs a case with the floor around it), `summary` (the summary printed after the
//! cases); this file: the run, in order.

mod c_client;
mod common;
mod figure;
mod figures;
#[cfg(feature = "iceoryx2")]
mod iceoryx;
mod java;
mod messaging;
mod oneway;
mod paired;
mod raw;
mod split;
mod summary;
mod tap;

use std::path::{Path, PathBuf};

use aeron_latency::messaging::{Concurrent, EmbeddedDriver, Exclusive};
use criterion::Criterion;
use hdrhistogram::Histogram;
use latency_probe::measure::floor;

use crate::c_client::{CFlow, CPing, C_THROUGHPUT_STREAM};
use crate::common::{
    round_trip_case, throughput_cases, Flowing, Mode, Op, Paced, Placement, Plan, Row, TpCase, BIG_TERM, CHANNEL,
    MEASUREMENT, MSG_LEN, PROBE_MSG_LEN, ROUND_TRIP_TERM, SAMPLE_SIZE, TP_FRAGMENT_LIMIT, WARM_UP,
};
use crate::messaging::{Flow, OfferPoll, Ping, Variant};
use crate::raw::{Crossbeam, Raw};
use crate::split::{clock_pair_cost, mutex_cost, split_rows};
use crate::summary::{print_summary, Summary};

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|e| format!("unreadable: {e}"), |s| s.trim().to_owned())
}

fn main() {
    let mode = Mode::from_args();
    let plan = Plan::for_mode(mode);
    let mut c = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .warm_up_time(WARM_UP)
        .measurement_time(MEASUREMENT)
        .configure_from_args();

    // The bench thread is the initiator / publisher, on the second-to-last core; responders on
    // the last one.
    let at = Placement::new();
    let pinned = at.hot();

    if mode == Mode::List {
        register_ids(&mut c);
        return;
    }

    // One section alone, for re-running after a change to what it measures.
    if std::env::var_os("BENCH_TAP_ONLY").is_some() {
        // The tap's cost (tap.rs).
        return alone(&at, |dir| tap::print(&tap::tap_cost(&at, dir, &plan)));
    }
    if std::env::var_os("BENCH_ONEWAY_ONLY").is_some() {
        // One way after a wait against half a round trip (oneway.rs).
        return alone(&at, |dir| oneway::print(&oneway::run(&at, dir, &plan)));
    }

    let load_before = load_average();
    let floor_before = global_floor(&at, &plan);
    let driver = BenchDriver::start(&at);
    let doctor = driver.doctor(&at);
    let dir = driver.dir.as_path();

    let mut rows = round_trips(&mut c, &at, &plan, dir);
    // Aeron's Java Ping/Pong through the same driver (not a criterion case: two JVMs time it).
    let (java_rows, java_missing) = java::rows(&at, &plan, mode, dir, &[MSG_LEN, PROBE_MSG_LEN]);
    rows.extend(java_rows);
    let tp_rows = throughput_cases(&mut c, &at, &plan, throughput_variants(dir, at.responder));

    // The peers again, interleaved in short rounds: the comparison the summary judges.
    let paired =
        (mode == Mode::Bench || std::env::var_os("BENCH_PAIRED").is_some()).then(|| paired::run(dir, &at, &plan));

    at.hot();
    let split = split_rows(&at, dir, &plan);
    let mutex_ns = mutex_cost(plan.split_messages * 50);
    let clock_ns = clock_pair_cost(plan.split_messages * 5);
    let tap_cost = tap::tap_cost(&at, dir, &plan);
    let one_way = oneway::run(&at, dir, &plan);

    let floor_after = global_floor(&at, &plan);
    let load_after = load_average();
    c.final_summary();
    let (version, settings) = driver.stop();

    print_summary(&Summary {
        mode,
        plan,
        cores: (at.initiator, at.responder),
        pinned,
        load: (load_before, load_after),
        version,
        floor: (floor_before, floor_after),
        rows,
        missing: java_missing.into_iter().collect(),
        tp_rows,
        split,
        mutex_ns,
        clock_ns,
        settings,
        doctor,
    });
    tap::print(&tap_cost);
    oneway::print(&one_way);
    if let Some(p) = &paired {
        paired::print(p);
    }
    figures::write();
}

/// Runs `section` against the bench's driver, with the load average before and after.
fn alone(at: &Placement, section: impl FnOnce(&Path)) {
    let driver = BenchDriver::start(at);
    println!("load average before: {}", load_average());
    section(driver.dir.as_path());
    println!("load average after: {}", load_average());
    driver.stop();
    figures::write();
}

/// `--list`: registers every case's id without starting anything.
fn register_ids(c: &mut Criterion) {
    let mut group = c.benchmark_group("roundtrip");
    for id in [
        "raw",
        "crossbeam",
        "messaging",
        "messaging_exclusive",
        "messaging_exclusive_64",
        "messaging_exclusive_paced",
        "offer_poll",
        "c_client",
        "c_client_64",
        #[cfg(feature = "iceoryx2")]
        "iceoryx2",
        #[cfg(feature = "iceoryx2")]
        "iceoryx2_64",
    ] {
        group.bench_function(id, |_| unreachable!("--list runs nothing"));
    }
    group.finish();
    let mut group = c.benchmark_group("throughput");
    for id in [
        "try_claim",
        "offer",
        "exclusive_try_claim",
        "c_try_claim",
        #[cfg(feature = "iceoryx2")]
        "iceoryx2",
    ] {
        group.bench_function(id, |_| unreachable!("--list runs nothing"));
    }
    group.finish();
    c.final_summary();
}

/// The floor before or after everything: raw cache-line round trips between the two cores.
fn global_floor(at: &Placement, plan: &Plan) -> Histogram<u64> {
    at.unpinned(|| floor::measure(at.initiator, at.responder, plan.floor_each).expect("measuring the floor"))
}

/// The media driver the cases run against: a running, tuned one in `AERON_DIR`, else the
/// embedded one (`AERON_*` from the environment, then `BENCH_DRIVER_OPT`).
struct BenchDriver {
    /// The running driver's directory, when one answers in `AERON_DIR`.
    external: Option<PathBuf>,
    /// The embedded driver, when there is no running one.
    embedded: Option<EmbeddedDriver>,
    /// The driver's Aeron directory.
    dir: PathBuf,
    /// The embedded driver's settings (none: an external driver, unreadable).
    settings: Option<Vec<(String, String)>>,
}

impl BenchDriver {
    /// The running driver in `AERON_DIR` if one answers, else the embedded one, started
    /// unpinned (its threads must not inherit the bench thread's core).
    fn start(at: &Placement) -> Self {
        let external = std::env::var_os("AERON_DIR")
            .map(PathBuf::from)
            .filter(|d| aeron_latency::messaging::Client::connect(d).is_ok());
        let embedded = match &external {
            Some(_) => None,
            None => Some(at.unpinned(|| {
                let mut b = EmbeddedDriver::builder().private_dir().ipc_term_length(ROUND_TRIP_TERM);
                for o in bench_driver_options() {
                    b = b.option(o);
                }
                b.spawn().expect("starting the embedded media driver")
            })),
        };
        let dir: PathBuf = match (&external, &embedded) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => d.dir().to_owned(),
            (None, None) => unreachable!("one of the two is set above"),
        };
        let settings: Option<Vec<(String, String)>> = embedded.as_ref().map(|d| {
            d.settings()
                .properties()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect()
        });
        BenchDriver {
            external,
            embedded,
            dir,
            settings,
        }
    }

    /// `doctor`'s checks of this host and driver for the cases (unpinned: doctor counts the
    /// cores this process may use).
    fn doctor(&self, at: &Placement) -> latency_probe::model::Doctor {
        at.unpinned(|| {
            latency_probe::run::doctor::doctor(&latency_probe::run::doctor::RunShape {
                hot_cores: [at.initiator, at.responder].into_iter().flatten().collect(),
                channel: CHANNEL,
                rate: 1_000_000,
                msg_size: MSG_LEN as u64,
                ipc_term: ROUND_TRIP_TERM as u64,
                driver_dir: &self.dir,
                driver: self.settings.clone(),
                steal_sample: std::time::Duration::ZERO,
            })
        })
    }

    /// Stops the embedded driver; the driver's version (or where the external one is) and its
    /// settings.
    fn stop(self) -> (String, Option<Vec<(String, String)>>) {
        let version = match &self.external {
            Some(d) => format!("external driver in {} (AERON_DIR)", d.display()),
            None => aeron_latency::messaging::driver_version(),
        };
        drop(self.embedded);
        (version, self.settings)
    }
}

/// The round-trip cases' shared arguments: each [`Cases::run`] is one [`round_trip_case`].
struct Cases<'a, 'c> {
    c: &'c mut Criterion,
    at: &'a Placement,
    plan: &'a Plan,
    rows: Vec<Row>,
}

impl Cases<'_, '_> {
    fn run<C: Op>(&mut self, id: &str, start: impl FnOnce() -> C, finish: impl FnOnce(&mut C) -> String) {
        round_trip_case(self.c, self.at, id, self.plan, &mut self.rows, start, finish);
    }
}

/// The round-trip cases, in order, each with its own floor around it.
fn round_trips(c: &mut Criterion, at: &Placement, plan: &Plan, dir: &Path) -> Vec<Row> {
    let responder = at.responder;
    let mut cases = Cases {
        c,
        at,
        plan,
        rows: Vec::new(),
    };
    cases.run("raw", || Raw::start(responder), |_| String::new());
    cases.run("crossbeam", || Crossbeam::start(responder), |_| String::new());
    cases.run(
        "messaging",
        || Ping::<Concurrent>::start(dir, responder, 0, MSG_LEN),
        Ping::finish,
    );
    cases.run(
        "messaging_exclusive",
        || Ping::<Exclusive>::start(dir, responder, 100, MSG_LEN),
        Ping::finish,
    );
    cases.run(
        "messaging_exclusive_64",
        || Ping::<Exclusive>::start(dir, responder, 200, PROBE_MSG_LEN),
        Ping::finish,
    );
    cases.run(
        "messaging_exclusive_paced",
        || Paced(Ping::<Exclusive>::start(dir, responder, 300, MSG_LEN)),
        |p| p.0.finish(),
    );
    cases.run("offer_poll", || OfferPoll::start(dir), |o| o.notes());
    cases.run("c_client", || CPing::start(dir, responder, 0, MSG_LEN), CPing::finish);
    cases.run(
        "c_client_64",
        || CPing::start(dir, responder, 200, PROBE_MSG_LEN),
        CPing::finish,
    );
    #[cfg(feature = "iceoryx2")]
    {
        use crate::iceoryx::IcePing;
        cases.run("iceoryx2", || IcePing::<MSG_LEN>::start(responder), IcePing::finish);
        cases.run(
            "iceoryx2_64",
            || IcePing::<PROBE_MSG_LEN>::start(responder),
            IcePing::finish,
        );
    }
    cases.rows
}

/// How a throughput case starts its flow.
type Start<'a> = Box<dyn Fn() -> Box<dyn Flowing> + 'a>;

/// How each kind of throughput case starts its flow, on `dir`'s driver with the responder on
/// `responder`.
#[derive(Clone, Copy)]
struct Starters<'a> {
    dir: &'a Path,
    responder: Option<usize>,
}

impl<'a> Starters<'a> {
    /// messaging's concurrent publication.
    fn concurrent(self, index: usize, use_offer: bool, fragment_limit: usize, term: usize, lagging: bool) -> Start<'a> {
        let Starters { dir, responder } = self;
        let v = Variant {
            use_offer,
            fragment_limit,
            term: Some(term),
            lagging,
        };
        Box::new(move || Box::new(Flow::<Concurrent>::start(dir, responder, index, v)) as Box<dyn Flowing>)
    }

    /// messaging's exclusive publication.
    fn exclusive(self, index: usize, use_offer: bool) -> Start<'a> {
        let Starters { dir, responder } = self;
        let v = Variant {
            use_offer,
            fragment_limit: TP_FRAGMENT_LIMIT,
            term: Some(BIG_TERM),
            lagging: false,
        };
        Box::new(move || Box::new(Flow::<Exclusive>::start(dir, responder, index, v)) as Box<dyn Flowing>)
    }

    /// The C client's exclusive publication.
    fn c_exclusive(self, stream: i32, lagging: bool) -> Start<'a> {
        let Starters { dir, responder } = self;
        Box::new(move || {
            Box::new(CFlow::start(dir, responder, stream, lagging, |c, ch, st| {
                c.exclusive_publication(ch, st)
            })) as Box<dyn Flowing>
        })
    }

    /// The C client's concurrent publication.
    fn c_concurrent(self) -> Start<'a> {
        let Starters { dir, responder } = self;
        Box::new(move || {
            Box::new(CFlow::start(dir, responder, C_THROUGHPUT_STREAM, false, |c, ch, st| {
                c.publication(ch, st)
            })) as Box<dyn Flowing>
        })
    }
}

/// The throughput variants, in the order they run and are summarised.
fn throughput_variants(dir: &Path, responder: Option<usize>) -> Vec<TpCase<'_>> {
    let on = Starters { dir, responder };
    let rs = |index, use_offer, fragment_limit, term, lagging| {
        on.concurrent(index, use_offer, fragment_limit, term, lagging)
    };
    let ex = |index, use_offer| on.exclusive(index, use_offer);
    let c_exclusive = |stream, lagging| on.c_exclusive(stream, lagging);
    let c_concurrent = on.c_concurrent();
    let limit = TP_FRAGMENT_LIMIT;
    #[allow(unused_mut)]
    let mut cases = vec![
        tp(
            "messaging try_claim",
            Some("try_claim"),
            rs(0, false, limit, BIG_TERM, false),
        ),
        tp("messaging offer", Some("offer"), rs(1, true, limit, BIG_TERM, false)),
        tp(
            "messaging exclusive try_claim",
            Some("exclusive_try_claim"),
            ex(6, false),
        ),
        tp("messaging exclusive offer", None, ex(7, true)),
        tp("messaging try_claim, limit 16", None, rs(2, false, 16, BIG_TERM, false)),
        tp(
            "messaging try_claim, 8 MiB term",
            None,
            rs(3, false, limit, 8 << 20, false),
        ),
        tp(
            "messaging try_claim, 1 MiB term",
            None,
            rs(4, false, limit, 1 << 20, false),
        ),
        tp("C client try_claim", Some("c_try_claim"), c_concurrent),
        tp(
            "C client exclusive try_claim",
            None,
            c_exclusive(C_THROUGHPUT_STREAM + 1, false),
        ),
        tp(
            "messaging try_claim, lagging sub",
            None,
            rs(5, false, limit, BIG_TERM, true),
        ),
        tp(
            "C exclusive, lagging sub",
            None,
            c_exclusive(C_THROUGHPUT_STREAM + 2, true),
        ),
    ];
    #[cfg(feature = "iceoryx2")]
    cases.push(tp(
        "iceoryx2 loan + send",
        Some("iceoryx2"),
        Box::new(move || Box::new(crate::iceoryx::IceFlow::<MSG_LEN>::start(responder)) as Box<dyn Flowing>),
    ));
    cases
}

/// One throughput case.
fn tp<'a>(name: &'static str, criterion: Option<&'static str>, start: Start<'a>) -> TpCase<'a> {
    TpCase { name, criterion, start }
}

/// `BENCH_DRIVER_OPT="KEY=VALUE;KEY=VALUE"`: the embedded driver's settings by name, as
/// `latency-probe --driver-opt` takes them (criterion owns the bench's command line).
fn bench_driver_options() -> Vec<aeron_latency::messaging::DriverOption> {
    let Ok(v) = std::env::var("BENCH_DRIVER_OPT") else {
        return Vec::new();
    };
    v.split(';')
        .map(str::trim)
        .filter(|kv| !kv.is_empty())
        .map(|kv| latency_probe::cli::parse::parse_driver_opt(kv).unwrap_or_else(|e| panic!("BENCH_DRIVER_OPT: {e}")))
        .collect()
}
