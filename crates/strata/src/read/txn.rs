//! `.txnindex`: the aborted transactions whose ABORT marker is in a segment.
//!
//! Entries are decoded with [`strata_log::index::AbortedTxn::decode`]; this
//! reader only reads the file (the library's `TransactionIndex::open` opens
//! it read-write, which a dump tool must not do).
//!
//! Format (`docs/kafka-behaviour.md` §5.1), 34 bytes per entry:
//! `version i16 | producerId i64 | firstOffset i64 | lastOffset i64 |
//! lastStableOffset i64`. A trailing partial entry is ignored, as Kafka's
//! iterator does.

use strata_log::index::AbortedTxn;

/// Size of one aborted-transaction entry.
pub const TXN_ENTRY_SIZE: usize = 34;

/// All whole entries of a `.txnindex` file and the size of a partial tail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnIndex {
    pub entries: Vec<AbortedTxn>,
    pub partial_bytes: usize,
}

/// A `.txnindex` entry that Kafka would refuse to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadTxnVersion {
    pub position: usize,
    /// Kafka's `AbortedTxn.version()`: byte 0 as a signed byte.
    pub version: i16,
}

/// Decode a `.txnindex` file.
///
/// # Errors
/// The first entry whose version Kafka rejects (above 0).
pub fn parse_txn_index(bytes: &[u8]) -> Result<TxnIndex, BadTxnVersion> {
    let mut entries = Vec::with_capacity(bytes.len() / TXN_ENTRY_SIZE);
    for (i, c) in bytes.chunks_exact(TXN_ENTRY_SIZE).enumerate() {
        let slot: &[u8; TXN_ENTRY_SIZE] = c.try_into().expect("chunks_exact gives whole entries");
        let entry = AbortedTxn::decode(slot).ok_or(BadTxnVersion {
            position: i * TXN_ENTRY_SIZE,
            version: i16::from(c[0] as i8),
        })?;
        entries.push(entry);
    }
    Ok(TxnIndex {
        entries,
        partial_bytes: bytes.len() % TXN_ENTRY_SIZE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::{Offset, ProducerId};

    fn entry(pid: i64, first: i64, last: i64, lso: i64) -> Vec<u8> {
        AbortedTxn::new(ProducerId(pid), Offset(first), Offset(last), Offset(lso))
            .encode()
            .to_vec()
    }

    #[test]
    fn entries_and_partial_tail() {
        let mut bytes = entry(6000, 17, 25, 26);
        bytes.extend_from_slice(&[0, 0, 0]);
        let idx = parse_txn_index(&bytes).unwrap();
        assert_eq!(idx.entries.len(), 1);
        assert_eq!(idx.entries[0].producer_id, ProducerId(6000));
        assert_eq!(idx.entries[0].first_offset, Offset(17));
        assert_eq!(idx.entries[0].last_offset, Offset(25));
        assert_eq!(idx.entries[0].last_stable_offset, Offset(26));
        assert_eq!(idx.partial_bytes, 3);
    }

    #[test]
    fn future_version_is_rejected() {
        let mut bytes = entry(1, 2, 3, 4);
        bytes.extend(entry(1, 5, 6, 7));
        bytes[34] = 1;
        assert_eq!(
            parse_txn_index(&bytes),
            Err(BadTxnVersion {
                position: 34,
                version: 1
            })
        );
    }
}
