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
//! - `config`: [`CleanerConfig`], the `log.cleaner.*` table.
//! - [`CleanerCheckpoints`]: `cleaner-offset-checkpoint` in each log dir, kept
//!   in `crate::checkpoint` because truncating a log lowers it.
//! - `throttle`: `log.cleaner.io.max.bytes.per.second`.
//! - `service`: [`LogCleaner`], the `log.cleaner.threads` named threads, the
//!   per-partition state with retry backoff, and [`CompactionStatus`].
//! - `history`: [`CleaningRecord`], the statistics of every cleaning (Kafka
//!   `CleanerStats`), kept per log dir in `cleaner-statistics.json`, and
//!   [`CleanerTotals`] for the metrics.
//! - `dry_run`: what a clean would reclaim, read-only (`strata log compact --dry-run`).
//!
//! # Fault injection
//!
//! Every file operation of a cleaning goes through the log's file-system
//! seam ([`crate::fs::FileSystem`]); tests inject errors there (see
//! [`crate::fs::FaultFs`]) to fail at the N-th operation and reopen the log.

mod clean;
mod config;
mod dry_run;
mod filter;
mod history;
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

pub use crate::checkpoint::CleanerCheckpoints;
pub use crate::producer_state::LastRecord;
pub use clean::{CleanOutcome, CleanStats, Cleaner};
pub use config::CleanerConfig;
pub use dry_run::{dry_run, DryRunError, DryRunReport};
pub use filter::{filter_chunk, BatchRetention, ChunkResult, FilterContext, FilterFault};
pub use history::{
    parse_history, read_history, recopy_percent, statistics_path, thread_cpu_ns, write_history,
    CleanerSettingsInForce, CleanerTotals, CleaningRecord, HistoryError, HISTORY_LIMIT,
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
    compaction_status, CleanerFailure, CleanerOwner, CompactionStatus, LogCleaner,
    PartitionCleanerState,
};
pub use snapshot::cleaner_snapshot;
pub use superseded::Superseded;
pub use throttle::{Sleeper, Throttler};
pub use txn::{collect_aborted, CleanedTxnMetadata};

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

impl From<CheckpointError> for CleanerError {
    fn from(source: CheckpointError) -> CleanerError {
        CleanerError::Checkpoint {
            path: source.path().to_path_buf(),
            source: Box::new(source),
        }
    }
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
