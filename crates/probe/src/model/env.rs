//! Who measured and where: the tool, and the environment a report records (CPU, kernel,
//! cores, governor, driver and client).

use serde::{Deserialize, Serialize};

/// What is written where a value could not be read.
pub const UNKNOWN: &str = "unknown";

/// The Aeron client this project uses.
pub const CLIENT: &str = "aeron-rs 0.1.8";

/// `Env::driver_kind` for the embedded Aeron C media driver.
pub const DRIVER_EMBEDDED: &str = "embedded C";

/// `Env::driver_kind` for a media driver run outside the probe (aeronmd, Java MediaDriver).
pub const DRIVER_EXTERNAL: &str = "external";

/// The program that wrote the report.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
}

impl Tool {
    /// This crate's name and version.
    pub fn this() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The machine and software the run happened on. Every field is best effort: [`UNKNOWN`]
/// (or 0 cores) when it could not be read.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// CPUs this process may run on (`std::thread::available_parallelism`).
    pub cores: usize,
    /// Kernel release from /proc/sys/kernel/osrelease.
    pub kernel: String,
    /// [`DRIVER_EMBEDDED`] or [`DRIVER_EXTERNAL`].
    pub driver_kind: String,
    /// Media driver version, as far as known.
    pub driver_version: String,
    /// The Aeron client, [`CLIENT`].
    pub client: String,
    /// cpu0's cpufreq scaling governor.
    pub governor: String,
    /// `latency-probe doctor`'s checks of this host and driver for the run, made before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doctor: Vec<crate::model::Check>,
    /// The embedded driver's settings as (Aeron property, value), read back from it (empty
    /// for an external driver, whose settings cannot be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub driver_settings: Vec<(String, String)>,
}
