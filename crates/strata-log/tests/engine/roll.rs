//! Guards every roll condition of Kafka's `shouldRoll` (§8.4): segment.bytes,
//! segment.ms with per-segment jitter and the record-time rule (and
//! max.compaction.lag.ms on compacted topics), full offset index, full time
//! index and relative-offset overflow, all driven by a MockClock.

use crate::common::*;
use strata_log::{CleanupPolicy, LoadParams, LogConfig, MockClock, Offset};

const HOUR: i64 = 3_600_000;

fn bases(log: &strata_log::Log) -> Vec<i64> {
    log.segments().iter().map(|s| s.base_offset.0).collect()
}

#[test]
fn size_based_roll_as_in_kafka() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let s = follower_batch(0, &[1], 40).len() as i32;
    let cfg = LogConfig {
        segment_bytes: 10 * (s - 1),
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "s-0", cfg, &clock, LoadParams::default());
    for i in 0..11 {
        log.append_as_follower(&follower_batch(i, &[1], 40))
            .unwrap();
    }
    // 9 appends fit in 10*(s-1) bytes; the 10th rolls.
    assert_eq!(bases(&log), vec![0, 9]);
}

#[test]
fn time_roll_uses_record_time_when_batches_carry_timestamps() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let cfg = LogConfig {
        segment_ms: HOUR,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "t-0", cfg, &clock, LoadParams::default());
    let t0 = 5 * HOUR;
    log.append_as_follower(&follower_batch(0, &[t0], 1))
        .unwrap();
    // The wall clock moving does not matter: record time does.
    clock.advance(10 * HOUR);
    log.append_as_follower(&follower_batch(1, &[t0 + HOUR], 1))
        .unwrap();
    assert_eq!(bases(&log), vec![0]);
    log.append_as_follower(&follower_batch(2, &[t0 + HOUR + 1], 1))
        .unwrap();
    assert_eq!(bases(&log), vec![0, 2]);
}

#[test]
fn time_roll_uses_the_clock_without_timestamps() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        segment_ms: HOUR,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "u-0", cfg, &clock, LoadParams::default());
    log.append_as_follower(&follower_batch(0, &[-1], 1))
        .unwrap();
    clock.advance(HOUR);
    log.append_as_follower(&follower_batch(1, &[-1], 1))
        .unwrap();
    assert_eq!(bases(&log), vec![0]);
    clock.advance(1);
    log.append_as_follower(&follower_batch(2, &[-1], 1))
        .unwrap();
    assert_eq!(bases(&log), vec![0, 2]);
    // An empty active segment never rolls on time.
    clock.advance(100 * HOUR);
    assert_eq!(bases(&log), vec![0, 2]);
}

#[test]
fn time_roll_subtracts_the_per_segment_jitter() {
    let max_jitter = 20 * 60_000;
    let mut seen_nonzero = false;
    for round in 0..8 {
        let tmp = tempfile::tempdir().unwrap();
        let clock = MockClock::new(0);
        let cfg = LogConfig {
            segment_ms: HOUR,
            segment_jitter_ms: max_jitter,
            ..LogConfig::default()
        };
        let log = open_log(tmp.path(), "j-0", cfg, &clock, LoadParams::default());
        let jitter = log.segments()[0].roll_jitter_ms;
        assert!((0..max_jitter).contains(&jitter), "round {round}: {jitter}");
        seen_nonzero |= jitter > 0;
        log.append_as_follower(&follower_batch(0, &[-1], 1))
            .unwrap();
        clock.advance(HOUR - max_jitter);
        log.append_as_follower(&follower_batch(1, &[-1], 1))
            .unwrap();
        // Kafka's testTimeBasedLogRollJitter: no roll at segment.ms - max
        // jitter, since this segment's jitter is below the max.
        assert_eq!(bases(&log), vec![0], "round {round}");
        clock.set(HOUR - jitter);
        log.append_as_follower(&follower_batch(2, &[-1], 1))
            .unwrap();
        assert_eq!(bases(&log), vec![0], "waited exactly segment.ms - jitter");
        clock.set(HOUR - jitter + 1);
        log.append_as_follower(&follower_batch(3, &[-1], 1))
            .unwrap();
        assert_eq!(bases(&log), vec![0, 3], "round {round}, jitter {jitter}");
    }
    assert!(seen_nonzero, "jitter is random per segment");
}

