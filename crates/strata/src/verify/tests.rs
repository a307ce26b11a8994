//! Unit tests of the pure verify checks: segment bytes and index bytes in,
//! findings out, no files.

use std::path::Path;

use strata_log::batch::BatchBuilder;
use strata_log::AbortedTxn;
use strata_log::{Offset, ProducerId, Timestamp};

use super::findings::{Finding, IndexKind, Problem, Severity};
use super::index::{check_offset_index, check_time_index, check_txn_index};
use super::segment::{check_segment, SegmentScan};

/// A batch of `n` records starting at `base`, timestamps `ts, ts+1, ...`.
fn batch(base: i64, n: usize, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(base));
    for i in 0..n {
        b.append(Timestamp(ts + i as i64), Some(b"k"), Some(b"value"), &[]);
    }
    b.build()
}

/// A segment of three 3-record batches at offsets 10, 13, 16 with max
/// timestamps 102, 105, 104 (the last one is older).
fn segment() -> Vec<u8> {
    let mut log = batch(10, 3, 100);
    log.extend(batch(13, 3, 103));
    log.extend(batch(16, 3, 102));
    log
}

fn scan(bytes: &[u8], out: &mut Vec<Finding>) -> SegmentScan {
    check_segment(Path::new("s.log"), 10, bytes, true, out)
}

fn problems(out: &[Finding]) -> Vec<&Problem> {
    out.iter().map(|f| &f.problem).collect()
}

fn offset_index(entries: &[(i32, i32)]) -> Vec<u8> {
    entries
        .iter()
        .flat_map(|(r, p)| r.to_be_bytes().into_iter().chain(p.to_be_bytes()))
        .collect()
}

fn time_index(entries: &[(i64, i32)]) -> Vec<u8> {
    entries
        .iter()
        .flat_map(|(t, r)| t.to_be_bytes().into_iter().chain(r.to_be_bytes()))
        .collect()
}

#[test]
fn healthy_segment_has_no_findings() {
    let mut out = Vec::new();
    let seg = scan(&segment(), &mut out);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(seg.batches.len(), 3);
    assert_eq!(seg.last_offset(), Some(18));
    assert_eq!(seg.batches[1].max_timestamp, 105);
}

#[test]
fn offsets_going_backwards_and_base_above_first_batch() {
    let mut log = batch(10, 3, 100);
    log.extend(batch(12, 3, 103));
    let mut out = Vec::new();
    check_segment(Path::new("s.log"), 11, &log, false, &mut out);
    let p = problems(&out);
    assert!(p.contains(&&Problem::SegmentBaseAboveFirstBatch {
        segment_base: 11,
        first_base: 10
    }));
    assert!(p.contains(&&Problem::OffsetNotIncreasing {
        base_offset: 12,
        previous_last_offset: 12
    }));
    assert!(out.iter().all(|f| f.severity == Severity::Error));
}

