//! The text report people read: one screen by default ([`View::Summary`]), everything with
//! `--detail` ([`View::Detail`]).

use crate::model::Faults;
use crate::model::Floor;
use crate::model::Report;
use crate::model::RunMode;
use crate::model::Stats;
use crate::model::OFFER_OUTCOMES;
use crate::units::count_or_dash;
use crate::units::fmt_mean;
use crate::units::format_ns;
use std::fmt::Write as _;

impl Floor {
    /// Text lines for the report: the floor before/after and the ratios, plus a warning when it
    /// moved.
    #[must_use]
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let core = |c: Option<usize>| c.map_or("any".to_owned(), |c| c.to_string());
        let p = |s: &Stats| {
            format!(
                "p50 {} p99 {} p99.9 {}",
                crate::units::format_ns(s.p50),
                crate::units::format_ns(s.p99),
                crate::units::format_ns(s.p999)
            )
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Floor (raw cache-line round trip, cores {} <-> {}, {:.2} s each): before {}",
            core(self.cores.0),
            core(self.cores.1),
            self.seconds_each,
            p(&self.before.round_trip_ns)
        );
        match &self.after {
            Some(a) => {
                let _ = writeln!(out, "  after {}", p(&a.round_trip_ns));
            }
            None => out.push_str("  after: not measured (the run ended early)\n"),
        }
        let r: Vec<String> = self.ratios.iter().map(|(n, x)| format!("{n} {x:.1}x")).collect();
        let _ = writeln!(out, "  latency / floor at the same percentile: {}", r.join("  "));
        if self.moved {
            let _ = writeln!(
                out,
                "  WARNING: the floor moved during the run (p50 {} before, {} after): this machine's inter-core \
                 latency changed regime, so compare nothing from this run; run again",
                crate::units::format_ns(self.before.round_trip_ns.p50),
                crate::units::format_ns(self.after.as_ref().map_or(0, |a| a.round_trip_ns.p50)),
            );
        }
        out
    }
}

impl Floor {
    /// The floor in one line for the summary: cores, p50 before and after, and a warning when
    /// it moved.
    #[must_use]
    pub fn render_line(&self) -> String {
        let core = |c: Option<usize>| c.map_or("any".to_owned(), |c| c.to_string());
        let after = self
            .after
            .as_ref()
            .map_or("not measured (the run ended early)".to_owned(), |a| {
                format_ns(a.round_trip_ns.p50)
            });
        let moved = if self.moved {
            ": MOVED (inter-core latency changed regime), compare nothing from this run"
        } else {
            ""
        };
        format!(
            "floor (raw cache-line round trip, cores {} <-> {}): p50 {} before, {after} after{moved}",
            core(self.cores.0),
            core(self.cores.1),
            format_ns(self.before.round_trip_ns.p50),
        )
    }
}

impl Faults {
    /// One line for the text report.
    #[must_use]
    pub fn render(&self) -> String {
        let mut s = format!(
            "page faults while measuring (hot threads, getrusage): publisher {}, subscriber {}",
            count_or_dash(self.publisher),
            count_or_dash(self.subscriber)
        );
        if self.prefaulted.is_empty() {
            s.push_str("; nothing pre-faulted");
        } else {
            s.push_str("; pre-faulted before measuring: ");
            s.push_str(&self.prefaulted.join("; "));
        }
        s
    }
}

/// The accounting sentence: the counts, and whether they add up.
fn accounting_line(r: &Report) -> String {
    let sent = r.sent.map_or_else(|| "unknown".to_string(), |s| s.to_string());
    // Messages sent before a late subscriber joined are named only when there were some.
    let (joined, terms) = if r.before_join > 0 {
        (
            format!(", before the join {}", r.before_join),
            "received + before the join + lost",
        )
    } else {
        (String::new(), "received + lost")
    };
    let verdict = match r.sent {
        Some(sent) if r.received + r.before_join + r.lost == sent => format!("adds up ({terms} = sent)"),
        Some(sent) => format!(
            "DOES NOT ADD UP: {terms} = {} but sent = {sent}",
            r.received + r.before_join + r.lost
        ),
        None => "sent unknown (no end marker): lost counts only gaps below the highest \
                 sequence seen"
            .to_string(),
    };
    format!(
        "accounting: sent {sent}, received {} (warm-up {}){joined}, lost {}, duplicates {}, \
         reordered {}, decode errors {}, out of range {}: {verdict}",
        r.received, r.warmup_received, r.lost, r.duplicates, r.reordered, r.decode_errors, r.out_of_range
    )
}

