//! One conformance suite for the storage plug-in, run against every back
//! end: a local directory and a real S3-API server (moto). Guards against a
//! back end that breaks Kafka's contract (idempotent copy and delete,
//! not-found for a missing transaction index, exact byte ranges).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_log::{LeaderEpoch, Offset, Timestamp, TopicPartition};
use strata_tiered::config::{build_rsm, parse_uri};
use strata_tiered::rsm::parse_object_key;
use strata_tiered::{
    Bridge, IndexType, LogSegmentData, RemoteLogSegmentId, RemoteLogSegmentMetadata,
    RemoteLogSegmentState, RemoteStorageError, RemoteStorageManager, TopicIdPartition,
};
use uuid::Uuid;

struct Files {
    data: LogSegmentData,
    log: Vec<u8>,
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn write_segment(dir: &Path, base: i64, log_len: usize, with_txn: bool) -> Files {
    let p = |suffix: &str| -> PathBuf { dir.join(format!("{base:020}{suffix}")) };
    let log = pattern(log_len, base as u8);
    std::fs::write(p(".log"), &log).unwrap();
    std::fs::write(p(".index"), pattern(80, 1)).unwrap();
    std::fs::write(p(".timeindex"), pattern(120, 2)).unwrap();
    if with_txn {
        std::fs::write(p(".txnindex"), pattern(34, 3)).unwrap();
    }
    std::fs::write(p(".snapshot"), pattern(60, 4)).unwrap();
    Files {
        data: LogSegmentData {
            log_segment: p(".log"),
            offset_index: p(".index"),
            time_index: p(".timeindex"),
            transaction_index: with_txn.then(|| p(".txnindex")),
            producer_snapshot: Some(p(".snapshot")),
            leader_epoch_index: b"0\n1\n0 0\n".to_vec(),
        },
        log,
    }
}

fn metadata(start: i64, end: i64, size: usize) -> RemoteLogSegmentMetadata {
    let tip = TopicIdPartition::new(
        Uuid::from_u64_pair(11, 22),
        TopicPartition::new("conformance", 2),
    );
    RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId::generate(tip),
        start_offset: Offset(start),
        end_offset: Offset(end),
        max_timestamp: Timestamp(1),
        broker_id: 0,
        event_timestamp_ms: 0,
        segment_leader_epochs: [(LeaderEpoch(0), Offset(start))].into(),
        segment_size_in_bytes: size as i32,
        custom_metadata: None,
        state: RemoteLogSegmentState::CopySegmentStarted,
    }
}

fn suite(rsm: &dyn RemoteStorageManager) {
    let tmp = tempfile::tempdir().unwrap();
    copy_then_fetch_everything(rsm, tmp.path());
    byte_ranges(rsm, tmp.path());
    missing_txn_index_is_not_found(rsm, tmp.path());
    copy_is_idempotent_and_copies_coexist(rsm, tmp.path());
    delete_is_idempotent(rsm, tmp.path());
    failed_copy_leaves_nothing(rsm, tmp.path());
    large_segment_round_trips(rsm, tmp.path());
}

fn copy_then_fetch_everything(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let f = write_segment(dir, 0, 5000, true);
    let md = metadata(0, 99, f.log.len());
    assert_eq!(rsm.copy_log_segment_data(&md, &f.data).unwrap(), None);
    assert_eq!(rsm.fetch_log_segment(&md, 0, None).unwrap(), f.log);
    let read = |kind| rsm.fetch_index(&md, kind).unwrap().to_vec();
    assert_eq!(read(IndexType::Offset), pattern(80, 1));
    assert_eq!(read(IndexType::Timestamp), pattern(120, 2));
    assert_eq!(read(IndexType::Transaction), pattern(34, 3));
    assert_eq!(read(IndexType::ProducerSnapshot), pattern(60, 4));
    assert_eq!(read(IndexType::LeaderEpoch), b"0\n1\n0 0\n");
    let keys: Vec<_> = rsm
        .list_objects()
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let mine: Vec<_> = keys
        .iter()
        .filter_map(|k| parse_object_key(k))
        .filter(|k| k.segment_id == md.segment_id.id)
        .collect();
    assert_eq!(
        mine.len(),
        6,
        "six objects for a segment with a txn index: {keys:?}"
    );
    assert!(mine
        .iter()
        .all(|k| k.partition == md.segment_id.partition && k.start_offset == Offset(0)));
    rsm.delete_log_segment_data(&md).unwrap();
}

fn byte_ranges(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let f = write_segment(dir, 100, 4096, false);
    let md = metadata(100, 199, f.log.len());
    rsm.copy_log_segment_data(&md, &f.data).unwrap();
    assert_eq!(
        rsm.fetch_log_segment(&md, 1000, None).unwrap(),
        f.log[1000..]
    );
    assert_eq!(
        rsm.fetch_log_segment(&md, 10, Some(20)).unwrap(),
        f.log[10..20]
    );
    assert_eq!(
        rsm.fetch_log_segment(&md, 4000, Some(99_999)).unwrap(),
        f.log[4000..]
    );
    assert!(rsm.fetch_log_segment(&md, 4096, None).unwrap().is_empty());
    assert!(matches!(
        rsm.fetch_log_segment(&md, 4097, None),
        Err(RemoteStorageError::InvalidRange { .. })
    ));
    rsm.delete_log_segment_data(&md).unwrap();
}

