//! The report readers on arbitrary bytes: `serde_json::from_slice::<latency_probe::model::Report>`
//! must not panic; a report it reads must write back to JSON that reads again, render as text,
//! compare with itself, and its embedded histograms (`model::decode`, base64 V2+DEFLATE) must
//! decode or fail with an error, never panic. Run with `make fuzz` (all targets) or
//! `cargo +nightly fuzz run report_json`.
#![no_main]

use latency_probe::model::Report;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(report) = serde_json::from_slice::<Report>(data) {
        let json = serde_json::to_vec(&report).expect("write back a report that was read");
        if let Err(error) = serde_json::from_slice::<Report>(&json) {
            panic!("a report written back does not read again: {error}");
        }
        for view in [latency_probe::render::text::View::Summary, latency_probe::render::text::View::Detail] {
            let _ = latency_probe::render::text::render_text(&report, view);
        }
        let changes = latency_probe::analysis::runs::compare(&report, &report, 0.99, latency_probe::analysis::paired::DEFAULT_RESOLVE);
        let _ = latency_probe::render::runs::render_compare("a", "b", &report, &report, &changes);
        if let Some(h) = &report.histograms {
            let _ = latency_probe::model::decode(&h.intended);
            for g in &h.groups {
                let _ = latency_probe::model::decode(&g.actual);
            }
        }
    }
    // The histogram decoder alone, on the raw bytes as text.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = latency_probe::model::decode(text);
    }
});
