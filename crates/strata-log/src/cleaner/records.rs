//! The cleaner's fast record walk and batch splice for uncompressed v2
//! batches.
//!
//! [`walk_records`] reads only what the cleaner needs from each record (its
//! offset, timestamp, key, whether the value is null, and where the part
//! after the timestamp starts) and checks the same structure the exact
//! iterator ([`crate::batch::RecordIter`]) checks. It never reports an
//! error itself: on `false` the caller re-runs the exact path, which names
//! the failing record, so the fast walk may only accept what the exact path
//! accepts. It also refuses what [`crate::batch::BatchBuilder`] would refuse
//! when rebuilding (offsets not increasing, deltas out of range, negative
//! timestamps other than -1), so the exact path reports those too.
//!
//! [`splice_batch`] writes the surviving records of such a batch as
//! `BatchBuilder` would re-encode them (`DefaultRecord.writeTo`), without
//! decoding and re-encoding each field: a record is
//! `Length varint | Attributes 0 | TimestampDelta varlong | rest`, and only
//! the length and timestamp delta can change (the base timestamp may move to
//! the first surviving record or the delete horizon); `rest` (offset delta,
//! key, value, headers) is copied. For canonically encoded records (every
//! Kafka client and Strata itself) the output is byte for byte what the
//! builder produces; a record with an over-long varint in `rest` keeps it.
//!
//! Format of one record (see `crate::batch::record`): `Length varint |
//! Attributes i8 | TimestampDelta varlong | OffsetDelta varint | KeyLength
//! varint, Key | ValueLength varint, Value | HeadersCount varint, Headers`.

use crate::batch::varint::{read_varint, read_varlong, varlong_size, write_varint, write_varlong};
use crate::batch::{
    crc32c, BatchView, TimestampType, ATTRIBUTES_POS, CRC_POS, LOG_OVERHEAD, MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
};
use crate::types::{Offset, Timestamp};

/// What the cleaner reads of one record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WalkedRecord<'a> {
    pub offset: Offset,
    /// As the exact iterator reports it: `base + delta`, or the batch
    /// MaxTimestamp for LogAppendTime.
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub null_value: bool,
    /// The encoded record, Length varint included.
    pub raw: &'a [u8],
    /// Where in `raw` the OffsetDelta varint starts.
    pub tail: usize,
}

#[inline(always)]
fn unzigzag(raw: u32) -> i32 {
    ((raw >> 1) as i32) ^ -((raw & 1) as i32)
}

/// A zig-zag varint: one- and two-byte encodings inline.
#[inline(always)]
fn varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    let at = *pos;
    let b0 = *buf.get(at)?;
    if b0 < 0x80 {
        *pos = at + 1;
        return Some(unzigzag(b0 as u32));
    }
    match buf.get(at + 1) {
        Some(&b1) if b1 < 0x80 => {
            *pos = at + 2;
            Some(unzigzag((b0 & 0x7f) as u32 | (b1 as u32) << 7))
        }
        _ => read_varint(buf, pos).ok(),
    }
}

#[inline(always)]
fn varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let at = *pos;
    let b0 = *buf.get(at)?;
    if b0 < 0x80 {
        *pos = at + 1;
        return Some(((b0 >> 1) as i64) ^ -((b0 & 1) as i64));
    }
    read_varlong(buf, pos).ok()
}

/// A length-prefixed field of `body` at `*pos` (`Some(None)` when null).
#[inline(always)]
fn field<'a>(body: &'a [u8], pos: &mut usize) -> Option<Option<&'a [u8]>> {
    let len = varint(body, pos)?;
    if len < 0 {
        return Some(None);
    }
    let end = pos.checked_add(len as usize)?;
    let f = body.get(*pos..end)?;
    *pos = end;
    Some(Some(f))
}

/// One record at `data[*pos..]`.
#[inline(always)]
fn walk_one<'a>(
    data: &'a [u8],
    pos: &mut usize,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
) -> Option<WalkedRecord<'a>> {
    let start = *pos;
    let mut at = start;
    let length = varint(data, &mut at)?;
    if length < 0 {
        return None;
    }
    let end = at.checked_add(length as usize)?;
    let body = data.get(at..end)?;
    let mut p = 1; // attributes
    if body.is_empty() {
        return None;
    }
    let ts_delta = varlong(body, &mut p)?;
    let tail = at - start + p;
    let offset_delta = varint(body, &mut p)?;
    let key = field(body, &mut p)?;
    let value = field(body, &mut p)?;
    let headers = varint(body, &mut p)?;
    if headers < 0 || headers as usize > body.len() - p {
        return None;
    }
    for _ in 0..headers {
        let key_len = varint(body, &mut p)?;
        if key_len < 0 {
            return None;
        }
        p = p
            .checked_add(key_len as usize)
            .filter(|e| *e <= body.len())?;
        field(body, &mut p)?;
    }
    if p != body.len() || offset_delta < 0 {
        return None;
    }
    *pos = end;
    Some(WalkedRecord {
        offset: Offset(base_offset.wrapping_add(offset_delta as i64)),
        timestamp: log_append_time.unwrap_or(base_timestamp.wrapping_add(ts_delta)),
        key,
        null_value: value.is_none(),
        raw: &data[start..end],
        tail,
    })
}

