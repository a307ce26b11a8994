//! The log cleaner (Kafka `LogCleaner` + `LogCleanerManager`, §11):
//! `cleanup.policy=compact` keeps the latest record per key.
//!
//! # Layout
//!
//! Policy (pure, no I/O):
//! - `policy`: each log's dirty section and ratio, the filthiest log, grouping.
//! - `offset_map`: the fixed-memory dedupe map (XXH3-128 key digests) ([`OffsetMap`]).
//! - `txn`: aborted/committed transaction tracking while reading.
//! - `filter`: which batches and records of a chunk survive, and how they
//!   are rewritten.
//!
//! Mechanism:
//! - `clean`: [`Cleaner`], one worker: builds the map over the dirty section,
//!   cleans each group of segments into a `.cleaned` segment and swaps it in
//!   through `Log::replace_with_cleaned` (`log/compaction.rs`), in passes.
//! - `producers`: the last batch of every producer (kept even when emptied).
//! - `checkpoint`: `cleaner-offset-checkpoint` in each log dir.
//! - `throttle`: `log.cleaner.io.max.bytes.per.second`.
//! - `service`: [`LogCleaner`], the `log.cleaner.threads` named threads, the
//!   per-partition state with retry backoff, and [`CompactionStatus`].
//! - `dry_run`: what a clean would reclaim, read-only (`strata log compact --dry-run`).
//!
//! # Fault injection
//!
//! Every file operation of a cleaning goes through the log's file-system
//! seam ([`crate::fs::FileSystem`]); tests inject errors there (see
//! [`crate::fs::FaultFs`]) to fail at the N-th operation and reopen the log.

mod checkpoint;
mod clean;
mod dry_run;
mod filter;
mod offset_map;
mod policy;
mod producers;
mod records;
mod service;
mod slots;
mod snapshot;
mod superseded;
mod throttle;
mod txn;

use std::path::PathBuf;

use crate::batch::BatchError;
use crate::checkpoint::CheckpointError;
use crate::error::LogError;
use crate::index::IndexError;
use crate::types::TopicPartition;

pub use checkpoint::CleanerCheckpoints;
pub use clean::{CleanOutcome, CleanStats, Cleaner};
pub use dry_run::{dry_run, DryRunError, DryRunReport};
pub use filter::{
    filter_chunk, BatchRetention, ChunkResult, FilterContext, FilterFault, LastRecord,
};
pub use offset_map::{MapFull, OffsetMap, BYTES_PER_ENTRY, HASH_SIZE};
pub use policy::{
    choose_filthiest, cleanable, group_segments_by_size, Cleanable, CleanerLogSnapshot,
    CompactionSettings, DirtyEnd, SegmentFacts,
};
pub use producers::{
    active_producers, active_producers_and_records, scan_producers, scan_producers_counting,
};
pub use service::{
    compaction_status, CleanerFailure, CompactionStatus, LogCleaner, PartitionCleanerState,
};
pub use snapshot::cleaner_snapshot;
pub use superseded::Superseded;
pub use throttle::{Sleeper, Throttler};
pub use txn::{collect_aborted, CleanedTxnMetadata};

