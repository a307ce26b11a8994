//! Guards moving a partition between log dirs (AlterReplicaLogDirs): the
//! future log gets the current log's batches byte for byte with its log
//! start, leader epochs and producer state; no append is lost or lands in
//! the old log while the copy and the swap run; a crash (kill -9) at every
//! file operation of the swap leaves one live copy with every batch; a
//! future log is resumed after a restart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use strata_log::batch::BatchBuilder;
use strata_log::fs::{Fault, FaultFs, SharedFs, StdFs};
use strata_log::{
    LeaderEpoch, LogConfig, LogDirMove, LogError, LogManager, LogManagerConfig, MockClock, Offset,
    ProducerEpoch, ProducerId, SharedClock, Timestamp, TopicPartition,
};

use crate::common::read_all_batches;

const PID: ProducerId = ProducerId(42);

fn manager_with(dirs: &[PathBuf], clock: &Arc<MockClock>, fs: SharedFs) -> Arc<LogManager> {
    let mut cfg = LogManagerConfig::new(dirs.to_vec());
    cfg.default_config = LogConfig {
        segment_bytes: 64 * 1024,
        ..LogConfig::default()
    };
    cfg.fs = fs;
    let clock: SharedClock = clock.clone();
    LogManager::open(cfg, clock).unwrap()
}

fn manager(dirs: &[PathBuf], clock: &Arc<MockClock>) -> Arc<LogManager> {
    manager_with(dirs, clock, StdFs::shared())
}

fn dirs(root: &Path) -> Vec<PathBuf> {
    vec![root.join("d0"), root.join("d1")]
}

/// An idempotent producer's batch of 4 records of `value_len` bytes.
fn batch(seq: i32, value_len: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0)).producer(PID, ProducerEpoch(0), seq);
    for i in 0..4 {
        let mut v = format!("value-{seq}-{i}-").into_bytes();
        v.resize(value_len, b'v');
        b.append(Timestamp(1_700_000_000_000), Some(b"k"), Some(&v), &[]);
    }
    b.build()
}

/// `n` leader appends in epoch 3, then everything below offset 8 deleted
/// (DeleteRecords), so the log start is not a segment base.
fn fill(m: &LogManager, tp: &TopicPartition, n: i32, value_len: usize) {
    let config = LogConfig {
        segment_bytes: 64 * 1024,
        ..LogConfig::default()
    };
    let log = m
        .get_or_create_log(tp, config, Some(uuid::Uuid::from_u128(9)))
        .unwrap();
    for i in 0..n {
        let mut b = batch(i * 4, value_len);
        log.append_as_leader(&mut b, LeaderEpoch(3)).unwrap();
    }
    log.update_high_watermark(log.log_end_offset());
    log.maybe_increment_log_start_offset(Offset(8)).unwrap();
}

/// Partition dirs of `tp` in `dir` (name → kind suffix or "").
fn partition_dirs(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("t-"))
        .collect();
    out.sort();
    out
}

fn run_until_moved(m: &LogManager, tp: &TopicPartition, dest: &Path) {
    for _ in 0..10_000 {
        m.run_log_dir_moves_once();
        if m.future_log(tp).is_none() && m.get_log(tp).unwrap().dir().parent() == Some(dest) {
            return;
        }
    }
    panic!("the move did not finish");
}

