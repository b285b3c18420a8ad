//! The media driver's counters over a run, as AeronStat shows them: two snapshots of every
//! counter in `cnc.dat` (read through aeron-rs's `CountersReader`, by
//! [`read_driver_counters`](aeron_latency::messaging::read_driver_counters) without joining the
//! driver, as latency-probe does, or by a connected
//! [`Client::counters`](aeron_latency::messaging::Client::counters)), taken before and after
//! the measurement, and what changed between them.
//!
//! Guarantees:
//! - Counters are matched by `(id, type_id, label)`. Aeron frees a stream's counters when the
//!   stream goes and reuses the id for another counter after its free-to-reuse timeout (1 s by
//!   default), so an id whose type or label changed is two counters: one freed and one created
//!   during the run. A counter created during the run counts from 0 — the driver hands out
//!   every counter with its value at 0 (`aeron_counters_manager_next_counter_id` zeroes a
//!   reused slot; a fresh slot is untouched, zero-filled `cnc.dat`), so its whole value accrued
//!   inside the run. A counter freed during the run has no final value: it is named in
//!   [`DriverCounters::note`] (a stream position, freed when its stream closed, is counted by
//!   name in the note's positions line), never given an invented delta.
//! - [`DriverCounters::watched`] always holds Aeron's error, back-pressure, loss and stall
//!   counters that the driver has ([`WATCHED_SYSTEM_COUNTERS`], then every per-stream
//!   `snd-bpe`), even at 0: a report that says "Errors +0" says more than one that says
//!   nothing. They are listed in Aeron's order and never repeated in
//!   [`DriverCounters::moved`].
//! - [`DriverCounters::moved`] holds every other counter whose value changed, except
//!   timestamps ([`TIMESTAMP_TYPE_IDS`]: they move all the time and mean nothing here) and
//!   stream positions ([`POSITION_TYPE_IDS`]: they move with every message; one line of
//!   [`DriverCounters::note`] summarises them). Largest change first.
//! - Nothing is dropped silently: every counter the snapshots hold is in `watched`, in
//!   `moved`, unchanged, or counted in the note (positions, timestamps, freed counters).
//! - Not on the hot path: snapshots are taken before and after the measurement; this module
//!   allocates freely.
//!
//! ```
//! use aeron_latency::messaging::DriverCounter;
//! use latency_probe::measure::counters::diff;
//! use latency_probe::render::counters::render;
//!
//! let c = |id, type_id, label: &str, value| DriverCounter { id, type_id, label: label.into(), value };
//! let before = [c(15, 0, "Errors: version=1.54.0 commit=abc", 0), c(35, 0, "Bytes currently mapped", 100)];
//! let after = [c(15, 0, "Errors: version=1.54.0 commit=abc", 0), c(35, 0, "Bytes currently mapped", 300)];
//! let d = diff(&before, &after);
//! assert_eq!(d.watched[0].delta, 0);
//! assert_eq!(d.moved[0].delta, 200);
//! assert!(render(&d).contains(" 35   0 Bytes currently mapped: 100 -> 300 (+200)"));
//! ```

use crate::model::CounterDelta;
use crate::model::DriverCounters;
use crate::units::plural;
use aeron_latency::messaging::DriverCounter;
use std::collections::{BTreeMap, HashMap};

/// Aeron's type id for the driver's system counters (`AERON_COUNTER_SYSTEM_COUNTER_TYPE_ID`,
/// Java `AeronCounters.DRIVER_SYSTEM_COUNTER_TYPE_ID`).
pub const SYSTEM_COUNTER_TYPE_ID: i32 = 0;

/// Aeron's type id for a sender's back-pressure events on one stream, labelled `snd-bpe`
/// (`AERON_COUNTER_SENDER_BPE_TYPE_ID`, Java `AeronCounters.DRIVER_SENDER_BPE_TYPE_ID`).
pub const SENDER_BPE_TYPE_ID: i32 = 13;

