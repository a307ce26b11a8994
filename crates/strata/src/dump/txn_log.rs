//! `--transaction-log-decoder`: the key and value of a `__transaction_state`
//! record as Kafka 3.9's `TransactionLog.formatRecordKeyAndValue` prints
//! them (the `TransactionLogMessageParser` of `DumpLogSegments`):
//!
//! ```text
//! key: transaction_metadata::transactionalId=<id>
//! payload: producerId:<pid>,producerEpoch:<epoch>,state=<State>,partitions=[<t>-<p>,...],txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>
//! payload: <DELETE>                    (a tombstone)
//! key: unknown::version=<v>            (a key version other than 0; no payload)
//! ```
//!
//! The bytes are decoded by `strata_log::codec::transaction_log`, the
//! coordinator's own codec. Kafka keeps the partitions in a Scala hash set
//! and prints them in its iteration order; Strata prints them in the order
//! they are stored, duplicates dropped (docs/differences-from-kafka.md).
//! Kafka's tool stops at the first record it cannot decode; Strata reports
//! it ([`TxnLogDecodeError`]) and goes on.

use serde::Serialize;
use strata_log::codec::transaction_log::{
    decode_key, decode_value, TxnLogError, TxnLogValue, TxnStatus,
};

/// A `__transaction_state` record, decoded (the `--json` form).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TxnLogRecord {
    /// `None` for a key version this reader does not know.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    pub key_version: i16,
    /// `None` for a tombstone (or an unknown key, whose value is not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<TxnLogValueLine>,
    /// The record is a tombstone (the transactional id was expired).
    pub tombstone: bool,
}

/// The value fields Kafka's formatter prints, plus the start timestamp.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TxnLogValueLine {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub state: &'static str,
    /// `topic-partition`, as Kafka's `TopicPartition.toString`.
    pub partitions: Vec<String>,
    pub txn_last_update_timestamp: i64,
    pub txn_timeout_ms: i32,
    pub txn_start_timestamp: i64,
}

/// Why a `__transaction_state` record could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum TxnLogDecodeError {
    #[error("the record has no key (a __transaction_state record always has one)")]
    NullKey,
    #[error("cannot decode the key: {0}")]
    Key(#[source] TxnLogError),
    /// The key decoded (`transactional_id`), the value did not.
    #[error("cannot decode the value of transactional id {transactional_id:?}: {source}")]
    Value {
        transactional_id: String,
        #[source]
        source: TxnLogError,
    },
}

impl TxnLogDecodeError {
    /// The key text to print anyway, when the key itself decoded.
    pub fn key_text(&self) -> Option<String> {
        match self {
            TxnLogDecodeError::Value {
                transactional_id, ..
            } => Some(key_text(transactional_id)),
            _ => None,
        }
    }
}

fn key_text(transactional_id: &str) -> String {
    format!("transaction_metadata::transactionalId={transactional_id}")
}

fn value_line(v: &TxnLogValue) -> TxnLogValueLine {
    // Kafka adds partitions only outside Empty, into a set.
    let mut partitions: Vec<String> = Vec::new();
    if v.status != TxnStatus::Empty {
        for (topic, ids) in &v.partitions {
            for id in ids {
                let tp = format!("{topic}-{id}");
                if !partitions.contains(&tp) {
                    partitions.push(tp);
                }
            }
        }
    }
    TxnLogValueLine {
        producer_id: v.producer_id,
        producer_epoch: v.producer_epoch,
        state: v.status.name(),
        partitions,
        txn_last_update_timestamp: v.last_update_timestamp_ms,
        txn_timeout_ms: v.timeout_ms,
        txn_start_timestamp: v.start_timestamp_ms,
    }
}

/// Decode a record's key and value.
///
/// # Errors
/// A null key, or key or value bytes that do not follow the schemas.
pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<TxnLogRecord, TxnLogDecodeError> {
    let key = key.ok_or(TxnLogDecodeError::NullKey)?;
    let Some(transactional_id) = decode_key(key).map_err(TxnLogDecodeError::Key)? else {
        let version = i16::from_be_bytes([key[0], key[1]]);
        return Ok(TxnLogRecord {
            transactional_id: None,
            key_version: version,
            value: None,
            tombstone: false,
        });
    };
    let decoded = match value {
        None => None,
        Some(bytes) => Some(
            decode_value(bytes).map_err(|source| TxnLogDecodeError::Value {
                transactional_id: transactional_id.clone(),
                source,
            })?,
        ),
    };
    Ok(TxnLogRecord {
        tombstone: decoded.is_none(),
        value: decoded.as_ref().map(value_line),
        transactional_id: Some(transactional_id),
        key_version: strata_log::codec::transaction_log::KEY_VERSION,
    })
}

