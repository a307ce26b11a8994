//! Guards the producer snapshot file (`<offset>.snapshot`, version 1) against
//! drifting from Kafka's layout: files Strata writes must equal, byte for byte,
//! files built here field by field from the spec (with a CRC-32C computed
//! here, not by the crate); Strata must read such files; corrupt snapshots
//! (bad CRC, truncated, wrong version) must be deleted and the next older one
//! used, never failing the load; stray snapshots must be removed. The state
//! itself is produced by replaying the Kafka-written
//! `idempotent-and-transactional` fixture segment.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::collection::vec;
use proptest::prelude::*;
use strata_log::batch::{BatchBuilder, BatchView};
use strata_log::codec::snapshot::{decode_snapshot, encode_snapshot, ProducerSnapshotEntry};
use strata_log::format::snapshot_file;
use strata_log::{
    read_snapshot, write_snapshot, AppendOrigin, CompletedTxn, ProducerStateError,
    ProducerStateManager, ProducerUpdates, SnapshotCorruption,
};
use strata_log::{Offset, ProducerEpoch, ProducerId, Timestamp, TopicPartition};
use tempfile::TempDir;

const DAY_MS: i64 = 86_400_000;
/// "Now" for loads: just after the fixture's timestamps, so nothing expires.
const NOW_MS: i64 = 1_700_000_010_000;

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit.
fn crc32c_reference(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One entry as the spec lists its fields (§6.2), raw values.
struct SpecEntry {
    producer_id: i64,
    epoch: i16,
    last_sequence: i32,
    last_offset: i64,
    offset_delta: i32,
    timestamp: i64,
    coordinator_epoch: i32,
    current_txn_first_offset: i64,
}

/// A snapshot file built from the spec: version, CRC over [6, EOF), count, entries.
fn spec_snapshot(entries: &[SpecEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in entries {
        body.extend_from_slice(&e.producer_id.to_be_bytes());
        body.extend_from_slice(&e.epoch.to_be_bytes());
        body.extend_from_slice(&e.last_sequence.to_be_bytes());
        body.extend_from_slice(&e.last_offset.to_be_bytes());
        body.extend_from_slice(&e.offset_delta.to_be_bytes());
        body.extend_from_slice(&e.timestamp.to_be_bytes());
        body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        body.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
    }
    let mut file = Vec::new();
    file.extend_from_slice(&1i16.to_be_bytes());
    file.extend_from_slice(&crc32c_reference(&body).to_be_bytes());
    file.extend_from_slice(&body);
    file
}

fn fixture_log() -> Vec<u8> {
    let dir = match std::env::var_os("STRATA_FIXTURES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/kafka-records"
        )),
    };
    let path = dir.join("idempotent-and-transactional/00000000000000000000.log");
    fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

fn batches(log: &[u8]) -> Vec<BatchView<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < log.len() {
        let view = BatchView::parse(&log[pos..]).expect("whole batch");
        pos += view.size();
        out.push(view);
    }
    out
}

fn manager(dir: &Path) -> ProducerStateManager {
    ProducerStateManager::new(
        &strata_log::fs::StdFs::shared(),
        dir,
        TopicPartition::new("t", 0),
        DAY_MS,
    )
    .unwrap()
}

/// Apply every batch of the fixture as a leader would (CLIENT for data,
/// COORDINATOR for markers), completing transactions as the log does.
fn replay_fixture(psm: &mut ProducerStateManager, log: &[u8]) -> Vec<(CompletedTxn, Offset)> {
    let mut completed = Vec::new();
    for batch in batches(log) {
        let origin = if batch.is_control() {
            AppendOrigin::Coordinator
        } else {
            AppendOrigin::Client
        };
        assert_eq!(
            psm.find_duplicate_batch(&batch),
            None,
            "no batch of the fixture is a retry"
        );
        let mut updates = ProducerUpdates::new();
        psm.validate_batch(&mut updates, &batch, origin)
            .expect("Kafka's batches are valid");
        for txn in psm.apply_updates(updates) {
            completed.push((txn, psm.last_stable_offset(&txn)));
            psm.complete_txn(&txn);
        }
        psm.update_map_end_offset(batch.next_offset());
    }
    completed
}

