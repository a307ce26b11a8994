//! Unit tests of the validation rules, transactions, expiration and the
//! snapshot lifecycle; most mirror a named test of Kafka's
//! `ProducerStateManagerTest`.

use std::fs;
use std::path::Path;

use tempfile::TempDir;

use super::*;
use crate::batch::{build_end_txn_marker, BatchBuilder, BatchView, EndTransactionMarker};
use crate::format::snapshot_file;
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp, TopicPartition};

const PID: ProducerId = ProducerId(1);
const EXPIRATION_MS: i64 = 60_000;

fn manager(dir: &Path) -> ProducerStateManager {
    ProducerStateManager::new(dir, TopicPartition::new("t", 0), EXPIRATION_MS).unwrap()
}

fn setup() -> (TempDir, ProducerStateManager) {
    let dir = TempDir::new().unwrap();
    let psm = manager(dir.path());
    (dir, psm)
}

/// A data batch of `records` records at `offset` with base sequence `seq`.
fn batch(
    pid: ProducerId,
    epoch: i16,
    seq: i32,
    offset: i64,
    records: usize,
    ts: i64,
    txn: bool,
) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(offset))
        .producer(pid, ProducerEpoch(epoch), seq)
        .transactional(txn);
    for _ in 0..records {
        b.append(Timestamp(ts), None, Some(b"v"), &[]);
    }
    b.build()
}

fn marker(
    pid: ProducerId,
    epoch: i16,
    offset: i64,
    commit: bool,
    coordinator_epoch: i32,
    ts: i64,
) -> Vec<u8> {
    let m = if commit {
        EndTransactionMarker::commit(coordinator_epoch)
    } else {
        EndTransactionMarker::abort(coordinator_epoch)
    };
    build_end_txn_marker(
        Offset(offset),
        LeaderEpoch(0),
        pid,
        ProducerEpoch(epoch),
        Timestamp(ts),
        m,
    )
}

/// Kafka's test `appendEntry`: prepare, append, update, complete, move the map end.
fn append(
    psm: &mut ProducerStateManager,
    origin: AppendOrigin,
    bytes: &[u8],
) -> Result<Option<CompletedTxn>, ProducerStateError> {
    let view = BatchView::parse(bytes).unwrap();
    let mut info = psm.prepare_update(view.producer_id(), origin);
    let completed = info.append_batch(&view)?;
    psm.update(info);
    if let Some(txn) = completed {
        psm.complete_txn(&txn);
    }
    psm.update_map_end_offset(view.next_offset());
    Ok(completed)
}

fn client(
    psm: &mut ProducerStateManager,
    epoch: i16,
    seq: i32,
    offset: i64,
) -> Result<(), ProducerStateError> {
    append(
        psm,
        AppendOrigin::Client,
        &batch(PID, epoch, seq, offset, 1, 1_000, false),
    )
    .map(|_| ())
}

fn client_txn(
    psm: &mut ProducerStateManager,
    pid: ProducerId,
    epoch: i16,
    seq: i32,
    offset: i64,
) -> Result<(), ProducerStateError> {
    append(
        psm,
        AppendOrigin::Client,
        &batch(pid, epoch, seq, offset, 1, 1_000, true),
    )
    .map(|_| ())
}

fn end_txn(
    psm: &mut ProducerStateManager,
    pid: ProducerId,
    epoch: i16,
    offset: i64,
    commit: bool,
    coord: i32,
) -> Result<Option<CompletedTxn>, ProducerStateError> {
    append(
        psm,
        AppendOrigin::Coordinator,
        &marker(pid, epoch, offset, commit, coord, 5_000),
    )
}

fn entry(psm: &ProducerStateManager, pid: ProducerId) -> ProducerStateEntry {
    psm.last_entry(pid).cloned().expect("producer has state")
}

fn is_out_of_order(r: Result<(), ProducerStateError>) -> Option<SequenceFault> {
    match r {
        Err(ProducerStateError::OutOfOrderSequence { fault, .. }) => Some(fault),
        _ => None,
    }
}

// ---- epochs and sequences ------------------------------------------------

