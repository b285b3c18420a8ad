//! The groups of a run as plain rows, the input of the group table (CSV) and the groups plot.

/// One of the 20 time-ordered groups of a run, as the CSV and the groups plot show it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupPoint {
    /// Position of the group in the run, from 0.
    pub index: usize,
    /// Group start, seconds from the run's first intended send time.
    pub start_s: f64,
    /// Group end, seconds from the run's first intended send time.
    pub end_s: f64,
    /// Messages measured in the group.
    pub count: u64,
    /// Median latency from the intended send time, ns.
    pub p50_ns: u64,
    /// 99th percentile latency from the intended send time, ns.
    pub p99_ns: u64,
    /// 99.9th percentile latency from the intended send time, ns.
    pub p999_ns: u64,
    /// Largest latency from the intended send time, ns.
    pub max_ns: u64,
    /// Median latency from the actual send time, ns.
    pub actual_p50_ns: u64,
    /// 99th percentile latency from the actual send time, ns.
    pub actual_p99_ns: u64,
    /// 99.9th percentile latency from the actual send time, ns.
    pub actual_p999_ns: u64,
    /// Largest latency from the actual send time, ns.
    pub actual_max_ns: u64,
    /// Jitter counters of this group when present, e.g. `("futex waits", 3)`,
    /// `("involuntary switches", 12)`; may be empty. A name listed twice is summed.
    pub counters: Vec<(String, u64)>,
}

/// Counter names across `rows`, in order of first appearance.
pub(crate) fn counter_names(rows: &[GroupPoint]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in rows.iter().flat_map(|r| r.counters.iter()) {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names
}

/// The value of counter `name` in `row`, summed when listed twice; 0 when absent.
pub(crate) fn counter_value(row: &GroupPoint, name: &str) -> u64 {
    row.counters
        .iter()
        .filter(|(n, _)| n == name)
        .fold(0_u64, |acc, (_, v)| acc.saturating_add(*v))
}
