//! The local-retention rule of a tiered log (the `RetentionGate` the
//! manager installs): `local.retention.*` with −2 meaning the total value,
//! and never a segment that is not entirely in remote storage — except
//! log-start breaches, which are always allowed.

use strata_log::retention::{
    decide, DeletionReason, LogSnapshot, RetentionPolicy, SegmentSnapshot, TimestampSource,
};
use strata_log::{LogConfig, Offset, Timestamp};

fn snapshot(log_start: i64) -> LogSnapshot {
    LogSnapshot {
        segments: [0, 10, 20, 30]
            .iter()
            .map(|b| SegmentSnapshot {
                base_offset: Offset(*b),
                size: 100,
                largest_timestamp: Timestamp(1000 + b),
                timestamp_source: TimestampSource::Record,
            })
            .collect(),
        log_start_offset: Offset(log_start),
        high_watermark: Offset(35),
        log_end_offset: Offset(35),
    }
}

#[test]
fn local_policy_falls_back_to_totals() {
    let c = LogConfig {
        retention_ms: 5,
        retention_bytes: 7,
        ..LogConfig::default()
    };
    let p = RetentionPolicy::local_tiered(&c);
    assert_eq!((p.retention_ms, p.retention_bytes), (5, 7));
    let c = LogConfig {
        local_retention_ms: 1,
        local_retention_bytes: 2,
        ..c
    };
    let p = RetentionPolicy::local_tiered(&c);
    assert_eq!((p.retention_ms, p.retention_bytes), (1, 2));
}

#[test]
fn only_copied_segments_go() {
    let c = LogConfig {
        local_retention_bytes: 1,
        ..LogConfig::default()
    };
    let policy = RetentionPolicy::local_tiered(&c);
    let mut d = decide(&snapshot(0), &policy, 2000);
    // Ungated, 400 bytes against a 1-byte budget: Kafka's size rule takes
    // segments while the excess still covers them — 0, 10 and 20.
    assert_eq!(d.deletions.len(), 3);
    // Offsets 0..=19 are in remote storage: limit 20.
    d.limit_to_upper_bound(Offset(20));
    let bases: Vec<_> = d.deletions.iter().map(|x| x.base_offset).collect();
    assert_eq!(bases, vec![Offset(0), Offset(10)]);
    assert!(!d.roll_active_first);
    assert_eq!(d.new_log_start_offset, Some(Offset(20)));
    // Nothing copied: nothing goes.
    let mut d = decide(&snapshot(0), &policy, 2000);
    d.limit_to_upper_bound(Offset(0));
    assert!(d.is_empty());
}

#[test]
fn the_active_segment_is_not_rolled_away_before_it_is_copied() {
    let c = LogConfig {
        local_retention_ms: 1,
        ..LogConfig::default()
    };
    let mut d = decide(&snapshot(0), &RetentionPolicy::local_tiered(&c), 10_000);
    assert_eq!(d.deletions.len(), 4, "everything is older than 1 ms");
    assert!(d.roll_active_first);
    d.limit_to_upper_bound(Offset(30));
    assert_eq!(d.deletions.len(), 3);
    assert!(!d.roll_active_first);
    assert_eq!(d.new_log_start_offset, Some(Offset(30)));
}

#[test]
fn log_start_breaches_are_never_gated() {
    let policy = RetentionPolicy::local_tiered(&LogConfig::default());
    let mut d = decide(&snapshot(20), &policy, 2000);
    d.limit_to_upper_bound(Offset(0));
    assert_eq!(d.deletions.len(), 2);
    assert!(d
        .deletions
        .iter()
        .all(|x| x.reason == DeletionReason::LogStartOffsetBreach));
}
