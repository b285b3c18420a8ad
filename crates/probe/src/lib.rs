//! `latency-probe`: latency probes over Aeron that report percentiles overall and in 20
//! time-ordered groups.
//!
//! # Guarantees
//! - Every report states its timing model ([`sys::clock::TIMING_MODEL`]): one CLOCK_MONOTONIC for
//!   every process on the host; latency from the intended send time (coordinated-omission
//!   corrected) and from the actual send time, side by side.
//! - The hot loops ([`run::send`], [`run::receive`]) do not allocate, lock or make a
//!   syscall per message; histograms are HdrHistograms allocated up front.
//! - Sent, received, lost, duplicated, reordered and undecodable messages always add up
//!   ([`model::Accounting::adds_up`]); a run that stops early still reports what it measured,
//!   marked incomplete.
//! - Every report explains its tail ([`analysis::verdict`]): per-thread futex calls, context
//!   switches, migrations, page faults and run-queue delay at the 20 group boundaries (perf, or
//!   `/proc` with the reason), the slowest samples lined up with the off-CPU episodes and stalls
//!   of the hot threads, and a verdict in plain words, futex-driven jitter first.
//!
//! # Layers
//! Each folder is a layer; a layer names only the layers below it (`tests/layers.rs` checks it):
//! ```text
//! bin/       thin: parse, call, exit
//! cli/       arguments, validation, exit codes
//! run/       publisher, subscriber, live line, the experiment latency-probe runs
//! report/    building the model from what run/ measured
//! measure/   histograms, recorder, per-thread monitor, slow samples, floor, hiccup meter, driver counters
//! sys/       clock, pacing, perf and procfs readers, environment, planted causes
//! analysis/  verdict, runs, compare: on the model only
//! render/    text, JSON, hgrm, hlog, CSV, SVG, the --out directory: on the model only
//! model/     the report as plain data (serde), shared by every layer
//! units      number and time formatting, shared by every layer
//! ```
//! The binaries `latency-pub`, `latency-sub` and `latency-probe` are thin wrappers over
//! [`run::publisher::run`], [`run::subscriber::run`] and [`run::experiment`].
#![deny(unsafe_code)]

pub mod analysis;
pub mod cli;
pub mod measure;
pub mod model;
pub mod render;
pub mod report;
pub mod run;
pub mod sys;
#[cfg(test)]
pub(crate) mod test_support;
pub mod units;
