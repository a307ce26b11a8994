//! Guards retention on real partition dirs with a mock clock: retention.ms
//! by largest timestamp (and by file mtime without timestamps), the
//! low-traffic overshoot until segment.ms rolls, retention.bytes keeping the
//! newest segments, the high watermark bound, the expiring active segment,
//! two-step deletion under a reader, DeleteRecords and the manager schedule.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use strata_log::retention::DeletionReason;
use strata_log::OffsetCheckpointFile;
use strata_log::DEFAULT_RETENTION_CHECK_INTERVAL_MS;
use strata_log::{
    CleanupPolicy, LoadParams, Log, LogConfig, LogError, LogManager, LogManagerConfig, MockClock,
    Offset, ReadBound, SharedClock, TopicPartition,
};

const HOUR: i64 = 3_600_000;

fn bases(log: &Log) -> Vec<i64> {
    log.segments().iter().map(|s| s.base_offset.0).collect()
}

/// Append one record with timestamp `ts` and move the HW to the log end.
fn put(log: &Log, ts: i64) {
    let base = log.log_end_offset().0;
    log.append_as_follower(&follower_batch(base, &[ts], 100))
        .unwrap();
    log.update_high_watermark(log.log_end_offset());
}

fn names_with(dir: &Path, suffix: &str) -> Vec<String> {
    file_names(dir)
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect()
}

fn cfg(retention_ms: i64, retention_bytes: i64) -> LogConfig {
    LogConfig {
        retention_ms,
        retention_bytes,
        file_delete_delay_ms: 60_000,
        ..LogConfig::default()
    }
}

