//! Snapshot writing, reloading, corruption, deletion and the file format.

use std::fs;
use std::path::Path;

use super::*;
use crate::format::snapshot_file;

// ---- snapshots -----------------------------------------------------------------------

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

/// A snapshot entry is only CRC-checked, so its offset delta can be anything:
/// a negative one made the restored batch's first sequence and first offset
/// overflow (a panic with overflow checks on, the `producer_snapshot` fuzz
/// target's crash). They wrap, as Kafka's `int`/`long` arithmetic does.
#[test]
fn restored_batch_with_negative_offset_delta_wraps_like_kafka() {
    let stored = ProducerSnapshotEntry {
        producer_id: PID,
        epoch: ProducerEpoch(0),
        last_sequence: 5,
        last_offset: Offset(i64::MAX),
        offset_delta: i32::MIN,
        timestamp: Timestamp(0),
        coordinator_epoch: 0,
        current_txn_first_offset: Offset(-1),
    };
    let read = decode_snapshot(&encode_snapshot(&[stored])).unwrap();
    let entry = read[0].to_entry();
    assert_eq!(entry.first_seq(), i32::MIN + 5);
    assert_eq!(entry.first_data_offset(), Offset(i64::MIN + (1 << 31) - 1));
    // Kafka: Integer.MAX_VALUE - (MAX_VALUE - -1) + 1, in wrapping int arithmetic.
    assert_eq!(decrement_sequence(-1, i32::MAX), 0);
    assert_eq!(decrement_sequence(0, 1), i32::MAX);
}
