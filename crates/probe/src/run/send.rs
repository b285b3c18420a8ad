//! The publisher's hot loop: for each message, pace, claim, encode, commit, complete (one-way:
//! the publish-only cost; round trip: pong's echo), tally, check the driver's liveness.
//!
//! Timing model: see [`crate::run::publisher`]. Diagnostics are a type parameter: [`Off`]
//! compiles to nothing, [`On`] logs the loop's stalls and aeron-rs lock waits and reads the
//! per-thread counters at the group boundaries (never per message). Every way the loop can end
//! early is one [`Stop`].

use std::time::{Duration, Instant};

use aeron_latency::messaging::{
    DriverLiveness, IdleStrategy, MessageHeader, OfferError, PollError, Publication, PublicationKind, Subscriber,
};

use aeron_latency::messaging::tap::Stamp;
use aeron_latency::wire::{self, Compact, Kind, Sample};
use hdrhistogram::Histogram;

use crate::measure::histogram::{new_latency_histogram, record_saturating};
use crate::measure::monitor::{Monitor, STALL_THRESHOLD_NS, STALL_TICK_EVERY};
use crate::model::{JitterSide, OfferOutcome, OfferTally, StallLog, GROUPS, STALLS_LOGGED};
use crate::run::receive::{State, SubOutcome};
pub use crate::run::stop::Stop;
use crate::sys::clock::now_ns;
use crate::sys::pacing::Pacer;
use crate::sys::thread::{current_tid, thread_faults};

/// How a report counts an offer failure.
#[must_use]
pub fn outcome_of(e: &OfferError) -> OfferOutcome {
    match e {
        OfferError::NotConnected => OfferOutcome::NotConnected,
        OfferError::BackPressured => OfferOutcome::BackPressured,
        OfferError::AdminAction => OfferOutcome::AdminAction,
        OfferError::MaxPositionExceeded => OfferOutcome::MaxPositionExceeded,
        _ => OfferOutcome::Other,
    }
}

/// What the hot loop sends, and how it retries.
#[derive(Debug)]
pub struct Plan {
    /// Warm-up messages, sent first.
    pub warmup: u64,
    /// Measured messages.
    pub measured: u64,
    /// Messages per second.
    pub rate: u64,
    /// Padding that makes a full sample the requested size (in a compact run, the size of its
    /// full messages: `run::frames::COMPACT_RUN_FULL_LEN`).
    pub padding: usize,
    /// `Some(padding)` when the requested size is below a full sample's 64 bytes: every
    /// message but the first (which carries the run's counts) and the end marker is then a
    /// compact sample of `wire::compact_encoded_len(padding)` bytes, its send time in the
    /// frame's reserved value.
    pub compact: Option<Option<usize>>,
    /// How long a subscriber may stay away (and twice that: back-pressure).
    pub wait: Duration,
    /// Written into every message.
    pub publisher_id: u32,
    /// The driver's liveness (one atomic load per check).
    pub live: DriverLiveness,
    /// Keep each measured message's send lag ([`Sent::lags`]).
    pub keep_lags: bool,
    /// Planted: busy-wait this long per message between the actual-send stamp and the commit
    /// (`--plant-delay-ns`; 0: nothing planted).
    pub plant_delay_ns: u64,
}

impl Plan {
    /// First measured message of group `g` (the recorder's formula: m belongs to g iff
    /// g * measured <= m * GROUPS < (g + 1) * measured).
    #[must_use]
    pub fn group_start(&self, g: usize) -> u64 {
        self.warmup + (g as u128 * u128::from(self.measured)).div_ceil(GROUPS as u128) as u64
    }

    /// The encoded length of message `i`.
    #[inline]
    #[must_use]
    pub fn message_len(&self, i: u64) -> usize {
        match self.compact {
            Some(padding) if i > 0 => wire::compact_encoded_len(padding),
            _ => wire::encoded_len(self.padding),
        }
    }

    fn sample(&self) -> Sample {
        Sample {
            seq: 0,
            intended_ns: 0,
            sent_ns: 0,
            publisher_id: self.publisher_id,
            kind: Kind::Warmup,
            warmup: self.warmup as u32,
            planned: self.measured as u32,
        }
    }
}

