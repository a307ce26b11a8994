//! Records inside a v2 batch (§1.5): a zero-copy reader that enforces every
//! rule Kafka's `DefaultRecord.readFrom` and the batch record iterator enforce.
//!
//! Format of one record (varints are zig-zag, see [`super::varint`]):
//!
//! ```text
//! Length          varint    bytes after this field
//! Attributes      int8      unused
//! TimestampDelta  varlong   ts - batch BaseTimestamp
//! OffsetDelta     varint    offset - batch BaseOffset
//! KeyLength       varint    -1 (any negative) = null key
//! Key             bytes
//! ValueLength     varint    -1 (any negative) = null value (tombstone)
//! Value           bytes
//! HeadersCount    varint    >= 0
//! Headers         [KeyLength varint >= 0, Key UTF-8, ValueLength varint (-1 = null), Value]
//! ```
//!
//! [`RecordIter`] borrows the records section (the batch itself, or a
//! decompression buffer the caller owns and may reuse) and allocates nothing
//! per record: headers are validated on read but kept as a slice that
//! [`Headers`] walks lazily.

use std::borrow::Cow;

use super::compression::{decompress_into, DEFAULT_MAX_DECOMPRESSED};
use super::error::{BatchError, RecordFault};
use super::varint::{read_varint, read_varlong};
use super::{increment_sequence, BatchView, Compression, TimestampType, NO_SEQUENCE};
use crate::types::{Offset, Timestamp};

/// One record read from a batch, borrowing its key, value and headers.
///
/// Format: `Length varint | Attributes i8 | TimestampDelta varlong |
/// OffsetDelta varint | KeyLength varint, Key | ValueLength varint, Value |
/// HeadersCount varint, Headers` (see the module docs for the rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// `baseOffset + offsetDelta`.
    pub offset: Offset,
    pub offset_delta: i32,
    /// `baseTimestamp + timestampDelta`, or the batch MaxTimestamp for LogAppendTime.
    pub timestamp: Timestamp,
    pub timestamp_delta: i64,
    /// `incrementSequence(baseSequence, offsetDelta)`, or -1 without a base sequence.
    pub sequence: i32,
    pub attributes: i8,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Headers<'a>,
    /// Encoded size including the Length varint.
    pub size_in_bytes: usize,
}

impl Record<'_> {
    /// Copy into an owned record.
    pub fn to_owned_record(&self) -> OwnedRecord {
        OwnedRecord {
            offset: self.offset,
            timestamp: self.timestamp,
            sequence: self.sequence,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: self.headers.map(|h| h.to_owned_header()).collect(),
        }
    }
}

/// One record header, borrowed.
///
/// Format: `KeyLength varint (>= 0) | Key UTF-8 | ValueLength varint (-1 = null) | Value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// The key's bytes (UTF-8 when written by a well-behaved client).
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

impl Header<'_> {
    /// The key as text; invalid UTF-8 is replaced, as Java's decoder does.
    pub fn key_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.key)
    }

    pub fn to_owned_header(&self) -> RecordHeader {
        RecordHeader {
            key: self.key_str().into_owned(),
            value: self.value.map(<[u8]>::to_vec),
        }
    }
}

/// An owned record header; also the builder's input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    pub key: String,
    pub value: Option<Vec<u8>>,
}

impl RecordHeader {
    pub fn new(key: impl Into<String>, value: Option<&[u8]>) -> Self {
        RecordHeader {
            key: key.into(),
            value: value.map(<[u8]>::to_vec),
        }
    }
}

/// An owned copy of a [`Record`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRecord {
    pub offset: Offset,
    pub timestamp: Timestamp,
    pub sequence: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<RecordHeader>,
}

/// The headers of a record: already validated, walked lazily.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers<'a> {
    bytes: &'a [u8],
    remaining: usize,
}

impl Headers<'_> {
    /// Number of headers left to yield.
    pub fn count(&self) -> usize {
        self.remaining
    }
    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }
}

impl<'a> Iterator for Headers<'a> {
    type Item = Header<'a>;

