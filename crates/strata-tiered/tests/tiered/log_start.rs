//! The two log starts of a tiered partition (Kafka `logStartOffset` and
//! `localLogStartOffset`): local retention moves only the local one, reads
//! between the two go to the remote tier, the log-start-offset checkpoint
//! keeps the partition's start across restarts (also when a tool opens the
//! logs with a default config), DeleteRecords inside the remote part raises
//! the partition's start and expiration then deletes the remote segments
//! below it, and a start that no tier holds is raised at registration.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_log::batch::BatchBuilder;
use strata_log::{
    LeaderEpoch, Log, LogConfig, LogError, LogManager, LogManagerConfig, MockClock, Offset,
    ReadBound, SharedClock, Timestamp, TopicPartition,
};
use strata_tiered::config::{build_rsm, StorageLocation};
use strata_tiered::rlmm::topic::LogManagerMetadataLog;
use strata_tiered::rlmm::TopicRlmm;
use strata_tiered::{
    Bridge, RemoteLogManager, RemoteLogSegmentState, TieredConfig, TieredError, TopicIdPartition,
};
use uuid::Uuid;

const TOPIC_ID: Uuid = Uuid::from_u64_pair(0x51, 0x52);

fn tiered_topic() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        remote_storage_enable: true,
        ..LogConfig::default()
    }
}

fn open_logs(root: &Path, clock: &Arc<MockClock>) -> Arc<LogManager> {
    let shared: SharedClock = clock.clone();
    LogManager::open(LogManagerConfig::new(vec![root.join("logs")]), shared).unwrap()
}

/// What the broker does after opening its logs: every log gets its topic's
/// config (here the one tiered topic; other topics keep the default).
fn apply_topic_configs(logs: &LogManager) {
    logs.set_topic_config_provider(Arc::new(|topic: &str| {
        if topic == "t" {
            tiered_topic()
        } else {
            LogConfig::default()
        }
    }));
}

/// Append `n` single-record batches of ~130 bytes (about 15 per segment).
fn produce(log: &Log, n: usize) {
    for i in 0..n {
        let mut b = BatchBuilder::new(Offset(0));
        let value = format!("value-{i:05}-{}", "x".repeat(100));
        b.append(
            Timestamp(1000 + 10 * i as i64),
            Some(b"k"),
            Some(value.as_bytes()),
            &[],
        );
        let mut bytes = b.build();
        log.append_as_leader(&mut bytes, LeaderEpoch(0)).unwrap();
        log.update_high_watermark(log.log_end_offset());
    }
}

fn manager(root: &Path, logs: &Arc<LogManager>, clock: &Arc<MockClock>) -> Arc<RemoteLogManager> {
    let mut config =
        TieredConfig::from_broker_properties(&Default::default(), Path::new("/unused")).unwrap();
    config.enabled = true;
    config.metadata_partitions = 3;
    config.reader_threads = 1;
    config.copier_threads = 1;
    config.expiration_threads = 1;
    let meta = Arc::new(LogManagerMetadataLog::open(Arc::clone(logs), 3).unwrap());
    let (rlmm, _) = TopicRlmm::open(meta, clock.clone()).unwrap();
    let rsm = build_rsm(
        &StorageLocation::Local {
            dir: root.join("remote"),
        },
        Arc::new(Bridge::new(1).unwrap()),
    )
    .unwrap();
    RemoteLogManager::new(
        config,
        0,
        &root.join("logs"),
        Arc::new(rsm),
        Arc::new(rlmm),
        clock.clone(),
    )
    .unwrap()
}

struct Tiered {
    _dir: tempfile::TempDir,
    root: PathBuf,
    clock: Arc<MockClock>,
    logs: Arc<LogManager>,
    log: Arc<Log>,
    rlm: Arc<RemoteLogManager>,
    tp: TopicPartition,
}

