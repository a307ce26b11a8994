//! One cleaner worker (Kafka `Cleaner`): build the offset map over the
//! dirty section, then recopy the log below its end group by group into
//! `.cleaned` segments and swap them in (§11.4, §11.7, §11.8).
//!
//! When the dirty keys do not fit the map, a pass cleans up to where the map
//! filled and the next pass continues from there (up to
//! `strata.log.cleaner.max.passes` per cleaning); the checkpoint is written
//! after every pass, so a crash loses at most one pass of work.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::filter::{filter_chunk, FilterContext, FilterFault};
use super::offset_map::OffsetMap;
use super::policy::{cleanable, group_segments_by_size, CompactionSettings, SegmentFacts};
use super::snapshot::cleaner_snapshot;
use super::superseded::Superseded;
use super::throttle::Throttler;
use super::txn::{collect_aborted, CleanedTxnMetadata};
use super::{AbortReason, CleanerConfig, CleanerError};
use crate::checkpoint::CleanerCheckpoints;
use crate::clock::SharedClock;
use crate::error::LogError;
use crate::format::{self, CLEANED_SUFFIX};
use crate::fs::{FileSystem, OpenMode};
use crate::index::TransactionIndex;
use crate::log::Log;
use crate::producer_state::LastRecord;
use crate::segment::segment_config;
use crate::segment::Segment;
use crate::types::{Offset, ProducerId, TopicPartition};

/// Counters of one cleaning (Kafka `CleanerStats`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CleanStats {
    pub passes: usize,
    pub map_messages_read: u64,
    pub map_bytes_read: u64,
    pub messages_read: u64,
    pub bytes_read: u64,
    pub messages_written: u64,
    pub bytes_written: u64,
    pub invalid_records: u64,
    pub groups: usize,
    /// Map entries / slots at the end of the last pass.
    pub map_utilization: f64,
    /// Time spent building the offset map (all passes), for the summary's
    /// "Indexed ... in N seconds" (monotonic clock).
    pub map_elapsed_ns: u64,
}

/// What one cleaning did.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanOutcome {
    pub tp: TopicPartition,
    pub first_dirty_offset: Offset,
    /// The new first dirty offset (written to the checkpoint).
    pub end_offset: Offset,
    pub first_uncleanable_offset: Offset,
    pub size_before: u64,
    pub size_after: u64,
    pub stats: CleanStats,
}

impl CleanOutcome {
    pub fn bytes_reclaimed(&self) -> u64 {
        self.size_before.saturating_sub(self.size_after)
    }
}

/// One cleaner thread's worker: its offset map, read buffer and throttler.
pub struct Cleaner {
    clock: SharedClock,
    map: OffsetMap,
    /// Keys this pass may map.
    max_desired: usize,
    /// `slots * load factor` of the whole map.
    configured_max_desired: usize,
    load_factor: f64,
    io_buffer: usize,
    max_buffer: usize,
    max_passes: usize,
    /// The current pass's superseded offsets (map phase → filter).
    superseded: Superseded,
    buf: Vec<u8>,
    out: Vec<u8>,
    throttler: Throttler,
    stop: Arc<AtomicBool>,
    /// The cleaner thread this worker runs on (for statistics).
    thread: usize,
}

impl std::fmt::Debug for Cleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleaner").field("map", &self.map).finish()
    }
}

mod map;

pub(super) fn read_chunk(
    file: &std::fs::File,
    pos: u64,
    end: u64,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    let want = (end - pos).min(buf.len() as u64) as usize;
    file.read_exact_at(&mut buf[..want], pos)?;
    Ok(want)
}

impl Cleaner {
    /// A worker with a map of `cfg.map_memory_per_thread()` bytes.
    ///
    /// # Errors
    /// [`CleanerError::MapTooSmall`] when `slots * load factor <= 1`.
    pub fn new(cfg: &CleanerConfig, clock: SharedClock) -> Result<Cleaner, CleanerError> {
        let map = OffsetMap::new(cfg.map_memory_per_thread());
        let desired = map.slots() as f64 * cfg.io_buffer_load_factor;
        if desired <= 1.0 {
            return Err(CleanerError::MapTooSmall {
                slots: map.slots(),
                load_factor: cfg.io_buffer_load_factor,
            });
        }
        let io_buffer = cfg.io_buffer_per_thread();
        Ok(Cleaner {
            throttler: Throttler::new(
                cfg.io_max_bytes_per_second,
                clock.clone(),
                Throttler::thread_sleeper(),
            ),
            clock,
            max_desired: desired as usize,
            configured_max_desired: desired as usize,
            load_factor: cfg.io_buffer_load_factor,
            map,
            io_buffer,
            max_buffer: cfg.max_message_bytes.max(io_buffer),
            max_passes: cfg.max_passes.max(1),
            superseded: Superseded::default(),
            buf: vec![0; io_buffer],
            out: Vec::with_capacity(io_buffer),
            stop: Arc::new(AtomicBool::new(false)),
            thread: 0,
        })
    }

