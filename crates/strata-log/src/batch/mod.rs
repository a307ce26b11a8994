//! Record batches, magic v2: a zero-copy view over the bytes producers send
//! and segments store.
//!
//! Format (all integers big-endian; `docs/kafka-behaviour.md` §1.2):
//!
//! ```text
//!  0  BaseOffset            i64   rewritten by the leader on append
//!  8  Length                i32   batch size - 12
//! 12  PartitionLeaderEpoch  i32   rewritten by the leader; not CRC-covered
//! 16  Magic                 i8    = 2
//! 17  CRC                   u32   CRC-32C over [21, size)
//! 21  Attributes            i16   codec 0x07, ts type 0x08, txn 0x10, control 0x20, delete horizon 0x40
//! 23  LastOffsetDelta       i32
//! 27  BaseTimestamp         i64   delete horizon when attribute 0x40 is set
//! 35  MaxTimestamp          i64
//! 43  ProducerId            i64
//! 51  ProducerEpoch         i16
//! 53  BaseSequence          i32
//! 57  RecordsCount          i32
//! 61  Records ...                 raw records or one compressed stream
//! ```
//!
//! [`BatchView`] reads the header in place; [`BatchViewMut`] rewrites the fields
//! the leader is allowed to touch. Validation of the records themselves,
//! decompression and legacy (magic 0/1) reading live in the submodules.
//!
//! # Layout
//!
//! - this file: header view, in-place stamping, the segment [`BatchScanner`].
//! - `record`: the zero-copy record reader ([`BatchView::record_iter`], [`Record`]).
//! - `control`: control record keys and [`EndTransactionMarker`] values.
//! - `validate`: [`validate_batch`] (Kafka `ensureValid`), [`validate_batch_deep`],
//!   and the leader's [`validate_client_records`] + [`assign_offsets_in_place`].
//! - `builder`: [`BatchBuilder`], [`build_end_txn_marker`], [`build_empty_batch_like`].
//! - `legacy`: magic 0/1 entries ([`read_legacy_entry`]).
//! - [`compression`]: bounded codecs; [`varint`]: Kafka's zig-zag varints.
//! - `error`: [`BatchError`] and its Kafka [`ErrorClass`].

pub use crate::codec::crc32c;
use crate::codec::{be_i16, be_i32, be_i64};
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};

mod builder;
pub mod compression;
mod control;
mod error;
mod legacy;
mod record;
mod record_scan;
mod validate;
pub mod varint;

pub use builder::{build_empty_batch_like, build_end_txn_marker, BatchBuilder, BuildError};
pub use control::{ControlRecordType, EndTransactionMarker};
pub use error::{BatchError, ControlFault, DecompressionFault, ErrorClass, RecordFault};
pub use legacy::{
    read_legacy_entry, LegacyEntry, LegacyRecord, LEGACY_V0_OVERHEAD, LEGACY_V1_OVERHEAD,
};
pub use record::{Header, Headers, OwnedRecord, Record, RecordHeader, RecordIter};
pub use validate::{
    assign_offsets_in_place, validate_batch, validate_batch_deep, validate_batch_deep_with,
    validate_client_records, validate_client_records_with, AppendValidation, ValidatedBatch,
    ValidatedRecords,
};

/// Bytes before the `Length` field is counted: BaseOffset + Length.
pub const LOG_OVERHEAD: usize = 12;
/// Bytes up to and including the magic byte.
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;
/// Size of the v2 batch header.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// The smallest `Length` any magic can have (legacy minimum record overhead).
pub const MIN_LENGTH_FIELD: i32 = 14;

pub const MAGIC_V0: i8 = 0;
pub const MAGIC_V1: i8 = 1;
pub const MAGIC_V2: i8 = 2;

pub const NO_SEQUENCE: i32 = -1;