#[test]
fn basic_id_mapping() {
    let (_d, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    client(&mut psm, 0, 1, 1).unwrap();
    // A duplicate that reaches append_batch (not caught by find_duplicate_batch) is out of order.
    assert_eq!(
        is_out_of_order(client(&mut psm, 0, 1, 2)),
        Some(SequenceFault::NotNextInSequence { last_sequence: 1 })
    );
    // A gap.
    assert_eq!(
        is_out_of_order(client(&mut psm, 0, 5, 2)),
        Some(SequenceFault::NotNextInSequence { last_sequence: 1 })
    );
    // Failed appends changed nothing.
    assert_eq!(entry(&psm, PID).last_seq(), 1);
    // A new epoch starting at 0.
    client(&mut psm, 1, 0, 3).unwrap();
    assert_eq!(entry(&psm, PID).producer_epoch(), ProducerEpoch(1));
    // The old epoch is fenced.
    match client(&mut psm, 0, 2, 4) {
        Err(ProducerStateError::InvalidProducerEpoch {
            epoch,
            current_epoch,
            offset,
            ..
        }) => {
            assert_eq!(
                (epoch, current_epoch, offset),
                (ProducerEpoch(0), ProducerEpoch(1), Offset(4))
            );
        }
        other => panic!("expected InvalidProducerEpoch, got {other:?}"),
    }
}

#[test]
fn higher_epoch_must_start_at_zero() {
    let (_d, mut psm) = setup();
    client(&mut psm, 3, 0, 0).unwrap();
    client(&mut psm, 3, 1, 1).unwrap();
    assert_eq!(
        is_out_of_order(client(&mut psm, 4, 2, 2)),
        Some(SequenceFault::NewEpochNotAtZero {
            current_epoch: ProducerEpoch(3)
        })
    );
    client(&mut psm, 4, 0, 2).unwrap();
    let e = entry(&psm, PID);
    assert_eq!(
        (e.producer_epoch(), e.first_seq(), e.last_seq()),
        (ProducerEpoch(4), 0, 0)
    );
}

/// Kafka 3.9 never answers UNKNOWN_PRODUCER_ID from the log: a producer
/// without state (never seen, expired, or its data deleted) may start at any
/// sequence (`ProducerAppendInfo.checkSequence`: `currentEntry.producerEpoch()
/// == NO_PRODUCER_EPOCH` accepts).
#[test]
fn unknown_producer_accepts_any_sequence() {
    let (_d, mut psm) = setup();
    client(&mut psm, 2, 42, 0).unwrap();
    let e = entry(&psm, PID);
    assert_eq!(
        (e.producer_epoch(), e.first_seq(), e.last_seq()),
        (ProducerEpoch(2), 42, 42)
    );
    // From then on the producer is known and sequences are checked.
    assert!(is_out_of_order(client(&mut psm, 2, 44, 1)).is_some());
    client(&mut psm, 2, 43, 1).unwrap();
}

#[test]
fn expired_producer_accepts_any_sequence_again() {
    let (_d, mut psm) = setup();
    client(&mut psm, 5, 0, 1).unwrap();
    psm.remove_expired_producers(1_000 + EXPIRATION_MS);
    assert!(psm.last_entry(PID).is_none());
    client(&mut psm, 5, 7, 2).unwrap();
    assert_eq!(psm.producer_id_count(), 1);
    assert_eq!(entry(&psm, PID).last_seq(), 7);
    assert_eq!(psm.map_end_offset(), Offset(3));
}

#[test]
fn sequence_wraps_at_i32_max() {
    let (_d, mut psm) = setup();
    append(
        &mut psm,
        AppendOrigin::Replication,
        &batch(PID, 15, i32::MAX, 735, 1, 1_000, false),
    )
    .unwrap();
    // MAX followed by 1 is out of order; by 0 it continues.
    assert_eq!(
        is_out_of_order(client(&mut psm, 15, 1, 1_235)),
        Some(SequenceFault::NotNextInSequence {
            last_sequence: i32::MAX
        })
    );
    client(&mut psm, 15, 0, 1_235).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.first_seq(), e.last_seq()), (i32::MAX, 0));
}

#[test]
fn batch_spanning_the_wrap_is_tracked() {
    let (_d, mut psm) = setup();
    // 21 records from MAX - 10: sequences MAX-10 ..= MAX, 0 ..= 9.
    client(&mut psm, 15, 0, 0).unwrap();
    let wrap = batch(PID, 16, 0, 1, 1, 1_000, false);
    append(&mut psm, AppendOrigin::Client, &wrap).unwrap();
    let spanning = batch(PID, 16, i32::MAX - 10, 2_000, 21, 1_000, false);
    append(&mut psm, AppendOrigin::Replication, &spanning).unwrap();
    let e = entry(&psm, PID);
    assert_eq!(e.last_seq(), 9);
    assert_eq!(
        e.batch_metadata().last().unwrap().first_seq(),
        i32::MAX - 10
    );
    assert_eq!(e.last_data_offset(), Offset(2_020));
    assert_eq!(
        e.batch_metadata().last().unwrap().first_offset(),
        Offset(2_000)
    );
    // The duplicate check sees the wrapped range.
    assert!(psm
        .find_duplicate_batch(&BatchView::parse(&spanning).unwrap())
        .is_some());
    client(&mut psm, 16, 10, 2_021).unwrap();
}

#[test]
fn replication_skips_sequence_checks_and_tolerates_old_epochs() {
    let (_d, mut psm) = setup();
    client(&mut psm, 3, 0, 0).unwrap();
    assert!(is_out_of_order(client(&mut psm, 3, 3, 1)).is_some());
    append(
        &mut psm,
        AppendOrigin::Replication,
        &batch(PID, 3, 3, 1, 1, 1_000, false),
    )
    .unwrap();
    assert_eq!(entry(&psm, PID).last_seq(), 3);
    // An older epoch is only logged for replication.
    append(
        &mut psm,
        AppendOrigin::Replication,
        &batch(PID, 2, 9, 2, 1, 1_000, false),
    )
    .unwrap();
    assert_eq!(entry(&psm, PID).producer_epoch(), ProducerEpoch(2));
}

#[test]
fn coordinator_origin_checks_epoch_but_not_sequence() {
    let (_d, mut psm) = setup();
    append(
        &mut psm,
        AppendOrigin::Coordinator,
        &batch(PID, 4, -1, 99, 1, 1_000, false),
    )
    .unwrap();
    append(
        &mut psm,
        AppendOrigin::Coordinator,
        &batch(PID, 4, -1, 100, 1, 1_000, false),
    )
    .unwrap();
    let stale = append(
        &mut psm,
        AppendOrigin::Coordinator,
        &batch(PID, 3, -1, 101, 1, 1_000, false),
    );
    assert!(matches!(
        stale,
        Err(ProducerStateError::InvalidProducerEpoch { .. })
    ));
}

#[test]
fn prepare_update_does_not_mutate() {
    let (_d, mut psm) = setup();
    let first = batch(PID, 0, 0, 15, 6, 1_000, false);
    let mut info = psm.prepare_update(PID, AppendOrigin::Client);
    info.append_batch(&BatchView::parse(&first).unwrap())
        .unwrap();
    assert!(psm.last_entry(PID).is_none());
    psm.update(info);

    let next = batch(PID, 0, 6, 26, 5, 1_000, false);
    let mut info = psm.prepare_update(PID, AppendOrigin::Client);
    info.append_batch(&BatchView::parse(&next).unwrap())
        .unwrap();
    let e = entry(&psm, PID);
    assert_eq!(
        (e.first_seq(), e.last_seq(), e.last_data_offset()),
        (0, 5, Offset(20))
    );
    psm.update(info);
    let e = entry(&psm, PID);
    assert_eq!(
        (e.first_seq(), e.last_seq(), e.last_data_offset()),
        (0, 10, Offset(30))
    );
}

