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
/// `LOG_PAGE_SIZE_OFFSET`: the driver's file page size; the log file's length is
/// `3 x term + 4096` rounded up to it, and the metadata is the file's last 4096 bytes.
pub(crate) const LOG_PAGE_SIZE_OFFSET: usize = 280;

/// Aeron's term length bounds (`aeron_logbuffer_check_term_length`).
const TERM_MIN_LENGTH: i64 = 64 * 1024;
const TERM_MAX_LENGTH: i64 = 1024 * 1024 * 1024;
/// Aeron's page size bounds (`aeron_logbuffer_check_page_size`).
const PAGE_MIN_SIZE: i64 = 4 * 1024;
const PAGE_MAX_SIZE: i64 = 1024 * 1024 * 1024;

/// The checks Aeron's C client makes of a log it maps (`aeron_raw_log_map_existing`): the term
/// length and page size its metadata gives, and a file long enough for three terms and the
/// metadata. The error says which.
pub(crate) fn check_log_length(term_length: i32, page_size: i32, file_length: usize) -> Result<(), String> {
    let (term, page) = (i64::from(term_length), i64::from(page_size));
    if !(TERM_MIN_LENGTH..=TERM_MAX_LENGTH).contains(&term) || term & (term - 1) != 0 {
        return Err(format!(
            "its metadata gives a term length of {term_length}: not a power of two from 64 KiB to 1 GiB"
        ));
    }
    if !(PAGE_MIN_SIZE..=PAGE_MAX_SIZE).contains(&page) || page & (page - 1) != 0 {
        return Err(format!(
            "its metadata gives a page size of {page_size}: not a power of two from 4 KiB to 1 GiB"
        ));
    }
    let needed = term as u64 * PARTITION_COUNT + LOG_META_DATA_LENGTH as u64;
    if (file_length as u64) < needed {
        return Err(format!(
            "the file is {file_length} bytes long, too short for three terms of {term_length} and the metadata"
        ));
    }
    Ok(())
}

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
        assert_eq!(*d::LOG_PAGE_SIZE_OFFSET as usize, LOG_PAGE_SIZE_OFFSET);
        assert_eq!(d::LOG_META_DATA_LENGTH as usize, LOG_META_DATA_LENGTH);
    }

    #[test]
    fn log_lengths_are_checked_as_aeron_checks_them() {
        let k64 = 64 * 1024;
        // A 64 KiB page: the file is 3 x 64 KiB + 4 KiB rounded up to 256 KiB.
        assert_eq!(check_log_length(k64, k64, 4 * 64 * 1024), Ok(()));
        assert_eq!(check_log_length(k64, 4096, 3 * 64 * 1024 + 4096), Ok(()));
        assert!(check_log_length(k64, 4096, 3 * 64 * 1024)
            .unwrap_err()
            .contains("too short"));
        assert!(check_log_length(0, 4096, 1 << 20)
            .unwrap_err()
            .contains("term length of 0"));
        assert!(check_log_length(k64 + 32, 4096, 1 << 20)
            .unwrap_err()
            .contains("power of two"));
        assert!(check_log_length(k64, 1000, 1 << 20)
            .unwrap_err()
            .contains("page size of 1000"));
    }
}
