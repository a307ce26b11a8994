//! Appends by the transaction and group coordinators (Kafka's
//! `AppendOrigin.COORDINATOR`): COMMIT/ABORT markers written to a partition
//! this broker leads, and the transactional offset-commit batches of
//! TxnOffsetCommit written to `__consumer_offsets`.
//!
//! Unlike a client's Produce, the batch may be a control batch and its
//! producer sequence is not checked; its producer epoch is (a marker or
//! offset batch from a fenced epoch is refused with INVALID_PRODUCER_EPOCH),
//! and so is a marker's coordinator epoch (TRANSACTION_COORDINATOR_FENCED).

use super::append::Shape;
use super::{Log, LogAppendInfo};
use crate::batch::{validate_batch, validate_batch_deep, BatchView};
use crate::error::LogError;
use crate::producer_state::{AppendOrigin, ProducerStateEntry};
use crate::types::{LeaderEpoch, ProducerId};

/// Byte range of a batch's base offset, outside the CRC.
const BASE_OFFSET: std::ops::Range<usize> = 0..8;
/// Byte range of a batch's partition leader epoch, outside the CRC.
const LEADER_EPOCH: std::ops::Range<usize> = 12..16;

impl Log {
    /// Append one batch built by a coordinator (any base offset) as leader
    /// in `leader_epoch`: the base offset and leader epoch are set in place
    /// (both lie outside the CRC), the producer state checks the epochs,
    /// then the batch is written. The record timestamps are the
    /// coordinator's.
    ///
    /// # Errors
    /// [`LogError::Batch`] for a malformed batch or more than one batch,
    /// [`LogError::RecordBatchTooLarge`], [`LogError::ProducerState`] for a
    /// fenced producer or coordinator epoch (nothing written), storage
    /// errors.
    pub fn append_as_coordinator(
        &self,
        batch: &mut [u8],
        leader_epoch: LeaderEpoch,
    ) -> Result<LogAppendInfo, LogError> {
        let cfg = self.config_arc();
        let batch_err = |source| LogError::Batch {
            tp: self.tp.clone(),
            source,
        };
        let (delta, count, max_timestamp) = {
            let view = BatchView::parse(batch).map_err(batch_err)?;
            if view.size() != batch.len() {
                return Err(batch_err(crate::batch::BatchError::NoBatches));
            }
            validate_batch(&view).map_err(batch_err)?;
            validate_batch_deep(&view).map_err(batch_err)?;
            (
                view.last_offset_delta(),
                view.records_count(),
                view.max_timestamp(),
            )
        };
        self.check_segment_size(batch.len(), cfg.segment_bytes)?;
        let mut guard = self.lock_append()?;
        let first = self.log_end_offset();
        batch[BASE_OFFSET].copy_from_slice(&first.0.to_be_bytes());
        batch[LEADER_EPOCH].copy_from_slice(&leader_epoch.0.to_be_bytes());
        let last = first.plus(i64::from(delta));
        let shape = Shape {
            first_offset: first,
            last_offset: last,
            max_timestamp,
            offset_of_max_timestamp: last,
            records_count: i64::from(count),
        };
        let updates = self.validate_producers(&guard, batch, AppendOrigin::Coordinator)?;
        if leader_epoch.0 >= 0 {
            self.maybe_assign_epoch(leader_epoch, first)?;
        }
        // A transactional offset batch opens a transaction: hold the LSO.
        self.hold_lso_for(batch);
        let info = self.write_locked(&mut guard, batch, &shape, &cfg)?;
        self.apply_producers(&mut guard, updates, info.last_offset.plus(1))?;
        drop(guard);
        self.after_append(batch, &info, cfg.durable_append)?;
        Ok(info)
    }
}

