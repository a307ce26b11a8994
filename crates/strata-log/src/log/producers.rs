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

use super::{AppendState, Log, LogAppendInfo};
use crate::batch::BatchView;
use crate::error::LogError;
use crate::index::AbortedTxn;
use crate::producer_state::{
    AppendOrigin, ProducerStateEntry, ProducerStateManager, ProducerUpdates,
};
use crate::types::{Offset, ProducerId, Timestamp, TopicPartition};

/// How often the background pass looks for expired producers (Kafka's
/// `producer.id.expiration.check.interval.ms` default, 10 minutes).
pub const PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: i64 = 600_000;

pub(crate) use crate::segment::producers::{rebuild, state_error};

/// The producer state of a freshly loaded partition directory.
pub(crate) fn load(
    fs: &crate::fs::SharedFs,
    dir: &std::path::Path,
    tp: &TopicPartition,
    producer_id_expiration_ms: i64,
    loaded: &crate::loader::Loaded,
    clean_shutdown: bool,
    now_ms: i64,
) -> Result<ProducerStateManager, LogError> {
    let mut psm = ProducerStateManager::new(fs, dir, tp.clone(), producer_id_expiration_ms)
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
    ///
    /// Kafka `UnifiedLog.append` steps 4 to 7 (transactions.md §6.2): the
    /// updates go in, then each completed transaction in order: an aborted
    /// one is appended to the active segment's `.txnindex` with the LSO of
    /// that moment, then it moves to the unreplicated set. Commits and
    /// empty aborts (which complete nothing) write no entry.
    ///
    /// # Errors
    /// A failed `.txnindex` write: the log end has moved but the rest of
    /// the producer state has not, and the dir goes offline (a restart
    /// rebuilds the index from the log), as in Kafka.
    pub(super) fn apply_producers(
        &self,
        state: &mut AppendState,
        updates: ProducerUpdates,
        next_offset: Offset,
    ) -> Result<(), LogError> {
        let completed = state.producers.apply_updates(updates);
        for txn in completed {
            if txn.is_aborted {
                let lso = state.producers.last_stable_offset(&txn);
                let entry =
                    AbortedTxn::new(txn.producer_id, txn.first_offset, txn.last_offset, lso);
                let active = self.snapshot().last().cloned();
                let r = match active {
                    Some(seg) => seg.append_aborted_txn(&entry),
                    None => Ok(()),
                };
                self.fail(r)?;
            }
            state.producers.complete_txn(&txn);
        }
        state.producers.update_map_end_offset(next_offset);
        self.publish_first_unstable(state);
        Ok(())
    }

    /// Before the write of `records` (whole batches, offsets assigned):
    /// if one is a transactional data batch, keep the LSO at or below its
    /// base offset until [`Self::apply_producers`] publishes the state.
    /// Caller holds the append lock.
    pub(super) fn hold_lso_for(&self, records: &[u8]) {
        let mut pos = 0;
        while pos < records.len() {
            let Ok(view) = BatchView::parse(&records[pos..]) else {
                return;
            };
            if view.is_transactional() && !view.is_control() {
                self.hold_first_unstable_at(view.base_offset());
                return;
            }
            pos += view.size();
        }
    }

    /// The aborted transactions a READ_COMMITTED read from `fetch_offset`
    /// must report (Kafka `collectAbortedTransactions`, transactions.md
    /// §7.1): from the `.txnindex` of the segment holding `fetch_offset`,
    /// then of each later segment, every entry with `last_offset >=
    /// fetch_offset` and `first_offset < upper_bound`, stopping after the
    /// first segment holding an entry whose stored LSO is `>= upper_bound`.
    /// `upper_bound` is [`super::FetchData::aborted_upper_bound`] for a
    /// read. In log order; an offset below the local log start starts at
    /// the first local segment.
    ///
    /// # Errors
    /// Storage errors (the dir goes offline), a corrupt `.txnindex`.
    pub fn collect_aborted_transactions(
        &self,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Result<Vec<AbortedTxn>, LogError> {
        self.check_usable()?;
        let segs = self.snapshot();
        let from = crate::segment::floor_segment(&segs, fetch_offset).unwrap_or(0);
        let mut out = Vec::new();
        let r = (|| {
            for seg in &segs[from..] {
                let found = seg.collect_aborted_txns(fetch_offset, upper_bound)?;
                out.extend(found.aborted);
                if found.is_complete {
                    break;
                }
            }
            Ok(())
        })();
        self.fail(r)?;
        Ok(out)
    }

    /// Every entry of every segment's `.txnindex`, oldest segment first
    /// (tests, tools).
    ///
    /// # Errors
    /// As [`Self::collect_aborted_transactions`].
    pub fn all_aborted_transactions(&self) -> Result<Vec<AbortedTxn>, LogError> {
        let mut out = Vec::new();
        for seg in self.snapshot().iter() {
            out.extend(seg.aborted_txns()?);
        }
        Ok(out)
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
