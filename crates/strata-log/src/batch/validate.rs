//! Batch validation: the cheap integrity check recovery runs on every batch
//! (Kafka's `ensureValid`), a deep check that decodes every record, and the
//! leader's validation of a client append (Kafka's
//! `UnifiedLog.analyzeAndValidateRecords` + `LogValidator`, §1.12).
//!
//! The client path validates in place: uncompressed records are read straight
//! from the request buffer without per-record allocation; a compressed batch
//! is decompressed once into a caller-reusable buffer. It never re-encodes.
//! Where Kafka would rebuild a batch whose inner offset deltas are not
//! `0..n-1`, Strata rejects it ([`BatchError::NonSequentialOffsetDelta`]).

use super::compression::DEFAULT_MAX_DECOMPRESSED;
use super::control::{ControlRecordType, EndTransactionMarker};
use super::error::BatchError;
use super::record::RecordIter;
use super::record_scan::{scan_client_records, ScanRules, ScanSummary};
use super::{
    BatchPrefix, BatchView, BatchViewMut, Compression, TimestampType, RECORD_BATCH_OVERHEAD,
};
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};

/// Kafka's `ensureValid`: size ≥ 61, stored CRC equals the CRC-32C of
/// `[21, size)`, and a known codec id. Records are not decoded.
///
/// # Errors
/// [`BatchError::BatchTooSmall`], [`BatchError::ChecksumMismatch`],
/// [`BatchError::InvalidCompression`].
pub fn validate_batch(view: &BatchView<'_>) -> Result<(), BatchError> {
    if view.size() < RECORD_BATCH_OVERHEAD {
        return Err(BatchError::BatchTooSmall { size: view.size() });
    }
    let (stored, computed) = (view.crc(), view.compute_crc());
    if stored != computed {
        return Err(BatchError::ChecksumMismatch { stored, computed });
    }
    if view.compression().is_none() {
        return Err(BatchError::InvalidCompression {
            id: view.compression_id(),
        });
    }
    Ok(())
}

/// [`validate_batch`], then decode every record: exactly `RecordsCount`
/// records with no bytes left over, offset deltas strictly increasing within
/// `0..=LastOffsetDelta` (a cleaned batch may end below it), and, for a
/// control batch, a parseable control key and end-transaction marker.
/// Returns the number of records.
///
/// # Errors
/// Any [`validate_batch`] error, any record fault, [`BatchError::OffsetDeltaOutOfOrder`],
/// [`BatchError::TrailingBytes`] for an empty uncompressed batch carrying
/// bytes, [`BatchError::InvalidControlRecord`].
pub fn validate_batch_deep(view: &BatchView<'_>) -> Result<usize, BatchError> {
    let mut scratch = Vec::new();
    validate_batch_deep_with(view, &mut scratch, DEFAULT_MAX_DECOMPRESSED)
}

/// [`validate_batch_deep`] reusing `scratch` for decompression, with an output cap.
///
/// # Errors
/// As [`validate_batch_deep`].
pub fn validate_batch_deep_with(
    view: &BatchView<'_>,
    scratch: &mut Vec<u8>,
    max_decompressed: usize,
) -> Result<usize, BatchError> {
    validate_batch(view)?;
    let last_offset_delta = view.last_offset_delta();
    if view.records_count() == 0
        && view.compression() == Some(Compression::None)
        && !view.records_bytes().is_empty()
    {
        return Err(BatchError::TrailingBytes {
            remaining: view.records_bytes().len(),
        });
    }
    let mut previous = -1i32;
    let mut n = 0usize;
    for (index, record) in view
        .record_iter_with_limit(scratch, max_decompressed)?
        .enumerate()
    {
        let record = record?;
        let delta = record.offset_delta;
        if delta <= previous || delta > last_offset_delta {
            return Err(BatchError::OffsetDeltaOutOfOrder {
                index,
                delta,
                previous,
                last_offset_delta,
            });
        }
        previous = delta;
        if view.is_control() {
            let kind = ControlRecordType::parse_key(record.key)?;
            if matches!(kind, ControlRecordType::Commit | ControlRecordType::Abort) {
                EndTransactionMarker::parse_value(kind, record.value)?;
            }
        }
        n += 1;
    }
    Ok(n)
}

