//! `strata-tiered`: KIP-405 tiered storage for Strata.
//!
//! Sealed segments of a partition are copied to a remote tier (a local
//! directory or an S3-API bucket); a catalogue of remote segments with a
//! four-state life cycle says which copies are live; reads below the local
//! log start are served from the remote tier.
//!
//! "reference §N" (or `§N`) in this crate's comments is a section of
//! `docs/kafka-tiered-behaviour.md`, which names the Kafka source files behind it.
//!
//! # Layout
//!
//! - [`metadata`]: segment ids, [`RemoteLogSegmentMetadata`], the state
//!   machines (transitions enforced once, with a typed error).
//! - [`rsm`]: the storage plug-in seam [`RemoteStorageManager`] and
//!   [`ObjectStoreRsm`], its `object_store` implementation, with Kafka's
//!   `LocalTieredStorage` object layout.
//! - [`rlmm`]: the metadata plug-in seam [`RemoteLogMetadataManager`], the
//!   in-memory catalogue, and the `__remote_log_metadata` record format.
//! - [`config`]: the remote tier's settings table and the back-end choice from
//!   `strata.remote.storage.uri`.
//! - [`bridge`]: the one crossing from synchronous callers to the async
//!   object store.
//! - [`manager`]: [`RemoteLogManager`], the broker's remote tier: tiered
//!   partitions, task scheduling, the copy and expiration runs, the
//!   local-retention gate.
//! - [`tasks`]: the pure plans of the copy and expiration runs, bounded pools.
//! - [`read`]: remote fetch and ListOffsets lookups.
//! - [`index_cache`]: remote offset/time indexes cached on local disk.
//! - [`validate`]: tiered-storage topic-config rules (Kafka's messages).
//! - [`fsck`]: the catalogue against the bucket (the library of `strata tier
//!   fsck`, whose command line lives in the `strata` binary).
//! - [`metrics`]: Kafka-named tiered-storage counters.
//! - [`error`]: error enums.

pub mod bridge;
pub mod config;
pub mod error;
pub mod fsck;
pub mod index_cache;
pub mod manager;
pub mod metadata;
pub mod metrics;
pub mod read;
pub mod rlmm;
pub mod rsm;
pub mod tasks;
pub mod validate;

pub use bridge::Bridge;
pub use config::{StorageLocation, TieredConfig};
pub use error::{MetadataError, RemoteStorageError, SerdeError, TieredConfigError, TieredError};
pub use manager::{topic_eligible, RemoteLogManager, ReplicaRole, StartError};
pub use metadata::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState, RemotePartitionDeleteMetadata, RemotePartitionDeleteState,
    TopicIdPartition,
};
pub use metrics::TieredMetrics;
pub use read::RemoteRead;
pub use rlmm::RemoteLogMetadataManager;
pub use rsm::{IndexType, LogSegmentData, ObjectStoreRsm, RemoteStorageManager};
pub use validate::{validate_topic_config, TopicConfigError};
