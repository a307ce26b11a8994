//! Reading the console's model from the broker: segments from the log
//! (`strata_log::Log`), remote segments from the remote tier's metadata
//! catalogue (`strata_tiered` RLMM), what retention deletes next from the
//! log's own decision (`Log::retention_decision`, the broker's rule),
//! compaction from the log cleaner's status, lag from the group
//! coordinator's committed offsets and the doctor's findings through the
//! installed [`super::ConsoleFindings`].
//!
//! Blocking (file reads); called on the blocking pool. Read-only: nothing
//! here changes a log, the catalogue or a group. What cannot be read
//! becomes a line in [`PartitionView::problems`] instead of failing the page.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_log::cleaner::cleaner_snapshot;
use strata_log::retention::DeletionReason;
use strata_log::{ErrorChain, Log, LogConfig, TopicPartition};
use strata_tiered::RemoteLogSegmentState;

use super::model::{
    CleanerView, Fate, FindingView, GroupLag, Offsets, PartitionRow, PartitionSummary,
    PartitionView, SegmentView, Severity, Tier, TopicRow, TopicView,
};
use super::text::{human_bytes, human_ms, utc};
use crate::broker::Broker;
use crate::console_findings::FindingSeverity;

fn summary(log: &Log) -> PartitionSummary {
    PartitionSummary {
        segments: log.num_segments(),
        bytes: log.size_in_bytes(),
        log_start: log.log_start_offset().0,
        log_end: log.log_end_offset().0,
        high_watermark: log.high_watermark().0,
    }
}

