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

pub mod batch;
pub mod format;
pub mod fs;
pub mod types;

pub use types::{
    LeaderEpoch, Offset, Position, ProducerEpoch, ProducerId, RelativeOffset, Timestamp,
    TopicPartition,
};
