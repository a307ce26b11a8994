//! The remote log manager on a real partition log: copies only sealed
//! segments below the LSO, serves byte-identical reads and timestamp
//! lookups from the remote tier, survives a restart (catalogue rebuilt from
//! `__remote_log_metadata`), expires by total retention, cleans up
//! abandoned copies, and recovers from a store failure mid-copy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use strata_log::batch::BatchBuilder;
use strata_log::{
    LeaderEpoch, Log, LogConfig, LogManager, LogManagerConfig, MockClock, Offset, ReadBound,
    SharedClock, Timestamp, TopicPartition,
};
use strata_tiered::config::{build_rsm, StorageLocation};
use strata_tiered::metadata::RemoteLogSegmentId;
use strata_tiered::rlmm::topic::LogManagerMetadataLog;
use strata_tiered::rlmm::TopicRlmm;
use strata_tiered::rsm::RemoteObject;
use strata_tiered::{
    Bridge, IndexType, LogSegmentData, RemoteLogManager, RemoteLogSegmentMetadata,
    RemoteLogSegmentState, RemoteStorageError, RemoteStorageManager, ReplicaRole, TieredConfig,
    TieredError, TopicIdPartition,
};
use uuid::Uuid;

const TOPIC_ID: Uuid = Uuid::from_u64_pair(0xabc, 0xdef);

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    logs: Arc<LogManager>,
    log: Arc<Log>,
    clock: Arc<MockClock>,
    tp: TopicPartition,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let clock = MockClock::new(1_000_000);
    let shared: SharedClock = clock.clone();
    let logs = LogManager::open(LogManagerConfig::new(vec![root.join("logs")]), shared).unwrap();
    let tp = TopicPartition::new("tiered", 0);
    let config = LogConfig {
        segment_bytes: 2048,
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let log = logs.get_or_create_log(&tp, config, Some(TOPIC_ID)).unwrap();
    Fixture {
        _dir: dir,
        root,
        logs,
        log,
        clock,
        tp,
    }
}

/// Append `n` single-record batches with timestamps 1000 + 10·i.
fn produce(f: &Fixture, n: usize) {
    for i in 0..n {
        let mut b = BatchBuilder::new(Offset(0));
        let value = format!("value-{i:05}-{}", "x".repeat(100));
        b.append(
            Timestamp(1000 + 10 * i as i64),
            Some(format!("k{i}").as_bytes()),
            Some(value.as_bytes()),
            &[],
        );
        let mut bytes = b.build();
        f.log.append_as_leader(&mut bytes, LeaderEpoch(0)).unwrap();
        f.log.update_high_watermark(f.log.log_end_offset());
    }
}

fn tiered_config() -> TieredConfig {
    let mut c = TieredConfig::from_broker_properties(
        &Default::default(),
        std::path::Path::new("/unused/logs"),
    )
    .unwrap();
    c.enabled = true;
    c.metadata_partitions = 3;
    c.reader_threads = 2;
    c.copier_threads = 2;
    c.expiration_threads = 1;
    c
}

fn manager_with(f: &Fixture, rsm: Arc<dyn RemoteStorageManager>) -> Arc<RemoteLogManager> {
    let meta = Arc::new(LogManagerMetadataLog::open(Arc::clone(&f.logs), 3).unwrap());
    let (rlmm, _) = TopicRlmm::open(meta, f.clock.clone()).unwrap();
    let rlm = RemoteLogManager::new(
        tiered_config(),
        0,
        &f.root.join("logs"),
        rsm,
        Arc::new(rlmm),
        f.clock.clone(),
    )
    .unwrap();
    rlm.register(Arc::clone(&f.log), TOPIC_ID);
    rlm
}

fn local_rsm(f: &Fixture) -> Arc<dyn RemoteStorageManager> {
    let location = StorageLocation::Local {
        dir: f.root.join("remote"),
    };
    Arc::new(build_rsm(&location, Arc::new(Bridge::new(1).unwrap())).unwrap())
}

