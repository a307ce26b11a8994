//! The copy task (Kafka `RLMCopyTask`, reference §5.1): upload sealed
//! segments below the last stable offset, metadata first.
//!
//! Order per segment, which is what makes a crash at any point safe:
//! 1. `COPY_SEGMENT_STARTED` is written (a fresh segment id per attempt);
//! 2. the bytes are uploaded (companions, `.log` last);
//! 3. `COPY_SEGMENT_FINISHED` is written, then `highest_remote` rises
//!    (only now may local retention delete the local copy).
//!
//! A crash between 1 and 3 leaves a STARTED segment nobody owns: the
//! expiration task deletes it ([`crate::tasks::plan::RemoteDeletionReason::AbandonedCopy`])
//! and the next copy run uploads the segment again under a new id, since
//! resumption starts after the highest FINISHED offset.

use std::sync::atomic::Ordering;

use strata_log::LeaderEpochCache;
use strata_log::{format, LeaderEpoch, Offset, TopicPartition};

use super::{RemoteLogManager, TieredPartition};
use crate::error::TieredError;
use crate::metadata::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
};
use crate::metrics::TieredMetrics;
use crate::rsm::LogSegmentData;
use crate::tasks::plan::{copy_candidates, epoch_checkpoint_text, segment_epochs, LocalSegment};

impl RemoteLogManager {
    /// One copy run for one partition; returns how many segments it copied.
    pub(crate) fn copy_partition(&self, p: &TieredPartition) -> Result<usize, TieredError> {
        let _run = p.copy_run.lock().unwrap_or_else(|e| e.into_inner());
        // Only the leader copies (Kafka cancels a follower's copy task); a
        // run queued before the leadership moved does nothing.
        if p.role() != super::ReplicaRole::Leader {
            return Ok(0);
        }
        let log = &p.log;
        // `remote.log.copy.disable=true`: read-only tiering, expiration only.
        if log.config().remote_log_copy_disable {
            return Ok(0);
        }
        let infos = log.segments();
        let locals: Vec<LocalSegment> = infos
            .iter()
            .map(|s| LocalSegment {
                base_offset: s.base_offset,
                next_offset: s.next_offset,
                size: s.size,
            })
            .collect();
        let highest = p.highest_remote.load(Ordering::Acquire);
        let copied = (highest >= 0).then_some(Offset(highest));
        let candidates = copy_candidates(
            &locals,
            copied,
            log.log_start_offset(),
            log.last_stable_offset(),
        );
        if candidates.is_empty() {
            return Ok(0);
        }
        let epochs = epoch_entries(log)?;
        let mut copied = 0;
        for i in candidates {
            let (seg, next) = (&infos[i], infos[i + 1].base_offset);
            self.copy_segment(p, seg, next, &epochs)?;
            copied += 1;
            self.copied_since_retention.store(true, Ordering::Release);
        }
        Ok(copied)
    }