/// How much of a report the text shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// One screen (at most [`SUMMARY_LINES`] lines for a single run): the run and its
    /// accounting, the overall percentiles with their ratio to the floor, the 20 groups, the
    /// verdict for the band asked and one line per other band.
    #[default]
    Summary,
    /// Everything: the timing model, the environment, offer outcomes, faults, the driver's
    /// counters, the publisher, every note, and the whole jitter diagnosis with each finding's
    /// evidence and fix (`--detail`).
    Detail,
}

/// The most lines [`View::Summary`] prints for one run.
pub const SUMMARY_LINES: usize = 50;

/// The human-readable report in `view`; `INCOMPLETE: reason` first when the run is incomplete.
/// [`View::Detail`]: header (timing model, environment, run parameters), accounting, overall
/// latencies (intended and actual side by side), the floor, the
/// [`GROUPS`](crate::model::GROUPS) groups, offer outcomes, faults, driver counters, the
/// publisher, notes and the jitter diagnosis.
#[must_use]
pub fn render_text(r: &Report, view: View) -> String {
    let mut out = String::new();
    // `write!` to a String cannot fail.
    let o = &mut out;
    if !r.complete {
        let reason = r.incomplete_reason.as_deref().unwrap_or("reason unknown");
        let _ = writeln!(o, "INCOMPLETE: {reason}\n");
    }
    match view {
        View::Detail => header(o, r),
        View::Summary => {
            let _ = writeln!(
                o,
                "{} {}, started {}: {}",
                r.tool.name,
                r.tool.version,
                r.started_at,
                run_words(r)
            );
            let _ = writeln!(o, "{}", accounting_line(r));
            if let Some(line) = doctor_line(&r.env.doctor) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    if let Some(line) = r.publisher.as_ref().and_then(planted_line) {
        let _ = writeln!(o, "{line}");
    }
    // Said once: an incomplete one-way run gives it as its reason.
    if let Some(why) = r
        .not_one_clock
        .as_ref()
        .filter(|w| !r.incomplete_reason.as_ref().is_some_and(|i| i.contains(w.as_str())))
    {
        let _ = writeln!(o, "NOT ONE CLOCK: {why}");
    }
    overall(o, r, view);
    groups(o, r);
    match view {
        View::Detail => {
            details(o, r);
            if let Some(j) = &r.jitter {
                let rows: Vec<Option<crate::model::GroupJitter>> = r.groups.iter().map(|g| g.jitter.clone()).collect();
                o.push_str(&crate::render::jitter::render(j, &rows));
            }
        }
        View::Summary => {
            if let Some(j) = &r.jitter {
                o.push_str(&crate::render::jitter::render_verdict(j));
            }
            let _ = writeln!(o, "{}", more_line(r));
        }
    }
    out
}

/// `target 20000 msg/s, achieved 20000.0 msg/s, 64 B messages, 3.00 s measured` (with the mode
/// in the summary's first line).
fn run_words(r: &Report) -> String {
    let mode = match r.mode {
        RunMode::OneWay => "one-way",
        RunMode::Rtt => "round trips",
    };
    format!(
        "{mode}, target {:.0} msg/s, achieved {:.1} msg/s, {} B messages, {:.2} s measured",
        r.rate_target, r.rate_achieved, r.msg_size, r.duration_s
    )
}

/// The detail view's header: tool, timing model, environment, doctor, run, accounting and
/// Little's law.
fn header(o: &mut String, r: &Report) {
    let _ = writeln!(o, "{} {} report, started {}", r.tool.name, r.tool.version, r.started_at);
    let _ = writeln!(o, "timing model: {}", r.timing_model);
    let e = &r.env;
    let _ = writeln!(
        o,
        "env: {} ({} cores), kernel {}, governor {}, driver {} {}, client {}",
        e.cpu_model, e.cores, e.kernel, e.governor, e.driver_kind, e.driver_version, e.client
    );
    if let Some(line) = doctor_line(&e.doctor) {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(
        o,
        "run: target {:.0} msg/s, achieved {:.1} msg/s, {} B messages, {:.2} s measured",
        r.rate_target, r.rate_achieved, r.msg_size, r.duration_s
    );
    let _ = writeln!(o, "{}", accounting_line(r));
    if let Some(n) = r.in_flight {
        let _ = writeln!(
            o,
            "Little's law: {:.0} msg/s x mean latency {} = {n:.3} messages in flight on average{}",
            r.rate_achieved,
            format_ns(r.latency_ns.mean.round() as u64),
            match r.mode {
                // Ping waits for each echo: more than one in flight waited to be sent.
                RunMode::Rtt if n <= 1.0 =>
                    " (one outstanding at a time: the share of time a message is out)".to_owned(),
                RunMode::Rtt => format!(
                    " (one outstanding at a time; the other {:.3} waited to be sent: ping fell behind its \
                     schedule, so lower --rate to time the round trip alone)",
                    n - 1.0
                ),
                RunMode::OneWay => " (size buffers and concurrency from this, seed 004)".to_owned(),
            }
        );
    }
}

/// The overall table, intended and actual side by side; the summary adds each percentile's
/// ratio to the floor as a third column and gives the floor one line, the detail view prints
/// the floor's own section.
fn overall(o: &mut String, r: &Report, view: View) {
    let what = match r.mode {
        RunMode::OneWay => "latency",
        RunMode::Rtt => "round trip",
    };
    let ratios = match (&r.floor, view) {
        (Some(f), View::Summary) => Some(&f.ratios),
        _ => None,
    };
    let _ = writeln!(o, "\noverall {what} (ns < 10 µs, µs < 10 ms, ms < 10 s, else s)");
    let third = if ratios.is_some() {
        format!("{:>12}", "/ floor")
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "{:<8}{:>22}{:>22}{third}",
        "", "from intended send", "from actual send"
    );
    let (i, a) = (&r.latency_ns, &r.latency_actual_ns);
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "count", i.count, a.count);
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "min", format_ns(i.min), format_ns(a.min));
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "mean", fmt_mean(i.mean), fmt_mean(a.mean));
    for ((label, vi), (_, va)) in i.percentiles().into_iter().zip(a.percentiles()) {
        let ratio = ratios
            .and_then(|rs| rs.iter().find(|(n, _)| n == label))
            .map_or(String::new(), |(_, x)| format!(" {:>11}", format!("{x:.1}x")));
        let _ = writeln!(o, "{:<8}{:>22}{:>22}{ratio}", label, format_ns(vi), format_ns(va));
    }
    let _ = writeln!(o, "{:<8}{:>22}{:>22}", "max", format_ns(i.max), format_ns(a.max));
    if let Some(f) = &r.floor {
        match view {
            View::Detail => {
                let _ = write!(o, "\n{}", f.render());
            }
            View::Summary => {
                let _ = writeln!(o, "{}", f.render_line());
            }
        }
    }
}

