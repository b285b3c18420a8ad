//! Conclusions drawn from the model: the jitter summary and verdict, run-to-run variation and
//! the comparison of two reports.
//!
//! Names only the model and units.

pub mod ab;
pub mod bands;
pub mod doctor;
pub(crate) mod findings;
pub mod jitter;
pub mod lineup;
pub mod paired;
pub mod runs;
pub(crate) mod tail;
pub mod tap;
pub mod tuning;
pub mod unpaired;
pub mod verdict;
