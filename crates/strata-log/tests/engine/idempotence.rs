//! Guards idempotent produce at the log level: a retried batch gets its
//! original offsets and is not written again, broken sequences and stale
//! epochs are refused without writing, and the producer state survives clean
//! and unclean restarts, lost or corrupt snapshot files, rolls, truncation,
//! retention and expiration.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_log::batch::BatchBuilder;
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogAppendInfo, LogConfig, LogError, MockClock, Offset,
    ProducerEpoch, ProducerId, Timestamp,
};
use strata_log::{ProducerStateError, SequenceFault};
use tempfile::TempDir;

const NOW: i64 = 1_700_000_000_000;
const PID: ProducerId = ProducerId(7);
const RECORDS: i32 = 4;

fn batch(pid: ProducerId, epoch: i16, first_seq: i32, records: i32) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0)).producer(pid, ProducerEpoch(epoch), first_seq);
    for i in 0..records {
        let v = format!("value-{first_seq}-{i}");
        b.append(Timestamp(NOW), Some(b"k"), Some(v.as_bytes()), &[]);
    }
    b.build()
}

struct Fixture {
    _tmp: TempDir,
    dir: PathBuf,
    clock: Arc<MockClock>,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = TempDir::new().unwrap();
        let dir = tmp.path().join("t-0");
        Fixture {
            dir,
            _tmp: tmp,
            clock: MockClock::new(NOW),
        }
    }

    fn open(&self, cfg: LogConfig, clean: bool) -> Arc<Log> {
        let params = LoadParams {
            had_clean_shutdown: clean,
            ..LoadParams::default()
        };
        Log::open(
            &self.dir,
            cfg,
            params,
            self.clock.clone(),
            DirHealth::new(self.dir.parent().unwrap()),
        )
        .unwrap()
    }

    fn snapshots(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".snapshot"))
            .collect();
        out.sort();
        out
    }
}

fn append(log: &Log, pid: ProducerId, epoch: i16, seq: i32) -> Result<LogAppendInfo, LogError> {
    let mut b = batch(pid, epoch, seq, RECORDS);
    log.append_as_leader(&mut b, LeaderEpoch(0))
}

/// Producer `PID` epoch 0 writes `n` batches of `RECORDS` from sequence 0.
fn produce(log: &Log, n: i32) {
    for i in 0..n {
        let info = append(log, PID, 0, i * RECORDS).unwrap();
        assert!(!info.duplicate);
    }
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 600,
        ..LogConfig::default()
    }
}

fn assert_out_of_order(r: Result<LogAppendInfo, LogError>) -> SequenceFault {
    match r {
        Err(LogError::ProducerState {
            source: ProducerStateError::OutOfOrderSequence { fault, .. },
            ..
        }) => fault,
        other => panic!("expected OUT_OF_ORDER_SEQUENCE, got {other:?}"),
    }
}

#[test]
fn retry_within_window_returns_original_offsets_without_writing() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    produce(&log, 5);
    let leo = log.log_end_offset();
    let size = log.size_in_bytes();
    for i in 0..5 {
        let info = append(&log, PID, 0, i * RECORDS).unwrap();
        assert!(info.duplicate, "batch {i} is one of the last five");
        assert_eq!(info.first_offset, Offset((i * RECORDS) as i64));
        assert_eq!(info.last_offset, Offset((i * RECORDS + RECORDS - 1) as i64));
        assert_eq!(info.records_count, RECORDS as i64);
    }
    assert_eq!(log.log_end_offset(), leo);
    assert_eq!(log.size_in_bytes(), size);
    // The next new batch still continues the sequence.
    let info = append(&log, PID, 0, 5 * RECORDS).unwrap();
    assert!(!info.duplicate);
    assert_eq!(info.first_offset, leo);
}

