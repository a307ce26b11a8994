//! `strata-log`: Apache Kafka 3.9's partition log storage, byte-compatible on disk.
//!
//! A partition is a directory of segments; a segment is a `.log` of record
//! batches exactly as producers sent them plus sparse `.index` and
//! `.timeindex` files. This crate is synchronous: no async runtime, blocking
//! file I/O, background work on named threads.
//!
//! Comments cite Kafka's behaviour as `§N` or `§N.M`: a section of
//! `docs/kafka-behaviour.md`, which names the Kafka source files behind it.
//!
//! # Layout
//!
//! - [`types`]: newtypes for offsets, positions, epochs, producer ids.
//! - [`batch`]: the record-batch view, validation, compression, legacy formats.
//! - [`format`]: every file and directory name (Kafka `LogFileUtils`).
//! - [`codec`]: pure encoders/decoders and sanity rules of every on-disk
//!   format (index slots, `.txnindex`, checkpoints), shared with the tools.
//! - [`fs`]: the file-system seam every file mutation goes through ([`fs::FileSystem`],
//!   [`fs::StdFs`] in production, [`fs::FaultFs`] to inject I/O errors and
//!   [`fs::sim::SimFs`] to simulate power loss in tests), atomic file
//!   replacement and directory fsync.
//! - [`checkpoint`]: Kafka's text checkpoint files (recovery point, log start, ...).
//! - [`leader_epoch`]: the leader-epoch cache and `leader-epoch-checkpoint`.
//! - [`metadata`]: `partition.metadata`, `meta.properties`, `.kafka_cleanshutdown`.
//! - [`index`]: the memory-mapped `.index` and `.timeindex` files and the `.txnindex`.
//! - [`clock`]: injected wall and monotonic time ([`MockClock`] for tests).
//! - [`config`]: the configuration layer of every crate: `config::properties`
//!   (the one Java `.properties` reader), the [`ConfigDef`] table mechanism,
//!   and [`LogConfig`], the topic-level table with Kafka's names and defaults.
//! - [`error`]: [`LogError`], the error of every log and manager operation.
//! - [`segment`]: one `.log` with its lazy indexes (Kafka `LogSegment`).
//! - [`log`]: one partition: append, read, roll, flush, truncate ([`Log`]).
//! - [`loader`]: opening a partition directory and recovery (Kafka `LogLoader`).
//! - [`manager`]: log directories, partitions, checkpoints, shutdown ([`LogManager`]).
//! - [`producer_state`]: idempotent/transactional producer state and `.snapshot` files.
//! - [`retention`]: which segments retention deletes and why, and its schedule.
//! - [`cleaner`]: log compaction (`cleanup.policy=compact`), Kafka's log cleaner.

pub mod batch;
pub mod checkpoint;
pub mod cleaner;
pub mod clock;
pub mod codec;
pub mod config;
pub mod error;
pub mod format;
pub mod fs;
pub mod index;
pub mod leader_epoch;
pub mod loader;
pub mod log;
pub mod manager;
pub mod metadata;
pub mod producer_state;
pub mod retention;
pub mod segment;
pub mod types;

pub use clock::{Clock, MockClock, SharedClock, SystemClock};
pub use config::{CleanupPolicy, ConfigDef, ConfigError, ConfigType, LogConfig};
pub use error::{ErrorChain, LogError};
pub use loader::{LoadParams, RecoveryStats};
pub use log::{
    AppendHook, DirHealth, FetchData, FileSlice, Log, LogAppendInfo, ReadBound, SegmentInfo,
    TimestampAndOffset,
};
pub use manager::{
    LoadFilter, LogDirInfo, LogManager, LogManagerConfig, RetentionRound, RetentionSchedule,
    TopicConfigProvider, DEFAULT_RETENTION_CHECK_INTERVAL_MS,
};
pub use segment::Segment;
pub use types::{
    LeaderEpoch, Offset, Position, ProducerEpoch, ProducerId, RelativeOffset, Timestamp,
    TopicPartition,
};