/// Topic settings the leader validates a client append against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendValidation {
    /// `max.message.bytes`: the largest batch accepted.
    pub max_message_bytes: usize,
    /// `cleanup.policy` contains `compact`: every record needs a key.
    pub compacted: bool,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    pub timestamp_after_max_ms: i64,
    /// The broker's clock at validation time.
    pub now: Timestamp,
}

/// One validated client batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidatedBatch {
    /// Byte position of the batch in the validated buffer.
    pub position: usize,
    pub size: usize,
    pub records_count: i32,
    pub last_offset_delta: i32,
    /// The MaxTimestamp the leader stamps: the largest record timestamp for
    /// CreateTime topics (-1 if no record has one), `now` for LogAppendTime.
    pub max_timestamp: Timestamp,
    /// Offset delta of the first record carrying `max_timestamp` (-1 when
    /// there is none); 0 for LogAppendTime, where every record carries it.
    pub offset_delta_of_max_timestamp: i32,
    pub producer_id: ProducerId,
    pub producer_epoch: ProducerEpoch,
    pub base_sequence: i32,
    pub is_transactional: bool,
    pub compression: Compression,
}

/// The result of [`validate_client_records`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedRecords {
    /// Always exactly one batch: Kafka rejects a v2 append of several.
    pub batches: Vec<ValidatedBatch>,
    pub total_records: i64,
    /// The largest `max_timestamp` of the batches (-1 if none).
    pub max_timestamp: Timestamp,
    /// Kafka's `shallowOffsetOfMaxTimestamp` relative to the first record of
    /// the append: the last offset delta of the batch holding the max
    /// timestamp, or -1 when no record has a timestamp.
    pub shallow_offset_delta_of_max_timestamp: i64,
    /// `Some(now)` when the topic uses LogAppendTime.
    pub log_append_time: Option<Timestamp>,
}

/// Validate a client's Produce records for one partition, in place.
///
/// Rules, in Kafka's order: the buffer holds exactly one whole batch (none,
/// a partial tail or a second batch are errors); magic 2; base offset 0;
/// size ≤ `max_message_bytes`; CRC and codec valid; `lastOffsetDelta + 1 ==
/// RecordsCount > 0`; not a control batch; a producer id implies
/// `baseSequence ≥ 0`; then every record is decoded (decompressing when
/// needed) and must have offset delta equal to its index, a key on a
/// compacted topic, and a CreateTime timestamp within
/// `[now - before_max, now + after_max]`. As in Kafka, when records fail
/// both ways the timestamp error wins, and the first failing record is named.
///
/// Every error but [`BatchError::NoBatches`] and
/// [`BatchError::MultipleBatches`] is wrapped in [`BatchError::At`] with the
/// batch position; use [`BatchError::kind`] and [`BatchError::class`].
///
/// # Errors
/// See the rules above and [`BatchError::class`] for the Kafka error codes.
pub fn validate_client_records(
    bytes: &[u8],
    cfg: &AppendValidation,
) -> Result<ValidatedRecords, BatchError> {
    let mut scratch = Vec::new();
    validate_client_records_with(bytes, cfg, &mut scratch, DEFAULT_MAX_DECOMPRESSED)
}

