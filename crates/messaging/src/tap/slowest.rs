//! The slowest messages of each interval, per source: their latency and when they were
//! received, so a tool can line them up at microsecond scale with what the recording thread
//! went through (`latency-probe attach`).
//!
//! - On the recording thread, a [`Slowest`] is a buffer of fixed size ([`SLOWEST_ROOM`] times
//!   the values it keeps), allocated with its source, and a threshold: a value enters when it
//!   is at or above the threshold (one compare per message), and the time it is tied to is
//!   asked for only then (a subscription gives its poll's clock read; a
//!   [`FigureRecorder`](super::FigureRecorder) reads the clock, for a value that enters). Once
//!   the buffer has filled, a selection keeps the slowest and raises the threshold to just
//!   above the fastest of them. A value that enters costs a store, and a selection over the
//!   buffer once every `SLOWEST_ROOM - 1` times the number kept that enter: a latency that
//!   rises message after message (a consumer falling behind), where each value enters, costs
//!   a few ns a message rather than a heap's sift through its levels for each (measured in
//!   `docs/results/2026-11-27-tap-slowest-buffer.md`).
//! - The writer appends one JSON line per source and interval to [`SLOWEST_FILE`] (format 1:
//!   `figure`, `tag`, `tid`, `end_ns` on the tap's clock, `messages`, and `slowest` as
//!   `[received_ns, latency_ns]` pairs by receive time); past [`SLOWEST_FILE_MAX`] bytes it
//!   starts again and keeps the previous one as `slowest.1.jsonl`.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::record::{Counts, Source};
use crate::error::TapError;

/// The file the slowest messages go to, in the tap's directory.
pub const SLOWEST_FILE: &str = "slowest.jsonl";
/// Its previous part, once it grew past [`SLOWEST_FILE_MAX`].
pub const SLOWEST_FILE_OLD: &str = "slowest.1.jsonl";
/// The size at which [`SLOWEST_FILE`] starts again (the two parts hold at most twice this).
pub const SLOWEST_FILE_MAX: u64 = 32 << 20;
/// How many of an interval's slowest messages each source keeps by default.
pub const SLOWEST_DEFAULT: usize = 128;
/// The most a source may keep ([`TapBuilder::slowest`](super::TapBuilder::slowest)).
pub const SLOWEST_MAX: usize = 4096;

/// One slow message: its latency and the time it is tied to (its receive time; for a
/// recorder's value, when it was recorded), on the tap's clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Slow {
    pub(crate) latency_ns: u64,
    pub(crate) at_ns: i64,
}

/// The buffer of a [`Slowest`] holds this many times the values it keeps: a selection over it
/// runs once every `SLOWEST_ROOM - 1` times that many values entering.
const SLOWEST_ROOM: usize = 4;

/// The slowest values of one interval: a buffer with a threshold (see the module's doc).
#[derive(Debug, Clone)]
pub(crate) struct Slowest {
    /// `SLOWEST_ROOM * keep` values, the first `len` of them held.
    buf: Box<[Slow]>,
    len: usize,
    /// How many it keeps.
    keep: usize,
    /// A value enters at or above it: 0 until `keep` values came, then just above the fastest
    /// of the slowest `keep` so far.
    enter: u64,
}

impl Slowest {
    /// Room for `cap` values (0: keeps none), allocated now.
    pub(crate) fn new(cap: usize) -> Slowest {
        let keep = cap.min(SLOWEST_MAX);
        let mut buf = vec![Slow::default(); keep * SLOWEST_ROOM].into_boxed_slice();
        // Mapped now, not at the first value that enters each page (on the recording thread).
        super::fault_in(&mut buf, Slow::default());
        Slowest {
            buf,
            len: 0,
            keep,
            enter: if keep == 0 { u64::MAX } else { 0 },
        }
    }

    /// Keeps `latency_ns` if it may be among the slowest so far; `at` is asked only then.
    #[inline(always)]
    pub(crate) fn offer(&mut self, latency_ns: u64, at: impl FnOnce() -> i64) {
        if latency_ns >= self.enter && self.keep > 0 {
            self.admit(Slow {
                latency_ns,
                at_ns: at(),
            });
        }
    }

