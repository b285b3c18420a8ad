//! How `nak`, `buffers`, `doctor` and `loss` hand back what they computed: the text, or the
//! JSON (to `--json`, or stdout for `-`), and exit 1 when one of their checks FAILs.

use super::Failure;
use crate::model::{Check, CheckStatus};
use std::path::PathBuf;

/// Prints `text` or the JSON of `value` (to `--json`, or stdout for `-`).
pub(super) fn emit<T: serde::Serialize>(json: Option<&PathBuf>, text: &str, value: &T) -> Result<(), Failure> {
    let encoded = serde_json::to_string_pretty(value).map_err(|e| Failure::setup(format!("encoding JSON: {e}")))?;
    match json {
        Some(p) if p.as_os_str() == "-" => println!("{encoded}"),
        Some(p) => {
            print!("{text}");
            std::fs::write(p, encoded + "\n")
                .map_err(|e| Failure::setup(format!("--json {}: {e}: pick a writable path", p.display())))?;
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// Checks `--json` before the command works (a path in a directory that exists, not a
/// directory; `-` is stdout), so that a bad path is refused before the text is printed.
///
/// # Errors
/// One line naming the flag and the fix.
pub(super) fn check_json(json: Option<&PathBuf>) -> Result<(), super::UsageError> {
    match json {
        Some(p) if p.as_os_str() != "-" => super::validate::output_file("--json", p),
        _ => Ok(()),
    }
}

/// Exit 1 with the number of FAILed checks, if any.
pub(super) fn failed(checks: &[Check]) -> Result<(), Failure> {
    let n = checks.iter().filter(|c| c.status == CheckStatus::Fail).count();
    if n == 0 {
        return Ok(());
    }
    Err(Failure {
        code: super::EXIT_INCOMPLETE,
        message: Some(format!(
            "{n} check{} FAILed: see fix: above",
            if n == 1 { "" } else { "s" }
        )),
    })
}
