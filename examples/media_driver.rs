//! A stand-alone Aeron media driver for the two-terminal examples, for machines without
//! `aeronmd`: the embedded Aeron C driver (Aeron 1.54, statically linked) in the directory
//! `ping`, `pong`, `latency-pub` and `latency-sub` use by default (`$AERON_DIR`, else
//! `/dev/shm/aeron-$USER`).
//!
//! ```text
//! cargo run --release --example media_driver                 # until Enter
//! cargo run --release --example media_driver -- --seconds 60
//! ```
//!
//! It refuses to start over a live driver. It stops, and removes its directory, when you press
//! Enter or after `--seconds`; killed with Ctrl-C it leaves the directory behind, which the
//! next start (of this or aeronmd) cleans up. The driver's `AERON_*` environment variables
//! (`AERON_IPC_TERM_BUFFER_LENGTH`, `AERON_THREADING_MODE`, ...) apply.

mod common;

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use aeron_latency::messaging::{self, EmbeddedDriver};

use common::Args;

const USAGE: &str = "media_driver: an embedded Aeron media driver for ping/pong and latency-pub/-sub

usage: cargo run --release --example media_driver -- [--dir DIR] [--ipc-term-length BYTES] [--seconds N]

  --dir DIR                where (default $AERON_DIR, else /dev/shm/aeron-$USER)
  --ipc-term-length BYTES  IPC term length, a power of two from 65536 (default
                           $AERON_IPC_TERM_BUFFER_LENGTH, else 1048576)
  --seconds N              stop after N seconds (default: when you press Enter)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("media_driver: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = Args::from_env(USAGE);
    let dir: PathBuf = args.value("--dir")?.unwrap_or_else(messaging::default_aeron_dir);
    let term: Option<usize> = args.value("--ipc-term-length")?;
    let seconds: Option<u64> = args.value("--seconds")?;
    args.finish()?;

    // `spawn` refuses a directory whose driver is alive (its heartbeat fresh and its process
    // there) and takes over one whose driver's process is gone, however fresh its heartbeat.
    let mut builder = EmbeddedDriver::builder().dir(&dir);
    let term = term.or_else(|| {
        std::env::var_os("AERON_IPC_TERM_BUFFER_LENGTH")
            .is_none()
            .then_some(1 << 20)
    });
    if let Some(t) = term {
        builder = builder.ipc_term_length(t);
    }
    let driver = builder.spawn().map_err(|e| common::launch_words(&e))?;
    println!(
        "media_driver: {} running in {} (IPC term {} KiB)",
        messaging::driver_version(),
        driver.dir().display(),
        driver.ipc_term_length() >> 10
    );
    match seconds {
        Some(s) => {
            println!("media_driver: stopping in {s} s");
            std::thread::sleep(Duration::from_secs(s));
        }
        None => {
            println!("media_driver: press Enter to stop");
            let mut line = String::new();
            // EOF (no terminal): keep running until killed.
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                loop {
                    std::thread::park();
                }
            }
        }
    }
    drop(driver);
    println!("media_driver: stopped, {} removed", dir.display());
    Ok(())
}