#[test]
fn time_retention_renames_then_deletes_after_the_delay() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(100 * HOUR);
    let log = open_log(
        tmp.path(),
        "t-0",
        cfg(HOUR, -1),
        &clock,
        LoadParams::default(),
    );
    let dir = log.dir();
    for i in 0..3 {
        put(&log, 100 * HOUR + i);
        log.roll().unwrap();
    }
    put(&log, 100 * HOUR + 10);
    assert_eq!(bases(&log), vec![0, 1, 2, 3]);
    clock.set(101 * HOUR + 2); // segments 0 and 1 are > 1 h old, 2 is exactly 1 h.
    let out = log.delete_old_segments().unwrap();
    let reasons: Vec<_> = out.decision.deletions.iter().map(|d| d.reason).collect();
    assert_eq!(reasons, vec![DeletionReason::RetentionMs; 2]);
    assert_eq!(bases(&log), vec![2, 3]);
    assert_eq!(log.log_start_offset(), Offset(2));
    // Renamed in place, not yet removed.
    assert_eq!(
        names_with(&dir, ".deleted"),
        vec![
            "00000000000000000000.index.deleted",
            "00000000000000000000.log.deleted",
            "00000000000000000000.timeindex.deleted",
            "00000000000000000000.txnindex.deleted",
            "00000000000000000001.index.deleted",
            "00000000000000000001.log.deleted",
            "00000000000000000001.snapshot.deleted",
            "00000000000000000001.timeindex.deleted",
            "00000000000000000001.txnindex.deleted",
        ]
    );
    clock.advance(59_999);
    assert_eq!(log.delete_expired_files().unwrap(), 0);
    clock.advance(1);
    assert_eq!(log.delete_expired_files().unwrap(), 2);
    assert!(names_with(&dir, ".deleted").is_empty());
    // Reads below the new start are out of range.
    assert!(matches!(
        log.read(Offset(0), 1 << 20, ReadBound::HighWatermark, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn segments_without_timestamps_age_by_file_mtime() {
    let tmp = tempfile::tempdir().unwrap();
    let now = 1_700_000_000_000;
    let clock = MockClock::new(now);
    let log = open_log(
        tmp.path(),
        "m-0",
        cfg(HOUR, -1),
        &clock,
        LoadParams::default(),
    );
    put(&log, -1);
    log.roll().unwrap();
    put(&log, -1);
    let old = std::time::UNIX_EPOCH + std::time::Duration::from_millis((now - 2 * HOUR) as u64);
    let fresh = std::time::UNIX_EPOCH + std::time::Duration::from_millis(now as u64);
    let set = |base: i64, t| {
        let f = std::fs::File::options()
            .write(true)
            .open(seg_paths(&log.dir(), base).0)
            .unwrap();
        f.set_modified(t).unwrap();
    };
    set(0, old);
    set(1, fresh);
    let out = log.delete_old_segments().unwrap();
    assert_eq!(out.decision.deletions.len(), 1);
    assert_eq!(out.decision.deletions[0].age_ms, Some(2 * HOUR));
    assert_eq!(bases(&log), vec![1]);
}

#[test]
fn low_traffic_data_outlives_retention_until_segment_ms_rolls_it() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let c = LogConfig {
        segment_ms: 24 * HOUR,
        ..cfg(2 * HOUR, -1)
    };
    let log = open_log(tmp.path(), "lt-0", c, &clock, LoadParams::default());
    // One record an hour: the active segment's largest timestamp stays
    // fresh, so even the t=0 record survives well past retention.ms.
    for h in 0..24 {
        clock.set(h * HOUR);
        put(&log, h * HOUR);
        assert!(log.delete_old_segments().unwrap().decision.is_empty());
    }
    assert_eq!(bases(&log), vec![0]);
    assert_eq!(log.log_start_offset(), Offset(0));
    // 24 h after the first record the next append rolls.
    clock.set(24 * HOUR + 1);
    put(&log, 24 * HOUR + 1);
    assert_eq!(bases(&log), vec![0, 24]);
    // The rolled segment's largest timestamp is 23 h: it goes once it is
    // more than 2 h old, i.e. the t=0 record lived 25 h (segment.ms +
    // retention.ms overshoot).
    clock.set(25 * HOUR);
    assert!(log.delete_old_segments().unwrap().decision.is_empty());
    clock.set(25 * HOUR + 1);
    let out = log.delete_old_segments().unwrap();
    assert_eq!(out.decision.deletions.len(), 1);
    assert_eq!(bases(&log), vec![24]);
    assert_eq!(log.log_start_offset(), Offset(24));
}

#[test]
fn size_retention_leaves_the_newest_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open_log(
        tmp.path(),
        "s-0",
        cfg(-1, -1),
        &clock,
        LoadParams::default(),
    );
    for _ in 0..5 {
        put(&log, 1);
        log.roll().unwrap();
    }
    put(&log, 1);
    let seg = log.segments()[0].size as i64;
    assert_eq!(log.num_segments(), 6);
    // retention.bytes = 2.5 segments: diff = 6s - 2.5s = 3.5s covers 3
    // whole segments, so the newest 3 stay (Kafka keeps the log at or above
    // the limit rather than cutting into a segment).
    let mut c = log.config();
    c.retention_bytes = seg * 5 / 2;
    log.update_config(c);
    let out = log.delete_old_segments().unwrap();
    assert!(out
        .decision
        .deletions
        .iter()
        .all(|d| d.reason == DeletionReason::RetentionSize));
    assert_eq!(bases(&log), vec![3, 4, 5]);
    assert!(log.size_in_bytes() as i64 > seg * 5 / 2);
}

#[test]
fn nothing_at_or_above_the_high_watermark_is_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let log = open_log(
        tmp.path(),
        "hw-0",
        cfg(HOUR, -1),
        &clock,
        LoadParams::default(),
    );
    for _ in 0..3 {
        put(&log, 0);
        log.roll().unwrap();
    }
    put(&log, 0);
    // Everything is old, but the HW sits inside segment 1.
    log.update_high_watermark(Offset(1));
    let out = log.delete_old_segments().unwrap();
    assert_eq!(out.decision.deletions.len(), 1);
    assert_eq!(bases(&log), vec![1, 2, 3]);
    assert!(log.delete_old_segments().unwrap().decision.is_empty());
    assert_eq!(log.log_start_offset(), Offset(1));
    assert!(log.log_start_offset() <= log.high_watermark());
}

#[test]
fn an_expired_active_segment_goes_after_a_roll() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let log = open_log(
        tmp.path(),
        "a-0",
        cfg(HOUR, -1),
        &clock,
        LoadParams::default(),
    );
    put(&log, 0);
    put(&log, 1);
    let out = log.delete_old_segments().unwrap();
    assert!(out.decision.roll_active_first);
    assert_eq!(bases(&log), vec![2]);
    assert_eq!(log.log_start_offset(), Offset(2));
    assert_eq!(log.log_end_offset(), Offset(2));
    // The empty active segment is never deleted; appends continue.
    assert!(log.delete_old_segments().unwrap().decision.is_empty());
    put(&log, 10 * HOUR);
    assert_eq!(log.log_end_offset(), Offset(3));
}

#[test]
fn compacted_topics_only_lose_segments_below_the_log_start() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let c = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..cfg(0, 0)
    };
    let log = open_log(tmp.path(), "c-0", c, &clock, LoadParams::default());
    for _ in 0..3 {
        put(&log, 0);
        log.roll().unwrap();
    }
    assert!(log.delete_old_segments().unwrap().decision.is_empty());
    log.maybe_increment_log_start_offset(Offset(2)).unwrap();
    let out = log.delete_old_segments().unwrap();
    let r: Vec<_> = out.decision.deletions.iter().map(|d| d.reason).collect();
    assert_eq!(r, vec![DeletionReason::LogStartOffsetBreach; 2]);
    assert_eq!(bases(&log), vec![2, 3]);
}

