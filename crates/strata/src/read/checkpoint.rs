//! Checkpoint files (through `strata_log::checkpoint`) and
//! `partition.metadata`, parsed strictly and read-only.
//!
//! Format (`reference/kafka-disk-format.md` §7.1), UTF-8 text, `\n` lines:
//!
//! ```text
//! <version>\n          0
//! <count>\n
//! <entry>\n            count lines, fields split on runs of whitespace
//! ```
//!
//! Offset checkpoints (`recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `replication-offset-checkpoint`,
//! `cleaner-offset-checkpoint`) have entries `<topic> <partition> <offset>`;
//! `leader-epoch-checkpoint` has `<epoch> <startOffset>`. An empty file, or a
//! version line without a count line, has no entries (Kafka's reader).
//!
//! `partition.metadata` is `version: 0\ntopic_id: <base64url uuid>`.

use std::path::Path;

use strata_log::{LeaderEpoch, Offset, TopicPartition};
use thiserror::Error;

pub use strata_log::checkpoint::CheckpointError;

/// The only checkpoint version Kafka writes.
pub const CHECKPOINT_VERSION: i32 = 0;

/// One `<topic> <partition> <offset>` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCheckpointEntry {
    pub tp: TopicPartition,
    pub offset: Offset,
}

/// One `<epoch> <startOffset>` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: LeaderEpoch,
    pub start_offset: Offset,
}

/// Read an offset checkpoint (`<topic> <partition> <offset>` entries) in
/// file order, with the library's strict reader (read-only).
///
/// # Errors
/// I/O, a version other than 0, any malformed line, or a count mismatch.
pub fn read_offset_checkpoint(path: &Path) -> Result<Vec<OffsetCheckpointEntry>, CheckpointError> {
    strata_log::checkpoint::read_checkpoint(path, CHECKPOINT_VERSION, |f| match f {
        [topic, partition, offset] => Some(OffsetCheckpointEntry {
            tp: TopicPartition::new(*topic, partition.parse().ok()?),
            offset: Offset(offset.parse().ok()?),
        }),
        _ => None,
    })
}

/// Read a `leader-epoch-checkpoint` (`<epoch> <startOffset>` entries).
///
/// # Errors
/// As [`read_offset_checkpoint`].
pub fn read_epoch_checkpoint(path: &Path) -> Result<Vec<EpochEntry>, CheckpointError> {
    strata_log::checkpoint::read_checkpoint(path, CHECKPOINT_VERSION, |f| match f {
        [epoch, offset] => Some(EpochEntry {
            epoch: LeaderEpoch(epoch.parse().ok()?),
            start_offset: Offset(offset.parse().ok()?),
        }),
        _ => None,
    })
}

/// A parsed `partition.metadata`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub version: i32,
    /// The topic id as written (URL-safe base64, 22 characters).
    pub topic_id: String,
}

/// Why `partition.metadata` is malformed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PartitionMetadataError {
    #[error("file is not UTF-8")]
    NotUtf8,
    #[error("expected 2 lines 'version: N' and 'topic_id: ID', found {lines}")]
    LineCount { lines: usize },
    #[error("malformed line {line}: {text:?}")]
    BadLine { line: usize, text: String },
    #[error("invalid version {text:?}")]
    BadVersion { text: String },
    #[error("topic id {text:?} is not a 16-byte URL-safe base64 UUID")]
    BadTopicId { text: String },
    #[error("topic id is the all-zero UUID")]
    ZeroTopicId,
}

/// Parse `partition.metadata` as Kafka's `PartitionMetadataReadBuffer` does:
/// each line split on `:\s+`, a version ≥ 0, a non-zero 16-byte topic id.
///
/// # Errors
/// See [`PartitionMetadataError`].
pub fn parse_partition_metadata(bytes: &[u8]) -> Result<PartitionMetadata, PartitionMetadataError> {
    let text = std::str::from_utf8(bytes).map_err(|_| PartitionMetadataError::NotUtf8)?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != 2 {
        return Err(PartitionMetadataError::LineCount { lines: lines.len() });
    }
    let field = |n: usize, key: &str| -> Result<String, PartitionMetadataError> {
        let line = lines[n];
        let bad = || PartitionMetadataError::BadLine {
            line: n + 1,
            text: line.to_owned(),
        };
        let rest = line.strip_prefix(key).ok_or_else(bad)?;
        let rest = rest.strip_prefix(':').ok_or_else(bad)?;
        let value = rest.trim_start();
        if value.len() == rest.len() || value.is_empty() {
            return Err(bad());
        }
        Ok(value.to_owned())
    };
    let version_text = field(0, "version")?;
    let version: i32 = version_text
        .parse()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or(PartitionMetadataError::BadVersion { text: version_text })?;
    let topic_id = field(1, "topic_id")?;
    let raw = decode_base64_url(&topic_id).ok_or_else(|| PartitionMetadataError::BadTopicId {
        text: topic_id.clone(),
    })?;
    if raw.len() != 16 {
        return Err(PartitionMetadataError::BadTopicId { text: topic_id });
    }
    if raw.iter().all(|b| *b == 0) {
        return Err(PartitionMetadataError::ZeroTopicId);
    }
    Ok(PartitionMetadata { version, topic_id })
}

/// Java's `Base64.getUrlDecoder()` on an unpadded string.
fn decode_base64_url(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn offset_checkpoint_in_file_order() {
        let f = file_with("0\n2\norders 0 1532\nmy-topic 1 977\n");
        let c = read_offset_checkpoint(f.path()).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].tp, TopicPartition::new("orders", 0));
        assert_eq!(c[1].tp, TopicPartition::new("my-topic", 1));
        assert_eq!(c[1].offset, Offset(977));
    }

    #[test]
    fn malformed_checkpoints_are_errors() {
        for bad in ["1\n0\n", "0\n2\nt 0 5\n", "0\n1\nt x 5\n", "0\nx\n"] {
            let f = file_with(bad);
            assert!(read_offset_checkpoint(f.path()).is_err(), "{bad:?}");
        }
        let f = file_with("0\n2\n0 0\n3 120\n");
        let c = read_epoch_checkpoint(f.path()).unwrap();
        assert_eq!(c[1].epoch, LeaderEpoch(3));
        assert_eq!(c[1].start_offset, Offset(120));
    }

    #[test]
    fn partition_metadata() {
        let m = parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ").unwrap();
        assert_eq!(m.version, 0);
        assert_eq!(
            parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA"),
            Err(PartitionMetadataError::ZeroTopicId)
        );
        assert!(matches!(
            parse_partition_metadata(b"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"),
            Err(PartitionMetadataError::BadLine { line: 1, .. })
        ));
        assert!(matches!(
            parse_partition_metadata(b"version: 0\ntopic_id: abc"),
            Err(PartitionMetadataError::BadTopicId { .. })
        ));
    }
}
