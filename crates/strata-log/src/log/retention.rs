//! Applying retention to a log (Kafka `deleteOldSegments` /
//! `deleteSegments` / `LocalLog.removeAndDeleteSegments`).
//!
//! The decision comes from the pure [`crate::retention::decide`]; this file
//! only gathers its input and carries it out, under the append lock:
//!
//! 1. roll a new empty active segment at the log end when every segment
//!    goes (a log always has one segment);
//! 2. raise the log start offset to the first kept segment's base (and the
//!    high watermark, recovery point and leader-epoch cache with it) — for
//!    a tiered log (its gate answered) only the *local* log start moves: the
//!    deleted segments are still readable from remote storage, so the
//!    partition's log start (ListOffsets EARLIEST, the checkpoint) stays
//!    (Kafka `incrementStartOffset` → `maybeIncrementLocalLogStartOffset`);
//! 3. publish the shorter segment list (new readers no longer see the
//!    deleted segments; readers holding a slice keep their `Arc<File>`);
//! 4. rename the files `.deleted` in the order .log, .index, .timeindex,
//!    .txnindex and queue them for removal after `file.delete.delay.ms`;
//! 5. rename the producer snapshots at the deleted bases
//!    `.snapshot.deleted` (the caller removes them when due; a restart's
//!    loader removes any `.deleted` file left behind).
//!
//! Crash safety: the log start offset only rises in memory before the
//! renames; on restart the loader deletes `*.deleted`, drops index files
//! whose `.log` is gone (a crash between two renames of one segment) and
//! takes the log start as the larger of the checkpoint and the first
//! remaining base. Kept segments are never renamed, so nothing kept is lost.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{AppendState, Log};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::retention::{
    self, LogSnapshot, RetentionDecision, RetentionPolicy, SegmentSnapshot, TimestampSource,
};
use crate::segment::Segment;
use crate::types::{Offset, Timestamp};

/// What one retention pass did to a log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    /// The decision that was applied (empty when nothing was deleted).
    pub decision: RetentionDecision,
    /// Producer snapshot files renamed `.snapshot.deleted`, to remove at
    /// `delete_due_ms`.
    pub renamed_snapshots: Vec<PathBuf>,
    /// When the `.deleted` files may be removed.
    pub delete_due_ms: i64,
}

/// Kafka `LogSegment.largestTimestamp`: the largest record timestamp, or
/// the `.log` mtime when no record carries one.
pub(crate) fn largest_timestamp(seg: &Segment) -> Result<(Timestamp, TimestampSource), LogError> {
    let max = seg.max_timestamp_so_far()?.timestamp;
    if max.0 >= 0 {
        Ok((max, TimestampSource::Record))
    } else {
        Ok((
            Timestamp(seg.last_modified_ms()?),
            TimestampSource::FileMtime,
        ))
    }
}

impl Log {
    /// The policy of this pass and, for a tiered log (its
    /// [`super::RetentionGate`] answers), the offset below which segments
    /// are in remote storage and may go locally.
    fn retention_policy(&self, cfg: &LogConfig) -> (RetentionPolicy, Option<Offset>) {
        let gate = self
            .retention_gate
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match gate.and_then(|g| g(&self.tp)) {
            Some(limit) => (RetentionPolicy::local_tiered(cfg), Some(limit)),
            None => (RetentionPolicy::from_config(cfg), None),
        }
    }

    /// The log as retention sees it now (reads each segment's largest
    /// timestamp, loading its time index lazily).
    ///
    /// # Errors
    /// I/O and index errors reading timestamps or file times.
    pub fn retention_snapshot(&self) -> Result<LogSnapshot, LogError> {
        let segs = self.snapshot();
        let mut segments = Vec::with_capacity(segs.len());
        for s in segs.iter() {
            let (largest_timestamp, timestamp_source) = largest_timestamp(s)?;
            segments.push(SegmentSnapshot {
                base_offset: s.base_offset(),
                size: s.size(),
                largest_timestamp,
                timestamp_source,
            });
        }
        Ok(LogSnapshot {
            segments,
            // Retention works on local segments: their start is the local one.
            log_start_offset: self.local_log_start_offset(),
            high_watermark: self.high_watermark(),
            log_end_offset: self.log_end_offset(),
        })
    }

    /// What a retention pass would delete now, with the log's current
    /// config, clock and retention gate, without deleting anything (the
    /// storage console's preview; the pass itself decides again under the
    /// append lock).
    ///
    /// # Errors
    /// As [`Log::retention_snapshot`].
    pub fn retention_decision(&self) -> Result<RetentionDecision, LogError> {
        let cfg = self.config_arc();
        let (policy, tiered_limit) = self.retention_policy(&cfg);
        let snap = self.retention_snapshot()?;
        let mut decision = retention::decide(&snap, &policy, self.clock.now_ms());
        if let Some(limit) = tiered_limit {
            decision.limit_to_upper_bound(limit);
        }
        Ok(decision)
    }

    /// One retention pass with the log's current config and clock: delete
    /// the segments [`retention::decide`] picks (see the module docs for
    /// the steps). Reads in flight keep working.
    ///
    /// # Errors
    /// [`LogError::Closed`] / [`LogError::DirOffline`]; storage errors
    /// (the dir goes offline).
    pub fn delete_old_segments(&self) -> Result<RetentionOutcome, LogError> {
        // Decide on a lock-free snapshot first: most passes delete nothing
        // and must not stall appends. Deletions are decided again under the
        // lock, where the segment list cannot change.
        self.check_usable()?;
        let cfg = self.config_arc();
        let now = self.clock.now_ms();
        let (policy, tiered_limit) = self.retention_policy(&cfg);
        // A segment renamed under this lock-free read (a concurrent
        // truncation or cleaner swap) fails it; the locked pass decides then.
        let early = self.retention_snapshot().ok().map(|snap| {
            let mut d = retention::decide(&snap, &policy, now);
            if let Some(limit) = tiered_limit {
                d.limit_to_upper_bound(limit);
            }
            d
        });
        if let Some(early) = early.filter(|d| d.is_empty()) {
            return Ok(RetentionOutcome {
                decision: early,
                renamed_snapshots: Vec::new(),
                delete_due_ms: now.saturating_add(cfg.file_delete_delay_ms),
            });
        }
        let mut g = self.lock_append()?;
        let r = self.delete_old_segments_locked(&mut g);
        self.fail(r)
    }