#[test]
fn a_reader_holding_a_segment_survives_its_deletion() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let c = LogConfig {
        file_delete_delay_ms: 0,
        ..cfg(HOUR, -1)
    };
    let log = open_log(tmp.path(), "r-0", c, &clock, LoadParams::default());
    put(&log, 0);
    log.roll().unwrap();
    put(&log, 10 * HOUR);
    let fetched = log
        .read(Offset(0), 1 << 20, ReadBound::HighWatermark, true)
        .unwrap();
    let before = fetched.read_to_vec().unwrap();
    assert!(!before.is_empty());
    log.delete_old_segments().unwrap();
    assert_eq!(log.delete_expired_files().unwrap(), 1);
    assert!(!seg_paths(&log.dir(), 0).0.exists());
    assert!(names_with(&log.dir(), ".deleted").is_empty());
    // The slice's open descriptor still reaches the unlinked inode.
    assert_eq!(fetched.read_to_vec().unwrap(), before);
    assert_eq!(split_batches(&before)[0].base, 0);
}

#[test]
fn producer_snapshots_at_deleted_bases_are_renamed() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let log = open_log(
        tmp.path(),
        "p-0",
        cfg(HOUR, -1),
        &clock,
        LoadParams::default(),
    );
    put(&log, 0);
    log.roll().unwrap();
    put(&log, 10 * HOUR);
    let dir = log.dir();
    // Snapshots as the producer-state manager writes them at segment bases.
    std::fs::write(dir.join("00000000000000000000.snapshot"), b"s0").unwrap();
    std::fs::write(dir.join("00000000000000000001.snapshot"), b"s1").unwrap();
    let out = log.delete_old_segments().unwrap();
    assert_eq!(
        out.renamed_snapshots,
        vec![dir.join("00000000000000000000.snapshot.deleted")]
    );
    assert!(dir.join("00000000000000000001.snapshot").exists());
}

#[test]
fn runtime_config_changes_apply_at_the_next_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let log = open_log(
        tmp.path(),
        "cfg-0",
        cfg(-1, -1),
        &clock,
        LoadParams::default(),
    );
    put(&log, 0);
    log.roll().unwrap();
    put(&log, 10 * HOUR);
    assert!(log.delete_old_segments().unwrap().decision.is_empty());
    // A topic override arrives (e.g. AlterConfigs retention.ms=1h).
    let mut props = std::collections::BTreeMap::new();
    props.insert("retention.ms".to_string(), HOUR.to_string());
    log.update_config(LogConfig::with_overrides(&log.config(), &props).unwrap());
    assert_eq!(
        log.delete_old_segments().unwrap().decision.deletions.len(),
        1
    );
}

#[test]
fn broker_retention_properties_feed_the_defaults() {
    let mut props = std::collections::BTreeMap::new();
    props.insert("log.retention.hours".to_string(), "5".to_string());
    props.insert("log.retention.bytes".to_string(), "1000".to_string());
    let c = LogConfig::from_broker_properties(&props).unwrap();
    assert_eq!((c.retention_ms, c.retention_bytes), (5 * HOUR, 1000));
    props.insert("log.retention.minutes".to_string(), "7".to_string());
    assert_eq!(
        LogConfig::from_broker_properties(&props)
            .unwrap()
            .retention_ms,
        7 * 60_000
    );
    props.insert("log.retention.ms".to_string(), "9".to_string());
    assert_eq!(
        LogConfig::from_broker_properties(&props)
            .unwrap()
            .retention_ms,
        9
    );
}

fn manager(root: &Path, clock: &Arc<MockClock>) -> Arc<LogManager> {
    let mut cfg = LogManagerConfig::new(vec![root.to_path_buf()]);
    cfg.default_config = LogConfig {
        retention_ms: HOUR,
        file_delete_delay_ms: 1_000,
        ..LogConfig::default()
    };
    let clock: SharedClock = clock.clone();
    LogManager::open(cfg, clock).unwrap()
}