/// What the hot loop sent and saw.
#[derive(Debug)]
pub struct Sent {
    /// Messages sent (committed).
    pub sent: u64,
    /// Whether the end marker went out.
    pub end_marker_sent: bool,
    /// Offer/try_claim outcomes.
    pub outcomes: OfferTally,
    /// Largest lag of an actual send time behind its intended time, ns.
    pub max_lag_ns: u64,
    /// Publish-only cost (claim + encode + commit) of the measured messages, one-way mode:
    /// when the offer returned, from the actual send time.
    pub cost: Histogram<u64>,
    /// When the offer of each measured message returned, from its intended send time
    /// (one-way mode): the first durability stage.
    pub returned: Histogram<u64>,
    /// When message 0 was due (CLOCK_MONOTONIC ns): with the rate, every intended send time.
    pub schedule_start_ns: i64,
    /// Actual send time of the first and the last measured message.
    pub first_measured_ns: i64,
    /// See `first_measured_ns`.
    pub last_measured_ns: i64,
    /// Why the loop ended early.
    pub stop: Option<Stop>,
    /// What the diagnostics collected.
    pub jitter: Option<JitterSide>,
    /// Round trip: the echoes ping timed.
    pub rtt: Option<SubOutcome>,
    /// Page faults of the hot thread over the measured phase.
    pub faults_measured: Option<u64>,
    /// With [`Plan::keep_lags`]: each measured message's actual send time less its intended
    /// one, ns (saturating at `u32::MAX`), in send order. Allocated and touched before the
    /// first message; the loop only writes within its capacity.
    pub lags: Vec<u32>,
}

impl Sent {
    fn new() -> Sent {
        Sent {
            sent: 0,
            end_marker_sent: false,
            outcomes: OfferTally::default(),
            max_lag_ns: 0,
            cost: new_latency_histogram(),
            returned: new_latency_histogram(),
            schedule_start_ns: 0,
            first_measured_ns: 0,
            last_measured_ns: 0,
            stop: None,
            jitter: None,
            rtt: None,
            faults_measured: None,
            lags: Vec::new(),
        }
    }

    /// After the last message (or the stop): the measured period ends, the end marker goes out
    /// unless nobody would read it, the diagnostics and ping's echoes are collected.
    fn wrap_up<K: PublicationKind, D: Diagnostics>(
        &mut self,
        publisher: &mut Publication<K>,
        plan: &Plan,
        mut diag: D,
        echo: Option<Echo<'_>>,
        faults_at_start: Option<u64>,
    ) {
        if self.first_measured_ns == 0 {
            self.first_measured_ns = self.last_measured_ns;
        }
        // The end marker goes out before the (slower) drain of the switch records, so the
        // subscriber's period ends with the last message too.
        self.faults_measured = faults_at_start.and_then(|a| Some(thread_faults()?.saturating_sub(a)));
        diag.end();
        if !self
            .stop
            .as_ref()
            .is_some_and(|s| s.driver_lost() || s.subscriber_lost())
        {
            self.end_marker_sent = send_end_marker(publisher, plan, self.sent);
        }
        self.jitter = diag.finish();
        self.rtt = echo.map(|(_, mut st)| {
            // Ping knows its own count; the echo of the end marker is not awaited, nor that
            // of a message in flight when a signal cut the wait short.
            let awaited = match self.stop {
                Some(Stop::EchoInterrupted { seq }) => seq,
                _ => self.sent,
            };
            st.set_end(awaited);
            st.finish(self.stop.as_ref().map(ToString::to_string))
        });
    }
}

/// What the hot loop tells its diagnostics. [`Off`] does nothing and compiles to nothing.
pub trait Diagnostics {
    /// A clock reading of the loop (stall detection).
    fn tick(&mut self, now: i64);
    /// A clock reading taken for the diagnostics alone (none when they are off).
    fn tick_now(&mut self);
    /// The loop paused on purpose (an idle sleep): forget the gap up to now.
    fn restart(&mut self);
    /// After message `i`: at a group boundary, reads the counters; true when it did (the next
    /// pacing wait must read the clock afresh).
    fn after(&mut self, i: u64, plan: &Plan) -> bool;
    /// The measured period ended.
    fn end(&mut self);
    /// What was collected.
    fn finish(self) -> Option<JitterSide>;
}

/// No diagnostics.
#[derive(Debug)]
pub struct Off;

