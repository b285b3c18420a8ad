//! [`Client::subscribe`]: a subscription polled by a thread of its own, which hands each
//! message to the caller's handler ([`Handoff`], [`HandoffOptions`], [`SubscribeError`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::client::Client;
use crate::error::{AddError, SpawnError};
use crate::idle::IdleStrategy;
use crate::subscription::MessageHeader;
use crate::thread::{PinnedThread, ThreadBuilder};

/// The thread behind [`Client::subscribe`]: stops and joins when dropped.
pub struct Handoff {
    stop: Arc<AtomicBool>,
    delivered: Arc<AtomicU64>,
    thread: Option<PinnedThread<()>>,
}

impl fmt::Debug for Handoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("delivered", &self.delivered())
            .field("running", &self.thread.as_ref().is_some_and(|t| !t.is_finished()))
            .finish()
    }
}

impl Handoff {
    /// Messages sent into the channel so far.
    #[must_use]
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// The polling thread's Linux thread id.
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.thread.as_ref().map_or(0, PinnedThread::tid)
    }

    /// Stops polling and waits for the thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Options for [`Client::subscribe`].
#[derive(Debug, Clone)]
pub struct HandoffOptions {
    /// Idle strategy of the polling thread.
    pub idle: IdleStrategy,
    /// Core to pin the polling thread to.
    pub core: Option<usize>,
    /// Fragments per poll.
    pub fragment_limit: usize,
}

impl Default for HandoffOptions {
    fn default() -> Self {
        Self {
            idle: "backoff".parse().expect("a valid alias"),
            core: None,
            fragment_limit: 64,
        }
    }
}

impl Client {
    /// Seed 002's convenience API: a thread polls `channel`/`stream_id` and sends each message,
    /// copied into a `Vec<u8>`, into `sender`, until `stop` is set or every receiver is gone.
    ///
    /// This is the convenient path, not the fast one: each message is allocated, and
    /// `send` on a full bounded channel (and the receiver's `recv`/`recv_timeout`) park on a
    /// futex; the consumer's wake-ups are exactly the jitter `latency-probe --delivery channel`
    /// demonstrates. For latency, poll a [`Subscriber`](crate::Subscriber) on the consuming thread instead.
    ///
    /// # Errors
    /// [`SubscribeError`] when the subscription cannot be added or the thread cannot start.
    pub fn subscribe(
        &self,
        channel: &str,
        stream_id: i32,
        sender: crossbeam_channel::Sender<Vec<u8>>,
        stop: Arc<AtomicBool>,
        options: HandoffOptions,
    ) -> Result<Handoff, SubscribeError> {
        let mut sub = self.subscription(channel, stream_id).map_err(SubscribeError::Add)?;
        let delivered = Arc::new(AtomicU64::new(0));
        let (stop2, delivered2) = (stop.clone(), delivered.clone());
        let HandoffOptions {
            mut idle,
            core,
            fragment_limit,
        } = options;
        let thread = ThreadBuilder::new()
            .name("aeron-handoff")
            .affinity_opt(core)
            .spawn(move || {
                let mut disconnected = false;
                while !stop2.load(Ordering::Acquire) && !disconnected {
                    let n = sub.poll(
                        &mut |msg: &[u8], _h: &MessageHeader<'_>| {
                            if sender.send(msg.to_vec()).is_err() {
                                disconnected = true;
                            } else {
                                delivered2.fetch_add(1, Ordering::Relaxed);
                            }
                        },
                        fragment_limit,
                    );
                    // The client lost its driver: nothing more will come (the consumer sees
                    // the channel end, and the client's liveness says why).
                    let Ok(n) = n else { break };
                    idle.idle(n);
                }
            })
            .map_err(SubscribeError::Spawn)?;
        Ok(Handoff {
            stop,
            delivered,
            thread: Some(thread),
        })
    }
}

/// Why [`Client::subscribe`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The subscription could not be added.
    Add(AddError),
    /// The polling thread could not start.
    Spawn(SpawnError),
}

impl fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add(e) => e.fmt(f),
            Self::Spawn(e) => write!(f, "could not start the hand-off thread: {e}"),
        }
    }
}

impl std::error::Error for SubscribeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Add(e) => Some(e),
            Self::Spawn(e) => Some(e),
        }
    }
}
