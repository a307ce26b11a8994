//! READ_COMMITTED reads from the remote tier report the same aborted
//! transactions as the same reads did from the local log (transactions.md
//! §7.1, tiered-storage.md §8): the remote `.txnindex` comes back through
//! the index cache, a segment uploaded without one reads as empty, and the
//! lookup continues from the remote indexes into the local ones.

use std::sync::Arc;

use strata_log::batch::{build_end_txn_marker, BatchBuilder, EndTransactionMarker};
use strata_log::{
    AbortedTxn, LeaderEpoch, Log, LogConfig, LogManager, LogManagerConfig, MockClock, Offset,
    ProducerEpoch, ProducerId, ReadBound, SharedClock, Timestamp, TopicPartition,
};
use strata_tiered::config::{build_rsm, StorageLocation};
use strata_tiered::rlmm::topic::LogManagerMetadataLog;
use strata_tiered::rlmm::TopicRlmm;
use strata_tiered::{Bridge, RemoteLogManager, TieredConfig};
use uuid::Uuid;

const TOPIC_ID: Uuid = Uuid::from_u64_pair(0x7a, 0x11);

fn tiered_config() -> TieredConfig {
    let mut c = TieredConfig::from_broker_properties(
        &Default::default(),
        std::path::Path::new("/unused/logs"),
    )
    .unwrap();
    c.enabled = true;
    c.metadata_partitions = 3;
    c.reader_threads = 1;
    c.copier_threads = 1;
    c.expiration_threads = 1;
    c
}

struct Writer {
    log: Arc<Log>,
    seqs: std::collections::HashMap<i64, i32>,
}

impl Writer {
    fn data(&mut self, pid: i64, n: usize) {
        let seq = self.seqs.entry(pid).or_insert(0);
        let mut b = BatchBuilder::new(Offset(0))
            .producer(ProducerId(pid), ProducerEpoch(0), *seq)
            .transactional(true);
        for i in 0..n {
            b.append(
                Timestamp(1_000 + i as i64),
                Some(b"k"),
                Some(&[b'v'; 60]),
                &[],
            );
        }
        *seq += n as i32;
        let mut bytes = b.build();
        self.log
            .append_as_leader(&mut bytes, LeaderEpoch(0))
            .unwrap();
        self.log.update_high_watermark(self.log.log_end_offset());
    }

    fn end(&mut self, pid: i64, commit: bool) {
        let m = if commit {
            EndTransactionMarker::commit(0)
        } else {
            EndTransactionMarker::abort(0)
        };
        let mut bytes = build_end_txn_marker(
            Offset(0),
            LeaderEpoch(0),
            ProducerId(pid),
            ProducerEpoch(0),
            Timestamp(2_000),
            m,
        );
        self.log
            .append_as_coordinator(&mut bytes, LeaderEpoch(0))
            .unwrap();
        self.log.update_high_watermark(self.log.log_end_offset());
    }
}

/// A local READ_COMMITTED read: (bytes returned, aborted list).
fn local_read(log: &Log, from: Offset) -> (usize, Vec<AbortedTxn>) {
    let data = log
        .read(
            from,
            1 << 20,
            ReadBound::Offset(log.last_stable_offset()),
            true,
        )
        .unwrap();
    let len = data.total_len() as usize;
    let aborted = log
        .collect_aborted_transactions(from, data.aborted_upper_bound)
        .unwrap();
    (len, aborted)
}

#[test]
fn remote_reads_report_the_aborted_transactions_a_local_read_did() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let clock = MockClock::new(1_000_000);
    let shared: SharedClock = clock.clone();
    let logs = LogManager::open(LogManagerConfig::new(vec![root.join("logs")]), shared).unwrap();
    let tp = TopicPartition::new("txn-tiered", 0);
    let config = LogConfig {
        segment_bytes: 1024,
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let log = logs.get_or_create_log(&tp, config, Some(TOPIC_ID)).unwrap();
    let mut w = Writer {
        log: Arc::clone(&log),
        seqs: Default::default(),
    };
    // Two producers interleave; some transactions abort, some span
    // segments, some segments have no abort at all.
    for round in 0..8 {
        w.data(1, 3);
        w.data(2, 2);
        w.data(1, 3);
        w.end(1, round % 2 == 1);
        w.data(3, 1);
        w.end(3, true);
        w.data(2, 2);
        w.end(2, round % 3 == 0);
    }
    w.data(4, 1);
    w.end(4, true);
    let segments = log.segments();
    assert!(segments.len() >= 6, "{} segments", segments.len());
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
    let sealed_end = segments.last().unwrap().base_offset;

    // Every batch start below the active segment, read locally first.
    let mut starts = Vec::new();
    let mut next = Offset(0);
    while next < sealed_end {
        starts.push(next);
        let bytes = log
            .read(next, 200, ReadBound::LogEnd, true)
            .unwrap()
            .read_to_vec()
            .unwrap();
        let view = strata_log::batch::BatchView::parse(&bytes).unwrap();
        next = view.last_offset().plus(1);
    }
    let local: Vec<_> = starts.iter().map(|&o| local_read(&log, o)).collect();
    assert!(
        local.iter().any(|(_, a)| a.len() >= 2),
        "some reads see two aborted transactions"
    );
    assert!(local.iter().any(|(_, a)| a.is_empty()));

    let location = StorageLocation::Local {
        dir: root.join("remote"),
    };
    let rsm = Arc::new(build_rsm(&location, Arc::new(Bridge::new(1).unwrap())).unwrap());
    let meta = Arc::new(LogManagerMetadataLog::open(Arc::clone(&logs), 3).unwrap());
    let (rlmm, _) = TopicRlmm::open(meta, clock.clone()).unwrap();
    let rlm = RemoteLogManager::new(
        tiered_config(),
        0,
        &root.join("logs"),
        rsm,
        Arc::new(rlmm),
        clock.clone(),
    )
    .unwrap();
    rlm.register(Arc::clone(&log), TOPIC_ID);
    assert_eq!(rlm.copy_once(&tp).unwrap(), segments.len() - 1);
    // Only the segments with entries uploaded a `.txnindex`; the others
    // read back as empty.
    let uploaded = walk(&root.join("remote"))
        .into_iter()
        .filter(|p| p.ends_with(".txnindex"))
        .count();
    let with_entries = segments[..segments.len() - 1]
        .iter()
        .filter(|s| {
            std::fs::metadata(log.dir().join(format!("{:020}.txnindex", s.base_offset.0)))
                .unwrap()
                .len()
                > 0
        })
        .count();
    assert_eq!(uploaded, with_entries);
    assert!(with_entries > 0 && with_entries < segments.len() - 1);

    // Local retention drops every copied segment: reads below the active
    // segment now come from the remote tier.
    log.update_config(LogConfig {
        local_retention_bytes: 1,
        ..log.config()
    });
    log.delete_old_segments().unwrap();
    assert_eq!(log.local_log_start_offset(), sealed_end);
    for (&from, (len, aborted)) in starts.iter().zip(&local) {
        let r = rlm.read_remote(&tp, from, 1 << 20, true).unwrap();
        assert_eq!(r.records.len(), *len, "bytes at {from:?}");
        let remote = rlm
            .collect_aborted_transactions(&log, from, r.aborted_upper_bound)
            .unwrap();
        assert_eq!(&remote, aborted, "aborted list at {from:?}");
    }
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.to_string_lossy().into_owned());
        }
    }
    out
}
