//! Retention (cleanup.policy=delete, docs/kafka-behaviour.md §10): which
//! segments a retention pass deletes, and why.
//!
//! Decide with a pure function, act with a worker (docs/architecture.md decision 9):
//!
//! - [`decide`] maps a [`LogSnapshot`] (every segment's base offset, size
//!   and largest timestamp, plus the log start offset, high watermark and log
//!   end) and a [`RetentionPolicy`] at time `now` to a [`RetentionDecision`].
//!   No disk, no clock, no locks: tests build snapshots by hand.
//! - `Log::delete_old_segments` (in `log/retention.rs`) takes a snapshot
//!   under the append lock, asks [`decide`], and applies the decision: roll
//!   first when every segment goes, raise the log start offset, drop the
//!   segments from the list, rename their files `.deleted`, schedule the
//!   physical delete after `file.delete.delay.ms`.
//! - [`crate::RetentionSchedule`] (in `manager/retention.rs`) runs that for
//!   every log of a [`crate::LogManager`] every
//!   `log.retention.check.interval.ms`.
//!
//! # Kafka's rules (UnifiedLog.deleteOldSegments), reproduced by `decide`
//!
//! Three passes, each seeing the log as the previous one left it:
//!
//! 1. [`DeletionReason::LogStartOffsetBreach`] (always, even when the policy
//!    has no `delete`): a segment goes when the *next* segment's base offset
//!    is at or below the log start offset.
//! 2. [`DeletionReason::RetentionSize`] (only with `delete` and
//!    `retention.bytes >= 0` and total size `>= retention.bytes`): with
//!    `diff = total - retention.bytes`, oldest first, a segment goes while
//!    `diff - size >= 0` (then `diff -= size`).
//! 3. [`DeletionReason::RetentionMs`] (only with `delete` and
//!    `retention.ms >= 0`): a segment goes when
//!    `now - largest_timestamp > retention.ms`, the largest timestamp being
//!    the largest record timestamp or, without one, the `.log` mtime.
//!
//! Common to every pass: walk oldest first and stop at the first segment
//! kept; a segment is a candidate only when `high_watermark >= upper bound`
//! (the next segment's base, or the log end for the last segment), so
//! nothing at or above the high watermark is ever deleted; an empty last
//! segment is never deleted. When a pass deletes every segment the log first
//! rolls a new empty active segment at the log end (so the non-empty active
//! segment itself can expire, as in Kafka).

use crate::config::LogConfig;
use crate::types::{Offset, Timestamp};

/// Where a segment's largest timestamp came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampSource {
    /// The largest record timestamp in the segment.
    Record,
    /// No record has a timestamp (all `-1`): the `.log` file's mtime.
    FileMtime,
}

/// One segment as retention sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSnapshot {
    pub base_offset: Offset,
    /// Logical size of the `.log` in bytes.
    pub size: u64,
    /// Kafka `LogSegment.largestTimestamp`.
    pub largest_timestamp: Timestamp,
    pub timestamp_source: TimestampSource,
}

/// A partition as retention sees it: segments oldest first (the last one
/// is the active segment) and the offsets that bound deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSnapshot {
    pub segments: Vec<SegmentSnapshot>,
    pub log_start_offset: Offset,
    pub high_watermark: Offset,
    pub log_end_offset: Offset,
}

impl LogSnapshot {
    /// Total bytes of all segments.
    pub fn size(&self) -> u64 {
        self.segments.iter().map(|s| s.size).sum()
    }

    /// Kafka's `upperBoundOffset` of segment `i`: the next segment's base,
    /// or the log end for the last segment.
    pub fn upper_bound(&self, i: usize) -> Offset {
        self.segments
            .get(i + 1)
            .map_or(self.log_end_offset, |n| n.base_offset)
    }
}

/// The settings retention reads, taken from the log's current config on
/// every pass (so runtime config changes apply at the next pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// `cleanup.policy` contains `delete`; without it only the log-start
    /// pass runs.
    pub delete: bool,
    /// `retention.ms`; negative = unlimited.
    pub retention_ms: i64,
    /// `retention.bytes`; negative = unlimited.
    pub retention_bytes: i64,
}

impl RetentionPolicy {
    /// The policy of a topic config. Tiered storage is not in play here, so
    /// `local.retention.*` do not apply.
    pub fn from_config(config: &LogConfig) -> RetentionPolicy {
        RetentionPolicy {
            delete: config.cleanup_policy.delete,
            retention_ms: config.retention_ms,
            retention_bytes: config.retention_bytes,
        }
    }
}

/// Why a segment is deleted (Kafka `SegmentDeletionReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeletionReason {
    /// Everything in it is below the log start offset (DeleteRecords, or a
    /// log start raised by an earlier deletion).
    LogStartOffsetBreach,
    /// The partition is larger than `retention.bytes`.
    RetentionSize,
    /// Its largest timestamp is older than `retention.ms`.
    RetentionMs,
}

/// One segment to delete, with the numbers that justify it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentDeletion {
    pub base_offset: Offset,
    /// The offset after the segment (next base or log end).
    pub upper_bound: Offset,
    pub size: u64,
    pub reason: DeletionReason,
    /// For [`DeletionReason::RetentionMs`]: `now - largest_timestamp`.
    pub age_ms: Option<i64>,
}

/// What one retention pass does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionDecision {
    /// Segments to delete, oldest first.
    pub deletions: Vec<SegmentDeletion>,
    /// Every segment present at the start of the pass goes: roll a new
    /// empty active segment at the log end first.
    pub roll_active_first: bool,
    /// The log start offset after the pass (the first kept segment's base),
    /// when it rises.
    pub new_log_start_offset: Option<Offset>,
}