#[test]
fn append_info_rejects_another_producers_batch() {
    let (_d, psm) = setup();
    let mut info = psm.prepare_update(ProducerId(9), AppendOrigin::Client);
    let other = batch(PID, 0, 0, 0, 1, 1_000, false);
    assert!(matches!(
        info.append_batch(&BatchView::parse(&other).unwrap()),
        Err(ProducerStateError::ProducerIdMismatch {
            expected: ProducerId(9),
            got: PID,
            ..
        })
    ));
}

// ---- the duplicate window ------------------------------------------------------

#[test]
fn duplicates_within_the_last_five_batches_are_found() {
    let (_d, mut psm) = setup();
    let batches: Vec<Vec<u8>> = (0..6)
        .map(|i| batch(PID, 0, i * 2, i as i64 * 2, 2, 100 + i as i64, false))
        .collect();
    for b in &batches {
        append(&mut psm, AppendOrigin::Client, b).unwrap();
    }
    assert_eq!(
        entry(&psm, PID).batch_metadata().len(),
        NUM_BATCHES_TO_RETAIN
    );
    // Batches 1..=5 are retained: a retry gets its original offsets and timestamp.
    for (i, b) in batches.iter().enumerate().skip(1) {
        let dup = psm
            .find_duplicate_batch(&BatchView::parse(b).unwrap())
            .expect("duplicate");
        assert_eq!(dup.first_offset(), Offset(i as i64 * 2));
        assert_eq!(dup.last_offset, Offset(i as i64 * 2 + 1));
        assert_eq!(dup.timestamp, Timestamp(100 + i as i64));
    }
    // Batch 0 fell out of the window: no duplicate, and appending it is out of order.
    let oldest = BatchView::parse(&batches[0]).unwrap();
    assert_eq!(psm.find_duplicate_batch(&oldest), None);
    let mut info = psm.prepare_update(PID, AppendOrigin::Client);
    assert!(matches!(
        info.append_batch(&oldest),
        Err(ProducerStateError::OutOfOrderSequence {
            fault: SequenceFault::NotNextInSequence { last_sequence: 11 },
            ..
        })
    ));
}

#[test]
fn duplicate_needs_same_epoch_and_exact_range() {
    let (_d, mut psm) = setup();
    append(
        &mut psm,
        AppendOrigin::Client,
        &batch(PID, 0, 0, 0, 3, 100, false),
    )
    .unwrap();
    let same = batch(PID, 0, 0, 50, 3, 100, false);
    assert!(psm
        .find_duplicate_batch(&BatchView::parse(&same).unwrap())
        .is_some());
    let overlapping = batch(PID, 0, 0, 50, 2, 100, false);
    assert_eq!(
        psm.find_duplicate_batch(&BatchView::parse(&overlapping).unwrap()),
        None
    );
    let other_epoch = batch(PID, 1, 0, 50, 3, 100, false);
    assert_eq!(
        psm.find_duplicate_batch(&BatchView::parse(&other_epoch).unwrap()),
        None
    );
    let other_producer = batch(ProducerId(2), 0, 0, 50, 3, 100, false);
    assert_eq!(
        psm.find_duplicate_batch(&BatchView::parse(&other_producer).unwrap()),
        None
    );
}

// ---- transactions ----------------------------------------------------------------

#[test]
fn transaction_begin_commit_and_first_unstable_offset() {
    let (_d, mut psm) = setup();
    assert_eq!(psm.first_unstable_offset(), None);
    client_txn(&mut psm, PID, 5, 0, 99).unwrap();
    assert_eq!(
        entry(&psm, PID).current_txn_first_offset(),
        Some(Offset(99))
    );
    assert_eq!(psm.first_unstable_offset(), Some(Offset(99)));
    let other = ProducerId(2);
    client_txn(&mut psm, other, 5, 0, 105).unwrap();
    assert_eq!(psm.first_undecided_offset(), Some(Offset(99)));

    let done = end_txn(&mut psm, PID, 5, 109, true, 0)
        .unwrap()
        .expect("completes");
    assert_eq!(
        done,
        CompletedTxn {
            producer_id: PID,
            first_offset: Offset(99),
            last_offset: Offset(109),
            is_aborted: false
        }
    );
    assert_eq!(psm.first_undecided_offset(), Some(Offset(105)));
    // Decided but the marker is not replicated yet.
    assert_eq!(psm.first_unstable_offset(), Some(Offset(99)));
    psm.on_high_watermark_updated(Offset(100));
    assert_eq!(psm.first_unstable_offset(), Some(Offset(99)));
    psm.on_high_watermark_updated(Offset(110));
    assert_eq!(psm.first_unstable_offset(), Some(Offset(105)));

    let aborted = end_txn(&mut psm, other, 5, 112, false, 0)
        .unwrap()
        .expect("completes");
    assert!(aborted.is_aborted);
    assert_eq!(psm.first_undecided_offset(), None);
    assert_eq!(psm.first_unstable_offset(), Some(Offset(105)));
    psm.on_high_watermark_updated(Offset(113));
    assert_eq!(psm.first_unstable_offset(), None);
    assert_eq!(entry(&psm, PID).current_txn_first_offset(), None);
}

#[test]
fn non_transactional_batch_inside_a_transaction_is_rejected() {
    let (_d, mut psm) = setup();
    client_txn(&mut psm, PID, 0, 0, 0).unwrap();
    match client(&mut psm, 0, 1, 1) {
        Err(ProducerStateError::InvalidTxnState {
            txn_first_offset,
            offset,
            ..
        }) => {
            assert_eq!((txn_first_offset, offset), (Offset(0), Offset(1)));
        }
        other => panic!("expected InvalidTxnState, got {other:?}"),
    }
}

