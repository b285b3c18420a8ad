//! Aeron Archive processes for `latency-probe stages`: each one is Aeron's Java
//! `ArchivingMediaDriver` (a media driver and an archive in one JVM) run by the small helper
//! `crates/probe/java/ArchiveStage.java`, with its own Aeron and archive directories.
//!
//! # Guarantees
//! - [`ArchiveProcess::spawn`] returns only once the helper printed `READY` (the archive is up;
//!   archive A starts recording when the stream's first subscriber appears, archive B starts
//!   replicating when A's recording exists, and each says where its recording starts:
//!   [`ArchiveProcess::start_position`]), within [`READY_WAIT`]; otherwise it kills the process
//!   and says why in one line ([`ArchiveError`]).
//! - Dropping an [`ArchiveProcess`] stops it: its standard input is closed (the helper exits
//!   on that and deletes its Aeron directory), then after [`STOP_WAIT`] it is killed by pid;
//!   its directories are removed either way. If latency-probe itself dies (Ctrl-C, a crash),
//!   the kernel kills the helper (`PR_SET_PDEATHSIG`) and its standard input closes.
//! - An error of the running archive (a full disk above all) reaches [`ArchiveProcess::failure`]
//!   as soon as the helper says it (a line on its stdout); archive A then stops recording, so
//!   the stream's publisher is never held back by a recorder that cannot write.
//! - Why Java: the Aeron C archive client (`rusteron-archive`) needs Gradle to generate its
//!   codecs at build time, which cannot run here without the network; Aeron's own Java archive
//!   client runs from the `aeron-all` jar alone.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an archive may take to come up (a cold JVM compiling the helper: 2–6 s here).
pub const READY_WAIT: Duration = Duration::from_secs(60);

/// How long a stopped archive may take to exit before it is killed.
pub const STOP_WAIT: Duration = Duration::from_secs(5);

/// The Aeron version of the jar the bootstrap installs (the newest Maven Central serves here).
pub const AERON_JAR_VERSION: &str = "1.51.0";

/// The `--add-opens` Aeron's JVM needs on Java 17.
pub const JVM_OPENS: [&str; 6] = [
    "--add-opens",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util.zip=ALL-UNNAMED",
];

/// The helper's source, built into the binary and written next to the run's files.
const HELPER_SOURCE: &str = include_str!("../../java/ArchiveStage.java");

/// Where the archive's Java pieces are: the `java` launcher and the `aeron-all` jar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Java {
    /// The `java` launcher.
    pub java: PathBuf,
    /// `aeron-all-<version>.jar`.
    pub jar: PathBuf,
}

