//! Guards crash safety of the two deletions: a crash at every step of
//! retention's segment deletion (rename `.log`, `.index`, `.timeindex`,
//! then the physical delete) and of topic deletion (rename to `-delete`,
//! checkpoint, remove) must reopen with nothing half-deleted and nothing
//! kept lost. Each crash state is built on disk and reopened unclean.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use strata_log::format::{delete_dir_name, partition_dir_name};
use strata_log::OffsetCheckpointFile;
use strata_log::{
    LoadParams, Log, LogConfig, LogManager, LogManagerConfig, MockClock, Offset, ReadBound,
    SharedClock, TopicPartition,
};

const HOUR: i64 = 3_600_000;

fn bases(log: &Log) -> Vec<i64> {
    log.segments().iter().map(|s| s.base_offset.0).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Every batch of the log from `from` on, as bytes.
fn bytes_from(log: &Log, from: i64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = Offset(from);
    while next < log.log_end_offset() {
        let d = log.read(next, 1 << 20, ReadBound::LogEnd, true).unwrap();
        let b = d.read_to_vec().unwrap();
        let batches = split_batches(&b);
        next = Offset(batches.last().unwrap().last + 1);
        out.extend_from_slice(&b);
    }
    out
}

/// A closed 3-segment log (bases 0, 2, 4; two records each) in
/// `<root>/base/x-0`.
fn baseline(root: &Path, clock: &Arc<MockClock>) -> PathBuf {
    let log = open_log(
        &root.join("base"),
        "x-0",
        LogConfig::default(),
        clock,
        LoadParams::default(),
    );
    for i in 0..6 {
        log.append_as_follower(&follower_batch(i, &[i], 50))
            .unwrap();
        if i % 2 == 1 && i < 5 {
            log.roll().unwrap();
        }
    }
    assert_eq!(bases(&log), vec![0, 2, 4]);
    log.close().unwrap();
    root.join("base").join("x-0")
}

fn rename_deleted(dir: &Path, base: i64, ext: &str) {
    let p = dir.join(format!("{base:020}.{ext}"));
    std::fs::rename(&p, dir.join(format!("{base:020}.{ext}.deleted"))).unwrap();
}

#[test]
fn a_crash_at_each_step_of_segment_deletion_reopens_consistently() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let base = baseline(tmp.path(), &clock);
    let full = {
        let l = open_log(
            base.parent().unwrap(),
            "x-0",
            LogConfig::default(),
            &clock,
            LoadParams::default(),
        );
        let b = bytes_from(&l, 0);
        l.close().unwrap();
        b
    };
    let tail_from_2 = full[split_batches(&full)[2].position..].to_vec();
    // (name, what the crash left on disk, expected first base)
    type Step = fn(&Path);
    let steps: Vec<(&str, Step, i64)> = vec![
        ("nothing renamed yet", |_| {}, 0),
        ("only .log renamed", |d| rename_deleted(d, 0, "log"), 2),
        (
            ".log and .index renamed",
            |d| {
                rename_deleted(d, 0, "log");
                rename_deleted(d, 0, "index");
            },
            2,
        ),
        (
            "first segment renamed, second not",
            |d| {
                for e in ["log", "index", "timeindex"] {
                    rename_deleted(d, 0, e);
                }
                rename_deleted(d, 2, "log");
            },
            4,
        ),
        (
            "all renamed, none removed",
            |d| {
                for b in [0, 2] {
                    for e in ["log", "index", "timeindex"] {
                        rename_deleted(d, b, e);
                    }
                }
            },
            4,
        ),
        (
            "physical delete half done",
            |d| {
                for e in ["log", "index", "timeindex"] {
                    rename_deleted(d, 0, e);
                }
                std::fs::remove_file(d.join(format!("{:020}.log.deleted", 0))).unwrap();
            },
            2,
        ),
    ];
    for (i, (name, crash, first)) in steps.into_iter().enumerate() {
        let root = tmp.path().join(format!("case{i}"));
        let dir = root.join("x-0");
        copy_dir(&base, &dir);
        crash(&dir);
        let log = open_log(
            &root,
            "x-0",
            LogConfig::default(),
            &clock,
            LoadParams {
                recovery_point: Offset(0),
                log_start_offset: Offset(0),
                had_clean_shutdown: false,
                fs: strata_log::fs::StdFs::shared(),
                handles: strata_log::HandleCache::shared_default(),
            },
        );
        let names = file_names(&dir);
        assert!(
            names.iter().all(|n| !n.ends_with(".deleted")),
            "{name}: leftovers {names:?}"
        );
        // No index without its .log.
        for n in &names {
            if n.ends_with(".index") || n.ends_with(".timeindex") {
                let stem = n.split('.').next().unwrap();
                assert!(names.contains(&format!("{stem}.log")), "{name}: orphan {n}");
            }
        }
        assert_eq!(bases(&log)[0], first, "{name}");
        assert_eq!(log.log_start_offset(), Offset(first), "{name}");
        assert_eq!(log.log_end_offset(), Offset(6), "{name}");
        // Everything kept reads back byte for byte.
        let expect = match first {
            0 => full.clone(),
            2 => tail_from_2.clone(),
            _ => full[split_batches(&full)[4].position..].to_vec(),
        };
        assert_eq!(bytes_from(&log, first), expect, "{name}");
    }
}

