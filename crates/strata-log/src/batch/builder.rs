//! Building v2 batches, as Kafka's `MemoryRecordsBuilder` does, plus the
//! transaction marker batch of `MemoryRecords.withEndTransactionMarker`.
//!
//! Records are encoded as they are appended; [`BatchBuilder::build`] writes
//! the 61-byte header, compresses the records section when asked, and fills
//! in the CRC. For uncompressed batches the output is byte-for-byte what
//! Kafka writes (the fixtures test checks this against Kafka's files).
//!
//! Header values follow Kafka: BaseTimestamp is the first record's timestamp
//! (or the delete horizon when one is set, with deltas relative to it);
//! MaxTimestamp is the largest record timestamp, or the append time for
//! LogAppendTime; LastOffsetDelta is the last appended offset minus the base.

use thiserror::Error;

use super::compression::compress_into;
use super::control::EndTransactionMarker;
use super::record::RecordHeader;
use super::varint::{varint_size, varlong_size, write_varint, write_varlong};
use super::{
    crc32c, BatchView, Compression, TimestampType, ATTRIBUTES_POS, CRC_POS, LOG_OVERHEAD, MAGIC_V2,
    NO_SEQUENCE, RECORD_BATCH_OVERHEAD,
};
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};

/// A record the builder was asked to append but cannot encode.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BuildError {
    #[error("offset {offset} does not follow the previous offset {previous}")]
    OffsetNotIncreasing { offset: Offset, previous: Offset },
    #[error("offset {offset} is outside the batch's 32-bit delta range from base {base}")]
    OffsetOutOfRange { offset: Offset, base: Offset },
    #[error("invalid negative timestamp {timestamp:?}")]
    NegativeTimestamp { timestamp: Timestamp },
}

/// Builds one magic-v2 batch.
#[derive(Clone, Debug)]
pub struct BatchBuilder {
    base_offset: Offset,
    partition_leader_epoch: LeaderEpoch,
    compression: Compression,
    log_append_time: Option<Timestamp>,
    producer_id: ProducerId,
    producer_epoch: ProducerEpoch,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    delete_horizon: Option<Timestamp>,
    records: Vec<u8>,
    count: i32,
    last_offset: Option<Offset>,
    last_offset_override: Option<Offset>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
}

impl BatchBuilder {
    /// A builder for a batch starting at `base_offset`: uncompressed,
    /// CreateTime, no producer, leader epoch -1.
    pub fn new(base_offset: Offset) -> Self {
        BatchBuilder {
            base_offset,
            partition_leader_epoch: LeaderEpoch::NONE,
            compression: Compression::None,
            log_append_time: None,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            delete_horizon: None,
            records: Vec::new(),
            count: 0,
            last_offset: None,
            last_offset_override: None,
            base_timestamp: None,
            max_timestamp: Timestamp::NONE.0,
        }
    }

    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    pub fn partition_leader_epoch(mut self, epoch: LeaderEpoch) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Mark the batch LogAppendTime with MaxTimestamp `time`.
    pub fn log_append_time(mut self, time: Timestamp) -> Self {
        self.log_append_time = Some(time);
        self
    }

    /// Idempotent/transactional producer fields.
    pub fn producer(mut self, id: ProducerId, epoch: ProducerEpoch, base_sequence: i32) -> Self {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = base_sequence;
        self
    }

    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Make this a control batch (clients may not send these; coordinators write them).
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// Set the delete horizon (attribute 0x40): BaseTimestamp becomes `horizon`
    /// and record deltas are taken from it.
    ///
    /// # Panics
    /// If records were already appended (their deltas would be wrong).
    pub fn delete_horizon(mut self, horizon: Timestamp) -> Self {
        assert!(self.count == 0, "set the delete horizon before appending");
        self.delete_horizon = Some(horizon);
        self.base_timestamp = Some(horizon.0);
        self
    }

    /// The timestamp type the batch will carry.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.log_append_time.is_some() {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Keep LastOffsetDelta at `last` although the records after the last
    /// appended one are gone, as the cleaner does (Kafka's
    /// `overrideLastOffset`): producer state needs the original last offset.
    ///
    /// # Errors
    /// [`BuildError::OffsetNotIncreasing`] if `last` is below the last
    /// appended offset, [`BuildError::OffsetOutOfRange`] beyond the delta range.
    pub fn override_last_offset(&mut self, last: Offset) -> Result<(), BuildError> {
        if let Some(previous) = self.last_offset {
            if last < previous {
                return Err(BuildError::OffsetNotIncreasing {
                    offset: last,
                    previous,
                });
            }
        }
        if !(0..=i32::MAX as i64).contains(&(last.0.wrapping_sub(self.base_offset.0))) {
            return Err(BuildError::OffsetOutOfRange {
                offset: last,
                base: self.base_offset,
            });
        }
        self.last_offset_override = Some(last);
        Ok(())
    }

