//! The expiration task (Kafka `RLMExpirationTask`, reference §5.2): apply
//! the topic's *total* retention to local-only plus remote bytes, delete
//! expired remote segments, and clean up half-finished copies and deletes.

use std::sync::atomic::Ordering;

use super::{RemoteLogManager, TieredPartition};
use crate::error::TieredError;
use crate::tasks::plan::{expiration_plan, TotalRetention};

impl RemoteLogManager {
    /// One expiration run; returns how many remote segments it deleted.
    pub(crate) fn expire_partition(&self, p: &TieredPartition) -> Result<usize, TieredError> {
        let _run = p.expire_run.lock().unwrap_or_else(|e| e.into_inner());
        // No copy of this partition runs meanwhile: otherwise a copy could
        // finish between our listing (STARTED) and our look at `copying`,
        // and its live segment would be taken for an abandoned one.
        let _no_copy = p.copy_run.lock().unwrap_or_else(|e| e.into_inner());
        // Only the leader expires; a run queued before leadership moved
        // does nothing.
        if p.role() != super::ReplicaRole::Leader {
            return Ok(0);
        }
        let tp = &p.tip.tp;
        let segments = self
            .rlmm
            .list_remote_log_segments(&p.tip)
            .map_err(Self::metadata_err(tp))?;
        self.metrics
            .remote_log_metadata_count
            .store(segments.len() as u64, Ordering::Relaxed);
        self.metrics.remote_log_size_bytes.store(
            segments
                .iter()
                .map(|m| m.segment_size_in_bytes.max(0) as u64)
                .sum(),
            Ordering::Relaxed,
        );
        if segments.is_empty() {
            return Ok(0);
        }
        let config = p.log.config();
        let highest = p.highest_remote.load(Ordering::Acquire);
        let local_only: u64 = p
            .log
            .segments()
            .iter()
            .filter(|s| s.base_offset.0 > highest)
            .map(|s| s.size)
            .sum();
        let copying = p.copying.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let plan = expiration_plan(
            &segments,
            p.log_start_offset(),
            local_only,
            TotalRetention {
                retention_ms: config.retention_ms,
                retention_bytes: config.retention_bytes,
            },
            self.clock.now_ms(),
            &copying,
        );
        // The new start is published before deleting, so no reader is sent
        // to a segment that is about to go.
        if let Some(start) = plan.new_log_start {
            p.log_start.fetch_max(start.0, Ordering::AcqRel);
            // Total retention covers the local copies too: local retention
            // removes segments below the new start (Kafka
            // `updateLogStartOffsetFromRemoteTier`).
            if start > p.log.log_start_offset() && start <= p.log.high_watermark() {
                p.log
                    .maybe_increment_log_start_offset(start)
                    .map_err(|source| TieredError::Log {
                        tp: tp.clone(),
                        source: Box::new(source),
                    })?;
            }
        }
        let mut deleted = 0;
        for (id, reason) in &plan.deletions {
            let Some(md) = segments.iter().find(|m| m.segment_id.id == *id) else {
                continue;
            };
            tracing::info!(%tp, base = %md.start_offset, end = %md.end_offset, ?reason, "deleting remote segment");
            self.delete_remote_segment(tp, md)?;
            deleted += 1;
        }
        // The crash tests wait for whole passes after a restart.
        tracing::debug!(%tp, deleted, "expiration pass finished");
        Ok(deleted)
    }
}
