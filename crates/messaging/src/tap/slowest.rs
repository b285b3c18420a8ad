//! The slowest messages of each interval, per source: their latency and when they were
//! received, so a tool can line them up at microsecond scale with what the recording thread
//! went through (`latency-probe attach`).
//!
//! - On the recording thread, a [`Slowest`] is a min-heap of fixed size, allocated with its
//!   source: a value enters only when it is above the heap's fastest (one compare per message
//!   once the heap is full), and the time it is tied to is asked for only then (a subscription
//!   gives its poll's clock read; a [`FigureRecorder`](super::FigureRecorder) reads the clock,
//!   for the rare value that enters).
//! - The writer appends one JSON line per source and interval to [`SLOWEST_FILE`] (format 1:
//!   `figure`, `tag`, `tid`, `end_ns` on the tap's clock, `messages`, and `slowest` as
//!   `[received_ns, latency_ns]` pairs by receive time); past [`SLOWEST_FILE_MAX`] bytes it
//!   starts again and keeps the previous one as `slowest.1.jsonl`.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
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

/// The slowest values of one interval, a min-heap by latency (the fastest kept at the root).
#[derive(Debug, Clone)]
pub(crate) struct Slowest {
    heap: Box<[Slow]>,
    len: usize,
}

impl Slowest {
    /// Room for `cap` values (0: keeps none), allocated now.
    pub(crate) fn new(cap: usize) -> Slowest {
        Slowest {
            heap: vec![Slow::default(); cap.min(SLOWEST_MAX)].into_boxed_slice(),
            len: 0,
        }
    }

    /// Keeps `latency_ns` if it is among the slowest so far; `at` is asked only then.
    #[inline(always)]
    pub(crate) fn offer(&mut self, latency_ns: u64, at: impl FnOnce() -> i64) {
        if self.len < self.heap.len() {
            self.push(Slow {
                latency_ns,
                at_ns: at(),
            });
        } else if self.len > 0 && latency_ns > self.heap[0].latency_ns {
            self.replace_root(Slow {
                latency_ns,
                at_ns: at(),
            });
        }
    }

    #[cold]
    fn push(&mut self, s: Slow) {
        let mut i = self.len;
        self.heap[i] = s;
        self.len += 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].latency_ns <= self.heap[i].latency_ns {
                break;
            }
            self.heap.swap(parent, i);
            i = parent;
        }
    }

    #[cold]
    fn replace_root(&mut self, s: Slow) {
        self.heap[0] = s;
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.len && self.heap[l].latency_ns < self.heap[least].latency_ns {
                least = l;
            }
            if r < self.len && self.heap[r].latency_ns < self.heap[least].latency_ns {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// Moves what it holds to `to` and empties it (on the writer's thread).
    pub(crate) fn drain_into(&mut self, to: &mut Vec<Slow>) {
        to.extend_from_slice(&self.heap[..self.len]);
        self.len = 0;
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
        out.write_all(text.as_bytes()).map_err(err)?;
        self.bytes += text.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap keeps exactly the slowest `cap` of any sequence, ties and all.
    #[test]
    fn the_heap_keeps_the_slowest() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for cap in [0, 1, 2, 7, 128] {
            let mut s = Slowest::new(cap);
            let mut all = Vec::new();
            for i in 0..5_000_i64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = x % 10_000;
                all.push(v);
                s.offer(v, || i);
            }
            let mut got = Vec::new();
            s.drain_into(&mut got);
            let mut kept: Vec<u64> = got.iter().map(|s| s.latency_ns).collect();
            kept.sort_unstable();
            all.sort_unstable();
            assert_eq!(kept, all[all.len() - cap..], "cap {cap}");
            // Each kept value comes with the time it was offered at.
            assert!(got.iter().all(|s| all.contains(&s.latency_ns) && s.at_ns >= 0));
            let mut again = Vec::new();
            s.drain_into(&mut again);
            assert!(again.is_empty(), "drained means empty");
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
