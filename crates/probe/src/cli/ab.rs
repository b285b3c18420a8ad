//! `latency-probe ab`: did my change help? Two arms measured in alternating rounds (each round's
//! order drawn at random), each round with the floor beside it, and per percentile the paired change B vs A with its
//! interval and a verdict ([`crate::run::ab`], [`crate::analysis::ab`]).

use std::path::PathBuf;

use super::args::{OutputArgs, TermLength};
use super::{Failure, UsageError};
use crate::model::{AbColumn, AbFile, AbOrder};
use crate::run::ab::Ab;

/// The program name in messages.
pub const AB: &str = "latency-probe ab";

/// The embedded driver's IPC term setting, by Aeron property.
const IPC_TERM_PROPERTY: &str = "aeron.ipc.term.buffer.length";

/// An arm run's wall time beyond its measured phase and its two floors: the driver's start,
/// the children's start and connection, the teardown (about 0.17 s with a fitted term:
/// docs/results/2026-11-26-ab-term-fit.md).
const RUN_OVERHEAD_S: f64 = 0.3;

/// Flags `ab` sets itself on every arm run.
const OWN_FLAGS: [&str; 4] = ["--duration", "--json", "--quiet", "--runs"];

/// `latency-probe ab`.
#[derive(Debug, clap::Args)]
pub struct AbArgs {
    /// Arm A's own latency-probe flags, as one string (e.g. '--idle yield'); empty: the common
    /// flags alone
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub a: String,
    /// Arm B's own flags (e.g. '--idle spin', '--driver-opt aeron.mtu.length=4096')
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub b: String,
    /// Run arm A with the latency-probe in DIR (with its latency-pub and latency-sub), e.g. a
    /// build of the previous commit [default: this one's]
    #[arg(long = "a-bin", value_name = "DIR")]
    pub a_bin: Option<PathBuf>,
    /// The same for arm B
    #[arg(long = "b-bin", value_name = "DIR")]
    pub b_bin: Option<PathBuf>,
    /// A command (sh -c) run before each run of arm A: apply a sysctl, an IRQ affinity, ...
    #[arg(long = "a-before", value_name = "CMD")]
    pub a_before: Option<String>,
    /// A command run after each run of arm A: undo what --a-before did
    #[arg(long = "a-after", value_name = "CMD")]
    pub a_after: Option<String>,
    /// A command run before each run of arm B
    #[arg(long = "b-before", value_name = "CMD")]
    pub b_before: Option<String>,
    /// A command run after each run of arm B
    #[arg(long = "b-after", value_name = "CMD")]
    pub b_after: Option<String>,
    /// Rounds that count; each runs A and B once, in the order --order gives. A round whose
    /// arms ran on floors in different regimes is set aside and run again (at most --rounds
    /// times). At 99% confidence an interval needs at least 8 rounds
    #[arg(long, default_value_t = 10)]
    pub rounds: u32,
    /// Measured seconds per arm and round: short, so most rounds see one floor regime
    #[arg(long, default_value_t = 2.0)]
    pub duration: f64,
    /// Each round's order of the arms: random (a fair coin per round, seeded: nothing that
    /// recurs on the machine can line up with one arm) or abba (AB, BA, AB, ...)
    #[arg(long, default_value = "random")]
    pub order: AbOrder,
    /// The seed of --order random's coin, to repeat a run's orders (the report gives each run's)
    /// [default: drawn from the clock]
    #[arg(long)]
    pub seed: Option<u64>,
    /// The latency judged: intended (from the intended send time: what a user of the stream
    /// sees) or actual (from the actual send time: what the transport adds)
    #[arg(long, default_value = "intended")]
    pub column: AbColumn,
    /// Confidence of the intervals, 0.5 to 0.9999
    #[arg(long, default_value_t = 0.99)]
    pub confidence: f64,
    /// Exit 1 when a figure's verdict is this (worse: a CI gate that fails on a slowdown)
    #[arg(long = "fail-on", value_name = "VERDICT", value_parser = ["worse"])]
    pub fail_on: Option<String>,
    /// Keep every arm run's report (round-NNN-A.json, round-NNN-B.json) in this directory
    #[arg(long = "keep", value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Write each arm's counted rounds merged (A.hgrm, B.hgrm), as interval logs (A.hlog,
    /// B.hlog: one interval per round), both spectra with the paired changes (spectrum.svg) and
    /// ab.json into DIR
    #[arg(long = "out", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Run every round planned: no interim look. By default ab looks once at half the rounds
    /// (at 99%: from 12 rounds, at round 11 or half, whichever is later) and stops there when
    /// every figure is decided, spending a tenth of the false-alarm budget on that look
    #[arg(long = "no-early-stop")]
    pub no_early_stop: bool,
    /// A verdict of no change must rule out a change this large either way (a fraction: 0.05
    /// is 5%); an interval around zero that reaches farther is inconclusive. Stopping early
    /// needs every figure decided: better, worse or no change
    #[arg(long, default_value_t = crate::analysis::paired::DEFAULT_RESOLVE)]
    pub resolve: f64,
    /// `--json`, `--quiet`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// latency-probe flags for both arms, after --, e.g. -- --mode rtt --rate 100000 --msg-size 64.
    /// Where neither arm sets the IPC term, both get --term-length fitted to their runs (a
    /// note says which; -- --term-length 64m for Aeron's default)
    #[arg(last = true, allow_hyphen_values = true)]
    pub probe_args: Vec<String>,
}

