//! Where a client's conductor thread runs: by default on the cores of the thread that built
//! the client (as Aeron's clients' conductors do), on the core
//! `ClientBuilder::conductor_core` names when asked, and a core that is not this process's is
//! an error that says which are.
//!
//! One test in its own binary: it finds the conductor as the `aeron-conductor` thread that a
//! build added, which no other test may add at the same time.
#![cfg(feature = "embedded-driver")]

mod common;

use std::collections::BTreeSet;
use std::error::Error as _;

use common::{driver, move_messages};
use messaging::{available_cores, Client, ConnectError, EmbeddedDriver, SpawnError, ThreadBuilder};

/// The tids of this process's threads named `aeron-conductor`.
fn conductors() -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| t.ok())
        .map(|t| t.file_name().to_string_lossy().into_owned())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).is_ok_and(|c| c.trim() == "aeron-conductor")
        })
        .collect()
}

/// A thread's allowed cores, as `/proc` lists them (`1`, `0-1`).
fn allowed(tid: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).expect("status");
    let line = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list");
    line["Cpus_allowed_list:".len()..].trim().to_owned()
}

/// Builds a client on a thread pinned to `builder_core`, asking for its conductor on
/// `conductor_core`; returns the client and its conductor's allowed cores.
fn build_on(d: &EmbeddedDriver, builder_core: usize, conductor_core: Option<usize>) -> (Client, String) {
    let before = conductors();
    let dir = d.dir().to_path_buf();
    let client = ThreadBuilder::new()
        .name("builds-client")
        .affinity(builder_core)
        .spawn(move || Client::builder().dir(dir).conductor_core(conductor_core).build())
        .expect("spawn")
        .join()
        .expect("join")
        .expect("client");
    // Read until the new conductor shows: a listing of /proc/self/task skips an entry when a
    // thread before it exits meanwhile (here the joined builder, still leaving the kernel).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let added = loop {
        let after = conductors();
        let added: Vec<String> = after.difference(&before).cloned().collect();
        if added.len() == 1 || std::time::Instant::now() > deadline {
            assert_eq!(
                added.len(),
                1,
                "one conductor thread added: before {before:?}, after {after:?}"
            );
            break added;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let cores = allowed(&added[0]);
    (client, cores)
}

#[test]
fn the_conductor_inherits_the_builder_s_core_unless_told_where_to_run() {
    // A core this process does not have is refused before anything is looked at: no driver
    // is needed to be told.
    let early = Client::builder()
        .dir("/nonexistent/aeron")
        .conductor_core(Some(100_000))
        .check()
        .expect_err("refused by check");
    assert!(matches!(early, ConnectError::ConductorThread { .. }), "{early:?}");

    let d = driver();
    let cores = available_cores();
    let (first, last) = (cores[0], *cores.last().unwrap());
    if first == last {
        eprintln!("one core ({cores:?}): where the conductor runs cannot be told apart; skipped");
    } else {
        let (inherited, on) = build_on(&d, first, None);
        assert_eq!(
            on,
            first.to_string(),
            "by default the conductor runs where its builder was pinned"
        );
        let (placed, on) = build_on(&d, first, Some(last));
        assert_eq!(on, last.to_string(), "conductor_core puts it on the core named");
        // Both clients work: a stream through each.
        move_messages(&inherited, 1001, 100);
        move_messages(&placed, 1002, 100);
    }

    let e = Client::builder()
        .dir(d.dir())
        .conductor_core(Some(100_000))
        .build()
        .expect_err("a core this process does not have");
    assert!(
        matches!(
            &e,
            ConnectError::ConductorThread {
                source: SpawnError::NoSuchCore { core: 100_000, .. },
                ..
            }
        ),
        "{e:?}"
    );
    let words = e.to_string();
    assert!(
        words.contains("conductor thread") && words.contains("choose one of"),
        "{words}"
    );
    assert!(e.source().is_some(), "the SpawnError is its source");
}
