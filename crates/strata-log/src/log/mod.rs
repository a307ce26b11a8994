//! One partition's log (Kafka `UnifiedLog` + `LocalLog`): an ordered list of
//! segments, the last of which (the active segment) takes appends.
//!
//! # Locks (taken in this order; none is held across another log's)
//!
//! 1. `append` (`Mutex<AppendState>`): serialises every writer — appends,
//!    rolls, truncation, log-start moves, segment deletion, close. Held for
//!    the write of one append (page-cache speed), never by readers.
//! 2. `flush` (`Mutex<()>`): one fsync at a time; durable appends queue here
//!    and find their offset already covered by the fsync in front of them
//!    (group commit). Taken after `append` by roll, alone by `flush_up_to`.
//! 3. `segments` (`RwLock<Arc<Vec<Arc<Segment>>>>`): the segment list.
//!    Readers clone the `Arc` (a snapshot) and drop the lock at once;
//!    writers swap in a new vector while holding `append`.
//! 4. `epochs` (`Mutex<LeaderEpochCache>`) and `config` (`RwLock`): leaves.
//!
//! Offsets that readers need are atomics published after the data:
//! the segment's size first, then `log_end_offset` (Release/Acquire), so a
//! reader that sees an offset also sees its bytes.

mod append;
mod compaction;
mod coordinator_append;
mod producers;
mod read;
mod replica;
mod retention;
mod roll;
mod truncate;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::clock::SharedClock;
use crate::config::LogConfig;
use crate::error::LogError;
use crate::fs::SharedFs;
use crate::handles::HandleCache;
use crate::leader_epoch::LeaderEpochCache;
use crate::segment::{EpochSink, Segment};
use crate::types::{LeaderEpoch, Offset, Timestamp, TopicPartition};

pub use crate::loader::{LoadParams, RecoveryStats};
pub use read::{FetchData, FileSlice, ReadBound, TimestampAndOffset};

/// What one append did (Kafka `LogAppendInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: Offset,
    pub last_offset: Offset,
    pub max_timestamp: Timestamp,
    pub offset_of_max_timestamp: Offset,
    /// `Some(now)` when the topic uses LogAppendTime.
    pub log_append_time: Option<Timestamp>,
    pub log_start_offset: Offset,
    pub records_count: i64,
    pub valid_bytes: usize,
    /// A retried batch of an idempotent producer: nothing was written and
    /// the offsets are those of the original append (Kafka answers NONE
    /// with the original base offset).
    pub duplicate: bool,
}

/// One segment, as DescribeLogDirs and the doctor tool show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    pub base_offset: Offset,
    pub size: u64,
    pub next_offset: Offset,
    pub max_timestamp: Timestamp,
    pub log_path: PathBuf,
    pub index_path: PathBuf,
    pub time_index_path: PathBuf,
    pub offset_index_entries: usize,
    pub offset_index_max_entries: usize,
    pub time_index_entries: usize,
    pub time_index_max_entries: usize,
    pub created_ms: i64,
    pub roll_jitter_ms: i64,
}

/// Online/offline state of one log directory, shared by its logs (Kafka
/// `LogDirFailureChannel`): the first I/O error latches it offline.
#[derive(Debug)]
pub struct DirHealth {
    dir: PathBuf,
    offline: AtomicBool,
}

