//! `messaging`: a thin, fast layer over the pure-Rust Aeron client
//! [aeron-rs](https://crates.io/crates/aeron-rs) 0.1.8. Bytes in, bytes out.
//!
//! # Guarantees
//! - **Hot path**: [`Publication::offer`] and [`Publication::try_claim`] of both publications
//!   ([`ExclusivePublication`], [`ConcurrentPublication`]) and [`Subscriber::poll`] never
//!   allocate in steady state, never log, never block, take no lock and make no syscall: they
//!   write and read the logs themselves, as Aeron's C client does, through one appender and
//!   one term reader whose lock-free protocol is model-checked (loom) and run under Miri
//!   (`make conformance`). aeron-rs adds, tracks and removes publications and subscriptions, and finds and retires
//!   images.
//! - **Status reads are plain loads**: [`Publication::is_connected`], [`Publication::position`],
//!   [`Subscriber::image_count`], [`Subscriber::is_connected`], [`Client::is_closed`] and the
//!   counter readers never take the conductor's lock (as in Aeron's own clients).
//! - **Images and errors reach the service**: image available/unavailable events are queued
//!   for [`Subscriber::poll_image_events`]; every asynchronous error (aeron-rs's, the loss of
//!   the driver, what the driver logs) goes to [`ClientBuilder::error_handler`] as an
//!   [`AsyncError`]; the thread behind [`Client::subscribe`] keeps each poll error it polled
//!   past and says why it stopped ([`Handoff::take_poll_errors`], [`Handoff::end`]).
//! - **No page faults while measuring**: [`Publication::prefault`] and [`Subscriber::prefault`]
//!   map every page of the log buffers into this process before the measured phase, without
//!   changing them (see [`PrefaultStats`]).
//! - **Typed results**: Aeron's negative offer codes are one enum, [`OfferError`], with
//!   [`OfferError::is_retryable`]; one error type per operation, each message says how to fix it.
//! - **Clean close**: dropping the last handle removes publications and subscriptions and
//!   sends `CLIENT_CLOSE` (which aeron-rs 0.1.8 never does), so a second run right after the
//!   first on the same driver and stream does not stall.
//! - **Never dies silently**: [`DriverLiveness`] (one atomic load) turns false within one
//!   conductor duty cycle of a driver's orderly close, within the driver timeout of a driver
//!   killed or hung, and when the driver timed this client out; [`LivenessError`] says which,
//!   and the next [`Publication::offer`] / [`Publication::try_claim`] returns
//!   [`OfferError::ClientClosed`]. Carry on by building a new [`Client`] once a driver runs
//!   again.
//! - **Never harms another driver**: [`EmbeddedDriver`] refuses a directory whose driver is
//!   alive ([`DriverLaunchError::ActiveDriver`], with its pid), and starts at once where the
//!   driver's process is gone ([`DriverProcessState`]).
//! - **Aeron's names**: `AERON_DIR`, `AERON_*` variables, idle strategies `spin`, `noop`,
//!   `yield`, `sleep-ns`, `backoff`; exclusive and concurrent publications; offer / try_claim
//!   / poll / controlled poll; the reserved value.
//! - No aeron-rs type appears in this crate's public API.
//!
//! # Features
//! - `embedded-driver` (off by default): [`EmbeddedDriver`], an Aeron C 1.54 media driver in
//!   this process (builds Aeron from source: CMake >= 3.30, libclang). Without it, connect to a
//!   running `aeronmd` or Java `MediaDriver` with [`Client::connect`].
//! - `tap` (off by default): the latency of a service's own traffic, per hop and end to end,
//!   with no byte added to its messages: publications stamp their send time into the frame's
//!   reserved value (`Publication::stamp_send_time`), subscriptions record each message's
//!   latency (`Subscriber::record_latency`), and a `Tap`'s thread writes HdrHistogram interval
//!   logs, a status file and a Prometheus textfile (the module `tap`).
//!
//! # Example
//! ```
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use messaging::{Client, EmbeddedDriver, IdleStrategy, MessageHeader};
//!
//! let driver = EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = Client::connect(driver.dir())?;
//! let mut sub = client.subscription("aeron:ipc", 10)?;
//! let publ = client.publication("aeron:ipc", 10)?;
//!
//! let mut idle: IdleStrategy = "yield".parse()?;
//! while let Err(e) = publ.offer(b"hello") {
//!     assert!(e.is_retryable(), "{e}");
//!     idle.idle_once();
//! }
//! let mut received = Vec::new();
//! while received.is_empty() {
//!     let n = sub.poll(&mut |msg: &[u8], _: &MessageHeader<'_>| received.extend_from_slice(msg), 10)?;
//!     idle.idle(n);
//! }
//! assert_eq!(received, b"hello");
//! # Ok(()) }
//! # #[cfg(not(feature = "embedded-driver"))] fn main() {}
//! ```
// Without the feature there is no `EmbeddedDriver` to link to: the links go to "Features".
#![cfg_attr(not(feature = "embedded-driver"), doc = "\n[`EmbeddedDriver`]: #features")]
#![deny(unsafe_op_in_unsafe_fn)]

