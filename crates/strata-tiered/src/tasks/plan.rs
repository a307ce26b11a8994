//! What the copy and expiration tasks decide, as pure functions over
//! snapshots (docs/architecture.md decision 9), so each rule is tested
//! without disk or store.
//!
//! Copy (Kafka `RLMCopyTask`, reference §5.1): from
//! `max(copied + 1, log_start)`, every local segment whose *next* segment
//! starts at or below the last stable offset — so the active segment and
//! anything holding uncommitted data stay local.
//!
//! Expiration (Kafka `RLMExpirationTask`, §5.2, single lineage): total
//! `retention.ms` / `retention.bytes` over local-only plus remote bytes;
//! segments below the log start go; half-finished copies that no task owns
//! and half-finished deletes are deleted (retried) every run.

use std::collections::BTreeSet;

use strata_log::{LeaderEpoch, Offset, Timestamp};
use uuid::Uuid;

use crate::metadata::{RemoteLogSegmentMetadata, RemoteLogSegmentState};

/// One local segment as the copy task sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalSegment {
    pub base_offset: Offset,
    /// Base of the next segment (or the log end for the active one).
    pub next_offset: Offset,
    pub size: u64,
}

/// Indexes into `segments` of the segments to copy, oldest first.
/// `segments` is the whole local log, oldest first, the active one last.
pub fn copy_candidates(
    segments: &[LocalSegment],
    copied: Option<Offset>,
    log_start: Offset,
    last_stable: Offset,
) -> Vec<usize> {
    let from = copied.map_or(log_start, |c| c.plus(1)).max(log_start);
    let mut out = Vec::new();
    for (i, pair) in segments.windows(2).enumerate() {
        let (seg, next) = (&pair[0], &pair[1]);
        if next.base_offset <= from {
            continue; // entirely copied (or below the log start)
        }
        if next.base_offset > last_stable {
            break;
        }
        if seg.next_offset > seg.base_offset {
            out.push(i);
        }
    }
    out
}

/// `segment_leader_epochs` of a segment `[base, next)` from the log's epoch
/// entries (ascending): the epoch in force at `base`, rebased to `base`,
/// then every epoch starting inside the segment. Falls back to epoch 0 when
/// the cache knows nothing (a log written without epochs).
pub fn segment_epochs(
    entries: &[(LeaderEpoch, Offset)],
    base: Offset,
    next: Offset,
) -> std::collections::BTreeMap<LeaderEpoch, Offset> {
    let mut out = std::collections::BTreeMap::new();
    let at_base = entries.iter().rev().find(|(_, start)| *start <= base);
    out.insert(at_base.map_or(LeaderEpoch(0), |(e, _)| *e), base);
    for (epoch, start) in entries {
        if *start > base && *start < next {
            out.insert(*epoch, *start);
        }
    }
    out
}

/// Leader-epoch checkpoint text (version 0) for every epoch starting before
/// `next` (Kafka's `LogSegmentData.leaderEpochIndex`).
pub fn epoch_checkpoint_text(entries: &[(LeaderEpoch, Offset)], next: Offset) -> Vec<u8> {
    let kept: Vec<_> = entries.iter().filter(|(_, s)| *s < next).collect();
    let mut text = format!("0\n{}\n", kept.len());
    for (e, s) in kept {
        text.push_str(&format!("{} {}\n", e.0, s.0));
    }
    text.into_bytes()
}

/// Retention settings the expiration task reads (the topic's totals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TotalRetention {
    pub retention_ms: i64,
    pub retention_bytes: i64,
}

/// Why a remote segment is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteDeletionReason {
    LogStartOffsetBreach,
    RetentionMs,
    RetentionSize,
    /// COPY_SEGMENT_STARTED with no copy running: a crash mid-copy.
    AbandonedCopy,
    /// DELETE_SEGMENT_STARTED: a delete that did not finish; retried.
    UnfinishedDelete,
}

/// What one expiration run does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpirationPlan {
    pub deletions: Vec<(Uuid, RemoteDeletionReason)>,
    /// The new earliest offset when time/size retention deleted segments.
    pub new_log_start: Option<Offset>,
}

/// Decide one expiration run. `segments`: every non-terminal remote segment
/// of the partition; `local_only_bytes`: local bytes not yet copied;
/// `copying`: ids a copy task owns right now.
pub fn expiration_plan(
    segments: &[RemoteLogSegmentMetadata],
    log_start: Offset,
    local_only_bytes: u64,
    retention: TotalRetention,
    now_ms: i64,
    copying: &BTreeSet<Uuid>,
) -> ExpirationPlan {
    use RemoteLogSegmentState::*;
    let mut plan = ExpirationPlan::default();
    let mut sorted: Vec<&RemoteLogSegmentMetadata> = segments.iter().collect();
    sorted.sort_by_key(|md| (md.start_offset, md.segment_id.id));
    let finished_bytes: u64 = sorted
        .iter()
        .filter(|md| md.state == CopySegmentFinished)
        .map(|md| md.segment_size_in_bytes.max(0) as u64)
        .sum();
    let total = finished_bytes + local_only_bytes;
    let mut breached = if retention.retention_bytes >= 0 && total > retention.retention_bytes as u64
    {
        total - retention.retention_bytes as u64
    } else {
        0
    };
    let cutoff =
        (retention.retention_ms >= 0).then(|| now_ms.saturating_sub(retention.retention_ms));
    let mut walking = true;
    for md in sorted {
        let id = md.segment_id.id;
        match md.state {
            CopySegmentStarted if !copying.contains(&id) => {
                plan.deletions
                    .push((id, RemoteDeletionReason::AbandonedCopy));
            }
            DeleteSegmentStarted => plan
                .deletions
                .push((id, RemoteDeletionReason::UnfinishedDelete)),
            CopySegmentFinished if walking => {
                let size = md.segment_size_in_bytes.max(0) as u64;
                let reason = if md.end_offset < log_start {
                    Some(RemoteDeletionReason::LogStartOffsetBreach)
                } else if cutoff.is_some_and(|c| md.max_timestamp <= Timestamp(c)) {
                    breached = breached.saturating_sub(size);
                    Some(RemoteDeletionReason::RetentionMs)
                } else if breached > 0 && breached >= size {
                    breached -= size;
                    Some(RemoteDeletionReason::RetentionSize)
                } else {
                    None
                };
                match reason {
                    Some(r) => {
                        if r != RemoteDeletionReason::LogStartOffsetBreach {
                            let start = md.end_offset.plus(1);
                            plan.new_log_start =
                                Some(plan.new_log_start.map_or(start, |s| s.max(start)));
                        }
                        plan.deletions.push((id, r));
                    }
                    None => walking = false,
                }
            }
            _ => {}
        }
    }
    plan
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
