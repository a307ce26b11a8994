//! One partition's segment catalogue (Kafka `RemoteLogMetadataCache` and
//! `RemoteLogLeaderEpochState`, reference §4.5), and [`MemoryRlmm`].
//!
//! Every event is first checked ([`PartitionCache::check`]) and only then
//! applied ([`PartitionCache::apply`]), so a store that must persist the
//! event between the two (the topic-based one) never persists an event
//! the state machine rejects.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use strata_log::{LeaderEpoch, Offset};
use uuid::Uuid;

use super::{MetadataEvent, RemoteLogMetadataManager};
use crate::error::MetadataError;
use crate::metadata::{
    InvalidTransition, RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState, RemotePartitionDeleteMetadata, RemotePartitionDeleteState,
    TopicIdPartition,
};

/// Per leader epoch: which FINISHED segment serves which start offset, and
/// which segments are listed but not served.
#[derive(Clone, Debug, Default)]
struct EpochState {
    /// First offset of this epoch in the segment → segment id; FINISHED only.
    offset_to_id: BTreeMap<Offset, Uuid>,
    /// STARTED, DELETE_STARTED and superseded segments.
    unreferenced: BTreeSet<Uuid>,
    /// Highest offset of this epoch in any FINISHED segment.
    highest_log_offset: Option<Offset>,
}

/// The catalogue of one user partition.
#[derive(Clone, Debug, Default)]
pub struct PartitionCache {
    segments: HashMap<Uuid, RemoteLogSegmentMetadata>,
    epochs: BTreeMap<LeaderEpoch, EpochState>,
    delete_state: Option<RemotePartitionDeleteState>,
}

impl PartitionCache {
    /// Would `event` be accepted? (No change is made.)
    ///
    /// # Errors
    /// The error `apply` would return.
    pub fn check(&self, event: &MetadataEvent) -> Result<(), MetadataError> {
        match event {
            MetadataEvent::Add(md) => {
                let id = &md.segment_id;
                RemoteLogSegmentState::check_transition(None, md.state).map_err(|source| {
                    MetadataError::InvalidTransition {
                        segment: id.clone(),
                        source,
                    }
                })?;
                match self.segments.get(&id.id) {
                    Some(existing) if existing == md => Ok(()),
                    Some(_) => Err(MetadataError::AlreadyExists {
                        segment: id.clone(),
                    }),
                    None => Ok(()),
                }
            }
            MetadataEvent::Update(u) => {
                let existing = self.segments.get(&u.segment_id.id).ok_or_else(|| {
                    MetadataError::UnknownSegment {
                        segment: u.segment_id.clone(),
                    }
                })?;
                let source = InvalidTransition {
                    from: Some(existing.state),
                    to: u.state,
                };
                if u.state == RemoteLogSegmentState::CopySegmentStarted {
                    return Err(MetadataError::InvalidTransition {
                        segment: u.segment_id.clone(),
                        source,
                    });
                }
                RemoteLogSegmentState::check_transition(Some(existing.state), u.state).map_err(
                    |source| MetadataError::InvalidTransition {
                        segment: u.segment_id.clone(),
                        source,
                    },
                )
            }
            MetadataEvent::PartitionDelete(_) => Ok(()),
        }
    }

    /// Check and apply one event.
    ///
    /// # Errors
    /// See [`PartitionCache::check`]; on error nothing changed.
    pub fn apply(&mut self, event: &MetadataEvent) -> Result<(), MetadataError> {
        self.check(event)?;
        match event {
            MetadataEvent::Add(md) => {
                for epoch in md.segment_leader_epochs.keys() {
                    self.epochs
                        .entry(*epoch)
                        .or_default()
                        .unreferenced
                        .insert(md.segment_id.id);
                }
                self.segments.insert(md.segment_id.id, md.clone());
            }
            MetadataEvent::Update(u) => {
                let updated = self.segments[&u.segment_id.id].with_update(u);
                match u.state {
                    RemoteLogSegmentState::CopySegmentFinished => self.on_copy_finished(&updated),
                    RemoteLogSegmentState::DeleteSegmentStarted => self.on_delete_started(&updated),
                    RemoteLogSegmentState::DeleteSegmentFinished => {
                        self.on_delete_finished(&updated);
                        return Ok(());
                    }
                    RemoteLogSegmentState::CopySegmentStarted => {}
                }
                self.segments.insert(u.segment_id.id, updated);
            }
            MetadataEvent::PartitionDelete(d) => {
                if RemotePartitionDeleteState::is_valid_transition(self.delete_state, d.state) {
                    self.delete_state = Some(d.state);
                }
            }
        }
        Ok(())
    }

