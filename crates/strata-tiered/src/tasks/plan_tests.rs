//! The copy and expiration rules on hand-built snapshots.

use super::*;
use crate::metadata::{RemoteLogSegmentId, TopicIdPartition};
use strata_log::TopicPartition;
use RemoteLogSegmentState::*;

fn segs(bases: &[i64], leo: i64) -> Vec<LocalSegment> {
    bases
        .iter()
        .enumerate()
        .map(|(i, b)| LocalSegment {
            base_offset: Offset(*b),
            next_offset: Offset(bases.get(i + 1).copied().unwrap_or(leo)),
            size: 100,
        })
        .collect()
}

#[test]
fn copies_sealed_segments_below_the_lso_only() {
    let s = segs(&[0, 10, 20, 30], 35);
    assert_eq!(
        copy_candidates(&s, None, Offset(0), Offset(35)),
        vec![0, 1, 2]
    );
    assert_eq!(
        copy_candidates(&s, None, Offset(0), Offset(25)),
        vec![0, 1],
        "segment 20..30 holds unstable data"
    );
    assert_eq!(
        copy_candidates(&s, Some(Offset(19)), Offset(0), Offset(35)),
        vec![2]
    );
    assert_eq!(
        copy_candidates(&s, Some(Offset(29)), Offset(0), Offset(35)),
        Vec::<usize>::new()
    );
    assert_eq!(
        copy_candidates(&s, None, Offset(12), Offset(35)),
        vec![1, 2],
        "log start inside a segment"
    );
    assert_eq!(
        copy_candidates(&segs(&[0], 50), None, Offset(0), Offset(50)),
        Vec::<usize>::new(),
        "active only"
    );
}

#[test]
fn segment_epochs_rebase_the_epoch_in_force() {
    let entries = [
        (LeaderEpoch(0), Offset(0)),
        (LeaderEpoch(2), Offset(15)),
        (LeaderEpoch(5), Offset(40)),
    ];
    let got = segment_epochs(&entries, Offset(10), Offset(20));
    assert_eq!(
        got,
        [(LeaderEpoch(0), Offset(10)), (LeaderEpoch(2), Offset(15))].into()
    );
    let got = segment_epochs(&entries, Offset(20), Offset(30));
    assert_eq!(got, [(LeaderEpoch(2), Offset(20))].into());
    assert_eq!(
        segment_epochs(&[], Offset(7), Offset(9)),
        [(LeaderEpoch(0), Offset(7))].into()
    );
    assert_eq!(
        epoch_checkpoint_text(&entries, Offset(20)),
        b"0\n2\n0 0\n2 15\n"
    );
}

fn remote(
    start: i64,
    end: i64,
    ts: i64,
    size: i32,
    state: RemoteLogSegmentState,
) -> RemoteLogSegmentMetadata {
    RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId::generate(TopicIdPartition::new(
            Uuid::nil(),
            TopicPartition::new("t", 0),
        )),
        start_offset: Offset(start),
        end_offset: Offset(end),
        max_timestamp: Timestamp(ts),
        broker_id: 0,
        event_timestamp_ms: 0,
        segment_leader_epochs: [(LeaderEpoch(0), Offset(start))].into(),
        segment_size_in_bytes: size,
        custom_metadata: None,
        state,
    }
}

const UNLIMITED: TotalRetention = TotalRetention {
    retention_ms: -1,
    retention_bytes: -1,
};

#[test]
fn time_retention_deletes_oldest_prefix_and_moves_log_start() {
    let s = [
        remote(0, 9, 100, 10, CopySegmentFinished),
        remote(10, 19, 200, 10, CopySegmentFinished),
        remote(20, 29, 50, 10, CopySegmentFinished),
    ];
    let plan = expiration_plan(
        &s,
        Offset(0),
        0,
        TotalRetention {
            retention_ms: 1000,
            retention_bytes: -1,
        },
        1150,
        &BTreeSet::new(),
    );
    assert_eq!(
        plan.deletions,
        vec![(s[0].segment_id.id, RemoteDeletionReason::RetentionMs)]
    );
    assert_eq!(plan.new_log_start, Some(Offset(10)));
    // The walk stops at the first kept segment even if a later one is older.
}

