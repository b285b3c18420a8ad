//! Aeron's log buffer, written and read as Aeron's C client does, over any [`LogMemory`]: the
//! layout ([`descriptor`]), the frame header ([`frame`]), the appenders ([`appender`]) and the
//! term reader with its fragment assembler ([`term_reader`]). Publications and subscriptions
//! run this code over their mapped logs ([`memory::RawLog`]); tests run it over logs on the heap.

pub(crate) mod appender;
pub(crate) mod descriptor;
pub(crate) mod frame;
pub(crate) mod memory;
pub(crate) mod term_reader;

#[cfg(doc)]
use memory::LogMemory;

#[cfg(test)]
mod tests;