    /// Records appended so far.
    pub fn record_count(&self) -> i32 {
        self.count
    }

    /// The offset the next [`Self::append`] uses.
    pub fn next_offset(&self) -> Offset {
        self.last_offset.map_or(self.base_offset, |o| o.plus(1))
    }

    /// Size of the batch [`Self::build`] would produce if uncompressed.
    pub fn uncompressed_size(&self) -> usize {
        RECORD_BATCH_OVERHEAD + self.records.len()
    }

    /// Append a record at the next offset; returns that offset.
    ///
    /// # Panics
    /// On a negative timestamp other than -1, or past 2^31 - 1 offsets from
    /// the base; use [`Self::append_with_offset`] to get these as errors.
    pub fn append(
        &mut self,
        timestamp: Timestamp,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[RecordHeader],
    ) -> Offset {
        let offset = self.next_offset();
        if let Err(e) = self.append_with_offset(offset, timestamp, key, value, headers) {
            panic!("BatchBuilder::append: {e}");
        }
        offset
    }

    /// Append a record at `offset`, which must exceed the previous one (gaps
    /// are allowed, as in compacted batches).
    ///
    /// # Errors
    /// [`BuildError`] for a non-increasing offset, a delta beyond `i32`, or a
    /// negative timestamp other than -1 (`NO_TIMESTAMP`).
    pub fn append_with_offset(
        &mut self,
        offset: Offset,
        timestamp: Timestamp,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[RecordHeader],
    ) -> Result<(), BuildError> {
        if let Some(previous) = self.last_offset {
            if offset <= previous {
                return Err(BuildError::OffsetNotIncreasing { offset, previous });
            }
        }
        let delta = offset
            .0
            .checked_sub(self.base_offset.0)
            .and_then(|d| i32::try_from(d).ok())
            .filter(|d| *d >= 0)
            .ok_or(BuildError::OffsetOutOfRange {
                offset,
                base: self.base_offset,
            })?;
        if timestamp.0 < 0 && timestamp != Timestamp::NONE {
            return Err(BuildError::NegativeTimestamp { timestamp });
        }
        let base_ts = *self.base_timestamp.get_or_insert(timestamp.0);
        encode_record(
            &mut self.records,
            delta,
            timestamp.0.wrapping_sub(base_ts),
            key,
            value,
            headers,
        );
        if timestamp.0 > self.max_timestamp {
            self.max_timestamp = timestamp.0;
        }
        self.count += 1;
        self.last_offset = Some(offset);
        Ok(())
    }

    fn attributes(&self) -> u8 {
        let mut a = self.compression.id();
        if self.log_append_time.is_some() {
            a |= 0x08;
        }
        if self.transactional {
            a |= 0x10;
        }
        if self.control {
            a |= 0x20;
        }
        if self.delete_horizon.is_some() {
            a |= 0x40;
        }
        a
    }

