//! Helpers for the crate's unit tests.

/// Deterministic test data for the crate's unit tests.
#[cfg(test)]
pub(crate) mod test_rng {
    /// Tiny deterministic PRNG (SplitMix64) so tests need no extra dependency.
    pub(crate) struct SplitMix(pub(crate) u64);

    impl SplitMix {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform in `0..n`.
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// Uniform in (0, 1].
        pub(crate) fn unit(&mut self) -> f64 {
            ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
        }

        /// Uniform in [0, 1).
        pub(crate) fn unit_from_zero(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }
}
