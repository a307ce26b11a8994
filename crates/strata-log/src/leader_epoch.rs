//! The leader-epoch cache and its `leader-epoch-checkpoint` file (Kafka
//! `LeaderEpochFileCache`, `LeaderEpochCheckpointFile`).
//!
//! For each leader epoch the cache records the first offset written in it.
//! Followers use it to find where their log diverges from the leader's
//! (OffsetForLeaderEpoch); recovery and truncation keep it consistent with
//! the log. Entries are strictly increasing in both epoch and start offset.
//!
//! Persistence follows Kafka: [`LeaderEpochCache::assign`] rewrites the file
//! synchronously whenever it changes the cache, so the file never misses an
//! epoch; truncations only change memory and the caller persists them with
//! [`LeaderEpochCache::flush`] (Kafka schedules that asynchronously). Stale
//! entries a crash leaves in the file are removed by truncating the loaded
//! cache to the recovered log, as log loading does.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::checkpoint::{
    read_checkpoint, write_checkpoint, CheckpointError, OffsetCheckpointFile, CHECKPOINT_VERSION,
};
use crate::codec::leader_epoch::{decode_entry, encode};
use crate::format::LEADER_EPOCH_CHECKPOINT;
use crate::fs::SharedFs;
use crate::types::{LeaderEpoch, Offset};

/// Kafka `UNDEFINED_EPOCH_OFFSET`: no end offset known.
pub const UNDEFINED_EPOCH_OFFSET: Offset = Offset(-1);

pub use crate::codec::leader_epoch::EpochEntry;

/// Errors from the leader-epoch cache.
#[derive(Debug, Error)]
pub enum LeaderEpochError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// Kafka: IllegalArgumentException "Received invalid partition leader
    /// epoch entry" (a negative epoch or start offset).
    #[error(
        "invalid leader epoch entry (epoch {epoch:?}, start offset {start_offset}) for {path}"
    )]
    InvalidEntry {
        path: PathBuf,
        epoch: LeaderEpoch,
        start_offset: Offset,
    },
}

/// A partition's leader-epoch cache backed by `leader-epoch-checkpoint`.
///
/// Not internally synchronised: the owning log guards it with its lock.
#[derive(Debug)]
pub struct LeaderEpochCache {
    /// The seam the checkpoint is written through.
    fs: SharedFs,
    path: PathBuf,
    /// Ascending by epoch and by start offset.
    epochs: Vec<EpochEntry>,
    /// Changes not yet written (truncations).
    dirty: bool,
}

impl LeaderEpochCache {
    /// Load the cache of partition directory `dir`.
    ///
    /// Like Kafka, a missing checkpoint file is created empty, and the
    /// file's entries are replayed through the assign rules (so an
    /// inconsistent file cannot produce an inconsistent cache).
    ///
    /// # Errors
    ///
    /// A malformed checkpoint, a negative epoch or offset in it, or I/O.
    pub fn load(fs: &SharedFs, dir: &Path) -> Result<LeaderEpochCache, LeaderEpochError> {
        LeaderEpochCache::load_file(fs, &dir.join(LEADER_EPOCH_CHECKPOINT))
    }

    /// Load from an explicit checkpoint path.
    ///
    /// # Errors
    ///
    /// As [`Self::load`].
    pub fn load_file(fs: &SharedFs, path: &Path) -> Result<LeaderEpochCache, LeaderEpochError> {
        OffsetCheckpointFile::new(fs, path).ensure_exists()?;
        let entries = read_checkpoint(path, CHECKPOINT_VERSION, decode_entry)?;
        let mut cache = LeaderEpochCache {
            fs: fs.clone(),
            path: path.to_path_buf(),
            epochs: Vec::with_capacity(entries.len()),
            dirty: false,
        };
        for entry in entries {
            cache.assign_in_memory(entry)?;
        }
        cache.dirty = false;
        Ok(cache)
    }

    /// The checkpoint file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Point the cache at `dir` after its partition directory was renamed
    /// (Kafka `updateParentDir` / `withCheckpoint`).
    pub fn set_dir(&mut self, dir: &Path) {
        self.path = dir.join(LEADER_EPOCH_CHECKPOINT);
    }

    fn is_update_needed(&self, entry: EpochEntry) -> bool {
        match self.epochs.last() {
            Some(latest) => entry.epoch != latest.epoch || entry.start_offset < latest.start_offset,
            None => true,
        }
    }