impl Diagnostics for Off {
    #[inline(always)]
    fn tick(&mut self, _: i64) {}
    #[inline(always)]
    fn tick_now(&mut self) {}
    #[inline(always)]
    fn restart(&mut self) {}
    #[inline(always)]
    fn after(&mut self, _: u64, _: &Plan) -> bool {
        false
    }
    #[inline(always)]
    fn end(&mut self) {}
    #[inline(always)]
    fn finish(self) -> Option<JitterSide> {
        None
    }
}

/// Diagnostics on: the monitor and the loop's stall log.
#[derive(Debug)]
pub struct On {
    monitor: Monitor,
    stalls: StallLog,
    next_group: usize,
    next_boundary: u64,
}

impl On {
    /// Diagnostics for a loop that publishes `plan`.
    #[must_use]
    pub fn new(monitor: Monitor, plan: &Plan) -> On {
        On {
            monitor,
            stalls: StallLog::new(STALL_THRESHOLD_NS, STALLS_LOGGED),
            next_group: 0,
            next_boundary: plan.group_start(0),
        }
    }
}

impl Diagnostics for On {
    #[inline]
    fn tick(&mut self, now: i64) {
        self.stalls.tick(now);
    }

    #[inline]
    fn tick_now(&mut self) {
        self.stalls.tick(now_ns());
    }

    #[inline]
    fn restart(&mut self) {
        self.stalls.restart(now_ns());
    }

    #[inline]
    fn after(&mut self, i: u64, plan: &Plan) -> bool {
        if i < self.next_boundary {
            return false;
        }
        while self.next_group < GROUPS && i >= plan.group_start(self.next_group) {
            self.next_group += 1;
        }
        self.monitor.snapshot(self.next_group - 1);
        self.next_boundary = if self.next_group < GROUPS {
            plan.group_start(self.next_group)
        } else {
            u64::MAX
        };
        self.stalls.restart(now_ns());
        true
    }

    fn end(&mut self) {
        self.monitor.snapshot(GROUPS);
    }

    fn finish(mut self) -> Option<JitterSide> {
        self.monitor.set_stalls(current_tid(), self.stalls);
        Some(self.monitor.finish())
    }
}

/// Ping's side of a round trip: the echo stream and what it records.
pub(crate) type Echo<'a> = (&'a mut Subscriber, State);

/// Sends the plan: warm-up and measured messages on schedule, then the end marker.
pub(crate) fn hot_loop<K: PublicationKind, D: Diagnostics>(
    publisher: &mut Publication<K>,
    plan: &Plan,
    mut diag: D,
    idle: &mut IdleStrategy,
    mut echo: Option<Echo<'_>>,
) -> Sent {
    let mut r = Sent::new();
    if plan.keep_lags {
        r.lags = Vec::with_capacity(plan.measured as usize);
        crate::measure::histogram::pretouch(&mut r.lags);
    }
    let mut faults_at_start = None;
    // Start a little ahead so the first intended time is in the future.
    let pacer = Pacer::new(now_ns() + 1_000_000, plan.rate).expect("rate validated before");
    r.schedule_start_ns = pacer.start_ns();
    let mut sample = plan.sample();
    let mut after_commit: Option<i64> = None;
    for i in 0..plan.warmup + plan.measured {
        let intended = pacer.intended_ns(i);
        let now = pacer.wait_until(i, || {
            let t = after_commit.take().unwrap_or_else(now_ns);
            diag.tick(t);
            t
        });
        let claimed = send(
            publisher,
            plan,
            &mut diag,
            idle,
            &mut r.outcomes,
            &mut sample,
            i,
            intended,
            now,
        );
        let now = match claimed {
            Ok(stamp) => stamp,
            Err(stop) => {
                r.stop = Some(stop);
                break;
            }
        };
        let lag = (now - intended).max(0) as u64;
        if i >= plan.warmup && r.lags.len() < r.lags.capacity() {
            // Within the capacity reserved before the loop: no allocation. Before the echo
            // wait, so a round trip that fails still has its message's lag.
            r.lags.push(u32::try_from(lag).unwrap_or(u32::MAX));
        }
        let done = match &mut echo {
            Some((sub, st)) => {
                // No extra clock read inside the round trip: the echo's receive reading ends it
                // and starts the next pacing wait.
                match await_echo(sub, st, i, now, plan, idle, &mut diag) {
                    Ok(at) => at,
                    Err(stop) => {
                        r.sent = i + 1;
                        r.stop = Some(stop);
                        break;
                    }
                }
            }
            None => {
                let t = now_ns();
                if i >= plan.warmup {
                    record_saturating(&mut r.cost, (t - now).max(0) as u64);
                    record_saturating(&mut r.returned, (t - intended).max(0) as u64);
                }
                t
            }
        };
        after_commit = Some(done);
        r.sent = i + 1;
        r.max_lag_ns = r.max_lag_ns.max(lag);
        if i == plan.warmup {
            r.first_measured_ns = now;
            // Once per run: one getrusage syscall (the next pacing wait reads the clock afresh,
            // so it does not delay the next message's stamp).
            faults_at_start = thread_faults();
            after_commit = None;
        }
        r.last_measured_ns = now;
        if !plan.live.is_active() {
            // One atomic load per message, after its readings.
            r.stop = Some(Stop::DriverLost { seq: i, sent: i + 1 });
            break;
        }
        if crate::sys::signals::interrupted() {
            // Another: Ctrl-C ends the run with the end marker and the report.
            r.stop = Some(Stop::Interrupted { seq: i, sent: i + 1 });
            break;
        }
        if diag.after(i, plan) {
            after_commit = None;
        }
    }
    r.wrap_up(publisher, plan, diag, echo, faults_at_start);
    r
}

