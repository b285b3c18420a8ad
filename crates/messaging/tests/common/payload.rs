//! Messages that check themselves, for the conformance tests: each carries its sequence
//! number, its length and a checksum of the rest ([`payload`]), so a message delivered short,
//! long or spliced from two is caught ([`verify`]), not only a missing one; and a reserved
//! value of its own ([`reserved_of`]), set as a service sets it ([`send_one`]).

use messaging::{OfferError, Publication, PublicationKind};

/// The bytes every payload starts with: sequence (8), length (4), checksum of the rest (4).
pub(crate) const PAYLOAD_HEADER: usize = 16;

/// FNV-1a, 32 bits.
fn fnv(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0x811c_9dc5_u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// Message `seq` of `len` bytes (at least [`PAYLOAD_HEADER`]): its sequence, its length and a
/// checksum of the bytes after them, which depend on `seq`.
pub(crate) fn payload(seq: u64, len: usize) -> Vec<u8> {
    assert!(len >= PAYLOAD_HEADER);
    let mut m: Vec<u8> = (0..len).map(|i| (seq as usize * 131 + i * 7) as u8).collect();
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m[8..12].copy_from_slice(&(len as u32).to_le_bytes());
    let sum = fnv(&m[PAYLOAD_HEADER..]);
    m[12..16].copy_from_slice(&sum.to_le_bytes());
    m
}

/// The sequence number of an intact [`payload`], or what is wrong with it.
pub(crate) fn verify(m: &[u8]) -> Result<u64, String> {
    if m.len() < PAYLOAD_HEADER {
        return Err(format!("{} bytes: shorter than any message sent", m.len()));
    }
    let seq = u64::from_le_bytes(m[..8].try_into().unwrap());
    let len = u32::from_le_bytes(m[8..12].try_into().unwrap()) as usize;
    let sum = u32::from_le_bytes(m[12..16].try_into().unwrap());
    if len != m.len() {
        return Err(format!("message {seq}: {} bytes delivered, {len} sent", m.len()));
    }
    if fnv(&m[PAYLOAD_HEADER..]) != sum {
        return Err(format!("message {seq}: {len} bytes, checksum wrong"));
    }
    Ok(seq)
}

/// The sizes sent: small, one frame exactly, just fragmented, a few frames, the largest.
pub(crate) fn sizes(max_payload: usize, max_message: usize, n: u64) -> Vec<usize> {
    let cycle = [
        PAYLOAD_HEADER,
        100,
        max_payload,
        max_payload + 1,
        3 * max_payload + 17,
        max_message,
    ];
    (0..n as usize).map(|i| cycle[i % cycle.len()]).collect()
}

/// What a reader handed over: each message's sequence and its header's reserved value, or
/// what was wrong with the message.
pub(crate) type Stamped = Vec<Result<(u64, i64), String>>;

/// The reserved value message `seq` carries (never zero: zero is "none").
pub(crate) fn reserved_of(seq: u64) -> i64 {
    (seq as i64 + 1) * 1_000_003
}

/// Publishes message `seq` with its reserved value: through a claim (a frame's reserved value
/// set in place, as the tap's send stamp is) every other time it fits one frame, else `offer`
/// with the value (every fragment of the message carries it).
pub(crate) fn send_one<K: PublicationKind>(publ: &mut Publication<K>, seq: u64, len: usize) -> Result<(), OfferError> {
    let m = payload(seq, len);
    if seq.is_multiple_of(2) && len <= publ.max_payload_length() {
        let mut claim = publ.try_claim(len)?;
        claim.buffer_mut().copy_from_slice(&m);
        claim.set_reserved_value(reserved_of(seq));
        claim.commit();
        return Ok(());
    }
    publ.offer_with_reserved_value(&m, reserved_of(seq)).map(drop)
}
