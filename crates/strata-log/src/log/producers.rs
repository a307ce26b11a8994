//! The log's side of producer state (Kafka `UnifiedLog`'s calls into
//! `ProducerStateManager`; `docs/kafka-behaviour.md` §6 and §9,
//! `docs/producer-state.md`).
//!
//! The [`ProducerStateManager`] lives in [`super::AppendState`], so the
//! append lock guards it; every function here runs under that lock. What
//! happens when:
//!
//! - **leader append**: a retried batch (same producer, epoch and sequence
//!   range as one of the producer's last five) is answered with its original
//!   offsets and not written ([`LogAppendInfo::duplicate`]); otherwise the
//!   batch is validated after offsets are assigned and before the write (a
//!   failure writes nothing), and the update is applied after the write.
//! - **follower / internal append**: validated with REPLICATION origin
//!   (no sequence checks) and applied after the write.
//! - **roll**: a snapshot at the new segment's base offset.
//! - **clean close**: a snapshot at the log end.
//! - **open**: stray snapshots removed, then the state is the newest usable
//!   snapshot plus the batches after it (a clean shutdown with a snapshot at
//!   the log end reads no batch).
//! - **truncation**: reload from the newest snapshot at or below the new end
//!   plus the log after it.
//! - **log start moves**: completed transactions below it are forgotten.
//! - **background**: producers idle for `producer.id.expiration.ms` are
//!   dropped, every [`PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS`].
//!
//! Deliberate difference from Kafka: Kafka skips the log scan when a clean
//! shutdown left no snapshot at all (its upgrade path from pre-0.11 logs).
//! Strata has no such logs to upgrade, so a missing snapshot always means
//! "rebuild from the log": deleting the snapshot files never loses state.

use std::sync::Arc;

use super::{AppendState, Log, LogAppendInfo};
use crate::batch::BatchView;
use crate::error::LogError;
use crate::producer_state::{
    AppendOrigin, BatchSink, ProducerStateEntry, ProducerStateError, ProducerStateManager,
    ProducerUpdates,
};
use crate::segment::scan::{FileBatches, ScanError};
use crate::segment::Segment;
use crate::types::{Offset, ProducerId, Timestamp, TopicPartition};

/// How often the background pass looks for expired producers (Kafka's
/// `producer.id.expiration.check.interval.ms` default, 10 minutes).
pub const PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: i64 = 600_000;

/// Read size of the rebuild scan.
const REBUILD_CHUNK: usize = 1 << 20;

/// Producer-state failures of a log operation, with the partition.
pub(crate) fn state_error(tp: &TopicPartition, e: ProducerStateError) -> LogError {
    match e {
        // Snapshot I/O is storage I/O: the dir goes offline like for segments.
        ProducerStateError::Io { path, op, source } => LogError::Io { path, op, source },
        source => LogError::ProducerState {
            tp: tp.clone(),
            source,
        },
    }
}

/// Errors of the rebuild: the manager's, or reading the segments.
enum RebuildError {
    State(ProducerStateError),
    Log(LogError),
}

impl From<ProducerStateError> for RebuildError {
    fn from(e: ProducerStateError) -> Self {
        RebuildError::State(e)
    }
}

/// Call `sink` for every magic-2 batch of `segment` whose last offset is in
/// `[start, end)`.
fn scan_segment(
    segment: &Segment,
    start: Offset,
    end: Offset,
    sink: &mut BatchSink<'_>,
) -> Result<(), RebuildError> {
    let file = segment.file();
    let mut batches = FileBatches::new(file, 0, segment.size(), REBUILD_CHUNK);
    while let Some(next) = batches.next_batch() {
        let (summary, bytes) = match next {
            Ok(b) => b,
            Err(ScanError::Io(source)) => {
                return Err(RebuildError::Log(LogError::io(
                    segment.log_path(),
                    "read segment for producer state",
                    source,
                )))
            }
            // Recovery already cut corrupt tails; stop at one regardless.
            Err(ScanError::Corrupt { .. }) => return Ok(()),
        };
        if summary.last_offset >= end {
            break;
        }
        if summary.magic < 2 || summary.last_offset < start {
            continue;
        }
        match BatchView::parse(bytes) {
            Ok(view) => sink(&view)?,
            Err(e) => {
                tracing::warn!(segment = %segment.log_path().display(), position = summary.position,
                    error = %e, "unreadable batch skipped while rebuilding producer state");
            }
        }
    }
    Ok(())
}

