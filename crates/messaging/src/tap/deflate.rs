//! HdrHistogram's compressed V2 encoding, what each `.hlog` line carries, at deflate level 1
//! with one compressor kept for every histogram the writer encodes. hdrhistogram's
//! `V2DeflateSerializer` makes a new zlib encoder at the default level (6) for each histogram,
//! and a deflate call cannot yield: on a small machine the tap's writer shares a core with the
//! hot threads. Level 1 with one compressor costs a third as much per histogram, for 9.5% more
//! bytes (`docs/results/2026-11-27-tap-log-deflate.md`, measured by
//! `tests::what_an_encoding_costs`). The bytes are HdrHistogram's format all the same: the V2
//! compressed cookie, the compressed length, then a zlib stream of the V2 encoding, which every
//! HdrHistogram reader (Java's `HistogramLogProcessor` among them) decodes whatever level wrote
//! it.

use std::io::{self, Write};

use flate2::{Compress, Compression, FlushCompress, Status};
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::{Counter, Histogram};

/// HdrHistogram's V2 compressed cookie (`0x1c84_9304 | 0x10`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// A [`Serializer`] of HdrHistogram's V2 compressed encoding at deflate level 1, reusing its
/// compressor and buffers from one histogram to the next.
pub(crate) struct Deflate {
    v2: V2Serializer,
    /// The V2 encoding of the histogram being written.
    raw: Vec<u8>,
    /// The cookie, the length and the zlib stream.
    out: Vec<u8>,
    zlib: Compress,
}

impl Deflate {
    pub(crate) fn new() -> Deflate {
        Deflate {
            v2: V2Serializer::new(),
            raw: Vec::new(),
            out: Vec::new(),
            zlib: Compress::new(Compression::fast(), true),
        }
    }
}

impl Serializer for Deflate {
    type SerializeError = io::Error;

    fn serialize<T: Counter, W: Write>(&mut self, h: &Histogram<T>, writer: &mut W) -> io::Result<usize> {
        self.raw.clear();
        self.v2
            .serialize(h, &mut self.raw)
            .map_err(|e| io::Error::other(format!("the V2 encoding failed: {e}")))?;
        self.out.clear();
        self.out.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.out.extend_from_slice(&[0; 4]);
        self.zlib.reset();
        loop {
            // `compress_vec` fills spare capacity only: leave some on every turn.
            self.out.reserve(self.raw.len() / 2 + 64);
            let read = usize::try_from(self.zlib.total_in()).map_err(io::Error::other)?;
            let status = self
                .zlib
                .compress_vec(&self.raw[read..], &mut self.out, FlushCompress::Finish)
                .map_err(io::Error::other)?;
            if status == Status::StreamEnd {
                break;
            }
        }
        let length = u32::try_from(self.out.len() - 8).map_err(io::Error::other)?;
        self.out[4..8].copy_from_slice(&length.to_be_bytes());
        writer.write_all(&self.out)?;
        Ok(self.out.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
    use std::time::Instant;

    /// A tap interval's histogram: 1 ns to 10 s at 3 digits, `n` latencies from about 300 ns
    /// with a heavy tail (deterministic).
    fn interval(n: usize, seed: u64) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        let mut x = seed | 1;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1_u64 << 53) as f64;
            h.saturating_record((300.0 * (1.0 / (1.0 - u)).powf(1.5)) as u64);
        }
        h
    }

    /// Every histogram, one after another through the same serializer, decodes to itself with
    /// hdrhistogram's reader, as does the default-level encoding of the same histogram.
    #[test]
    fn each_histogram_decodes_to_itself() {
        let mut ours = Deflate::new();
        let empty = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        let mut one = empty.clone();
        one.record(10_000_000_000).unwrap();
        let all = [
            interval(100_000, 7),
            empty,
            one,
            interval(10, 9),
            interval(1_000_000, 11),
        ];
        for h in &all {
            let mut bytes = Vec::new();
            let written = ours.serialize(h, &mut bytes).unwrap();
            assert_eq!(written, bytes.len());
            let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            assert_eq!(&back, h);
            assert_eq!(back.len(), h.len());
            let mut theirs = Vec::new();
            V2DeflateSerializer::new().serialize(h, &mut theirs).unwrap();
            assert_eq!(bytes[..4], theirs[..4], "the same cookie");
        }
    }

    /// What encoding one interval's histogram costs, hdrhistogram's serializer and this one in
    /// alternating rounds (a measurement, not a check): `cargo test --release -p messaging
    /// --features tap --lib deflate -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement; run it in release"]
    fn what_an_encoding_costs() {
        let h = interval(1_000_000, 12_345);
        let (mut theirs, mut ours) = (V2DeflateSerializer::new(), Deflate::new());
        let mut bytes = Vec::new();
        let mut time = |f: &mut dyn FnMut(&mut Vec<u8>)| {
            let t = Instant::now();
            for _ in 0..100 {
                bytes.clear();
                f(&mut bytes);
            }
            (t.elapsed() / 100, bytes.len())
        };
        for round in 1..=5 {
            let (t6, b6) = time(&mut |b| {
                theirs.serialize(&h, b).unwrap();
            });
            let (t1, b1) = time(&mut |b| {
                ours.serialize(&h, b).unwrap();
            });
            println!(
                "round {round}: V2DeflateSerializer {t6:?} ({b6} B), Deflate {t1:?} ({b1} B), ratio {:.2}",
                t6.as_secs_f64() / t1.as_secs_f64()
            );
        }
    }
}
