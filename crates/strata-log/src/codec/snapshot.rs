//! The producer snapshot file `<20-digit offset>.snapshot`, version 1
//! (Kafka `ProducerStateManager.readSnapshot` / `writeSnapshot`,
//! `ProducerSnapshot.json`): its bytes only. Reading, writing and syncing
//! the file, and turning entries into producer state, are
//! `crate::producer_state`'s.

use std::fmt;

use super::{be_i16, be_i32, be_i64, crc32c};
use crate::types::{Offset, ProducerEpoch, ProducerId, Timestamp};

/// The only snapshot version Kafka reads and writes.
pub const SNAPSHOT_VERSION: i16 = 1;
/// Bytes before the first entry: version, crc, entry count.
pub const SNAPSHOT_HEADER_SIZE: usize = 10;
/// Bytes of one entry.
pub const SNAPSHOT_ENTRY_SIZE: usize = 46;
/// Where the CRC-covered part starts (the entry count).
const CRC_START: usize = 6;
/// Where the stored CRC is.
const CRC_FIELD: std::ops::Range<usize> = 2..CRC_START;

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
    /// Append the 46 bytes of this entry to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.producer_id.0.to_be_bytes());
        out.extend_from_slice(&self.epoch.0.to_be_bytes());
        out.extend_from_slice(&self.last_sequence.to_be_bytes());
        out.extend_from_slice(&self.last_offset.0.to_be_bytes());
        out.extend_from_slice(&self.offset_delta.to_be_bytes());
        out.extend_from_slice(&self.timestamp.0.to_be_bytes());
        out.extend_from_slice(&self.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&self.current_txn_first_offset.0.to_be_bytes());
    }

    /// Decode the first 46 bytes of `b`.
    ///
    /// # Panics
    ///
    /// If `b` is shorter than [`SNAPSHOT_ENTRY_SIZE`].
    pub fn decode(b: &[u8]) -> Self {
        let i16_at = |at: usize| be_i16(b, at);
        let i32_at = |at: usize| be_i32(b, at);
        let i64_at = |at: usize| be_i64(b, at);
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
    stamp_crc(&mut out);
    out
}

/// Write the CRC-32C of bytes `[6, EOF)` into the header's crc field (what
/// [`encode_snapshot`] does last; tests and fuzzing use it to make edited
/// bytes pass the check).
///
/// # Panics
///
/// If `bytes` is shorter than the header.
pub fn stamp_crc(bytes: &mut [u8]) {
    let crc = crc32c(&bytes[CRC_START..]);
    bytes[CRC_FIELD].copy_from_slice(&crc.to_be_bytes());
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
            let version = be_i16(bytes, 0);
            if version != SNAPSHOT_VERSION {
                return Err(SnapshotCorruption::UnknownVersion { version });
            }
        }
        return Err(SnapshotCorruption::TooShort { len: bytes.len() });
    }
    let version = be_i16(bytes, 0);
    if version != SNAPSHOT_VERSION {
        return Err(SnapshotCorruption::UnknownVersion { version });
    }
    let count = be_i32(bytes, 6);
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
    let stored = u32::from_be_bytes(bytes[CRC_FIELD].try_into().expect("4 bytes"));
    let computed = crc32c(&bytes[CRC_START..]);
    if stored != computed {
        return Err(SnapshotCorruption::ChecksumMismatch { stored, computed });
    }
    Ok(body[..needed]
        .chunks_exact(SNAPSHOT_ENTRY_SIZE)
        .map(ProducerSnapshotEntry::decode)
        .collect())
}

/// Why a snapshot file is unreadable. Any of these makes the snapshot corrupt:
/// it is deleted and the next older one is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotCorruption {
    /// Shorter than the 10-byte header.
    TooShort { len: usize },
    /// A version other than 1.
    UnknownVersion { version: i16 },
    /// A negative entry count (Kafka: "non-nullable field serialized as null").
    NegativeEntryCount { count: i32 },
    /// Fewer bytes than `count` entries need.
    EntriesTruncated { count: i32, available: usize },
    /// CRC-32C over bytes `[6, EOF)` does not match the stored CRC.
    ChecksumMismatch { stored: u32, computed: u32 },
}

impl fmt::Display for SnapshotCorruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotCorruption::TooShort { len } => {
                write!(f, "{len} bytes, shorter than the header")
            }
            SnapshotCorruption::UnknownVersion { version } => {
                write!(f, "unknown version {version}")
            }
            SnapshotCorruption::NegativeEntryCount { count } => {
                write!(f, "negative entry count {count}")
            }
            SnapshotCorruption::EntriesTruncated { count, available } => {
                write!(
                    f,
                    "{count} entries declared but only {available} bytes follow"
                )
            }
            SnapshotCorruption::ChecksumMismatch { stored, computed } => {
                write!(f, "stored crc {stored:#010x}, computed {computed:#010x}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64) -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id: ProducerId(pid),
            epoch: ProducerEpoch(3),
            last_sequence: 9,
            last_offset: Offset(120),
            offset_delta: 4,
            timestamp: Timestamp(1_700_000_000_000),
            coordinator_epoch: -1,
            current_txn_first_offset: Offset(-1),
        }
    }

    #[test]
    fn layout_and_round_trip() {
        let bytes = encode_snapshot(&[entry(7), entry(8)]);
        assert_eq!(bytes.len(), SNAPSHOT_HEADER_SIZE + 2 * SNAPSHOT_ENTRY_SIZE);
        assert_eq!(be_i16(&bytes, 0), SNAPSHOT_VERSION);
        assert_eq!(be_i32(&bytes, 6), 2);
        assert_eq!(be_i64(&bytes, SNAPSHOT_HEADER_SIZE), 7);
        assert_eq!(decode_snapshot(&bytes), Ok(vec![entry(7), entry(8)]));
    }

    #[test]
    fn corruption_is_named() {
        let mut bytes = encode_snapshot(&[entry(7)]);
        bytes[20] ^= 1;
        assert!(matches!(
            decode_snapshot(&bytes),
            Err(SnapshotCorruption::ChecksumMismatch { .. })
        ));
        assert_eq!(
            decode_snapshot(&[0, 2, 0]),
            Err(SnapshotCorruption::UnknownVersion { version: 2 })
        );
        assert_eq!(
            decode_snapshot(&[0, 1, 0]),
            Err(SnapshotCorruption::TooShort { len: 3 })
        );
    }
}
