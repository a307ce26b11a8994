//! Checks of a segment's `.index`, `.timeindex` and `.txnindex` against the
//! segment's batches (`docs/kafka-behaviour.md` §3–§5).
//!
//! Offset index entry (O, P) is written by an append that started at
//! position P and whose largest offset is O, so: P is a batch start, that
//! batch's base offset is ≤ O, and every earlier batch ends below O.
//! Time index entry (T, O): O is the last offset of the batch holding the
//! segment's max timestamp T so far, so that batch's max timestamp is T and
//! no earlier batch has a larger one.

use std::path::Path;

use super::findings::{Finding, IndexKind, Problem};
use super::segment::SegmentScan;
use crate::read::index::{
    parse_offset_index, parse_time_index, OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE,
};
use crate::read::txn::parse_txn_index;

/// Split slots into those in use and a zero-filled tail (Kafka's dump stops
/// at the first slot after the first whose offset is the base offset);
/// returns how many are in use. A non-zero slot in the "tail" makes the whole
/// index in use, so the monotonicity checks see it.
fn slots_in_use(slots: &[&[u8]], first_relative_zero_after: impl Fn(usize) -> bool) -> usize {
    // A wholly zero file is an untouched preallocated index: no entries.
    if slots.iter().all(|s| s.iter().all(|b| *b == 0)) {
        return 0;
    }
    let cut = (1..slots.len())
        .find(|&i| first_relative_zero_after(i))
        .unwrap_or(slots.len());
    if slots[cut..].iter().all(|s| s.iter().all(|b| *b == 0)) {
        cut
    } else {
        slots.len()
    }
}

fn check_size(
    path: &Path,
    index: IndexKind,
    len: usize,
    entry_size: usize,
    out: &mut Vec<Finding>,
) {
    if !len.is_multiple_of(entry_size) {
        out.push(Finding::error(
            path,
            Some((len - len % entry_size) as u64),
            Problem::IndexSizeNotMultiple {
                index,
                len: len as u64,
                entry_size: entry_size as u64,
            },
        ));
    }
}

/// Check an offset index against its segment.
pub fn check_offset_index(path: &Path, bytes: &[u8], seg: &SegmentScan, out: &mut Vec<Finding>) {
    check_size(path, IndexKind::Offset, bytes.len(), OFFSET_ENTRY_SIZE, out);
    let base = strata_log::Offset(seg.base);
    let index = parse_offset_index(bytes, base);
    let slots: Vec<&[u8]> = bytes.chunks_exact(OFFSET_ENTRY_SIZE).collect();
    let used = slots_in_use(&slots, |i| index.entries[i].relative == 0);
    if used < slots.len() {
        out.push(Finding::warning(
            path,
            Some((used * OFFSET_ENTRY_SIZE) as u64),
            Problem::IndexZeroTail {
                index: IndexKind::Offset,
                slots: slots.len() - used,
            },
        ));
    }
    let segment_last = seg.last_offset();
    for (i, e) in index.entries[..used].iter().enumerate() {
        let at = Some((i * OFFSET_ENTRY_SIZE) as u64);
        let (offset, position) = (e.offset.get(), i64::from(e.position));
        if e.relative < 0 {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexOffsetBelowBase {
                    index: IndexKind::Offset,
                    entry: i,
                    offset,
                    base: seg.base,
                },
            ));
            continue;
        }
        if i > 0 {
            let prev = index.entries[i - 1];
            if e.offset <= prev.offset {
                out.push(Finding::error(
                    path,
                    at,
                    Problem::IndexOffsetNotIncreasing {
                        index: IndexKind::Offset,
                        entry: i,
                        offset,
                        previous: prev.offset.get(),
                    },
                ));
            }
            if e.position < prev.position {
                out.push(Finding::error(
                    path,
                    at,
                    Problem::IndexPositionDecreasing {
                        entry: i,
                        position,
                        previous: i64::from(prev.position),
                    },
                ));
            }
        }
        if segment_last.is_none_or(|last| offset > last) {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexOffsetBeyondSegment {
                    index: IndexKind::Offset,
                    entry: i,
                    offset,
                    segment_last: segment_last.unwrap_or(seg.base - 1),
                },
            ));
        }
        let Some((bi, batch)) = u64::try_from(e.position).ok().and_then(|p| seg.batch_at(p)) else {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexPositionNotBatchStart {
                    entry: i,
                    offset,
                    position,
                },
            ));
            continue;
        };
        if batch.base_offset > offset {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexBatchAfterOffset {
                    entry: i,
                    offset,
                    position,
                    batch_base: batch.base_offset,
                },
            ));
        }
        if bi > 0 && seg.batches[bi - 1].last_offset >= offset {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexEarlierBatchReachesOffset {
                    entry: i,
                    offset,
                    position,
                    previous_last: seg.batches[bi - 1].last_offset,
                },
            ));
        }
    }
}

