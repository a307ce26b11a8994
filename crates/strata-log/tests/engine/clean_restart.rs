//! Guards start-up time with many partitions: after a clean shutdown, loading a partition
//! writes nothing to it (no checkpoint rewritten, no fsync, no rename) and maps none of its
//! indexes, and a clean close of a partition that did not change writes no leader-epoch
//! checkpoint. Each of these once cost every partition a few fsyncs or a mapping, which made a
//! clean start of 10,000 partitions take over 10 s instead of about one.

use std::path::Path;

use crate::common::*;
use strata_log::fs::{FaultFs, FsOp, StdFs};
use strata_log::{LeaderEpoch, LogConfig, LogManager, LogManagerConfig, MockClock, TopicPartition};

const T0: i64 = 1_700_000_000_000;
const PARTITIONS: i32 = 12;

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 0,
        segment_bytes: 4096,
        ..LogConfig::default()
    }
}

/// The seam operations on files inside partition directories that change what is on disk.
fn partition_writes(faults: &FaultFs, root: &Path) -> Vec<(FsOp, String)> {
    faults
        .ops()
        .into_iter()
        // Opening (for reads, or a create of a file that exists) changes nothing.
        .filter(|r| !matches!(r.op, FsOp::Open(_) | FsOp::CreateDirAll))
        .filter(|r| r.path.parent().is_some_and(|p| p.parent() == Some(root)))
        .map(|r| (r.op, r.path.display().to_string()))
        .collect()
}

#[test]
fn a_clean_restart_writes_nothing_to_its_partitions_and_maps_no_index() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let mut cfg = LogManagerConfig::new(vec![root.path().to_path_buf()]);
    cfg.default_config = config();
    let mgr = LogManager::open(cfg.clone(), clock.clone()).unwrap();
    let mut acked = Vec::new();
    for p in 0..PARTITIONS {
        let log = mgr
            .get_or_create_log(&TopicPartition::new("t", p), config(), None)
            .unwrap();
        // Partition p gets p batches: empty logs, one segment, several segments.
        for i in 0..p {
            let mut b = client_batch(2, T0 + i64::from(i), 900);
            log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
        }
        log.update_high_watermark(log.log_end_offset());
    }
    for p in 0..PARTITIONS {
        acked.push(read_all_batches(
            &mgr.get_log(&TopicPartition::new("t", p)).unwrap(),
        ));
    }
    mgr.shutdown().unwrap();
    drop(mgr);

    let faults = FaultFs::new();
    cfg.fs = faults.shared();
    let mgr = LogManager::open(cfg.clone(), clock.clone()).unwrap();
    let writes = partition_writes(&faults, root.path());
    assert!(
        writes.is_empty(),
        "a clean load wrote to partitions: {writes:?}"
    );
    let index_opens: Vec<_> = faults
        .ops()
        .into_iter()
        .filter(|r| matches!(r.op, FsOp::Open(_)))
        .filter(|r| {
            r.path
                .extension()
                .is_some_and(|e| e == "index" || e == "timeindex")
        })
        .map(|r| r.path)
        .collect();
    assert!(
        index_opens.is_empty(),
        "a clean load opened indexes: {index_opens:?}"
    );

    // Everything reads back, and a close of unchanged logs rewrites no epoch checkpoint.
    for p in 0..PARTITIONS {
        let got = read_all_batches(&mgr.get_log(&TopicPartition::new("t", p)).unwrap());
        assert_eq!(got, acked[p as usize], "partition {p}");
    }
    let before = faults.ops().len();
    mgr.shutdown().unwrap();
    let epoch_writes: Vec<_> = faults.ops()[before..]
        .iter()
        .filter(|r| r.op.mutates() && r.path.to_string_lossy().contains("leader-epoch-checkpoint"))
        .map(|r| (r.op, r.path.clone()))
        .collect();
    assert!(
        epoch_writes.is_empty(),
        "unchanged epoch checkpoints rewritten: {epoch_writes:?}"
    );
    drop(mgr);

    // And the files are still what a later open needs.
    cfg.fs = StdFs::shared();
    let mgr = LogManager::open(cfg, clock).unwrap();
    for p in 0..PARTITIONS {
        let log = mgr.get_log(&TopicPartition::new("t", p)).unwrap();
        assert_eq!(
            read_all_batches(&log),
            acked[p as usize],
            "partition {p} after reopen"
        );
        assert_eq!(
            log.latest_epoch(),
            (p > 0).then_some(LeaderEpoch(0)),
            "partition {p}"
        );
    }
    mgr.shutdown().unwrap();
}
