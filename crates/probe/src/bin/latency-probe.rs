//! `latency-probe`: the whole latency experiment in one command. See `latency-probe --help`.
//!
//! Parse, call, exit: the flags and their checks are [`latency_probe::cli::probe`]; the
//! experiment, the sweep and the comparison are in [`latency_probe::run`].

use latency_probe::cli;
use latency_probe::cli::command::{Cli, Cmd};
use latency_probe::cli::probe;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Every flag is checked before anything starts (no driver, no child, no floor); each
    // failure is one line, exit 2.
    let args: Cli = cli::parse_args(probe::PROGRAM);
    match &args.cmd {
        Some(Cmd::Ab(a)) => cli::finish(cli::ab::AB, cli::ab::ab(a)),
        Some(Cmd::Compare(c)) => cli::finish(probe::COMPARE, probe::compare(c)),
        Some(Cmd::Sweep(s)) => cli::finish(probe::SWEEP, probe::sweep(s)),
        Some(Cmd::Nak(n)) => cli::finish(cli::nak::NAK, cli::nak::nak(n)),
        Some(Cmd::Buffers(b)) => cli::finish(cli::buffers::BUFFERS, cli::buffers::buffers(b)),
        Some(Cmd::Doctor(d)) => cli::finish(cli::doctor::DOCTOR, cli::doctor::doctor(d)),
        Some(Cmd::Loss(l)) => cli::finish(cli::loss::LOSS, cli::loss::loss(l)),
        Some(Cmd::Driver(d)) => cli::finish(cli::driver::DRIVER, cli::driver::driver(d)),
        Some(Cmd::Stages(s)) => cli::finish(cli::stages::STAGES, cli::stages::stages(s)),
        Some(Cmd::Tap(t)) => cli::finish(cli::tap::TAP, cli::tap::tap(t)),
        Some(Cmd::Attach(a)) => cli::finish(cli::attach::ATTACH, cli::attach::attach(a)),
        None => cli::finish(probe::PROGRAM, probe::probe(&args.args)),
    }
}
