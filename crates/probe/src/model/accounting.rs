//! What a run's messages add up to (sent, received, lost, duplicated, reordered, undecodable),
//! and one row per time-ordered group.

use crate::model::Stats;

/// Number of time-ordered groups every report splits the measured messages into.
pub const GROUPS: usize = 20;

/// One row of the per-group table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupRow {
    /// Group index, `0..GROUPS`, in send order.
    pub index: usize,
    /// First sequence number planned for this group (global seq space, warm-up included).
    pub first_seq: u64,
    /// Last sequence number planned for this group (inclusive). When the group has no planned
    /// messages (`planned < GROUPS`), `last_seq == first_seq` and `planned == 0`.
    pub last_seq: u64,
    /// How many measured messages were planned for this group.
    pub planned: u64,
    /// Latency from the intended send time.
    pub intended: Stats,
    /// Latency from the actual send time.
    pub actual: Stats,
}

/// The sequence accounting at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accounting {
    /// Messages the publisher says it sent (from the end marker); `None` if it never arrived.
    pub sent: Option<u64>,
    /// Every fragment handed to the recorder (`received + duplicates + decode_errors`).
    pub fragments: u64,
    /// Unique messages received (warm-up and measured, including `out_of_range`).
    pub received: u64,
    /// Unique warm-up messages received.
    pub received_warmup: u64,
    /// Unique measured messages received.
    pub received_measured: u64,
    /// Messages never received: below `sent`, or, without an end marker, gaps below the
    /// highest sequence number seen; not those sent before the subscriber joined
    /// (`before_join`).
    pub lost: u64,
    /// Messages sent before this subscriber's image joined the stream: those below the first
    /// sequence number it received. Aeron delivers a stream from where an image joins (a late
    /// receiver of a multi-destination channel, an IPC subscriber added to a running
    /// publication), and retransmits every gap after it: these were never owed to it.
    pub before_join: u64,
    /// Messages whose sequence number had been seen before (not recorded again).
    pub duplicates: u64,
    /// Messages that arrived after a higher sequence number (first arrival only).
    pub reordered: u64,
    /// Payloads that were not our schema.
    pub decode_errors: u64,
    /// Messages whose sequence number is beyond `warmup + planned` (counted as received; they
    /// cannot be checked for duplicates).
    pub out_of_range: u64,
    /// Measured messages with a negative latency (clock anomaly), recorded as 0.
    pub negative_latency: u64,
    /// Latency samples above the histogram range, recorded as its highest value.
    pub clamped: u64,
    /// `true` if no end marker arrived: `sent` is unknown and `lost` only counts gaps.
    pub publisher_vanished: bool,
}

impl Accounting {
    /// Whether everything adds up: `fragments == received + duplicates + decode_errors`, and,
    /// when `sent` is known, `received + before_join + lost == sent`. The latter fails only if messages beyond
    /// `sent` were received (a publisher restarted on the same stream, or corrupt sequence
    /// numbers): reports must then say so.
    pub fn adds_up(&self) -> bool {
        let frags = self.fragments == self.received + self.duplicates + self.decode_errors;
        match self.sent {
            Some(sent) => frags && self.received + self.before_join + self.lost == sent,
            None => frags,
        }
    }
}
