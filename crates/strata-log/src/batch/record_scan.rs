//! The leader's fast pass over a client batch's records.
//!
//! [`scan_client_records`] walks the records section once and checks every
//! rule the leader's per-record validation checks (Kafka's `LogValidator`
//! for v2 batches, see [`super::validate`]): each record's length, varint
//! bounds, key and value bounds, header count and header bounds, declared
//! size equal to the bytes consumed, offset delta equal to the record index,
//! a key on a compacted topic, the CreateTime timestamp window, and no bytes
//! left after the last record. It builds no [`super::Record`] values, reads
//! one- and two-byte varints inline and compares them in their raw zig-zag
//! form (sign from the low bit, offset delta against `2 * index`).
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
use crate::types::Timestamp;

/// What the fast pass checks besides the record structure.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanRules {
    /// The batch's BaseTimestamp; record timestamps are `base + delta`.
    pub base_timestamp: Timestamp,
    /// Check record timestamps (other than -1) against `[min_ts, max_ts]`
    /// (bounds in ms, saturated like the exact path's).
    pub check_timestamps: bool,
    pub min_ts: i64,
    pub max_ts: i64,
    /// Every record must carry a key.
    pub require_key: bool,
}

/// The result of a clean pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanSummary {
    /// Largest record timestamp, [`Timestamp::NONE`] when no record has one.
    pub max_timestamp: Timestamp,
    /// Offset delta of the first record carrying `max_timestamp`, -1 if none.
    pub offset_delta_of_max: i32,
}

/// Zig-zag encode: the raw value whose decoding is `v`.
#[inline(always)]
fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// A length from a raw zig-zag value: `None` for a negative length (odd
/// raw value), else the length.
#[inline(always)]
fn raw_len(raw: u32) -> Option<usize> {
    (raw & 1 == 0).then_some((raw >> 1) as usize)
}

/// Encodings longer than the inline cases, via the general readers (same
/// results, including Java's handling of surplus high bits, re-encoded to
/// the raw zig-zag value of what they decode). Positions go by value so the
/// hot loop keeps them in registers.
#[cold]
#[inline(never)]
fn varint_long(buf: &[u8], mut at: usize) -> Option<(u32, usize)> {
    let v = read_varint(buf, &mut at).ok()?;
    Some((zigzag32(v), at))
}

#[cold]
#[inline(never)]
fn varlong_long(buf: &[u8], mut at: usize) -> Option<(i64, usize)> {
    let v = read_varlong(buf, &mut at).ok()?;
    Some((v, at))
}

/// The raw (still zig-zag encoded) varint of `buf` at `at` and the position
/// after it; one- and two-byte encodings inline. Callers test the sign with
/// the low bit and compare raw values, which saves decoding.
#[inline(always)]
fn raw_varint(buf: &[u8], at: usize) -> Option<(u32, usize)> {
    let b0 = *buf.get(at)?;
    if b0 < 0x80 {
        return Some((b0 as u32, at + 1));
    }
    match buf.get(at + 1) {
        Some(&b1) if b1 < 0x80 => Some(((b0 & 0x7f) as u32 | (b1 as u32) << 7, at + 2)),
        _ => varint_long(buf, at),
    }
}

/// A zig-zag varlong of `buf` at `at` and the position after it; one-byte
/// encodings inline.
#[inline(always)]
fn varlong(buf: &[u8], at: usize) -> Option<(i64, usize)> {
    match buf.get(at) {
        Some(&b0) if b0 < 0x80 => Some((((b0 >> 1) as i64) ^ -((b0 & 1) as i64), at + 1)),
        _ => varlong_long(buf, at),
    }
}

/// Skip a length-prefixed field of `body` at `at`; a negative length is a
/// null field, allowed only when `nullable`. Returns whether the field is
/// present and the position after it; `None` when it overruns.
#[inline(always)]
fn skip_field(body: &[u8], at: usize, nullable: bool) -> Option<(bool, usize)> {
    let (raw, at) = raw_varint(body, at)?;
    let Some(len) = raw_len(raw) else {
        return nullable.then_some((false, at));
    };
    // `len` < 2^31 and `at` <= body.len(), so this cannot overflow.
    let end = at + len;
    if end > body.len() {
        return None;
    }
    Some((true, end))
}

/// The headers of one record, from `p` to the end of `body`.
#[cold]
#[inline(never)]
fn skip_headers(body: &[u8], mut p: usize, raw_count: u32) -> Option<usize> {
    let count = raw_len(raw_count)?;
    if count > body.len() - p {
        return None;
    }
    for _ in 0..count {
        (_, p) = skip_field(body, p, false)?;
        (_, p) = skip_field(body, p, true)?;
    }
    Some(p)
}

/// Check the `count` (at least one: the caller rejects a batch declaring
/// none) records of the uncompressed records section `data`. `None` when
/// any rule fails; the exact path then names the fault.
pub(crate) fn scan_client_records(
    data: &[u8],
    count: usize,
    rules: &ScanRules,
) -> Option<ScanSummary> {
    // A timestamp other than -1 passes when `ts - min_ts` (wrapping, as
    // unsigned) is at most `span`: one compare for `min_ts <= ts <= max_ts`.
    let (min_ts, span) = match rules.check_timestamps {
        false => (i64::MIN, u64::MAX),
        true if rules.min_ts <= rules.max_ts => {
            (rules.min_ts, rules.max_ts.wrapping_sub(rules.min_ts) as u64)
        }
        // An empty window rejects every timestamp: the exact path reports it.
        true => return None,
    };
    // Offset deltas must be 0, 1, 2, ...: compared as raw zig-zag values
    // (2 * index), which fit in u32 since `count` <= i32::MAX.
    if count > i32::MAX as usize {
        return None;
    }
    let mut pos = 0usize;
    let mut max_timestamp = Timestamp::NONE.0;
    let mut raw_delta_of_max = None;
    for index in 0..count as u32 {
        let (raw_length, at) = raw_varint(data, pos)?;
        let end = at + raw_len(raw_length)?;
        let body = data.get(at..end)?;
        // Attributes (unused) are the first byte of a non-empty body.
        let (timestamp_delta, p) = varlong(body, 1)?;
        let (raw_offset_delta, p) = raw_varint(body, p)?;
        if raw_offset_delta != index << 1 {
            return None;
        }
        let (has_key, p) = skip_field(body, p, true)?;
        if rules.require_key && !has_key {
            return None;
        }
        let (_, p) = skip_field(body, p, true)?;
        let (raw_headers, mut p) = raw_varint(body, p)?;
        if raw_headers != 0 {
            p = skip_headers(body, p, raw_headers)?;
        }
        if p != body.len() {
            return None;
        }
        let ts = rules.base_timestamp.0.wrapping_add(timestamp_delta);
        if ts != Timestamp::NONE.0 && ts.wrapping_sub(min_ts) as u64 > span {
            return None;
        }
        if ts > max_timestamp {
            max_timestamp = ts;
            raw_delta_of_max = Some(index);
        }
        pos = end;
    }
    (pos == data.len()).then_some(ScanSummary {
        max_timestamp: Timestamp(max_timestamp),
        offset_delta_of_max: raw_delta_of_max.map_or(-1, |i| i as i32),
    })
}

#[cfg(test)]
#[path = "record_scan_tests.rs"]
mod tests;
