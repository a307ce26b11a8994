//! The catalogue's state machine and epoch bookkeeping (Kafka
//! `RemoteLogMetadataCacheTest` / `RemoteLogSegmentLifecycleTest` shapes).

use super::*;
use crate::metadata::RemoteLogSegmentId;
use strata_log::{Timestamp, TopicPartition};
use RemoteLogSegmentState::*;

fn partition() -> TopicIdPartition {
    TopicIdPartition::new(Uuid::from_u64_pair(7, 9), TopicPartition::new("t", 0))
}

fn segment(start: i64, end: i64, epochs: &[(i32, i64)]) -> RemoteLogSegmentMetadata {
    RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId::generate(partition()),
        start_offset: Offset(start),
        end_offset: Offset(end),
        max_timestamp: Timestamp(end * 10),
        broker_id: 0,
        event_timestamp_ms: 1,
        segment_leader_epochs: epochs
            .iter()
            .map(|(e, o)| (LeaderEpoch(*e), Offset(*o)))
            .collect(),
        segment_size_in_bytes: 100,
        custom_metadata: None,
        state: CopySegmentStarted,
    }
}

fn update(
    md: &RemoteLogSegmentMetadata,
    state: RemoteLogSegmentState,
) -> RemoteLogSegmentMetadataUpdate {
    RemoteLogSegmentMetadataUpdate {
        segment_id: md.segment_id.clone(),
        event_timestamp_ms: 2,
        custom_metadata: None,
        state,
        broker_id: 0,
    }
}

#[test]
fn lifecycle_is_visible_only_when_finished() {
    let rlmm = MemoryRlmm::new();
    let p = partition();
    let md = segment(0, 99, &[(0, 0)]);
    rlmm.add_remote_log_segment_metadata(md.clone()).unwrap();
    assert_eq!(
        rlmm.remote_log_segment_metadata(&p, LeaderEpoch(0), Offset(5))
            .unwrap(),
        None
    );
    assert_eq!(
        rlmm.list_remote_log_segments_for_epoch(&p, LeaderEpoch(0))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        rlmm.highest_offset_for_epoch(&p, LeaderEpoch(0)).unwrap(),
        None
    );

    rlmm.update_remote_log_segment_metadata(update(&md, CopySegmentFinished))
        .unwrap();
    let found = rlmm
        .remote_log_segment_metadata(&p, LeaderEpoch(0), Offset(99))
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.segment_id.id, found.state),
        (md.segment_id.id, CopySegmentFinished)
    );
    assert_eq!(
        rlmm.remote_log_segment_metadata(&p, LeaderEpoch(0), Offset(100))
            .unwrap(),
        None
    );
    assert_eq!(
        rlmm.highest_offset_for_epoch(&p, LeaderEpoch(0)).unwrap(),
        Some(Offset(99))
    );

    rlmm.update_remote_log_segment_metadata(update(&md, DeleteSegmentStarted))
        .unwrap();
    assert_eq!(
        rlmm.remote_log_segment_metadata(&p, LeaderEpoch(0), Offset(5))
            .unwrap(),
        None
    );
    assert_eq!(
        rlmm.list_remote_log_segments(&p).unwrap()[0].state,
        DeleteSegmentStarted
    );

    rlmm.update_remote_log_segment_metadata(update(&md, DeleteSegmentFinished))
        .unwrap();
    assert!(rlmm.list_remote_log_segments(&p).unwrap().is_empty());
    assert!(rlmm
        .list_remote_log_segments_for_epoch(&p, LeaderEpoch(0))
        .unwrap()
        .is_empty());
}