    fn on_copy_finished(&mut self, md: &RemoteLogSegmentMetadata) {
        for (epoch, start, end) in md.epoch_ranges() {
            let segments = &self.segments;
            let state = self.epochs.entry(epoch).or_default();
            // A new leader may re-upload a superset of an older segment:
            // every entry from this start on that ends within this range is
            // superseded.
            let superseded: Vec<(Offset, Uuid)> = state
                .offset_to_id
                .range(start..)
                .filter(|(_, id)| {
                    segments.get(id).is_some_and(|old| {
                        old.epoch_ranges()
                            .iter()
                            .any(|(e, _, old_end)| *e == epoch && *old_end <= end)
                    })
                })
                .map(|(o, id)| (*o, *id))
                .collect();
            for (offset, id) in superseded {
                state.offset_to_id.remove(&offset);
                state.unreferenced.insert(id);
            }
            if let Some(old) = state.offset_to_id.insert(start, md.segment_id.id) {
                if old != md.segment_id.id {
                    state.unreferenced.insert(old);
                }
            }
            state.unreferenced.remove(&md.segment_id.id);
            if state.highest_log_offset.is_none_or(|h| end > h) {
                state.highest_log_offset = Some(end);
            }
        }
    }

    fn on_delete_started(&mut self, md: &RemoteLogSegmentMetadata) {
        for (epoch, start, _) in md.epoch_ranges() {
            let state = self.epochs.entry(epoch).or_default();
            if state.offset_to_id.get(&start) == Some(&md.segment_id.id) {
                state.offset_to_id.remove(&start);
            }
            state.unreferenced.insert(md.segment_id.id);
        }
    }

    fn on_delete_finished(&mut self, md: &RemoteLogSegmentMetadata) {
        for epoch in md.segment_leader_epochs.keys() {
            if let Some(state) = self.epochs.get_mut(epoch) {
                state.unreferenced.remove(&md.segment_id.id);
                state.offset_to_id.retain(|_, id| *id != md.segment_id.id);
                if state.offset_to_id.is_empty() && state.unreferenced.is_empty() {
                    self.epochs.remove(epoch);
                }
            }
        }
        self.segments.remove(&md.segment_id.id);
    }

    /// The FINISHED segment serving `offset` in `epoch`.
    pub fn segment_for(
        &self,
        epoch: LeaderEpoch,
        offset: Offset,
    ) -> Option<RemoteLogSegmentMetadata> {
        let state = self.epochs.get(&epoch)?;
        let (_, id) = state.offset_to_id.range(..=offset).next_back()?;
        let md = self.segments.get(id)?;
        let (_, _, end) = md
            .epoch_ranges()
            .into_iter()
            .find(|(e, _, _)| *e == epoch)?;
        (offset <= end).then(|| md.clone())
    }

    pub fn highest_offset_for_epoch(&self, epoch: LeaderEpoch) -> Option<Offset> {
        self.epochs.get(&epoch)?.highest_log_offset
    }

    /// Every non-terminal segment, by start offset then id.
    pub fn list(&self) -> Vec<RemoteLogSegmentMetadata> {
        let mut all: Vec<_> = self.segments.values().cloned().collect();
        all.sort_by_key(|md| (md.start_offset, md.segment_id.id));
        all
    }

    /// Non-terminal segments containing `epoch`, by start offset then id.
    pub fn list_for_epoch(&self, epoch: LeaderEpoch) -> Vec<RemoteLogSegmentMetadata> {
        let Some(state) = self.epochs.get(&epoch) else {
            return Vec::new();
        };
        let ids: BTreeSet<Uuid> = state
            .offset_to_id
            .values()
            .chain(state.unreferenced.iter())
            .copied()
            .collect();
        let mut out: Vec<_> = ids
            .iter()
            .filter_map(|id| self.segments.get(id).cloned())
            .collect();
        out.sort_by_key(|md| (md.start_offset, md.segment_id.id));
        out
    }