#[test]
fn marker_without_a_transaction_completes_nothing() {
    let (_d, mut psm) = setup();
    assert_eq!(end_txn(&mut psm, PID, 2, 27, true, 0).unwrap(), None);
    let e = entry(&psm, PID);
    assert_eq!(
        (e.producer_epoch(), e.last_seq()),
        (ProducerEpoch(2), NO_SEQUENCE)
    );
    assert_eq!(e.last_timestamp(), Timestamp(5_000));
    // A marker-only producer is still fenced on an older epoch ...
    assert!(matches!(
        client(&mut psm, 0, 0, 28),
        Err(ProducerStateError::InvalidProducerEpoch { .. })
    ));
    // ... and must restart at sequence 0.
    assert_eq!(
        is_out_of_order(client(&mut psm, 2, 17, 28)),
        Some(SequenceFault::NotNextInSequence {
            last_sequence: NO_SEQUENCE
        })
    );
    client(&mut psm, 2, 0, 28).unwrap();
}

#[test]
fn marker_with_bumped_epoch_resets_sequences() {
    let (_d, mut psm) = setup();
    client_txn(&mut psm, PID, 0, 0, 0).unwrap();
    client_txn(&mut psm, PID, 0, 1, 1).unwrap();
    end_txn(&mut psm, PID, 1, 2, false, 0)
        .unwrap()
        .expect("aborts the open transaction");
    let e = entry(&psm, PID);
    assert_eq!(
        (
            e.producer_epoch(),
            e.last_seq(),
            e.current_txn_first_offset()
        ),
        (ProducerEpoch(1), NO_SEQUENCE, None)
    );
    assert_eq!(e.last_data_offset(), Offset(-1));
    assert!(is_out_of_order(client_txn(&mut psm, PID, 1, 2, 3)).is_some());
    assert!(is_out_of_order(client_txn(&mut psm, PID, 2, 2, 3)).is_some());
    client_txn(&mut psm, PID, 1, 0, 3).unwrap();
    // A fencing marker keeps the producer (its epoch) even when idle.
    end_txn(&mut psm, PID, 2, 4, false, 0).unwrap();
    psm.remove_expired_producers(5_000 + EXPIRATION_MS - 1);
    assert!(psm.last_entry(PID).is_some());
}

#[test]
fn marker_epoch_and_coordinator_fencing() {
    let (_d, mut psm) = setup();
    client_txn(&mut psm, PID, 5, 0, 99).unwrap();
    assert!(matches!(
        end_txn(&mut psm, PID, 3, 100, true, 0),
        Err(ProducerStateError::InvalidProducerEpoch { .. })
    ));
    end_txn(&mut psm, PID, 5, 100, true, 1).unwrap();
    assert_eq!(entry(&psm, PID).coordinator_epoch(), 1);
    end_txn(&mut psm, PID, 5, 101, true, 1).unwrap();
    end_txn(&mut psm, PID, 5, 102, true, 2).unwrap();
    match end_txn(&mut psm, PID, 5, 103, true, 1) {
        Err(ProducerStateError::TransactionCoordinatorFenced {
            coordinator_epoch,
            current_coordinator_epoch,
            ..
        }) => {
            assert_eq!((coordinator_epoch, current_coordinator_epoch), (1, 2));
        }
        other => panic!("expected TransactionCoordinatorFenced, got {other:?}"),
    }
    // Replication only logs it.
    append(
        &mut psm,
        AppendOrigin::Replication,
        &marker(PID, 5, 103, true, 1, 6_000),
    )
    .unwrap();
}

#[test]
fn empty_control_batch_is_ignored() {
    let (_d, mut psm) = setup();
    // A marker batch whose record the cleaner removed: header only, count 0.
    let mut bytes = marker(PID, 3, 15, true, 0, 5_000);
    bytes.truncate(crate::batch::RECORD_BATCH_OVERHEAD);
    bytes[8..12]
        .copy_from_slice(&((crate::batch::RECORD_BATCH_OVERHEAD - 12) as i32).to_be_bytes());
    bytes[57..61].copy_from_slice(&0i32.to_be_bytes());
    let crc = crate::batch::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(
        append(&mut psm, AppendOrigin::Client, &bytes).unwrap(),
        None
    );
    let e = entry(&psm, PID);
    assert_eq!(e.current_txn_first_offset(), None);
    assert_eq!(e.producer_epoch(), ProducerEpoch::NONE);
}

#[test]
fn last_stable_offset_of_completed_transactions() {
    let (_d, mut psm) = setup();
    let (p1, p2, p3) = (ProducerId(1), ProducerId(2), ProducerId(3));
    client_txn(&mut psm, p1, 0, 0, 992_342).unwrap();
    client_txn(&mut psm, p2, 0, 0, 992_367).unwrap();
    client_txn(&mut psm, p3, 0, 0, 992_399).unwrap();
    let t1 = CompletedTxn {
        producer_id: p1,
        first_offset: Offset(992_342),
        last_offset: Offset(992_414),
        is_aborted: false,
    };
    assert_eq!(psm.last_stable_offset(&t1), Offset(992_367));
    psm.complete_txn(&t1);
    psm.on_high_watermark_updated(Offset(992_415));
    assert_eq!(psm.first_unstable_offset(), Some(Offset(992_367)));
    let t2 = CompletedTxn {
        producer_id: p2,
        first_offset: Offset(992_367),
        last_offset: Offset(992_500),
        is_aborted: false,
    };
    let t3 = CompletedTxn {
        producer_id: p3,
        first_offset: Offset(992_399),
        last_offset: Offset(992_434),
        is_aborted: false,
    };
    assert_eq!(psm.last_stable_offset(&t3), Offset(992_367));
    psm.complete_txn(&t3);
    assert_eq!(psm.last_stable_offset(&t2), Offset(992_501));
    psm.complete_txn(&t2);
    psm.on_high_watermark_updated(Offset(992_501));
    assert_eq!(psm.first_unstable_offset(), None);
}

