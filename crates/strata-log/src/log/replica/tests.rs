//! The storage steps of replication: assigning an epoch at the log end on
//! becoming leader, truncation at or above the log end trimming a stale
//! epoch, truncation clamping the HW and rebuilding producer state, and a
//! follower's full truncation leaving a valid, reopenable log directory.

use std::path::Path;
use std::sync::Arc;

use crate::batch::BatchBuilder;
use crate::clock::MockClock;
use crate::codec::leader_epoch::EpochEntry;
use crate::config::LogConfig;
use crate::error::LogError;
use crate::leader_epoch::{LeaderEpochCache, LeaderEpochError};
use crate::log::tests::client_batch;
use crate::log::{DirHealth, LoadParams, Log, ReadBound};
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};

fn open_with(dir: &Path, cfg: LogConfig, clock: &Arc<MockClock>, params: LoadParams) -> Arc<Log> {
    Log::open(
        &dir.join("t-0"),
        cfg,
        params,
        clock.clone(),
        DirHealth::new(dir),
    )
    .unwrap()
}

fn open(dir: &Path, clock: &Arc<MockClock>) -> Arc<Log> {
    let cfg = LogConfig {
        segment_bytes: 400,
        ..LogConfig::default()
    };
    open_with(dir, cfg, clock, LoadParams::default())
}

fn append(log: &Log, n: usize, epoch: i32) {
    for _ in 0..n {
        let mut b = client_batch(2, 0, 40);
        log.append_as_leader(&mut b, LeaderEpoch(epoch)).unwrap();
    }
}

fn entries(log: &Log) -> Vec<(i32, i64)> {
    log.lock_epochs()
        .entries()
        .iter()
        .map(|e| (e.epoch.0, e.start_offset.get()))
        .collect()
}

/// What `leader-epoch-checkpoint` holds now, read back from disk.
fn entries_on_disk(log: &Log) -> Vec<(i32, i64)> {
    LeaderEpochCache::load(log.fs(), &log.dir())
        .unwrap()
        .entries()
        .iter()
        .map(|e| (e.epoch.0, e.start_offset.get()))
        .collect()
}

fn idempotent_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0)).producer(ProducerId(pid), ProducerEpoch(epoch), seq);
    for i in 0..n {
        b.append(Timestamp(i as i64), Some(b"k"), Some(b"v"), &[]);
    }
    b.build()
}

#[test]
fn assign_epoch_at_end_records_the_log_end_durably() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 3, 1);
    log.assign_epoch_at_end(LeaderEpoch(4)).unwrap();
    assert_eq!(entries(&log), vec![(1, 0), (4, 6)]);
    assert_eq!(entries_on_disk(&log), vec![(1, 0), (4, 6)]);
    // The new epoch answers with the log end before anything is written in it.
    assert_eq!(
        log.end_offset_for_epoch(LeaderEpoch(4)),
        Some((LeaderEpoch(4), Offset(6)))
    );
    assert_eq!(
        log.end_offset_for_epoch(LeaderEpoch(2)),
        Some((LeaderEpoch(1), Offset(6)))
    );
    // Same epoch again: a no-op (start 6 <= LEO).
    log.assign_epoch_at_end(LeaderEpoch(4)).unwrap();
    assert_eq!(entries(&log), vec![(1, 0), (4, 6)]);
    // Appends in that epoch keep the entry; the first batch starts there.
    append(&log, 1, 4);
    assert_eq!(entries(&log), vec![(1, 0), (4, 6)]);
    // Re-assigning the latest epoch after appends is still a no-op.
    log.assign_epoch_at_end(LeaderEpoch(4)).unwrap();
    assert_eq!(entries(&log), vec![(1, 0), (4, 6)]);
    log.assign_epoch_at_end(LeaderEpoch(5)).unwrap();
    assert_eq!(entries_on_disk(&log), vec![(1, 0), (4, 6), (5, 8)]);
}

#[test]
fn assign_epoch_at_end_drops_conflicting_entries() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 2, 3);
    // A stale entry at the log end from an earlier leadership (as a crash
    // before the trim could leave) and an older epoch number now: every
    // entry with epoch >= 2 or start >= 4 goes.
    log.assign_epoch_at_end(LeaderEpoch(7)).unwrap();
    assert_eq!(entries(&log), vec![(3, 0), (7, 4)]);
    log.assign_epoch_at_end(LeaderEpoch(2)).unwrap();
    assert_eq!(entries(&log), vec![(2, 4)]);
    assert_eq!(entries_on_disk(&log), vec![(2, 4)]);
}

