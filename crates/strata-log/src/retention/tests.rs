//! The pure retention rules, on hand-built snapshots (no disk).

use super::*;

const HOUR: i64 = 3_600_000;

/// Segments `(base, size, largest_ts)`; log end `leo`, HW `hw`, start `lso`.
fn snap(segs: &[(i64, u64, i64)], lso: i64, hw: i64, leo: i64) -> LogSnapshot {
    LogSnapshot {
        segments: segs
            .iter()
            .map(|&(b, size, ts)| SegmentSnapshot {
                base_offset: Offset(b),
                size,
                largest_timestamp: Timestamp(ts),
                timestamp_source: TimestampSource::Record,
            })
            .collect(),
        log_start_offset: Offset(lso),
        high_watermark: Offset(hw),
        log_end_offset: Offset(leo),
    }
}

fn policy(ms: i64, bytes: i64) -> RetentionPolicy {
    RetentionPolicy {
        delete: true,
        retention_ms: ms,
        retention_bytes: bytes,
    }
}

fn deleted(d: &RetentionDecision) -> Vec<(i64, DeletionReason)> {
    d.deletions
        .iter()
        .map(|x| (x.base_offset.0, x.reason))
        .collect()
}

#[test]
fn nothing_expires_within_retention() {
    let s = snap(
        &[
            (0, 100, 10 * HOUR),
            (10, 100, 11 * HOUR),
            (20, 50, 12 * HOUR),
        ],
        0,
        25,
        25,
    );
    let d = decide(&s, &policy(HOUR, -1), 11 * HOUR + 1);
    // Segment 0 is 1h+1ms old: deleted; segment 10 is exactly 1h old: kept
    // (strictly greater), so the walk stops there.
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionMs)]);
    assert_eq!(d.deletions[0].age_ms, Some(HOUR + 1));
    assert_eq!(d.new_log_start_offset, Some(Offset(10)));
    assert!(!d.roll_active_first);
}

#[test]
fn time_retention_stops_at_the_first_kept_segment() {
    // The middle segment has a future timestamp; the third is old but must
    // survive because an earlier one is kept.
    let s = snap(
        &[
            (0, 1, 0),
            (10, 1, 100 * HOUR),
            (20, 1, 0),
            (30, 1, 50 * HOUR),
        ],
        0,
        35,
        35,
    );
    let d = decide(&s, &policy(HOUR, -1), 50 * HOUR);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionMs)]);
}

#[test]
fn size_retention_keeps_the_newest_segments() {
    let s = snap(
        &[(0, 100, 0), (10, 100, 0), (20, 100, 0), (30, 40, 0)],
        0,
        35,
        35,
    );
    // total 340, limit 150: diff 190 covers segment 0 (100), not 10 (needs 200).
    let d = decide(&s, &policy(-1, 150), 0);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionSize)]);
    // limit 140: diff 200 covers 0 and 10.
    let d = decide(&s, &policy(-1, 140), 0);
    assert_eq!(
        deleted(&d),
        vec![
            (0, DeletionReason::RetentionSize),
            (10, DeletionReason::RetentionSize)
        ]
    );
    assert_eq!(d.bytes(), 200);
    // Below the limit: nothing.
    assert!(decide(&s, &policy(-1, 341), 0).is_empty());
}

#[test]
fn never_at_or_above_the_high_watermark() {
    let s = snap(&[(0, 1, 0), (10, 1, 0), (20, 1, 0)], 0, 10, 25);
    // Segment 0's upper bound is 10 <= HW 10: deletable; segment 10's is 20 > HW.
    let d = decide(&s, &policy(0, -1), HOUR);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionMs)]);
    let s = snap(&[(0, 1, 0), (10, 1, 0)], 0, 9, 25);
    assert!(decide(&s, &policy(0, 0), HOUR).is_empty());
}

#[test]
fn the_active_segment_expires_with_a_roll_first() {
    let s = snap(&[(0, 10, 0), (10, 10, 0)], 0, 15, 15);
    let d = decide(&s, &policy(HOUR, -1), 2 * HOUR);
    assert_eq!(
        deleted(&d),
        vec![
            (0, DeletionReason::RetentionMs),
            (10, DeletionReason::RetentionMs)
        ]
    );
    assert!(d.roll_active_first);
    assert_eq!(d.new_log_start_offset, Some(Offset(15)));
    assert_eq!(d.deletions[1].upper_bound, Offset(15));
    // Not when the HW is below the log end.
    let s = snap(&[(0, 10, 0), (10, 10, 0)], 0, 14, 15);
    let d = decide(&s, &policy(HOUR, -1), 2 * HOUR);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionMs)]);
    assert!(!d.roll_active_first);
}

