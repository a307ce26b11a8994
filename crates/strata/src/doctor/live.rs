//! `--bootstrap-server`, read-only: the consumer groups' committed
//! positions (ListGroups v3 + OffsetFetch v7) and the live log start and end
//! (ListOffsets v4 earliest/latest), then the answers that need them:
//!
//! - `consumers_fall_behind_retention`: a group's committed offset is below
//!   the log start (`group_position_below_log_start`: it lost data and
//!   resets per `auto.offset.reset`), or inside what the next retention pass
//!   deletes (`group_position_in_next_deleted_segment`, reusing the broker's
//!   own `strata_log::retention::decide` one check interval ahead);
//! - `consumer_cache_keeps_deleted_keys` per group
//!   (`group_behind_expiring_tombstones`): the group has not read tombstones
//!   whose delete horizon passes soon.
//!
//! Framing as in [`super::remote`]: `i32 size | header | body`, one
//! blocking connection, encoded with the `kafka-protocol` crate.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, GroupId, ListGroupsRequest, ListGroupsResponse, ListOffsetsRequest,
    ListOffsetsResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;
use std::collections::BTreeMap;
use strata_log::retention::{decide, RetentionPolicy};
use strata_log::{LogConfig, TopicPartition};

use super::diagnosis::{human_ms, Cause, DoctorSettings, Finding, Severity, Symptom};
use super::remote::{Connection, RemoteError};
use super::scan::PartitionFacts;

const LIST_GROUPS_VERSION: i16 = 3;
const OFFSET_FETCH_VERSION: i16 = 7;
const LIST_OFFSETS_VERSION: i16 = 4;
/// A delete horizon passing within this time passes "soon".
pub const TOMBSTONE_SOON_MS: i64 = 3_600_000;

/// One group's committed offset of one partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupPosition {
    pub group: String,
    pub committed: i64,
}

/// A broker's live view of one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveOffsets {
    pub log_start: Option<i64>,
    pub log_end: Option<i64>,
}

/// A read-only connection to a broker.
pub struct Live {
    broker: Connection,
    /// Committed positions of every group, per partition (fetched once).
    positions: Option<BTreeMap<TopicPartition, Vec<GroupPosition>>>,
}

impl Live {
    /// Connect to `server`.
    ///
    /// # Errors
    /// [`RemoteError::Io`].
    pub fn connect(server: &str) -> Result<Live, RemoteError> {
        Ok(Live {
            broker: Connection::connect(server)?,
            positions: None,
        })
    }

    /// The committed positions of every group on `tp` (ListGroups once,
    /// then one OffsetFetch per group for all its partitions).
    ///
    /// # Errors
    /// [`RemoteError`]; a group answering an error code is skipped.
    pub fn positions(&mut self, tp: &TopicPartition) -> Result<Vec<GroupPosition>, RemoteError> {
        if self.positions.is_none() {
            let mut all: BTreeMap<TopicPartition, Vec<GroupPosition>> = BTreeMap::new();
            let groups: ListGroupsResponse = self.broker.call(
                ApiKey::ListGroups,
                LIST_GROUPS_VERSION,
                &ListGroupsRequest::default(),
            )?;
            if groups.error_code != 0 {
                return Err(RemoteError::Kafka {
                    resource: "ListGroups".into(),
                    code: groups.error_code,
                });
            }
            for g in groups.groups {
                let req = offset_fetch_all(g.group_id.clone());
                let resp: OffsetFetchResponse =
                    self.broker
                        .call(ApiKey::OffsetFetch, OFFSET_FETCH_VERSION, &req)?;
                if resp.error_code != 0 {
                    continue;
                }
                for t in resp.topics {
                    for p in t.partitions {
                        if p.error_code != 0 || p.committed_offset < 0 {
                            continue;
                        }
                        all.entry(TopicPartition::new(t.name.0.to_string(), p.partition_index))
                            .or_default()
                            .push(GroupPosition {
                                group: g.group_id.0.to_string(),
                                committed: p.committed_offset,
                            });
                    }
                }
            }
            self.positions = Some(all);
        }
        Ok(self
            .positions
            .as_ref()
            .and_then(|p| p.get(tp).cloned())
            .unwrap_or_default())
    }

    /// The live log start (earliest) and end (latest) of `tp`.
    ///
    /// # Errors
    /// [`RemoteError`]; a partition error code leaves that offset `None`.
    pub fn offsets(&mut self, tp: &TopicPartition) -> Result<LiveOffsets, RemoteError> {
        let mut one = |timestamp: i64| -> Result<Option<i64>, RemoteError> {
            let mut p = ListOffsetsPartition::default();
            p.partition_index = tp.partition;
            p.timestamp = timestamp;
            p.current_leader_epoch = -1;
            let mut t = ListOffsetsTopic::default();
            t.name = TopicName(StrBytes::from_string(tp.topic.clone()));
            t.partitions = vec![p];
            let mut req = ListOffsetsRequest::default();
            req.replica_id = BrokerId(-1);
            req.topics = vec![t];
            let resp: ListOffsetsResponse =
                self.broker
                    .call(ApiKey::ListOffsets, LIST_OFFSETS_VERSION, &req)?;
            Ok(resp
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .find(|p| p.partition_index == tp.partition && p.error_code == 0)
                .map(|p| p.offset))
        };
        Ok(LiveOffsets {
            log_start: one(-2)?,
            log_end: one(-1)?,
        })
    }
}

