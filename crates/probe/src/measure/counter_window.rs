//! When the driver's counters of a run are compared: from the moment both ends connected, not
//! from the run's start.
//!
//! Setting a run up makes its log buffers: the driver's conductor creates and maps each term
//! file (192 MiB for three 64 MiB terms), and in the embedded driver's `SHARED` mode its sender
//! and receiver wait meanwhile. On the 2-vCPU VM that took one duty cycle 849 ms, so a diff
//! from the run's start said "Conductor max cycle time: 8 ms -> 849 ms" and "work cycle
//! exceeded threshold +1" under "stalls", of a run whose messages never met that cycle.
//!
//! A [`CounterWindow`] reads every counter at the start, then every [`SAMPLE_EVERY`] until each
//! stream of the run has a new subscriber position counter (`sub-pos`, type 4): the driver
//! makes one when a subscriber's image joins, after the stream's logs exist (the publication's
//! for IPC, and the receiver's image for UDP). That reading is the "before" of the run's diff;
//! what moved between the start and it is the report's setup
//! ([`DriverCounters::setup`](crate::model::DriverCounters::setup)).
//!
//! # Guarantees
//! - The reading thread sleeps between readings, reads `cnc.dat` without joining the driver,
//!   and stops at the connect: during the measurement it does nothing.
//! - The connect is seen at most [`SAMPLE_EVERY`] late; the publisher's warm-up (10,000
//!   messages by default) starts at the connect, so the late part falls in the warm-up unless
//!   it is shorter than that.
//! - When the connect is never seen (the run failed, or the counters could not be read), the
//!   run's diff starts at the run's start and the report says so ([`DriverCounters::setup`] is
//!   `None`).
//!
//! ```
//! use aeron_latency::messaging::DriverCounter;
//! use latency_probe::measure::counter_window::connected;
//!
//! let c = |id, type_id, label: &str| DriverCounter { id, type_id, label: label.into(), value: 0 };
//! let start = [c(15, 0, "Errors")];
//! let now = [c(15, 0, "Errors"), c(47, 1, "pub-lmt: 8 1 1001 aeron:ipc"), c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0")];
//! assert!(connected(&start, &now, &[1001]));
//! assert!(!connected(&start, &now, &[1001, 1002]));
//! ```

use crate::measure::counters::{diff, POSITION_TYPE_IDS};
use crate::model::DriverCounters;
use aeron_latency::messaging::{read_driver_counters, DriverCounter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the counters are read until the connect.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// Aeron's type id of a subscriber's position (`AERON_COUNTER_SUBSCRIPTION_POSITION_TYPE_ID`),
/// labelled `sub-pos: <registration id> <session id> <stream id> <channel> @<join position>`.
const SUB_POS_TYPE_ID: i32 = 4;
const _: () = assert!(POSITION_TYPE_IDS[3].0 == SUB_POS_TYPE_ID);

/// The stream id of a `sub-pos` label, its third number.
fn sub_pos_stream(label: &str) -> Option<i32> {
    label.strip_prefix("sub-pos:")?.split_whitespace().nth(2)?.parse().ok()
}

/// Whether `now` holds, for each of `streams`, a `sub-pos` counter that `start` does not:
/// every stream of the run has a subscriber joined since the run started.
#[must_use]
pub fn connected(start: &[DriverCounter], now: &[DriverCounter], streams: &[i32]) -> bool {
    let new_sub_pos = |stream: i32| {
        now.iter().any(|c| {
            c.type_id == SUB_POS_TYPE_ID
                && sub_pos_stream(&c.label) == Some(stream)
                && !start
                    .iter()
                    .any(|s| s.id == c.id && s.type_id == c.type_id && s.label == c.label)
        })
    };
    !streams.is_empty() && streams.iter().all(|s| new_sub_pos(*s))
}

/// The run's counters: from the connect when it was seen, else from `start`; with what moved
/// before the connect as the setup (see the module doc).
#[must_use]
pub fn compare(start: &[DriverCounter], at_connect: Option<&[DriverCounter]>, end: &[DriverCounter]) -> DriverCounters {
    match at_connect {
        Some(at) if !start.is_empty() => {
            let setup = diff(start, at);
            let mut run = diff(at, end);
            let moved = setup.watched.into_iter().filter(|d| d.delta != 0);
            run.setup = Some(moved.chain(setup.moved).collect());
            run
        }
        Some(at) => diff(at, end),
        None => diff(start, end),
    }
}

/// Reads the driver's counters at a run's start and at its connect (see the module doc).
#[derive(Debug)]
pub struct CounterWindow {
    start: Vec<DriverCounter>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Option<Vec<DriverCounter>>>>,
}

impl CounterWindow {
    /// Reads the counters of the driver at `dir` now, and starts the thread that waits for
    /// every one of `streams` to connect (none when the thread cannot start: the run is then
    /// compared from now).
    #[must_use]
    pub fn start(dir: PathBuf, streams: Vec<i32>) -> CounterWindow {
        let start = read_driver_counters(&dir).unwrap_or_default();
        let stop = Arc::new(AtomicBool::new(false));
        let (first, stopped) = (start.clone(), Arc::clone(&stop));
        let reader = std::thread::Builder::new()
            .name("counter-window".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(SAMPLE_EVERY);
                    let now = read_driver_counters(&dir).unwrap_or_default();
                    if connected(&first, &now, &streams) {
                        return Some(now);
                    }
                }
                None
            })
            .ok();
        CounterWindow { start, stop, reader }
    }

    /// Whether the reading thread still waits for the connect (`false` once it saw it, or
    /// when it could not start).
    #[must_use]
    pub fn waiting(&self) -> bool {
        self.reader.as_ref().is_some_and(|r| !r.is_finished())
    }

    /// The run's counters, with `end` read after it ([`compare`]).
    #[must_use]
    pub fn finish(mut self, end: &[DriverCounter]) -> DriverCounters {
        self.stop.store(true, Ordering::Relaxed);
        let at_connect = self.reader.take().and_then(|r| r.join().ok()).flatten();
        compare(&self.start, at_connect.as_deref(), end)
    }
}