#[test]
fn retry_beyond_window_is_out_of_order_and_not_written() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    produce(&log, 6);
    let leo = log.log_end_offset();
    // Batch 0 left the five-batch window when batch 5 was written.
    let fault = assert_out_of_order(append(&log, PID, 0, 0));
    assert_eq!(
        fault,
        SequenceFault::NotNextInSequence {
            last_sequence: 6 * RECORDS - 1
        }
    );
    // A gap is refused too.
    assert_out_of_order(append(&log, PID, 0, 6 * RECORDS + 1));
    // A partial overlap with a retained batch is not a duplicate.
    assert_out_of_order(append(&log, PID, 0, 5 * RECORDS + 1));
    assert_eq!(log.log_end_offset(), leo);
}

#[test]
fn epochs_are_fenced_and_a_new_epoch_restarts_at_zero() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    produce(&log, 2);
    append(&log, PID, 1, 0).unwrap();
    let leo = log.log_end_offset();
    match append(&log, PID, 0, 2 * RECORDS) {
        Err(LogError::ProducerState {
            source:
                ProducerStateError::InvalidProducerEpoch {
                    epoch,
                    current_epoch,
                    ..
                },
            ..
        }) => {
            assert_eq!(epoch, ProducerEpoch(0));
            assert_eq!(current_epoch, ProducerEpoch(1));
        }
        other => panic!("expected INVALID_PRODUCER_EPOCH, got {other:?}"),
    }
    let fault = assert_out_of_order(append(&log, PID, 2, 5));
    assert_eq!(
        fault,
        SequenceFault::NewEpochNotAtZero {
            current_epoch: ProducerEpoch(1)
        }
    );
    assert_eq!(log.log_end_offset(), leo);
    // An unknown producer may start anywhere (its earlier data may be gone).
    append(&log, ProducerId(99), 3, 1234).unwrap();
}

#[test]
fn sequences_wrap_past_i32_max() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    let start = i32::MAX - 1;
    // Sequences MAX-1, MAX, 0, 1: the batch wraps.
    let first = append(&log, PID, 0, start).unwrap();
    let next = append(&log, PID, 0, 2).unwrap();
    assert_eq!(next.first_offset, Offset(first.last_offset.0 + 1));
    let dup = append(&log, PID, 0, start).unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.first_offset, first.first_offset);
    assert_out_of_order(append(&log, PID, 0, 0));
}

#[test]
fn clean_restart_loads_the_snapshot_at_the_log_end() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    produce(&log, 3);
    let leo = log.log_end_offset();
    log.close().unwrap();
    drop(log);
    let at_leo = f.dir.join(format!("{:020}.snapshot", leo.0));
    assert!(at_leo.exists(), "close writes a snapshot at the log end");

    let log = f.open(LogConfig::default(), true);
    assert_eq!(log.producer_state_end_offset(), leo);
    let dup = append(&log, PID, 0, 2 * RECORDS).unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.first_offset, Offset(2 * RECORDS as i64));
    assert!(!append(&log, PID, 0, 3 * RECORDS).unwrap().duplicate);
}

/// Crash between produce and snapshot: no close, so the newest state lives
/// only in the log; the reopened log rebuilds it.
#[test]
fn unclean_restart_rebuilds_state_from_the_log() {
    let f = Fixture::new();
    let log = f.open(small_segments(), false);
    produce(&log, 12);
    let segments = log.segments().len();
    assert!(segments > 2, "small segments roll: {segments}");
    let leo = log.log_end_offset();
    log.flush().unwrap();
    drop(log);

    let log = f.open(small_segments(), false);
    assert_eq!(log.log_end_offset(), leo);
    let entry = log.producer_state_of(PID).expect("rebuilt");
    assert_eq!(entry.last_seq(), 12 * RECORDS - 1);
    assert!(append(&log, PID, 0, 11 * RECORDS).unwrap().duplicate);
    assert!(append(&log, PID, 0, 7 * RECORDS).unwrap().duplicate);
    assert_out_of_order(append(&log, PID, 0, 6 * RECORDS));
    assert_eq!(
        append(&log, PID, 0, 12 * RECORDS).unwrap().first_offset,
        leo
    );
}

