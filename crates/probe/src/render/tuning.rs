//! The calculators' text: `latency-probe nak` and `latency-probe buffers`. Settings are printed
//! three ways (C driver environment, Java driver `-D` flags, and the environment the probe's
//! embedded C driver reads), in Aeron's own duration syntax (`500us`, `2ms`).

use crate::model::{BufferPlan, Check, CheckStatus, Doctor, LossReport, NakPlan, NakSettings};
use crate::units::format_ns;
use std::fmt::Write as _;

/// A duration as Aeron's property parsers take it: `2ms`, `500us`, `1500ns`, `3s`.
#[must_use]
pub fn aeron_duration(ns: u64) -> String {
    if ns == 0 {
        return "0ns".into();
    }
    for (unit, name) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns.is_multiple_of(unit) {
            return format!("{}{name}", ns / unit);
        }
    }
    format!("{ns}ns")
}

/// The settings as (Java property, value) pairs, in a fixed order.
#[must_use]
pub fn properties(s: &NakSettings) -> Vec<(&'static str, String)> {
    vec![
        (
            "aeron.nak.multicast.max.backoff",
            aeron_duration(s.nak_multicast_max_backoff_ns),
        ),
        ("aeron.nak.multicast.group.size", s.nak_multicast_group_size.to_string()),
        (
            "aeron.retransmit.unicast.linger",
            aeron_duration(s.retransmit_unicast_linger_ns),
        ),
        ("aeron.nak.unicast.delay", aeron_duration(s.nak_unicast_delay_ns)),
        (
            "aeron.nak.unicast.retry.delay.ratio",
            s.nak_unicast_retry_delay_ratio.to_string(),
        ),
    ]
}

/// `aeron.nak.multicast.max.backoff` as the C driver's variable: `AERON_NAK_MULTICAST_MAX_BACKOFF`.
#[must_use]
pub fn env_name(property: &str) -> String {
    property.replace('.', "_").to_ascii_uppercase()
}

fn checks(out: &mut String, checks: &[Check]) {
    let width = checks.iter().map(|c| c.check.len()).max().unwrap_or(0);
    for c in checks {
        let _ = writeln!(
            out,
            "  {:<4}  {:<width$}  {}; should be {}",
            c.status.label(),
            c.check,
            c.measured,
            c.expected
        );
        if !c.fix.is_empty() {
            let _ = writeln!(out, "        {:<width$}  fix: {}", "", c.fix);
        }
    }
}

/// `latency-probe nak`'s report.
#[must_use]
pub fn nak_text(p: &NakPlan) -> String {
    let i = &p.inputs;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "NAK timers for RTT {}, per-loss budget {}, {} receiver{}, {} msg/s of {} B, loss {}, term {} B, slowest \
         receiver {} behind",
        format_ns(i.rtt_ns),
        format_ns(i.budget_ns),
        i.receivers,
        if i.receivers == 1 { "" } else { "s" },
        i.rate,
        i.msg_size,
        i.loss,
        i.term_length,
        format_ns(i.lag_ns)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "  {:<38} {:>10} {:>10}  why", "setting", "derived", "default");
    let why = [
        format!(
            "budget/2, within floor 2 x RTT = {} and ceiling budget - 2 x RTT = {}",
            format_ns(p.backoff_floor_ns),
            format_ns(p.backoff_ceiling_ns)
        ),
        "the real receiver count".to_string(),
        format!("about 3 x its floor, backoff + RTT = {}", format_ns(p.linger_floor_ns)),
        "Aeron's: unicast NAKs go out at once".to_string(),
        "delay x ratio >= linger: a repeated NAK lands when the sender listens again".to_string(),
    ];
    let derived = properties(&p.chosen);
    let defaults = properties(&p.defaults);
    for ((name, value), ((_, default), why)) in derived.iter().zip(defaults.iter().zip(why)) {
        let _ = writeln!(out, "  {name:<38} {value:>10} {default:>10}  {why}");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "  predicted worst case per loss      derived    default");
    let _ = writeln!(
        out,
        "  single loss (backoff + 2 x RTT)  {:>9}  {:>9}",
        format_ns(p.single_loss_ns),
        format_ns(p.default_single_loss_ns)
    );
    let _ = writeln!(
        out,
        "  double loss (+ linger)           {:>9}  {:>9}",
        format_ns(p.double_loss_ns),
        format_ns(p.default_double_loss_ns)
    );
    let _ = writeln!(
        out,
        "  unicast: single {} (delay + RTT), double {} (retry or linger + delay + RTT)",
        format_ns(p.unicast_single_loss_ns),
        format_ns(p.unicast_double_loss_ns)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "validity checks:");
    checks(&mut out, &p.checks);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "They are media-driver settings: set them on every receiving host's driver, then restart it."
    );
    let _ = writeln!(out, "C driver (aeronmd), environment:");
    for (k, v) in &derived {
        let _ = writeln!(out, "  {}={v}", env_name(k));
    }
    let _ = writeln!(out, "Java driver (io.aeron.driver.MediaDriver), on the driver's JVM:");
    let flags: Vec<String> = derived.iter().map(|(k, v)| format!("-D{k}={v}")).collect();
    let _ = writeln!(out, "  java {} ... io.aeron.driver.MediaDriver", flags.join(" "));
    let _ = writeln!(
        out,
        "latency-probe's embedded driver (or the same AERON_* variables in its environment):"
    );
    let opts: Vec<String> = derived.iter().map(|(k, v)| format!("--driver-opt {k}={v}")).collect();
    let _ = writeln!(out, "  latency-probe --channel 'aeron:udp?...' {} ...", opts.join(" "));
    out
}