impl Java {
    /// `java` from `JAVA_HOME` or the `PATH`, and the jar from `AERON_ALL_JAR`, else
    /// `.tools/aeron-all-1.51.0.jar` in the project (where the bootstrap puts it), else the
    /// local Maven repository.
    ///
    /// # Errors
    /// [`ArchiveError::NoJava`] or [`ArchiveError::NoJar`] with the fix.
    pub fn find() -> Result<Java, ArchiveError> {
        let java = std::env::var_os("JAVA_HOME")
            .map(|h| PathBuf::from(h).join("bin/java"))
            .filter(|p| p.is_file())
            .or_else(|| which("java"))
            .ok_or(ArchiveError::NoJava)?;
        let jar_name = format!("aeron-all-{AERON_JAR_VERSION}.jar");
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(j) = std::env::var_os("AERON_ALL_JAR") {
            candidates.push(PathBuf::from(j));
        }
        candidates.push(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../.tools")
                .join(&jar_name),
        );
        if let Some(home) = std::env::var_os("HOME") {
            candidates.push(
                PathBuf::from(home)
                    .join(".m2/repository/io/aeron/aeron-all")
                    .join(AERON_JAR_VERSION)
                    .join(&jar_name),
            );
        }
        let jar = candidates
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .ok_or_else(|| ArchiveError::NoJar {
                looked: candidates.clone(),
            })?;
        Ok(Java { java, jar })
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// One archive to start.
#[derive(Debug, Clone)]
pub struct ArchiveSpec {
    /// A name for messages (`archive A`).
    pub name: String,
    /// Its media driver's Aeron directory (created by the driver, deleted when it stops).
    pub aeron_dir: PathBuf,
    /// Its archive directory.
    pub archive_dir: PathBuf,
    /// UDP port of its control channel on 127.0.0.1.
    pub control_port: u16,
    /// UDP port of its replication channel on 127.0.0.1.
    pub replication_port: u16,
    /// `aeron.archive.file.sync.level` (and the catalog's): 0, 1 or 2.
    pub sync: u8,
    /// The stream it records (or replicates): channel and stream id.
    pub channel: String,
    /// Stream id.
    pub stream: i32,
    /// IPC term length of its driver.
    pub term_length: usize,
    /// Archive id (unique per archive).
    pub archive_id: i64,
    /// Replicate the recording of the archive whose control port this is, live.
    pub replicate_from: Option<u16>,
}

/// Why an archive could not be used. Each message is one line with the cause and the fix.
#[derive(Debug)]
pub enum ArchiveError {
    /// No `java` launcher.
    NoJava,
    /// No `aeron-all` jar where it was looked for.
    NoJar {
        /// Where.
        looked: Vec<PathBuf>,
    },
    /// A port the archive needs is taken.
    PortBusy {
        /// Which archive.
        name: String,
        /// The port.
        port: u16,
    },
    /// The helper could not be written or started.
    Start {
        /// Which archive.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// It did not say `READY` in time (it was killed).
    NotReady {
        /// Which archive.
        name: String,
        /// How long it was given.
        waited: Duration,
        /// The last line it wrote on stderr.
        last: String,
    },
    /// SIGINT or SIGTERM arrived while it was starting (it was stopped).
    Interrupted,
    /// The filesystem of the archive directory has less room than the run records.
    NoSpace {
        /// The archive directory's parent (`--archive-dir`).
        dir: PathBuf,
        /// Bytes the run needs there.
        need: u64,
        /// Bytes free there.
        free: u64,
    },
    /// Its disk filled up while it recorded (it stopped recording).
    DiskFull {
        /// Which archive.
        name: String,
        /// Its archive directory.
        dir: PathBuf,
        /// What it said.
        said: String,
    },
    /// It reported another error while it ran.
    Failed {
        /// Which archive.
        name: String,
        /// What it said.
        said: String,
    },
    /// It exited before it was ready, or while the run needed it.
    Exited {
        /// Which archive.
        name: String,
        /// Its exit status, if known.
        status: Option<std::process::ExitStatus>,
        /// The last line it wrote on stderr.
        last: String,
    },
}

impl fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchiveError::NoJava => f.write_str(
                "no java found (JAVA_HOME/bin/java or java on the PATH): install a JRE 17 \
                 (apt-get install openjdk-17-jre-headless; scripts/bootstrap.sh does) or set JAVA_HOME",
            ),
            ArchiveError::NoJar { looked } => {
                write!(
                f,
                "no aeron-all-{AERON_JAR_VERSION}.jar (looked at {}): run scripts/bootstrap.sh (it downloads it from \
                 Maven Central) or set AERON_ALL_JAR to its path",
                looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
            }
            ArchiveError::PortBusy { name, port } => write!(
                f,
                "{name}: UDP port {port} on 127.0.0.1 is taken by another process; free it or pick other ports \
                 (--control-port)"
            ),
            ArchiveError::Start { name, source } => write!(f, "{name}: could not start java: {source}"),
            ArchiveError::Interrupted => {
                f.write_str("interrupted (SIGINT or SIGTERM) while an archive was starting; it was stopped")
            }
            ArchiveError::NotReady { name, waited, last } => write!(
                f,
                "{name} did not come up within {} s (killed){}; check that java runs (java -version) and that the \
                 archive directory's disk has space",
                waited.as_secs(),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ),
            ArchiveError::NoSpace { dir, need, free } => write!(
                f,
                "{} has {} MiB free and the run needs about {} MiB there (what it records, plus the 128 MiB \
                 Aeron Archive wants free to start a recording); free space, point --archive-dir at a disk with \
                 room, or shorten --duration",
                dir.display(),
                crate::units::thousands(free >> 20),
                crate::units::thousands(need.div_ceil(1 << 20))
            ),
            ArchiveError::DiskFull { name, dir, said } => write!(
                f,
                "{name}: the disk under {} filled up during the run ({said}); it stopped recording, so the recorded \
                 stages are cut short; free space there or point --archive-dir at a disk with room",
                dir.display()
            ),
            ArchiveError::Failed { name, said } => write!(
                f,
                "{name} reported an error during the run: {said}; the recorded stages may be cut short; run again, \
                 and if it recurs inspect the archive with Aeron's ArchiveTool"
            ),
            ArchiveError::Exited { name, status, last } => write!(
                f,
                "{name} exited ({}){}; a full disk (the archive writes its recording), a port taken meanwhile, or \
                 a killed JVM stop it",
                status.map_or("status unknown".to_owned(), |s| s.to_string()),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ),
        }
    }
}

impl std::error::Error for ArchiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArchiveError::Start { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A running archive (see the module's guarantees).
#[derive(Debug)]
pub struct ArchiveProcess {
    spec: ArchiveSpec,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stderr_log: PathBuf,
    lines: mpsc::Receiver<String>,
    /// The `ArchiveStage: ERROR` lines it printed, as they came (its stdout reader fills it).
    errors: Arc<Mutex<Vec<String>>>,
}

/// What the helper prints before an error of the running archive.
const ERROR_PREFIX: &str = "ArchiveStage: ERROR ";

/// Whether UDP `port` on 127.0.0.1 can be bound now.
fn port_free(port: u16) -> bool {
    std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
}

/// The last non-empty line of a file (what a failed JVM said last).
fn last_line(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_owned()
}

impl ArchiveProcess {
    /// Starts the archive and waits for it to be ready. `work` is a directory for the helper's
    /// source and its stderr log.
    ///
    /// # Errors
    /// See [`ArchiveError`]; nothing is left running on error.
    pub fn spawn(java: &Java, spec: &ArchiveSpec, work: &Path) -> Result<ArchiveProcess, ArchiveError> {
        for port in [spec.control_port, spec.replication_port] {
            if !port_free(port) {
                return Err(ArchiveError::PortBusy {
                    name: spec.name.clone(),
                    port,
                });
            }
        }
        let start_err = |source| ArchiveError::Start {
            name: spec.name.clone(),
            source,
        };
        std::fs::create_dir_all(work).map_err(start_err)?;
        let source = work.join("ArchiveStage.java");
        std::fs::write(&source, HELPER_SOURCE).map_err(start_err)?;
        let stderr_log = work.join(format!("archive-{}.stderr", spec.archive_id));
        let stderr = std::fs::File::create(&stderr_log).map_err(start_err)?;
        let mut cmd = Command::new(&java.java);
        cmd.args(JVM_OPENS)
            .arg("-cp")
            .arg(&java.jar)
            .arg(&source)
            .arg("--aeron-dir")
            .arg(&spec.aeron_dir)
            .arg("--archive-dir")
            .arg(&spec.archive_dir)
            .args(["--control-port", &spec.control_port.to_string()])
            .args(["--replication-port", &spec.replication_port.to_string()])
            .args(["--sync", &spec.sync.to_string()])
            .args(["--channel", &spec.channel])
            .args(["--stream", &spec.stream.to_string()])
            .args(["--term-length", &spec.term_length.to_string()])
            .args(["--archive-id", &spec.archive_id.to_string()]);
        if let Some(p) = spec.replicate_from {
            cmd.args(["--replicate-from", &p.to_string()]);
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(start_err)?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        let errors = Arc::new(Mutex::new(Vec::new()));
        // Owned from here on: any error below stops the process (Drop).
        let mut a = ArchiveProcess {
            spec: spec.clone(),
            child: Some(child),
            stdin,
            stderr_log,
            lines,
            errors: errors.clone(),
        };
        if let Some(out) = stdout {
            // A reader of its stdout (READY, RECORDING, REPLICATING, errors): it ends with the
            // process.
            std::thread::Builder::new()
                .name("archive-stdout".into())
                .spawn(move || {
                    for line in BufReader::new(out).lines().map_while(Result::ok) {
                        if let Some(e) = line.strip_prefix(ERROR_PREFIX) {
                            errors
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .push(e.to_owned());
                        }
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                })
                .map_err(start_err)?;
        }
        a.wait_for("READY", READY_WAIT)?;
        Ok(a)
    }

    /// Waits until the helper prints a line starting with `word`, or it exits, or `limit`.
    ///
    /// # Errors
    /// [`ArchiveError::NotReady`] (then it is stopped) or [`ArchiveError::Exited`].
    pub fn wait_for(&mut self, word: &str, limit: Duration) -> Result<String, ArchiveError> {
        let deadline = Instant::now() + limit;
        loop {
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(line) if line.starts_with(word) => return Ok(line),
                Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.exited()),
            }
            if let Some(e) = self.check() {
                return Err(e);
            }
            if crate::sys::signals::interrupted() {
                self.stop();
                return Err(ArchiveError::Interrupted);
            }
            if Instant::now() >= deadline {
                self.stop();
                return Err(ArchiveError::NotReady {
                    name: self.spec.name.clone(),
                    waited: limit,
                    last: last_line(&self.stderr_log),
                });
            }
        }
    }

    /// Where its recording starts (a stream position), once it said so: archive A records from
    /// where the stream was when its first subscriber appeared; a replica from its source's
    /// start. Waits up to `limit` for the line.
    ///
    /// # Errors
    /// It did not say within `limit`, or it exited.
    pub fn start_position(&mut self, limit: Duration) -> Result<i64, ArchiveError> {
        let word = if self.spec.replicate_from.is_some() {
            "REPLICATING"
        } else {
            "RECORDING"
        };
        let line = self.wait_for(word, limit)?;
        line.split_whitespace()
            .last()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| ArchiveError::Exited {
                name: self.spec.name.clone(),
                status: None,
                last: format!("it said '{line}', with no start position"),
            })
    }

    /// Whether it reported an error so far, as a check another thread can keep.
    pub fn failed(&self) -> impl Fn() -> bool + Send + 'static {
        let errors = self.errors.clone();
        move || {
            !errors
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_empty()
        }
    }

