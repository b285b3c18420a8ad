//! A client that may not use a driver's files (the driver runs as another user) is told so,
//! with how to fix it, and never told to delete the directory of a driver that is alive.
//!
//! The checks run in a thread that gave up `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH`
//! (capabilities are per thread), so file modes bind it even when the tests run as root.
#![cfg(feature = "embedded-driver")]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::driver;
use messaging::{Client, ConnectError, DriverStatus};

/// Drops the two capabilities that let root past file modes from this thread's effective set.
fn bound_by_file_modes() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const DAC_OVERRIDE: u32 = 1 << 1;
    const DAC_READ_SEARCH: u32 = 1 << 2;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget/capset with a version-3 header and two data words, as capget(2) says;
    // the pointers live for the calls. capset with pid 0 changes only the calling thread.
    unsafe {
        assert_eq!(libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()), 0);
        data[0].effective &= !(DAC_OVERRIDE | DAC_READ_SEARCH);
        assert_eq!(libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()), 0);
    }
}

/// `ClientBuilder::check` and `driver_status` on `dir`, from a thread bound by file modes.
fn check(dir: &Path) -> (Result<(), ConnectError>, DriverStatus) {
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        bound_by_file_modes();
        (
            Client::builder().dir(&dir).check(),
            messaging::driver_status(&dir, messaging::DEFAULT_DRIVER_TIMEOUT),
        )
    })
    .join()
    .unwrap()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_client_that_may_not_use_the_driver_s_files_is_told_so() {
    let driver = driver();
    let dir: PathBuf = driver.dir().to_owned();
    let cnc = dir.join("cnc.dat");
    let dir_mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    let cnc_mode = std::fs::metadata(&cnc).unwrap().permissions().mode();
    assert_eq!(check(&dir).0.map_err(|e| e.to_string()), Ok(()), "a positive control");
    // Readable, not writable: the driver is seen alive, and the client may not write its
    // commands. Not readable: nothing can be said of the driver. The directory closed: not
    // even whether cnc.dat is there.
    for (path, mode, says, status_alive) in [
        (&cnc, 0o444, "is not writable by this process", true),
        (&cnc, 0o000, "could not be read", false),
        (&dir, 0o000, "could not be looked at", false),
    ] {
        chmod(path, mode);
        let (result, status) = check(&dir);
        chmod(&cnc, cnc_mode);
        chmod(&dir, dir_mode);
        let e = result.unwrap_err();
        assert!(matches!(e, ConnectError::PermissionDenied { .. }), "{mode:o}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains(says) && text.contains("run as the driver's user"),
            "{text}"
        );
        assert!(
            !text.contains("delet"),
            "never 'delete' a live driver's directory: {text}"
        );
        assert_eq!(matches!(status, DriverStatus::Alive { .. }), status_alive, "{status:?}");
        if !status_alive {
            assert!(matches!(status, DriverStatus::NoAccess { .. }), "{status:?}");
        }
    }
}
