//! Pre-faulting log buffers, so the hot threads take no page fault while measuring.
//!
//! Guarantees:
//! - after [`Publication::prefault`](crate::Publication::prefault) or
//!   [`Subscriber::prefault`](crate::Subscriber::prefault) returns `Ok`, every page of the
//!   log buffers it covered is mapped in this process's page tables, writable where the
//!   mapping is, so touching it later takes no page fault (as long as the kernel does not
//!   reclaim it: tmpfs pages are only swapped out under memory pressure);
//! - the contents of the log are never changed: the pages are populated by the kernel
//!   (`madvise(MADV_POPULATE_WRITE)`, Linux >= 5.14, which simulates a write fault without
//!   writing), or, on older kernels, read, so it is safe while the driver, other threads and
//!   other processes use the same log;
//! - it never touches memory that is not mapped: ranges are taken from mappings kept alive
//!   while it runs, or from `/proc/self/maps`, and the read fallback goes through the kernel
//!   (`process_vm_readv` on this process), which reports an unmapped page instead of
//!   crashing;
//! - it is for set-up, not the hot path: it allocates, reads `/proc/self/maps`, makes
//!   syscalls and takes up to ~1.5 ms per MiB populated (allocating tmpfs pages), less when
//!   the pages exist already.
//!
//! Why not aeron-rs's own `pre_touch_mapped_memory`: aeron-rs touches each page with a plain
//! read whose value it discards (`let _ignored = buffer.get::<i32>(offset)`), which the
//! optimiser may delete, and it only covers logs mapped after the option was set.

use std::fmt;
use std::io;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::PrefaultError;

/// How the pages were faulted in, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum PrefaultMethod {
    /// `madvise(MADV_POPULATE_WRITE)` (Linux >= 5.14): pages mapped writable, as if written.
    PopulateWrite,
    /// `madvise(MADV_POPULATE_READ)` (Linux >= 5.14), for a mapping that is not writable.
    PopulateRead,
    /// One byte read per page through `process_vm_readv` (kernels older than 5.14). On tmpfs
    /// (`/dev/shm`) a read maps the page writable too; on a file system that tracks dirty
    /// pages the first write to each page still takes a (cheap) fault.
    TouchRead,
}

impl PrefaultMethod {
    /// A stable snake_case name, for reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::PopulateWrite => "madv_populate_write",
            Self::PopulateRead => "madv_populate_read",
            Self::TouchRead => "touch_read",
        }
    }
}

impl fmt::Display for PrefaultMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a prefault did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrefaultStats {
    /// Mappings (virtual memory areas) populated.
    pub mappings: usize,
    /// Bytes populated, whole pages.
    pub bytes: usize,
    /// The weakest method any mapping needed.
    pub method: PrefaultMethod,
    /// How long it took.
    pub elapsed: Duration,
}

impl PrefaultStats {
    /// Pages populated (of the system page size).
    #[must_use]
    pub fn pages(&self) -> usize {
        self.bytes / page_size()
    }
}

impl fmt::Display for PrefaultStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} pages ({} KiB) in {} mapping(s) by {} in {:.1} ms",
            self.pages(),
            self.bytes / 1024,
            self.mappings,
            self.method,
            self.elapsed.as_secs_f64() * 1e3
        )
    }
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; it only reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|s| *s > 0).unwrap_or(4096)
}

/// Populates every range. A range unmapped meanwhile (by another thread) is skipped: the
/// kernel reports it (`ENOMEM`, `EFAULT`), nothing here dereferences it. `describe` names
/// the log in error messages.
pub(crate) fn populate_all(
    ranges: &[Range<usize>],
    describe: &dyn Fn() -> String,
) -> Result<PrefaultStats, PrefaultError> {
    let started = Instant::now();
    let page = page_size();
    let mut stats = PrefaultStats {
        mappings: 0,
        bytes: 0,
        method: PrefaultMethod::PopulateWrite,
        elapsed: Duration::ZERO,
    };
    for range in ranges {
        let start = range.start - range.start % page;
        let len = (range.end - start).div_ceil(page) * page;
        if len == 0 {
            continue;
        }
        match populate(start, len, page) {
            Ok(method) => {
                stats.mappings += 1;
                stats.bytes += len;
                stats.method = stats.method.max(method);
            }
            // Unmapped since the caller found it (another mapping of the same file, e.g. an
            // image that closed meanwhile): there is nothing left to populate.
            Err(_) if !is_mapped(start) => {}
            Err(source) => {
                return Err(PrefaultError::Populate {
                    log: describe(),
                    addr: start,
                    len,
                    source,
                })
            }
        }
    }
    stats.elapsed = started.elapsed();
    Ok(stats)
}

/// Whether the page at page-aligned `addr` is mapped (`mincore` answers ENOMEM if not).
fn is_mapped(addr: usize) -> bool {
    let mut resident = 0_u8;
    // SAFETY: mincore writes one byte per page queried (one here) into `resident`, which is
    // valid for that write; the kernel validates the address range itself.
    let rc = unsafe { libc::mincore(addr as *mut libc::c_void, 1, &mut resident) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM)
}

