//! Appends: leader (validate, assign offsets in place) and follower (batches
//! that carry their offsets), flush policy and durable group commit.

use std::sync::atomic::Ordering;

use super::{AppendState, Log, LogAppendInfo};
use crate::batch::{
    assign_offsets_in_place, validate_batch, validate_client_records_with, AppendValidation,
};
use crate::batch::{BatchScanner, BatchView, TimestampType};
use crate::error::LogError;
use crate::producer_state::AppendOrigin;
use crate::types::{LeaderEpoch, Offset, Timestamp};

/// The shape of one append, computed before it is written.
pub(super) struct Shape {
    pub(super) first_offset: Offset,
    pub(super) last_offset: Offset,
    pub(super) max_timestamp: Timestamp,
    pub(super) offset_of_max_timestamp: Offset,
    pub(super) records_count: i64,
}

impl Log {
    /// Leader append of one client batch (Produce): validate it with the
    /// log's config, assign offsets from the log end and the leader epoch in
    /// place, stamp LogAppendTime when configured, then write it.
    ///
    /// A retried batch of an idempotent producer is not written: the answer
    /// carries the original offsets and `duplicate: true`.
    ///
    /// # Errors
    /// [`LogError::Batch`] for invalid records, [`LogError::RecordBatchTooLarge`]
    /// above `segment.bytes`, [`LogError::ProducerState`] for a stale epoch,
    /// an out-of-order sequence or a transaction rule (nothing written),
    /// storage errors (the dir goes offline).
    pub fn append_as_leader(
        &self,
        records: &mut [u8],
        leader_epoch: LeaderEpoch,
    ) -> Result<LogAppendInfo, LogError> {
        self.append_as_leader_with(records, leader_epoch, true)
    }

    /// [`Log::append_as_leader`] that leaves a durable log's fsync
    /// (`strata.durable.append`) to the caller: the batch is durable once
    /// `flush_up_to(info.last_offset + 1)` returned, and must not be
    /// acknowledged before. The produce path uses it to overlap one
    /// request's fsync with the appends of the requests behind it; the
    /// fsyncs of appends made meanwhile are shared (group commit).
    ///
    /// # Errors
    /// As [`Log::append_as_leader`].
    pub fn append_as_leader_unsynced(
        &self,
        records: &mut [u8],
        leader_epoch: LeaderEpoch,
    ) -> Result<LogAppendInfo, LogError> {
        self.append_as_leader_with(records, leader_epoch, false)
    }

    fn append_as_leader_with(
        &self,
        records: &mut [u8],
        leader_epoch: LeaderEpoch,
        sync: bool,
    ) -> Result<LogAppendInfo, LogError> {
        let cfg = self.config_arc();
        let now = self.clock.now_ms();
        let validation = AppendValidation {
            max_message_bytes: cfg.max_message_bytes.max(0) as usize,
            compacted: cfg.cleanup_policy.compact,
            timestamp_type: cfg.message_timestamp_type,
            timestamp_before_max_ms: cfg.message_timestamp_before_max_ms,
            timestamp_after_max_ms: cfg.message_timestamp_after_max_ms,
            now: Timestamp(now),
        };
        let mut scratch = Vec::new();
        let validated = validate_client_records_with(
            records,
            &validation,
            &mut scratch,
            cfg.max_decompressed_batch_bytes,
        )
        .map_err(|source| LogError::Batch {
            tp: self.tp.clone(),
            source,
        })?;
        self.check_segment_size(records.len(), cfg.segment_bytes)?;
        let mut guard = self.lock_append()?;
        if let Some(mut dup) = self.find_duplicate(&guard, records) {
            drop(guard);
            if cfg.message_timestamp_type == TimestampType::LogAppendTime {
                dup.log_append_time = Some(dup.max_timestamp);
            }
            if cfg.durable_append && sync {
                self.flush_up_to(dup.last_offset.plus(1))?;
            }
            return Ok(dup);
        }
        let first = self.log_end_offset();
        let last = assign_offsets_in_place(
            records,
            &validated,
            first,
            leader_epoch,
            cfg.message_timestamp_type,
        )
        .map_err(|source| LogError::Batch {
            tp: self.tp.clone(),
            source,
        })?;
        let delta = validated.shallow_offset_delta_of_max_timestamp;
        let shape = Shape {
            first_offset: first,
            last_offset: last,
            max_timestamp: validated.max_timestamp,
            offset_of_max_timestamp: if delta >= 0 { first.plus(delta) } else { first },
            records_count: validated.total_records,
        };
        let updates = self.validate_producers(&guard, records, AppendOrigin::Client)?;
        if leader_epoch.0 >= 0 {
            self.maybe_assign_epoch(leader_epoch, first)?;
        }
        self.hold_lso_for(records);
        let mut info = self.write_locked(&mut guard, records, &shape, &cfg)?;
        self.apply_producers(&mut guard, updates, info.last_offset.plus(1))?;
        info.log_append_time = validated.log_append_time;
        debug_assert!(
            cfg.message_timestamp_type == TimestampType::CreateTime
                || info.log_append_time.is_some()
        );
        drop(guard);
        self.after_append(records, &info, cfg.durable_append && sync)?;
        Ok(info)
    }