// Field positions in the v2 header.
pub const BASE_OFFSET_POS: usize = 0;
pub const LENGTH_POS: usize = 8;
pub const PARTITION_LEADER_EPOCH_POS: usize = 12;
pub const MAGIC_POS: usize = 16;
pub const CRC_POS: usize = 17;
pub const ATTRIBUTES_POS: usize = 21;
pub const LAST_OFFSET_DELTA_POS: usize = 23;
pub const BASE_TIMESTAMP_POS: usize = 27;
pub const MAX_TIMESTAMP_POS: usize = 35;
pub const PRODUCER_ID_POS: usize = 43;
pub const PRODUCER_EPOCH_POS: usize = 51;
pub const BASE_SEQUENCE_POS: usize = 53;
pub const RECORDS_COUNT_POS: usize = 57;
pub const RECORDS_POS: usize = 61;

const COMPRESSION_MASK: u8 = 0x07;
const TIMESTAMP_TYPE_MASK: u8 = 0x08;
const TRANSACTIONAL_MASK: u8 = 0x10;
const CONTROL_MASK: u8 = 0x20;
const DELETE_HORIZON_MASK: u8 = 0x40;

/// The compression codec of a batch (attribute bits 0-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    /// Decode attribute bits 0-2; codes 5-7 are invalid.
    pub fn from_id(id: u8) -> Option<Compression> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Kafka's name for the codec, as in `compression.type` and `kafka-dump-log`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// Timestamp type (attribute bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name, as printed by `kafka-dump-log` and in `message.timestamp.type`.
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

/// `baseSequence + delta`, wrapping past `i32::MAX` to 0 as Kafka's `incrementSequence` does.
///
/// Java's int arithmetic wraps, and so does this: a hostile (negative) delta
/// must not panic.
pub fn increment_sequence(sequence: i32, delta: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(delta) {
        delta
            .wrapping_sub(i32::MAX.wrapping_sub(sequence))
            .wrapping_sub(1)
    } else {
        sequence.wrapping_add(delta)
    }
}

/// The 17-byte prefix every batch of every magic starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchPrefix {
    pub base_offset: i64,
    /// The `Length` field: batch size minus [`LOG_OVERHEAD`].
    pub length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
}

impl BatchPrefix {
    /// Parse the prefix from at least [`HEADER_SIZE_UP_TO_MAGIC`] bytes.
    ///
    /// # Errors
    /// [`BatchError::Truncated`] if fewer bytes are given; [`BatchError::LengthTooSmall`]
    /// when `Length < 14`, which is how Kafka detects a zero-filled tail.
    pub fn parse(bytes: &[u8]) -> Result<BatchPrefix, BatchError> {
        if bytes.len() < HEADER_SIZE_UP_TO_MAGIC {
            return Err(BatchError::Truncated {
                needed: HEADER_SIZE_UP_TO_MAGIC,
                available: bytes.len(),
            });
        }
        let prefix = BatchPrefix {
            base_offset: be_i64(bytes, BASE_OFFSET_POS),
            length: be_i32(bytes, LENGTH_POS),
            partition_leader_epoch: be_i32(bytes, PARTITION_LEADER_EPOCH_POS),
            magic: bytes[MAGIC_POS] as i8,
        };
        if prefix.length < MIN_LENGTH_FIELD {
            return Err(BatchError::LengthTooSmall {
                length: prefix.length,
            });
        }
        Ok(prefix)
    }

    /// Total size of the batch in bytes (`Length + 12`).
    pub fn total_size(&self) -> usize {
        self.length as usize + LOG_OVERHEAD
    }
}

/// A read-only view over one complete magic-v2 batch.
///
/// Construction checks only that the bytes hold a whole v2 header and that
/// `Length` matches the slice; CRC and record validation are separate
/// (`validate` module) so scans stay cheap.
#[derive(Clone, Copy, Debug)]
pub struct BatchView<'a> {
    bytes: &'a [u8],
}