/// OffsetFetch of every partition `group` committed (`topics` null; the
/// crate's default is an empty list, which asks for nothing).
fn offset_fetch_all(group: GroupId) -> OffsetFetchRequest {
    let mut req = OffsetFetchRequest::default();
    req.group_id = group;
    req.topics = None;
    req
}

/// Where a group stands against retention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetentionStanding {
    /// Below the log start: `lost` records are gone.
    BelowLogStart {
        lost: i64,
    },
    /// The next retention pass moves the log start to `new_start`,
    /// deleting `records` records the group has not read.
    InNextDeletion {
        new_start: i64,
        records: i64,
    },
    Safe,
}

/// The pure rule: `committed` against the log start now and after the next
/// retention pass (`next_start`, when it rises).
pub fn standing(committed: i64, log_start: i64, next_start: Option<i64>) -> RetentionStanding {
    if committed < log_start {
        return RetentionStanding::BelowLogStart {
            lost: log_start - committed,
        };
    }
    match next_start {
        Some(n) if committed < n => RetentionStanding::InNextDeletion {
            new_start: n,
            records: n - committed,
        },
        _ => RetentionStanding::Safe,
    }
}

/// Tombstones at or after `committed` whose delete horizon passes before
/// `now + soon_ms`: (count, earliest horizon).
pub fn expiring_tombstones(
    facts: &PartitionFacts,
    committed: i64,
    now: i64,
    soon_ms: i64,
) -> Option<(u64, i64)> {
    let mut n = 0;
    let mut earliest = i64::MAX;
    for s in &facts.segments {
        for h in &s.horizon_batches {
            if h.base_offset.0 >= committed
                && h.tombstones > 0
                && h.delete_horizon.0 <= now.saturating_add(soon_ms)
            {
                n += h.tombstones;
                earliest = earliest.min(h.delete_horizon.0);
            }
        }
    }
    (n > 0).then_some((n, earliest))
}

