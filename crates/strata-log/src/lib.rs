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
//! The front door: modules are private and the items other crates, tests,
//! fuzz targets and benches use are re-exported below. Seven modules stay
//! public because their callers need them as modules: `batch`, `codec`,
//! `format` and `fs` are toolkits the broker, the tools and the fuzz targets
//! use piece by piece (dozens of items each); `config` is the configuration
//! layer of every crate; `cleaner` and `retention` hold the pure policy
//! functions and workers that the tools, benches and tests call directly,
//! whose names (`dry_run`, `cleanable`, `decide`, `LogSnapshot`) only read
//! right under the module's name.
//!
//! Public modules:
//! - [`batch`]: the record-batch view, validation, compression, legacy formats.
//! - [`codec`]: pure encoders/decoders and sanity rules of every on-disk
//!   format (index slots, `.txnindex`, checkpoints, producer snapshots,
//!   CRC-32C), shared with the tools.
//! - [`format`]: every file and directory name (Kafka `LogFileUtils`).
//! - [`fs`]: the file-system seam every file mutation goes through ([`fs::FileSystem`],
//!   [`fs::StdFs`] in production, [`fs::FaultFs`] to inject I/O errors and
//!   [`fs::sim::SimFs`] to simulate power loss in tests), atomic file
//!   replacement and directory fsync.
//! - [`config`]: the configuration layer of every crate: `config::properties`
//!   (the one Java `.properties` reader), the [`ConfigDef`] table mechanism,
//!   and [`LogConfig`], the topic-level table with Kafka's names and defaults.
//! - [`cleaner`]: log compaction (`cleanup.policy=compact`), Kafka's log
//!   cleaner: the pure policy, the [`cleaner::Cleaner`] worker, the
//!   [`cleaner::LogCleaner`] threads, the dry run.
//! - [`retention`]: which segments retention deletes and why ([`retention::decide`]).
//! - [`progress`]: progress of long work (ETA, byte units, one line) shared with the
//!   tools, and the start-up recovery's progress lines ([`progress::LoadProgress`]).
//!
//! Private modules (their items re-exported here):
//! - `types`: newtypes for offsets, positions, epochs, producer ids ([`Offset`], ...).
//! - `checkpoint`: Kafka's text checkpoint files ([`OffsetCheckpointFile`]) and
//!   `cleaner-offset-checkpoint` ([`cleaner::CleanerCheckpoints`]).
//! - `leader_epoch`: the leader-epoch cache and `leader-epoch-checkpoint` ([`LeaderEpochCache`]).
//! - `metadata`: `partition.metadata`, `meta.properties`, `.kafka_cleanshutdown`
//!   ([`PartitionMetadata`], [`MetaProperties`]).
//! - `handles`: the bound on open segment files and index mappings
//!   (`strata.log.max.open.files`, [`HandleCache`]).
//! - `index`: the memory-mapped `.index` and `.timeindex` files and the `.txnindex`
//!   ([`OffsetIndex`], [`TimeIndex`], [`TransactionIndex`]).
//! - `clock`: injected wall and monotonic time ([`MockClock`] for tests).
//! - `error`: [`LogError`], the error of every log and manager operation.
//! - `segment`: one `.log` with its lazy indexes (Kafka `LogSegment`, [`Segment`]).
//! - `log`: one partition: append, read, roll, flush, truncate, and the
//!   replication steps (an epoch at the log end on becoming leader, full
//!   truncation for a follower behind the leader's log start) ([`Log`]).
//! - `loader`: opening a partition directory and recovery (Kafka `LogLoader`, [`LoadParams`]).
//! - `manager`: log directories, partitions, checkpoints (recovery point, log
//!   start, and high watermark in `replication-offset-checkpoint`), the
//!   retention schedule, shutdown ([`LogManager`]).
//! - `producer_state`: idempotent/transactional producer state and `.snapshot`
//!   files ([`ProducerStateManager`]).

pub mod batch;
mod checkpoint;
pub mod cleaner;
mod clock;
pub mod codec;
pub mod config;
mod error;
pub mod format;
pub mod fs;
mod handles;
mod index;
mod leader_epoch;
mod loader;
mod log;
mod manager;
mod metadata;
mod producer_state;
pub mod progress;
pub mod retention;
mod segment;
mod types;

pub use checkpoint::{read_checkpoint, CheckpointError, OffsetCheckpointFile};
pub use clock::{civil_from_days, Clock, MockClock, SharedClock, SystemClock};
pub use config::{CleanupPolicy, ConfigDef, ConfigError, ConfigType, LogConfig};
pub use error::{ErrorChain, LogError};
pub use handles::{HandleCache, HandleStats, DEFAULT_MAX_OPEN_FILES, MIN_MAX_OPEN_FILES};
pub use index::{
    AbortedTxn, IndexError, IndexOp, OffsetIndex, OffsetPosition, TimeIndex, TransactionIndex,
    TxnIndexSearchResult,
};
pub use leader_epoch::{LeaderEpochCache, LeaderEpochError};
pub use loader::{LoadParams, RecoveryStats};
pub use log::{
    AppendHook, DirHealth, FetchData, FileSlice, Log, LogAppendInfo, ReadBound, RetentionGate,
    SegmentInfo, TimestampAndOffset,
};
pub use manager::{
    FutureLogInfo, LoadFilter, LogDirInfo, LogDirMove, LogManager, LogManagerConfig,
    LogReplacedHook, RetentionRound, RetentionSchedule, TopicConfigProvider,
    DEFAULT_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, DEFAULT_RETENTION_CHECK_INTERVAL_MS,
};
pub use metadata::{uuid_to_kafka_string, MetaProperties, MetadataError, PartitionMetadata};
pub use producer_state::{
    read_snapshot, write_snapshot, AppendOrigin, CompletedTxn, ProducerAppendInfo,
    ProducerStateEntry, ProducerStateError, ProducerStateManager, ProducerUpdates, SequenceFault,
    SnapshotCorruption,
};
pub use segment::Segment;
pub use types::{
    LeaderEpoch, Offset, Position, ProducerEpoch, ProducerId, RelativeOffset, Timestamp,
    TopicPartition,
};