    /// Out of line: the compare in [`offer`](Self::offer) is all most messages pay.
    #[inline(never)]
    fn admit(&mut self, s: Slow) {
        if self.len == self.buf.len() {
            self.select();
            if s.latency_ns < self.enter {
                return;
            }
        }
        self.buf[self.len] = s;
        self.len += 1;
        if self.len == self.keep && self.enter == 0 {
            self.first_threshold();
        }
    }

    /// The first `keep` values came: the next must be above the fastest of them.
    #[cold]
    #[inline(never)]
    fn first_threshold(&mut self) {
        let fastest = self.buf[..self.len].iter().map(|s| s.latency_ns).min().unwrap_or(0);
        self.enter = fastest.saturating_add(1);
    }

    /// Keeps the slowest `keep` of what the buffer holds (in place, no allocation) and raises
    /// the threshold above the fastest of them.
    #[cold]
    #[inline(never)]
    fn select(&mut self) {
        if self.len <= self.keep {
            return;
        }
        let first = self.len - self.keep;
        let held = &mut self.buf[..self.len];
        // Index `first` gets the value it would have sorted: those after it are the slowest
        // `keep`, and it is the fastest of them.
        held.select_nth_unstable_by_key(first, |s| s.latency_ns);
        self.enter = self.enter.max(held[first].latency_ns.saturating_add(1));
        held.copy_within(first.., 0);
        self.len = self.keep;
    }

    /// Moves the slowest it holds to `to` and empties it (on the writer's thread).
    pub(crate) fn drain_into(&mut self, to: &mut Vec<Slow>) {
        self.select();
        to.extend_from_slice(&self.buf[..self.len]);
        self.len = 0;
        if self.keep > 0 {
            self.enter = 0;
        }
    }
}

/// Keeps the `cap` slowest of `all` (several drains of one source), ordered by time.
pub(crate) fn keep_slowest(all: &mut Vec<Slow>, cap: usize) {
    if all.len() > cap {
        all.sort_unstable_by_key(|s| std::cmp::Reverse(s.latency_ns));
        all.truncate(cap);
    }
    all.sort_unstable_by_key(|s| s.at_ns);
}

/// One source's line for one interval.
#[derive(Clone, Copy)]
pub(crate) struct Line<'a> {
    pub(crate) figure: &'a str,
    pub(crate) tag: &'a str,
    pub(crate) tid: i32,
    pub(crate) end_ns: i64,
    pub(crate) messages: u64,
    pub(crate) slowest: &'a [Slow],
}

impl Line<'_> {
    /// The JSON line (names are checked by the registry, tags are ours: no escaping needed).
    fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "{{\"figure\":\"{}\",\"tag\":\"{}\",\"tid\":{},\"end_ns\":{},\"messages\":{},\"slowest\":[",
            self.figure, self.tag, self.tid, self.end_ns, self.messages
        );
        for (i, s) in self.slowest.iter().enumerate() {
            let _ = write!(out, "{}[{},{}]", if i == 0 { "" } else { "," }, s.at_ns, s.latency_ns);
        }
        out.push_str("]}\n");
    }
}

/// The writer's [`SLOWEST_FILE`], opened on first use.
pub(crate) struct SlowestFile {
    dir: PathBuf,
    out: Option<File>,
    bytes: u64,
}

impl SlowestFile {
    pub(crate) fn new(dir: &Path) -> SlowestFile {
        SlowestFile {
            dir: dir.to_path_buf(),
            out: None,
            bytes: 0,
        }
    }

