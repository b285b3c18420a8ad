//! The one place that writes report files: atomically (temporary file, sync, rename).

use serde::Serialize;
use std::fs;
use std::io::{self, Write as _};
use std::path::Path;

/// Writes `report` as pretty JSON to `path`, atomically: a temporary file in the same
/// directory is written and synced, then renamed over `path`.
pub fn write_json<T: Serialize + ?Sized>(report: &T, path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a file path: pass a file name for the JSON report",
                path.display()
            ),
        )
    })?;
    let mut json = serde_json::to_vec_pretty(report).map_err(io::Error::other)?;
    json.push(b'\n');
    let tmp = path.with_file_name(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}
