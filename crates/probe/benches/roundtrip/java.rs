//! Aeron's own Java Ping and Pong (`io.aeron.samples.Ping` / `Pong` from the aeron-all jar that
//! `make bootstrap` fetches into `.tools/`), as users run them: two JVMs, each pinned with
//! `taskset` to the core the other cases give their initiator and responder, exclusive
//! publications on `aeron:ipc`, through this bench's driver, busy-spinning. Ping times each
//! round trip itself (`System.nanoTime` before `offer`, again in the echo's handler) into its
//! HdrHistogram and prints the percentile distribution in microseconds with three decimals,
//! from which its row here is rebuilt (each printed value with the count up to it: its
//! percentiles are exact at the printed ones, its mean and max are Ping's own).
//!
//! `BENCH_JAVA=skip` leaves it out; without Java 17+ or the jar it is skipped with a note.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use latency_probe::measure::floor;
use latency_probe::measure::histogram::new_latency_histogram;
use latency_probe::model::Stats;

use crate::common::{Mode, Placement, Plan, Row, CHANNEL, MSG_LEN};

/// The jar `make bootstrap` fetches (`scripts/bootstrap.sh`), relative to the workspace root.
const JAR: &str = ".tools/aeron-all-1.51.0.jar";
/// Ping and pong streams: `PING_STREAM + offset`, `PONG_STREAM + offset`.
const PING_STREAM: i32 = 2402;
const PONG_STREAM: i32 = 2403;
/// How long Ping may take before it is killed (JVM start, warm-up, the measured run).
const PING_DEADLINE: Duration = Duration::from_secs(180);

/// Java Ping/Pong rows for 32 and 64 bytes (or a note saying why there are none).
pub(crate) fn rows(at: &Placement, plan: &Plan, mode: Mode, dir: &Path, sizes: &[usize]) -> (Vec<Row>, Option<String>) {
    if std::env::var("BENCH_JAVA").is_ok_and(|v| v == "skip") {
        return (Vec::new(), Some("Java Ping/Pong: skipped (BENCH_JAVA=skip)".to_owned()));
    }
    let jar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(JAR);
    if !jar.is_file() {
        return (
            Vec::new(),
            Some(format!("Java Ping/Pong: skipped, no {JAR} (make bootstrap fetches it)")),
        );
    }
    if !Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return (
            Vec::new(),
            Some("Java Ping/Pong: skipped, no `java` on PATH (Java 17 or newer)".to_owned()),
        );
    }
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        let run = JavaRun {
            jar: jar.clone(),
            dir: dir.to_owned(),
            len,
            offset: 100 * i as i32,
            cores: (at.initiator, at.responder),
            warmup: if mode == Mode::Bench { (5, 20_000) } else { (1, 100) },
            messages: plan.measured_ops,
        };
        let measure_floor = || {
            at.unpinned(|| floor::measure(at.initiator, at.responder, plan.local_floor).expect("measuring the floor"))
        };
        let before = measure_floor();
        match at.unpinned(|| run.ping_pong()) {
            Ok((h, mean, max)) => {
                let after = measure_floor();
                let mut stats = Stats::from_histogram(&h);
                stats.mean = mean;
                stats.max = max;
                rows.push(Row {
                    name: if len == MSG_LEN {
                        "java_ping".to_owned()
                    } else {
                        format!("java_ping_{len}")
                    },
                    batch_median_ns: None,
                    stats,
                    local_floor: (before, after),
                    notes: format!(
                        "Aeron 1.51.0 Java samples, exclusive publications, {} measured after {}x{} warm-up, \
                         Ping on core {}, Pong on core {}",
                        run.messages,
                        run.warmup.0,
                        run.warmup.1,
                        core_name(run.cores.0),
                        core_name(run.cores.1)
                    ),
                });
            }
            // `make test` runs the bench in test mode where Java is installed: a failure there
            // is a failure, not a note.
            Err(e) if mode == Mode::Test => panic!("Java Ping/Pong {len} B: {e}"),
            Err(e) => notes.push(format!("Java Ping/Pong {len} B: {e}")),
        }
    }
    (rows, (!notes.is_empty()).then(|| notes.join("; ")))
}

fn core_name(core: Option<usize>) -> String {
    core.map_or_else(|| "any".to_owned(), |c| c.to_string())
}

struct JavaRun {
    jar: PathBuf,
    dir: PathBuf,
    len: usize,
    offset: i32,
    cores: (Option<usize>, Option<usize>),
    /// Iterations and messages per iteration.
    warmup: (u64, u64),
    messages: u64,
}