#[test]
fn move_copies_everything_and_swaps() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path());
    let clock = MockClock::new(1_700_000_000_000);
    let m = manager(&ds, &clock);
    let tp = TopicPartition::new("t", 0);
    fill(&m, &tp, 300, 300);
    let old = m.get_log(&tp).unwrap();
    assert_eq!(old.dir().parent(), Some(ds[0].as_path()));
    let before: Vec<Vec<u8>> = read_all_batches(&old).into_iter().map(|b| b.1).collect();
    let (start, end, hw) = (
        old.log_start_offset(),
        old.log_end_offset(),
        old.high_watermark(),
    );
    assert!(old.num_segments() > 2, "the copy must cross segments");

    assert!(matches!(
        m.alter_log_dir(&tp, &tmp.path().join("nowhere")),
        Err(LogError::UnknownLogDir { .. })
    ));
    assert_eq!(
        m.alter_log_dir(&tp, &ds[0]).unwrap(),
        LogDirMove::AlreadyThere
    );
    assert_eq!(m.alter_log_dir(&tp, &ds[1]).unwrap(), LogDirMove::Started);
    assert_eq!(
        m.alter_log_dir(&tp, &ds[1]).unwrap(),
        LogDirMove::InProgress
    );
    let future = m.future_log(&tp).unwrap();
    let future_name = future
        .dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        future_name.starts_with("t-0.") && future_name.ends_with("-future"),
        "{future_name}"
    );
    assert!(future.dir().join("partition.metadata").exists());
    assert_eq!(m.future_logs()[0].offset_lag, end.0);

    run_until_moved(&m, &tp, &ds[1]);
    let new = m.get_log(&tp).unwrap();
    assert!(!Arc::ptr_eq(&new, &old));
    let after: Vec<Vec<u8>> = read_all_batches(&new).into_iter().map(|b| b.1).collect();
    assert_eq!(after, before, "batches byte-identical");
    assert_eq!(new.log_start_offset(), start);
    assert_eq!(new.log_end_offset(), end);
    assert_eq!(new.high_watermark(), hw);
    assert_eq!(new.latest_epoch(), Some(LeaderEpoch(3)));
    assert_eq!(
        new.producer_state_of(PID).unwrap().last_seq(),
        old.producer_state_of(PID).unwrap().last_seq()
    );
    // The old log refuses writes (retriable); the new one takes them and
    // still knows the producer (a retried batch is a duplicate).
    let mut again = batch(299 * 4, 300);
    assert!(matches!(
        old.append_as_leader(&mut again.clone(), LeaderEpoch(3)),
        Err(LogError::Closed { .. })
    ));
    assert!(
        new.append_as_leader(&mut again, LeaderEpoch(3))
            .unwrap()
            .duplicate
    );
    assert_eq!(partition_dirs(&ds[1]), vec!["t-0".to_string()]);
    let src = partition_dirs(&ds[0]);
    assert!(src.len() == 1 && src[0].ends_with("-delete"), "{src:?}");
    assert!(new.dir().join("partition.metadata").exists());
    // Checkpoints moved: d1 lists the partition, d0 no longer does.
    let rp =
        |d: &Path| std::fs::read_to_string(d.join("recovery-point-offset-checkpoint")).unwrap();
    assert!(rp(&ds[1]).contains("t 0 "), "{}", rp(&ds[1]));
    assert!(!rp(&ds[0]).contains("t 0 "), "{}", rp(&ds[0]));
    let ls = std::fs::read_to_string(ds[1].join("log-start-offset-checkpoint")).unwrap();
    assert!(ls.contains("t 0 8"), "{ls}");

    // The -delete dir goes after file.delete.delay.ms.
    clock.advance(61_000);
    m.run_background_once();
    assert!(partition_dirs(&ds[0]).is_empty());
    m.shutdown().unwrap();
    drop((m, old, new, future));
    let m = manager(&ds, &clock);
    let log = m.get_log(&tp).unwrap();
    assert_eq!(log.dir().parent(), Some(ds[1].as_path()));
    assert_eq!(log.log_start_offset(), start);
    assert_eq!(log.log_end_offset().0, end.0);
}

#[test]
fn a_partition_not_hosted_is_created_in_the_preferred_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path());
    let clock = MockClock::new(0);
    let m = manager(&ds, &clock);
    // Balanced placement would pick d0 for the first partition.
    let tp = TopicPartition::new("t", 5);
    assert_eq!(
        m.alter_log_dir(&tp, &ds[1]).unwrap(),
        LogDirMove::Remembered
    );
    let log = m
        .get_or_create_log(&tp, LogConfig::default(), None)
        .unwrap();
    assert_eq!(log.dir().parent(), Some(ds[1].as_path()));
}

