//! Exit codes, the one-line error convention (`<program>: <cause and fix>` on stderr) and the
//! one place a program's result becomes its exit code ([`finish`]).

use super::UsageError;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use std::fmt::Display;
use std::process::ExitCode;

/// Exit code for bad input or an unusable setup (nothing was measured). latency-probe reads it
/// back from its children: it is [`crate::run::process::EXIT_REFUSED`].
pub const EXIT_SETUP: i32 = crate::run::process::EXIT_REFUSED;

/// Exit code for a run that measured something but lost messages or stopped early.
pub const EXIT_INCOMPLETE: i32 = 1;

/// Why a program does not exit 0: the exit code, and the line that says why (none when the
/// cause is already on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// [`EXIT_SETUP`] or [`EXIT_INCOMPLETE`].
    pub code: i32,
    /// Printed as `<program>: <message>`.
    pub message: Option<String>,
}

impl Failure {
    /// Nothing was measured: bad input or an unusable setup ([`EXIT_SETUP`]).
    pub fn setup(message: impl Display) -> Failure {
        Failure {
            code: EXIT_SETUP,
            message: Some(message.to_string()),
        }
    }

    /// Something was measured, but not all of it, or not all of it was written
    /// ([`EXIT_INCOMPLETE`]).
    pub fn incomplete(message: impl Display) -> Failure {
        Failure {
            code: EXIT_INCOMPLETE,
            message: Some(message.to_string()),
        }
    }

    /// [`EXIT_INCOMPLETE`] whose cause is already on stderr.
    #[must_use]
    pub fn incomplete_already_said() -> Failure {
        Failure {
            code: EXIT_INCOMPLETE,
            message: None,
        }
    }
}

/// Catches Ctrl-C (SIGINT) and SIGTERM for the rest of the program ([`crate::sys::signals`]):
/// a command that measures stops in order and writes what it had.
///
/// # Errors
/// The handler could not be installed ([`EXIT_SETUP`]).
pub fn catch_interrupts() -> Result<(), Failure> {
    crate::sys::signals::catch_interrupts()
        .map_err(|e| Failure::setup(format!("could not install the SIGINT/SIGTERM handler: {e}")))
}

impl From<UsageError> for Failure {
    fn from(e: UsageError) -> Failure {
        Failure::setup(e)
    }
}

/// The program's exit: 0 for `Ok`, else the failure's line on stderr (`<program>: <message>`)
/// and its code.
pub fn finish(program: &str, result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if let Some(m) = &f.message {
                eprintln!("{program}: {m}");
            }
            ExitCode::from(u8::try_from(f.code).unwrap_or(u8::MAX))
        }
    }
}

/// Parses the command line; a clap error (unknown flag, a value that does not parse, a value
/// outside a list) becomes one line, `<program>: <cause>; see <program> [subcommand] --help`, exit
/// [`EXIT_SETUP`]. `--help` and `--version` print as usual.
pub fn parse_args<T: Parser + CommandFactory>(program: &str) -> T {
    match T::try_parse() {
        Ok(args) => args,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => {
                let first = std::env::args_os().nth(1);
                let command = command_of::<T>(program, first.as_ref().and_then(|a| a.to_str()));
                fail(program, one_line(&e.render().to_string(), &command), EXIT_SETUP)
            }
        },
    }
}

/// The command whose `--help` lists the flags an error is about: `program` and its subcommand
/// when `first` (the first argument) names one (`latency-probe nak`), else `program`.
fn command_of<T: CommandFactory>(program: &str, first: Option<&str>) -> String {
    match first {
        Some(sub) if T::command().find_subcommand(sub).is_some() => format!("{program} {sub}"),
        _ => program.to_owned(),
    }
}

/// clap's multi-line error as one line: the error itself, then any tips, then where to look.
fn one_line(rendered: &str, program: &str) -> String {
    let lines: Vec<&str> = rendered.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let first = lines.first().copied().unwrap_or("bad command line");
    let mut out = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    // "the following required arguments were not provided:" lists them on the next lines.
    if out.ends_with(':') {
        let missing: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .filter(|l| l.starts_with("--") || l.starts_with('<'))
            .collect();
        out.push(' ');
        out.push_str(&missing.join(", "));
    }
    for tip in lines.iter().filter_map(|l| l.strip_prefix("tip: ")) {
        out.push_str(&format!(" ({tip})"));
    }
    out.push_str(&format!("; see {program} --help"));
    out
}

/// Prints `program: message` on stderr and exits with `code` at once (no destructors run).
pub fn fail(program: &str, message: impl Display, code: i32) -> ! {
    eprintln!("{program}: {message}");
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_required_arguments_are_named_on_the_one_line() {
        let rendered =
            "error: the following required arguments were not provided:\n  --rtt <RTT>\n\nUsage: latency-probe \
                        nak --rtt <RTT> --budget <BUDGET>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered, "latency-probe"),
            "the following required arguments were not provided: --rtt <RTT>; see latency-probe --help"
        );
    }

    #[test]
    fn a_clap_error_becomes_one_line_with_its_tips_and_where_to_look() {
        let rendered = "error: unexpected argument '--flor' found\n\n  tip: a similar argument exists: '--floor'\n\n\
                        Usage: latency-probe --floor <FLOOR>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered, "latency-probe"),
            "unexpected argument '--flor' found (a similar argument exists: '--floor'); see latency-probe --help"
        );
    }

    #[test]
    fn the_help_named_is_the_subcommand_s_when_one_is_given() {
        type Probe = crate::cli::command::Cli;
        assert_eq!(command_of::<Probe>("latency-probe", Some("nak")), "latency-probe nak");
        assert_eq!(command_of::<Probe>("latency-probe", Some("--flor")), "latency-probe");
        assert_eq!(command_of::<Probe>("latency-probe", Some("bogus")), "latency-probe");
        assert_eq!(command_of::<Probe>("latency-probe", None), "latency-probe");
    }

    #[test]
    fn a_failure_exits_with_its_code() {
        assert_eq!(Failure::from(UsageError::new("x")).code, EXIT_SETUP);
        assert_eq!(EXIT_SETUP, 2);
        assert_eq!(Failure::incomplete_already_said().message, None);
        assert_eq!(finish("p", Ok(())), ExitCode::SUCCESS);
    }
}