impl JavaRun {
    /// The JVM's command line for `class`, pinned to `core`.
    fn command(&self, class: &str, core: Option<usize>) -> Command {
        let mut c = match core {
            Some(core) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &core.to_string(), "java"]);
                c
            }
            None => Command::new("java"),
        };
        for module in ["jdk.internal.misc", "sun.nio.ch", "java.util.zip"] {
            c.args(["--add-opens", &format!("java.base/{module}=ALL-UNNAMED")]);
        }
        c.arg("-cp").arg(&self.jar);
        let props = [
            ("aeron.dir", self.dir.display().to_string()),
            ("aeron.sample.ping.channel", CHANNEL.to_owned()),
            ("aeron.sample.pong.channel", CHANNEL.to_owned()),
            ("aeron.sample.ping.streamId", (PING_STREAM + self.offset).to_string()),
            ("aeron.sample.pong.streamId", (PONG_STREAM + self.offset).to_string()),
            ("aeron.sample.exclusive.publications", "true".to_owned()),
            ("aeron.sample.messageLength", self.len.to_string()),
            ("aeron.sample.messages", self.messages.to_string()),
            ("aeron.sample.warmup.iterations", self.warmup.0.to_string()),
            ("aeron.sample.warmup.messages", self.warmup.1.to_string()),
        ];
        for (k, v) in props {
            c.arg(format!("-D{k}={v}"));
        }
        c.arg(class);
        c
    }

    /// Runs Pong, then Ping to the end; Ping's histogram (ns), mean and max.
    fn ping_pong(&self) -> Result<(Histogram<u64>, f64, u64), String> {
        let spawn = |class: &str, core| {
            self.command(class, core)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting {class}: {e}"))
        };
        let pong = Stopped(spawn("io.aeron.samples.Pong", self.cores.1)?);
        let mut ping = Stopped(spawn("io.aeron.samples.Ping", self.cores.0)?);
        // Ping asks "Execute again?" after its run: no.
        if let Some(mut stdin) = ping.0.stdin.take() {
            let _ = stdin.write_all(b"n\n");
        }
        let started = Instant::now();
        let status = loop {
            if let Some(s) = ping.0.try_wait().map_err(|e| format!("waiting for Ping: {e}"))? {
                break s;
            }
            if started.elapsed() > PING_DEADLINE {
                return Err(format!(
                    "Ping still running after {} s, killed",
                    PING_DEADLINE.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut out = String::new();
        if let Some(mut o) = ping.0.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        drop(pong);
        if !status.success() {
            let mut err = String::new();
            if let Some(mut e) = ping.0.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(format!("Ping exited with {status}: {last}"));
        }
        parse_distribution(&out)
    }
}

/// A child that is stopped (SIGINT, then killed after 5 s) when dropped.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            if let Ok(pid) = i32::try_from(self.0.id()) {
                // SAFETY: kill(2) on our own child's pid, which has not been reaped (try_wait
                // said it is running), so the pid is still its.
                unsafe { libc::kill(pid, libc::SIGINT) };
            }
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = self.0.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Ping's `outputPercentileDistribution(out, 1000.0)`: rows of value (µs), percentile, total
/// count, 1/(1-percentile), then `#[Mean = ..., StdDeviation = ...]` and `#[Max = ..., Total
/// count = ...]`.
fn parse_distribution(out: &str) -> Result<(Histogram<u64>, f64, u64), String> {
    let mut h = new_latency_histogram();
    let mut counted = 0u64;
    let (mut mean, mut max, mut total) = (None, None, None);
    for line in out.lines().skip_while(|l| !l.starts_with("Histogram of RTT latencies")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // The last row, at 100%, has no 1/(1-percentile).
        let row = (3..=4)
            .contains(&f.len())
            .then(|| (f.first().and_then(|v| us_to_ns(v)), f[2].parse::<u64>()));
        if let Some((Some(ns), Ok(count))) = row {
            if count > counted {
                h.saturating_record_n(ns.min(h.high()), count - counted);
            }
            counted = counted.max(count);
        } else if let Some(rest) = line.strip_prefix("#[Mean") {
            mean = field(rest, "=").and_then(us_to_ns).map(|ns| ns as f64);
        } else if let Some(rest) = line.strip_prefix("#[Max") {
            max = field(rest, "=").and_then(us_to_ns);
            total = rest
                .split("Total count")
                .nth(1)
                .and_then(|r| field(r, "="))
                .and_then(|v| v.trim().trim_end_matches(']').parse::<u64>().ok());
        }
    }
    match (mean, max, total) {
        (Some(mean), Some(max), Some(total)) if total == counted && total > 0 => Ok((h, mean, max)),
        _ => Err(format!(
            "could not read Ping's histogram ({counted} counted, total {total:?}); its output began: {}",
            out.lines().take(3).collect::<Vec<_>>().join(" | ")
        )),
    }
}

/// A value Ping printed in microseconds (three decimals), in ns.
fn us_to_ns(v: &str) -> Option<u64> {
    v.trim().parse::<f64>().ok().map(|us| (us * 1000.0).round() as u64)
}

/// The text after `sep` up to the next comma: `" =   0.738, StdDeviation"` -> `"   0.738"`.
fn field<'a>(s: &'a str, sep: &str) -> Option<&'a str> {
    s.split_once(sep).map(|(_, v)| v.split(',').next().unwrap_or(v))
}
