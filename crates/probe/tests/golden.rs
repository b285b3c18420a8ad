//! A report kept from a real run (`tests/data/report-full.json`: one-way, embedded driver, perf
//! diagnostics, floor, driver counters, histograms) renders byte for byte as it did when it was
//! recorded: the text report, and every file `--out` writes. Refactors of the model or of the
//! renderers must leave these files unchanged; a deliberate change to an output format updates
//! the golden files with `LATENCY_PROBE_BLESS=1 cargo test -p latency-probe --test golden`.

use std::path::{Path, PathBuf};

const REPORT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report-full.json");
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden");

fn report() -> latency_probe::model::Report {
    serde_json::from_str(&std::fs::read_to_string(REPORT).unwrap()).expect("the kept report parses")
}

fn bless() -> bool {
    std::env::var_os("LATENCY_PROBE_BLESS").is_some()
}

/// Compares `got` with the golden file `name` (or writes it when blessing).
fn check(name: &str, got: &[u8]) {
    let path = Path::new(GOLDEN).join(name);
    if bless() {
        std::fs::create_dir_all(GOLDEN).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (bless it first)", path.display()));
    if want != got {
        let first = want
            .iter()
            .zip(got)
            .position(|(a, b)| a != b)
            .unwrap_or(want.len().min(got.len()));
        panic!(
            "{name} differs from {} at byte {first} (want {} bytes, got {}):\n--- want\n{}\n--- got\n{}",
            path.display(),
            want.len(),
            got.len(),
            String::from_utf8_lossy(&want[first.saturating_sub(200)..(first + 200).min(want.len())]),
            String::from_utf8_lossy(&got[first.saturating_sub(200)..(first + 200).min(got.len())]),
        );
    }
}

#[test]
fn the_kept_report_renders_as_text_exactly_as_recorded() {
    use latency_probe::render::text::{render_text, View, SUMMARY_LINES};
    check("report.txt", render_text(&report(), View::Detail).as_bytes());
    let summary = render_text(&report(), View::Summary);
    check("report-summary.txt", summary.as_bytes());
    // The default view fits a screen; the detail view is everything (here ~130 lines).
    let lines = summary.lines().count();
    assert!(lines <= SUMMARY_LINES, "the summary is {lines} lines:\n{summary}");
}

#[test]
fn every_file_of_the_out_directory_is_written_exactly_as_recorded() {
    let dir: PathBuf = std::env::temp_dir().join(format!("latency-probe-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let written = latency_probe::render::out_dir::write_dir(&report(), &dir).expect("writes the out directory");
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "report.json",
            "groups.csv",
            "latency.hgrm",
            "latency-actual.hgrm",
            "latency.hlog",
            "spectrum.svg",
            "groups.svg"
        ]
    );
    for (name, path) in names.iter().zip(&written) {
        check(name, &std::fs::read(path).unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_help_text_reads_exactly_as_recorded() {
    let cases: [(&str, &str, &[&str]); 13] = [
        ("latency-pub", env!("CARGO_BIN_EXE_latency-pub"), &["--help"]),
        ("latency-sub", env!("CARGO_BIN_EXE_latency-sub"), &["--help"]),
        ("latency-probe", env!("CARGO_BIN_EXE_latency-probe"), &["--help"]),
        (
            "latency-probe-compare",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["compare", "--help"],
        ),
        (
            "latency-probe-sweep",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["sweep", "--help"],
        ),
        (
            "latency-probe-nak",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["nak", "--help"],
        ),
        (
            "latency-probe-buffers",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["buffers", "--help"],
        ),
        (
            "latency-probe-doctor",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["doctor", "--help"],
        ),
        (
            "latency-probe-loss",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["loss", "--help"],
        ),
        (
            "latency-probe-driver",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["driver", "--help"],
        ),
        (
            "latency-probe-stages",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["stages", "--help"],
        ),
        (
            "latency-probe-tap",
            env!("CARGO_BIN_EXE_latency-probe"),
            &["tap", "--help"],
        ),
        ("latency-probe-help", env!("CARGO_BIN_EXE_latency-probe"), &["help"]),
    ];
    for (name, bin, args) in cases {
        let out = std::process::Command::new(bin).args(args).output().expect("runs");
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        check(&format!("{name}.help.txt"), &out.stdout);
    }
}

#[test]
fn a_report_from_before_schema_version_reads_as_version_1() {
    // The kept report predates the field; what this build writes carries the current version.
    assert_eq!(report().schema_version, 1);
    let minimal = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report-minimal.json");
    let r: latency_probe::model::Report = serde_json::from_str(&std::fs::read_to_string(minimal).unwrap()).unwrap();
    assert_eq!(r.schema_version, 1);
    assert_eq!(latency_probe::model::SCHEMA_VERSION, 3);
}
