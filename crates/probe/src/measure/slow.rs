//! The slowest samples of a run, kept in a fixed-size heap the hot thread fills without
//! allocating.

use crate::model::SlowSample;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The slowest `capacity` samples, kept in a fixed-size min-heap (no allocation per sample).
#[derive(Debug, Clone)]
pub struct SlowSamples {
    heap: BinaryHeap<Reverse<SlowSample>>,
    cap: usize,
}

impl SlowSamples {
    /// Keeps the slowest `capacity` samples.
    #[must_use]
    pub fn new(capacity: usize) -> SlowSamples {
        let mut v = Vec::with_capacity(capacity.max(1));
        crate::measure::histogram::pretouch(&mut v);
        SlowSamples {
            heap: BinaryHeap::from(v),
            cap: capacity.max(1),
        }
    }

    /// Offers one sample; O(1) unless it is slower than the fastest kept one.
    #[inline]
    pub fn offer(&mut self, s: SlowSample) {
        if self.heap.len() < self.cap {
            self.heap.push(Reverse(s));
        } else if let Some(mut min) = self.heap.peek_mut() {
            if s.latency_ns > min.0.latency_ns {
                *min = Reverse(s);
            }
        }
    }

    /// The kept samples, slowest first.
    #[must_use]
    pub fn into_sorted(self) -> Vec<SlowSample> {
        let mut v: Vec<SlowSample> = self.heap.into_iter().map(|r| r.0).collect();
        v.sort_by(|a, b| b.cmp(a));
        v
    }
}