/// The live findings about one partition.
pub fn diagnose(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    groups: &[GroupPosition],
    live: &LiveOffsets,
    now: i64,
    out: &mut Vec<Finding>,
) {
    let log_start = live.log_start.unwrap_or(facts.log_start_offset.0);
    let check = settings.retention_check_interval_ms;
    let next_start = if cfg.cleanup_policy.delete && !facts.segments.is_empty() {
        let mut snap = super::retention::snapshot(facts);
        snap.log_start_offset = snap.log_start_offset.max(strata_log::Offset(log_start));
        decide(
            &snap,
            &RetentionPolicy::from_config(cfg),
            now.saturating_add(check),
        )
        .new_log_start_offset
        .map(|o| o.0)
    } else {
        None
    };
    for g in groups {
        match standing(g.committed, log_start, next_start) {
            RetentionStanding::BelowLogStart { lost } => out.push(
                Finding::new(
                    Symptom::ConsumersFallBehindRetention,
                    Cause::GroupPositionBelowLogStart,
                    Severity::Warning,
                    format!(
                        "group {:?} committed offset {} but the log starts at {}: {lost} record(s) \
                         were deleted before it read them; its consumers get \
                         OFFSET_OUT_OF_RANGE and reset per auto.offset.reset. Raise retention.ms \
                         / retention.bytes or make the group keep up",
                        g.group, g.committed, log_start
                    ),
                )
                .settings(&["retention.ms", "retention.bytes", "auto.offset.reset"])
                .num("group", g.group.clone())
                .num("committed_offset", g.committed)
                .num("log_start_offset", log_start)
                .num("records_lost", lost),
            ),
            RetentionStanding::InNextDeletion { new_start, records } => out.push(
                Finding::new(
                    Symptom::ConsumersFallBehindRetention,
                    Cause::GroupPositionInNextDeletedSegment,
                    Severity::Warning,
                    format!(
                        "group {:?} committed offset {}; the next retention pass (within {}) \
                         moves the log start to {new_start}, deleting {records} record(s) it has \
                         not read. Raise retention.ms / retention.bytes or make the group catch up",
                        g.group,
                        g.committed,
                        human_ms(check)
                    ),
                )
                .settings(&["retention.ms", "retention.bytes"])
                .num("group", g.group.clone())
                .num("committed_offset", g.committed)
                .num("next_log_start_offset", new_start)
                .num("records_to_delete", records)
                .num("within_ms", check),
            ),
            RetentionStanding::Safe => {}
        }
        if cfg.cleanup_policy.compact {
            if let Some((n, horizon)) =
                expiring_tombstones(facts, g.committed, now, TOMBSTONE_SOON_MS)
            {
                out.push(
                    Finding::new(
                        Symptom::ConsumerCacheKeepsDeletedKeys,
                        Cause::GroupBehindExpiringTombstones,
                        Severity::Warning,
                        format!(
                            "group {:?} at offset {} has not read {n} tombstone(s) whose delete \
                             horizon passes {} (delete.retention.ms); after that the cleaner \
                             drops them and the group keeps the deleted keys",
                            g.group,
                            g.committed,
                            if horizon <= now {
                                "at the next cleaning".to_owned()
                            } else {
                                format!("in {}", human_ms(horizon - now))
                            }
                        ),
                    )
                    .settings(&["delete.retention.ms"])
                    .num("group", g.group.clone())
                    .num("committed_offset", g.committed)
                    .num("tombstones", n)
                    .num("delete_horizon_ms", horizon),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable};

    #[test]
    fn standing_against_the_log_start_and_the_next_pass() {
        assert_eq!(
            standing(5, 10, None),
            RetentionStanding::BelowLogStart { lost: 5 }
        );
        assert_eq!(
            standing(12, 10, Some(20)),
            RetentionStanding::InNextDeletion {
                new_start: 20,
                records: 8
            }
        );
        assert_eq!(standing(20, 10, Some(20)), RetentionStanding::Safe);
        assert_eq!(standing(10, 10, None), RetentionStanding::Safe);
    }

    fn compacted_facts(batches: &[(i64, i64, u64)]) -> PartitionFacts {
        use super::super::scan::{HorizonBatch, SegmentFacts};
        use strata_log::{Offset, Timestamp};
        let segment = SegmentFacts {
            base_offset: Offset(0),
            size: 1000,
            batches: batches.len() as u64,
            next_offset: Offset(100),
            first_batch_timestamp: None,
            max_timestamp: Timestamp(-1),
            mtime_ms: 0,
            offset_index: None,
            time_index: None,
            tombstones: batches.iter().map(|b| b.2).sum(),
            horizon_batches: batches
                .iter()
                .map(|&(base, horizon, tombstones)| HorizonBatch {
                    base_offset: Offset(base),
                    delete_horizon: Timestamp(horizon),
                    tombstones,
                })
                .collect(),
        };
        PartitionFacts {
            dir: std::path::PathBuf::from("/nowhere/t-0"),
            tp: TopicPartition::new("t", 0),
            segments: vec![segment],
            log_end_offset: Offset(100),
            log_start_offset: Offset(0),
            recovery_point: None,
            high_watermark: None,
            cleaner_offset: None,
            clean_shutdown_marker: true,
            free_bytes: None,
            deleted_files_bytes: 0,
        }
    }

    #[test]
    fn only_unread_tombstones_whose_horizon_passes_soon_count() {
        let now = 1_000_000;
        // (batch base, delete horizon, tombstones)
        let facts = compacted_facts(&[
            (10, now - 5, 2),
            (40, now + 1_000, 3),
            (70, now + 10_000_000, 4),
        ]);
        // At 0 the group has read none: the first two batches expire within the hour.
        assert_eq!(
            expiring_tombstones(&facts, 0, now, TOMBSTONE_SOON_MS),
            Some((5, now - 5))
        );
        // Past the first batch: only the second.
        assert_eq!(
            expiring_tombstones(&facts, 11, now, TOMBSTONE_SOON_MS),
            Some((3, now + 1_000))
        );
        // Past both: the third is far from its horizon.
        assert_eq!(
            expiring_tombstones(&facts, 41, now, TOMBSTONE_SOON_MS),
            None
        );

        let mut cfg = LogConfig::default();
        cfg.cleanup_policy.compact = true;
        cfg.cleanup_policy.delete = false;
        let groups = [
            GroupPosition {
                group: "behind".into(),
                committed: 5,
            },
            GroupPosition {
                group: "caught-up".into(),
                committed: 100,
            },
        ];
        let mut out = Vec::new();
        diagnose(
            &facts,
            &cfg,
            &DoctorSettings::default(),
            &groups,
            &LiveOffsets::default(),
            now,
            &mut out,
        );
        let named: Vec<_> = out
            .iter()
            .filter(|f| f.cause == Cause::GroupBehindExpiringTombstones)
            .map(|f| f.message.clone())
            .collect();
        assert_eq!(named.len(), 1, "{out:?}");
        assert!(
            named[0].contains("\"behind\"") && named[0].contains("5 tombstone(s)"),
            "{}",
            named[0]
        );
    }

    #[test]
    fn requests_decode_as_their_api() {
        let req = offset_fetch_all(GroupId(StrBytes::from_static_str("g")));
        let mut buf = BytesMut::new();
        req.encode(&mut buf, OFFSET_FETCH_VERSION).unwrap();
        let back = OffsetFetchRequest::decode(&mut buf.freeze(), OFFSET_FETCH_VERSION).unwrap();
        assert_eq!(back.group_id.0.as_str(), "g");
        assert!(back.topics.is_none(), "all partitions of the group");
    }
}
