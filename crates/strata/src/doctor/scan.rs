//! Gathering the facts the doctor reasons about, read-only: per segment its
//! size, offsets, timestamps, index fill and (for compacted topics)
//! tombstones; per partition the log-dir checkpoints and the clean-shutdown
//! marker.
//!
//! Batches are read through the shared scanner (`crate::read::records`) in
//! bounded windows, so a 1 GiB segment never sits in memory; indexes and
//! checkpoints through `crate::read`. Nothing is opened for writing, locked
//! or mapped: safe against a live broker's directory.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use strata_log::codec::index::{zero_tail_start, IndexSlot, OffsetSlot, TimeSlot};
use strata_log::format as f;
use strata_log::{Offset, Timestamp, TopicPartition};

use crate::read::checkpoint::read_offset_checkpoint;
use crate::read::records::{scan, Scanned};
use crate::read::{read_all, ReadError};

/// Bytes read per window while scanning a `.log`.
const WINDOW: usize = 8 << 20;

/// Entries an index file holds and could hold as it is on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexFill {
    pub entries: usize,
    /// Slots in the file (a preallocated active index is larger than its
    /// entries; a rolled one is trimmed to them).
    pub slots: usize,
}

/// Tombstones (null values) of one batch that the cleaner already stamped
/// with a delete horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HorizonBatch {
    pub base_offset: Offset,
    pub delete_horizon: Timestamp,
    pub tombstones: u64,
}

/// One segment as the doctor sees it.
#[derive(Clone, Debug)]
pub struct SegmentFacts {
    pub base_offset: Offset,
    /// Bytes of whole batches (the logical size).
    pub size: u64,
    pub batches: u64,
    /// The offset after the last batch (the base when empty).
    pub next_offset: Offset,
    /// Max timestamp of the first batch (Kafka's `rollingBasedTimestamp`).
    pub first_batch_timestamp: Option<Timestamp>,
    /// Largest record timestamp; `-1` when no batch has one.
    pub max_timestamp: Timestamp,
    /// The `.log` mtime, ms since the epoch.
    pub mtime_ms: i64,
    pub offset_index: Option<IndexFill>,
    pub time_index: Option<IndexFill>,
    /// Records with a null value (counted only for compacted topics).
    pub tombstones: u64,
    /// Batches carrying a delete horizon (already cleaned once).
    pub horizon_batches: Vec<HorizonBatch>,
}

impl SegmentFacts {
    /// Kafka `largestTimestamp`: the max record timestamp, else the mtime.
    pub fn largest_timestamp(&self) -> Timestamp {
        if self.max_timestamp.0 >= 0 {
            self.max_timestamp
        } else {
            Timestamp(self.mtime_ms)
        }
    }
}

/// A partition directory and what its log dir says about it.
#[derive(Clone, Debug)]
pub struct PartitionFacts {
    pub dir: PathBuf,
    pub tp: TopicPartition,
    /// Oldest first; the last is the active segment.
    pub segments: Vec<SegmentFacts>,
    pub log_end_offset: Offset,
    /// max(log-start-offset-checkpoint entry, first segment base).
    pub log_start_offset: Offset,
    pub recovery_point: Option<Offset>,
    /// From `replication-offset-checkpoint`.
    pub high_watermark: Option<Offset>,
    pub cleaner_offset: Option<Offset>,
    /// The log dir has `.kafka_cleanshutdown` (no recovery at next start).
    pub clean_shutdown_marker: bool,
    /// Free bytes on the file system holding the directory.
    pub free_bytes: Option<u64>,
    /// `.deleted` files still waiting for `file.delete.delay.ms`.
    pub deleted_files_bytes: u64,
}

impl PartitionFacts {
    pub fn size(&self) -> u64 {
        self.segments.iter().map(|s| s.size).sum()
    }
}

/// Why a directory could not be examined.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{path}: not a <topic>-<partition> directory")]
    NotPartitionDir { path: PathBuf },
}