impl Log {
    /// Every producer with state in this partition, by producer id
    /// (DescribeProducers).
    pub fn active_producers(&self) -> Vec<(ProducerId, ProducerStateEntry)> {
        let g = self.append.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<_> = g
            .producers
            .active_producers()
            .map(|(id, e)| (id, e.clone()))
            .collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::batch::{build_end_txn_marker, BatchBuilder, EndTransactionMarker};
    use crate::clock::MockClock;
    use crate::config::LogConfig;
    use crate::log::{DirHealth, LoadParams, Log, ReadBound};
    use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};
    use std::sync::Arc;

    fn open_log() -> (tempfile::TempDir, Arc<Log>) {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(
            &dir.path().join("t-0"),
            LogConfig::default(),
            LoadParams::default(),
            MockClock::new(1_000_000),
            DirHealth::new(dir.path()),
        )
        .unwrap();
        (dir, log)
    }

    fn txn_batch(pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
        let mut b = BatchBuilder::new(Offset(0))
            .producer(ProducerId(pid), ProducerEpoch(epoch), seq)
            .transactional(true);
        b.append(Timestamp(1000), Some(b"k"), Some(b"v"), &[]);
        b.build()
    }

    fn marker(pid: i64, epoch: i16, coordinator_epoch: i32, commit: bool) -> Vec<u8> {
        let m = if commit {
            EndTransactionMarker::commit(coordinator_epoch)
        } else {
            EndTransactionMarker::abort(coordinator_epoch)
        };
        build_end_txn_marker(
            Offset(0),
            LeaderEpoch(0),
            ProducerId(pid),
            ProducerEpoch(epoch),
            Timestamp(2000),
            m,
        )
    }

    #[test]
    fn markers_complete_transactions_and_fence_old_epochs() {
        let (_dir, log) = open_log();
        let mut data = txn_batch(7, 0, 0);
        log.append_as_leader(&mut data, LeaderEpoch(3)).unwrap();
        assert_eq!(
            log.producer_state_of(ProducerId(7))
                .unwrap()
                .current_txn_first_offset(),
            Some(Offset(0))
        );
        let info = log
            .append_as_coordinator(&mut marker(7, 0, 5, true), LeaderEpoch(3))
            .unwrap();
        assert_eq!(
            (info.first_offset, info.last_offset),
            (Offset(1), Offset(1))
        );
        let entry = log.producer_state_of(ProducerId(7)).unwrap();
        assert_eq!(entry.current_txn_first_offset(), None);
        assert_eq!(entry.coordinator_epoch(), 5);
        log.update_high_watermark(log.log_end_offset());
        let all = log
            .read(Offset(0), 1 << 20, ReadBound::HighWatermark, true)
            .unwrap()
            .read_to_vec()
            .unwrap();
        assert_eq!(crate::batch::BatchScanner::new(&all).count(), 2);
        // The written batch carries the log's offset and leader epoch.
        let data = log
            .read(Offset(1), 1 << 20, ReadBound::LogEnd, true)
            .unwrap()
            .read_to_vec()
            .unwrap();
        let view = crate::batch::BatchView::parse(&data).unwrap();
        assert!(view.is_crc_valid() && view.is_control());
        assert_eq!(view.base_offset(), Offset(1));
        assert_eq!(view.partition_leader_epoch(), LeaderEpoch(3));
        // A marker from an older coordinator epoch is fenced, one from an
        // older producer epoch too; nothing is written.
        assert!(log
            .append_as_coordinator(&mut marker(7, 0, 4, false), LeaderEpoch(3))
            .is_err());
        let mut bumped = marker(7, 1, 5, false);
        log.append_as_coordinator(&mut bumped, LeaderEpoch(3))
            .unwrap();
        assert!(log
            .append_as_coordinator(&mut marker(7, 0, 5, false), LeaderEpoch(3))
            .is_err());
        assert_eq!(log.log_end_offset(), Offset(3));
    }

    #[test]
    fn a_client_cannot_send_a_control_batch() {
        let (_dir, log) = open_log();
        assert!(log
            .append_as_leader(&mut marker(7, 0, 5, true), LeaderEpoch(0))
            .is_err());
        assert_eq!(log.log_end_offset(), Offset(0));
    }
}
