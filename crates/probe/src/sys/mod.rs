//! The machine: the clock, pacing on it, perf and procfs readers, the environment a report
//! records, and the planted causes the diagnosis is tested with.
//!
//! Names only the model and units.

pub mod child;
pub mod clock;
pub mod doctor;
pub mod env;
pub mod pacing;
pub mod perf;
pub mod plant;
pub mod signals;
pub mod thread;