    pub fn delete_state(&self) -> Option<RemotePartitionDeleteState> {
        self.delete_state
    }
}

/// An in-memory catalogue (tests, and the state inside [`super::TopicRlmm`]).
#[derive(Debug, Default)]
pub struct MemoryRlmm {
    partitions: Mutex<HashMap<TopicIdPartition, PartitionCache>>,
}

impl MemoryRlmm {
    pub fn new() -> MemoryRlmm {
        MemoryRlmm::default()
    }

    /// Check an event, run `persist` (which may fail), then apply it, all
    /// under the catalogue lock so concurrent events are ordered the same
    /// way in the log and in memory.
    ///
    /// # Errors
    /// The check's error, or `persist`'s.
    pub fn apply_with(
        &self,
        event: &MetadataEvent,
        persist: impl FnOnce() -> Result<(), MetadataError>,
    ) -> Result<(), MetadataError> {
        let mut partitions = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        let cache = partitions.entry(event.partition().clone()).or_default();
        cache.check(event)?;
        persist()?;
        cache.apply(event)
    }

    /// Would the state machine accept `event` now?
    ///
    /// # Errors
    /// The state machine's rejection.
    pub fn check(&self, event: &MetadataEvent) -> Result<(), MetadataError> {
        let partitions = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        match partitions.get(event.partition()) {
            Some(cache) => cache.check(event),
            None => PartitionCache::default().check(event),
        }
    }

    /// Apply an event without persisting (replay at startup).
    ///
    /// # Errors
    /// The state machine's rejection.
    pub fn apply(&self, event: &MetadataEvent) -> Result<(), MetadataError> {
        self.apply_with(event, || Ok(()))
    }

    fn with<T>(&self, p: &TopicIdPartition, f: impl FnOnce(&PartitionCache) -> T) -> T {
        let partitions = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        match partitions.get(p) {
            Some(cache) => f(cache),
            None => f(&PartitionCache::default()),
        }
    }
}

impl RemoteLogMetadataManager for MemoryRlmm {
    fn add_remote_log_segment_metadata(
        &self,
        md: RemoteLogSegmentMetadata,
    ) -> Result<(), MetadataError> {
        self.apply(&MetadataEvent::Add(md))
    }

    fn update_remote_log_segment_metadata(
        &self,
        update: RemoteLogSegmentMetadataUpdate,
    ) -> Result<(), MetadataError> {
        self.apply(&MetadataEvent::Update(update))
    }

    fn remote_log_segment_metadata(
        &self,
        p: &TopicIdPartition,
        epoch: LeaderEpoch,
        offset: Offset,
    ) -> Result<Option<RemoteLogSegmentMetadata>, MetadataError> {
        Ok(self.with(p, |c| c.segment_for(epoch, offset)))
    }

    fn highest_offset_for_epoch(
        &self,
        p: &TopicIdPartition,
        epoch: LeaderEpoch,
    ) -> Result<Option<Offset>, MetadataError> {
        Ok(self.with(p, |c| c.highest_offset_for_epoch(epoch)))
    }

    fn list_remote_log_segments(
        &self,
        p: &TopicIdPartition,
    ) -> Result<Vec<RemoteLogSegmentMetadata>, MetadataError> {
        Ok(self.with(p, PartitionCache::list))
    }

    fn list_remote_log_segments_for_epoch(
        &self,
        p: &TopicIdPartition,
        epoch: LeaderEpoch,
    ) -> Result<Vec<RemoteLogSegmentMetadata>, MetadataError> {
        Ok(self.with(p, |c| c.list_for_epoch(epoch)))
    }

    fn put_remote_partition_delete_metadata(
        &self,
        md: RemotePartitionDeleteMetadata,
    ) -> Result<(), MetadataError> {
        self.apply(&MetadataEvent::PartitionDelete(md))
    }

    fn partitions(&self) -> Vec<TopicIdPartition> {
        let partitions = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<_> = partitions.keys().cloned().collect();
        out.sort();
        out
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
