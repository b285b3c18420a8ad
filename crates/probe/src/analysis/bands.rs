//! Every band of the distribution attributed to causes, not only the slowest samples.
//!
//! # Guarantees
//! - Bands are p50–p90, p90–p99, p99–p99.9 and p99.9–max of the latency from the intended send
//!   time: a message is in a band when its latency is above the lower edge and at most the
//!   upper one.
//! - The samples are the run's stratified sample ([`crate::measure::bands`]): each kept sample
//!   stands for `seen / kept` messages of its octave, so counts and shares are estimates for the
//!   whole band, from every kept sample that falls in it.
//! - A message's *excess* is its latency minus p50 (what the typical message took). Each episode
//!   overlapping its window `[intended send, receive]` (an off-CPU episode and who took the CPU,
//!   a stall, a timed page fault, the probe's own counter read, a hiccup) covers part of the
//!   excess: its overlap, at most the excess. Episodes of one cause are summed; when the causes
//!   together cover more than the excess (they overlap each other) they are scaled down to it.
//!   A cause's share of a band is what it covered over the band's total excess; the rest is
//!   `unexplained`.
//! - Causes are told apart by what they are, which hot thread they delayed and, for a
//!   preemption, who took the CPU (our threads by thread, other processes by command name).

use crate::analysis::lineup::Hit;
use crate::analysis::lineup::Lineup;
use crate::analysis::lineup::MATERIAL;
use crate::model::Band;
use crate::model::BandCause;
use crate::model::Cause;
use crate::model::Explain;
use crate::model::Octave;
use crate::model::Role;
use crate::model::SlowSample;
use std::collections::BTreeMap;

/// Who took the CPU in a preemption, as the bands group it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Nobody,
    /// One of our threads (or the idle task), by thread id.
    Ours(i32),
    /// Another process, by command name.
    Foreign([u8; 16]),
}

/// A cause within a band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Id {
    key: Cause,
    tid: i32,
    who: Who,
}

/// Attributes the bands of a run (`edges`: p50, p90, p99, p99.9, max).
#[must_use]
pub(crate) fn bands(lineup: &Lineup<'_>, sampled: &[Octave], edges: [u64; 5]) -> Vec<Band> {
    let mut keys = Keys::new(lineup);
    let mut per = Vec::new();
    let mut out = Vec::with_capacity(4);
    for (i, which) in Explain::ALL.iter().enumerate() {
        let (lo, hi) = (edges[i], edges[i + 1]);
        let mut band = Tally::default();
        for oct in sampled.iter().filter(|o| !o.samples.is_empty()) {
            let weight = oct.seen as f64 / oct.samples.len() as f64;
            for s in oct.samples.iter().filter(|s| s.latency_ns > lo && s.latency_ns <= hi) {
                band.add(&mut keys, s, weight, edges[0], &mut per);
            }
        }
        out.push(band.into_band(&keys, which, lo, hi));
    }
    out
}

/// How the hits of a sample are keyed into causes.
struct Keys<'l, 'a> {
    lineup: &'l Lineup<'a>,
    /// With `--delivery channel`, the consumer: the hand-off is one cause, the hand-off
    /// thread's yields and sleeps between polls (its backoff idle strategy) and the consumer's
    /// yields and futex wait in the channel's receive until it is woken are all its cost.
    consumer: Option<i32>,
    /// The first pid seen of each foreign command name (to name it).
    first_pid: BTreeMap<[u8; 16], i32>,
}

impl<'l, 'a> Keys<'l, 'a> {
    fn new(lineup: &'l Lineup<'a>) -> Self {
        let consumer = lineup
            .hot
            .iter()
            .find(|t| t.role == Role::Consumer)
            .filter(|_| lineup.ctx.delivery_channel)
            .map(|t| t.tid);
        Keys {
            lineup,
            consumer,
            first_pid: BTreeMap::new(),
        }
    }

    fn id(&mut self, h: &Hit) -> Id {
        let who = match h.who {
            None => Who::Nobody,
            Some((pid, _)) if self.lineup.is_ours(pid) => Who::Ours(pid),
            Some((pid, comm)) => {
                self.first_pid.entry(comm).or_insert(pid);
                Who::Foreign(comm)
            }
        };
        let handoff = |tid: i32| self.lineup.hot.iter().any(|t| t.tid == tid && t.role == Role::Handoff);
        match self.consumer {
            Some(c)
                if (h.yielded || matches!(h.key, Cause::Futex | Cause::Blocked)) && (h.tid == c || handoff(h.tid)) =>
            {
                Id {
                    key: Cause::Futex,
                    tid: c,
                    who: Who::Nobody,
                }
            }
            _ => Id {
                key: h.key,
                tid: h.tid,
                who,
            },
        }
    }
}

/// What a cause covered in a band: excess (ns, weighted), messages it covered materially, and
/// how much of the excess was yields (words a cause mostly of yields as such).
#[derive(Debug, Default, Clone, Copy)]
struct Covered {
    ns: f64,
    messages: f64,
    yielded: f64,
}