/// What the fixture leaves behind, in producer-id order (Strata's write order).
fn expected_fixture_entries() -> Vec<SpecEntry> {
    vec![
        // Idempotent: three lz4 batches, sequences 0..=11 at offsets 0..=11.
        SpecEntry {
            producer_id: 4000,
            epoch: 0,
            last_sequence: 11,
            last_offset: 11,
            offset_delta: 3,
            timestamp: 1_700_000_000_011,
            coordinator_epoch: -1,
            current_txn_first_offset: -1,
        },
        // Committed at 24 by coordinator epoch 9; the timestamp is the marker's.
        SpecEntry {
            producer_id: 5000,
            epoch: 2,
            last_sequence: 5,
            last_offset: 20,
            offset_delta: 2,
            timestamp: 1_700_000_005_000,
            coordinator_epoch: 9,
            current_txn_first_offset: -1,
        },
        // Aborted at 25.
        SpecEntry {
            producer_id: 6000,
            epoch: 0,
            last_sequence: 5,
            last_offset: 23,
            offset_delta: 2,
            timestamp: 1_700_000_005_001,
            coordinator_epoch: 9,
            current_txn_first_offset: -1,
        },
    ]
}

#[test]
fn reference_crc_matches_known_vectors() {
    assert_eq!(crc32c_reference(b"123456789"), 0xE306_9283);
    // The spec's one-entry example (§6.2): CRC 0xb3fd6df5.
    let spec = spec_snapshot(&[SpecEntry {
        producer_id: 7,
        epoch: 1,
        last_sequence: 4,
        last_offset: 9,
        offset_delta: 4,
        timestamp: 1000,
        coordinator_epoch: -1,
        current_txn_first_offset: -1,
    }]);
    assert_eq!(&spec[2..6], &0xb3fd_6df5u32.to_be_bytes());
    assert_eq!(spec.len(), 56);
}