impl<'a> BatchView<'a> {
    /// View the batch at the start of `bytes`; the slice may extend past it.
    ///
    /// # Errors
    /// Truncated header, `Length` out of range, magic other than 2, or a batch
    /// that extends past the end of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<BatchView<'a>, BatchError> {
        let prefix = BatchPrefix::parse(bytes)?;
        if prefix.magic != MAGIC_V2 {
            return Err(BatchError::UnsupportedMagic {
                magic: prefix.magic,
            });
        }
        let size = prefix.total_size();
        if size < RECORD_BATCH_OVERHEAD {
            return Err(BatchError::BatchTooSmall { size });
        }
        if bytes.len() < size {
            return Err(BatchError::Truncated {
                needed: size,
                available: bytes.len(),
            });
        }
        Ok(BatchView {
            bytes: &bytes[..size],
        })
    }

    /// The batch's bytes, exactly `size()` long.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    pub fn size(&self) -> usize {
        self.bytes.len()
    }
    pub fn base_offset(&self) -> Offset {
        Offset(be_i64(self.bytes, BASE_OFFSET_POS))
    }
    pub fn length_field(&self) -> i32 {
        be_i32(self.bytes, LENGTH_POS)
    }
    pub fn partition_leader_epoch(&self) -> LeaderEpoch {
        LeaderEpoch(be_i32(self.bytes, PARTITION_LEADER_EPOCH_POS))
    }
    pub fn magic(&self) -> i8 {
        self.bytes[MAGIC_POS] as i8
    }
    /// The stored CRC.
    pub fn crc(&self) -> u32 {
        be_i32(self.bytes, CRC_POS) as u32
    }
    /// The CRC computed over `[21, size)`.
    pub fn compute_crc(&self) -> u32 {
        crc32c(&self.bytes[ATTRIBUTES_POS..])
    }
    pub fn is_crc_valid(&self) -> bool {
        self.crc() == self.compute_crc()
    }
    /// The attributes as stored (only the low byte carries meaning).
    pub fn attributes(&self) -> i16 {
        be_i16(self.bytes, ATTRIBUTES_POS)
    }
    fn attr_low(&self) -> u8 {
        self.bytes[ATTRIBUTES_POS + 1]
    }
    /// The codec, or `None` for the invalid codes 5-7.
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_id(self.attr_low() & COMPRESSION_MASK)
    }
    pub fn compression_id(&self) -> u8 {
        self.attr_low() & COMPRESSION_MASK
    }
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attr_low() & TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    pub fn is_transactional(&self) -> bool {
        self.attr_low() & TRANSACTIONAL_MASK != 0
    }
    pub fn is_control(&self) -> bool {
        self.attr_low() & CONTROL_MASK != 0
    }
    pub fn has_delete_horizon(&self) -> bool {
        self.attr_low() & DELETE_HORIZON_MASK != 0
    }
    pub fn last_offset_delta(&self) -> i32 {
        be_i32(self.bytes, LAST_OFFSET_DELTA_POS)
    }
    /// `baseOffset + lastOffsetDelta`, wrapping like Java's long arithmetic
    /// (only a corrupt header gets near the limits).
    pub fn last_offset(&self) -> Offset {
        Offset(
            self.base_offset()
                .0
                .wrapping_add(self.last_offset_delta() as i64),
        )
    }
    pub fn next_offset(&self) -> Offset {
        Offset(self.last_offset().0.wrapping_add(1))
    }
    /// The raw BaseTimestamp field (the delete horizon when [`Self::has_delete_horizon`]).
    pub fn base_timestamp(&self) -> Timestamp {
        Timestamp(be_i64(self.bytes, BASE_TIMESTAMP_POS))
    }
    /// The delete horizon, when the batch carries one.
    pub fn delete_horizon(&self) -> Option<Timestamp> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }
    pub fn max_timestamp(&self) -> Timestamp {
        Timestamp(be_i64(self.bytes, MAX_TIMESTAMP_POS))
    }
    pub fn producer_id(&self) -> ProducerId {
        ProducerId(be_i64(self.bytes, PRODUCER_ID_POS))
    }
    pub fn has_producer_id(&self) -> bool {
        self.producer_id().0 >= 0
    }
    pub fn producer_epoch(&self) -> ProducerEpoch {
        ProducerEpoch(be_i16(self.bytes, PRODUCER_EPOCH_POS))
    }
    pub fn base_sequence(&self) -> i32 {
        be_i32(self.bytes, BASE_SEQUENCE_POS)
    }
    /// `baseSequence + lastOffsetDelta` with Kafka's wrap-around; -1 without a sequence.
    pub fn last_sequence(&self) -> i32 {
        let base = self.base_sequence();
        if base == NO_SEQUENCE {
            NO_SEQUENCE
        } else {
            increment_sequence(base, self.last_offset_delta())
        }
    }
    pub fn records_count(&self) -> i32 {
        be_i32(self.bytes, RECORDS_COUNT_POS)
    }
    /// The records section: raw records, or one compressed stream.
    pub fn records_bytes(&self) -> &'a [u8] {
        &self.bytes[RECORDS_POS..]
    }
}