/// Check a time index against its segment; returns the last entry in use
/// as `(timestamp, offset)`.
pub fn check_time_index(
    path: &Path,
    bytes: &[u8],
    seg: &SegmentScan,
    out: &mut Vec<Finding>,
) -> Option<(i64, i64)> {
    check_size(path, IndexKind::Time, bytes.len(), TIME_ENTRY_SIZE, out);
    let index = parse_time_index(bytes, strata_log::Offset(seg.base));
    let slots: Vec<&[u8]> = bytes.chunks_exact(TIME_ENTRY_SIZE).collect();
    let used = slots_in_use(&slots, |i| index.entries[i].relative == 0);
    if used < slots.len() {
        out.push(Finding::warning(
            path,
            Some((used * TIME_ENTRY_SIZE) as u64),
            Problem::IndexZeroTail {
                index: IndexKind::Time,
                slots: slots.len() - used,
            },
        ));
    }
    let segment_last = seg.last_offset();
    for (i, e) in index.entries[..used].iter().enumerate() {
        let at = Some((i * TIME_ENTRY_SIZE) as u64);
        let (offset, timestamp) = (e.offset.get(), e.timestamp.0);
        if e.relative < 0 {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexOffsetBelowBase {
                    index: IndexKind::Time,
                    entry: i,
                    offset,
                    base: seg.base,
                },
            ));
            continue;
        }
        if i > 0 {
            let prev = index.entries[i - 1];
            if e.timestamp <= prev.timestamp {
                out.push(Finding::error(
                    path,
                    at,
                    Problem::TimeIndexTimestampNotIncreasing {
                        entry: i,
                        timestamp,
                        previous: prev.timestamp.0,
                    },
                ));
            }
            if e.offset < prev.offset {
                out.push(Finding::error(
                    path,
                    at,
                    Problem::IndexOffsetNotIncreasing {
                        index: IndexKind::Time,
                        entry: i,
                        offset,
                        previous: prev.offset.get(),
                    },
                ));
            }
        }
        if segment_last.is_none_or(|last| offset > last) {
            out.push(Finding::error(
                path,
                at,
                Problem::IndexOffsetBeyondSegment {
                    index: IndexKind::Time,
                    entry: i,
                    offset,
                    segment_last: segment_last.unwrap_or(seg.base - 1),
                },
            ));
            continue;
        }
        let Some(bi) = seg.batches.iter().position(|b| b.last_offset == offset) else {
            out.push(Finding::error(
                path,
                at,
                Problem::TimeIndexNoBatchEndsAt { entry: i, offset },
            ));
            continue;
        };
        let batch_max = seg.batches[bi].max_timestamp;
        if batch_max != timestamp {
            out.push(Finding::error(
                path,
                at,
                Problem::TimeIndexTimestampMismatch {
                    entry: i,
                    offset,
                    timestamp,
                    batch_max_timestamp: batch_max,
                },
            ));
        }
        let earlier_max = seg.batches[..bi]
            .iter()
            .map(|b| b.max_timestamp)
            .max()
            .unwrap_or(-1);
        if earlier_max > timestamp {
            out.push(Finding::error(
                path,
                at,
                Problem::TimeIndexEarlierLargerTimestamp {
                    entry: i,
                    offset,
                    timestamp,
                    earlier_max,
                },
            ));
        }
    }
    index.entries[..used]
        .last()
        .map(|e| (e.timestamp.0, e.offset.get()))
}

/// Check a transaction index: readable, each abort marker inside the
/// segment, marker offsets strictly increasing.
pub fn check_txn_index(path: &Path, bytes: &[u8], seg: &SegmentScan, out: &mut Vec<Finding>) {
    let index = match parse_txn_index(bytes) {
        Ok(i) => i,
        Err(bad) => {
            out.push(Finding::error(
                path,
                Some(bad.position as u64),
                Problem::TxnUnsupportedVersion {
                    entry: bad.position / crate::read::txn::TXN_ENTRY_SIZE,
                    version: bad.version,
                },
            ));
            return;
        }
    };
    if index.partial_bytes > 0 {
        out.push(Finding::warning(
            path,
            Some((bytes.len() - index.partial_bytes) as u64),
            Problem::TxnPartialEntry {
                bytes: index.partial_bytes,
            },
        ));
    }
    let segment_last = seg.last_offset().unwrap_or(seg.base - 1);
    for (i, t) in index.entries.iter().enumerate() {
        let at = Some((i * crate::read::txn::TXN_ENTRY_SIZE) as u64);
        let last = t.last_offset.get();
        if last < seg.base || last > segment_last {
            out.push(Finding::error(
                path,
                at,
                Problem::TxnOffsetOutsideSegment {
                    entry: i,
                    last_offset: last,
                    base: seg.base,
                    segment_last,
                },
            ));
        }
        if i > 0 && t.last_offset <= index.entries[i - 1].last_offset {
            out.push(Finding::error(
                path,
                at,
                Problem::TxnOffsetNotIncreasing {
                    entry: i,
                    last_offset: last,
                    previous: index.entries[i - 1].last_offset.get(),
                },
            ));
        }
        if t.first_offset > t.last_offset {
            out.push(Finding::error(
                path,
                at,
                Problem::TxnFirstAfterLast {
                    entry: i,
                    first_offset: t.first_offset.get(),
                    last_offset: last,
                },
            ));
        }
    }
}
