//! Kafka's text checkpoint files (`CheckpointFile`, `CheckpointReadBuffer`)
//! and the entry lines of the offset checkpoints.
//!
//! Format: UTF-8 text, lines ended by `\n` (readers accept Java's `\r` and
//! `\r\n` too):
//!
//! ```text
//! <version>\n          0 for every file Kafka 3.9 writes
//! <count>\n            number of entry lines
//! <entry>\n            count lines, fields split on runs of Java `\s`
//! ```
//!
//! An empty file, or one with a version line and no count line, has no
//! entries (Kafka's reader). Offset checkpoints (`recovery-point-offset-
//! checkpoint`, `log-start-offset-checkpoint`, `replication-offset-
//! checkpoint`, `cleaner-offset-checkpoint`) have entries `<topic>
//! <partition> <offset>`, in no particular order (Kafka writes hash-map
//! order); `leader-epoch-checkpoint` entries are in [`super::leader_epoch`].

use thiserror::Error;

use super::java_text::{java_lines, parse_java_int, split_java_whitespace};
use crate::types::{Offset, TopicPartition};

/// Version of every checkpoint file Kafka 3.9 writes.
pub const CHECKPOINT_VERSION: i32 = 0;

/// How a checkpoint file's text is malformed. The file's path is added by
/// the reader ([`crate::checkpoint::CheckpointError`]).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CheckpointFormatError {
    #[error("not valid UTF-8")]
    InvalidUtf8,
    #[error("unrecognised version {found} (expected {expected})")]
    UnsupportedVersion { found: i32, expected: i32 },
    /// A version or count line that is not a decimal `i32`, or an entry line
    /// that does not parse. `line_number` is 1-based.
    #[error("malformed line {line_number}: {line:?}")]
    MalformedLine { line_number: usize, line: String },
    #[error("negative entry count {count}")]
    NegativeCount { count: i32 },
    #[error("expected {expected} entries, found {found}")]
    CountMismatch { expected: usize, found: usize },
}

/// Decode a checkpoint file's bytes (Kafka `CheckpointReadBuffer.read`).
/// `parse` turns the whitespace-split fields of one entry line into an
/// entry, or `None` if malformed. Entries come back in file order.
///
/// # Errors
///
/// Each malformation as its own [`CheckpointFormatError`] variant.
pub fn decode_checkpoint<T>(
    bytes: &[u8],
    expected_version: i32,
    parse: impl Fn(&[&str]) -> Option<T>,
) -> Result<Vec<T>, CheckpointFormatError> {
    let text = std::str::from_utf8(bytes).map_err(|_| CheckpointFormatError::InvalidUtf8)?;
    let lines = java_lines(text);
    let malformed = |n: usize| CheckpointFormatError::MalformedLine {
        line_number: n + 1,
        line: lines[n].to_owned(),
    };
    let Some(version_line) = lines.first() else {
        return Ok(Vec::new());
    };
    let version: i32 = parse_java_int(version_line).ok_or_else(|| malformed(0))?;
    if version != expected_version {
        return Err(CheckpointFormatError::UnsupportedVersion {
            found: version,
            expected: expected_version,
        });
    }
    let Some(count_line) = lines.get(1) else {
        return Ok(Vec::new());
    };
    let count: i32 = parse_java_int(count_line).ok_or_else(|| malformed(1))?;
    let expected =
        usize::try_from(count).map_err(|_| CheckpointFormatError::NegativeCount { count })?;
    let entries = (2..lines.len())
        .map(|n| parse(&split_java_whitespace(lines[n])).ok_or_else(|| malformed(n)))
        .collect::<Result<Vec<T>, _>>()?;
    if entries.len() != expected {
        return Err(CheckpointFormatError::CountMismatch {
            expected,
            found: entries.len(),
        });
    }
    Ok(entries)
}

/// The text of a checkpoint file: version, count, then one line per entry,
/// each ended by `\n`.
pub fn encode_checkpoint<I>(version: i32, entries: I) -> String
where
    I: ExactSizeIterator,
    I::Item: std::fmt::Display,
{
    let mut out = format!("{version}\n{}\n", entries.len());
    for entry in entries {
        out.push_str(&entry.to_string());
        out.push('\n');
    }
    out
}

/// One `<topic> <partition> <offset>` entry line's fields.
pub fn decode_offset_entry(fields: &[&str]) -> Option<(TopicPartition, Offset)> {
    match fields {
        [topic, partition, offset] => Some((
            TopicPartition::new(*topic, parse_java_int(partition)?),
            Offset(parse_java_int(offset)?),
        )),
        _ => None,
    }
}

/// The entry line for `tp` at `offset`, without its line end.
pub fn encode_offset_entry(tp: &TopicPartition, offset: Offset) -> String {
    format!("{} {} {}", tp.topic, tp.partition, offset)
}

/// Decode an offset checkpoint's entries in file order (a partition may
/// appear twice; the engine lets the later line win).
///
/// # Errors
///
/// As [`decode_checkpoint`].
pub fn decode_offset_checkpoint(
    bytes: &[u8],
) -> Result<Vec<(TopicPartition, Offset)>, CheckpointFormatError> {
    decode_checkpoint(bytes, CHECKPOINT_VERSION, decode_offset_entry)
}

/// The text of an offset checkpoint holding `entries`, in the given order.
pub fn encode_offset_checkpoint<'a, I>(entries: I) -> String
where
    I: ExactSizeIterator<Item = (&'a TopicPartition, &'a Offset)>,
{
    encode_checkpoint(
        CHECKPOINT_VERSION,
        entries.map(|(tp, offset)| encode_offset_entry(tp, *offset)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_checkpoint_round_trips_in_file_order() {
        let text = "0\n2\norders 0 1532\nmy-topic 1 977\n";
        let entries = decode_offset_checkpoint(text.as_bytes()).unwrap();
        assert_eq!(
            entries,
            [
                (TopicPartition::new("orders", 0), Offset(1532)),
                (TopicPartition::new("my-topic", 1), Offset(977)),
            ]
        );
        let encoded = encode_offset_checkpoint(entries.iter().map(|(tp, o)| (tp, o)));
        assert_eq!(encoded, text);
    }

    #[test]
    fn kafka_tolerates_short_files_but_not_malformed_ones() {
        for empty in ["", "0", "0\n"] {
            assert_eq!(decode_offset_checkpoint(empty.as_bytes()), Ok(vec![]));
        }
        let err = |text: &str| decode_offset_checkpoint(text.as_bytes()).unwrap_err();
        assert_eq!(
            err("1\n0\n"),
            CheckpointFormatError::UnsupportedVersion {
                found: 1,
                expected: 0
            }
        );
        assert_eq!(
            err("0\n2\nt 0 5\n"),
            CheckpointFormatError::CountMismatch {
                expected: 2,
                found: 1
            }
        );
        assert_eq!(
            err("0\n1\nt x 5\n"),
            CheckpointFormatError::MalformedLine {
                line_number: 3,
                line: "t x 5".into()
            }
        );
        assert_eq!(
            err("0\n-1\n"),
            CheckpointFormatError::NegativeCount { count: -1 }
        );
        assert_eq!(
            decode_checkpoint(b"0\n0\n\xff", 0, |_| Some(())),
            Err(CheckpointFormatError::InvalidUtf8)
        );
    }
}
