//! Dump of `.txnindex`, producer `.snapshot`, checkpoint files and
//! `partition.metadata`.
//!
//! Kafka's tool prints the first two (`dumpTxnIndex`, `dumpProducerIdSnapshot`);
//! for checkpoints and `partition.metadata` (which it cannot read) Strata
//! prints the file's own lines after checking them.

use std::path::Path;

use super::lines::{SnapshotBatchLine, SnapshotLine, TxnLine};
use super::{read_or_report, Emitter, Problems};
use strata_log::codec::snapshot::decode_snapshot;
use strata_log::codec::txn::{decode_records, ABORTED_TXN_SIZE};
use strata_log::PartitionMetadata;
use strata_log::SnapshotCorruption;

use crate::read::checkpoint::{read_epoch_checkpoint, read_offset_checkpoint};

/// `dumpTxnIndex`.
pub fn dump_txn_index(path: &Path, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "txnindex");
    let Some(bytes) = read_or_report(path, em, problems) else {
        return;
    };
    match decode_records(&bytes) {
        Ok(entries) => {
            for t in &entries {
                let line = TxnLine {
                    version: t.version,
                    producer_id: t.producer_id.0,
                    first_offset: t.first_offset.get(),
                    last_offset: t.last_offset.get(),
                    last_stable_offset: t.last_stable_offset.get(),
                };
                em.line(&line.text());
                em.push("entries", line);
            }
            em.field("partial_bytes", bytes.len() % ABORTED_TXN_SIZE);
        }
        Err(bad) => {
            problems.corrupt = true;
            let (version, position) = (bad.version, bad.position);
            em.error(&format!(
                "Unexpected aborted transaction version {version} in transaction index {}, current version is 0 (entry at position {position})",
                super::absolute(path).display(),
            ));
        }
    }
}

/// `dumpProducerIdSnapshot`.
pub fn dump_snapshot(path: &Path, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "producer_snapshot");
    let Some(bytes) = read_or_report(path, em, problems) else {
        return;
    };
    match decode_snapshot(&bytes) {
        Ok(entries) => {
            for e in entries {
                let line = SnapshotLine {
                    producer_id: e.producer_id.0,
                    producer_epoch: e.epoch.0,
                    coordinator_epoch: e.coordinator_epoch,
                    current_txn_first_offset: e.ongoing_txn_first_offset().map(|o| o.get()),
                    last_timestamp: e.timestamp.0,
                    batch: e.batch().map(|b| SnapshotBatchLine {
                        first_sequence: b.first_seq(),
                        last_sequence: b.last_seq,
                        last_offset: b.last_offset.get(),
                        offset_delta: b.offset_delta,
                        timestamp: b.timestamp.0,
                    }),
                };
                em.line(&line.text());
                em.push("entries", line);
            }
        }
        Err(e) => {
            problems.corrupt = true;
            em.error(&snapshot_message(&e));
        }
    }
}

/// Kafka's `CorruptSnapshotException` message for a snapshot corruption.
pub fn snapshot_message(e: &SnapshotCorruption) -> String {
    match e {
        SnapshotCorruption::UnknownVersion { version } => {
            format!("Snapshot contained an unknown file version {version}")
        }
        SnapshotCorruption::ChecksumMismatch { stored, computed } => format!(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}"
        ),
        other => format!("Snapshot failed schema validation: {other}"),
    }
}

/// An offset checkpoint: the version, count and entry lines as stored.
pub fn dump_offset_checkpoint(path: &Path, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "offset_checkpoint");
    if read_or_report(path, em, problems).is_none() {
        return;
    }
    match read_offset_checkpoint(path) {
        Ok(entries) => {
            for e in &entries {
                em.line(&format!(
                    "topic: {} partition: {} offset: {}",
                    e.tp.topic, e.tp.partition, e.offset
                ));
                em.push(
                    "entries",
                    serde_json::json!({"topic": e.tp.topic, "partition": e.tp.partition, "offset": e.offset.get()}),
                );
            }
        }
        Err(e) => {
            problems.corrupt = true;
            em.error(&e.to_string());
        }
    }
}

/// `leader-epoch-checkpoint`.
pub fn dump_epoch_checkpoint(path: &Path, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "leader_epoch_checkpoint");
    if read_or_report(path, em, problems).is_none() {
        return;
    }
    match read_epoch_checkpoint(path) {
        Ok(entries) => {
            for e in &entries {
                em.line(&format!(
                    "epoch: {} startOffset: {}",
                    e.epoch.0, e.start_offset
                ));
                em.push(
                    "entries",
                    serde_json::json!({"epoch": e.epoch.0, "start_offset": e.start_offset.get()}),
                );
            }
        }
        Err(e) => {
            problems.corrupt = true;
            em.error(&e.to_string());
        }
    }
}

/// `partition.metadata`.
pub fn dump_partition_metadata(path: &Path, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "partition_metadata");
    let Some(bytes) = read_or_report(path, em, problems) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes);
    match PartitionMetadata::parse(&text, path) {
        Ok(m) => {
            let id = strata_log::uuid_to_kafka_string(&m.topic_id);
            em.line(&format!(
                "version: {} topicId: {id}",
                PartitionMetadata::VERSION
            ));
            em.field("topic_id", id);
        }
        Err(e) => {
            problems.corrupt = true;
            em.error(&e.to_string());
        }
    }
}
