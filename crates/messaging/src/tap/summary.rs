//! What [`Tap::stop`](super::Tap::stop) returns: per figure, its counts, files and
//! distribution from start to stop.

use std::path::PathBuf;

#[cfg(doc)]
use super::{FigureRecorder, Tap};

/// What a tap recorded, per figure, from start to stop.
#[derive(Debug, Clone, PartialEq)]
pub struct TapSummary {
    /// The figures, in the order they were first named.
    pub figures: Vec<FigureSummary>,
    /// Subscription recorders still recording at stop that did not hand their last interval
    /// over within the writer's wait (they were not polled): what they recorded since their
    /// last handover is in neither the logs nor these figures. 0 when every subscription
    /// stopped recording ([`Subscriber::stop_recording`](crate::Subscriber::stop_recording),
    /// or dropped) before [`Tap::stop`], or kept polling until it returned.
    pub unanswered: u64,
}

/// One figure's totals and files.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureSummary {
    /// Its name (the log's file name without `.hlog`).
    pub name: String,
    /// The stream its subscription reads; `None` for a [`FigureRecorder`]'s figure.
    pub stream_id: Option<i32>,
    /// Latencies recorded in its logs (0 and up).
    pub recorded: u64,
    /// Negative latencies (counted, not in the logs).
    pub negative: u64,
    /// Latencies above the highest trackable value or with a saturated age (in the logs, at
    /// the highest value or as a lower bound).
    pub saturated: u64,
    /// Messages without a stamp.
    pub unstamped: u64,
    /// Its logs, oldest first.
    pub files: Vec<PathBuf>,
    pub(crate) histogram: hdrhistogram::Histogram<u64>,
}

impl FigureSummary {
    /// The latency at quantile `q` (0 to 1) of everything recorded, nanoseconds (HdrHistogram's
    /// `value_at_quantile`: 3 significant digits); `None` when nothing was recorded.
    #[must_use]
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        (!self.histogram.is_empty()).then(|| self.histogram.value_at_quantile(q))
    }

    /// The largest latency recorded, nanoseconds; `None` when nothing was recorded.
    #[must_use]
    pub fn max_ns(&self) -> Option<u64> {
        (!self.histogram.is_empty()).then(|| self.histogram.max())
    }
}
