//! The cleaner's statistics (Kafka `CleanerStats` and the summary
//! `LogCleaner.recordStats` writes to `log-cleaner.log`): one
//! [`CleaningRecord`] per finished cleaning, the last [`HISTORY_LIMIT`] of
//! the broker kept in memory and in each log dir's `cleaner-statistics.json`,
//! plus the cumulative [`CleanerTotals`] the Prometheus gauges read.
//!
//! The file survives restarts so that `strata log doctor` can tell, offline,
//! why compaction costs CPU. It is advisory: a missing or unreadable file
//! starts an empty history (a WARN), never a start-up failure.
//!
//! # Format
//!
//! `cleaner-statistics.json`, written atomically after every cleaning
//! through the log dir's [`crate::fs::FileSystem`] seam:
//!
//! ```text
//! { "version": 1, "records": [ CleaningRecord, ... ] }   oldest first,
//!                                                         at most HISTORY_LIMIT
//! ```
//!
//! # Locks
//! [`History`] is guarded by one mutex in the cleaner service, a leaf lock
//! taken after a cleaning; the file is written while it is held so that
//! two threads' writes of the same dir cannot reorder.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::format::CLEANER_STATISTICS;
use crate::fs::{FileSystem, OpenMode};

/// Cleanings remembered per broker (and per log dir file).
pub const HISTORY_LIMIT: usize = 100;

/// Version of `cleaner-statistics.json`.
const FILE_VERSION: u32 = 1;

/// Largest `cleaner-statistics.json` read back (a record is well under
/// 2 KiB; anything bigger is not ours).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// The cleaner settings in force during one cleaning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CleanerSettingsInForce {
    /// `log.cleaner.threads`.
    pub threads: usize,
    /// `log.cleaner.io.max.bytes.per.second`; `None` = unlimited (Kafka's
    /// default `Double.MAX_VALUE`).
    pub io_max_bytes_per_second: Option<f64>,
    /// `log.cleaner.dedupe.buffer.size` (all threads).
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.load.factor`.
    pub io_buffer_load_factor: f64,
    /// Keys one pass of this thread's map can hold (`slots * load factor`).
    pub map_capacity: u64,
    /// The log's `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// The log's `segment.bytes`.
    pub segment_bytes: i64,
    /// CPU cores the broker process may use.
    pub available_cores: usize,
}

/// One finished cleaning (Kafka `CleanerStats` plus what was cleaned and
/// the settings in force).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CleaningRecord {
    pub topic: String,
    pub partition: i32,
    /// The cleaner thread (`strata-log-cleaner-<thread>`).
    pub thread: usize,
    /// Wall-clock start and end, ms since the epoch.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Elapsed time on the monotonic clock.
    pub elapsed_ms: u64,
    /// The cleaner thread's CPU time during the cleaning
    /// (`CLOCK_THREAD_CPUTIME_ID`); `None` where it cannot be measured.
    pub cpu_ms: Option<u64>,
    /// Time spent building the offset map.
    pub map_elapsed_ms: u64,
    /// The dirty section cleaned: `[first_dirty_offset, end_offset)`.
    pub first_dirty_offset: i64,
    pub end_offset: i64,
    pub first_uncleanable_offset: i64,
    /// Dirty ratio and sizes when the cleaner chose the log.
    pub dirty_ratio: f64,
    pub dirty_bytes: u64,
    pub clean_bytes: u64,
    /// How far past `max.compaction.lag.ms` the oldest dirty record was.
    pub compaction_delay_ms: i64,
    pub map_messages_read: u64,
    pub map_bytes_read: u64,
    pub messages_read: u64,
    pub bytes_read: u64,
    pub messages_written: u64,
    pub bytes_written: u64,
    pub passes: usize,
    /// Segment groups rewritten (one `.cleaned` file each).
    pub groups: usize,
    /// Map entries / slots at the end of the last pass (0..1).
    pub buffer_utilization: f64,
    /// Segments below the first uncleanable offset when the cleaning began
    /// (each is read and rewritten).
    pub segments_cleaned: usize,
    /// Segments of the log before and after.
    pub segments_before: usize,
    pub segments_after: usize,
    /// The log's size before and after.
    pub size_before: u64,
    pub size_after: u64,
    /// Time slept by `log.cleaner.io.max.bytes.per.second`.
    pub throttle_ms: u64,
    pub config: CleanerSettingsInForce,
}

