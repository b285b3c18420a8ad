//! The writer's side of one interval: taking every source's counts, in the order the handover
//! protocol needs ([`super::handover`]).
//!
//! 1. Take what answers since the last interval left in the inactive slots (a polling thread
//!    that answered after the writer stopped waiting): the writer never asks with a slot
//!    untaken.
//! 2. Ask every live subscription recorder for its intervals and wait a little for the
//!    answers (for those asked now; at stop, for every one).
//! 3. Read the sources again (a poll may have made sessions meanwhile, recording into the slot
//!    it just left) and take once more: the answered recorders' inactive slots, the retired
//!    sources' two slots, and a swap of every [`FigureRecorder`](super::FigureRecorder)'s
//!    phaser. At stop, steps 1-2 run twice, so recorders that appeared during the first wait
//!    are asked too.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::handover::{ask_all, Handover};
use super::record::{Counts, Intervals, Source};
use super::tally::Tally;

/// One interval, taken.
pub(crate) struct Collected {
    /// The sources when the last pass ran (the registry's list: earlier ones first).
    pub(crate) sources: Vec<Arc<Source>>,
    /// Per source: what it held, if anything.
    pub(crate) counts: Vec<Option<Counts>>,
    /// Per source: it had retired when the last pass took it (both slots are taken: the
    /// writer lets it go).
    pub(crate) retired: Vec<bool>,
    /// Live subscription recorders whose ask was still unanswered at the last pass: their
    /// counts since their last answer stay where they are.
    pub(crate) unanswered: u64,
    /// How long the writer waited for answers.
    pub(crate) waited: Duration,
}

/// The longest the writer waits for the polling threads to hand their intervals over: a
/// quarter of the interval, at most 50 ms (a thread that polls answers within one poll).
pub(crate) fn handover_wait(interval: Duration) -> Duration {
    (interval / 4).min(Duration::from_millis(50))
}

/// Takes one interval from the sources `snapshot` lists (the registry's list, which only
/// grows at its end until the writer prunes it after the interval). A source's counts come
/// from `spare` (emptied histograms of earlier intervals) while it has some: a histogram of
/// the default range is ~200 KiB, which a fresh allocation would fault in page by page on
/// every interval.
pub(crate) fn collect(
    snapshot: impl Fn() -> Vec<Arc<Source>>,
    interval: Duration,
    stopping: bool,
    highest_ns: u64,
    spare: &mut Vec<Counts>,
) -> Collected {
    let wait = handover_wait(interval);
    let mut sources = snapshot();
    let mut counts: Vec<Option<Counts>> = Vec::new();
    let mut waited = Duration::ZERO;
    for _ in 0..if stopping { 2 } else { 1 } {
        let pass = take_pass(&sources, &mut counts, highest_ns, spare, false);
        let live: Vec<(&Handover, u64)> = pass
            .answers
            .iter()
            .filter(|a| a.live)
            .map(|a| (a.handover, a.answered))
            .collect();
        waited += ask_all(&live, wait, stopping);
        let now = snapshot();
        debug_assert!(
            sources.iter().zip(&now).all(|(a, b)| Arc::ptr_eq(a, b)),
            "the registry grew at its end"
        );
        sources = now;
    }
    let pass = take_pass(&sources, &mut counts, highest_ns, spare, true);
    let unanswered = pass.answers.iter().filter(|a| a.live && a.inactive.is_none()).count() as u64;
    Collected {
        retired: pass.retired,
        sources,
        counts,
        unanswered,
        waited,
    }
}

/// A subscription recorder as one pass saw it.
struct Answer<'a> {
    handover: &'a Handover,
    /// Its answers (read once per pass), and the inactive slot they make takeable.
    answered: u64,
    inactive: Option<usize>,
    /// It has a source that had not retired.
    live: bool,
}

/// What one pass saw.
struct Pass<'a> {
    /// Per source: it had retired when it was taken.
    retired: Vec<bool>,
    /// Per subscription recorder, once each.
    answers: Vec<Answer<'a>>,
}

/// One pass over `sources`, adding what each holds into `counts` (same order): a subscription
/// source's inactive slot when its recorder answered (the answer read once per recorder and
/// pass), both slots once it retired; with `last`, a swap of each phaser too.
fn take_pass<'a>(
    sources: &'a [Arc<Source>],
    counts: &mut Vec<Option<Counts>>,
    highest_ns: u64,
    spare: &mut Vec<Counts>,
    last: bool,
) -> Pass<'a> {
    counts.resize_with(sources.len(), || None);
    let mut answers: Vec<Answer<'a>> = Vec::new();
    let mut retired = Vec::with_capacity(sources.len());
    for (s, c) in sources.iter().zip(counts.iter_mut()) {
        let gone = s.retired.load(Ordering::Acquire);
        retired.push(gone);
        let take = |t: &mut Tally| {
            if !t.is_empty() {
                let fresh = || spare.pop().unwrap_or_else(|| Counts::new(highest_ns));
                t.drain_into(c.get_or_insert_with(fresh));
            }
        };
        match &s.intervals {
            // SAFETY: the writer thread is the only reader of every phaser.
            Intervals::Phased(p) if last => unsafe { p.swap(take) },
            Intervals::Phased(_) => {}
            Intervals::HandedOver(slots, h) => {
                let at = match answers.iter().position(|a| std::ptr::eq(a.handover, &**h)) {
                    Some(at) => at,
                    None => {
                        let (inactive, answered) = h.seen();
                        answers.push(Answer {
                            handover: h,
                            answered,
                            inactive,
                            live: false,
                        });
                        answers.len() - 1
                    }
                };
                let a = &mut answers[at];
                a.live |= !gone;
                // SAFETY: the writer thread is the only taker, and it read `inactive` in this
                // pass, after its last ask (asks happen between passes only).
                unsafe { slots.take(a.inactive, gone, take) };
            }
        }
    }
    Pass { retired, answers }
}
