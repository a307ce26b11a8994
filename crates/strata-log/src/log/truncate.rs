//! Truncation (§8.7), log-start moves and delayed deletion of segment files.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{AppendState, Log};
use crate::error::LogError;
use crate::format::DELETED_SUFFIX;
use crate::segment::segment_config;
use crate::segment::Segment;
use crate::types::Offset;

/// A segment renamed to `.deleted`, removed once `due_ms` has passed.
pub(crate) struct PendingDelete {
    pub segment: Arc<Segment>,
    pub due_ms: i64,
}

impl Log {
    /// Kafka `truncateTo`: remove everything at and above `offset` (whole
    /// batches: a target inside a batch removes the batch). A no-op at or
    /// above the log end; below the first segment the log is emptied and
    /// restarts at `offset`.
    ///
    /// # Errors
    /// [`LogError::InvalidOffset`] for a negative offset; storage errors.
    pub fn truncate_to(&self, offset: Offset) -> Result<(), LogError> {
        if offset.0 < 0 {
            return Err(LogError::InvalidOffset {
                tp: self.tp.clone(),
                offset,
                reason: "cannot truncate to a negative offset",
            });
        }
        let mut g = self.lock_append()?;
        if offset >= self.log_end_offset() {
            // Nothing to cut, but an epoch a leader assigned at its log end
            // and never wrote in must go (Kafka `truncateTo`): a later leader's data may
            // fill those offsets in another epoch.
            let r = self.trim_epochs_at_end(self.log_end_offset());
            return self.fail(r);
        }
        if offset < self.high_watermark() {
            // Only after an unclean election, or when the HW was never safe
            // (Kafka logs it too); the HW is clamped to the new end below.
            tracing::warn!(tp = %self.tp, offset = offset.0, high_watermark = self.high_watermark().0,
                "truncating below the high watermark");
        }
        let below_active = self
            .snapshot()
            .last()
            .is_some_and(|s| offset < s.base_offset());
        let r = self.truncate_locked(&mut g, offset);
        if r.is_ok() && below_active {
            self.lower_cleaner_checkpoint();
        }
        self.fail(r)
    }

    fn truncate_locked(&self, state: &mut AppendState, offset: Offset) -> Result<(), LogError> {
        let segs = self.snapshot();
        let now = self.clock.now_ms();
        if offset < segs[0].base_offset() {
            return self.truncate_fully_locked(state, offset);
        }
        let keep = segs.iter().filter(|s| s.base_offset() <= offset).count();
        let (kept, dropped) = segs.split_at(keep);
        // Kafka leaves a truncation in the page cache. Strata makes it
        // durable, in order: first the renames of the dropped segments, then
        // the truncation of the new active one, before anything is appended
        // after it. Otherwise a power loss could keep a truncated segment
        // while undoing the renames (old data back after a hole), or undo
        // the truncation while keeping later durable appends (overlapping
        // offsets). The renames go from the highest segment down: a power
        // loss between two of them keeps a prefix of the directory's
        // operations, which then leaves the log shorter but whole, never a
        // lower segment gone with higher ones still there (a hole).
        self.schedule_delete_from_the_top(dropped)?;
        // The producer snapshots of the removed tail go with it, durably: a
        // power loss must not bring back a snapshot of the old batches once
        // new ones fill the same offsets (recovery would trust it).
        let snapshots_gone = state
            .producers
            .delete_snapshots_above(offset)
            .map_err(|e| super::producers::state_error(&self.tp, e))?;
        if !dropped.is_empty() || snapshots_gone {
            self.fsync_dir()?;
        }
        let active = kept.last().expect("offset >= first base").clone();
        active.truncate_to(offset, now)?;
        active.flush()?;
        self.publish_segments(kept.to_vec());
        self.log_end_offset.store(offset.0, Ordering::Release);
        self.after_truncation(offset);
        // Kafka `loadProducerState(targetOffset)`: snapshots above the new
        // end go, the state is reloaded from the newest one left plus the log.
        let r = super::producers::rebuild(
            &mut state.producers,
            kept,
            self.local_log_start_offset(),
            offset,
            false,
            now,
        );
        // Kafka `truncateTo` ends with `updateHighWatermark`: completed
        // transactions the (clamped) high watermark passed are stable.
        state
            .producers
            .on_high_watermark_updated(self.high_watermark());
        self.publish_first_unstable(state);
        r
    }

