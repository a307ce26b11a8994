//! One segment of a partition log (Kafka `LogSegment`, §8): a `.log` file of
//! record batches plus its lazily opened `.index`, `.timeindex` and
//! `.txnindex`.
//!
//! Format of `<base>.log` (Kafka's `FileRecords`): batches back to back, no
//! header, no footer; the first batch sits at position 0 and the logical size
//! is the end of the last whole batch.
//!
//! ```text
//! 0        batch A (BaseOffset .. Records), Length + 12 bytes
//! |A|      batch B
//! ...      (preallocated segments: zeros up to segment.bytes until trimmed)
//! ```
//!
//! # Concurrency
//!
//! - The `.log` file is an `Arc<File>` written with positioned writes by the
//!   single appender (the owning log's append lock serialises appends,
//!   truncation and renames) and read with positioned reads by anyone. It is
//!   opened on demand through the broker's [`HandleCache`] and closed again
//!   when the cache needs room (`crate::handles`): a user holds its own
//!   `Arc`, so closing never pulls a descriptor from under a read or write.
//!   The same goes for the indexes, which the cache unmaps when idle.
//! - Lock order: `state`, then the cache's registry; the cache only ever
//!   `try_lock`s a segment.
//! - `size` is the committed logical size, stored (Release) only after the
//!   bytes and the index entries are written; readers load it (Acquire) and
//!   never look past it.
//! - `state` (a `Mutex`) guards the open `.log` handle, the indexes and the
//!   roll/timestamp counters. It is held for index work and the append's
//!   write, never across a scan.

mod files;
pub(crate) mod producers;
mod recover;
pub(crate) mod scan;

pub use files::IndexFileState;
pub use recover::{EpochSink, SegmentRecovery};
pub use scan::BatchSummary;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::config::LogConfig;
use crate::error::LogError;
use crate::format;
use crate::fs::{OpenMode, SharedFs};
use crate::handles::{FileHolder, HandleCache};
use crate::index::{
    AbortedTxn, IndexError, OffsetIndex, TimeIndex, TimestampOffset, TransactionIndex,
    TxnIndexSearchResult,
};
use crate::types::{Offset, Position, Timestamp};

use scan::{FileBatches, ScanError};

/// Chunk size for scans that read whole batches.
const SCAN_CHUNK: usize = 1 << 20;
/// Chunk size for short lookups that skip from an index entry.
const LOOKUP_CHUNK: usize = 16 << 10;

/// Where an offset sits in a segment (Kafka `LogOffsetPosition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetPositionInSegment {
    /// Last offset of the batch found.
    pub last_offset: Offset,
    /// Byte position of the batch.
    pub position: u64,
    /// Size of the batch.
    pub size: u64,
}

/// A region of a segment returned by [`Segment::read`].
#[derive(Clone, Debug)]
pub struct SegmentSlice {
    pub file: Arc<File>,
    pub position: u64,
    pub len: u64,
}

/// The inputs of Kafka's `shouldRoll` (§8.4).
#[derive(Clone, Copy, Debug)]
pub struct RollParams {
    /// `segment.ms`, or `min(segment.ms, max.compaction.lag.ms)` for compacted logs.
    pub max_segment_ms: i64,
    pub max_segment_bytes: i32,
    pub max_timestamp_in_append: Timestamp,
    pub max_offset_in_append: Offset,
    pub append_size: u64,
    pub now_ms: i64,
}

/// Why a segment should roll (for stats and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollReason {
    Size,
    Time,
    OffsetIndexFull,
    TimeIndexFull,
    OffsetOverflow,
}

/// Per-segment settings taken from the topic config at creation.
#[derive(Clone, Copy, Debug)]
pub struct SegmentConfig {
    pub index_interval_bytes: i32,
    pub max_index_size: usize,
    /// Chosen once per segment: `abs(rand) % min(segment.jitter.ms, segment.ms)`.
    pub roll_jitter_ms: i64,
    pub preallocate_bytes: Option<u64>,
}

enum Lazy<T> {
    Unopened(PathBuf),
    Open(T),
}

/// Open files, index state and counters, guarded by `SegmentFiles::state`.
struct SegmentState {
    /// The seam the files are opened through (the segment's own).
    fs: SharedFs,
    /// Counts what this segment holds open; may close it (`try_close`).
    cache: Arc<HandleCache>,
    log_path: PathBuf,
    /// The `.log` while open (`None` = closed by the cache or not yet opened).
    log: Option<Arc<File>>,
    /// `Some(max)` while the segment takes appends: an offset or time index
    /// (re)opened is grown to `max` (it was trimmed when the cache closed
    /// it, or is a trimmed file at load).
    active_index_size: Option<usize>,
    offset_index: Lazy<OffsetIndex>,
    time_index: Lazy<TimeIndex>,
    txn_index: Lazy<TransactionIndex>,
    max_index_size: usize,
    index_interval_bytes: usize,
    bytes_since_last_index_entry: usize,
    /// `None` = not loaded yet; `Some(-1)` = first batch has no timestamp.
    rolling_based_timestamp: Option<Timestamp>,
    /// `None` = not loaded from the time index yet.
    max_timestamp: Option<TimestampOffset>,
    created_ms: i64,
    roll_jitter_ms: i64,
    /// Physical file length when preallocated (> logical size until trimmed).
    physical_len: u64,
}