#[test]
fn invalid_transitions_are_typed_errors_and_change_nothing() {
    let rlmm = MemoryRlmm::new();
    let p = partition();
    let mut finished = segment(0, 9, &[(0, 0)]);
    finished.state = CopySegmentFinished;
    let err = rlmm.add_remote_log_segment_metadata(finished).unwrap_err();
    assert!(matches!(
        err,
        MetadataError::InvalidTransition {
            source: InvalidTransition {
                from: None,
                to: CopySegmentFinished
            },
            ..
        }
    ));

    let md = segment(0, 9, &[(0, 0)]);
    let err = rlmm
        .update_remote_log_segment_metadata(update(&md, CopySegmentFinished))
        .unwrap_err();
    assert!(matches!(err, MetadataError::UnknownSegment { .. }));

    rlmm.add_remote_log_segment_metadata(md.clone()).unwrap();
    let err = rlmm
        .update_remote_log_segment_metadata(update(&md, DeleteSegmentFinished))
        .unwrap_err();
    assert!(matches!(
        err,
        MetadataError::InvalidTransition {
            source: InvalidTransition {
                from: Some(CopySegmentStarted),
                to: DeleteSegmentFinished
            },
            ..
        }
    ));
    let err = rlmm
        .update_remote_log_segment_metadata(update(&md, CopySegmentStarted))
        .unwrap_err();
    assert!(matches!(err, MetadataError::InvalidTransition { .. }));
    assert_eq!(
        rlmm.list_remote_log_segments(&p).unwrap()[0].state,
        CopySegmentStarted
    );

    rlmm.update_remote_log_segment_metadata(update(&md, CopySegmentFinished))
        .unwrap();
    // Self transition: an idempotent retry.
    rlmm.update_remote_log_segment_metadata(update(&md, CopySegmentFinished))
        .unwrap();
    let err = rlmm
        .update_remote_log_segment_metadata(update(&md, DeleteSegmentFinished))
        .unwrap_err();
    assert!(matches!(err, MetadataError::InvalidTransition { .. }));

    let mut other = md.clone();
    other.end_offset = Offset(50);
    assert!(matches!(
        rlmm.add_remote_log_segment_metadata(other),
        Err(MetadataError::AlreadyExists { .. })
    ));
}

#[test]
fn lookups_respect_epoch_boundaries_inside_a_segment() {
    let rlmm = MemoryRlmm::new();
    let p = partition();
    let md = segment(0, 29, &[(0, 0), (2, 20)]);
    rlmm.add_remote_log_segment_metadata(md.clone()).unwrap();
    rlmm.update_remote_log_segment_metadata(update(&md, CopySegmentFinished))
        .unwrap();
    assert!(rlmm
        .remote_log_segment_metadata(&p, LeaderEpoch(0), Offset(19))
        .unwrap()
        .is_some());
    assert_eq!(
        rlmm.remote_log_segment_metadata(&p, LeaderEpoch(0), Offset(20))
            .unwrap(),
        None
    );
    assert!(rlmm
        .remote_log_segment_metadata(&p, LeaderEpoch(2), Offset(25))
        .unwrap()
        .is_some());
    assert_eq!(
        rlmm.remote_log_segment_metadata(&p, LeaderEpoch(2), Offset(19))
            .unwrap(),
        None
    );
    assert_eq!(
        rlmm.highest_offset_for_epoch(&p, LeaderEpoch(0)).unwrap(),
        Some(Offset(19))
    );
    assert_eq!(
        rlmm.highest_offset_for_epoch(&p, LeaderEpoch(2)).unwrap(),
        Some(Offset(29))
    );
    assert_eq!(rlmm.remote_log_size(&p, LeaderEpoch(2)).unwrap(), 100);
}

#[test]
fn a_reupload_of_a_superset_supersedes_the_old_copy() {
    let rlmm = MemoryRlmm::new();
    let p = partition();
    let old = segment(10, 19, &[(1, 10)]);
    let new = segment(10, 29, &[(1, 10)]);
    for md in [&old, &new] {
        rlmm.add_remote_log_segment_metadata(md.clone()).unwrap();
        rlmm.update_remote_log_segment_metadata(update(md, CopySegmentFinished))
            .unwrap();
    }
    let served = rlmm
        .remote_log_segment_metadata(&p, LeaderEpoch(1), Offset(12))
        .unwrap()
        .unwrap();
    assert_eq!(served.segment_id.id, new.segment_id.id);
    // The old one is still listed so expiration can delete it.
    let listed: Vec<_> = rlmm
        .list_remote_log_segments_for_epoch(&p, LeaderEpoch(1))
        .unwrap()
        .into_iter()
        .map(|m| m.segment_id.id)
        .collect();
    assert!(listed.contains(&old.segment_id.id) && listed.contains(&new.segment_id.id));
}

#[test]
fn apply_with_does_not_persist_a_rejected_event() {
    let rlmm = MemoryRlmm::new();
    let md = segment(0, 9, &[(0, 0)]);
    let mut persisted = 0;
    let bad = MetadataEvent::Update(update(&md, CopySegmentFinished));
    assert!(rlmm
        .apply_with(&bad, || {
            persisted += 1;
            Ok(())
        })
        .is_err());
    assert_eq!(persisted, 0);
    let failing = MetadataEvent::Add(md.clone());
    let err = rlmm
        .apply_with(&failing, || Err(MetadataError::NotInitialized))
        .unwrap_err();
    assert!(matches!(err, MetadataError::NotInitialized));
    assert!(
        rlmm.list_remote_log_segments(&partition())
            .unwrap()
            .is_empty(),
        "failed persist must not apply"
    );
}
