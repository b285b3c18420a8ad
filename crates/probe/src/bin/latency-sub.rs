//! `latency-sub`: receives the probe's messages and reports latency overall and in 20
//! time-ordered groups. See `latency-sub --help`.
//!
//! Parse, call, exit: the flags and their checks are [`latency_probe::cli::subscriber`], the
//! run is [`latency_probe::run::subscriber`].

use latency_probe::cli;
use latency_probe::cli::subscriber::{Args, PROGRAM};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Every flag is checked before anything starts; each failure is one line, exit 2.
    let args: Args = cli::parse_args(PROGRAM);
    cli::finish(PROGRAM, cli::subscriber::subscribe(&args))
}
