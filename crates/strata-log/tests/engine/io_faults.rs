//! Guards the engine's fail-stop rule against injected I/O errors: an EIO,
//! ENOSPC or short write on a segment append, an index block reservation,
//! the creation of a rolled segment, a checkpoint or a producer snapshot
//! fails the call with an error naming the file and the operation, takes
//! the log directory offline, and damages nothing acknowledged before it —
//! a restart on the plain file system recovers and reads every acknowledged
//! batch back byte for byte.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use strata_log::fs::{Fault, FaultFs, FsOp, OpenMode, SharedFs};
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, LogError, LogManager, LogManagerConfig,
    MockClock, TopicPartition,
};

const T0: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        // An offset-index entry for every batch after the first of a segment.
        index_interval_bytes: 0,
        segment_bytes: 4096,
        ..LogConfig::default()
    }
}

fn open_on(root: &Path, fs: SharedFs, clock: &Arc<MockClock>) -> Arc<Log> {
    Log::open(
        &root.join("t-0"),
        config(),
        LoadParams {
            fs,
            ..LoadParams::default()
        },
        clock.clone(),
        DirHealth::new(root),
    )
    .unwrap()
}

/// Append `n` acknowledged batches.
fn append_n(log: &Log, n: usize) {
    for i in 0..n {
        let mut b = client_batch(2, T0 + i as i64, 100);
        log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    }
}

/// The OS error code at the bottom of `e`'s source chain.
fn os_error(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(code) = io.raw_os_error() {
                return Some(code);
            }
        }
        cur = err.source();
    }
    None
}

fn expected_code(fault: Fault) -> i32 {
    match fault {
        Fault::Eio => libc::EIO,
        Fault::Enospc | Fault::ShortWrite => libc::ENOSPC,
    }
}

/// What must hold after the failed call: the directory is offline, later
/// appends are refused, and a restart on the plain file system recovers
/// every batch of `acked` byte for byte (plus at most the one batch whose
/// append failed after its bytes were written whole).
fn check_offline_then_recovered(root: &Path, log: Arc<Log>, acked: Vec<(RawBatch, Vec<u8>)>) {
    assert!(!log.dir_health().is_online(), "the dir goes offline");
    let mut b = client_batch(1, T0, 10);
    assert!(
        matches!(
            log.append_as_leader(&mut b, LeaderEpoch(0)),
            Err(LogError::DirOffline { .. })
        ),
        "an offline dir refuses appends"
    );
    drop(log);
    let clock = MockClock::new(T0 + 1_000);
    let log = open_on(root, strata_log::fs::StdFs::shared(), &clock);
    let got = read_all_batches(&log);
    assert!(
        got.len() == acked.len() || got.len() == acked.len() + 1,
        "{} batches after recovery, {} acknowledged",
        got.len(),
        acked.len()
    );
    for (i, ((_, want), (_, have))) in acked.iter().zip(&got).enumerate() {
        assert_eq!(want, have, "batch {i} changed");
    }
    // The recovered log takes appends again.
    let mut b = client_batch(1, T0 + 2_000, 10);
    log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
}

#[test]
fn a_failed_segment_write_is_an_error_and_loses_nothing() {
    for fault in [Fault::Eio, Fault::Enospc, Fault::ShortWrite] {
        let root = tempfile::tempdir().unwrap();
        let clock = MockClock::new(T0);
        let faults = FaultFs::new();
        let log = open_on(root.path(), faults.shared(), &clock);
        append_n(&log, 10);
        let acked = read_all_batches(&log);
        faults.fail_next(fault, |op, p| {
            op == FsOp::WriteAt && p.extension().is_some_and(|e| e == "log")
        });
        let mut b = client_batch(3, T0 + 100, 100);
        let err = log
            .append_as_leader(&mut b, LeaderEpoch(0))
            .expect_err("the injected fault fails the append");
        match &err {
            LogError::Io { path, op, source } => {
                assert!(
                    path.extension().is_some_and(|e| e == "log"),
                    "{fault:?}: {err}"
                );
                assert_eq!(*op, "append");
                assert_eq!(source.raw_os_error(), Some(expected_code(fault)));
            }
            other => panic!("{fault:?}: {other:?}"),
        }
        assert_eq!(faults.injected().len(), 1);
        check_offline_then_recovered(root.path(), log, acked);
    }
}