#[test]
fn producer_updates_collects_several_producers_and_completed_txns() {
    let (_d, mut psm) = setup();
    client_txn(&mut psm, ProducerId(7), 0, 0, 0).unwrap();
    let batches = [
        batch(ProducerId(5), 0, 0, 1, 2, 10, false),
        batch(ProducerId(6), 0, 0, 3, 1, 10, false),
        batch(ProducerId(5), 0, 2, 4, 1, 10, false),
        marker(ProducerId(7), 0, 5, true, 0, 10),
        batch(ProducerId(-1), -1, -1, 6, 1, 10, false),
    ];
    let mut updates = ProducerUpdates::new();
    for b in &batches {
        psm.validate_batch(
            &mut updates,
            &BatchView::parse(b).unwrap(),
            AppendOrigin::Client,
        )
        .unwrap();
    }
    assert_eq!(
        updates
            .get(ProducerId(5))
            .unwrap()
            .to_entry()
            .batch_metadata()
            .len(),
        2
    );
    assert!(
        psm.last_entry(ProducerId(5)).is_none(),
        "nothing applied before apply_updates"
    );
    let completed = psm.apply_updates(updates);
    assert_eq!(completed.len(), 1);
    assert_eq!(psm.last_stable_offset(&completed[0]), Offset(6));
    psm.complete_txn(&completed[0]);
    assert_eq!(entry(&psm, ProducerId(5)).last_seq(), 2);
    assert_eq!(entry(&psm, ProducerId(6)).last_seq(), 0);
    assert_eq!(psm.producer_id_count(), 3);
    assert_eq!(psm.first_undecided_offset(), None);

    // A failing batch: the caller drops the updates and nothing changes.
    let mut updates = ProducerUpdates::new();
    psm.validate_batch(
        &mut updates,
        &BatchView::parse(&batch(ProducerId(5), 0, 3, 7, 1, 10, false)).unwrap(),
        AppendOrigin::Client,
    )
    .unwrap();
    let gap = batch(ProducerId(6), 0, 5, 8, 1, 10, false);
    assert!(psm
        .validate_batch(
            &mut updates,
            &BatchView::parse(&gap).unwrap(),
            AppendOrigin::Client
        )
        .is_err());
    drop(updates);
    assert_eq!(entry(&psm, ProducerId(5)).last_seq(), 2);
}

// ---- expiration and log start ------------------------------------------------------

#[test]
fn expiration_spares_open_transactions() {
    let (_d, mut psm) = setup();
    client_txn(&mut psm, PID, 5, 0, 99).unwrap();
    client(&mut psm, 0, 0, 100).unwrap_err(); // older epoch than the transaction's
    append(
        &mut psm,
        AppendOrigin::Client,
        &batch(ProducerId(2), 0, 0, 100, 1, 1_000, false),
    )
    .unwrap();
    psm.remove_expired_producers(1_000 + EXPIRATION_MS - 1);
    assert_eq!(psm.producer_id_count(), 2);
    psm.remove_expired_producers(1_000 + EXPIRATION_MS);
    assert!(psm.last_entry(ProducerId(2)).is_none());
    assert!(psm.last_entry(PID).is_some());
    assert_eq!(psm.first_undecided_offset(), Some(Offset(99)));
}

#[test]
fn log_start_increment_keeps_producers_and_moves_map_end() {
    let (_d, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    client_txn(&mut psm, ProducerId(2), 0, 0, 1).unwrap();
    end_txn(&mut psm, ProducerId(2), 0, 2, true, 0).unwrap();
    assert_eq!(psm.first_unstable_offset(), Some(Offset(1)));
    psm.on_log_start_offset_incremented(Offset(10));
    assert_eq!(psm.map_end_offset(), Offset(10));
    assert_eq!(psm.first_unstable_offset(), None);
    // Kafka 3.9 keeps the producer: a retry still continues its sequence.
    assert!(psm.last_entry(PID).is_some());
    client(&mut psm, 0, 1, 10).unwrap();
}

// ---- snapshots -----------------------------------------------------------------------

fn snapshot_files(dir: &Path) -> Vec<i64> {
    let mut v: Vec<i64> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".snapshot"))
        .map(|n| n[..20].parse().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn take_snapshot_only_when_the_map_end_moved() {
    let (dir, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    let path = psm.take_snapshot(true).unwrap().expect("written");
    assert_eq!(path, snapshot_file(dir.path(), Offset(1), ""));
    assert_eq!(psm.take_snapshot(true).unwrap(), None);
    assert_eq!(snapshot_files(dir.path()), vec![1]);
    let read = read_snapshot(&path).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].to_entry(), entry(&psm, PID));
}

#[test]
fn truncate_and_reload_removes_out_of_range_snapshots() {
    let (dir, mut psm) = setup();
    for i in 0..5 {
        client(&mut psm, 0, i, i as i64).unwrap();
        psm.take_snapshot(false).unwrap();
    }
    psm.truncate_and_reload(Offset(1), Offset(3), 1_000)
        .unwrap();
    assert_eq!(psm.oldest_snapshot_offset(), Some(Offset(2)));
    assert_eq!(psm.latest_snapshot_offset(), Some(Offset(3)));
    assert_eq!(snapshot_files(dir.path()), vec![2, 3]);
    assert_eq!(psm.map_end_offset(), Offset(3));
    assert_eq!(entry(&psm, PID).last_seq(), 2);
}

