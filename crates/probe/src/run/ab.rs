//! `latency-probe ab`: arms A and B run alternately in short rounds, each round's order (A then
//! B, or B then A) drawn by a seeded coin ([`Orders`]; or ABBA with `--order abba`), so a drift
//! of the machine's speed lands on both arms alike and nothing periodic lines up with one arm.
//! Each arm
//! run is one `latency-probe` run (its own embedded driver, started fresh each run, and its
//! floor measured right before and after it) with the common flags, the arm's flags and the
//! round's `--duration`; its report gives the round's figures. The paired change per figure
//! comes from [`crate::analysis::ab`].
//!
//! Drivers: a fresh embedded driver per arm run, as a plain `latency-probe` run has. An arm
//! may change driver settings (`--driver-opt`), which only a fresh driver takes; and a driver
//! kept idle across rounds would still be a shared, warm resource for one arm and not the
//! other. The start costs about 0.13 s of an arm run, outside the measured phase
//! (docs/results/2026-11-26-ab-driver-start.md). Both arms get an IPC term fitted to their
//! runs where neither chooses one (`cli::ab`): Aeron's default 64 MiB term costs each run
//! about 0.45 s to allocate and free (docs/results/2026-11-26-ab-term-fit.md).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::process::{exit_words, wait_for_run, INTERRUPTED_PROBE_GRACE};
use crate::analysis::ab::Looks;
use crate::model::{AbColumn, AbOrder, AbPercentile, AbReport, AbRound, Report, RoundHistograms};

/// What `ab` runs, as plain values (the flags, checked).
#[derive(Debug, Clone)]
pub struct Ab {
    /// The `latency-probe` that runs arm A (this executable, or `--a-bin DIR`'s).
    pub probe_a: PathBuf,
    /// The one that runs arm B.
    pub probe_b: PathBuf,
    /// Arm A's own flags.
    pub a_flags: Vec<String>,
    /// Arm B's.
    pub b_flags: Vec<String>,
    /// Flags for both arms (after `--`, and `--term-length` where `ab` fitted it).
    pub common: Vec<String>,
    /// The IPC term `ab` chose for both arms, fitted to their runs (none: an arm chose its own).
    pub fitted_term: Option<usize>,
    /// A command run (by `sh -c`) before each arm run of A, and one after it.
    pub a_around: (Option<String>, Option<String>),
    /// The same for B.
    pub b_around: (Option<String>, Option<String>),
    /// Rounds.
    pub rounds: u32,
    /// Measured seconds per arm and round.
    pub duration_s: f64,
    /// The column judged.
    pub column: AbColumn,
    /// How each round's order is chosen.
    pub order: AbOrder,
    /// The seed of the order's coin ([`AbOrder::Random`]).
    pub seed: u64,
    /// The intervals' confidence.
    pub confidence: f64,
    /// Where the arm runs' reports go (kept: `--out DIR`, else a temporary directory).
    pub work_dir: PathBuf,
    /// Each arm run's wall time as estimated up front, seconds (for the expected duration).
    pub run_estimate_s: f64,
    /// Whether to look once at half the rounds and stop there when every figure is decided.
    pub early_stop: bool,
    /// A `no change` must rule out changes this large either way (a fraction); an interval
    /// around zero reaching farther is `inconclusive`, and undecided.
    pub resolve: f64,
}

/// Which arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// A.
    A,
    /// B.
    B,
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arm::A => "A",
            Arm::B => "B",
        })
    }
}

/// Why an arm run gave no usable report: the experiment ends there.
#[derive(Debug)]
pub struct ArmFailed {
    /// Which arm.
    pub arm: Arm,
    /// In which round.
    pub round: u32,
    /// What happened.
    pub why: String,
}

impl fmt::Display for ArmFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arm {} failed in round {}: {}", self.arm, self.round, self.why)
    }
}

impl Ab {
    /// The expected wall time, seconds.
    #[must_use]
    pub fn expected_s(&self) -> f64 {
        2.0 * f64::from(self.rounds) * self.run_estimate_s
    }

    fn arm(&self, arm: Arm) -> (&Path, &[String], &(Option<String>, Option<String>)) {
        match arm {
            Arm::A => (&self.probe_a, &self.a_flags, &self.a_around),
            Arm::B => (&self.probe_b, &self.b_flags, &self.b_around),
        }
    }