#[test]
fn a_crash_after_a_real_retention_pass_keeps_the_new_start() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(10 * HOUR);
    let cfg = LogConfig {
        retention_ms: HOUR,
        ..LogConfig::default()
    };
    let log = open_log(
        tmp.path(),
        "y-0",
        cfg.clone(),
        &clock,
        LoadParams::default(),
    );
    for i in 0..4 {
        let ts = if i < 2 { 0 } else { 10 * HOUR };
        log.append_as_follower(&follower_batch(i, &[ts], 50))
            .unwrap();
        log.roll().unwrap();
    }
    log.update_high_watermark(log.log_end_offset());
    let kept = bytes_from(&log, 2);
    let out = log.delete_old_segments().unwrap();
    assert_eq!(out.decision.deletions.len(), 2);
    // Crash: the `.deleted` files are still there, the log-start checkpoint
    // still says 0.
    drop(log);
    let log = open_log(tmp.path(), "y-0", cfg, &clock, LoadParams::default());
    assert_eq!(log.log_start_offset(), Offset(2));
    assert_eq!(bases(&log), vec![2, 3, 4]);
    assert_eq!(bytes_from(&log, 2), kept);
    assert!(log.recovery_stats().deleted_temp_files.len() >= 4);
}

fn manager(root: &Path, clock: &Arc<MockClock>) -> Arc<LogManager> {
    let mut cfg = LogManagerConfig::new(vec![root.to_path_buf()]);
    cfg.file_delete_delay_ms = 5_000;
    let clock: SharedClock = clock.clone();
    LogManager::open(cfg, clock).unwrap()
}

/// A manager dir with partition `t-0` holding 3 records; closed cleanly.
fn topic_dir(root: &Path, clock: &Arc<MockClock>) -> TopicPartition {
    let tp = TopicPartition::new("t", 0);
    let m = manager(root, clock);
    let log = m
        .get_or_create_log(&tp, LogConfig::default(), None)
        .unwrap();
    for i in 0..3 {
        log.append_as_follower(&follower_batch(i, &[i], 10))
            .unwrap();
    }
    m.shutdown().unwrap();
    tp
}

fn delete_dirs(root: &Path) -> Vec<String> {
    file_names(root)
        .into_iter()
        .filter(|n| n.ends_with("-delete"))
        .collect()
}

#[test]
fn async_delete_renames_then_removes_after_the_delay() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let tp = topic_dir(tmp.path(), &clock);
    let m = manager(tmp.path(), &clock);
    let log = m.get_log(&tp).unwrap();
    let held = log
        .read(Offset(0), 1 << 20, ReadBound::LogEnd, true)
        .unwrap();
    let before = held.read_to_vec().unwrap();
    m.async_delete(&tp).unwrap();
    assert!(m.get_log(&tp).is_none());
    assert!(!tmp.path().join(partition_dir_name(&tp)).exists());
    assert_eq!(delete_dirs(tmp.path()).len(), 1);
    m.checkpoint_all().unwrap();
    let rp = OffsetCheckpointFile::in_dir(
        &strata_log::fs::StdFs::shared(),
        tmp.path(),
        "recovery-point-offset-checkpoint",
    )
    .read()
    .unwrap();
    assert!(!rp.contains_key(&tp), "checkpoints drop the partition");
    clock.advance(4_999);
    m.run_background_once();
    assert_eq!(delete_dirs(tmp.path()).len(), 1);
    clock.advance(1);
    m.run_background_once();
    assert!(delete_dirs(tmp.path()).is_empty());
    // A fetch that held the segment still reads it.
    assert_eq!(held.read_to_vec().unwrap(), before);
    m.shutdown().unwrap();
}

#[test]
fn a_crash_at_each_step_of_topic_deletion_reopens_consistently() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    // Step 0: crash before the rename: the partition is intact.
    {
        let root = tmp.path().join("s0");
        let tp = topic_dir(&root, &clock);
        let m = manager(&root, &clock);
        let log = m.get_log(&tp).unwrap();
        assert_eq!(log.log_end_offset(), Offset(3));
        m.shutdown().unwrap();
    }
    // Step 1: renamed to -delete, checkpoints still name the partition.
    // Step 2: the removal got half way (the .log is gone).
    for (step, half) in [(1, false), (2, true)] {
        let root = tmp.path().join(format!("s{step}"));
        let tp = topic_dir(&root, &clock);
        let live = root.join(partition_dir_name(&tp));
        let doomed = root.join(delete_dir_name(&tp));
        std::fs::rename(&live, &doomed).unwrap();
        if half {
            std::fs::remove_file(doomed.join(format!("{:020}.log", 0))).unwrap();
        }
        let m = manager(&root, &clock);
        assert!(m.get_log(&tp).is_none(), "step {step}: not loaded");
        assert!(m.all_logs().is_empty());
        m.checkpoint_all().unwrap();
        let ls = OffsetCheckpointFile::in_dir(
            &strata_log::fs::StdFs::shared(),
            &root,
            "log-start-offset-checkpoint",
        )
        .read()
        .unwrap();
        assert!(ls.is_empty(), "step {step}: checkpoint dropped it");
        assert_eq!(delete_dirs(&root).len(), 1);
        clock.advance(5_000);
        m.run_background_once();
        assert!(delete_dirs(&root).is_empty(), "step {step}: removed");
        // The partition can be created again, empty.
        let log = m
            .get_or_create_log(&tp, LogConfig::default(), None)
            .unwrap();
        assert_eq!(log.log_end_offset(), Offset(0));
        m.shutdown().unwrap();
    }
}
