//! Guards the log manager: dir locking and identity, placement, clean vs
//! unclean restart through checkpoints and the shutdown marker, a failing
//! dir going offline while the others keep working, async deletion and
//! background flushing, all on a mock clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use strata_log::{
    LogConfig, LogError, LogManager, LogManagerConfig, MockClock, Offset, SharedClock,
    TopicPartition,
};

fn manager(dirs: &[PathBuf], clock: &Arc<MockClock>, threads: usize) -> Arc<LogManager> {
    let mut cfg = LogManagerConfig::new(dirs.to_vec());
    cfg.recovery_threads_per_data_dir = threads;
    cfg.default_config = LogConfig {
        segment_bytes: 4096,
        ..LogConfig::default()
    };
    cfg.cluster_id = Some("test-cluster".into());
    cfg.broker_id = 3;
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

#[test]
fn dirs_are_locked_identified_and_balanced() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 2);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock, 1);
    for d in &ds {
        let props = std::fs::read_to_string(d.join("meta.properties")).unwrap();
        assert!(props.contains("node.id=3") && props.contains("cluster.id=test-cluster"));
        assert!(d.join(".lock").exists());
    }
    let second = LogManager::open(LogManagerConfig::new(ds.clone()), clock.clone());
    assert!(matches!(second, Err(LogError::DirLocked { .. })));
    let id = uuid::Uuid::new_v4();
    for p in 0..6 {
        let tp = TopicPartition::new("t", p);
        m.get_or_create_log(&tp, LogConfig::default(), Some(id))
            .unwrap();
    }
    let infos = m.log_dirs();
    assert_eq!(infos.len(), 2);
    assert!(
        infos.iter().all(|i| i.online && i.partitions.len() == 3),
        "{infos:?}"
    );
    assert!(infos[0].total_bytes > 0);
    let log = m.get_log(&TopicPartition::new("t", 0)).unwrap();
    assert!(log.dir().join("partition.metadata").exists());
    m.shutdown().unwrap();
    drop(log);
    drop(m);
    // Dirs of another cluster are not used.
    let mut other = LogManagerConfig::new(ds.clone());
    other.cluster_id = Some("another-cluster".into());
    let clock2: SharedClock = clock.clone();
    assert!(matches!(
        LogManager::open(other, clock2),
        Err(LogError::NoOnlineDir)
    ));
}

#[test]
fn clean_restart_skips_recovery_and_unclean_restart_recovers_from_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let tp = TopicPartition::new("orders", 0);
    let m = manager(&ds, &clock, 1);
    m.get_or_create_log(
        &tp,
        LogConfig {
            segment_bytes: 4096,
            ..LogConfig::default()
        },
        None,
    )
    .unwrap();
    append(&m, &tp, 100);
    m.shutdown().unwrap();
    drop(m);
    assert!(ds[0].join(".kafka_cleanshutdown").exists());
    let text = std::fs::read_to_string(ds[0].join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(text, "0\n1\norders 0 100\n");

    let m = manager(&ds, &clock, 1);
    assert!(
        !ds[0].join(".kafka_cleanshutdown").exists(),
        "marker taken at startup"
    );
    let log = m.get_log(&tp).unwrap();
    assert!(log.recovery_stats().had_clean_shutdown);
    assert!(log.recovery_stats().recovered_segments.is_empty());
    assert_eq!(log.log_end_offset(), Offset(100));
    append(&m, &tp, 50);
    m.checkpoint_all().unwrap();
    let segs = log.segments();
    let rp = log.recovery_point();
    drop(log);
    drop(m); // crash: no shutdown, no marker

    let m = manager(&ds, &clock, 2);
    let log = m.get_log(&tp).unwrap();
    let stats = log.recovery_stats();
    assert!(!stats.had_clean_shutdown);
    let first_recovered = segs
        .iter()
        .rev()
        .find(|s| s.base_offset <= rp)
        .unwrap()
        .base_offset;
    assert_eq!(stats.recovered_segments.first(), Some(&first_recovered));
    assert!(stats.recovered_segments.len() < segs.len());
    assert_eq!(log.log_end_offset(), Offset(150));
    m.shutdown().unwrap();
}

