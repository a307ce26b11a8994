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

use strata_log::codec::index::{
    check_length, check_not_below_base, slots, zero_tail_start, IndexCorruption, IndexSlot,
    OffsetSlot, TimeSlot,
};
use strata_log::codec::txn::{decode_records, ABORTED_TXN_SIZE};
use strata_log::Offset;

use super::findings::{Finding, IndexKind, Problem};
use super::segment::SegmentScan;

/// The slots of an index file in use (before a zero-filled preallocated
/// tail, which is reported as a warning), after Kafka's length rule.
fn slots_in_use<S: IndexSlot>(
    path: &Path,
    index: IndexKind,
    bytes: &[u8],
    out: &mut Vec<Finding>,
) -> Vec<S> {
    if let Err(IndexCorruption::LengthNotMultiple { length, entry_size }) =
        check_length(bytes.len() as u64, S::SIZE)
    {
        out.push(Finding::error(
            path,
            Some(length - length % entry_size as u64),
            Problem::IndexSizeNotMultiple {
                index,
                len: length,
                entry_size: entry_size as u64,
            },
        ));
    }
    let all = bytes.len() / S::SIZE;
    let used = zero_tail_start::<S>(bytes);
    if used < all {
        out.push(Finding::warning(
            path,
            Some((used * S::SIZE) as u64),
            Problem::IndexZeroTail {
                index,
                slots: all - used,
            },
        ));
    }
    slots::<S>(bytes).take(used).collect()
}

/// The codec's ordering rules for entry `i` after `prev` (Strata's rule,
/// applied to every pair here), as findings.
fn check_order<S: IndexSlot>(
    path: &Path,
    index: IndexKind,
    base: Offset,
    (i, prev, cur): (usize, S, S),
    out: &mut Vec<Finding>,
) {
    let at = Some((i * S::SIZE) as u64);
    for violation in S::pair_violations(i, base, prev, cur).into_iter().flatten() {
        let problem = match violation {
            IndexCorruption::OffsetNotIncreasing {
                previous, offset, ..
            } => Problem::IndexOffsetNotIncreasing {
                index,
                entry: i,
                offset: offset.get(),
                previous: previous.get(),
            },
            IndexCorruption::PositionDecreasing {
                previous, position, ..
            } => Problem::IndexPositionDecreasing {
                entry: i,
                position: i64::from(position.get() as i32),
                previous: i64::from(previous.get() as i32),
            },
            IndexCorruption::TimestampNotIncreasing {
                previous,
                timestamp,
                ..
            } => Problem::TimeIndexTimestampNotIncreasing {
                entry: i,
                timestamp: timestamp.0,
                previous: previous.0,
            },
            other => unreachable!("not an ordering rule: {other:?}"),
        };
        out.push(Finding::error(path, at, problem));
    }
}

/// Kafka's "not below the base offset" rule for entry `i`, as a finding.
fn below_base<S: IndexSlot>(
    path: &Path,
    index: IndexKind,
    base: Offset,
    (i, slot): (usize, S),
    out: &mut Vec<Finding>,
) -> bool {
    let Err(IndexCorruption::LastOffsetBelowBase { last_offset, .. }) =
        check_not_below_base(base, slot)
    else {
        return false;
    };
    out.push(Finding::error(
        path,
        Some((i * S::SIZE) as u64),
        Problem::IndexOffsetBelowBase {
            index,
            entry: i,
            offset: last_offset.get(),
            base: base.get(),
        },
    ));
    true
}

/// Check an offset index against its segment.
pub fn check_offset_index(path: &Path, bytes: &[u8], seg: &SegmentScan, out: &mut Vec<Finding>) {
    let base = Offset(seg.base);
    let used = slots_in_use::<OffsetSlot>(path, IndexKind::Offset, bytes, out);
    let segment_last = seg.last_offset();
    for (i, &e) in used.iter().enumerate() {
        let at = Some((i * OffsetSlot::SIZE) as u64);
        let (offset, position) = (e.offset(base).get(), i64::from(e.position));
        if below_base(path, IndexKind::Offset, base, (i, e), out) {
            continue;
        }
        if i > 0 {
            check_order(path, IndexKind::Offset, base, (i, used[i - 1], e), out);
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
    let base = Offset(seg.base);
    let used = slots_in_use::<TimeSlot>(path, IndexKind::Time, bytes, out);
    let segment_last = seg.last_offset();
    for (i, &e) in used.iter().enumerate() {
        let at = Some((i * TimeSlot::SIZE) as u64);
        let (offset, timestamp) = (e.offset(base).get(), e.timestamp.0);
        if below_base(path, IndexKind::Time, base, (i, e), out) {
            continue;
        }
        if i > 0 {
            check_order(path, IndexKind::Time, base, (i, used[i - 1], e), out);
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
    used.last().map(|e| (e.timestamp.0, e.offset(base).get()))
}

/// Check a transaction index: readable, each abort marker inside the
/// segment, marker offsets strictly increasing.
pub fn check_txn_index(path: &Path, bytes: &[u8], seg: &SegmentScan, out: &mut Vec<Finding>) {
    let entries = match decode_records(bytes) {
        Ok(i) => i,
        Err(bad) => {
            let (version, position) = (bad.version, bad.position);
            out.push(Finding::error(
                path,
                Some(position),
                Problem::TxnUnsupportedVersion {
                    entry: position as usize / ABORTED_TXN_SIZE,
                    version,
                },
            ));
            return;
        }
    };
    let partial_bytes = bytes.len() % ABORTED_TXN_SIZE;
    if partial_bytes > 0 {
        out.push(Finding::warning(
            path,
            Some((bytes.len() - partial_bytes) as u64),
            Problem::TxnPartialEntry {
                bytes: partial_bytes,
            },
        ));
    }
    let segment_last = seg.last_offset().unwrap_or(seg.base - 1);
    for (i, t) in entries.iter().enumerate() {
        let at = Some((i * ABORTED_TXN_SIZE) as u64);
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
        if i > 0 && t.last_offset <= entries[i - 1].last_offset {
            out.push(Finding::error(
                path,
                at,
                Problem::TxnOffsetNotIncreasing {
                    entry: i,
                    last_offset: last,
                    previous: entries[i - 1].last_offset.get(),
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
