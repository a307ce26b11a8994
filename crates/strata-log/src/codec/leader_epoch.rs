//! `leader-epoch-checkpoint` (Kafka `LeaderEpochCheckpointFile`): the text
//! checkpoint framing of [`super::checkpoint`], version 0, with one
//! `<epoch> <startOffset>` line per leader epoch, ascending.
//!
//! ```text
//! 0
//! <count>
//! <epoch> <startOffset>     count lines, e.g. "3 1532"
//! ```
//!
//! The rules on the values (non-negative, strictly increasing) are the
//! leader-epoch cache's (`crate::leader_epoch`), which replays the entries.

use super::checkpoint::CHECKPOINT_VERSION;
use super::checkpoint::{decode_checkpoint, encode_checkpoint, CheckpointFormatError};
use super::java_text::parse_java_int;
use crate::types::{LeaderEpoch, Offset};

/// One leader epoch: epoch `epoch` began at offset `start_offset`.
///
/// Format: one line of `leader-epoch-checkpoint`, `<epoch> <startOffset>` in
/// decimal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: LeaderEpoch,
    pub start_offset: Offset,
}

impl EpochEntry {
    pub fn new(epoch: i32, start_offset: i64) -> EpochEntry {
        EpochEntry {
            epoch: LeaderEpoch(epoch),
            start_offset: Offset(start_offset),
        }
    }
}

/// One `<epoch> <startOffset>` entry line's fields.
pub fn decode_entry(fields: &[&str]) -> Option<EpochEntry> {
    match fields {
        [epoch, offset] => Some(EpochEntry {
            epoch: LeaderEpoch(parse_java_int(epoch)?),
            start_offset: Offset(parse_java_int(offset)?),
        }),
        _ => None,
    }
}

/// The entry line of `entry`, without its line end.
pub fn encode_entry(entry: &EpochEntry) -> String {
    format!("{} {}", entry.epoch.0, entry.start_offset)
}

/// Decode a `leader-epoch-checkpoint`'s entries in file order.
///
/// # Errors
///
/// As [`decode_checkpoint`].
pub fn decode(bytes: &[u8]) -> Result<Vec<EpochEntry>, CheckpointFormatError> {
    decode_checkpoint(bytes, CHECKPOINT_VERSION, decode_entry)
}

/// The text of a `leader-epoch-checkpoint` holding `entries`.
pub fn encode(entries: &[EpochEntry]) -> String {
    encode_checkpoint(CHECKPOINT_VERSION, entries.iter().map(encode_entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_kafkas_text() {
        let text = "0\n2\n0 0\n3 120\n";
        let entries = decode(text.as_bytes()).unwrap();
        assert_eq!(entries, [EpochEntry::new(0, 0), EpochEntry::new(3, 120)]);
        assert_eq!(encode(&entries), text);
        assert!(matches!(
            decode(b"0\n1\n3\n"),
            Err(CheckpointFormatError::MalformedLine { line_number: 3, .. })
        ));
        assert!(decode(b"0\n1\n3 x\n").is_err());
    }
}
