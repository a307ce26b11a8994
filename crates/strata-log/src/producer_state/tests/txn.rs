//! Transactions, markers, LSO, multi-producer appends, expiration and log-start moves.

use super::*;

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