    /// Append batches that already carry their offsets (followers, internal
    /// writers, tests). Checks CRCs, offsets monotonic and at or above the log
    /// end, size; does not validate records (Kafka's replication path).
    ///
    /// The batches are written one at a time, each with its own roll check
    /// and sparse-index step, exactly as the leader wrote them (one batch
    /// per produce append): a follower's segment boundaries and index files
    /// then equal the leader's whatever the fetch size, so the replicas'
    /// files stay byte-identical (Kafka's follower weighs the whole append
    /// for the roll, so its boundaries can differ). All checks run before
    /// the first write; a storage error mid-way takes the dir offline.
    ///
    /// # Errors
    /// [`LogError::Batch`], [`LogError::UnexpectedAppendOffset`],
    /// [`LogError::NonMonotonicOffsets`], [`LogError::RecordBatchTooLarge`],
    /// storage errors.
    pub fn append_as_follower(&self, records: &[u8]) -> Result<LogAppendInfo, LogError> {
        let cfg = self.config_arc();
        let batch_err = |source| LogError::Batch {
            tp: self.tp.clone(),
            source,
        };
        let mut shape: Option<Shape> = None;
        let mut batches: Vec<(std::ops::Range<usize>, Shape)> = Vec::new();
        let mut epochs = Vec::new();
        let mut scanner = BatchScanner::new(records);
        for item in scanner.by_ref() {
            let (pos, _) = item.map_err(batch_err)?;
            let view =
                BatchView::parse(&records[pos..]).map_err(|e| batch_err(e.at(pos as u64)))?;
            validate_batch(&view).map_err(|e| batch_err(e.at(pos as u64)))?;
            // Each batch must fit a segment; a fetch response holds many.
            self.check_segment_size(view.size(), cfg.segment_bytes)?;
            let (base, last) = (view.base_offset(), view.last_offset());
            let ts = view.max_timestamp();
            batches.push((
                pos..pos + view.size(),
                Shape {
                    first_offset: base,
                    last_offset: last,
                    max_timestamp: ts,
                    offset_of_max_timestamp: last,
                    records_count: view.records_count() as i64,
                },
            ));
            match &mut shape {
                None => {
                    shape = Some(Shape {
                        first_offset: base,
                        last_offset: last,
                        max_timestamp: ts,
                        offset_of_max_timestamp: last,
                        records_count: view.records_count() as i64,
                    })
                }
                Some(s) => {
                    if base <= s.last_offset {
                        return Err(LogError::NonMonotonicOffsets {
                            tp: self.tp.clone(),
                            previous: s.last_offset,
                            offset: base,
                        });
                    }
                    s.last_offset = last;
                    s.records_count += view.records_count() as i64;
                    if ts > s.max_timestamp {
                        s.max_timestamp = ts;
                        s.offset_of_max_timestamp = last;
                    }
                }
            }
            let epoch = view.partition_leader_epoch();
            if epoch.0 >= 0 {
                epochs.push((epoch, base));
            }
        }
        let valid = scanner.position();
        let Some(shape) = shape else {
            return Err(batch_err(crate::batch::BatchError::NoBatches));
        };
        let mut guard = self.lock_append()?;
        let leo = self.log_end_offset();
        if shape.first_offset < leo {
            return Err(LogError::UnexpectedAppendOffset {
                tp: self.tp.clone(),
                first: shape.first_offset,
                log_end: leo,
            });
        }
        // The whole append is checked first, so a rejected one writes nothing.
        self.validate_producers(&guard, &records[..valid], AppendOrigin::Replication)?;
        for (epoch, start) in epochs {
            self.maybe_assign_epoch(epoch, start)?;
        }
        for (range, batch) in &batches {
            // Per batch, so the producer snapshot a roll takes at the next
            // batch's base covers every batch before it, as on the leader.
            let bytes = &records[range.clone()];
            let updates = self.validate_producers(&guard, bytes, AppendOrigin::Replication)?;
            self.hold_lso_for(bytes);
            self.write_locked(&mut guard, bytes, batch, &cfg)?;
            self.apply_producers(&mut guard, updates, batch.last_offset.plus(1))?;
        }
        let info = LogAppendInfo {
            first_offset: shape.first_offset,
            last_offset: shape.last_offset,
            max_timestamp: shape.max_timestamp,
            offset_of_max_timestamp: shape.offset_of_max_timestamp,
            log_append_time: None,
            log_start_offset: self.log_start_offset(),
            records_count: shape.records_count,
            valid_bytes: valid,
            duplicate: false,
        };
        drop(guard);
        self.after_append(&records[..valid], &info, cfg.durable_append)?;
        Ok(info)
    }

