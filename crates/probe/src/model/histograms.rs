//! A run's histograms in its report, and its result directory (`--out DIR`).
//!
//! Guarantees:
//! - A JSON report carries the full distributions, not only percentiles: the overall and the
//!   20 per-group HdrHistograms of the latency from the intended and from the actual send
//!   time, each in HdrHistogram's V2 + DEFLATE encoding, base64 (the encoding of HdrHistogram
//!   interval logs), so the files below can be written from any report later, and `compare`
//!   has more than a few percentiles to go on.
//! - `--out DIR` writes, beside `report.json`: `latency.hgrm` and `latency-actual.hgrm` (the
//!   percentile distribution as HdrHistogram prints it, values in µs, the layout wrk2 and
//!   HdrHistogram's plotter accept), `latency.hlog` (an interval log, one interval per group,
//!   intended latency untagged and actual latency tagged `actual`, values in ns: read it with
//!   `HistogramLogProcessor -i latency.hlog -outputValueUnitRatio 1000`), `groups.csv`, and
//!   the plots `spectrum.svg` (percentile spectrum) and `groups.svg` (groups over time, with
//!   the jitter counters when diagnostics ran).
//!
//! Timing model: the report's ([`crate::sys::clock::TIMING_MODEL`]); a group's interval is the time
//! its messages were scheduled to be sent: message `i`'s intended send time is
//! `start + i / rate`, so the intervals tile the run exactly.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// One group's histograms and its interval.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GroupHistograms {
    /// Start of the group's scheduled sends, seconds from the first measured intended send.
    pub start_s: f64,
    /// End of the group's scheduled sends (the next group's start), seconds.
    pub end_s: f64,
    /// Latency from the intended send time (encoded, see the module docs).
    pub intended: String,
    /// Latency from the actual send time (encoded).
    pub actual: String,
}

/// The run's histograms (see the module docs).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Histograms {
    /// Unix time, seconds, of the first measured message's intended send.
    pub start_epoch_s: f64,
    /// Encoding of every histogram here.
    pub encoding: String,
    /// Latency from the intended send time, all measured messages.
    pub intended: String,
    /// Latency from the actual send time, all measured messages.
    pub actual: String,
    /// The [`GROUPS`](crate::model::GROUPS) groups, in send order.
    pub groups: Vec<GroupHistograms>,
}

/// The value of [`Histograms::encoding`].
pub const ENCODING: &str = "HdrHistogram V2+DEFLATE, base64";

/// One histogram, encoded.
///
/// # Panics
/// Never for a valid histogram (serializing into memory cannot fail for one).
#[must_use]
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing a histogram into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One histogram, decoded.
///
/// # Errors
/// Not base64, or not an HdrHistogram V2 (deflate) histogram.
pub fn decode(s: &str) -> Result<Histogram<u64>, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(DecodeError::Base64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Histogram)
}

/// Why a histogram of a report could not be decoded.
#[derive(Debug)]
pub enum DecodeError {
    /// The text is not base64.
    Base64(base64::DecodeError),
    /// The bytes are not an HdrHistogram V2 (DEFLATE) histogram.
    Histogram(hdrhistogram::serialization::DeserializeError),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Base64(e) => write!(f, "a histogram is not base64: {e}"),
            DecodeError::Histogram(e) => write!(f, "a histogram does not decode as HdrHistogram V2 (DEFLATE): {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}
