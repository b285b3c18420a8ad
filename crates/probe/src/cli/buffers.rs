//! `latency-probe buffers`: socket buffers, receiver window and term from the stream, its
//! flags and their checks.

use super::nak::{check_nak, NakArgs};
use super::output::{check_json, emit, failed};
use super::parse::{parse_bytes, parse_duration};
use super::validate::{check_msg_size, check_receivers};
use super::{Failure, UsageError};
use crate::analysis::tuning::{buffer_plan, nak_plan};
use crate::model::{aeron_default, BufferInputs};
use crate::render::tuning::buffers_text;
use crate::sys::env::read_number;
use std::path::PathBuf;

/// `latency-probe buffers`' name in its messages.
pub const BUFFERS: &str = "latency-probe buffers";

/// `latency-probe buffers`: socket buffers, receiver window and term from the stream.
#[derive(Debug, clap::Args)]
pub struct BuffersArgs {
    /// Messages per second (k and M suffixes)
    #[arg(long, value_parser = super::parse_rate)]
    pub rate: u64,
    /// Message size in bytes
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: u64,
    /// Round-trip time (e.g. 35us)
    #[arg(long, value_parser = parse_duration)]
    pub rtt: u64,
    /// Receivers (the sender sends one copy to each MDC destination)
    #[arg(long, default_value_t = 1)]
    pub receivers: u32,
    /// The longest a receiver may stop reading without loss (preemption, GC, page faults)
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub pause: u64,
    /// How long recovering a loss takes; default: a double loss with the timers
    /// `latency-probe nak --budget` derives, or with Aeron's default timers without --budget
    #[arg(long, value_parser = parse_duration)]
    pub recovery: Option<u64>,
    /// Per-loss budget, to derive --recovery from the NAK calculator
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<u64>,
    /// How far the slowest receiver runs behind
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub lag: u64,
    /// `net.core.rmem_max` to check against (default: this host's)
    #[arg(long = "rmem-max", value_parser = parse_bytes)]
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max` to check against (default: this host's)
    #[arg(long = "wmem-max", value_parser = parse_bytes)]
    pub wmem_max: Option<u64>,
    /// The driver's SO_RCVBUF (default: AERON_SOCKET_SO_RCVBUF, else Aeron's 128k)
    #[arg(long = "so-rcvbuf", value_parser = parse_bytes)]
    pub so_rcvbuf: Option<u64>,
    /// The driver's receiver window (default: AERON_RCV_INITIAL_WINDOW_LENGTH, else Aeron's 128k)
    #[arg(long = "rcv-window", value_parser = parse_bytes)]
    pub rcv_window: Option<u64>,
    /// Also write every input and output as JSON to this file ('-': JSON on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe buffers`. Exit 0 unless a check FAILs (exit 1).
///
/// # Errors
/// Bad input (exit 2), a failed check (exit 1), or the JSON file could not be written.
pub fn buffers(a: &BuffersArgs) -> Result<(), Failure> {
    check_json(a.json.as_ref())?;
    let plan = buffer_plan(&check_buffers(a)?);
    emit(a.json.as_ref(), &buffers_text(&plan), &plan)?;
    failed(&plan.checks)
}

/// A driver setting from the environment as aeronmd reads it, if set and valid.
fn env_bytes(var: &str) -> Result<Option<u64>, UsageError> {
    match std::env::var(var) {
        Ok(v) => parse_bytes(&v)
            .map(Some)
            .map_err(|e| UsageError::new(format!("{var}={v}: {e}"))),
        Err(_) => Ok(None),
    }
}

fn check_buffers(a: &BuffersArgs) -> Result<BufferInputs, UsageError> {
    if a.rtt == 0 {
        return Err(UsageError::new(
            "--rtt 0: give the measured round trip, e.g. --rtt 35us",
        ));
    }
    check_receivers(a.receivers)?;
    check_msg_size(a.msg_size)?;
    let (recovery_ns, recovery_from) = match (a.recovery, a.budget) {
        (Some(r), _) => (r, "--recovery".to_string()),
        (None, budget) => {
            let derived = budget.is_some();
            // Without --budget only Aeron's default timers are used, which need no budget: any
            // valid one will do.
            let budget = budget.unwrap_or(2 * a.rtt);
            let inputs = check_nak(&NakArgs {
                rtt: Some(a.rtt),
                channel: None,
                budget,
                receivers: a.receivers,
                rate: a.rate,
                loss: 0.0,
                term_length: aeron_default::TERM_BUFFER_LENGTH,
                lag: a.lag,
                msg_size: a.msg_size,
                json: None,
            })?;
            let p = nak_plan(&inputs);
            if derived {
                (
                    p.double_loss_ns,
                    "a double loss with the timers latency-probe nak derives".to_string(),
                )
            } else {
                (
                    p.default_double_loss_ns,
                    "a double loss with Aeron's default timers".to_string(),
                )
            }
        }
    };
    Ok(BufferInputs {
        rate: a.rate,
        msg_size: a.msg_size,
        rtt_ns: a.rtt,
        receivers: a.receivers,
        pause_ns: a.pause,
        recovery_ns,
        recovery_from,
        lag_ns: a.lag,
        rmem_max: a.rmem_max.or_else(|| read_number("/proc/sys/net/core/rmem_max")),
        wmem_max: a.wmem_max.or_else(|| read_number("/proc/sys/net/core/wmem_max")),
        so_rcvbuf: match a.so_rcvbuf {
            Some(b) => b,
            None => env_bytes("AERON_SOCKET_SO_RCVBUF")?.unwrap_or(aeron_default::SOCKET_SO_RCVBUF),
        },
        rcv_window: match a.rcv_window {
            Some(b) => b,
            None => env_bytes("AERON_RCV_INITIAL_WINDOW_LENGTH")?.unwrap_or(aeron_default::RCV_INITIAL_WINDOW_LENGTH),
        },
    })
}