/// Faults `len` bytes at page-aligned `start` in: `MADV_POPULATE_WRITE`, else (`EINVAL`:
/// older kernel, or a read-only mapping) `MADV_POPULATE_READ`, else a read of one byte per
/// page through the kernel.
fn populate(start: usize, len: usize, page: usize) -> io::Result<PrefaultMethod> {
    for (advice, method) in [
        (libc::MADV_POPULATE_WRITE, PrefaultMethod::PopulateWrite),
        (libc::MADV_POPULATE_READ, PrefaultMethod::PopulateRead),
    ] {
        loop {
            // SAFETY: `MADV_POPULATE_*` only faults pages in (as a read or write access would)
            // and never changes their contents; the kernel checks the range and reports an
            // unmapped one as ENOMEM, so no pointer here is dereferenced by us.
            let rc = unsafe { libc::madvise(start as *mut libc::c_void, len, advice) };
            if rc == 0 {
                return Ok(method);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN) => continue,
                Some(libc::EINVAL) => break,
                _ => return Err(e),
            }
        }
    }
    touch_read(start, len, page)?;
    Ok(PrefaultMethod::TouchRead)
}

/// Reads one byte of every page through `process_vm_readv` on this very process: the kernel
/// faults each page in (as a read would) and reports a page that is not mapped as an error
/// instead of a SIGSEGV, so it is sound on a range another thread may unmap meanwhile.
pub(crate) fn touch_read(start: usize, len: usize, page: usize) -> io::Result<()> {
    /// Remote iovecs per call: well under `IOV_MAX` (1024).
    const BATCH: usize = 512;
    let mut sink = [0_u8; BATCH];
    let mut remote: Vec<libc::iovec> = Vec::with_capacity(BATCH);
    let pages = len.div_ceil(page);
    let mut done = 0;
    while done < pages {
        let n = BATCH.min(pages - done);
        remote.clear();
        remote.extend((done..done + n).map(|i| libc::iovec {
            iov_base: (start + i * page) as *mut libc::c_void,
            iov_len: 1,
        }));
        let local = libc::iovec {
            iov_base: sink.as_mut_ptr().cast(),
            iov_len: n,
        };
        // SAFETY: `local` describes `n` writable bytes of `sink`, which outlives the call;
        // `remote` holds `n` iovecs whose addresses the kernel validates itself (it only
        // reads them, in this process, and returns EFAULT or a short count for a page that
        // is not mapped). getpid cannot fail.
        let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), n as libc::c_ulong, 0) };
        if read < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if read as usize != n {
            return Err(io::Error::from_raw_os_error(libc::EFAULT));
        }
        done += n;
    }
    Ok(())
}

/// Every range of this process's address space that maps the file at `path` (found by its
/// device and inode in `/proc/self/maps`, so symbolic links and relative paths do not matter).
pub(crate) fn mappings_of(path: &Path) -> Result<Vec<Range<usize>>, PrefaultError> {
    let meta = std::fs::metadata(path).map_err(|source| PrefaultError::Inspect {
        path: path.to_owned(),
        source,
    })?;
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|source| PrefaultError::Inspect {
        path: "/proc/self/maps".into(),
        source,
    })?;
    let dev = meta.dev() as libc::dev_t;
    Ok(parse_maps(&maps, (libc::major(dev), libc::minor(dev)), meta.ino()))
}

