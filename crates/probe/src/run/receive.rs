//! What a receiving hot loop records per message (latency, accounting, stalls, the slowest
//! samples), shared by the subscriber and by ping's echo receive in round-trip mode.

use crate::measure::bands::BandSampler;
use crate::measure::monitor::Monitor;
use crate::measure::recorder::Recorder;
use crate::measure::recorder::SampleKind;
use crate::measure::slow::SlowSamples;
use crate::model::JitterSide;
use crate::model::Octave;
use crate::model::RawJitter;
use crate::model::SlowSample;
use crate::model::StallLog;
use crate::model::GROUPS;
use crate::model::SLOW_SAMPLES_KEPT;
use crate::model::STALLS_LOGGED;
use crate::run::Delivery;
use crate::sys::clock::now_ns;
use aeron_latency::messaging::tap::Stamp;
use aeron_latency::wire::{self, Kind, Message};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The most unreadable images a run reports (each is said once, when met).
pub(crate) const POLL_ERRORS_KEPT: usize = 16;

/// What a measuring poll loop keeps: the recorder, spans, stalls and slowest samples. The
/// subscriber uses it, and so does ping (`--mode rtt`) for the echoes.
pub(crate) struct State {
    pub(crate) rec: Recorder,
    /// Sequence number and receive time of the last warm-up or measured message.
    pub(crate) last: Option<(u64, i64)>,
    /// Page faults of this thread when the first measured message arrived.
    pub(crate) faults_at_start: Option<u64>,
    /// Whether to read them (ping's sending side counts its own thread's faults).
    pub(crate) count_faults: bool,
    pub(crate) end: Option<u64>,
    pub(crate) fragments: u64,
    pub(crate) intended_span: (i64, i64),
    /// Sequence numbers of the messages `intended_span` was read from.
    pub(crate) seq_span: (u64, u64),
    pub(crate) receive_span: (i64, i64),
    pub(crate) monitor: Option<Monitor>,
    /// Group boundary reached inside a poll; counters are read after the poll returns.
    pub(crate) pending: Option<usize>,
    pub(crate) stalls: Option<StallLog>,
    pub(crate) slow: SlowSamples,
    /// Every measured message, stratified by latency, for the band analysis (diagnostics on).
    pub(crate) bands: Option<BandSampler>,
    pub(crate) lock: Option<Arc<Mutex<u64>>>,
    /// The live line's shared counters, when it is on.
    pub(crate) live: Option<Arc<crate::run::live::Live>>,
    /// Images a poll could not read (a malformed frame in a publisher's log), in words.
    pub(crate) poll_errors: Vec<String>,
    /// The first measured message's length, bytes (the run's message size).
    msg_size: u64,
}

impl State {
    pub(crate) fn new(monitor: Option<Monitor>, lock: Option<Arc<Mutex<u64>>>, stalls: bool) -> State {
        let on = monitor.as_ref().is_some_and(Monitor::is_on);
        State {
            rec: Recorder::new(),
            last: None,
            faults_at_start: None,
            count_faults: true,
            end: None,
            fragments: 0,
            intended_span: (0, 0),
            seq_span: (0, 0),
            receive_span: (0, 0),
            monitor,
            pending: None,
            stalls: (on && stalls).then(|| StallLog::new(crate::measure::monitor::STALL_THRESHOLD_NS, STALLS_LOGGED)),
            slow: SlowSamples::new(SLOW_SAMPLES_KEPT),
            bands: on.then(BandSampler::new),
            lock,
            live: None,
            poll_errors: Vec::new(),
            msg_size: 0,
        }
    }

    /// A poll met an image it cannot read ([`PollError::MalformedFrame`], said once per
    /// image): kept for the report (at most [`POLL_ERRORS_KEPT`]); the other images are still
    /// read. Not on the hot path: it allocates.
    ///
    /// [`PollError::MalformedFrame`]: aeron_latency::messaging::PollError::MalformedFrame
    #[cold]
    pub(crate) fn poll_failed(&mut self, e: &aeron_latency::messaging::PollError) {
        if self.poll_errors.len() < POLL_ERRORS_KEPT {
            self.poll_errors.push(e.to_string());
        }
    }