#[test]
fn assign_epoch_at_end_rejects_a_negative_epoch_and_stays_online() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 1, 0);
    let err = log.assign_epoch_at_end(LeaderEpoch(-1)).unwrap_err();
    let LogError::Checkpoint { source, .. } = err else {
        panic!("expected a checkpoint error, got {err:?}");
    };
    assert!(matches!(
        source.downcast_ref::<LeaderEpochError>(),
        Some(LeaderEpochError::InvalidEntry { .. })
    ));
    assert!(log.dir_health().is_online());
    assert_eq!(entries(&log), vec![(0, 0)]);
}

#[test]
fn assign_epoch_at_end_write_failure_takes_the_dir_offline() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 1, 0);
    // The checkpoint's temp file cannot be created where a directory sits.
    let tmp = log.dir().join(format!(
        "{}{}",
        crate::format::LEADER_EPOCH_CHECKPOINT,
        crate::format::TMP_SUFFIX
    ));
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join("x"), b"x").unwrap();
    let err = log.assign_epoch_at_end(LeaderEpoch(1)).unwrap_err();
    assert!(matches!(err, LogError::Checkpoint { .. }), "{err:?}");
    assert!(!log.dir_health().is_online());
    assert!(matches!(
        log.assign_epoch_at_end(LeaderEpoch(2)),
        Err(LogError::DirOffline { .. })
    ));
}

#[test]
fn truncate_at_or_above_the_log_end_trims_an_unwritten_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 2, 1);
    // Became leader for epoch 2 at LEO 4, lost leadership before writing.
    log.assign_epoch_at_end(LeaderEpoch(2)).unwrap();
    assert_eq!(entries(&log), vec![(1, 0), (2, 4)]);
    log.truncate_to(Offset(9)).unwrap();
    assert_eq!(log.log_end_offset(), Offset(4));
    assert_eq!(entries(&log), vec![(1, 0)]);
    assert_eq!(entries_on_disk(&log), vec![(1, 0)]);
    // At exactly the log end too.
    log.assign_epoch_at_end(LeaderEpoch(3)).unwrap();
    log.truncate_to(Offset(4)).unwrap();
    assert_eq!(entries_on_disk(&log), vec![(1, 0)]);
    // Entries below the log end stay.
    log.truncate_to(Offset(4)).unwrap();
    assert_eq!(entries(&log), vec![(1, 0)]);
    assert_eq!(log.latest_epoch(), Some(LeaderEpoch(1)));
}

#[test]
fn truncation_clamps_the_high_watermark_and_rebuilds_producer_state() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    let pid = ProducerId(9);
    let mut ends = Vec::new();
    for seq in 0..6 {
        let mut b = idempotent_batch(9, 0, seq * 2, 2);
        let info = log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
        ends.push(info.last_offset.plus(1));
    }
    assert!(log.num_segments() > 1, "the test needs a roll");
    assert_eq!(log.producer_state_of(pid).unwrap().last_seq(), 11);
    log.update_high_watermark(Offset(12));
    assert_eq!(log.high_watermark(), Offset(12));
    // Into the middle of the third batch's successor: offsets 6.. go.
    log.truncate_to(Offset(6)).unwrap();
    assert_eq!(log.log_end_offset(), Offset(6));
    assert_eq!(log.high_watermark(), Offset(6));
    let entry = log.producer_state_of(pid).unwrap();
    assert_eq!(entry.last_seq(), 5);
    assert_eq!(entry.last_data_offset(), Offset(5));
    assert_eq!(log.producer_state_end_offset(), Offset(6));
    // The producer's next sequence is accepted, the removed ones are new again.
    let mut next = idempotent_batch(9, 0, 6, 2);
    let info = log.append_as_leader(&mut next, LeaderEpoch(0)).unwrap();
    assert!(!info.duplicate);
    assert_eq!(info.first_offset, Offset(6));
    // A HW below the cut is kept as it is.
    log.update_high_watermark(Offset(3));
    log.truncate_to(Offset(7)).unwrap();
    assert_eq!(log.high_watermark(), Offset(3));
}