fn restart_after(f: &Fixture, damage: impl Fn(&[PathBuf]), clean: bool) {
    let log = f.open(small_segments(), false);
    produce(&log, 12);
    let leo = log.log_end_offset();
    if clean {
        log.close().unwrap();
    } else {
        log.flush().unwrap();
    }
    drop(log);
    let snaps = f.snapshots();
    assert!(snaps.len() >= 2, "roll and close snapshots: {snaps:?}");
    damage(&snaps);

    let log = f.open(small_segments(), clean);
    let entry = log.producer_state_of(PID).expect("rebuilt from the log");
    assert_eq!(entry.last_seq(), 12 * RECORDS - 1);
    assert!(append(&log, PID, 0, 11 * RECORDS).unwrap().duplicate);
    assert_eq!(
        append(&log, PID, 0, 12 * RECORDS).unwrap().first_offset,
        leo
    );
}

#[test]
fn deleted_snapshots_are_rebuilt_from_the_log_after_a_clean_shutdown() {
    let f = Fixture::new();
    restart_after(
        &f,
        |snaps| snaps.iter().for_each(|p| std::fs::remove_file(p).unwrap()),
        true,
    );
}

#[test]
fn deleted_snapshots_are_rebuilt_from_the_log_after_a_crash() {
    let f = Fixture::new();
    restart_after(
        &f,
        |snaps| snaps.iter().for_each(|p| std::fs::remove_file(p).unwrap()),
        false,
    );
}

#[test]
fn corrupt_snapshots_are_dropped_and_rebuilt() {
    let f = Fixture::new();
    let flip = |p: &Path| {
        let mut bytes = std::fs::read(p).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        std::fs::write(p, bytes).unwrap();
    };
    restart_after(&f, |snaps| flip(snaps.last().unwrap()), true);
    let f = Fixture::new();
    restart_after(&f, |snaps| snaps.iter().for_each(|p| flip(p)), false);
    let f = Fixture::new();
    restart_after(
        &f,
        |snaps| {
            snaps
                .iter()
                .for_each(|p| std::fs::write(p, b"garbage").unwrap())
        },
        true,
    );
}

#[test]
fn roll_snapshots_at_the_new_base() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    produce(&log, 2);
    log.roll().unwrap();
    let base = log.log_end_offset();
    assert_eq!(log.producer_snapshot_offsets(), vec![base]);
    assert!(f.dir.join(format!("{:020}.snapshot", base.0)).exists());
}

#[test]
fn truncation_forgets_the_truncated_batches() {
    let f = Fixture::new();
    let log = f.open(small_segments(), false);
    produce(&log, 10);
    let cut = Offset(8 * RECORDS as i64);
    log.truncate_to(cut).unwrap();
    assert_eq!(log.log_end_offset(), cut);
    let entry = log.producer_state_of(PID).unwrap();
    assert_eq!(entry.last_seq(), 8 * RECORDS - 1);
    assert!(log.producer_snapshot_offsets().iter().all(|o| *o <= cut));
    // Batch 8 is gone, so sending it again is new data, not a duplicate.
    let info = append(&log, PID, 0, 8 * RECORDS).unwrap();
    assert!(!info.duplicate);
    assert_eq!(info.first_offset, cut);
}

#[test]
fn retention_removes_the_snapshots_of_deleted_segments() {
    let f = Fixture::new();
    let cfg = LogConfig {
        retention_ms: 1_000,
        ..small_segments()
    };
    let log = f.open(cfg, false);
    produce(&log, 12);
    log.update_high_watermark(log.log_end_offset());
    let before = log.producer_snapshot_offsets();
    f.clock.advance(10_000);
    let outcome = log.delete_old_segments().unwrap();
    assert!(!outcome.decision.is_empty());
    let start = log.log_start_offset();
    let after = log.producer_snapshot_offsets();
    assert!(
        after.iter().all(|o| *o >= start),
        "{after:?} vs start {start}"
    );
    assert!(after.len() < before.len());
    for p in &outcome.renamed_snapshots {
        assert!(p.to_string_lossy().ends_with(".snapshot.deleted"), "{p:?}");
    }
    // The producer itself stays (Kafka drops it by expiration only).
    assert!(append(&log, PID, 0, 11 * RECORDS).unwrap().duplicate);
}