    pub(super) fn check_segment_size(
        &self,
        size: usize,
        segment_bytes: i32,
    ) -> Result<(), LogError> {
        if size > segment_bytes.max(0) as usize {
            return Err(LogError::RecordBatchTooLarge {
                tp: self.tp.clone(),
                size,
                segment_bytes,
            });
        }
        Ok(())
    }

    pub(super) fn maybe_assign_epoch(
        &self,
        epoch: LeaderEpoch,
        start: Offset,
    ) -> Result<(), LogError> {
        let mut cache = self.lock_epochs();
        if cache.latest_epoch().is_none_or(|e| epoch > e) {
            let r = crate::segment::EpochSink::assign(&mut *cache, epoch, start);
            drop(cache);
            return self.fail(r);
        }
        Ok(())
    }

    /// Roll if needed, write to the active segment, publish the new log end.
    pub(super) fn write_locked(
        &self,
        state: &mut AppendState,
        bytes: &[u8],
        shape: &Shape,
        cfg: &crate::config::LogConfig,
    ) -> Result<LogAppendInfo, LogError> {
        let r = (|| {
            let segment = self.maybe_roll(state, cfg, bytes.len() as u64, shape)?;
            segment.append(
                shape.last_offset,
                shape.max_timestamp,
                shape.offset_of_max_timestamp,
                bytes,
            )
        })();
        self.fail(r)?;
        self.log_end_offset
            .store(shape.last_offset.0 + 1, Ordering::Release);
        Ok(LogAppendInfo {
            first_offset: shape.first_offset,
            last_offset: shape.last_offset,
            max_timestamp: shape.max_timestamp,
            offset_of_max_timestamp: shape.offset_of_max_timestamp,
            log_append_time: None,
            log_start_offset: self.log_start_offset(),
            records_count: shape.records_count,
            valid_bytes: bytes.len(),
            duplicate: false,
        })
    }