#[test]
fn truncate_fully_and_start_at_leaves_a_reopenable_log() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    for seq in 0..6 {
        let mut b = idempotent_batch(5, 0, seq * 2, 2);
        log.append_as_leader(&mut b, LeaderEpoch(3)).unwrap();
    }
    assert!(log.num_segments() > 1);
    log.update_high_watermark(Offset(10));
    log.truncate_fully_and_start_at(Offset(500)).unwrap();
    assert_eq!(log.log_start_offset(), Offset(500));
    assert_eq!(log.local_log_start_offset(), Offset(500));
    assert_eq!(log.log_end_offset(), Offset(500));
    assert_eq!(log.high_watermark(), Offset(500));
    assert_eq!(log.recovery_point(), Offset(500));
    assert_eq!(log.num_segments(), 1);
    assert_eq!(log.segments()[0].base_offset, Offset(500));
    assert!(entries(&log).is_empty());
    assert!(entries_on_disk(&log).is_empty());
    assert_eq!(log.producer_id_count(), 0);
    assert!(log.producer_snapshot_offsets().is_empty());
    assert_eq!(log.producer_state_end_offset(), Offset(500));
    assert!(matches!(
        log.read(Offset(0), 1 << 20, ReadBound::LogEnd, false),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // The follower goes on fetching from the leader's log start.
    let mut b = BatchBuilder::new(Offset(500))
        .partition_leader_epoch(LeaderEpoch(6))
        .producer(ProducerId(5), ProducerEpoch(0), 40);
    b.append(Timestamp(1), Some(b"k"), Some(b"v"), &[]);
    log.append_as_follower(&b.build()).unwrap();
    assert_eq!(log.log_end_offset(), Offset(501));
    assert_eq!(entries(&log), vec![(6, 500)]);
    let live: Vec<String> = std::fs::read_dir(log.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(crate::format::DELETED_SUFFIX))
        .collect();
    assert!(
        live.iter().all(|f| !f.starts_with("00000000000000000000")),
        "old segment files left live: {live:?}"
    );
    // Reopen after an unclean stop (no checkpoints at all): the directory
    // alone gives the new start.
    let dir_path = log.dir();
    drop(log);
    let reopened = Log::open(
        &dir_path,
        LogConfig {
            segment_bytes: 400,
            ..LogConfig::default()
        },
        LoadParams::default(),
        clock.clone(),
        DirHealth::new(dir.path()),
    )
    .unwrap();
    assert_eq!(reopened.log_start_offset(), Offset(500));
    assert_eq!(reopened.log_end_offset(), Offset(501));
    assert_eq!(entries(&reopened), vec![(6, 500)]);
    assert_eq!(
        reopened
            .producer_state_of(ProducerId(5))
            .unwrap()
            .last_seq(),
        40
    );
    let data = reopened
        .read(Offset(500), 1 << 20, ReadBound::LogEnd, false)
        .unwrap();
    assert_eq!(data.first_offset_in_slice, Offset(500));
    // A clean close and reopen with the checkpointed start as well.
    reopened.close().unwrap();
    let params = LoadParams {
        log_start_offset: Offset(500),
        recovery_point: Offset(501),
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    let again = open_with(
        dir.path(),
        LogConfig {
            segment_bytes: 400,
            ..LogConfig::default()
        },
        &clock,
        params,
    );
    assert_eq!(again.log_start_offset(), Offset(500));
    assert_eq!(again.log_end_offset(), Offset(501));
    assert_eq!(
        again.end_offset_for_epoch(LeaderEpoch(6)),
        Some((LeaderEpoch(6), Offset(501)))
    );
}

#[test]
fn truncate_fully_and_start_at_rejects_a_negative_offset() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 1, 0);
    assert!(matches!(
        log.truncate_fully_and_start_at(Offset(-1)),
        Err(LogError::InvalidOffset { .. })
    ));
    assert_eq!(log.log_end_offset(), Offset(2));
    assert_eq!(
        log.lock_epochs().entries(),
        &[EpochEntry {
            epoch: LeaderEpoch(0),
            start_offset: Offset(0)
        }]
    );
}

#[test]
fn end_offset_for_epoch_below_the_first_kept_entry_is_defined() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), &clock);
    append(&log, 2, 1);
    append(&log, 2, 3);
    log.update_high_watermark(Offset(8));
    log.maybe_increment_log_start_offset(Offset(5)).unwrap();
    assert_eq!(entries(&log), vec![(3, 5)]);
    assert_eq!(
        log.end_offset_for_epoch(LeaderEpoch(1)),
        Some((LeaderEpoch(1), Offset(5)))
    );
    assert_eq!(
        log.end_offset_for_epoch(LeaderEpoch(3)),
        Some((LeaderEpoch(3), Offset(8)))
    );
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch(4)), None);
    assert_eq!(log.end_offset_for_epoch(LeaderEpoch::NONE), None);
}

/// Every batch from `from` to the log end (reads stop at segment ends).
fn bytes_from(log: &Log, from: i64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = Offset(from);
    while next < log.log_end_offset() {
        let data = log.read(next, 1 << 20, ReadBound::LogEnd, true).unwrap();
        let chunk = data.read_to_vec().unwrap();
        let mut pos = 0;
        while pos + 12 <= chunk.len() {
            let base = i64::from_be_bytes(chunk[pos..pos + 8].try_into().unwrap());
            let len = i32::from_be_bytes(chunk[pos + 8..pos + 12].try_into().unwrap()) as usize;
            let view = crate::batch::BatchView::parse(&chunk[pos..pos + 12 + len]).unwrap();
            assert!(base >= next.0);
            next = view.last_offset().plus(1);
            pos += 12 + len;
        }
        out.extend_from_slice(&chunk);
    }
    out
}

