//! What the hot threads and their helpers record: latency histograms and the recorder, the
//! per-thread monitor (perf or /proc counters at group boundaries, off-CPU episodes), the
//! slowest samples, the raw cache-line floor, the hiccup meter and the driver's counters.
//!
//! Names `sys`, the model and units.

pub mod bands;
pub mod counter_window;
pub mod counters;
pub mod floor;
pub mod hiccup;
pub mod histogram;
pub mod monitor;
pub mod recorder;
pub mod slow;
pub mod stalls;
