//! The client conductor: our thread that runs aeron-rs's conductor duty cycle, and the state
//! every handle of a client shares, which tells the driver the client closed when it goes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aeron_rs::aeron::Aeron;
use aeron_rs::command::control_protocol_events::AeronCommand;
use aeron_rs::command::correlated_message_flyweight::CORRELATED_MESSAGE_LENGTH;
use aeron_rs::concurrent::atomic_buffer::AtomicBuffer;
use aeron_rs::concurrent::ring_buffer::ManyToOneRingBuffer;
use aeron_rs::utils::memory_mapped_file::MemoryMappedFile;

use crate::error::AddError;

/// How long the conductor thread sleeps between duty cycles: aeron-rs's own 4 ms
/// (`IDLE_SLEEP_MS`). Each wake-up briefly takes a core; a late publisher is noticed within it.
pub const CONDUCTOR_IDLE: Duration = Duration::from_millis(4);

/// The aeron-rs client and the flag that stops our conductor thread.
pub(crate) struct Shared {
    pub(crate) aeron: Mutex<Option<Aeron>>,
    pub(crate) stop: AtomicBool,
    /// Set by the error handler when aeron-rs reports the driver timed out.
    pub(crate) lost: Arc<AtomicBool>,
}

// SAFETY: `Aeron` holds `Arc<Mutex<..>>`s and raw pointers into memory maps it owns for its
// whole life; aeron-rs itself shares it between the caller and its conductor thread. Here it
// is only ever touched through the Mutex above.
unsafe impl Send for Shared {}
// SAFETY: as above; all access goes through the Mutex or the atomic flag.
unsafe impl Sync for Shared {}

/// One duty cycle every `CONDUCTOR_IDLE`, taking the lock only for the duty cycle itself.
pub(crate) fn conductor_loop(shared: &Shared) {
    while !shared.stop.load(Ordering::Acquire) {
        // Once the driver is gone there is nothing to do but wait to be dropped.
        if shared.lost.load(Ordering::Acquire) {
            std::thread::sleep(CONDUCTOR_IDLE);
            continue;
        }
        if let Ok(g) = shared.aeron.lock() {
            if let Some(a) = g.as_ref() {
                a.conductor_agent_invoker().invoke();
            }
        }
        std::thread::sleep(CONDUCTOR_IDLE);
    }
}

pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) conductor: Option<std::thread::JoinHandle<()>>,
    pub(crate) to_driver: ManyToOneRingBuffer,
    pub(crate) _cnc: MemoryMappedFile,
    pub(crate) client_id: i64,
    pub(crate) dir: PathBuf,
    pub(crate) timeout: Duration,
}

// SAFETY: `ManyToOneRingBuffer` and `MemoryMappedFile` wrap a shared mapping of cnc.dat;
// the ring buffer is a multi-producer structure made for concurrent writers (it uses
// atomic claims), and the mapping is only unmapped on drop. `Shared` is Send + Sync.
unsafe impl Send for Inner {}
// SAFETY: see above; every method of `Inner` that touches shared state is either atomic
// (ring-buffer writes) or goes through the Mutex.
unsafe impl Sync for Inner {}

impl Inner {
    /// The driver directory this client is connected to.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn with_aeron<T>(&self, f: impl FnOnce(&mut Aeron) -> T) -> Result<T, AddError> {
        let mut guard = self.shared.aeron.lock().map_err(|_| AddError::ClientClosed)?;
        let aeron = guard.as_mut().ok_or(AddError::ClientClosed)?;
        if aeron.is_closed() {
            return Err(AddError::ClientClosed);
        }
        Ok(f(aeron))
    }

    /// Writes `CLIENT_CLOSE` for this client's id into the driver's command ring.
    fn send_client_close(&self) {
        #[repr(C, align(8))]
        struct Msg([u8; 64]);
        let mut msg = Msg([0; 64]);
        // Aeron's CorrelatedMessage: client id (i64) then correlation id (i64), little endian.
        // aeron-rs keeps its flyweight crate-private, so write the two fields directly.
        msg.0[..8].copy_from_slice(&self.client_id.to_le_bytes());
        msg.0[8..16].copy_from_slice(&self.to_driver.next_correlation_id().to_le_bytes());
        let buf = AtomicBuffer::wrap_slice(&mut msg.0);
        let _ = self
            .to_driver
            .write(AeronCommand::ClientClose, buf, 0, CORRELATED_MESSAGE_LENGTH);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Every Publisher/Subscriber holds an Arc<Inner>, so they are gone by now and have
        // sent their removes. Stop the conductor (no more keepalives), then tell the driver
        // this client is closed through our own mapping of cnc.dat.
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.conductor.take() {
            let _ = t.join();
        }
        if let Ok(mut g) = self.shared.aeron.lock() {
            g.take();
        }
        self.send_client_close();
    }
}
