//! What the cleaner decides, as pure functions over snapshots (§11.2,
//! §11.5): each log's cleanable range and dirty ratio, the filthiest log,
//! and how segments are grouped into cleaned segments. Nothing here reads
//! a file; `snapshot.rs` gathers the inputs from a live log.

use crate::types::{Offset, Timestamp, TopicPartition};

/// One segment as the cleaner's choice needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFacts {
    pub base_offset: Offset,
    pub size: u64,
    /// Kafka `largestTimestamp`: the largest record timestamp, else mtime.
    pub largest_timestamp: Timestamp,
    /// Max timestamp of the first batch (`-1` when empty or unknown).
    pub first_batch_timestamp: Timestamp,
    pub offset_index_entries: usize,
    pub time_index_entries: usize,
}

/// A log as the cleaner sees it at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanerLogSnapshot {
    pub tp: TopicPartition,
    /// Oldest first; the last one is the active segment.
    pub segments: Vec<SegmentFacts>,
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// Kafka's LSO: `min(first unstable txn offset, HW)`.
    pub last_stable_offset: Offset,
    /// The `cleaner-offset-checkpoint` entry, if any.
    pub checkpoint: Option<Offset>,
}

/// The compaction settings of one log (topic configs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactionSettings {
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
}

impl CompactionSettings {
    pub fn of(cfg: &crate::config::LogConfig) -> CompactionSettings {
        CompactionSettings {
            min_cleanable_dirty_ratio: cfg.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: cfg.min_compaction_lag_ms,
            max_compaction_lag_ms: cfg.max_compaction_lag_ms,
        }
    }
}

/// Why the dirty section ends where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyEnd {
    ActiveSegment,
    LastStableOffset,
    MinCompactionLag,
}

/// Kafka `LogToClean` plus the checkpoint reset of `cleanableOffsets`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cleanable {
    pub first_dirty_offset: Offset,
    /// The checkpoint was below the log start or above the log end: reset
    /// to the log start (and rewrite the checkpoint).
    pub checkpoint_reset: bool,
    /// First offset not cleaned, aligned down to a segment base.
    pub first_uncleanable_offset: Offset,
    pub dirty_end: DirtyEnd,
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    /// `cleanable / (clean + cleanable)`, 0 for an empty log.
    pub ratio: f64,
    /// `max.compaction.lag.ms` passed for the oldest dirty batch: by how much.
    pub compaction_delay_ms: i64,
}

impl Cleanable {
    pub fn total_bytes(&self) -> u64 {
        self.clean_bytes + self.cleanable_bytes
    }

    pub fn need_compaction_now(&self) -> bool {
        self.compaction_delay_ms > 0
    }

    /// Kafka's selection rule: forced by the max lag, or strictly dirtier
    /// than `min.cleanable.dirty.ratio`.
    pub fn is_eligible(&self, settings: &CompactionSettings) -> bool {
        self.total_bytes() > 0
            && ((self.need_compaction_now() && self.cleanable_bytes > 0)
                || self.ratio > settings.min_cleanable_dirty_ratio)
    }
}

/// Index of the segment containing `offset` (the last with base <= offset).
fn floor_index(segs: &[SegmentFacts], offset: Offset) -> Option<usize> {
    segs.iter().rposition(|s| s.base_offset <= offset)
}

/// Segments overlapping `[from, to)` (Kafka `logSegments(from, to)`).
fn overlapping(segs: &[SegmentFacts], from: Offset, to: Offset) -> &[SegmentFacts] {
    let start = floor_index(segs, from).unwrap_or(0);
    let end = segs
        .iter()
        .position(|s| s.base_offset >= to)
        .unwrap_or(segs.len());
    if start >= end {
        &[]
    } else {
        &segs[start..end]
    }
}

