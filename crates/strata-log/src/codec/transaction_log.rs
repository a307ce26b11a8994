//! The record key and value of `__transaction_state`, byte-compatible with
//! Kafka 3.9's `TransactionLogKey` (v0) and `TransactionLogValue` (v0–1)
//! schemas (`transaction-coordinator/.../common/message/*.json`).
//!
//! Key (v0 only, not flexible):
//! ```text
//! int16  version          0
//! string transactionalId  int16 length + UTF-8
//! ```
//!
//! Value (v0 written, v1 flexible also read; a null value is a tombstone):
//! ```text
//! int16  version                       0 or 1
//! int64  producerId
//! int16  producerEpoch
//! int32  transactionTimeoutMs
//! int8   transactionStatus             0 Empty .. 7 PrepareEpochFence
//! array  transactionPartitions         nullable; {string topic, [int32] partitionIds}
//!                                      v0: int32 count (-1 null); v1: uvarint count+1 (0 null),
//!                                      compact strings/arrays, per-entry tagged fields
//! int64  transactionLastUpdateTimestampMs
//! int64  transactionStartTimestampMs   -1 while Empty
//! (v1)   tagged fields                 ignored when read
//! ```
//!
//! Kafka writes a null partition array for Empty and an empty array for the
//! Complete* states; both decode to an empty list here, and encoding writes
//! null exactly when the status is Empty.

use thiserror::Error;

/// The key version Kafka 3.9 writes and reads.
pub const KEY_VERSION: i16 = 0;
/// The value version Kafka 3.9 writes.
pub const VALUE_VERSION: i16 = 0;
/// The highest value version this reader understands.
pub const MAX_VALUE_VERSION: i16 = 1;

