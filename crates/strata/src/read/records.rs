//! The batches of a `.log` file, scanned by Kafka's `FileLogInputStream` rules.
//!
//! v2 batches are read with [`strata_log::batch::BatchView`], legacy (magic 0
//! and 1) entries with [`strata_log::batch::read_legacy_entry`]. Scanning
//! follows §1.10 of `docs/kafka-behaviour.md`: stop at 17 or fewer
//! remaining bytes or at a partial batch; a `Length` below 14 is corruption
//! and ends the scan.

use strata_log::batch::{
    read_legacy_entry, BatchError, BatchPrefix, BatchScanner, BatchView, LegacyEntry,
};
use strata_log::Offset;

/// One item of a segment scan.
#[derive(Clone, Debug)]
pub enum Scanned<'a> {
    /// A v2 batch (CRC not yet checked).
    V2 {
        position: usize,
        batch: BatchView<'a>,
    },
    /// A magic 0/1 entry.
    Legacy {
        position: usize,
        entry: LegacyEntry<'a>,
    },
    /// A batch whose header cannot be read; the scan goes on after it when
    /// its size is known (`size` is `Some`), and stops otherwise.
    Corrupt {
        position: usize,
        size: Option<usize>,
        error: BatchError,
    },
}

/// Scan the batches of `bytes` (a whole `.log` file or a prefix of one).
///
/// Returns the items and the position after the last whole batch; bytes past
/// it are what Kafka reports as "invalid bytes at the end".
pub fn scan(bytes: &[u8]) -> (Vec<Scanned<'_>>, usize) {
    let mut scanner = BatchScanner::new(bytes);
    let mut items = Vec::new();
    for item in scanner.by_ref() {
        match item {
            Ok((position, prefix)) => items.push(classify(bytes, position, prefix)),
            Err(error) => {
                let position = match &error {
                    BatchError::At { position, .. } => *position as usize,
                    _ => 0,
                };
                items.push(Scanned::Corrupt {
                    position,
                    size: None,
                    error: error.kind().clone(),
                });
            }
        }
    }
    let end = match items.last() {
        Some(Scanned::Corrupt {
            size: None,
            position,
            ..
        }) => *position,
        _ => scanner.position(),
    };
    (items, end)
}

fn classify(bytes: &[u8], position: usize, prefix: BatchPrefix) -> Scanned<'_> {
    let size = prefix.total_size();
    let slice = &bytes[position..position + size];
    if prefix.magic >= 2 {
        match BatchView::parse(slice) {
            Ok(batch) => Scanned::V2 { position, batch },
            Err(error) => Scanned::Corrupt {
                position,
                size: Some(size),
                error,
            },
        }
    } else if prefix.magic < 0 {
        Scanned::Corrupt {
            position,
            size: Some(size),
            error: BatchError::UnsupportedMagic {
                magic: prefix.magic,
            },
        }
    } else {
        match read_legacy_entry(slice) {
            Ok(entry) => Scanned::Legacy { position, entry },
            Err(error) => Scanned::Corrupt {
                position,
                size: Some(size),
                error,
            },
        }
    }
}

/// The last offset of a scanned item, when it has one.
pub fn last_offset(item: &Scanned<'_>) -> Option<Offset> {
    match item {
        Scanned::V2 { batch, .. } => Some(batch.last_offset()),
        Scanned::Legacy { entry, .. } => Some(entry.offset),
        Scanned::Corrupt { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test vector A of `docs/kafka-behaviour.md` §1.9.
    const VECTOR_A: &str = "00000000000000000000003a0000000002716a618900000000000000000000000003e800000000000003e8ffffffffffffffffffffffffffff0000000110000000026b027600";

    #[test]
    fn v2_batches_and_trailing_bytes() {
        let mut bytes = hex::decode(VECTOR_A).unwrap();
        let one = bytes.len();
        bytes.extend_from_slice(&hex::decode(VECTOR_A).unwrap()[..30]);
        let (items, end) = scan(&bytes);
        assert_eq!(items.len(), 1);
        assert_eq!(end, one);
        match &items[0] {
            Scanned::V2 { position, batch } => {
                assert_eq!(*position, 0);
                assert!(batch.is_crc_valid());
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn zero_length_stops_the_scan() {
        let mut bytes = hex::decode(VECTOR_A).unwrap();
        let one = bytes.len();
        bytes.extend_from_slice(&[0u8; 40]);
        let (items, end) = scan(&bytes);
        assert_eq!(items.len(), 2);
        assert!(matches!(
            items[1],
            Scanned::Corrupt {
                position,
                size: None,
                error: BatchError::LengthTooSmall { length: 0 }
            } if position == one
        ));
        assert_eq!(end, one);
    }

    #[test]
    fn legacy_v1_header() {
        // offset 7, magic 1, CreateTime 1000, key null, value "v".
        let mut body = vec![1u8, 0];
        body.extend_from_slice(&1000i64.to_be_bytes());
        body.extend_from_slice(&(-1i32).to_be_bytes());
        body.extend_from_slice(&1i32.to_be_bytes());
        body.push(b'v');
        let crc = crc32fast::hash(&body);
        let mut bytes = 7i64.to_be_bytes().to_vec();
        bytes.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes.extend_from_slice(&body);
        let (items, _) = scan(&bytes);
        let Scanned::Legacy { entry, .. } = &items[0] else {
            panic!("not legacy: {:?}", items[0]);
        };
        assert_eq!(entry.offset, Offset(7));
        assert_eq!(entry.magic, 1);
        assert!(entry.is_crc_valid());
        let records = entry.records().unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].key, None);
        assert_eq!(records[0].value.as_deref(), Some(&b"v"[..]));
    }
}