    /// One arm run: the commands around it, `latency-probe` with the common and the arm's
    /// flags; its report, or why there is none (or why it does not count: a message lost).
    fn run_arm(&self, arm: Arm, round: u32) -> Result<Report, ArmFailed> {
        let failed = |why: String| ArmFailed { arm, round, why };
        if crate::sys::signals::interrupted() {
            return Err(failed("interrupted before it started".into()));
        }
        let (probe, flags, (before, after)) = self.arm(arm);
        if let Some(cmd) = before {
            shell(cmd).map_err(|e| failed(format!("its command before ({cmd}) failed: {e}")))?;
        }
        let json = self.work_dir.join(format!("round-{round:03}-{arm}.json"));
        // Its stderr goes to a file (a pipe nobody reads while it runs could fill and stall it).
        let log = self.work_dir.join(format!("round-{round:03}-{arm}.stderr"));
        let status = std::fs::File::create(&log)
            .map_err(|e| format!("{}: {e}", log.display()))
            .and_then(|stderr| {
                Command::new(probe)
                    .args(&self.common)
                    .args(flags)
                    .args(["--duration", &self.duration_s.to_string(), "--quiet", "--json"])
                    .arg(&json)
                    .stdout(Stdio::null())
                    .stderr(stderr)
                    .spawn()
                    .map_err(|e| format!("{} did not start: {e}", probe.display()))
            })
            .map(|mut child| wait_for_run(&mut child, INTERRUPTED_PROBE_GRACE))
            .map_err(failed);
        if let Some(cmd) = after {
            shell(cmd).map_err(|e| failed(format!("its command after ({cmd}) failed: {e}")))?;
        }
        let status = status?;
        let exit = exit_words(status);
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        let last_line = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        let report: Report = std::fs::read_to_string(&json)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .ok_or_else(|| failed(format!("latency-probe wrote no report ({exit}){}", said(last_line))))?;
        if status.and_then(|s| s.code()) != Some(0) || !report.complete || report.lost > 0 {
            return Err(failed(format!(
                "latency-probe {exit}, {} lost{}{}",
                report.lost,
                if report.complete { "" } else { ", incomplete" },
                said(report.incomplete_reason.as_deref().unwrap_or(last_line))
            )));
        }
        Ok(report)
    }

    /// The column this comparison judges, from a run's report.
    fn column_of<'r>(&self, r: &'r Report) -> &'r crate::model::Stats {
        match self.column {
            AbColumn::Intended => &r.latency_ns,
            AbColumn::Actual => &r.latency_actual_ns,
        }
    }
}

/// `": LINE"` for a run's last line on stderr, nothing when it said nothing.
fn said(last_line: &str) -> String {
    if last_line.is_empty() {
        String::new()
    } else {
        format!(": {last_line}")
    }
}

/// Runs `cmd` with `sh -c`; its failure in one line.
fn shell(cmd: &str) -> Result<(), String> {
    let status = Command::new("sh")
        .args(["-c", cmd])
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(exit_words(Some(status)))
    }
}

/// What `ab` ran: the comparison, and every round's histograms of each arm (for `--out`).
#[derive(Debug)]
pub struct AbOutcome {
    /// The comparison.
    pub report: AbReport,
    /// Per round run, in order: A's and B's histograms (absent where a report had none).
    pub histograms: Vec<RoundHistograms>,
}

/// Each round's order of the arms: by [`AbOrder::Random`], a fair coin per round from ChaCha8
/// seeded with the seed (the same seed, the same orders); by [`AbOrder::Abba`], AB in odd
/// rounds and BA in even ones.
#[derive(Debug, Clone)]
pub struct Orders {
    rule: AbOrder,
    coin: ChaCha8Rng,
}