/// Bring `psm` to `log_end` from its newest usable snapshot plus `segments`
/// (Kafka `UnifiedLog.rebuildProducerState`).
pub(crate) fn rebuild(
    psm: &mut ProducerStateManager,
    segments: &[Arc<Segment>],
    log_start: Offset,
    log_end: Offset,
    clean_shutdown: bool,
    now_ms: i64,
) -> Result<(), LogError> {
    let tp = psm.topic_partition().clone();
    let bases: Vec<Offset> = segments.iter().map(|s| s.base_offset()).collect();
    // See the module docs: without a snapshot, always scan.
    let reload_from_clean_shutdown = clean_shutdown && psm.latest_snapshot_offset().is_some();
    let r = psm.rebuild_producer_state::<RebuildError, _>(
        &bases,
        log_start,
        log_end,
        reload_from_clean_shutdown,
        now_ms,
        |base, start, end, sink| {
            let seg = segments
                .iter()
                .find(|s| s.base_offset() == base)
                .expect("rebuild reads only the bases it was given");
            scan_segment(seg, start, end, sink)
        },
    );
    match r {
        Ok(()) => Ok(()),
        Err(RebuildError::State(e)) => Err(state_error(&tp, e)),
        Err(RebuildError::Log(e)) => Err(e),
    }
}

/// The producer state of a freshly loaded partition directory.
pub(crate) fn load(
    dir: &std::path::Path,
    tp: &TopicPartition,
    producer_id_expiration_ms: i64,
    loaded: &crate::loader::Loaded,
    clean_shutdown: bool,
    now_ms: i64,
) -> Result<ProducerStateManager, LogError> {
    let mut psm = ProducerStateManager::new(dir, tp.clone(), producer_id_expiration_ms)
        .map_err(|e| state_error(tp, e))?;
    let bases: Vec<Offset> = loaded.segments.iter().map(|s| s.base_offset()).collect();
    psm.remove_stray_snapshots(&bases)
        .map_err(|e| state_error(tp, e))?;
    rebuild(
        &mut psm,
        &loaded.segments,
        loaded.local_log_start_offset,
        loaded.log_end_offset,
        clean_shutdown,
        now_ms,
    )?;
    Ok(psm)
}

impl Log {
    /// A retried client batch: the append info of the original write, or
    /// `None`. Caller holds the append lock.
    pub(super) fn find_duplicate(
        &self,
        state: &AppendState,
        records: &[u8],
    ) -> Option<LogAppendInfo> {
        let view = BatchView::parse(records).ok()?;
        if view.producer_id().0 < 0 {
            return None;
        }
        let dup = state.producers.find_duplicate_batch(&view)?;
        tracing::debug!(tp = %self.tp, producer_id = view.producer_id().0, first_seq = view.base_sequence(),
            first_offset = %dup.first_offset(), "duplicate batch answered with its original offsets");
        Some(LogAppendInfo {
            first_offset: dup.first_offset(),
            last_offset: dup.last_offset,
            max_timestamp: dup.timestamp,
            offset_of_max_timestamp: dup.last_offset,
            log_append_time: None,
            log_start_offset: self.log_start_offset(),
            records_count: dup.offset_delta as i64 + 1,
            valid_bytes: 0,
            duplicate: true,
        })
    }