/// Splits an arm's flag string on white space, keeping what is quoted ('...' or "...") whole.
fn split_flags(s: &str) -> Result<Vec<String>, String> {
    let (mut out, mut cur, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => {
                cur.push(c);
                started = true;
            }
        }
    }
    if quote.is_some() {
        return Err(format!("an unclosed quote in '{s}'"));
    }
    if started {
        out.push(cur);
    }
    Ok(out)
}

/// The latency-probe of `dir`, or this executable.
fn probe_in(flag: &str, dir: Option<&PathBuf>) -> Result<PathBuf, UsageError> {
    match dir {
        Some(d) => {
            let p = d.join("latency-probe");
            if p.is_file() {
                Ok(p)
            } else {
                Err(UsageError::new(format!(
                    "{flag} {}: no latency-probe there; give the directory of a build (e.g. target/release)",
                    d.display()
                )))
            }
        }
        None => std::env::current_exe().map_err(|e| UsageError::new(format!("this executable: {e}"))),
    }
}

/// One arm's command line, checked.
struct ArmPlan {
    /// The estimated wall time of one of its runs, seconds.
    run_s: f64,
    /// The IPC term fitted to its runs ([`TermLength::fit`]), where it leaves the term to the
    /// embedded driver's default (no `--term-length`, no `--dir`, no term by `--driver-opt` or
    /// `AERON_IPC_TERM_BUFFER_LENGTH`).
    fit: Option<usize>,
}

/// Checks one arm's full command line as latency-probe would, before anything starts.
fn check_arm(name: &str, common: &[String], own: &[String], duration: f64) -> Result<ArmPlan, UsageError> {
    if let Some(f) = own.iter().chain(common).find(|f| OWN_FLAGS.contains(&f.as_str())) {
        return Err(UsageError::new(format!(
            "arm {name}: {f} is set by ab itself (--duration per round, --json and --quiet per run, no --runs); \
             remove it"
        )));
    }
    let mut argv = vec!["latency-probe".to_owned()];
    argv.extend(common.iter().cloned());
    argv.extend(own.iter().cloned());
    argv.extend(["--duration".to_owned(), duration.to_string()]);
    let args = super::probe::parse_experiment(&argv).map_err(|e| {
        let text = e.render().to_string();
        let first = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("bad flags")
            .trim();
        UsageError::new(format!(
            "arm {name}: {}",
            first.strip_prefix("error: ").unwrap_or(first)
        ))
    })?;
    super::probe::check(&args).map_err(|e| UsageError::new(format!("arm {name}: {e}")))?;
    let a = &args;
    let term_chosen = a.term_length.is_some()
        || a.stream.dir.is_some()
        || a.driver_opt.iter().any(|o| o.property() == IPC_TERM_PROPERTY)
        || std::env::var_os("AERON_IPC_TERM_BUFFER_LENGTH").is_some();
    Ok(ArmPlan {
        run_s: a.run.seconds() + 2.0 * a.floor + RUN_OVERHEAD_S,
        fit: (!term_chosen).then(|| TermLength::fit(&a.run)),
    })
}

/// `ab`'s flags, checked, as the comparison to run.
///
/// # Errors
/// The first bad flag, in one line naming it (or the arm) and the fix.
pub fn check(a: &AbArgs) -> Result<Ab, UsageError> {
    if !(2..=1000).contains(&a.rounds) {
        return Err(UsageError::new(format!("--rounds {}: give 2 to 1000 rounds", a.rounds)));
    }
    super::validate::seconds("--duration", a.duration)?;
    super::validate::confidence(a.confidence)?;
    super::validate::resolve(a.resolve)?;
    a.out.validate()?;
    if let Some(dir) = &a.out_dir {
        super::validate::output_dir("--out", dir)?;
    }
    let a_flags = split_flags(&a.a).map_err(|e| UsageError::new(format!("--a: {e}")))?;
    let b_flags = split_flags(&a.b).map_err(|e| UsageError::new(format!("--b: {e}")))?;
    let run_a = check_arm("A", &a.probe_args, &a_flags, a.duration)?;
    let run_b = check_arm("B", &a.probe_args, &b_flags, a.duration)?;
    // One term for both arms, so they differ only by what the user changed; as bytes, which a
    // latency-probe of an older build (--a-bin) reads too.
    let fitted_term = run_a.fit.zip(run_b.fit).map(|(x, y)| x.max(y));
    let mut common = a.probe_args.clone();
    if let Some(t) = fitted_term {
        common.extend(["--term-length".to_owned(), t.to_string()]);
    }
    let work_dir = match &a.keep {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| UsageError::new(format!("--keep {}: {e}", d.display())))?;
            d.clone()
        }
        None => std::env::temp_dir().join(format!("latency-probe-ab-{}", std::process::id())),
    };
    Ok(Ab {
        probe_a: probe_in("--a-bin", a.a_bin.as_ref())?,
        probe_b: probe_in("--b-bin", a.b_bin.as_ref())?,
        a_flags,
        b_flags,
        common,
        fitted_term,
        a_around: (a.a_before.clone(), a.a_after.clone()),
        b_around: (a.b_before.clone(), a.b_after.clone()),
        rounds: a.rounds,
        duration_s: a.duration,
        column: a.column,
        order: a.order,
        seed: a.seed.unwrap_or_else(crate::run::ab::fresh_seed),
        confidence: a.confidence,
        work_dir,
        run_estimate_s: run_a.run_s.max(run_b.run_s),
        early_stop: !a.no_early_stop,
        resolve: a.resolve,
    })
}

