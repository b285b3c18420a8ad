//! Building a report from what a run measured: from the subscriber's recorder, the histograms
//! it carries, the jitter section from both sides' raw material, and one report out of the
//! subscriber's and the publisher's.

use crate::analysis::jitter::Hiccup;
use crate::analysis::verdict::Context;
use crate::measure::recorder::Recorder;
use crate::model::encode;
use crate::model::Accounting;
use crate::model::Env;
use crate::model::Faults;
use crate::model::GroupHistograms;
use crate::model::GroupReport;
use crate::model::Histograms;
use crate::model::PubReport;
use crate::model::RawJitter;
use crate::model::Report;
use crate::model::RunInfo;
use crate::model::RunMode;
use crate::model::Stats;
use crate::model::Tool;
use crate::model::DRIVER_EMBEDDED;
use crate::model::DRIVER_EXTERNAL;
use crate::model::ENCODING;
use crate::model::GROUPS;
use crate::model::UNKNOWN;
use crate::sys::clock::TIMING_MODEL;
use std::collections::BTreeMap;

/// Analyses a run and attaches the `jitter` section and per-group rows to `report`: the
/// subscriber's side first, the publisher's when there is one. The tail is everything at or above
/// the report's p99.9 from the intended send time.
pub fn attach(
    report: &mut crate::model::Report,
    sub: &RawJitter,
    publ: Option<&RawJitter>,
    hiccup: &Hiccup<'_>,
    explain: crate::model::Explain,
) {
    let l = &report.latency_ns;
    let ctx = Context {
        sub_idle: sub.idle.parse().ok(),
        pub_idle: publ.and_then(|p| p.idle.parse().ok()),
        delivery_channel: sub.delivery_channel,
        hot_path_lock: sub.hot_path_lock,
        driver_on_path: sub.driver_on_path || publ.is_some_and(|p| p.driver_on_path),
        tail_threshold_ns: report.latency_ns.p999.max(1),
        cores: aeron_latency::messaging::available_cores().len(),
        // The hot threads' own measurement (with perf's per-fault cost in it) where there is
        // one, else this process's, without perf.
        fault_cost_ns: [Some(&sub.side), publ.map(|p| &p.side)]
            .into_iter()
            .flatten()
            .filter_map(|s| s.fault_cost_ns)
            .max()
            .or_else(crate::sys::thread::fault_cost_ns)
            .unwrap_or(0),
        explain,
        edges: (l.count > 0).then_some([l.p50, l.p90, l.p99, l.p999, l.max]),
    };
    let mut sides = vec![&sub.side];
    sides.extend(publ.map(|p| &p.side));
    let (j, rows) = crate::analysis::jitter::build(&sides, &sub.slow, &sub.sampled, hiccup, &ctx);
    report.attach_jitter(j, rows);
}

