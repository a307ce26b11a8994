//! Checkpoint files, read strictly and read-only through
//! `strata_log::read_checkpoint`, entries kept in file order.
//!
//! Format (`docs/kafka-behaviour.md` §7.1): the framing and entry lines are
//! decoded by `strata_log::codec::checkpoint` and
//! `strata_log::codec::leader_epoch`, the engine's own decoders, so a file
//! the tools accept is one the broker accepts. An empty file, or a version
//! line without a count line, has no entries (Kafka's reader).

use std::path::Path;

use strata_log::codec::checkpoint::{decode_offset_entry, CHECKPOINT_VERSION};
use strata_log::codec::leader_epoch::decode_entry;
use strata_log::read_checkpoint;
use strata_log::{Offset, TopicPartition};

pub use strata_log::codec::leader_epoch::EpochEntry;
pub use strata_log::CheckpointError;

/// One `<topic> <partition> <offset>` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCheckpointEntry {
    pub tp: TopicPartition,
    pub offset: Offset,
}

/// Read an offset checkpoint (`<topic> <partition> <offset>` entries) in
/// file order, with the library's strict reader (read-only).
///
/// # Errors
/// I/O, a version other than 0, any malformed line, or a count mismatch.
pub fn read_offset_checkpoint(path: &Path) -> Result<Vec<OffsetCheckpointEntry>, CheckpointError> {
    let entries = read_checkpoint(path, CHECKPOINT_VERSION, decode_offset_entry)?;
    Ok(entries
        .into_iter()
        .map(|(tp, offset)| OffsetCheckpointEntry { tp, offset })
        .collect())
}

/// Read a `leader-epoch-checkpoint` (`<epoch> <startOffset>` entries).
///
/// # Errors
/// As [`read_offset_checkpoint`].
pub fn read_epoch_checkpoint(path: &Path) -> Result<Vec<EpochEntry>, CheckpointError> {
    read_checkpoint(path, CHECKPOINT_VERSION, decode_entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::LeaderEpoch;

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