#[test]
fn follower_truncation_inside_its_last_segment_then_the_new_leaders_batch() {
    // A follower took the old leader's last batch (epoch 0), the new leader
    // (epoch 1) never had it: truncate to its base, then take the new
    // leader's batch at the same offsets.
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let leader = open(&dir.path().join("leader"), &clock);
    let follower = open(&dir.path().join("follower"), &clock);
    let newer = open(&dir.path().join("newer"), &clock);
    for seq in 0..20 {
        let mut b = idempotent_batch(7, 0, seq * 2, 2);
        leader.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    }
    follower
        .append_as_follower(&bytes_from(&leader, 0))
        .unwrap();
    assert_eq!(follower.log_end_offset(), Offset(40));
    follower.update_high_watermark(Offset(38));
    follower.truncate_to(Offset(38)).unwrap();
    assert_eq!(follower.log_end_offset(), Offset(38));
    assert_eq!(entries(&follower), vec![(0, 0)]);
    // The new leader had up to 38 and wrote the producer's retry at 38 in
    // epoch 1.
    let first_38 = bytes_from(&follower, 0);
    newer.append_as_follower(&first_38).unwrap();
    let mut b = idempotent_batch(7, 0, 38, 2);
    newer.append_as_leader(&mut b, LeaderEpoch(1)).unwrap();
    follower
        .append_as_follower(&bytes_from(&newer, 38))
        .unwrap();
    assert_eq!(follower.log_end_offset(), Offset(40));
    assert_eq!(entries(&follower), vec![(0, 0), (1, 38)]);
    assert_eq!(bytes_from(&follower, 0), bytes_from(&newer, 0));
}

/// A far-behind follower of a tiered leader restarts at the leader's local
/// log start with the remote segment's epoch entries and producer snapshot
/// (Kafka `buildRemoteLogAuxState`): an idempotent producer continues on
/// it, a retried batch is not accepted out of order.
#[test]
fn restore_from_remote_installs_epochs_and_producer_state() {
    let leader_dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let leader = open(leader_dir.path(), &clock);
    let pid = ProducerId(7);
    let mut b = idempotent_batch(7, 0, 0, 3);
    leader.append_as_leader(&mut b, LeaderEpoch(1)).unwrap();
    let mut b = idempotent_batch(7, 0, 3, 2);
    leader.append_as_leader(&mut b, LeaderEpoch(3)).unwrap();
    leader.roll().unwrap();
    assert_eq!(leader.log_end_offset(), Offset(5));
    let snapshot =
        std::fs::read(crate::format::snapshot_file(&leader.dir(), Offset(5), "")).unwrap();

    let follower_dir = tempfile::tempdir().unwrap();
    let follower = open(follower_dir.path(), &clock);
    append(&follower, 1, 1);
    let epochs = [
        (LeaderEpoch(1), Offset(0)),
        (LeaderEpoch(3), Offset(3)),
        (LeaderEpoch(9), Offset(6)),
    ];
    follower
        .restore_from_remote(Offset(5), Offset(0), &epochs, Some(&snapshot))
        .unwrap();
    assert_eq!(follower.log_end_offset(), Offset(5));
    assert_eq!(follower.local_log_start_offset(), Offset(5));
    assert_eq!(follower.high_watermark(), Offset(5));
    // Only the entries at or below the new start.
    assert_eq!(entries(&follower), vec![(1, 0), (3, 3)]);
    assert_eq!(entries_on_disk(&follower), vec![(1, 0), (3, 3)]);
    assert_eq!(follower.producer_state_of(pid).unwrap().last_seq(), 4);
    assert!(follower
        .read(Offset(4), 1 << 20, ReadBound::LogEnd, false)
        .is_err());

    // The producer's next sequence is accepted, a gap is not.
    let mut gap = idempotent_batch(7, 0, 9, 1);
    assert!(follower.append_as_leader(&mut gap, LeaderEpoch(9)).is_err());
    let mut next = idempotent_batch(7, 0, 5, 1);
    let info = follower
        .append_as_leader(&mut next, LeaderEpoch(9))
        .unwrap();
    assert_eq!(info.first_offset, Offset(5));
    assert_eq!(follower.producer_state_of(pid).unwrap().last_seq(), 5);

    // Without a snapshot (no producer yet) the producer state is empty.
    let other_dir = tempfile::tempdir().unwrap();
    let other = open(other_dir.path(), &clock);
    other
        .restore_from_remote(Offset(5), Offset(2), &epochs[..2], None)
        .unwrap();
    assert!(other.producer_state_of(pid).is_none());
    assert_eq!(other.log_start_offset_for_checkpoint(), Offset(2));
    assert!(other
        .restore_from_remote(Offset(-1), Offset(0), &[], None)
        .is_err());
}