/// Walk the records of the uncompressed v2 `batch` into `out` (cleared
/// first). `false` when anything is unusual: the caller takes the exact
/// path, which reports the fault (or handles the case) precisely.
pub(crate) fn walk_records<'a>(batch: &BatchView<'a>, out: &mut Vec<WalkedRecord<'a>>) -> bool {
    out.clear();
    let count = batch.records_count();
    if count < 0 || batch.compression_id() != 0 || batch.magic() != MAGIC_V2 {
        return false;
    }
    let data = batch.records_bytes();
    let base = batch.base_offset().0;
    let base_ts = batch.base_timestamp().0;
    let lat =
        (batch.timestamp_type() == TimestampType::LogAppendTime).then(|| batch.max_timestamp().0);
    let mut pos = 0;
    let mut previous = i64::MIN;
    for _ in 0..count {
        let Some(r) = walk_one(data, &mut pos, base, base_ts, lat) else {
            return false;
        };
        // What the builder would refuse when rebuilding.
        if r.offset.0 <= previous
            || r.offset.0.wrapping_sub(base) > i32::MAX as i64
            || (r.timestamp < 0 && r.timestamp != Timestamp::NONE.0)
        {
            return false;
        }
        previous = r.offset.0;
        out.push(r);
    }
    pos == data.len()
}

/// Append to `out` the uncompressed v2 batch holding `kept` (records of
/// `batch`, in order, at least one) as `BatchBuilder` builds it: same base
/// offset, last offset, leader epoch, producer fields and flags; base
/// timestamp the delete horizon if given, else the first kept record's;
/// a fresh CRC. Returns the new MaxTimestamp.
pub(crate) fn splice_batch(
    batch: &BatchView<'_>,
    kept: &[WalkedRecord<'_>],
    horizon: Option<Timestamp>,
    out: &mut Vec<u8>,
) -> Timestamp {
    let start = out.len();
    let base_ts = horizon.map_or(kept[0].timestamp, |h| h.0);
    let lat = batch.timestamp_type() == TimestampType::LogAppendTime;
    out.resize(start + RECORD_BATCH_OVERHEAD, 0);
    let mut max_ts = Timestamp::NONE.0;
    for r in kept {
        let delta = r.timestamp.wrapping_sub(base_ts);
        let rest = &r.raw[r.tail..];
        write_varint(out, (1 + varlong_size(delta) + rest.len()) as i32);
        out.push(0);
        write_varlong(out, delta);
        out.extend_from_slice(rest);
        max_ts = max_ts.max(r.timestamp);
    }
    if lat {
        max_ts = batch.max_timestamp().0;
    }
    let mut attributes = 0u16; // uncompressed
    if lat {
        attributes |= 0x08;
    }
    if batch.is_transactional() {
        attributes |= 0x10;
    }
    if batch.is_control() {
        attributes |= 0x20;
    }
    if horizon.is_some() {
        attributes |= 0x40;
    }
    let size = out.len() - start;
    let last_delta = (batch.last_offset().0 - batch.base_offset().0) as i32;
    let h = &mut out[start..start + RECORD_BATCH_OVERHEAD];
    h[0..8].copy_from_slice(&batch.base_offset().0.to_be_bytes());
    h[8..12].copy_from_slice(&((size - LOG_OVERHEAD) as i32).to_be_bytes());
    h[12..16].copy_from_slice(&batch.partition_leader_epoch().0.to_be_bytes());
    h[16] = MAGIC_V2 as u8;
    h[21..23].copy_from_slice(&attributes.to_be_bytes());
    h[23..27].copy_from_slice(&last_delta.to_be_bytes());
    h[27..35].copy_from_slice(&base_ts.to_be_bytes());
    h[35..43].copy_from_slice(&max_ts.to_be_bytes());
    h[43..51].copy_from_slice(&batch.producer_id().0.to_be_bytes());
    h[51..53].copy_from_slice(&batch.producer_epoch().0.to_be_bytes());
    h[53..57].copy_from_slice(&batch.base_sequence().to_be_bytes());
    h[57..61].copy_from_slice(&(kept.len() as i32).to_be_bytes());
    let crc = crc32c(&out[start + ATTRIBUTES_POS..]);
    out[start + CRC_POS..start + CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
    Timestamp(max_ts)
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
