//! The media driver's counters over a run, as a report holds them.

use serde::{Deserialize, Serialize};

/// One counter over a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterDelta {
    /// The counter id (AeronStat's first column).
    pub id: i32,
    /// Aeron's counter type id.
    pub type_id: i32,
    /// The label AeronStat prints.
    pub label: String,
    /// The value in the first snapshot; 0 for a counter created during the run.
    pub before: i64,
    /// The value in the second snapshot.
    pub after: i64,
    /// `after - before` (saturating).
    pub delta: i64,
}

/// The driver's counters over a run, as AeronStat names them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverCounters {
    /// Every counter that changed and is neither watched, a timestamp nor a stream position:
    /// largest `|delta|` first, then by id.
    pub moved: Vec<CounterDelta>,
    /// Aeron's error, back-pressure, loss and stall counters, shown even at 0:
    /// [`WATCHED_SYSTEM_COUNTERS`](crate::measure::counters::WATCHED_SYSTEM_COUNTERS) in that order, then the per-stream `snd-bpe` counters by id.
    pub watched: Vec<CounterDelta>,
    /// What is not listed, one line each: stream positions, timestamps, counters freed during
    /// the run; or why the counters could not be compared.
    pub note: Option<String>,
    /// What moved from the run's start until both ends connected (the watched counters first,
    /// then the others, as above): setting up, mostly making the logs, which `watched` and
    /// `moved` then leave out. `None` when they are compared from the run's start: the connect
    /// was not seen, or the report was written before this field
    /// ([`counter_window`](crate::measure::counter_window)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Vec<CounterDelta>>,
}
