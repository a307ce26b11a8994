//! Checkpoint files, read strictly and read-only through
//! `strata_log::checkpoint::read_checkpoint`, entries kept in file order.
//!
//! Format (`docs/kafka-behaviour.md` §7.1), UTF-8 text, `\n` lines:
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

use std::path::Path;

use strata_log::{LeaderEpoch, Offset, TopicPartition};

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
}