#[test]
fn the_manager_runs_retention_on_its_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let m = manager(tmp.path(), &clock);
    assert_eq!(
        m.retention_schedule().interval_ms(),
        DEFAULT_RETENTION_CHECK_INTERVAL_MS
    );
    let tp = TopicPartition::new("sched", 0);
    let log = m.get_or_create_log(&tp, m_cfg(), None).unwrap();
    put(&log, 0);
    log.roll().unwrap();
    put(&log, 10 * HOUR);
    // Kafka's initial delay: nothing before 30 s.
    clock.advance(29_999);
    m.run_background_once();
    assert_eq!(bases(&log), vec![0, 1]);
    clock.advance(1);
    m.run_background_once();
    assert_eq!(bases(&log), vec![1]);
    // The `.deleted` files go on a later round after file.delete.delay.ms.
    assert!(!names_with(&log.dir(), ".log.deleted").is_empty());
    clock.advance(1_000);
    m.run_background_once();
    assert!(names_with(&log.dir(), ".deleted").is_empty());
    // A shorter interval takes effect at once (next pass 10 s from now),
    // and a pass runs only when due: segment 1 expires under a new
    // retention.ms but waits for the pass.
    put(&log, 10 * HOUR);
    log.roll().unwrap();
    put(&log, 10 * HOUR);
    m.set_retention_check_interval_ms(10_000);
    let mut c = log.config();
    c.retention_ms = 1_000;
    log.update_config(c);
    clock.advance(9_999);
    m.run_background_once();
    assert_eq!(bases(&log), vec![1, 3]);
    clock.advance(1);
    m.run_background_once();
    assert_eq!(bases(&log), vec![4]);
    m.shutdown().unwrap();
}

fn m_cfg() -> LogConfig {
    LogConfig {
        retention_ms: HOUR,
        file_delete_delay_ms: 1_000,
        ..LogConfig::default()
    }
}

#[test]
fn delete_records_is_enforced_persisted_and_then_reclaimed() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let tp = TopicPartition::new("dr", 0);
    {
        let m = manager(tmp.path(), &clock);
        let c = LogConfig {
            retention_ms: -1,
            ..m_cfg()
        };
        let log = m.get_or_create_log(&tp, c, None).unwrap();
        for _ in 0..3 {
            put(&log, 10 * HOUR);
            put(&log, 10 * HOUR);
            log.roll().unwrap();
        }
        assert_eq!(bases(&log), vec![0, 2, 4, 6]);
        // Above the HW is refused.
        assert!(matches!(
            log.maybe_increment_log_start_offset(Offset(7)),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert_eq!(
            log.maybe_increment_log_start_offset(Offset(3)).unwrap(),
            Offset(3)
        );
        // No file changes at once; reads below the start fail.
        assert_eq!(bases(&log), vec![0, 2, 4, 6]);
        assert!(matches!(
            log.read(Offset(2), 1 << 20, ReadBound::HighWatermark, true),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert!(log
            .read(Offset(3), 1 << 20, ReadBound::HighWatermark, true)
            .is_ok());
        m.checkpoint_all().unwrap();
        let ckpt = OffsetCheckpointFile::in_dir(
            &strata_log::fs::StdFs::shared(),
            tmp.path(),
            "log-start-offset-checkpoint",
        )
        .read()
        .unwrap();
        assert_eq!(ckpt.get(&tp), Some(&Offset(3)));
        // Crash: no shutdown, no retention pass.
        drop(m);
    }
    let m = manager(tmp.path(), &clock);
    let log = m.get_log(&tp).unwrap();
    assert_eq!(log.log_start_offset(), Offset(3));
    assert_eq!(bases(&log), vec![0, 2, 4, 6]);
    assert!(matches!(
        log.read(Offset(0), 1 << 20, ReadBound::LogEnd, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    log.update_high_watermark(log.log_end_offset());
    let round = m.run_retention_once();
    assert_eq!(round.segments_deleted, 1);
    assert_eq!(bases(&log), vec![2, 4, 6]);
    assert_eq!(log.log_start_offset(), Offset(3));
}

#[test]
fn the_manager_removes_renamed_snapshots_after_the_delay() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let m = manager(tmp.path(), &clock);
    let tp = TopicPartition::new("snap", 0);
    let log = m.get_or_create_log(&tp, m_cfg(), None).unwrap();
    put(&log, 0);
    log.roll().unwrap();
    put(&log, 10 * HOUR);
    let dir = log.dir();
    std::fs::write(dir.join("00000000000000000000.snapshot"), b"s0").unwrap();
    let round = m.run_retention_once();
    assert_eq!((round.logs, round.segments_deleted), (1, 1));
    assert!(round.bytes_deleted > 0);
    let renamed = dir.join("00000000000000000000.snapshot.deleted");
    assert!(renamed.exists());
    clock.advance(999);
    m.run_background_once();
    assert!(renamed.exists());
    clock.advance(1);
    m.run_background_once();
    assert!(!renamed.exists());
    assert!(names_with(&dir, ".deleted").is_empty());
    m.shutdown().unwrap();
}
