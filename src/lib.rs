//! `aeron-latency`: Cap'n Proto timestamped messages over Aeron, for services and for the
//! latency probes (`latency-pub`, `latency-sub`, `latency-probe` in the `latency-probe` package).
//!
//! # Guarantees
//! - [`wire`] encodes a [`wire::Sample`] into a caller-provided buffer (an Aeron claim) and
//!   decodes it from a byte slice with zero heap allocation; decoding never panics.
//! - [`messaging`] (re-exported) is the thin layer over aeron-rs: offer / try_claim / poll that
//!   never allocate, block or make a syscall, typed [`messaging::OfferError`]s with
//!   `is_retryable()`, explicit close, Aeron's idle strategies and an embedded C media driver
//!   (feature `embedded-driver`, on by default).
//! - Dependency direction: probe -> this facade -> messaging -> aeron-rs.
//!
//! # Example
//! Encode a sample straight into the term buffer and read it back:
//! ```no_run
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use aeron_latency::messaging::{Client, EmbeddedDriver, MessageHeader};
//! use aeron_latency::wire::{self, Kind, Sample};
//!
//! let driver = EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = Client::connect(driver.dir())?;
//! let mut sub = client.subscription("aeron:ipc", 7)?;
//! let publ = client.publication("aeron:ipc", 7)?;
//! while !publ.is_connected() {
//!     std::thread::yield_now();
//! }
//! let sample = Sample { seq: 0, intended_ns: 1, sent_ns: 2, publisher_id: 1, kind: Kind::Measured, warmup: 0, planned: 1 };
//! let len = wire::encoded_len(0);
//! loop {
//!     match publ.try_claim(len) {
//!         Ok(mut claim) => {
//!             wire::encode_into(claim.buffer_mut(), &sample, 0)?;
//!             claim.commit();
//!             break;
//!         }
//!         Err(e) if e.is_retryable() => std::thread::yield_now(),
//!         Err(e) => return Err(e.into()),
//!     }
//! }
//! let mut got = None;
//! while got.is_none() {
//!     sub.poll(&mut |bytes: &[u8], _: &MessageHeader<'_>| got = wire::decode(bytes).ok(), 10)?;
//! }
//! assert_eq!(got, Some(sample));
//! # Ok(()) }
//! # #[cfg(not(feature = "embedded-driver"))] fn main() {}
//! ```
#![forbid(unsafe_code)]

pub mod wire;

pub use messaging;
