//! Errors of the partition log and the log manager.
//!
//! One enum for the engine's public operations; every variant names the
//! partition, path or offsets involved. The broker maps these to Kafka error
//! codes in one place; nothing here formats an error for matching.

use std::path::PathBuf;

use thiserror::Error;

use crate::batch::BatchError;
use crate::config::ConfigError;
use crate::index::IndexError;
use crate::types::{Offset, TopicPartition};

/// Errors from [`crate::Log`], [`crate::Segment`] and [`crate::LogManager`].
#[derive(Debug, Error)]
pub enum LogError {
    /// The appended bytes failed validation (broker maps via `BatchError`).
    #[error("invalid records for {tp}: {source}")]
    Batch {
        tp: TopicPartition,
        #[source]
        source: BatchError,
    },
    /// A fetch or lookup below the log start or above the log end.
    #[error("offset {requested} of {tp} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        tp: TopicPartition,
        requested: Offset,
        log_start: Offset,
        log_end: Offset,
    },
    /// An append larger than `segment.bytes`.
    #[error("append of {size} bytes to {tp} exceeds segment.bytes {segment_bytes}")]
    RecordBatchTooLarge {
        tp: TopicPartition,
        size: usize,
        segment_bytes: i32,
    },
    /// The largest offset of an append does not fit the segment's relative range.
    #[error("offset {largest} does not fit segment {base_offset} ({path})")]
    OffsetOverflow {
        path: PathBuf,
        base_offset: Offset,
        largest: Offset,
    },
    /// A follower append whose first offset is below the log end offset.
    #[error("unexpected append offset for {tp}: first {first} < log end {log_end}")]
    UnexpectedAppendOffset {
        tp: TopicPartition,
        first: Offset,
        log_end: Offset,
    },
    /// Batches of one append whose offsets do not increase.
    #[error("non-monotonic offsets in append to {tp}: {offset} after {previous}")]
    NonMonotonicOffsets {
        tp: TopicPartition,
        previous: Offset,
        offset: Offset,
    },
    /// A file operation failed; the log dir is taken offline.
    #[error("{op} {path}: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// An index file operation failed.
    #[error("index error: {source}")]
    Index {
        #[from]
        source: IndexError,
    },
    /// A checkpoint or metadata file could not be read or written.
    #[error("checkpoint {path}: {source}")]
    Checkpoint {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The log directory went offline after an I/O error; restart required.
    #[error("log directory {dir} is offline")]
    DirOffline { dir: PathBuf },
    /// An offset argument that makes no sense for the log's state.
    #[error("invalid offset {offset} for {tp}: {reason}")]
    InvalidOffset {
        tp: TopicPartition,
        offset: Offset,
        reason: &'static str,
    },
    /// A segment with this base offset exists already and is not empty.
    #[error("segment {base_offset} of {tp} already exists")]
    SegmentExists {
        tp: TopicPartition,
        base_offset: Offset,
    },
    /// The log was closed or deleted.
    #[error("log {tp} is closed")]
    Closed { tp: TopicPartition },
    /// A directory is not a valid log or partition directory.
    #[error("invalid directory {path}: {reason}")]
    InvalidDir { path: PathBuf, reason: &'static str },
    /// Another process holds the `.lock` of a log directory.
    #[error("log directory {dir} is locked by another process")]
    DirLocked { dir: PathBuf },
    /// No log directory is online.
    #[error("no online log directory")]
    NoOnlineDir,
    /// A log-dir move (AlterReplicaLogDirs) named a directory that is not
    /// one of the configured log dirs (Kafka `LogDirNotFoundException`).
    #[error("{dir} is not a configured log directory")]
    UnknownLogDir { dir: PathBuf },
    /// A produce or replicated batch broke an idempotence/transaction rule
    /// (the broker maps the variant to INVALID_PRODUCER_EPOCH,
    /// OUT_OF_ORDER_SEQUENCE_NUMBER, ...); nothing was written.
    #[error("producer state of {tp}: {source}")]
    ProducerState {
        tp: TopicPartition,
        #[source]
        source: crate::producer_state::ProducerStateError,
    },
    /// A topic config failed validation.
    #[error("config: {source}")]
    Config {
        #[from]
        source: ConfigError,
    },
}

impl LogError {
    /// Wrap an I/O error with its path and operation.
    pub fn io(path: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> LogError {
        LogError::Io {
            path: path.into(),
            op,
            source,
        }
    }

    /// True for failures that take a log directory offline (I/O on its files).
    pub fn is_storage_failure(&self) -> bool {
        matches!(
            self,
            LogError::Io { .. } | LogError::Index { .. } | LogError::DirOffline { .. }
        )
    }
}

/// Display adapter for an error and its whole `source()` chain, on one
/// line: `cannot open index /d/0.index: Too many open files (os error 24)`.
///
/// Some enums put their source into their own message (`LogError::Io`),
/// others leave it to the chain (`IndexError::Io`, the broker's
/// `BrokerError`), so a cause already printed at the end of the message is
/// not printed twice. Use it wherever a storage error is logged or
/// reported: `tracing::error!(error = %ErrorChain(&e), ...)`.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'a));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let next = c.to_string();
            if !text.ends_with(&next) {
                text.push_str(": ");
                text.push_str(&next);
            }
            cause = c.source();
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_chain_prints_every_cause_once() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let emfile_text = emfile.to_string();
        let index = LogError::Index {
            source: crate::index::IndexError::Io {
                path: "/d/0.index".into(),
                op: crate::index::IndexOp::Open,
                source: emfile,
            },
        };
        // Display alone hides the OS error; the chain names it.
        assert!(!index.to_string().contains(&emfile_text));
        let line = ErrorChain(&index).to_string();
        assert!(line.contains("/d/0.index"), "{line}");
        assert!(line.ends_with(&emfile_text), "{line}");
        // `LogError::Io` already names its source: printed once.
        let io = LogError::io(
            "/d/x",
            "write",
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let line = ErrorChain(&io).to_string();
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC).to_string();
        assert_eq!(line.matches(&enospc).count(), 1, "{line}");
    }
}