#[test]
fn a_failed_index_reservation_is_an_error_and_loses_nothing() {
    for fault in [Fault::Eio, Fault::Enospc] {
        let root = tempfile::tempdir().unwrap();
        let clock = MockClock::new(T0);
        let faults = FaultFs::new();
        let log = open_on(root.path(), faults.shared(), &clock);
        append_n(&log, 3);
        log.roll().unwrap();
        // The new segment's first batch adds no entry; the second reserves
        // the index's first blocks.
        append_n(&log, 1);
        let acked = read_all_batches(&log);
        faults.fail_next(fault, |op, p| {
            op == FsOp::Allocate && p.extension().is_some_and(|e| e == "index")
        });
        let mut b = client_batch(1, T0 + 100, 100);
        let err = log
            .append_as_leader(&mut b, LeaderEpoch(0))
            .expect_err("the injected fault fails the append");
        match &err {
            LogError::Index {
                source: strata_log::IndexError::Io { path, op, source },
            } => {
                assert!(path.extension().is_some_and(|e| e == "index"), "{err}");
                assert_eq!(*op, strata_log::IndexOp::Reserve);
                assert_eq!(source.raw_os_error(), Some(expected_code(fault)));
            }
            other => panic!("{fault:?}: {other:?}"),
        }
        check_offline_then_recovered(root.path(), log, acked);
    }
}

#[test]
fn a_failed_segment_creation_on_roll_is_an_error_and_loses_nothing() {
    for fault in [Fault::Eio, Fault::Enospc] {
        let root = tempfile::tempdir().unwrap();
        let clock = MockClock::new(T0);
        let faults = FaultFs::new();
        let log = open_on(root.path(), faults.shared(), &clock);
        append_n(&log, 3);
        faults.fail_next(fault, |op, p| {
            op == FsOp::Open(OpenMode::CreateTruncate) && p.extension().is_some_and(|e| e == "log")
        });
        // Appends until the 4 KiB segment rolls; the roll's new segment fails.
        let mut acked = read_all_batches(&log);
        let err = loop {
            let mut b = client_batch(2, T0 + 50, 100);
            match log.append_as_leader(&mut b, LeaderEpoch(0)) {
                Ok(_) => acked = read_all_batches(&log),
                Err(e) => break e,
            }
        };
        assert_eq!(log.segments().len(), 1, "no roll happened");
        match &err {
            LogError::Io { path, op, source } => {
                assert!(path.extension().is_some_and(|e| e == "log"), "{err}");
                assert_eq!(*op, "create segment");
                assert_eq!(source.raw_os_error(), Some(expected_code(fault)));
            }
            other => panic!("{fault:?}: {other:?}"),
        }
        check_offline_then_recovered(root.path(), log, acked);
    }
}

#[test]
fn a_failed_producer_snapshot_is_an_error_and_loses_nothing() {
    for fault in [Fault::Eio, Fault::Enospc, Fault::ShortWrite] {
        let root = tempfile::tempdir().unwrap();
        let clock = MockClock::new(T0);
        let faults = FaultFs::new();
        let log = open_on(root.path(), faults.shared(), &clock);
        append_n(&log, 5);
        let acked = read_all_batches(&log);
        faults.fail_next(fault, |op, p| {
            op == FsOp::WriteAt && p.extension().is_some_and(|e| e == "snapshot")
        });
        // A roll writes the producer snapshot at the new base.
        let err = log.roll().expect_err("the snapshot write fails the roll");
        match &err {
            LogError::Io { path, source, .. } => {
                assert!(path.extension().is_some_and(|e| e == "snapshot"), "{err}");
                assert_eq!(source.raw_os_error(), Some(expected_code(fault)));
            }
            other => panic!("{fault:?}: {other:?}"),
        }
        check_offline_then_recovered(root.path(), log, acked);
    }
}

