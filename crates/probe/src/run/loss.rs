//! Seed 000's loss experiment over real UDP on one host (`latency-probe loss`): one publisher
//! to N receivers on an MDC channel (dynamic control) over loopback, or to one receiver over
//! unicast (`--unicast`: there the unicast NAK delay and retry ratio apply), each receiver with its own
//! media driver (so each NAKs on its own) that drops a seeded fraction of data frames (the C
//! driver's `loss` receive interceptor, `recv-msg-mask=0x2`: frame type 1, DATA). Each arm runs
//! the same stream with other driver settings: Aeron's default timers, the calculator's
//! timers, and two zero-loss controls with the calculator's minimum buffers and 16x those.
//!
//! Timing model: latency-sub's (the intended send time to the receive time, one
//! CLOCK_MONOTONIC on this host), all receivers' histograms merged per arm. Every process
//! idles with `backoff`: on a small machine N + 1 drivers, N subscribers and a publisher share
//! the cores, and spinning ones would starve the drivers.

use crate::analysis::tuning::{buffer_plan, nak_plan, OVERSIZED_FACTOR};
use crate::model::{BufferInputs, BufferPlan, LossArm, LossReport, NakInputs, NakPlan, NakSettings, Report, Stats};
use crate::render::tuning::{env_name, properties};
use crate::run::process::{exit_words, sibling, wait_for_run, wait_forwarding_interrupts, INTERRUPTED_CHILD_GRACE};
use crate::units::plural;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The arms, in the order they run.
pub const ARMS: [&str; 4] = ["default", "derived", "min-buffers", "big-buffers"];

/// The problem of the arm that SIGINT or SIGTERM stopped.
pub const INTERRUPTED_ARM: &str =
    "interrupted (SIGINT or SIGTERM): this arm holds what was measured until then; the arms after it did not run";

/// What `latency-probe loss` runs.
#[derive(Debug, Clone)]
pub struct LossExperiment {
    /// Receivers, each with its own driver.
    pub receivers: u32,
    /// Messages per second, size, measured seconds, warm-up messages.
    pub rate: u64,
    /// See [`LossExperiment::rate`].
    pub msg_size: u64,
    /// See [`LossExperiment::rate`].
    pub duration: Duration,
    /// See [`LossExperiment::rate`].
    pub warmup: u64,
    /// Fraction of data frames each receiver's driver drops in the lossy arms.
    pub loss: f64,
    /// The loss generator's seed.
    pub seed: u64,
    /// RTT and per-loss budget for the calculator.
    pub rtt_ns: u64,
    /// See [`LossExperiment::rtt_ns`].
    pub budget_ns: u64,
    /// Which arms to run (a subset of [`ARMS`]).
    pub arms: Vec<String>,
    /// The UDP control port; receivers use the ports after it.
    pub port: u16,
    /// Unicast (one receiver, `endpoint=`) instead of MDC.
    pub unicast: bool,
    /// Where each arm's files go (a directory per arm, removed after it unless kept).
    pub work_dir: PathBuf,
}

/// Why the experiment could not run at all.
#[derive(Debug)]
pub struct LossError(pub String);

impl std::fmt::Display for LossError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LossError {}