    /// Validate every batch of `records` (offsets assigned) against the
    /// producer state; nothing changes yet. Caller holds the append lock.
    ///
    /// # Errors
    /// [`LogError::ProducerState`] naming the rule that failed.
    pub(super) fn validate_producers(
        &self,
        state: &AppendState,
        records: &[u8],
        origin: AppendOrigin,
    ) -> Result<ProducerUpdates, LogError> {
        let mut updates = ProducerUpdates::new();
        let mut pos = 0;
        while pos < records.len() {
            let view = BatchView::parse(&records[pos..]).map_err(|source| LogError::Batch {
                tp: self.tp.clone(),
                source: source.at(pos as u64),
            })?;
            state
                .producers
                .validate_batch(&mut updates, &view, origin)
                .map_err(|e| state_error(&self.tp, e))?;
            pos += view.size();
        }
        Ok(updates)
    }

    /// Apply validated updates after the write; the state now covers
    /// everything below `next_offset`. Caller holds the append lock.
    pub(super) fn apply_producers(
        &self,
        state: &mut AppendState,
        updates: ProducerUpdates,
        next_offset: Offset,
    ) {
        let psm = &mut state.producers;
        // Strata writes no transaction index yet (no transaction
        // coordinator); completing keeps the LSO bookkeeping right.
        for txn in psm.apply_updates(updates) {
            psm.complete_txn(&txn);
        }
        psm.update_map_end_offset(next_offset);
    }

    /// Snapshot at a new segment's base (roll). Caller holds the append lock.
    pub(super) fn snapshot_producers_at(
        &self,
        state: &mut AppendState,
        offset: Offset,
    ) -> Result<(), LogError> {
        state.producers.update_map_end_offset(offset);
        state
            .producers
            .take_snapshot(true)
            .map(|_| ())
            .map_err(|e| state_error(&self.tp, e))
    }

    /// Drop producers idle for `producer.id.expiration.ms` if the check
    /// interval has passed since the last check; returns how many went.
    ///
    /// # Errors
    /// [`LogError::Closed`] / [`LogError::DirOffline`].
    pub fn maybe_remove_expired_producers(&self) -> Result<usize, LogError> {
        let now = self.clock.now_ms();
        let mut g = self.lock_append()?;
        if now.saturating_sub(g.last_expiration_check_ms) < PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS
        {
            return Ok(0);
        }
        Ok(self.remove_expired_locked(&mut g, now))
    }

    /// Drop producers idle for `producer.id.expiration.ms` now; returns how
    /// many went.
    ///
    /// # Errors
    /// [`LogError::Closed`] / [`LogError::DirOffline`].
    pub fn remove_expired_producers(&self) -> Result<usize, LogError> {
        let now = self.clock.now_ms();
        let mut g = self.lock_append()?;
        Ok(self.remove_expired_locked(&mut g, now))
    }

    fn remove_expired_locked(&self, state: &mut AppendState, now: i64) -> usize {
        state.last_expiration_check_ms = now;
        let psm = &mut state.producers;
        psm.set_producer_id_expiration_ms(self.config_arc().producer_id_expiration_ms);
        let before = psm.producer_id_count();
        psm.remove_expired_producers(now);
        before - psm.producer_id_count()
    }

    /// The committed state of one producer (tests, tools).
    pub fn producer_state_of(&self, producer_id: ProducerId) -> Option<ProducerStateEntry> {
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        g.producers.last_entry(producer_id).cloned()
    }

    /// How many producer ids have state.
    pub fn producer_id_count(&self) -> usize {
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        g.producers.producer_id_count()
    }

    /// The highest producer id with state in this log, if any (the broker
    /// resumes id allocation above it when its own record is lost).
    pub fn max_producer_id(&self) -> Option<ProducerId> {
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        g.producers.active_producers().map(|(id, _)| id).max()
    }

    /// Offsets of the producer snapshot files the log knows, ascending.
    pub fn producer_snapshot_offsets(&self) -> Vec<Offset> {
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        g.producers.snapshot_offsets().collect()
    }

    /// The producer state covers every offset below this one.
    pub fn producer_state_end_offset(&self) -> Offset {
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        g.producers.map_end_offset()
    }

    /// The last timestamp Strata saw from `producer_id` (expiration input).
    pub fn producer_last_timestamp(&self, producer_id: ProducerId) -> Option<Timestamp> {
        self.producer_state_of(producer_id)
            .map(|e| e.last_timestamp())
    }
}
