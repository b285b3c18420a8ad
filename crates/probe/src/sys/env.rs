//! The environment a report records: CPU model, kernel, cores, governor, read from `/proc` and
//! `/sys` once before a run.

use crate::model::Env;
use crate::model::CLIENT;
use crate::model::UNKNOWN;
use std::fs;

impl Env {
    /// Reads the host's CPU model, core count, kernel and governor (each best effort). The
    /// driver fields are [`UNKNOWN`] until set with [`Env::with_driver`].
    pub fn detect() -> Env {
        let cpu_model = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| parse_cpu_model(&s))
            .unwrap_or_else(|| UNKNOWN.to_string());
        Env {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            driver_kind: UNKNOWN.to_string(),
            driver_version: UNKNOWN.to_string(),
            client: CLIENT.to_string(),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            doctor: Vec::new(),
            driver_settings: Vec::new(),
        }
    }

    /// Sets the media driver kind ([`DRIVER_EMBEDDED`](crate::model::DRIVER_EMBEDDED) / [`DRIVER_EXTERNAL`](crate::model::DRIVER_EXTERNAL)) and version.
    pub fn with_driver(mut self, kind: &str, version: &str) -> Env {
        self.driver_kind = kind.to_string();
        self.driver_version = version.to_string();
        self
    }
}

fn read_trimmed(path: &str) -> String {
    match fs::read_to_string(path) {
        Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => UNKNOWN.to_string(),
    }
}

/// The CPU model from /proc/cpuinfo text: `model name` (x86), else `Hardware` or `Processor`
/// (some ARM kernels), else `cpu model` (MIPS) or `cpu` (POWER).
pub(crate) fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Hardware", "Processor", "cpu model", "cpu"] {
        for line in cpuinfo.lines() {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim();
                if k.trim() == key && !v.is_empty() {
                    return Some(v.split_whitespace().collect::<Vec<_>>().join(" "));
                }
            }
        }
    }
    None
}

/// A number from a one-value `/proc` or `/sys` file (`/proc/sys/net/core/rmem_max`), if it
/// reads and parses.
#[must_use]
pub fn read_number(path: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}