/// [`validate_client_records`] reusing `scratch` for decompression, with an
/// output cap per batch.
///
/// # Errors
/// As [`validate_client_records`].
pub fn validate_client_records_with(
    bytes: &[u8],
    cfg: &AppendValidation,
    scratch: &mut Vec<u8>,
    max_decompressed: usize,
) -> Result<ValidatedRecords, BatchError> {
    if bytes.is_empty() {
        return Err(BatchError::NoBatches);
    }
    let prefix = BatchPrefix::parse(bytes).map_err(|e| e.at(0))?;
    let size = prefix.total_size();
    if size > bytes.len() {
        return Err(BatchError::Truncated {
            needed: size,
            available: bytes.len(),
        }
        .at(0));
    }
    if size < bytes.len() {
        let rest = &bytes[size..];
        return Err(match BatchPrefix::parse(rest) {
            Ok(p) if p.total_size() <= rest.len() => BatchError::MultipleBatches {
                second_position: size,
            },
            Ok(p) => BatchError::Truncated {
                needed: p.total_size(),
                available: rest.len(),
            }
            .at(size as u64),
            Err(e) => e.at(size as u64),
        });
    }
    let batch = validate_one(bytes, cfg, scratch, max_decompressed).map_err(|e| e.at(0))?;
    let has_max = batch.max_timestamp != Timestamp::NONE;
    Ok(ValidatedRecords {
        total_records: batch.records_count as i64,
        max_timestamp: batch.max_timestamp,
        shallow_offset_delta_of_max_timestamp: if has_max {
            batch.last_offset_delta as i64
        } else {
            -1
        },
        log_append_time: (cfg.timestamp_type == TimestampType::LogAppendTime).then_some(cfg.now),
        batches: vec![batch],
    })
}

fn validate_one(
    bytes: &[u8],
    cfg: &AppendValidation,
    scratch: &mut Vec<u8>,
    max_decompressed: usize,
) -> Result<ValidatedBatch, BatchError> {
    let view = BatchView::parse(bytes)?;
    if view.base_offset() != Offset(0) {
        return Err(BatchError::NonZeroBaseOffset {
            base_offset: view.base_offset(),
        });
    }
    if view.size() > cfg.max_message_bytes {
        return Err(BatchError::RecordTooLarge {
            size: view.size(),
            max: cfg.max_message_bytes,
        });
    }
    validate_batch(&view)?;
    let last_offset_delta = view.last_offset_delta();
    let count = view.records_count();
    if last_offset_delta < 0 {
        return Err(BatchError::InvalidOffsetRange { last_offset_delta });
    }
    if count <= 0 {
        return Err(BatchError::InvalidRecordCount { count });
    }
    if last_offset_delta as i64 + 1 != count as i64 {
        return Err(BatchError::OffsetCountMismatch {
            last_offset_delta,
            count,
        });
    }
    if view.is_control() {
        return Err(BatchError::ControlBatchFromClient);
    }
    if view.has_producer_id() && view.base_sequence() < 0 {
        return Err(BatchError::InvalidSequence {
            producer_id: view.producer_id(),
            base_sequence: view.base_sequence(),
        });
    }

    let (min_ts, max_ts) = (
        cfg.now.0.saturating_sub(cfg.timestamp_before_max_ms),
        cfg.now.0.saturating_add(cfg.timestamp_after_max_ms),
    );
    let batch_log_append = view.timestamp_type() == TimestampType::LogAppendTime;
    let records = view.record_iter_with_limit(scratch, max_decompressed)?;
    let (mut max_timestamp, mut delta_of_max) =
        match fast_scan(&view, &records, cfg, min_ts, max_ts, batch_log_append) {
            Some(s) => (s.max_timestamp, s.offset_delta_of_max),
            None => exact_scan(records, cfg, min_ts, max_ts, batch_log_append)?,
        };
    if cfg.timestamp_type == TimestampType::LogAppendTime {
        max_timestamp = cfg.now;
        delta_of_max = 0;
    }
    Ok(ValidatedBatch {
        position: 0,
        size: view.size(),
        records_count: count,
        last_offset_delta,
        max_timestamp,
        offset_delta_of_max_timestamp: delta_of_max,
        producer_id: view.producer_id(),
        producer_epoch: view.producer_epoch(),
        base_sequence: view.base_sequence(),
        is_transactional: view.is_transactional(),
        compression: view.compression().expect("codec checked by validate_batch"),
    })
}

