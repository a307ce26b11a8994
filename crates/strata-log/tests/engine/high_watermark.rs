//! Guards `replication-offset-checkpoint` (the high-watermark checkpoint of
//! Kafka's `ReplicaManager`): written per log dir on the
//! `replica.high.watermark.checkpoint.interval.ms` schedule and at clean
//! shutdown, listing only live logs; on load each HW is the checkpointed
//! value clamped to [log start, LEO]; a missing file gives the log start, a
//! garbage file is ignored like the recovery-point checkpoint, and a failed
//! write takes the dir offline.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use strata_log::{
    LogConfig, LogError, LogManager, LogManagerConfig, MockClock, Offset, SharedClock,
    TopicPartition, DEFAULT_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
};

const FILE: &str = "replication-offset-checkpoint";

fn manager(dirs: &[PathBuf], clock: &Arc<MockClock>) -> Arc<LogManager> {
    let mut cfg = LogManagerConfig::new(dirs.to_vec());
    cfg.default_config = LogConfig {
        segment_bytes: 4096,
        ..LogConfig::default()
    };
    let clock: SharedClock = clock.clone();
    LogManager::open(cfg, clock).unwrap()
}

fn dirs(root: &Path, n: usize) -> Vec<PathBuf> {
    (0..n).map(|i| root.join(format!("d{i}"))).collect()
}

fn append(m: &LogManager, tp: &TopicPartition, n: i64) {
    let log = m.get_log(tp).unwrap();
    for _ in 0..n {
        let base = log.log_end_offset().0;
        log.append_as_follower(&follower_batch(base, &[base], 100))
            .unwrap();
    }
}

/// A partition with `n` records and high watermark `hw`.
fn partition(m: &LogManager, tp: &TopicPartition, n: i64, hw: i64) -> PathBuf {
    let log = m.get_or_create_log(tp, LogConfig::default(), None).unwrap();
    append(m, tp, n);
    assert_eq!(log.update_high_watermark(Offset(hw)), Offset(hw));
    log.dir().parent().unwrap().to_path_buf()
}

fn hw(m: &LogManager, tp: &TopicPartition) -> Offset {
    m.get_log(tp).unwrap().high_watermark()
}

#[test]
fn clean_shutdown_writes_every_dir_and_reopen_restores_the_hw() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 2);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    let a = TopicPartition::new("a", 0);
    let b = TopicPartition::new("b", 3);
    let dir_a = partition(&m, &a, 10, 7);
    let dir_b = partition(&m, &b, 5, 5);
    assert_ne!(dir_a, dir_b, "one partition per dir");
    m.shutdown().unwrap();
    drop(m);
    assert_eq!(
        std::fs::read_to_string(dir_a.join(FILE)).unwrap(),
        "0\n1\na 0 7\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir_b.join(FILE)).unwrap(),
        "0\n1\nb 3 5\n"
    );
    assert!(!dir_a.join(format!("{FILE}.tmp")).exists());

    let m = manager(&ds, &clock);
    assert_eq!(hw(&m, &a), Offset(7));
    assert_eq!(hw(&m, &b), Offset(5));
    m.shutdown().unwrap();
}

#[test]
fn the_background_round_writes_on_the_interval_and_a_crash_keeps_the_last_one() {
    assert_eq!(DEFAULT_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, 5_000);
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    let tp = TopicPartition::new("t", 0);
    partition(&m, &tp, 10, 4);
    clock.advance(4_999);
    m.run_background_once();
    assert!(!ds[0].join(FILE).exists(), "interval not reached");
    clock.advance(1);
    m.run_background_once();
    assert_eq!(
        std::fs::read_to_string(ds[0].join(FILE)).unwrap(),
        "0\n1\nt 0 4\n"
    );
    // Raised after the last checkpoint, then a crash (no shutdown): the
    // restarted log has the checkpointed HW, as in Kafka.
    m.get_log(&tp).unwrap().update_high_watermark(Offset(9));
    clock.advance(4_000);
    m.run_background_once();
    drop(m);
    let m = manager(&ds, &clock);
    assert_eq!(hw(&m, &tp), Offset(4));
    assert_eq!(m.get_log(&tp).unwrap().log_end_offset(), Offset(10));
    // A non-default interval.
    drop(m);
    let mut cfg = LogManagerConfig::new(ds.clone());
    cfg.replica_high_watermark_checkpoint_interval_ms = 100;
    let m = LogManager::open(cfg, clock.clone()).unwrap();
    m.get_log(&tp).unwrap().update_high_watermark(Offset(8));
    clock.advance(100);
    m.run_background_once();
    assert_eq!(
        std::fs::read_to_string(ds[0].join(FILE)).unwrap(),
        "0\n1\nt 0 8\n"
    );
}

