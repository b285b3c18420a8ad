//! `order_gateway`'s summary of the tap: [`report_tap`].

use messaging::tap::Tap;
use messaging::TapError;

use super::{die, FIGURES};

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
