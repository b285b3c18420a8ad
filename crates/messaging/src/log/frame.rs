//! Aeron's data frame header (`aeron_data_header_t`, Java's `DataHeaderFlyweight`): one
//! `#[repr(C)]` struct that every write and read of a header in the log goes through, and the
//! frame constants (`FrameDescriptor`).
//!
//! The log is little-endian, as Aeron writes it on every platform; this crate maps it directly,
//! so it builds for little-endian targets only.

#[cfg(target_endian = "big")]
compile_error!("messaging maps Aeron's little-endian log buffers directly: big-endian targets are not supported");

/// Aeron's data frame header, field for field (`aeron_data_header_t`: the frame header, then
/// term offset, session id, stream id, term id and reserved value). In the log the frame length
/// is written and read atomically (negative or zero until the frame is published); the other
/// fields are plain, written before the length is published and read after it is seen.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct DataHeader {
    /// The frame's length, header included (not aligned).
    pub(crate) frame_length: i32,
    /// [`FRAME_VERSION`].
    pub(crate) version: u8,
    /// [`BEGIN_FLAG`], [`END_FLAG`] (both: a whole message) and Aeron's other flag bits.
    pub(crate) flags: u8,
    /// [`HDR_TYPE_DATA`] or [`HDR_TYPE_PAD`].
    pub(crate) frame_type: u16,
    /// Where the frame starts in its term.
    pub(crate) term_offset: i32,
    /// The publication's session.
    pub(crate) session_id: i32,
    /// The stream.
    pub(crate) stream_id: i32,
    /// The term the frame is in.
    pub(crate) term_id: i32,
    /// A value the publisher may set (Aeron's `ReservedValueSupplier`).
    pub(crate) reserved_value: i64,
}

const _: () = assert!(std::mem::size_of::<DataHeader>() == DATA_HEADER_LEN);
const _: () = assert!(std::mem::align_of::<DataHeader>() == 8);
const _: () = assert!(std::mem::offset_of!(DataHeader, reserved_value) == 24);

/// Aeron's data frame header length: a payload starts this far into its frame.
pub(crate) const DATA_HEADER_LEN: usize = 32;
/// Aeron's frame alignment in the log.
pub(crate) const FRAME_ALIGNMENT: usize = 32;
/// Frame flags: the first and the last fragment of a message; both set, a whole message.
pub(crate) const BEGIN_FLAG: u8 = 0x80;
/// See [`BEGIN_FLAG`].
pub(crate) const END_FLAG: u8 = 0x40;
/// A message in one frame.
pub(crate) const UNFRAGMENTED: u8 = BEGIN_FLAG | END_FLAG;
/// `HDR_TYPE_PAD`: a frame readers skip (the end of a term, an aborted claim).
pub(crate) const HDR_TYPE_PAD: u16 = 0x00;
/// `HDR_TYPE_DATA`.
pub(crate) const HDR_TYPE_DATA: u16 = 0x01;
/// `AERON_FRAME_HEADER_VERSION`.
pub(crate) const FRAME_VERSION: u8 = 0;

/// `n` rounded up to [`FRAME_ALIGNMENT`] (`AERON_ALIGN`); wraps as Aeron's does for lengths near
/// `i32::MAX`, which no valid frame has.
#[inline]
pub(crate) fn align(n: i32) -> i32 {
    n.wrapping_add(FRAME_ALIGNMENT as i32 - 1) & !(FRAME_ALIGNMENT as i32 - 1)
}

/// `aeron_logbuffer_compute_fragmented_length`: the log bytes a message of `length` takes when
/// cut into frames of at most `max_payload` bytes.
pub(crate) fn fragmented_length(length: usize, max_payload: usize) -> usize {
    let whole = length / max_payload;
    let rest = length % max_payload;
    let last = if rest > 0 {
        (rest + DATA_HEADER_LEN).next_multiple_of(FRAME_ALIGNMENT)
    } else {
        0
    };
    whole * (max_payload + DATA_HEADER_LEN) + last
}

/// The bytes one unfragmented message of `payload` bytes takes in the log.
#[inline]
pub(crate) fn framed_length(payload: usize) -> usize {
    (payload + DATA_HEADER_LEN).next_multiple_of(FRAME_ALIGNMENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_aeron_s_field_for_field() {
        use std::mem::offset_of;
        let at = [
            offset_of!(DataHeader, frame_length),
            offset_of!(DataHeader, version),
            offset_of!(DataHeader, flags),
            offset_of!(DataHeader, frame_type),
            offset_of!(DataHeader, term_offset),
            offset_of!(DataHeader, session_id),
            offset_of!(DataHeader, stream_id),
            offset_of!(DataHeader, term_id),
            offset_of!(DataHeader, reserved_value),
        ];
        // aeron_data_header_t (and DataHeaderFlyweight's field offsets).
        assert_eq!(at, [0, 4, 5, 6, 8, 12, 16, 20, 24]);
    }

    #[test]
    fn fragmented_lengths_follow_aeron() {
        // MTU 1408: 1376-byte payloads.
        let max = 1376;
        assert_eq!(fragmented_length(1376, max), 1408);
        assert_eq!(fragmented_length(1377, max), 1408 + 64);
        assert_eq!(fragmented_length(3 * 1376, max), 3 * 1408);
        assert_eq!(fragmented_length(3 * 1376 + 1, max), 3 * 1408 + 64);
        assert_eq!(
            fragmented_length(10_000, max),
            7 * 1408 + (10_000_usize - 7 * 1376 + 32).next_multiple_of(32)
        );
    }

    #[test]
    fn alignment_rounds_up_to_32() {
        assert_eq!([align(0), align(1), align(32), align(33)], [0, 32, 32, 64]);
    }
}