/// Claims space for message `i`, retrying what Aeron calls transient, stamps it with
/// `now` (read again after each failed attempt) and commits. Returns the stamp.
#[allow(clippy::too_many_arguments)]
#[inline]
fn send<K: PublicationKind, D: Diagnostics>(
    publisher: &mut Publication<K>,
    plan: &Plan,
    diag: &mut D,
    idle: &mut IdleStrategy,
    outcomes: &mut OfferTally,
    sample: &mut Sample,
    i: u64,
    intended: i64,
    mut now: i64,
) -> Result<i64, Stop> {
    let mut failing_since: Option<i64> = None;
    loop {
        let e = match publisher.try_claim(plan.message_len(i)) {
            // The client lost its driver: not an offer outcome (it never reached the log).
            Err(OfferError::ClientClosed) => return Err(Stop::DriverLost { seq: i, sent: i }),
            Ok(mut claim) => {
                let encoded = match plan.compact {
                    Some(padding) if i > 0 => {
                        // The send time goes where the tap's send stamp goes.
                        claim.set_reserved_value(Stamp::Sent(now).to_reserved());
                        let c = Compact {
                            seq: i,
                            intended_ns: intended,
                        };
                        wire::encode_compact_into(claim.buffer_mut(), &c, padding)
                    }
                    _ => {
                        sample.seq = i;
                        sample.intended_ns = intended;
                        sample.sent_ns = now;
                        sample.kind = if i < plan.warmup { Kind::Warmup } else { Kind::Measured };
                        wire::encode_into(claim.buffer_mut(), sample, plan.padding)
                    }
                };
                if let Err(error) = encoded {
                    claim.abort();
                    return Err(Stop::Encode { seq: i, error });
                }
                if plan.plant_delay_ns > 0 {
                    // From now, not from the send stamp: the claim and the encoding already
                    // took about 100 ns, and a wait ending at stamp + delay would add only what
                    // exceeds them (a planted +100 ns added nothing).
                    planted_delay(now_ns(), plan.plant_delay_ns);
                }
                claim.commit();
                outcomes.count(OfferOutcome::Ok);
                return Ok(now);
            }
            Err(e) => e,
        };
        outcomes.count(outcome_of(&e));
        if !plan.live.is_active() {
            return Err(Stop::DriverLost { seq: i, sent: i });
        }
        if !e.is_retryable() {
            return Err(Stop::Offer { seq: i, error: e });
        }
        now = now_ns();
        // Retrying is the loop running, not a stall (the outcomes are counted in `offer`).
        diag.tick(now);
        let since = *failing_since.get_or_insert(now);
        if e == OfferError::NotConnected && now - since > plan.wait.as_nanos() as i64 {
            return Err(Stop::SubscriberGone {
                seq: i,
                wait: plan.wait,
            });
        }
        if now - since > 2 * plan.wait.as_nanos() as i64 {
            return Err(Stop::BackPressure {
                seq: i,
                for_ns: now - since,
            });
        }
        idle.idle_once();
        if idle.sleeps() {
            diag.restart();
        }
    }
}