/// One segment: `.log` plus indexes. See the module docs for locking.
pub struct Segment {
    fs: SharedFs,
    base_offset: Offset,
    files: Arc<SegmentFiles>,
    size: AtomicU64,
    /// After an append: (next offset − base) << 32 | size, published with
    /// one store after `size`, so a reader gets a matching pair (the
    /// position of the log end without a scan); [`END_UNKNOWN`] until the
    /// first append and after recovery or truncation.
    end_mark: AtomicU64,
}

/// What the handle cache may close: the segment's lock and its last use.
struct SegmentFiles {
    state: Mutex<SegmentState>,
    /// Cache clock at the last use (least-recently-used order).
    last_used: AtomicU64,
    /// Registry id in the cache.
    id: u64,
}

/// [`Segment::end_mark`] not known.
const END_UNKNOWN: u64 = u64::MAX;

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("base_offset", &self.base_offset)
            .field("size", &self.size())
            .finish()
    }
}

fn idx_err(e: IndexError) -> LogError {
    LogError::Index { source: e }
}

/// The per-segment settings a new segment of a log with `config` gets,
/// including its random roll jitter (§12).
pub(crate) fn segment_config(config: &LogConfig, new_active: bool) -> SegmentConfig {
    let bound = config.max_roll_jitter_ms();
    let roll_jitter_ms = if bound > 0 {
        (rand::random::<i32>().unsigned_abs() as i64) % bound
    } else {
        0
    };
    SegmentConfig {
        index_interval_bytes: config.index_interval_bytes,
        max_index_size: config.segment_index_bytes.max(0) as usize,
        roll_jitter_ms,
        preallocate_bytes: (new_active && config.preallocate)
            .then_some(config.segment_bytes as u64),
    }
}

/// Index of the segment holding `offset`: the last with base ≤ offset.
pub(crate) fn floor_segment(segs: &[Arc<Segment>], offset: Offset) -> Option<usize> {
    match segs.binary_search_by(|s| s.base_offset().cmp(&offset)) {
        Ok(i) => Some(i),
        Err(0) => None,
        Err(i) => Some(i - 1),
    }
}

impl<T> Lazy<T> {
    fn get(
        &mut self,
        cache: &HandleCache,
        open: impl FnOnce(&Path) -> Result<T, IndexError>,
    ) -> Result<&mut T, IndexError> {
        if let Lazy::Unopened(path) = self {
            let index = open(path)?;
            *self = Lazy::Open(index);
            cache.opened(1);
        }
        match self {
            Lazy::Open(t) => Ok(t),
            Lazy::Unopened(_) => unreachable!("opened above"),
        }
    }
}

impl SegmentState {
    fn offset_index(&mut self, base: Offset) -> Result<&mut OffsetIndex, IndexError> {
        let max = self.max_index_size;
        let grow = self.active_index_size;
        let fs = &self.fs;
        self.offset_index.get(&self.cache, |p| {
            let mut i = OffsetIndex::open(fs, p, base, max, true)?;
            if let Some(size) = grow {
                i.resize(size)?;
            }
            Ok(i)
        })
    }

    fn time_index(&mut self, base: Offset) -> Result<&mut TimeIndex, IndexError> {
        let max = self.max_index_size;
        let grow = self.active_index_size;
        let fs = &self.fs;
        self.time_index.get(&self.cache, |p| {
            let mut i = TimeIndex::open(fs, p, base, max, true)?;
            if let Some(size) = grow {
                i.resize(size)?;
            }
            Ok(i)
        })
    }

    fn txn_index(&mut self, base: Offset) -> Result<&mut TransactionIndex, IndexError> {
        let fs = &self.fs;
        self.txn_index
            .get(&self.cache, |p| TransactionIndex::open(fs, p, base))
    }

    /// The `.log`, reopened through the seam when the cache closed it.
    fn log_file(&mut self) -> Result<Arc<File>, LogError> {
        if let Some(f) = &self.log {
            return Ok(f.clone());
        }
        let file = Arc::new(
            self.fs
                .open(&self.log_path, OpenMode::ReadWrite)
                .map_err(|e| LogError::io(&self.log_path, "open segment", e))?,
        );
        self.log = Some(file.clone());
        self.cache.opened(1);
        Ok(file)
    }

    fn txn_path(&self) -> PathBuf {
        match &self.txn_index {
            Lazy::Unopened(p) => p.clone(),
            Lazy::Open(i) => i.path().to_path_buf(),
        }
    }

    /// Handles held: the `.log` and each open index.
    fn open_handles(&self) -> usize {
        usize::from(self.log.is_some())
            + usize::from(matches!(self.offset_index, Lazy::Open(_)))
            + usize::from(matches!(self.time_index, Lazy::Open(_)))
            + usize::from(matches!(self.txn_index, Lazy::Open(_)))
    }

