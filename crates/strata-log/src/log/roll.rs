//! Rolling to a new active segment (Kafka `maybeRoll` / `LocalLog.roll`, §8.4).

use std::sync::Arc;

use super::{AppendState, Log};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::format;
use crate::segment::segment_config;
use crate::segment::{RollParams, Segment};
use crate::types::Offset;

impl Log {
    /// The segment the next append of `size` bytes goes to, rolling first
    /// when any of Kafka's four conditions holds.
    pub(super) fn maybe_roll(
        &self,
        state: &mut AppendState,
        cfg: &LogConfig,
        size: u64,
        shape: &super::append::Shape,
    ) -> Result<Arc<Segment>, LogError> {
        let segs = self.snapshot();
        let active = segs
            .last()
            .expect("a log always has an active segment")
            .clone();
        let params = RollParams {
            max_segment_ms: cfg.max_segment_ms(),
            max_segment_bytes: cfg.segment_bytes,
            max_timestamp_in_append: shape.max_timestamp,
            max_offset_in_append: shape.last_offset,
            append_size: size,
            now_ms: self.clock.now_ms(),
        };
        match active.should_roll(&params)? {
            None => Ok(active),
            Some(reason) => {
                tracing::debug!(tp = %self.tp, ?reason, base = %active.base_offset(), "rolling segment");
                self.roll_locked(state, cfg, Some(shape.first_offset))
            }
        }
    }

    /// Force a roll: the new active segment starts at the log end.
    ///
    /// # Errors
    /// Storage errors; [`LogError::SegmentExists`] in impossible states.
    pub fn roll(&self) -> Result<(), LogError> {
        let mut g = self.lock_append()?;
        let cfg = self.config_arc();
        let r = self.roll_locked(&mut g, &cfg, None).map(|_| ());
        self.fail(r)
    }

    /// Kafka `LocalLog.roll` plus the flush of the old segments.
    pub(super) fn roll_locked(
        &self,
        state: &mut AppendState,
        cfg: &LogConfig,
        expected_next_offset: Option<Offset>,
    ) -> Result<Arc<Segment>, LogError> {
        let leo = self.log_end_offset();
        let new_base = expected_next_offset.unwrap_or(Offset(0)).max(leo);
        let dir = self.dir();
        let mut segs: Vec<Arc<Segment>> = self.snapshot().as_ref().clone();
        let active = segs.last().expect("active segment").clone();
        if segs.iter().any(|s| s.base_offset() == new_base) {
            if active.base_offset() == new_base && active.size() == 0 {
                // An empty active segment at the same base. Kafka deletes
                // and recreates it; Strata keeps it (its files are what a
                // new segment's would be): a power loss between the delete
                // and the create would leave the partition with no segment
                // at all, and it would restart at the checkpointed log
                // start, below offsets it had already handed out.
                return Ok(active);
            } else {
                return Err(LogError::SegmentExists {
                    tp: self.tp.clone(),
                    base_offset: new_base,
                });
            }
        } else if new_base < active.base_offset() {
            return Err(LogError::InvalidOffset {
                tp: self.tp.clone(),
                offset: new_base,
                reason: "roll below the active segment's base offset",
            });
        } else {
            active.on_become_inactive()?;
        }
        for stray in [
            format::log_file(&dir, new_base, ""),
            format::index_file(&dir, new_base, ""),
            format::time_index_file(&dir, new_base, ""),
            format::txn_index_file(&dir, new_base, ""),
        ] {
            match self.fs.remove_file(&stray) {
                Ok(()) => tracing::warn!(path = %stray.display(), "deleted stray file before roll"),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&stray, "delete stray segment file", e)),
            }
        }
        // Kafka schedules this flush asynchronously after creating the new
        // segment; Strata runs it inline under the append lock (rolls are
        // rare), and before the new segment exists: a power loss must never
        // keep the new segment's file while losing the old segment's tail
        // (a gap below durable data). The recovery point moves to the new
        // base before the next append.
        self.flush_locked(state, new_base, false)?;
        let segment = Arc::new(Segment::create(
            &self.fs,
            &self.handles,
            &dir,
            new_base,
            segment_config(cfg, true),
            self.clock.now_ms(),
            "",
        )?);
        // The new segment's directory entry must be durable before a durable
        // append into it is acknowledged (Kafka's flush fsyncs the directory
        // when it flushes a new segment; durable appends only fsync files).
        crate::fs::fsync_dir(self.fs.as_ref(), &dir)
            .map_err(|e| LogError::io(&dir, "fsync partition dir", e))?;
        segs.push(segment.clone());
        self.publish_segments(segs);
        // Kafka `roll`: the producer snapshot at the new base bounds the
        // rebuild after a crash to the active segment.
        self.snapshot_producers_at(state, new_base)?;
        Ok(segment)
    }
}