/// One band's samples as they are attributed.
#[derive(Debug, Default)]
struct Tally {
    n: f64,
    analysed: u64,
    excess_total: f64,
    by: BTreeMap<Id, Covered>,
}

impl Tally {
    /// Attributes one kept sample standing for `weight` messages; `per` is scratch (a
    /// sample's overlap and yielded ns per cause).
    fn add(&mut self, keys: &mut Keys<'_, '_>, s: &SlowSample, weight: f64, p50: u64, per: &mut Vec<(Id, u64, u64)>) {
        self.analysed += 1;
        self.n += weight;
        let excess = s.latency_ns.saturating_sub(p50);
        if excess == 0 {
            return;
        }
        self.excess_total += weight * excess as f64;
        per.clear();
        // Overlaps under 1% of the excess cannot change a share that is reported to 1%;
        // skipping them keeps a backlogged run (long windows, many episodes) cheap.
        for h in keys.lineup.hits(s, false, &|o| o.saturating_mul(100) >= excess) {
            let id = keys.id(&h);
            let yielded = if h.yielded { h.overlap } else { 0 };
            match per.iter_mut().find(|(k, _, _)| *k == id) {
                Some((_, o, y)) => (*o, *y) = (*o + h.overlap, *y + yielded),
                None => per.push((id, h.overlap, yielded)),
            }
        }
        let covered: u64 = per.iter().map(|(_, o, _)| (*o).min(excess)).sum();
        let scale = if covered > excess {
            excess as f64 / covered as f64
        } else {
            1.0
        };
        for (id, o, y) in per.iter() {
            let e = self.by.entry(*id).or_default();
            let part = weight * (*o).min(excess) as f64 * scale;
            e.ns += part;
            e.yielded += part * (*y).min(*o) as f64 / (*o).max(1) as f64;
            if o.saturating_mul(MATERIAL) >= excess {
                e.messages += weight;
            }
        }
    }

    fn into_band(self, keys: &Keys<'_, '_>, which: &Explain, lo: u64, hi: u64) -> Band {
        let excess_total = self.excess_total;
        let mut causes: Vec<BandCause> = self
            .by
            .into_iter()
            .filter(|(_, c)| c.ns > 0.0)
            .map(|(id, c)| band_cause(keys, id, c, excess_total))
            .collect();
        causes.sort_by(|a, b| b.share.total_cmp(&a.share));
        let explained: f64 = causes.iter().map(|c| c.share).sum();
        let n = self.n;
        Band {
            band: which.band().to_owned(),
            from_ns: lo,
            to_ns: hi,
            samples: n.round() as u64,
            analysed: self.analysed,
            mean_excess_ns: if n > 0.0 { (excess_total / n).round() as u64 } else { 0 },
            causes,
            unexplained: if excess_total > 0.0 {
                (1.0 - explained).max(0.0)
            } else {
                0.0
            },
        }
    }
}

/// A cause of a band, in words: a cause mostly of yields says so, the channel hand-off is named
/// as one.
fn band_cause(keys: &Keys<'_, '_>, id: Id, c: Covered, excess_total: f64) -> BandCause {
    let mut b = cause(
        keys.lineup,
        id,
        c.ns / excess_total.max(1.0),
        c.messages,
        &keys.first_pid,
    );
    if c.yielded * 2.0 > c.ns && b.by.is_some() {
        // Mostly yields: the thread gave its CPU away (a channel's receive, a yielding
        // idle strategy); keyed by who ran, whose the core was either way.
        b.words = format!(
            "{} gave its CPU to {} in sched_yield",
            b.thread,
            b.by.as_deref().unwrap_or("")
        );
    }
    if Some(id.tid) == keys.consumer && id.key == Cause::Futex {
        b.words = format!(
            "the channel hand-off ({} yielding, then blocked on a futex until aeron-handoff woke it, and \
             aeron-handoff's yields and sleeps between polls)",
            b.thread
        );
    }
    b
}

fn cause(lineup: &Lineup<'_>, id: Id, share: f64, messages: f64, first_pid: &BTreeMap<[u8; 16], i32>) -> BandCause {
    let thread = lineup
        .known
        .iter()
        .find(|t| t.tid == id.tid && id.tid != 0)
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let by = match id.who {
        Who::Nobody => None,
        Who::Ours(pid) => Some(lineup.name_of(pid, "").0),
        Who::Foreign(comm) => {
            let pid = first_pid.get(&comm).copied().unwrap_or(0);
            let end = comm.iter().position(|b| *b == 0).unwrap_or(comm.len());
            Some(lineup.name_of(pid, &String::from_utf8_lossy(&comm[..end])).0)
        }
    };
    let who = by.clone().unwrap_or_default();
    let words = id.key.band_words(&thread, &who);
    BandCause {
        cause: id.key,
        owner: id.key.owner(),
        thread,
        by,
        share,
        messages: messages.round() as u64,
        words,
    }
}
