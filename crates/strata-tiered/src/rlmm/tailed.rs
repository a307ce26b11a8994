//! [`TailedRlmm`]: a cluster broker's catalogue (Kafka
//! `TopicBasedRemoteLogMetadataManager` with its producer and its consumer
//! task, reference §4.4–4.5).
//!
//! `__remote_log_metadata` is an ordinary replicated topic then. An event
//! is checked against the state machine, written through a
//! [`MetadataWriter`] (to the metadata partition's leader, acknowledged by
//! its in-sync replicas), and applied to the catalogue only when the
//! broker's reader hands it back from the topic ([`TailedRlmm::apply_record`]),
//! in offset order. So every broker's catalogue is a replay of the same
//! replicated log, whether it hosts a metadata partition or not, and a
//! writer waits until its own record came back (read-your-writes, as
//! Kafka's RLMM waits for its consumer).
//!
//! Until the reader has caught up with the end of every metadata partition
//! once ([`TailedRlmm::set_ready`]), [`RemoteLogMetadataManager::is_ready`]
//! is false and the remote log manager runs no task (Kafka answers
//! `ReplicaNotAvailableException` then).
//!
//! # Locks
//!
//! `progress` (with `read_back`) holds the next offset to apply per
//! metadata partition; `apply_record` takes it after the catalogue's own
//! lock is released, so a writer waiting on it never blocks the reader.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use strata_log::{LeaderEpoch, Offset, Timestamp};

use super::cache::MemoryRlmm;
use super::{partitioner, serde, MetadataEvent, RemoteLogMetadataManager};
use crate::error::MetadataError;
use crate::metadata::{
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    TopicIdPartition,
};

/// Where a cluster broker's metadata records go.
pub trait MetadataWriter: Send + Sync + std::fmt::Debug {
    fn num_partitions(&self) -> i32;

    /// Append one record value to metadata partition `partition` and wait
    /// until its in-sync replicas hold it (acks=all); its offset.
    ///
    /// # Errors
    /// [`MetadataError::Write`].
    fn write(
        &self,
        partition: i32,
        value: &[u8],
        timestamp: Timestamp,
    ) -> Result<Offset, MetadataError>;

    /// The broker is stopping: stop retrying.
    fn close(&self);
}

#[derive(Debug, Default)]
struct Progress {
    /// Next offset to apply, per metadata partition.
    next: HashMap<i32, i64>,
    ready: bool,
    /// Set by [`RemoteLogMetadataManager::close`]: writes fail at once.
    closed: bool,
}

/// The catalogue fed by a reader of the replicated metadata topic.
#[derive(Debug)]
pub struct TailedRlmm {
    writer: Arc<dyn MetadataWriter>,
    cache: MemoryRlmm,
    clock: strata_log::SharedClock,
    progress: Mutex<Progress>,
    read_back: Condvar,
    read_back_timeout: Duration,
}

impl TailedRlmm {
    /// An empty, not yet ready catalogue; a writer waits at most
    /// `read_back_timeout` for its record to come back.
    pub fn new(
        writer: Arc<dyn MetadataWriter>,
        clock: strata_log::SharedClock,
        read_back_timeout: Duration,
    ) -> TailedRlmm {
        TailedRlmm {
            writer,
            cache: MemoryRlmm::new(),
            clock,
            progress: Mutex::new(Progress::default()),
            read_back: Condvar::new(),
            read_back_timeout,
        }
    }

    pub fn num_partitions(&self) -> i32 {
        self.writer.num_partitions()
    }

    /// The next offset the reader must deliver for `partition`.
    pub fn next_offset(&self, partition: i32) -> Offset {
        let progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        Offset(progress.next.get(&partition).copied().unwrap_or(0))
    }

    /// Apply the record at `offset` of metadata partition `partition`
    /// (records of a partition arrive in offset order; one already applied
    /// is ignored). A record the state machine rejects is skipped with a
    /// warning, as Kafka does.
    pub fn apply_record(&self, partition: i32, offset: Offset, value: &[u8]) {
        if offset < self.next_offset(partition) {
            return;
        }
        let applied = serde::decode(value)
            .map_err(|source| MetadataError::Decode {
                partition,
                offset: offset.0,
                source,
            })
            .and_then(|event| self.cache.apply(&event));
        if let Err(error) = applied {
            tracing::warn!(partition, offset = offset.0, %error, "skipping remote log metadata record");
        }
        self.advance_to(partition, offset.plus(1));
    }

    /// Everything of `partition` below `next` has been delivered (records
    /// without a value, control batches).
    pub fn advance_to(&self, partition: i32, next: Offset) {
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        let at = progress.next.entry(partition).or_insert(0);
        if next.0 > *at {
            *at = next.0;
            self.read_back.notify_all();
        }
    }

    /// The reader caught up with every metadata partition's end once.
    pub fn set_ready(&self) {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ready = true;
    }

    fn publish(&self, event: MetadataEvent) -> Result<(), MetadataError> {
        if self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .closed
        {
            return Err(MetadataError::Closed);
        }
        self.cache.check(&event)?;
        let partition =
            partitioner::metadata_partition(event.partition(), self.writer.num_partitions());
        let value = serde::encode(&event);
        let offset = self
            .writer
            .write(partition, &value, Timestamp(self.clock.now_ms()))?;
        let deadline = Instant::now() + self.read_back_timeout;
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        while progress.next.get(&partition).copied().unwrap_or(0) <= offset.0 {
            let now = Instant::now();
            if now >= deadline || progress.closed {
                return Err(MetadataError::NotReadBack {
                    partition,
                    offset: offset.0,
                    waited_ms: self.read_back_timeout.as_millis() as u64,
                });
            }
            progress = self
                .read_back
                .wait_timeout(progress, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        Ok(())
    }
}

impl RemoteLogMetadataManager for TailedRlmm {
    cached_catalogue_methods!();

    fn is_ready(&self) -> bool {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ready
    }

    fn close(&self) {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .closed = true;
        self.read_back.notify_all();
        self.writer.close();
    }
}

#[cfg(test)]
#[path = "tailed_tests.rs"]
mod tests;