/// A tiered partition whose sealed segments are copied and then dropped
/// locally by `local.retention.bytes=1`; returns it and its local start.
fn offloaded() -> (Tiered, Offset) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let clock = MockClock::new(1_000_000);
    let logs = open_logs(&root, &clock);
    let tp = TopicPartition::new("t", 0);
    let log = logs
        .get_or_create_log(&tp, tiered_topic(), Some(TOPIC_ID))
        .unwrap();
    produce(&log, 60);
    let rlm = manager(&root, &logs, &clock);
    rlm.register(Arc::clone(&log), TOPIC_ID);
    assert!(rlm.copy_once(&tp).unwrap() >= 3);
    log.update_config(LogConfig {
        local_retention_bytes: 1,
        ..log.config()
    });
    log.delete_old_segments().unwrap();
    let local = log.local_log_start_offset();
    assert_eq!(log.num_segments(), 1, "all but the active segment dropped");
    assert!(local > Offset(0));
    let t = Tiered {
        _dir: dir,
        root,
        clock,
        logs,
        log,
        rlm,
        tp,
    };
    (t, local)
}

/// Stop the remote tier and close the logs (releasing the dir lock);
/// keeps the temp dir alive.
fn close(t: Tiered) -> Tiered2 {
    let Tiered {
        _dir,
        root,
        clock,
        logs,
        log,
        rlm,
        tp,
    } = t;
    rlm.shutdown();
    drop(rlm);
    drop(log);
    logs.shutdown().unwrap();
    drop(logs);
    Tiered2 {
        _dir,
        root,
        clock,
        tp,
    }
}

struct Tiered2 {
    _dir: tempfile::TempDir,
    root: PathBuf,
    clock: Arc<MockClock>,
    tp: TopicPartition,
}

#[test]
fn local_retention_moves_only_the_local_start() {
    let (t, local) = offloaded();
    assert_eq!(
        t.log.log_start_offset(),
        Offset(0),
        "partition start spans both tiers"
    );
    assert_eq!(t.rlm.log_start_offset(&t.tp), Some(Offset(0)));
    // A local read below the local start names the local bound, so the
    // broker sends it to the remote tier; the response's start is global.
    match t
        .log
        .read(Offset(0), 1 << 20, ReadBound::HighWatermark, true)
    {
        Err(LogError::OffsetOutOfRange {
            requested,
            log_start,
            ..
        }) => assert_eq!((requested, log_start), (Offset(0), local)),
        other => panic!("expected OffsetOutOfRange, got {other:?}"),
    }
    let data = t
        .log
        .read(local, 1 << 20, ReadBound::HighWatermark, true)
        .unwrap();
    assert_eq!(data.log_start_offset, Offset(0));
    assert!(data.total_len() > 0);
    assert!(!t
        .rlm
        .read_remote(&t.tp, Offset(0), 1000, true)
        .unwrap()
        .records
        .is_empty());
    // The high watermark is clamped to the partition's start, not the local one.
    assert_eq!(t.log.high_watermark(), t.log.log_end_offset());
}

#[test]
fn the_checkpoint_keeps_the_partition_start_across_restarts_and_tools() {
    let (t, local) = offloaded();
    let t = close(t);

    // A tool (fsck, doctor) opens the logs with the default config and no
    // topic configs: it sees the untiered view, and must write back the
    // tiered start unchanged when it closes.
    let logs = open_logs(&t.root, &t.clock);
    let log = logs.get_log(&t.tp).unwrap();
    assert_eq!(
        log.log_start_offset(),
        local,
        "untiered view: first local offset"
    );
    assert_eq!(log.log_start_offset_for_checkpoint(), Offset(0));
    drop(log);
    logs.shutdown().unwrap();
    drop(logs);

    // The broker: logs get their topic configs before anything is served.
    let logs = open_logs(&t.root, &t.clock);
    apply_topic_configs(&logs);
    let log = logs.get_log(&t.tp).unwrap();
    assert_eq!(log.log_start_offset(), Offset(0));
    assert_eq!(log.local_log_start_offset(), local);
    let rlm = manager(&t.root, &logs, &t.clock);
    rlm.register(Arc::clone(&log), TOPIC_ID);
    assert_eq!(rlm.log_start_offset(&t.tp), Some(Offset(0)));
    assert!(!rlm
        .read_remote(&t.tp, Offset(0), 1000, true)
        .unwrap()
        .records
        .is_empty());
    rlm.shutdown();
    logs.shutdown().unwrap();
}

