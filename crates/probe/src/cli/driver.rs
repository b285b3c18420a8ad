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
    /// Stop after this many seconds (default: when stdin closes)
    #[arg(long)]
    pub seconds: Option<f64>,
}

/// `latency-probe driver`: runs until stdin closes or `--seconds` pass.
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
    eprintln!("{DRIVER}: running in {}", d.dir().display());
    match a.seconds {
        Some(s) => std::thread::sleep(super::seconds("--seconds", s)?),
        None => {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        }
    }
    drop(d);
    Ok(())
}
