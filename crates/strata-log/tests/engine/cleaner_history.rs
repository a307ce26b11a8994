//! The cleaner's statistics: a real cleaning leaves a `CleaningRecord` with
//! its figures in the log dir's `cleaner-statistics.json`; the history and
//! totals survive a restart of the log manager; a corrupt file neither
//! stops the manager nor is mistaken for a partition.

use std::sync::Arc;

use crate::cleaner_util::*;
use strata_log::cleaner::{statistics_path, CleanerConfig, LogCleaner};
use strata_log::{Clock, LogManager, LogManagerConfig, MockClock, TopicPartition};

fn config() -> CleanerConfig {
    CleanerConfig {
        dedupe_buffer_size: 1 << 16,
        io_buffer_size: 8192,
        ..CleanerConfig::default()
    }
}

fn open_manager(root: &std::path::Path, clock: &Arc<MockClock>) -> Arc<LogManager> {
    LogManager::open(
        LogManagerConfig::new(vec![root.to_path_buf()]),
        clock.clone(),
    )
    .unwrap()
}

/// 40 overwrites of 4 keys in segments of ~4 KiB, then one record in the
/// active segment, cleaned once by `cleaner`.
fn dirty_and_clean(mgr: &LogManager, cleaner: &LogCleaner, clock: &MockClock) {
    let tp = TopicPartition::new("t", 0);
    let mut cfg = compact_config(4096);
    cfg.min_cleanable_dirty_ratio = 0.01;
    let log = mgr.get_or_create_log(&tp, cfg, None).unwrap();
    for i in 0..400 {
        let v = format!("value {i} {}", "x".repeat(100));
        append(&log, clock.now_ms(), &[(&format!("k{}", i % 4), Some(&v))]);
    }
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("tail", Some("x"))]);
    log.update_high_watermark(log.log_end_offset());
    let mut w = cleaner.worker().unwrap();
    cleaner
        .clean_filthiest(&mut w, std::slice::from_ref(&log))
        .unwrap()
        .unwrap();
}

#[test]
fn a_cleaning_is_recorded_persisted_and_reloaded_at_start() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let mgr = open_manager(root.path(), &clock);
    mgr.cleaner().configure(config());
    dirty_and_clean(&mgr, mgr.cleaner(), &clock);

    let h = mgr.cleaner().history();
    assert_eq!(h.len(), 1);
    let r = &h[0];
    assert_eq!((r.topic.as_str(), r.partition), ("t", 0));
    assert_eq!(r.messages_read, 400);
    assert_eq!(r.messages_written, 4, "one record per key survives");
    assert!(r.bytes_written < r.bytes_read / 10);
    assert!(
        r.segments_cleaned > 5,
        "tiny segments: {}",
        r.segments_cleaned
    );
    assert!(r.segments_after <= r.segments_before);
    assert_eq!(r.dirty_ratio, 1.0);
    assert!(r.buffer_utilization > 0.0);
    assert!(r.cpu_ms.is_some());
    assert_eq!(r.config.min_cleanable_dirty_ratio, 0.01);
    assert_eq!(r.config.segment_bytes, 4096);
    assert_eq!(r.config.io_max_bytes_per_second, None);
    let t = mgr.cleaner().totals();
    assert_eq!(t.cleanings, 1);
    assert_eq!(t.bytes_read, r.bytes_read);
    assert!(t.recopy_percent < 10.0 && t.recopy_percent > 0.0);
    assert!((t.max_dirty_percent - 100.0).abs() < 1e-9);
    assert_eq!(t.dead_threads, 0);

    let file = statistics_path(root.path());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"messages_read\": 400"), "{text}");
    mgr.shutdown().unwrap();
    drop(mgr);

    let mgr = open_manager(root.path(), &clock);
    assert!(mgr.get_log(&TopicPartition::new("t", 0)).is_some());
    assert_eq!(mgr.cleaner().history(), h, "the history survives a restart");
    mgr.shutdown().unwrap();
}

#[test]
fn a_corrupt_statistics_file_starts_an_empty_history() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    std::fs::write(statistics_path(root.path()), b"\x00garbage{").unwrap();
    let mgr = open_manager(root.path(), &clock);
    assert!(mgr.cleaner().history().is_empty());
    mgr.cleaner().configure(config());
    dirty_and_clean(&mgr, mgr.cleaner(), &clock);
    assert_eq!(mgr.cleaner().history().len(), 1);
    let text = std::fs::read_to_string(statistics_path(root.path())).unwrap();
    assert!(text.starts_with('{') && text.contains("\"version\": 1"));
    mgr.shutdown().unwrap();
}