/// Broker-level cleaner settings (Kafka names, §11.1).
#[derive(Clone, Debug, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`.
    pub enable: bool,
    /// `log.cleaner.threads` (0 = no threads).
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`, split evenly between threads.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.size`; each thread reads in chunks of
    /// `size / threads / 2`.
    pub io_buffer_size: usize,
    /// `log.cleaner.io.buffer.load.factor`: the dedupe map's load factor.
    pub io_buffer_load_factor: f64,
    /// `log.cleaner.backoff.ms`: idle sleep when nothing needs cleaning.
    pub backoff_ms: i64,
    /// `log.cleaner.io.max.bytes.per.second` (read + write); infinite = off.
    pub io_max_bytes_per_second: f64,
    /// `message.max.bytes`: how far the read buffer may grow for one batch.
    pub max_message_bytes: usize,
    /// `strata.log.cleaner.retry.backoff.ms`: first retry delay after a
    /// failed cleaning (doubles per failure).
    pub retry_backoff_ms: i64,
    /// `strata.log.cleaner.retry.backoff.max.ms`.
    pub retry_backoff_max_ms: i64,
    /// `strata.log.cleaner.max.passes`: passes per cleaning when the dirty
    /// keys do not fit the map at once.
    pub max_passes: usize,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            enable: true,
            threads: 1,
            dedupe_buffer_size: 128 << 20,
            io_buffer_size: 512 << 10,
            io_buffer_load_factor: 0.9,
            backoff_ms: 15_000,
            io_max_bytes_per_second: f64::INFINITY,
            max_message_bytes: 1_048_588,
            retry_backoff_ms: 15_000,
            retry_backoff_max_ms: 3_600_000,
            max_passes: 16,
        }
    }
}

/// A cleaner property that did not parse or breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for {name}: {rule}")]
pub struct CleanerConfigError {
    pub name: &'static str,
    pub value: String,
    /// The rule the value breaks.
    pub rule: String,
}

/// Kafka's `KafkaConfig` check: `dedupe.buffer.size / threads` must exceed
/// 1 MiB (integer division, as Kafka).
const MIN_DEDUPE_BUFFER_PER_THREAD: u64 = 1024 * 1024;

impl CleanerConfig {
    /// Dedupe memory of one thread (Kafka caps it at 2^31 - 1).
    pub fn map_memory_per_thread(&self) -> usize {
        let per = self.dedupe_buffer_size / self.threads.max(1) as u64;
        per.min(i32::MAX as u64) as usize
    }

    /// Read-buffer size of one thread.
    pub fn io_buffer_per_thread(&self) -> usize {
        (self.io_buffer_size / self.threads.max(1) / 2).max(crate::batch::RECORD_BATCH_OVERHEAD)
    }

    /// Layer the `log.cleaner.*` and `strata.log.cleaner.*` properties of
    /// `props` over the defaults.
    ///
    /// # Errors
    /// The first property whose value does not parse or is out of range.
    pub fn from_properties(
        props: &std::collections::BTreeMap<String, String>,
    ) -> Result<CleanerConfig, CleanerConfigError> {
        fn num<T: std::str::FromStr>(
            props: &std::collections::BTreeMap<String, String>,
            name: &'static str,
            ok: impl Fn(&T) -> bool,
        ) -> Result<Option<T>, CleanerConfigError> {
            match props.get(name) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<T>() {
                    Ok(x) if ok(&x) => Ok(Some(x)),
                    _ => Err(CleanerConfigError {
                        name,
                        value: v.clone(),
                        rule: "not a number of the expected type and range".into(),
                    }),
                },
            }
        }
        let mut c = CleanerConfig::default();
        if let Some(v) = num::<bool>(props, "log.cleaner.enable", |_| true)? {
            c.enable = v;
        }
        if let Some(v) = num::<usize>(props, "log.cleaner.threads", |_| true)? {
            c.threads = v;
        }
        if let Some(v) = num::<u64>(props, "log.cleaner.dedupe.buffer.size", |_| true)? {
            c.dedupe_buffer_size = v;
        }
        if let Some(v) = num::<usize>(props, "log.cleaner.io.buffer.size", |v| *v > 0)? {
            c.io_buffer_size = v;
        }
        if let Some(v) = num::<f64>(props, "log.cleaner.io.buffer.load.factor", |v| {
            *v > 0.0 && *v <= 1.0
        })? {
            c.io_buffer_load_factor = v;
        }
        if let Some(v) = num::<i64>(props, "log.cleaner.backoff.ms", |v| *v >= 0)? {
            c.backoff_ms = v;
        }
        if let Some(v) = num::<f64>(props, "log.cleaner.io.max.bytes.per.second", |v| *v > 0.0)? {
            c.io_max_bytes_per_second = v;
        }
        if let Some(v) = num::<usize>(props, "message.max.bytes", |v| *v > 0)? {
            c.max_message_bytes = v;
        }
        if let Some(v) = num::<i64>(props, "strata.log.cleaner.retry.backoff.ms", |v| *v >= 0)? {
            c.retry_backoff_ms = v;
        }
        if let Some(v) = num::<i64>(props, "strata.log.cleaner.retry.backoff.max.ms", |v| {
            *v >= 0
        })? {
            c.retry_backoff_max_ms = v;
        }
        if let Some(v) = num::<usize>(props, "strata.log.cleaner.max.passes", |v| *v > 0)? {
            c.max_passes = v;
        }
        // Kafka refuses to start the same way, whether or not the cleaner is
        // enabled; 0 threads (no cleaner) has nothing to divide.
        if c.threads > 0 && c.dedupe_buffer_size / c.threads as u64 <= MIN_DEDUPE_BUFFER_PER_THREAD
        {
            return Err(CleanerConfigError {
                name: "log.cleaner.dedupe.buffer.size",
                value: c.dedupe_buffer_size.to_string(),
                rule: format!(
                    "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread \
                     (more than {MIN_DEDUPE_BUFFER_PER_THREAD} bytes for each of the {} \
                     log.cleaner.threads)",
                    c.threads
                ),
            });
        }
        Ok(c)
    }
}