/// The groups table.
fn groups(o: &mut String, r: &Report) {
    let _ = writeln!(
        o,
        "\n{} time-ordered groups (latency from intended send)",
        r.groups.len()
    );
    let _ = writeln!(
        o,
        "{:>5} {:>23} {:>9}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
        "group", "seq range", "count", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    for g in &r.groups {
        let s = &g.latency;
        let range = format!("{}..={}", g.first_seq, g.last_seq);
        let _ = writeln!(
            o,
            "{:>5} {:>23} {:>9}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
            g.index,
            range,
            s.count,
            fmt_mean(s.mean),
            format_ns(s.p50),
            format_ns(s.p90),
            format_ns(s.p99),
            format_ns(s.p999),
            format_ns(s.max)
        );
    }
}

/// The detail view's sections after the groups: offer outcomes, faults, the driver's counters,
/// the publisher, and the notes.
fn details(o: &mut String, r: &Report) {
    // Offer outcomes: the known ones in order, then any others.
    let mut offers: Vec<String> = OFFER_OUTCOMES
        .iter()
        .filter_map(|k| r.offer.get(*k).map(|v| format!("{k} {v}")))
        .collect();
    offers.extend(
        r.offer
            .iter()
            .filter(|(k, _)| !OFFER_OUTCOMES.contains(&k.as_str()))
            .map(|(k, v)| format!("{k} {v}")),
    );
    let offers = if offers.is_empty() {
        "none recorded".to_string()
    } else {
        offers.join(", ")
    };
    let _ = writeln!(o, "\noffer outcomes: {offers}");
    let _ = writeln!(o, "{}", r.faults.render());
    if let Some(c) = &r.driver_counters {
        o.push_str(&crate::render::counters::render(c));
    }
    if let Some(p) = &r.publisher {
        let _ = writeln!(o, "{}", publisher_line(p));
    }
    if !r.notes.is_empty() {
        let _ = writeln!(o, "\nnotes:");
        for n in &r.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
}

/// What latency-pub did: sent, warm-up, end marker, lag behind schedule, publish-only cost.
fn publisher_line(p: &crate::model::PubReport) -> String {
    let c = &p.publish_cost_ns;
    let cost = if c.count == 0 {
        "publish-only cost not measured (a round trip takes no extra clock reading)".to_owned()
    } else {
        format!(
            "publish-only cost (claim+encode+commit) p50 {} p99 {} p99.9 {} max {}",
            format_ns(c.p50),
            format_ns(c.p99),
            format_ns(c.p999),
            format_ns(c.max)
        )
    };
    format!(
        "publisher ({} publication): sent {} ({} warm-up + {} measured of {} planned), end marker {}, largest \
         lag behind schedule {}, {cost}",
        p.publication,
        p.sent,
        p.warmup_sent,
        p.measured_sent,
        p.planned,
        if p.end_marker_sent { "sent" } else { "NOT sent" },
        format_ns(p.max_lag_ns),
    )
}

/// The planted delay, when there was one (`--plant-delay-ns`).
fn planted_line(p: &crate::model::PubReport) -> Option<String> {
    (p.plant_delay_ns > 0).then(|| {
        format!(
            "planted: the publisher busy-waits {} per message between its send stamp and the commit \
             (--plant-delay-ns): both latency columns carry it",
            format_ns(p.plant_delay_ns)
        )
    })
}

/// The summary's last line: what `--detail` adds, with the count of notes when there are any.
fn more_line(r: &Report) -> String {
    let notes = match r.notes.len() {
        0 => String::new(),
        1 => "1 note, ".to_owned(),
        n => format!("{n} notes, "),
    };
    let diagnosis = if r.jitter.is_some() {
        ", the threads, the slowest samples and each finding's evidence and fix"
    } else {
        ""
    };
    format!(
        "--detail adds {notes}the timing model, the environment, offer outcomes, page faults, the driver's counters{diagnosis}"
    )
}

/// One line for `env.doctor`: the counts, and which checks warned or failed.
fn doctor_line(checks: &[crate::model::Check]) -> Option<String> {
    use crate::model::CheckStatus;
    if checks.is_empty() {
        return None;
    }
    let names = |s: CheckStatus| -> Vec<&str> {
        checks
            .iter()
            .filter(|c| c.status == s)
            .map(|c| c.check.as_str())
            .collect()
    };
    let (warn, fail) = (names(CheckStatus::Warn), names(CheckStatus::Fail));
    let mut line = format!(
        "doctor: {} PASS, {} WARN, {} FAIL",
        checks.len() - warn.len() - fail.len(),
        warn.len(),
        fail.len()
    );
    if !fail.is_empty() {
        line.push_str(&format!("; FAIL: {}", fail.join(", ")));
    }
    if !warn.is_empty() {
        line.push_str(&format!("; WARN: {}", warn.join(", ")));
    }
    if !warn.is_empty() || !fail.is_empty() {
        line.push_str(" (latency-probe doctor prints each with its fix)");
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Recorder;
    use crate::measure::recorder::SampleKind;
    use crate::model::Env;
    use crate::model::RunInfo;
    use crate::model::CLIENT;
    use crate::model::DRIVER_EMBEDDED;
    use crate::model::DRIVER_EXTERNAL;
    use crate::model::UNKNOWN;
    use crate::render::files::write_json;
    use crate::sys::clock::TIMING_MODEL;
    use crate::sys::env::parse_cpu_model;
    use crate::units::utc_timestamp;
    use serde_json::Value;
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;
    use std::fs;
    use std::io;
    use std::path::Path;
    use std::time::SystemTime;
    use std::time::UNIX_EPOCH;

    fn sample_report() -> Report {
        let (warmup, planned) = (100_u32, 10_000_u32);
        let mut rec = Recorder::new();
        for s in 0..u64::from(warmup + planned) {
            if s == 5_000 || s == 7_777 {
                continue; // lost
            }
            let kind = if s < u64::from(warmup) {
                SampleKind::Warmup
            } else {
                SampleKind::Measured
            };
            let lat = 1_000 + (s % 1_000) as i64 * 50;
            rec.record(s, kind, warmup, planned, lat, lat / 2);
        }
        rec.record_decode_error();
        let acc = rec.finish(Some(u64::from(warmup + planned)));
        let mut offer = BTreeMap::new();
        offer.insert("ok".to_string(), 10_100);
        offer.insert("back_pressured".to_string(), 3);
        offer.insert("weird".to_string(), 1);
        let env = Env {
            cpu_model: "Test CPU @ 3.00GHz".into(),
            cores: 2,
            kernel: "6.1.0-test".into(),
            driver_kind: DRIVER_EMBEDDED.into(),
            driver_version: "1.54".into(),
            client: CLIENT.into(),
            governor: "performance".into(),
            doctor: Vec::new(),
            driver_settings: Vec::new(),
        };
        Report::from_recorder(
            &rec,
            &acc,
            RunInfo {
                rate_target: 10_000.0,
                rate_achieved: 9_999.5,
                msg_size: 64,
                duration_s: 1.01,
                started_at: utc_timestamp(UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)),
            },
            offer,
            env,
        )
    }

    fn keys(v: &Value) -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    const STATS_KEYS: [&str; 10] = [
        "count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "p9999", "max",
    ];

    #[test]
    fn json_field_names_are_the_contract() {
        let r = sample_report();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            keys(&v),
            set(&[
                "schema_version",
                "sent",
                "received",
                "lost",
                "duplicates",
                "reordered",
                "decode_errors",
                "rate_target",
                "rate_achieved",
                "latency_ns",
                "latency_actual_ns",
                "groups",
                "offer",
                "env",
                "timing_model",
                "complete",
                "incomplete_reason",
                "publisher_vanished",
                "out_of_range",
                "warmup_received",
                "msg_size",
                "duration_s",
                "tool",
                "started_at",
                "notes",
                "mode",
                "faults",
            ])
        );
        assert_eq!(v["mode"], "one-way");
        assert_eq!(keys(&v["faults"]), set(&["publisher", "subscriber", "prefaulted"]));
        assert_eq!(keys(&v["latency_ns"]), set(&STATS_KEYS));
        assert_eq!(keys(&v["latency_actual_ns"]), set(&STATS_KEYS));
        let groups = v["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 20);
        let mut group_keys = STATS_KEYS.to_vec();
        group_keys.extend(["index", "first_seq", "last_seq", "actual"]);
        for g in groups {
            assert_eq!(keys(g), set(&group_keys));
            assert_eq!(keys(&g["actual"]), set(&STATS_KEYS));
        }
        assert_eq!(
            keys(&v["env"]),
            set(&[
                "cpu_model",
                "cores",
                "kernel",
                "driver_kind",
                "driver_version",
                "client",
                "governor"
            ])
        );
        assert_eq!(keys(&v["tool"]), set(&["name", "version"]));
        assert_eq!(v["offer"]["ok"], 10_100);
        assert_eq!(v["offer"]["back_pressured"], 3);
        // Types scripts rely on.
        assert_eq!(v["sent"], 10_100);
        assert_eq!(v["received"], 10_098);
        assert_eq!(v["lost"], 2);
        assert_eq!(v["decode_errors"], 1);
        assert_eq!(v["warmup_received"], 100);
        assert!(v["rate_target"].is_f64());
        assert_eq!(v["incomplete_reason"], Value::Null);
        assert_eq!(v["complete"], true);
        assert_eq!(v["timing_model"], TIMING_MODEL);
        assert_eq!(v["started_at"], "2023-11-14T22:13:20Z");
        assert_eq!(v["groups"][0]["first_seq"], 100);
        assert_eq!(v["groups"][0]["last_seq"], 599);
        assert_eq!(v["groups"][19]["last_seq"], 10_099);
        assert_eq!(v["groups"][9]["count"], 499); // seq 5000 lost
        assert_eq!(v["groups"][9]["actual"]["count"], 499);
    }

    #[test]
    fn sent_null_when_unknown() {
        let mut r = sample_report();
        r.sent = None;
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["sent"], Value::Null);
        let back: Report = serde_json::from_value(v).unwrap();
        assert_eq!(back.sent, None);
    }

    #[test]
    fn another_clock_is_said_once_in_either_view() {
        let mut r = sample_report();
        let why = "ping's send times are not on this host's clock (3 of 3 latencies below zero)";
        r.not_one_clock = Some(why.into());
        for view in [View::Summary, View::Detail] {
            let text = render_text(&r, view);
            assert_eq!(text.matches(why).count(), 1, "{text}");
            assert!(text.contains(&format!("NOT ONE CLOCK: {why}")), "{text}");
            // An incomplete one-way run gives it as its reason, not twice.
            let mut one_way = r.clone();
            one_way.complete = false;
            for reason in [why.to_owned(), format!("{why}; the publisher vanished")] {
                one_way.incomplete_reason = Some(reason.clone());
                let text = render_text(&one_way, view);
                assert_eq!(text.matches(why).count(), 1, "{text}");
                assert!(text.starts_with(&format!("INCOMPLETE: {reason}")), "{text}");
            }
        }
        assert_eq!(serde_json::to_value(&r).unwrap()["not_one_clock"], why);
    }

    #[test]
    fn json_round_trips() {
        let r = sample_report();
        let s = serde_json::to_string_pretty(&r).unwrap();
        let back: Report = serde_json::from_str(&s).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&r).unwrap());
        assert_eq!(back.groups, r.groups);
        assert_eq!(back.latency_ns, r.latency_ns);
        assert_eq!(back.env, r.env);
        assert_eq!(back.offer, r.offer);
    }

    #[test]
    fn write_json_is_atomic_and_readable() {
        let dir = std::env::temp_dir().join(format!("latency-probe-report-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.json");
        fs::write(&path, "old").unwrap();
        let r = sample_report();
        write_json(&r, &path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n'));
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back.received, r.received);
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "report.json")
            .collect();
        assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
        let err = write_json(&r, dir.join("missing-dir").join("r.json")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(write_json(&r, Path::new("/")).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn littles_law_in_rtt_mode_says_what_more_than_one_in_flight_means() {
        let mut r = sample_report();
        r.mode = RunMode::Rtt;
        r.in_flight = Some(0.25);
        let t = render_text(&r, View::Detail);
        assert!(
            t.contains("= 0.250 messages in flight on average (one outstanding at a time: the share"),
            "{t}"
        );
        r.in_flight = Some(7.284);
        let t = render_text(&r, View::Detail);
        assert!(
            t.contains("= 7.284 messages in flight on average (one outstanding at a time; the other 6.284 waited"),
            "{t}"
        );
        assert!(!t.contains("the share of time"), "a share is at most 1: {t}");
    }

    #[test]
    fn text_has_header_tables_and_twenty_groups() {
        let r = sample_report();
        assert_eq!(r.schema_version, crate::model::SCHEMA_VERSION);
        let t = render_text(&r, View::Detail);
        assert!(!t.contains("INCOMPLETE"));
        assert!(t.starts_with(&format!("{} {} report", r.tool.name, r.tool.version)));
        assert!(t.contains(TIMING_MODEL));
        assert!(t.contains("Test CPU @ 3.00GHz (2 cores), kernel 6.1.0-test, governor performance"));
        assert!(t.contains("driver embedded C 1.54, client aeron-rs 0.1.8"));
        assert!(t.contains("target 10000 msg/s, achieved 9999.5 msg/s, 64 B messages"));
        assert!(t.contains(
            "accounting: sent 10100, received 10098 (warm-up 100), lost 2, duplicates 0, \
             reordered 0, decode errors 1, out of range 0: adds up"
        ));
        for row in [
            "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max",
        ] {
            assert!(
                t.lines().any(|l| l.starts_with(&format!("{row:<8}"))),
                "missing overall row {row}:\n{t}"
            );
        }
        assert!(t.contains("from intended send") && t.contains("from actual send"));
        let count_line = t.lines().find(|l| l.starts_with("count ")).unwrap();
        assert!(count_line.split_whitespace().skip(1).all(|c| c == "9998"));
        let group_rows: Vec<&str> = t
            .lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() >= 2 && f[0].parse::<usize>().is_ok() && f[1].contains("..=")
            })
            .collect();
        assert_eq!(group_rows.len(), 20, "{t}");
        assert!(group_rows[0].trim_start().starts_with("0 ") && group_rows[0].contains("100..=599"));
        assert!(group_rows[19].trim_start().starts_with("19 ") && group_rows[19].contains("..=10099"));
        // Fixed width: all group rows equally long (in chars).
        let widths: BTreeSet<usize> = group_rows.iter().map(|l| l.chars().count()).collect();
        assert_eq!(widths.len(), 1, "{widths:?}");
        assert!(t.contains("offer outcomes: ok 10100, back_pressured 3, weird 1"));
        // Decode error note.
        assert!(t.contains("notes:\n- 1 fragments were not our message schema"));
    }

    #[test]
    fn text_incomplete_and_not_adding_up() {
        let mut rec = Recorder::new();
        for s in [0_u64, 1, 2, 4] {
            rec.record(s, SampleKind::Measured, 0, 100, 500, 400);
        }
        let acc = rec.finish(None);
        let run = RunInfo {
            rate_target: 1_000.0,
            rate_achieved: f64::NAN,
            msg_size: 32,
            duration_s: 0.0,
            started_at: utc_timestamp(SystemTime::now()),
        };
        let env = Env::detect().with_driver(DRIVER_EXTERNAL, "1.46.0");
        let mut r = Report::from_recorder(&rec, &acc, run, BTreeMap::new(), env);
        assert!(!r.complete && r.publisher_vanished);
        assert_eq!(r.rate_achieved, 0.0, "NaN must not reach JSON");
        assert_eq!(r.lost, 1);
        let t = render_text(&r, View::Detail);
        assert!(t.starts_with("INCOMPLETE: no end marker from the publisher"), "{t}");
        assert!(t.contains("sent unknown (no end marker)"));
        assert!(t.contains("offer outcomes: none recorded"));
        serde_json::from_str::<Report>(&serde_json::to_string(&r).unwrap()).unwrap();

        r.sent = Some(3);
        let t = render_text(&r, View::Detail);
        assert!(t.contains("DOES NOT ADD UP: received + lost = 5 but sent = 3"), "{t}");
    }

    /// A report of a subscriber that received `join..110` of a run with 10 warm-up messages
    /// and 100 measured, less number 50.
    fn joined_at(join: u64) -> Report {
        let mut rec = Recorder::new();
        for s in (join..110).filter(|&s| s != 50) {
            let kind = if s < 10 {
                SampleKind::Warmup
            } else {
                SampleKind::Measured
            };
            rec.record(s, kind, 10, 100, 500, 400);
        }
        let acc = rec.finish(Some(110));
        let run = RunInfo {
            rate_target: 1_000.0,
            rate_achieved: 1_000.0,
            msg_size: 32,
            duration_s: 0.1,
            started_at: String::new(),
        };
        Report::from_recorder(&rec, &acc, run, BTreeMap::new(), Env::detect())
    }

    #[test]
    fn a_late_join_is_not_loss_and_within_the_warm_up_only_a_note() {
        let r = joined_at(4);
        assert_eq!((r.before_join, r.lost, r.received), (4, 1, 105));
        assert!(r.complete, "{:?}", r.incomplete_reason);
        let all = r.notes.join("\n");
        assert!(
            all.contains("joined the stream after the first 4 warm-up messages"),
            "{all}"
        );
        let t = render_text(&r, View::Detail);
        assert!(
            t.contains("received 105 (warm-up 6), before the join 4, lost 1, duplicates 0"),
            "{t}"
        );
        assert!(t.contains("adds up (received + before the join + lost = sent)"), "{t}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["before_join"], 4);

        // After 15 measured messages: incomplete, and the reason says what to do.
        let r = joined_at(25);
        assert_eq!((r.before_join, r.lost), (25, 1));
        assert!(!r.complete);
        let why = r.incomplete_reason.as_deref().unwrap();
        assert!(why.contains("joined the stream after 15 measured messages") && why.contains("raise --warmup"));

        // On time: nothing before the join, and the JSON leaves the field out.
        let r = joined_at(0);
        assert_eq!((r.before_join, r.lost), (0, 1));
        assert!(r.notes.iter().all(|n| !n.contains("joined")), "{:?}", r.notes);
        assert!(render_text(&r, View::Detail).contains("adds up (received + lost = sent)"));
        assert!(serde_json::to_value(&r).unwrap().get("before_join").is_none());
    }

    #[test]
    fn notes_for_anomalies() {
        let mut rec = Recorder::new();
        rec.record(0, SampleKind::Measured, 0, 5, -1, -1);
        rec.record(1, SampleKind::Measured, 0, 5, i64::MAX, 1);
        rec.record(9, SampleKind::Measured, 0, 5, 1, 1);
        let acc = rec.finish(Some(10));
        let mut env = Env::detect();
        env.governor = "powersave".into();
        let run = RunInfo {
            rate_target: 1.0,
            rate_achieved: 1.0,
            msg_size: 8,
            duration_s: 10.0,
            started_at: String::new(),
        };
        let r = Report::from_recorder(&rec, &acc, run, BTreeMap::new(), env);
        let all = r.notes.join("\n");
        assert!(all.contains("1 samples had a negative latency"), "{all}");
        assert!(all.contains("1 samples exceeded the histogram range"), "{all}");
        assert!(all.contains("1 messages had sequence numbers beyond"), "{all}");
        assert!(all.contains("only 5 measured messages planned for 20 groups"), "{all}");
        assert!(all.contains("governor is 'powersave'"), "{all}");
        assert!(r.complete);
    }

    #[test]
    fn cpu_model_parsing() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\n";
        assert_eq!(parse_cpu_model(x86).unwrap(), "Intel(R) Xeon(R) CPU @ 2.20GHz");
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpu_model(arm).unwrap(), "BCM2835");
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
        let env = Env::detect();
        assert!(!env.cpu_model.is_empty() && !env.kernel.is_empty() && !env.governor.is_empty());
        assert_eq!(env.client, CLIENT);
        assert_eq!(env.driver_kind, UNKNOWN);
    }
}