#[test]
fn snapshot_of_kafka_fixture_equals_spec_bytes() {
    let dir = TempDir::new().unwrap();
    let log = fixture_log();
    let mut psm = manager(dir.path());
    let completed = replay_fixture(&mut psm, &log);
    let txn = |pid, first, last, aborted| CompletedTxn {
        producer_id: ProducerId(pid),
        first_offset: Offset(first),
        last_offset: Offset(last),
        is_aborted: aborted,
    };
    // 5000 commits while 6000 (from 15) is open: LSO 15; then 6000 aborts: LSO 26.
    assert_eq!(
        completed,
        vec![
            (txn(5000, 12, 24, false), Offset(15)),
            (txn(6000, 15, 25, true), Offset(26))
        ]
    );
    assert_eq!(psm.first_undecided_offset(), None);

    let path = psm.take_snapshot(true).unwrap().expect("snapshot written");
    assert_eq!(path, snapshot_file(dir.path(), Offset(26), ""));
    assert_eq!(path.file_name().unwrap(), "00000000000000000026.snapshot");
    let written = fs::read(&path).unwrap();
    assert_eq!(written, spec_snapshot(&expected_fixture_entries()));
    // The standalone encoder agrees with the manager.
    let other = dir.path().join("standalone.snapshot");
    write_snapshot(
        &strata_log::fs::StdFs,
        &other,
        &read_snapshot(&path).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(fs::read(&other).unwrap(), written);
}

#[test]
fn retries_of_fixture_batches_are_duplicates() {
    let dir = TempDir::new().unwrap();
    let log = fixture_log();
    let mut psm = manager(dir.path());
    replay_fixture(&mut psm, &log);
    let all = batches(&log);
    // The idempotent producer's three batches are all inside the window.
    for b in all.iter().filter(|b| b.producer_id() == ProducerId(4000)) {
        let dup = psm.find_duplicate_batch(b).expect("retry is a duplicate");
        assert_eq!(
            (dup.first_offset(), dup.last_offset),
            (b.base_offset(), b.last_offset())
        );
        assert_eq!(dup.timestamp, b.max_timestamp());
    }
}

#[test]
fn strata_reads_a_spec_built_snapshot() {
    let dir = TempDir::new().unwrap();
    // Unsorted (Kafka writes hash-map order), with an open transaction and a
    // marker-only producer.
    let entries = [
        SpecEntry {
            producer_id: 77,
            epoch: 3,
            last_sequence: 41,
            last_offset: 140,
            offset_delta: 9,
            timestamp: NOW_MS - 5,
            coordinator_epoch: -1,
            current_txn_first_offset: 120,
        },
        SpecEntry {
            producer_id: 12,
            epoch: 1,
            last_sequence: -1,
            last_offset: -1,
            offset_delta: 0,
            timestamp: NOW_MS - 7,
            coordinator_epoch: 4,
            current_txn_first_offset: -1,
        },
        SpecEntry {
            producer_id: 30,
            epoch: 0,
            last_sequence: 99,
            last_offset: 149,
            offset_delta: 0,
            timestamp: NOW_MS - 9,
            coordinator_epoch: -1,
            current_txn_first_offset: -1,
        },
    ];
    fs::write(
        snapshot_file(dir.path(), Offset(150), ""),
        spec_snapshot(&entries),
    )
    .unwrap();

    let read = read_snapshot(&snapshot_file(dir.path(), Offset(150), "")).unwrap();
    assert_eq!(read.len(), 3);
    assert_eq!(
        read[0],
        ProducerSnapshotEntry {
            producer_id: ProducerId(77),
            epoch: ProducerEpoch(3),
            last_sequence: 41,
            last_offset: Offset(140),
            offset_delta: 9,
            timestamp: Timestamp(NOW_MS - 5),
            coordinator_epoch: -1,
            current_txn_first_offset: Offset(120),
        }
    );

    let mut psm = manager(dir.path());
    psm.truncate_and_reload(Offset(0), Offset(150), NOW_MS)
        .unwrap();
    assert_eq!(psm.map_end_offset(), Offset(150));
    assert_eq!(psm.producer_id_count(), 3);
    let p77 = psm.last_entry(ProducerId(77)).unwrap();
    assert_eq!((p77.first_seq(), p77.last_seq()), (32, 41));
    assert_eq!(
        (p77.first_data_offset(), p77.last_data_offset()),
        (Offset(131), Offset(140))
    );
    assert_eq!(p77.current_txn_first_offset(), Some(Offset(120)));
    assert_eq!(psm.first_unstable_offset(), Some(Offset(120)));
    let p12 = psm.last_entry(ProducerId(12)).unwrap();
    assert!(p12.is_empty());
    assert_eq!(
        (p12.producer_epoch(), p12.coordinator_epoch()),
        (ProducerEpoch(1), 4)
    );
    // Producer 30 continues at 100 and nowhere else.
    let next = |seq| {
        let mut b = BatchBuilder::new(Offset(150)).producer(ProducerId(30), ProducerEpoch(0), seq);
        b.append(Timestamp(NOW_MS), None, Some(b"x"), &[]);
        b.build()
    };
    let append = |seq| {
        let batch = next(seq);
        let mut info = psm.prepare_update(ProducerId(30), AppendOrigin::Client);
        info.append_batch(&BatchView::parse(&batch).unwrap())
            .map(|_| ())
    };
    assert!(matches!(
        append(101),
        Err(ProducerStateError::OutOfOrderSequence { .. })
    ));
    append(100).unwrap();
}

/// A directory with a good snapshot at 12 (fixture state up to offset 12) and a
/// newer one at 26 that `corrupt` damages.
fn load_with_corrupt_newest(corrupt: impl Fn(&mut Vec<u8>)) -> (TempDir, ProducerStateManager) {
    let dir = TempDir::new().unwrap();
    let log = fixture_log();
    let mut psm = manager(dir.path());
    let all = batches(&log);
    let first_three: usize = all[..3].iter().map(|b| b.size()).sum();
    replay_fixture(&mut psm, &log[..first_three]);
    psm.take_snapshot(true).unwrap();
    replay_fixture(&mut psm, &log[first_three..]);
    let newest = psm.take_snapshot(true).unwrap().unwrap();
    let mut bytes = fs::read(&newest).unwrap();
    corrupt(&mut bytes);
    fs::write(&newest, &bytes).unwrap();

    match read_snapshot(&newest) {
        Err(ProducerStateError::CorruptSnapshot { path, .. }) => assert_eq!(path, newest),
        other => panic!("expected a corrupt snapshot, got {other:?}"),
    }
    let mut reloaded = manager(dir.path());
    reloaded
        .truncate_and_reload(Offset(0), Offset(26), NOW_MS)
        .expect("corruption is never fatal");
    assert!(!newest.exists(), "the corrupt snapshot is deleted");
    assert_eq!(reloaded.latest_snapshot_offset(), Some(Offset(12)));
    assert_eq!(reloaded.map_end_offset(), Offset(12));
    assert_eq!(reloaded.producer_id_count(), 1);
    assert_eq!(
        reloaded.last_entry(ProducerId(4000)).unwrap().last_seq(),
        11
    );
    (dir, reloaded)
}

fn corruption_of(bytes: &[u8]) -> SnapshotCorruption {
    match decode_snapshot(bytes) {
        Err(reason) => reason,
        Ok(_) => panic!("accepted a corrupt snapshot"),
    }
}

#[test]
fn bad_crc_snapshot_is_deleted_and_older_used() {
    load_with_corrupt_newest(|b| {
        b[30] ^= 0x01;
        assert!(matches!(
            corruption_of(b),
            SnapshotCorruption::ChecksumMismatch { .. }
        ));
    });
}

#[test]
fn truncated_snapshot_is_deleted_and_older_used() {
    load_with_corrupt_newest(|b| {
        b.truncate(b.len() - 1);
        assert_eq!(
            corruption_of(b),
            SnapshotCorruption::EntriesTruncated {
                count: 3,
                available: 137
            }
        );
    });
}

#[test]
fn wrong_version_snapshot_is_deleted_and_older_used() {
    load_with_corrupt_newest(|b| {
        b[0..2].copy_from_slice(&0i16.to_be_bytes());
        assert_eq!(
            corruption_of(b),
            SnapshotCorruption::UnknownVersion { version: 0 }
        );
    });
}

#[test]
fn empty_snapshot_is_deleted_and_older_used() {
    load_with_corrupt_newest(|b| {
        b.clear();
        assert_eq!(corruption_of(b), SnapshotCorruption::TooShort { len: 0 });
    });
}

#[test]
fn stray_snapshots_are_removed_except_the_clean_shutdown_one() {
    let dir = TempDir::new().unwrap();
    let empty = spec_snapshot(&[]);
    for offset in [0, 10, 25, 50, 70] {
        fs::write(snapshot_file(dir.path(), Offset(offset), ""), &empty).unwrap();
    }
    fs::write(dir.path().join("00000000000000000050.log"), b"").unwrap();
    let mut psm = manager(dir.path());
    // Segments at 0 and 50: 10 and 25 are strays; 70 is above the last base (clean shutdown).
    psm.remove_stray_snapshots(&[Offset(0), Offset(50)])
        .unwrap();
    let mut left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "00000000000000000000.snapshot",
            "00000000000000000050.log",
            "00000000000000000050.snapshot",
            "00000000000000000070.snapshot",
        ]
    );
    assert_eq!(
        psm.snapshot_offsets().collect::<Vec<_>>(),
        [Offset(0), Offset(50), Offset(70)]
    );
    // After a later roll at 80 the 70 snapshot is an ordinary stray.
    psm.remove_stray_snapshots(&[Offset(0), Offset(50), Offset(80)])
        .unwrap();
    assert_eq!(
        psm.snapshot_offsets().collect::<Vec<_>>(),
        [Offset(0), Offset(50)]
    );
}

