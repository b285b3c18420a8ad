//! The three programs' command lines: their flags, the checks on them, and how a result
//! becomes an exit code, with the one-line error convention `<program>: <cause and fix>` on
//! stderr.
//!
//! Bad input is refused before anything starts (no driver, no child process, no measurement):
//! clap's own errors are folded into one line by [`parse_args`], and each program then runs
//! the checks on every flag, each a [`UsageError`] naming the flag and the fix, exit
//! [`EXIT_SETUP`]. A program's entry here ([`probe::probe`], [`publisher::publish`],
//! [`subscriber::subscribe`], …) returns `Result<(), Failure>`; [`finish`] turns it into the
//! exit code, so a binary is parse, call, exit.
//!
//! Its modules:
//! - [`args`], the flag groups the programs share, and the run configurations built from them
//! - [`validate`], checks on single values (channel, core, seconds, rate, idle, embedded driver)
//! - [`exit`], exit codes, [`Failure`], [`finish`], [`parse_args`]
//! - [`error`], [`UsageError`]
//! - [`probe`], [`publisher`], [`subscriber`], each program's flags and its entry
//! - [`ab`], [`stages`], [`nak`], [`buffers`], [`doctor`], [`loss`], [`driver`], [`tap`], each of
//!   `latency-probe`'s subcommands (`compare` and `sweep` are in [`probe`]), with [`command`]
//!   the command line as a whole
//! - [`parse`], flag values with units (durations, byte sizes, driver settings)
//! - `output`, how `nak`, `buffers`, `doctor` and `loss` print text or JSON, and fail on a
//!   FAILed check

pub mod ab;
pub mod args;
pub mod attach;
pub mod buffers;
pub mod command;
pub mod doctor;
pub mod driver;
pub mod error;
pub mod exit;
pub mod loss;
pub mod nak;
mod output;
pub mod parse;
pub mod probe;
pub mod publisher;
pub mod stages;
pub mod subscriber;
pub mod tap;
pub mod validate;

pub use args::{
    pub_config, sub_config, DeliveryArgs, DiagnosticsArgs, ModeArgs, OutDirArgs, OutputArgs, RunArgs, StreamArgs,
};
pub use error::UsageError;
pub use exit::{fail, finish, parse_args, Failure, EXIT_INCOMPLETE, EXIT_SETUP};
pub use validate::{
    check_channel, check_core, check_embedded, dir_or_default, embedded_max_message, parse_idle, parse_rate, seconds,
    DEFAULT_MTU, DEFAULT_UDP_TERM_LENGTH, FRAME_HEADER_LEN, MAX_MESSAGES, MAX_SECONDS,
};