impl RetentionPolicy {
    /// The local policy of a tiered topic (KIP-405): `local.retention.ms`
    /// and `local.retention.bytes`, where −2 means "the total value".
    pub fn local_tiered(config: &LogConfig) -> RetentionPolicy {
        let pick = |local: i64, total: i64| if local == -2 { total } else { local };
        RetentionPolicy {
            delete: config.cleanup_policy.delete,
            retention_ms: pick(config.local_retention_ms, config.retention_ms),
            retention_bytes: pick(config.local_retention_bytes, config.retention_bytes),
        }
    }
}

impl RetentionDecision {
    /// Tiered storage: keep only the deletions whose offsets all lie below
    /// `limit` (copied to remote storage); log-start breaches always stay.
    /// Deletions are a prefix, so the result is one too.
    pub fn limit_to_upper_bound(&mut self, limit: Offset) {
        let keep = self
            .deletions
            .iter()
            .take_while(|d| {
                d.reason == DeletionReason::LogStartOffsetBreach || d.upper_bound <= limit
            })
            .count();
        if keep < self.deletions.len() {
            self.deletions.truncate(keep);
            self.roll_active_first = false;
            self.new_log_start_offset = self.deletions.last().map(|d| d.upper_bound);
        }
    }

    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.deletions.is_empty()
    }

    /// Bytes the pass frees.
    pub fn bytes(&self) -> u64 {
        self.deletions.iter().map(|d| d.size).sum()
    }
}

/// Kafka `deletableSegments`: the longest prefix of `snap.segments` for
/// which `pred(index, segment)` holds, never crossing the high watermark and
/// never taking an empty last segment. `pred` is only asked about segments
/// below the high watermark (Kafka short-circuits the same way, which
/// matters for the stateful size predicate).
fn deletable_prefix(
    snap: &LogSnapshot,
    mut pred: impl FnMut(usize, &SegmentSnapshot) -> bool,
) -> usize {
    let mut n = 0;
    for (i, seg) in snap.segments.iter().enumerate() {
        let is_last = i + 1 == snap.segments.len();
        let below_hw = snap.high_watermark >= snap.upper_bound(i);
        if !(below_hw && pred(i, seg)) || (is_last && seg.size == 0) {
            break;
        }
        n += 1;
    }
    n
}

/// Apply one pass's deletion of the first `n` segments to the simulated
/// log, recording it in `out`.
fn take_prefix(
    snap: &mut LogSnapshot,
    n: usize,
    reason: DeletionReason,
    now_ms: i64,
    out: &mut RetentionDecision,
) {
    if n == 0 {
        return;
    }
    if n == snap.segments.len() {
        // Kafka `deleteSegments`: always keep one segment, so roll a new
        // empty active segment at the log end before deleting them all. It
        // is empty, so no later pass can take it: at most one roll.
        snap.segments.push(SegmentSnapshot {
            base_offset: snap.log_end_offset,
            size: 0,
            largest_timestamp: Timestamp(now_ms),
            timestamp_source: TimestampSource::FileMtime,
        });
    }
    for i in 0..n {
        let seg = &snap.segments[i];
        out.deletions.push(SegmentDeletion {
            base_offset: seg.base_offset,
            upper_bound: snap.upper_bound(i),
            size: seg.size,
            reason,
            age_ms: (reason == DeletionReason::RetentionMs)
                .then(|| now_ms.saturating_sub(seg.largest_timestamp.0)),
        });
    }
    snap.segments.drain(..n);
    let new_start = snap.segments[0].base_offset;
    if new_start > snap.log_start_offset {
        snap.log_start_offset = new_start;
        out.new_log_start_offset = Some(new_start);
    }
    // Kafka `updateLogStartOffset` raises the HW with the start.
    snap.high_watermark = snap.high_watermark.max(new_start);
}

/// Which segments a retention pass at `now_ms` deletes, and why.
///
/// A roll (when every segment expires) happens at most once, before the
/// first deletion; the decision records it in
/// [`RetentionDecision::roll_active_first`].
pub fn decide(snap: &LogSnapshot, policy: &RetentionPolicy, now_ms: i64) -> RetentionDecision {
    let mut sim = snap.clone();
    let mut out = RetentionDecision::default();
    if sim.segments.is_empty() {
        return out;
    }
    // 1. Log start offset breach.
    let n = {
        let s = &sim;
        deletable_prefix(s, |i, _| {
            s.segments
                .get(i + 1)
                .is_some_and(|next| next.base_offset <= s.log_start_offset)
        })
    };
    take_prefix(
        &mut sim,
        n,
        DeletionReason::LogStartOffsetBreach,
        now_ms,
        &mut out,
    );
    if !policy.delete {
        out.roll_active_first = out.deletions.len() == snap.segments.len();
        return out;
    }
    // 2. retention.bytes.
    let total = sim.size();
    if policy.retention_bytes >= 0 && total >= policy.retention_bytes as u64 {
        let mut diff = total - policy.retention_bytes as u64;
        let n = deletable_prefix(&sim, |_, seg| {
            if diff >= seg.size {
                diff -= seg.size;
                true
            } else {
                false
            }
        });
        take_prefix(&mut sim, n, DeletionReason::RetentionSize, now_ms, &mut out);
    }
    // 3. retention.ms.
    if policy.retention_ms >= 0 {
        let n = deletable_prefix(&sim, |_, seg| {
            now_ms.saturating_sub(seg.largest_timestamp.0) > policy.retention_ms
        });
        take_prefix(&mut sim, n, DeletionReason::RetentionMs, now_ms, &mut out);
    }
    out.roll_active_first = out.deletions.len() == snap.segments.len();
    out
}

#[cfg(test)]
mod tests;
