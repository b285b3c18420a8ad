//! The tap's recording side (feature `tap`): a subscription that records puts every stamped
//! message it hands over into its figure once (poll and controlled poll, `Abort` included,
//! fragmented messages, unstamped and negative ones counted apart); the writer's interval logs
//! hold exactly what was recorded, also across rotations; the status file and the Prometheus
//! textfile agree with them; bad input gets a typed error that says how to fix it.
#![cfg(all(feature = "tap", feature = "embedded-driver"))]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use messaging::tap::{
    FigureSummary, RecordLatency, Stamp, Tap, TapSummary, PROMETHEUS_FILE, SLOWEST_FILE, STATUS_FILE,
};
use messaging::{
    Client, ControlledAction, Exclusive, IdleStrategy, MessageHeader, Publication, StampClock, Subscriber, TapError,
};

fn tap_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tap-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The histograms of one tag (`None`: the untagged lines) in the logs `files`, in order.
fn read_logs(files: &[PathBuf], tag: Option<&str>) -> Vec<Histogram<u64>> {
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read(f).unwrap();
        assert!(
            text.starts_with(b"#aeron-latency tap"),
            "{} has its header",
            f.display()
        );
        for entry in IntervalLogIterator::new(&text) {
            if let LogEntry::Interval(h) = entry.unwrap_or_else(|e| panic!("{}: {e:?}", f.display())) {
                if h.tag().map(|t| t.as_str()) == tag {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(h.encoded_histogram())
                        .unwrap();
                    out.push(Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap());
                }
            }
        }
    }
    out
}

/// The lines of the slowest messages' file for `figure`: (messages, [received, latency] pairs).
fn slowest(dir: &std::path::Path, figure: &str) -> Vec<(u64, Vec<(i64, u64)>)> {
    let text = std::fs::read_to_string(dir.join(SLOWEST_FILE)).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["figure"] == figure)
        .map(|v| {
            let pairs = v["slowest"].as_array().unwrap().iter();
            let pairs = pairs.map(|p| (p[0].as_i64().unwrap(), p[1].as_u64().unwrap()));
            (v["messages"].as_u64().unwrap(), pairs.collect())
        })
        .collect()
}

fn total(hs: &[Histogram<u64>]) -> u64 {
    hs.iter().map(Histogram::len).sum()
}

fn figure<'a>(s: &'a TapSummary, name: &str) -> &'a FigureSummary {
    s.figures
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} in {s:?}"))
}

/// Sends `n` messages of `len` bytes, stamped unless `stamp` is false, and polls them with
/// `fragment_limit`, refusing every third message once when `abort` is set (controlled poll).
#[allow(clippy::too_many_arguments)]
fn run(client: &Client, tap: &Tap, stream: i32, n: u64, len: usize, stamp: bool, fragment_limit: usize, abort: bool) {
    let mut sub = client.subscription("aeron:ipc", stream).unwrap();
    sub.record_latency(tap, RecordLatency::hop(format!("s{stream}")))
        .unwrap();
    let mut publ = client.publication("aeron:ipc", stream).unwrap();
    common::wait_until_connected(&publ, &sub);
    if stamp {
        publ.stamp_send_time(Some(StampClock::Monotonic));
    }
    let msg = vec![3u8; len];
    let (mut sent, mut got, mut refused) = (0, 0_u64, 0_u64);
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen_received = true;
    while got < n {
        assert!(Instant::now() < deadline, "stalled at {got} of {n}");
        if sent < n && publ.offer(&msg).is_ok() {
            sent += 1;
        }
        let r = if abort {
            let mut refuse_next = got % 3 == 2 && refused < got / 3 + 1;
            sub.controlled_poll(
                &mut |_: &[u8], h: &MessageHeader<'_>| {
                    seen_received &= h.received_ns().is_some() == stamp;
                    if refuse_next {
                        refuse_next = false;
                        refused += 1;
                        return ControlledAction::Abort;
                    }
                    got += 1;
                    ControlledAction::Continue
                },
                fragment_limit,
            )
        } else {
            sub.poll(
                &mut |_: &[u8], h: &MessageHeader<'_>| {
                    seen_received &= h.received_ns().is_some() == stamp;
                    got += 1;
                },
                fragment_limit,
            )
        };
        idle.idle(r.unwrap());
    }
    assert!(seen_received, "received_ns is there exactly for stamped messages");
    assert!(!abort || refused > 0, "the handler refused some");
}