/// The planted delay: spins on the clock until `ns` after `from` (read just before), so
/// the message is committed that much later than it would have been.
#[cold]
fn planted_delay(from: i64, ns: u64) {
    let until = from.saturating_add(i64::try_from(ns).unwrap_or(i64::MAX));
    while now_ns() < until {
        std::hint::spin_loop();
    }
}

/// Ping: polls the echo stream until pong's echo of `seq` arrives; returns its receive time.
fn await_echo<D: Diagnostics>(
    sub: &mut Subscriber,
    st: &mut State,
    seq: u64,
    sent: i64,
    plan: &Plan,
    idle: &mut IdleStrategy,
    diag: &mut D,
) -> Result<i64, Stop> {
    let sleeps = idle.sleeps();
    let spins = idle.spins();
    let mut polls: u32 = 0;
    loop {
        polls = polls.wrapping_add(1);
        let n = match sub.poll(
            &mut |bytes: &[u8], h: &MessageHeader<'_>| st.on_message(bytes, h.reserved_value()),
            16,
        ) {
            Ok(n) => n,
            // The client lost its driver.
            Err(PollError::ClientClosed) => return Err(Stop::EchoDriverLost { seq }),
            // One publisher's log unreadable: the report says so; pong's may still come.
            Err(e) => {
                st.poll_failed(&e);
                0
            }
        };
        if let Some((last, at)) = st.last {
            if last == seq {
                diag.tick(at);
                idle.reset();
                return Ok(at);
            }
        }
        // The clock every 4,096 polls (every poll when the idle strategy sleeps anyway).
        if sleeps || polls.is_multiple_of(4096) {
            if !plan.live.is_active() {
                return Err(Stop::EchoDriverLost { seq });
            }
            if crate::sys::signals::interrupted() {
                return Err(Stop::EchoInterrupted { seq });
            }
            if now_ns() - sent > plan.wait.as_nanos() as i64 {
                return Err(Stop::EchoTimeout { seq, wait: plan.wait });
            }
        }
        if n > 0 {
            continue;
        }
        // Waiting for the echo is the loop running, not a stall. While spinning, one clock
        // reading every STALL_TICK_EVERY empty polls keeps the reads out of the echo's way;
        // any other idle step (a yield, a sleep) may take long itself: read it every time.
        if !spins || polls.is_multiple_of(STALL_TICK_EVERY) {
            diag.tick_now();
        }
        idle.idle(0);
        if sleeps {
            diag.restart();
        }
    }
}

/// The end marker (seq = messages sent), retried for up to `--wait` (not at all once
/// interrupted with no subscriber). True when it went out.
fn send_end_marker<K: PublicationKind>(publisher: &mut Publication<K>, plan: &Plan, sent: u64) -> bool {
    let end = Sample {
        seq: sent,
        intended_ns: now_ns(),
        sent_ns: now_ns(),
        kind: Kind::End,
        ..plan.sample()
    };
    let len = wire::encoded_len(plan.padding);
    let deadline = Instant::now() + plan.wait;
    while Instant::now() < deadline {
        match publisher.try_claim(len) {
            Ok(mut claim) => {
                let ok = wire::encode_into(claim.buffer_mut(), &end, plan.padding).is_ok();
                if ok {
                    claim.commit();
                }
                return ok;
            }
            // Interrupted (by the user, or by latency-probe when the run overran), with no
            // subscriber left to read it: the report matters more than the marker.
            Err(OfferError::NotConnected) if crate::sys::signals::interrupted() => return false,
            Err(e) if e.is_retryable() => std::thread::sleep(Duration::from_micros(50)),
            Err(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_errors_map_to_their_report_outcomes() {
        assert_eq!(outcome_of(&OfferError::BackPressured), OfferOutcome::BackPressured);
        assert_eq!(outcome_of(&OfferError::NotConnected), OfferOutcome::NotConnected);
        assert_eq!(outcome_of(&OfferError::AdminAction), OfferOutcome::AdminAction);
        assert_eq!(
            outcome_of(&OfferError::MaxPositionExceeded),
            OfferOutcome::MaxPositionExceeded
        );
        assert_eq!(outcome_of(&OfferError::ClientClosed), OfferOutcome::Other);
    }
}
