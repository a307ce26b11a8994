//! Rebuilding producer state at load (Kafka
//! `UnifiedLog.rebuildProducerState`; `docs/kafka-behaviour.md` §6.5).
//!
//! The manager knows nothing about segments: the log passes its segment base
//! offsets and a reader closure, so this driver is the whole of Kafka's
//! algorithm and the log's part is a few lines.

use crate::batch::BatchView;
use crate::types::Offset;

use super::append::{AppendOrigin, ProducerUpdates};
use super::error::ProducerStateError;
use super::manager::ProducerStateManager;

/// Receives each batch the reader yields.
pub type BatchSink<'s> = dyn FnMut(&BatchView<'_>) -> Result<(), ProducerStateError> + 's;

impl ProducerStateManager {
    /// Bring the state to `last_offset` (the log end) from the snapshots and
    /// the log.
    ///
    /// - No snapshot and a clean shutdown: nothing is scanned; empty
    ///   snapshots are written at the bases of the last two segments and at
    ///   `last_offset` (the upgrade path).
    /// - Otherwise [`Self::truncate_and_reload`], then, if the map end is
    ///   below `last_offset` and there was state before, replay every segment
    ///   overlapping `[map end, last_offset)` with REPLICATION origin, taking
    ///   snapshots at the last two segment bases on the way; finally set the
    ///   map end to `last_offset` and snapshot there.
    ///
    /// `segment_bases` are the segments' base offsets, ascending.
    /// `read(base, start, end, sink)` must call `sink` for every batch of the
    /// segment based at `base` whose last offset is `>= start` and `< end`,
    /// in order (Kafka reads from `start` up to the position of the batch
    /// holding `end`), and return the sink's first error.
    ///
    /// # Errors
    /// The reader's errors, and [`ProducerStateError`]s (I/O on snapshots,
    /// a log breaking transaction rules) converted into `E`.
    pub fn rebuild_producer_state<E, R>(
        &mut self,
        segment_bases: &[Offset],
        log_start: Offset,
        last_offset: Offset,
        reload_from_clean_shutdown: bool,
        now_ms: i64,
        mut read: R,
    ) -> Result<(), E>
    where
        E: From<ProducerStateError>,
        R: FnMut(Offset, Offset, Offset, &mut BatchSink<'_>) -> Result<(), E>,
    {
        let last_base = segment_bases.last().copied();
        let second_last_base = segment_bases.len().checked_sub(2).map(|i| segment_bases[i]);
        let snapshot_points = [second_last_base, last_base, Some(last_offset)];

        if self.latest_snapshot_offset().is_none() && reload_from_clean_shutdown {
            for offset in snapshot_points.into_iter().flatten() {
                self.update_map_end_offset(offset);
                self.take_snapshot(true)?;
            }
            return Ok(());
        }

        let empty_before = self.is_empty() && self.map_end_offset() >= last_offset;
        self.truncate_and_reload(log_start, last_offset, now_ms)?;
        if last_offset > self.map_end_offset() && !empty_before {
            let map_end = self.map_end_offset();
            for (i, &base) in segment_bases.iter().enumerate() {
                let next_base = segment_bases.get(i + 1).copied();
                if base >= last_offset || next_base.is_some_and(|next| next <= map_end) {
                    continue;
                }
                let start = base.max(self.map_end_offset()).max(log_start);
                self.update_map_end_offset(start);
                if snapshot_points.contains(&Some(base)) {
                    self.take_snapshot(true)?;
                }
                let mut updates = ProducerUpdates::new();
                {
                    let this = &*self;
                    let mut sink = |batch: &BatchView<'_>| {
                        this.validate_batch(&mut updates, batch, AppendOrigin::Replication)
                    };
                    read(base, start, last_offset, &mut sink)?;
                }
                for txn in self.apply_updates(updates) {
                    self.complete_txn(&txn);
                }
            }
        }
        self.update_map_end_offset(last_offset);
        self.take_snapshot(true)?;
        Ok(())
    }
}
