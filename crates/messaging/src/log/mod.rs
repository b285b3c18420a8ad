//! Aeron's log buffer, written and read as Aeron's C client does, over any [`LogMemory`]: the
//! layout ([`descriptor`]), the frame header ([`frame`]), the appenders ([`appender`]) and the
//! term reader with its fragment assembler ([`term_reader`]). Publications and subscriptions
//! run this code over their mapped logs ([`memory::RawLog`]); the model checker runs the same
//! code over its own memory (`model`, under `--cfg messaging_loom`).

pub(crate) mod appender;
pub(crate) mod descriptor;
pub(crate) mod frame;
pub(crate) mod memory;
pub(crate) mod term_reader;

#[cfg(messaging_loom)]
mod model;

#[cfg(doc)]
use memory::LogMemory;

#[cfg(test)]
mod tests;