/// Every topic with its partition count and the local size of the
/// partitions this broker holds, by name.
pub(crate) fn topics(broker: &Broker) -> Vec<TopicRow> {
    let mut rows: Vec<TopicRow> = broker
        .topics
        .list()
        .into_iter()
        .map(|t| {
            let logs: Vec<_> = (0..t.partitions)
                .filter_map(|p| broker.log(&t.name, p))
                .collect();
            TopicRow {
                partitions: t.partitions,
                bytes: logs.iter().map(|l| l.size_in_bytes()).sum(),
                segments: logs.iter().map(|l| l.num_segments()).sum(),
                name: t.name,
            }
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

/// A topic's partitions; `None` when there is no such topic.
pub(crate) fn topic(broker: &Broker, name: &str) -> Option<TopicView> {
    let info = broker.topics.get(name)?;
    Some(TopicView {
        name: info.name.clone(),
        partitions: (0..info.partitions)
            .map(|p| PartitionRow {
                partition: p,
                local: broker.log(name, p).map(|l| summary(&l)),
            })
            .collect(),
    })
}

fn reason_name(r: DeletionReason) -> &'static str {
    match r {
        DeletionReason::LogStartOffsetBreach => "below the log start offset",
        DeletionReason::RetentionSize => "retention.bytes",
        DeletionReason::RetentionMs => "retention.ms",
    }
}

fn known(ts: i64) -> Option<i64> {
    (ts >= 0).then_some(ts)
}

/// Local and remote segments merged by base offset, oldest first.
fn merge_tiers(
    local: Vec<SegmentView>,
    remote: Vec<strata_tiered::RemoteLogSegmentMetadata>,
) -> Vec<SegmentView> {
    let mut by_base: BTreeMap<i64, SegmentView> = BTreeMap::new();
    let mut copied = BTreeMap::new();
    for md in remote {
        let finished = md.state == RemoteLogSegmentState::CopySegmentFinished;
        copied.insert(md.start_offset.0, (finished, md.state));
        by_base.insert(
            md.start_offset.0,
            SegmentView {
                base_offset: md.start_offset.0,
                next_offset: md.end_offset.0 + 1,
                size_bytes: u64::try_from(md.segment_size_in_bytes).unwrap_or(0),
                first_timestamp: None,
                last_timestamp: known(md.max_timestamp.0),
                tier: Tier::Remote,
                active: false,
                remote_state: (!finished).then(|| format!("{:?}", md.state)),
                fate: None,
            },
        );
    }
    for mut seg in local {
        match copied.get(&seg.base_offset) {
            Some((true, _)) => seg.tier = Tier::Both,
            Some((false, state)) => seg.remote_state = Some(format!("{state:?}")),
            None => {}
        }
        by_base.insert(seg.base_offset, seg);
    }
    by_base.into_values().collect()
}

fn local_segments(log: &Log, problems: &mut Vec<String>) -> Vec<SegmentView> {
    let first_ts: BTreeMap<i64, i64> = match cleaner_snapshot(log, None) {
        Ok(snap) => snap
            .segments
            .iter()
            .filter_map(|s| known(s.first_batch_timestamp.0).map(|t| (s.base_offset.0, t)))
            .collect(),
        Err(e) => {
            problems.push(format!("first timestamps: {}", ErrorChain(&e)));
            BTreeMap::new()
        }
    };
    let infos = log.segments();
    let last = infos.len().saturating_sub(1);
    infos
        .into_iter()
        .enumerate()
        .map(|(i, s)| SegmentView {
            base_offset: s.base_offset.0,
            next_offset: s.next_offset.0,
            size_bytes: s.size,
            first_timestamp: first_ts.get(&s.base_offset.0).copied(),
            last_timestamp: known(s.max_timestamp.0),
            tier: Tier::Local,
            active: i == last,
            remote_state: None,
            fate: None,
        })
        .collect()
}

/// Mark what retention does next and describe it in `notes`.
fn retention(broker: &Broker, log: &Log, cfg: &LogConfig, tiered: bool, view: &mut PartitionView) {
    let interval = human_ms(broker.config.log_retention_check_interval_ms);
    let now = view.now_ms;
    let notes = &mut view.retention_notes;
    let decision = match log.retention_decision() {
        Ok(d) => d,
        Err(e) => {
            view.problems
                .push(format!("retention preview: {}", ErrorChain(&e)));
            return;
        }
    };
    let (retention_ms, retention_bytes) = if tiered {
        let pick = |local: i64, total: i64| if local == -2 { total } else { local };
        (
            pick(cfg.local_retention_ms, cfg.retention_ms),
            pick(cfg.local_retention_bytes, cfg.retention_bytes),
        )
    } else {
        (cfg.retention_ms, cfg.retention_bytes)
    };
    let doomed: BTreeMap<i64, DeletionReason> = decision
        .deletions
        .iter()
        .map(|d| (d.base_offset.0, d.reason))
        .collect();
    for seg in view.segments.iter_mut() {
        if let Some(reason) = doomed.get(&seg.base_offset) {
            if seg.tier != Tier::Remote {
                seg.fate = Some(Fate::DeletedNextPass {
                    reason: reason_name(*reason).into(),
                });
                continue;
            }
        }
        let ms = if seg.tier == Tier::Remote {
            cfg.retention_ms
        } else {
            retention_ms
        };
        if cfg.cleanup_policy.delete && ms >= 0 && !seg.active {
            if let Some(last) = seg.last_timestamp {
                seg.fate = Some(Fate::ExpiresAt {
                    at_ms: last.saturating_add(ms),
                });
            }
        }
    }
    if decision.is_empty() {
        notes.push(format!(
            "The next retention pass (every {interval}) deletes nothing."
        ));
    } else {
        let mut reasons: Vec<&str> = decision
            .deletions
            .iter()
            .map(|d| reason_name(d.reason))
            .collect();
        reasons.dedup();
        notes.push(format!(
            "The next retention pass (every {interval}) deletes {} segment(s), {}, by {}{}.",
            decision.deletions.len(),
            human_bytes(decision.bytes()),
            reasons.join(", "),
            match decision.new_log_start_offset {
                Some(o) => format!("; the local log then starts at {}", o.0),
                None => String::new(),
            }
        ));
    }
    if !cfg.cleanup_policy.delete {
        notes.push(
            "cleanup.policy has no delete: only offsets below the log start are deleted.".into(),
        );
        return;
    }
    let next_expiry = view
        .segments
        .iter()
        .filter(|s| s.tier != Tier::Remote)
        .find_map(|s| match s.fate {
            Some(Fate::ExpiresAt { at_ms }) => Some(at_ms),
            _ => None,
        });
    if let Some(at) = next_expiry {
        notes.push(format!(
            "The oldest local segment passes {}={} at {} UTC ({}).",
            if tiered {
                "local.retention.ms"
            } else {
                "retention.ms"
            },
            retention_ms,
            utc(at),
            if at > now {
                format!("in {}", human_ms(at - now))
            } else {
                "already past, once the high watermark and copy allow".into()
            }
        ));
    } else if retention_ms < 0 {
        notes.push("No time limit on local segments (retention.ms=-1).".into());
    }
    let local_bytes: u64 = view
        .segments
        .iter()
        .filter(|s| s.tier != Tier::Remote)
        .map(|s| s.size_bytes)
        .sum();
    if retention_bytes >= 0 {
        notes.push(format!(
            "{}={} against {} on local disk.",
            if tiered {
                "local.retention.bytes"
            } else {
                "retention.bytes"
            },
            retention_bytes,
            human_bytes(local_bytes)
        ));
    }
    if tiered {
        notes.push(format!(
            "Tiered: a local segment goes only once copied to remote storage (copied up to {}); remote segments follow retention.ms={} and retention.bytes={}.",
            view.offsets
                .highest_remote
                .map_or_else(|| "nothing yet".to_string(), |o| o.to_string()),
            cfg.retention_ms,
            cfg.retention_bytes
        ));
    }
}

fn cleaner(broker: &Broker, log: &Log, cfg: &LogConfig, view: &mut PartitionView) {
    if !cfg.cleanup_policy.compact {
        return;
    }
    let status = match broker.logs.cleaner().status(log) {
        Ok(s) => s,
        Err(e) => {
            view.problems
                .push(format!("cleaner status: {}", ErrorChain(&e)));
            return;
        }
    };
    let c = &status.cleanable;
    let (dirty_from, dirty_to) = (c.first_dirty_offset.0, c.first_uncleanable_offset.0);
    view.offsets.first_dirty = Some(dirty_from);
    if c.cleanable_bytes > 0 {
        for seg in view.segments.iter_mut() {
            if seg.tier != Tier::Remote
                && seg.fate.is_none()
                && seg.next_offset > dirty_from
                && seg.base_offset < dirty_to
            {
                seg.fate = Some(Fate::Compacted);
            }
        }
    }
    view.cleaner = Some(CleanerView {
        clean_bytes: c.clean_bytes,
        dirty_bytes: c.cleanable_bytes,
        dirty_ratio: c.ratio,
        min_ratio: cfg.min_cleanable_dirty_ratio,
        eligible: status.eligible,
        in_progress: status.in_progress,
        first_dirty_offset: dirty_from,
        first_uncleanable_offset: dirty_to,
        since_last_clean_ms: status.time_since_last_clean_ms,
        bytes_reclaimed_total: status.bytes_reclaimed_total,
        failure: status.failure.map(|f| f.error),
    });
}

fn findings(broker: &Broker, log: &Log, cfg: &LogConfig) -> Option<Vec<FindingView>> {
    let source = broker.config.console_findings.0.as_ref()?;
    Some(
        source
            .findings(&log.dir(), cfg)
            .into_iter()
            .map(|f| FindingView {
                severity: match f.severity {
                    FindingSeverity::Info => Severity::Info,
                    FindingSeverity::Warning => Severity::Warning,
                    FindingSeverity::Error => Severity::Error,
                },
                symptom: f.symptom,
                message: f.message,
            })
            .collect(),
    )
}

fn policy_name(cfg: &LogConfig) -> String {
    match (cfg.cleanup_policy.delete, cfg.cleanup_policy.compact) {
        (true, true) => "compact,delete",
        (false, true) => "compact",
        (true, false) => "delete",
        (false, false) => "",
    }
    .to_string()
}

/// The partition page's model; `None` when the topic or this broker's log
/// of the partition does not exist.
pub(crate) fn partition(broker: &Broker, topic: &str, partition: i32) -> Option<PartitionView> {
    let info = broker.topics.get(topic)?;
    if partition >= info.partitions {
        return None;
    }
    let log: Arc<Log> = broker.log(topic, partition)?;
    let tp = TopicPartition::new(topic, partition);
    let cfg = log.config();
    let mut problems = Vec::new();
    let local = local_segments(&log, &mut problems);
    let rlm = broker.tiered.get();
    let tiered = rlm.and_then(|r| r.partition(&tp).map(|p| (r, p)));
    let remote = match &tiered {
        Some((rlm, p)) => rlm
            .rlmm()
            .list_remote_log_segments(&p.tip)
            .unwrap_or_else(|e| {
                problems.push(format!("remote segments: {}", ErrorChain(&e)));
                Vec::new()
            }),
        None => Vec::new(),
    };
    let high_watermark = log.high_watermark().0;
    let groups = broker
        .groups
        .committed_offsets_of(topic, partition)
        .into_iter()
        .map(|c| GroupLag {
            group: c.group,
            protocol: c.kind.0,
            state: c.kind.1,
            committed: c.offset,
            lag: (high_watermark - c.offset).max(0),
        })
        .collect();
    let mut view = PartitionView {
        topic: topic.to_string(),
        partition,
        segments: merge_tiers(local, remote),
        offsets: Offsets {
            log_start: tiered
                .as_ref()
                .map_or(log.log_start_offset(), |(_, p)| p.log_start_offset())
                .0,
            local_log_start: log.local_log_start_offset().0,
            high_watermark,
            last_stable: log.last_stable_offset().0,
            log_end: log.log_end_offset().0,
            first_dirty: None,
            highest_remote: rlm
                .and_then(|r| r.highest_offset_in_remote_storage(&tp))
                .map(|o| o.0),
        },
        groups,
        cleanup_policy: policy_name(&cfg),
        cleaner: None,
        retention_notes: Vec::new(),
        findings: findings(broker, &log, &cfg),
        problems,
        now_ms: broker.logs.clock().now_ms(),
    };
    retention(broker, &log, &cfg, tiered.is_some(), &mut view);
    cleaner(broker, &log, &cfg, &mut view);
    Some(view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::{Offset, Timestamp};
    use strata_tiered::{RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition};

    fn local(base: i64, next: i64) -> SegmentView {
        SegmentView {
            base_offset: base,
            next_offset: next,
            size_bytes: 10,
            first_timestamp: None,
            last_timestamp: None,
            tier: Tier::Local,
            active: false,
            remote_state: None,
            fate: None,
        }
    }

    fn remote(start: i64, end: i64, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadata {
        let tip = TopicIdPartition::new(uuid::Uuid::nil(), TopicPartition::new("t", 0));
        RemoteLogSegmentMetadata {
            segment_id: RemoteLogSegmentId {
                partition: tip,
                id: uuid::Uuid::new_v4(),
            },
            start_offset: Offset(start),
            end_offset: Offset(end),
            max_timestamp: Timestamp(5),
            broker_id: 1,
            event_timestamp_ms: 0,
            segment_leader_epochs: BTreeMap::from([(strata_log::LeaderEpoch(0), Offset(start))]),
            segment_size_in_bytes: 77,
            custom_metadata: None,
            state,
        }
    }

    #[test]
    fn tiers_merge_by_base_offset() {
        use RemoteLogSegmentState::*;
        let merged = merge_tiers(
            vec![local(100, 200), local(200, 300), local(300, 310)],
            vec![
                remote(0, 99, CopySegmentFinished),
                remote(100, 199, CopySegmentFinished),
                remote(200, 299, CopySegmentStarted),
            ],
        );
        let tiers: Vec<_> = merged.iter().map(|s| (s.base_offset, s.tier)).collect();
        assert_eq!(
            tiers,
            vec![
                (0, Tier::Remote),
                (100, Tier::Both),
                (200, Tier::Local),
                (300, Tier::Local)
            ]
        );
        assert_eq!(merged[0].next_offset, 100);
        assert_eq!(merged[0].size_bytes, 77);
        assert_eq!(merged[1].size_bytes, 10, "the local size wins");
        assert_eq!(
            merged[2].remote_state.as_deref(),
            Some("CopySegmentStarted")
        );
    }
}