impl TxnLogRecord {
    /// The `key:` and `payload:` texts of the dump line (Kafka prints no
    /// payload for an unknown key version).
    pub fn texts(&self) -> (String, Option<String>) {
        let Some(id) = &self.transactional_id else {
            return (format!("unknown::version={}", self.key_version), None);
        };
        let payload = match &self.value {
            None => "<DELETE>".to_owned(),
            Some(v) => format!(
                "producerId:{},producerEpoch:{},state={},partitions=[{}],\
                 txnLastUpdateTimestamp={},txnTimeoutMs={}",
                v.producer_id,
                v.producer_epoch,
                v.state,
                v.partitions.join(","),
                v.txn_last_update_timestamp,
                v.txn_timeout_ms
            ),
        };
        (key_text(id), Some(payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::codec::transaction_log::{encode_key, encode_value};

    const TS: i64 = 1_700_000_000_000;

    fn ongoing() -> TxnLogValue {
        TxnLogValue {
            producer_id: 1000,
            producer_epoch: 0,
            timeout_ms: 60_000,
            status: TxnStatus::Ongoing,
            partitions: vec![("t".into(), vec![0, 1]), ("u".into(), vec![3])],
            last_update_timestamp_ms: TS + 5,
            start_timestamp_ms: TS,
        }
    }

    #[test]
    fn value_text_is_kafkas() {
        let r = decode(Some(&encode_key("txn-1")), Some(&encode_value(&ongoing()))).unwrap();
        assert_eq!(
            r.texts(),
            (
                "transaction_metadata::transactionalId=txn-1".to_owned(),
                Some(
                    "producerId:1000,producerEpoch:0,state=Ongoing,partitions=[t-0,t-1,u-3],\
                     txnLastUpdateTimestamp=1700000000005,txnTimeoutMs=60000"
                        .to_owned()
                )
            )
        );
    }

    #[test]
    fn tombstone_unknown_key_and_errors() {
        let r = decode(Some(&encode_key("gone")), None).unwrap();
        assert!(r.tombstone);
        assert_eq!(r.texts().1.as_deref(), Some("<DELETE>"));

        // Key version 1: Kafka's UnknownKey, printed without a payload.
        let r = decode(Some(&[0, 1, 0, 1, b'x']), Some(b"anything")).unwrap();
        assert_eq!(r.texts(), ("unknown::version=1".to_owned(), None));

        assert!(matches!(
            decode(None, Some(b"v")),
            Err(TxnLogDecodeError::NullKey)
        ));
        assert!(matches!(
            decode(Some(&[0]), None),
            Err(TxnLogDecodeError::Key(_))
        ));
        let mut bad = encode_value(&ongoing());
        bad.truncate(20);
        let e = decode(Some(&encode_key("txn-1")), Some(&bad)).unwrap_err();
        assert_eq!(
            e.key_text().as_deref(),
            Some("transaction_metadata::transactionalId=txn-1")
        );
        assert!(e.to_string().contains("\"txn-1\""), "{e}");
    }

    #[test]
    fn empty_prints_no_partitions_and_duplicates_collapse() {
        let mut v = ongoing();
        v.status = TxnStatus::Empty;
        let r = decode(Some(&encode_key("a")), Some(&encode_value(&v))).unwrap();
        assert!(r.texts().1.unwrap().contains("state=Empty,partitions=[],"));

        let mut v = ongoing();
        v.status = TxnStatus::PrepareCommit;
        v.partitions = vec![("t".into(), vec![1, 1]), ("t".into(), vec![1, 2])];
        let r = decode(Some(&encode_key("a")), Some(&encode_value(&v))).unwrap();
        assert_eq!(r.value.unwrap().partitions, vec!["t-1", "t-2"]);
    }
}
