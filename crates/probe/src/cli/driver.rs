//! `latency-probe driver`: the embedded media driver on its own, as `aeronmd` (the loss
//! experiment runs one per receiver).

use super::parse::parse_driver_opt;
use super::Failure;
use std::path::PathBuf;

/// `latency-probe driver`'s name in its messages.
pub const DRIVER: &str = "latency-probe driver";

/// `latency-probe driver`: the embedded media driver on its own, as `aeronmd` (the loss
/// experiment runs one per receiver).
#[derive(Debug, clap::Args)]
pub struct DriverArgs {
    /// Its Aeron directory (refused when a live driver is there)
    #[arg(long)]
    pub dir: PathBuf,
    /// One setting, as latency-probe --driver-opt (repeat it); AERON_* in the environment apply
    #[arg(long = "driver-opt", value_name = "KEY=VALUE", value_parser = parse_driver_opt)]
    pub driver_opt: Vec<aeron_latency::messaging::DriverOption>,
    /// Stop after this many seconds (default: at Ctrl-C or SIGTERM, or when stdin, if a pipe, closes)
    #[arg(long)]
    pub seconds: Option<f64>,
}

/// `latency-probe driver`: runs for `--seconds`, or until Ctrl-C or SIGTERM, or until its
/// stdin closes when that is a pipe or a socket.
///
/// # Errors
/// The driver does not start (exit 2).
pub fn driver(a: &DriverArgs) -> Result<(), Failure> {
    #[cfg(not(feature = "embedded-driver"))]
    return Err(Failure::setup(format!(
        "--dir {}: built without the embedded driver; run aeronmd there, or rebuild with the embedded-driver \
         feature",
        a.dir.display()
    )));
    #[cfg(feature = "embedded-driver")]
    serve(a)
}

#[cfg(feature = "embedded-driver")]
fn serve(a: &DriverArgs) -> Result<(), Failure> {
    let until = Until::of(a.seconds)?;
    super::exit::catch_interrupts()?;
    // Room for one run's logs, as the run's own embedded driver checks.
    let mut b = aeron_latency::messaging::EmbeddedDriver::builder()
        .dir(&a.dir)
        .expected_logs(crate::run::driver::LOGS_PER_RUN);
    for o in &a.driver_opt {
        b = b.option(o.clone());
    }
    let d = b
        .spawn()
        .map_err(|e| Failure::setup(crate::run::launch_error(&e, crate::run::Launcher::DriverCommand)))?;
    eprintln!("{DRIVER}: running in {} {}", d.dir().display(), until.words());
    let why = until.wait();
    drop(d);
    eprintln!("{DRIVER}: stopped: {why}");
    Ok(())
}

/// What stops `latency-probe driver`: `--seconds`, or Ctrl-C and SIGTERM, and the end of its
/// stdin when that is a pipe or a socket (a parent that closes it, or dies, stops the driver).
/// A terminal is not read: a background job reading one would be stopped by SIGTTIN, driver
/// and all. Nor is `/dev/null` (a script's background job): it ends at once.
#[cfg(feature = "embedded-driver")]
enum Until {
    Seconds(f64, std::time::Duration),
    Signal { stdin: bool },
}

#[cfg(feature = "embedded-driver")]
impl Until {
    fn of(seconds: Option<f64>) -> Result<Until, Failure> {
        Ok(match seconds {
            Some(s) => Until::Seconds(s, super::seconds("--seconds", s)?),
            None => Until::Signal {
                stdin: stdin_is_a_pipe(),
            },
        })
    }

    fn words(&self) -> String {
        match self {
            Until::Seconds(s, _) => format!("for {s} s"),
            Until::Signal { stdin: true } => "until its stdin closes, Ctrl-C or SIGTERM".into(),
            Until::Signal { stdin: false } => "until Ctrl-C or SIGTERM".into(),
        }
    }

    /// Waits for it; says which it was.
    fn wait(&self) -> &'static str {
        let (end, stdin) = match self {
            Until::Seconds(_, d) => (Some(std::time::Instant::now() + *d), false),
            Until::Signal { stdin } => (None, *stdin),
        };
        let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        if stdin {
            let closed = closed.clone();
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
                closed.store(true, std::sync::atomic::Ordering::Release);
            });
        }
        loop {
            if crate::sys::signals::interrupted() {
                return "Ctrl-C or SIGTERM";
            }
            if closed.load(std::sync::atomic::Ordering::Acquire) {
                return "its stdin closed";
            }
            if end.is_some_and(|end| std::time::Instant::now() >= end) {
                return "--seconds passed";
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Whether stdin is a pipe or a socket (not a terminal, a file or `/dev/null`).
#[cfg(feature = "embedded-driver")]
fn stdin_is_a_pipe() -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata("/proc/self/fd/0").is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
}