#[test]
fn a_checkpointed_hw_is_clamped_to_the_log_on_load() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    let cut = TopicPartition::new("cut", 0);
    let moved = TopicPartition::new("moved", 0);
    partition(&m, &cut, 20, 20);
    partition(&m, &moved, 10, 10);
    m.get_log(&moved)
        .unwrap()
        .maybe_increment_log_start_offset(Offset(6))
        .unwrap();
    m.checkpoint_all().unwrap();
    m.checkpoint_high_watermarks().unwrap();
    // Truncated below the checkpointed HW (a follower after divergence),
    // then a crash before the next HW checkpoint.
    let log = m.get_log(&cut).unwrap();
    log.truncate_to(Offset(12)).unwrap();
    assert_eq!(log.high_watermark(), Offset(12));
    drop(log);
    drop(m);
    // And a HW below the log start (written by hand: Kafka clamps it).
    let text = std::fs::read_to_string(ds[0].join(FILE)).unwrap();
    assert_eq!(text, "0\n2\ncut 0 20\nmoved 0 10\n");
    std::fs::write(ds[0].join(FILE), "0\n2\ncut 0 20\nmoved 0 2\n").unwrap();
    let m = manager(&ds, &clock);
    let log = m.get_log(&cut).unwrap();
    assert_eq!(log.log_end_offset(), Offset(12));
    assert_eq!(log.high_watermark(), Offset(12));
    let log = m.get_log(&moved).unwrap();
    assert_eq!(log.log_start_offset(), Offset(6));
    assert_eq!(log.high_watermark(), Offset(6));
    m.shutdown().unwrap();
}

#[test]
fn a_missing_or_garbage_file_leaves_the_hw_at_the_log_start() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    let tp = TopicPartition::new("t", 0);
    partition(&m, &tp, 10, 10);
    let other = TopicPartition::new("other", 1);
    partition(&m, &other, 3, 3);
    m.shutdown().unwrap();
    drop(m);
    // Missing: the partition without an entry gets its log start.
    std::fs::write(ds[0].join(FILE), "0\n1\nother 1 3\n").unwrap();
    let m = manager(&ds, &clock);
    assert_eq!(hw(&m, &tp), Offset(0));
    assert_eq!(hw(&m, &other), Offset(3));
    m.shutdown().unwrap();
    drop(m);
    std::fs::remove_file(ds[0].join(FILE)).unwrap();
    let m = manager(&ds, &clock);
    assert_eq!(hw(&m, &tp), Offset(0));
    assert_eq!(hw(&m, &other), Offset(0));
    m.shutdown().unwrap();
    drop(m);
    // Garbage: ignored (WARN), the dir stays online and loads.
    for garbage in ["garbage\n", "0\n2\nt 0 5\n", "7\n0\n", "0\n1\nt zero 5\n"] {
        std::fs::write(ds[0].join(FILE), garbage).unwrap();
        let m = manager(&ds, &clock);
        assert!(m.offline_dirs().is_empty(), "{garbage:?}");
        assert_eq!(hw(&m, &tp), Offset(0), "{garbage:?}");
        assert_eq!(m.get_log(&tp).unwrap().log_end_offset(), Offset(10));
        m.get_log(&tp).unwrap().update_high_watermark(Offset(10));
        // The next checkpoint replaces the garbage.
        m.shutdown().unwrap();
        drop(m);
        let text = std::fs::read_to_string(ds[0].join(FILE)).unwrap();
        assert_eq!(text, "0\n2\nother 1 0\nt 0 10\n");
    }
}

#[test]
fn only_live_logs_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    let keep = TopicPartition::new("keep", 0);
    let gone = TopicPartition::new("gone", 0);
    let unloaded = TopicPartition::new("unloaded", 0);
    partition(&m, &keep, 4, 4);
    partition(&m, &gone, 4, 2);
    partition(&m, &unloaded, 4, 3);
    m.checkpoint_high_watermarks().unwrap();
    assert_eq!(
        std::fs::read_to_string(ds[0].join(FILE)).unwrap(),
        "0\n3\ngone 0 2\nkeep 0 4\nunloaded 0 3\n"
    );
    m.async_delete(&gone).unwrap();
    m.unload(&unloaded).unwrap();
    m.checkpoint_high_watermarks().unwrap();
    assert_eq!(
        std::fs::read_to_string(ds[0].join(FILE)).unwrap(),
        "0\n1\nkeep 0 4\n"
    );
    m.async_delete(&keep).unwrap();
    m.checkpoint_high_watermarks().unwrap();
    assert_eq!(std::fs::read_to_string(ds[0].join(FILE)).unwrap(), "0\n0\n");
}

#[test]
fn a_failed_write_takes_only_that_dir_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 2);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    let a = TopicPartition::new("a", 0);
    let b = TopicPartition::new("b", 0);
    let dir_a = partition(&m, &a, 2, 2);
    let dir_b = partition(&m, &b, 2, 1);
    // The temp file cannot be created where a non-empty directory sits.
    let tmp_path = dir_a.join(format!("{FILE}.tmp"));
    std::fs::create_dir(&tmp_path).unwrap();
    std::fs::write(tmp_path.join("x"), b"x").unwrap();
    let err = m.checkpoint_high_watermarks().unwrap_err();
    assert!(matches!(err, LogError::Checkpoint { .. }), "{err:?}");
    assert_eq!(m.offline_dirs(), vec![dir_a.clone()]);
    assert_eq!(
        std::fs::read_to_string(dir_b.join(FILE)).unwrap(),
        "0\n1\nb 0 1\n"
    );
    // Later rounds skip the offline dir.
    m.checkpoint_high_watermarks().unwrap();
    let _ = m.shutdown();
    assert!(!dir_a.join(".kafka_cleanshutdown").exists());
    assert!(dir_b.join(".kafka_cleanshutdown").exists());
}