/// Counter types whose value is a timestamp, left out of [`DriverCounters::moved`]: they move
/// all the time and say nothing about the run. From Aeron 1.54's `aeron_counters.h` and
/// `AeronCounters.java`, the only types documented as holding a time rather than a count, a
/// position or a status:
///
/// | type id | Aeron name | value |
/// |---|---|---|
/// | 11 | `CLIENT_HEARTBEAT_TIMESTAMP` (Java `DRIVER_HEARTBEAT_TYPE_ID`), label `client-heartbeat` | epoch ms of a client's last keepalive |
/// | 210 | `CLUSTER_BACKUP_QUERY_DEADLINE` | epoch ms of the next cluster-backup query |
/// | 504 | `SEQUENCER_SESSION_GREATEST_MESSAGE_TIMESTAMP` | timestamp of a session's last message |
/// | 541 | `SEQUENCER_APPLICATION_LAST_READ_TIMESTAMP` | log timestamp of the last message read |
///
/// Not excluded, on purpose: the driver has no heartbeat counter of its own (its liveness is
/// the to-driver ring buffer's consumer heartbeat in the `cnc.dat` header, not a counter), and
/// Aeron has no clock counter; the "… max cycle time doing its work in ns" system counters are
/// durations, maxima that only rise when a duty cycle was slower than every one before — jitter
/// evidence, so they are [watched](WATCHED_SYSTEM_COUNTERS).
pub const TIMESTAMP_TYPE_IDS: [(i32, &str); 4] = [
    (11, "client-heartbeat"),
    (210, "cluster backup query deadline"),
    (504, "sequencer session greatest message timestamp"),
    (541, "sequencer application last read timestamp"),
];

/// Stream position counter types, summarised in [`DriverCounters::note`] instead of listed in
/// [`DriverCounters::moved`]: they advance with every message, so their movement only repeats
/// the message count. Type ids and label prefixes from Aeron 1.54's `aeron_counters.h`
/// (`AERON_COUNTER_*_TYPE_ID` / `*_NAME`) and `AeronCounters.java`.
///
/// `pub-pos` (12) is refreshed by the driver about once a second, not per message
/// (`AeronCounters.DRIVER_PUBLISHER_POS_TYPE_ID`), so a short run may show it unmoved.
pub const POSITION_TYPE_IDS: [(i32, &str); 10] = [
    (1, "pub-lmt"),
    (2, "snd-pos"),
    (3, "rcv-hwm"),
    (4, "sub-pos"),
    (5, "rcv-pos"),
    (9, "snd-lmt"),
    (12, "pub-pos"),
    (100, "rec-pos (archive recording position)"),
    (203, "commit-pos (cluster commit position)"),
    (209, "cluster backup live log position"),
];

/// The system counters (type 0) always shown in [`DriverCounters::watched`], in Aeron's order:
/// `(system counter id, label)`, from the `system_counters` table of Aeron 1.54's
/// `aeron-driver/src/main/c/aeron_system_counters.c` (ids in `aeron_counters.h`,
/// `AERON_SYSTEM_COUNTER_ID_*`). A counter matches by label (the id is only the sort key):
/// equal, or the label followed by `": "` and what the driver appends — `Errors: version=1.54.0
/// commit=…` (in the table itself), and, appended by `aeron_driver_conductor_init` at start-up,
/// the threading mode to the cycle time maxima (`… in ns: SHARED`) and the threshold and mode
/// to the threshold counts (`… count: threshold=100ms SHARED`), as a real 1.54 driver shows.
///
/// Picked: failures and stalls (errors, failed proxy offers, unblocked publications and
/// commands, client timeouts, revoked or rejected streams, failed frees), back-pressure
/// (sender flow control limits, flow control under/over runs, short sends), loss (NAKs, loss gap
/// fills, retransmit pool overflow, invalid packets, TTL asymmetry, error frames), and the
/// conductor / sender / receiver duty cycle maxima and threshold counts. Left out: traffic
/// volumes and routine protocol (bytes sent/received, status messages, heartbeats sent and
/// received, retransmits sent), versions and gauges (`Aeron software: version=…`, `Control
/// protocol version`, `Bytes currently mapped`, `ControllableIdleStrategy status`) and the name
/// resolver's timers; they appear in [`DriverCounters::moved`] when they move.
pub const WATCHED_SYSTEM_COUNTERS: [(i32, &str); 29] = [
    (2, "Failed offers to ReceiverProxy"),
    (3, "Failed offers to SenderProxy"),
    (4, "Failed offers to DriverConductorProxy"),
    (5, "NAKs sent"),
    (6, "NAKs received"),
    (12, "Flow control under runs"),
    (13, "Flow control over runs"),
    (14, "Invalid packets"),
    (15, "Errors"),
    (16, "Short sends"),
    (17, "Failed attempts to free log buffers"),
    (18, "Sender flow control limits, i.e. back-pressure events"),
    (19, "Unblocked Publications"),
    (20, "Unblocked Control Commands"),
    (21, "Possible TTL Asymmetry"),
    (23, "Loss gap fills"),
    (24, "Client liveness timeouts"),
    (26, "Conductor max cycle time doing its work in ns"),
    (27, "Conductor work cycle exceeded threshold count"),
    (28, "Sender max cycle time doing its work in ns"),
    (29, "Sender work cycle exceeded threshold count"),
    (30, "Receiver max cycle time doing its work in ns"),
    (31, "Receiver work cycle exceeded threshold count"),
    (37, "Retransmit Pool Overflow count"),
    (38, "Error Frames received"),
    (39, "Error Frames sent"),
    (40, "Publications Revoked"),
    (41, "Publication Images Revoked"),
    (42, "Images rejected"),
];

