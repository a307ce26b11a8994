//! Unit tests of the validation rules, transactions, expiration, snapshots
//! and rebuild; most mirror a named test of Kafka's `ProducerStateManagerTest`.

use std::fs;
use std::path::Path;

use tempfile::TempDir;

use super::entry::{decrement_sequence, NO_SEQUENCE, NUM_BATCHES_TO_RETAIN};
use super::*;
use crate::batch::{build_end_txn_marker, BatchBuilder, BatchView, EndTransactionMarker};
use crate::codec::snapshot::{decode_snapshot, encode_snapshot, ProducerSnapshotEntry};
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp, TopicPartition};

mod rebuild;
mod snapshots;
mod txn;
mod validation;

pub(super) const PID: ProducerId = ProducerId(1);
pub(super) const EXPIRATION_MS: i64 = 60_000;

pub(super) fn manager(dir: &Path) -> ProducerStateManager {
    ProducerStateManager::new(
        &crate::fs::StdFs::shared(),
        dir,
        TopicPartition::new("t", 0),
        EXPIRATION_MS,
    )
    .unwrap()
}

pub(super) fn setup() -> (TempDir, ProducerStateManager) {
    let dir = TempDir::new().unwrap();
    let psm = manager(dir.path());
    (dir, psm)
}

/// A data batch of `records` records at `offset` with base sequence `seq`.
pub(super) fn batch(
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

pub(super) fn marker(
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
pub(super) fn append(
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

pub(super) fn client(
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

pub(super) fn client_txn(
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

pub(super) fn end_txn(
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

pub(super) fn entry(psm: &ProducerStateManager, pid: ProducerId) -> ProducerStateEntry {
    psm.last_entry(pid).cloned().expect("producer has state")
}

pub(super) fn is_out_of_order(r: Result<(), ProducerStateError>) -> Option<SequenceFault> {
    match r {
        Err(ProducerStateError::OutOfOrderSequence { fault, .. }) => Some(fault),
        _ => None,
    }
}

/// Offsets of the `.snapshot` files in `dir`, ascending.
pub(super) fn snapshot_files(dir: &Path) -> Vec<i64> {
    let mut v: Vec<i64> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".snapshot"))
        .map(|n| n[..20].parse().unwrap())
        .collect();
    v.sort();
    v
}