/// `latency-probe buffers`' report.
#[must_use]
pub fn buffers_text(p: &BufferPlan) -> String {
    let i = &p.inputs;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Buffers for {} msg/s of {} B ({} B frames) to {} receiver{}, RTT {}, pauses up to {}, recovery {} ({})",
        i.rate,
        i.msg_size,
        p.frame_bytes,
        i.receivers,
        if i.receivers == 1 { "" } else { "s" },
        format_ns(i.rtt_ns),
        format_ns(i.pause_ns),
        format_ns(i.recovery_ns),
        i.recovery_from
    );
    let _ = writeln!(out);
    let rows: [(&str, String); 7] = [
        ("bytes/s to each receiver", p.bytes_per_second.to_string()),
        (
            "bytes/s sent (one copy per receiver)",
            p.send_bytes_per_second.to_string(),
        ),
        ("bandwidth-delay product (one RTT)", format!("{} B", p.bdp_bytes)),
        ("arriving during one pause", format!("{} B", p.pause_bytes)),
        (
            "SO_RCVBUF and receiver window",
            format!(
                "{} B  (aeron.socket.so_rcvbuf, aeron.rcv.initial.window.length)",
                p.rcvbuf_bytes
            ),
        ),
        ("SO_SNDBUF", format!("{} B  (aeron.socket.so_sndbuf)", p.sndbuf_bytes)),
        ("term length", term_row(p.term_length_bytes)),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "  {k:<38} {v}");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "checks:");
    checks(&mut out, &p.checks);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Buffers prevent loss; they cannot make a loss cheap (that is latency-probe nak). Past what\n\
         covers the BDP and the pauses, a bigger buffer only holds more queued data: more latency,\n\
         and on some kernels more loss (seed 003)."
    );
    out
}

/// The buffer plan's term length: where it goes, and past 512 MiB who can use it.
fn term_row(bytes: u64) -> String {
    let mut row = format!("{bytes} B  (lag + recovery within half a term: term-length= on the channel)");
    if bytes > 512 << 20 {
        row.push_str(
            "; over 512 MiB: for Aeron's Java and C clients only (messaging's client, on aeron-rs, cannot map a log \
             of 2 GiB or more and refuses such a channel)",
        );
    }
    row
}

/// `latency-probe doctor`'s report: every check, its value, what it should be, and the fix.
#[must_use]
pub fn doctor_text(d: &Doctor) -> String {
    let q = &d.request;
    let mut out = String::new();
    let hot: Vec<String> = q.hot_cores.iter().map(ToString::to_string).collect();
    let _ = writeln!(
        out,
        "doctor: hot threads on cores {}, {} channel, {} msg/s of {} B, driver {}",
        hot.join(" and "),
        if q.udp { "a UDP" } else { "an IPC" },
        q.rate,
        q.msg_size,
        if q.driver.is_some() { "embedded" } else { "external" }
    );
    let _ = writeln!(out);
    checks(&mut out, &d.checks);
    if let Some(props) = &q.driver {
        let _ = writeln!(out);
        let _ = writeln!(out, "the embedded driver's settings (compiled defaults, then AERON_*):");
        for (k, v) in props {
            let _ = writeln!(out, "  {k} = {v}");
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} PASS, {} WARN, {} FAIL",
        d.count(CheckStatus::Pass),
        d.count(CheckStatus::Warn),
        d.count(CheckStatus::Fail)
    );
    out
}