impl Histograms {
    /// From a recorder: `start_epoch_s` is the Unix time of the first measured intended send,
    /// `rate` the schedule (messages per second) that places each group in time.
    #[must_use]
    pub fn from_recorder(rec: &Recorder, start_epoch_s: f64, rate: f64) -> Histograms {
        let warmup = rec.plan().map_or(0, |(w, _)| u64::from(w));
        let at = |seq: u64| {
            if rate > 0.0 && rate.is_finite() {
                seq.saturating_sub(warmup) as f64 / rate
            } else {
                0.0
            }
        };
        let groups = rec
            .groups()
            .iter()
            .map(|g| GroupHistograms {
                start_s: at(g.first_seq),
                end_s: at(if g.planned == 0 { g.first_seq } else { g.last_seq + 1 }),
                intended: encode(rec.group_intended(g.index)),
                actual: encode(rec.group_actual(g.index)),
            })
            .collect();
        Histograms {
            start_epoch_s,
            encoding: ENCODING.to_owned(),
            intended: encode(rec.overall_intended()),
            actual: encode(rec.overall_actual()),
            groups,
        }
    }
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

impl Report {
    /// Builds the report from the subscriber's recorder and accounting, adding notes for every
    /// anomaly. `complete` is false when the publisher vanished or no measured message arrived.
    /// Non-finite rates or durations are written as 0 (JSON has no NaN).
    pub fn from_recorder(
        rec: &Recorder,
        acc: &Accounting,
        run: RunInfo,
        offer: BTreeMap<String, u64>,
        env: Env,
    ) -> Report {
        let incomplete_reason = incomplete_reason(rec, acc);
        let notes = anomaly_notes(rec, acc, &env);
        Report {
            schema_version: crate::model::SCHEMA_VERSION,
            sent: acc.sent,
            received: acc.received,
            lost: acc.lost,
            before_join: acc.before_join,
            duplicates: acc.duplicates,
            reordered: acc.reordered,
            decode_errors: acc.decode_errors,
            rate_target: finite_or_zero(run.rate_target),
            rate_achieved: finite_or_zero(run.rate_achieved),
            latency_ns: Stats::from_histogram(rec.overall_intended()),
            latency_actual_ns: Stats::from_histogram(rec.overall_actual()),
            groups: rec.groups().iter().map(GroupReport::from).collect(),
            offer,
            env,
            timing_model: TIMING_MODEL.to_string(),
            complete: incomplete_reason.is_none(),
            incomplete_reason,
            publisher_vanished: acc.publisher_vanished,
            out_of_range: acc.out_of_range,
            warmup_received: acc.received_warmup,
            msg_size: run.msg_size,
            duration_s: finite_or_zero(run.duration_s),
            tool: Tool::this(),
            started_at: run.started_at,
            notes,
            not_one_clock: None,
            publisher: None,
            jitter: None,
            mode: RunMode::OneWay,
            floor: None,
            faults: Faults::default(),
            histograms: None,
            runs: None,
            in_flight: None,
            driver_counters: None,
        }
    }
}

/// Why a run is incomplete: the publisher vanished, no measured message arrived, or the
/// subscriber joined after measured messages were sent.
fn incomplete_reason(rec: &Recorder, acc: &Accounting) -> Option<String> {
    let measured_before_join = acc.before_join.saturating_sub(warmup(rec));
    if acc.publisher_vanished {
        Some(
            "no end marker from the publisher (it stopped or died mid-run): \
             sent is unknown and lost counts only gaps below the highest sequence seen"
                .to_string(),
        )
    } else if acc.received_measured == 0 && acc.received_warmup > 0 {
        // The stream is right: the publisher stopped (interrupted, failed) in its warm-up.
        Some(format!(
            "no measured message arrived: the publisher's end marker came after {} of its warm-up messages \
             (it stopped during the warm-up; its report says why)",
            acc.received_warmup
        ))
    } else if acc.received_measured == 0 {
        Some(
            "no measured message arrived: check that the publisher runs on the same \
             channel, stream and Aeron dir"
                .to_string(),
        )
    } else if measured_before_join > 0 {
        Some(format!(
            "this subscriber joined the stream after {measured_before_join} measured messages were sent (its \
             image started at sequence {}): Aeron never sent them to it, so they are not lost, but this run \
             measured only what came after; start the subscriber before the publisher, or raise --warmup so \
             that a late join falls in the warm-up (on a stream with reliable=false they may have been lost \
             instead: nothing recovers a loss there)",
            acc.before_join
        ))
    } else {
        None
    }
}

/// The run's warm-up messages, from the plan its first message carried (0 without one).
fn warmup(rec: &Recorder) -> u64 {
    rec.plan().map_or(0, |(warmup, _)| u64::from(warmup))
}

/// A note for every anomaly of the accounting, the plan and the environment.
fn anomaly_notes(rec: &Recorder, acc: &Accounting, env: &Env) -> Vec<String> {
    let mut notes = Vec::new();
    if !acc.adds_up() {
        notes.push(format!(
            "accounting does not add up: received {} + before the join {} + lost {} != sent {} (fragments {}, \
             duplicates {}, decode errors {}); messages beyond the end marker arrived \
             (another publisher on this stream?) or duplicates beyond the plan went undetected",
            acc.received,
            acc.before_join,
            acc.lost,
            acc.sent.map_or_else(|| "unknown".to_string(), |s| s.to_string()),
            acc.fragments,
            acc.duplicates,
            acc.decode_errors
        ));
    }
    if acc.before_join > 0 && acc.before_join <= warmup(rec) {
        notes.push(format!(
            "this subscriber joined the stream after the first {} warm-up messages were sent (a late join: \
             another receiver of the channel, or of the IPC publication, was there first); Aeron delivers a \
             stream from where a subscriber joins, so they are not lost, and warm-up is not measured (on a \
             stream with reliable=false they may have been lost instead: nothing recovers a loss there)",
            acc.before_join
        ));
    }
    if acc.negative_latency > 0 {
        notes.push(format!(
            "{} samples had a negative latency (clock anomaly: publisher and subscriber on \
             different hosts or clocks?); recorded as 0",
            acc.negative_latency
        ));
    }
    if acc.clamped > 0 {
        notes.push(format!(
            "{} samples exceeded the histogram range (3,600 s) and were recorded as 3,600 s",
            acc.clamped
        ));
    }
    if acc.out_of_range > 0 {
        notes.push(format!(
            "{} messages had sequence numbers beyond warm-up + planned (publisher sent more \
             than it announced?); counted as received, not checked for duplicates, measured \
             ones are in the last group",
            acc.out_of_range
        ));
    }
    if acc.decode_errors > 0 {
        notes.push(format!(
            "{} fragments were not our message schema (another publisher on this stream, \
             or a schema mismatch); counted, not measured",
            acc.decode_errors
        ));
    }
    if let Some((_, planned)) = rec.plan() {
        if (planned as usize) < GROUPS {
            notes.push(format!(
                "only {planned} measured messages planned for {GROUPS} groups: some groups \
                 are empty"
            ));
        }
    }
    if env.governor != UNKNOWN && env.governor != "performance" {
        notes.push(format!(
            "CPU frequency governor is '{}': latency varies with clock ramp-up; set \
             'performance' for stable results",
            env.governor
        ));
    }
    notes
}

/// How the subscriber's reason begins when the publisher's end marker counts fewer messages
/// than planned ([`combine`] gives the publisher's own reason instead).
pub const PUBLISHER_STOPPED_EARLY: &str = "the publisher stopped early";

/// The subscriber's reason without its first clause when that says only that the publisher
/// stopped early (the publisher's own reason replaces it); `None` when nothing is left.
fn without_publishers(reason: String) -> Option<String> {
    if !reason.starts_with(PUBLISHER_STOPPED_EARLY) {
        return Some(reason);
    }
    reason.split_once("; ").map(|(_, rest)| rest.to_owned())
}

/// Merges the publisher's report into the subscriber's: offer outcomes, target and achieved
/// rate, message size and the publisher's notes; the run is complete only if both were.
pub fn combine(mut sub: Report, publ: Option<PubReport>, embedded: bool, driver_version: &str) -> Report {
    sub.env.driver_kind = if embedded { DRIVER_EMBEDDED } else { DRIVER_EXTERNAL }.to_owned();
    sub.env.driver_version = driver_version.to_owned();
    match publ {
        Some(p) => {
            sub.offer = p.offer.clone();
            sub.rate_target = p.rate_target;
            sub.rate_achieved = p.rate_achieved;
            sub.msg_size = p.msg_size;
            sub.faults.publisher = p.faults_measured;
            let mut pre = p.prefaulted.clone();
            pre.append(&mut sub.faults.prefaulted);
            sub.faults.prefaulted = pre;
            if sub.sent.is_none() && p.sent > 0 {
                sub.notes.push(format!(
                    "the publisher reports {} sent but its end marker never arrived",
                    p.sent
                ));
            }
            if !p.complete {
                sub.complete = false;
                let why = p
                    .incomplete_reason
                    .clone()
                    .unwrap_or_else(|| "publisher stopped early".into());
                sub.incomplete_reason = Some(match sub.incomplete_reason.take().and_then(without_publishers) {
                    // Both interrupted (Ctrl-C): the publisher's words say it and more.
                    Some(s) if why.starts_with(&s) => why,
                    Some(s) => format!("{why}; {s}"),
                    None => why,
                });
            }
            for n in &p.notes {
                // Both sides warn about the same driver directory: say it once.
                if !sub.notes.contains(n) {
                    sub.notes.push(n.clone());
                }
            }
            sub.publisher = Some(p);
            sub.in_flight = sub.littles_law();
        }
        None => {
            sub.complete = false;
            sub.notes
                .push("latency-pub wrote no report (it failed; see its error above)".into());
        }
    }
    sub
}

/// The smallest one-way latency at which the send times cannot be on the receiver's clock: no
/// message takes a second from one thread to another on one host.
pub const ONE_CLOCK_MIN_NS: u64 = 1_000_000_000;

/// Why the measured one-way figures are not latencies, when the send times came from another
/// clock (another host's CLOCK_MONOTONIC, whose offset to this one's is its boot time's): a
/// latency below zero, or every one of them [`ONE_CLOCK_MIN_NS`] or more. `pong`: the sender
/// is ping, whose round trips are the run's figures.
pub fn not_one_clock(acc: &Accounting, min_actual_ns: u64, pong: bool) -> Option<String> {
    let measured = acc.received_measured;
    let evidence = if acc.negative_latency > 0 {
        format!(
            "{} of {measured} latencies below zero, recorded as 0",
            acc.negative_latency
        )
    } else if measured > 0 && min_actual_ns >= ONE_CLOCK_MIN_NS {
        format!(
            "the smallest of {measured} latencies is {}",
            crate::units::format_ns(min_actual_ns)
        )
    } else {
        return None;
    };
    Some(if pong {
        format!(
            "ping's send times are not on this host's clock ({evidence}): ping runs on another host, so these \
             one-way figures are not latencies; ping's round trips, on its one clock, are"
        )
    } else {
        format!(
            "the publisher's send times are not on this host's clock ({evidence}): one-way latency needs the \
             publisher on this host (one CLOCK_MONOTONIC); across hosts run both with --mode rtt, whose round \
             trips read one clock"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_publishers_own_reason_replaces_the_subscribers_word_for_it() {
        let short = format!("{PUBLISHER_STOPPED_EARLY}: its end marker says it sent 5 of the 9 messages it planned");
        assert_eq!(without_publishers(short.clone()), None);
        assert_eq!(
            without_publishers(format!("{short}; this subscriber joined the stream after 3")).as_deref(),
            Some("this subscriber joined the stream after 3")
        );
        let own = "interrupted (SIGINT or SIGTERM): the report holds what was measured until then";
        assert_eq!(without_publishers(own.to_owned()).as_deref(), Some(own));
    }

    #[test]
    fn send_times_on_another_clock_are_named_and_one_clock_s_are_not() {
        let acc = |measured, negative| Accounting {
            received_measured: measured,
            negative_latency: negative,
            ..Accounting::default()
        };
        // One host: a slow run, even one whose fastest message took most of a second.
        assert_eq!(not_one_clock(&acc(100, 0), ONE_CLOCK_MIN_NS - 1, false), None);
        assert_eq!(not_one_clock(&acc(0, 0), 0, false), None);
        // A sender's clock ahead of this one's, and one behind it.
        let ahead = not_one_clock(&acc(100, 0), 3_599_200_000_000, false).expect("named");
        assert!(ahead.contains("the smallest of 100 latencies is 3599.2 s"), "{ahead}");
        assert!(ahead.contains("--mode rtt"), "{ahead}");
        let behind = not_one_clock(&acc(100, 100), 0, true).expect("named");
        assert!(behind.starts_with("ping's send times are not on this host's clock (100 of 100 latencies below zero"));
        assert!(behind.contains("ping's round trips"), "{behind}");
    }
}
