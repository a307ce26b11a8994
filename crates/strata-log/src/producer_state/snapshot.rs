//! The producer snapshot file `<20-digit offset>.snapshot`, version 1
//! (Kafka `ProducerStateManager.readSnapshot` / `writeSnapshot`,
//! `ProducerSnapshot.json`; `docs/kafka-behaviour.md` §6.2).
//!
//! Usable on its own (the dump tool reads snapshots with [`read_snapshot`]).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use crate::batch::crc32c;
use crate::types::{Offset, ProducerEpoch, ProducerId, Timestamp};

use super::entry::{BatchMetadata, ProducerStateEntry};
use super::error::{ProducerStateError, SnapshotCorruption};

/// The only snapshot version Kafka reads and writes.
pub const SNAPSHOT_VERSION: i16 = 1;
/// Bytes before the first entry: version, crc, entry count.
pub const SNAPSHOT_HEADER_SIZE: usize = 10;
/// Bytes of one entry.
pub const SNAPSHOT_ENTRY_SIZE: usize = 46;
/// Where the CRC-covered part starts (the entry count).
const CRC_START: usize = 6;

/// One producer as a snapshot stores it: only its newest batch survives.
///
/// Format (46 bytes, big-endian):
///
/// ```text
///  0  producerId             i64
///  8  epoch                  i16
/// 10  lastSequence           i32   -1 without a data batch
/// 14  lastOffset             i64   -1 without a data batch
/// 22  offsetDelta            i32   lastOffset - firstOffset of that batch; 0 without one
/// 26  timestamp              i64   the producer's lastTimestamp
/// 34  coordinatorEpoch       i32
/// 38  currentTxnFirstOffset  i64   -1 without an open transaction
/// ```
///
/// Fields keep their raw values (sentinels included) so that a file reads
/// and re-encodes to the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProducerSnapshotEntry {
    pub producer_id: ProducerId,
    pub epoch: ProducerEpoch,
    pub last_sequence: i32,
    pub last_offset: Offset,
    pub offset_delta: i32,
    pub timestamp: Timestamp,
    pub coordinator_epoch: i32,
    pub current_txn_first_offset: Offset,
}

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

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.producer_id.0.to_be_bytes());
        out.extend_from_slice(&self.epoch.0.to_be_bytes());
        out.extend_from_slice(&self.last_sequence.to_be_bytes());
        out.extend_from_slice(&self.last_offset.0.to_be_bytes());
        out.extend_from_slice(&self.offset_delta.to_be_bytes());
        out.extend_from_slice(&self.timestamp.0.to_be_bytes());
        out.extend_from_slice(&self.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&self.current_txn_first_offset.0.to_be_bytes());
    }

    fn decode(b: &[u8]) -> Self {
        let i16_at = |at: usize| i16::from_be_bytes([b[at], b[at + 1]]);
        let i32_at = |at: usize| i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        ProducerSnapshotEntry {
            producer_id: ProducerId(i64_at(0)),
            epoch: ProducerEpoch(i16_at(8)),
            last_sequence: i32_at(10),
            last_offset: Offset(i64_at(14)),
            offset_delta: i32_at(22),
            timestamp: Timestamp(i64_at(26)),
            coordinator_epoch: i32_at(34),
            current_txn_first_offset: Offset(i64_at(38)),
        }
    }
}

/// Encode a whole snapshot file.
///
/// Format (big-endian):
///
/// ```text
///  0  version     i16   = 1
///  2  crc         u32   CRC-32C of bytes [6, EOF)
///  6  entryCount  i32
/// 10  entries     46 bytes each, see [`ProducerSnapshotEntry`]
/// ```
///
/// Entries are written in the given order (Kafka writes hash-map order;
/// readers must not assume any).
pub fn encode_snapshot(entries: &[ProducerSnapshotEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SNAPSHOT_HEADER_SIZE + entries.len() * SNAPSHOT_ENTRY_SIZE);
    out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for entry in entries {
        entry.encode_into(&mut out);
    }
    let crc = crc32c(&out[CRC_START..]);
    out[2..6].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Decode a snapshot file's bytes.
///
/// Like Kafka, bytes after the declared entries are tolerated when the CRC
/// (which covers them) matches.
///
/// # Errors
/// The [`SnapshotCorruption`] found first: header too short, version other
/// than 1, negative or oversized entry count, CRC mismatch.
pub fn decode_snapshot(bytes: &[u8]) -> Result<Vec<ProducerSnapshotEntry>, SnapshotCorruption> {
    if bytes.len() < SNAPSHOT_HEADER_SIZE {
        // Kafka reads the version first: a 2..10 byte file with a bad version
        // is reported as such.
        if bytes.len() >= 2 {
            let version = i16::from_be_bytes([bytes[0], bytes[1]]);
            if version != SNAPSHOT_VERSION {
                return Err(SnapshotCorruption::UnknownVersion { version });
            }
        }
        return Err(SnapshotCorruption::TooShort { len: bytes.len() });
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != SNAPSHOT_VERSION {
        return Err(SnapshotCorruption::UnknownVersion { version });
    }
    let count = i32::from_be_bytes(bytes[6..10].try_into().expect("4 bytes"));
    if count < 0 {
        return Err(SnapshotCorruption::NegativeEntryCount { count });
    }
    let body = &bytes[SNAPSHOT_HEADER_SIZE..];
    let needed = count as usize * SNAPSHOT_ENTRY_SIZE;
    if needed > body.len() {
        return Err(SnapshotCorruption::EntriesTruncated {
            count,
            available: body.len(),
        });
    }
    let stored = u32::from_be_bytes(bytes[2..6].try_into().expect("4 bytes"));
    let computed = crc32c(&bytes[CRC_START..]);
    if stored != computed {
        return Err(SnapshotCorruption::ChecksumMismatch { stored, computed });
    }
    Ok(body[..needed]
        .chunks_exact(SNAPSHOT_ENTRY_SIZE)
        .map(ProducerSnapshotEntry::decode)
        .collect())
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
    path: &Path,
    entries: &[ProducerSnapshotEntry],
    sync: bool,
) -> Result<(), ProducerStateError> {
    let bytes = encode_snapshot(entries);
    let io = |op| move |e| ProducerStateError::io(path, op, e);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io("create producer snapshot"))?;
    file.write_all(&bytes)
        .map_err(io("write producer snapshot"))?;
    if sync {
        file.sync_all().map_err(io("fsync producer snapshot"))?;
        crate::fs::fsync_parent(&crate::fs::StdFs, path)
            .map_err(io("fsync directory of producer snapshot"))?;
    }
    Ok(())
}

/// fsync a snapshot written earlier without `sync` (Kafka
/// `flushProducerStateSnapshot`, run after a roll). A file deleted meanwhile
/// is not an error.
///
/// # Errors
/// [`ProducerStateError::Io`].
pub fn flush_snapshot(path: &Path) -> Result<(), ProducerStateError> {
    match OpenOptions::new().read(true).open(path) {
        Ok(file) => file
            .sync_all()
            .map_err(|e| ProducerStateError::io(path, "fsync producer snapshot", e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ProducerStateError::io(path, "open producer snapshot", e)),
    }
}