    fn copy_segment(
        &self,
        p: &TieredPartition,
        seg: &strata_log::SegmentInfo,
        next: Offset,
        epochs: &[(LeaderEpoch, Offset)],
    ) -> Result<(), TieredError> {
        let tp = &p.tip.tp;
        let dir = p.log.dir();
        let id = RemoteLogSegmentId::generate(p.tip.clone());
        let md = RemoteLogSegmentMetadata {
            segment_id: id.clone(),
            start_offset: seg.base_offset,
            end_offset: Offset(next.0 - 1),
            max_timestamp: seg.max_timestamp,
            broker_id: self.broker_id,
            event_timestamp_ms: self.clock.now_ms(),
            segment_leader_epochs: segment_epochs(epochs, seg.base_offset, next),
            segment_size_in_bytes: i32::try_from(seg.size).unwrap_or(i32::MAX),
            custom_metadata: None,
            state: RemoteLogSegmentState::CopySegmentStarted,
        };
        let txn = format::txn_index_file(&dir, seg.base_offset, "");
        let snapshot = format::snapshot_file(&dir, next, "");
        let data = LogSegmentData {
            log_segment: seg.log_path.clone(),
            offset_index: seg.index_path.clone(),
            time_index: seg.time_index_path.clone(),
            // Strata keeps an empty `.txnindex` for every segment; like
            // Kafka (whose file exists only once an abort was indexed) only
            // one with entries is uploaded, and a missing remote one reads
            // as empty.
            transaction_index: std::fs::metadata(&txn)
                .is_ok_and(|m| m.len() > 0)
                .then_some(txn),
            producer_snapshot: snapshot.exists().then_some(snapshot),
            leader_epoch_index: epoch_checkpoint_text(epochs, next),
        };
        p.copying
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.id);
        let result = self.copy_registered(p, &md, &data);
        p.copying
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id.id);
        if result.is_err() {
            TieredMetrics::add(&self.metrics.remote_copy_errors, 1);
        }
        result.inspect(|()| {
            tracing::info!(%tp, base = %md.start_offset, end = %md.end_offset, size = seg.size, "segment copied to remote storage");
        })
    }

    fn copy_registered(
        &self,
        p: &TieredPartition,
        md: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<(), TieredError> {
        let tp = &p.tip.tp;
        self.rlmm
            .add_remote_log_segment_metadata(md.clone())
            .map_err(Self::metadata_err(tp))?;
        TieredMetrics::add(&self.metrics.remote_copy_requests, 1);
        let custom = match self.rsm.copy_log_segment_data(md, data) {
            Ok(custom) => custom,
            Err(source) => {
                // Undo what may have been written; if this fails too the
                // expiration task retries it.
                if let Err(error) = self.delete_remote_segment(tp, md) {
                    tracing::warn!(%tp, %error, "cleanup of a failed copy failed");
                }
                return Err(TieredError::Storage {
                    tp: tp.clone(),
                    source: Box::new(source),
                });
            }
        };
        if custom
            .as_ref()
            .is_some_and(|c| c.len() > self.config.custom_metadata_max_bytes)
        {
            self.delete_remote_segment(tp, md)?;
            return Ok(());
        }
        self.rlmm
            .update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate {
                segment_id: md.segment_id.clone(),
                event_timestamp_ms: self.clock.now_ms(),
                custom_metadata: custom,
                state: RemoteLogSegmentState::CopySegmentFinished,
                broker_id: self.broker_id,
            })
            .map_err(Self::metadata_err(tp))?;
        TieredMetrics::add(
            &self.metrics.remote_copy_bytes,
            md.segment_size_in_bytes.max(0) as u64,
        );
        p.highest_remote
            .fetch_max(md.end_offset.0, Ordering::AcqRel);
        Ok(())
    }

    /// DELETE_SEGMENT_STARTED → delete the objects → DELETE_SEGMENT_FINISHED.
    /// Resumes a delete that already started.
    pub(crate) fn delete_remote_segment(
        &self,
        tp: &TopicPartition,
        md: &RemoteLogSegmentMetadata,
    ) -> Result<(), TieredError> {
        let update = |state| RemoteLogSegmentMetadataUpdate {
            segment_id: md.segment_id.clone(),
            event_timestamp_ms: self.clock.now_ms(),
            custom_metadata: md.custom_metadata.clone(),
            state,
            broker_id: self.broker_id,
        };
        if md.state != RemoteLogSegmentState::DeleteSegmentStarted {
            self.rlmm
                .update_remote_log_segment_metadata(update(
                    RemoteLogSegmentState::DeleteSegmentStarted,
                ))
                .map_err(Self::metadata_err(tp))?;
            tracing::debug!(%tp, id = %md.segment_id, "DELETE_SEGMENT_STARTED written");
        }
        TieredMetrics::add(&self.metrics.remote_delete_requests, 1);
        if let Err(source) = self.rsm.delete_log_segment_data(md) {
            TieredMetrics::add(&self.metrics.remote_delete_errors, 1);
            return Err(TieredError::Storage {
                tp: tp.clone(),
                source: Box::new(source),
            });
        }
        self.index_cache.remove(md);
        self.rlmm
            .update_remote_log_segment_metadata(update(
                RemoteLogSegmentState::DeleteSegmentFinished,
            ))
            .map_err(Self::metadata_err(tp))
    }
}

/// The log's leader-epoch entries, read from its checkpoint file.
fn epoch_entries(log: &strata_log::Log) -> Result<Vec<(LeaderEpoch, Offset)>, TieredError> {
    let cache = LeaderEpochCache::load(log.fs(), &log.dir()).map_err(|e| TieredError::Log {
        tp: log.topic_partition().clone(),
        source: Box::new(strata_log::LogError::Checkpoint {
            path: log.dir().join(format::LEADER_EPOCH_CHECKPOINT),
            source: Box::new(e),
        }),
    })?;
    Ok(cache
        .entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect())
}
