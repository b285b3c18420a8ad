//! The one place that writes report files: atomically (temporary file, sync, rename).
//!
//! Every file the crate writes goes through [`write_atomically`]: the JSON report
//! ([`write_json`]), each file of the `--out` directory, the plots, and the binaries' CSVs. A
//! reader never sees half a file, and a write that fails leaves the old file (or none) behind.

use serde::Serialize;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes `path` atomically: `write` fills a buffered temporary file in the same directory
/// (`.NAME.tmpPID`), which is flushed, synced and renamed over `path`. When anything fails the
/// temporary file is removed and the error is returned as it came (from creating the file, from
/// `write`, or from the sync or rename), so callers keep their own messages.
///
/// # Errors
/// `path` has no file name (`InvalidInput`), or creating, writing, syncing or renaming failed.
pub fn write_atomically(
    path: impl AsRef<Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file path: pass a file name", path.display()),
        )
    })?;
    let tmp = path.with_file_name(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let written = (|| {
        let mut out = BufWriter::new(fs::File::create(&tmp)?);
        write(&mut out)?;
        let f = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Writes `report` as pretty JSON to `path`, atomically: a temporary file in the same
/// directory is written and synced, then renamed over `path`.
pub fn write_json<T: Serialize + ?Sized>(report: &T, path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    if path.file_name().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a file path: pass a file name for the JSON report",
                path.display()
            ),
        ));
    }
    let mut json = serde_json::to_vec_pretty(report).map_err(io::Error::other)?;
    json.push(b'\n');
    write_atomically(path, |out| out.write_all(&json))
}

/// `e` with `what` in front of its message, keeping its kind: "writing the .hgrm: disk full".
pub(crate) fn io_context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("latency-probe-files-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn write_atomically_replaces_the_file_and_leaves_nothing_else() {
        let dir = scratch("replace");
        let path = dir.join("a.txt");
        fs::write(&path, "old").expect("seed");
        write_atomically(&path, |w| w.write_all(b"new\n")).expect("written");
        assert_eq!(fs::read_to_string(&path).expect("read"), "new\n");
        let names: Vec<_> = fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["a.txt"]);
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn write_atomically_keeps_the_old_file_and_the_error_when_writing_fails() {
        let dir = scratch("fail");
        let path = dir.join("a.txt");
        fs::write(&path, "old").expect("seed");
        let err = write_atomically(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("the writer gave up"))
        })
        .expect_err("fails");
        assert_eq!(err.to_string(), "the writer gave up");
        assert_eq!(fs::read_to_string(&path).expect("read"), "old");
        assert_eq!(fs::read_dir(&dir).expect("dir").count(), 1, "temp file removed");
        let err = write_atomically(dir.join("missing").join("b.txt"), |w| w.write_all(b"x")).expect_err("no dir");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let err = write_atomically(Path::new("/"), |w| w.write_all(b"x")).expect_err("no name");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        fs::remove_dir_all(dir).ok();
    }
}
