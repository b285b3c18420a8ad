//! Building the model from what the run measured: a report from a recorder, its histograms,
//! the jitter section, and one report out of both sides' reports.
//!
//! Names `measure`, `analysis`, `sys`, the model and units.

pub mod build;