#[test]
fn an_empty_last_segment_is_never_deleted() {
    let s = snap(&[(0, 10, 0), (10, 0, 0)], 0, 10, 10);
    let d = decide(&s, &policy(0, 0), 2 * HOUR);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionSize)]);
    assert!(!d.roll_active_first);
}

#[test]
fn log_start_breach_deletes_whole_segments_below_it() {
    let s = snap(&[(0, 1, 0), (10, 1, 0), (20, 1, 0)], 15, 25, 25);
    let unlimited = policy(-1, -1);
    let d = decide(&s, &unlimited, 0);
    // Segment 10 holds 15: it stays.
    assert_eq!(deleted(&d), vec![(0, DeletionReason::LogStartOffsetBreach)]);
    // A start exactly at a base drops everything below that base.
    let s = snap(&[(0, 1, 0), (10, 1, 0), (20, 1, 0)], 20, 25, 25);
    let d = decide(&s, &unlimited, 0);
    assert_eq!(
        deleted(&d),
        vec![
            (0, DeletionReason::LogStartOffsetBreach),
            (10, DeletionReason::LogStartOffsetBreach)
        ]
    );
    // The log start never rises because of this pass (it already is 20).
    assert_eq!(d.new_log_start_offset, None);
}

#[test]
fn compacted_topics_skip_time_and_size_but_not_log_start() {
    let s = snap(&[(0, 100, 0), (10, 100, 0), (20, 100, 0)], 12, 25, 25);
    let compact = RetentionPolicy {
        delete: false,
        ..policy(0, 0)
    };
    let d = decide(&s, &compact, 100 * HOUR);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::LogStartOffsetBreach)]);
}

#[test]
fn passes_run_in_kafka_order_on_the_remaining_log() {
    // Start offset drops 0; size then sees 200 bytes against 150 and drops
    // 10; time then drops 20 (old) and stops at 30 (fresh).
    let s = snap(
        &[
            (0, 100, 0),
            (10, 50, HOUR),
            (20, 50, 0),
            (30, 100, 10 * HOUR),
        ],
        10,
        35,
        35,
    );
    let d = decide(&s, &policy(HOUR, 150), 10 * HOUR);
    assert_eq!(
        deleted(&d),
        vec![
            (0, DeletionReason::LogStartOffsetBreach),
            (10, DeletionReason::RetentionSize),
            (20, DeletionReason::RetentionMs),
        ]
    );
    assert_eq!(d.new_log_start_offset, Some(Offset(30)));
}

#[test]
fn retention_ms_plus_segment_ms_overshoot() {
    // A record written at t=0 into a segment that kept taking records until
    // t=segment.ms is deleted only when the segment's *largest* timestamp
    // is retention.ms old: at segment.ms + retention.ms.
    let seg_ms = 24 * HOUR;
    let ret = 7 * 24 * HOUR;
    let s = snap(&[(0, 10, seg_ms), (100, 10, seg_ms + 1)], 0, 101, 101);
    assert!(decide(&s, &policy(ret, -1), ret + 1).is_empty());
    assert!(decide(&s, &policy(ret, -1), seg_ms + ret).is_empty());
    let d = decide(&s, &policy(ret, -1), seg_ms + ret + 1);
    assert_eq!(deleted(&d), vec![(0, DeletionReason::RetentionMs)]);
}

#[test]
fn unlimited_retention_deletes_nothing() {
    let s = snap(&[(0, 100, 0), (10, 100, 0)], 0, 15, 15);
    assert!(decide(&s, &policy(-1, -1), i64::MAX / 2).is_empty());
}

#[test]
fn policy_reads_the_topic_config() {
    let mut cfg = LogConfig::default();
    let p = RetentionPolicy::from_config(&cfg);
    assert!(p.delete);
    assert_eq!(p.retention_ms, 7 * 24 * HOUR);
    assert_eq!(p.retention_bytes, -1);
    cfg.cleanup_policy = crate::config::CleanupPolicy::COMPACT;
    cfg.retention_bytes = 5;
    let p = RetentionPolicy::from_config(&cfg);
    assert!(!p.delete);
    assert_eq!(p.retention_bytes, 5);
}
