//! The metadata plug-in seam (Kafka `RemoteLogMetadataManager`, reference
//! §2): a strongly consistent catalogue of remote segments.
//!
//! - [`cache`]: one partition's catalogue (Kafka `RemoteLogMetadataCache`
//!   with its per-epoch state), and [`MemoryRlmm`] over it.
//! - [`serde`]: the `__remote_log_metadata` record values (api-key framed).
//! - [`partitioner`]: user partition → metadata partition.
//! - [`topic`]: [`TopicRlmm`], which writes every event to the metadata
//!   topic before applying it and rebuilds the catalogue from it at start
//!   (a single node: the topic's partitions are local logs).
//! - [`tailed`]: [`tailed::TailedRlmm`], a cluster broker's catalogue: writes go
//!   to the replicated topic's leaders, the catalogue applies what a reader
//!   of the topic hands back.

/// The [`RemoteLogMetadataManager`] methods of a catalogue whose reads are
/// answered by its `cache: MemoryRlmm` field and whose writes go through its
/// own `publish(MetadataEvent)` (the topic-backed and the tailed
/// catalogues): one definition instead of one copy per catalogue.
macro_rules! cached_catalogue_methods {
    () => {
        fn add_remote_log_segment_metadata(
            &self,
            md: RemoteLogSegmentMetadata,
        ) -> Result<(), MetadataError> {
            self.publish(MetadataEvent::Add(md))
        }

        fn update_remote_log_segment_metadata(
            &self,
            update: RemoteLogSegmentMetadataUpdate,
        ) -> Result<(), MetadataError> {
            self.publish(MetadataEvent::Update(update))
        }

        fn remote_log_segment_metadata(
            &self,
            p: &TopicIdPartition,
            epoch: LeaderEpoch,
            offset: Offset,
        ) -> Result<Option<RemoteLogSegmentMetadata>, MetadataError> {
            self.cache.remote_log_segment_metadata(p, epoch, offset)
        }

        fn highest_offset_for_epoch(
            &self,
            p: &TopicIdPartition,
            epoch: LeaderEpoch,
        ) -> Result<Option<Offset>, MetadataError> {
            self.cache.highest_offset_for_epoch(p, epoch)
        }

        fn list_remote_log_segments(
            &self,
            p: &TopicIdPartition,
        ) -> Result<Vec<RemoteLogSegmentMetadata>, MetadataError> {
            self.cache.list_remote_log_segments(p)
        }

        fn list_remote_log_segments_for_epoch(
            &self,
            p: &TopicIdPartition,
            epoch: LeaderEpoch,
        ) -> Result<Vec<RemoteLogSegmentMetadata>, MetadataError> {
            self.cache.list_remote_log_segments_for_epoch(p, epoch)
        }

        fn put_remote_partition_delete_metadata(
            &self,
            md: RemotePartitionDeleteMetadata,
        ) -> Result<(), MetadataError> {
            self.publish(MetadataEvent::PartitionDelete(md))
        }

        fn partitions(&self) -> Vec<TopicIdPartition> {
            self.cache.partitions()
        }
    };
}

pub mod cache;
pub mod partitioner;
pub mod serde;
pub mod tailed;
pub mod topic;

use strata_log::{LeaderEpoch, Offset};

use crate::error::MetadataError;
use crate::metadata::{
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    TopicIdPartition,
};

pub use cache::{MemoryRlmm, PartitionCache};
pub use topic::{MetadataLog, TopicRlmm, REMOTE_LOG_METADATA_TOPIC};

/// One catalogue event, as stored in `__remote_log_metadata`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetadataEvent {
    /// api key 0: a new segment (state COPY_SEGMENT_STARTED).
    Add(RemoteLogSegmentMetadata),
    /// api key 1: a state change.
    Update(RemoteLogSegmentMetadataUpdate),
    /// api key 2: partition deletion.
    PartitionDelete(RemotePartitionDeleteMetadata),
}