/// A mutable view used by the leader to stamp a batch in place.
#[derive(Debug)]
pub struct BatchViewMut<'a> {
    bytes: &'a mut [u8],
}

impl<'a> BatchViewMut<'a> {
    /// # Errors
    /// As [`BatchView::parse`].
    pub fn parse(bytes: &'a mut [u8]) -> Result<BatchViewMut<'a>, BatchError> {
        let size = BatchView::parse(bytes)?.size();
        Ok(BatchViewMut {
            bytes: &mut bytes[..size],
        })
    }

    pub fn view(&self) -> BatchView<'_> {
        BatchView { bytes: self.bytes }
    }

    /// Rewrite BaseOffset. Not covered by the CRC.
    pub fn set_base_offset(&mut self, offset: Offset) {
        self.bytes[BASE_OFFSET_POS..BASE_OFFSET_POS + 8].copy_from_slice(&offset.0.to_be_bytes());
    }

    /// Rewrite PartitionLeaderEpoch. Not covered by the CRC.
    pub fn set_partition_leader_epoch(&mut self, epoch: LeaderEpoch) {
        self.bytes[PARTITION_LEADER_EPOCH_POS..PARTITION_LEADER_EPOCH_POS + 4]
            .copy_from_slice(&epoch.0.to_be_bytes());
    }

    /// Set MaxTimestamp and the timestamp-type bit, then recompute the CRC,
    /// as Kafka does for LogAppendTime topics. A no-op (CRC untouched) when
    /// neither changes.
    pub fn set_max_timestamp(&mut self, ts_type: TimestampType, max_timestamp: Timestamp) {
        let view = self.view();
        if view.timestamp_type() == ts_type && view.max_timestamp() == max_timestamp {
            return;
        }
        let mut low = self.bytes[ATTRIBUTES_POS + 1];
        match ts_type {
            TimestampType::LogAppendTime => low |= TIMESTAMP_TYPE_MASK,
            TimestampType::CreateTime => low &= !TIMESTAMP_TYPE_MASK,
        }
        self.bytes[ATTRIBUTES_POS + 1] = low;
        self.bytes[MAX_TIMESTAMP_POS..MAX_TIMESTAMP_POS + 8]
            .copy_from_slice(&max_timestamp.0.to_be_bytes());
        self.update_crc();
    }

    /// Recompute and store the CRC over `[21, size)`.
    pub fn update_crc(&mut self) {
        let crc = crc32c(&self.bytes[ATTRIBUTES_POS..]);
        self.bytes[CRC_POS..CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
    }
}

/// Iterate the batches of a byte buffer (a whole `.log` file or a Produce
/// request's records) by the scan rules of Kafka's `FileLogInputStream`
/// (§1.10): stop when 17 or fewer bytes remain or when a batch is partial;
/// yield an error for a `Length` below 14.
///
/// Items are `(position, prefix)`; any magic is yielded so callers decide.
pub struct BatchScanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> BatchScanner<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        BatchScanner {
            bytes,
            pos: 0,
            failed: false,
        }
    }

    /// Position of the next batch to be read (after iteration: the end of the last whole batch).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for BatchScanner<'a> {
    type Item = Result<(usize, BatchPrefix), BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos + HEADER_SIZE_UP_TO_MAGIC >= self.bytes.len() {
            return None;
        }
        let prefix = match BatchPrefix::parse(&self.bytes[self.pos..]) {
            Ok(p) => p,
            Err(e) => {
                self.failed = true;
                return Some(Err(e.at(self.pos as u64)));
            }
        };
        let size = prefix.total_size();
        if self.pos + size > self.bytes.len() {
            return None;
        }
        let at = self.pos;
        self.pos += size;
        Some(Ok((at, prefix)))
    }
}

#[cfg(test)]
mod tests;