#[test]
fn appends_during_the_copy_and_the_swap_are_never_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path());
    let clock = MockClock::new(1_700_000_000_000);
    let m = manager(&ds, &clock);
    m.start_background();
    let tp = TopicPartition::new("t", 0);
    fill(&m, &tp, 200, 1000);
    let first_seq = 200 * 4;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (m, tp, stop) = (m.clone(), tp.clone(), stop.clone());
        std::thread::spawn(move || {
            // (base offset, bytes as written) of every acknowledged append.
            let mut acked: Vec<(i64, Vec<u8>)> = Vec::new();
            let mut retries = 0u64;
            let mut seq = first_seq;
            while !stop.load(Ordering::Acquire) {
                let log = m.get_log(&tp).unwrap();
                let mut b = batch(seq, 1000);
                match log.append_as_leader(&mut b, LeaderEpoch(3)) {
                    Ok(info) => {
                        assert!(!info.duplicate);
                        acked.push((info.first_offset.0, b));
                        seq += 4;
                    }
                    // The log was swapped: look it up again and retry.
                    Err(LogError::Closed { .. }) => retries += 1,
                    Err(e) => panic!("append failed: {e}"),
                }
                // A producer, not a flood: the copy can catch up.
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            (acked, retries)
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(m.alter_log_dir(&tp, &ds[1]).unwrap(), LogDirMove::Started);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while m.future_log(&tp).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the move did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.store(true, Ordering::Release);
    let (acked, retries) = writer.join().unwrap();
    let log = m.get_log(&tp).unwrap();
    assert_eq!(log.dir().parent(), Some(ds[1].as_path()));
    let batches = read_all_batches(&log);
    let written: Vec<(i64, Vec<u8>)> = batches
        .into_iter()
        .filter(|(b, _)| b.base >= acked[0].0)
        .map(|(b, bytes)| (b.base, bytes))
        .collect();
    assert!(
        acked.len() > 100,
        "the writer kept writing ({})",
        acked.len()
    );
    assert_eq!(
        written.len(),
        acked.len(),
        "every acknowledged append, nothing else"
    );
    assert!(
        written == acked,
        "the new log holds exactly the acknowledged batches, in order"
    );
    eprintln!(
        "appends acknowledged: {}, retried after the swap: {retries}",
        acked.len()
    );
    m.shutdown().unwrap();
}

/// Fill, start a move and copy everything, so the next round swaps.
fn caught_up(ds: &[PathBuf], clock: &Arc<MockClock>, fs: SharedFs) -> Arc<LogManager> {
    let m = manager_with(ds, clock, fs);
    let tp = TopicPartition::new("t", 0);
    fill(&m, &tp, 12, 2000);
    m.alter_log_dir(&tp, &ds[1]).unwrap();
    let future = m.future_log(&tp).unwrap();
    let end = m.get_log(&tp).unwrap().log_end_offset();
    // A round copies from one segment at most; the round that finds the
    // copy complete swaps, so stop just before it.
    while future.log_end_offset() < end {
        m.run_log_dir_moves_once();
    }
    assert_eq!(future.log_end_offset(), end);
    m
}

#[test]
fn a_crash_at_any_step_of_the_swap_loses_nothing() {
    let tp = TopicPartition::new("t", 0);
    let clock = MockClock::new(1_700_000_000_000);
    let reference = {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path());
        let m = caught_up(&ds, &clock, StdFs::shared());
        let log = m.get_log(&tp).unwrap();
        read_all_batches(&log)
            .into_iter()
            .map(|b| b.1)
            .collect::<Vec<_>>()
    };
    let mut crashes = 0;
    for k in 0.. {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path());
        let faults = FaultFs::new();
        let m = caught_up(&ds, &clock, faults.shared());
        // kill -9 at the k-th file operation of the swap: it and every
        // later one never reach the disk.
        faults.fail_from(faults.op_count() + k, Fault::Eio);
        m.run_log_dir_moves_once();
        let crashed = !faults.injected().is_empty();
        drop(m);
        faults.disarm();
        let m = manager(&ds, &clock);
        let live: Vec<PathBuf> = ds
            .iter()
            .filter(|d| partition_dirs(d).contains(&"t-0".to_string()))
            .cloned()
            .collect();
        assert_eq!(
            live.len(),
            1,
            "crash at op {k}: one live copy, found {live:?}"
        );
        run_until_moved(&m, &tp, &ds[1]);
        let log = m.get_log(&tp).unwrap();
        let got: Vec<Vec<u8>> = read_all_batches(&log).into_iter().map(|b| b.1).collect();
        assert!(
            got == reference,
            "crash at op {k}: batches differ after recovery"
        );
        assert_eq!(log.log_start_offset(), Offset(8), "crash at op {k}");
        assert!(
            ds.iter()
                .flat_map(|d| partition_dirs(d))
                .all(|n| !n.ends_with("-future")),
            "crash at op {k}: a future dir is left"
        );
        m.shutdown().unwrap();
        if !crashed {
            break;
        }
        crashes += 1;
    }
    eprintln!("crash points in the swap: {crashes}");
    assert!(crashes >= 5, "the swap has several steps ({crashes})");
}

#[test]
fn a_move_resumes_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path());
    let clock = MockClock::new(1_700_000_000_000);
    let tp = TopicPartition::new("t", 0);
    let m = manager(&ds, &clock);
    // A round copies one segment at most.
    fill(&m, &tp, 750, 1000);
    let reference: Vec<Vec<u8>> = read_all_batches(&m.get_log(&tp).unwrap())
        .into_iter()
        .map(|b| b.1)
        .collect();
    m.alter_log_dir(&tp, &ds[1]).unwrap();
    m.run_log_dir_moves_once();
    let copied = m.future_log(&tp).unwrap().log_end_offset();
    assert!(copied > Offset(8) && copied < m.get_log(&tp).unwrap().log_end_offset());
    m.shutdown().unwrap();
    drop(m);
    let m = manager(&ds, &clock);
    let future = m.future_log(&tp).expect("the future log is found again");
    assert_eq!(future.log_end_offset(), copied);
    assert_eq!(
        m.get_log(&tp).unwrap().dir().parent(),
        Some(ds[0].as_path())
    );
    drop(future);
    run_until_moved(&m, &tp, &ds[1]);
    let got: Vec<Vec<u8>> = read_all_batches(&m.get_log(&tp).unwrap())
        .into_iter()
        .map(|b| b.1)
        .collect();
    assert!(got == reference);
}

#[test]
fn deleting_a_partition_cancels_its_move() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path());
    let clock = MockClock::new(1_700_000_000_000);
    let tp = TopicPartition::new("t", 0);
    let m = manager(&ds, &clock);
    fill(&m, &tp, 20, 100);
    m.alter_log_dir(&tp, &ds[1]).unwrap();
    m.async_delete(&tp).unwrap();
    assert!(m.future_log(&tp).is_none());
    for d in &ds {
        assert!(
            partition_dirs(d).iter().all(|n| n.ends_with("-delete")),
            "{:?}",
            partition_dirs(d)
        );
    }
    m.shutdown().unwrap();
    drop(m);
    let m = manager(&ds, &clock);
    assert!(
        m.get_log(&tp).is_none(),
        "a cancelled future is not promoted"
    );
}