fn io_err(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> ReadError {
    let path = path.to_path_buf();
    move |source| ReadError { path, op, source }
}

fn mtime_ms(path: &Path) -> Result<i64, ReadError> {
    let m = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(io_err(path, "stat"))?;
    Ok(m.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0))
}

/// Walk every whole batch of a `.log` in bounded windows (a 1 GiB segment
/// never sits in memory), calling `f` with each item and its position in
/// the file. Stops at a corrupt batch or a partial tail (`strata log
/// verify` reports those), or when `f` breaks; a batch larger than the
/// window widens it. Returns the position after the last whole batch read.
///
/// # Errors
/// The file cannot be opened or read.
pub fn walk_batches(
    path: &Path,
    mut f: impl FnMut(u64, &Scanned<'_>) -> ControlFlow<()>,
) -> Result<u64, ReadError> {
    let file = File::open(path).map_err(io_err(path, "open"))?;
    let file_len = file.metadata().map_err(io_err(path, "stat"))?.len();
    let mut pos = 0u64;
    let mut window = WINDOW;
    let mut buf = Vec::new();
    while pos < file_len {
        let remaining = file_len - pos;
        let want = (remaining as usize).min(window);
        buf.resize(want, 0);
        file.read_exact_at(&mut buf, pos)
            .map_err(io_err(path, "read"))?;
        let (items, end) = scan(&buf);
        let mut corrupt = false;
        for item in &items {
            let at = match item {
                Scanned::V2 { position, .. }
                | Scanned::Legacy { position, .. }
                | Scanned::Corrupt { position, .. } => pos + *position as u64,
            };
            if matches!(item, Scanned::Corrupt { .. }) {
                corrupt = true;
            }
            if f(at, item).is_break() {
                return Ok(at);
            }
        }
        pos += end as u64;
        if corrupt || want as u64 == remaining {
            break;
        }
        if end == 0 {
            window = window.saturating_mul(2);
        }
    }
    Ok(pos)
}

/// The facts of one `.log`; `count_tombstones` decodes records
/// (decompressing) to count null values.
fn scan_log(path: &Path, base: Offset, count_tombstones: bool) -> Result<SegmentFacts, ReadError> {
    let mut facts = SegmentFacts {
        base_offset: base,
        size: 0,
        batches: 0,
        next_offset: base,
        first_batch_timestamp: None,
        max_timestamp: Timestamp::NONE,
        mtime_ms: mtime_ms(path)?,
        offset_index: None,
        time_index: None,
        tombstones: 0,
        horizon_batches: Vec::new(),
    };
    let mut scratch = Vec::new();
    let size = walk_batches(path, |_, item| {
        match item {
            Scanned::V2 { batch, .. } => {
                facts.batches += 1;
                facts.next_offset = batch.next_offset();
                let ts = batch.max_timestamp();
                facts.first_batch_timestamp.get_or_insert(ts);
                facts.max_timestamp = facts.max_timestamp.max(ts);
                if count_tombstones && !batch.is_control() {
                    let n = batch
                        .record_iter(&mut scratch)
                        .map(|it| it.flatten().filter(|r| r.value.is_none()).count())
                        .unwrap_or(0) as u64;
                    facts.tombstones += n;
                    if let Some(h) = batch.delete_horizon().filter(|_| n > 0) {
                        facts.horizon_batches.push(HorizonBatch {
                            base_offset: batch.base_offset(),
                            delete_horizon: h,
                            tombstones: n,
                        });
                    }
                }
            }
            Scanned::Legacy { entry, .. } => {
                facts.batches += 1;
                facts.next_offset = entry.offset.plus(1);
                facts.first_batch_timestamp.get_or_insert(entry.timestamp);
                facts.max_timestamp = facts.max_timestamp.max(entry.timestamp);
            }
            Scanned::Corrupt { .. } => {}
        }
        ControlFlow::Continue(())
    })?;
    facts.size = size;
    Ok(facts)
}

/// How full an index file is: its slots, and the entries before a
/// zero-filled preallocated tail (the codec's rule, as `verify` applies it).
fn index_fill<S: IndexSlot>(path: &Path) -> Result<Option<IndexFill>, ReadError> {
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = read_all(path)?;
    Ok(Some(IndexFill {
        entries: zero_tail_start::<S>(&bytes),
        slots: bytes.len() / S::SIZE,
    }))
}

/// One offset checkpoint's entry for `tp` (a missing or unreadable file
/// gives `None`: the doctor says what it assumed instead).
fn checkpoint_entry(log_dir: &Path, name: &str, tp: &TopicPartition) -> Option<Offset> {
    let entries = read_offset_checkpoint(&log_dir.join(name)).ok()?;
    entries.into_iter().find(|e| e.tp == *tp).map(|e| e.offset)
}

/// Free bytes of the file system holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a zeroed struct
    // that statvfs fills; nothing is retained.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Read everything the doctor needs about the partition directory `dir`.
///
/// # Errors
/// A name that is not `<topic>-<partition>`; unreadable files.
pub fn scan_partition(dir: &Path, count_tombstones: bool) -> Result<PartitionFacts, ScanError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tp = f::parse_partition_dir_name(&name)
        .map_err(|_| ScanError::NotPartitionDir {
            path: dir.to_path_buf(),
        })?
        .tp;
    let mut logs = BTreeMap::new();
    let mut deleted_files_bytes = 0;
    for e in std::fs::read_dir(dir)
        .map_err(io_err(dir, "list"))?
        .flatten()
    {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.ends_with(f::DELETED_SUFFIX) {
            deleted_files_bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
        } else if n.ends_with(f::LOG_SUFFIX) {
            if let Some(base) = f::offset_from_file_name(&n) {
                logs.insert(base, e.path());
            }
        }
    }
    let mut segments = Vec::with_capacity(logs.len());
    for (base, path) in logs {
        let mut s = scan_log(&path, base, count_tombstones)?;
        s.offset_index = index_fill::<OffsetSlot>(&f::index_file(dir, base, ""))?;
        s.time_index = index_fill::<TimeSlot>(&f::time_index_file(dir, base, ""))?;
        segments.push(s);
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    let first_base = segments.first().map_or(Offset(0), |s| s.base_offset);
    let log_end_offset = segments.last().map_or(Offset(0), |s| s.next_offset);
    let log_start_offset = checkpoint_entry(parent, f::LOG_START_OFFSET_CHECKPOINT, &tp)
        .unwrap_or(Offset(0))
        .max(first_base);
    Ok(PartitionFacts {
        dir: dir.to_path_buf(),
        recovery_point: checkpoint_entry(parent, f::RECOVERY_POINT_CHECKPOINT, &tp),
        high_watermark: checkpoint_entry(parent, f::REPLICATION_OFFSET_CHECKPOINT, &tp),
        cleaner_offset: checkpoint_entry(parent, f::CLEANER_OFFSET_CHECKPOINT, &tp),
        clean_shutdown_marker: parent.join(f::CLEAN_SHUTDOWN_MARKER).is_file(),
        free_bytes: free_bytes(dir),
        tp,
        segments,
        log_end_offset,
        log_start_offset,
        deleted_files_bytes,
    })
}

/// Whether `dir` is a partition directory (by name) rather than a log dir.
pub fn is_partition_dir(dir: &Path) -> bool {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The KRaft metadata log is not a topic partition retention manages.
    name != "__cluster_metadata-0"
        && matches!(f::parse_partition_dir_name(&name), Ok(p) if p.kind == f::DirKind::Live)
        && !dir.join(f::META_PROPERTIES).is_file()
}

/// The live partition directories of a log dir, sorted.
pub fn partition_dirs(log_dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(log_dir)
        .map_err(io_err(log_dir, "list"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_partition_dir(p))
        .collect();
    out.sort();
    Ok(out)
}
