//! What `order_gateway` counts and prints at the end: the gateway's refused offers
//! ([`Refused`]) and the tap's summary ([`report_tap`]).

use std::sync::atomic::{AtomicU64, Ordering};

use messaging::tap::Tap;
use messaging::{OfferError, TapError};

use super::{die, FIGURES};

/// The gateway's offers of an order that were refused, by why. Each was tried again (the tick
/// comes again on the next poll, or `gateway-send` offers it again), except the last ones, once
/// the exchange is done.
#[derive(Default)]
pub(crate) struct Refused {
    /// The order publication was back-pressured: the exchange is behind.
    pub(crate) back_pressured: AtomicU64,
    /// It was at a term's end (Aeron's admin action: the next offer goes into the next term).
    pub(crate) admin_action: AtomicU64,
    /// It had no subscriber: the exchange was not there, or the driver was restarting (with
    /// `--handoff`, also a tick handed off while `gateway-send` was gone with the old driver).
    pub(crate) not_connected: AtomicU64,
    /// The hand-off channel to `gateway-send` was full (`--handoff`).
    pub(crate) channel_full: AtomicU64,
}

impl Refused {
    /// Counts a retryable offer error (`OfferError::is_retryable`: these three).
    pub(crate) fn offer(&self, e: &OfferError) {
        let by = match e {
            OfferError::BackPressured => &self.back_pressured,
            OfferError::AdminAction => &self.admin_action,
            OfferError::NotConnected => &self.not_connected,
            _ => return,
        };
        by.fetch_add(1, Ordering::Relaxed);
    }

    /// `orders refused 97 times, each tried again: back-pressured 0, admin action 97, not
    /// connected 0`.
    pub(crate) fn text(&self) -> String {
        let [b, a, n, c] = [
            &self.back_pressured,
            &self.admin_action,
            &self.not_connected,
            &self.channel_full,
        ]
        .map(|x| x.load(Ordering::Relaxed));
        let full = if c > 0 {
            format!(", hand-off channel full {c}")
        } else {
            String::new()
        };
        format!(
            "orders refused {} times, each tried again: back-pressured {b}, admin action {a}, not connected {n}{full}",
            b + a + n + c
        )
    }
}

/// What [`report_tap`] found.
pub(crate) struct Reported {
    /// Every figure's count equals the ticks that went through.
    pub(crate) adds_up: bool,
    /// Every write of the tap's files succeeded.
    pub(crate) written: bool,
}

/// Stops the tap and prints its figures, one line each (µs), and whether their counts add up
/// to the ticks that went through (`moved`). When writes failed (a full disk), the figures are
/// still printed: their totals are whole, only the logs miss intervals.
pub(crate) fn report_tap(tap: Tap, moved: u64) -> Reported {
    let dir = tap.dir().to_path_buf();
    let (summary, written) = match tap.stop() {
        Ok(summary) => (summary, true),
        Err(e @ TapError::WritesFailed { .. }) => {
            eprintln!("order_gateway: tap: {e}");
            let TapError::WritesFailed { summary, .. } = e else {
                unreachable!()
            };
            (*summary, false)
        }
        Err(e) => die(&format!("tap: {e}")),
    };
    println!(
        "tap: {} (CLOCK_MONOTONIC, ns in the logs; µs below)\n  {:<20} {:>8} {:>9} {:>9} {:>9} {:>9}",
        dir.display(),
        "figure",
        "messages",
        "p50",
        "p99",
        "p99.9",
        "max"
    );
    let mut adds_up = true;
    for name in FIGURES {
        let Some(f) = summary.figures.iter().find(|f| f.name == name) else {
            println!("  {name:<20} nothing recorded");
            adds_up = false;
            continue;
        };
        let us = |v: Option<u64>| v.map_or("-".into(), |ns| format!("{:.2}", ns as f64 / 1e3));
        println!(
            "  {:<20} {:>8} {:>9} {:>9} {:>9} {:>9}{}",
            name,
            f.recorded,
            us(f.quantile_ns(0.5)),
            us(f.quantile_ns(0.99)),
            us(f.quantile_ns(0.999)),
            us(f.max_ns()),
            if f.negative + f.saturated > 0 {
                format!(" ({} negative, {} saturated)", f.negative, f.saturated)
            } else {
                String::new()
            }
        );
        adds_up &= f.recorded + f.negative == moved;
    }
    println!(
        "  counts {} the {moved} ticks that went through",
        if adds_up { "equal" } else { "DO NOT equal" }
    );
    Reported { adds_up, written }
}
