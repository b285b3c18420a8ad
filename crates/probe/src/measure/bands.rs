//! A latency-stratified sample of every measured message, kept by the hot thread in memory
//! allocated before the run, so that each band of the distribution (p50–p90, p90–p99,
//! p99–p99.9) can be attributed to causes after it, not only the slowest samples.
//!
//! # Guarantees
//! - Fixed memory: [`OCTAVES`] x [`KEPT_PER_OCTAVE`] samples, allocated and touched in
//!   [`BandSampler::new`]. [`BandSampler::offer`] never allocates, locks or makes a syscall.
//! - Per octave of latency (`[2^k, 2^(k+1))` ns) it counts every message and keeps a uniform
//!   random sample of at most [`KEPT_PER_OCTAVE`] of them (reservoir sampling, Vitter's
//!   algorithm R, with a xorshift generator). Rare octaves (the tail) are kept whole; a common
//!   one is sampled, and each kept sample stands for `seen / kept` messages of its octave.
//!   A band's share per cause is therefore an unbiased estimate from the kept samples that fall
//!   in it (all of its messages when its octaves are rare; when a band holds only part of a
//!   common octave, that part of the octave's 2,048).
//!
//! ```
//! use latency_probe::measure::bands::BandSampler;
//! use latency_probe::model::SlowSample;
//!
//! let mut b = BandSampler::new();
//! for i in 0..10_000_u64 {
//!     let latency_ns = 1_000 + i % 100;
//!     b.offer(SlowSample { latency_ns, seq: i, intended_ns: 0, sent_ns: 0, received_ns: latency_ns as i64 });
//! }
//! let octaves = b.into_octaves();
//! assert_eq!(octaves.iter().map(|o| o.seen).sum::<u64>(), 10_000);
//! assert!(octaves.iter().all(|o| o.samples.len() <= latency_probe::measure::bands::KEPT_PER_OCTAVE));
//! ```

use crate::model::Octave;
use crate::model::SlowSample;

/// Octaves of latency kept apart: 2^0 ns up to 2^40 ns (18 minutes); longer ones share the last.
pub const OCTAVES: usize = 41;

/// Samples kept per octave (41 x 2,048 x 40 bytes: 3.4 MB).
pub const KEPT_PER_OCTAVE: usize = 2_048;

/// The stratified sample (see the module's guarantees).
#[derive(Debug, Clone)]
pub struct BandSampler {
    slots: Vec<SlowSample>,
    seen: [u64; OCTAVES],
    rng: u64,
}

fn octave_of(latency_ns: u64) -> usize {
    ((63 - (latency_ns | 1).leading_zeros()) as usize).min(OCTAVES - 1)
}

impl Default for BandSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl BandSampler {
    /// Allocates and touches the whole sample before the run.
    #[must_use]
    pub fn new() -> BandSampler {
        let zero = SlowSample {
            latency_ns: 0,
            seq: 0,
            intended_ns: 0,
            sent_ns: 0,
            received_ns: 0,
        };
        let mut slots = Vec::with_capacity(OCTAVES * KEPT_PER_OCTAVE);
        crate::measure::histogram::pretouch(&mut slots);
        slots.resize(OCTAVES * KEPT_PER_OCTAVE, zero);
        BandSampler {
            slots,
            seen: [0; OCTAVES],
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Offers one measured message: O(1), no allocation.
    #[inline]
    pub fn offer(&mut self, s: SlowSample) {
        let o = octave_of(s.latency_ns);
        let seen = self.seen[o];
        self.seen[o] = seen + 1;
        let slot = if (seen as usize) < KEPT_PER_OCTAVE {
            seen as usize
        } else {
            // xorshift64, then a multiply to map it onto 0..=seen without a division.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let j = ((u128::from(self.rng) * u128::from(seen + 1)) >> 64) as usize;
            if j >= KEPT_PER_OCTAVE {
                return;
            }
            j
        };
        self.slots[o * KEPT_PER_OCTAVE + slot] = s;
    }

    /// The octaves that saw messages, each with its count and its kept samples.
    #[must_use]
    pub fn into_octaves(self) -> Vec<Octave> {
        (0..OCTAVES)
            .filter(|o| self.seen[*o] > 0)
            .map(|o| {
                let kept = (self.seen[o] as usize).min(KEPT_PER_OCTAVE);
                Octave {
                    octave: o as u32,
                    seen: self.seen[o],
                    samples: self.slots[o * KEPT_PER_OCTAVE..o * KEPT_PER_OCTAVE + kept].to_vec(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(latency_ns: u64, seq: u64) -> SlowSample {
        SlowSample {
            latency_ns,
            seq,
            intended_ns: seq as i64,
            sent_ns: seq as i64,
            received_ns: seq as i64 + latency_ns as i64,
        }
    }

    #[test]
    fn rare_octaves_are_kept_whole_and_counts_add_up() {
        let mut b = BandSampler::new();
        for i in 0..100_000 {
            b.offer(s(1_000 + i % 500, i));
        }
        for i in 0..300 {
            b.offer(s(300_000 + i, 100_000 + i));
        }
        let o = b.into_octaves();
        assert_eq!(o.iter().map(|o| o.seen).sum::<u64>(), 100_300);
        let tail = o.iter().find(|o| o.octave == 18).expect("the 262-524 µs octave");
        assert_eq!((tail.seen, tail.samples.len()), (300, 300));
        for oct in &o {
            assert!(oct.samples.len() <= KEPT_PER_OCTAVE);
            assert!(oct
                .samples
                .iter()
                .all(|x| octave_of(x.latency_ns) == oct.octave as usize));
        }
    }

    #[test]
    fn a_common_octave_is_sampled_uniformly_over_the_run() {
        let mut b = BandSampler::new();
        let n = 200_000_u64;
        for i in 0..n {
            b.offer(s(1_500, i));
        }
        let o = b.into_octaves();
        let kept = &o[0].samples;
        assert_eq!(kept.len(), KEPT_PER_OCTAVE);
        // Each half of the run holds about half of the kept samples (binomial: 5 sigma is ~113).
        let early = kept.iter().filter(|x| x.seq < n / 2).count() as i64;
        assert!((early - KEPT_PER_OCTAVE as i64 / 2).abs() < 120, "{early}");
        // No sample is kept twice.
        let mut seqs: Vec<u64> = kept.iter().map(|x| x.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), KEPT_PER_OCTAVE);
    }
}