impl CleaningRecord {
    /// `topic-partition`, as Kafka names a log.
    pub fn log_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Bytes written per byte read, in percent (Kafka `cleaner-recopy-percent`).
    pub fn recopy_percent(&self) -> f64 {
        recopy_percent(self.bytes_read, self.bytes_written)
    }

    /// Share of the bytes read that did not survive.
    pub fn size_reduction_percent(&self) -> f64 {
        reduction_percent(self.bytes_read, self.bytes_written)
    }

    /// The summary Kafka's `LogCleaner.recordStats` logs, in its words.
    pub fn summary(&self) -> String {
        let secs = self.elapsed_ms as f64 / 1000.0;
        let map_secs = (self.map_elapsed_ms as f64 / 1000.0).min(secs);
        let clean_secs = secs - map_secs;
        let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
        let rate = |b: u64, s: f64| if s > 0.0 { mb(b) / s } else { 0.0 };
        let share = |s: f64| if secs > 0.0 { 100.0 * s / secs } else { 0.0 };
        format!(
            "Log cleaner thread {} cleaned log {} (dirty section = [{}, {}])\n\
             \t{:.1} MB of log processed in {:.1} seconds ({:.1} MB/sec).\n\
             \tIndexed {:.1} MB in {:.1} seconds ({:.1} Mb/sec, {:.1}% of total time)\n\
             \tBuffer utilization: {:.1}%\n\
             \tCleaned {:.1} MB in {:.1} seconds ({:.1} Mb/sec, {:.1}% of total time)\n\
             \tStart size: {:.1} MB ({} messages)\n\
             \tEnd size: {:.1} MB ({} messages)\n\
             \t{:.1}% size reduction ({:.1}% fewer messages)",
            self.thread,
            self.log_name(),
            self.first_dirty_offset,
            self.end_offset,
            mb(self.bytes_read + self.map_bytes_read),
            secs,
            rate(self.bytes_read + self.map_bytes_read, secs),
            mb(self.map_bytes_read),
            map_secs,
            rate(self.map_bytes_read, map_secs),
            share(map_secs),
            100.0 * self.buffer_utilization,
            mb(self.bytes_read),
            clean_secs,
            rate(self.bytes_read, clean_secs),
            share(clean_secs),
            mb(self.bytes_read),
            self.messages_read,
            mb(self.bytes_written),
            self.messages_written,
            self.size_reduction_percent(),
            reduction_percent(self.messages_read, self.messages_written),
        )
    }
}

/// `100 * written / read` (0 when nothing was read).
pub fn recopy_percent(read: u64, written: u64) -> f64 {
    if read == 0 {
        0.0
    } else {
        100.0 * written as f64 / read as f64
    }
}

fn reduction_percent(before: u64, after: u64) -> f64 {
    if before == 0 {
        0.0
    } else {
        100.0 * (1.0 - after as f64 / before as f64)
    }
}

/// Cumulative and latest figures of the cleaner, what Kafka's `LogCleaner`
/// and `LogCleanerManager` gauges report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CleanerTotals {
    /// Cleanings finished since start (not counting the loaded history).
    pub cleanings: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub messages_read: u64,
    pub messages_written: u64,
    /// CPU time of the cleaner threads spent cleaning.
    pub cpu_ms: u64,
    /// Time slept by the I/O throttle.
    pub throttle_ms: u64,
    /// Max over threads of their last cleaning's elapsed time
    /// (`max-clean-time-secs` × 1000).
    pub max_clean_time_ms: u64,
    /// Max over threads of their last cleaning's buffer utilization, 0..1
    /// (`max-buffer-utilization-percent` / 100).
    pub max_buffer_utilization: f64,
    /// Bytes written / read over every thread's last cleaning, percent
    /// (`cleaner-recopy-percent`).
    pub recopy_percent: f64,
    /// Max over threads of their last cleaning's compaction delay
    /// (`max-compaction-delay-secs` × 1000).
    pub max_compaction_delay_ms: i64,
    /// Dirty ratio of the filthiest log at the last choice, percent
    /// (`LogCleanerManager` `max-dirty-percent`).
    pub max_dirty_percent: f64,
    /// Partitions whose last cleaning failed and wait for a retry
    /// (`uncleanable-partitions-count`).
    pub uncleanable_partitions: usize,
    /// Cleaner threads that stopped while the cleaner runs (`DeadThreadCount`).
    pub dead_threads: usize,
    /// When the last cleaning ended, ms since the epoch.
    pub last_clean_end_ms: Option<i64>,
}