    /// Name the cleaner thread this worker runs on (`strata-log-cleaner-<i>`).
    pub fn with_thread(mut self, thread: usize) -> Cleaner {
        self.thread = thread;
        self
    }

    /// The worker's monotonic clock, ns.
    pub fn clock_ns(&self) -> u64 {
        self.clock.monotonic_ns()
    }

    /// The cleaner thread this worker runs on.
    pub fn thread(&self) -> usize {
        self.thread
    }

    /// Replace the throttler (tests inject a mock sleeper).
    pub fn with_throttler(mut self, throttler: Throttler) -> Cleaner {
        self.throttler = throttler;
        self
    }

    /// Share a stop flag: when set, the cleaning in progress aborts.
    pub fn with_stop_flag(mut self, stop: Arc<AtomicBool>) -> Cleaner {
        self.stop = stop;
        self
    }

    /// The worker's dedupe map (memory and utilisation for metrics).
    pub fn offset_map(&self) -> &OffsetMap {
        &self.map
    }

    /// Keys one pass can map (`slots * load factor`).
    pub fn map_capacity(&self) -> usize {
        self.configured_max_desired
    }

    pub fn throttler(&self) -> &Throttler {
        &self.throttler
    }

    fn check_done(&self, tp: &TopicPartition) -> Result<(), CleanerError> {
        if self.stop.load(Ordering::Acquire) {
            return Err(CleanerError::Aborted {
                tp: tp.clone(),
                reason: AbortReason::Shutdown,
            });
        }
        Ok(())
    }