#[test]
fn reload_restores_only_the_last_batch_and_open_transaction() {
    let (dir, mut psm) = setup();
    client_txn(&mut psm, PID, 0, 0, 0).unwrap();
    client_txn(&mut psm, PID, 0, 1, 1).unwrap();
    psm.take_snapshot(true).unwrap();
    let mut recovered = manager(dir.path());
    recovered
        .truncate_and_reload(Offset(0), Offset(3), 1_000)
        .unwrap();
    let e = entry(&recovered, PID);
    assert_eq!(
        (
            e.first_data_offset(),
            e.first_seq(),
            e.last_data_offset(),
            e.last_seq()
        ),
        (Offset(1), 1, Offset(1), 1)
    );
    assert_eq!(e.current_txn_first_offset(), Some(Offset(0)));
    assert_eq!(recovered.first_undecided_offset(), Some(Offset(0)));
    assert_eq!(recovered.map_end_offset(), Offset(2));
    // Duplicate detection after a reload covers the last batch only.
    let b0 = batch(PID, 0, 0, 0, 1, 1_000, true);
    let b1 = batch(PID, 0, 1, 1, 1, 1_000, true);
    assert!(recovered
        .find_duplicate_batch(&BatchView::parse(&b0).unwrap())
        .is_none());
    assert!(recovered
        .find_duplicate_batch(&BatchView::parse(&b1).unwrap())
        .is_some());
    client_txn(&mut recovered, PID, 0, 2, 2).unwrap();
}

#[test]
fn reload_drops_expired_producers() {
    let (dir, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    client(&mut psm, 0, 1, 1).unwrap();
    psm.take_snapshot(true).unwrap();
    let mut recovered = manager(dir.path());
    recovered
        .truncate_and_reload(Offset(0), Offset(1), 1_000 + EXPIRATION_MS)
        .unwrap();
    assert_eq!(recovered.producer_id_count(), 0);
    // The expired producer is accepted at any sequence again.
    client(&mut recovered, 0, 2, 2).unwrap();
    assert_eq!(recovered.map_end_offset(), Offset(3));
}

#[test]
fn coordinator_epoch_survives_reload() {
    let (dir, mut psm) = setup();
    client_txn(&mut psm, PID, 0, 0, 99).unwrap();
    end_txn(&mut psm, PID, 0, 100, true, 1).unwrap();
    psm.take_snapshot(true).unwrap();
    let mut recovered = manager(dir.path());
    recovered
        .truncate_and_reload(Offset(0), Offset(101), 5_000)
        .unwrap();
    assert_eq!(entry(&recovered, PID).coordinator_epoch(), 1);
    assert!(matches!(
        end_txn(&mut recovered, PID, 0, 101, true, 0),
        Err(ProducerStateError::TransactionCoordinatorFenced { .. })
    ));
}

fn corrupt_snapshot_falls_back(corrupt: impl Fn(&Path)) {
    let (dir, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    psm.take_snapshot(true).unwrap();
    client(&mut psm, 0, 1, 1).unwrap();
    psm.take_snapshot(true).unwrap();
    let newest = snapshot_file(dir.path(), Offset(2), "");
    corrupt(&newest);
    let mut reloaded = manager(dir.path());
    reloaded
        .truncate_and_reload(Offset(0), Offset(20), 1_000)
        .unwrap();
    assert!(!newest.exists());
    assert_eq!(entry(&reloaded, PID).last_data_offset(), Offset(0));
    assert_eq!(reloaded.map_end_offset(), Offset(1));
    assert_eq!(reloaded.latest_snapshot_offset(), Some(Offset(1)));
}

#[test]
fn empty_snapshot_file_is_deleted_and_older_used() {
    corrupt_snapshot_falls_back(|p| fs::write(p, b"").unwrap());
}

#[test]
fn truncated_snapshot_file_is_deleted_and_older_used() {
    corrupt_snapshot_falls_back(|p| {
        let b = fs::read(p).unwrap();
        fs::write(p, &b[..b.len() / 2]).unwrap();
    });
}

#[test]
fn garbage_in_snapshot_file_is_deleted_and_older_used() {
    corrupt_snapshot_falls_back(|p| {
        let mut b = fs::read(p).unwrap();
        b[20..30].fill(0xAB);
        fs::write(p, &b).unwrap();
    });
}

#[test]
fn all_snapshots_corrupt_starts_from_log_start() {
    let (dir, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    let path = psm.take_snapshot(true).unwrap().unwrap();
    fs::write(&path, [0u8, 2, 0, 0]).unwrap();
    let mut reloaded = manager(dir.path());
    reloaded
        .truncate_and_reload(Offset(0), Offset(5), 1_000)
        .unwrap();
    assert_eq!(reloaded.map_end_offset(), Offset(0));
    assert_eq!(reloaded.latest_snapshot_offset(), None);
    assert!(snapshot_files(dir.path()).is_empty());
}

#[test]
fn delete_snapshots_before_and_truncate_fully() {
    let (dir, mut psm) = setup();
    client(&mut psm, 0, 0, 0).unwrap();
    client(&mut psm, 0, 1, 1).unwrap();
    psm.take_snapshot(false).unwrap();
    client(&mut psm, 0, 2, 2).unwrap();
    psm.take_snapshot(false).unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![2, 3]);
    psm.delete_snapshots_before(Offset(3)).unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![3]);
    client(&mut psm, 0, 3, 3).unwrap();
    psm.take_snapshot(false).unwrap();
    psm.truncate_fully_and_start_at(Offset(0)).unwrap();
    assert!(snapshot_files(dir.path()).is_empty());
    assert_eq!(psm.producer_id_count(), 0);
    assert_eq!(psm.map_end_offset(), Offset(0));
    client(&mut psm, 0, 0, 0).unwrap();
    psm.take_snapshot(false).unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![1]);
}

#[test]
fn remove_stray_snapshots_keeps_clean_shutdown_snapshot() {
    let (dir, mut psm) = setup();
    for o in [5, 2, 42] {
        fs::write(snapshot_file(dir.path(), Offset(o), ""), b"").unwrap();
    }
    psm.remove_stray_snapshots(&[Offset(5)]).unwrap();
    assert_eq!(psm.latest_snapshot_offset(), Some(Offset(42)));
    assert_eq!(psm.oldest_snapshot_offset(), Some(Offset(5)));
    assert_eq!(snapshot_files(dir.path()), vec![5, 42]);
}