#[test]
fn idle_producers_expire() {
    let f = Fixture::new();
    let cfg = LogConfig {
        producer_id_expiration_ms: 60_000,
        ..LogConfig::default()
    };
    let log = f.open(cfg, false);
    produce(&log, 2);
    f.clock.advance(59_999);
    assert_eq!(log.remove_expired_producers().unwrap(), 0);
    f.clock.advance(1);
    assert_eq!(log.remove_expired_producers().unwrap(), 1);
    assert_eq!(log.producer_id_count(), 0);
    // Forgotten: a retry is now written again, as in Kafka.
    assert!(!append(&log, PID, 0, RECORDS).unwrap().duplicate);
}

#[test]
fn follower_appends_update_state_without_sequence_checks() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    let mut b = BatchBuilder::new(Offset(0)).producer(PID, ProducerEpoch(0), 100);
    b.append(Timestamp(NOW), None, Some(b"v"), &[]);
    log.append_as_follower(&b.build()).unwrap();
    assert_eq!(log.producer_state_of(PID).unwrap().last_seq(), 100);
    let mut retry = batch(PID, 0, 100, 1);
    let dup = log.append_as_leader(&mut retry, LeaderEpoch(0)).unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.first_offset, Offset(0));
    assert_eq!(append(&log, PID, 0, 101).unwrap().first_offset, Offset(1));
}

/// The §6.2 layout, built here from the spec without the crate's encoder:
/// version 1, CRC-32C over [6, EOF), count, 46-byte entries.
fn spec_snapshot(entries: &[(i64, i16, i32, i64, i32, i64)]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for &(pid, epoch, last_seq, last_offset, delta, ts) in entries {
        body.extend_from_slice(&pid.to_be_bytes());
        body.extend_from_slice(&epoch.to_be_bytes());
        body.extend_from_slice(&last_seq.to_be_bytes());
        body.extend_from_slice(&last_offset.to_be_bytes());
        body.extend_from_slice(&delta.to_be_bytes());
        body.extend_from_slice(&ts.to_be_bytes());
        body.extend_from_slice(&(-1i32).to_be_bytes()); // coordinator epoch
        body.extend_from_slice(&(-1i64).to_be_bytes()); // no open transaction
    }
    let mut out = 1i16.to_be_bytes().to_vec();
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[test]
fn spec_builder_matches_the_reference_test_vector() {
    let hex = "0001b3fd6df500000001000000000000000700010000000400000000000000090000000400000000000003e8ffffffffffffffffffffffff";
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(spec_snapshot(&[(7, 1, 4, 9, 4, 1000)]), bytes);
}

#[test]
fn snapshot_written_by_the_log_is_byte_identical_to_the_spec() {
    let f = Fixture::new();
    let log = f.open(LogConfig::default(), false);
    produce(&log, 3);
    append(&log, ProducerId(9), 2, 0).unwrap();
    // A producer-less batch moves the LEO but adds no entry.
    let mut plain = BatchBuilder::new(Offset(0));
    plain.append(Timestamp(NOW), None, Some(b"v"), &[]);
    log.append_as_leader(&mut plain.build(), LeaderEpoch(0))
        .unwrap();
    let leo = log.log_end_offset();
    log.close().unwrap();
    let written = std::fs::read(f.dir.join(format!("{:020}.snapshot", leo.0))).unwrap();
    let r = RECORDS as i64;
    let expected = spec_snapshot(&[
        (PID.0, 0, 3 * RECORDS - 1, 3 * r - 1, RECORDS - 1, NOW),
        (9, 2, RECORDS - 1, 4 * r - 1, RECORDS - 1, NOW),
    ]);
    assert_eq!(written, expected);
}
