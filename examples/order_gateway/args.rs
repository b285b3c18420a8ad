//! `order_gateway`'s flags: [`USAGE`] and [`parse_args`].

use std::path::PathBuf;

use messaging::IdleStrategy;

use super::die;

/// `--help`.
const USAGE: &str = "order_gateway: feed -> gateway -> exchange on one embedded driver
flags:
  --ticks N               ticks the feed sends (default 100000)
  --rate N                ticks per second, paced as market data arrives (default: 10000 with
                          --tap, else as fast as it can; 0: as fast as it can)
  --restart-at N          restart the media driver after N ticks
  --exchange-delay-us N   the exchange sleeps N µs per order (back-pressure; with --venue the
                          feed waits too)
  --tap DIR               record the four hops' latencies into DIR (.hlog, tap.json, tap.prom)
  --tap-interval-ms N     the tap's interval (default 1000)
  --stall-us N            plant a busy stall of N µs in the gateway's handler ...
  --stall-every M         ... every M ticks (default 50)
  --tap-slowest N         the slowest messages kept per figure and interval (default 128)
  --handoff               hand each tick through a channel to a second thread that publishes
                          the order (a futex wake-up per order)
  --idle NAME             the gateway's and the exchange's (or the venue's) idle strategy
                          (default yield)
  --venue                 the feed and the exchange as one thread, the venue's, which waits for
                          each tick's time between polls of the orders instead of sleeping
  --no-pin                leave the threads unpinned (default: the gateway on the second-to-last
                          core this process may use, the exchange and the feed, or the venue, on
                          the last, the clients' conductors and the tap's writer on the one before
                          when there is one, else the conductors on the last)";

/// What the flags asked for.
#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) ticks: u64,
    pub(crate) rate: Option<u64>,
    pub(crate) restart_at: Option<u64>,
    pub(crate) exchange_delay_us: u64,
    pub(crate) tap: Option<PathBuf>,
    pub(crate) tap_interval_ms: u64,
    pub(crate) stall_us: u64,
    pub(crate) stall_every: u64,
    pub(crate) idle: String,
    pub(crate) pin: bool,
    pub(crate) handoff: bool,
    pub(crate) venue: bool,
    pub(crate) tap_slowest: usize,
}

/// The flags, or the process ends: `--help` prints [`USAGE`] (exit 0), a bad flag says why (exit 2).
pub(crate) fn parse_args() -> Args {
    let mut raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        std::process::exit(0);
    }
    let pin = !raw.iter().any(|a| a == "--no-pin");
    let handoff = raw.iter().any(|a| a == "--handoff");
    let venue = raw.iter().any(|a| a == "--venue");
    raw.retain(|a| a != "--no-pin" && a != "--handoff" && a != "--venue");
    let mut a = Args {
        ticks: 100_000,
        rate: None,
        restart_at: None,
        exchange_delay_us: 0,
        tap: None,
        tap_interval_ms: 1000,
        stall_us: 0,
        stall_every: 50,
        idle: "yield".into(),
        pin,
        handoff,
        venue,
        tap_slowest: messaging::tap::SLOWEST_DEFAULT,
    };
    let rate_given = raw.iter().any(|a| a == "--rate");
    let mut it = raw.into_iter();
    while let Some(flag) = it.next() {
        let text = it
            .next()
            .unwrap_or_else(|| die(&format!("{flag} needs a value; see --help")));
        let number = || -> u64 {
            text.replace('_', "")
                .parse()
                .unwrap_or_else(|_| die(&format!("{flag} needs a whole number, not {text:?}")))
        };
        match flag.as_str() {
            "--ticks" => a.ticks = number(),
            "--rate" => a.rate = Some(number()).filter(|r| *r > 0),
            "--restart-at" => a.restart_at = Some(number()),
            "--exchange-delay-us" => a.exchange_delay_us = number(),
            "--tap" => a.tap = Some(PathBuf::from(&text)),
            "--tap-interval-ms" => a.tap_interval_ms = number().max(1),
            "--stall-us" => a.stall_us = number(),
            "--stall-every" => a.stall_every = number().max(1),
            "--tap-slowest" => a.tap_slowest = usize::try_from(number()).unwrap_or(usize::MAX),
            "--idle" => {
                let _: IdleStrategy = text.parse().unwrap_or_else(|e| die(&format!("--idle: {e}")));
                a.idle = text;
            }
            _ => die(&format!("unknown flag {flag}; see --help")),
        }
    }
    if a.tap.is_some() && a.rate.is_none() && !rate_given {
        a.rate = Some(10_000);
    }
    a
}
