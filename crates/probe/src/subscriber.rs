//! The subscribing side of a run (`latency-sub`).
//!
//! Timing model: the hot thread polls the subscription (busy-spin by default); for every
//! message it reads CLOCK_MONOTONIC once, right after decoding, and records
//! `now - intended_ns` (coordinated-omission corrected) and `now - sent_ns` (what the
//! transport adds) into pre-allocated HdrHistograms, overall and in 20 groups by sequence
//! number. No allocation (after the first message sizes the sequence bitset), lock or syscall
//! per message.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{Client, IdleStrategy, MessageHeader, Subscriber, ThreadBuilder};
use aeron_latency::wire::{self, Kind};

use crate::clock::now_ns;
use crate::recorder::{Recorder, SampleKind};
use crate::SetupError;

/// What a subscribing run needs.
#[derive(Debug, Clone)]
pub struct SubConfig {
    /// Aeron directory of the driver.
    pub dir: PathBuf,
    /// Channel URI.
    pub channel: String,
    /// Stream id.
    pub stream: i32,
    /// Stop after this many messages (warm-up included) even without an end marker.
    pub total: Option<u64>,
    /// Give up this long after starting.
    pub timeout: Duration,
    /// Core for the hot thread.
    pub core: Option<usize>,
    /// Idle strategy between empty polls.
    pub idle: IdleStrategy,
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
    /// Receive times of the first and last measured message.
    pub receive_span: (i64, i64),
    /// Core of the hot thread, if pinned.
    pub core: Option<usize>,
    /// Linux thread id of the hot thread.
    pub hot_tid: i32,
}

/// Receives until the end marker, `total` messages, or the timeout; never loses what it
/// measured (an early stop is reported in [`SubOutcome::stopped_early`]).
///
/// # Errors
/// [`SetupError::Setup`] when the driver, subscription or core is unusable.
pub fn run(cfg: &SubConfig) -> Result<SubOutcome, SetupError> {
    let client = Client::builder()
        .dir(&cfg.dir)
        .pre_touch_mapped_memory(true)
        .build()
        .map_err(|e| SetupError(e.to_string()))?;
    let subscriber = client
        .subscription(&cfg.channel, cfg.stream)
        .map_err(|e| SetupError(e.to_string()))?;
    let (total, timeout, mut idle) = (cfg.total, cfg.timeout, cfg.idle.clone());
    let hot = ThreadBuilder::new()
        .name("latency-sub")
        .affinity_opt(cfg.core)
        .spawn(move || {
            let mut subscriber = subscriber;
            let out = hot_loop(&mut subscriber, total, timeout, &mut idle);
            (out, subscriber)
        })
        .map_err(|e| SetupError(format!("--core: {e}")))?;
    let (core, hot_tid) = (hot.core(), hot.tid());
    let (mut out, subscriber) = hot
        .join()
        .map_err(|_| SetupError("the receiving thread panicked".into()))?;
    drop(subscriber);
    drop(client);
    out.core = core;
    out.hot_tid = hot_tid;
    Ok(out)
}

struct State {
    rec: Recorder,
    end: Option<u64>,
    fragments: u64,
    intended_span: (i64, i64),
    receive_span: (i64, i64),
}

impl State {
    #[inline]
    fn on_message(&mut self, bytes: &[u8]) {
        self.fragments += 1;
        let s = match wire::decode(bytes) {
            Ok(s) => s,
            Err(_) => return self.rec.record_decode_error(),
        };
        let kind = match s.kind {
            Kind::End => {
                self.end = Some(s.seq);
                return;
            }
            Kind::Warmup => SampleKind::Warmup,
            Kind::Measured => SampleKind::Measured,
        };
        let now = now_ns();
        self.rec
            .record(s.seq, kind, s.warmup, s.planned, now - s.intended_ns, now - s.sent_ns);
        if kind == SampleKind::Measured {
            if self.intended_span.0 == 0 {
                self.intended_span.0 = s.intended_ns;
                self.receive_span.0 = now;
            }
            self.intended_span.1 = s.intended_ns;
            self.receive_span.1 = now;
        }
    }
}

fn hot_loop(sub: &mut Subscriber, total: Option<u64>, timeout: Duration, idle: &mut IdleStrategy) -> SubOutcome {
    let mut st = State {
        rec: Recorder::new(),
        end: None,
        fragments: 0,
        intended_span: (0, 0),
        receive_span: (0, 0),
    };
    let started = Instant::now();
    let mut stopped_early = None;
    let mut polls: u32 = 0;
    loop {
        let n = sub.poll(&mut |bytes: &[u8], _h: &MessageHeader| st.on_message(bytes), 64);
        if st.end.is_some() || total.is_some_and(|t| st.fragments >= t) {
            break;
        }
        idle.idle(n);
        polls = polls.wrapping_add(1);
        // Look at the clock every 4,096 polls only: cheap (vDSO), but not free.
        if polls.is_multiple_of(4096) && started.elapsed() > timeout {
            stopped_early = Some(format!(
                "--timeout {:.1} s reached before the publisher's end marker",
                timeout.as_secs_f64()
            ));
            break;
        }
    }
    SubOutcome {
        recorder: st.rec,
        end: st.end,
        stopped_early,
        intended_span: st.intended_span,
        receive_span: st.receive_span,
        core: None,
        hot_tid: 0,
    }
}

/// Builds the report from what the subscriber collected. The subscriber does not see the
/// publisher's offer outcomes: `offer` stays empty (latency-probe fills it from latency-pub).
#[must_use]
pub fn to_report(out: &SubOutcome, env: crate::report::Env, msg_size: u64) -> crate::report::Report {
    let acc = out.recorder.finish(out.end);
    let measured = acc.received_measured;
    let rate = |span: (i64, i64)| {
        let d = (span.1 - span.0) as f64;
        if measured > 1 && d > 0.0 {
            (measured - 1) as f64 * 1e9 / d
        } else {
            0.0
        }
    };
    let run = crate::report::RunInfo {
        rate_target: rate(out.intended_span),
        rate_achieved: rate(out.receive_span),
        msg_size,
        duration_s: (out.receive_span.1 - out.receive_span.0).max(0) as f64 / 1e9,
        started_at: crate::report::utc_timestamp(std::time::SystemTime::now()),
    };
    let mut r = crate::report::Report::from_recorder(&out.recorder, &acc, run, Default::default(), env);
    if let Some(why) = &out.stopped_early {
        r.complete = false;
        r.incomplete_reason = Some(match r.incomplete_reason.take() {
            Some(other) => format!("{why}; {other}"),
            None => why.clone(),
        });
    }
    r
}
