//! The media driver latency-probe measures through: a running one (`--dir`), or its own
//! embedded Aeron C media driver, started once for all runs.

use std::fmt;
use std::path::{Path, PathBuf};

/// The publication logs a run's embedded driver holds: the round trip's two streams (ping and
/// pong), three terms each; the driver checks it has room for them before it starts.
pub const LOGS_PER_RUN: u32 = 2;

/// Which driver to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverChoice {
    /// The driver already running in this Aeron directory.
    External(PathBuf),
    /// An embedded driver started for the experiment and stopped after it.
    Embedded {
        /// Its IPC term length in bytes [default: `$AERON_IPC_TERM_BUFFER_LENGTH`, else 64 MiB].
        term_length: Option<usize>,
        /// The directory it puts its own (fresh) directory in [default: /dev/shm].
        parent_dir: Option<PathBuf>,
        /// Settings by name (`--driver-opt`), applied after the environment.
        options: Vec<aeron_latency::messaging::DriverOption>,
    },
}

/// The driver in use; an embedded one stops, and removes its directory, when this is dropped.
#[derive(Debug)]
pub struct Driver {
    #[cfg(feature = "embedded-driver")]
    embedded: Option<aeron_latency::messaging::EmbeddedDriver>,
    dir: PathBuf,
    version: String,
}

impl Driver {
    /// Its Aeron directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether it is latency-probe's own embedded driver.
    #[must_use]
    pub fn is_embedded(&self) -> bool {
        #[cfg(feature = "embedded-driver")]
        return self.embedded.is_some();
        #[cfg(not(feature = "embedded-driver"))]
        return false;
    }

    /// Its version ("unknown (external)" for a running one).
    #[must_use]
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The IPC term the run's logs use: the embedded driver's own, else Aeron's default
    /// (an external driver's cannot be read).
    #[must_use]
    pub fn ipc_term_length(&self) -> u64 {
        #[cfg(feature = "embedded-driver")]
        if let Some(d) = &self.embedded {
            return d.ipc_term_length() as u64;
        }
        crate::run::doctor::AERON_IPC_TERM_DEFAULT
    }

    /// The embedded driver's settings as (Aeron property, value); `None` for an external one
    /// (Aeron publishes no settings in `cnc.dat`).
    #[must_use]
    pub fn settings(&self) -> Option<Vec<(String, String)>> {
        #[cfg(feature = "embedded-driver")]
        return self.embedded.as_ref().map(|d| {
            d.settings()
                .properties()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect()
        });
        #[cfg(not(feature = "embedded-driver"))]
        return None;
    }
}

/// Why the driver is not there.
#[derive(Debug)]
pub enum DriverError {
    /// The running driver at `--dir` could not be reached.
    Connect(aeron_latency::messaging::ConnectError),
    /// The embedded driver did not start.
    Launch(aeron_latency::messaging::DriverLaunchError),
    /// This build has no embedded driver and no `--dir` was given.
    NotBuiltIn,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Connect(e) => f.write_str(&crate::run::connect_error(e)),
            DriverError::Launch(e) => f.write_str(&crate::run::launch_error(e, crate::run::Launcher::Run)),
            DriverError::NotBuiltIn => f.write_str(
                "built without the embedded driver: pass --dir for a running media driver, or rebuild with the \
                 embedded-driver feature",
            ),
        }
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DriverError::Connect(e) => Some(e),
            DriverError::Launch(e) => Some(e),
            DriverError::NotBuiltIn => None,
        }
    }
}

/// Connects to the running driver (and lets go again: each child connects on its own), or
/// starts the embedded one.
///
/// # Errors
/// The driver could not be reached or started; the message names the cause and the fix.
pub fn start(choice: &DriverChoice) -> Result<Driver, DriverError> {
    match choice {
        DriverChoice::External(dir) => {
            aeron_latency::messaging::Client::connect(dir).map_err(DriverError::Connect)?;
            Ok(Driver {
                #[cfg(feature = "embedded-driver")]
                embedded: None,
                dir: dir.clone(),
                version: "unknown (external)".to_owned(),
            })
        }
        DriverChoice::Embedded {
            term_length,
            parent_dir,
            options,
        } => embedded(*term_length, parent_dir.as_deref(), options),
    }
}

#[cfg(feature = "embedded-driver")]
fn embedded(
    term_length: Option<usize>,
    parent_dir: Option<&Path>,
    options: &[aeron_latency::messaging::DriverOption],
) -> Result<Driver, DriverError> {
    // Non-sparse log files: the driver maps in every page when it creates a log, so its own
    // thread takes no page fault while the run measures (each client pre-faults its mapping).
    // --term-length and --driver-dir were checked before anything started (cli::check_embedded).
    let mut b = aeron_latency::messaging::EmbeddedDriver::builder()
        .private_dir()
        .term_buffer_sparse_file(false)
        .remove_stale_dirs(true)
        .expected_logs(LOGS_PER_RUN);
    if let Some(t) = term_length {
        b = b.ipc_term_length(t);
    }
    for o in options {
        b = b.option(o.clone());
    }
    if let Some(d) = parent_dir {
        // The private directory's name (`<Aeron's default dir name>-<pid>-<n>`), under --driver-dir.
        let default = aeron_latency::messaging::default_aeron_dir();
        let name = default
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        b = b.dir(d.join(format!("{name}-{}-0", std::process::id())));
    }
    let d = b.spawn().map_err(DriverError::Launch)?;
    let stale = d.stale_dirs_removed();
    if !stale.is_empty() {
        eprintln!(
            "latency-probe: removed {} directories that killed runs' embedded drivers left (e.g. {})",
            stale.len(),
            stale[0].display()
        );
    }
    Ok(Driver {
        dir: d.dir().to_path_buf(),
        embedded: Some(d),
        version: aeron_latency::messaging::driver_version(),
    })
}

#[cfg(not(feature = "embedded-driver"))]
fn embedded(
    _: Option<usize>,
    _: Option<&Path>,
    _: &[aeron_latency::messaging::DriverOption],
) -> Result<Driver, DriverError> {
    Err(DriverError::NotBuiltIn)
}
