//! `.txnindex` records (Kafka `AbortedTxn`): one per aborted transaction
//! whose ABORT marker landed in the segment, appended in last-offset order,
//! no header. A trailing partial record is ignored, as Kafka's iterator does.

use thiserror::Error;

use super::be_i64;
use super::index::IndexCorruption;
use crate::types::{Offset, ProducerId};

/// A record whose version Kafka refuses to read (above 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("aborted transaction at byte {position} has unsupported version {version}")]
pub struct UnsupportedTxnVersion {
    /// Kafka's `AbortedTxn.version()`: byte 0 as a signed byte.
    pub version: i16,
    /// Byte position of the record in the file.
    pub position: u64,
}

impl From<UnsupportedTxnVersion> for IndexCorruption {
    fn from(e: UnsupportedTxnVersion) -> IndexCorruption {
        IndexCorruption::UnsupportedTxnVersion {
            version: e.version,
            position: e.position,
        }
    }
}

/// Size of one [`AbortedTxn`] record.
pub const ABORTED_TXN_SIZE: usize = 34;

/// The only record version Kafka writes or accepts.
pub const ABORTED_TXN_VERSION: i16 = 0;

/// One aborted transaction.
///
/// Format: 34 bytes, big-endian:
///
/// ```text
/// 0..2    version             i16  = 0
/// 2..10   producer id         i64
/// 10..18  first offset        i64  first offset of the transaction (may lie
///                                  in an earlier segment)
/// 18..26  last offset         i64  offset of the ABORT marker
/// 26..34  last stable offset  i64  LSO when the abort was written
/// ```
///
/// Kafka reads the version from byte 0 alone and rejects values above 0;
/// [`AbortedTxn::decode`] does the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    pub version: i16,
    pub producer_id: ProducerId,
    pub first_offset: Offset,
    pub last_offset: Offset,
    pub last_stable_offset: Offset,
}

impl AbortedTxn {
    /// A version-0 record.
    pub fn new(
        producer_id: ProducerId,
        first_offset: Offset,
        last_offset: Offset,
        last_stable_offset: Offset,
    ) -> AbortedTxn {
        AbortedTxn {
            version: ABORTED_TXN_VERSION,
            producer_id,
            first_offset,
            last_offset,
            last_stable_offset,
        }
    }

    /// The 34 bytes of this record.
    pub fn encode(&self) -> [u8; ABORTED_TXN_SIZE] {
        let mut b = [0u8; ABORTED_TXN_SIZE];
        b[0..2].copy_from_slice(&self.version.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.0.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.0.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.0.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.0.to_be_bytes());
        b
    }

    /// Parse a record; `None` if its version is above 0.
    pub fn decode(b: &[u8; ABORTED_TXN_SIZE]) -> Option<AbortedTxn> {
        let version = b[0] as i8 as i16;
        if version > ABORTED_TXN_VERSION {
            return None;
        }
        let long = |at: usize| be_i64(b, at);
        Some(AbortedTxn {
            version,
            producer_id: ProducerId(long(2)),
            first_offset: Offset(long(10)),
            last_offset: Offset(long(18)),
            last_stable_offset: Offset(long(26)),
        })
    }
}

/// Every whole record of a `.txnindex` file's bytes, in file order; a
/// trailing partial record (`bytes.len() % ABORTED_TXN_SIZE` bytes) is left
/// out. Record `i` starts at byte `i * ABORTED_TXN_SIZE`.
///
/// # Errors
///
/// [`UnsupportedTxnVersion`] for the first record whose version Kafka
/// rejects.
pub fn decode_records(bytes: &[u8]) -> Result<Vec<AbortedTxn>, UnsupportedTxnVersion> {
    bytes
        .chunks_exact(ABORTED_TXN_SIZE)
        .enumerate()
        .map(|(i, chunk)| {
            let record: &[u8; ABORTED_TXN_SIZE] = chunk.try_into().expect("exact chunk");
            AbortedTxn::decode(record).ok_or(UnsupportedTxnVersion {
                version: i16::from(record[0] as i8),
                position: (i * ABORTED_TXN_SIZE) as u64,
            })
        })
        .collect()
}

/// Kafka's `TransactionIndex.sanityCheck` rule for one record: it does not
/// end below the segment's base offset.
///
/// # Errors
///
/// [`IndexCorruption::AbortedTxnBelowBase`].
pub fn check_not_below_base(base: Offset, txn: &AbortedTxn) -> Result<(), IndexCorruption> {
    if txn.last_offset < base {
        return Err(IndexCorruption::AbortedTxnBelowBase {
            last_offset: txn.last_offset,
            base_offset: base,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pid: i64, first: i64, last: i64, lso: i64) -> Vec<u8> {
        AbortedTxn::new(ProducerId(pid), Offset(first), Offset(last), Offset(lso))
            .encode()
            .to_vec()
    }

    #[test]
    fn records_and_partial_tail() {
        let mut bytes = record(6000, 17, 25, 26);
        assert_eq!(bytes[..2], [0, 0]);
        assert_eq!(bytes[2..10], 6000i64.to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 0]);
        let all = decode_records(&bytes).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].producer_id, ProducerId(6000));
        assert_eq!(all[0].first_offset, Offset(17));
        assert_eq!(all[0].last_offset, Offset(25));
        assert_eq!(all[0].last_stable_offset, Offset(26));
        assert_eq!(
            check_not_below_base(Offset(26), &all[0]),
            Err(IndexCorruption::AbortedTxnBelowBase {
                last_offset: Offset(25),
                base_offset: Offset(26),
            })
        );
        assert_eq!(check_not_below_base(Offset(25), &all[0]), Ok(()));
    }

    #[test]
    fn future_version_is_rejected_with_its_position() {
        let mut bytes = record(1, 2, 3, 4);
        bytes.extend(record(1, 5, 6, 7));
        bytes[34] = 1;
        assert_eq!(
            decode_records(&bytes),
            Err(UnsupportedTxnVersion {
                version: 1,
                position: 34
            })
        );
    }
}
