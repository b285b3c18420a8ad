//! `latency-pub`: publishes timestamped messages on a schedule. See `latency-pub --help`.
//!
//! Parse, call, exit: the flags and their checks are [`latency_probe::cli::publisher`], the
//! run is [`latency_probe::run::publisher`].

use latency_probe::cli;
use latency_probe::cli::publisher::{Args, PROGRAM};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Every flag is checked before anything starts; each failure is one line, exit 2.
    let args: Args = cli::parse_args(PROGRAM);
    cli::finish(PROGRAM, cli::publisher::publish(&args))
}
