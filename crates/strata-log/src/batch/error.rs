//! Errors of batch parsing, record decoding and append validation.
//!
//! One enum, [`BatchError`], so callers propagate a single type; every variant
//! carries the numbers that explain it. [`BatchError::class`] is the one place
//! that says which Kafka exception (and so which error code) a variant stands
//! for; the broker maps [`ErrorClass`] to codes.

use std::fmt;

use thiserror::Error;

use super::varint::VarintError;
use crate::types::{Offset, ProducerId, Timestamp};

/// Why a batch (or a byte buffer claiming to hold batches) was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BatchError {
    #[error("truncated batch: needed {needed} bytes, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("batch length field {length} is below the minimum record overhead 14")]
    LengthTooSmall { length: i32 },
    #[error("batch of {size} bytes is smaller than the 61-byte v2 header")]
    BatchTooSmall { size: usize },
    #[error("unsupported magic {magic}")]
    UnsupportedMagic { magic: i8 },
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("invalid compression codec id {id}")]
    InvalidCompression { id: u8 },
    #[error("corrupt compressed stream ({codec}): {reason}")]
    Decompression {
        codec: &'static str,
        reason: DecompressionFault,
    },
    #[error("decompressed {codec} stream exceeds the {limit}-byte limit")]
    DecompressedTooLarge { codec: &'static str, limit: usize },
    #[error("invalid record {index}: {reason}")]
    InvalidRecord { index: usize, reason: RecordFault },
    #[error("record count {declared} does not match the {actual} records found")]
    CountMismatch { declared: i32, actual: usize },
    #[error("invalid record count {count}")]
    NegativeRecordCount { count: i32 },
    #[error("incorrect declared batch size: {remaining} bytes left after the last record")]
    TrailingBytes { remaining: usize },
    #[error("invalid batch header: {reason}")]
    InvalidHeader { reason: &'static str },
    #[error("record {index} has offset delta {delta}, not above the previous record's {previous} and within last offset delta {last_offset_delta}")]
    OffsetDeltaOutOfOrder {
        index: usize,
        delta: i32,
        previous: i32,
        last_offset_delta: i32,
    },
    #[error("compressed record with codec id {codec_id} inside a compressed legacy wrapper")]
    NestedCompression { codec_id: u8 },
    #[error("invalid control record: {reason}")]
    InvalidControlRecord { reason: ControlFault },

    // --- Leader validation of client appends (Kafka LogValidator / analyzeAndValidateRecords).
    #[error("append holds no record batches")]
    NoBatches,
    #[error("a client append must hold exactly one v2 batch, found a second at position {second_position}")]
    MultipleBatches { second_position: usize },
    #[error("client batch base offset must be 0, found {base_offset}")]
    NonZeroBaseOffset { base_offset: Offset },
    #[error("batch size {size} exceeds max.message.bytes {max}")]
    RecordTooLarge { size: usize, max: usize },
    #[error("invalid offset range: last offset delta {last_offset_delta}")]
    InvalidOffsetRange { last_offset_delta: i32 },
    #[error("invalid record count {count} in a client batch")]
    InvalidRecordCount { count: i32 },
    #[error("last offset delta {last_offset_delta} is inconsistent with record count {count}")]
    OffsetCountMismatch { last_offset_delta: i32, count: i32 },
    #[error("clients may not write control batches")]
    ControlBatchFromClient,
    #[error("invalid base sequence {base_sequence} for producer {producer_id:?}")]
    InvalidSequence {
        producer_id: ProducerId,
        base_sequence: i32,
    },
    #[error("compacted topic cannot accept record {record_index} without a key")]
    MissingKey { record_index: usize },
    #[error("timestamp {timestamp:?} of record {record_index} is outside [{min}, {max}]")]
    InvalidTimestamp {
        record_index: usize,
        timestamp: Timestamp,
        min: i64,
        max: i64,
    },
    #[error("record {record_index}: producers may not set timestamp type LogAppendTime")]
    UnexpectedLogAppendTime { record_index: usize },
    #[error(
        "record {record_index} has offset delta {delta}; client batches must use 0..n-1 in order"
    )]
    NonSequentialOffsetDelta { record_index: usize, delta: i32 },

    #[error("{source} at position {position}")]
    At {
        position: u64,
        #[source]
        source: Box<BatchError>,
    },
}

