//! [`Client::subscribe`]: a subscription polled by a thread of its own, which hands each
//! message to the caller's handler ([`Handoff`], [`HandoffOptions`], [`HandoffEnd`],
//! [`SubscribeError`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::client::Client;
use crate::error::{AddError, PollError, SpawnError};
use crate::idle::IdleStrategy;
use crate::subscription::{ControlledAction, MessageHeader, Subscriber};
use crate::thread::{PinnedThread, ThreadBuilder};

/// How many poll errors a [`Handoff`] keeps until they are taken (all are counted).
pub const HANDOFF_ERRORS_KEPT: usize = 64;

/// Why the thread behind [`Client::subscribe`] stopped polling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandoffEnd {
    /// The caller's `stop` flag was set, or the [`Handoff`] was stopped or dropped.
    Stopped,
    /// Every receiver of the channel is gone.
    ReceiverGone,
    /// The client lost its media driver ([`PollError::ClientClosed`]): nothing more will come;
    /// [`DriverLiveness::error`](crate::DriverLiveness::error) says why.
    ClientClosed,
    /// The thread panicked (a bug in `messaging`: please report it).
    Panicked,
}

impl HandoffEnd {
    fn code(self) -> u8 {
        match self {
            Self::Stopped => 1,
            Self::ReceiverGone => 2,
            Self::ClientClosed => 3,
            Self::Panicked => 4,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Stopped),
            2 => Some(Self::ReceiverGone),
            3 => Some(Self::ClientClosed),
            4 => Some(Self::Panicked),
            _ => None,
        }
    }
}

impl fmt::Display for HandoffEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stopped => "stopped by the caller",
            Self::ReceiverGone => "every receiver of the channel is gone",
            Self::ClientClosed => {
                "the client lost its media driver (Client::liveness().error() says why); build a new client"
            }
            Self::Panicked => "the hand-off thread panicked (a bug in messaging: please report it)",
        })
    }
}

/// What the polling thread and the [`Handoff`] share.
#[derive(Default)]
struct Shared {
    delivered: AtomicU64,
    /// Polls that failed and were polled past.
    errors: AtomicU64,
    /// The first of them not yet taken (the lock is taken only when a poll fails).
    kept: Mutex<Vec<PollError>>,
    /// [`HandoffEnd::code`], 0 while polling.
    end: AtomicU8,
}

impl Shared {
    fn failed(&self, e: PollError) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() < HANDOFF_ERRORS_KEPT {
            kept.push(e);
        }
    }

    fn ended(&self, end: HandoffEnd) {
        let _ = self
            .end
            .compare_exchange(0, end.code(), Ordering::AcqRel, Ordering::Acquire);
    }
}

/// The thread behind [`Client::subscribe`]: stops and joins when dropped.
///
/// A poll error that leaves the subscription readable (a
/// [`PollError::MalformedFrame`] in one publisher's image) does not stop the thread: it is
/// counted ([`poll_errors`](Self::poll_errors)), kept for [`take_poll_errors`](Self::take_poll_errors),
/// and the other images are still delivered, as Aeron's agent runner hands an error to its
/// error handler and goes on. The thread stops on the caller's `stop`, when every receiver is
/// gone, or when the client loses its driver; [`end`](Self::end) says which.
pub struct Handoff {
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    thread: Option<PinnedThread<()>>,
}

impl fmt::Debug for Handoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("delivered", &self.delivered())
            .field("poll_errors", &self.poll_errors())
            .field("end", &self.end())
            .finish()
    }
}

impl Handoff {
    /// Messages sent into the channel so far.
    #[must_use]
    pub fn delivered(&self) -> u64 {
        self.shared.delivered.load(Ordering::Relaxed)
    }

    /// Polls so far that returned an error and were polled past (each also kept for
    /// [`take_poll_errors`](Self::take_poll_errors), up to [`HANDOFF_ERRORS_KEPT`]).
    #[must_use]
    pub fn poll_errors(&self) -> u64 {
        self.shared.errors.load(Ordering::Relaxed)
    }

