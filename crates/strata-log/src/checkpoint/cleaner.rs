//! `cleaner-offset-checkpoint`: per log dir, the first dirty offset of each
//! compacted partition (Kafka's generic offset checkpoint format, §7.1).
//!
//! Format (text, one file per log dir):
//!
//! ```text
//! 0                      version
//! <n>                    number of entries
//! <topic> <partition> <offset>   n lines
//! ```
//!
//! Several cleaner threads share one file per dir: every update is a
//! read-modify-write under a process-wide lock, written atomically
//! (`.tmp`, fsync, rename, fsync dir).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{CheckpointError, OffsetCheckpointFile};
use crate::format::CLEANER_OFFSET_CHECKPOINT;
use crate::fs::SharedFs;
use crate::types::{Offset, TopicPartition};

/// Serialises read-modify-write of every cleaner checkpoint in the process.
static UPDATE: Mutex<()> = Mutex::new(());

/// The `cleaner-offset-checkpoint` of one log dir.
#[derive(Clone, Debug)]
pub struct CleanerCheckpoints {
    file: OffsetCheckpointFile,
}

impl CleanerCheckpoints {
    /// The checkpoint of log dir `log_dir` (nothing touched on disk).
    pub fn in_dir(fs: &SharedFs, log_dir: &Path) -> CleanerCheckpoints {
        CleanerCheckpoints {
            file: OffsetCheckpointFile::in_dir(fs, log_dir, CLEANER_OFFSET_CHECKPOINT),
        }
    }

    /// The checkpoint of the log dir holding partition directory `partition_dir`.
    pub fn for_partition_dir(fs: &SharedFs, partition_dir: &Path) -> CleanerCheckpoints {
        Self::in_dir(fs, partition_dir.parent().unwrap_or(Path::new(".")))
    }

    pub fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    /// Every entry (empty when the file does not exist).
    ///
    /// # Errors
    /// A [`CheckpointError`] for an unreadable or malformed file.
    pub fn read_all(&self) -> Result<BTreeMap<TopicPartition, Offset>, CheckpointError> {
        if !self.file.path().exists() {
            return Ok(BTreeMap::new());
        }
        self.file.read()
    }

    /// The entry of `tp`.
    ///
    /// # Errors
    /// As [`Self::read_all`].
    pub fn get(&self, tp: &TopicPartition) -> Result<Option<Offset>, CheckpointError> {
        Ok(self.read_all()?.get(tp).copied())
    }

    /// Set (`Some`) or remove (`None`) the entry of `tp`.
    ///
    /// # Errors
    /// A [`CheckpointError`].
    pub fn update(
        &self,
        tp: &TopicPartition,
        offset: Option<Offset>,
    ) -> Result<(), CheckpointError> {
        let _g = UPDATE.lock().unwrap_or_else(|e| e.into_inner());
        let mut all = self.read_all()?;
        match offset {
            Some(o) => all.insert(tp.clone(), o),
            None => all.remove(tp),
        };
        self.file.write(&all)
    }

    /// Kafka `maybeTruncateCheckpoint`: after truncating `tp` below its
    /// active segment, lower its entry to `min(entry, offset)`.
    ///
    /// # Errors
    /// As [`Self::update`].
    pub fn maybe_truncate(
        &self,
        tp: &TopicPartition,
        offset: Offset,
    ) -> Result<(), CheckpointError> {
        match self.get(tp)? {
            Some(o) if o > offset => self.update(tp, Some(offset)),
            _ => Ok(()),
        }
    }
}