    /// `Some(error)` when the archive reported an error while it ran (the first one): a full
    /// disk is [`ArchiveError::DiskFull`], anything else [`ArchiveError::Failed`].
    #[must_use]
    pub fn failure(&self) -> Option<ArchiveError> {
        let errors = self.errors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let said = errors.first()?.clone();
        Some(
            if said.contains("No space left on device") || said.contains("low storage threshold") {
                ArchiveError::DiskFull {
                    name: self.spec.name.clone(),
                    dir: self.spec.archive_dir.clone(),
                    said: said
                        .split(" - ")
                        .last()
                        .filter(|_| said.contains("No space left on device"))
                        .unwrap_or(&said)
                        .to_owned(),
                }
            } else {
                ArchiveError::Failed {
                    name: self.spec.name.clone(),
                    said,
                }
            },
        )
    }

    /// `Some(error)` when the process has exited.
    pub fn check(&mut self) -> Option<ArchiveError> {
        let exited = self.child.as_mut().is_none_or(|c| !matches!(c.try_wait(), Ok(None)));
        exited.then(|| self.exited())
    }

    fn exited(&mut self) -> ArchiveError {
        let status = self.child.as_mut().and_then(|c| c.wait().ok());
        ArchiveError::Exited {
            name: self.spec.name.clone(),
            status,
            last: last_line(&self.stderr_log),
        }
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its media driver's Aeron directory.
    #[must_use]
    pub fn aeron_dir(&self) -> &Path {
        &self.spec.aeron_dir
    }

    /// Stops it (see the module's guarantees) and removes its directories. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        if let Some(mut c) = self.child.take() {
            crate::run::process::wait_bounded(&mut c, STOP_WAIT);
        }
        let _ = std::fs::remove_dir_all(&self.spec.archive_dir);
        let _ = std::fs::remove_dir_all(&self.spec.aeron_dir);
    }
}

impl Drop for ArchiveProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Makes the kernel kill the child when this process dies (Ctrl-C, a crash), so no JVM is
/// left behind; its standard input closes then too.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only calls prctl, which is
    // async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
