//! Tests of the cleaner's choice and grouping (§11.2, §11.5).

use super::*;

fn seg(base: i64, size: u64) -> SegmentFacts {
    SegmentFacts {
        base_offset: Offset(base),
        size,
        largest_timestamp: Timestamp(1_000 + base),
        first_batch_timestamp: Timestamp(1_000 + base),
        offset_index_entries: 1,
        time_index_entries: 1,
    }
}

fn snap(segs: Vec<SegmentFacts>, leo: i64, lso: i64, ckpt: Option<i64>) -> CleanerLogSnapshot {
    CleanerLogSnapshot {
        tp: TopicPartition::new("t", 0),
        segments: segs,
        log_start_offset: Offset(0),
        log_end_offset: Offset(leo),
        last_stable_offset: Offset(lso),
        checkpoint: ckpt.map(Offset),
    }
}

const S: CompactionSettings = CompactionSettings {
    min_cleanable_dirty_ratio: 0.5,
    min_compaction_lag_ms: 0,
    max_compaction_lag_ms: i64::MAX,
};

#[test]
fn ratio_counts_clean_and_cleanable_bytes_like_kafka() {
    let s = snap(
        vec![seg(0, 100), seg(10, 100), seg(20, 300), seg(30, 50)],
        35,
        35,
        Some(20),
    );
    let c = cleanable(&s, &S, 10_000);
    assert_eq!(c.first_dirty_offset, Offset(20));
    assert_eq!(c.first_uncleanable_offset, Offset(30));
    assert_eq!(c.dirty_end, DirtyEnd::ActiveSegment);
    assert_eq!((c.clean_bytes, c.cleanable_bytes), (200, 300));
    assert!((c.ratio - 0.6).abs() < 1e-9);
    assert!(c.is_eligible(&S));
    // Exactly the minimum is not enough (strictly greater).
    let s = snap(
        vec![seg(0, 300), seg(20, 300), seg(30, 50)],
        35,
        35,
        Some(20),
    );
    assert!(!cleanable(&s, &S, 10_000).is_eligible(&S));
}

#[test]
fn checkpoint_outside_the_log_resets_to_the_log_start() {
    let s = snap(vec![seg(0, 100), seg(10, 100)], 15, 15, Some(99));
    let c = cleanable(&s, &S, 0);
    assert!(c.checkpoint_reset);
    assert_eq!(c.first_dirty_offset, Offset(0));
}

#[test]
fn last_stable_offset_bounds_the_dirty_end_aligned_down() {
    let s = snap(
        vec![seg(0, 100), seg(10, 100), seg(20, 100), seg(30, 10)],
        35,
        25,
        None,
    );
    let c = cleanable(&s, &S, 0);
    assert_eq!(c.dirty_end, DirtyEnd::LastStableOffset);
    assert_eq!(
        c.first_uncleanable_offset,
        Offset(20),
        "aligned to the base holding the LSO"
    );
    assert_eq!(c.cleanable_bytes, 200);
}

#[test]
fn min_lag_stops_at_the_first_young_segment() {
    let s = snap(
        vec![seg(0, 100), seg(10, 100), seg(20, 100), seg(30, 10)],
        35,
        35,
        None,
    );
    let lag = CompactionSettings {
        min_compaction_lag_ms: 100,
        ..S
    };
    // Segment 10's largest timestamp is 1010 > now - lag = 1005.
    let c = cleanable(&s, &lag, 1_105);
    assert_eq!(c.dirty_end, DirtyEnd::MinCompactionLag);
    assert_eq!(c.first_uncleanable_offset, Offset(10));
}

#[test]
fn the_filthiest_eligible_log_wins() {
    let mk = |ratio: f64, forced: bool| {
        let c = Cleanable {
            first_dirty_offset: Offset(0),
            checkpoint_reset: false,
            first_uncleanable_offset: Offset(10),
            dirty_end: DirtyEnd::ActiveSegment,
            clean_bytes: 100,
            cleanable_bytes: 1,
            ratio,
            compaction_delay_ms: if forced { 5 } else { 0 },
        };
        (c, S)
    };
    assert_eq!(
        choose_filthiest(&[mk(0.2, false), mk(0.7, false), mk(0.6, false)]),
        Some(1)
    );
    assert_eq!(choose_filthiest(&[mk(0.2, false), mk(0.4, false)]), None);
    assert_eq!(
        choose_filthiest(&[mk(0.2, false), mk(0.1, true)]),
        Some(1),
        "max lag forces"
    );
}

#[test]
fn grouping_respects_size_index_and_offset_span() {
    let segs = vec![seg(0, 40), seg(10, 40), seg(20, 40), seg(30, 40)];
    assert_eq!(
        group_segments_by_size(&segs, 100, 1 << 20, Offset(40)),
        vec![0..2, 2..4]
    );
    let mut idx = segs.clone();
    idx[1].offset_index_entries = 100;
    assert_eq!(
        group_segments_by_size(&idx, 1 << 20, 800, Offset(40)),
        vec![0..1, 1..2, 2..4],
        "offset index bytes (8 per entry) capped by segment.index.bytes"
    );
    // A group may not span more than 2^31 - 1 offsets, but an empty segment
    // may always join.
    let big = i32::MAX as i64;
    let sparse = vec![seg(0, 10), seg(big, 0), seg(big + 5, 10)];
    assert_eq!(
        group_segments_by_size(&sparse, 1 << 20, 1 << 20, Offset(big + 10)),
        vec![0..2, 2..3]
    );
}
