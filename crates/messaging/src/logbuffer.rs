//! Aeron's log buffer layout (`LogBufferDescriptor`): where the metadata fields our own
//! mappings of a log read and write sit, checked against aeron-rs's.

/// Aeron's three term partitions.
pub(crate) const PARTITION_COUNT: u64 = 3;
/// The metadata section's length (`LOG_META_DATA_LENGTH`); it follows the three terms.
pub(crate) const LOG_META_DATA_LENGTH: usize = 4096;
/// `TERM_TAIL_COUNTERS_OFFSET`: three `i64` raw tails (term id << 32 | term offset).
pub(crate) const TERM_TAIL_COUNTERS_OFFSET: usize = 0;
/// `LOG_ACTIVE_TERM_COUNT_OFFSET`.
pub(crate) const LOG_ACTIVE_TERM_COUNT_OFFSET: usize = 24;
/// `LOG_IS_CONNECTED_OFFSET`: 1 while a subscriber is connected (the driver sets it).
pub(crate) const LOG_IS_CONNECTED_OFFSET: usize = 136;
/// `LOG_TERM_LENGTH_OFFSET`.
pub(crate) const LOG_TERM_LENGTH_OFFSET: usize = 276;

#[cfg(test)]
mod tests {
    use super::*;
    use aeron_rs::concurrent::logbuffer::log_buffer_descriptor as d;

    #[test]
    fn offsets_are_aeron_s() {
        assert_eq!(*d::TERM_TAIL_COUNTER_OFFSET as usize, TERM_TAIL_COUNTERS_OFFSET);
        assert_eq!(*d::LOG_ACTIVE_TERM_COUNT_OFFSET as usize, LOG_ACTIVE_TERM_COUNT_OFFSET);
        assert_eq!(*d::LOG_IS_CONNECTED_OFFSET as usize, LOG_IS_CONNECTED_OFFSET);
        assert_eq!(*d::LOG_TERM_LENGTH_OFFSET as usize, LOG_TERM_LENGTH_OFFSET);
        assert_eq!(d::LOG_META_DATA_LENGTH as usize, LOG_META_DATA_LENGTH);
    }
}