    /// The poll errors kept since the last call, oldest first: up to [`HANDOFF_ERRORS_KEPT`]
    /// at a time; [`poll_errors`](Self::poll_errors) counts those not kept too.
    #[must_use]
    pub fn take_poll_errors(&self) -> Vec<PollError> {
        let mut kept = self
            .shared
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *kept)
    }

    /// Why the thread stopped polling, or `None` while it polls.
    #[must_use]
    pub fn end(&self) -> Option<HandoffEnd> {
        HandoffEnd::from_code(self.shared.end.load(Ordering::Acquire))
    }

    /// The polling thread's Linux thread id.
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.thread.as_ref().map_or(0, PinnedThread::tid)
    }

    /// Stops polling, waits for the thread, and says why it stopped: [`HandoffEnd::Stopped`]
    /// unless it had stopped already (its receivers gone, or the driver lost).
    pub fn stop(mut self) -> HandoffEnd {
        self.close()
    }

    /// [`stop`](Self::stop) that keeps the `Handoff`, to read what the thread counted and kept
    /// once it can add no more (its last [`take_poll_errors`](Self::take_poll_errors)). Closing
    /// again returns the same end.
    pub fn close(&mut self) -> HandoffEnd {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                self.shared.ended(HandoffEnd::Panicked);
            }
        }
        self.end().unwrap_or(HandoffEnd::Panicked)
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        self.close();
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
    /// copied into a `Vec<u8>`, into `sender`, until `stop` is set, every receiver is gone, or
    /// the client loses its driver ([`Handoff::end`] says which; a poll error that leaves the
    /// subscription readable is kept on the [`Handoff`] and polled past).
    ///
    /// A full bounded channel holds the thread back without blocking it for long: a message
    /// that finds no room within a millisecond stays in the log and is handed over once there
    /// is room (the thread looks at `stop` meanwhile); a publisher ahead of the consumer is
    /// back-pressured by the log, as with any slow subscriber. Nothing polled is dropped.
    ///
    /// This is the convenient path, not the fast one: each message is allocated, and the
    /// receiver's `recv`/`recv_timeout` parks on a futex that each hand-over wakes; the
    /// consumer's wake-ups are exactly the jitter `latency-probe --delivery channel`
    /// demonstrates. For latency, poll a [`Subscriber`] on the consuming thread instead.
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
        let sub = self.subscription(channel, stream_id).map_err(SubscribeError::Add)?;
        let shared = Arc::new(Shared::default());
        let (stop2, shared2) = (stop.clone(), shared.clone());
        let thread = ThreadBuilder::new()
            .name("aeron-handoff")
            .affinity_opt(options.core)
            .spawn(move || {
                let _guard = PanicGuard(&shared2);
                let end = hand_off(sub, &sender, &stop2, &shared2, options);
                shared2.ended(end);
            })
            .map_err(SubscribeError::Spawn)?;
        Ok(Handoff {
            stop,
            shared,
            thread: Some(thread),
        })
    }
}

/// How long the hand-off thread waits for room in a full channel before it leaves the message
/// in the log and looks at `stop` again.
const SEND_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// Sends `msg` without blocking for long: at once when there is room (no clock read), else
/// waiting up to [`SEND_WAIT`] for it (a receiver that frees room, or on a zero-capacity
/// channel comes to take it, even with `try_recv`, gets it at once). A message that did not go
/// stays in the log (the caller aborts it) and comes again at the next poll, so `stop` is
/// seen and nothing is dropped.
fn hand_over(
    sender: &crossbeam_channel::Sender<Vec<u8>>,
    msg: Vec<u8>,
) -> Result<(), crossbeam_channel::SendTimeoutError<Vec<u8>>> {
    match sender.try_send(msg) {
        Ok(()) => Ok(()),
        Err(crossbeam_channel::TrySendError::Full(msg)) => sender.send_timeout(msg, SEND_WAIT),
        Err(crossbeam_channel::TrySendError::Disconnected(msg)) => {
            Err(crossbeam_channel::SendTimeoutError::Disconnected(msg))
        }
    }
}

/// Says [`HandoffEnd::Panicked`] when the hand-off thread unwinds, before anyone joins it.
struct PanicGuard<'a>(&'a Shared);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.ended(HandoffEnd::Panicked);
        }
    }
}

/// The hand-off thread's loop: polls until told to stop, the receivers are gone or the driver
/// is lost, counting and keeping any other poll error and polling on.
fn hand_off(
    mut sub: Subscriber,
    sender: &crossbeam_channel::Sender<Vec<u8>>,
    stop: &AtomicBool,
    shared: &Shared,
    options: HandoffOptions,
) -> HandoffEnd {
    let HandoffOptions {
        mut idle,
        fragment_limit,
        ..
    } = options;
    let mut disconnected = false;
    loop {
        if stop.load(Ordering::Acquire) {
            return HandoffEnd::Stopped;
        }
        let polled = sub.controlled_poll(
            &mut |msg: &[u8], _h: &MessageHeader<'_>| match hand_over(sender, msg.to_vec()) {
                Ok(()) => {
                    shared.delivered.fetch_add(1, Ordering::Relaxed);
                    ControlledAction::Continue
                }
                Err(crossbeam_channel::SendTimeoutError::Timeout(_)) => ControlledAction::Abort,
                Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => {
                    disconnected = true;
                    ControlledAction::Abort
                }
            },
            fragment_limit,
        );
        if disconnected {
            return HandoffEnd::ReceiverGone;
        }
        match polled {
            Ok(n) => idle.idle(n),
            Err(PollError::ClientClosed) => return HandoffEnd::ClientClosed,
            Err(e) => {
                shared.failed(e);
                idle.idle(0);
            }
        }
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
