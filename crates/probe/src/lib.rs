//! latency-probe (temporary root; the lead extends it).
#![deny(unsafe_code)]
pub mod clock;
pub mod pacing;
pub mod recorder;
pub mod report;
pub mod stats;