fn missing_txn_index_is_not_found(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let f = write_segment(dir, 200, 100, false);
    let md = metadata(200, 299, f.log.len());
    rsm.copy_log_segment_data(&md, &f.data).unwrap();
    let err = rsm.fetch_index(&md, IndexType::Transaction).unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    let never = metadata(200, 299, 100);
    assert!(rsm
        .fetch_log_segment(&never, 0, None)
        .unwrap_err()
        .is_not_found());
    rsm.delete_log_segment_data(&md).unwrap();
}

fn copy_is_idempotent_and_copies_coexist(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let f = write_segment(dir, 300, 700, false);
    let a = metadata(300, 399, f.log.len());
    let b = metadata(300, 399, f.log.len());
    rsm.copy_log_segment_data(&a, &f.data).unwrap();
    rsm.copy_log_segment_data(&a, &f.data).unwrap();
    rsm.copy_log_segment_data(&b, &f.data).unwrap();
    rsm.delete_log_segment_data(&a).unwrap();
    assert!(rsm
        .fetch_log_segment(&a, 0, None)
        .unwrap_err()
        .is_not_found());
    assert_eq!(rsm.fetch_log_segment(&b, 0, None).unwrap(), f.log);
    rsm.delete_log_segment_data(&b).unwrap();
}

fn delete_is_idempotent(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let f = write_segment(dir, 400, 10, true);
    let md = metadata(400, 499, f.log.len());
    rsm.copy_log_segment_data(&md, &f.data).unwrap();
    rsm.delete_log_segment_data(&md).unwrap();
    rsm.delete_log_segment_data(&md).unwrap();
    for kind in IndexType::ALL {
        assert!(rsm.fetch_index(&md, kind).unwrap_err().is_not_found());
    }
    let left: Vec<_> = rsm
        .list_objects()
        .unwrap()
        .into_iter()
        .filter(|o| parse_object_key(&o.key).is_some_and(|k| k.segment_id == md.segment_id.id))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    rsm.delete_object("no/such/key").unwrap();
}

fn failed_copy_leaves_nothing(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let mut f = write_segment(dir, 500, 10, false);
    f.data.log_segment = dir.join("missing.log");
    let md = metadata(500, 599, 10);
    let err = rsm.copy_log_segment_data(&md, &f.data).unwrap_err();
    assert!(matches!(err, RemoteStorageError::LocalIo { .. }), "{err:?}");
    let left = rsm
        .list_objects()
        .unwrap()
        .into_iter()
        .filter(|o| parse_object_key(&o.key).is_some_and(|k| k.segment_id == md.segment_id.id))
        .count();
    assert_eq!(
        left, 0,
        "companions uploaded before the failure must be removed"
    );
}

fn large_segment_round_trips(rsm: &dyn RemoteStorageManager, dir: &Path) {
    let f = write_segment(dir, 600, 17 * 1024 * 1024 + 5, false);
    let md = metadata(600, 699, f.log.len());
    rsm.copy_log_segment_data(&md, &f.data).unwrap();
    assert_eq!(
        rsm.fetch_log_segment(&md, 0, None).unwrap(),
        f.log,
        "multipart upload"
    );
    let mid = 9 * 1024 * 1024;
    assert_eq!(
        rsm.fetch_log_segment(&md, mid as u64 - 3, Some(mid as u64 + 3))
            .unwrap(),
        f.log[mid - 3..mid + 3]
    );
    rsm.delete_log_segment_data(&md).unwrap();
}

#[test]
fn local_directory_backend() {
    let root = tempfile::tempdir().unwrap();
    let uri = format!("file://{}", root.path().display());
    let location = parse_uri(&uri, &BTreeMap::new()).unwrap();
    let rsm = build_rsm(&location, Arc::new(Bridge::new(2).unwrap())).unwrap();
    suite(&rsm);
    // Kafka's LocalTieredStorage layout on disk.
    let f = write_segment(root.path(), 42, 10, false);
    let md = metadata(42, 50, 10);
    rsm.copy_log_segment_data(&md, &f.data).unwrap();
    let dir = root
        .path()
        .join("kafka-tiered-storage")
        .join("conformance-2-AAAAAAAAAAsAAAAAAAAAFg");
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    let id = strata_tiered::metadata::uuid_base64(md.segment_id.id);
    assert!(dir.join(format!("00000000000000000042-{id}.log")).exists());
    assert!(dir
        .join(format!("00000000000000000042-{id}.leader_epoch_checkpoint"))
        .exists());
}

#[test]
fn s3_backend_on_moto() {
    let moto = crate::common::Moto::start();
    moto.create_bucket("strata-conformance");
    let location = parse_uri("s3://strata-conformance/cluster-a", &moto.props()).unwrap();
    let rsm = build_rsm(&location, Arc::new(Bridge::new(2).unwrap())).unwrap();
    suite(&rsm);
}
