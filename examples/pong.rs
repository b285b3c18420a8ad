//! The echo half of the ping/pong round-trip pair (Aeron's Ping/Pong samples, on this
//! workspace's crates): subscribes to `aeron:ipc` stream 1002 and echoes every message back on
//! stream 1003 with a zero-copy `try_claim`, straight from the fragment handler.
//!
//! ```text
//! # Terminal 1: a media driver (aeronmd, or this workspace's example)
//! cargo run --release --example media_driver
//! # Terminal 2
//! cargo run --release --example pong
//! # Terminal 3
//! cargo run --release --example ping
//! ```
//!
//! Pong stops after `--count` echoes, or once no message has come for `--idle-timeout`
//! seconds (10; before the first message it waits 60 s). `ping --embedded` runs the same loop
//! (`common::pong`) on a thread of its own, so one command does the whole round trip.

mod common;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use aeron_latency::messaging::{self, Client};

use common::{placement, spawn_hot, Args, CHANNEL, PING_STREAM, PONG_STREAM};

/// How long pong waits for the first ping.
const FIRST_WAIT: Duration = Duration::from_secs(60);

const USAGE: &str = "pong: echoes aeron:ipc stream 1002 back on stream 1003 (run ping against it)

usage: cargo run --release --example pong -- [--dir DIR] [--count N] [--spin | --idle NAME] [--core N]
                                             [--idle-timeout SECS]

  --dir DIR             the media driver's directory (default $AERON_DIR, else /dev/shm/aeron-$USER)
  --count N             stop after N echoes (default: only on --idle-timeout)
  --spin                busy-spin instead of yielding while idle
  --idle NAME           any Aeron idle strategy: spin, noop, yield, backoff, sleep-ns[:N] (default yield)
  --core N              pin the echo thread to core N
  --idle-timeout SECS   stop when no message came for SECS seconds (default 10; 60 before the first)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pong: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = Args::from_env(USAGE);
    let dir: PathBuf = args.value("--dir")?.unwrap_or_else(messaging::default_aeron_dir);
    let count: Option<u64> = args.value("--count")?;
    let mut idle = args.idle("yield")?;
    let core: Option<usize> = args.value("--core")?;
    let idle_timeout = Duration::from_secs(args.value("--idle-timeout")?.unwrap_or(10));
    args.finish()?;

    let client = Client::connect(&dir).map_err(|e| common::connect_words(&e))?;
    let mut sub = client.subscription(CHANNEL, PING_STREAM).map_err(|e| e.to_string())?;
    let mut publ = client.publication(CHANNEL, PONG_STREAM).map_err(|e| e.to_string())?;
    let stop_rule = match count {
        Some(n) => format!("after {n} echoes or {} s without a message", idle_timeout.as_secs()),
        None => format!("{} s after the last message", idle_timeout.as_secs()),
    };
    println!(
        "pong: echoing {CHANNEL} stream {PING_STREAM} -> stream {PONG_STREAM} on the driver at {}; idle {idle}; \
         stops {stop_rule}",
        dir.display()
    );

    let thread = spawn_hot("pong", core, move || {
        common::pong(&mut sub, &mut publ, &mut idle, count, FIRST_WAIT, idle_timeout)
    })
    .map_err(|e| format!("could not start the echo thread: {e}"))?;
    println!("pong: echo thread {}", placement(&thread, core));
    let report = thread.join().map_err(|_| "the echo thread panicked")?;
    println!(
        "pong: echoed {} messages (claim retries: {}; dropped {}); stopped: {}",
        report.echoed, report.retries, report.dropped, report.stopped
    );
    Ok(())
}