/// What a counter is for this report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A [`WATCHED_SYSTEM_COUNTERS`] entry (its index) or a `snd-bpe` (index past the table).
    Watched(usize),
    Timestamp,
    Position,
    Other,
}

fn kind(c: &DriverCounter) -> Kind {
    if c.type_id == SYSTEM_COUNTER_TYPE_ID {
        let watched = WATCHED_SYSTEM_COUNTERS.iter().position(|(_, name)| {
            c.label == *name || c.label.strip_prefix(name).is_some_and(|rest| rest.starts_with(": "))
        });
        return watched.map_or(Kind::Other, Kind::Watched);
    }
    if c.type_id == SENDER_BPE_TYPE_ID {
        Kind::Watched(WATCHED_SYSTEM_COUNTERS.len())
    } else if TIMESTAMP_TYPE_IDS.iter().any(|(t, _)| *t == c.type_id) {
        Kind::Timestamp
    } else if POSITION_TYPE_IDS.iter().any(|(t, _)| *t == c.type_id) {
        Kind::Position
    } else {
        Kind::Other
    }
}

/// The counter's name: its label up to the first `':'` (`sub-pos`, `pub-pos (concurrent)`,
/// `client-heartbeat`), as AeronStat's labels start.
fn short_name(label: &str) -> &str {
    label.split(':').next().unwrap_or(label).trim()
}