/// `cleaner-statistics.json` as stored.
#[derive(Serialize, Deserialize)]
struct HistoryFile {
    version: u32,
    records: Vec<CleaningRecord>,
}

/// Why `cleaner-statistics.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {size} bytes exceeds {MAX_FILE_BYTES}")]
    TooLarge { path: PathBuf, size: u64 },
    #[error("{path}: not a cleaner statistics file: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: unsupported version {version}")]
    Version { path: PathBuf, version: u32 },
}

/// The path of `cleaner-statistics.json` in `log_dir`.
pub fn statistics_path(log_dir: &Path) -> PathBuf {
    log_dir.join(CLEANER_STATISTICS)
}

/// Parse the bytes of `cleaner-statistics.json` (oldest first, at most
/// [`HISTORY_LIMIT`] kept).
///
/// # Errors
/// [`HistoryError::Parse`] or [`HistoryError::Version`].
pub fn parse_history(path: &Path, bytes: &[u8]) -> Result<Vec<CleaningRecord>, HistoryError> {
    let f: HistoryFile = serde_json::from_slice(bytes).map_err(|source| HistoryError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    if f.version != FILE_VERSION {
        return Err(HistoryError::Version {
            path: path.to_path_buf(),
            version: f.version,
        });
    }
    let mut r = f.records;
    let excess = r.len().saturating_sub(HISTORY_LIMIT);
    r.drain(..excess);
    Ok(r)
}

/// Read `log_dir`'s history; `Ok(empty)` when there is no file.
///
/// # Errors
/// [`HistoryError`] for an unreadable, oversized or corrupt file.
pub fn read_history(
    fs: &dyn FileSystem,
    log_dir: &Path,
) -> Result<Vec<CleaningRecord>, HistoryError> {
    let path = statistics_path(log_dir);
    let io = |source| HistoryError::Io {
        path: path.clone(),
        source,
    };
    let file = match fs.open(&path, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(HistoryError::TooLarge { path, size });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    (&file).read_to_end(&mut bytes).map_err(io)?;
    parse_history(&path, &bytes)
}

/// Write `records` as `log_dir`'s history, atomically.
///
/// # Errors
/// The I/O error of the write or rename.
pub fn write_history(
    fs: &dyn FileSystem,
    log_dir: &Path,
    records: &[CleaningRecord],
) -> std::io::Result<()> {
    let f = HistoryFile {
        version: FILE_VERSION,
        records: records.to_vec(),
    };
    let bytes = serde_json::to_vec_pretty(&f).map_err(std::io::Error::other)?;
    crate::fs::write_atomically(fs, &statistics_path(log_dir), &bytes)
}

/// CPU time of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// The in-memory history: per log dir (each bounded by [`HISTORY_LIMIT`]),
/// every thread's last cleaning, and the running totals.
#[derive(Debug, Default)]
pub(crate) struct History {
    per_dir: BTreeMap<PathBuf, VecDeque<CleaningRecord>>,
    last_by_thread: HashMap<usize, CleaningRecord>,
    totals: CleanerTotals,
}

impl History {
    /// Load `log_dir`'s file unless already loaded; a bad file is a WARN and
    /// an empty history.
    pub(crate) fn ensure_loaded(&mut self, fs: &dyn FileSystem, log_dir: &Path) {
        if self.per_dir.contains_key(log_dir) {
            return;
        }
        let records = read_history(fs, log_dir).unwrap_or_else(|e| {
            tracing::warn!(error = %crate::ErrorChain(&e), "ignoring the cleaner statistics; starting an empty history");
            Vec::new()
        });
        self.per_dir.insert(log_dir.to_path_buf(), records.into());
    }

    /// Add `r` (cleaned in `log_dir`) and return that dir's records to persist.
    pub(crate) fn push(&mut self, log_dir: &Path, r: CleaningRecord) -> Vec<CleaningRecord> {
        let t = &mut self.totals;
        t.cleanings += 1;
        t.bytes_read += r.bytes_read;
        t.bytes_written += r.bytes_written;
        t.messages_read += r.messages_read;
        t.messages_written += r.messages_written;
        t.cpu_ms += r.cpu_ms.unwrap_or(0);
        t.throttle_ms += r.throttle_ms;
        t.last_clean_end_ms = Some(t.last_clean_end_ms.unwrap_or(i64::MIN).max(r.end_ms));
        self.last_by_thread.insert(r.thread, r.clone());
        let q = self.per_dir.entry(log_dir.to_path_buf()).or_default();
        q.push_back(r);
        while q.len() > HISTORY_LIMIT {
            q.pop_front();
        }
        q.iter().cloned().collect()
    }

    /// Record the dirty ratio of the log chosen last (`max-dirty-percent`).
    pub(crate) fn set_max_dirty_ratio(&mut self, ratio: f64) {
        self.totals.max_dirty_percent = 100.0 * ratio;
    }

    /// The broker's last [`HISTORY_LIMIT`] cleanings, oldest first.
    pub(crate) fn records(&self) -> Vec<CleaningRecord> {
        let mut all: Vec<CleaningRecord> = self.per_dir.values().flatten().cloned().collect();
        all.sort_by_key(|r| (r.end_ms, r.start_ms));
        let excess = all.len().saturating_sub(HISTORY_LIMIT);
        all.drain(..excess);
        all
    }

    /// The totals with the per-thread "last cleaning" gauges filled in.
    pub(crate) fn totals(&self) -> CleanerTotals {
        let mut t = self.totals.clone();
        let last = self.last_by_thread.values();
        t.max_clean_time_ms = last.clone().map(|r| r.elapsed_ms).max().unwrap_or(0);
        t.max_buffer_utilization = last
            .clone()
            .map(|r| r.buffer_utilization)
            .fold(0.0, f64::max);
        t.max_compaction_delay_ms = last
            .clone()
            .map(|r| r.compaction_delay_ms.max(0))
            .max()
            .unwrap_or(0);
        let (read, written) =
            last.fold((0, 0), |(a, b), r| (a + r.bytes_read, b + r.bytes_written));
        t.recopy_percent = recopy_percent(read, written);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;

    pub(crate) fn record(thread: usize, end_ms: i64) -> CleaningRecord {
        CleaningRecord {
            topic: "t".into(),
            partition: 0,
            thread,
            start_ms: end_ms - 2_000,
            end_ms,
            elapsed_ms: 2_000,
            cpu_ms: Some(1_500),
            map_elapsed_ms: 500,
            first_dirty_offset: 0,
            end_offset: 100,
            first_uncleanable_offset: 100,
            dirty_ratio: 0.1,
            dirty_bytes: 1 << 20,
            clean_bytes: 9 << 20,
            compaction_delay_ms: 0,
            map_messages_read: 100,
            map_bytes_read: 1 << 20,
            messages_read: 1_000,
            bytes_read: 10 << 20,
            messages_written: 900,
            bytes_written: 9 << 20,
            passes: 1,
            groups: 2,
            buffer_utilization: 0.25,
            segments_cleaned: 10,
            segments_before: 11,
            segments_after: 3,
            size_before: 11 << 20,
            size_after: 10 << 20,
            throttle_ms: 0,
            config: CleanerSettingsInForce {
                threads: 1,
                io_max_bytes_per_second: None,
                dedupe_buffer_size: 128 << 20,
                io_buffer_load_factor: 0.9,
                map_capacity: 1_000,
                min_cleanable_dirty_ratio: 0.05,
                segment_bytes: 1 << 20,
                available_cores: 2,
            },
        }
    }

    #[test]
    fn recopy_and_reduction_percentages() {
        let r = record(0, 10_000);
        assert!((r.recopy_percent() - 90.0).abs() < 1e-9);
        assert!((r.size_reduction_percent() - 10.0).abs() < 1e-9);
        assert_eq!(recopy_percent(0, 5), 0.0);
    }

    #[test]
    fn the_summary_reads_like_kafkas() {
        let s = record(3, 10_000).summary();
        assert!(s.starts_with("Log cleaner thread 3 cleaned log t-0 (dirty section = [0, 100])"));
        assert!(
            s.contains("11.0 MB of log processed in 2.0 seconds (5.5 MB/sec)."),
            "{s}"
        );
        assert!(s.contains("Buffer utilization: 25.0%"), "{s}");
        assert!(s.contains("Start size: 10.0 MB (1000 messages)"), "{s}");
        assert!(s.contains("End size: 9.0 MB (900 messages)"), "{s}");
        assert!(
            s.contains("10.0% size reduction (10.0% fewer messages)"),
            "{s}"
        );
    }

    #[test]
    fn history_is_bounded_and_totals_use_each_threads_last_cleaning() {
        let mut h = History::default();
        let dir = Path::new("/d");
        for i in 0..(HISTORY_LIMIT as i64 + 5) {
            h.push(dir, record(0, i * 10));
        }
        let mut big = record(1, 5_000_000);
        big.elapsed_ms = 9_000;
        big.buffer_utilization = 0.8;
        big.bytes_written = 10 << 20;
        let persisted = h.push(dir, big);
        assert_eq!(persisted.len(), HISTORY_LIMIT);
        assert_eq!(persisted.last().map(|r| r.end_ms), Some(5_000_000));
        let all = h.records();
        assert_eq!(all.len(), HISTORY_LIMIT);
        assert!(all.windows(2).all(|w| w[0].end_ms <= w[1].end_ms));
        let t = h.totals();
        assert_eq!(t.cleanings, HISTORY_LIMIT as u64 + 6);
        assert_eq!(t.max_clean_time_ms, 9_000);
        assert!((t.max_buffer_utilization - 0.8).abs() < 1e-9);
        // Thread 0's last: 9 of 10 MiB; thread 1's: 10 of 10.
        assert!(
            (t.recopy_percent - 95.0).abs() < 1e-9,
            "{}",
            t.recopy_percent
        );
        assert_eq!(t.cpu_ms, 1_500 * (HISTORY_LIMIT as u64 + 6));
    }

    #[test]
    fn the_file_round_trips_and_a_corrupt_one_starts_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = StdFs::shared();
        let recs = vec![record(0, 1), record(1, 2)];
        write_history(fs.as_ref(), tmp.path(), &recs).unwrap();
        assert_eq!(read_history(fs.as_ref(), tmp.path()).unwrap(), recs);
        let mut h = History::default();
        h.ensure_loaded(fs.as_ref(), tmp.path());
        assert_eq!(h.records(), recs);

        std::fs::write(statistics_path(tmp.path()), b"{not json").unwrap();
        assert!(matches!(
            read_history(fs.as_ref(), tmp.path()),
            Err(HistoryError::Parse { .. })
        ));
        let mut h = History::default();
        h.ensure_loaded(fs.as_ref(), tmp.path());
        assert!(h.records().is_empty());
        std::fs::write(
            statistics_path(tmp.path()),
            br#"{"version": 7, "records": []}"#,
        )
        .unwrap();
        assert!(matches!(
            read_history(fs.as_ref(), tmp.path()),
            Err(HistoryError::Version { version: 7, .. })
        ));
    }

    #[test]
    fn a_missing_file_is_an_empty_history() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(read_history(StdFs::shared().as_ref(), tmp.path())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn thread_cpu_time_grows_with_work() {
        let a = thread_cpu_ns().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = thread_cpu_ns().unwrap();
        assert!(b > a);
    }
}