    /// Clean `log` from its checkpoint (or log start) up to its first
    /// uncleanable offset, whatever its dirty ratio, in as many passes as
    /// the map needs (bounded by `max_passes`).
    ///
    /// # Errors
    /// [`CleanerError`]; nothing is lost on error (unfinished `.cleaned`
    /// files are removed; the checkpoint only moves after a full pass).
    pub fn clean(&mut self, log: &Log) -> Result<CleanOutcome, CleanerError> {
        let tp = log.topic_partition().clone();
        let ckpt = CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir());
        let checkpoint = ckpt.get(&tp)?;
        let snap = cleaner_snapshot(log, checkpoint).map_err(|e| CleanerError::log(&tp, e))?;
        let settings = CompactionSettings::of(&log.config());
        let c = cleanable(&snap, &settings, self.clock.now_ms());
        if c.checkpoint_reset {
            ckpt.update(&tp, Some(c.first_dirty_offset))?;
        }
        self.clean_range(log, c.first_dirty_offset, c.first_uncleanable_offset)
    }

    /// Clean `[first_dirty, first_uncleanable)` of `log` (the caller chose
    /// the range with [`super::cleanable`]).
    ///
    /// # Errors
    /// As [`Self::clean`].
    pub fn clean_range(
        &mut self,
        log: &Log,
        first_dirty: Offset,
        first_uncleanable: Offset,
    ) -> Result<CleanOutcome, CleanerError> {
        let tp = log.topic_partition().clone();
        let ckpt = CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir());
        let size_before = log.size_in_bytes();
        let mut stats = CleanStats::default();
        let mut dirty = first_dirty;
        while dirty < first_uncleanable && stats.passes < self.max_passes {
            let end = self.clean_pass(log, dirty, first_uncleanable, &mut stats)?;
            ckpt.update(&tp, Some(end))?;
            stats.passes += 1;
            if end <= dirty {
                break;
            }
            dirty = end;
        }
        Ok(CleanOutcome {
            tp,
            first_dirty_offset: first_dirty,
            end_offset: dirty,
            first_uncleanable_offset: first_uncleanable,
            size_before,
            size_after: log.size_in_bytes(),
            stats,
        })
    }

    /// One pass (Kafka `doClean`): returns the new first dirty offset.
    fn clean_pass(
        &mut self,
        log: &Log,
        first_dirty: Offset,
        upper: Offset,
        stats: &mut CleanStats,
    ) -> Result<Offset, CleanerError> {
        let tp = log.topic_partition().clone();
        let lerr = |e: LogError| CleanerError::log(&tp, e);
        let cfg = log.config();
        let now = self.clock.now_ms();
        let dir = log.dir();
        let segs = log.snapshot();
        let txn_paths: Vec<(Offset, PathBuf)> = segs
            .iter()
            .map(|s| {
                (
                    s.base_offset(),
                    format::txn_index_file(&dir, s.base_offset(), ""),
                )
            })
            .collect();
        let legacy_horizon = match segs.iter().rev().find(|s| s.base_offset() < first_dirty) {
            Some(s) => s.last_modified_ms().map_err(lerr)? - cfg.delete_retention_ms,
            None => 0,
        };
        // The producers' last batches, from the log's producer state (Kafka
        // `lastRecordsOfActiveProducers`), and a bound on the records of the
        // dirty section (each has its own offset) for the map slots.
        let producers = log.last_records_of_active_producers().map_err(lerr)?;
        let dirty_records = u64::try_from(upper.0 - first_dirty.0).unwrap_or(0);
        let map_started = self.clock.monotonic_ns();
        self.build_offset_map(
            &tp,
            log.fs(),
            &segs,
            first_dirty,
            upper,
            &txn_paths,
            dirty_records,
            stats,
        )?;
        stats.map_elapsed_ns += self.clock.monotonic_ns().saturating_sub(map_started);
        let end = self.map.latest_offset().plus(1);
        stats.map_utilization = self.map.utilization();
        let to_clean: Vec<Arc<Segment>> = segs[..segs.len() - 1]
            .iter()
            .filter(|s| s.base_offset() < end)
            .cloned()
            .collect();
        let mut facts = Vec::with_capacity(to_clean.len());
        for s in &to_clean {
            let (oe, _, te, _) = s.index_fill().map_err(lerr)?;
            facts.push(SegmentFacts {
                base_offset: s.base_offset(),
                size: s.size(),
                largest_timestamp: crate::types::Timestamp::NONE,
                first_batch_timestamp: crate::types::Timestamp::NONE,
                offset_index_entries: oe,
                time_index_entries: te,
            });
        }
        let groups = group_segments_by_size(
            &facts,
            cfg.segment_bytes.max(0) as u64,
            cfg.segment_index_bytes.max(0) as u64,
            upper,
        );
        let mut txn = CleanedTxnMetadata::new();
        let mut pass = PassContext {
            log,
            cfg: &cfg,
            dir: &dir,
            txn_paths: &txn_paths,
            producers: &producers,
            upper,
            now,
            legacy_horizon,
        };
        for g in groups {
            self.clean_group(&mut pass, &to_clean[g], &mut txn, stats)?;
            stats.groups += 1;
        }
        Ok(end)
    }

    /// Kafka `cleanSegments`: clean `group` into one `.cleaned` segment and
    /// swap it in.
    fn clean_group(
        &mut self,
        pass: &mut PassContext<'_>,
        group: &[Arc<Segment>],
        txn: &mut CleanedTxnMetadata,
        stats: &mut CleanStats,
    ) -> Result<(), CleanerError> {
        let tp = pass.log.topic_partition().clone();
        let lerr = |e: LogError| CleanerError::log(&tp, e);
        let base = group[0].base_offset();
        let fs = pass.log.fs();
        delete_stale_cleaned(fs.as_ref(), pass.dir, base).map_err(lerr)?;
        let cleaned = Arc::new(
            Segment::create(
                fs,
                pass.log.handles(),
                pass.dir,
                base,
                cleaned_segment_config(pass.cfg, group, self.io_buffer),
                pass.now,
                CLEANED_SUFFIX,
            )
            .map_err(lerr)?,
        );
        let r = self.fill_cleaned(pass, group, &cleaned, txn, stats);
        let swapped = match r {
            Ok(()) => pass.log.replace_with_cleaned(&cleaned, group).map_err(lerr),
            Err(e) => Err(e),
        };
        match swapped {
            Ok(true) => Ok(()),
            Ok(false) => {
                let _ = cleaned.delete_files();
                Err(CleanerError::Aborted {
                    tp,
                    reason: AbortReason::LogChanged,
                })
            }
            Err(e) => {
                // Only files still named `.cleaned` are ours to remove; after
                // the first swap rename the loader owns recovery.
                if cleaned
                    .log_path()
                    .to_string_lossy()
                    .ends_with(CLEANED_SUFFIX)
                {
                    let _ = cleaned.delete_files();
                }
                Err(e)
            }
        }
    }

    fn fill_cleaned(
        &mut self,
        pass: &mut PassContext<'_>,
        group: &[Arc<Segment>],
        cleaned: &Segment,
        txn: &mut CleanedTxnMetadata,
        stats: &mut CleanStats,
    ) -> Result<(), CleanerError> {
        let tp = pass.log.topic_partition().clone();
        let lerr = |e: LogError| CleanerError::log(&tp, e);
        let base = cleaned.base_offset();
        let txn_path = format::txn_index_file(pass.dir, base, CLEANED_SUFFIX);
        let mut txn_index =
            TransactionIndex::open(pass.log.fs(), &txn_path, base).map_err(|source| {
                CleanerError::TxnIndex {
                    path: txn_path.clone(),
                    source: Box::new(source),
                }
            })?;
        for (i, src) in group.iter().enumerate() {
            let upper = match group.get(i + 1) {
                Some(next) => next.base_offset(),
                None => src.read_next_offset().map_err(lerr)?,
            };
            txn.add_aborted(aborted(
                pass.log.fs(),
                pass.txn_paths,
                src.base_offset(),
                upper,
            )?);
            let retain_legacy = src.last_modified_ms().map_err(lerr)? > pass.legacy_horizon;
            self.clean_into(
                pass,
                src,
                cleaned,
                txn,
                &mut txn_index,
                retain_legacy,
                stats,
            )?;
        }
        cleaned.on_become_inactive().map_err(lerr)?;
        cleaned.flush().map_err(lerr)?;
        txn_index.flush().map_err(|source| CleanerError::TxnIndex {
            path: txn_path.clone(),
            source: Box::new(source),
        })?;
        let last = group.last().expect("groups are not empty");
        let modified = std::fs::metadata(last.log_path())
            .and_then(|m| m.modified())
            .map_err(|e| lerr(LogError::io(last.log_path(), "stat segment", e)))?;
        let (oi, ti) = cleaned.index_paths();
        for p in [cleaned.log_path(), oi, ti] {
            let f = pass
                .log
                .fs()
                .open(&p, OpenMode::ReadWrite)
                .map_err(|e| lerr(LogError::io(&p, "open cleaned file", e)))?;
            f.set_modified(modified)
                .map_err(|e| lerr(LogError::io(&p, "set mtime", e)))?;
        }
        Ok(())
    }

    /// Kafka `cleanInto`: filter one source segment chunk by chunk.
    #[allow(clippy::too_many_arguments)]
    fn clean_into(
        &mut self,
        pass: &mut PassContext<'_>,
        src: &Segment,
        cleaned: &Segment,
        txn: &mut CleanedTxnMetadata,
        txn_index: &mut TransactionIndex,
        retain_legacy: bool,
        stats: &mut CleanStats,
    ) -> Result<(), CleanerError> {
        let tp = pass.log.topic_partition().clone();
        let lerr = |e: LogError| CleanerError::log(&tp, e);
        let size = src.size();
        let mut pos = 0u64;
        while pos < size {
            self.check_done(&tp)?;
            let file = src.file().map_err(lerr)?;
            let n = read_chunk(&file, pos, size, &mut self.buf)
                .map_err(|e| lerr(LogError::io(src.log_path(), "read segment", e)))?;
            self.throttler.maybe_throttle(n as u64);
            self.out.clear();
            let mut ctx = FilterContext {
                map: &mut self.map,
                txn,
                active_producers: pass.producers,
                upper_bound: pass.upper,
                now_ms: pass.now,
                delete_retention_ms: pass.cfg.delete_retention_ms,
                retain_legacy_deletes: retain_legacy,
                superseded: Some(&self.superseded),
            };
            let r = filter_chunk(&mut ctx, &self.buf[..n], &mut self.out).map_err(|f| match f {
                FilterFault::Batch { position, source } => CleanerError::CorruptBatch {
                    path: src.log_path(),
                    position: pos + position as u64,
                    source: Box::new(source),
                },
                FilterFault::Rebuild { position, source } => CleanerError::Rebuild {
                    path: src.log_path(),
                    position: pos + position as u64,
                    source,
                },
            })?;
            for a in txn.take_retained_aborts() {
                txn_index
                    .append(&a)
                    .map_err(|source| CleanerError::TxnIndex {
                        path: txn_index.path().to_path_buf(),
                        source: Box::new(source),
                    })?;
            }
            stats.messages_read += r.messages_read;
            stats.bytes_read += r.bytes_read as u64;
            stats.messages_written += r.messages_retained;
            stats.bytes_written += self.out.len() as u64;
            stats.invalid_records += r.invalid_records;
            if !self.out.is_empty() {
                cleaned
                    .append(
                        r.max_offset,
                        r.max_timestamp,
                        r.shallow_offset_of_max_timestamp,
                        &self.out,
                    )
                    .map_err(lerr)?;
                self.throttler.maybe_throttle(self.out.len() as u64);
            }
            if r.bytes_read == 0 {
                if !self.grow(&tp, src, pos, size)? {
                    break;
                }
                continue;
            }
            pos += r.bytes_read as u64;
        }
        self.restore_buffer();
        Ok(())
    }
}