#[test]
fn offset_index_rules() {
    let log = segment();
    let mut out = Vec::new();
    let seg = scan(&log, &mut out);
    let (p1, p2) = (
        seg.batches[1].position as i32,
        seg.batches[2].position as i32,
    );

    // Entries at batch starts, offsets inside or at the end of the chunk: fine.
    check_offset_index(
        Path::new("s.index"),
        &offset_index(&[(5, p1), (8, p2)]),
        &seg,
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");

    let mut out = Vec::new();
    check_offset_index(
        Path::new("s.index"),
        &offset_index(&[(4, p1 + 1), (2, p2), (12, p2)]),
        &seg,
        &mut out,
    );
    let p = problems(&out);
    assert!(p.contains(&&Problem::IndexPositionNotBatchStart {
        entry: 0,
        offset: 14,
        position: i64::from(p1 + 1)
    }));
    assert!(p.contains(&&Problem::IndexOffsetNotIncreasing {
        index: IndexKind::Offset,
        entry: 1,
        offset: 12,
        previous: 14
    }));
    assert!(p.contains(&&Problem::IndexBatchAfterOffset {
        entry: 1,
        offset: 12,
        position: i64::from(p2),
        batch_base: 16
    }));
    assert!(p.contains(&&Problem::IndexOffsetBeyondSegment {
        index: IndexKind::Offset,
        entry: 2,
        offset: 22,
        segment_last: 18
    }));
    assert_eq!(
        out[0].position,
        Some(0),
        "findings name the slot's byte position"
    );
}

#[test]
fn earlier_batch_reaching_the_entry_offset() {
    let log = segment();
    let mut out = Vec::new();
    let seg = scan(&log, &mut out);
    let p2 = seg.batches[2].position as i32;
    // Offset 15 is in the batch before position p2.
    check_offset_index(
        Path::new("s.index"),
        &offset_index(&[(5, p2)]),
        &seg,
        &mut out,
    );
    assert_eq!(
        problems(&out),
        vec![
            &Problem::IndexBatchAfterOffset {
                entry: 0,
                offset: 15,
                position: i64::from(p2),
                batch_base: 16
            },
            &Problem::IndexEarlierBatchReachesOffset {
                entry: 0,
                offset: 15,
                position: i64::from(p2),
                previous_last: 15
            }
        ]
    );
}

#[test]
fn zero_tails_and_untouched_preallocation() {
    let log = segment();
    let mut out = Vec::new();
    let seg = scan(&log, &mut out);
    let p1 = seg.batches[1].position as i32;
    let mut bytes = offset_index(&[(5, p1)]);
    bytes.extend([0u8; 24]);
    check_offset_index(Path::new("s.index"), &bytes, &seg, &mut out);
    assert_eq!(
        problems(&out),
        vec![&Problem::IndexZeroTail {
            index: IndexKind::Offset,
            slots: 3
        }]
    );
    assert_eq!(out[0].severity, Severity::Warning);
    let mut out = Vec::new();
    check_offset_index(Path::new("s.index"), &[0u8; 80], &seg, &mut out);
    assert_eq!(out.len(), 1, "an all-zero file only warns: {out:?}");
    let mut out = Vec::new();
    check_offset_index(Path::new("s.index"), &[0u8; 9], &seg, &mut out);
    assert!(problems(&out).contains(&&Problem::IndexSizeNotMultiple {
        index: IndexKind::Offset,
        len: 9,
        entry_size: 8
    }));
}

#[test]
fn time_index_rules() {
    let log = segment();
    let mut out = Vec::new();
    let seg = scan(&log, &mut out);
    // (102 @ 12), (105 @ 15): what Kafka writes for this segment.
    check_time_index(
        Path::new("s.timeindex"),
        &time_index(&[(102, 2), (105, 5)]),
        &seg,
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");

    let mut out = Vec::new();
    check_time_index(
        Path::new("s.timeindex"),
        &time_index(&[(103, 2), (101, 8), (106, 7)]),
        &seg,
        &mut out,
    );
    let p = problems(&out);
    assert!(p.contains(&&Problem::TimeIndexTimestampMismatch {
        entry: 0,
        offset: 12,
        timestamp: 103,
        batch_max_timestamp: 102
    }));
    assert!(p.contains(&&Problem::TimeIndexTimestampNotIncreasing {
        entry: 1,
        timestamp: 101,
        previous: 103
    }));
    assert!(p.contains(&&Problem::TimeIndexEarlierLargerTimestamp {
        entry: 1,
        offset: 18,
        timestamp: 101,
        earlier_max: 105
    }));
    assert!(p.contains(&&Problem::IndexOffsetNotIncreasing {
        index: IndexKind::Time,
        entry: 2,
        offset: 17,
        previous: 18
    }));
    assert!(p.contains(&&Problem::TimeIndexNoBatchEndsAt {
        entry: 2,
        offset: 17
    }));
}

#[test]
fn txn_index_rules() {
    let log = segment();
    let mut out = Vec::new();
    let seg = scan(&log, &mut out);
    let txn = |first, last| {
        AbortedTxn::new(ProducerId(1), Offset(first), Offset(last), Offset(last + 1)).encode()
    };
    let mut bytes = txn(10, 12).to_vec();
    bytes.extend(txn(14, 11));
    bytes.extend(txn(5, 30));
    bytes.extend([0u8; 5]);
    check_txn_index(Path::new("s.txnindex"), &bytes, &seg, &mut out);
    let p = problems(&out);
    assert_eq!(out.len(), 4, "{out:?}");
    assert!(p.contains(&&Problem::TxnPartialEntry { bytes: 5 }));
    assert!(p.contains(&&Problem::TxnOffsetNotIncreasing {
        entry: 1,
        last_offset: 11,
        previous: 12
    }));
    assert!(p.contains(&&Problem::TxnFirstAfterLast {
        entry: 1,
        first_offset: 14,
        last_offset: 11
    }));
    assert!(p.contains(&&Problem::TxnOffsetOutsideSegment {
        entry: 2,
        last_offset: 30,
        base: 10,
        segment_last: 18
    }));
    assert_eq!(
        out.iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
        1
    );
}

#[test]
fn truncated_and_corrupt_tails() {
    let mut log = segment();
    let whole = log.len();
    log.extend(&batch(19, 2, 110)[..40]);
    let mut out = Vec::new();
    scan(&log, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].position, Some(whole as u64));
    assert!(matches!(
        out[0].problem,
        Problem::TruncatedBatch { available: 40, .. }
    ));

    let mut log = segment();
    log[30] ^= 0xff;
    let mut out = Vec::new();
    scan(&log, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].position, Some(0));
    assert!(matches!(
        out[0].problem,
        Problem::CorruptBatch {
            base_offset: Some(10),
            error: strata_log::batch::BatchError::ChecksumMismatch { .. }
        }
    ));
}