/// Every local batch from `from` to the high watermark (reads stop at a
/// segment end, so loop).
fn local_batches(log: &Log, from: Offset) -> Vec<(i64, Vec<u8>)> {
    let mut out: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut next = from;
    while next < log.high_watermark() {
        let bytes = log
            .read(next, 1 << 20, ReadBound::HighWatermark, true)
            .unwrap()
            .read_to_vec()
            .unwrap();
        let got = batches(&bytes);
        next = Offset(got.last().unwrap().0 + 1);
        out.extend(got);
    }
    out
}

/// Split a byte run into batches: (base offset, bytes).
fn batches(bytes: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let base = i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize + 12;
        if at + len > bytes.len() {
            break;
        }
        out.push((base, bytes[at..at + len].to_vec()));
        at += len;
    }
    out
}

#[test]
fn copy_read_list_offsets_and_restart() {
    let f = fixture();
    produce(&f, 120);
    let segments = f.log.segments();
    assert!(
        segments.len() >= 5,
        "small segment.bytes must roll: {}",
        segments.len()
    );
    let local = local_batches(&f.log, Offset(0));
    let rlm = manager_with(&f, local_rsm(&f));
    assert!(!rlm.may_delete_locally(&f.tp, segments[1].base_offset));
    // Before anything is copied, local retention deletes nothing.
    f.log.update_config(LogConfig {
        local_retention_bytes: 1,
        ..f.log.config()
    });
    f.log.delete_old_segments().unwrap();
    assert_eq!(f.log.segments().len(), segments.len());

    f.log.update_config(LogConfig {
        remote_log_copy_disable: true,
        ..f.log.config()
    });
    assert_eq!(
        rlm.copy_once(&f.tp).unwrap(),
        0,
        "remote.log.copy.disable stops copying"
    );
    f.log.update_config(LogConfig {
        remote_log_copy_disable: false,
        ..f.log.config()
    });
    let copied = rlm.copy_once(&f.tp).unwrap();
    assert_eq!(
        copied,
        segments.len() - 1,
        "every sealed segment, never the active one"
    );
    let last_sealed_end = segments.last().unwrap().base_offset.0 - 1;
    assert_eq!(
        rlm.highest_offset_in_remote_storage(&f.tp),
        Some(Offset(last_sealed_end))
    );
    assert!(rlm.may_delete_locally(&f.tp, segments[segments.len() - 1].base_offset));
    assert!(!rlm.may_delete_locally(&f.tp, Offset(last_sealed_end + 2)));
    assert_eq!(rlm.copy_once(&f.tp).unwrap(), 0, "nothing new to copy");

    // Local retention (local.retention.bytes=1) drops exactly the copied
    // segments; the active one stays. Reads below it now go remote.
    let before_local = f.log.segments().len();
    f.log.update_config(LogConfig {
        local_retention_bytes: 1,
        ..f.log.config()
    });
    f.log.delete_old_segments().unwrap();
    assert_eq!(
        f.log.segments().len(),
        1,
        "{before_local} segments, all but the active one copied"
    );
    // Only the local start moved (Kafka `localLogStartOffset`); the
    // partition's start still covers the remote tier.
    assert_eq!(f.log.local_log_start_offset(), Offset(last_sealed_end + 1));
    assert_eq!(f.log.log_start_offset(), Offset(0));
    assert_eq!(
        rlm.log_start_offset(&f.tp),
        Some(Offset(0)),
        "earliest offset spans both tiers"
    );

    // Every batch read remotely is byte-identical to the local one.
    let mut next = Offset(0);
    let mut remote = Vec::new();
    while next.0 <= last_sealed_end {
        let r = rlm.read_remote(&f.tp, next, 700, true).unwrap();
        let got = batches(&r.records);
        assert!(!got.is_empty(), "read at {next:?} returned nothing");
        assert!(r.records.len() <= 700 || got.len() == 1, "budget respected");
        next = Offset(got.last().unwrap().0 + 1);
        remote.extend(got);
    }
    assert_eq!(remote, local[..remote.len()].to_vec());
    // A read from the middle of a segment starts at the batch holding it.
    let mid = rlm.read_remote(&f.tp, Offset(37), 10_000, false).unwrap();
    assert_eq!(batches(&mid.records)[0], local[37]);
    // A budget below one batch without min_one_message: empty.
    assert!(rlm
        .read_remote(&f.tp, Offset(3), 10, false)
        .unwrap()
        .records
        .is_empty());
    assert!(matches!(
        rlm.read_remote(&f.tp, Offset(last_sealed_end + 1), 100, true),
        Err(TieredError::OffsetOutOfRange { .. })
    ));

    // ListOffsets by timestamp, served from the remote tier.
    for ts in [0, 1000, 1005, 1330, 1000 + 10 * last_sealed_end] {
        let remote = rlm
            .offset_for_timestamp(&f.tp, Timestamp(ts))
            .unwrap()
            .unwrap();
        // Record i has timestamp 1000 + 10·i: the first at or after ts.
        let want = ((ts - 1000).max(0) + 9) / 10;
        assert_eq!(
            (remote.offset, remote.timestamp),
            (Offset(want), Timestamp(1000 + 10 * want)),
            "ts {ts}"
        );
    }
    assert_eq!(
        rlm.offset_for_timestamp(&f.tp, Timestamp(1_000_000))
            .unwrap(),
        None
    );
    assert_eq!(rlm.log_start_offset(&f.tp), Some(Offset(0)));
    let counters: std::collections::HashMap<_, _> = rlm.metrics().snapshot().into_iter().collect();
    assert_eq!(counters["RemoteCopyRequestsPerSec"], copied as u64);
    assert!(counters["RemoteFetchBytesPerSec"] > 0);

    // Restart: the catalogue comes back from __remote_log_metadata.
    let before = rlm
        .rlmm()
        .list_remote_log_segments(&TopicIdPartition::new(TOPIC_ID, f.tp.clone()))
        .unwrap();
    rlm.shutdown();
    drop(rlm);
    let rlm = manager_with(&f, local_rsm(&f));
    let after = rlm
        .rlmm()
        .list_remote_log_segments(&TopicIdPartition::new(TOPIC_ID, f.tp.clone()))
        .unwrap();
    assert_eq!(before, after);
    assert_eq!(
        rlm.highest_offset_in_remote_storage(&f.tp),
        Some(Offset(last_sealed_end))
    );
    assert_eq!(
        batches(&rlm.read_remote(&f.tp, Offset(0), 1, true).unwrap().records)[0],
        local[0]
    );
}