impl Orders {
    /// The orders by `rule`, the coin seeded with `seed`.
    #[must_use]
    pub fn new(rule: AbOrder, seed: u64) -> Self {
        Orders {
            rule,
            coin: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Round `round`'s order (1-based; every round run, set-aside ones included, takes one).
    pub fn next(&mut self, round: u32) -> [Arm; 2] {
        let a_first = match self.rule {
            AbOrder::Random => self.coin.next_u32() & 1 == 0,
            AbOrder::Abba => round % 2 == 1,
        };
        if a_first {
            [Arm::A, Arm::B]
        } else {
            [Arm::B, Arm::A]
        }
    }
}

/// A seed for the order's coin when none is given: the clock's nanoseconds.
#[must_use]
pub fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One round, both arms in `order`: the round's figures, and both reports (A's, B's).
fn run_round(ab: &Ab, round: u32, order: [Arm; 2]) -> Result<(AbRound, Report, Report), ArmFailed> {
    let first = ab.run_arm(order[0], round)?;
    let second = ab.run_arm(order[1], round)?;
    let (a, b) = if order[0] == Arm::A {
        (first, second)
    } else {
        (second, first)
    };
    let r = AbRound {
        round,
        order: format!("{}{}", order[0], order[1]),
        a: *ab.column_of(&a),
        b: *ab.column_of(&b),
        a_floor_ns: a.floor.as_ref().map(|f| f.combined_ns.p50),
        b_floor_ns: b.floor.as_ref().map(|f| f.combined_ns.p50),
        set_aside: crate::analysis::ab::set_aside(a.floor.as_ref(), b.floor.as_ref()),
    };
    Ok((r, a, b))
}

/// Runs the rounds (each in the order [`Orders`] gives), telling `progress` after each, until `rounds` pairs count: a round
/// whose arms ran on floors in different regimes is set aside and run again, at most `rounds`
/// times in all. With an interim look ([`Looks`]) it stops there when every figure is decided.
/// Returns the report, complete or ended at the first arm that failed or lost a message (what
/// was measured is kept).
pub fn run(ab: &Ab, progress: &mut dyn FnMut(&AbRound)) -> AbOutcome {
    let looks = Looks::new(ab.rounds, ab.confidence, ab.early_stop);
    let mut orders = Orders::new(ab.order, ab.seed);
    let mut rounds: Vec<AbRound> = Vec::new();
    let mut histograms = Vec::new();
    let (mut incomplete_reason, mut early) = (None, None);
    let (mut moved, mut redo_left, mut round) = (0, ab.rounds, 0);
    let counted = |rounds: &[AbRound]| rounds.iter().filter(|r| r.set_aside.is_none()).count() as u32;
    while counted(&rounds) < ab.rounds {
        round += 1;
        let (r, a, b) = match run_round(ab, round, orders.next(round)) {
            // Ctrl-C: the arm that ran then was stopped; the verdict is over the rounds done.
            Err(_) if crate::sys::signals::interrupted() => {
                incomplete_reason = Some(match counted(&rounds) {
                    0 => format!("interrupted (SIGINT or SIGTERM) in round {round}: no round was done before it"),
                    n => format!(
                        "interrupted (SIGINT or SIGTERM) in round {round}: the verdict is over the {n} of {} \
                         rounds done before it",
                        ab.rounds
                    ),
                });
                break;
            }
            Err(e) => {
                incomplete_reason = Some(e.to_string());
                break;
            }
            Ok(x) => x,
        };
        moved += [&a, &b]
            .iter()
            .filter(|r| r.floor.as_ref().is_some_and(|f| f.moved))
            .count();
        histograms.push(RoundHistograms {
            round,
            a: a.histograms,
            b: b.histograms,
        });
        progress(&r);
        let aside = r.set_aside.is_some();
        rounds.push(r);
        if aside {
            if redo_left == 0 {
                break;
            }
            redo_left -= 1;
        } else if let Some((at, confidence)) = looks.interim {
            if counted(&rounds) == at {
                let p = crate::analysis::ab::judge(&rounds, confidence, ab.resolve);
                if crate::analysis::ab::decided(&p) {
                    early = Some((p, confidence));
                    break;
                }
            }
        }
    }
    let report = report(ab, &looks, rounds, moved, (incomplete_reason, early));
    AbOutcome { report, histograms }
}

/// The comparison over the rounds run: judged at the last look unless it stopped early,
/// incomplete with `incomplete_reason`, or when too few rounds count.
fn report(
    ab: &Ab,
    looks: &Looks,
    rounds: Vec<AbRound>,
    moved: usize,
    (mut incomplete_reason, early): (Option<String>, Option<(Vec<AbPercentile>, f64)>),
) -> AbReport {
    let n = rounds.iter().filter(|r| r.set_aside.is_none()).count();
    if incomplete_reason.is_none() && early.is_none() && n < ab.rounds as usize {
        incomplete_reason = Some(format!(
            "only {n} of {} rounds count: the rest ran on floors in different regimes, more often than the \
             {} re-runs allowed; use shorter --duration, or a quieter machine",
            ab.rounds, ab.rounds
        ));
    }
    let stopped_early = early.is_some();
    let (percentiles, interval_confidence) =
        early.unwrap_or_else(|| (crate::analysis::ab::judge(&rounds, looks.last, ab.resolve), looks.last));
    let mut notes = notes(&rounds, moved);
    if let Some(t) = ab.fitted_term {
        notes.push(format!(
            "both arms ran with --term-length {t}: the smallest IPC term that holds an arm run twice over \
             (with Aeron's default of 64 MiB every arm run allocates and frees a 192 MiB log); pass \
             --term-length to choose"
        ));
    }
    notes.extend(looks.note(stopped_early, n, ab.resolve));
    let needed = crate::analysis::paired::min_rounds(1.0 - interval_confidence);
    if n < needed && percentiles.iter().any(|p| p.verdict == "cannot tell") {
        notes.push(format!(
            "cannot tell: {n} counted rounds give no {}% interval; it needs {needed} at least (--rounds {needed} \
             or more, or a lower --confidence)",
            crate::render::ab::format_confidence(interval_confidence)
        ));
    }
    AbReport {
        schema_version: crate::model::SCHEMA_VERSION,
        a: describe(&ab.probe_a, &ab.probe_b, &ab.a_flags, true),
        b: describe(&ab.probe_a, &ab.probe_b, &ab.b_flags, false),
        column: ab.column,
        order: ab.order,
        seed: (ab.order == AbOrder::Random).then_some(ab.seed),
        confidence: ab.confidence,
        interval_confidence,
        stopped_early,
        rounds_planned: ab.rounds,
        percentiles,
        complete: incomplete_reason.is_none(),
        incomplete_reason,
        notes,
        rounds,
    }
}

/// Rounds set aside and why; runs whose floor moved but were kept.
fn notes(rounds: &[AbRound], moved: usize) -> Vec<String> {
    let set_aside: Vec<String> = rounds
        .iter()
        .filter_map(|r| r.set_aside.as_ref().map(|why| format!("round {}: {why}", r.round)))
        .collect();
    let mut notes = Vec::new();
    if !set_aside.is_empty() {
        notes.push(format!(
            "{} of {} rounds set aside (not counted) and run again: {}",
            set_aside.len(),
            rounds.len(),
            set_aside.join("; ")
        ));
    }
    if moved > 0 {
        notes.push(format!(
            "{moved} of {} arm runs saw their floor move during the run (before vs after over 1.5x); kept where \
             both arms' floors agreed",
            2 * rounds.len()
        ));
    }
    notes
}

/// An arm in words: its flags, and its binary when the arms' differ.
fn describe(probe_a: &Path, probe_b: &Path, flags: &[String], is_a: bool) -> String {
    let mut s = if flags.is_empty() {
        "(no flags of its own)".to_owned()
    } else {
        flags.join(" ")
    };
    if probe_a != probe_b {
        let bin = if is_a { probe_a } else { probe_b };
        s.push_str(&format!(" [{}]", bin.display()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::paired::{paired_change, Verdict};

    /// Simulated A/A experiments of 30 rounds on a machine where every 4th arm run is slow (a
    /// disturbance with a period, at a random phase): how many of `experiments` give a false
    /// verdict at 99%.
    fn false_alarms(rule: AbOrder, experiments: u64) -> usize {
        let mut noise = ChaCha8Rng::seed_from_u64(7);
        let mut uniform = move || f64::from(noise.next_u32()) / f64::from(u32::MAX);
        (0..experiments)
            .filter(|&e| {
                let mut orders = Orders::new(rule, 1000 + e);
                let phase = (uniform() * 4.0) as u32;
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for round in 1..=30u32 {
                    let mut run = |i: u32| {
                        let slow = if (2 * (round - 1) + i + phase).is_multiple_of(4) {
                            4.0
                        } else {
                            1.0
                        };
                        slow * (1000.0 + 400.0 * uniform())
                    };
                    let (first, second) = (run(0), run(1));
                    let (x, y) = match orders.next(round) {
                        [Arm::A, _] => (first, second),
                        _ => (second, first),
                    };
                    a.push(x);
                    b.push(y);
                }
                let v = paired_change(&a, &b, 0.99, 0.05).verdict;
                matches!(v, Verdict::Better | Verdict::Worse)
            })
            .count()
    }

    #[test]
    fn a_random_order_does_not_line_up_with_a_periodic_disturbance() {
        // ABBA puts A on runs 0 and 3 of every 4 and B on 1 and 2: the slow run is one arm's
        // every time, and identical arms are called different in nearly every experiment.
        assert!(false_alarms(AbOrder::Abba, 200) > 150);
        // A coin per round: the 1% the interval promises (2 of 200 expected).
        let random = false_alarms(AbOrder::Random, 200);
        assert!(random <= 8, "{random} false alarms in 200");
    }

    #[test]
    fn the_same_seed_gives_the_same_orders_and_both_orders_occur() {
        let draw = |seed| {
            let mut o = Orders::new(AbOrder::Random, seed);
            (1..=40).map(|r| o.next(r)[0]).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
        let a_first = draw(42).iter().filter(|a| **a == Arm::A).count();
        assert!((10..=30).contains(&a_first), "{a_first} of 40");
        let mut abba = Orders::new(AbOrder::Abba, 0);
        assert_eq!(
            (1..=4).map(|r| abba.next(r)[0]).collect::<Vec<_>>(),
            [Arm::A, Arm::B, Arm::A, Arm::B]
        );
    }
}