/// Which Kafka exception a [`BatchError`] corresponds to; the broker turns
/// this into an error code in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// `CorruptRecordException` → CORRUPT_MESSAGE: CRC, sizes, framing, codec.
    Corrupt,
    /// `InvalidRecordException` → INVALID_RECORD: record structure and client rules.
    InvalidRecord,
    /// `InvalidTimestampException` → INVALID_TIMESTAMP.
    InvalidTimestamp,
    /// `RecordTooLargeException` → MESSAGE_TOO_LARGE.
    TooLarge,
}

impl BatchError {
    /// Attach the byte position of the failing batch.
    pub fn at(self, position: u64) -> BatchError {
        match self {
            BatchError::At { .. } => self,
            other => BatchError::At {
                position,
                source: Box::new(other),
            },
        }
    }

    /// The error without its position wrapper.
    pub fn kind(&self) -> &BatchError {
        match self {
            BatchError::At { source, .. } => source.kind(),
            other => other,
        }
    }

    /// The byte position of the failing batch, when known.
    pub fn position(&self) -> Option<u64> {
        match self {
            BatchError::At { position, .. } => Some(*position),
            _ => None,
        }
    }

    /// The Kafka exception class, following `DefaultRecordBatch.ensureValid`
    /// (corrupt), `DefaultRecord.readFrom` and `LogValidator` (invalid record,
    /// invalid timestamp) and `UnifiedLog.analyzeAndValidateRecords` (too large).
    ///
    /// Kafka surfaces an undecodable compressed stream as a generic
    /// `KafkaException` (UNKNOWN_SERVER_ERROR); Strata classifies it as corrupt.
    pub fn class(&self) -> ErrorClass {
        use BatchError::*;
        match self.kind() {
            Truncated { .. }
            | LengthTooSmall { .. }
            | BatchTooSmall { .. }
            | ChecksumMismatch { .. }
            | InvalidCompression { .. }
            | Decompression { .. }
            | DecompressedTooLarge { .. }
            | InvalidHeader { .. } => ErrorClass::Corrupt,
            RecordTooLarge { .. } => ErrorClass::TooLarge,
            InvalidTimestamp { .. } | UnexpectedLogAppendTime { .. } => {
                ErrorClass::InvalidTimestamp
            }
            UnsupportedMagic { .. }
            | InvalidRecord { .. }
            | CountMismatch { .. }
            | NegativeRecordCount { .. }
            | TrailingBytes { .. }
            | OffsetDeltaOutOfOrder { .. }
            | InvalidControlRecord { .. }
            | NestedCompression { .. }
            | NoBatches
            | MultipleBatches { .. }
            | NonZeroBaseOffset { .. }
            | InvalidOffsetRange { .. }
            | InvalidRecordCount { .. }
            | OffsetCountMismatch { .. }
            | ControlBatchFromClient
            | InvalidSequence { .. }
            | MissingKey { .. }
            | NonSequentialOffsetDelta { .. } => ErrorClass::InvalidRecord,
            At { .. } => unreachable!("kind() strips position wrappers"),
        }
    }
}

/// What is wrong inside one record (§1.5); all are Kafka `InvalidRecordException`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFault {
    /// The records section ended before the declared record count was read.
    PrematureEnd,
    /// A varint or varlong was longer than Kafka allows.
    VarintTooLong,
    /// The record's Length is negative.
    NegativeLength {
        length: i32,
    },
    /// The record's Length exceeds the bytes left in the records section.
    LengthExceedsRemaining {
        length: i32,
        remaining: usize,
    },
    /// The fields consumed a different number of bytes than Length declared.
    SizeMismatch {
        declared: i32,
        consumed: usize,
    },
    /// A key, value or header field runs past the end of the record.
    FieldOverrun,
    NegativeHeaderCount {
        count: i32,
    },
    HeaderCountExceedsRemaining {
        count: i32,
        remaining: usize,
    },
    NegativeHeaderKeyLength {
        length: i32,
    },
}

