//! Who may write into a driver's directory.
//!
//! A media driver's directory holds `cnc.dat` (the command ring every client writes to) and
//! the term buffers (the messages themselves). If other local users can write there, they
//! can inject or corrupt messages and commands. The embedded driver never creates anything
//! world-writable (see [`EmbeddedDriverBuilder::spawn`](crate::EmbeddedDriverBuilder::spawn));
//! [`world_writable`] finds what an external driver left open.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The world-write permission bit.
const OTHERS_WRITE: u32 = 0o002;

/// The entries under `dir` (the directory itself, `cnc.dat`, `publications/`, `images/` and
/// the log files in them) that any local user may write, with their modes. Empty when none
/// is, or when `dir` cannot be read (then there is nothing to warn about here: connecting
/// fails with its own message).
#[must_use]
pub fn world_writable(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut check = |p: &Path| {
        if let Ok(m) = std::fs::symlink_metadata(p) {
            let mode = m.permissions().mode() & 0o7777;
            if mode & OTHERS_WRITE != 0 && !m.file_type().is_symlink() {
                out.push((p.to_owned(), mode));
            }
        }
    };
    check(dir);
    check(&dir.join("cnc.dat"));
    for sub in ["publications", "images"] {
        let d = dir.join(sub);
        check(&d);
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                check(&e.path());
            }
        }
    }
    out
}

/// One line for a report, or `None` when nothing under `dir` is world-writable.
#[must_use]
pub fn world_writable_warning(dir: &Path) -> Option<String> {
    let open = world_writable(dir);
    let (first, mode) = open.first()?;
    Some(format!(
        "the media driver's files are world-writable ({} entr{}, e.g. {} mode {:04o}): any local user can inject \
         or corrupt messages and driver commands; start the driver with umask 022 (or 077) or run chmod -R o-w {}",
        open.len(),
        if open.len() == 1 { "y" } else { "ies" },
        first.display(),
        mode,
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_world_writable_file_is_found_and_named_and_a_private_dir_is_not() {
        let dir = std::env::temp_dir().join(format!("messaging-perms-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("publications")).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.join("publications"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("cnc.dat"), b"x").unwrap();
        std::fs::set_permissions(dir.join("cnc.dat"), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(world_writable(&dir).is_empty());
        assert!(world_writable_warning(&dir).is_none());

        let log = dir.join("publications").join("1.logbuffer");
        std::fs::write(&log, b"x").unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(world_writable(&dir), vec![(log.clone(), 0o666)]);
        let w = world_writable_warning(&dir).unwrap();
        assert!(
            w.contains("1.logbuffer") && w.contains("0666") && w.contains("umask 022"),
            "{w}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
