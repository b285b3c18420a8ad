//! A publication's log file mapped into this process, shared and writable, as Aeron's C client
//! maps it (`aeron_raw_log_map_existing`): the three terms from the start of the file, the
//! metadata in its last 4 KiB, checked before anything is written; and the publication-limit
//! counter in the client's mapping of `cnc.dat`.

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use aeron_rs::cnc_file_descriptor;
use aeron_rs::concurrent::counters::{CountersReader, COUNTER_LENGTH};
use memmap2::{MmapMut, MmapOptions};

use crate::conductor::Inner;
use crate::error::{AddError, PrefaultError};
use crate::log::appender::TermLog;
use crate::log::descriptor::{check_log_length, LOG_META_DATA_LENGTH, LOG_PAGE_SIZE_OFFSET, LOG_TERM_LENGTH_OFFSET};
use crate::log::memory::RawLog;
use crate::prefault::{self, PrefaultStats};

/// The log file of a publication: `<aeron dir>/publications/<original registration id>.logbuffer`
/// (Aeron's C and Java drivers both name it so).
pub(crate) fn log_path(client: &Inner, original_registration_id: i64) -> PathBuf {
    client
        .dir()
        .join("publications")
        .join(format!("{original_registration_id}.logbuffer"))
}

/// The [`LogSpec`] of aeron-rs publication `$p` (a `Publication` or an `ExclusivePublication`:
/// the same accessors on two types), locked once, when the publication is built.
macro_rules! log_spec {
    ($p:expr, $client:expr, $stream_id:expr) => {{
        let p = $p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        $crate::mapped::LogSpec {
            path: $crate::mapped::log_path($client, p.original_registration_id()),
            term_length: p.term_buffer_length(),
            initial_term_id: p.initial_term_id(),
            session_id: p.session_id(),
            stream_id: $stream_id,
            max_payload: p.max_payload_length().max(0) as usize,
            limit_id: p.publication_limit_id(),
        }
    }};
}
pub(crate) use log_spec;

/// What a publication is, as the client learnt it when the driver created it.
pub(crate) struct LogSpec {
    pub(crate) path: PathBuf,
    pub(crate) term_length: i32,
    pub(crate) initial_term_id: i32,
    pub(crate) session_id: i32,
    pub(crate) stream_id: i32,
    pub(crate) max_payload: usize,
    /// The publication-limit counter id.
    pub(crate) limit_id: i32,
}

/// The mapping behind a publication's [`TermLog`]: keeps the file and the client's mapping of
/// `cnc.dat` (where the limit counter is) alive while the log's raw pointers are used.
pub(crate) struct Mapping {
    /// The publication-limit counter in the client's mapping of cnc.dat.
    limit: *const AtomicI64,
    pub(crate) path: PathBuf,
    map: MmapMut,
    /// Keeps the client's mapping of cnc.dat, where `limit` points, alive.
    _client: Arc<Inner>,
}

// SAFETY: `limit` points into the client's mapping of cnc.dat, kept alive by `_client`, and is
// only loaded atomically; the mapping is owned.
unsafe impl Send for Mapping {}
// SAFETY: as above: `&Mapping` only loads the counter atomically.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The publication limit the driver last set.
    #[inline]
    pub(crate) fn limit(&self) -> i64 {
        // SAFETY: see `open`: in bounds, aligned, kept mapped by `_client`.
        unsafe { (*self.limit).load(Ordering::Acquire) }
    }

    /// Every mapping of this log in this process into the page tables (see
    /// [`Publication::prefault`](crate::Publication::prefault)).
    pub(crate) fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        let ranges = prefault::mappings_of(&self.path)?;
        if ranges.is_empty() {
            return Err(PrefaultError::NotMapped {
                path: self.path.clone(),
            });
        }
        prefault::populate_all(&ranges, &|| format!("the log {}", self.path.display()))
    }
}

