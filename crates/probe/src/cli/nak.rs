//! `latency-probe nak`: seed 000's NAK-timer calculator, its flags and their checks, and the
//! round trip it measures when not given one.

use super::output::{check_json, emit, failed};
use super::parse::{parse_bytes, parse_duration};
use super::validate::{check_embedded, check_msg_size, check_receivers};
use super::{Failure, UsageError};
use crate::analysis::tuning::nak_plan;
use crate::measure::hiccup::HiccupRequest;
use crate::model::{Explain, Mode, NakInputs, PublicationKind};
use crate::render::tuning::nak_text;
use crate::run::driver::DriverChoice;
use crate::run::experiment::{self, Experiment};
use crate::run::process::{bin_dir, default_cores};
use crate::run::trial::Trial;
use crate::run::{Delivery, PongPath};
use crate::units::format_ns;
use aeron_latency::messaging::{Backoff, IdleStrategy};
use std::path::PathBuf;
use std::time::Duration;

/// `latency-probe nak`'s name in its messages.
pub const NAK: &str = "latency-probe nak";

/// `latency-probe nak`: seed 000's NAK-timer calculator.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("round_trip").args(["rtt", "channel"]).required(true)))]
pub struct NakArgs {
    /// Round-trip time between the publisher and its receivers (e.g. 35us, 1ms); without it,
    /// --channel is measured
    #[arg(long, value_parser = parse_duration)]
    pub rtt: Option<u64>,
    /// Measure the RTT on this channel with a 1 s round-trip run (latency-probe --mode rtt,
    /// embedded driver): the p50 of the round trips
    #[arg(long)]
    pub channel: Option<String>,
    /// The most one lost packet may add to a message's latency (e.g. 1ms); at least 2 x RTT
    #[arg(long, value_parser = parse_duration)]
    pub budget: u64,
    /// Receivers of the stream (MDC destinations, multicast members, cluster followers)
    #[arg(long, default_value_t = 1)]
    pub receivers: u32,
    /// Messages per second (k and M suffixes)
    #[arg(long, default_value = "10000", value_parser = super::parse_rate)]
    pub rate: u64,
    /// Fraction of packets lost, 0 to 1 (0.0001 = 0.01%)
    #[arg(long, default_value_t = 0.0001)]
    pub loss: f64,
    /// The publication's term length (bytes; k, m, g suffixes: 16m)
    #[arg(long = "term-length", default_value = "16m", value_parser = parse_bytes)]
    pub term_length: u64,
    /// How far the slowest receiver runs behind the publisher (e.g. 0, 5ms)
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub lag: u64,
    /// Message size in bytes
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: u64,
    /// Also write every input and output as JSON to this file ('-': JSON on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe nak`. Exit 0 unless a validity check FAILs (exit 1: the timers will not help).
///
/// # Errors
/// Bad input (exit 2), a failed check (exit 1), or the JSON file could not be written.
pub fn nak(a: &NakArgs) -> Result<(), Failure> {
    check_json(a.json.as_ref())?;
    let mut a = a.clone();
    if a.rtt.is_none() {
        let ch = a.channel.clone().unwrap_or_default();
        super::check_channel("--channel", &ch)?;
        // Every other flag is checked before the measurement starts.
        check_nak(&NakArgs {
            rtt: Some(1),
            ..a.clone()
        })?;
        let rtt = measure_rtt(&ch)?;
        eprintln!(
            "{NAK}: RTT measured on {ch}: p50 {} (1 s of round trips)",
            format_ns(rtt)
        );
        a.rtt = Some(rtt);
    }
    let plan = nak_plan(&check_nak(&a)?);
    emit(a.json.as_ref(), &nak_text(&plan), &plan)?;
    failed(&plan.checks)
}

/// The p50 round trip of a 1 s `latency-probe --mode rtt` run on `channel` (embedded driver).
fn measure_rtt(channel: &str) -> Result<u64, Failure> {
    let x = rtt_run(channel)?;
    let out = experiment::run(&x).map_err(Failure::setup)?;
    if !out.ok || out.report.latency_actual_ns.count == 0 {
        return Err(Failure::incomplete(format!(
            "measuring the RTT on {channel}: the round-trip run did not complete; give --rtt"
        )));
    }
    Ok(out.report.latency_actual_ns.p50)
}

/// The round-trip run that measures the RTT, as `latency-probe --mode rtt --channel CHANNEL
/// --duration 1 --rate 2000 --msg-size 64 --warmup 500 --diagnostics off --live off --floor 0
/// --idle backoff` would run it: the embedded driver, stream 1001 and its echo on 1002, the
/// hot threads on the probe's default cores, and no floor, diagnostics or live line.
///
/// # Errors
/// A 64-byte message does not fit `channel` on the embedded driver.
fn rtt_run(channel: &str) -> Result<Experiment, UsageError> {
    const STREAM: i32 = 1001;
    const MSG_SIZE: usize = 64;
    let pong = PongPath {
        channel: channel.to_owned(),
        stream: STREAM + 1,
    };
    check_embedded(None, None, channel, Some(&pong), MSG_SIZE)?;
    let (sub_core, pub_core) = default_cores();
    let trial = Trial {
        channel: channel.to_owned(),
        stream: STREAM,
        pong: Some(pong),
        publication: PublicationKind::Exclusive,
        duration_s: 1.0,
        rate: 2000,
        msg_size: MSG_SIZE,
        warmup: 500,
        wait_s: 10.0,
        idle: IdleStrategy::Backoff(Backoff::new()),
        delivery: Delivery::Inline,
        hot_path_lock: false,
        plant_helper: false,
        prefault: true,
        explain: Explain::default(),
        diagnostics: Mode::Off,
        live: false,
        sub_core,
        pub_core,
        hiccup: HiccupRequest::Auto,
        available: aeron_latency::messaging::available_cores(),
        floor: Duration::ZERO,
        bin_dir: bin_dir(),
        send_lags: false,
        plant_delay_ns: 0,
    };
    Ok(Experiment {
        runs: 1,
        trial,
        driver: DriverChoice::Embedded {
            term_length: None,
            parent_dir: None,
            options: Vec::new(),
        },
    })
}

/// The flags, checked, as the calculator's inputs (`buffers` derives its recovery with them).
pub(super) fn check_nak(a: &NakArgs) -> Result<NakInputs, UsageError> {
    let rtt = a.rtt.unwrap_or(0);
    if rtt == 0 {
        return Err(UsageError::new(
            "--rtt 0: give the measured round trip, e.g. --rtt 35us",
        ));
    }
    if a.budget < 2 * rtt {
        return Err(UsageError::new(format!(
            "--budget {} is below 2 x RTT ({}): a NAK and its retransmit take a round trip each; give at least {}",
            format_ns(a.budget),
            format_ns(2 * rtt),
            format_ns(2 * rtt)
        )));
    }
    check_receivers(a.receivers)?;
    if !(a.loss.is_finite() && (0.0..=1.0).contains(&a.loss)) {
        return Err(UsageError::new(format!(
            "--loss {}: a loss rate is a fraction from 0 to 1 (0.0001 = 0.01%)",
            a.loss
        )));
    }
    check_msg_size(a.msg_size)?;
    check_term(a.term_length)?;
    Ok(NakInputs {
        rtt_ns: rtt,
        budget_ns: a.budget,
        receivers: a.receivers,
        rate: a.rate,
        loss: a.loss,
        term_length: a.term_length,
        lag_ns: a.lag,
        msg_size: a.msg_size,
    })
}

fn check_term(n: u64) -> Result<(), UsageError> {
    if !n.is_power_of_two() || !(64 << 10..=1 << 30).contains(&n) {
        return Err(UsageError::new(format!(
            "--term-length {n}: Aeron's terms are a power of two from 64k to 1g"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> NakArgs {
        NakArgs {
            rtt: Some(35_000),
            channel: None,
            budget: 1_000_000,
            receivers: 3,
            rate: 50_000,
            loss: 0.0001,
            term_length: 16 << 20,
            lag: 0,
            msg_size: 224,
            json: None,
        }
    }

    #[test]
    fn bad_input_is_one_line_that_says_what_to_give() {
        let mut a = args();
        a.loss = 1.5;
        assert!(check_nak(&a).unwrap_err().message().contains("fraction from 0 to 1"));
        let mut a = args();
        a.receivers = 0;
        assert!(check_nak(&a).unwrap_err().message().contains("at least one receiver"));
        let mut a = args();
        a.budget = 50_000;
        let e = check_nak(&a).unwrap_err();
        assert!(e.message().contains("below 2 x RTT (70.00 µs)"), "{e}");
        let mut a = args();
        a.term_length = 100_000;
        assert!(check_nak(&a).unwrap_err().message().contains("power of two"));
        let e = check_nak(&NakArgs { rtt: Some(0), ..args() }).unwrap_err();
        assert!(e.message().contains("--rtt 0") && !e.message().contains('\n'), "{e}");
    }

    /// The experiment `latency-probe` builds from the flags the RTT run stands for.
    fn from_flags(channel: &str) -> Result<Experiment, UsageError> {
        let args = super::super::probe::parse_experiment([
            "latency-probe",
            "--mode",
            "rtt",
            "--channel",
            channel,
            "--duration",
            "1",
            "--rate",
            "2000",
            "--msg-size",
            "64",
            "--warmup",
            "500",
            "--diagnostics",
            "off",
            "--live",
            "off",
            "--floor",
            "0",
            "--idle",
            "backoff",
        ])
        .unwrap();
        super::super::probe::check(&args)
    }

    #[test]
    fn the_rtt_run_is_the_round_trip_run_its_flags_describe() {
        for channel in ["aeron:ipc", "aeron:udp?endpoint=127.0.0.1:40123", "aeron:ipc?mtu=4096"] {
            assert_eq!(
                format!("{:?}", rtt_run(channel).unwrap()),
                format!("{:?}", from_flags(channel).unwrap()),
                "{channel}"
            );
        }
        let small = "aeron:ipc?mtu=64";
        assert_eq!(rtt_run(small).unwrap_err(), from_flags(small).unwrap_err());
    }
}
