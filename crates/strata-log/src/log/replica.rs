//! The storage steps of replication (Kafka `UnifiedLog.assignEpochStartOffset`,
//! `truncateFullyAndStartAt`): what a broker does to a partition's log when
//! it becomes leader with a new epoch, and when a follower finds its leader's
//! log start beyond its own log end (Kafka `Partition.makeLeader`, the
//! follower's out-of-range handling in `AbstractFetcherThread`).
//!
//! Truncation by leader epoch itself is [`Log::truncate_to`]; the follower's
//! appends are [`Log::append_as_follower`].

use super::Log;
use crate::error::LogError;
use crate::leader_epoch::LeaderEpochError;
use crate::types::{LeaderEpoch, Offset};

impl Log {
    /// Become leader with `epoch`: record in the leader-epoch cache that
    /// `epoch` starts at the current log end (Kafka `assignEpochStartOffset`
    /// with the LEO, as `Partition.makeLeader` does), so a follower asking about any epoch gets a sane
    /// answer before the first record of `epoch` is written.
    ///
    /// Kafka's `LeaderEpochFileCache.assign` rule: a no-op when the latest entry already
    /// has `epoch` and starts at or below the log end; otherwise every entry
    /// with an epoch `>= epoch` or a start `>= LEO` is dropped and
    /// `(epoch, LEO)` added. A change is written and fsynced to
    /// `leader-epoch-checkpoint` before this returns. The append lock is held
    /// throughout, so no append moves the log end in between.
    ///
    /// # Errors
    /// [`LogError::Checkpoint`] wrapping [`LeaderEpochError::InvalidEntry`]
    /// for a negative `epoch` (nothing changes, the dir stays online);
    /// [`LogError::Checkpoint`] for a failed write (the dir goes offline, as
    /// for every epoch write); [`LogError::DirOffline`] / [`LogError::Closed`].
    pub fn assign_epoch_at_end(&self, epoch: LeaderEpoch) -> Result<(), LogError> {
        let _g = self.lock_append()?;
        let leo = self.log_end_offset();
        let mut cache = self.lock_epochs();
        if epoch.0 < 0 {
            return Err(LogError::Checkpoint {
                path: cache.path().to_path_buf(),
                source: Box::new(LeaderEpochError::InvalidEntry {
                    path: cache.path().to_path_buf(),
                    epoch,
                    start_offset: leo,
                }),
            });
        }
        let r = crate::segment::EpochSink::assign(&mut *cache, epoch, leo);
        drop(cache);
        self.fail(r)
    }

    /// A follower whose leader's log start is beyond its own log end (Kafka
    /// `truncateFullyAndStartAt`): every segment is scheduled
    /// for deletion and the log restarts empty at `offset`, so that log
    /// start = local log start = LEO = HW = recovery point = `offset`. The
    /// leader-epoch cache is cleared and written, producer state and all its
    /// snapshots are dropped, and the cleaner checkpoint is lowered. The
    /// renames, the new empty segment and the directory are fsynced before
    /// this returns; a power loss before that leaves no segment and the log
    /// restarts at its checkpointed log start, as in Kafka (the follower then
    /// finds itself out of range and comes back here).
    ///
    /// # Errors
    /// [`LogError::InvalidOffset`] for a negative offset; storage errors
    /// (the dir goes offline).
    pub fn truncate_fully_and_start_at(&self, offset: Offset) -> Result<(), LogError> {
        if offset.0 < 0 {
            return Err(LogError::InvalidOffset {
                tp: self.tp.clone(),
                offset,
                reason: "cannot restart a log at a negative offset",
            });
        }
        let mut g = self.lock_append()?;
        let r = self.truncate_fully_locked(&mut g, offset);
        drop(g);
        if r.is_ok() {
            self.lower_cleaner_checkpoint();
        }
        self.fail(r)
    }

    /// Drop epoch-cache entries starting at or after `end` and write the
    /// file if anything went (Kafka `truncateFromEnd`). Caller holds the
    /// append lock.
    pub(super) fn trim_epochs_at_end(&self, end: Offset) -> Result<(), LogError> {
        let mut cache = self.lock_epochs();
        if cache.truncate_from_end(end) {
            cache.flush().map_err(|e| LogError::Checkpoint {
                path: cache.path().to_path_buf(),
                source: Box::new(e),
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