#[test]
fn size_retention_counts_local_only_bytes() {
    let s = [
        remote(0, 9, 1, 10, CopySegmentFinished),
        remote(10, 19, 1, 10, CopySegmentFinished),
    ];
    let r = TotalRetention {
        retention_ms: -1,
        retention_bytes: 25,
    };
    assert!(expiration_plan(&s, Offset(0), 5, r, 0, &BTreeSet::new())
        .deletions
        .is_empty());
    let plan = expiration_plan(&s, Offset(0), 15, r, 0, &BTreeSet::new());
    assert_eq!(
        plan.deletions,
        vec![(s[0].segment_id.id, RemoteDeletionReason::RetentionSize)]
    );
    let plan = expiration_plan(&s, Offset(0), 30, r, 0, &BTreeSet::new());
    assert_eq!(plan.deletions.len(), 2);
    assert_eq!(plan.new_log_start, Some(Offset(20)));
}

#[test]
fn log_start_breach_and_half_finished_work() {
    let started = remote(20, 29, 1, 10, CopySegmentStarted);
    let owned = remote(30, 39, 1, 10, CopySegmentStarted);
    let deleting = remote(0, 9, 1, 10, DeleteSegmentStarted);
    let below = remote(10, 19, 1, 10, CopySegmentFinished);
    let s = [
        deleting.clone(),
        below.clone(),
        started.clone(),
        owned.clone(),
    ];
    let copying: BTreeSet<Uuid> = [owned.segment_id.id].into();
    let plan = expiration_plan(&s, Offset(20), 0, UNLIMITED, 0, &copying);
    assert_eq!(
        plan.deletions,
        vec![
            (
                deleting.segment_id.id,
                RemoteDeletionReason::UnfinishedDelete
            ),
            (
                below.segment_id.id,
                RemoteDeletionReason::LogStartOffsetBreach
            ),
            (started.segment_id.id, RemoteDeletionReason::AbandonedCopy),
        ]
    );
    assert_eq!(plan.new_log_start, None);
}

#[test]
fn unfinished_copies_are_not_counted_in_retention() {
    // Two copied segments of 10 bytes, 10 local-only bytes, and a copy in
    // progress of 1000 bytes whose records are all old.
    let a = remote(0, 9, 100, 10, CopySegmentFinished);
    let b = remote(10, 19, 200, 10, CopySegmentFinished);
    let copy = remote(20, 29, 50, 1000, CopySegmentStarted);
    let copying: BTreeSet<Uuid> = [copy.segment_id.id].into();
    let s = [a.clone(), b.clone(), copy.clone()];
    // retention.bytes = 30: 10 + 10 + 10 local fit; the copy's bytes would not.
    let by_size = TotalRetention {
        retention_ms: -1,
        retention_bytes: 30,
    };
    let plan = expiration_plan(&s, Offset(0), 10, by_size, 0, &copying);
    assert_eq!(plan, ExpirationPlan::default());
    // retention.ms: only finished segments expire by time; the copy (max
    // timestamp 50, older than both) is neither deleted nor moves the start.
    let by_time = TotalRetention {
        retention_ms: 1000,
        retention_bytes: -1,
    };
    let plan = expiration_plan(&s, Offset(0), 10, by_time, 1150, &copying);
    assert_eq!(
        plan.deletions,
        vec![(a.segment_id.id, RemoteDeletionReason::RetentionMs)]
    );
    assert_eq!(plan.new_log_start, Some(Offset(10)));
    // Once the copy task no longer owns it (a crash), it is cleaned up,
    // still without counting toward the new start.
    let plan = expiration_plan(&s, Offset(0), 10, by_size, 0, &BTreeSet::new());
    assert_eq!(
        plan.deletions,
        vec![(copy.segment_id.id, RemoteDeletionReason::AbandonedCopy)]
    );
    assert_eq!(plan.new_log_start, None);
}