impl Drop for CounterWindow {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::counters::test_counter as c;

    const CYCLE: &str = "Conductor max cycle time doing its work in ns: SHARED";
    const OVER: &str = "Conductor work cycle exceeded threshold count: threshold=100ms SHARED";

    #[test]
    fn the_stream_of_a_sub_pos_label_is_its_third_number() {
        assert_eq!(sub_pos_stream("sub-pos: 9 -1234 1001 aeron:ipc @0"), Some(1001));
        assert_eq!(sub_pos_stream("sub-pos: 9 1"), None);
        assert_eq!(sub_pos_stream("pub-lmt: 9 1 1001 aeron:ipc"), None);
    }

    #[test]
    fn a_stream_connects_with_a_new_sub_pos_not_with_one_that_was_there() {
        let old = c(40, 4, "sub-pos: 2 7 1001 aeron:ipc @0", 0);
        let start = [old.clone()];
        assert!(!connected(&start, &start, &[1001]), "another subscriber's, from before");
        let now = [old, c(48, 4, "sub-pos: 9 1 1001 aeron:ipc @0", 0)];
        assert!(connected(&start, &now, &[1001]));
        assert!(!connected(&start, &now, &[]), "no stream: never connected");
        let other_stream = [c(48, 4, "sub-pos: 9 1 1002 aeron:ipc @0", 0)];
        assert!(!connected(&start, &other_stream, &[1001]));
    }

    #[test]
    fn what_moved_before_the_connect_is_setup_and_left_out_of_the_run() {
        let start = [
            c(26, 0, CYCLE, 8_000_000),
            c(27, 0, OVER, 0),
            c(35, 0, "Bytes currently mapped", 49),
        ];
        let at = [
            c(26, 0, CYCLE, 849_000_000),
            c(27, 0, OVER, 1),
            c(35, 0, "Bytes currently mapped", 250),
        ];
        let end = [
            c(26, 0, CYCLE, 849_000_000),
            c(27, 0, OVER, 1),
            c(35, 0, "Bytes currently mapped", 250),
        ];
        let d = compare(&start, Some(&at), &end);
        assert!(d.watched.iter().all(|x| x.delta == 0), "{d:?}");
        assert!(d.moved.is_empty(), "{d:?}");
        let setup = d.setup.expect("setup");
        let ids: Vec<(i32, i64)> = setup.iter().map(|x| (x.id, x.delta)).collect();
        assert_eq!(ids, [(26, 841_000_000), (27, 1), (35, 201)]);
    }

    #[test]
    fn the_report_names_its_window_and_lists_the_setup_last() {
        let start = [c(26, 0, CYCLE, 8_000_000), c(27, 0, OVER, 0)];
        let at = [c(26, 0, CYCLE, 849_000_000), c(27, 0, OVER, 1)];
        let text = crate::render::counters::render(&compare(&start, Some(&at), &at));
        assert!(
            text.starts_with("driver counters from both ends' connect to the end of the run (id type"),
            "{text}"
        );
        assert!(
            text.ends_with(
                " setup (start to connect: making the logs; not counted above):\n   \
                 26   0 Conductor max cycle time doing its work in ns: SHARED: 8000000 -> 849000000 (+841000000)\n   \
                 27   0 Conductor work cycle exceeded threshold count: threshold=100ms SHARED: 0 -> 1 (+1)\n"
            ),
            "{text}"
        );
        let quiet = crate::render::counters::render(&compare(&at, Some(&at), &at));
        assert!(quiet.ends_with(" setup (start to connect, not counted above): nothing watched or listed moved\n"));
        // The setup's maxima, still there at the end, are not shown as the run's (+0).
        assert!(
            quiet.contains(
                "  unchanged during the run, at values set before it:\n   \
                 26   0 Conductor max cycle time doing its work in ns: SHARED: 849000000\n   \
                 27   0 Conductor work cycle exceeded threshold count: threshold=100ms SHARED: 1\n"
            ) && !quiet.contains("(+0)"),
            "{quiet}"
        );
        let old = crate::render::counters::render(&compare(&at, None, &at));
        assert!(
            old.starts_with("driver counters over the run (") && !old.contains("setup"),
            "{old}"
        );
    }

    #[test]
    fn without_a_connect_the_run_is_compared_from_its_start_and_has_no_setup() {
        let start = [c(27, 0, OVER, 0)];
        let end = [c(27, 0, OVER, 1)];
        let d = compare(&start, None, &end);
        assert_eq!(d.watched[0].delta, 1);
        assert_eq!(d.setup, None);
        let unread_start = compare(&[], Some(&start), &end);
        assert_eq!((unread_start.watched[0].delta, unread_start.setup), (1, None));
    }

    #[test]
    fn a_window_on_a_directory_without_a_driver_compares_what_it_has() {
        let dir = std::env::temp_dir().join(format!("counter-window-{}", std::process::id()));
        let w = CounterWindow::start(dir, vec![1001]);
        let d = w.finish(&[]);
        assert!(d.note.unwrap().contains("could not be read before or after the run"));
    }
}