    /// Empty the log and restart it at `offset`; caller holds the append lock.
    pub(super) fn truncate_fully_locked(
        &self,
        state: &mut AppendState,
        offset: Offset,
    ) -> Result<(), LogError> {
        let segs = self.snapshot();
        self.schedule_delete_from_the_top(&segs)?;
        // Every snapshot goes, durably with the renames (see `truncate_locked`).
        state
            .producers
            .delete_snapshots_above(Offset(-1))
            .map_err(|e| super::producers::state_error(&self.tp, e))?;
        let cfg = self.config_arc();
        let seg = Segment::create(
            &self.fs,
            &self.handles,
            &self.dir(),
            offset,
            segment_config(&cfg, true),
            self.clock.now_ms(),
            "",
        )?;
        seg.resize_indexes(cfg.segment_index_bytes.max(0) as usize)?;
        // Durable before anything is appended (see `truncate_locked`).
        self.fsync_dir()?;
        self.publish_segments(vec![Arc::new(seg)]);
        {
            let mut cache = self.lock_epochs();
            cache.clear_and_flush().map_err(|e| LogError::Checkpoint {
                path: cache.path().to_path_buf(),
                source: Box::new(e),
            })?;
        }
        self.log_end_offset.store(offset.0, Ordering::Release);
        self.log_start_offset.store(offset.0, Ordering::Release);
        self.local_log_start_offset
            .store(offset.0, Ordering::Release);
        self.recovery_point.store(offset.0, Ordering::Release);
        self.durable_offset.store(offset.0, Ordering::Release);
        self.high_watermark.store(offset.0, Ordering::Release);
        let r = state
            .producers
            .truncate_fully_and_start_at(offset)
            .map_err(|e| super::producers::state_error(&self.tp, e));
        self.publish_first_unstable(state);
        r
    }

    /// Kafka `ReplicaFetcherTierStateMachine.buildRemoteLogAuxState`, the
    /// local half: a follower more than its whole local log behind a tiered
    /// leader restarts its log at the leader's local log start `start`
    /// (empty, nothing fetched yet), with the partition's log start at
    /// `log_start` (the earliest offset in the remote tier; never above
    /// `start`), the leader-epoch entries of the remote segment that ends
    /// at `start - 1` (those starting at or before `start`) and that
    /// segment's producer snapshot (taken at `start`) as its producer state.
    /// `None` for the snapshot: no producer had written by then.
    ///
    /// # Errors
    /// [`LogError::InvalidOffset`] for a negative `start`; a malformed
    /// snapshot or epoch entry; storage errors (the dir goes offline).
    pub fn restore_from_remote(
        &self,
        start: Offset,
        log_start: Offset,
        epochs: &[(crate::types::LeaderEpoch, Offset)],
        producer_snapshot: Option<&[u8]>,
    ) -> Result<(), LogError> {
        if start.0 < 0 {
            return Err(LogError::InvalidOffset {
                tp: self.tp.clone(),
                offset: start,
                reason: "cannot restart a log at a negative offset",
            });
        }
        let mut g = self.lock_append()?;
        let r =
            self.restore_from_remote_locked(&mut g, start, log_start, epochs, producer_snapshot);
        self.publish_first_unstable(&g);
        self.fail(r)
    }

    fn restore_from_remote_locked(
        &self,
        state: &mut AppendState,
        start: Offset,
        log_start: Offset,
        epochs: &[(crate::types::LeaderEpoch, Offset)],
        producer_snapshot: Option<&[u8]>,
    ) -> Result<(), LogError> {
        self.truncate_fully_locked(state, start)?;
        let log_start = Offset(log_start.0.clamp(0, start.0));
        self.log_start_offset.store(log_start.0, Ordering::Release);
        {
            let entries: Vec<crate::codec::leader_epoch::EpochEntry> = epochs
                .iter()
                .filter(|(_, o)| *o <= start)
                .map(
                    |&(epoch, start_offset)| crate::codec::leader_epoch::EpochEntry {
                        epoch,
                        start_offset,
                    },
                )
                .collect();
            let mut cache = self.lock_epochs();
            cache
                .assign_all(&entries)
                .map_err(|e| LogError::Checkpoint {
                    path: cache.path().to_path_buf(),
                    source: Box::new(e),
                })?;
        }
        let Some(bytes) = producer_snapshot else {
            return Ok(());
        };
        let path = crate::format::snapshot_file(&self.dir(), start, "");
        crate::fs::write_atomically(self.fs.as_ref(), &path, bytes)
            .map_err(|e| LogError::io(&path, "write the remote producer snapshot", e))?;
        self.fsync_dir()?;
        // Kafka `truncateFullyAndReloadSnapshots` + `loadProducerState(start)`.
        state
            .producers
            .truncate_fully_and_reload_snapshots()
            .map_err(|e| super::producers::state_error(&self.tp, e))?;
        // Snapshots at or below the log start are dropped by the reload; the
        // one at `start` must stay.
        let below = Offset(log_start.0.min(start.0 - 1));
        super::producers::rebuild(
            &mut state.producers,
            &self.snapshot(),
            below,
            start,
            true,
            self.clock.now_ms(),
        )
    }

