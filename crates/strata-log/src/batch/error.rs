use thiserror::Error;

/// Why a batch (or a byte buffer claiming to hold batches) was rejected.
///
/// Each variant maps to Kafka's CORRUPT_MESSAGE or INVALID_RECORD in the
/// broker; the mapping lives there, not here.
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
    Decompression { codec: &'static str, reason: String },
    #[error("invalid record {index}: {reason}")]
    InvalidRecord { index: usize, reason: &'static str },
    #[error("record count {declared} does not match the {actual} records found")]
    CountMismatch { declared: i32, actual: usize },
    #[error("incorrect declared batch size: {remaining} bytes left after the last record")]
    TrailingBytes { remaining: usize },
    #[error("invalid batch header: {reason}")]
    InvalidHeader { reason: &'static str },
    #[error("{source} at position {position}")]
    At {
        position: u64,
        #[source]
        source: Box<BatchError>,
    },
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
}
