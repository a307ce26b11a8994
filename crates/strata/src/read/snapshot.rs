//! Producer-state snapshot files (`<offset>.snapshot`).
//!
//! Format (version 1, `reference/kafka-disk-format.md` §6.2), big-endian:
//!
//! ```text
//!  0  version     i16   = 1
//!  2  crc         u32   CRC-32C over [6, EOF)
//!  6  entryCount  i32
//! 10  entries     46 bytes each, at entry-relative offsets:
//!        0 producerId i64 | 8 epoch i16 | 10 lastSequence i32 |
//!       14 lastOffset i64 | 22 offsetDelta i32 | 26 timestamp i64 |
//!       34 coordinatorEpoch i32 | 38 currentTxnFirstOffset i64
//! ```
//!
//! Kafka keeps one batch-metadata item when `lastOffset >= 0` and an ongoing
//! transaction when `currentTxnFirstOffset >= 0`.

use strata_log::batch::crc32c;
use strata_log::{Offset, ProducerEpoch, ProducerId, Timestamp};
use thiserror::Error;

use super::{be_i16, be_i32, be_i64};

/// The only snapshot version Kafka 3.9 reads.
pub const SNAPSHOT_VERSION: i16 = 1;
const HEADER_SIZE: usize = 10;
const ENTRY_SIZE: usize = 46;
const CRC_START: usize = 6;

/// The last batch a producer wrote, as persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotBatch {
    pub last_sequence: i32,
    pub last_offset: Offset,
    pub offset_delta: i32,
    pub timestamp: Timestamp,
}

impl SnapshotBatch {
    /// `lastSeq - offsetDelta` with Kafka's wrap-around (`decrementSequence`).
    pub fn first_sequence(&self) -> i32 {
        let (seq, dec) = (self.last_sequence, self.offset_delta);
        if seq < dec {
            i32::MAX - (dec - seq) + 1
        } else {
            seq - dec
        }
    }
}

/// One producer's persisted state.
///
/// Format: see the module docs (46 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub producer_id: ProducerId,
    pub producer_epoch: ProducerEpoch,
    pub coordinator_epoch: i32,
    pub last_timestamp: Timestamp,
    pub current_txn_first_offset: Option<Offset>,
    pub batch: Option<SnapshotBatch>,
}

/// Why a snapshot is corrupt (Kafka's `CorruptSnapshotException`); the
/// messages are Kafka's.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("Snapshot failed schema validation: file of {len} bytes is shorter than the {needed}-byte header")]
    ShortHeader { len: usize, needed: usize },
    #[error("Snapshot contained an unknown file version {version}")]
    UnknownVersion { version: i16 },
    #[error("Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}")]
    Crc { stored: u32, computed: u32 },
    #[error("Snapshot failed schema validation: invalid entry count {count}")]
    NegativeCount { count: i32 },
    #[error("Snapshot failed schema validation: {count} entries need {needed} bytes, {available} available")]
    ShortEntries {
        count: i32,
        needed: usize,
        available: usize,
    },
}

/// Decode a producer snapshot file.
///
/// # Errors
/// Short file, unknown version, CRC mismatch, bad entry count.
pub fn parse_snapshot(bytes: &[u8]) -> Result<Vec<SnapshotEntry>, SnapshotError> {
    if bytes.len() < HEADER_SIZE {
        // Kafka reads the version and CRC before the count; report the
        // version first when it is there.
        if bytes.len() >= 2 && be_i16(bytes, 0) != SNAPSHOT_VERSION {
            return Err(SnapshotError::UnknownVersion {
                version: be_i16(bytes, 0),
            });
        }
        return Err(SnapshotError::ShortHeader {
            len: bytes.len(),
            needed: HEADER_SIZE,
        });
    }
    let count = be_i32(bytes, 6);
    if count < 0 {
        return Err(SnapshotError::NegativeCount { count });
    }
    let needed = HEADER_SIZE + count as usize * ENTRY_SIZE;
    if bytes.len() < needed {
        return Err(SnapshotError::ShortEntries {
            count,
            needed,
            available: bytes.len(),
        });
    }
    let version = be_i16(bytes, 0);
    if version != SNAPSHOT_VERSION {
        return Err(SnapshotError::UnknownVersion { version });
    }
    let stored = be_i32(bytes, 2) as u32;
    let computed = crc32c(&bytes[CRC_START..]);
    if stored != computed {
        return Err(SnapshotError::Crc { stored, computed });
    }
    Ok(bytes[HEADER_SIZE..needed]
        .chunks_exact(ENTRY_SIZE)
        .map(parse_entry)
        .collect())
}