#[test]
fn a_failed_leader_epoch_checkpoint_is_an_error_and_loses_nothing() {
    for fault in [Fault::Eio, Fault::Enospc, Fault::ShortWrite] {
        let root = tempfile::tempdir().unwrap();
        let clock = MockClock::new(T0);
        let faults = FaultFs::new();
        let log = open_on(root.path(), faults.shared(), &clock);
        append_n(&log, 5);
        let acked = read_all_batches(&log);
        faults.fail_next(fault, |op, p| {
            op == FsOp::WriteAt && p.to_string_lossy().contains("leader-epoch-checkpoint")
        });
        // A new leader epoch rewrites the checkpoint before the write.
        let mut b = client_batch(1, T0 + 100, 10);
        let err = log
            .append_as_leader(&mut b, LeaderEpoch(1))
            .expect_err("the checkpoint write fails the append");
        match &err {
            LogError::Checkpoint { path, source } => {
                assert!(
                    path.to_string_lossy().contains("leader-epoch-checkpoint"),
                    "{err}"
                );
                assert_eq!(os_error(source.as_ref()), Some(expected_code(fault)));
            }
            other => panic!("{fault:?}: {other:?}"),
        }
        check_offline_then_recovered(root.path(), log, acked);
    }
}

#[test]
fn a_failed_recovery_point_checkpoint_takes_only_its_dir_offline() {
    for fault in [Fault::Eio, Fault::Enospc, Fault::ShortWrite] {
        let root = tempfile::tempdir().unwrap();
        let (d1, d2) = (root.path().join("d1"), root.path().join("d2"));
        let faults = FaultFs::new();
        let clock = MockClock::new(T0);
        let mut cfg = LogManagerConfig::new(vec![d1.clone(), d2.clone()]);
        cfg.default_config = config();
        cfg.fs = faults.shared();
        let mgr = LogManager::open(cfg.clone(), clock.clone()).unwrap();
        let (a, b) = (TopicPartition::new("a", 0), TopicPartition::new("b", 0));
        let la = mgr.get_or_create_log(&a, config(), None).unwrap();
        let lb = mgr.get_or_create_log(&b, config(), None).unwrap();
        assert_ne!(la.dir(), lb.dir(), "one partition per dir");
        append_n(&la, 4);
        append_n(&lb, 4);
        let (acked_a, acked_b) = (read_all_batches(&la), read_all_batches(&lb));
        let bad = la.dir().parent().unwrap().to_path_buf();
        let bad_file = bad.join("recovery-point-offset-checkpoint.tmp");
        faults.fail_next(fault, move |op, p| op == FsOp::WriteAt && p == bad_file);
        let err = mgr
            .checkpoint_all()
            .expect_err("the checkpoint write fails");
        match &err {
            LogError::Checkpoint { path, source } => {
                assert_eq!(path, &bad.join("recovery-point-offset-checkpoint"));
                assert_eq!(os_error(source.as_ref()), Some(expected_code(fault)));
            }
            other => panic!("{fault:?}: {other:?}"),
        }
        assert_eq!(mgr.offline_dirs(), vec![bad.clone()]);
        assert!(!la.dir_health().is_online() && lb.dir_health().is_online());
        // The healthy dir keeps serving.
        append_n(&lb, 1);
        let acked_b_more = read_all_batches(&lb);
        assert_eq!(acked_b_more.len(), acked_b.len() + 1);
        mgr.shutdown().unwrap();
        drop((la, lb, mgr));
        // Restart on the plain file system: everything acknowledged is there.
        cfg.fs = strata_log::fs::StdFs::shared();
        let mgr = LogManager::open(cfg, clock.clone()).unwrap();
        assert!(mgr.offline_dirs().is_empty());
        let got_a = read_all_batches(&mgr.get_log(&a).unwrap());
        let got_b = read_all_batches(&mgr.get_log(&b).unwrap());
        assert_eq!(
            got_a.iter().map(|b| &b.1).collect::<Vec<_>>(),
            acked_a.iter().map(|b| &b.1).collect::<Vec<_>>()
        );
        assert_eq!(
            got_b.iter().map(|b| &b.1).collect::<Vec<_>>(),
            acked_b_more.iter().map(|b| &b.1).collect::<Vec<_>>()
        );
        mgr.shutdown().unwrap();
    }
}