    fn next(&mut self) -> Option<Header<'a>> {
        if self.remaining == 0 {
            return None;
        }
        // Validated by `parse_record`, so the reads cannot fail; stop quietly if they did.
        let mut pos = 0;
        let key = read_bytes(self.bytes, &mut pos).ok()??;
        let value = read_bytes(self.bytes, &mut pos).ok()?;
        self.bytes = &self.bytes[pos..];
        self.remaining -= 1;
        Some(Header { key, value })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

/// Batch-level values every record needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordContext {
    pub base_offset: i64,
    pub base_timestamp: i64,
    pub base_sequence: i32,
    pub log_append_time: Option<i64>,
}

impl RecordContext {
    pub(crate) fn of(view: &BatchView<'_>) -> RecordContext {
        RecordContext {
            base_offset: view.base_offset().0,
            base_timestamp: view.base_timestamp().0,
            base_sequence: view.base_sequence(),
            log_append_time: (view.timestamp_type() == TimestampType::LogAppendTime)
                .then(|| view.max_timestamp().0),
        }
    }
}

/// Read a length-prefixed field; a negative length is null, as in Kafka's `Utils.readBytes`.
fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, RecordFault> {
    let len = read_varint(buf, pos)?;
    if len < 0 {
        return Ok(None);
    }
    let end = pos
        .checked_add(len as usize)
        .filter(|&e| e <= buf.len())
        .ok_or(RecordFault::FieldOverrun)?;
    let field = &buf[*pos..end];
    *pos = end;
    Ok(Some(field))
}

/// Parse the record at `data[*pos..]`, advancing `*pos` past it.
pub(crate) fn parse_record<'a>(
    data: &'a [u8],
    pos: &mut usize,
    ctx: &RecordContext,
) -> Result<Record<'a>, RecordFault> {
    let start = *pos;
    let mut at = *pos;
    let length = read_varint(data, &mut at)?;
    if length < 0 {
        return Err(RecordFault::NegativeLength { length });
    }
    let remaining = data.len() - at;
    if length as usize > remaining {
        return Err(RecordFault::LengthExceedsRemaining { length, remaining });
    }
    // Parse within the declared body: a field running past it is an overrun.
    let body = &data[at..at + length as usize];
    let mut p = 0;
    let attributes = *body.first().ok_or(RecordFault::PrematureEnd)? as i8;
    p += 1;
    let timestamp_delta = read_varlong(body, &mut p)?;
    let offset_delta = read_varint(body, &mut p)?;
    let key = read_bytes(body, &mut p)?;
    let value = read_bytes(body, &mut p)?;
    let header_count = read_varint(body, &mut p)?;
    if header_count < 0 {
        return Err(RecordFault::NegativeHeaderCount {
            count: header_count,
        });
    }
    if header_count as usize > body.len() - p {
        return Err(RecordFault::HeaderCountExceedsRemaining {
            count: header_count,
            remaining: body.len() - p,
        });
    }
    let headers_start = p;
    for _ in 0..header_count {
        let key_len = read_varint(body, &mut p)?;
        if key_len < 0 {
            return Err(RecordFault::NegativeHeaderKeyLength { length: key_len });
        }
        let end = p
            .checked_add(key_len as usize)
            .filter(|&e| e <= body.len())
            .ok_or(RecordFault::FieldOverrun)?;
        p = end;
        read_bytes(body, &mut p)?;
    }
    if p != body.len() {
        return Err(RecordFault::SizeMismatch {
            declared: length,
            consumed: p,
        });
    }
    let timestamp = match ctx.log_append_time {
        Some(t) => t,
        None => ctx.base_timestamp.wrapping_add(timestamp_delta),
    };
    let sequence = if ctx.base_sequence >= 0 {
        increment_sequence(ctx.base_sequence, offset_delta)
    } else {
        NO_SEQUENCE
    };
    *pos = at + body.len();
    Ok(Record {
        offset: Offset(ctx.base_offset.wrapping_add(offset_delta as i64)),
        offset_delta,
        timestamp: Timestamp(timestamp),
        timestamp_delta,
        sequence,
        attributes,
        key,
        value,
        headers: Headers {
            bytes: &body[headers_start..],
            remaining: header_count as usize,
        },
        size_in_bytes: *pos - start,
    })
}