/// What every group of one pass shares.
struct PassContext<'a> {
    log: &'a Log,
    cfg: &'a crate::config::LogConfig,
    dir: &'a Path,
    txn_paths: &'a [(Offset, PathBuf)],
    producers: &'a HashMap<ProducerId, LastRecord>,
    upper: Offset,
    now: i64,
    legacy_horizon: i64,
}

pub(super) fn aborted(
    fs: &crate::fs::SharedFs,
    txn_paths: &[(Offset, PathBuf)],
    start: Offset,
    upper: Offset,
) -> Result<Vec<crate::index::AbortedTxn>, CleanerError> {
    let segs: Vec<(Offset, &Path)> = txn_paths.iter().map(|(b, p)| (*b, p.as_path())).collect();
    collect_aborted(fs, &segs, start, upper).map_err(|source| CleanerError::TxnIndex {
        path: txn_paths
            .first()
            .map(|(_, p)| p.clone())
            .unwrap_or_default(),
        source: Box::new(source),
    })
}

/// The settings of the `.cleaned` segment of `group`: the log's, with the
/// index files sized for the entries the cleaning can write instead of
/// `segment.index.bytes` (memory-mapped, sparse index files of 10 MiB cost
/// a zero-filled readahead window on their first write; the files are
/// trimmed to their entries when the segment is sealed either way).
///
/// `Segment::append` adds at most one index entry per call, and the
/// cleaner appends once per read chunk. A chunk ends at the first batch
/// that does not fit the read buffer (at least `io_buffer` bytes), which
/// the next chunk consumes, so two consecutive chunks consume more than
/// `io_buffer` bytes: a segment of `n` bytes takes at most
/// `2 n / io_buffer + 2` chunks.
fn cleaned_segment_config(
    cfg: &crate::config::LogConfig,
    group: &[Arc<Segment>],
    io_buffer: usize,
) -> crate::segment::SegmentConfig {
    /// The larger entry (time index: 8-byte timestamp + 4-byte offset).
    const ENTRY: u64 = 12;
    const PAGE: u64 = 4096;
    let mut seg = segment_config(cfg, false);
    let chunk = io_buffer.max(1) as u64;
    let appends: u64 = group.iter().map(|s| 2 * s.size() / chunk + 2).sum();
    let bytes = (appends + 1).saturating_mul(ENTRY).div_ceil(PAGE) * PAGE;
    seg.max_index_size = seg
        .max_index_size
        .min(usize::try_from(bytes).unwrap_or(usize::MAX));
    seg
}

/// Remove `<base>.{log,index,timeindex,txnindex}.cleaned` left by an
/// earlier attempt.
fn delete_stale_cleaned(fs: &dyn FileSystem, dir: &Path, base: Offset) -> Result<(), LogError> {
    for p in [
        format::log_file(dir, base, CLEANED_SUFFIX),
        format::index_file(dir, base, CLEANED_SUFFIX),
        format::time_index_file(dir, base, CLEANED_SUFFIX),
        format::txn_index_file(dir, base, CLEANED_SUFFIX),
    ] {
        match fs.remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&p, "delete stale cleaned file", e)),
        }
    }
    Ok(())
}
