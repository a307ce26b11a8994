//! Loading a partition directory at open, in Kafka's `LogLoader` order (§9).
//!
//! 1. leader-epoch cache from `leader-epoch-checkpoint`;
//! 2. delete `*.deleted`; drop unfinished clean/split output (`.cleaned`,
//!    and `.swap` at or above the lowest `.cleaned` offset);
//! 3. complete interrupted swaps: delete the old files a `.swap` replaces,
//!    strip `.swap`;
//! 4. delete orphan index files; open every segment; a missing `.index` or
//!    an index failing the checks is rebuilt, a missing `.timeindex` becomes
//!    an empty one;
//! 5. after an unclean shutdown recover from the segment holding the
//!    recovery point to the end; a truncated segment drops all later ones.
//!    After a clean shutdown check that the active segment ends on a whole
//!    batch (from its last index entry) and recover it if not (Strata only);
//!    every cut and deletion is logged at WARN;
//! 6. log start / end, recovery point, epoch cache trimming, and the active
//!    segment's indexes resized to `segment.index.bytes`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::LogError;
use crate::format::{
    self, CLEANED_SUFFIX, DELETED_SUFFIX, KRAFT_CHECKPOINT_DELETED_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX,
};
use crate::fs::{FileSystem, SharedFs, StdFs};
use crate::handles::HandleCache;
use crate::leader_epoch::LeaderEpochCache;
use crate::producer_state::ProducerStateManager;
use crate::segment::scan::FileBatches;
use crate::segment::{floor_segment, segment_config};
use crate::segment::{EpochSink, IndexFileState, Segment, SegmentRecovery};
use crate::types::{Offset, TopicPartition};

/// What the log manager knows about a partition before loading it.
#[derive(Clone, Debug)]
pub struct LoadParams {
    /// From `recovery-point-offset-checkpoint` (0 when absent).
    pub recovery_point: Offset,
    /// From `log-start-offset-checkpoint` (0 when absent).
    pub log_start_offset: Offset,
    /// The log dir had a `.kafka_cleanshutdown` marker at startup.
    pub had_clean_shutdown: bool,
    /// The file-system seam every file mutation of the log goes through
    /// ([`StdFs`] by default).
    pub fs: SharedFs,
    /// The bound on open segment files the log's segments count against
    /// ([`HandleCache::shared_default`] by default).
    pub handles: Arc<HandleCache>,
}

impl Default for LoadParams {
    fn default() -> Self {
        LoadParams {
            recovery_point: Offset(0),
            log_start_offset: Offset(0),
            had_clean_shutdown: false,
            fs: StdFs::shared(),
            handles: HandleCache::shared_default(),
        }
    }
}

/// What loading did; observable through `Log::recovery_stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    pub had_clean_shutdown: bool,
    /// Segments opened.
    pub segments_loaded: usize,
    /// Base offsets of the segments re-read by recovery (§9 step 7).
    pub recovered_segments: Vec<Offset>,
    /// Base offsets whose indexes were rebuilt at load (missing `.index`,
    /// failed index checks).
    pub rebuilt_indexes: Vec<Offset>,
    /// Base offsets that got an empty `.timeindex` (it was missing).
    pub empty_time_indexes: Vec<Offset>,
    /// Base offsets whose missing `.txnindex` was rebuilt from the log
    /// (Strata creates one for every segment, so a missing one was lost).
    pub rebuilt_txn_indexes: Vec<Offset>,
    /// Bytes cut from torn or corrupt tails.
    pub truncated_bytes: u64,
    /// After a clean shutdown: bytes of the active segment read by the tail
    /// check (from its last offset-index entry to the end of the file).
    pub clean_tail_checked_bytes: u64,
    /// Segments deleted because an earlier one was truncated, or because the
    /// log end fell below the checkpointed log start.
    pub deleted_segments: Vec<Offset>,
    /// `.deleted`, `.cleaned` and aborted `.swap` files removed.
    pub deleted_temp_files: Vec<PathBuf>,
    /// Old files removed and `.swap` files renamed by completing a swap.
    pub completed_swap_files: Vec<PathBuf>,
    /// Index files without a `.log`, removed.
    pub orphan_indexes_deleted: Vec<PathBuf>,
}

/// A loaded partition, handed to `Log`.
pub(crate) struct Loaded {
    pub segments: Vec<Arc<Segment>>,
    pub epochs: LeaderEpochCache,
    pub log_end_offset: Offset,
    /// The checkpointed log start, at most the local start: the earliest
    /// offset across tiers if the log is tiered (see `Log::log_start_offset`).
    pub log_start_offset: Offset,
    /// The first offset on local disk (see `Log::local_log_start_offset`).
    pub local_log_start_offset: Offset,
    pub recovery_point: Offset,
    pub stats: RecoveryStats,
}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> LogError + 'a {
    move |e| LogError::io(path, op, e)
}