/// `"a ×2, b ×1"` from names, in first-seen order.
fn tally<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match counts.iter_mut().find(|(m, _)| *m == n) {
            Some((_, k)) => *k += 1,
            None => counts.push((n, 1)),
        }
    }
    counts
        .iter()
        .map(|(n, k)| format!("{n} ×{k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The driver's counters between two snapshots (see the module doc for the rules).
///
/// An empty snapshot means the counters could not be read (a live driver always has its
/// system counters): the result is empty but for a note saying so.
#[must_use]
pub fn diff(before: &[DriverCounter], after: &[DriverCounter]) -> DriverCounters {
    if before.is_empty() || after.is_empty() {
        return unreadable(before.is_empty(), after.is_empty());
    }
    let before_by_id: HashMap<i32, &DriverCounter> = before.iter().map(|c| (c.id, c)).collect();
    let same = |a: &DriverCounter, b: &DriverCounter| a.type_id == b.type_id && a.label == b.label;

    let mut watched: Vec<(usize, CounterDelta)> = Vec::new();
    let mut moved = Vec::new();
    // Positions and timestamps that changed, by short name; and how many were created.
    let mut positions: Vec<&str> = Vec::new();
    let mut positions_new = 0usize;
    let mut timestamps: Vec<&str> = Vec::new();
    for a in after {
        let b = before_by_id.get(&a.id).filter(|b| same(b, a));
        let before_value = b.map_or(0, |b| b.value);
        let d = CounterDelta {
            id: a.id,
            type_id: a.type_id,
            label: a.label.clone(),
            before: before_value,
            after: a.value,
            delta: a.value.saturating_sub(before_value),
        };
        match kind(a) {
            Kind::Watched(order) => watched.push((order, d)),
            Kind::Position => {
                if b.is_none() || d.delta != 0 {
                    positions.push(short_name(&a.label));
                    positions_new += usize::from(b.is_none());
                }
            }
            Kind::Timestamp => {
                if b.is_none() || d.delta != 0 {
                    timestamps.push(short_name(&a.label));
                }
            }
            Kind::Other if d.delta != 0 => moved.push(d),
            Kind::Other => {}
        }
    }
    let after_keys: BTreeMap<i32, &DriverCounter> = after.iter().map(|c| (c.id, c)).collect();
    let (freed_positions, mut freed): (Vec<&DriverCounter>, Vec<&DriverCounter>) = before
        .iter()
        .filter(|b| !after_keys.get(&b.id).is_some_and(|a| same(b, a)))
        .partition(|b| kind(b) == Kind::Position);
    freed.sort_by_key(|c| c.id);
    let positions = Positions {
        advanced: &positions,
        created: positions_new,
        freed: &freed_positions.iter().map(|c| short_name(&c.label)).collect::<Vec<_>>(),
    };

    watched.sort_by_key(|(order, d)| (*order, d.id));
    moved.sort_by(|x, y| {
        y.delta
            .unsigned_abs()
            .cmp(&x.delta.unsigned_abs())
            .then(x.id.cmp(&y.id))
    });

    DriverCounters {
        moved,
        watched: watched.into_iter().map(|(_, d)| d).collect(),
        note: not_listed(&positions, &timestamps, &freed),
        setup: None,
    }
}

/// The result when a snapshot is empty: a note saying which could not be read.
fn unreadable(before: bool, after: bool) -> DriverCounters {
    let when = match (before, after) {
        (true, true) => "before or after",
        (true, false) => "before",
        _ => "after",
    };
    DriverCounters {
        note: Some(format!(
            "the driver's counters could not be read {when} the run (cnc.dat unreadable or the client \
             closed), so none are compared"
        )),
        ..DriverCounters::default()
    }
}

/// The stream positions of a diff, by short name: those that advanced (`created` of them
/// created during the run) and those freed during it (a stream that closed before the second
/// snapshot: latency-sub's `sub-pos` when it exits).
struct Positions<'a> {
    advanced: &'a [&'a str],
    created: usize,
    freed: &'a [&'a str],
}

impl Positions<'_> {
    /// `"positions: ..."`, or `None` when no position moved or went.
    fn line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.advanced.is_empty() {
            let created = if self.created > 0 {
                format!(", {} of them created during the run", self.created)
            } else {
                String::new()
            };
            parts.push(format!(
                "{} with the traffic and {} not listed ({}{created})",
                plural(
                    self.advanced.len(),
                    "stream position counter advanced",
                    "stream position counters advanced"
                ),
                if self.advanced.len() == 1 { "is" } else { "are" },
                tally(self.advanced.iter().copied()),
            ));
        }
        if !self.freed.is_empty() {
            parts.push(format!(
                "{} freed during the run as {} closed, not listed ({})",
                plural(self.freed.len(), "stream position counter", "stream position counters"),
                if self.freed.len() == 1 {
                    "its stream"
                } else {
                    "their streams"
                },
                tally(self.freed.iter().copied()),
            ));
        }
        (!parts.is_empty()).then(|| format!("positions: {}", parts.join("; ")))
    }
}

/// What the diff does not list, in words: the stream positions, the timestamps that moved (by
/// short name) and the other counters freed.
fn not_listed(positions: &Positions<'_>, timestamps: &[&str], freed: &[&DriverCounter]) -> Option<String> {
    let mut note: Vec<String> = positions.line().into_iter().collect();
    if !timestamps.is_empty() {
        note.push(format!(
            "timestamps: {} and {} not listed ({})",
            plural(timestamps.len(), "timestamp counter moved", "timestamp counters moved"),
            if timestamps.len() == 1 { "is" } else { "are" },
            tally(timestamps.iter().copied()),
        ));
    }
    if !freed.is_empty() {
        let list = freed
            .iter()
            .map(|c| format!("{} {} {} (was {})", c.id, c.type_id, c.label, c.value))
            .collect::<Vec<_>>()
            .join("; ");
        note.push(format!(
            "freed during the run, final value unknown: {}: {list}",
            plural(freed.len(), "counter", "counters")
        ));
    }
    (!note.is_empty()).then(|| note.join("\n"))
}