/// The publication-limit counter `limit_id` in the client's counters, checked to lie inside
/// them (the words of [`AddError::LogInvalid`] when it does not). The pointer is valid while
/// the client's `cnc.dat` mapping is: the [`Mapping`] that keeps it also keeps the client.
fn limit_counter(client: &Inner, limit_id: i32) -> Result<*const AtomicI64, String> {
    let values = cnc_file_descriptor::create_counter_values_buffer(&client.shared.cnc);
    let limit_offset = CountersReader::counter_offset(limit_id);
    if limit_id < 0 || limit_offset + COUNTER_LENGTH > values.capacity() {
        return Err(format!("its publication-limit counter id {limit_id} is out of range"));
    }
    // SAFETY: in bounds (checked above) and 8-byte aligned (counters are 128 bytes apart in a
    // page-aligned buffer); Aeron's driver only ever updates it atomically.
    let limit = unsafe {
        values
            .buffer()
            .add(limit_offset as usize)
            .cast::<AtomicI64>()
            .cast_const()
    };
    Ok(limit)
}

/// Maps the log of `spec` (with the client's `pre_touch`, faults every page in now), checks
/// it as Aeron's C client does, and finds its limit counter.
pub(crate) fn open(spec: LogSpec, client: Arc<Inner>) -> Result<(TermLog<RawLog>, Mapping), AddError> {
    let unreadable = |detail: String| AddError::LogUnreadable {
        path: spec.path.clone(),
        detail,
    };
    let invalid = |detail: String| AddError::LogInvalid {
        path: spec.path.clone(),
        detail,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&spec.path)
        .map_err(|e| unreadable(e.to_string()))?;
    // SAFETY: a shared mapping of the publication's log file, which the driver keeps while the
    // publication lives (its owner holds it). The driver, subscribers and aeron-rs's own
    // mapping use it concurrently: every shared access is atomic (see `RawLog`).
    let map = unsafe { MmapOptions::new().map_mut(&file) }.map_err(|e| unreadable(e.to_string()))?;
    if map.len() < LOG_META_DATA_LENGTH || map.len() % 64 != 0 {
        return Err(invalid(format!(
            "the file is {} bytes long: not the length of an Aeron log",
            map.len()
        )));
    }
    // Where Aeron's C client (`aeron_raw_log_map_existing`) and Java's `LogBuffers` find it.
    let meta_offset = map.len() - LOG_META_DATA_LENGTH;
    let base = map.as_ptr().cast_mut();
    // SAFETY: `meta_offset` + 4096 is the mapping's length; the fields read are 4-byte aligned
    // (the mapping is page-aligned, its length a multiple of 64).
    let (meta, in_meta, page_size) = unsafe {
        let meta = base.add(meta_offset);
        (
            meta,
            (*meta.add(LOG_TERM_LENGTH_OFFSET).cast::<AtomicI32>()).load(Ordering::Acquire),
            (*meta.add(LOG_PAGE_SIZE_OFFSET).cast::<AtomicI32>()).load(Ordering::Acquire),
        )
    };
    if in_meta != spec.term_length {
        return Err(invalid(format!(
            "its metadata gives a term length of {in_meta}, the client {}",
            spec.term_length
        )));
    }
    check_log_length(spec.term_length, page_size, map.len()).map_err(invalid)?;
    let limit = limit_counter(&client, spec.limit_id).map_err(invalid)?;
    // SAFETY: three terms of the checked term length from the start of the mapping, the
    // metadata in its last 4 KiB (page-aligned); `Mapping` owns the mapping and travels with
    // the TermLog in the publication.
    let mem = unsafe { RawLog::new(base, meta, spec.term_length) };
    let log = TermLog::new(
        mem,
        spec.initial_term_id,
        spec.session_id,
        spec.stream_id,
        spec.max_payload,
    );
    if client.pre_touch {
        // As aeron-rs does for its own mappings with `pre_touch_mapped_memory`: no page fault
        // on this mapping in the hot path later.
        let ours = base as usize..base as usize + map.len();
        prefault::populate_all(std::slice::from_ref(&ours), &|| {
            format!("the log {}", spec.path.display())
        })
        .map_err(|e| unreadable(e.to_string()))?;
    }
    let mapping = Mapping {
        limit,
        path: spec.path,
        map,
        _client: client,
    };
    Ok((log, mapping))
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("path", &self.path)
            .field("len", &self.map.len())
            .finish_non_exhaustive()
    }
}