    /// One message, with its frame's reserved value (where a compact sample's send time is).
    #[inline]
    pub(crate) fn on_message(&mut self, bytes: &[u8], reserved: i64) {
        self.fragments += 1;
        let Some(s) = self.sample(bytes, reserved) else {
            return self.rec.record_decode_error();
        };
        let kind = match s.kind {
            Kind::End => {
                self.end = Some(s.seq);
                return;
            }
            Kind::Warmup => SampleKind::Warmup,
            Kind::Measured => SampleKind::Measured,
        };
        if let Some(l) = &self.lock {
            // The planted hot-path lock: once per message, as a real shared lock would be.
            *l.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        }
        let now = now_ns();
        self.last = Some((s.seq, now));
        let boundary = self
            .rec
            .record(s.seq, kind, s.warmup, s.planned, now - s.intended_ns, now - s.sent_ns);
        if kind == SampleKind::Measured {
            if self.intended_span.0 == 0 {
                self.intended_span.0 = s.intended_ns;
                self.seq_span.0 = s.seq;
                self.receive_span.0 = now;
                self.msg_size = bytes.len() as u64;
            }
            self.intended_span.1 = s.intended_ns;
            self.seq_span.1 = s.seq;
            self.receive_span.1 = now;
            if let Some(l) = &self.live {
                l.record(s.seq, (now - s.intended_ns).max(0) as u64);
            }
            let sample = SlowSample {
                latency_ns: (now - s.intended_ns).max(0) as u64,
                seq: s.seq,
                intended_ns: s.intended_ns,
                sent_ns: s.sent_ns,
                received_ns: now,
            };
            self.slow.offer(sample);
            if let Some(b) = &mut self.bands {
                b.offer(sample);
            }
            if boundary.is_some() {
                self.pending = boundary;
            }
        }
    }

    /// The sample a message holds: a full one as it is, a compact one completed from the run's
    /// counts (the recorder's plan, which the run's first message, a full one, set) and from
    /// the send stamp in `reserved`. `None`: not a sample, or a compact one before the plan is
    /// known or without a send stamp.
    #[inline]
    fn sample(&self, bytes: &[u8], reserved: i64) -> Option<wire::Sample> {
        match wire::decode_message(bytes).ok()? {
            Message::Full(s) => Some(s),
            Message::Compact(c) => {
                let (warmup, planned) = self.rec.plan()?;
                let Stamp::Sent(sent_ns) = Stamp::from_reserved(reserved) else {
                    return None;
                };
                Some(wire::Sample {
                    seq: c.seq,
                    intended_ns: c.intended_ns,
                    sent_ns,
                    publisher_id: 0,
                    kind: c.kind(warmup),
                    warmup,
                    planned,
                })
            }
        }
    }

    /// Reads the counters if a group boundary was crossed (outside the poll, so no Aeron lock
    /// is held while reading).
    #[inline]
    pub(crate) fn after_poll(&mut self) {
        if let Some(g) = self.pending.take() {
            if self.count_faults && self.faults_at_start.is_none() {
                // The first boundary is the first measured message's: once per run, one
                // getrusage syscall, right before the counters' first read, so that both
                // count the faults of one phase (read in the handler, it also counted the
                // rest of that poll: a fault there, such as the first run of a code page,
                // only getrusage saw).
                self.faults_at_start = crate::sys::thread::thread_faults();
            }
            if let Some(m) = &mut self.monitor {
                m.snapshot(g);
            }
            if let Some(s) = &mut self.stalls {
                s.restart(now_ns());
            }
        }
    }

    pub(crate) fn finish(mut self, stopped_early: Option<String>) -> SubOutcome {
        // First: what follows (draining the monitor, sorting) allocates and is not measuring.
        let faults_measured = self
            .faults_at_start
            .and_then(|a| Some(crate::sys::thread::thread_faults()?.saturating_sub(a)));
        let jitter = self.monitor.take().map(|mut m| {
            m.snapshot(GROUPS);
            if let Some(s) = self.stalls.take() {
                m.set_stalls(crate::sys::thread::current_tid(), s);
            }
            m.finish()
        });
        SubOutcome {
            recorder: self.rec,
            end: self.end,
            stopped_early,
            intended_span: self.intended_span,
            seq_span: self.seq_span,
            receive_span: self.receive_span,
            core: None,
            hot_tid: 0,
            jitter: jitter.filter(|j| j.source.name != crate::model::Source::Off),
            slow: self.slow.into_sorted(),
            sampled: self.bands.map(BandSampler::into_octaves).unwrap_or_default(),
            idle: String::new(),
            delivery: Delivery::Inline,
            hot_path_lock: false,
            driver_on_path: false,
            explain: crate::model::Explain::default(),
            echo: None,
            faults_measured,
            prefaulted: Vec::new(),
            setup_notes: Vec::new(),
            poll_errors: self.poll_errors,
            started_at: None,
            msg_size: self.msg_size,
        }
    }