    fn assign_in_memory(&mut self, entry: EpochEntry) -> Result<bool, LeaderEpochError> {
        if entry.epoch.0 < 0 || entry.start_offset.get() < 0 {
            return Err(LeaderEpochError::InvalidEntry {
                path: self.path.clone(),
                epoch: entry.epoch,
                start_offset: entry.start_offset,
            });
        }
        if !self.is_update_needed(entry) {
            return Ok(false);
        }
        // Remove, newest first, every entry that would break monotonicity.
        let mut removed = 0usize;
        let mut trivial = true;
        while let Some(&last) = self.epochs.last() {
            if last.epoch < entry.epoch && last.start_offset < entry.start_offset {
                break;
            }
            self.epochs.pop();
            removed += 1;
            trivial &= last.start_offset == entry.start_offset;
        }
        // Removing one entry with the same start offset just means no data
        // was written in that epoch; anything else is worth a warning.
        if removed > 1 || (removed == 1 && !trivial) {
            tracing::warn!(
                path = %self.path.display(),
                epoch = entry.epoch.0,
                start_offset = entry.start_offset.get(),
                removed,
                "new leader epoch entry truncated conflicting entries"
            );
        }
        self.epochs.push(entry);
        self.dirty = true;
        Ok(true)
    }

    /// Record that `epoch` starts at `start_offset` (Kafka `assign`).
    ///
    /// A no-op if the latest entry has the same epoch and a start offset
    /// `<= start_offset`. Otherwise every entry whose epoch is `>= epoch` or
    /// whose start offset is `>= start_offset` is removed (newest first), the
    /// entry is added, and the file is rewritten synchronously. Returns
    /// whether the cache changed.
    ///
    /// # Errors
    ///
    /// [`LeaderEpochError::InvalidEntry`] for negative values (nothing
    /// changes); I/O errors writing the file.
    pub fn assign(
        &mut self,
        epoch: LeaderEpoch,
        start_offset: Offset,
    ) -> Result<bool, LeaderEpochError> {
        let changed = self.assign_in_memory(EpochEntry {
            epoch,
            start_offset,
        })?;
        if changed {
            self.flush()?;
        }
        Ok(changed)
    }

    /// Assign several entries, then write the file once if any was given.
    ///
    /// # Errors
    ///
    /// As [`Self::assign`].
    pub fn assign_all(&mut self, entries: &[EpochEntry]) -> Result<(), LeaderEpochError> {
        for &entry in entries {
            self.assign_in_memory(entry)?;
        }
        if !entries.is_empty() {
            self.flush()?;
        }
        Ok(())
    }