    /// Close the `.log` (if idle, or `in_use`) and every index; a
    /// preallocated index is first trimmed to its entries so that a reopen
    /// counts exactly them. An index whose trim fails stays open (the error
    /// shows again on the segment's own next use). Returns how many closed.
    fn close_handles(&mut self, in_use: bool) -> usize {
        let mut n = 0;
        if let Some(f) = &self.log {
            if in_use || Arc::strong_count(f) == 1 {
                self.log = None;
                n += 1;
            }
        }
        if let Lazy::Open(i) = &mut self.offset_index {
            if i.trim_to_valid_size().is_ok() {
                let path = i.path().to_path_buf();
                self.offset_index = Lazy::Unopened(path);
                n += 1;
            }
        }
        if let Lazy::Open(i) = &mut self.time_index {
            if i.trim_to_valid_size().is_ok() {
                let path = i.path().to_path_buf();
                self.time_index = Lazy::Unopened(path);
                n += 1;
            }
        }
        if let Lazy::Open(i) = &self.txn_index {
            let path = i.path().to_path_buf();
            self.txn_index = Lazy::Unopened(path);
            n += 1;
        }
        n
    }
}

impl FileHolder for SegmentFiles {
    fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    fn open_handles(&self) -> usize {
        match self.state.try_lock() {
            Ok(st) => st.open_handles(),
            Err(TryLockError::Poisoned(e)) => e.into_inner().open_handles(),
            // Busy means in use: count it as holding something.
            Err(TryLockError::WouldBlock) => 1,
        }
    }

    fn try_close(&self, in_use: bool) -> usize {
        let mut st = match self.state.try_lock() {
            Ok(st) => st,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return 0,
        };
        let n = st.close_handles(in_use);
        st.cache.closed(n);
        n
    }
}

impl Drop for SegmentFiles {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        st.cache.closed(st.open_handles());
        st.cache.forget(self.id);
    }
}