#[test]
fn delete_records_in_the_remote_part_is_enforced_by_expiration() {
    let (t, local) = offloaded();
    let tip = TopicIdPartition::new(TOPIC_ID, t.tp.clone());
    let before = t.rlm.rlmm().list_remote_log_segments(&tip).unwrap();
    let second = before
        .iter()
        .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
        .map(|m| m.start_offset)
        .filter(|o| *o > Offset(0))
        .min()
        .unwrap();
    let target = second.plus(1);
    assert!(target < local);
    assert_eq!(
        t.log.maybe_increment_log_start_offset(target).unwrap(),
        target
    );
    assert_eq!(
        t.log.local_log_start_offset(),
        local,
        "local data untouched"
    );
    assert_eq!(t.rlm.log_start_offset(&t.tp), Some(target));
    assert!(matches!(
        t.rlm.read_remote(&t.tp, Offset(0), 1000, true),
        Err(TieredError::OffsetOutOfRange { .. })
    ));
    // The first remote segment lies wholly below the new start: deleted.
    assert_eq!(t.rlm.expire_once(&t.tp).unwrap(), 1);
    let after = t.rlm.rlmm().list_remote_log_segments(&tip).unwrap();
    assert!(after
        .iter()
        .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
        .all(|m| m.end_offset >= target));
    let first = t
        .rlm
        .read_remote(&t.tp, target, 1000, true)
        .unwrap()
        .records;
    assert!(!first.is_empty(), "the segment holding the new start stays");
}

#[test]
fn a_start_that_no_tier_holds_is_raised_at_registration() {
    let (t, local) = offloaded();
    let t = close(t);
    // The remote tier and its catalogue are wiped (a new bucket, a new
    // metadata topic) while the checkpoint still says 0: nothing below the
    // local start exists any more.
    std::fs::remove_dir_all(t.root.join("remote")).unwrap();
    for entry in std::fs::read_dir(t.root.join("logs")).unwrap() {
        let entry = entry.unwrap();
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("__remote_log_metadata-")
        {
            std::fs::remove_dir_all(entry.path()).unwrap();
        }
    }
    let logs = open_logs(&t.root, &t.clock);
    apply_topic_configs(&logs);
    let log = logs.get_log(&t.tp).unwrap();
    assert_eq!(log.log_start_offset(), Offset(0), "checkpointed start");
    let rlm = manager(&t.root, &logs, &t.clock);
    rlm.register(Arc::clone(&log), TOPIC_ID);
    assert_eq!(log.log_start_offset(), local);
    assert_eq!(rlm.log_start_offset(&t.tp), Some(local));
    rlm.shutdown();
}

#[test]
fn untiered_logs_start_at_their_first_segment() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(1_000_000);
    let logs = open_logs(dir.path(), &clock);
    let tp = TopicPartition::new("plain", 0);
    let log = logs
        .get_or_create_log(
            &tp,
            LogConfig {
                segment_bytes: 2048,
                retention_bytes: 1,
                ..LogConfig::default()
            },
            None,
        )
        .unwrap();
    produce(&log, 60);
    log.delete_old_segments().unwrap();
    let first = log.local_log_start_offset();
    assert!(first > Offset(0));
    assert_eq!(log.log_start_offset(), first, "no remote tier: one start");
    assert_eq!(log.log_start_offset_for_checkpoint(), first);
    match log.read(Offset(0), 100, ReadBound::HighWatermark, true) {
        Err(LogError::OffsetOutOfRange { log_start, .. }) => assert_eq!(log_start, first),
        other => panic!("expected OffsetOutOfRange, got {other:?}"),
    }
}
