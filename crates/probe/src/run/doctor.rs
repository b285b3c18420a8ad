//! `doctor` for a run: reads the host (`sys::doctor`) and judges it (`analysis::doctor`) for
//! the cores, channel, rate, message size and driver the run uses. `latency-probe doctor` prints
//! it; every probe run records its checks in the report's `env.doctor`.

use crate::analysis::doctor::examine;
use crate::model::{Doctor, DoctorRequest};
use crate::sys::doctor::Host;
use std::path::Path;
use std::time::Duration;

/// What a run looks like to `doctor`.
#[derive(Debug, Clone)]
pub struct RunShape<'a> {
    /// The hot threads' cores.
    pub hot_cores: Vec<usize>,
    /// The channel (UDP or IPC).
    pub channel: &'a str,
    /// Messages per second.
    pub rate: u64,
    /// Message size, bytes.
    pub msg_size: u64,
    /// The IPC term length the run's logs use, bytes.
    pub ipc_term: u64,
    /// The driver's directory (its logs go next to it).
    pub driver_dir: &'a Path,
    /// The embedded driver's settings; `None` for an external driver.
    pub driver: Option<Vec<(String, String)>>,
    /// How long to sample hypervisor steal (0: not sampled; a probe measures it itself).
    pub steal_sample: Duration,
}

/// Aeron's default IPC term (`aeron.ipc.term.buffer.length`), for a driver whose settings are
/// unknown.
pub const AERON_IPC_TERM_DEFAULT: u64 = 64 << 20;

/// The log space a run needs: the embedded driver's own rule (two streams of three terms, and
/// 16 MiB for everything else).
#[must_use]
pub fn log_space_needed(ipc_term: u64) -> u64 {
    2 * 3 * ipc_term + (16 << 20)
}

/// Reads this host and checks it for `shape`.
#[must_use]
pub fn doctor(shape: &RunShape<'_>) -> Doctor {
    let shm = shape.driver_dir.parent().unwrap_or(shape.driver_dir);
    let request = DoctorRequest {
        hot_cores: shape.hot_cores.clone(),
        shm_dir: shm.display().to_string(),
        shm_needed: log_space_needed(shape.ipc_term),
        udp: shape.channel.starts_with("aeron:udp"),
        rate: shape.rate,
        msg_size: shape.msg_size,
        driver: shape.driver.clone(),
    };
    let readings = Host::real().readings(
        aeron_latency::messaging::available_cores(),
        &shape.hot_cores,
        shm,
        shape.steal_sample,
    );
    let checks = examine(&readings, &request);
    Doctor {
        request,
        readings,
        checks,
    }
}
