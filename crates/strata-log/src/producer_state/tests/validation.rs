//! Epoch fencing, sequence continuity (wrap included), origins and the duplicate window.

use super::*;

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