/// Iterator over the records of one batch.
///
/// Yields exactly `RecordsCount` records, then checks that nothing is left in
/// the records section ("incorrect declared batch size", reported in place of
/// the last record, as Kafka does). After the first error it yields nothing.
#[derive(Clone, Debug)]
pub struct RecordIter<'a> {
    data: &'a [u8],
    pos: usize,
    index: usize,
    count: usize,
    ctx: RecordContext,
    failed: bool,
}

impl<'a> RecordIter<'a> {
    /// Iterate `count` records of the (uncompressed) records section `data`.
    pub(crate) fn new(data: &'a [u8], count: usize, ctx: RecordContext) -> Self {
        RecordIter {
            data,
            pos: 0,
            index: 0,
            count,
            ctx,
            failed: false,
        }
    }

    /// The (decompressed) records section and the declared record count,
    /// for the leader's fast pass ([`super::record_scan`]).
    pub(crate) fn section(&self) -> (&'a [u8], usize) {
        (self.data, self.count)
    }

    /// Records not yet yielded.
    pub fn remaining_records(&self) -> usize {
        if self.failed {
            0
        } else {
            self.count - self.index
        }
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.index >= self.count {
            return None;
        }
        let index = self.index;
        self.index += 1;
        let result = match parse_record(self.data, &mut self.pos, &self.ctx) {
            Ok(_) if self.index == self.count && self.pos != self.data.len() => {
                Err(BatchError::TrailingBytes {
                    remaining: self.data.len() - self.pos,
                })
            }
            Ok(record) => Ok(record),
            Err(reason) => Err(BatchError::InvalidRecord { index, reason }),
        };
        if result.is_err() {
            self.failed = true;
        }
        Some(result)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining_records()))
    }
}

impl<'a> BatchView<'a> {
    /// Iterate the batch's records, decompressing into `scratch` when the
    /// batch is compressed (output capped at [`DEFAULT_MAX_DECOMPRESSED`]).
    /// `scratch` is cleared first and may be reused across batches.
    ///
    /// LogAppendTime batches report the batch MaxTimestamp for every record;
    /// delete-horizon batches report `base + delta` like any other.
    ///
    /// # Errors
    /// Invalid codec id, negative record count, or a corrupt compressed stream.
    /// Per-record faults come from the iterator.
    pub fn record_iter<'s>(&self, scratch: &'s mut Vec<u8>) -> Result<RecordIter<'s>, BatchError>
    where
        'a: 's,
    {
        self.record_iter_with_limit(scratch, DEFAULT_MAX_DECOMPRESSED)
    }

    /// [`Self::record_iter`] with an explicit decompressed-size cap.
    ///
    /// # Errors
    /// As [`Self::record_iter`].
    pub fn record_iter_with_limit<'s>(
        &self,
        scratch: &'s mut Vec<u8>,
        max_decompressed: usize,
    ) -> Result<RecordIter<'s>, BatchError>
    where
        'a: 's,
    {
        let codec = self.compression().ok_or(BatchError::InvalidCompression {
            id: self.compression_id(),
        })?;
        let count = self.records_count();
        if count < 0 {
            return Err(BatchError::NegativeRecordCount { count });
        }
        let ctx = RecordContext::of(self);
        if count == 0 {
            // Kafka returns an empty iterator without looking at the records section.
            return Ok(RecordIter::new(&[], 0, ctx));
        }
        let data: &'s [u8] = if codec == Compression::None {
            self.records_bytes()
        } else {
            scratch.clear();
            decompress_into(codec, self.records_bytes(), scratch, max_decompressed)?;
            scratch
        };
        Ok(RecordIter::new(data, count as usize, ctx))
    }

    /// Decode every record into owned values (convenience for tools and tests).
    ///
    /// # Errors
    /// As [`Self::record_iter`], plus the first per-record fault.
    pub fn records(&self) -> Result<Vec<OwnedRecord>, BatchError> {
        let mut scratch = Vec::new();
        let iter = self.record_iter(&mut scratch)?;
        iter.map(|r| r.map(|r| r.to_owned_record())).collect()
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
