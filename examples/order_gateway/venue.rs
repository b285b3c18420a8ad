//! `--venue`: the feed and the exchange as one thread, `venue`, as a trading venue publishes
//! market data and takes orders on the same thread. The feed then waits for its ticks' times
//! between polls of the orders (idling with `--idle`) instead of sleeping: no thread wakes up
//! per tick, so on two cores every hop is between the two threads that poll.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use messaging::{ConcurrentPublication, IdleStrategy, MessageHeader, OfferError, PollError};

use super::{connect, die, due, order_subscription, polled_past, tick_publication, Received, Shared};
use super::{END, RECONNECT_WITHIN};

/// Ticks sent in one round, between two polls of the orders, when the feed is behind.
const BURST: usize = 16;

/// How often the end tick is sent again until the venue reads the end order.
const END_EVERY: Duration = Duration::from_millis(1);

/// The venue's feed side: what it sent and when its ticks are due.
struct Feed {
    n: u64,
    rate: Option<u64>,
    /// The next tick to send.
    seq: u64,
    /// When the path was up (tick 0's time), or `None` before.
    start: Option<Instant>,
    /// When the end tick was last sent.
    end_sent: Option<Instant>,
    /// Until when the path may take to come up.
    deadline: Instant,
}

/// The feed's publication went with its client (the driver went): build a new one.
struct Closed;

impl Feed {
    /// Sends the ticks that are due (at most [`BURST`]) and, after the last, the end tick every
    /// [`END_EVERY`]; the ticks sent.
    fn send_due(&mut self, ticks: &ConcurrentPublication, s: &Shared) -> Result<usize, Closed> {
        let Some(start) = self.start else {
            // The first tick waits for the path to be up, as in the three-thread layout.
            if s.ready.load(Ordering::Acquire) {
                self.start = Some(Instant::now());
            } else if Instant::now() > self.deadline {
                die("venue: the gateway's orders never reached the venue");
            }
            return Ok(0);
        };
        if self.seq >= self.n {
            return self.send_end(ticks).map(|()| 0);
        }
        let mut sent = 0;
        while sent < BURST && self.seq < self.n {
            if self
                .rate
                .is_some_and(|rate| Instant::now() < due(start, rate, self.seq))
            {
                break;
            }
            match ticks.offer(&self.seq.to_le_bytes()) {
                Ok(_) => {
                    self.seq += 1;
                    sent += 1;
                    s.published.store(self.seq, Ordering::Release);
                }
                Err(OfferError::ClientClosed) => return Err(Closed),
                Err(e) if e.is_retryable() => break,
                Err(e) => die(&format!("venue: {e}")),
            }
        }
        Ok(sent)
    }

    /// The end tick (unstamped), again every [`END_EVERY`]: a driver restart may lose it.
    fn send_end(&mut self, ticks: &ConcurrentPublication) -> Result<(), Closed> {
        if self.end_sent.is_some_and(|t| t.elapsed() < END_EVERY) {
            return Ok(());
        }
        match ticks.offer_with_reserved_value(&END.to_le_bytes(), 0) {
            Ok(_) => self.end_sent = Some(Instant::now()),
            Err(OfferError::ClientClosed) => return Err(Closed),
            Err(e) if e.is_retryable() => {}
            Err(e) => die(&format!("venue: {e}")),
        }
        Ok(())
    }
}

/// The venue: sends ticks 0..n at `rate` (stamped when the tap records) and reads the orders
/// between them, checking their sequence, until the end order. After losing the driver it
/// reconnects and goes on from the first tick that was not published.
pub(crate) fn venue(s: Arc<Shared>, n: u64, rate: Option<u64>, idle: &str, delay: Duration) -> Received {
    let mut idle: IdleStrategy = idle.parse().unwrap();
    let mut r = Received::default();
    let mut feed = Feed {
        n,
        rate,
        seq: 0,
        start: None,
        end_sent: None,
        deadline: Instant::now() + RECONNECT_WITHIN,
    };
    let mut done = false;
    while !done {
        let client = connect(&s, "venue");
        let (Some(ticks), Some(mut orders)) = (tick_publication(&client, &s), order_subscription(&client, &s)) else {
            continue; // the driver went meanwhile: a new client
        };
        // A closed publication (the driver went) ends the round: a new client.
        while let Ok(sent) = feed.send_due(&ticks, &s) {
            let polled = orders.poll(
                &mut |order: &[u8], _: &MessageHeader<'_>| {
                    if r.take(order) {
                        s.finished.store(true, Ordering::Release);
                        done = true;
                    } else if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                },
                16,
            );
            match polled {
                Ok(k) if !done => idle.idle(k + sent),
                Ok(_) | Err(PollError::ClientClosed) => break,
                Err(e) => polled_past("venue", &e),
            }
        }
    }
    s.finished.store(true, Ordering::Release);
    r
}
