//! `--offsets-decoder`: the key and value of a `__consumer_offsets` record
//! as Kafka 3.9's `DumpLogSegments.OffsetsMessageParser` prints them, JSON
//! from the generated converters:
//!
//! ```text
//! key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":10}}
//! key: {"type":"3","data":{"groupId":"g"}} payload: <DELETE>          (a tombstone)
//! key: Unknown record type 9 at offset 12, skipping.                  (no payload)
//! key: Error at offset 13, skipping. <why>                            (no payload)
//! ```
//!
//! Record types 0/1 (offset commits), 2 (classic group metadata), 3–8
//! (KIP-848 consumer groups) and 16 (Kafka 4.0's regular expressions; Kafka
//! 3.9's tool calls it unknown) are decoded by the group coordinator's own
//! codecs (`strata_broker::describe_consumer_offsets_record`). Kafka's tool
//! stops at a record without a key; Strata reports it ([`OffsetsDecodeError`])
//! and goes on, as it does for records that do not decode.

use serde::Serialize;
use strata_broker::{
    describe_consumer_offsets_record, ConsumerOffsetsRecordError, OffsetsRecordText,
};

/// A `__consumer_offsets` record, decoded (the `--json` form).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OffsetsLogRecord {
    /// The key's leading `int16`.
    pub record_type: i16,
    /// `{"type":..,"data":{..}}`; absent for a type this decoder does not know.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<serde_json::Value>,
    /// `{"version":..,"data":{..}}`; absent for a tombstone or an unknown type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    pub tombstone: bool,
    /// Kafka's text of the key, and of the payload (`<DELETE>` for a
    /// tombstone, `None` for an unknown type).
    #[serde(skip)]
    texts: (String, Option<String>),
}

/// Why a `__consumer_offsets` record could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum OffsetsDecodeError {
    /// Kafka's words (`DumpLogSegments` throws them and stops).
    #[error("Failed to decode message at offset {offset} using offset topic decoder (message had a missing key)")]
    NullKey { offset: i64 },
    #[error("Error at offset {offset}, skipping. {source}")]
    Record {
        offset: i64,
        #[source]
        source: ConsumerOffsetsRecordError,
    },
}

impl OffsetsDecodeError {
    /// The key text to print anyway: Kafka's `Error at offset ...` line.
    pub fn key_text(&self) -> Option<String> {
        match self {
            OffsetsDecodeError::NullKey { .. } => None,
            OffsetsDecodeError::Record { .. } => Some(self.to_string()),
        }
    }
}

/// Parse a JSON text the broker rendered (always valid JSON).
fn json(text: &str) -> Option<serde_json::Value> {
    serde_json::from_str(text).ok()
}

/// Decode the record at `offset`.
///
/// # Errors
/// A null key, or key or value bytes that do not follow the schemas.
pub fn decode(
    offset: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<OffsetsLogRecord, OffsetsDecodeError> {
    let key = key.ok_or(OffsetsDecodeError::NullKey { offset })?;
    let described = describe_consumer_offsets_record(key, value)
        .map_err(|source| OffsetsDecodeError::Record { offset, source })?;
    Ok(match described {
        OffsetsRecordText::Decoded {
            record_type,
            key,
            value,
        } => OffsetsLogRecord {
            record_type,
            key: json(&key),
            tombstone: value.is_none(),
            value: value.as_deref().and_then(json),
            texts: (key, Some(value.unwrap_or_else(|| "<DELETE>".to_owned()))),
        },
        OffsetsRecordText::UnknownType { record_type } => OffsetsLogRecord {
            record_type,
            key: None,
            value: None,
            tombstone: false,
            texts: (
                format!("Unknown record type {record_type} at offset {offset}, skipping."),
                None,
            ),
        },
    })
}

impl OffsetsLogRecord {
    /// The `key:` and `payload:` texts of the dump line.
    pub fn texts(&self) -> (String, Option<String>) {
        self.texts.clone()
    }
}

#[cfg(test)]
#[path = "offsets_log_tests.rs"]
mod tests;