    /// The entries, ascending.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.epochs
    }

    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }

    /// Whether truncations or a clear have not been written yet.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.epochs.last().copied()
    }

    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.epochs.first().copied()
    }

    /// The current (latest) leader epoch.
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.epochs.last().map(|e| e.epoch)
    }

    /// The epoch before the latest one.
    pub fn previous_epoch(&self) -> Option<LeaderEpoch> {
        let n = self.epochs.len();
        (n >= 2).then(|| self.epochs[n - 2].epoch)
    }

    /// The entry with the largest epoch below `epoch`.
    pub fn previous_entry(&self, epoch: LeaderEpoch) -> Option<EpochEntry> {
        self.epochs.iter().rev().find(|e| e.epoch < epoch).copied()
    }

    /// The largest epoch below `epoch`.
    pub fn previous_epoch_of(&self, epoch: LeaderEpoch) -> Option<LeaderEpoch> {
        self.previous_entry(epoch).map(|e| e.epoch)
    }

    /// The smallest epoch above `epoch`.
    pub fn next_epoch(&self, epoch: LeaderEpoch) -> Option<LeaderEpoch> {
        self.epochs
            .iter()
            .find(|e| e.epoch > epoch)
            .map(|e| e.epoch)
    }

    /// The entry for exactly `epoch`.
    pub fn epoch_entry(&self, epoch: LeaderEpoch) -> Option<EpochEntry> {
        self.epochs.iter().find(|e| e.epoch == epoch).copied()
    }

    /// The epoch that `offset` was written in: the entry starting exactly at
    /// `offset`, else the last entry starting before it.
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        let mut previous = None;
        for entry in &self.epochs {
            if entry.start_offset == offset {
                return Some(entry.epoch);
            }
            if entry.start_offset > offset {
                return previous;
            }
            previous = Some(entry.epoch);
        }
        previous
    }

    /// OffsetForLeaderEpoch (Kafka `endOffsetFor`): the largest epoch `<=
    /// requested` and the end offset of that epoch, i.e. the start of the
    /// next larger epoch, or `log_end_offset` for the latest epoch.
    ///
    /// `(-1, -1)` when the requested epoch is undefined (-1), the cache is
    /// empty, or the requested epoch is above every known epoch. A request
    /// below every known epoch gets `(requested, first start offset)`.
    pub fn end_offset_for(
        &self,
        requested: LeaderEpoch,
        log_end_offset: Offset,
    ) -> (LeaderEpoch, Offset) {
        let undefined = (LeaderEpoch::NONE, UNDEFINED_EPOCH_OFFSET);
        if requested == LeaderEpoch::NONE {
            return undefined;
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let Some(higher) = self.epochs.iter().find(|e| e.epoch > requested) else {
            return undefined;
        };
        match self.epochs.iter().rev().find(|e| e.epoch <= requested) {
            None => (requested, higher.start_offset),
            Some(floor) => (floor.epoch, higher.start_offset),
        }
    }

    /// Remove every entry starting at or after `end_offset` (Kafka
    /// `truncateFromEnd`; a negative `end_offset` changes nothing). The
    /// change is in memory only until [`Self::flush`]. Returns whether
    /// anything was removed.
    pub fn truncate_from_end(&mut self, end_offset: Offset) -> bool {
        let Some(latest) = self.epochs.last() else {
            return false;
        };
        if end_offset.get() < 0 || latest.start_offset < end_offset {
            return false;
        }
        let keep = self
            .epochs
            .iter()
            .rposition(|e| e.start_offset < end_offset)
            .map_or(0, |i| i + 1);
        self.epochs.truncate(keep);
        self.dirty = true;
        true
    }

    /// Remove every entry starting at or before `start_offset`, then
    /// re-insert the last removed epoch as starting at `start_offset`
    /// (Kafka `truncateFromStart`: the epoch in force at the new log start is
    /// kept). In memory only until [`Self::flush`]. Returns whether anything
    /// changed.
    pub fn truncate_from_start(&mut self, start_offset: Offset) -> bool {
        let removed = self
            .epochs
            .iter()
            .take_while(|e| e.start_offset <= start_offset)
            .count();
        if removed == 0 {
            return false;
        }
        let last_removed = self.epochs[removed - 1];
        if removed == 1 && last_removed.start_offset == start_offset {
            // The first entry already starts there: nothing changes (and
            // nothing needs writing: every start-up truncates to the log
            // start, and a rewrite of each partition's file cost thousands
            // of fsyncs).
            return false;
        }
        self.epochs.drain(..removed - 1);
        self.epochs[0] = EpochEntry {
            epoch: last_removed.epoch,
            start_offset,
        };
        self.dirty = true;
        true
    }

    /// The entries as they would be after `truncate_from_start(start)` (if
    /// `start >= 0`) and `truncate_from_end(end)`, without changing the
    /// cache (Kafka `epochEntriesInRange`).
    pub fn epoch_entries_in_range(&self, start: Offset, end: Offset) -> Vec<EpochEntry> {
        let mut copy = LeaderEpochCache {
            fs: self.fs.clone(),
            path: self.path.clone(),
            epochs: self.epochs.clone(),
            dirty: false,
        };
        if start.get() >= 0 {
            copy.truncate_from_start(start);
        }
        copy.truncate_from_end(end);
        copy.epochs
    }

    /// Remove all entries, in memory only.
    pub fn clear(&mut self) {
        self.epochs.clear();
        self.dirty = true;
    }

    /// Remove all entries and write the (empty) file (Kafka `clearAndFlush`,
    /// used on full truncation).
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn clear_and_flush(&mut self) -> Result<(), LeaderEpochError> {
        self.clear();
        self.flush()
    }

    /// The file content for the current entries.
    pub fn encode(&self) -> String {
        encode(&self.epochs)
    }

    /// Write `leader-epoch-checkpoint` atomically (tmp, fsync, rename, fsync
    /// dir).
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn flush(&mut self) -> Result<(), LeaderEpochError> {
        write_checkpoint(self.fs.as_ref(), &self.path, &self.encode())?;
        self.dirty = false;
        Ok(())
    }

    /// [`Self::flush`], but a missing partition directory (deleted or
    /// renamed concurrently) is not an error (Kafka `writeIfDirExists`).
    ///
    /// # Errors
    ///
    /// I/O errors other than "not found".
    pub fn flush_if_dir_exists(&mut self) -> Result<(), LeaderEpochError> {
        match self.flush() {
            Err(LeaderEpochError::Checkpoint(CheckpointError::Io { source, .. }))
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests;