impl MetadataEvent {
    /// The user partition the event is about.
    pub fn partition(&self) -> &TopicIdPartition {
        match self {
            MetadataEvent::Add(md) => &md.segment_id.partition,
            MetadataEvent::Update(u) => &u.segment_id.partition,
            MetadataEvent::PartitionDelete(d) => &d.partition,
        }
    }
}

/// The segment catalogue. Mutations return once the change is durable and
/// visible to this broker's reads (read-your-writes, as Kafka's RLMM).
pub trait RemoteLogMetadataManager: Send + Sync + std::fmt::Debug {
    /// Register a new segment; its state must be COPY_SEGMENT_STARTED.
    ///
    /// # Errors
    /// `InvalidTransition` for another state, `AlreadyExists`, or storage.
    fn add_remote_log_segment_metadata(
        &self,
        md: RemoteLogSegmentMetadata,
    ) -> Result<(), MetadataError>;

    /// Move a known segment to another state.
    ///
    /// # Errors
    /// `UnknownSegment`, `InvalidTransition`, or storage.
    fn update_remote_log_segment_metadata(
        &self,
        update: RemoteLogSegmentMetadataUpdate,
    ) -> Result<(), MetadataError>;

    /// The COPY_SEGMENT_FINISHED segment holding `offset` within `epoch`.
    ///
    /// # Errors
    /// `NotInitialized` while the catalogue is still loading.
    fn remote_log_segment_metadata(
        &self,
        partition: &TopicIdPartition,
        epoch: LeaderEpoch,
        offset: Offset,
    ) -> Result<Option<RemoteLogSegmentMetadata>, MetadataError>;

    /// Highest offset copied (FINISHED segments) within `epoch`.
    ///
    /// # Errors
    /// `NotInitialized`.
    fn highest_offset_for_epoch(
        &self,
        partition: &TopicIdPartition,
        epoch: LeaderEpoch,
    ) -> Result<Option<Offset>, MetadataError>;

    /// Every segment not yet DELETE_SEGMENT_FINISHED, by start offset.
    ///
    /// # Errors
    /// `NotInitialized`.
    fn list_remote_log_segments(
        &self,
        partition: &TopicIdPartition,
    ) -> Result<Vec<RemoteLogSegmentMetadata>, MetadataError>;

    /// Non-terminal segments containing `epoch`, by start offset.
    ///
    /// # Errors
    /// `NotInitialized`.
    fn list_remote_log_segments_for_epoch(
        &self,
        partition: &TopicIdPartition,
        epoch: LeaderEpoch,
    ) -> Result<Vec<RemoteLogSegmentMetadata>, MetadataError>;

    /// Record a partition-deletion event.
    ///
    /// # Errors
    /// `InvalidTransition`-like misuse is reported as storage errors.
    fn put_remote_partition_delete_metadata(
        &self,
        md: RemotePartitionDeleteMetadata,
    ) -> Result<(), MetadataError>;

    /// Every partition the catalogue knows.
    fn partitions(&self) -> Vec<TopicIdPartition>;

    /// False while the catalogue is still being read (Kafka: not
    /// initialized, `ReplicaNotAvailableException`): the remote log manager
    /// runs no task then, so nothing is copied again or left unexpired
    /// because the catalogue did not know it yet.
    fn is_ready(&self) -> bool {
        true
    }

    /// The broker is stopping: a write still waiting (for a leader, for
    /// its record to come back) gives up now.
    fn close(&self) {}

    /// Sum of segment sizes listed for `epoch`.
    ///
    /// # Errors
    /// `NotInitialized`.
    fn remote_log_size(
        &self,
        partition: &TopicIdPartition,
        epoch: LeaderEpoch,
    ) -> Result<u64, MetadataError> {
        Ok(self
            .list_remote_log_segments_for_epoch(partition, epoch)?
            .iter()
            .map(|md| md.segment_size_in_bytes.max(0) as u64)
            .sum())
    }
}