fn parse_entry(e: &[u8]) -> SnapshotEntry {
    let last_offset = be_i64(e, 14);
    // Field order of Kafka's PID_SNAPSHOT_MAP_SCHEMA (the byte offsets in the
    // reference's §6.2 table are off; the field sizes sum to 46 as below).
    let txn_first = be_i64(e, 38);
    let timestamp = Timestamp(be_i64(e, 26));
    SnapshotEntry {
        producer_id: ProducerId(be_i64(e, 0)),
        producer_epoch: ProducerEpoch(be_i16(e, 8)),
        coordinator_epoch: be_i32(e, 34),
        last_timestamp: timestamp,
        current_txn_first_offset: (txn_first >= 0).then_some(Offset(txn_first)),
        batch: (last_offset >= 0).then_some(SnapshotBatch {
            last_sequence: be_i32(e, 10),
            last_offset: Offset(last_offset),
            offset_delta: be_i32(e, 22),
            timestamp,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector of `reference/kafka-disk-format.md` §6.2.
    const VECTOR: &str = "0001b3fd6df500000001000000000000000700010000000400000000000000090000000400000000000003e8ffffffffffffffffffffffff";

    #[test]
    fn reference_vector() {
        let bytes = hex::decode(VECTOR).unwrap();
        let entries = parse_snapshot(&bytes).unwrap();
        assert_eq!(entries.len(), 1);
        let e = entries[0];
        assert_eq!(e.producer_id, ProducerId(7));
        assert_eq!(e.producer_epoch, ProducerEpoch(1));
        assert_eq!(e.coordinator_epoch, -1);
        assert_eq!(e.current_txn_first_offset, None);
        let b = e.batch.unwrap();
        assert_eq!((b.last_sequence, b.offset_delta), (4, 4));
        assert_eq!(b.first_sequence(), 0);
        assert_eq!(b.last_offset, Offset(9));
        assert_eq!(b.timestamp, Timestamp(1000));
    }

    #[test]
    fn corruption_is_detected() {
        let mut bytes = hex::decode(VECTOR).unwrap();
        bytes[20] ^= 1;
        assert!(matches!(
            parse_snapshot(&bytes),
            Err(SnapshotError::Crc {
                stored: 0xb3fd6df5,
                ..
            })
        ));
        assert!(matches!(
            parse_snapshot(&[]),
            Err(SnapshotError::ShortHeader { len: 0, .. })
        ));
        let mut v2 = hex::decode(VECTOR).unwrap();
        v2[1] = 2;
        assert_eq!(
            parse_snapshot(&v2),
            Err(SnapshotError::UnknownVersion { version: 2 })
        );
        let short = hex::decode(VECTOR).unwrap();
        assert!(matches!(
            parse_snapshot(&short[..30]),
            Err(SnapshotError::ShortEntries { count: 1, .. })
        ));
    }

    #[test]
    fn first_sequence_wraps() {
        let b = SnapshotBatch {
            last_sequence: 2,
            last_offset: Offset(10),
            offset_delta: 4,
            timestamp: Timestamp(0),
        };
        assert_eq!(b.first_sequence(), i32::MAX - 1);
    }
}