impl DirHealth {
    pub fn new(dir: impl Into<PathBuf>) -> Arc<DirHealth> {
        Arc::new(DirHealth {
            dir: dir.into(),
            offline: AtomicBool::new(false),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn is_online(&self) -> bool {
        !self.offline.load(Ordering::Acquire)
    }

    /// Latch the directory offline (restart required).
    pub fn mark_offline(&self) {
        if !self.offline.swap(true, Ordering::AcqRel) {
            tracing::error!(dir = %self.dir.display(), "log directory offline after an I/O error");
        }
    }

    /// [`Self::mark_offline`] naming the error that caused it (with its
    /// whole chain, so the OS error shows) when this is the first failure.
    pub fn mark_offline_by(&self, cause: &(dyn std::error::Error + '_)) {
        if !self.offline.swap(true, Ordering::AcqRel) {
            tracing::error!(dir = %self.dir.display(), error = %crate::ErrorChain(cause),
                "log directory offline after an I/O error");
        }
    }

    fn check(&self) -> Result<(), LogError> {
        if self.is_online() {
            Ok(())
        } else {
            Err(LogError::DirOffline {
                dir: self.dir.clone(),
            })
        }
    }
}

/// Writer-side state guarded by `Log::append`.
#[derive(Debug)]
pub(crate) struct AppendState {
    /// Time of the last full flush (for `flush.ms`).
    last_flush_ms: i64,
    /// Idempotent/transactional producer state (see `producers.rs`).
    producers: crate::producer_state::ProducerStateManager,
    /// Time of the last producer expiration pass.
    last_expiration_check_ms: i64,
}

/// Hook called after every successful append with the appended bytes; the
/// producer-state manager (idempotence, transactions) attaches here.
pub type AppendHook = Arc<dyn Fn(&TopicPartition, &[u8], &LogAppendInfo) + Send + Sync>;

/// Asked at each retention pass (tiered storage, KIP-405): `Some(limit)`
/// means the log is tiered, so retention uses `local.retention.*` and may
/// delete only segments whose offsets all lie below `limit` (already in
/// remote storage); `None` means ordinary retention.
pub type RetentionGate = Arc<dyn Fn(&TopicPartition) -> Option<Offset> + Send + Sync>;

/// One partition. `Send + Sync`; share as `Arc<Log>`. See the module docs
/// for the locks.
pub struct Log {
    tp: TopicPartition,
    /// The file-system seam every file mutation of this log goes through.
    fs: SharedFs,
    /// The bound on open segment files this log's segments count against.
    handles: Arc<HandleCache>,
    dir: RwLock<PathBuf>,
    clock: SharedClock,
    health: Arc<DirHealth>,
    config: RwLock<Arc<LogConfig>>,
    append: Mutex<AppendState>,
    flush: Mutex<()>,
    segments: RwLock<Arc<Vec<Arc<Segment>>>>,
    epochs: Mutex<LeaderEpochCache>,
    log_end_offset: AtomicI64,
    /// Earliest offset of the partition across tiers (Kafka
    /// `logStartOffset`; the log-start-offset checkpoint keeps it). May be
    /// stale-low for an untiered log (a crash before the checkpoint), so
    /// read it through [`Log::log_start_offset`].
    log_start_offset: AtomicI64,
    /// First offset on local disk (Kafka `localLogStartOffset`): equal to
    /// `log_start_offset` unless the log is tiered and local retention
    /// dropped segments already in remote storage. Never below it.
    local_log_start_offset: AtomicI64,
    /// `remote.storage.enable` of the current config.
    tiered: AtomicBool,
    high_watermark: AtomicI64,
    /// The producer state's first unstable offset (Kafka
    /// `firstUnstableOffsetMetadata`, unclamped), -1 for none: written under
    /// the append lock, read by every fetch through
    /// [`Log::last_stable_offset`]. An append that starts a transaction
    /// lowers it before the new log end is published, so a high watermark
    /// computed from that log end never exposes the open transaction.
    first_unstable_offset: AtomicI64,
    recovery_point: AtomicI64,
    /// Everything below this offset has its `.log` bytes fsynced.
    durable_offset: AtomicI64,
    /// fsync rounds run by `flush_up_to` (group-commit observability).
    durable_syncs: std::sync::atomic::AtomicU64,
    /// Serialises [`Log::raise_high_watermark`] (leaf lock).
    hw_raise: Mutex<()>,
    closed: AtomicBool,
    recovery: RecoveryStats,
    append_hook: RwLock<Option<AppendHook>>,
    retention_gate: RwLock<Option<RetentionGate>>,
    /// Segments renamed `.deleted`, awaiting `file.delete.delay.ms` (leaf lock).
    pending_deletes: Mutex<Vec<truncate::PendingDelete>>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("tp", &self.tp)
            .field("log_start_offset", &self.log_start_offset())
            .field("log_end_offset", &self.log_end_offset())
            .finish()
    }
}

impl EpochSink for LeaderEpochCache {
    fn latest_epoch(&self) -> Option<LeaderEpoch> {
        LeaderEpochCache::latest_epoch(self)
    }
    fn assign(&mut self, epoch: LeaderEpoch, start_offset: Offset) -> Result<(), LogError> {
        LeaderEpochCache::assign(self, epoch, start_offset)
            .map(|_| ())
            .map_err(|e| LogError::Checkpoint {
                path: self.path().to_path_buf(),
                source: Box::new(e),
            })
    }
}

impl Log {
    /// Open (load and, after an unclean shutdown, recover) the partition
    /// directory `dir` (§9). The manager passes the checkpointed offsets and
    /// whether its log dir was shut down cleanly.
    ///
    /// # Errors
    /// I/O, index and overflow errors during loading.
    pub fn open(
        dir: &Path,
        config: LogConfig,
        params: LoadParams,
        clock: SharedClock,
        health: Arc<DirHealth>,
    ) -> Result<Arc<Log>, LogError> {
        let tp = crate::format::parse_partition_dir_name(
            &dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
        .map_err(|_| LogError::InvalidDir {
            path: dir.to_path_buf(),
            reason: "not a <topic>-<partition> directory",
        })?
        .tp;
        let loaded = crate::loader::load(dir, &tp, &config, &params, clock.as_ref())?;
        let leo = loaded.log_end_offset;
        let tiered = config.remote_storage_enable;
        let producers = producers::load(
            &params.fs,
            dir,
            &tp,
            config.producer_id_expiration_ms,
            &loaded,
            params.had_clean_shutdown,
            clock.now_ms(),
        )?;
        let first_unstable = producers.first_unstable_offset().map_or(-1, |o| o.0);
        Ok(Arc::new(Log {
            tp,
            fs: params.fs,
            handles: params.handles,
            dir: RwLock::new(dir.to_path_buf()),
            health,
            config: RwLock::new(Arc::new(config)),
            append: Mutex::new(AppendState {
                last_flush_ms: clock.now_ms(),
                producers,
                last_expiration_check_ms: clock.now_ms(),
            }),
            clock,
            flush: Mutex::new(()),
            segments: RwLock::new(Arc::new(loaded.segments)),
            epochs: Mutex::new(loaded.epochs),
            log_end_offset: AtomicI64::new(leo.0),
            log_start_offset: AtomicI64::new(loaded.log_start_offset.0),
            local_log_start_offset: AtomicI64::new(loaded.local_log_start_offset.0),
            tiered: AtomicBool::new(tiered),
            high_watermark: AtomicI64::new(loaded.local_log_start_offset.0),
            first_unstable_offset: AtomicI64::new(first_unstable),
            recovery_point: AtomicI64::new(loaded.recovery_point.0),
            durable_offset: AtomicI64::new(loaded.recovery_point.0),
            durable_syncs: std::sync::atomic::AtomicU64::new(0),
            hw_raise: Mutex::new(()),
            closed: AtomicBool::new(false),
            recovery: loaded.stats,
            append_hook: RwLock::new(None),
            retention_gate: RwLock::new(None),
            pending_deletes: Mutex::new(Vec::new()),
        }))
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    /// The file-system seam this log's files are changed through.
    pub fn fs(&self) -> &SharedFs {
        &self.fs
    }

    /// The handle cache this log's segments open their files through.
    pub fn handles(&self) -> &Arc<HandleCache> {
        &self.handles
    }

    pub fn dir(&self) -> PathBuf {
        self.dir.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn config(&self) -> LogConfig {
        (**self.config.read().unwrap_or_else(|e| e.into_inner())).clone()
    }

    pub(crate) fn config_arc(&self) -> Arc<LogConfig> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replace the config; new segments and the next roll check use it.
    pub fn update_config(&self, config: LogConfig) {
        self.tiered
            .store(config.remote_storage_enable, Ordering::Release);
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    /// Attach the producer-state seam (called after each append).
    pub fn set_append_hook(&self, hook: Option<AppendHook>) {
        *self.append_hook.write().unwrap_or_else(|e| e.into_inner()) = hook;
    }

    /// Install or clear the tiered-storage [`RetentionGate`].
    pub fn set_retention_gate(&self, gate: Option<RetentionGate>) {
        *self
            .retention_gate
            .write()
            .unwrap_or_else(|e| e.into_inner()) = gate;
    }

    /// What loading and recovery did when this log was opened.
    pub fn recovery_stats(&self) -> &RecoveryStats {
        &self.recovery
    }

    pub fn dir_health(&self) -> &Arc<DirHealth> {
        &self.health
    }

    /// The earliest offset of the partition in any tier (Kafka
    /// `logStartOffset`): ListOffsets EARLIEST, the log start in fetch and
    /// produce responses, OFFSET_OUT_OF_RANGE below it. For a tiered log it
    /// may lie below [`Self::local_log_start_offset`].
    pub fn log_start_offset(&self) -> Offset {
        let start = self.log_start_offset.load(Ordering::Acquire);
        if self.tiered.load(Ordering::Acquire) {
            Offset(start)
        } else {
            Offset(start.max(self.local_log_start_offset.load(Ordering::Acquire)))
        }
    }

    /// The value for the log-start-offset checkpoint: the partition's start
    /// as last set, whatever the current config says (a tool that opens the
    /// log with a default config must not lose a tiered log's start).
    pub fn log_start_offset_for_checkpoint(&self) -> Offset {
        Offset(self.log_start_offset.load(Ordering::Acquire))
    }

    /// The first offset readable from local disk (Kafka
    /// `localLogStartOffset`); a read below it fails with
    /// [`LogError::OffsetOutOfRange`] carrying this offset as `log_start`,
    /// so the caller can serve `[log_start_offset, local)` from remote.
    pub fn local_log_start_offset(&self) -> Offset {
        Offset(self.local_log_start_offset.load(Ordering::Acquire))
    }

    pub fn log_end_offset(&self) -> Offset {
        Offset(self.log_end_offset.load(Ordering::Acquire))
    }

    pub fn high_watermark(&self) -> Offset {
        Offset(self.high_watermark.load(Ordering::Acquire))
    }

    /// Raise the high watermark to `hw` (clamped to the log end); never
    /// lowers it. For callers that finish out of order: the durable produce
    /// path raises it once each request's records are fsynced, and an
    /// earlier request's fsync may return after a later one's.
    pub fn raise_high_watermark(&self, hw: Offset) -> Offset {
        let _serial = self.hw_raise.lock().unwrap_or_else(|e| e.into_inner());
        if hw <= self.high_watermark() {
            return self.high_watermark();
        }
        self.update_high_watermark(hw)
    }

    /// The single-node leader's high watermark after an append: the log
    /// end, or on a durable log (`strata.durable.append`) the end of what
    /// is fsynced. The log end may hold another writer's records whose
    /// fsync is still running, and consumers must never see what a power
    /// loss could take back. A durable log's high watermark is only ever
    /// raised (its appends finish out of order); any other log's is the log
    /// end, two atomic operations on the hot path.
    pub fn raise_high_watermark_to_end(&self) -> Offset {
        if self.config_arc().durable_append {
            self.raise_high_watermark(self.durable_offset())
        } else {
            self.update_high_watermark(self.log_end_offset())
        }
    }

    /// Set the high watermark, clamped to `[log_start, LEO]`; returns it.
    ///
    /// While the log has unstable transactions this takes the append lock
    /// (as Kafka's `updateHighWatermarkMetadata` takes the log lock) to
    /// forget the completed ones whose marker the high watermark passed, so
    /// the LSO moves on; without any it is two atomic operations.
    pub fn update_high_watermark(&self, hw: Offset) -> Offset {
        let clamped = hw.max(self.log_start_offset()).min(self.log_end_offset());
        self.high_watermark.store(clamped.0, Ordering::Release);
        if self.first_unstable_offset.load(Ordering::Acquire) >= 0 {
            let mut g = self.append.lock().unwrap_or_else(|e| e.into_inner());
            g.producers.on_high_watermark_updated(self.high_watermark());
            self.publish_first_unstable(&g);
        }
        clamped
    }

    /// The first offset of a transaction that is open, or decided with its
    /// marker not yet below the high watermark, raised to the log start
    /// (Kafka `firstUnstableOffset`); `None` when there is none.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        let first = self.first_unstable_offset.load(Ordering::Acquire);
        (first >= 0).then(|| Offset(first).max(self.log_start_offset()))
    }

    /// The last stable offset (Kafka `lastStableOffset`, transactions.md
    /// §6.3): the first unstable offset if it is below the high watermark,
    /// else the high watermark. READ_COMMITTED fetches and ListOffsets read
    /// up to it; the cleaner and the tiered copy never go past it.
    pub fn last_stable_offset(&self) -> Offset {
        // The high watermark is read on both sides of the first unstable
        // offset: a pair read while the high watermark moved could match
        // an old high watermark (inside a transaction then open) with a
        // first unstable offset from after that transaction completed.
        loop {
            let hw = self.high_watermark();
            let first = self.first_unstable_offset();
            if self.high_watermark() == hw {
                return match first {
                    Some(first) => first.min(hw),
                    None => hw,
                };
            }
        }
    }

    /// Publish the producer state's first unstable offset. Caller holds the
    /// append lock.
    pub(crate) fn publish_first_unstable(&self, state: &AppendState) {
        let first = state.producers.first_unstable_offset().map_or(-1, |o| o.0);
        self.first_unstable_offset.store(first, Ordering::Release);
    }

    /// Keep the LSO at or below `offset` until the append that starts a
    /// transaction there is applied. Caller holds the append lock.
    pub(crate) fn hold_first_unstable_at(&self, offset: Offset) {
        let current = self.first_unstable_offset.load(Ordering::Acquire);
        if current < 0 || current > offset.0 {
            self.first_unstable_offset
                .store(offset.0, Ordering::Release);
        }
    }

    /// Everything below this offset is fsynced together with its indexes.
    pub fn recovery_point(&self) -> Offset {
        Offset(self.recovery_point.load(Ordering::Acquire))
    }

    /// Everything below this offset has its batches fsynced.
    pub fn durable_offset(&self) -> Offset {
        Offset(self.durable_offset.load(Ordering::Acquire))
    }

    /// How many fsync rounds `flush_up_to` has run; with group commit this
    /// stays below the number of durable appends under concurrency.
    pub fn durable_sync_count(&self) -> u64 {
        self.durable_syncs.load(Ordering::Acquire)
    }

    pub fn end_offset_for_epoch(&self, epoch: LeaderEpoch) -> Option<(LeaderEpoch, Offset)> {
        let (e, o) = self
            .lock_epochs()
            .end_offset_for(epoch, self.log_end_offset());
        (e != LeaderEpoch::NONE).then_some((e, o))
    }

    /// The epoch `offset` was written in (Kafka `epochForOffset`).
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        self.lock_epochs().epoch_for_offset(offset)
    }

    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.lock_epochs().latest_epoch()
    }

    /// A snapshot of the segment list (cheap: one `Arc` clone).
    pub(crate) fn snapshot(&self) -> Arc<Vec<Arc<Segment>>> {
        self.segments
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn publish_segments(&self, segments: Vec<Arc<Segment>>) {
        *self.segments.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(segments);
    }

    /// Write the epoch checkpoint if it differs from the file (every change
    /// that is not written at once marks the cache dirty).
    fn flush_epochs(&self) -> Result<(), LogError> {
        let mut cache = self.lock_epochs();
        if !cache.is_dirty() {
            return Ok(());
        }
        cache.flush().map_err(|e| LogError::Checkpoint {
            path: cache.path().to_path_buf(),
            source: Box::new(e),
        })
    }

    fn lock_epochs(&self) -> MutexGuard<'_, LeaderEpochCache> {
        self.epochs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take the append lock after checking the log and its dir are usable.
    fn lock_append(&self) -> Result<MutexGuard<'_, AppendState>, LogError> {
        self.check_usable()?;
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        self.check_usable()?;
        Ok(g)
    }

    fn check_usable(&self) -> Result<(), LogError> {
        self.health.check()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(LogError::Closed {
                tp: self.tp.clone(),
            });
        }
        Ok(())
    }

    /// Latch the dir offline on storage failures, then pass the error on.
    fn fail<T>(&self, r: Result<T, LogError>) -> Result<T, LogError> {
        if let Err(e) = &r {
            // A checkpoint this log writes (leader epochs) failing is storage
            // I/O too (Kafka: `KafkaStorageException`, the dir goes offline).
            if matches!(
                e,
                LogError::Io { .. } | LogError::Index { .. } | LogError::Checkpoint { .. }
            ) {
                self.health.mark_offline_by(e);
            }
        }
        r
    }

    /// Every segment's state, oldest first.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let segs = self.snapshot();
        let mut out = Vec::with_capacity(segs.len());
        for (i, s) in segs.iter().enumerate() {
            let next_offset = if i + 1 == segs.len() {
                self.log_end_offset()
            } else {
                s.read_next_offset().unwrap_or(s.base_offset())
            };
            let (oe, om, te, tm) = s.index_fill().unwrap_or((0, 0, 0, 0));
            let (index_path, time_index_path) = s.index_paths();
            out.push(SegmentInfo {
                base_offset: s.base_offset(),
                size: s.size(),
                next_offset,
                max_timestamp: s
                    .max_timestamp_so_far()
                    .map(|m| m.timestamp)
                    .unwrap_or(Timestamp::NONE),
                log_path: s.log_path(),
                index_path,
                time_index_path,
                offset_index_entries: oe,
                offset_index_max_entries: om,
                time_index_entries: te,
                time_index_max_entries: tm,
                created_ms: s.created_ms(),
                roll_jitter_ms: s.roll_jitter_ms(),
            });
        }
        out
    }

    /// Total bytes of all segments.
    pub fn size_in_bytes(&self) -> u64 {
        self.snapshot().iter().map(|s| s.size()).sum()
    }

    /// Number of segments.
    pub fn num_segments(&self) -> usize {
        self.snapshot().len()
    }

    /// Clean close (§9 shutdown): flush everything, then per segment the
    /// final time-index entry and trimmed indexes and `.log`. The log
    /// refuses work afterwards.
    ///
    /// # Errors
    /// I/O and index errors (the dir goes offline).
    pub fn close(&self) -> Result<(), LogError> {
        let mut g = self.lock_append()?;
        let r = (|| {
            self.flush_locked(&mut g, self.log_end_offset(), true)?;
            for s in self.snapshot().iter() {
                s.close()?;
            }
            // The clean-shutdown snapshot at the log end: the next open
            // loads it and reads no batch.
            g.producers
                .take_snapshot(true)
                .map_err(|e| producers::state_error(&self.tp, e))?;
            self.flush_epochs()
        })();
        self.closed.store(true, Ordering::Release);
        self.fail(r)
    }

    /// Whether the log was closed (shut down, deleted, or replaced by a
    /// log-dir move).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Mark closed without flushing (the dir is offline or being deleted).
    pub(crate) fn close_abruptly(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// The installed append hook (a log that replaces this one after a
    /// log-dir move takes it over).
    pub(crate) fn append_hook(&self) -> Option<AppendHook> {
        self.append_hook
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The installed retention gate (taken over like [`Self::append_hook`]).
    pub(crate) fn retention_gate(&self) -> Option<RetentionGate> {
        self.retention_gate
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Hold the append lock until the returned guard is dropped or
    /// [`AppendBlock::retire`]d: no append, truncation or log-start move can
    /// happen meanwhile (the swap of a log-dir move runs under it).
    ///
    /// # Errors
    /// [`LogError::DirOffline`] / [`LogError::Closed`].
    pub(crate) fn block_appends(&self) -> Result<AppendBlock<'_>, LogError> {
        Ok(AppendBlock {
            log: self,
            guard: self.lock_append()?,
        })
    }

    /// Rename the directory (async delete); the log stays closed.
    pub(crate) fn set_dir(&self, new_dir: PathBuf) {
        self.append
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .producers
            .update_dir(&new_dir);
        *self.dir.write().unwrap_or_else(|e| e.into_inner()) = new_dir;
    }
}

/// The append lock of one log, held (see [`Log::block_appends`]).
pub(crate) struct AppendBlock<'a> {
    log: &'a Log,
    guard: MutexGuard<'a, AppendState>,
}

impl AppendBlock<'_> {
    /// Close the log while appends are still blocked, so every writer
    /// waiting for the lock fails with [`LogError::Closed`] (retriable:
    /// the caller looks the partition up again and finds its new log);
    /// `new_dir` is where its directory was renamed to, if it was.
    pub(crate) fn retire(mut self, new_dir: Option<PathBuf>) {
        if let Some(dir) = new_dir {
            self.guard.producers.update_dir(&dir);
            *self.log.dir.write().unwrap_or_else(|e| e.into_inner()) = dir;
        }
        self.log.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