/// `latency-probe ab`: checks every flag (both arms' command lines included), says how long it
/// will take, runs the rounds, prints and writes the comparison.
///
/// # Errors
/// Bad input ([`EXIT_SETUP`](super::EXIT_SETUP)); an arm failed or lost a message, or the JSON
/// could not be written ([`EXIT_INCOMPLETE`](super::EXIT_INCOMPLETE)); `--fail-on worse` and a
/// figure got worse (exit 1, said in one line).
pub fn ab(a: &AbArgs) -> Result<(), Failure> {
    let x = check(a)?;
    // Ctrl-C or SIGTERM: the arm running then stops with its partial report (handed SIGINT
    // when only this process got it), and the verdict is over the rounds done, incomplete.
    super::exit::catch_interrupts()?;
    std::fs::create_dir_all(&x.work_dir).map_err(|e| Failure::setup(format!("{}: {e}", x.work_dir.display())))?;
    eprintln!(
        "{AB}: {} rounds of A and B ({}), {} s each arm per round: about {:.0} s{}",
        x.rounds,
        crate::render::ab::order_words(x.order, Some(x.seed)),
        x.duration_s,
        x.expected_s(),
        match crate::analysis::ab::Looks::new(x.rounds, x.confidence, x.early_stop).interim {
            Some((at, _)) => format!(
                ", or about {:.0} s if every figure is decided after {at}",
                x.expected_s() * f64::from(at) / f64::from(x.rounds)
            ),
            None => String::new(),
        }
    );
    let outcome = crate::run::ab::run(&x, &mut |r| eprintln!("{}", crate::render::ab::round_line(r)));
    if a.keep.is_none() {
        let _ = std::fs::remove_dir_all(&x.work_dir);
    }
    let report = outcome.report;
    // Written before the verdict is acted on: nothing measured is lost to a failed gate, and a
    // directory that cannot be written still leaves the JSON and the text.
    let out_dir = a
        .out_dir
        .as_ref()
        .map(|dir| crate::render::ab_out::write_ab_dir(&report, &outcome.histograms, dir));
    let text = crate::render::ab::render(&report);
    let worse: Vec<String> = report
        .percentiles
        .iter()
        .filter(|p| p.verdict == "worse")
        .map(|p| p.percentile.clone())
        .collect();
    let (complete, reason) = (report.complete, report.incomplete_reason.clone());
    a.out.emit(&text, &AbFile { ab: report })?;
    // The experiment's own failure first: it is the cause a --out error may follow from.
    if !complete {
        return Err(Failure::incomplete(
            reason.unwrap_or_else(|| "not every round ran".into()),
        ));
    }
    if let Some(Err(e)) = out_dir {
        return Err(Failure::incomplete(e.to_string()));
    }
    if a.fail_on.as_deref() == Some("worse") && !worse.is_empty() {
        return Err(Failure::incomplete(format!(
            "--fail-on worse: B is worse than A at {}",
            worse.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_arm, split_flags};

    fn flags(s: &str) -> Vec<String> {
        split_flags(s).unwrap()
    }

    #[test]
    fn an_arm_that_leaves_the_term_to_the_default_gets_one_fitted_to_its_runs() {
        let common = flags("--rate 20000 --msg-size 64 --warmup 2000 --diagnostics off");
        let fitted = check_arm("A", &common, &[], 0.3).unwrap();
        assert_eq!(fitted.fit, Some(2 << 20));
        for own in ["--term-length 1m", "--driver-opt aeron.ipc.term.buffer.length=1m"] {
            let chosen = check_arm("B", &common, &flags(own), 0.3).unwrap();
            assert_eq!(chosen.fit, None, "{own}");
        }
    }

    #[test]
    fn arm_flags_split_like_a_shell_keeps_quotes() {
        assert_eq!(split_flags("--idle yield").unwrap(), ["--idle", "yield"]);
        assert_eq!(
            split_flags("  --driver-opt 'aeron.mtu.length=4096'  --x \"a b\" ").unwrap(),
            ["--driver-opt", "aeron.mtu.length=4096", "--x", "a b"]
        );
        assert_eq!(split_flags("").unwrap(), Vec::<String>::new());
        assert_eq!(split_flags("''").unwrap(), [""]);
        assert!(split_flags("--a 'open").unwrap_err().contains("unclosed quote"));
    }
}