/// `latency-probe loss`'s table, in seed 000's shape.
#[must_use]
pub fn loss_text(r: &LossReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "loss experiment: 1 publisher -> {} receiver{} on {} (a driver each), {} B at {} msg/s, {:.1} s per arm; \
         latency from the intended send time, all receivers merged",
        r.receivers,
        if r.receivers == 1 { "" } else { "s" },
        r.channel,
        r.msg_size,
        r.rate,
        r.duration_s
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<12} {:>7} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>14}",
        "arm", "loss", "NAKs", "retrans", "p50", "p99", "p99.9", "max", "pred. 1 loss", "pred. 2 loss", "max - no-loss"
    );
    for a in &r.arms {
        let pred = |ns: u64| if ns == 0 { "-".to_owned() } else { format_ns(ns) };
        let _ = writeln!(
            out,
            "  {:<12} {:>7} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>14}{}",
            a.arm,
            format!("{}%", a.loss * 100.0),
            a.naks_sent,
            a.retransmits_sent,
            format_ns(a.latency.p50),
            format_ns(a.latency.p99),
            format_ns(a.latency.p999),
            format_ns(a.latency.max),
            pred(a.predicted_single_loss_ns),
            pred(a.predicted_double_loss_ns),
            // 0: the arm's max was not above the control's, its losses hid in the tail.
            a.max_over_no_loss_ns.map_or("-".to_owned(), |ns| if ns == 0 {
                "in the tail".to_owned()
            } else {
                format_ns(ns)
            }),
            if a.complete && a.lost == 0 {
                String::new()
            } else {
                let lost = (a.lost > 0).then(|| format!("lost {}", a.lost));
                let why: Vec<String> = lost.into_iter().chain(a.problems.iter().cloned()).collect();
                format!("  INCOMPLETE: {}", why.join("; "))
            }
        );
    }
    let _ = writeln!(out);
    for a in &r.arms {
        let kv: Vec<String> = a.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "  {}: {}", a.arm, kv.join(" "));
    }
    for a in r.arms.iter().filter(|a| a.before_join > 0) {
        let _ = writeln!(
            out,
            "late join: {}: {} messages were sent before a receiver joined (Aeron delivers from the join: not lost)",
            a.arm, a.before_join
        );
    }
    for l in &r.limits {
        let _ = writeln!(out, "limit: {l}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_messaging_cannot_map_is_said_to_be_for_other_clients() {
        assert!(!term_row(512 << 20).contains("cannot map"));
        let row = term_row(1 << 30);
        assert!(row.starts_with("1073741824 B") && row.contains("cannot map"), "{row}");
    }

    #[test]
    fn durations_print_in_aeron_s_syntax() {
        assert_eq!(aeron_duration(500_000), "500us");
        assert_eq!(aeron_duration(2_000_000), "2ms");
        assert_eq!(aeron_duration(2_500_000), "2500us");
        assert_eq!(aeron_duration(1_500), "1500ns");
        assert_eq!(aeron_duration(3_000_000_000), "3s");
    }

    #[test]
    fn a_loss_arm_says_why_it_is_incomplete_and_a_late_join_is_not_loss() {
        let derived = crate::analysis::tuning::nak_plan(&crate::model::NakInputs {
            rtt_ns: 100_000,
            budget_ns: 1_000_000,
            receivers: 2,
            rate: 5_000,
            loss: 0.0001,
            term_length: crate::model::aeron_default::TERM_BUFFER_LENGTH,
            lag_ns: 0,
            msg_size: 224,
        });
        let arm = |name: &str, before_join, complete, problems: &[&str]| crate::model::LossArm {
            arm: name.into(),
            loss: 0.0,
            settings: Vec::new(),
            received: 10_000,
            lost: 0,
            before_join,
            naks_sent: 0,
            retransmits_sent: 0,
            latency: crate::model::Stats::default(),
            predicted_single_loss_ns: 0,
            predicted_double_loss_ns: 0,
            max_over_no_loss_ns: None,
            complete,
            problems: problems.iter().map(|p| p.to_string()).collect(),
        };
        // Two lossy arms: one above the control's max, one not.
        let lossy = |name: &str, over| crate::model::LossArm {
            loss: 0.0001,
            max_over_no_loss_ns: Some(over),
            ..arm(name, 0, true, &[])
        };
        let r = LossReport {
            receivers: 2,
            rate: 5_000,
            msg_size: 224,
            duration_s: 1.0,
            channel: "aeron:udp?control=127.0.0.1:20456|control-mode=dynamic".into(),
            derived,
            arms: vec![
                lossy("default", 6_234_100),
                lossy("derived", 0),
                arm("min-buffers", 409, true, &[]),
                arm(
                    "big-buffers",
                    0,
                    false,
                    &["receiver 1: this subscriber joined the stream after 15"],
                ),
            ],
            limits: Vec::new(),
        };
        let t = loss_text(&r);
        assert!(
            t.contains("late join: min-buffers: 409 messages were sent before a receiver joined"),
            "{t}"
        );
        assert!(!t.contains("late join: big-buffers"), "{t}");
        let big = t.lines().find(|l| l.trim_start().starts_with("big-buffers ")).unwrap();
        assert!(
            big.ends_with("INCOMPLETE: receiver 1: this subscriber joined the stream after 15"),
            "{big}"
        );
        let min = t.lines().find(|l| l.trim_start().starts_with("min-buffers ")).unwrap();
        assert!(!min.contains("INCOMPLETE"), "{min}");
        let row = |name: &str| t.lines().find(|l| l.trim_start().starts_with(name)).unwrap();
        assert!(row("default ").ends_with(" 6234.1 µs"), "{t}");
        assert!(row("derived ").ends_with(" in the tail"), "{t}");
        assert!(min.trim_end().ends_with(" -"), "{min}");
    }

    #[test]
    fn property_names_become_the_c_driver_s_variables() {
        assert_eq!(
            env_name("aeron.nak.multicast.max.backoff"),
            "AERON_NAK_MULTICAST_MAX_BACKOFF"
        );
        assert_eq!(
            env_name("aeron.nak.unicast.retry.delay.ratio"),
            "AERON_NAK_UNICAST_RETRY_DELAY_RATIO"
        );
    }
}