/// Bytes of a `__transaction_state` record that do not follow the schemas.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TxnLogError {
    #[error("{what} truncated at byte {position}")]
    Truncated { what: &'static str, position: usize },
    #[error("{what} has unsupported version {version}")]
    UnsupportedVersion { what: &'static str, version: i16 },
    #[error("{what} has an invalid length {length} at byte {position}")]
    BadLength {
        what: &'static str,
        length: i64,
        position: usize,
    },
    #[error("{what} is not valid UTF-8 at byte {position}")]
    InvalidUtf8 { what: &'static str, position: usize },
    #[error("unknown transaction status {0}")]
    UnknownStatus(i8),
}

/// A transaction's state as stored (Kafka `TransactionState`; the id is the
/// on-disk `transactionStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnStatus {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TxnStatus {
    /// Every state, in id order.
    pub const ALL: [TxnStatus; 8] = [
        TxnStatus::Empty,
        TxnStatus::Ongoing,
        TxnStatus::PrepareCommit,
        TxnStatus::PrepareAbort,
        TxnStatus::CompleteCommit,
        TxnStatus::CompleteAbort,
        TxnStatus::Dead,
        TxnStatus::PrepareEpochFence,
    ];

    pub fn id(self) -> i8 {
        match self {
            TxnStatus::Empty => 0,
            TxnStatus::Ongoing => 1,
            TxnStatus::PrepareCommit => 2,
            TxnStatus::PrepareAbort => 3,
            TxnStatus::CompleteCommit => 4,
            TxnStatus::CompleteAbort => 5,
            TxnStatus::Dead => 6,
            TxnStatus::PrepareEpochFence => 7,
        }
    }

    /// # Errors
    /// [`TxnLogError::UnknownStatus`] outside 0..=7.
    pub fn from_id(id: i8) -> Result<TxnStatus, TxnLogError> {
        usize::try_from(id)
            .ok()
            .and_then(|i| TxnStatus::ALL.get(i).copied())
            .ok_or(TxnLogError::UnknownStatus(id))
    }

    /// The name DescribeTransactions and ListTransactions use.
    pub fn name(self) -> &'static str {
        match self {
            TxnStatus::Empty => "Empty",
            TxnStatus::Ongoing => "Ongoing",
            TxnStatus::PrepareCommit => "PrepareCommit",
            TxnStatus::PrepareAbort => "PrepareAbort",
            TxnStatus::CompleteCommit => "CompleteCommit",
            TxnStatus::CompleteAbort => "CompleteAbort",
            TxnStatus::Dead => "Dead",
            TxnStatus::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state named `name` (ListTransactions filters), exact match.
    pub fn from_name(name: &str) -> Option<TxnStatus> {
        TxnStatus::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The value of a `__transaction_state` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnLogValue {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub status: TxnStatus,
    /// `(topic, partitions)` in the order they were written.
    pub partitions: Vec<(String, Vec<i32>)>,
    pub last_update_timestamp_ms: i64,
    pub start_timestamp_ms: i64,
}

/// Encode a key for `transactional_id`.
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&KEY_VERSION.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

/// Decode a key: `Ok(None)` for a key version other than 0 (Kafka skips
/// such records as left over from an aborted upgrade).
///
/// # Errors
/// Truncated or malformed bytes.
pub fn decode_key(bytes: &[u8]) -> Result<Option<String>, TxnLogError> {
    let mut r = Reader::new(bytes, "TransactionLogKey");
    let version = r.i16()?;
    if version != KEY_VERSION {
        return Ok(None);
    }
    Ok(Some(r.string()?))
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    // Transactional ids and topic names are far below 32 KiB (Kafka limits
    // both); a longer one would be refused before reaching the codec.
    let len = i16::try_from(s.len()).unwrap_or(i16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&s.as_bytes()[..len as usize]);
}

/// Encode a value in version 0 (what Kafka 3.9 writes).
pub fn encode_value(v: &TxnLogValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&v.producer_id.to_be_bytes());
    out.extend_from_slice(&v.producer_epoch.to_be_bytes());
    out.extend_from_slice(&v.timeout_ms.to_be_bytes());
    out.push(v.status.id() as u8);
    if v.status == TxnStatus::Empty {
        out.extend_from_slice(&(-1i32).to_be_bytes());
    } else {
        out.extend_from_slice(&(v.partitions.len() as i32).to_be_bytes());
        for (topic, parts) in &v.partitions {
            put_string(&mut out, topic);
            out.extend_from_slice(&(parts.len() as i32).to_be_bytes());
            for p in parts {
                out.extend_from_slice(&p.to_be_bytes());
            }
        }
    }
    out.extend_from_slice(&v.last_update_timestamp_ms.to_be_bytes());
    out.extend_from_slice(&v.start_timestamp_ms.to_be_bytes());
    out
}

/// Decode a value of version 0 or 1.
///
/// # Errors
/// Truncated or malformed bytes, an unknown status or a version above 1.
pub fn decode_value(bytes: &[u8]) -> Result<TxnLogValue, TxnLogError> {
    let mut r = Reader::new(bytes, "TransactionLogValue");
    let version = r.i16()?;
    if !(0..=MAX_VALUE_VERSION).contains(&version) {
        return Err(TxnLogError::UnsupportedVersion {
            what: "TransactionLogValue",
            version,
        });
    }
    let flexible = version >= 1;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let timeout_ms = r.i32()?;
    let status = TxnStatus::from_id(r.i8()?)?;
    let count = if flexible {
        r.uvarint()? as i64 - 1
    } else {
        i64::from(r.i32()?)
    };
    let mut partitions = Vec::new();
    if count >= 0 {
        r.check_count(count, 3)?;
        for _ in 0..count {
            let topic = if flexible {
                r.compact_string()?
            } else {
                r.string()?
            };
            let n = if flexible {
                r.uvarint()? as i64 - 1
            } else {
                i64::from(r.i32()?)
            };
            if n < 0 {
                return Err(TxnLogError::BadLength {
                    what: "partition id array",
                    length: n,
                    position: r.pos,
                });
            }
            r.check_count(n, 4)?;
            let mut ids = Vec::with_capacity(n as usize);
            for _ in 0..n {
                ids.push(r.i32()?);
            }
            if flexible {
                r.skip_tagged_fields()?;
            }
            partitions.push((topic, ids));
        }
    } else if count < -1 {
        return Err(TxnLogError::BadLength {
            what: "partition array",
            length: count,
            position: r.pos,
        });
    }
    let last_update_timestamp_ms = r.i64()?;
    let start_timestamp_ms = r.i64()?;
    if flexible {
        r.skip_tagged_fields()?;
    }
    Ok(TxnLogValue {
        producer_id,
        producer_epoch,
        timeout_ms,
        status,
        partitions,
        last_update_timestamp_ms,
        start_timestamp_ms,
    })
}

/// A bounds-checked big-endian reader.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader {
            bytes,
            pos: 0,
            what,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], TxnLogError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or(TxnLogError::Truncated {
                what: self.what,
                position: self.pos,
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn i8(&mut self) -> Result<i8, TxnLogError> {
        Ok(self.take(1)?[0] as i8)
    }

    fn i16(&mut self) -> Result<i16, TxnLogError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, TxnLogError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, TxnLogError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(i64::from_be_bytes(a))
    }

    fn uvarint(&mut self) -> Result<u64, TxnLogError> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let b = self.take(1)?[0];
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(TxnLogError::BadLength {
            what: "unsigned varint",
            length: -1,
            position: self.pos,
        })
    }

    /// Refuse a count whose elements (at least `min_size` bytes each)
    /// cannot fit in the rest of the buffer, before allocating for it.
    fn check_count(&self, count: i64, min_size: usize) -> Result<(), TxnLogError> {
        let left = (self.bytes.len() - self.pos) as i64;
        if count.saturating_mul(min_size as i64) > left {
            return Err(TxnLogError::BadLength {
                what: "array",
                length: count,
                position: self.pos,
            });
        }
        Ok(())
    }

    fn utf8(&mut self, len: usize) -> Result<String, TxnLogError> {
        let at = self.pos;
        let b = self.take(len)?;
        String::from_utf8(b.to_vec()).map_err(|_| TxnLogError::InvalidUtf8 {
            what: self.what,
            position: at,
        })
    }

    fn string(&mut self) -> Result<String, TxnLogError> {
        let len = self.i16()?;
        if len < 0 {
            return Err(TxnLogError::BadLength {
                what: "string",
                length: i64::from(len),
                position: self.pos,
            });
        }
        self.utf8(len as usize)
    }

    fn compact_string(&mut self) -> Result<String, TxnLogError> {
        let n = self.uvarint()?;
        if n == 0 {
            return Err(TxnLogError::BadLength {
                what: "compact string",
                length: -1,
                position: self.pos,
            });
        }
        self.utf8((n - 1) as usize)
    }

    fn skip_tagged_fields(&mut self) -> Result<(), TxnLogError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(size as usize)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const TS: i64 = 1_700_000_000_000;

    fn ongoing() -> TxnLogValue {
        TxnLogValue {
            producer_id: 1000,
            producer_epoch: 0,
            timeout_ms: 60_000,
            status: TxnStatus::Ongoing,
            partitions: vec![("t".into(), vec![0, 1])],
            last_update_timestamp_ms: TS,
            start_timestamp_ms: TS,
        }
    }

    #[test]
    fn key_matches_kafka() {
        assert_eq!(encode_key("txn-1"), hex("0000 0005 74786e2d31"));
        assert_eq!(
            decode_key(&hex("0000 0005 74786e2d31")).unwrap(),
            Some("txn-1".into())
        );
        assert_eq!(decode_key(&hex("0001 0001 61")).unwrap(), None);
        assert!(decode_key(&hex("0000 0005 7478")).is_err());
    }

    #[test]
    fn v0_values_match_kafka_bytes() {
        let ongoing_bytes = hex(
            "0000 00000000000003e8 0000 0000ea60 01 00000001 0001 74 00000002 00000000 00000001 \
             0000018bcfe56800 0000018bcfe56800",
        );
        assert_eq!(ongoing_bytes.len(), 52);
        assert_eq!(encode_value(&ongoing()), ongoing_bytes);
        assert_eq!(decode_value(&ongoing_bytes).unwrap(), ongoing());

        let empty = TxnLogValue {
            status: TxnStatus::Empty,
            partitions: vec![],
            start_timestamp_ms: -1,
            ..ongoing()
        };
        let empty_bytes = hex(
            "0000 00000000000003e8 0000 0000ea60 00 ffffffff 0000018bcfe56800 ffffffffffffffff",
        );
        assert_eq!(empty_bytes.len(), 37);
        assert_eq!(encode_value(&empty), empty_bytes);
        assert_eq!(decode_value(&empty_bytes).unwrap(), empty);
    }

    #[test]
    fn v1_values_are_read_and_unknown_tags_ignored() {
        let v1 = hex(
            "0001 00000000000003e8 0000 0000ea60 01 02 02 74 03 00000000 00000001 00 \
             0000018bcfe56800 0000018bcfe56800 00",
        );
        assert_eq!(v1.len(), 47);
        assert_eq!(decode_value(&v1).unwrap(), ongoing());
        // A future tagged field (tag 0, 8 bytes: PreviousProducerId) is skipped.
        let mut tagged = v1[..v1.len() - 1].to_vec();
        tagged.extend_from_slice(&hex("01 00 08 00000000000003e7"));
        assert_eq!(decode_value(&tagged).unwrap(), ongoing());
    }

    #[test]
    fn bad_values_are_refused() {
        let good = encode_value(&ongoing());
        for cut in 0..good.len() {
            assert!(decode_value(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut v2 = good.clone();
        v2[1] = 2;
        assert!(matches!(
            decode_value(&v2),
            Err(TxnLogError::UnsupportedVersion { version: 2, .. })
        ));
        let mut status = good.clone();
        status[16] = 9;
        assert_eq!(decode_value(&status), Err(TxnLogError::UnknownStatus(9)));
        // A huge partition count is refused without allocating.
        let mut count = good;
        count[17..21].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            decode_value(&count),
            Err(TxnLogError::BadLength { .. })
        ));
    }

    #[test]
    fn status_ids_and_names_round_trip() {
        for s in TxnStatus::ALL {
            assert_eq!(TxnStatus::from_id(s.id()).unwrap(), s);
            assert_eq!(TxnStatus::from_name(s.name()), Some(s));
        }
        assert!(TxnStatus::from_id(8).is_err());
        assert!(TxnStatus::from_id(-1).is_err());
    }
}