    /// One interval: each source's slowest (at most `cap`, a source's two drains together) as
    /// one line, for the sources that counted a message (`names`: the figures' names, by index).
    pub(crate) fn append_interval(
        &mut self,
        names: &[String],
        sources: &[Arc<Source>],
        counts: &mut [Option<Counts>],
        cap: usize,
        end_ns: i64,
    ) -> Result<(), TapError> {
        if cap == 0 {
            return Ok(());
        }
        for c in counts.iter_mut().flatten() {
            keep_slowest(&mut c.slowest, cap);
        }
        let lines: Vec<Line<'_>> = sources
            .iter()
            .zip(counts.iter())
            .filter_map(|(s, c)| Some((s, c.as_ref().filter(|c| c.messages() > 0)?)))
            .map(|(s, c)| Line {
                figure: &names[s.figure],
                tag: &s.tag,
                tid: s.tid.load(Ordering::Relaxed),
                end_ns,
                messages: c.messages(),
                slowest: &c.slowest,
            })
            .collect();
        self.append(&lines)
    }

    /// Appends one interval's lines in one write (a reader sees whole lines or none of them),
    /// first starting the file again when it grew past [`SLOWEST_FILE_MAX`].
    pub(crate) fn append(&mut self, lines: &[Line<'_>]) -> Result<(), TapError> {
        if lines.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(SLOWEST_FILE);
        let err = |source| TapError::Write {
            path: path.clone(),
            source,
        };
        // Removed while open (see `writer::removed`): a new file, the loss said once.
        let gone = self.out.take_if(|f| super::export::removed(f)).is_some();
        if self.out.is_some() && self.bytes >= SLOWEST_FILE_MAX {
            self.out = None;
            std::fs::rename(&path, self.dir.join(SLOWEST_FILE_OLD)).map_err(err)?;
        }
        if self.out.is_none() {
            let f = OpenOptions::new().create(true).append(true).open(&path).map_err(err)?;
            self.bytes = f.metadata().map_err(err)?.len();
            self.out = Some(f);
        }
        let mut text = String::new();
        for l in lines {
            l.write(&mut text);
        }
        let out = self.out.as_mut().expect("opened above");
        super::export::append_whole(out, &mut self.bytes, text.as_bytes()).map_err(err)?;
        if gone {
            return Err(TapError::Removed { path });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new buffer's pages are mapped when it is made: values entering it afterwards take no
    /// page fault on the recording thread. Without `fault_in` a release build took 48 here
    /// (the fill of a zero default becomes a zeroed allocation, untouched); a debug build
    /// writes each element, so `make test` runs this test in a release build too. On a thread
    /// of its own, so that nothing else it runs faults in between.
    #[test]
    fn values_entering_a_new_buffer_take_no_page_fault() {
        std::thread::spawn(|| {
            let mut slowest = Slowest::new(SLOWEST_MAX);
            // Rising: each enters, filling three quarters of the buffer without a selection.
            let before = crate::prefault::thread_minor_faults();
            for v in 0..(3 * SLOWEST_MAX) as u64 {
                slowest.offer(v, || 0);
            }
            let faults = crate::prefault::thread_minor_faults() - before;
            // A stack page first used by a call above may still fault.
            assert!(faults <= 2, "{faults} page faults");
            assert_eq!(slowest.len, 3 * SLOWEST_MAX);
        })
        .join()
        .expect("the recording thread");
    }

    /// Kept: exactly the slowest `cap` of any sequence (random, rising, falling, all equal,
    /// few distinct values), each with the time it was offered at; drained means empty, and
    /// the next interval keeps its own slowest.
    #[test]
    fn it_keeps_exactly_the_slowest() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut random = Vec::new();
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            random.push(x % 10_000);
        }
        let sequences: [(&str, Vec<u64>); 7] = [
            ("random", random),
            ("rising", (0..5_000).map(|i| 1_000 + i * 7).collect()),
            ("falling", (0..5_000).map(|i| 100_000 - i * 7).collect()),
            ("equal", vec![42; 5_000]),
            ("few values", (0..5_000).map(|i| [3, 9, 3, 1, 9][i % 5]).collect()),
            // Ties just above the first values: the first threshold lets them in.
            (
                "one low, then ties",
                (0..5_000).map(|i| if i % 2_500 == 0 { 5 } else { 6 }).collect(),
            ),
            (
                "the highest value",
                (0..5_000).map(|i| if i % 3 == 0 { u64::MAX } else { i }).collect(),
            ),
        ];
        for (name, values) in &sequences {
            for cap in [0, 1, 2, 7, 128] {
                let mut s = Slowest::new(cap);
                // Two intervals: the second keeps its own.
                for half in values.chunks(values.len() / 2) {
                    for (i, &v) in half.iter().enumerate() {
                        s.offer(v, || i as i64 * 1_000 + (v % 1_000) as i64);
                    }
                    let mut got = Vec::new();
                    s.drain_into(&mut got);
                    let mut kept: Vec<u64> = got.iter().map(|s| s.latency_ns).collect();
                    kept.sort_unstable();
                    let mut all = half.to_vec();
                    all.sort_unstable();
                    assert_eq!(kept, all[all.len() - cap..], "{name}, cap {cap}");
                    // Each kept value comes with the time it was offered at.
                    for k in &got {
                        let i = (k.at_ns / 1_000) as usize;
                        assert_eq!(
                            (half[i], k.at_ns % 1_000),
                            (k.latency_ns, (k.latency_ns % 1_000) as i64)
                        );
                    }
                    let mut again = Vec::new();
                    s.drain_into(&mut again);
                    assert!(again.is_empty(), "drained means empty");
                }
            }
        }
    }

    /// The time is asked for only for a value that enters.
    #[test]
    fn the_time_is_read_only_for_a_value_that_enters() {
        let mut s = Slowest::new(2);
        let mut asked = 0;
        for v in [5, 6, 1, 2, 3, 7] {
            s.offer(v, || {
                asked += 1;
                0
            });
        }
        assert_eq!(asked, 3, "5 and 6 fill it, 7 enters; 1, 2, 3 do not");
        // Past a selection a value enters only above the fastest it kept.
        let mut s = Slowest::new(2);
        for v in 1..=8 {
            s.offer(v, || 0); // 1, 2 fill it; 3..=8 enter and fill the buffer
        }
        let mut asked = 0;
        for v in [9, 1, 2, 3, 4, 5, 6, 7, 8, 10] {
            s.offer(v, || {
                asked += 1;
                0
            });
        }
        assert_eq!(
            asked, 3,
            "9 selects (keeping 7 and 8) and enters; then 8 and 10, above 7"
        );
    }

    #[test]
    fn lines_are_json_and_the_file_starts_again_past_its_size() {
        let dir = std::env::temp_dir().join(format!("tap-slowest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut all = vec![
            Slow {
                latency_ns: 9,
                at_ns: 30,
            },
            Slow {
                latency_ns: 3,
                at_ns: 10,
            },
            Slow {
                latency_ns: 7,
                at_ns: 20,
            },
        ];
        keep_slowest(&mut all, 2);
        assert_eq!(
            all,
            [
                Slow {
                    latency_ns: 7,
                    at_ns: 20
                },
                Slow {
                    latency_ns: 9,
                    at_ns: 30
                }
            ]
        );
        let line = Line {
            figure: "hop",
            tag: "session-1",
            tid: 42,
            end_ns: 99,
            messages: 3,
            slowest: &all,
        };
        let mut f = SlowestFile::new(&dir);
        f.append(&[line]).unwrap();
        let text = std::fs::read_to_string(dir.join(SLOWEST_FILE)).unwrap();
        assert_eq!(
            text,
            "{\"figure\":\"hop\",\"tag\":\"session-1\",\"tid\":42,\"end_ns\":99,\"messages\":3,\"slowest\":[[20,7],[30,9]]}\n"
        );
        f.bytes = SLOWEST_FILE_MAX;
        f.append(&[Line { slowest: &[], ..line }]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join(SLOWEST_FILE_OLD)).unwrap(), text);
        assert!(std::fs::read_to_string(dir.join(SLOWEST_FILE))
            .unwrap()
            .ends_with("\"slowest\":[]}\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