/// A counter as `cnc.dat` holds it, for the counter modules' tests.
#[cfg(test)]
pub(crate) fn test_counter(id: i32, type_id: i32, label: &str, value: i64) -> DriverCounter {
    DriverCounter {
        id,
        type_id,
        label: label.to_owned(),
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::test_counter as c;
    use super::*;
    use crate::render::counters::render;

    const ERRORS: &str = "Errors: version=1.54.0 commit=0123abcd";

    /// A run over IPC, with the cases the rules are about.
    fn snapshots() -> (Vec<DriverCounter>, Vec<DriverCounter>) {
        let before = vec![
            c(0, 0, "Bytes sent", 0),
            c(15, 0, ERRORS, 0),
            c(19, 0, "Unblocked Publications", 2),
            c(24, 0, "Client liveness timeouts", 0),
            c(26, 0, "Conductor max cycle time doing its work in ns", 90_000),
            c(35, 0, "Bytes currently mapped", 1_000),
            c(46, 11, "client-heartbeat: id=7", 1_700_000_000_000),
            c(47, 1, "pub-lmt: 8 1 1001 aeron:ipc", 65_536),
            c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0", 0),
            c(49, 12, "pub-pos (concurrent): 8 1 1001 aeron:ipc", 0),
            // Freed during the run; id 50 is reused for a back-pressure counter.
            c(50, 4, "sub-pos: 5 2 1001 aeron:ipc @0", 4_096),
            c(51, 5, "rcv-pos: 6 3 1002 aeron:udp?endpoint=localhost:40123", 256),
        ];
        let after = vec![
            c(0, 0, "Bytes sent", 0),
            c(15, 0, ERRORS, 0),
            c(19, 0, "Unblocked Publications", 3),
            c(24, 0, "Client liveness timeouts", 0),
            c(26, 0, "Conductor max cycle time doing its work in ns", 2_500_000),
            c(35, 0, "Bytes currently mapped", 500),
            c(46, 11, "client-heartbeat: id=7", 1_700_000_004_000),
            c(47, 1, "pub-lmt: 8 1 1001 aeron:ipc", 131_072),
            c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0", 64_000),
            c(49, 12, "pub-pos (concurrent): 8 1 1001 aeron:ipc", 64_000),
            c(50, 13, "snd-bpe: 10 4 1003 aeron:udp?endpoint=localhost:40124", 7),
            c(52, 10, "rcv-cc-cubic-rtt: 11 4 1003", 0),
        ];
        (before, after)
    }

    fn find(list: &[CounterDelta], id: i32) -> Option<&CounterDelta> {
        list.iter().find(|d| d.id == id)
    }

    #[test]
    fn a_counter_that_moved_is_listed_with_before_after_and_delta() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        let mapped = find(&d.moved, 35).expect("Bytes currently mapped moved");
        assert_eq!((mapped.before, mapped.after, mapped.delta), (1_000, 500, -500));
        assert_eq!(mapped.label, "Bytes currently mapped");
    }

    #[test]
    fn a_counter_that_did_not_move_is_not_in_moved() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        assert!(find(&d.moved, 0).is_none(), "{:?}", d.moved);
        // Created at 0 and still 0: not moved either.
        assert!(find(&d.moved, 52).is_none(), "{:?}", d.moved);
    }

    #[test]
    fn heartbeats_are_left_out_and_counted_in_the_note() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        assert!(d.moved.iter().chain(&d.watched).all(|x| x.type_id != 11), "{d:?}");
        let note = d.note.expect("note");
        assert!(
            note.contains("timestamps: 1 timestamp counter moved and is not listed"),
            "{note}"
        );
        assert!(note.contains("client-heartbeat ×1"), "{note}");
    }

    #[test]
    fn a_reused_id_with_a_new_label_is_a_freed_counter_and_a_new_one_counted_from_zero() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        let bpe = find(&d.watched, 50).expect("the new snd-bpe is watched");
        assert_eq!((bpe.type_id, bpe.before, bpe.after, bpe.delta), (13, 0, 7, 7));
        assert!(bpe.label.starts_with("snd-bpe: "));
        let note = d.note.expect("note");
        assert!(
            note.contains("; 2 stream position counters freed during the run as their streams closed, not listed (sub-pos ×1, rcv-pos ×1)"),
            "{note}"
        );
        assert!(!note.contains("final value unknown"), "{note}");
    }

    #[test]
    fn a_changed_type_with_the_same_label_is_also_a_different_counter() {
        let before = [c(15, 0, ERRORS, 0), c(60, 10, "x: 1", 10)];
        let after = [c(15, 0, ERRORS, 0), c(60, 18, "x: 1", 10)];
        let d = diff(&before, &after);
        let x = find(&d.moved, 60).expect("new counter with value 10 moved from 0");
        assert_eq!((x.before, x.after, x.delta), (0, 10, 10));
        assert_eq!(
            d.note.as_deref(),
            Some("freed during the run, final value unknown: 1 counter: 60 10 x: 1 (was 10)")
        );
    }

    #[test]
    fn positions_are_summarised_in_one_note_line_not_listed() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        assert!(
            d.moved
                .iter()
                .chain(&d.watched)
                .all(|x| ![1, 4, 12].contains(&x.type_id)),
            "{d:?}"
        );
        let note = d.note.expect("note");
        let line = note.lines().find(|l| l.starts_with("positions:")).expect(&note);
        assert_eq!(
            line,
            "positions: 3 stream position counters advanced with the traffic and are not listed \
             (pub-lmt ×1, sub-pos ×1, pub-pos (concurrent) ×1); 2 stream position counters freed \
             during the run as their streams closed, not listed (sub-pos ×1, rcv-pos ×1)"
        );
        let one_freed = diff(
            &[c(15, 0, ERRORS, 0), c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0", 7)],
            &[c(15, 0, ERRORS, 0)],
        )
        .note
        .expect("note");
        assert!(
            one_freed.contains(
                "1 stream position counter freed during the run as its stream closed, not listed (sub-pos ×1)"
            ),
            "{one_freed}"
        );
    }

    #[test]
    fn new_position_counters_are_counted_as_created() {
        let before = [c(15, 0, ERRORS, 0)];
        let after = [
            c(15, 0, ERRORS, 0),
            c(47, 1, "pub-lmt: 8 1 1001 aeron:ipc", 65_536),
            c(48, 4, "sub-pos: x", 0),
        ];
        let note = diff(&before, &after).note.expect("note");
        assert!(
            note.contains("2 stream position counters advanced with the traffic and are not listed (pub-lmt ×1, sub-pos ×1, 2 of them created during the run)"),
            "{note}"
        );
    }

    #[test]
    fn one_position_that_advanced_is_summarised_in_the_singular() {
        let before = [c(15, 0, ERRORS, 0), c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0", 0)];
        let after = [c(15, 0, ERRORS, 0), c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0", 64)];
        assert_eq!(
            diff(&before, &after).note.as_deref(),
            Some("positions: 1 stream position counter advanced with the traffic and is not listed (sub-pos ×1)")
        );
        assert_eq!(diff(&before, &before).note, None);
    }

    #[test]
    fn watched_counters_are_shown_at_zero_in_aerons_order() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        let ids: Vec<i32> = d.watched.iter().map(|x| x.id).collect();
        assert_eq!(ids, [15, 19, 24, 26, 50]);
        let errors = &d.watched[0];
        assert_eq!(
            (errors.label.as_str(), errors.before, errors.after, errors.delta),
            (ERRORS, 0, 0, 0)
        );
        let timeouts = find(&d.watched, 24).unwrap();
        assert_eq!(timeouts.delta, 0);
        // Watched counters that moved are not repeated in `moved`.
        assert!(find(&d.moved, 19).is_none() && find(&d.moved, 26).is_none());
        assert_eq!(find(&d.watched, 19).unwrap().delta, 1);
    }

    #[test]
    fn watched_labels_match_exactly_or_with_the_suffix_the_driver_appends() {
        let labels = [
            (15, ERRORS),
            (70, "Errorsome"),
            (71, "Errors"),
            (26, "Conductor max cycle time doing its work in ns: SHARED"),
            (
                27,
                "Conductor work cycle exceeded threshold count: threshold=100ms SHARED",
            ),
            (72, "Conductor work cycle exceeded threshold count (old)"),
        ];
        let snap: Vec<DriverCounter> = labels.iter().map(|(id, l)| c(*id, 0, l, 1)).collect();
        let d = diff(&snap, &snap);
        let ids: Vec<i32> = d.watched.iter().map(|x| x.id).collect();
        assert_eq!(ids, [15, 71, 26, 27]);
    }

    #[test]
    fn a_watched_label_on_a_non_system_counter_is_not_watched() {
        let before = [c(15, 0, ERRORS, 0), c(80, 101, "Errors", 0)];
        let after = [c(15, 0, ERRORS, 0), c(80, 101, "Errors", 3)];
        let d = diff(&before, &after);
        assert_eq!(d.watched.len(), 1);
        assert_eq!(find(&d.moved, 80).unwrap().delta, 3);
    }

    #[test]
    fn moved_is_sorted_by_absolute_delta_then_id() {
        let before = [
            c(15, 0, ERRORS, 0),
            c(3, 10, "a", 0),
            c(1, 10, "b", 0),
            c(2, 10, "c", 0),
            c(4, 10, "d", 0),
        ];
        let after = [
            c(15, 0, ERRORS, 0),
            c(3, 10, "a", 5),
            c(1, 10, "b", -9),
            c(2, 10, "c", 5),
            c(4, 10, "d", 1),
        ];
        let d = diff(&before, &after);
        let order: Vec<i32> = d.moved.iter().map(|x| x.id).collect();
        assert_eq!(order, [1, 2, 3, 4]);
    }

    #[test]
    fn an_unreadable_snapshot_gives_only_a_note() {
        let (b, _) = snapshots();
        let d = diff(&b, &[]);
        assert!(d.moved.is_empty() && d.watched.is_empty());
        assert!(d.note.unwrap().contains("could not be read after the run"));
        assert!(diff(&[], &b).note.unwrap().contains("could not be read before the run"));
    }

    #[test]
    fn render_shows_watched_then_moved_then_the_note_one_line_each() {
        let (b, a) = snapshots();
        let text = render(&diff(&b, &a));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..9],
            [
                "driver counters over the run (id type label: before -> after (delta)):",
                " watched (errors, back-pressure, loss, stalls):",
                "   19   0 Unblocked Publications: 2 -> 3 (+1)",
                "   26   0 Conductor max cycle time doing its work in ns: 90000 -> 2500000 (+2410000)",
                "   50  13 snd-bpe: 10 4 1003 aeron:udp?endpoint=localhost:40124: 0 -> 7 (+7)",
                "  the other 2 stayed at 0 (Errors, NAKs, back-pressure, liveness timeouts, ...)",
                " moved:",
                "   35   0 Bytes currently mapped: 1000 -> 500 (-500)",
                " positions: 3 stream position counters advanced with the traffic and are not listed \
                 (pub-lmt ×1, sub-pos ×1, pub-pos (concurrent) ×1); 2 stream position counters \
                 freed during the run as their streams closed, not listed (sub-pos ×1, rcv-pos ×1)",
            ]
        );
        assert!(lines[9].starts_with(" timestamps: "), "{text}");
        assert_eq!(lines.len(), 10, "{text}");
    }

    #[test]
    fn render_says_when_nothing_else_moved() {
        let before = [c(15, 0, ERRORS, 0)];
        let text = render(&diff(&before, &before));
        assert_eq!(
            text,
            "driver counters over the run (id type label: before -> after (delta)):\n \
             watched (errors, back-pressure, loss, stalls):\n  \
             the other 1 stayed at 0 (Errors, NAKs, back-pressure, liveness timeouts, ...)\n \
             moved: nothing else\n"
        );
    }

    #[test]
    fn the_result_round_trips_through_json() {
        let (b, a) = snapshots();
        let d = diff(&b, &a);
        let back: DriverCounters = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }
}
