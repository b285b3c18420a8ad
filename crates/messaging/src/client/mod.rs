//! The connection to a media driver.
//!
//! Guarantees:
//! - [`ClientBuilder::build`] fails fast with a typed [`ConnectError`] naming the directory when
//!   there is no driver (`cnc.dat` missing) or it is dead (stale heartbeat), instead of
//!   aeron-rs's 10 s wait;
//! - the Aeron directory follows Aeron's rule: builder setting, else `AERON_DIR`, else
//!   `/dev/shm/aeron-$USER` (aeron-rs ignores `AERON_DIR` by itself);
//! - closing is explicit and complete: when the last handle (the [`Client`], a
//!   [`ConcurrentPublication`](crate::ConcurrentPublication), a
//!   [`Subscriber`](crate::Subscriber)) goes, each publication and subscription sends its
//!   remove and the client sends `CLIENT_CLOSE`, so the driver frees the streams at once
//!   (aeron-rs 0.1.8 never sends `CLIENT_CLOSE`; the driver would time the client out ~10 s
//!   later and a new publisher on the same IPC stream would stall that long).

mod add;
mod builder;
mod status;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use add::{PendingExclusivePublication, PendingPublication, PendingSubscription};
pub use builder::ClientBuilder;
pub use status::DriverLiveness;

use crate::conductor::Inner;
use crate::error::ConnectError;

/// A connection to a media driver: creates publications and subscriptions.
///
/// Cloning is cheap (a reference count). The connection closes when the last clone and
/// the last publisher/subscriber made from it are dropped (or [`Client::close`]d).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("dir", &self.inner.dir)
            .field("client_id", &self.inner.client_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with Aeron's defaults.
    #[must_use]
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// Connects to the driver in `dir`.
    ///
    /// # Errors
    /// See [`ClientBuilder::build`].
    pub fn connect(dir: impl Into<PathBuf>) -> Result<Self, ConnectError> {
        ClientBuilder::new().dir(dir).build()
    }

    /// Drops this handle. The driver is told the client closed once every publisher and
    /// subscriber made from it is dropped too.
    pub fn close(self) {}
}