    /// Append the finished batch to `out`. Like Kafka, a builder without
    /// records produces nothing.
    pub fn build_into(&self, out: &mut Vec<u8>) {
        if self.count == 0 {
            return;
        }
        let start = out.len();
        out.resize(start + RECORD_BATCH_OVERHEAD, 0);
        compress_into(self.compression, &self.records, out);
        let size = out.len() - start;
        let last_offset_delta = (self
            .last_offset_override
            .or(self.last_offset)
            .expect("count > 0")
            .0
            - self.base_offset.0) as i32;
        let max_timestamp = self.log_append_time.map_or(self.max_timestamp, |t| t.0);
        let h = &mut out[start..start + RECORD_BATCH_OVERHEAD];
        h[0..8].copy_from_slice(&self.base_offset.0.to_be_bytes());
        h[8..12].copy_from_slice(&((size - LOG_OVERHEAD) as i32).to_be_bytes());
        h[12..16].copy_from_slice(&self.partition_leader_epoch.0.to_be_bytes());
        h[16] = MAGIC_V2 as u8;
        h[21..23].copy_from_slice(&(self.attributes() as i16).to_be_bytes());
        h[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
        h[27..35].copy_from_slice(&self.base_timestamp.unwrap_or(-1).to_be_bytes());
        h[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
        h[43..51].copy_from_slice(&self.producer_id.0.to_be_bytes());
        h[51..53].copy_from_slice(&self.producer_epoch.0.to_be_bytes());
        h[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        h[57..61].copy_from_slice(&self.count.to_be_bytes());
        let crc = crc32c(&out[start + ATTRIBUTES_POS..]);
        out[start + CRC_POS..start + CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
    }

    /// The finished batch (empty when nothing was appended).
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.uncompressed_size());
        self.build_into(&mut out);
        out
    }
}

fn field_size(field: Option<&[u8]>) -> usize {
    match field {
        Some(b) => varint_size(b.len() as i32) + b.len(),
        None => 1,
    }
}

fn write_field(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
        None => write_varint(out, -1),
    }
}

/// Encode one record (Length varint first) as `DefaultRecord.writeTo` does.
fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[RecordHeader],
) {
    let mut body = 1
        + varlong_size(timestamp_delta)
        + varint_size(offset_delta)
        + field_size(key)
        + field_size(value)
        + varint_size(headers.len() as i32);
    for h in headers {
        body += field_size(Some(h.key.as_bytes())) + field_size(h.value.as_deref());
    }
    out.reserve(body + 5);
    write_varint(out, body as i32);
    let start = out.len();
    out.push(0); // attributes
    write_varlong(out, timestamp_delta);
    write_varint(out, offset_delta);
    write_field(out, key);
    write_field(out, value);
    write_varint(out, headers.len() as i32);
    for h in headers {
        write_field(out, Some(h.key.as_bytes()));
        write_field(out, h.value.as_deref());
    }
    debug_assert_eq!(out.len() - start, body);
}

/// A COMMIT or ABORT marker batch as Kafka's coordinator writes it (§1.8):
/// 78 bytes, attributes 0x30, one control record, base sequence -1.
pub fn build_end_txn_marker(
    offset: Offset,
    partition_leader_epoch: LeaderEpoch,
    producer_id: ProducerId,
    producer_epoch: ProducerEpoch,
    timestamp: Timestamp,
    marker: EndTransactionMarker,
) -> Vec<u8> {
    let mut b = BatchBuilder::new(offset)
        .partition_leader_epoch(partition_leader_epoch)
        .producer(producer_id, producer_epoch, NO_SEQUENCE)
        .transactional(true)
        .control(true);
    let key = marker.control_type.key_bytes();
    let value = marker.value_bytes();
    b.append(timestamp, Some(&key), Some(&value), &[]);
    b.build()
}

/// The header-only batch the cleaner keeps when it removes every record of
/// `original` but must retain its metadata (Kafka's `writeEmptyHeader`):
/// 61 bytes, count 0, same offsets, producer fields, leader epoch, timestamp
/// type and MaxTimestamp; BaseTimestamp -1; uncompressed; no delete horizon.
pub fn build_empty_batch_like(original: &BatchView<'_>) -> Vec<u8> {
    let mut h = vec![0u8; RECORD_BATCH_OVERHEAD];
    let mut attributes = 0u8;
    if original.timestamp_type() == TimestampType::LogAppendTime {
        attributes |= 0x08;
    }
    if original.is_transactional() {
        attributes |= 0x10;
    }
    if original.is_control() {
        attributes |= 0x20;
    }
    h[0..8].copy_from_slice(&original.base_offset().0.to_be_bytes());
    h[8..12].copy_from_slice(&((RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32).to_be_bytes());
    h[12..16].copy_from_slice(&original.partition_leader_epoch().0.to_be_bytes());
    h[16] = MAGIC_V2 as u8;
    h[21..23].copy_from_slice(&(attributes as i16).to_be_bytes());
    h[23..27].copy_from_slice(&original.last_offset_delta().to_be_bytes());
    h[27..35].copy_from_slice(&Timestamp::NONE.0.to_be_bytes());
    h[35..43].copy_from_slice(&original.max_timestamp().0.to_be_bytes());
    h[43..51].copy_from_slice(&original.producer_id().0.to_be_bytes());
    h[51..53].copy_from_slice(&original.producer_epoch().0.to_be_bytes());
    h[53..57].copy_from_slice(&original.base_sequence().to_be_bytes());
    h[57..61].copy_from_slice(&0i32.to_be_bytes());
    let crc = crc32c(&h[ATTRIBUTES_POS..]);
    h[CRC_POS..CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
    h
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