impl Segment {
    /// Create a new, empty segment `<dir>/<base>.log<suffix>` and an empty
    /// `<base>.txnindex<suffix>` (the offset and time indexes appear when
    /// first touched). A leftover file of either name is replaced.
    ///
    /// The empty `.txnindex` is Strata's: Kafka creates it on the first
    /// aborted transaction. With one for every segment Strata creates, a
    /// missing file at load means "lost", and the loader rebuilds it
    /// (`docs/transactions.md`, Recovery).
    ///
    /// # Errors
    /// I/O errors creating or preallocating the file.
    pub fn create(
        fs: &SharedFs,
        handles: &Arc<HandleCache>,
        dir: &Path,
        base_offset: Offset,
        config: SegmentConfig,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Segment, LogError> {
        let log_path = format::log_file(dir, base_offset, suffix);
        let file = fs
            .open(&log_path, OpenMode::CreateTruncate)
            .map_err(|e| LogError::io(&log_path, "create segment", e))?;
        let txn_path = format::txn_index_file(dir, base_offset, suffix);
        fs.open(&txn_path, OpenMode::CreateTruncate)
            .map_err(|e| LogError::io(&txn_path, "create transaction index", e))?;
        let mut physical_len = 0;
        if let Some(len) = config.preallocate_bytes {
            fs.set_len(&file, &log_path, len)
                .map_err(|e| LogError::io(&log_path, "preallocate segment", e))?;
            physical_len = len;
        }
        let seg = Self::build(
            fs,
            handles,
            dir,
            base_offset,
            Some(file),
            0,
            physical_len,
            config,
            now_ms,
            suffix,
            log_path,
        );
        {
            let mut st = seg.lock();
            // A new segment's max is known without touching the time index.
            st.max_timestamp = Some(TimestampOffset {
                timestamp: Timestamp::NONE,
                offset: base_offset,
            });
            // It takes appends until rolled: indexes reopen at full size.
            st.active_index_size = Some(config.max_index_size);
        }
        Ok(seg)
    }

    /// Open an existing segment; its logical size is the file length (a
    /// zero tail left by preallocation is cut by [`Segment::recover`]).
    /// Only a `stat`: the `.log` is opened when first read or written.
    ///
    /// # Errors
    /// I/O errors reading the file's length.
    pub fn open(
        fs: &SharedFs,
        handles: &Arc<HandleCache>,
        dir: &Path,
        base_offset: Offset,
        config: SegmentConfig,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Segment, LogError> {
        let log_path = format::log_file(dir, base_offset, suffix);
        let len = std::fs::metadata(&log_path)
            .map_err(|e| LogError::io(&log_path, "stat segment", e))?
            .len();
        Ok(Self::build(
            fs,
            handles,
            dir,
            base_offset,
            None,
            len,
            len,
            config,
            now_ms,
            suffix,
            log_path,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        fs: &SharedFs,
        handles: &Arc<HandleCache>,
        dir: &Path,
        base_offset: Offset,
        file: Option<File>,
        size: u64,
        physical_len: u64,
        config: SegmentConfig,
        now_ms: i64,
        suffix: &str,
        log_path: PathBuf,
    ) -> Segment {
        let opened = file.is_some();
        let state = SegmentState {
            fs: fs.clone(),
            cache: handles.clone(),
            log_path,
            log: file.map(Arc::new),
            active_index_size: None,
            offset_index: Lazy::Unopened(format::index_file(dir, base_offset, suffix)),
            time_index: Lazy::Unopened(format::time_index_file(dir, base_offset, suffix)),
            txn_index: Lazy::Unopened(format::txn_index_file(dir, base_offset, suffix)),
            max_index_size: config.max_index_size,
            index_interval_bytes: config.index_interval_bytes.max(0) as usize,
            bytes_since_last_index_entry: 0,
            rolling_based_timestamp: None,
            max_timestamp: None,
            created_ms: now_ms,
            roll_jitter_ms: config.roll_jitter_ms,
            physical_len,
        };
        let files = Arc::new_cyclic(|me: &std::sync::Weak<SegmentFiles>| {
            let holder: std::sync::Weak<dyn FileHolder> = me.clone();
            SegmentFiles {
                state: Mutex::new(state),
                last_used: AtomicU64::new(handles.tick()),
                id: handles.register(holder),
            }
        });
        if opened {
            handles.opened(1);
        }
        Segment {
            fs: fs.clone(),
            base_offset,
            files,
            size: AtomicU64::new(size),
            end_mark: AtomicU64::new(END_UNKNOWN),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SegmentState> {
        let files = &self.files;
        let st = files.state.lock().unwrap_or_else(|e| e.into_inner());
        // A panic while holding the lock leaves counters, not files, stale:
        // continue with them.
        files.last_used.store(st.cache.tick(), Ordering::Relaxed);
        st
    }

    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }

    /// Committed logical size in bytes.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    /// The `.log` file, shared with readers; opened (through the seam)
    /// when the handle cache had closed it. Hold the `Arc` only for the
    /// read or write at hand: while held, the descriptor stays open.
    ///
    /// # Errors
    /// The error reopening the file.
    pub fn file(&self) -> Result<Arc<File>, LogError> {
        self.lock().log_file()
    }

    /// Handles this segment holds open now (tests, tools).
    pub fn open_handles(&self) -> usize {
        self.lock().open_handles()
    }

    /// The `.log` file's last-modified time in ms since the epoch (Kafka
    /// `LogSegment.lastModified`: retention and the cleaner's legacy
    /// fallback when a segment has no batch timestamps). Read from the open
    /// file, so a rename cannot race it.
    ///
    /// # Errors
    /// The stat error.
    pub fn last_modified_ms(&self) -> Result<i64, LogError> {
        let st = self.lock();
        // Under the lock, so a rename cannot race the `stat` by path.
        let meta = match &st.log {
            Some(f) => f.metadata(),
            None => std::fs::metadata(&st.log_path),
        };
        let modified = meta
            .and_then(|m| m.modified())
            .map_err(|e| LogError::io(&st.log_path, "stat segment", e))?;
        Ok(modified
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0))
    }

    /// Path of the `.log` file.
    pub fn log_path(&self) -> PathBuf {
        self.lock().log_path.clone()
    }

    /// Paths of the offset and time index files (they may not exist yet).
    pub fn index_paths(&self) -> (PathBuf, PathBuf) {
        let st = self.lock();
        let p = |l: &Lazy<OffsetIndex>| match l {
            Lazy::Unopened(p) => p.clone(),
            Lazy::Open(i) => i.path().to_path_buf(),
        };
        let t = match &st.time_index {
            Lazy::Unopened(p) => p.clone(),
            Lazy::Open(i) => i.path().to_path_buf(),
        };
        (p(&st.offset_index), t)
    }

    /// When the segment object was created (or last truncated to empty).
    pub fn created_ms(&self) -> i64 {
        self.lock().created_ms
    }

    pub fn roll_jitter_ms(&self) -> i64 {
        self.lock().roll_jitter_ms
    }

    /// Kafka `append` (§8.2): write `records` (whole batches) at the end,
    /// track the max timestamp and add sparse index entries (§3.3).
    ///
    /// # Errors
    /// [`LogError::OffsetOverflow`] (nothing written) when `largest_offset`
    /// does not fit the relative range; I/O and index errors.
    pub fn append(
        &self,
        largest_offset: Offset,
        largest_timestamp: Timestamp,
        shallow_offset_of_max_timestamp: Offset,
        records: &[u8],
    ) -> Result<(), LogError> {
        if records.is_empty() {
            return Ok(());
        }
        let pos = self.size();
        let mut st = self.lock();
        if largest_offset.relative_to(self.base_offset).is_none() {
            return Err(LogError::OffsetOverflow {
                path: st.log_path.clone(),
                base_offset: self.base_offset,
                largest: largest_offset,
            });
        }
        if pos == 0 {
            st.rolling_based_timestamp = Some(largest_timestamp);
        }
        let file = st.log_file()?;
        self.fs
            .write_at(&file, &st.log_path, records, pos)
            .map_err(|e| LogError::io(&st.log_path, "append", e))?;
        let max = self.max_timestamp_locked(&mut st)?;
        if largest_timestamp > max.timestamp {
            st.max_timestamp = Some(TimestampOffset {
                timestamp: largest_timestamp,
                offset: shallow_offset_of_max_timestamp,
            });
        }
        if st.bytes_since_last_index_entry > st.index_interval_bytes {
            let max = st.max_timestamp.expect("loaded above");
            let base = self.base_offset;
            st.offset_index(base)
                .and_then(|i| i.append(largest_offset, Position(pos as u32)))
                .map_err(idx_err)?;
            st.time_index(base)
                .and_then(|i| i.maybe_append(max.timestamp, max.offset, false))
                .map_err(idx_err)?;
            st.bytes_since_last_index_entry = 0;
        }
        st.bytes_since_last_index_entry += records.len();
        let end = pos + records.len() as u64;
        if end > st.physical_len {
            st.physical_len = end;
        }
        self.size.store(end, Ordering::Release);
        if let (Some(next), Ok(size)) = (
            largest_offset.plus(1).relative_to(self.base_offset),
            u32::try_from(end),
        ) {
            self.end_mark.store(
                (u64::from(next.0) << 32) | u64::from(size),
                Ordering::Release,
            );
        }
        Ok(())
    }

    /// The next offset after the last append and the size it left, read
    /// together; `None` before the first append of this segment object
    /// and after recovery or truncation.
    pub fn end_mark(&self) -> Option<(Offset, u64)> {
        let mark = self.end_mark.load(Ordering::Acquire);
        (mark != END_UNKNOWN).then(|| {
            (
                self.base_offset.plus((mark >> 32) as i64),
                mark & u64::from(u32::MAX),
            )
        })
    }

    /// The position of the first batch whose last offset is `>= offset`,
    /// searching only the first `end` bytes; `end` when there is none.
    /// With `end` read before the call, every batch before the answer has
    /// offsets below `offset` even while appends go on.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn position_of_offset_within(&self, offset: Offset, end: u64) -> Result<u64, LogError> {
        let from = {
            let mut st = self.lock();
            let base = self.base_offset;
            st.offset_index(base)
                .map_err(idx_err)?
                .lookup(offset)
                .position
                .0 as u64
        };
        Ok(self
            .search_from(offset, from.min(end), end)?
            .map_or(end, |p| p.position))
    }

    /// Max timestamp so far and the (shallow) offset holding it, loading it
    /// from the time index plus a scan after its last entry when unknown.
    fn max_timestamp_locked(&self, st: &mut SegmentState) -> Result<TimestampOffset, LogError> {
        if let Some(m) = st.max_timestamp {
            return Ok(m);
        }
        let base = self.base_offset;
        let last = st.time_index(base).map_err(idx_err)?.last_entry();
        let pos = st
            .offset_index(base)
            .map_err(idx_err)?
            .lookup(last.offset)
            .position;
        let mut best = TimestampOffset {
            timestamp: last.timestamp,
            offset: last.offset,
        };
        let file = st.log_file()?;
        let mut it = FileBatches::new(&file, pos.0 as u64, self.size(), LOOKUP_CHUNK);
        while let Some(item) = it.next_header() {
            match item {
                Ok(b) if b.max_timestamp > best.timestamp => {
                    best = TimestampOffset {
                        timestamp: b.max_timestamp,
                        offset: b.last_offset,
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        st.max_timestamp = Some(best);
        Ok(best)
    }

    /// The largest timestamp in the segment and the last offset of the batch
    /// holding it (`(-1, base)` when none).
    pub fn max_timestamp_so_far(&self) -> Result<TimestampOffset, LogError> {
        let mut st = self.lock();
        self.max_timestamp_locked(&mut st)
    }

    /// Kafka `translateOffset` (§8.3): the first batch at or after
    /// `start_position` whose last offset is `>= offset`.
    ///
    /// # Errors
    /// I/O and index errors; a corrupt batch ends the scan as "not found".
    pub fn translate_offset(
        &self,
        offset: Offset,
        start_position: u64,
    ) -> Result<Option<OffsetPositionInSegment>, LogError> {
        let from = {
            let mut st = self.lock();
            let base = self.base_offset;
            st.offset_index(base)
                .map_err(idx_err)?
                .lookup(offset)
                .position
                .0 as u64
        };
        self.search_from(offset, from.max(start_position), self.size())
    }

    fn search_from(
        &self,
        offset: Offset,
        from: u64,
        end: u64,
    ) -> Result<Option<OffsetPositionInSegment>, LogError> {
        let file = self.file()?;
        let mut it = FileBatches::new(&file, from, end, LOOKUP_CHUNK);
        while let Some(item) = it.next_header() {
            match item {
                Ok(b) if b.last_offset >= offset => {
                    return Ok(Some(OffsetPositionInSegment {
                        last_offset: b.last_offset,
                        position: b.position,
                        size: b.size,
                    }))
                }
                Ok(_) => {}
                Err(ScanError::Corrupt { .. }) => return Ok(None),
                Err(ScanError::Io(e)) => return Err(LogError::io(self.log_path(), "read", e)),
            }
        }
        Ok(None)
    }

    /// Kafka `read` (§8.3): the slice starting at the batch holding
    /// `start_offset`, at most `max_size` bytes and never past
    /// `max_position`; with `min_one_message` at least that whole batch.
    /// `None` when `start_offset` is beyond the segment.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn read(
        &self,
        start_offset: Offset,
        max_size: u64,
        max_position: u64,
        min_one_message: bool,
    ) -> Result<Option<SegmentSlice>, LogError> {
        let Some(found) = self.translate_offset(start_offset, 0)? else {
            return Ok(None);
        };
        let first_size = found.size;
        let adjusted_max = if min_one_message {
            max_size.max(first_size)
        } else {
            max_size
        };
        let end = max_position.min(self.size());
        let len = end.saturating_sub(found.position).min(adjusted_max);
        Ok(Some(SegmentSlice {
            file: self.file()?,
            position: found.position,
            len,
        }))
    }

    /// Kafka `readNextOffset`: the offset after the last batch, or the base.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn read_next_offset(&self) -> Result<Offset, LogError> {
        let from = self.last_index_position()?;
        let mut next = self.base_offset;
        let file = self.file()?;
        let mut it = FileBatches::new(&file, from, self.size(), LOOKUP_CHUNK);
        while let Some(item) = it.next_header() {
            match item {
                Ok(b) => next = b.next_offset(),
                Err(ScanError::Corrupt { .. }) => break,
                Err(ScanError::Io(e)) => return Err(LogError::io(self.log_path(), "read", e)),
            }
        }
        Ok(next)
    }

    /// The `.log` position of the offset index's last entry (0 without
    /// one). An index not opened yet is not mapped for this: at load it holds
    /// exactly its entries (trimmed at close, checked by
    /// [`Self::check_index_files`]), so one `pread` of its last entry does,
    /// where mapping it (and growing it back to `segment.index.bytes`) for
    /// every partition made start-up of thousands of partitions slow.
    ///
    /// # Errors
    /// I/O and index errors.
    pub(crate) fn last_index_position(&self) -> Result<u64, LogError> {
        let mut st = self.lock();
        if let Lazy::Unopened(path) = &st.offset_index {
            return last_indexed_position(path)
                .map_err(|e| LogError::io(path, "read the last index entry", e));
        }
        let idx = st.offset_index(self.base_offset).map_err(idx_err)?;
        Ok(match idx.entries() {
            0 => 0,
            n => idx.entry(n - 1).position.0 as u64,
        })
    }

    /// Kafka `shouldRoll` (§8.4): the first reason that holds, if any.
    ///
    /// # Errors
    /// I/O and index errors while loading lazy state.
    pub fn should_roll(&self, p: &RollParams) -> Result<Option<RollReason>, LogError> {
        let size = self.size();
        if size as i64 > p.max_segment_bytes as i64 - p.append_size as i64 {
            return Ok(Some(RollReason::Size));
        }
        let mut st = self.lock();
        if size > 0 {
            let waited = self.time_waited_for_roll(&mut st, p.now_ms, p.max_timestamp_in_append)?;
            if waited > p.max_segment_ms - st.roll_jitter_ms {
                return Ok(Some(RollReason::Time));
            }
        }
        let base = self.base_offset;
        if st.offset_index(base).map_err(idx_err)?.is_full() {
            return Ok(Some(RollReason::OffsetIndexFull));
        }
        if st.time_index(base).map_err(idx_err)?.is_full() {
            return Ok(Some(RollReason::TimeIndexFull));
        }
        if p.max_offset_in_append.relative_to(base).is_none() {
            return Ok(Some(RollReason::OffsetOverflow));
        }
        Ok(None)
    }

    fn time_waited_for_roll(
        &self,
        st: &mut SegmentState,
        now_ms: i64,
        ts_in_append: Timestamp,
    ) -> Result<i64, LogError> {
        if st.rolling_based_timestamp.is_none() {
            let file = st.log_file()?;
            let mut it = FileBatches::new(&file, 0, self.size(), LOOKUP_CHUNK);
            if let Some(Ok(b)) = it.next_header() {
                st.rolling_based_timestamp = Some(b.max_timestamp);
            }
        }
        Ok(match st.rolling_based_timestamp {
            Some(t) if t.0 >= 0 => ts_in_append.0 - t.0,
            _ => now_ms - st.created_ms,
        })
    }

    /// Kafka `onBecomeInactiveSegment` (§8.5): final time-index entry, trim
    /// both indexes, trim a preallocated `.log` to its logical size.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn on_become_inactive(&self) -> Result<(), LogError> {
        let mut st = self.lock();
        self.final_time_index_entry(&mut st)?;
        let base = self.base_offset;
        st.offset_index(base)
            .and_then(|i| i.trim_to_valid_size())
            .map_err(idx_err)?;
        st.time_index(base)
            .and_then(|i| i.trim_to_valid_size())
            .map_err(idx_err)?;
        // Rolled: a reopened index keeps its trimmed size.
        st.active_index_size = None;
        self.trim_log(&mut st)
    }

    fn final_time_index_entry(&self, st: &mut SegmentState) -> Result<(), LogError> {
        let max = self.max_timestamp_locked(st)?;
        let base = self.base_offset;
        st.time_index(base)
            .and_then(|i| i.maybe_append(max.timestamp, max.offset, true))
            .map_err(idx_err)
    }

    fn trim_log(&self, st: &mut SegmentState) -> Result<(), LogError> {
        let size = self.size();
        if st.physical_len != size {
            let file = st.log_file()?;
            self.fs
                .set_len(&file, &st.log_path, size)
                .map_err(|e| LogError::io(&st.log_path, "trim segment", e))?;
            st.physical_len = size;
        }
        Ok(())
    }

    /// fsync the `.log` and the indexes (creating the offset and time index
    /// files; the `.txnindex` only if it was written through this segment).
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn flush(&self) -> Result<(), LogError> {
        self.sync_log()?;
        let mut st = self.lock();
        let base = self.base_offset;
        st.offset_index(base)
            .and_then(|i| i.flush())
            .map_err(idx_err)?;
        st.time_index(base)
            .and_then(|i| i.flush())
            .map_err(idx_err)?;
        match &st.txn_index {
            Lazy::Open(i) => i.flush().map_err(idx_err),
            Lazy::Unopened(_) => Ok(()),
        }
    }

    /// fsync only the `.log` data (durable appends; indexes are rebuilt by
    /// recovery from the recovery point anyway).
    ///
    /// # Errors
    /// The fsync error.
    ///
    /// A `.log` the cache closed is reopened to sync it: `fsync` on any
    /// descriptor makes the file's written data durable, so what needs a
    /// sync is tracked by the log (its durable offset and recovery point),
    /// never by the handle.
    pub fn sync_log(&self) -> Result<(), LogError> {
        let (file, path) = {
            let mut st = self.lock();
            (st.log_file()?, st.log_path.clone())
        };
        self.fs
            .sync(&file, &path)
            .map_err(|e| LogError::io(&path, "fsync", e))
    }

    /// Clean close: final time-index entry, trim indexes and `.log`, fsync.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn close(&self) -> Result<(), LogError> {
        self.on_become_inactive()?;
        self.flush()
    }

    /// Resize both indexes to `max_index_size` (the active segment after
    /// loading, §9 step 7).
    ///
    /// # Errors
    /// Index errors.
    ///
    /// An index not open yet is only marked: it is grown when first opened,
    /// so loading 10,000 partitions maps no index.
    pub fn resize_indexes(&self, max_index_size: usize) -> Result<(), LogError> {
        let mut st = self.lock();
        st.max_index_size = max_index_size;
        st.active_index_size = Some(max_index_size);
        if let Lazy::Open(i) = &mut st.offset_index {
            i.resize(max_index_size).map_err(idx_err)?;
        }
        if let Lazy::Open(i) = &mut st.time_index {
            i.resize(max_index_size).map_err(idx_err)?;
        }
        Ok(())
    }

    /// Whether the `.index` file exists on disk (loader sanity check).
    pub fn index_files_exist(&self) -> (bool, bool) {
        let (o, t) = self.index_paths();
        (o.exists(), t.exists())
    }

    /// Loader step 6 for a `.timeindex` that was missing while `.index`
    /// exists: create it empty (0 bytes, 0 entries), as Kafka does; it is
    /// rebuilt only if the segment is recovered later.
    ///
    /// # Errors
    /// Index errors.
    pub fn create_empty_time_index(&self) -> Result<(), LogError> {
        let mut st = self.lock();
        let base = self.base_offset;
        st.time_index(base)
            .and_then(|i| i.resize(0))
            .map_err(idx_err)?;
        Ok(())
    }

    /// Index fill: (offset entries, offset max, time entries, time max).
    ///
    /// # Errors
    /// Index errors (opening the lazy indexes).
    pub fn index_fill(&self) -> Result<(usize, usize, usize, usize), LogError> {
        let mut st = self.lock();
        let base = self.base_offset;
        let (oe, om) = {
            let i = st.offset_index(base).map_err(idx_err)?;
            (i.entries(), i.max_entries())
        };
        let i = st.time_index(base).map_err(idx_err)?;
        Ok((oe, om, i.entries(), i.max_entries()))
    }

    /// First offset whose batch has `max_timestamp >= ts`, at or after
    /// `starting_offset` (Kafka `findOffsetByTimestamp`, batch granularity:
    /// the returned offset is the batch's base offset clamped to
    /// `starting_offset`, and the timestamp is the batch's max).
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn find_offset_by_timestamp(
        &self,
        ts: Timestamp,
        starting_offset: Offset,
    ) -> Result<Option<(Timestamp, Offset, BatchSummary)>, LogError> {
        let pos = {
            let mut st = self.lock();
            let base = self.base_offset;
            let entry = st.time_index(base).map_err(idx_err)?.lookup(ts);
            let target = entry.offset.max(starting_offset);
            st.offset_index(base)
                .map_err(idx_err)?
                .lookup(target)
                .position
                .0 as u64
        };
        let file = self.file()?;
        let mut it = FileBatches::new(&file, pos, self.size(), LOOKUP_CHUNK);
        while let Some(item) = it.next_header() {
            match item {
                Ok(b) if b.max_timestamp >= ts && b.last_offset >= starting_offset => {
                    return Ok(Some((
                        b.max_timestamp,
                        b.base_offset.max(starting_offset),
                        b,
                    )))
                }
                Ok(_) => {}
                Err(ScanError::Corrupt { .. }) => break,
                Err(ScanError::Io(e)) => return Err(LogError::io(self.log_path(), "read", e)),
            }
        }
        Ok(None)
    }

    /// Path of the `.txnindex` file (it may not exist).
    pub fn txn_index_path(&self) -> PathBuf {
        self.lock().txn_path()
    }

    /// Whether the `.txnindex` file exists on disk (one `stat`).
    pub fn txn_index_file_exists(&self) -> bool {
        self.txn_index_path().exists()
    }

    /// Append an aborted transaction to this segment's `.txnindex` (Kafka
    /// `LogSegment.updateTxnIndex`), creating the file if needed.
    ///
    /// # Errors
    /// [`LogError::Index`] for an out-of-order entry or an I/O failure.
    pub fn append_aborted_txn(&self, txn: &AbortedTxn) -> Result<(), LogError> {
        let mut st = self.lock();
        let base = self.base_offset;
        st.txn_index(base)
            .and_then(|i| i.append(txn))
            .map_err(idx_err)
    }

    /// The aborted transactions of this segment overlapping
    /// `[fetch_offset, upper_bound)` (Kafka
    /// `TransactionIndex.collectAbortedTxns`).
    ///
    /// # Errors
    /// [`LogError::Index`] for a read failure or a corrupt record.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Result<TxnIndexSearchResult, LogError> {
        let mut st = self.lock();
        let base = self.base_offset;
        st.txn_index(base)
            .and_then(|i| i.collect_aborted_txns(fetch_offset, upper_bound))
            .map_err(idx_err)
    }

    /// Every record of this segment's `.txnindex`, in file order.
    ///
    /// # Errors
    /// As [`Self::collect_aborted_txns`].
    pub fn aborted_txns(&self) -> Result<Vec<AbortedTxn>, LogError> {
        let mut st = self.lock();
        let base = self.base_offset;
        st.txn_index(base)
            .and_then(|i| i.all_aborted_txns())
            .map_err(idx_err)
    }

    /// Kafka `OffsetIndex.fetchUpperBoundOffset`: the offset of the first
    /// offset-index entry at or past `position + fetch_size`, if any (the
    /// upper bound of a read's aborted-transaction lookup).
    ///
    /// # Errors
    /// Index errors opening the offset index.
    pub fn fetch_upper_bound_offset(
        &self,
        position: u64,
        fetch_size: u64,
    ) -> Result<Option<Offset>, LogError> {
        let mut st = self.lock();
        let base = self.base_offset;
        let idx = st.offset_index(base).map_err(idx_err)?;
        let start = crate::index::OffsetPosition {
            offset: base,
            position: Position(position.min(u32::MAX as u64) as u32),
        };
        Ok(idx
            .fetch_upper_bound_offset(start, fetch_size.min(usize::MAX as u64) as usize)
            .map(|p| p.offset))
    }

    /// Summaries of every batch (tests, tools).
    ///
    /// # Errors
    /// I/O errors; a corrupt batch ends the list.
    pub fn batch_summaries(&self) -> Result<Vec<BatchSummary>, LogError> {
        let mut out = Vec::new();
        let file = self.file()?;
        let mut it = FileBatches::new(&file, 0, self.size(), SCAN_CHUNK);
        while let Some(item) = it.next_header() {
            match item {
                Ok(b) => out.push(b),
                Err(ScanError::Corrupt { .. }) => break,
                Err(ScanError::Io(e)) => return Err(LogError::io(self.log_path(), "read", e)),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;

/// The `.log` position of the last entry of the offset index at `path`
/// (0 for a missing or empty file).
fn last_indexed_position(path: &std::path::Path) -> std::io::Result<u64> {
    use crate::codec::index::{IndexSlot, OffsetSlot};
    use std::os::unix::fs::FileExt;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let entry = OffsetSlot::SIZE as u64;
    if len < entry {
        return Ok(0);
    }
    let mut last = [0u8; OffsetSlot::SIZE];
    file.read_exact_at(&mut last, (len / entry - 1) * entry)?;
    Ok(u64::try_from(OffsetSlot::decode(&last).position).unwrap_or(0))
}