#[test]
fn expiration_applies_total_retention_and_cleans_abandoned_copies() {
    let f = fixture();
    produce(&f, 80);
    let rlm = manager_with(&f, local_rsm(&f));
    let copied = rlm.copy_once(&f.tp).unwrap();
    assert!(copied >= 3);
    let tip = TopicIdPartition::new(TOPIC_ID, f.tp.clone());

    // A crash between COPY_SEGMENT_STARTED and FINISHED leaves this behind.
    let abandoned = RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId::generate(tip.clone()),
        start_offset: Offset(0),
        end_offset: Offset(5),
        max_timestamp: Timestamp(1000),
        broker_id: 0,
        event_timestamp_ms: 0,
        segment_leader_epochs: [(LeaderEpoch(0), Offset(0))].into(),
        segment_size_in_bytes: 10,
        custom_metadata: None,
        state: RemoteLogSegmentState::CopySegmentStarted,
    };
    rlm.rlmm()
        .add_remote_log_segment_metadata(abandoned.clone())
        .unwrap();
    assert_eq!(
        rlm.expire_once(&f.tp).unwrap(),
        1,
        "unlimited retention: only the abandoned copy goes"
    );
    let listed = rlm.rlmm().list_remote_log_segments(&tip).unwrap();
    assert_eq!(listed.len(), copied);
    assert!(listed
        .iter()
        .all(|m| m.segment_id.id != abandoned.segment_id.id));

    // retention.ms: everything with max timestamp <= now - retention goes.
    let first = listed[0].clone();
    let cfg = LogConfig {
        retention_ms: 1_000_000 - first.max_timestamp.0,
        ..f.log.config()
    };
    f.log.update_config(cfg);
    assert_eq!(rlm.expire_once(&f.tp).unwrap(), 1);
    assert_eq!(rlm.log_start_offset(&f.tp), Some(first.end_offset.plus(1)));
    assert!(matches!(
        rlm.read_remote(&f.tp, Offset(0), 100, true),
        Err(TieredError::OffsetOutOfRange { .. })
    ));
    let objects = rlm.rsm().list_objects().unwrap();
    assert!(objects.iter().all(|o| !o
        .key
        .contains(&strata_tiered::metadata::uuid_base64(first.segment_id.id))));

    // retention.bytes over local-only + remote bytes.
    let cfg = LogConfig {
        retention_ms: -1,
        retention_bytes: 1,
        ..f.log.config()
    };
    f.log.update_config(cfg);
    let deleted = rlm.expire_once(&f.tp).unwrap();
    assert_eq!(
        deleted,
        copied - 1,
        "all remaining remote segments breach 1 byte"
    );
    assert!(rlm
        .rlmm()
        .list_remote_log_segments(&tip)
        .unwrap()
        .is_empty());
    assert_eq!(
        rlm.metrics()
            .snapshot()
            .into_iter()
            .find(|(n, _)| *n == "RemoteDeleteRequestsPerSec")
            .unwrap()
            .1,
        copied as u64 + 1
    );
}