    /// Producer-state seam, `flush.messages`, durable mode.
    pub(super) fn after_append(
        &self,
        bytes: &[u8],
        info: &LogAppendInfo,
        durable: bool,
    ) -> Result<(), LogError> {
        if let Some(hook) = self
            .append_hook
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            hook(&self.tp, bytes, info);
        }
        let cfg = self.config_arc();
        let unflushed = self.log_end_offset().0 - self.recovery_point().0;
        if unflushed >= cfg.flush_messages {
            self.flush()?;
        } else if durable {
            self.flush_up_to(info.last_offset.plus(1))?;
        }
        Ok(())
    }

    /// Durable mode: make every batch below `offset` durable (fsync of the
    /// `.log` files). Concurrent callers share fsyncs: whoever holds the
    /// flush lock syncs up to the log end it sees, and the callers queued
    /// behind it return at once when their offset is covered.
    ///
    /// # Errors
    /// Storage errors (the dir goes offline).
    pub fn flush_up_to(&self, offset: Offset) -> Result<(), LogError> {
        self.check_usable()?;
        if self.durable_offset() >= offset {
            return Ok(());
        }
        let _flush = self.flush.lock().unwrap_or_else(|e| e.into_inner());
        if self.durable_offset() >= offset {
            return Ok(());
        }
        let target = self.log_end_offset();
        let from = self.durable_offset();
        let segs = self.snapshot();
        let r = (|| {
            for (i, s) in segs.iter().enumerate() {
                let next_base = segs.get(i + 1).map(|n| n.base_offset());
                if next_base.is_some_and(|n| n <= from) {
                    continue;
                }
                s.sync_log()?;
            }
            Ok(())
        })();
        self.fail(r)?;
        self.durable_offset.fetch_max(target.0, Ordering::AcqRel);
        self.durable_syncs.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Flush everything (segments, indexes, including the active segment)
    /// and raise the recovery point to the log end.
    ///
    /// # Errors
    /// Storage errors (the dir goes offline).
    pub fn flush(&self) -> Result<(), LogError> {
        let mut g = self.lock_append()?;
        let leo = self.log_end_offset();
        let r = self.flush_locked(&mut g, leo, true);
        self.fail(r)
    }

    /// Flush if `flush.ms` has passed since the last flush (background).
    ///
    /// # Errors
    /// Storage errors.
    pub fn maybe_flush_by_time(&self) -> Result<bool, LogError> {
        let cfg = self.config_arc();
        if cfg.flush_ms == i64::MAX {
            return Ok(false);
        }
        let now = self.clock.now_ms();
        let due = {
            let g = self.lock_append()?;
            now.saturating_sub(g.last_flush_ms) >= cfg.flush_ms
                && self.log_end_offset() > self.recovery_point()
        };
        if due {
            self.flush()?;
        }
        Ok(due)
    }

    /// Flush segments holding offsets in `[recovery point, offset)` and raise
    /// the recovery point; `include_active` also flushes (and so creates the
    /// index files of) an active segment starting at `offset`. Caller holds
    /// the append lock.
    pub(crate) fn flush_locked(
        &self,
        state: &mut AppendState,
        offset: Offset,
        include_active: bool,
    ) -> Result<(), LogError> {
        let _flush = self.flush.lock().unwrap_or_else(|e| e.into_inner());
        let rp = self.recovery_point();
        let segs = self.snapshot();
        for (i, s) in segs.iter().enumerate() {
            let next_base = segs.get(i + 1).map(|n| n.base_offset());
            let is_active = i + 1 == segs.len();
            if next_base.is_some_and(|n| n <= rp)
                || (s.base_offset() >= offset && !(is_active && include_active))
            {
                continue;
            }
            s.flush()?;
        }
        crate::fs::fsync_dir(self.fs.as_ref(), &self.dir())
            .map_err(|e| LogError::io(self.dir(), "fsync dir", e))?;
        if offset > rp {
            self.recovery_point.store(offset.0, Ordering::Release);
        }
        self.durable_offset.fetch_max(offset.0, Ordering::AcqRel);
        state.last_flush_ms = self.clock.now_ms();
        Ok(())
    }
}