#[test]
fn every_message_handed_over_is_counted_once_and_the_logs_hold_them() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("counts");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(20)).start().unwrap();
    run(&client, &tap, 11, 3_000, 24, true, 1, false);
    run(&client, &tap, 12, 3_000, 24, true, 64, false);
    run(&client, &tap, 13, 3_000, 24, true, 16, true);
    run(&client, &tap, 14, 500, 3 * 1400, true, 64, true); // fragmented
    run(&client, &tap, 15, 700, 24, false, 64, false);
    let summary = tap.stop().unwrap();
    for (name, n) in [("s11", 3_000), ("s12", 3_000), ("s13", 3_000), ("s14", 500)] {
        let f = figure(&summary, name);
        assert_eq!((f.recorded, f.negative, f.unstamped), (n, 0, 0), "{name}");
        assert_eq!(f.stream_id, Some(name[1..].parse().unwrap()));
        let untagged = read_logs(&f.files, None);
        assert!(
            untagged.len() >= 2,
            "{name}: one line per interval ({})",
            untagged.len()
        );
        assert_eq!(
            total(&untagged),
            n,
            "{name}: the untagged lines sum to what was recorded"
        );
        let text: String = f.files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
        let tag = text.lines().find_map(|l| l.strip_prefix("Tag=")).unwrap();
        let tag = tag.split(',').next().unwrap();
        assert!(tag.starts_with("session-"), "{tag}");
        assert_eq!(
            total(&read_logs(&f.files, Some(tag))),
            n,
            "{name}: its one session's lines"
        );
        let max = untagged.iter().map(Histogram::max).max().unwrap();
        assert!(max < 10_000_000_000, "{name}: latencies are nanoseconds ({max})");
        // One line per interval that counted something: its messages add up, its slowest are
        // at most 128, ordered by receive time, and the run's slowest is among them.
        let lines = slowest(&dir, name);
        assert_eq!(
            lines.iter().map(|l| l.0).sum::<u64>(),
            n,
            "{name}: slowest lines' messages"
        );
        assert!(lines
            .iter()
            .all(|l| l.1.len() <= 128 && l.1.windows(2).all(|w| w[0].0 <= w[1].0)));
        let top = lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)).max().unwrap();
        assert!(
            top.abs_diff(max) <= max / 500 + 1,
            "{name}: slowest {top}, the logs' max {max}"
        );
    }
    let f = figure(&summary, "s15");
    assert_eq!(
        (f.recorded, f.unstamped),
        (0, 700),
        "unstamped messages are counted, not recorded"
    );
    let status = std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap();
    for needle in [
        "\"clock\":\"monotonic\"",
        "\"name\":\"s13\"",
        "\"recorded\":3000",
        "\"unstamped\":700",
    ] {
        assert!(status.contains(needle), "{needle} in {status}");
    }
    // The recording threads' ids are listed while they record (the subscriptions are gone
    // here): `a_dropped_recorder_s_counts_stay_and_its_source_goes`.
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two publishers on one stream are two sessions: each gets its tagged lines (`session-<id>`)
/// and the untagged line is their sum.
#[test]
fn each_session_has_its_tagged_lines_and_the_untagged_line_sums_them() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("sessions");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(10)).start().unwrap();
    let mut sub = client.subscription("aeron:ipc", 61).unwrap();
    sub.record_latency(&tap, RecordLatency::hop("two")).unwrap();
    let mut pubs = [0, 1].map(|_| client.exclusive_publication("aeron:ipc", 61).unwrap());
    for p in &mut pubs {
        p.stamp_send_time(Some(StampClock::Monotonic));
    }
    while sub.image_count() < 2 || pubs.iter().any(|p| !p.is_connected()) {
        std::thread::yield_now();
    }
    let (mut sent, mut got) = ([0_u64; 2], 0_u64);
    let deadline = Instant::now() + Duration::from_secs(20);
    while got < 3_000 {
        assert!(Instant::now() < deadline, "stalled at {got}");
        for (i, p) in pubs.iter_mut().enumerate() {
            let n = if i == 0 { 2_000 } else { 1_000 };
            if sent[i] < n && p.offer(b"tick").is_ok() {
                sent[i] += 1;
            }
        }
        got += sub.poll(&mut |_, _| {}, 16).unwrap() as u64;
    }
    let ids: Vec<i32> = pubs.iter().map(|p| p.session_id()).collect();
    sub.stop_recording(); // hands the last interval over (a live recorder answers when it polls)
    let s = tap.stop().unwrap();
    let f = figure(&s, "two");
    assert_eq!(f.recorded, 3_000);
    assert_eq!(
        total(&read_logs(&f.files, None)),
        3_000,
        "the untagged lines sum the sessions"
    );
    for (id, n) in ids.iter().zip([2_000, 1_000]) {
        let tag = format!("session-{id}");
        assert_eq!(total(&read_logs(&f.files, Some(&tag))), n, "{tag}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The first figure's `recording_tids` in the status file, as written (`""` before the file).
fn recording_tids(dir: &std::path::Path) -> String {
    let s = std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap_or_default();
    s.split("\"recording_tids\":[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or("")
        .to_owned()
}

/// The first figure's `sources` in the status file (0 before the file).
fn sources(dir: &std::path::Path) -> usize {
    let s = std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap_or_default();
    s.split("\"sources\":")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A subscription on `stream` recording its hop into `figure`, with ten stamped messages
/// waiting for it, and their publication.
fn ten_stamped(client: &Client, tap: &Tap, stream: i32, figure: &str) -> (Subscriber, Publication<Exclusive>) {
    let mut sub = client.subscription("aeron:ipc", stream).unwrap();
    sub.record_latency(tap, RecordLatency::hop(figure)).unwrap();
    let mut publ = client.exclusive_publication("aeron:ipc", stream).unwrap();
    publ.stamp_send_time(Some(StampClock::Monotonic));
    while !publ.is_connected() || sub.image_count() == 0 {
        std::thread::yield_now();
    }
    for _ in 0..10 {
        while publ.offer(b"x").is_err() {
            std::thread::yield_now();
        }
    }
    (sub, publ)
}

/// While a subscription records and polls, each interval it hands over holds every message it
/// kept before the handover, also when they are few: its logs hold all ten before it stops.
#[test]
fn an_interval_handed_over_holds_what_was_kept_before_it() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("handed-over");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(5)).start().unwrap();
    let (mut sub, _publ) = ten_stamped(&client, &tap, 93, "k");
    let mut got = 0;
    while got < 10 {
        got += sub.poll(&mut |_, _| {}, 10).unwrap();
    }
    // Empty polls answer the writer's asks.
    let log = dir.join("k.hlog");
    let logged = || {
        let whole = std::fs::read(&log).is_ok_and(|t| IntervalLogIterator::new(&t).all(|e| e.is_ok()));
        if whole {
            total(&read_logs(std::slice::from_ref(&log), None))
        } else {
            0
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while logged() < 10 {
        assert!(
            Instant::now() < deadline,
            "the ten never reached the log while recording"
        );
        sub.poll(&mut |_, _| {}, 10).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(sub);
    let s = tap.stop().unwrap();
    assert_eq!(figure(&s, "k").recorded, 10, "each once");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A subscription still recording at stop that nobody polls cannot hand its last interval
/// over: the summary says so (`unanswered`) and the logs miss it; stopping recording first
/// hands everything over.
#[test]
fn a_recorder_not_polled_at_stop_is_counted_as_unanswered() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    for (stream, stop_first) in [(91, false), (92, true)] {
        let dir = tap_dir(&format!("unanswered-{stream}"));
        // No interval ends before the stop: the only handover is the last one.
        let tap = Tap::builder(&dir).interval(Duration::from_secs(3600)).start().unwrap();
        let (mut sub, _publ) = ten_stamped(&client, &tap, stream, "h");
        let mut got = 0;
        while got < 10 {
            got += sub.poll(&mut |_, _| {}, 10).unwrap();
        }
        if stop_first {
            sub.stop_recording();
        }
        let s = tap.stop().unwrap();
        let h = figure(&s, "h");
        let expected = if stop_first { (0, 10) } else { (1, 0) };
        assert_eq!(
            (s.unanswered, h.recorded),
            expected,
            "stop_recording first: {stop_first}"
        );
        assert_eq!(total(&read_logs(&h.files, None)), h.recorded);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_forwarder_s_stamp_gives_hop_and_end_to_end_and_own_figures_record() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("forward");
    let tap = Tap::builder(&dir).start().unwrap();
    let mut sub = client.subscription("aeron:ipc", 21).unwrap();
    sub.record_latency(&tap, RecordLatency::hop("hop").end_to_end("e2e"))
        .unwrap();
    let publ = client.exclusive_publication("aeron:ipc", 21).unwrap();
    let mut own = tap.figure("inside").unwrap();
    while !publ.is_connected() || sub.image_count() == 0 {
        std::thread::yield_now();
    }
    let now = StampClock::Monotonic.now_ns();
    // A message 5 ms old when forwarded; a stamp from a clock 1 ms ahead (negative); a plain
    // send stamp (end to end = hop).
    for v in [
        Stamp::forwarded(now, 5_000_000).to_reserved(),
        Stamp::Sent(now + 1_000_000_000).to_reserved(),
        now,
    ] {
        while publ.offer_with_reserved_value(b"x", v).is_err() {
            std::thread::yield_now();
        }
    }
    // Each message's receive time, as the recorder read it: its hop is that minus `now`.
    let mut received = Vec::new();
    while received.len() < 3 {
        sub.poll(
            &mut |_, h: &MessageHeader<'_>| received.push(h.received_ns().unwrap()),
            10,
        )
        .unwrap();
    }
    own.record(1_500);
    own.record_at(2_500, 42); // tied to the time given: no clock read
    own.record(-1);
    drop(sub);
    let s = tap.stop().unwrap();
    let (hop, e2e, inside) = (figure(&s, "hop"), figure(&s, "e2e"), figure(&s, "inside"));
    assert_eq!((hop.recorded, hop.negative), (2, 1));
    assert_eq!((e2e.recorded, e2e.negative), (2, 1));
    assert_eq!((inside.recorded, inside.negative, inside.stream_id), (2, 1, None));
    // The hops of the forwarded and the plain message, however long the test waited to poll;
    // the logs hold them to HdrHistogram's 3 digits.
    let (fwd, plain) = ((received[0] - now) as u64, (received[2] - now) as u64);
    let close = |logged: u64, want: u64| logged.abs_diff(want) <= want / 500 + 1;
    let e2e_max = read_logs(&e2e.files, None).iter().map(Histogram::max).max().unwrap();
    let want = (fwd + 5_000_000).max(plain);
    assert!(
        close(e2e_max, want),
        "end to end includes the 5 ms age: {e2e_max}, {want}"
    );
    let hop_max = read_logs(&hop.files, None).iter().map(Histogram::max).max().unwrap();
    assert!(
        close(hop_max, fwd.max(plain)),
        "the hop does not: {hop_max}, {fwd}, {plain}"
    );
    // The slowest messages' file has each one exactly, at its receive time; the recorder's
    // values at the time each was recorded, or at the time given.
    let pairs = |figure: &str| -> Vec<(i64, u64)> { slowest(&dir, figure).into_iter().flat_map(|l| l.1).collect() };
    assert_eq!(pairs("hop"), [(received[0], fwd), (received[2], plain)]);
    assert_eq!(pairs("e2e"), [(received[0], fwd + 5_000_000), (received[2], plain)]);
    let inside = pairs("inside");
    assert!(
        inside.len() == 2 && inside[0] == (42, 2_500) && inside[1].1 == 1_500 && inside[1].0 > received[2],
        "{inside:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn logs_rotate_by_size_and_every_file_stands_alone() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("rotate");
    let tap = Tap::builder(&dir)
        .interval(Duration::from_millis(5))
        .rotate_bytes(1) // every interval opens the next log
        .start()
        .unwrap();
    run(&client, &tap, 31, 20_000, 24, true, 8, false);
    std::thread::sleep(Duration::from_millis(40)); // several intervals at least
    let s = tap.stop().unwrap();
    let f = figure(&s, "s31");
    assert!(f.files.len() >= 3, "rotated: {:?}", f.files);
    assert_eq!(f.files[0], dir.join("s31.hlog"));
    assert_eq!(f.files[1], dir.join("s31.1.hlog"));
    assert_eq!(
        total(&read_logs(&f.files, None)),
        20_000,
        "no interval lost across files"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_prometheus_textfile_is_cumulative_and_matches_the_logs() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("prom");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(10)).start().unwrap();
    run(&client, &tap, 41, 2_000, 24, true, 16, false);
    tap.stop().unwrap();
    let text = std::fs::read_to_string(dir.join(PROMETHEUS_FILE)).unwrap();
    let value = |prefix: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let labels = "{figure=\"s41\",stream=\"41\",clock=\"monotonic\"";
    assert_eq!(value(&format!("aeron_tap_latency_seconds_count{labels}}}")), 2_000.0);
    assert_eq!(
        value(&format!("aeron_tap_latency_seconds_bucket{labels},le=\"+Inf\"}}")),
        2_000.0
    );
    assert_eq!(value(&format!("aeron_tap_messages_total{labels}}}")), 2_000.0);
    let buckets: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("aeron_tap_latency_seconds_bucket"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "cumulative: {buckets:?}");
    assert!(value(&format!("aeron_tap_latency_seconds_sum{labels}}}")) > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_gets_an_error_that_says_how_to_fix_it() {
    let dir = tap_dir("errors");
    let tap = Tap::builder(&dir).start().unwrap();
    let e = tap.figure("feed to gateway").unwrap_err();
    assert!(matches!(e, TapError::BadName { .. }), "{e:?}");
    assert!(e.to_string().contains("letters, digits"), "{e}");
    assert!(tap.figure(".hidden").is_err());
    let e = tap.figure("feed.2").unwrap_err();
    assert!(
        e.to_string().contains("rotation suffix"),
        "feed.2.hlog is feed's rotation: {e}"
    );
    assert!(tap.figure("v1.2-x").is_ok(), "digits inside a name are fine");
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let mut sub = client.subscription("aeron:ipc", 81).unwrap();
    let e = sub
        .record_latency(&tap, RecordLatency::hop("x").end_to_end("x"))
        .unwrap_err();
    assert!(matches!(e, TapError::SameFigure { .. }), "{e:?}");
    assert!(e.to_string().contains("a name of its own"), "{e}");
    tap.stop().unwrap();
    let again = Tap::builder(&dir).start().unwrap_err();
    assert!(matches!(again, TapError::NotEmpty { .. }), "{again:?}");
    assert!(again.to_string().contains("new directory"), "{again}");
    // The slowest messages' older file alone is an earlier tap's too (attach reads both).
    for f in std::fs::read_dir(&dir).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    std::fs::write(dir.join(messaging::tap::SLOWEST_FILE_OLD), b"{}\n").unwrap();
    let old = Tap::builder(&dir).start().unwrap_err();
    assert!(
        matches!(old, TapError::NotEmpty { ref file, .. } if file == "slowest.1.jsonl"),
        "{old:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let file = tap_dir("a-file");
    std::fs::write(&file, b"").unwrap();
    let e = Tap::builder(file.join("sub")).start().unwrap_err();
    assert!(matches!(e, TapError::Dir { .. }), "{e:?}");
    assert!(e.to_string().contains(&file.display().to_string()), "{e}");
    std::fs::remove_file(&file).unwrap();
}

/// Whether a test that needs an outside tool must run (`make test` sets `var` to 1 where the
/// bootstrap installed the tool): it then fails rather than skips.
fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// The repository's `.tools` (where the bootstrap puts the jars and the venv).
fn tools() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools")
}

/// A run of the four-figure shape (a hop, end to end, the service's own figure) into `dir`.
fn recorded_run(name: &str) -> (PathBuf, TapSummary) {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir(name);
    let tap = Tap::builder(&dir).interval(Duration::from_millis(20)).start().unwrap();
    run(&client, &tap, 51, 5_000, 24, true, 16, false);
    run(&client, &tap, 52, 5_000, 24, true, 1, true);
    let mut own = tap.figure("own").unwrap();
    for ns in [10, 1_000, 1_000_000, 2_000_000_000] {
        own.record(ns);
    }
    (dir, tap.stop().unwrap())
}

/// HdrHistogram's own `HistogramLogProcessor` (Java) reads every figure's log: its total count
/// is what the tap recorded, its max the largest latency.
#[test]
fn hdrhistogram_s_java_log_processor_reads_every_figure() {
    let jar = tools().join("HdrHistogram-2.2.2.jar");
    let java = std::process::Command::new("java").arg("-version").output();
    if !jar.exists() || java.is_err() {
        assert!(
            !required("TAP_REQUIRE_HDR_JAVA"),
            "TAP_REQUIRE_HDR_JAVA=1 but java or {} is missing (run scripts/bootstrap.sh)",
            jar.display()
        );
        eprintln!("skipped: no java or no {}", jar.display());
        return;
    }
    let (dir, summary) = recorded_run("java");
    for f in &summary.figures {
        let out = dir.join(format!("{}-hlp", f.name));
        let run = std::process::Command::new("java")
            .arg("-cp")
            .arg(&jar)
            .arg("org.HdrHistogram.HistogramLogProcessor")
            .arg("-i")
            .arg(&f.files[0])
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}: {}",
            f.name,
            String::from_utf8_lossy(&run.stderr)
        );
        let hgrm = std::fs::read_to_string(out.with_extension("hgrm")).unwrap();
        let count: u64 = hgrm
            .lines()
            .find_map(|l| l.split("Total count    =").nth(1))
            .and_then(|v| v.trim().trim_end_matches(']').trim().parse().ok())
            .unwrap_or_else(|| panic!("{}: no total count in\n{hgrm}", f.name));
        assert_eq!(count, f.recorded, "{}: the Java reader's count", f.name);
        assert!(f.recorded > 0, "{}", f.name);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The Prometheus textfile parses with the Prometheus Python client's text-format parser, and
/// what it reads agrees with the tap's totals.
#[test]
fn the_prometheus_textfile_parses_with_prometheus_s_own_parser() {
    let python = tools().join("venv/bin/python");
    let has_client = std::process::Command::new(&python)
        .args(["-c", "import prometheus_client"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_client {
        assert!(
            !required("TAP_REQUIRE_PROMETHEUS"),
            "TAP_REQUIRE_PROMETHEUS=1 but {} cannot import prometheus_client (run scripts/bootstrap.sh)",
            python.display()
        );
        eprintln!("skipped: no prometheus_client in {}", python.display());
        return;
    }
    let (dir, summary) = recorded_run("prom-parse");
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        print(fam.type, s.name, s.labels.get("figure"), s.labels.get("le", "-"), s.value)
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(dir.join(PROMETHEUS_FILE))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the parser refused it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for f in &summary.figures {
        let value = |name: &str, le: &str| -> f64 {
            text.lines()
                .find_map(|l| {
                    let w: Vec<&str> = l.split(' ').collect();
                    (w[1] == name && w[2] == f.name && w[3] == le).then(|| w[4].parse().unwrap())
                })
                .unwrap_or_else(|| panic!("{name} {} le={le} in\n{text}", f.name))
        };
        assert_eq!(
            value("aeron_tap_latency_seconds_count", "-"),
            f.recorded as f64,
            "{}",
            f.name
        );
        assert_eq!(value("aeron_tap_latency_seconds_bucket", "+Inf"), f.recorded as f64);
        assert_eq!(value("aeron_tap_messages_total", "-"), (f.recorded + f.negative) as f64);
        assert!(text
            .lines()
            .any(|l| l.starts_with("histogram aeron_tap_latency_seconds_bucket")));
        assert!(text.lines().any(|l| l.starts_with("counter aeron_tap_negative_total")));
    }
    let own = figure(&summary, "own");
    let text_le = |le: &str| {
        text.lines()
            .find(|l| l.contains(" own ") && l.contains(&format!(" {le} ")) && l.contains("_bucket"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .unwrap()
    };
    assert_eq!(own.recorded, 4);
    assert_eq!(text_le("0.000001"), 2.0, "10 ns and 1 µs are at or below 1 µs");
    assert_eq!(text_le("0.001"), 3.0);
    assert_eq!(text_le("2"), 4.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A handler that panics inside a recording poll drops the recorder with the unwinding poll:
/// its sources retire, so the tap's writer takes what was kept before the panic (in the
/// figure) and stops without waiting for a handover that will not come.
#[test]
fn a_handler_that_panics_drops_the_recorder_and_keeps_its_counts() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("panic");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(5)).start().unwrap();
    let (mut sub, _publ) = ten_stamped(&client, &tap, 71, "p");
    let mut seen = 0;
    // Polls until the fourth message (the first poll may come before the image is added).
    let deadline = Instant::now() + Duration::from_secs(10);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        while Instant::now() < deadline {
            sub.poll(
                &mut |_, _| {
                    seen += 1;
                    assert!(seen < 4, "the handler fails on the fourth message");
                },
                10,
            )
            .unwrap();
        }
    }));
    assert!(panicked.is_err(), "{seen} messages in 10 s, no fourth");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(tap.stop()).unwrap());
    let summary = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the writer stopped: nothing waited for the dropped recorder")
        .unwrap();
    assert_eq!(
        figure(&summary, "p").recorded,
        3,
        "the three messages kept before the panic"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session whose image goes while its subscription records retires its sources (the writer
/// takes their last counts and lets them go), also when the image goes during a recording
/// poll. The status file counts the sources (two sessions, two; one once the first session
/// went) and lists the thread that polls both once.
#[test]
fn a_session_that_goes_retires_its_sources() {
    let d = messaging::EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(64 << 10)
        .publication_linger(Duration::from_millis(50))
        .spawn()
        .unwrap();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("gone");
    // Long enough that the directory is gone before the first interval opens the log.
    let tap = Tap::builder(&dir).interval(Duration::from_millis(50)).start().unwrap();
    let mut sub = client.subscription("aeron:ipc", 93).unwrap();
    sub.record_latency(&tap, RecordLatency::hop("g")).unwrap();
    let stamped = || {
        let mut p = client.exclusive_publication("aeron:ipc", 93).unwrap();
        p.stamp_send_time(Some(StampClock::Monotonic));
        p
    };
    let (mut first, mut second) = (stamped(), stamped());
    while sub.image_count() < 2 || !first.is_connected() || !second.is_connected() {
        std::thread::yield_now();
    }
    let send = |p: &mut Publication<Exclusive>| {
        for _ in 0..10 {
            while p.offer(b"x").is_err() {
                std::thread::yield_now();
            }
        }
    };
    let poll_ten = |sub: &mut Subscriber| {
        let mut got = 0;
        while got < 10 {
            got += sub.poll(&mut |_, _| {}, 10).unwrap();
        }
    };
    // The first session's messages are recorded on another thread, the second's on this one.
    send(&mut first);
    let mut sub = std::thread::spawn(move || {
        poll_ten(&mut sub);
        sub
    })
    .join()
    .unwrap();
    send(&mut second);
    poll_ten(&mut sub);
    let status = || std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sources(&dir) < 2 {
        assert!(Instant::now() < deadline, "both sessions never listed: {}", status());
        std::thread::sleep(Duration::from_millis(5));
    }
    // Both sessions are polled on this thread now: it is listed once.
    let now = messaging::current_tid().to_string();
    while recording_tids(&dir) != now {
        assert!(Instant::now() < deadline, "not [{now}] alone: {}", status());
        sub.poll(&mut |_, _| {}, 10).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(first);
    while sources(&dir) > 1 {
        assert!(
            Instant::now() < deadline,
            "the gone session's sources stay: {}",
            status()
        );
        sub.poll(&mut |_, _| {}, 10).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(sub);
    let s = tap.stop().unwrap();
    assert_eq!(figure(&s, "g").recorded, 20, "the gone session's counts stay");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The status file names the thread that polls a subscription now: one polled on a thread
/// that then hands it to another lists the second after the next handover.
#[test]
fn a_subscription_moved_to_another_thread_lists_that_thread() {
    let d = common::driver();
    let client = Client::connect(d.dir()).unwrap();
    let dir = tap_dir("moved");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(5)).start().unwrap();
    let (sub, _publ) = ten_stamped(&client, &tap, 94, "m");
    let (mut sub, first) = std::thread::spawn(move || {
        let mut sub = sub;
        let mut got = 0;
        while got < 10 {
            got += sub.poll(&mut |_, _| {}, 10).unwrap();
        }
        (sub, messaging::current_tid())
    })
    .join()
    .unwrap();
    let now = messaging::current_tid();
    assert_ne!(first, now);
    let listed = || recording_tids(&dir);
    let deadline = Instant::now() + Duration::from_secs(10);
    while listed() != now.to_string() {
        assert!(
            Instant::now() < deadline,
            "still [{}], not this thread ({now}; the first was {first})",
            listed()
        );
        sub.poll(&mut |_, _| {}, 10).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(sub);
    assert_eq!(figure(&tap.stop().unwrap(), "m").recorded, 10);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `FigureRecorder` handed to another thread (a service that moves its work to a helper) is
/// listed under the thread that records now.
#[test]
fn a_recorder_handed_to_another_thread_lists_that_thread() {
    let dir = tap_dir("recorder-moved");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(5)).start().unwrap();
    let mut own = tap.figure("own").unwrap();
    own.record(1_000);
    let first = messaging::current_tid();
    let (mut own, helper) = std::thread::spawn(move || {
        own.record(2_000);
        (own, messaging::current_tid())
    })
    .join()
    .unwrap();
    assert_ne!(first, helper);
    // The status file lists `tid` alone within 10 s.
    let listed = |tid: i32, who: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while recording_tids(&dir) != tid.to_string() {
            assert!(
                Instant::now() < deadline,
                "still [{}], not {who} ({tid})",
                recording_tids(&dir)
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    listed(helper, "the helper");
    own.record(3_000); // back on this thread
    listed(first, "this thread");
    drop(own);
    assert_eq!(figure(&tap.stop().unwrap(), "own").recorded, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A recorder that is dropped retires its source: the writer takes its last interval (its counts
/// stay in the figure) and lets it go (the status file no longer lists its thread).
#[test]
fn a_dropped_recorder_s_counts_stay_and_its_source_goes() {
    let dir = tap_dir("retire");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(5)).start().unwrap();
    let mut r = tap.figure("own").unwrap();
    for ns in [100, 200, 300] {
        r.record(ns);
    }
    let status = || std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !status().contains("\"recorded\":3") {
        assert!(Instant::now() < deadline, "never written: {}", status());
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!status().contains("\"recording_tids\":[]"), "{}", status());
    drop(r);
    while !status().contains("\"recording_tids\":[]") {
        assert!(
            Instant::now() < deadline,
            "the retired source is still there: {}",
            status()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut again = tap.figure("own").unwrap();
    again.record(400);
    let s = tap.stop().unwrap();
    assert_eq!(figure(&s, "own").recorded, 4, "the retired source's counts stayed");
    let tags: String = std::fs::read_to_string(dir.join("own.hlog")).unwrap();
    assert!(
        tags.contains("Tag=recorder-1,") && tags.contains("Tag=recorder-2,"),
        "{tags}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `interval(Duration::MAX)`: one interval, written at stop (the writer thread panicked adding
/// it to the clock, and `stop` said only that it had).
#[test]
fn the_longest_interval_writes_one_interval_at_stop() {
    let dir = tap_dir("longest");
    let tap = Tap::builder(&dir).interval(Duration::MAX).start().unwrap();
    let mut r = tap.figure("own").unwrap();
    for ns in [100, 200, 300] {
        r.record(ns);
    }
    std::thread::sleep(Duration::from_millis(20));
    let s = tap.stop().unwrap();
    assert_eq!(figure(&s, "own").recorded, 3);
    let lines = read_logs(&[dir.join("own.hlog")], None);
    assert_eq!(lines.len(), 1, "one interval");
    assert_eq!(lines[0].len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A log that cannot grow (a full disk; here a file size limit, `RLIMIT_FSIZE`, in a child
/// process of this test) holds whole lines only: a write that fails part way is cut off again.
/// Before, the cut-off line stayed, and the next interval's line was joined to it: a reader
/// decoded a wrong histogram, or failed on the log's last line.
#[test]
fn a_log_that_cannot_grow_holds_whole_lines_only() {
    const LIMIT: u64 = 4096;
    const CHILD: &str = "TAP_TEST_FILE_SIZE_LIMIT_DIR";
    if let Some(dir) = std::env::var_os(CHILD) {
        // SAFETY: plain libc calls on this child's own signal disposition and limits.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
        }
        let tap = Tap::builder(PathBuf::from(dir))
            .interval(Duration::from_millis(2))
            .start()
            .unwrap();
        let mut r = tap.figure("own").unwrap();
        for i in 0..300 {
            r.record(100 + i * 997);
            std::thread::sleep(Duration::from_micros(200));
        }
        drop(r);
        let seen = tap.write_errors();
        match tap.stop() {
            Err(TapError::WritesFailed { failed, first, summary }) => println!(
                "write errors seen {seen}, at stop {failed}, the first {first:?}; recorded {}",
                figure(&summary, "own").recorded
            ),
            other => println!("stop: {:?}", other.map(|_| ())),
        }
        return;
    }
    let dir = tap_dir("file-size-limit");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_log_that_cannot_grow_holds_whole_lines_only",
            "--nocapture",
        ])
        .env(CHILD, &dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    // Every value is in the summary however many writes failed; the count is live.
    assert!(
        said.contains("the first Write {") && said.contains("recorded 300"),
        "{said}"
    );
    let seen: u64 = said
        .split("write errors seen ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(seen >= 1, "{said}");
    let log = std::fs::read(dir.join("own.hlog")).unwrap();
    assert!(
        log.len() as u64 <= LIMIT && log.ends_with(b"\n"),
        "{}",
        String::from_utf8_lossy(&log)
    );
    // Every line decodes (read_logs fails the test otherwise); some intervals fit, and no
    // value is in two lines. (An interval the recorder slept through has an empty line.)
    let lines = read_logs(&[dir.join("own.hlog")], None);
    let in_lines: u64 = lines.iter().map(Histogram::len).sum();
    assert!(
        !lines.is_empty() && in_lines > 0 && in_lines < 300,
        "{in_lines} in {} lines",
        lines.len()
    );
    let slowest = std::fs::read_to_string(dir.join(SLOWEST_FILE)).unwrap_or_default();
    for line in slowest.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    assert!(slowest.is_empty() || slowest.ends_with('\n'), "{slowest}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A figure whose log cannot be opened (its directory removed) keeps its counts in the summary:
/// they are totalled before anything is written.
#[test]
fn a_log_that_cannot_be_opened_loses_its_lines_not_the_totals() {
    let dir = tap_dir("gone");
    // Long enough that the directory is gone before the first interval opens the log.
    let tap = Tap::builder(&dir).interval(Duration::from_millis(50)).start().unwrap();
    let mut r = tap.figure("own").unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    for ns in [100, 200, 300] {
        r.record(ns);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while tap.write_errors() == 0 {
        assert!(Instant::now() < deadline, "no write failed");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(r);
    match tap.stop() {
        Err(TapError::WritesFailed { failed, summary, .. }) => {
            assert!(failed >= 1);
            assert_eq!(figure(&summary, "own").recorded, 3, "the totals lost the interval");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// A log removed while the tap writes it (a cleanup job) is noticed: the tap counts it and
/// starts a new log, where before every later interval went into the removed file unseen.
#[test]
fn a_log_removed_while_written_is_counted_and_started_again() {
    let dir = tap_dir("removed");
    let tap = Tap::builder(&dir).interval(Duration::from_millis(5)).start().unwrap();
    let mut r = tap.figure("own").unwrap();
    r.record(100);
    let log = dir.join("own.hlog");
    // The status file is written after the interval's log lines: once it counts the value,
    // the log holds it.
    let status = || std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !status().contains("\"recorded\":1") {
        assert!(Instant::now() < deadline, "the first value was never written");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::remove_file(&log).unwrap();
    r.record(200);
    while tap.write_errors() == 0 || !log.exists() {
        assert!(Instant::now() < deadline, "the removal was not noticed");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(r);
    match tap.stop() {
        Err(TapError::WritesFailed { first, summary, .. }) => {
            assert!(matches!(*first, TapError::Removed { .. }), "{first:?}");
            assert!(first.to_string().contains("cleanup jobs"), "{first}");
            assert_eq!(figure(&summary, "own").recorded, 2);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let again: u64 = read_logs(&[log], None).iter().map(Histogram::len).sum();
    assert_eq!(again, 1, "the value after the removal is in the new log");
    std::fs::remove_dir_all(&dir).unwrap();
}