fn list_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, LogError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir, "list partition dir"))? {
        let entry = entry.map_err(io(dir, "list partition dir"))?;
        let ft = entry.file_type().map_err(io(dir, "stat"))?;
        if ft.is_file() {
            out.push((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

fn remove(fs: &dyn FileSystem, path: &Path) -> Result<(), LogError> {
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io(path, "delete", e)),
    }
}

/// Steps 4 and 5 of §9: temporary files and interrupted swaps.
fn clean_temp_files(
    fs: &dyn FileSystem,
    dir: &Path,
    stats: &mut RecoveryStats,
) -> Result<(), LogError> {
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    for (name, path) in list_files(dir)? {
        if name.ends_with(DELETED_SUFFIX) && !name.ends_with(KRAFT_CHECKPOINT_DELETED_SUFFIX) {
            remove(fs, &path)?;
            stats.deleted_temp_files.push(path);
        } else if name.ends_with(CLEANED_SUFFIX) {
            cleaned.push((format::offset_from_file_name(&name), path));
        } else if name.ends_with(SWAP_SUFFIX) {
            swaps.push((format::offset_from_file_name(&name), name, path));
        }
    }
    let min_cleaned = cleaned
        .iter()
        .filter_map(|(o, _)| *o)
        .min()
        .unwrap_or(Offset(i64::MAX));
    let mut valid_swaps = Vec::new();
    for (offset, name, path) in swaps {
        if offset.is_some_and(|o| o >= min_cleaned) {
            remove(fs, &path)?;
            stats.deleted_temp_files.push(path);
        } else {
            valid_swaps.push((offset, name, path));
        }
    }
    for (_, path) in cleaned {
        remove(fs, &path)?;
        stats.deleted_temp_files.push(path);
    }
    // The range of offsets the swap segments replace.
    let mut min_swap = Offset(i64::MAX);
    let mut max_swap_next = Offset(i64::MIN);
    for (offset, name, path) in &valid_swaps {
        let Some(base) = offset else { continue };
        if !name.ends_with(&format!("{LOG_SUFFIX}{SWAP_SUFFIX}")) {
            continue;
        }
        min_swap = min_swap.min(*base);
        max_swap_next = max_swap_next.max(scan_next_offset(path, *base)?);
    }
    if min_swap < max_swap_next {
        for (name, path) in list_files(dir)? {
            if name.ends_with(SWAP_SUFFIX) {
                continue;
            }
            if let Some(o) = format::offset_from_file_name(&name) {
                if o >= min_swap && o < max_swap_next {
                    remove(fs, &path)?;
                    stats.completed_swap_files.push(path);
                }
            }
        }
    }
    for (name, path) in list_files(dir)? {
        if let Some(stripped) = name.strip_suffix(SWAP_SUFFIX) {
            let target = dir.join(stripped);
            fs.rename(&path, &target)
                .map_err(io(&path, "rename swap file"))?;
            stats.completed_swap_files.push(target);
        }
    }
    Ok(())
}

/// `readNextOffset` of a `.log` file by a plain scan (no index touched, so
/// completing a swap never materialises index files).
fn scan_next_offset(path: &Path, base: Offset) -> Result<Offset, LogError> {
    let file = std::fs::File::open(path).map_err(io(path, "open swap segment"))?;
    let len = file.metadata().map_err(io(path, "stat"))?.len();
    let mut next = base;
    let mut it = FileBatches::new(&file, 0, len, 1 << 20);
    while let Some(Ok(b)) = it.next_header() {
        next = b.next_offset();
    }
    Ok(next)
}

/// Kafka's "Found invalid messages in log segment ... truncating" warning,
/// with the numbers as fields: what was cut and from where.
fn warn_truncated(partition: &str, seg: &Segment, r: &SegmentRecovery) {
    let kept = seg.size();
    tracing::warn!(
        partition = %partition,
        segment_base = seg.base_offset().0,
        truncated_at_offset = r.next_offset.0,
        truncated_at_position = kept,
        invalid_batch_position = r.invalid_at,
        bytes_dropped = r.truncated_bytes,
        "found an invalid or torn batch in log segment; truncating it to its last valid batch"
    );
}

/// The producer state a segment recovery needs: positioned at `base` (Kafka
/// `LogLoader.recoverSegment` builds a fresh manager and rebuilds it up to
/// the segment's base offset from the snapshots and the earlier segments).
/// The manager is kept between segments, so recovering consecutive
/// segments reads each one once. Unlike Kafka no snapshot is taken after
/// each recovered segment: the log's own rebuild then replays the last
/// segments and keeps the last five batches of each producer (retried
/// batches are still recognised), where a snapshot would keep one.
struct RecoveryProducers<'a> {
    fs: &'a SharedFs,
    dir: &'a Path,
    tp: &'a TopicPartition,
    expiration_ms: i64,
    log_start: Offset,
    now: i64,
    psm: Option<ProducerStateManager>,
}

impl RecoveryProducers<'_> {
    /// The manager positioned at `base`, `earlier` being the segments below it.
    fn at(
        &mut self,
        earlier: &[Arc<Segment>],
        base: Offset,
    ) -> Result<&mut ProducerStateManager, LogError> {
        if self.psm.is_none() {
            self.psm = Some(
                ProducerStateManager::new(self.fs, self.dir, self.tp.clone(), self.expiration_ms)
                    .map_err(|e| crate::segment::producers::state_error(self.tp, e))?,
            );
        }
        let psm = self.psm.as_mut().expect("set above");
        if psm.map_end_offset() != base {
            crate::segment::producers::rebuild(
                psm,
                earlier,
                self.log_start,
                base,
                false,
                self.now,
            )?;
        }
        Ok(psm)
    }
}