/// Why a cleaning stopped without swapping anything more in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// The segments being cleaned were deleted, truncated or replaced.
    LogChanged,
    /// The cleaner is shutting down.
    Shutdown,
}

/// Errors of a cleaning.
#[derive(Debug, thiserror::Error)]
pub enum CleanerError {
    /// A log or segment operation failed.
    #[error("cleaning {tp}: {source}")]
    Log {
        tp: TopicPartition,
        #[source]
        source: Box<LogError>,
    },
    /// A batch in a source segment does not parse.
    #[error("corrupt batch in {path} at position {position}: {source}")]
    CorruptBatch {
        path: PathBuf,
        position: u64,
        #[source]
        source: Box<BatchError>,
    },
    /// A batch could not be rebuilt (e.g. a record timestamp below -1).
    #[error("cannot rebuild the batch in {path} at position {position}: {source}")]
    Rebuild {
        path: PathBuf,
        position: u64,
        #[source]
        source: crate::batch::BuildError,
    },
    /// One batch is larger than the cleaner's largest read buffer.
    #[error("batch at position {position} of {path} exceeds the cleaner buffer limit {limit}")]
    BatchTooLarge {
        path: PathBuf,
        position: u64,
        limit: usize,
    },
    /// Reading a `.txnindex` failed.
    #[error("transaction index {path}: {source}")]
    TxnIndex {
        path: PathBuf,
        #[source]
        source: Box<IndexError>,
    },
    /// `cleaner-offset-checkpoint` could not be read or written.
    #[error("cleaner checkpoint {path}: {source}")]
    Checkpoint {
        path: PathBuf,
        #[source]
        source: Box<CheckpointError>,
    },
    /// The map cannot hold even one key at its load factor.
    #[error("dedupe buffer of {slots} slots at load factor {load_factor} holds no key")]
    MapTooSmall { slots: usize, load_factor: f64 },
    /// The cleaning was abandoned; nothing is lost, it is retried later.
    #[error("cleaning {tp} aborted: {reason:?}")]
    Aborted {
        tp: TopicPartition,
        reason: AbortReason,
    },
}

impl CleanerError {
    pub(crate) fn log(tp: &TopicPartition, source: LogError) -> CleanerError {
        CleanerError::Log {
            tp: tp.clone(),
            source: Box::new(source),
        }
    }

    /// True when the log dir was (or should be) taken offline.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, CleanerError::Log { source, .. } if source.is_storage_failure())
    }
}

#[cfg(test)]
mod tests;
