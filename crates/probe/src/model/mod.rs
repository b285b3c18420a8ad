//! The report as plain data: what every report, raw jitter file and sweep holds, with serde
//! derives, and the small pure helpers that belong to the data (percentile lookups, the floor
//! ratios). Every other layer may name it; it names only units.

mod ab;
mod accounting;
mod attach;
mod cause;
mod counters;
mod diagnosis;
mod env;
mod floor;
mod hiccup;
mod histograms;
mod jitter;
mod offer;
mod publisher;
mod report;
mod runs;
mod stages;
mod stats;
mod tap;
mod tuning;

pub use ab::*;
pub use accounting::*;
pub use attach::*;
pub use cause::*;
pub use counters::*;
pub use diagnosis::*;
pub use env::*;
pub use floor::*;
pub use hiccup::*;
pub use histograms::*;
pub use jitter::*;
pub use offer::*;
pub use publisher::*;
pub use report::*;
pub use runs::*;
pub use stages::*;
pub use stats::*;
pub use tap::*;
pub use tuning::*;

/// For `skip_serializing_if`: a count that is zero is left out of the JSON.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