impl fmt::Display for RecordFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordFault::PrematureEnd => {
                f.write_str("incorrect declared batch size, premature EOF reached")
            }
            RecordFault::VarintTooLong => f.write_str("varint is too long"),
            RecordFault::NegativeLength { length } => write!(f, "negative record length {length}"),
            RecordFault::LengthExceedsRemaining { length, remaining } => write!(
                f,
                "record length {length} exceeds the {remaining} remaining bytes"
            ),
            RecordFault::SizeMismatch { declared, consumed } => write!(
                f,
                "record length {declared} but its fields take {consumed} bytes"
            ),
            RecordFault::FieldOverrun => f.write_str("a field runs past the end of the record"),
            RecordFault::NegativeHeaderCount { count } => {
                write!(f, "invalid number of record headers {count}")
            }
            RecordFault::HeaderCountExceedsRemaining { count, remaining } => write!(
                f,
                "header count {count} is larger than the {remaining} remaining bytes"
            ),
            RecordFault::NegativeHeaderKeyLength { length } => {
                write!(f, "invalid negative header key size {length}")
            }
        }
    }
}

impl From<VarintError> for RecordFault {
    fn from(e: VarintError) -> Self {
        match e {
            VarintError::Eof => RecordFault::PrematureEnd,
            VarintError::TooLong { .. } => RecordFault::VarintTooLong,
        }
    }
}

/// What is wrong with a control record (§1.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFault {
    /// The batch holding it is not a control batch.
    NotControl,
    /// The key is absent or shorter than 4 bytes.
    KeyTooShort {
        len: usize,
    },
    NegativeKeyVersion {
        version: i16,
    },
    /// An end-transaction marker value is absent or shorter than 6 bytes.
    ValueTooShort {
        len: usize,
    },
    NegativeValueVersion {
        version: i16,
    },
    /// The control type is neither COMMIT nor ABORT where a marker was expected.
    NotEndTransaction {
        control_type: i16,
    },
}

impl fmt::Display for ControlFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlFault::NotControl => f.write_str("batch is not a control batch"),
            ControlFault::KeyTooShort { len } => write!(f, "key of {len} bytes, need 4"),
            ControlFault::NegativeKeyVersion { version } => {
                write!(f, "negative key version {version}")
            }
            ControlFault::ValueTooShort { len } => write!(f, "marker value of {len} bytes, need 6"),
            ControlFault::NegativeValueVersion { version } => {
                write!(f, "negative marker version {version}")
            }
            ControlFault::NotEndTransaction { control_type } => {
                write!(f, "control type {control_type} is not COMMIT or ABORT")
            }
        }
    }
}

/// Why a compressed stream could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecompressionFault {
    /// The codec library rejected the stream (bad magic, checksum, corrupt data).
    Corrupt,
    /// The stream ended before its own framing said it would.
    UnexpectedEnd,
    /// A xerial snappy chunk length is negative or runs past the input.
    BadChunkLength { length: i32 },
    /// The codec cannot appear in this place (e.g. zstd inside a legacy wrapper).
    UnsupportedCodec,
}

impl fmt::Display for DecompressionFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecompressionFault::Corrupt => f.write_str("corrupt data"),
            DecompressionFault::UnexpectedEnd => f.write_str("unexpected end of stream"),
            DecompressionFault::BadChunkLength { length } => {
                write!(f, "bad chunk length {length}")
            }
            DecompressionFault::UnsupportedCodec => f.write_str("codec not allowed here"),
        }
    }
}
