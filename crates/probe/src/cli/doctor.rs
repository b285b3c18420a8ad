//! `latency-probe doctor`: this host and driver checked for a run, its flags and their checks.

use super::output::{check_json, emit, failed};
use super::parse::parse_driver_opt;
use super::validate::check_msg_size;
use super::Failure;
use std::path::PathBuf;

/// `latency-probe doctor`'s name in its messages.
pub const DOCTOR: &str = "latency-probe doctor";

/// `latency-probe doctor`: this host and driver checked for a run.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The two cores the hot threads will use, publisher first (default: the last two usable,
    /// as the probe picks them)
    #[arg(long, value_delimiter = ',', num_args = 2)]
    pub cores: Option<Vec<usize>>,
    /// The run's channel: aeron:ipc, or aeron:udp?... (socket buffers and NAK timers matter)
    #[arg(long, default_value = "aeron:ipc")]
    pub channel: String,
    /// Messages per second of the run (k and M suffixes)
    #[arg(long, default_value = "10000", value_parser = super::parse_rate)]
    pub rate: u64,
    /// Message size of the run, bytes
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: u64,
    /// The embedded driver's IPC term length (bytes; as latency-probe --term-length)
    #[arg(long = "term-length")]
    pub term_length: Option<usize>,
    /// A running media driver's directory (its settings cannot be read; the host's are)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// One setting of the embedded driver, as latency-probe --driver-opt (repeat it)
    #[arg(long = "driver-opt", value_name = "KEY=VALUE", value_parser = parse_driver_opt)]
    pub driver_opt: Vec<aeron_latency::messaging::DriverOption>,
    /// Seconds to sample hypervisor steal for
    #[arg(long, default_value_t = 0.5)]
    pub steal: f64,
    /// Also write the checks, what was read and what was asked as JSON to this file ('-': JSON
    /// on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe doctor`: starts the embedded driver (unless --dir) to read its settings,
/// reads the host, prints every check. Exit 0 unless a check FAILs (exit 1).
///
/// # Errors
/// Bad input or no driver (exit 2), a failed check (exit 1), or the JSON file could not be
/// written.
pub fn doctor(a: &DoctorArgs) -> Result<(), Failure> {
    use crate::run::driver::{start, DriverChoice};
    check_json(a.json.as_ref())?;
    let hot = match &a.cores {
        Some(c) => {
            for &core in c {
                super::check_core("--cores", Some(core))?;
            }
            c.clone()
        }
        None => {
            // Publisher first, as --cores takes them; default_cores gives the subscriber's first.
            let (sub, publisher) = crate::run::process::default_cores();
            [publisher, sub].into_iter().flatten().collect()
        }
    };
    super::check_channel("--channel", &a.channel)?;
    check_msg_size(a.msg_size)?;
    let steal = super::seconds("--steal", a.steal)?;
    if a.dir.is_none() {
        super::check_embedded(a.term_length, None, &a.channel, None, a.msg_size as usize)?;
    }
    let choice = match &a.dir {
        Some(d) => DriverChoice::External(d.clone()),
        None => DriverChoice::Embedded {
            term_length: a.term_length,
            parent_dir: None,
            options: a.driver_opt.clone(),
        },
    };
    let driver = start(&choice).map_err(Failure::setup)?;
    let settings = driver.settings();
    let d = crate::run::doctor::doctor(&crate::run::doctor::RunShape {
        hot_cores: hot,
        channel: &a.channel,
        rate: a.rate,
        msg_size: a.msg_size,
        ipc_term: driver.ipc_term_length(),
        driver_dir: driver.dir(),
        driver: settings,
        steal_sample: steal,
    });
    drop(driver);
    emit(a.json.as_ref(), &crate::render::tuning::doctor_text(&d), &d)?;
    failed(&d.checks)
}
