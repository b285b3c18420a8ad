//! A subscription that records latency: [`Subscriber::record_latency`] and the polls that
//! record (the plain polls hand over to these when a recorder is set, so a subscription that
//! does not record pays one branch).

use crate::error::TapError;
use crate::log::term_reader::{Deliver, Frame, Step};
use crate::subscription::{ControlledAction, MessageHeader, Subscriber};
use crate::PollError;

use super::record::{RecordLatency, SubscriberTap};
use super::stamp::Stamp;
use super::writer::Tap;

impl Subscriber {
    /// Records the latency of every stamped message this subscription hands over into `tap`:
    /// the hop (and, when asked, end to end) of each session into its own interval, written
    /// to the figure's log by the tap's thread. Call it on the thread that polls, before the
    /// measured phase (a session's histograms are allocated, and their pages mapped, when its
    /// first message comes).
    /// Replaces an earlier recorder; the publishers must stamp on the tap's clock.
    ///
    /// # Errors
    /// [`TapError::BadName`] for a figure name that is not a file name.
    pub fn record_latency(&mut self, tap: &Tap, what: RecordLatency) -> Result<(), TapError> {
        self.tap = Some(Box::new(SubscriberTap::new(tap, what, self.stream_id())?));
        Ok(())
    }

    /// Stops recording (what was recorded stays in the tap's intervals).
    pub fn stop_recording(&mut self) {
        self.tap = None;
    }

    /// [`Subscriber::poll`] with the recorder: every message handed over is kept.
    ///
    /// The recorder is out of the subscription while the handler runs: a handler that panics
    /// drops it with the unwinding poll (its sources retire, so the writer takes what was kept
    /// before the panic, and the subscription records no more: the messages of that poll come
    /// again, and are not counted twice).
    #[inline]
    pub(crate) fn poll_tapped<F>(&mut self, handler: &mut F, fragment_limit: usize) -> Result<usize, PollError>
    where
        F: FnMut(&[u8], &MessageHeader<'_>),
    {
        // A controlled poll whose handler keeps every message (the inlined branch on its
        // action folds away).
        let mut keep_all = |bytes: &[u8], header: &MessageHeader<'_>| {
            handler(bytes, header);
            ControlledAction::Continue
        };
        self.controlled_poll_tapped(&mut keep_all, fragment_limit)
    }

    /// [`Subscriber::controlled_poll`] with the recorder: a message the handler refuses
    /// (`Abort`) is not recorded; it comes again and is recorded when kept. A handler that
    /// panics drops the recorder, as in [`poll_tapped`](Self::poll_tapped).
    #[inline]
    pub(crate) fn controlled_poll_tapped<F>(
        &mut self,
        handler: &mut F,
        fragment_limit: usize,
    ) -> Result<usize, PollError>
    where
        F: FnMut(&[u8], &MessageHeader<'_>) -> ControlledAction,
    {
        let mut tap = self.tap.take().expect("the caller checked");
        let asked = tap.asked();
        let result = self.read_messages(fragment_limit, &mut Recording { tap: &mut tap, handler });
        tap.end_poll(asked);
        self.tap = Some(tap);
        result
    }
}

/// A recording poll's delivery: measures each message, hands it to the handler, and keeps it
/// unless the handler refuses it. A type rather than a closure so that its body is inlined
/// into the read (a closure this size is called, which costs a recording poll of one message
/// a few ns more).
struct Recording<'a, F> {
    tap: &'a mut SubscriberTap,
    handler: &'a mut F,
}

impl<F: FnMut(&[u8], &MessageHeader<'_>) -> ControlledAction> Deliver for Recording<'_, F> {
    #[inline(always)]
    fn deliver(&mut self, bytes: &[u8], frame: &Frame<'_>) -> Step {
        let m = self.tap.measure(frame.session_id(), frame.reserved_value());
        let action = (self.handler)(
            bytes,
            &MessageHeader {
                frame: *frame,
                received: m.received(),
            },
        );
        if action != ControlledAction::Abort {
            self.tap.keep(m);
        }
        action.into()
    }
}

impl MessageHeader<'_> {
    /// The stamp to forward this message with when the service sends it on at `now` (its
    /// stamp clock): its send time and the message's age since the origin (the age it came
    /// with, plus its hop, plus `now` minus the receive time). `None` unless its subscription
    /// records ([`Subscriber::record_latency`]) and it carried a stamp. Write it with
    /// [`offer_with_reserved_value`](crate::Publication::offer_with_reserved_value) or
    /// [`Claim::set_reserved_value`](crate::Claim::set_reserved_value) and
    /// [`Stamp::to_reserved`].
    #[inline]
    #[must_use]
    pub fn forwarded_stamp(&self, now: i64) -> Option<Stamp> {
        let received = self.received?;
        let latency = Stamp::from_reserved(self.reserved_value()).latency(received)?;
        Some(Stamp::forwarded(now, latency.end_to_end_ns + (now - received)))
    }
}
