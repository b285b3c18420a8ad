//! aeron-latency facade (lead: extended later).
pub mod wire;
pub use messaging;