/// A plug-in that fails `copy` while `failures` > 0, delegating otherwise.
#[derive(Debug)]
struct Flaky {
    inner: Arc<dyn RemoteStorageManager>,
    failures: AtomicUsize,
}

impl RemoteStorageManager for Flaky {
    fn copy_log_segment_data(
        &self,
        md: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<Vec<u8>>, RemoteStorageError> {
        if self.failures.load(Ordering::SeqCst) > 0 {
            self.failures.fetch_sub(1, Ordering::SeqCst);
            // Half the files made it before the store went away.
            let partial = LogSegmentData {
                log_segment: data.offset_index.clone(),
                ..data.clone()
            };
            let _ = self.inner.copy_log_segment_data(md, &partial);
            return Err(RemoteStorageError::Shutdown);
        }
        self.inner.copy_log_segment_data(md, data)
    }
    fn fetch_log_segment(
        &self,
        md: &RemoteLogSegmentMetadata,
        s: u64,
        e: Option<u64>,
    ) -> Result<Bytes, RemoteStorageError> {
        self.inner.fetch_log_segment(md, s, e)
    }
    fn fetch_index(
        &self,
        md: &RemoteLogSegmentMetadata,
        k: IndexType,
    ) -> Result<Bytes, RemoteStorageError> {
        self.inner.fetch_index(md, k)
    }
    fn delete_log_segment_data(
        &self,
        md: &RemoteLogSegmentMetadata,
    ) -> Result<(), RemoteStorageError> {
        self.inner.delete_log_segment_data(md)
    }
    fn list_objects(&self) -> Result<Vec<RemoteObject>, RemoteStorageError> {
        self.inner.list_objects()
    }
    fn delete_object(&self, key: &str) -> Result<(), RemoteStorageError> {
        self.inner.delete_object(key)
    }
}

#[test]
fn failed_copy_is_undone_and_retried() {
    let f = fixture();
    produce(&f, 60);
    let flaky = Arc::new(Flaky {
        inner: local_rsm(&f),
        failures: AtomicUsize::new(1),
    });
    let rlm = manager_with(&f, flaky.clone());
    let tip = TopicIdPartition::new(TOPIC_ID, f.tp.clone());
    assert!(matches!(
        rlm.copy_once(&f.tp),
        Err(TieredError::Storage { .. })
    ));
    assert!(
        rlm.rlmm()
            .list_remote_log_segments(&tip)
            .unwrap()
            .is_empty(),
        "the failed attempt reached DELETE_SEGMENT_FINISHED"
    );
    assert!(
        rlm.rsm().list_objects().unwrap().is_empty(),
        "partial objects removed"
    );
    assert_eq!(rlm.highest_offset_in_remote_storage(&f.tp), None);
    let sealed = f.log.segments().len() - 1;
    rlm.run_tasks_once();
    assert_eq!(
        rlm.rlmm().list_remote_log_segments(&tip).unwrap().len(),
        sealed
    );
    let errors = rlm
        .metrics()
        .snapshot()
        .into_iter()
        .find(|(n, _)| *n == "RemoteCopyErrorsPerSec")
        .unwrap()
        .1;
    assert_eq!(errors, 1);
}

/// Kafka `onLeadershipChange`: a follower never copies (its task rounds
/// leave the remote tier untouched), learns the highest copied offset from
/// the catalogue the leader writes (so its local retention may delete what
/// is copied), and copies once it leads; a leader that becomes a follower
/// stops copying.
#[test]
fn only_the_leader_copies_and_a_follower_learns_the_copied_offset() {
    let f = fixture();
    produce(&f, 120);
    let sealed = f.log.segments().len() - 1;
    assert!(sealed >= 4, "small segment.bytes must roll: {sealed}");
    let meta = Arc::new(LogManagerMetadataLog::open(Arc::clone(&f.logs), 3).unwrap());
    let (rlmm, _) = TopicRlmm::open(meta, f.clock.clone()).unwrap();
    let rlmm: Arc<dyn strata_tiered::RemoteLogMetadataManager> = Arc::new(rlmm);
    let rsm = local_rsm(&f);
    let manager = || {
        RemoteLogManager::new(
            tiered_config(),
            0,
            &f.root.join("logs"),
            Arc::clone(&rsm),
            Arc::clone(&rlmm),
            f.clock.clone(),
        )
        .unwrap()
    };
    let tip = TopicIdPartition::new(TOPIC_ID, f.tp.clone());

    let follower = manager();
    follower.register_as(Arc::clone(&f.log), TOPIC_ID, ReplicaRole::Follower);
    follower.run_tasks_once();
    assert!(
        rlmm.list_remote_log_segments(&tip).unwrap().is_empty(),
        "a follower copied"
    );
    assert_eq!(follower.highest_offset_in_remote_storage(&f.tp), None);
    assert_eq!(follower.copy_once(&f.tp).unwrap(), 0, "a follower copied");

    // Another broker leads and copies into the shared catalogue; the
    // follower's next round learns the copied offset.
    let leader = manager();
    leader.register(Arc::clone(&f.log), TOPIC_ID);
    leader.run_tasks_once();
    let copied = leader.highest_offset_in_remote_storage(&f.tp);
    assert_eq!(rlmm.list_remote_log_segments(&tip).unwrap().len(), sealed);
    assert!(copied.is_some());
    follower.run_tasks_once();
    assert_eq!(follower.highest_offset_in_remote_storage(&f.tp), copied);
    assert!(follower.may_delete_locally(&f.tp, Offset(copied.unwrap().0 + 1)));

    // Leadership moves: the old leader stops, the new one copies.
    leader.register_as(Arc::clone(&f.log), TOPIC_ID, ReplicaRole::Follower);
    produce(&f, 60);
    leader.run_tasks_once();
    assert_eq!(leader.highest_offset_in_remote_storage(&f.tp), copied);
    let total_sealed = f.log.segments().len() - 1;
    assert!(total_sealed > sealed);
    follower.register_as(Arc::clone(&f.log), TOPIC_ID, ReplicaRole::Leader);
    follower.run_tasks_once();
    assert_eq!(
        rlmm.list_remote_log_segments(&tip).unwrap().len(),
        total_sealed,
        "the new leader copies what was sealed since"
    );
}
