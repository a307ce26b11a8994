//! `strata tier fsck` logic: every kind of finding is detected on a real
//! local store, and `--repair` leaves a clean, consistent tier.

use std::sync::Arc;

use bytes::Bytes;
use strata_log::{LeaderEpoch, Offset, Timestamp, TopicPartition};
use strata_tiered::config::{build_rsm, StorageLocation};
use strata_tiered::fsck::fsck;
use strata_tiered::rlmm::MemoryRlmm;
use strata_tiered::{
    Bridge, LogSegmentData, RemoteLogMetadataManager, RemoteLogSegmentId, RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate, RemoteLogSegmentState, RemoteStorageManager, TopicIdPartition,
};
use uuid::Uuid;

fn md(start: i64) -> RemoteLogSegmentMetadata {
    let tip = TopicIdPartition::new(Uuid::from_u64_pair(3, 4), TopicPartition::new("f", 0));
    RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId::generate(tip),
        start_offset: Offset(start),
        end_offset: Offset(start + 9),
        max_timestamp: Timestamp(1),
        broker_id: 0,
        event_timestamp_ms: 0,
        segment_leader_epochs: [(LeaderEpoch(0), Offset(start))].into(),
        segment_size_in_bytes: 4,
        custom_metadata: None,
        state: RemoteLogSegmentState::CopySegmentStarted,
    }
}

fn finish(rlmm: &MemoryRlmm, m: &RemoteLogSegmentMetadata, state: RemoteLogSegmentState) {
    rlmm.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate {
        segment_id: m.segment_id.clone(),
        event_timestamp_ms: 1,
        custom_metadata: None,
        state,
        broker_id: 0,
    })
    .unwrap();
}

#[test]
fn finds_and_repairs_every_kind_of_inconsistency() {
    let dir = tempfile::tempdir().unwrap();
    let rsm = build_rsm(
        &StorageLocation::Local {
            dir: dir.path().join("tier"),
        },
        Arc::new(Bridge::new(1).unwrap()),
    )
    .unwrap();
    let files = dir.path().join("seg");
    std::fs::create_dir_all(&files).unwrap();
    for name in ["a.log", "a.index", "a.timeindex"] {
        std::fs::write(files.join(name), b"data").unwrap();
    }
    let data = LogSegmentData {
        log_segment: files.join("a.log"),
        offset_index: files.join("a.index"),
        time_index: files.join("a.timeindex"),
        transaction_index: None,
        producer_snapshot: None,
        leader_epoch_index: b"0\n0\n".to_vec(),
    };
    let rlmm = MemoryRlmm::new();
    // Healthy.
    let good = md(0);
    rlmm.add_remote_log_segment_metadata(good.clone()).unwrap();
    rsm.copy_log_segment_data(&good, &data).unwrap();
    finish(&rlmm, &good, RemoteLogSegmentState::CopySegmentFinished);
    // Crash mid-copy: STARTED with some objects.
    let half = md(10);
    rlmm.add_remote_log_segment_metadata(half.clone()).unwrap();
    rsm.copy_log_segment_data(&half, &data).unwrap();
    // Crash mid-delete.
    let deleting = md(20);
    rlmm.add_remote_log_segment_metadata(deleting.clone())
        .unwrap();
    rsm.copy_log_segment_data(&deleting, &data).unwrap();
    finish(&rlmm, &deleting, RemoteLogSegmentState::CopySegmentFinished);
    finish(
        &rlmm,
        &deleting,
        RemoteLogSegmentState::DeleteSegmentStarted,
    );
    // Objects nobody owns.
    let orphan = md(30);
    rsm.copy_log_segment_data(&orphan, &data).unwrap();
    // A copied segment whose .log vanished.
    let lost = md(40);
    rlmm.add_remote_log_segment_metadata(lost.clone()).unwrap();
    rsm.copy_log_segment_data(&lost, &data).unwrap();
    finish(&rlmm, &lost, RemoteLogSegmentState::CopySegmentFinished);
    let lost_log = rsm
        .list_objects()
        .unwrap()
        .into_iter()
        .find(|o| {
            o.key.ends_with(".log")
                && o.key
                    .contains(&strata_tiered::metadata::uuid_base64(lost.segment_id.id))
        })
        .unwrap();
    rsm.delete_object(&lost_log.key).unwrap();

    let report = fsck(&rsm, &rlmm, false, 5, 0).unwrap();
    assert_eq!(report.segments, 4);
    assert_eq!(
        report.orphans.len(),
        4,
        "the orphan's .log, .index, .timeindex, epoch checkpoint: {:?}",
        report.orphans
    );
    assert_eq!(
        report
            .half_copies
            .iter()
            .map(|m| m.start_offset)
            .collect::<Vec<_>>(),
        vec![Offset(10)]
    );
    assert_eq!(
        report
            .unfinished_deletes
            .iter()
            .map(|m| m.start_offset)
            .collect::<Vec<_>>(),
        vec![Offset(20)]
    );
    assert_eq!(report.missing.len(), 1);
    assert_eq!(report.missing[0].1, vec![".log"]);
    assert!(!report.is_clean());

    let repaired = fsck(&rsm, &rlmm, true, 5, 0).unwrap();
    assert_eq!(repaired.repaired, 4 + 2);
    let after = fsck(&rsm, &rlmm, false, 6, 0).unwrap();
    assert!(
        after.orphans.is_empty()
            && after.half_copies.is_empty()
            && after.unfinished_deletes.is_empty()
    );
    assert_eq!(
        after.missing.len(),
        1,
        "lost data is reported, never hidden"
    );
    assert_eq!(after.segments, 2);
    assert_eq!(
        rsm.fetch_log_segment(&good, 0, None).unwrap(),
        Bytes::from_static(b"data")
    );
}

#[test]
fn progress_plans_every_catalogue_segment_and_reports_each() {
    let dir = tempfile::tempdir().unwrap();
    let rsm = build_rsm(
        &StorageLocation::Local {
            dir: dir.path().join("tier"),
        },
        Arc::new(Bridge::new(1).unwrap()),
    )
    .unwrap();
    let rlmm = MemoryRlmm::new();
    for start in [0, 10, 20] {
        rlmm.add_remote_log_segment_metadata(md(start)).unwrap();
    }
    let mut steps = Vec::new();
    let report =
        strata_tiered::fsck::fsck_with_progress(&rsm, &rlmm, false, 5, 0, &mut |s| steps.push(s))
            .unwrap();
    use strata_tiered::fsck::FsckStep;
    assert_eq!(report.segments, 3);
    assert_eq!(
        steps,
        vec![
            FsckStep::Planned {
                segments: 3,
                bytes: 12
            },
            FsckStep::Checked { bytes: 4 },
            FsckStep::Checked { bytes: 4 },
            FsckStep::Checked { bytes: 4 },
        ]
    );
}