#[test]
fn a_failing_dir_goes_offline_and_the_others_keep_working() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 2);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock, 1);
    let a = TopicPartition::new("a", 0);
    let b = TopicPartition::new("b", 0);
    m.get_or_create_log(&a, LogConfig::default(), None).unwrap();
    m.get_or_create_log(&b, LogConfig::default(), None).unwrap();
    let log_b = m.get_log(&b).unwrap();
    let dir_b = log_b.dir().parent().unwrap().to_path_buf();
    append(&m, &b, 3);
    // The disk under dir b disappears.
    std::fs::remove_dir_all(&dir_b).unwrap();
    assert!(matches!(log_b.flush(), Err(LogError::Io { .. })));
    assert!(matches!(
        log_b.append_as_follower(&follower_batch(3, &[1], 1)),
        Err(LogError::DirOffline { .. })
    ));
    let infos = m.log_dirs();
    let offline: Vec<_> = infos
        .iter()
        .filter(|i| !i.online)
        .map(|i| i.path.clone())
        .collect();
    assert_eq!(offline, vec![dir_b.clone()]);
    // The other dir works: appends, new partitions, checkpoints, shutdown.
    append(&m, &a, 5);
    let c = TopicPartition::new("c", 0);
    let log_c = m.get_or_create_log(&c, LogConfig::default(), None).unwrap();
    assert_ne!(log_c.dir().parent().unwrap(), dir_b.as_path());
    m.checkpoint_all().unwrap();
    let _ = m.shutdown();
    let dir_a = m.get_log(&a).unwrap().dir().parent().unwrap().to_path_buf();
    assert!(dir_a.join(".kafka_cleanshutdown").exists());
    assert!(!dir_b.join(".kafka_cleanshutdown").exists());
}

#[test]
fn async_delete_and_background_flush_follow_the_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock, 1);
    let keep = TopicPartition::new("keep", 0);
    let gone = TopicPartition::new("gone", 0);
    let cfg = LogConfig {
        flush_ms: 1_000,
        ..LogConfig::default()
    };
    m.get_or_create_log(&keep, cfg, None).unwrap();
    m.get_or_create_log(&gone, LogConfig::default(), None)
        .unwrap();
    append(&m, &keep, 4);
    append(&m, &gone, 4);
    let log = m.get_log(&keep).unwrap();
    assert_eq!(log.recovery_point(), Offset(0));
    m.run_background_once();
    assert_eq!(log.recovery_point(), Offset(0), "flush.ms not reached");
    clock.advance(1_000);
    m.run_background_once();
    assert_eq!(log.recovery_point(), Offset(4));

    m.async_delete(&gone).unwrap();
    assert!(m.get_log(&gone).is_none());
    let deleting: Vec<String> = file_names(&ds[0])
        .into_iter()
        .filter(|n| n.ends_with("-delete"))
        .collect();
    assert_eq!(deleting.len(), 1);
    assert!(deleting[0].starts_with("gone-0."));
    clock.advance(59_999);
    m.run_background_once();
    assert!(ds[0].join(&deleting[0]).exists());
    clock.advance(1);
    m.run_background_once();
    assert!(!ds[0].join(&deleting[0]).exists());
    m.shutdown().unwrap();
}

#[test]
fn delete_dirs_are_skipped_at_open_and_removed_later() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 1);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock, 1);
    let tp = TopicPartition::new("x", 1);
    m.get_or_create_log(&tp, LogConfig::default(), None)
        .unwrap();
    append(&m, &tp, 2);
    m.shutdown().unwrap();
    drop(m);
    let name = "x-1.0123456789abcdef0123456789abcdef-delete";
    std::fs::rename(ds[0].join("x-1"), ds[0].join(name)).unwrap();
    let m = manager(&ds, &clock, 1);
    assert!(m.get_log(&tp).is_none());
    assert!(m.all_logs().is_empty());
    clock.advance(60_000);
    m.run_background_once();
    assert!(!ds[0].join(name).exists());
    m.shutdown().unwrap();
}

#[test]
fn many_partitions_recover_in_parallel() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 2);
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock, 1);
    for p in 0..12 {
        let tp = TopicPartition::new("p", p);
        m.get_or_create_log(&tp, LogConfig::default(), None)
            .unwrap();
        append(&m, &tp, p as i64 + 1);
    }
    drop(m);
    let m = manager(&ds, &clock, 3);
    assert_eq!(m.all_logs().len(), 12);
    for p in 0..12 {
        let log = m.get_log(&TopicPartition::new("p", p)).unwrap();
        assert_eq!(log.log_end_offset(), Offset(p as i64 + 1));
        assert!(!log.recovery_stats().had_clean_shutdown);
    }
    m.shutdown().unwrap();
}
