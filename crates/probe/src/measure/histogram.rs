//! Latency histograms as the hot threads record them: allocated and pre-touched before the
//! run, recorded without allocating.

use crate::model::HIGHEST_TRACKABLE_NS;
use crate::model::LOWEST_DISCERNIBLE_NS;
use crate::model::SIGNIFICANT_DIGITS;
use hdrhistogram::Histogram;

/// A latency histogram: 1 ns .. 3,600 s, 3 significant digits, auto-resize off (about 264 KiB,
/// all allocated and written here, so recording never allocates and never takes a page fault).
pub fn new_latency_histogram() -> Histogram<u64> {
    let h = Histogram::<u64>::new_with_bounds(LOWEST_DISCERNIBLE_NS, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid");
    // The counts come from a zeroed allocation the kernel maps lazily: write every page now.
    // `black_box` hides that they are zero already, so the writes cannot be optimised away.
    let mut h = std::hint::black_box(h);
    h.clear();
    h.auto(false);
    h
}

/// Writes every page of `v`'s spare capacity, so pushing up to its capacity later neither
/// allocates nor takes a page fault.
pub fn pretouch<T: Copy>(v: &mut Vec<T>) {
    // Hide where the buffer came from: otherwise LLVM may turn `malloc` + zeroing into `calloc`,
    // which hands back fresh, untouched pages (measured: 431 faults filling 4,096 slow samples
    // and a 100,000-entry stall log without this).
    let v = std::hint::black_box(v);
    for slot in v.spare_capacity_mut() {
        *slot = std::mem::MaybeUninit::zeroed();
    }
    std::hint::black_box(v);
}

/// Records `v`, clamped to the histogram's highest trackable value. Returns `true` if it
/// clamped. Never panics, never allocates (for a histogram with auto-resize off).
#[inline]
pub fn record_saturating(h: &mut Histogram<u64>, v: u64) -> bool {
    let high = h.high();
    if v > high {
        h.saturating_record(high);
        true
    } else {
        h.saturating_record(v);
        false
    }
}
