//! The leader's fast pass over a client batch's records.
//!
//! [`scan_client_records`] walks the records section once and checks every
//! rule the leader's per-record validation checks (Kafka's `LogValidator`
//! for v2 batches, see [`super::validate`]): each record's length, varint
//! bounds, key and value bounds, header count and header bounds, declared
//! size equal to the bytes consumed, offset delta equal to the record index,
//! a key on a compacted topic, the CreateTime timestamp window, and no bytes
//! left after the last record. It builds no [`super::Record`] values and
//! reads one-byte varints inline.
//!
//! It answers only "all valid, with this summary" or "something is wrong":
//! on `None` the caller re-runs the exact record iterator, which names the
//! first failing record with Kafka's precedence. The fast pass is therefore
//! never the source of an error, and it may only accept what the exact path
//! accepts (the property tests check that both agree on random batches).
//!
//! Format walked (see [`super::record`]): `Length varint | Attributes i8 |
//! TimestampDelta varlong | OffsetDelta varint | KeyLength varint, Key |
//! ValueLength varint, Value | HeadersCount varint | Headers`.

use super::varint::{read_varint, read_varlong};

/// What the fast pass checks besides the record structure.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanRules {
    /// The batch's BaseTimestamp; record timestamps are `base + delta`.
    pub base_timestamp: i64,
    /// Check record timestamps (other than -1) against `[min_ts, max_ts]`.
    pub check_timestamps: bool,
    pub min_ts: i64,
    pub max_ts: i64,
    /// Every record must carry a key.
    pub require_key: bool,
}

/// The result of a clean pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanSummary {
    /// Largest record timestamp, -1 when none is larger than -1.
    pub max_timestamp: i64,
    /// Offset delta of the first record carrying `max_timestamp`, -1 if none.
    pub offset_delta_of_max: i32,
}

/// Zig-zag decode of a raw 32-bit varint value.
#[inline(always)]
fn unzigzag32(raw: u32) -> i32 {
    ((raw >> 1) as i32) ^ -((raw & 1) as i32)
}

/// A zig-zag varint: one- and two-byte encodings inline, longer ones via
/// [`read_varint`] (same result, including Java's handling of surplus bits).
#[inline(always)]
fn varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    let at = *pos;
    let b0 = *buf.get(at)?;
    if b0 < 0x80 {
        *pos = at + 1;
        return Some(unzigzag32(b0 as u32));
    }
    match buf.get(at + 1) {
        Some(&b1) if b1 < 0x80 => {
            *pos = at + 2;
            Some(unzigzag32((b0 & 0x7f) as u32 | (b1 as u32) << 7))
        }
        _ => read_varint(buf, pos).ok(),
    }
}

/// A zig-zag varlong: one-byte encodings inline, longer ones via [`read_varlong`].
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

/// Skip a length-prefixed field of `body` at `*pos`; a negative length is a
/// null field, allowed only when `nullable`. `None` when it overruns.
#[inline(always)]
fn skip_field(body: &[u8], pos: &mut usize, nullable: bool) -> Option<bool> {
    let len = varint(body, pos)?;
    if len < 0 {
        return nullable.then_some(false);
    }
    let end = pos.checked_add(len as usize)?;
    if end > body.len() {
        return None;
    }
    *pos = end;
    Some(true)
}

/// Check the `count` (at least one: the caller rejects a batch declaring
/// none) records of the uncompressed records section `data`. `None` when
/// any rule fails; the exact path then names the fault.
pub(crate) fn scan_client_records(
    data: &[u8],
    count: usize,
    rules: &ScanRules,
) -> Option<ScanSummary> {
    let mut pos = 0usize;
    let mut max_timestamp = -1i64;
    let mut offset_delta_of_max = -1i32;
    for index in 0..count {
        let length = varint(data, &mut pos)?;
        if length < 0 {
            return None;
        }
        let end = pos.checked_add(length as usize)?;
        let body = data.get(pos..end)?;
        // Attributes (unused) are the first byte of a non-empty body.
        if body.is_empty() {
            return None;
        }
        let mut p = 1usize;
        let timestamp_delta = varlong(body, &mut p)?;
        let offset_delta = varint(body, &mut p)?;
        if offset_delta as i64 != index as i64 {
            return None;
        }
        let has_key = skip_field(body, &mut p, true)?;
        if rules.require_key && !has_key {
            return None;
        }
        skip_field(body, &mut p, true)?;
        let headers = varint(body, &mut p)?;
        if headers < 0 || headers as usize > body.len() - p {
            return None;
        }
        for _ in 0..headers {
            skip_field(body, &mut p, false)?;
            skip_field(body, &mut p, true)?;
        }
        if p != body.len() {
            return None;
        }
        let ts = rules.base_timestamp.wrapping_add(timestamp_delta);
        if rules.check_timestamps && ts != -1 && (ts < rules.min_ts || ts > rules.max_ts) {
            return None;
        }
        if ts > max_timestamp {
            max_timestamp = ts;
            offset_delta_of_max = offset_delta;
        }
        pos = end;
    }
    (pos == data.len()).then_some(ScanSummary {
        max_timestamp,
        offset_delta_of_max,
    })
}

#[cfg(test)]
#[path = "record_scan_tests.rs"]
mod tests;
