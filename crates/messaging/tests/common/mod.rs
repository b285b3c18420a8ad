//! Helpers shared by the messaging crate's integration tests (each test binary has `mod common;`
//! and uses a subset): an embedded driver per test and a bounded wait for a stream to connect.
#![allow(dead_code)]

pub(crate) mod payload;

use std::time::{Duration, Instant};

use messaging::{Client, ConcurrentPublication, EmbeddedDriver, IdleStrategy, MessageHeader, Subscriber};

/// An embedded media driver of this test's own, in a private directory, with 64 KiB IPC terms.
pub(crate) fn driver() -> EmbeddedDriver {
    EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .spawn()
        .expect("driver starts")
}

/// Waits until `publisher` is connected and `subscriber` has its image; fails the test after 10 s.
pub(crate) fn wait_until_connected(publisher: &ConcurrentPublication, subscriber: &Subscriber) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publisher.is_connected() || subscriber.image_count() == 0 {
        assert!(Instant::now() < deadline, "the subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends `n` messages (their index, 8 bytes) on a fresh IPC stream and receives them all, in
/// order; fails the test when one is missing, out of order, or the stream stalls for 10 s.
pub(crate) fn move_messages(client: &Client, stream: i32, n: u64) {
    let mut sub = client.subscription("aeron:ipc", stream).expect("subscription");
    let publ = client.publication("aeron:ipc", stream).expect("publication");
    wait_until_connected(&publ, &sub);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0..n {
        while let Err(e) = publ.offer(&i.to_le_bytes()) {
            assert!(e.is_retryable() && Instant::now() < deadline, "offer {i}: {e}");
            idle.idle_once();
        }
    }
    let mut next = 0;
    while next < n {
        assert!(Instant::now() < deadline, "received {next} of {n}");
        let got = sub
            .poll(
                &mut |m: &[u8], _: &MessageHeader<'_>| {
                    assert_eq!(m, next.to_le_bytes(), "message {next} out of order or wrong");
                    next += 1;
                },
                64,
            )
            .expect("the client has its driver");
        idle.idle(got);
    }
}

/// The Aeron C client (rusteron-client) connected to the driver in `dir`; keep the pair alive
/// while its publications and subscriptions are used, on the thread that made them.
pub(crate) fn c_client(dir: &std::path::Path) -> (rusteron_client::Aeron, rusteron_client::AeronContext) {
    let dir = std::ffi::CString::new(dir.to_string_lossy().into_owned()).unwrap();
    let context = rusteron_client::AeronContext::new().expect("C client context");
    context.set_dir(&dir).expect("C client dir");
    let aeron = rusteron_client::Aeron::new(&context).expect("C client");
    aeron.start().expect("starting the C client");
    (aeron, context)
}

/// A C client subscription to `channel`/`stream`.
pub(crate) fn c_subscription(
    c: &(rusteron_client::Aeron, rusteron_client::AeronContext),
    channel: &str,
    stream: i32,
) -> rusteron_client::AeronSubscription {
    let channel = std::ffi::CString::new(channel).unwrap();
    c.0.async_add_subscription(
        &channel,
        stream,
        rusteron_client::Handlers::NONE,
        rusteron_client::Handlers::NONE,
    )
    .and_then(|a| a.poll_blocking(Duration::from_secs(10)))
    .expect("C subscription")
}

/// A media driver in a child process, so that it can be killed or stopped, or run with
/// `AERON_*` settings (a loss interceptor) that a driver reads from its process's environment.
/// The child is this test binary running only its test named `driver_process`, which each test
/// binary using this defines as a call of [`driver_process_body`]. Killed, and its directory
/// removed, when dropped.
pub(crate) struct DriverProcess {
    pub(crate) child: std::process::Child,
    pub(crate) dir: std::path::PathBuf,
}

impl DriverProcess {
    /// A driver in `dir` (removed first) with 64 KiB terms and driver timeout `timeout`.
    pub(crate) fn spawn(dir: &std::path::Path, timeout: Duration) -> DriverProcess {
        DriverProcess::spawn_with(dir, timeout, &[])
    }

    /// With `env` (e.g. `AERON_*` settings) for the driver's process.
    pub(crate) fn spawn_with(dir: &std::path::Path, timeout: Duration, env: &[(&str, &str)]) -> DriverProcess {
        let _ = std::fs::remove_dir_all(dir);
        let child = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "driver_process", "--ignored", "--nocapture"])
            .env("MESSAGING_TEST_DRIVER_DIR", dir)
            .env("MESSAGING_TEST_DRIVER_TIMEOUT_MS", timeout.as_millis().to_string())
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("driver process starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        // Alive, and past writing cnc.dat (its pid is there once its version is).
        while !matches!(
            messaging::driver_status(dir, timeout),
            messaging::DriverStatus::Alive { .. }
        ) || messaging::driver_pid(dir).is_none()
        {
            assert!(Instant::now() < deadline, "the driver process did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
        DriverProcess {
            child,
            dir: dir.to_owned(),
        }
    }

    /// Sends `sig` (`-KILL`, `-STOP`, ...) to the driver's process.
    pub(crate) fn signal(&self, sig: &str) {
        signal(&self.child, sig);
    }
}

/// Sends `sig` to `child`; fails the test if `kill` fails.
pub(crate) fn signal(child: &std::process::Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig}");
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The child's side of [`DriverProcess`]: an embedded driver in `MESSAGING_TEST_DRIVER_DIR`,
/// until killed; does nothing when that is not set (a plain `--ignored` run).
pub(crate) fn driver_process_body() {
    let Some(dir) = std::env::var_os("MESSAGING_TEST_DRIVER_DIR") else {
        return;
    };
    let timeout = std::env::var("MESSAGING_TEST_DRIVER_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
    let _driver = EmbeddedDriver::builder()
        .dir(std::path::PathBuf::from(dir))
        .ipc_term_length(64 << 10)
        .term_length(64 << 10)
        .driver_timeout(timeout)
        .spawn()
        .expect("driver starts");
    // Until killed; a parent that died without killing it is noticed within a minute.
    for _ in 0..600 {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Aeron's Java jar (aeron-all, installed by the bootstrap), when it and Java 17 are there;
/// `None` after saying why when not, unless `LATENCY_PROBE_REQUIRE_JAVA=1` (then the test fails).
pub(crate) fn aeron_jar() -> Option<std::path::PathBuf> {
    let required = std::env::var("LATENCY_PROBE_REQUIRE_JAVA").is_ok_and(|v| v == "1");
    let jar = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/aeron-all-1.51.0.jar");
    let java_ok = std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if jar.is_file() && java_ok {
        return Some(jar);
    }
    assert!(
        !required,
        "LATENCY_PROBE_REQUIRE_JAVA=1 but java or {} is missing: run scripts/bootstrap.sh",
        jar.display()
    );
    eprintln!(
        "skipped: no java or no {} (scripts/bootstrap.sh installs them)",
        jar.display()
    );
    None
}