    /// Sets the count the end marker would carry (ping knows it without an echo).
    pub(crate) fn set_end(&mut self, sent: u64) {
        self.end = Some(sent);
    }

    pub(crate) fn done(&self, total: Option<u64>) -> bool {
        self.end.is_some() || total.is_some_and(|t| self.fragments >= t)
    }
}

/// What pong's echoing did (`--mode rtt`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct EchoStats {
    /// Stream the echoes went out on.
    pub stream: i32,
    /// Messages echoed (end marker included).
    pub echoed: u64,
    /// Failed claim attempts by outcome name (retried).
    pub retries: std::collections::BTreeMap<String, u64>,
    /// Why echoing stopped, if it did.
    pub failure: Option<String>,
}

/// What the subscriber collected.
#[derive(Debug)]
pub struct SubOutcome {
    /// Latencies and sequence accounting.
    pub recorder: Recorder,
    /// The count the end marker carried, if it came.
    pub end: Option<u64>,
    /// Why the run stopped early, if it did.
    pub stopped_early: Option<String>,
    /// Intended send times of the first and last measured message (for the target rate).
    pub intended_span: (i64, i64),
    /// Sequence numbers of the first and last measured message (those of `intended_span`).
    pub seq_span: (u64, u64),
    /// Receive times of the first and last measured message.
    pub receive_span: (i64, i64),
    /// Core of the hot thread, if pinned.
    pub core: Option<usize>,
    /// Linux thread id of the hot thread.
    pub hot_tid: i32,
    /// The jitter counters of this process's threads (and the driver's), if diagnostics ran.
    pub jitter: Option<JitterSide>,
    /// The slowest samples, slowest first.
    pub slow: Vec<SlowSample>,
    /// Every measured message, stratified by latency (diagnostics on).
    pub sampled: Vec<Octave>,
    /// How it ran (for the analysis).
    pub idle: String,
    /// Delivery used.
    pub delivery: Delivery,
    /// Whether the lock plant ran.
    pub hot_path_lock: bool,
    /// Its channels pass through the media driver (not `aeron:ipc`).
    pub driver_on_path: bool,
    /// The band the verdict explains.
    pub explain: crate::model::Explain,
    /// Round-trip mode: what the echoing did.
    pub echo: Option<EchoStats>,
    /// Page faults of the hot thread from the first measured message to the end.
    pub faults_measured: Option<u64>,
    /// What was pre-faulted before measuring.
    pub prefaulted: Vec<String>,
    /// Warnings about the setup (a world-writable driver directory).
    pub setup_notes: Vec<String>,
    /// Images the polls could not read (a malformed frame in a publisher's log), in words.
    pub poll_errors: Vec<String>,
    /// When the subscriber's run started (set by [`run`](crate::run::subscriber::run)).
    pub started_at: Option<std::time::SystemTime>,
    /// The length of the first measured message, bytes (0: none came).
    pub msg_size: u64,
}