    fn delete_old_segments_locked(
        &self,
        state: &mut AppendState,
    ) -> Result<RetentionOutcome, LogError> {
        let cfg = self.config_arc();
        let now = self.clock.now_ms();
        let snap = self.retention_snapshot()?;
        let (policy, tiered_limit) = self.retention_policy(&cfg);
        let mut decision = retention::decide(&snap, &policy, now);
        if let Some(limit) = tiered_limit {
            decision.limit_to_upper_bound(limit);
        }
        let delete_due_ms = now.saturating_add(cfg.file_delete_delay_ms);
        if decision.is_empty() {
            return Ok(RetentionOutcome {
                decision,
                renamed_snapshots: Vec::new(),
                delete_due_ms,
            });
        }
        if decision.roll_active_first {
            tracing::info!(tp = %self.tp, "every segment expired: rolling before deleting them");
            self.roll_locked(state, &cfg, None)?;
        }
        let doomed: BTreeSet<Offset> = decision.deletions.iter().map(|d| d.base_offset).collect();
        let segs = self.snapshot();
        let n = segs
            .iter()
            .take_while(|s| doomed.contains(&s.base_offset()))
            .count();
        debug_assert_eq!(n, doomed.len(), "retention deletes a prefix");
        debug_assert!(n < segs.len(), "retention keeps one segment");
        let (deleted, kept) = segs.split_at(n.min(segs.len() - 1));
        if tiered_limit.is_some() {
            self.raise_local_log_start_locked(kept[0].base_offset());
        } else {
            self.raise_log_start_locked(kept[0].base_offset())?;
        }
        self.publish_segments(kept.to_vec());
        self.schedule_delete(deleted)?;
        let renamed_snapshots = self.rename_snapshots_for_deletion(state, deleted)?;
        for d in &decision.deletions {
            tracing::info!(
                tp = %self.tp,
                base = %d.base_offset,
                size = d.size,
                reason = ?d.reason,
                age_ms = ?d.age_ms,
                "deleting segment by retention"
            );
        }
        Ok(RetentionOutcome {
            decision,
            renamed_snapshots,
            delete_due_ms,
        })
    }

    /// Kafka `maybeIncrementLocalLogStartOffset`: only the local start (and
    /// the recovery point, which is about local bytes) moves; the partition's
    /// log start, high watermark and epoch cache still cover the remote part.
    fn raise_local_log_start_locked(&self, new_start: Offset) {
        self.local_log_start_offset
            .fetch_max(new_start.0, Ordering::AcqRel);
        self.recovery_point.fetch_max(new_start.0, Ordering::AcqRel);
        self.durable_offset.fetch_max(new_start.0, Ordering::AcqRel);
    }

    /// Kafka `updateLogStartOffset` as retention needs it: start, high
    /// watermark, recovery point and the epoch cache move up together.
    fn raise_log_start_locked(&self, new_start: Offset) -> Result<(), LogError> {
        if new_start <= self.log_start_offset() {
            return Ok(());
        }
        self.log_start_offset.store(new_start.0, Ordering::Release);
        self.local_log_start_offset
            .fetch_max(new_start.0, Ordering::AcqRel);
        self.high_watermark.fetch_max(new_start.0, Ordering::AcqRel);
        self.recovery_point.fetch_max(new_start.0, Ordering::AcqRel);
        self.durable_offset.fetch_max(new_start.0, Ordering::AcqRel);
        let mut cache = self.lock_epochs();
        if cache.truncate_from_start(new_start) {
            cache.flush().map_err(|e| LogError::Checkpoint {
                path: cache.path().to_path_buf(),
                source: Box::new(e),
            })?;
        }
        Ok(())
    }

    /// Rename `<base>.snapshot` of each deleted segment to
    /// `<base>.snapshot.deleted` (Kafka `deleteProducerSnapshots` with
    /// `asyncDelete`); returns the new paths.
    fn rename_snapshots_for_deletion(
        &self,
        state: &mut AppendState,
        deleted: &[Arc<Segment>],
    ) -> Result<Vec<PathBuf>, LogError> {
        // Through the producer-state manager so it forgets them too.
        let psm = &mut state.producers;
        let mut out = Vec::new();
        let dir = self.dir();
        for s in deleted {
            if let Some(to) = psm
                .remove_and_mark_snapshot_for_deletion(s.base_offset())
                .map_err(|e| super::producers::state_error(&self.tp, e))?
            {
                out.push(to);
                continue;
            }
            // A file the manager did not list (placed after open): rename it too.
            let from = crate::format::snapshot_file(&dir, s.base_offset(), "");
            let to =
                crate::format::snapshot_file(&dir, s.base_offset(), crate::format::DELETED_SUFFIX);
            match self.fs.rename(&from, &to) {
                Ok(()) => out.push(to),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&from, "rename producer snapshot", e)),
            }
        }
        if let Some(kept) = self.snapshot().first() {
            psm.on_log_start_offset_incremented(
                kept.base_offset().max(self.local_log_start_offset()),
            );
        }
        self.publish_first_unstable(state);
        Ok(out)
    }
}