#[test]
fn remove_stray_snapshots_below_the_last_segment() {
    let (dir, mut psm) = setup();
    for o in [5, 2, 42] {
        fs::write(snapshot_file(dir.path(), Offset(o), ""), b"").unwrap();
    }
    psm.remove_stray_snapshots(&[Offset(42)]).unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![42]);
    assert_eq!(psm.snapshot_offsets().collect::<Vec<_>>(), vec![Offset(42)]);
}

#[test]
fn mark_snapshot_for_deletion_renames_it() {
    let (dir, _) = setup();
    let path = snapshot_file(dir.path(), Offset(5), "");
    fs::write(&path, b"").unwrap();
    let mut psm = manager(dir.path());
    assert_eq!(psm.latest_snapshot_offset(), Some(Offset(5)));
    let renamed = psm
        .remove_and_mark_snapshot_for_deletion(Offset(5))
        .unwrap()
        .unwrap();
    assert!(renamed.to_str().unwrap().ends_with(".snapshot.deleted"));
    assert!(renamed.exists() && !path.exists());
    assert_eq!(psm.latest_snapshot_offset(), None);
    // Already gone: None, and forgotten.
    fs::write(&path, b"").unwrap();
    let mut psm = manager(dir.path());
    fs::remove_file(&path).unwrap();
    assert_eq!(
        psm.remove_and_mark_snapshot_for_deletion(Offset(5))
            .unwrap(),
        None
    );
    assert_eq!(psm.latest_snapshot_offset(), None);
}

#[test]
fn new_lists_only_snapshot_files() {
    let (dir, _) = setup();
    fs::write(snapshot_file(dir.path(), Offset(7), ""), b"").unwrap();
    fs::write(snapshot_file(dir.path(), Offset(8), ".deleted"), b"").unwrap();
    fs::write(dir.path().join("abc.snapshot"), b"").unwrap();
    fs::create_dir(dir.path().join("00000000000000000009.snapshot")).unwrap();
    let psm = manager(dir.path());
    assert_eq!(psm.snapshot_offsets().collect::<Vec<_>>(), vec![Offset(7)]);
}

#[test]
fn snapshot_spec_test_vector() {
    let e = ProducerSnapshotEntry {
        producer_id: ProducerId(7),
        epoch: ProducerEpoch(1),
        last_sequence: 4,
        last_offset: Offset(9),
        offset_delta: 4,
        timestamp: Timestamp(1000),
        coordinator_epoch: -1,
        current_txn_first_offset: Offset(-1),
    };
    let bytes = encode_snapshot(&[e]);
    assert_eq!(
        hex::encode(&bytes),
        "0001b3fd6df500000001000000000000000700010000000400000000000000090000000400000000000003e8ffffffffffffffffffffffff"
    );
    assert_eq!(decode_snapshot(&bytes).unwrap(), vec![e]);
    assert_eq!(e.batch().unwrap().first_seq(), 0);
    assert_eq!(e.ongoing_txn_first_offset(), None);
}

#[test]
fn decode_reports_each_corruption() {
    let good = encode_snapshot(&[]);
    assert_eq!(decode_snapshot(&good).unwrap(), vec![]);
    assert_eq!(
        decode_snapshot(&[]),
        Err(SnapshotCorruption::TooShort { len: 0 })
    );
    assert_eq!(
        decode_snapshot(&good[..7]),
        Err(SnapshotCorruption::TooShort { len: 7 })
    );
    let mut v2 = good.clone();
    v2[1] = 2;
    assert_eq!(
        decode_snapshot(&v2),
        Err(SnapshotCorruption::UnknownVersion { version: 2 })
    );
    let mut neg = good.clone();
    neg[6..10].copy_from_slice(&(-1i32).to_be_bytes());
    assert_eq!(
        decode_snapshot(&neg),
        Err(SnapshotCorruption::NegativeEntryCount { count: -1 })
    );
    let mut many = good.clone();
    many[6..10].copy_from_slice(&1i32.to_be_bytes());
    assert_eq!(
        decode_snapshot(&many),
        Err(SnapshotCorruption::EntriesTruncated {
            count: 1,
            available: 0
        })
    );
    let mut tail = good.clone();
    tail.push(0);
    assert!(matches!(
        decode_snapshot(&tail),
        Err(SnapshotCorruption::ChecksumMismatch { .. })
    ));
}

// ---- rebuild ----------------------------------------------------------------------------

/// Segments as lists of batches; the reader follows the contract of
/// `rebuild_producer_state`.
struct Segments(Vec<(Offset, Vec<Vec<u8>>)>);

impl Segments {
    fn bases(&self) -> Vec<Offset> {
        self.0.iter().map(|(b, _)| *b).collect()
    }
    fn read(
        &self,
        base: Offset,
        start: Offset,
        end: Offset,
        sink: &mut BatchSink<'_>,
    ) -> Result<(), ProducerStateError> {
        let (_, batches) = self
            .0
            .iter()
            .find(|(b, _)| *b == base)
            .expect("known segment");
        for bytes in batches {
            let view = BatchView::parse(bytes).unwrap();
            if view.last_offset() >= start && view.last_offset() < end {
                sink(&view)?;
            }
        }
        Ok(())
    }
}

fn three_segments() -> Segments {
    Segments(vec![
        (
            Offset(0),
            vec![
                batch(PID, 0, 0, 0, 2, 1_000, false),
                batch(ProducerId(-1), -1, -1, 2, 1, 1_000, false),
            ],
        ),
        (
            Offset(3),
            vec![
                batch(ProducerId(2), 0, 0, 3, 1, 1_000, true),
                batch(PID, 0, 2, 4, 1, 1_000, false),
            ],
        ),
        (
            Offset(5),
            vec![
                marker(ProducerId(2), 0, 5, true, 3, 2_000),
                batch(PID, 0, 3, 6, 2, 1_000, false),
            ],
        ),
    ])
}