fn arb_entry() -> impl Strategy<Value = ProducerSnapshotEntry> {
    (
        any::<i64>(),
        any::<i16>(),
        any::<i32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
    )
        .prop_map(
            |(pid, epoch, seq, last, delta, ts, coord, txn)| ProducerSnapshotEntry {
                producer_id: ProducerId(pid),
                epoch: ProducerEpoch(epoch),
                last_sequence: seq,
                last_offset: Offset(last),
                offset_delta: delta,
                timestamp: Timestamp(ts),
                coordinator_epoch: coord,
                current_txn_first_offset: Offset(txn),
            },
        )
}

fn as_spec(e: &ProducerSnapshotEntry) -> SpecEntry {
    SpecEntry {
        producer_id: e.producer_id.0,
        epoch: e.epoch.0,
        last_sequence: e.last_sequence,
        last_offset: e.last_offset.0,
        offset_delta: e.offset_delta,
        timestamp: e.timestamp.0,
        coordinator_epoch: e.coordinator_epoch,
        current_txn_first_offset: e.current_txn_first_offset.0,
    }
}

proptest! {
    /// Any entries encode to the spec's bytes and decode back unchanged.
    #[test]
    fn encoding_matches_spec_and_round_trips(entries in vec(arb_entry(), 0..12)) {
        let bytes = encode_snapshot(&entries);
        let spec: Vec<SpecEntry> = entries.iter().map(as_spec).collect();
        prop_assert_eq!(&bytes, &spec_snapshot(&spec));
        prop_assert_eq!(decode_snapshot(&bytes).unwrap(), entries);
    }

    /// Every single-bit flip of a valid snapshot is reported as corruption.
    #[test]
    fn any_bit_flip_is_detected(entries in vec(arb_entry(), 1..4), bit in any::<prop::sample::Index>()) {
        let mut bytes = encode_snapshot(&entries);
        let bit = bit.index(bytes.len() * 8);
        bytes[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(decode_snapshot(&bytes).is_err());
    }

    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..200)) {
        let _ = decode_snapshot(&bytes);
    }
}
