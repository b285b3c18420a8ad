//! Writes the seed corpus of every fuzz target under the directory given (`fuzz/corpus` from
//! `make fuzz`): valid encoded samples of several sizes and kinds for `wire_decode`, a few
//! inputs for `wire_round_trip`, and reports written the way `latency-probe --json` writes
//! them for `report_json`. Existing files are overwritten; what the fuzzer added stays.
//!
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example seed_corpus -- fuzz/corpus`

use std::collections::BTreeMap;
use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use aeron_latency::wire::{self, Kind, Sample};
use latency_probe::measure::recorder::Recorder;
use latency_probe::measure::recorder::SampleKind;
use latency_probe::model::Env;
use latency_probe::model::Report;
use latency_probe::model::RunInfo;
use latency_probe::model::Tool;
use latency_probe::model::DRIVER_EMBEDDED;

/// Encoded sizes for `wire_decode`: the smallest, the probe's defaults and a few pages.
const SIZES: [usize; 6] = [64, 72, 128, 256, 1024, 4096];

fn main() -> Result<(), Box<dyn Error>> {
    let root = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("fuzz/corpus"), PathBuf::from);
    let decode = wire_samples(&root.join("wire_decode"))?;
    let round_trip = round_trip_inputs(&root.join("wire_round_trip"))?;
    let reports = reports(&root.join("report_json"))?;
    let logs = logs(&root.join("term_reader"))?;
    println!(
        "seed corpus in {}: wire_decode {decode}, wire_round_trip {round_trip}, report_json {reports}, \
         term_reader {logs} files",
        root.display()
    );
    Ok(())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Box<dyn Error>> {
    fs::create_dir_all(dir)?;
    fs::write(dir.join(name), bytes)?;
    Ok(())
}

fn wire_samples(dir: &Path) -> Result<usize, Box<dyn Error>> {
    let mut count = 0;
    for (i, (&size, kind)) in SIZES
        .iter()
        .zip([Kind::Measured, Kind::Warmup, Kind::End].iter().cycle())
        .enumerate()
    {
        let i = i as u64;
        let sample = Sample {
            seq: 10_000 + i,
            intended_ns: 1_000_000_000 + 100_000 * i as i64,
            sent_ns: 1_000_000_250 + 100_000 * i as i64,
            publisher_id: 7,
            kind: *kind,
            warmup: 10_000,
            planned: 100_000,
        };
        let mut buf = vec![0_u8; size];
        let len = wire::encode_into(&mut buf, &sample, wire::padding_for_size(size)?)?;
        write(dir, &format!("seed-{size}"), &buf[..len])?;
        count += 1;
    }
    Ok(count)
}

/// Logs for `term_reader`, written by messaging's own appender: small and large messages,
/// fragments, padding at each term's end and the rotations; behind a head of 9 bytes (the
/// fragment limit and the controlled-poll actions the handler answers with).
fn logs(dir: &Path) -> Result<usize, Box<dyn Error>> {
    let message = |seq: usize, len: usize| -> Vec<u8> { (0..len).map(|i| (seq * 31 + i * 7) as u8).collect() };
    let shapes: [(&str, Vec<usize>, [u8; 9]); 4] = [
        ("seed-whole", vec![40; 60], [10, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("seed-fragmented", vec![90, 97, 200, 128, 5, 300], [16, 0, 2, 0, 1, 0, 0, 3, 0]),
        ("seed-mixed", (0..80).map(|i| (i * 37) % 129).collect(), [1, 3, 0, 2, 0, 1, 0, 0, 0]),
        ("seed-empty-and-max", vec![0, 128, 0, 128, 0, 1], [4, 0, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for (name, sizes, head) in &shapes {
        let messages: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| message(i, n)).collect();
        let mut input = head.to_vec();
        input.extend(messaging::fuzzing::write_log(&messages));
        write(dir, name, &input)?;
    }
    Ok(shapes.len())
}

fn round_trip_inputs(dir: &Path) -> Result<usize, Box<dyn Error>> {
    // `Input` is read field by field from these bytes (arbitrary's format): a zeroed one, a
    // counting one and an all-ones one, long enough for every field.
    let inputs: [(&str, Vec<u8>); 3] = [
        ("seed-zeros", vec![0; 64]),
        ("seed-counting", (0..64).collect()),
        ("seed-ones", vec![0xff; 64]),
    ];
    for (name, bytes) in &inputs {
        write(dir, name, bytes)?;
    }
    Ok(inputs.len())
}

fn reports(dir: &Path) -> Result<usize, Box<dyn Error>> {
    let env = Env::detect().with_driver(DRIVER_EMBEDDED, "1.54.0");
    let run = RunInfo {
        rate_target: 10_000.0,
        rate_achieved: 9_999.5,
        msg_size: 128,
        duration_s: 0.5,
        started_at: "2026-01-01T00:00:00Z".to_string(),
    };
    let mut offer = BTreeMap::new();
    offer.insert("ok".to_string(), 120);
    offer.insert("back_pressured".to_string(), 3);

    // A complete run: 20 warm-up and 100 measured messages, all received.
    let mut rec = Recorder::with_plan(20, 100);
    for seq in 0..120_u64 {
        let kind = if seq < 20 {
            SampleKind::Warmup
        } else {
            SampleKind::Measured
        };
        let latency = 800 + (seq as i64 * 37) % 5_000;
        rec.record(seq, kind, 20, 100, latency + 150, latency);
    }
    let complete = Report::from_recorder(&rec, &rec.finish(Some(120)), run.clone(), offer.clone(), env.clone());

    // A broken one: the publisher vanished, messages lost, a decode error.
    let mut rec = Recorder::with_plan(2, 40);
    for seq in (0..30_u64).filter(|s| s % 7 != 3) {
        let kind = if seq < 2 {
            SampleKind::Warmup
        } else {
            SampleKind::Measured
        };
        rec.record(seq, kind, 2, 40, 2_000_000, 1_000);
    }
    rec.record_decode_error();
    let broken = Report::from_recorder(&rec, &rec.finish(None), run, offer, env);

    write(dir, "seed-complete.json", &serde_json::to_vec(&complete)?)?;
    write(dir, "seed-broken.json", &serde_json::to_vec_pretty(&broken)?)?;
    write(dir, "seed-tool.json", &serde_json::to_vec(&Tool::this())?)?;
    Ok(3)
}
