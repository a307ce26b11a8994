//! `strata-log`: Apache Kafka 3.9's partition log storage, byte-compatible on disk.
//!
//! A partition is a directory of segments; a segment is a `.log` of record
//! batches exactly as producers sent them plus sparse `.index` and
//! `.timeindex` files. This crate is synchronous: no async runtime, blocking
//! file I/O, background work on named threads.
//!
//! # Layout
//!
//! - [`types`]: newtypes for offsets, positions, epochs, producer ids.
//! - [`batch`]: the record-batch view, validation, compression, legacy formats.
//! - [`format`]: every file and directory name (Kafka `LogFileUtils`).
//! - [`fs`]: atomic file replacement and directory fsync.
//! - [`clock`]: injected wall and monotonic time ([`MockClock`] for tests).
//! - [`config`]: topic-level configuration with Kafka's names and defaults.
//! - [`index`]: the memory-mapped `.index` and `.timeindex` files and the `.txnindex`.
//! - [`checkpoint`]: Kafka's text checkpoint files (recovery point, log start, ...).

pub mod batch;
pub mod checkpoint;
pub mod clock;
pub mod config;
pub mod format;
pub mod fs;
pub mod index;
pub mod types;

pub use types::{
    LeaderEpoch, Offset, Position, ProducerEpoch, ProducerId, RelativeOffset, Timestamp,
    TopicPartition,
};
pub use clock::{Clock, MockClock, SharedClock, SystemClock};
pub use config::{CleanupPolicy, ConfigDef, ConfigError, ConfigType, LogConfig};
