//! `latency-probe ab`'s report: arms A and B measured in alternating rounds (each round's order
//! drawn at random, or ABBA), each run with the floor beside it, and the paired change B vs A per percentile. JSON: `ab.percentiles[]`
//! and `ab.rounds[]`, with every round's figures, so anyone can recompute the intervals.

use serde::{Deserialize, Serialize};

use crate::model::Stats;

/// The figures `ab` judges: the percentiles of latency and its mean, by their JSON names.
pub const AB_PERCENTILES: [&str; 6] = ["p50", "p90", "p99", "p999", "max", "mean"];

/// The file `ab --json` writes: `{"ab": {...}}`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AbFile {
    /// The comparison.
    pub ab: AbReport,
}

/// Which latency column the verdict judges.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AbColumn {
    /// From the intended send time: what a user of the stream sees (the default).
    #[default]
    Intended,
    /// From the actual send time: what the transport adds.
    Actual,
}

impl AbColumn {
    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AbColumn::Intended => "intended",
            AbColumn::Actual => "actual",
        }
    }
}

impl std::str::FromStr for AbColumn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "intended" => Ok(AbColumn::Intended),
            "actual" => Ok(AbColumn::Actual),
            _ => Err(format!("'{s}' is not a column; use intended or actual")),
        }
    }
}

/// How each round's order of the arms (A then B, or B then A) is chosen.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AbOrder {
    /// A fair coin per round, from a seeded generator (the default). Under no change the sign
    /// of each round's B vs A is then a fair coin whatever the machine does, so the signed-rank
    /// interval is exact even when a disturbance recurs with a period (a fixed order can alias
    /// with one: every 4th run slow lands on one arm every time under ABBA).
    #[default]
    Random,
    /// AB, BA, AB, ...: cancels a linear drift; what `ab` did before it drew the order.
    Abba,
}

impl AbOrder {
    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AbOrder::Random => "random",
            AbOrder::Abba => "abba",
        }
    }

    /// What a report written before the field existed ran.
    fn legacy() -> Self {
        AbOrder::Abba
    }
}

impl std::str::FromStr for AbOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "random" => Ok(AbOrder::Random),
            "abba" => Ok(AbOrder::Abba),
            _ => Err(format!("'{s}' is not an order; use random or abba")),
        }
    }
}

/// The comparison.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AbReport {
    /// The version of this report's JSON format ([`crate::model::SCHEMA_VERSION`] when written
    /// by this build; 1 for reports from before the field existed).
    #[serde(default = "crate::model::schema_version_1")]
    pub schema_version: u32,
    /// Arm A: its flags (and binaries, when they differ).
    pub a: String,
    /// Arm B.
    pub b: String,
    /// The column judged.
    pub column: AbColumn,
    /// How each round's order was chosen (reports without it ran ABBA).
    #[serde(default = "AbOrder::legacy")]
    pub order: AbOrder,
    /// The generator's seed with [`AbOrder::Random`]: `--seed` repeats the orders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The confidence asked (`--confidence`, 0.99: 99%): per figure, the chance that it gets no
    /// false verdict over every look taken (over six figures, some one may: up to 6 times the
    /// rest).
    pub confidence: f64,
    /// The confidence of the intervals reported: `confidence` when `ab` looked once; with an
    /// interim look, that look's or the last one's (each spends part of the budget).
    #[serde(default)]
    pub interval_confidence: f64,
    /// Whether the run stopped at the interim look, every figure decided.
    #[serde(default)]
    pub stopped_early: bool,
    /// Rounds planned.
    pub rounds_planned: u32,
    /// Per figure: A, B, the paired change and the verdict.
    pub percentiles: Vec<AbPercentile>,
    /// Every round's figures and floors.
    pub rounds: Vec<AbRound>,
    /// Whether every planned round ran and no arm lost a message or failed.
    pub complete: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    /// What the reader should know: rounds set aside and why, planted causes.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One figure's paired change.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AbPercentile {
    /// The figure: `p50`, `p90`, `p99`, `p999`, `max` or `mean`.
    pub percentile: String,
    /// A's median over the rounds counted, ns.
    pub a_ns: f64,
    /// B's, ns.
    pub b_ns: f64,
    /// The estimated change B vs A, a fraction (0.05: B 5% higher).
    pub change: f64,
    /// The interval's low end, a fraction (absent when there is none: too few rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    /// Its high end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
    /// Rounds in which B's figure was below A's.
    pub b_better_rounds: u32,
    /// Rounds counted.
    pub rounds: u32,
    /// `better`, `worse`, `no change` (within `--resolve`), `inconclusive` (an interval around
    /// zero reaching past it) or `cannot tell`.
    pub verdict: String,
    /// With `no change` or `inconclusive`: the change, either way, the run could have resolved
    /// (a fraction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolvable: Option<f64>,
}

/// One round: A and B measured one after the other (in `order`), each with its floor.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AbRound {
    /// 1-based.
    pub round: u32,
    /// `AB` or `BA`.
    pub order: String,
    /// A's latency in the judged column, ns.
    pub a: Stats,
    /// B's.
    pub b: Stats,
    /// A's floor p50 (before and after its run merged), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_floor_ns: Option<u64>,
    /// B's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_floor_ns: Option<u64>,
    /// Why this round is not counted (its floors were in different regimes, or one moved
    /// during its run); absent when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<String>,
}

/// One round's histograms of each arm (what `ab --out` merges); not part of the JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundHistograms {
    /// The round (1-based).
    pub round: u32,
    /// A's run's histograms.
    pub a: Option<crate::model::Histograms>,
    /// B's.
    pub b: Option<crate::model::Histograms>,
}
