//! The high-watermark checkpoint of a [`LogManager`] (Kafka's
//! `ReplicaManager.checkpointHighWatermarks`, the file
//! `replication-offset-checkpoint`).
//!
//! One file per log dir, in the common checkpoint text format (version 0,
//! `topic partition offset` lines), listing the high watermark of every live
//! log of that dir. It is written every
//! `replica.high.watermark.checkpoint.interval.ms` by the manager's
//! background round and at clean shutdown, atomically (tmp, fsync, rename,
//! dir fsync) like the other checkpoints. On load a log's high watermark is
//! the checkpointed value clamped to `[log start, LEO]`
//! ([`crate::Log::update_high_watermark`]); a partition without an entry
//! keeps the log start.
//!
//! A malformed file is treated as the recovery-point checkpoint is: logged
//! at WARN and ignored (every HW starts at its log start; a follower then
//! learns the leader's HW from its next fetch, a leader from its ISR).
//!
//! # Locks
//! `last_checkpoint_ms` is an atomic; no lock is taken beyond the manager's
//! `logs` read lock (via `all_logs`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use super::{checkpoint_err, LogManager};
use crate::checkpoint::OffsetCheckpointFile;
use crate::error::LogError;
use crate::format::REPLICATION_OFFSET_CHECKPOINT;
use crate::fs::SharedFs;
use crate::types::{Offset, TopicPartition};

/// Kafka's `replica.high.watermark.checkpoint.interval.ms` default.
pub const DEFAULT_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: i64 = 5_000;

/// When the high watermarks were last written.
#[derive(Debug)]
pub(super) struct HighWatermarkSchedule {
    last_checkpoint_ms: AtomicI64,
}

impl HighWatermarkSchedule {
    pub(super) fn new(now_ms: i64) -> HighWatermarkSchedule {
        HighWatermarkSchedule {
            last_checkpoint_ms: AtomicI64::new(now_ms),
        }
    }
}

/// The checkpointed high watermarks of log dir `dir`; empty when the file
/// is missing, and (with a WARN) when it is malformed or unreadable.
pub(super) fn read_high_watermarks(fs: &SharedFs, dir: &Path) -> BTreeMap<TopicPartition, Offset> {
    let file = OffsetCheckpointFile::in_dir(fs, dir, REPLICATION_OFFSET_CHECKPOINT);
    file.read().unwrap_or_else(|e| {
        tracing::warn!(error = %crate::ErrorChain(&e),
            "unreadable high-watermark checkpoint; high watermarks start at the log start");
        BTreeMap::new()
    })
}

impl LogManager {
    /// Write `replication-offset-checkpoint` in every online dir: the high
    /// watermark of each live log in that dir (an empty list for a dir
    /// without logs, so deleted partitions drop out).
    ///
    /// # Errors
    /// The first write error (its dir goes offline; the other dirs are
    /// still written).
    pub fn checkpoint_high_watermarks(&self) -> Result<(), LogError> {
        let logs = self.logs_with_futures();
        let mut first_err = None;
        for d in self.dirs.iter().filter(|d| d.health.is_online()) {
            let map: BTreeMap<TopicPartition, Offset> = logs
                .iter()
                .filter(|l| Arc::ptr_eq(l.dir_health(), &d.health))
                .map(|l| (l.topic_partition().clone(), l.high_watermark()))
                .collect();
            let file = OffsetCheckpointFile::in_dir(
                &self.config.fs,
                &d.path,
                REPLICATION_OFFSET_CHECKPOINT,
            );
            if let Err(e) = file.write(&map) {
                let e = checkpoint_err(file.path(), e);
                d.health.mark_offline_by(&e);
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// The background round's part: checkpoint when the interval passed.
    pub(super) fn maybe_checkpoint_high_watermarks(&self, now: i64) {
        let last = self
            .high_watermarks
            .last_checkpoint_ms
            .load(Ordering::Acquire);
        if now.saturating_sub(last) < self.config.replica_high_watermark_checkpoint_interval_ms {
            return;
        }
        if let Err(e) = self.checkpoint_high_watermarks() {
            tracing::error!(error = %crate::ErrorChain(&e), "high-watermark checkpoint write failed");
        }
        self.high_watermarks
            .last_checkpoint_ms
            .store(now, Ordering::Release);
    }
}