/// Load (and recover) a partition directory.
pub(crate) fn load(
    dir: &Path,
    tp: &TopicPartition,
    config: &LogConfig,
    params: &LoadParams,
    clock: &dyn Clock,
) -> Result<Loaded, LogError> {
    let fs = &params.fs;
    fs.create_dir_all(dir)
        .map_err(io(dir, "create partition dir"))?;
    let partition = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut stats = RecoveryStats {
        had_clean_shutdown: params.had_clean_shutdown,
        ..RecoveryStats::default()
    };
    let mut epochs = LeaderEpochCache::load(fs, dir).map_err(|e| LogError::Checkpoint {
        path: dir.join(format::LEADER_EPOCH_CHECKPOINT),
        source: Box::new(e),
    })?;
    clean_temp_files(fs.as_ref(), dir, &mut stats)?;

    // Step 6: orphan indexes, then open every segment.
    let files = list_files(dir)?;
    let logs: BTreeSet<Offset> = files
        .iter()
        .filter(|(n, _)| format::is_log_file(n))
        .filter_map(|(n, _)| format::offset_from_file_name(n))
        .collect();
    for (name, path) in &files {
        if format::is_index_file(name) {
            let orphan = format::offset_from_file_name(name).is_none_or(|o| !logs.contains(&o));
            if orphan {
                remove(fs.as_ref(), path)?;
                stats.orphan_indexes_deleted.push(path.clone());
            }
        }
    }
    let now = clock.now_ms();
    let mut producers = RecoveryProducers {
        fs,
        dir,
        tp,
        expiration_ms: config.producer_id_expiration_ms,
        log_start: logs
            .first()
            .map_or(params.log_start_offset, |b| params.log_start_offset.max(*b)),
        now,
        psm: None,
    };
    // After an unclean shutdown step 7 recovers these segments anyway.
    let unclean_from = (!params.had_clean_shutdown).then(|| {
        logs.range(..=params.recovery_point)
            .next_back()
            .or(logs.first())
            .copied()
            .unwrap_or(Offset(0))
    });
    let mut segments: Vec<Arc<Segment>> = Vec::with_capacity(logs.len());
    for base in &logs {
        let seg = Segment::open(
            fs,
            &params.handles,
            dir,
            *base,
            segment_config(config, false),
            now,
            "",
        )?;
        let (index, time_index) = seg.check_index_files();
        if index != IndexFileState::Valid || time_index == IndexFileState::Invalid {
            let psm = producers.at(&segments, *base)?;
            let r = seg.recover(Some(&mut epochs as &mut dyn EpochSink), Some(psm))?;
            stats.rebuilt_indexes.push(*base);
            stats.truncated_bytes += r.truncated_bytes;
            if r.truncated_bytes > 0 {
                warn_truncated(&partition, &seg, &r);
            }
        } else {
            if time_index == IndexFileState::Missing {
                seg.create_empty_time_index()?;
                stats.empty_time_indexes.push(*base);
            }
            if !seg.txn_index_file_exists() && unclean_from.is_none_or(|f| *base < f) {
                let psm = producers.at(&segments, *base)?;
                let written = seg.rebuild_txn_index(psm)?;
                tracing::info!(
                    partition = %partition,
                    segment_base = base.0,
                    aborted_transactions = written,
                    "transaction index missing; rebuilt it from the log"
                );
                stats.rebuilt_txn_indexes.push(*base);
            }
        }
        segments.push(Arc::new(seg));
    }
    stats.segments_loaded = segments.len();

    // Step 7: recovery after an unclean shutdown, from the recovery point.
    // After a clean one Kafka trusts the files; Strata still checks that the
    // active segment ends on a whole batch (a bounded scan from its last
    // index entry) and recovers it as the unclean path would if not, so a
    // torn tail cannot hide valid batches or make offsets be reused.
    let recover_from = if !params.had_clean_shutdown {
        floor_segment(&segments, params.recovery_point).or(Some(0))
    } else {
        match segments.last() {
            Some(active) if !stats.rebuilt_indexes.contains(&active.base_offset()) => {
                let tail = active.check_tail()?;
                stats.clean_tail_checked_bytes = tail.scanned_bytes;
                if tail.whole {
                    None
                } else {
                    tracing::warn!(
                        partition = %partition,
                        segment_base = active.base_offset().0,
                        segment_bytes = active.size(),
                        index_position = tail.from,
                        valid_end = tail.valid_end,
                        "active segment does not end on a whole batch after a clean shutdown; \
                         recovering it"
                    );
                    Some(segments.len() - 1)
                }
            }
            _ => None,
        }
    };
    if let Some(start) = recover_from {
        let mut i = start;
        while i < segments.len() {
            let seg = &segments[i];
            stats.recovered_segments.push(seg.base_offset());
            let psm = producers.at(&segments[..i], seg.base_offset())?;
            let recovered = seg.recover(Some(&mut epochs as &mut dyn EpochSink), Some(psm));
            if recovered.is_err() {
                // The manager's position is unknown now: rebuild it if needed.
                producers.psm = None;
            }
            let truncated = match recovered {
                Ok(r) => {
                    if r.truncated_bytes > 0 {
                        warn_truncated(&partition, seg, &r);
                    }
                    r.truncated_bytes
                }
                Err(LogError::Io { .. }) | Err(LogError::Index { .. }) => {
                    let size = seg.size();
                    tracing::warn!(
                        partition = %partition,
                        segment_base = seg.base_offset().0,
                        truncated_to_offset = seg.base_offset().0,
                        bytes_dropped = size,
                        "recovery of log segment failed; truncating the segment to empty"
                    );
                    seg.truncate_to(seg.base_offset(), now)?;
                    size
                }
                Err(e) => return Err(e),
            };
            if truncated > 0 {
                stats.truncated_bytes += truncated;
                let after = seg.base_offset();
                for later in segments.drain(i + 1..) {
                    tracing::warn!(
                        partition = %partition,
                        segment_base = later.base_offset().0,
                        truncated_segment_base = after.0,
                        bytes_dropped = later.size(),
                        "deleting log segment after a truncated segment"
                    );
                    stats.deleted_segments.push(later.base_offset());
                    later.delete_files()?;
                }
                break;
            }
            i += 1;
        }
    }
    let mut log_end = match segments.last() {
        Some(s) => s.read_next_offset()?,
        None => params.log_start_offset,
    };
    if !segments.is_empty() && log_end < params.log_start_offset {
        tracing::warn!(
            partition = %partition,
            log_start_offset = params.log_start_offset.0,
            log_end_offset = log_end.0,
            segments = segments.len(),
            bytes_dropped = segments.iter().map(|s| s.size()).sum::<u64>(),
            "log end offset is below the checkpointed log start offset; \
             deleting every segment and starting empty at the log start"
        );
        for s in segments.drain(..) {
            stats.deleted_segments.push(s.base_offset());
            s.delete_files()?;
        }
        epochs.clear();
        log_end = params.log_start_offset;
    }
    let had_segments = !segments.is_empty();
    if segments.is_empty() {
        segments.push(Arc::new(Segment::create(
            fs,
            &params.handles,
            dir,
            params.log_start_offset,
            segment_config(config, true),
            now,
            "",
        )?));
        log_end = params.log_start_offset;
    }
    let recovery_point = if params.had_clean_shutdown && had_segments {
        log_end
    } else {
        params.recovery_point.min(log_end)
    };
    let active = segments.last().expect("at least one segment");
    active.resize_indexes(config.segment_index_bytes.max(0) as usize)?;

    // Step 8: offsets and the epoch cache.
    epochs.truncate_from_end(log_end);
    let local_log_start = params.log_start_offset.max(segments[0].base_offset());
    // Kafka `LogLoader`: a tiered log keeps the checkpointed start, which
    // may lie below its local segments (the rest is in remote storage); any
    // other log starts at its first segment at the earliest. Logs are often
    // opened with a default config and given their topic's later, so the
    // checkpointed value is kept and `Log::log_start_offset` applies the rule.
    let log_start = params.log_start_offset.min(local_log_start);
    epochs.truncate_from_start(log_start);
    if epochs.is_dirty() {
        epochs.flush().map_err(|e| LogError::Checkpoint {
            path: epochs.path().to_path_buf(),
            source: Box::new(e),
        })?;
    }
    Ok(Loaded {
        segments,
        epochs,
        log_end_offset: log_end,
        log_start_offset: log_start,
        local_log_start_offset: local_log_start,
        recovery_point,
        stats,
    })
}