impl SubOutcome {
    /// The raw jitter material (for `--jitter-raw` and the analysis), if diagnostics ran.
    #[must_use]
    pub fn raw_jitter(&self) -> Option<RawJitter> {
        Some(RawJitter {
            side: self.jitter.clone()?,
            slow: self.slow.clone(),
            sampled: self.sampled.clone(),
            idle: self.idle.clone(),
            delivery_channel: self.delivery == Delivery::Channel,
            hot_path_lock: self.hot_path_lock,
            driver_on_path: self.driver_on_path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(8))]
    struct Aligned([u8; 64]);

    fn full(st: &mut State, seq: u64, kind: Kind, intended_ns: i64) {
        let mut buf = Aligned([0; 64]);
        let s = wire::Sample {
            seq,
            intended_ns,
            sent_ns: intended_ns,
            publisher_id: 1,
            kind,
            warmup: 2,
            planned: 3,
        };
        let len = wire::encode_into(&mut buf.0, &s, 0).unwrap();
        st.on_message(&buf.0[..len], 0);
    }

    fn compact(st: &mut State, seq: u64, intended_ns: i64, reserved: i64) {
        let mut buf = Aligned([0; 64]);
        let c = wire::Compact { seq, intended_ns };
        let len = wire::encode_compact_into(&mut buf.0, &c, None).unwrap();
        st.on_message(&buf.0[..len], reserved);
    }

    #[test]
    fn pong_failing_to_echo_only_the_end_marker_is_complete() {
        let report = |echoed: u64| {
            let mut st = State::new(None, None, false);
            let t = now_ns();
            for seq in 0..5 {
                full(&mut st, seq, if seq < 2 { Kind::Warmup } else { Kind::Measured }, t);
            }
            full(&mut st, 5, Kind::End, t);
            let mut out = st.finish(None);
            out.echo = Some(EchoStats {
                stream: 7,
                echoed,
                retries: Default::default(),
                failure: Some(format!("echoing stopped after {echoed} messages: not connected")),
            });
            crate::run::subscriber::to_report(&out, crate::model::Env::detect(), 64)
        };
        // All five echoed, the end marker not: ping had gone.
        let r = report(5);
        assert!(r.complete, "{:?}", r.incomplete_reason);
        assert!(
            r.notes.iter().any(|n| n.contains("the end marker was not echoed")),
            "{:?}",
            r.notes
        );
        // A message not echoed: ping waited for it in vain.
        let r = report(4);
        assert!(!r.complete);
        assert!(r
            .incomplete_reason
            .unwrap()
            .contains("echoing stopped after 4 messages"));
    }

    #[test]
    fn an_end_marker_below_the_plan_makes_the_report_incomplete_however_the_run_ended() {
        // The plan is 2 warm-up + 3 measured: an end marker counting 5 is a whole run, one
        // counting 4 is a publisher that stopped early (Ctrl-C reaching it first).
        let report = |sent: u64, stopped_early: Option<&str>| {
            let mut st = State::new(None, None, false);
            let t = now_ns();
            for seq in 0..sent {
                full(&mut st, seq, if seq < 2 { Kind::Warmup } else { Kind::Measured }, t);
            }
            full(&mut st, sent, Kind::End, t);
            let out = st.finish(stopped_early.map(str::to_owned));
            crate::run::subscriber::to_report(&out, crate::model::Env::detect(), 64)
        };
        let whole = report(5, None);
        assert!(whole.complete, "{:?}", whole.incomplete_reason);
        let short = report(4, None);
        assert!(!short.complete);
        assert_eq!(short.lost, 0, "what was sent all arrived");
        let why = short.incomplete_reason.unwrap();
        assert!(
            why.contains("the publisher stopped early: its end marker says it sent 4 of the 5"),
            "{why}"
        );
        // Stopped here too: this side's reason alone, not both.
        let why = report(4, Some("interrupted")).incomplete_reason.unwrap();
        assert_eq!(why, "interrupted");
    }

    #[test]
    fn compact_samples_take_the_runs_counts_and_the_send_stamp() {
        let mut st = State::new(None, None, false);
        let t = now_ns();
        // Before the run's first (full) message, a compact one cannot be told warm-up or measured.
        compact(&mut st, 1, t, t);
        full(&mut st, 0, Kind::Warmup, t);
        // A warm-up (the run has 2).
        compact(&mut st, 1, t, t);
        // Measured, but without a send stamp: not a sample.
        compact(&mut st, 2, t, 0);
        // Measured, each sent 150 ns after its intended time.
        for seq in 2..5 {
            compact(&mut st, seq, t, t + 150);
        }
        full(&mut st, 5, Kind::End, t);
        let a = st.rec.finish(st.end);
        assert_eq!((a.received, a.received_warmup, a.received_measured), (5, 2, 3), "{a:?}");
        assert_eq!((a.decode_errors, a.lost, a.sent), (2, 0, Some(5)), "{a:?}");
        let (i, a) = (st.rec.overall_intended(), st.rec.overall_actual());
        assert_eq!((i.len(), a.len()), (3, 3), "the three measured ones");
        let gap = i.mean() - a.mean();
        assert!((100.0..200.0).contains(&gap), "actual latency is from the stamp: {gap}");
    }
}
