//! The dump's data model and its text lines, in Kafka 3.9's exact formats.
//!
//! Each struct serialises to the `--json` output and renders the
//! corresponding `kafka-dump-log` line (`DumpLogSegments.printBatchLevel`,
//! the record loop of `dumpLog`, `dumpIndex`, `dumpTimeIndex`, `dumpTxnIndex`,
//! `dumpProducerIdSnapshot`). Keeping both in one place keeps them in step.

use serde::Serialize;

/// Kafka's `DumpLogSegments.RecordIndent`.
pub const RECORD_INDENT: &str = "|";

/// One batch (v2) or legacy entry (magic 0/1).
#[derive(Clone, Debug, Serialize)]
pub struct BatchLine {
    pub position: u64,
    pub magic: i8,
    /// v2 only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_offset: Option<i64>,
    pub last_offset: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_sequence: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sequence: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_epoch: Option<i16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition_leader_epoch: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_transactional: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_control: Option<bool>,
    /// v2 only; JSON `null` when the batch has no delete horizon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_horizon_ms: Option<Option<i64>>,
    pub timestamp_type: &'static str,
    pub max_timestamp: i64,
    pub size: u64,
    pub compresscodec: String,
    pub crc: u32,
    pub is_valid: bool,
    /// Present with `--deep-iteration` (or `--print-data-log`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<RecordLine>>,
}

/// `OptionalLong.toString()`.
fn optional_long(v: Option<i64>) -> String {
    match v {
        Some(v) => format!("OptionalLong[{v}]"),
        None => "OptionalLong.empty".to_owned(),
    }
}

impl BatchLine {
    /// `printBatchLevel`.
    pub fn text(&self) -> String {
        let head = match self.base_offset {
            Some(base) => format!(
                "baseOffset: {base} lastOffset: {} count: {} baseSequence: {} lastSequence: {} \
                 producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} \
                 isControl: {} deleteHorizonMs: {}",
                self.last_offset,
                self.count.unwrap_or_default(),
                self.base_sequence.unwrap_or(-1),
                self.last_sequence.unwrap_or(-1),
                self.producer_id.unwrap_or(-1),
                self.producer_epoch.unwrap_or(-1),
                self.partition_leader_epoch.unwrap_or(-1),
                self.is_transactional.unwrap_or_default(),
                self.is_control.unwrap_or_default(),
                optional_long(self.delete_horizon_ms.flatten()),
            ),
            None => format!("offset: {}", self.last_offset),
        };
        format!(
            "{head} position: {} {}: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {}",
            self.position,
            self.timestamp_type,
            self.max_timestamp,
            self.size,
            self.magic,
            self.compresscodec,
            self.crc,
            self.is_valid
        )
    }
}

/// What a control record says.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ControlLine {
    /// COMMIT or ABORT.
    EndTxnMarker {
        marker: &'static str,
        coordinator_epoch: i32,
    },
    /// A KRaft record (`SnapshotHeader`, `SnapshotFooter`, `KRaftVersion`,
    /// `KRaftVoters`) with the message as Kafka's JSON converter writes it.
    Kraft { name: &'static str, message: String },
    /// Any other control type, printed as `controlType: NAME(id)`.
    Other { name: &'static str, id: i16 },
}

/// One record (deep iteration).
#[derive(Clone, Debug, Serialize)]
pub struct RecordLine {
    pub offset: i64,
    pub timestamp: i64,
    pub key_size: i32,
    pub value_size: i32,
    /// v2 only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_keys: Option<Vec<String>>,
    /// Legacy only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_valid: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crc: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlLine>,
    /// With `--print-data-log`: the key decoded as UTF-8 (absent for a null key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// With `--print-data-log`: the value decoded as UTF-8 (absent for a null value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// With `--transaction-log-decoder`: the decoded `__transaction_state`
    /// record (`key` and `payload` then hold Kafka's texts of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_log: Option<super::txn_log::TxnLogRecord>,
    /// With `--offsets-decoder`: the decoded `__consumer_offsets` record
    /// (`key` and `payload` then hold Kafka's texts of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_offsets: Option<super::offsets_log::OffsetsLogRecord>,
}

impl RecordLine {
    /// The record line of `dumpLog` for a record of a batch with
    /// `timestamp_type`; `skip_metadata` is `--skip-record-metadata`.
    pub fn text(&self, timestamp_type: &str, skip_metadata: bool) -> String {
        let mut out = format!("{RECORD_INDENT} ");
        let mut sep = "";
        if !skip_metadata {
            out.push_str(&format!(
                "offset: {} {timestamp_type}: {} keySize: {} valueSize: {}",
                self.offset, self.timestamp, self.key_size, self.value_size
            ));
            if let (Some(seq), Some(keys)) = (self.sequence, &self.header_keys) {
                out.push_str(&format!(
                    " sequence: {seq} headerKeys: [{}]",
                    keys.join(",")
                ));
            }
            if let (Some(valid), Some(crc)) = (self.is_valid, self.crc) {
                // Kafka's format string has a stray '}' here; kept for parity.
                out.push_str(&format!(" isValid: {valid} crc: {crc}}}"));
            }
            match &self.control {
                Some(ControlLine::EndTxnMarker {
                    marker,
                    coordinator_epoch,
                }) => out.push_str(&format!(
                    " endTxnMarker: {marker} coordinatorEpoch: {coordinator_epoch}"
                )),
                Some(ControlLine::Kraft { name, message }) => {
                    out.push_str(&format!(" {name} {message}"))
                }
                Some(ControlLine::Other { name, id }) => {
                    out.push_str(&format!(" controlType: {name}({id})"))
                }
                None => {}
            }
            sep = " ";
        }
        if let Some(key) = &self.key {
            out.push_str(&format!("{sep}key: {key}"));
        }
        if let Some(payload) = &self.payload {
            out.push_str(&format!(" payload: {payload}"));
        }
        out
    }
}

/// `offset: N position: P`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct IndexLine {
    pub offset: i64,
    pub position: i32,
}

impl IndexLine {
    pub fn text(&self) -> String {
        format!("offset: {} position: {}", self.offset, self.position)
    }
}

/// `timestamp: T offset: O`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TimeIndexLine {
    pub timestamp: i64,
    pub offset: i64,
}

impl TimeIndexLine {
    pub fn text(&self) -> String {
        format!("timestamp: {} offset: {}", self.timestamp, self.offset)
    }
}

/// One `.txnindex` entry.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TxnLine {
    pub version: i16,
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl TxnLine {
    pub fn text(&self) -> String {
        format!(
            "version: {} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
            self.version,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset
        )
    }
}

/// The persisted last batch of a producer.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SnapshotBatchLine {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub last_offset: i64,
    pub offset_delta: i32,
    pub timestamp: i64,
}

/// One producer-snapshot entry.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SnapshotLine {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub current_txn_first_offset: Option<i64>,
    pub last_timestamp: i64,
    pub batch: Option<SnapshotBatchLine>,
}

impl SnapshotLine {
    /// `dumpProducerIdSnapshot`; note the space after `lastTimestamp`.
    pub fn text(&self) -> String {
        let mut out = format!(
            "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {} lastTimestamp: {} ",
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            optional_long(self.current_txn_first_offset),
            self.last_timestamp
        );
        if let Some(b) = &self.batch {
            out.push_str(&format!(
                "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                b.first_sequence, b.last_sequence, b.last_offset, b.offset_delta, b.timestamp
            ));
        }
        out
    }
}

#[cfg(test)]
#[path = "lines_tests.rs"]
mod tests;