/// A child that is killed when dropped (drivers are also told to stop by closing stdin).
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs every arm in `x.arms` and reports them; an arm that fails is reported incomplete with
/// its problems, the others still run.
///
/// # Errors
/// The work directory cannot be made.
pub fn run(x: &LossExperiment) -> Result<LossReport, LossError> {
    std::fs::create_dir_all(&x.work_dir)
        .map_err(|e| LossError(format!("{}: {e}: pick a writable --work-dir", x.work_dir.display())))?;
    let (derived, buffers) = plans(x);
    let mut arms = Vec::new();
    for (k, arm) in x.arms.iter().enumerate() {
        let (loss, settings, plan) = arm_settings(x, arm, &derived.chosen, buffers.rcvbuf_bytes);
        let port = x.port + (k as u16) * (x.receivers as u16 + 2);
        eprintln!(
            "latency-probe loss: arm {arm}: loss {loss}, {}",
            settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        arms.push(run_arm(x, arm, loss, settings, plan, port));
        if crate::sys::signals::interrupted() {
            break;
        }
    }
    // The zero-loss control's max, to set each lossy arm's against.
    let control = ["big-buffers", "min-buffers"]
        .iter()
        .find_map(|c| arms.iter().find(|a| a.arm == *c && a.complete))
        .map(|a| a.latency.max);
    if let Some(c) = control {
        for a in arms.iter_mut().filter(|a| a.loss > 0.0) {
            a.max_over_no_loss_ns = Some(a.latency.max.saturating_sub(c));
        }
    }
    Ok(LossReport {
        receivers: x.receivers,
        rate: x.rate,
        msg_size: x.msg_size,
        duration_s: x.duration.as_secs_f64(),
        channel: pub_channel(x.port, x.unicast),
        derived,
        arms,
        limits: limits(x),
    })
}

/// The calculators' plans for the experiment's stream: the NAK timers and the buffers.
fn plans(x: &LossExperiment) -> (NakPlan, BufferPlan) {
    let derived = nak_plan(&NakInputs {
        rtt_ns: x.rtt_ns,
        budget_ns: x.budget_ns,
        receivers: x.receivers,
        rate: x.rate,
        loss: x.loss,
        term_length: crate::model::aeron_default::TERM_BUFFER_LENGTH,
        lag_ns: 0,
        msg_size: x.msg_size,
    });
    let buffers = buffer_plan(&BufferInputs {
        rate: x.rate,
        msg_size: x.msg_size,
        rtt_ns: x.rtt_ns,
        receivers: x.receivers,
        pause_ns: 1_000_000,
        recovery_ns: derived.double_loss_ns,
        recovery_from: "the derived timers".into(),
        lag_ns: 0,
        rmem_max: None,
        wmem_max: None,
        so_rcvbuf: crate::model::aeron_default::SOCKET_SO_RCVBUF,
        rcv_window: crate::model::aeron_default::RCV_INITIAL_WINDOW_LENGTH,
    });
    (derived, buffers)
}

/// An arm's loss, driver settings (`AERON_*` names and values) and planned worst costs of a
/// single and a double loss (zero for the zero-loss controls).
fn arm_settings(
    x: &LossExperiment,
    arm: &str,
    derived: &NakSettings,
    rcvbuf_bytes: u64,
) -> (f64, Vec<(String, String)>, (u64, u64)) {
    let timers = |s: &NakSettings| -> Vec<(String, String)> {
        properties(s).into_iter().map(|(k, v)| (env_name(k), v)).collect()
    };
    let sizes = |b: u64| {
        vec![
            ("AERON_SOCKET_SO_RCVBUF".to_owned(), b.to_string()),
            ("AERON_RCV_INITIAL_WINDOW_LENGTH".to_owned(), b.to_string()),
        ]
    };
    // Unicast recovers with the unicast NAK delay and retry ratio, MDC with the backoff.
    let cost = |n: &NakSettings| {
        if x.unicast {
            unicast_costs(n, x.rtt_ns)
        } else {
            (
                n.nak_multicast_max_backoff_ns + 2 * x.rtt_ns,
                n.retransmit_unicast_linger_ns + n.nak_multicast_max_backoff_ns + 2 * x.rtt_ns,
            )
        }
    };
    match arm {
        "default" => (
            x.loss,
            timers(&NakSettings::aeron_defaults()),
            cost(&NakSettings::aeron_defaults()),
        ),
        "derived" => (x.loss, timers(derived), cost(derived)),
        "min-buffers" => (0.0, sizes(rcvbuf_bytes), (0, 0)),
        _ => (0.0, sizes(rcvbuf_bytes * OVERSIZED_FACTOR), (0, 0)),
    }
}

/// What this host limits: fewer cores than busy processes.
fn limits(x: &LossExperiment) -> Vec<String> {
    let cores = aeron_latency::messaging::available_cores().len();
    let procs = 2 * x.receivers as usize + 2;
    if cores >= procs {
        return Vec::new();
    }
    vec![format!(
        "{cores} cores for {procs} busy processes ({} drivers, {}, 1 publisher), all idling with \
         backoff: scheduling delays set the zero-loss tail, and a loss's cost shows only where it exceeds them",
        x.receivers + 1,
        plural(x.receivers as usize, "subscriber", "subscribers")
    )]
}

/// A unicast loss's worst cost with `n`: the NAK delay and a round trip; a double loss waits
/// for the later of the retry delay and the sender's linger.
fn unicast_costs(n: &NakSettings, rtt: u64) -> (u64, u64) {
    let delay = n.nak_unicast_delay_ns;
    let retry = delay.saturating_mul(n.nak_unicast_retry_delay_ratio);
    (delay + rtt, retry.max(n.retransmit_unicast_linger_ns) + delay + rtt)
}

/// The publisher's channel: MDC with dynamic control on `port`, or unicast to `port`.
fn pub_channel(port: u16, unicast: bool) -> String {
    if unicast {
        format!("aeron:udp?endpoint=127.0.0.1:{port}")
    } else {
        format!("aeron:udp?control=127.0.0.1:{port}|control-mode=dynamic")
    }
}

/// Receiver `i`'s channel.
fn sub_channel(port: u16, i: u32, unicast: bool) -> String {
    if unicast {
        pub_channel(port, true)
    } else {
        format!(
            "aeron:udp?endpoint=127.0.0.1:{}|control=127.0.0.1:{port}|control-mode=dynamic",
            u32::from(port) + 1 + i
        )
    }
}

fn spawn_driver(dir: &Path, env: &[(String, String)], loss: Option<(f64, u64)>, log: &Path) -> Result<Kid, String> {
    let mut c = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
    c.args(["driver", "--dir"]).arg(dir);
    c.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some((rate, seed)) = loss {
        c.env("AERON_UDP_CHANNEL_INCOMING_INTERCEPTORS", "loss");
        c.env(
            "AERON_UDP_CHANNEL_TRANSPORT_BINDINGS_LOSS_ARGS",
            format!("rate={rate}|recv-msg-mask=0x2|seed={seed}"),
        );
    }
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(out);
    // Its own process group: a terminal's Ctrl-C stops the receivers and the publisher, which
    // write their reports through it; it stops when its stdin closes (when loss ends, or dies).
    c.process_group(0);
    let kid = Kid(c.spawn().map_err(|e| format!("starting a driver: {e}"))?);
    let deadline = Instant::now() + Duration::from_secs(10);
    while aeron_latency::messaging::Client::connect(dir).is_err() {
        if Instant::now() > deadline {
            return Err(format!(
                "the driver in {} did not start within 10 s (see {})",
                dir.display(),
                log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(kid)
}

fn counter(dir: &Path, label: &str) -> i64 {
    aeron_latency::messaging::Client::connect(dir)
        .map(|c| {
            c.counters()
                .into_iter()
                .filter(|k| k.label == label)
                .map(|k| k.value)
                .sum()
        })
        .unwrap_or(0)
}

/// One arm: its drivers, the receivers, the publisher, then what the receivers measured and
/// the drivers counted. A driver that does not start ends the arm with that problem.
fn run_arm(
    x: &LossExperiment,
    arm: &str,
    loss: f64,
    settings: Vec<(String, String)>,
    (single, double): (u64, u64),
    port: u16,
) -> LossArm {
    let base = x.work_dir.join(format!("{arm}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::create_dir_all(&base);
    let mut result = LossArm {
        arm: arm.to_owned(),
        loss,
        settings: settings.clone(),
        received: 0,
        lost: 0,
        before_join: 0,
        naks_sent: 0,
        retransmits_sent: 0,
        latency: Stats::default(),
        predicted_single_loss_ns: single,
        predicted_double_loss_ns: double,
        max_over_no_loss_ns: None,
        complete: false,
        problems: Vec::new(),
    };
    let pub_dir = base.join("pub");
    let rx_dirs: Vec<PathBuf> = (0..x.receivers).map(|i| base.join(format!("r{i}"))).collect();
    let drivers = match start_drivers(x, &base, &pub_dir, &rx_dirs, &settings, loss) {
        Ok(d) => d,
        Err(e) => {
            result.problems.push(e);
            return result;
        }
    };
    let wait_s = x.duration.as_secs_f64() + x.warmup as f64 / x.rate as f64 + 30.0;
    let mut subs = start_receivers(x, &base, &rx_dirs, port, wait_s, &mut result.problems);
    std::thread::sleep(Duration::from_millis(1500));
    if !crate::sys::signals::interrupted() {
        if let Err(e) = publish(x, &pub_dir, port, &base) {
            result.problems.push(e);
        }
    }
    // The receivers end with the publisher's end marker (Ctrl-C: handed SIGINT, they write
    // what they measured).
    let deadline = Instant::now() + Duration::from_secs_f64(wait_s);
    for s in &mut subs {
        wait_forwarding_interrupts(&mut s.0, deadline.saturating_duration_since(Instant::now()));
    }
    if crate::sys::signals::interrupted() {
        result.problems.push(INTERRUPTED_ARM.to_owned());
    }
    result.naks_sent = rx_dirs.iter().map(|d| counter(d, "NAKs sent")).sum();
    result.retransmits_sent = counter(&pub_dir, "Retransmits sent");
    drop(subs);
    drop(drivers);
    let all = read_receivers(x, &base, &mut result);
    result.complete = all && result.problems.is_empty();
    let _ = std::fs::remove_dir_all(&base);
    result
}

/// The publisher's driver, then one per receiver (receiver `i`'s drops `loss` of the data
/// frames with seed + `i`).
///
/// # Errors
/// The first driver that did not start (those started before it stop).
fn start_drivers(
    x: &LossExperiment,
    base: &Path,
    pub_dir: &Path,
    rx_dirs: &[PathBuf],
    settings: &[(String, String)],
    loss: f64,
) -> Result<Vec<Kid>, String> {
    let mut drivers = vec![spawn_driver(pub_dir, settings, None, &base.join("pub-driver.log"))?];
    for (i, d) in rx_dirs.iter().enumerate() {
        let lossy = (loss > 0.0).then_some((loss, x.seed + i as u64));
        drivers.push(spawn_driver(
            d,
            settings,
            lossy,
            &base.join(format!("r{i}-driver.log")),
        )?);
    }
    Ok(drivers)
}

/// One latency-sub per receiver's driver, each writing `sub<i>.json` into `base`; one that
/// does not start is a problem of the arm.
fn start_receivers(
    x: &LossExperiment,
    base: &Path,
    rx_dirs: &[PathBuf],
    port: u16,
    wait_s: f64,
    problems: &mut Vec<String>,
) -> Vec<Kid> {
    let mut subs = Vec::new();
    for (i, d) in rx_dirs.iter().enumerate() {
        let spawned = Command::new(sibling("latency-sub"))
            .arg("--dir")
            .arg(d)
            .args([
                "--channel",
                &sub_channel(port, i as u32, x.unicast),
                "--idle",
                "backoff",
                "--diagnostics",
                "off",
            ])
            .args(["--live", "off", "--timeout", &format!("{wait_s:.0}"), "--json"])
            .arg(base.join(format!("sub{i}.json")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(c) => subs.push(Kid(c)),
            Err(e) => problems.push(format!("starting latency-sub: {e}")),
        }
    }
    subs
}

/// latency-pub on the publisher's driver, run to its end.
///
/// # Errors
/// It did not start, or failed (its last line on stderr).
fn publish(x: &LossExperiment, pub_dir: &Path, port: u16, base: &Path) -> Result<(), String> {
    // Its stderr goes to a file (a pipe nobody reads while it runs could fill and stall it).
    let log = base.join("pub.stderr");
    let stderr = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut publisher = Command::new(sibling("latency-pub"))
        .arg("--dir")
        .arg(pub_dir)
        .args([
            "--channel",
            &pub_channel(port, x.unicast),
            "--idle",
            "backoff",
            "--diagnostics",
            "off",
        ])
        .args(["--rate", &x.rate.to_string(), "--msg-size", &x.msg_size.to_string()])
        .args([
            "--duration",
            &format!("{}", x.duration.as_secs_f64()),
            "--warmup",
            &x.warmup.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("starting latency-pub: {e}"))?;
    match wait_for_run(&mut publisher, INTERRUPTED_CHILD_GRACE) {
        Some(s) if s.success() => Ok(()),
        status => {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let exit = exit_words(status);
            let last = said.lines().last().unwrap_or(&exit);
            // Its lines name it already.
            Err(format!(
                "latency-pub: {}",
                last.strip_prefix("latency-pub: ").unwrap_or(last)
            ))
        }
    }
}

/// The receivers' reports into the arm: messages received and lost, and the latency of all
/// of them merged. True when every receiver reported, complete and with nothing lost.
fn read_receivers(x: &LossExperiment, base: &Path, result: &mut LossArm) -> bool {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    let mut all = true;
    for i in 0..x.receivers {
        let path = base.join(format!("sub{i}.json"));
        let report: Option<Report> = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let Some(r) = report else {
            result.problems.push(format!("receiver {i} wrote no report"));
            all = false;
            continue;
        };
        result.received += r.received;
        result.lost += r.lost;
        result.before_join += r.before_join;
        all &= r.complete && r.lost == 0;
        if let Some(why) = r.incomplete_reason.as_deref().filter(|_| !r.complete) {
            result.problems.push(format!("receiver {i}: {why}"));
        }
        if let Some(h) = r
            .histograms
            .as_ref()
            .and_then(|h| crate::model::decode(&h.intended).ok())
        {
            match &mut merged {
                Some(m) => {
                    let _ = m.add(&h);
                }
                None => merged = Some(h),
            }
        }
    }
    if let Some(m) = &merged {
        result.latency = Stats::from_histogram(m);
    }
    all
}