/// The fast pass over the records ([`scan_client_records`]); `None` when it
/// does not apply (a client LogAppendTime batch, whose records all report
/// the batch MaxTimestamp) or finds any fault.
fn fast_scan(
    view: &BatchView<'_>,
    records: &RecordIter<'_>,
    cfg: &AppendValidation,
    min_ts: i64,
    max_ts: i64,
    batch_log_append: bool,
) -> Option<ScanSummary> {
    if batch_log_append {
        return None;
    }
    let (data, count) = records.section();
    let rules = ScanRules {
        base_timestamp: view.base_timestamp(),
        check_timestamps: cfg.timestamp_type == TimestampType::CreateTime,
        min_ts,
        max_ts,
        require_key: cfg.compacted,
    };
    scan_client_records(data, count, &rules)
}

/// Decode every record and report the first fault with Kafka's precedence;
/// on success the max timestamp and the offset delta of its first record.
pub(super) fn exact_scan(
    records: RecordIter<'_>,
    cfg: &AppendValidation,
    min_ts: i64,
    max_ts: i64,
    batch_log_append: bool,
) -> Result<(Timestamp, i32), BatchError> {
    let mut first_missing_key = None;
    let mut first_bad_timestamp = None;
    let mut max_timestamp = Timestamp::NONE;
    let mut delta_of_max = -1i32;
    for (index, record) in records.enumerate() {
        let record = record?;
        if record.offset_delta as i64 != index as i64 {
            return Err(BatchError::NonSequentialOffsetDelta {
                record_index: index,
                delta: record.offset_delta,
            });
        }
        // Kafka's validateRecord: a key error hides a timestamp error.
        if cfg.compacted && record.key.is_none() {
            first_missing_key.get_or_insert(index);
            continue;
        }
        let ts = record.timestamp;
        if cfg.timestamp_type == TimestampType::CreateTime && ts != Timestamp::NONE {
            if ts.0 < min_ts || ts.0 > max_ts {
                first_bad_timestamp.get_or_insert(BatchError::InvalidTimestamp {
                    record_index: index,
                    timestamp: ts,
                    min: min_ts,
                    max: max_ts,
                });
            }
        } else if batch_log_append {
            first_bad_timestamp.get_or_insert(BatchError::UnexpectedLogAppendTime {
                record_index: index,
            });
        }
        if ts > max_timestamp {
            max_timestamp = ts;
            delta_of_max = record.offset_delta;
        }
    }
    if let Some(e) = first_bad_timestamp {
        return Err(e);
    }
    if let Some(record_index) = first_missing_key {
        return Err(BatchError::MissingKey { record_index });
    }
    Ok((max_timestamp, delta_of_max))
}

/// The leader's in-place stamping after [`validate_client_records`]: each
/// batch gets its base offset (the first at `first_offset`, the next ones
/// following), `leader_epoch`, and its MaxTimestamp and timestamp type (the
/// CRC is recomputed only when those change). Returns the last offset assigned.
///
/// # Errors
/// [`BatchError`] if `bytes` is not the buffer that was validated.
pub fn assign_offsets_in_place(
    bytes: &mut [u8],
    validated: &ValidatedRecords,
    first_offset: Offset,
    leader_epoch: LeaderEpoch,
    timestamp_type: TimestampType,
) -> Result<Offset, BatchError> {
    let mut next = first_offset;
    for b in &validated.batches {
        let slot = bytes
            .get_mut(b.position..b.position + b.size)
            .ok_or(BatchError::Truncated {
                needed: b.position + b.size,
                available: 0,
            })?;
        let mut m = BatchViewMut::parse(slot).map_err(|e| e.at(b.position as u64))?;
        m.set_base_offset(next);
        m.set_partition_leader_epoch(leader_epoch);
        m.set_max_timestamp(timestamp_type, b.max_timestamp);
        next = next.plus(b.last_offset_delta as i64 + 1);
    }
    Ok(next.plus(-1))
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
