//! What `verify` reports: one [`Finding`] per problem, each naming the file,
//! the byte position when there is one, and a [`Problem`] with the numbers
//! that explain it.

use std::fmt;
use std::path::PathBuf;

use serde::{Serialize, Serializer};
use strata_log::batch::BatchError;
use strata_log::SnapshotCorruption;

/// Library errors are reported by their text in JSON (the numbers are in it).
fn as_text<T: fmt::Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// Errors fail verification; warnings only with `--strict`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// Which index a problem is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexKind {
    Offset,
    Time,
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IndexKind::Offset => "offset index",
            IndexKind::Time => "time index",
        })
    }
}

/// One problem. Texts are for people; the JSON form carries the same fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Problem {
    #[error("cannot read: {detail}")]
    Unreadable { detail: String },
    #[error("corrupt batch{}: {error}", base_offset.map(|o| format!(" (base offset {o})")).unwrap_or_default())]
    CorruptBatch {
        /// The batch's (or legacy entry's) offset, when its header was readable.
        base_offset: Option<i64>,
        #[serde(serialize_with = "as_text")]
        error: BatchError,
    },
    #[error("truncated batch: {available} bytes left in the file, the batch needs {needed}")]
    TruncatedBatch { needed: u64, available: u64 },
    #[error("{bytes} zero bytes at the end of the file (preallocated or never written)")]
    ZeroTail { bytes: u64 },
    #[error("batch offsets go backwards: base offset {base_offset} does not follow the previous last offset {previous_last_offset}")]
    OffsetNotIncreasing {
        base_offset: i64,
        previous_last_offset: i64,
    },
    #[error("batch last offset {last_offset} is below its base offset {base_offset}")]
    LastOffsetBelowBase { base_offset: i64, last_offset: i64 },
    #[error(
        "segment base offset {segment_base} is above its first batch's base offset {first_base}"
    )]
    SegmentBaseAboveFirstBatch { segment_base: i64, first_base: i64 },
    #[error("segment overlaps the previous segment, whose last offset is {previous_last_offset} (segment base {segment_base})")]
    SegmentOverlap {
        segment_base: i64,
        previous_last_offset: i64,
    },
    #[error("{index}: size {len} is not a multiple of the {entry_size}-byte entry")]
    IndexSizeNotMultiple {
        index: IndexKind,
        len: u64,
        entry_size: u64,
    },
    #[error("{index} entry {entry}: offset {offset} is below the segment base offset {base}")]
    IndexOffsetBelowBase {
        index: IndexKind,
        entry: usize,
        offset: i64,
        base: i64,
    },
    #[error(
        "{index} entry {entry}: offset {offset} does not increase (previous entry {previous})"
    )]
    IndexOffsetNotIncreasing {
        index: IndexKind,
        entry: usize,
        offset: i64,
        previous: i64,
    },
    #[error(
        "offset index entry {entry}: position {position} is below the previous entry's {previous}"
    )]
    IndexPositionDecreasing {
        entry: usize,
        position: i64,
        previous: i64,
    },
    #[error("offset index entry {entry} (offset {offset}) points at position {position}, which is not the start of a batch")]
    IndexPositionNotBatchStart {
        entry: usize,
        offset: i64,
        position: i64,
    },
    #[error("offset index entry {entry}: offset {offset} at position {position}, but the batch there starts at offset {batch_base}")]
    IndexBatchAfterOffset {
        entry: usize,
        offset: i64,
        position: i64,
        batch_base: i64,
    },
    #[error("offset index entry {entry}: offset {offset} at position {position}, but an earlier batch already reaches offset {previous_last}")]
    IndexEarlierBatchReachesOffset {
        entry: usize,
        offset: i64,
        position: i64,
        previous_last: i64,
    },
    #[error(
        "{index} entry {entry}: offset {offset} is beyond the segment's last offset {segment_last}"
    )]
    IndexOffsetBeyondSegment {
        index: IndexKind,
        entry: usize,
        offset: i64,
        segment_last: i64,
    },
    #[error("{index}: {slots} zero-filled slots after the last entry (index not trimmed)")]
    IndexZeroTail { index: IndexKind, slots: usize },
    #[error("time index entry {entry}: timestamp {timestamp} does not increase (previous entry {previous})")]
    TimeIndexTimestampNotIncreasing {
        entry: usize,
        timestamp: i64,
        previous: i64,
    },
    #[error("time index entry {entry}: no batch ends at offset {offset}")]
    TimeIndexNoBatchEndsAt { entry: usize, offset: i64 },
    #[error("time index entry {entry}: timestamp {timestamp} for offset {offset}, but that batch's max timestamp is {batch_max_timestamp}")]
    TimeIndexTimestampMismatch {
        entry: usize,
        offset: i64,
        timestamp: i64,
        batch_max_timestamp: i64,
    },
    #[error("time index entry {entry}: timestamp {timestamp} for offset {offset}, but an earlier batch has max timestamp {earlier_max}")]
    TimeIndexEarlierLargerTimestamp {
        entry: usize,
        offset: i64,
        timestamp: i64,
        earlier_max: i64,
    },
    #[error("inactive segment's time index ends at timestamp {last_entry_timestamp}, but its largest batch timestamp is {segment_max_timestamp}: time-based retention and offset-for-time lookups use the index's value")]
    TimeIndexMissesSegmentMax {
        last_entry_timestamp: i64,
        segment_max_timestamp: i64,
    },
    #[error("{kind} file without a segment .log")]
    OrphanIndex { kind: &'static str },
    #[error("leftover {suffix} file from an interrupted {operation}")]
    LeftoverFile {
        suffix: &'static str,
        operation: &'static str,
    },
    #[error("file scheduled for deletion (.deleted) is still present")]
    DeletedFile,
    #[error("file not written by Kafka in a partition directory")]
    UnknownFile,
    #[error("transaction index entry {entry}: version {version} is not 0")]
    TxnUnsupportedVersion { entry: usize, version: i16 },
    #[error("transaction index: {bytes} bytes of a partial entry at the end")]
    TxnPartialEntry { bytes: usize },
    #[error("transaction index entry {entry}: last offset {last_offset} does not increase (previous entry {previous})")]
    TxnOffsetNotIncreasing {
        entry: usize,
        last_offset: i64,
        previous: i64,
    },
    #[error("transaction index entry {entry}: first offset {first_offset} is above the marker offset {last_offset}")]
    TxnFirstAfterLast {
        entry: usize,
        first_offset: i64,
        last_offset: i64,
    },
    #[error("transaction index entry {entry}: last offset {last_offset} is outside the segment [{base}, {segment_last}]")]
    TxnOffsetOutsideSegment {
        entry: usize,
        last_offset: i64,
        base: i64,
        segment_last: i64,
    },
    #[error("corrupt producer snapshot: {error}")]
    CorruptSnapshot {
        #[serde(serialize_with = "as_text")]
        error: SnapshotCorruption,
    },
    #[error("producer snapshot at offset {offset} is beyond the log end offset {log_end}")]
    SnapshotBeyondLogEnd { offset: i64, log_end: i64 },
    #[error("malformed checkpoint: {detail}")]
    MalformedCheckpoint { detail: String },
    #[error("{checkpoint} for {partition} is {offset}, beyond the log end offset {log_end}")]
    CheckpointBeyondLogEnd {
        checkpoint: &'static str,
        partition: String,
        offset: i64,
        log_end: i64,
    },
    #[error("{checkpoint} names {partition}, which has no partition directory here")]
    CheckpointUnknownPartition {
        checkpoint: &'static str,
        partition: String,
    },
    #[error("leader epoch entry {entry} (epoch {epoch}, start offset {start_offset}) does not increase after epoch {previous_epoch} at {previous_start_offset}")]
    EpochNotIncreasing {
        entry: usize,
        epoch: i32,
        start_offset: i64,
        previous_epoch: i32,
        previous_start_offset: i64,
    },
    #[error("leader epoch entry {entry}: negative epoch {epoch} or start offset {start_offset}")]
    EpochNegative {
        entry: usize,
        epoch: i32,
        start_offset: i64,
    },
    #[error("leader epoch {epoch} starts at {start_offset}, beyond the log end offset {log_end}")]
    EpochBeyondLogEnd {
        epoch: i32,
        start_offset: i64,
        log_end: i64,
    },
    #[error("{mismatches} batches disagree with the leader epoch cache; the first, at offset {offset}, has epoch {batch_epoch} but the cache says {cache_epoch}")]
    EpochCacheMismatch {
        mismatches: usize,
        offset: i64,
        batch_epoch: i32,
        cache_epoch: i32,
    },
    #[error("malformed partition.metadata: {detail}")]
    MalformedPartitionMetadata { detail: String },
    #[error("partition.metadata has topic id {partition_metadata_id}, but the topic store {topic_store} gives topic {topic} the id {topic_store_id}")]
    TopicIdMismatch {
        topic: String,
        /// Both ids in Kafka's base64 form (as `kafka-topics --describe` prints them).
        partition_metadata_id: String,
        topic_store_id: String,
        topic_store: String,
    },
    #[error("unreadable topic store: {detail}")]
    MalformedTopicStore { detail: String },
    #[error("not a partition directory and holds no partition directories")]
    NothingToVerify,
}

/// One problem in one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub file: PathBuf,
    /// Byte position in `file`, when the problem has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    #[serde(flatten)]
    pub problem: Problem,
    /// The problem as text.
    pub message: String,
}

impl Finding {
    pub fn new(
        severity: Severity,
        file: impl Into<PathBuf>,
        position: Option<u64>,
        problem: Problem,
    ) -> Self {
        Finding {
            severity,
            file: file.into(),
            position,
            message: problem.to_string(),
            problem,
        }
    }

    pub fn error(file: impl Into<PathBuf>, position: Option<u64>, problem: Problem) -> Self {
        Finding::new(Severity::Error, file, position, problem)
    }

    pub fn warning(file: impl Into<PathBuf>, position: Option<u64>, problem: Problem) -> Self {
        Finding::new(Severity::Warning, file, position, problem)
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.file.display())?;
        if let Some(p) = self.position {
            write!(f, " at position {p}")?;
        }
        write!(f, ": {}", self.message)
    }
}
