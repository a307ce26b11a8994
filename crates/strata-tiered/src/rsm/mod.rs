//! The storage plug-in seam (Kafka `RemoteStorageManager`, reference §1):
//! moves a segment's bytes and companions to the remote tier and back.
//!
//! The trait is synchronous like the storage engine it serves; an
//! implementation over an async store crosses once through
//! [`crate::bridge::Bridge`]. Implementations:
//! [`ObjectStoreRsm`] over any `object_store` back end (a local directory
//! in Kafka's `LocalTieredStorage` layout, or an S3-API bucket).

mod layout;
mod object;

use std::path::PathBuf;

use bytes::Bytes;

use crate::error::RemoteStorageError;
use crate::metadata::RemoteLogSegmentMetadata;

pub use layout::{object_key_for, parse_object_key, ObjectKey, PartitionDirName};
pub use object::{ObjectStoreRsm, RemoteObject};

/// The companion files of a remote segment (Kafka `IndexType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexType {
    Offset,
    Timestamp,
    ProducerSnapshot,
    Transaction,
    LeaderEpoch,
}

impl IndexType {
    pub const ALL: [IndexType; 5] = [
        IndexType::Offset,
        IndexType::Timestamp,
        IndexType::ProducerSnapshot,
        IndexType::Transaction,
        IndexType::LeaderEpoch,
    ];
}

/// What the copy task hands to [`RemoteStorageManager::copy_log_segment_data`]
/// (Kafka `LogSegmentData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSegmentData {
    pub log_segment: PathBuf,
    pub offset_index: PathBuf,
    pub time_index: PathBuf,
    /// `None` when the segment has no `.txnindex`.
    pub transaction_index: Option<PathBuf>,
    /// The producer snapshot named by the next segment's base offset.
    /// `None` when the local log has none (Strata writes one at every roll
    /// once producer state is tracked; an older log may lack it).
    pub producer_snapshot: Option<PathBuf>,
    /// Leader-epoch checkpoint text for every epoch up to the next base.
    pub leader_epoch_index: Vec<u8>,
}

/// Moves segment bytes to and from the remote tier.
///
/// Contract (Kafka's, reference §1): copies are idempotent per segment id
/// (an existing object is overwritten); deletes are idempotent (missing
/// objects are success); a missing object on fetch is
/// [`RemoteStorageError::NotFound`].
pub trait RemoteStorageManager: Send + Sync + std::fmt::Debug {
    /// Upload the segment and every companion; on failure nothing of this
    /// segment id is left behind (best effort). Returns custom metadata.
    ///
    /// # Errors
    /// Any storage or local read failure.
    fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<Vec<u8>>, RemoteStorageError>;

    /// Bytes `[start, end)` of the segment's `.log`; `end = None` reads to
    /// the end of the object.
    ///
    /// # Errors
    /// `NotFound`, `InvalidRange` when `start` is past the end, or storage.
    fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start: u64,
        end: Option<u64>,
    ) -> Result<Bytes, RemoteStorageError>;

    /// The whole companion file of `kind`.
    ///
    /// # Errors
    /// `NotFound` (normal for a transaction index that was never written).
    fn fetch_index(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        kind: IndexType,
    ) -> Result<Bytes, RemoteStorageError>;

    /// Delete everything stored for this segment id; missing is success.
    ///
    /// # Errors
    /// Storage failures other than not-found.
    fn delete_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
    ) -> Result<(), RemoteStorageError>;

    /// Every object the store holds (for `strata tier fsck`).
    ///
    /// # Errors
    /// Storage failures.
    fn list_objects(&self) -> Result<Vec<RemoteObject>, RemoteStorageError>;

    /// Delete one object by key (fsck repair of orphans); missing is success.
    ///
    /// # Errors
    /// Storage failures other than not-found.
    fn delete_object(&self, key: &str) -> Result<(), RemoteStorageError>;
}