    fn fsync_dir(&self) -> Result<(), LogError> {
        let dir = self.dir();
        crate::fs::fsync_dir(self.fs.as_ref(), &dir)
            .map_err(|e| LogError::io(&dir, "fsync partition dir", e))
    }

    fn after_truncation(&self, offset: Offset) {
        {
            let mut cache = self.lock_epochs();
            if cache.truncate_from_end(offset) {
                if let Err(e) = cache.flush() {
                    tracing::warn!(tp = %self.tp, error = %crate::ErrorChain(&e), "leader-epoch checkpoint write failed");
                }
            }
        }
        self.log_start_offset.fetch_min(offset.0, Ordering::AcqRel);
        self.local_log_start_offset
            .fetch_min(offset.0, Ordering::AcqRel);
        self.recovery_point.fetch_min(offset.0, Ordering::AcqRel);
        self.durable_offset.fetch_min(offset.0, Ordering::AcqRel);
        self.high_watermark.fetch_min(offset.0, Ordering::AcqRel);
    }

    /// [`Log::schedule_delete`] in descending offset order, for the
    /// truncations that remove the top of the log (see `truncate_locked`).
    fn schedule_delete_from_the_top(&self, segments: &[Arc<Segment>]) -> Result<(), LogError> {
        let top_down: Vec<Arc<Segment>> = segments.iter().rev().cloned().collect();
        self.schedule_delete(&top_down)
    }

    /// Rename segments to `.deleted` now and remove them after
    /// `file.delete.delay.ms` (§8.8); in-flight reads keep working.
    pub(crate) fn schedule_delete(&self, segments: &[Arc<Segment>]) -> Result<(), LogError> {
        if segments.is_empty() {
            return Ok(());
        }
        let due = self
            .clock
            .now_ms()
            .saturating_add(self.config_arc().file_delete_delay_ms);
        let mut pending = self
            .pending_deletes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for s in segments {
            s.change_suffix("", DELETED_SUFFIX)?;
            pending.push(PendingDelete {
                segment: s.clone(),
                due_ms: due,
            });
        }
        Ok(())
    }

    /// Remove `.deleted` files whose delay has passed; returns how many
    /// segments were removed.
    ///
    /// # Errors
    /// Storage errors (the dir goes offline).
    pub fn delete_expired_files(&self) -> Result<usize, LogError> {
        let now = self.clock.now_ms();
        let due: Vec<PendingDelete> = {
            let mut pending = self
                .pending_deletes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let (due, keep) = pending.drain(..).partition(|p| p.due_ms <= now);
            *pending = keep;
            due
        };
        let n = due.len();
        let dir = self.dir();
        let r = due.iter().try_for_each(|p| {
            p.segment.delete_files()?;
            // The producer snapshot retention renamed with the segment.
            let snap = crate::format::snapshot_file(&dir, p.segment.base_offset(), DELETED_SUFFIX);
            match self.fs.remove_file(&snap) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(LogError::io(&snap, "delete producer snapshot", e)),
            }
        });
        self.fail(r)?;
        Ok(n)
    }

    /// Raise the log start offset (DeleteRecords); never above the high
    /// watermark. Returns the (possibly unchanged) log start offset.
    ///
    /// # Errors
    /// [`LogError::OffsetOutOfRange`] above the high watermark.
    pub fn maybe_increment_log_start_offset(&self, new_start: Offset) -> Result<Offset, LogError> {
        let mut g = self.lock_append()?;
        let hw = self.high_watermark();
        if new_start > hw {
            return Err(LogError::OffsetOutOfRange {
                tp: self.tp.clone(),
                requested: new_start,
                log_start: self.log_start_offset(),
                log_end: hw,
            });
        }
        if new_start > self.log_start_offset() {
            self.log_start_offset.store(new_start.0, Ordering::Release);
            // The local start never lags the partition's (Kafka
            // `maybeIncrementLogStartOffset`); segments wholly below it go
            // at the next retention pass.
            self.local_log_start_offset
                .fetch_max(new_start.0, Ordering::AcqRel);
            g.producers.on_log_start_offset_incremented(new_start);
            self.publish_first_unstable(&g);
            let mut cache = self.lock_epochs();
            if cache.truncate_from_start(new_start) {
                cache.flush().map_err(|e| LogError::Checkpoint {
                    path: cache.path().to_path_buf(),
                    source: Box::new(e),
                })?;
            }
        }
        Ok(self.log_start_offset())
    }
}
