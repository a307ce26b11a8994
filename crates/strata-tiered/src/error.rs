//! Errors of the remote tier, one enum per concern: storage
//! plug-in calls, metadata calls, record decoding and configuration.

use std::path::PathBuf;

use crate::metadata::{InvalidTransition, RemoteLogSegmentId};

/// A failed [`crate::RemoteStorageManager`] call (Kafka
/// `RemoteStorageException` / `RemoteResourceNotFoundException`).
#[derive(Debug, thiserror::Error)]
pub enum RemoteStorageError {
    /// The object does not exist (a missing transaction index is normal).
    #[error("remote object {key} not found")]
    NotFound { key: String },
    /// The object store failed.
    #[error("object store {op} of {key} failed")]
    Store {
        op: &'static str,
        key: String,
        #[source]
        source: object_store::Error,
    },
    /// Reading a local segment file to upload it failed.
    #[error("reading local file {path} for upload")]
    LocalIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `fetch_log_segment` asked for bytes outside the segment.
    #[error("byte range {start}..{end:?} outside remote segment of {size} bytes")]
    InvalidRange {
        start: u64,
        end: Option<u64>,
        size: u64,
    },
    /// The async bridge's runtime is gone (shutdown in progress).
    #[error("remote storage runtime shut down")]
    Shutdown,
}

impl RemoteStorageError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, RemoteStorageError::NotFound { .. })
    }
}

/// A failed [`crate::RemoteLogMetadataManager`] call.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// `add` with a state other than COPY_SEGMENT_STARTED, or an update
    /// whose transition the state machine forbids.
    #[error("segment {segment}: {source}")]
    InvalidTransition {
        segment: RemoteLogSegmentId,
        #[source]
        source: InvalidTransition,
    },
    /// `add` of a segment id that is already known.
    #[error("segment {segment} already exists")]
    AlreadyExists { segment: RemoteLogSegmentId },
    /// An update for a segment that is not in the catalogue.
    #[error("segment {segment} not found")]
    UnknownSegment { segment: RemoteLogSegmentId },
    /// The metadata partitions have not been read up to their end yet
    /// (Kafka `ReplicaNotAvailableException`: retry later).
    #[error("remote log metadata not initialized yet")]
    NotInitialized,
    /// Writing or reading the metadata topic failed.
    #[error("metadata log {op} failed")]
    Log {
        op: &'static str,
        #[source]
        source: strata_log::LogError,
    },
    /// A record in the metadata topic could not be decoded.
    #[error("metadata record at offset {offset} of partition {partition}")]
    Decode {
        partition: i32,
        offset: i64,
        #[source]
        source: SerdeError,
    },
    /// Cluster mode: the metadata partition's leader did not take the
    /// record (not reachable, not leader, not enough in-sync replicas...).
    #[error("writing to metadata partition {partition}")]
    Write {
        partition: i32,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The broker is stopping; the catalogue takes no more writes.
    #[error("remote log metadata closed: the broker is stopping")]
    Closed,
    /// Cluster mode: a written record was not read back from the metadata
    /// topic in time (read-your-writes could not be given).
    #[error(
        "record {offset} of metadata partition {partition} not read back within {waited_ms} ms"
    )]
    NotReadBack {
        partition: i32,
        offset: i64,
        waited_ms: u64,
    },
}

/// A malformed `__remote_log_metadata` record value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SerdeError {
    #[error("record value truncated at byte {at} while reading {field}")]
    Truncated { field: &'static str, at: usize },
    #[error("unsupported frame version {version} (expected 1)")]
    FrameVersion { version: u64 },
    #[error("unknown api key {api_key}")]
    ApiKey { api_key: u64 },
    #[error("unsupported message version {version} for api key {api_key}")]
    MessageVersion { api_key: u64, version: u64 },
    #[error("{len} trailing bytes after the message")]
    TrailingBytes { len: usize },
    #[error("invalid {field} value {value}")]
    InvalidValue { field: &'static str, value: i64 },
    #[error("string field {field} is not UTF-8")]
    Utf8 { field: &'static str },
    #[error("varint too long at byte {at}")]
    Varint { at: usize },
}

/// An invalid tiered-storage setting.
#[derive(Debug, thiserror::Error)]
pub enum TieredConfigError {
    #[error(transparent)]
    Invalid(#[from] strata_log::ConfigError),
    #[error("unsupported remote storage URI {uri} (expected file:///dir or s3://bucket/prefix)")]
    Uri { uri: String },
    #[error("creating local remote-storage directory {path}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("building the object store for {uri}")]
    Store {
        uri: String,
        #[source]
        source: object_store::Error,
    },
}

/// A failed tiering operation on one partition (copy, expiration, read).
#[derive(Debug, thiserror::Error)]
pub enum TieredError {
    #[error("partition {tp}: remote storage")]
    Storage {
        tp: strata_log::TopicPartition,
        #[source]
        source: Box<RemoteStorageError>,
    },
    #[error("partition {tp}: remote log metadata")]
    Metadata {
        tp: strata_log::TopicPartition,
        #[source]
        source: Box<MetadataError>,
    },
    #[error("partition {tp}: local log")]
    Log {
        tp: strata_log::TopicPartition,
        #[source]
        source: Box<strata_log::LogError>,
    },
    /// No remote segment holds the offset.
    #[error("partition {tp}: offset {offset} is not in remote storage")]
    OffsetOutOfRange {
        tp: strata_log::TopicPartition,
        offset: strata_log::Offset,
    },
    /// The partition is not tiered on this broker.
    #[error("partition {tp} is not tiered")]
    NotTiered { tp: strata_log::TopicPartition },
    /// The remote reader pool's queue is full.
    #[error(transparent)]
    PoolFull(#[from] crate::tasks::pool::PoolFull),
    /// A remote segment's bytes are not a sequence of record batches.
    #[error("partition {tp}: remote segment {segment} corrupt at byte {position}")]
    CorruptSegment {
        tp: strata_log::TopicPartition,
        segment: String,
        position: u64,
    },
    /// A remote segment's transaction index holds a record Strata cannot
    /// read.
    #[error("partition {tp}: remote segment {segment} has a corrupt transaction index")]
    CorruptTxnIndex {
        tp: strata_log::TopicPartition,
        segment: String,
        #[source]
        source: strata_log::codec::index::IndexCorruption,
    },
    /// The reader task went away before answering (shutdown).
    #[error("remote read cancelled")]
    Cancelled,
}