/// Kafka `cleanableOffsets` + `LogToClean` + `maxCompactionDelay` (§11.2).
///
/// # Panics
/// If the snapshot has no segment (a log always has its active segment).
pub fn cleanable(snap: &CleanerLogSnapshot, s: &CompactionSettings, now_ms: i64) -> Cleanable {
    let segs = &snap.segments;
    let active = segs.last().expect("a log has an active segment");
    let checkpoint = snap.checkpoint.unwrap_or(snap.log_start_offset);
    let (first_dirty, checkpoint_reset) =
        if checkpoint < snap.log_start_offset || checkpoint > snap.log_end_offset {
            (snap.log_start_offset, true)
        } else {
            (checkpoint, false)
        };
    let non_active_dirty: &[SegmentFacts] = {
        let from = floor_index(segs, first_dirty).unwrap_or(0);
        &segs[from.min(segs.len() - 1)..segs.len() - 1]
    };
    let mut end = snap.last_stable_offset;
    let mut why = DirtyEnd::LastStableOffset;
    if active.base_offset < end {
        end = active.base_offset;
        why = DirtyEnd::ActiveSegment;
    }
    let min_lag = s.min_compaction_lag_ms.max(0);
    if min_lag > 0 {
        let lagging = non_active_dirty
            .iter()
            .find(|seg| seg.largest_timestamp.0 > now_ms.saturating_sub(min_lag));
        if let Some(seg) = lagging.filter(|seg| seg.base_offset < end) {
            end = seg.base_offset;
            why = DirtyEnd::MinCompactionLag;
        }
    }
    let end = end.max(first_dirty);
    // Align down: the base of the first non-active segment from `end` on,
    // else the active segment's base.
    let first_uncleanable = {
        let from = floor_index(segs, end).unwrap_or(0);
        segs[from..segs.len() - 1]
            .first()
            .map_or(active.base_offset, |seg| seg.base_offset)
    };
    let clean_bytes = segs
        .iter()
        .filter(|seg| seg.base_offset < first_dirty)
        .map(|seg| seg.size)
        .sum();
    let cleanable_bytes = overlapping(segs, first_dirty.min(first_uncleanable), first_uncleanable)
        .iter()
        .map(|seg| seg.size)
        .sum();
    let total: u64 = clean_bytes + cleanable_bytes;
    let ratio = if total == 0 {
        0.0
    } else {
        cleanable_bytes as f64 / total as f64
    };
    let earliest = non_active_dirty
        .iter()
        .map(|seg| seg.first_batch_timestamp.0)
        .filter(|t| *t > 0)
        .min();
    let max_lag = s.max_compaction_lag_ms.max(0);
    let clean_until = now_ms.saturating_sub(max_lag);
    let compaction_delay_ms = match earliest {
        Some(t) if t < clean_until => clean_until - t,
        _ => 0,
    };
    Cleanable {
        first_dirty_offset: first_dirty,
        checkpoint_reset,
        first_uncleanable_offset: first_uncleanable,
        dirty_end: why,
        clean_bytes,
        cleanable_bytes,
        ratio,
        compaction_delay_ms,
    }
}

/// Kafka `grabFilthiestCompactedLog`'s choice among candidates (already
/// filtered to compacted, not in progress, not backing off): the eligible
/// log with the largest ratio. Returns its index.
pub fn choose_filthiest(candidates: &[(Cleanable, CompactionSettings)]) -> Option<usize> {
    candidates
        .iter()
        .enumerate()
        .filter(|(_, (c, s))| c.is_eligible(s))
        .max_by(|(_, (a, _)), (_, (b, _))| a.ratio.total_cmp(&b.ratio))
        .map(|(i, _)| i)
}

/// Kafka `groupSegmentsBySize` (§11.5) over the segments with base below
/// the cleaning end: each returned range of indexes becomes one cleaned
/// segment based at its first segment's base.
pub fn group_segments_by_size(
    segments: &[SegmentFacts],
    max_size: u64,
    max_index_size: u64,
    first_uncleanable_offset: Offset,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let start = i;
        let first = &segments[i];
        let mut log_size = first.size;
        let mut index_size = first.offset_index_entries as u64 * 8;
        let mut time_size = first.time_index_entries as u64 * 12;
        i += 1;
        while i < segments.len() {
            let next = &segments[i];
            let last_of_next = match segments.get(i + 1) {
                Some(after) => after.base_offset.0 - 1,
                None => first_uncleanable_offset.0 - 1,
            };
            let fits = log_size + next.size <= max_size
                && index_size + next.offset_index_entries as u64 * 8 <= max_index_size
                && time_size + next.time_index_entries as u64 * 12 <= max_index_size
                && (next.size == 0 || last_of_next - first.base_offset.0 <= i32::MAX as i64);
            if !fits {
                break;
            }
            log_size += next.size;
            index_size += next.offset_index_entries as u64 * 8;
            time_size += next.time_index_entries as u64 * 12;
            i += 1;
        }
        groups.push(start..i);
    }
    groups
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
