//! Swapping cleaned segments into a log (Kafka `replaceSegments`, §11.9),
//! for the cleaner (`crate::cleaner`).
//!
//! Under the append lock, with the new segment written as `.cleaned` and
//! fsynced:
//!
//! 1. check that the replaced segments are still the log's (retention,
//!    truncation or another swap may have replaced them; then abort);
//! 2. rename the new segment's files `.cleaned` → `.swap`;
//! 3. publish the new segment list (readers holding the old `Arc`s keep
//!    reading the old files);
//! 4. rename each old segment's files `.deleted`, queued for removal after
//!    `file.delete.delay.ms`;
//! 5. rename `.swap` → final names, fsync the directory;
//! 6. delete the producer snapshots at the old bases other than the new base.
//!
//! A crash at any step is repaired by the loader (§9 steps 4-5): before 2
//! the `.cleaned` files are dropped; from 2 on the `.swap` files replace the
//! old segments they cover. An I/O error from step 2 on takes the directory
//! offline (the in-memory list may no longer match the files).

use std::collections::HashMap;
use std::sync::Arc;

use super::Log;
use crate::error::LogError;
use crate::format::{self, CLEANED_SUFFIX, SWAP_SUFFIX};
use crate::producer_state::LastRecord;
use crate::segment::Segment;
use crate::types::ProducerId;

impl Log {
    /// Kafka `lastRecordsOfActiveProducers`: every producer the log's
    /// producer state holds, with the last offset of its last data batch
    /// (none when its entry has only markers) and its epoch. The cleaner
    /// keeps each such batch at least as an empty header.
    ///
    /// # Errors
    /// [`LogError::Closed`] / [`LogError::DirOffline`].
    pub(crate) fn last_records_of_active_producers(
        &self,
    ) -> Result<HashMap<ProducerId, LastRecord>, LogError> {
        let g = self.lock_append()?;
        Ok(g.producers
            .active_producers()
            .map(|(id, e)| {
                let last = e.last_data_offset();
                let record = LastRecord {
                    last_data_offset: (last.0 >= 0).then_some(last),
                    producer_epoch: e.producer_epoch(),
                };
                (id, record)
            })
            .collect())
    }

    /// After a truncation below the active segment (Kafka
    /// `maybeTruncateCheckpoint`): the cleaner's first dirty offset may not
    /// stay above the new active segment's base, or re-appended data there
    /// would count as clean. A failure is logged; a checkpoint left above
    /// the log end is reset by the cleaner anyway.
    pub(crate) fn lower_cleaner_checkpoint(&self) {
        let Some(active) = self.snapshot().last().map(|s| s.base_offset()) else {
            return;
        };
        let ckpt = crate::checkpoint::CleanerCheckpoints::for_partition_dir(&self.fs, &self.dir());
        if let Err(e) = ckpt.maybe_truncate(&self.tp, active) {
            tracing::warn!(tp = %self.tp, error = %crate::ErrorChain(&e), "cannot lower the cleaner checkpoint after truncation");
        }
    }

    /// Replace `old` (consecutive, inactive segments of this log) with the
    /// `.cleaned` segment `cleaned`. Returns `Ok(false)` without touching
    /// anything when `old` is no longer part of the log.
    ///
    /// # Errors
    /// [`LogError::Closed`] / [`LogError::DirOffline`]; I/O errors during
    /// the renames (the directory goes offline).
    pub(crate) fn replace_with_cleaned(
        &self,
        cleaned: &Arc<Segment>,
        old: &[Arc<Segment>],
    ) -> Result<bool, LogError> {
        let _g = self.lock_append()?;
        let segs = self.snapshot();
        let Some(first) = old.first() else {
            return Ok(false);
        };
        let Some(at) = segs.iter().position(|s| Arc::ptr_eq(s, first)) else {
            return Ok(false);
        };
        let still_there = at + old.len() < segs.len()
            && segs[at..at + old.len()]
                .iter()
                .zip(old)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if !still_there {
            return Ok(false);
        }
        let r = self.swap_locked(cleaned, old, at, &segs);
        self.fail(r).map(|()| true)
    }

    fn swap_locked(
        &self,
        cleaned: &Arc<Segment>,
        old: &[Arc<Segment>],
        at: usize,
        segs: &[Arc<Segment>],
    ) -> Result<(), LogError> {
        let base = cleaned.base_offset();
        cleaned.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)?;
        let mut next: Vec<Arc<Segment>> = Vec::with_capacity(segs.len() - old.len() + 1);
        next.extend_from_slice(&segs[..at]);
        next.push(cleaned.clone());
        next.extend_from_slice(&segs[at + old.len()..]);
        self.publish_segments(next);
        for s in old {
            self.schedule_delete(std::slice::from_ref(s))?;
        }
        cleaned.change_suffix(SWAP_SUFFIX, "")?;
        let dir = self.dir();
        crate::fs::fsync_dir(self.fs.as_ref(), &dir)
            .map_err(|e| LogError::io(&dir, "fsync partition dir", e))?;
        for s in old.iter().filter(|s| s.base_offset() != base) {
            let snap = format::snapshot_file(&dir, s.base_offset(), "");
            match self.fs.remove_file(&snap) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&snap, "delete producer snapshot", e)),
            }
        }
        Ok(())
    }
}