#[test]
fn rebuild_replays_segments_and_snapshots_the_last_two_bases() {
    let (dir, mut psm) = setup();
    let segs = three_segments();
    psm.rebuild_producer_state::<ProducerStateError, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        false,
        1_000,
        |b, s, e, sink| segs.read(b, s, e, sink),
    )
    .unwrap();
    assert_eq!(psm.map_end_offset(), Offset(8));
    let e = entry(&psm, PID);
    assert_eq!((e.last_seq(), e.last_data_offset()), (4, Offset(7)));
    assert_eq!(e.batch_metadata().len(), 3);
    let p2 = entry(&psm, ProducerId(2));
    assert_eq!(
        (p2.current_txn_first_offset(), p2.coordinator_epoch()),
        (None, 3)
    );
    assert_eq!(
        psm.first_unstable_offset(),
        Some(Offset(3)),
        "marker not yet below the HW"
    );
    assert_eq!(snapshot_files(dir.path()), vec![3, 5, 8]);
    // The snapshot at 5 holds the state before segment 5: producer 2's transaction is open.
    let at5 = read_snapshot(&snapshot_file(dir.path(), Offset(5), "")).unwrap();
    let p2_at5 = at5.iter().find(|e| e.producer_id == ProducerId(2)).unwrap();
    assert_eq!(p2_at5.ongoing_txn_first_offset(), Some(Offset(3)));

    // Reloading from the last snapshot gives the same producers.
    let mut again = manager(dir.path());
    again
        .rebuild_producer_state::<ProducerStateError, _>(
            &segs.bases(),
            Offset(0),
            Offset(8),
            false,
            1_000,
            |_, _, _, _| panic!("nothing to replay past the snapshot at the log end"),
        )
        .unwrap();
    assert_eq!(entry(&again, PID).last_seq(), 4);
}

#[test]
fn rebuild_from_a_middle_snapshot_replays_only_the_rest() {
    let (dir, mut psm) = setup();
    let segs = three_segments();
    psm.rebuild_producer_state::<ProducerStateError, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        false,
        1_000,
        |b, s, e, sink| segs.read(b, s, e, sink),
    )
    .unwrap();
    fs::remove_file(snapshot_file(dir.path(), Offset(8), "")).unwrap();
    let mut again = manager(dir.path());
    let mut read_from = Vec::new();
    again
        .rebuild_producer_state::<ProducerStateError, _>(
            &segs.bases(),
            Offset(0),
            Offset(8),
            false,
            1_000,
            |b, s, e, sink| {
                read_from.push((b, s));
                segs.read(b, s, e, sink)
            },
        )
        .unwrap();
    assert_eq!(read_from, vec![(Offset(5), Offset(5))]);
    assert_eq!(entry(&again, PID).last_seq(), 4);
    assert_eq!(
        entry(&again, ProducerId(2)).current_txn_first_offset(),
        None
    );
    assert_eq!(again.first_undecided_offset(), None);
}

#[test]
fn rebuild_after_clean_shutdown_without_snapshots_writes_empty_ones() {
    let (dir, mut psm) = setup();
    let segs = three_segments();
    psm.rebuild_producer_state::<ProducerStateError, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        true,
        1_000,
        |_, _, _, _| panic!("the upgrade path does not scan"),
    )
    .unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![3, 5, 8]);
    assert!(read_snapshot(&snapshot_file(dir.path(), Offset(8), ""))
        .unwrap()
        .is_empty());
    assert_eq!(psm.producer_id_count(), 0);
}

#[test]
fn rebuild_propagates_reader_errors() {
    #[derive(Debug)]
    enum Outer {
        State(ProducerStateError),
        Disk,
    }
    impl From<ProducerStateError> for Outer {
        fn from(e: ProducerStateError) -> Self {
            Outer::State(e)
        }
    }
    let (_d, mut psm) = setup();
    let segs = three_segments();
    let r = psm.rebuild_producer_state::<Outer, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        false,
        1_000,
        |_, _, _, _| Err(Outer::Disk),
    );
    assert!(matches!(r, Err(Outer::Disk)));
    // A log that breaks transaction rules surfaces as a state error.
    let bad = Segments(vec![(
        Offset(0),
        vec![
            batch(PID, 0, 0, 0, 1, 1, true),
            batch(PID, 0, 1, 1, 1, 1, false),
        ],
    )]);
    let r = psm.rebuild_producer_state::<Outer, _>(
        &bad.bases(),
        Offset(0),
        Offset(2),
        false,
        1_000,
        |b, s, e, sink| bad.read(b, s, e, sink).map_err(Outer::from),
    );
    assert!(matches!(
        r,
        Err(Outer::State(ProducerStateError::InvalidTxnState { .. }))
    ));
}

#[test]
fn apply_replicated_batch_moves_the_map_end() {
    let (_d, mut psm) = setup();
    let b = batch(PID, 0, 7, 10, 3, 1_000, true);
    assert_eq!(
        psm.apply_replicated_batch(&BatchView::parse(&b).unwrap())
            .unwrap(),
        None
    );
    assert_eq!(psm.map_end_offset(), Offset(13));
    let m = marker(PID, 0, 13, false, 0, 2_000);
    let done = psm
        .apply_replicated_batch(&BatchView::parse(&m).unwrap())
        .unwrap()
        .unwrap();
    assert!(done.is_aborted);
    assert_eq!(psm.last_stable_offset(&done), Offset(14));
    psm.complete_txn(&done);
    let plain = batch(ProducerId(-1), -1, -1, 14, 1, 1_000, false);
    assert_eq!(
        psm.apply_replicated_batch(&BatchView::parse(&plain).unwrap())
            .unwrap(),
        None
    );
    assert_eq!(psm.map_end_offset(), Offset(15));
    assert_eq!(psm.producer_id_count(), 1);
}
