//! Helpers shared by latency-probe's integration tests (each test binary has `mod common;` and
//! uses a subset): the binaries, fresh scratch paths, JSON reports, an embedded driver, bounded
//! waits and the latency-pub/latency-sub argument lists of the fault tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use aeron_latency::messaging::EmbeddedDriver;
use serde_json::Value;

/// The path of the crate's binary `name`: latency-probe, latency-pub or latency-sub.
pub(crate) fn bin(name: &str) -> PathBuf {
    match name {
        "latency-probe" => PathBuf::from(env!("CARGO_BIN_EXE_latency-probe")),
        "latency-pub" => PathBuf::from(env!("CARGO_BIN_EXE_latency-pub")),
        "latency-sub" => PathBuf::from(env!("CARGO_BIN_EXE_latency-sub")),
        other => panic!("unknown binary {other}"),
    }
}

/// Runs binary `name` with `args` until it exits, and returns its status, stdout and stderr.
pub(crate) fn run(name: &str, args: &[&str]) -> Output {
    Command::new(bin(name)).args(args).output().expect("binary runs")
}

/// Runs latency-probe with `args` until it exits: [`run`] of latency-probe.
pub(crate) fn run_probe(args: &[&str]) -> Output {
    run("latency-probe", args)
}

/// Starts binary `name` with `args` in a process group of its own (as a terminal runs a
/// command: a test can send SIGINT to the group, as Ctrl-C does), its stderr into `stderr` and
/// its stdout into `stdout` (or nowhere).
pub(crate) fn spawn_in_own_group(
    name: &str,
    args: &[&str],
    stdout: Option<&Path>,
    stderr: &Path,
) -> std::process::Child {
    use std::os::unix::process::CommandExt as _;
    let out = stdout.map_or_else(std::process::Stdio::null, |p| {
        std::fs::File::create(p).expect("stdout file").into()
    });
    Command::new(bin(name))
        .args(args)
        .process_group(0)
        .stdout(out)
        .stderr(std::fs::File::create(stderr).expect("stderr file"))
        .spawn()
        .expect("binary runs")
}

/// What a finished process wrote on stderr, as text.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh path in the temp dir for this test binary, process and `tag` (leftovers removed, nothing made).
pub(crate) fn scratch(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "latency-probe-{}-{}-{tag}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
}

/// A fresh path for a JSON report: [`scratch`] of `<tag>.json`.
pub(crate) fn tmp_json(tag: &str) -> PathBuf {
    scratch(&format!("{tag}.json"))
}

/// Parses the JSON report at `p` (the test fails if it is missing or not JSON), then removes it.
pub(crate) fn read_json(p: &Path) -> Value {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("no report at {}: {e}", p.display()));
    let _ = std::fs::remove_file(p);
    serde_json::from_slice(&bytes).expect("valid JSON")
}

/// An embedded media driver in a private dir: `term_length`-byte IPC terms, `driver_timeout` if given.
pub(crate) fn embedded_driver(term_length: usize, driver_timeout: Option<Duration>) -> EmbeddedDriver {
    let mut builder = EmbeddedDriver::builder().private_dir().ipc_term_length(term_length);
    if let Some(t) = driver_timeout {
        builder = builder.driver_timeout(t);
    }
    builder.spawn().expect("driver starts")
}

/// Polls `done` every 5 ms until it holds; fails the test with `what` once `deadline` has passed.
pub(crate) fn wait_until(deadline: Instant, what: &str, mut done: impl FnMut() -> bool) {
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Arguments of latency-pub or latency-sub on an external driver: yield-idling, no diagnostics, quiet.
#[derive(Debug, Clone)]
pub(crate) struct SideArgs(Vec<String>);

impl SideArgs {
    /// The flags both sides take: `dir`, `stream`, `--idle yield`, `--diagnostics off`, `--quiet`.
    fn new(dir: &str, stream: u32) -> SideArgs {
        let mut args = SideArgs(Vec::new())
            .flag("--dir", dir)
            .flag("--stream", stream)
            .flag("--idle", "yield")
            .flag("--diagnostics", "off");
        args.0.push("--quiet".to_owned());
        args
    }

    /// Adds `flag value`.
    pub(crate) fn flag(mut self, flag: &str, value: impl ToString) -> SideArgs {
        self.0.push(flag.to_owned());
        self.0.push(value.to_string());
        self
    }

    /// latency-sub on `dir`'s driver and `stream`, giving up `timeout` s after it starts.
    pub(crate) fn sub(dir: &str, stream: u32, timeout: u32) -> SideArgs {
        SideArgs::new(dir, stream).flag("--timeout", timeout)
    }

    /// latency-pub on `dir`'s driver and `stream`: `warmup` messages, then `duration` s, at 5,000 msg/s.
    pub(crate) fn publ(dir: &str, stream: u32, duration: u32, warmup: u32) -> SideArgs {
        SideArgs::new(dir, stream)
            .flag("--duration", duration)
            .flag("--rate", 5000)
            .flag("--warmup", warmup)
    }

    /// Adds latency-pub's `--wait secs`: how long it waits for a subscriber (or a lost one to return).
    pub(crate) fn wait(self, secs: u32) -> SideArgs {
        self.flag("--wait", secs)
    }

    /// Adds `--json path`: where the side writes its report.
    pub(crate) fn json(self, path: &Path) -> SideArgs {
        self.flag("--json", path.to_str().unwrap())
    }

    /// The arguments, in order, to pass to the binary.
    pub(crate) fn args(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}