/// The address ranges of the lines of a `/proc/<pid>/maps` text that map device
/// `major:minor`, inode `inode`.
fn parse_maps(maps: &str, (major, minor): (u32, u32), inode: u64) -> Vec<Range<usize>> {
    maps.lines()
        .filter_map(|line| {
            // start-end perms offset major:minor inode [path]
            let mut fields = line.split_ascii_whitespace();
            let range = fields.next()?;
            let (perms, _offset) = (fields.next()?, fields.next()?);
            // Shared mappings only: populating a private one writable would copy its pages and
            // detach them from the log (no Aeron log is mapped privately; this keeps it so).
            if perms.as_bytes().get(3) != Some(&b's') {
                return None;
            }
            let (maj, min) = fields.next()?.split_once(':')?;
            let ino: u64 = fields.next()?.parse().ok()?;
            let same_file = ino == inode
                && u32::from_str_radix(maj, 16).ok()? == major
                && u32::from_str_radix(min, 16).ok()? == minor;
            if !same_file {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (start < end).then_some(start..end)
        })
        .collect()
}

/// Minor faults of the calling thread so far (`RUSAGE_THREAD`, Linux's value), for tests.
#[cfg(test)]
pub(crate) fn thread_minor_faults() -> u64 {
    const RUSAGE_THREAD: libc::c_int = 1;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the right type; getrusage fills it.
    let rc = unsafe { libc::getrusage(RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage: {}", io::Error::last_os_error());
    // SAFETY: zero-initialised, then filled by a successful getrusage.
    unsafe { usage.assume_init() }.ru_minflt as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh shared mapping of a tmpfs file of `len` bytes (pages not yet allocated).
    struct SharedFile {
        addr: *mut u8,
        len: usize,
        path: std::path::PathBuf,
    }

    impl SharedFile {
        fn new(name: &str, len: usize) -> Self {
            let path = std::path::PathBuf::from(format!("/dev/shm/messaging-prefault-{name}-{}", std::process::id()));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            file.set_len(len as u64).unwrap();
            use std::os::fd::AsRawFd;
            // SAFETY: a new shared read-write mapping of an open file of `len` bytes; the
            // result is checked against MAP_FAILED before use.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED, "mmap: {}", io::Error::last_os_error());
            Self {
                addr: addr.cast(),
                len,
                path,
            }
        }

        /// Writes one byte per page; returns the minor faults that took.
        fn write_every_page(&self) -> u64 {
            let before = thread_minor_faults();
            for offset in (0..self.len).step_by(page_size()) {
                // SAFETY: `offset < len`, inside the mapping this struct owns.
                unsafe { self.addr.add(offset).write_volatile(1) };
            }
            thread_minor_faults() - before
        }
    }

    impl Drop for SharedFile {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly the mapping created in `new`, never used after this.
            unsafe { libc::munmap(self.addr.cast(), self.len) };
            let _ = std::fs::remove_file(&self.path);
        }
    }

    const LEN: usize = 1 << 20;

    #[test]
    fn without_prefault_every_first_write_faults() {
        let f = SharedFile::new("none", LEN);
        let faults = f.write_every_page();
        assert!(faults >= (LEN / page_size()) as u64 / 2, "{faults} faults");
    }

    #[test]
    fn populate_write_maps_every_page_writable() {
        let f = SharedFile::new("populate", LEN);
        let method = populate(f.addr as usize, LEN, page_size()).unwrap();
        let faults = f.write_every_page();
        println!("{method}: {faults} faults writing {} pages", LEN / page_size());
        assert!(faults < 4, "{faults} faults after {method}");
    }

    #[test]
    fn the_read_fallback_maps_every_page_of_a_tmpfs_file() {
        let f = SharedFile::new("touch", LEN);
        touch_read(f.addr as usize, LEN, page_size()).unwrap();
        let faults = f.write_every_page();
        assert!(faults < 4, "{faults} faults after the read fallback");
    }

    #[test]
    fn the_read_fallback_reports_an_unmapped_page_instead_of_crashing() {
        let page = page_size();
        // SAFETY: a new private anonymous mapping of two pages, checked before use.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED);
        // The second page becomes unreadable. (Unmapping it raced with the other tests'
        // threads, which could map something of their own there before the read.)
        // SAFETY: changes the protection of the second page of the mapping just made; nothing
        // refers to it.
        let rc = unsafe { libc::mprotect(addr.cast::<u8>().add(page).cast(), page, libc::PROT_NONE) };
        assert_eq!(rc, 0);
        let e = touch_read(addr as usize, 2 * page, page).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT), "{e}");
        // SAFETY: unmaps the whole mapping made above.
        unsafe { libc::munmap(addr, 2 * page) };
    }

    #[test]
    fn the_mappings_of_a_file_are_found_by_inode() {
        let f = SharedFile::new("maps", LEN);
        let found = mappings_of(&f.path).unwrap();
        let start = f.addr as usize;
        assert_eq!(found, vec![start..start + LEN]);
        let stats = populate_all(&found, &|| "test".into()).unwrap();
        assert_eq!((stats.mappings, stats.bytes), (1, LEN));
        assert_eq!(f.write_every_page(), 0);
    }

    #[test]
    fn maps_lines_are_matched_on_device_and_inode() {
        let maps = "\
7f0000000000-7f0000300000 rw-s 00000000 00:1a 1234                       /dev/shm/a/publications/5.logbuffer
7f0000400000-7f0000700000 rw-s 00000000 00:1a 1234                       /dev/shm/a/publications/5.logbuffer
7f0000800000-7f0000900000 rw-s 00000000 00:1b 1234                       /other/fs
7f0000a00000-7f0000b00000 rw-s 00000000 00:1a 12345                      /dev/shm/a/publications/55.logbuffer
7f0000c00000-7f0000d00000 rw-p 00000000 00:1a 1234                       /dev/shm/a/publications/5.logbuffer
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
garbage";
        assert_eq!(
            parse_maps(maps, (0, 0x1a), 1234),
            vec![0x7f00_0000_0000..0x7f00_0030_0000, 0x7f00_0040_0000..0x7f00_0070_0000]
        );
    }

    #[test]
    fn a_missing_log_file_says_so() {
        let e = mappings_of(Path::new("/nonexistent/publications/1.logbuffer")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/publications/1.logbuffer"), "{e}");
    }
}
