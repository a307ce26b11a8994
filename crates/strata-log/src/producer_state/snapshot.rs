//! The producer snapshot file `<20-digit offset>.snapshot`, version 1
//! (Kafka `ProducerStateManager.readSnapshot` / `writeSnapshot`,
//! `ProducerSnapshot.json`; `docs/kafka-behaviour.md` §6.2).
//!
//! The bytes are [`crate::codec::snapshot`]'s; this module adds the file
//! I/O and the conversion to and from [`ProducerStateEntry`].

use std::fs;
use std::path::Path;

use crate::fs::{FileSystem, OpenMode};
use crate::types::Offset;

use super::entry::{BatchMetadata, ProducerStateEntry};
use super::error::ProducerStateError;

use crate::codec::snapshot::{decode_snapshot, encode_snapshot, ProducerSnapshotEntry};

impl ProducerSnapshotEntry {
    /// What a snapshot records about `entry` (its newest batch only).
    pub fn from_entry(entry: &ProducerStateEntry) -> Self {
        ProducerSnapshotEntry {
            producer_id: entry.producer_id(),
            epoch: entry.producer_epoch(),
            last_sequence: entry.last_seq(),
            last_offset: entry.last_data_offset(),
            offset_delta: entry.last_offset_delta(),
            timestamp: entry.last_timestamp(),
            coordinator_epoch: entry.coordinator_epoch(),
            current_txn_first_offset: entry.current_txn_first_offset().unwrap_or(Offset(-1)),
        }
    }

    /// The restored batch: present when `lastOffset >= 0`.
    pub fn batch(&self) -> Option<BatchMetadata> {
        (self.last_offset.0 >= 0).then_some(BatchMetadata {
            last_seq: self.last_sequence,
            last_offset: self.last_offset,
            offset_delta: self.offset_delta,
            timestamp: self.timestamp,
        })
    }

    /// The open transaction's first offset: present when `>= 0`.
    pub fn ongoing_txn_first_offset(&self) -> Option<Offset> {
        (self.current_txn_first_offset.0 >= 0).then_some(self.current_txn_first_offset)
    }

    /// The in-memory entry this snapshot entry restores.
    pub fn to_entry(&self) -> ProducerStateEntry {
        ProducerStateEntry::new(
            self.producer_id,
            self.epoch,
            self.coordinator_epoch,
            self.timestamp,
            self.ongoing_txn_first_offset(),
            self.batch(),
        )
    }
}

/// Read and decode the snapshot at `path`.
///
/// # Errors
/// [`ProducerStateError::CorruptSnapshot`] for unreadable content,
/// [`ProducerStateError::Io`] when the file cannot be read.
pub fn read_snapshot(path: &Path) -> Result<Vec<ProducerSnapshotEntry>, ProducerStateError> {
    let bytes =
        fs::read(path).map_err(|e| ProducerStateError::io(path, "read producer snapshot", e))?;
    decode_snapshot(&bytes).map_err(|reason| ProducerStateError::CorruptSnapshot {
        path: path.to_path_buf(),
        reason,
    })
}

/// Write `entries` as the snapshot at `path`, fsyncing the file and its
/// directory when `sync`.
///
/// Like Kafka the write is in place, not tmp + rename (a torn snapshot is
/// detected by its CRC and skipped at load); unlike Kafka an existing file
/// is truncated first so no stale tail survives.
///
/// # Errors
/// [`ProducerStateError::Io`].
pub fn write_snapshot(
    fs: &dyn FileSystem,
    path: &Path,
    entries: &[ProducerSnapshotEntry],
    sync: bool,
) -> Result<(), ProducerStateError> {
    let bytes = encode_snapshot(entries);
    let io = |op| move |e| ProducerStateError::io(path, op, e);
    let file = fs
        .open(path, OpenMode::CreateTruncate)
        .map_err(io("create producer snapshot"))?;
    fs.write_at(&file, path, &bytes, 0)
        .map_err(io("write producer snapshot"))?;
    if sync {
        fs.sync(&file, path)
            .map_err(io("fsync producer snapshot"))?;
        crate::fs::fsync_parent(fs, path).map_err(io("fsync directory of producer snapshot"))?;
    }
    Ok(())
}
