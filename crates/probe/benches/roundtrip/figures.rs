//! `BENCH_FIGURES=PATH`: the summary's figures, also as JSON lines in `PATH`, one per figure:
//! `{"section", "figure", "unit", "better", "value"}` (`better`: `lower` or `higher`). What
//! `scripts/bench-builds.py` reads to compare builds of the bench pass by pass, rather than
//! parsing the printed tables. The file is written once, when the run ends; without the
//! variable nothing is kept.

use std::sync::Mutex;

/// The figures noted so far, as JSON lines.
static FIGURES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Which way a figure improves.
#[derive(Clone, Copy)]
pub(crate) enum Better {
    Lower,
    Higher,
}

/// Notes one figure of `section` (printed beside it). Not finite values (a row that did not
/// run) are left out.
pub(crate) fn note(section: &str, figure: &str, unit: &str, better: Better, value: f64) {
    if !value.is_finite() || std::env::var_os("BENCH_FIGURES").is_none() {
        return;
    }
    let line = serde_json::json!({
        "section": section,
        "figure": figure,
        "unit": unit,
        "better": match better { Better::Lower => "lower", Better::Higher => "higher" },
        "value": value,
    });
    FIGURES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(line.to_string());
}

/// A time per operation, lower is better.
pub(crate) fn ns(section: &str, figure: &str, value: f64) {
    note(section, figure, "ns", Better::Lower, value);
}

/// Writes the figures to `BENCH_FIGURES`, when it is set.
pub(crate) fn write() {
    let Some(path) = std::env::var_os("BENCH_FIGURES") else {
        return;
    };
    let lines = FIGURES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if let Err(e) = std::fs::write(&path, text) {
        panic!("BENCH_FIGURES: cannot write {}: {e}", path.to_string_lossy());
    }
}
