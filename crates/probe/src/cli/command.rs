//! `latency-probe`'s command line as a whole: the experiment's flags ([`super::probe::Args`])
//! or one of its subcommands, each defined in its own module.

use clap::Parser;

/// Measure latency over Aeron IPC in one command: starts an embedded Aeron C media driver (or
/// uses --dir), runs latency-sub and latency-pub as separate processes with their hot threads
/// pinned to different cores, and prints the combined report: one-way by default, round trips
/// with --mode rtt. Right before and after, it measures the raw cache-line round trip between
/// the same two cores (the floor) and prints every percentile as a ratio to it. Exits non-zero
/// when a message was lost or a process failed. `latency-probe compare A.json B.json` compares
/// two reports; `latency-probe sweep --rates 10k,50k,100k` runs it at each rate.
#[derive(Debug, Parser)]
#[command(name = "latency-probe", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// A subcommand, or none: the experiment.
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    /// The experiment's flags.
    #[command(flatten)]
    pub args: super::probe::Args,
}

/// latency-probe's subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Did my change help? Arms A and B (their own flags, binaries or commands around them) run
    /// alternately in short rounds (each round's order at random), each with the floor beside it; per percentile the
    /// paired change B vs A with its interval and a verdict: better, worse, no change,
    /// inconclusive
    Ab(super::ab::AbArgs),
    /// Compare two JSON reports per percentile: the change with its interval over the runs
    /// recorded in them, and a verdict (measure both with --runs 6 or more)
    Compare(super::probe::CompareArgs),
    /// Run the probe at each rate and draw latency (p50, p99, p99.9) against offered load, with
    /// the single-queue 1/(1-rho) curve for comparison
    Sweep(super::probe::SweepArgs),
    /// NAK and retransmit timers from RTT, per-loss budget and receiver count (seed 000), with
    /// the predicted cost of a loss and the validity checks; printed for aeronmd, the Java
    /// driver and the embedded driver
    Nak(super::nak::NakArgs),
    /// Socket buffers, receiver window and term length from rate, message size, RTT and
    /// receivers, checked against net.core.rmem_max/wmem_max and the driver's settings
    Buffers(super::buffers::BuffersArgs),
    /// Check this host and the driver for a run: cores and isolation, tasks and IRQs on the hot
    /// cores, governor, huge pages, swap, clock source, steal, log space, map count, perf,
    /// socket buffers, the driver's threads and NAK timers; each with its fix
    Doctor(super::doctor::DoctorArgs),
    /// Seed 000's A/B over real UDP on this host: one publisher to N MDC receivers, each with
    /// its own driver dropping a seeded fraction of data frames; Aeron's default timers
    /// against the calculator's, and two zero-loss buffer controls
    Loss(super::loss::LossArgs),
    /// The embedded media driver on its own (as aeronmd), until Ctrl-C, SIGTERM, --seconds or the end of a piped stdin
    Driver(super::driver::DriverArgs),
    /// A service's own traffic, from its tap's interval logs (messaging's feature tap): each
    /// figure's percentiles overall and in time-ordered groups or intervals, plots with --out,
    /// and the change against other logs (--vs) or another period (--vs-period), per
    /// percentile over the intervals, paired by time where they coincide
    Tap(super::tap::TapArgs),
    /// Why is my service slow: a running process's threads watched for --duration the way the
    /// probe watches its own (perf where permitted, else /proc), read-only: per-group counters,
    /// each thread's off-CPU time and who took its CPU, and the findings
    Attach(super::attach::AttachArgs),
    /// Seed 004 on Aeron: one run timed at each durability stage (offer returned, received,
    /// recorded by Aeron Archive A, replicated to archive B) per archive sync level, with each
    /// stage's added cost and Little's law
    Stages(super::stages::StagesArgs),
}
