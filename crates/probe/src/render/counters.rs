//! The driver's counters over a run as text, AeronStat-like.

use crate::model::CounterDelta;
use crate::model::DriverCounters;
use std::fmt::Write as _;

fn line(out: &mut String, d: &CounterDelta) {
    let _ = writeln!(
        out,
        "  {:>3} {:>3} {}: {} -> {} ({:+})",
        d.id, d.type_id, d.label, d.before, d.after, d.delta
    );
}

/// The text section for the report, AeronStat-like: a heading, the watched counters (those
/// that moved, those that kept a value set before the run, a count of those at 0), the
/// counters that moved, the note, then what moved while the run was set up, one counter per
/// line as `  id type label: before -> after (+delta)`.
#[must_use]
pub fn render(c: &DriverCounters) -> String {
    let window = if c.setup.is_some() {
        "from both ends' connect to the end of the run"
    } else {
        "over the run"
    };
    let mut out = format!("driver counters {window} (id type label: before -> after (delta)):\n");
    if !c.watched.is_empty() {
        out.push_str(" watched (errors, back-pressure, loss, stalls):\n");
        for d in c.watched.iter().filter(|d| d.delta != 0) {
            line(&mut out, d);
        }
        // A value set before the run (a duty-cycle maximum of the setup, an earlier run's
        // errors on a shared driver): not this run's, so not shown as if it moved.
        let held: Vec<&CounterDelta> = c.watched.iter().filter(|d| d.delta == 0 && d.after != 0).collect();
        if !held.is_empty() {
            out.push_str("  unchanged during the run, at values set before it:\n");
            for d in &held {
                let _ = writeln!(out, "  {:>3} {:>3} {}: {}", d.id, d.type_id, d.label, d.after);
            }
        }
        let zero = c.watched.iter().filter(|d| d.before == 0 && d.after == 0).count();
        if zero > 0 {
            let _ = writeln!(
                out,
                "  the other {zero} stayed at 0 (Errors, NAKs, back-pressure, liveness timeouts, ...)"
            );
        }
    }
    if c.moved.is_empty() {
        out.push_str(" moved: nothing else\n");
    } else {
        out.push_str(" moved:\n");
        for d in &c.moved {
            line(&mut out, d);
        }
    }
    if let Some(note) = &c.note {
        for l in note.lines() {
            let _ = writeln!(out, " {l}");
        }
    }
    match c.setup.as_deref() {
        Some([]) => out.push_str(" setup (start to connect, not counted above): nothing watched or listed moved\n"),
        Some(setup) => {
            out.push_str(" setup (start to connect: making the logs; not counted above):\n");
            for d in setup {
                line(&mut out, d);
            }
        }
        None => {}
    }
    out
}