#[test]
fn compacted_topics_roll_at_max_compaction_lag() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        segment_ms: 10 * HOUR,
        max_compaction_lag_ms: HOUR,
        cleanup_policy: CleanupPolicy::COMPACT,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "c-0", cfg, &clock, LoadParams::default());
    log.append_as_follower(&follower_batch(0, &[1000], 1))
        .unwrap();
    log.append_as_follower(&follower_batch(1, &[1000 + HOUR + 1], 1))
        .unwrap();
    assert_eq!(bases(&log), vec![0, 1]);
}

#[test]
fn full_offset_index_rolls() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    // 6 offset slots, 4 time slots; a constant timestamp keeps the time index at 1 entry.
    let cfg = LogConfig {
        segment_index_bytes: 48,
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "o-0", cfg, &clock, LoadParams::default());
    for i in 0..8 {
        log.append_as_follower(&follower_batch(i, &[77], 1))
            .unwrap();
    }
    // Appends 2..=7 (offsets 1..=6) add the 6 entries; offset 7 rolls.
    assert_eq!(bases(&log), vec![0, 7]);
    let first = &log.segments()[0];
    assert_eq!(
        (first.offset_index_entries, first.offset_index_max_entries),
        (6, 6)
    );
    assert_eq!(first.time_index_entries, 1);
}

#[test]
fn full_time_index_rolls_keeping_a_slot_for_the_final_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        segment_index_bytes: 48,
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "ti-0", cfg, &clock, LoadParams::default());
    for i in 0..5 {
        log.append_as_follower(&follower_batch(i, &[100 + i], 1))
            .unwrap();
    }
    // Entries at offsets 1, 2, 3 fill 3 of 4 slots (one is reserved): full,
    // so offset 4 rolls. The roll's final entry (103, 3) is already there.
    assert_eq!(bases(&log), vec![0, 4]);
    let first = &log.segments()[0];
    assert_eq!(first.time_index_entries, 3);
    assert_eq!(first.offset_index_entries, 3);
    let dir = tmp.path().join("ti-0");
    let (_, _, time) = seg_paths(&dir, 0);
    assert_eq!(read_time_index(&time), vec![(101, 1), (102, 2), (103, 3)]);
}

#[test]
fn relative_offset_overflow_rolls_to_the_incoming_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open_log(
        tmp.path(),
        "v-0",
        LogConfig::default(),
        &clock,
        LoadParams::default(),
    );
    log.append_as_follower(&follower_batch(0, &[1], 1)).unwrap();
    let far = (1i64 << 31) + 2;
    log.append_as_follower(&follower_batch(far, &[2], 1))
        .unwrap();
    assert_eq!(bases(&log), vec![0, far]);
    assert_eq!(log.log_end_offset(), Offset(far + 1));
    let dir = tmp.path().join("v-0");
    assert!(dir.join(format!("{far:020}.log")).exists());
}

#[test]
fn forced_roll_of_an_empty_active_segment_keeps_it() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open_log(
        tmp.path(),
        "e-0",
        LogConfig::default(),
        &clock,
        LoadParams::default(),
    );
    log.append_as_follower(&follower_batch(0, &[1, 2], 1))
        .unwrap();
    log.roll().unwrap();
    assert_eq!(bases(&log), vec![0, 2]);
    let file = tmp.path().join("e-0").join(format!("{:020}.log", 2));
    let inode = std::fs::metadata(&file).unwrap().ino();
    log.roll().unwrap();
    assert_eq!(bases(&log), vec![0, 2]);
    // Kept, not deleted and recreated: a power loss between the two would
    // leave no segment at all (docs/differences-from-kafka.md).
    assert_eq!(std::fs::metadata(&file).unwrap().ino(), inode);
    // The roll flushed the old segment: the recovery point moved.
    assert_eq!(log.recovery_point(), Offset(2));
}