mod channel;
mod client;
mod cnc;
mod conductor;
#[cfg(feature = "embedded-driver")]
mod driver;
mod driver_option;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod idle;
mod images;
mod log;
mod mapped;
mod perms;
mod prefault;
mod process;
mod publication;
mod reader;
mod subscribe;
mod subscription;
#[cfg(feature = "tap")]
pub mod tap;
mod thread;

pub use channel::{check_term_length, validate_channel, MAX_CHANNEL_LENGTH};
pub use client::{
    Client, ClientBuilder, DriverLiveness, PendingExclusivePublication, PendingPublication, PendingSubscription,
};
pub use cnc::{
    default_aeron_dir, driver_pid, driver_status, read_driver_counters, CncCounters, DriverCounter, DriverStatus,
    AERON_DIR_ENV, AERON_DRIVER_TIMEOUT_ENV, CLIENT_HEARTBEAT_COUNTER_TYPE_ID, DEFAULT_DRIVER_TIMEOUT,
    MAX_DRIVER_TIMEOUT, MIN_DRIVER_TIMEOUT, SUBSCRIBER_POSITION_COUNTER_TYPE_ID,
};
pub use conductor::CONDUCTOR_IDLE;
#[cfg(feature = "embedded-driver")]
pub use driver::{
    driver_version, free_bytes, DriverSettings, EmbeddedDriver, EmbeddedDriverBuilder, DEFAULT_DRIVER_IDLE,
};
pub use driver_option::{env_name as driver_env_name, DriverOption};
#[cfg(feature = "tap")]
pub use error::TapError;
pub use error::{
    AddError, AsyncError, ConnectError, DriverLaunchError, LivenessError, OfferError, ParseIdleError, PollError,
    PrefaultError, SpawnError,
};
pub use idle::{
    Backoff, IdleStrategy, BACKOFF_MAX_PARK_NS, BACKOFF_MAX_SPINS, BACKOFF_MAX_YIELDS, BACKOFF_MIN_PARK_NS,
    DEFAULT_SLEEP_NS, MAX_SLEEP_NS,
};
pub use images::{ImageEvent, ImageEventKind, IMAGE_EVENT_CAPACITY};
pub use perms::{world_writable, world_writable_warning};
pub use prefault::{PrefaultMethod, PrefaultStats};
pub use process::{driver_process_state, DriverProcessState};
pub use publication::{
    Claim, Concurrent, ConcurrentPublication, Exclusive, ExclusivePublication, Publication, PublicationKind,
};
#[allow(deprecated)]
pub use publication::{ExclusivePublisher, Publisher};
pub use subscribe::{Handoff, HandoffEnd, HandoffOptions, SubscribeError, HANDOFF_ERRORS_KEPT};
pub use subscription::{ControlledAction, HeaderValues, MessageHeader, Subscriber};
#[cfg(feature = "tap")]
pub use tap::{RecordLatency, StampClock, Tap};
pub use thread::{available_cores, current_tid, PinnedThread, ThreadBuilder};

/// The Aeron client this crate wraps, for reports.
pub const CLIENT_VERSION: &str = "aeron-rs 0.1.8";

/// The examples in `README.md` (the crate's readme, what crates.io shows), compiled and run as
/// doctests so that they keep up with the API. They start an embedded driver and use the tap,
/// hence the features (`make test` builds the workspace, which turns both on).
#[cfg(all(doctest, feature = "embedded-driver", feature = "tap"))]
#[doc = include_str!("../README.md")]
#[derive(Debug)]
pub struct ReadmeDoctests;
