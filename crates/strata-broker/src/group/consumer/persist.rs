//! A consumer group as `__consumer_offsets` records (types 3–8 and 16,
//! Kafka's `CoordinatorRecordHelpers`) and back: the records a change
//! writes, and [`Replay`], which rebuilds groups from them in log order
//! (Kafka `GroupMetadataManager.replay`).
//!
//! Replay is lenient where Kafka's is strict: a record that breaks Kafka's
//! ordering rules (an assignment for a member without metadata, say) is
//! applied as far as it makes sense and logged, instead of failing the
//! whole partition's load.

use std::collections::{BTreeMap, BTreeSet};

use super::assignment::{from_pairs, to_pairs, TopicPartitions};
use super::group::{ConsumerGroup, SubscribedTopic};
use super::member::{ClassicMember, ConsumerMember};
use super::reconcile::{CurrentAssignment, MemberState};
use crate::group::records::RecordError;
use crate::group::records_consumer::{
    ClassicMemberMetadata, ConsumerGroupKey, ConsumerGroupMetadataValue,
    CurrentMemberAssignmentValue, MemberMetadataValue, PartitionMetadataValue,
    RegularExpressionValue, TargetAssignmentMemberValue, TargetAssignmentMetadataValue,
    TopicMetadataEntry,
};
use crate::group::store::StoreRecord;

fn record(key: &ConsumerGroupKey, value: Option<Vec<u8>>) -> StoreRecord {
    StoreRecord {
        key: key.encode(),
        value,
    }
}

pub(crate) fn group_epoch(group_id: &str, epoch: i32) -> StoreRecord {
    record(
        &ConsumerGroupKey::Metadata {
            group_id: group_id.to_string(),
        },
        Some(ConsumerGroupMetadataValue { epoch }.encode()),
    )
}

pub(crate) fn subscription_metadata(
    group_id: &str,
    topics: &BTreeMap<String, SubscribedTopic>,
) -> StoreRecord {
    let value = PartitionMetadataValue {
        topics: topics
            .iter()
            .map(|(name, t)| TopicMetadataEntry {
                topic_id: t.id,
                topic_name: name.clone(),
                num_partitions: t.partitions,
                partition_racks: t
                    .racks
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| !r.is_empty())
                    .map(|(p, r)| {
                        (
                            i32::try_from(p).unwrap_or(i32::MAX),
                            r.iter().cloned().collect(),
                        )
                    })
                    .collect(),
            })
            .collect(),
    };
    record(
        &ConsumerGroupKey::PartitionMetadata {
            group_id: group_id.to_string(),
        },
        Some(value.encode()),
    )
}

pub(crate) fn member_metadata(group_id: &str, m: &ConsumerMember) -> StoreRecord {
    let value = MemberMetadataValue {
        instance_id: m.instance_id.clone(),
        rack_id: m.rack_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
        subscribed_topic_regex: m.subscribed_topic_regex.clone(),
        rebalance_timeout_ms: m.rebalance_timeout_ms,
        server_assignor: m.server_assignor.clone(),
        classic_member_metadata: m.classic.as_ref().map(|c| ClassicMemberMetadata {
            session_timeout_ms: c.session_timeout_ms,
            supported_protocols: c.protocols.clone(),
        }),
    };
    record(
        &ConsumerGroupKey::MemberMetadata {
            group_id: group_id.to_string(),
            member_id: m.member_id.clone(),
        },
        Some(value.encode()),
    )
}

pub(crate) fn member_metadata_tombstone(group_id: &str, member_id: &str) -> StoreRecord {
    record(
        &ConsumerGroupKey::MemberMetadata {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        },
        None,
    )
}

pub(crate) fn target_member(group_id: &str, member_id: &str, tp: &TopicPartitions) -> StoreRecord {
    record(
        &ConsumerGroupKey::TargetAssignmentMember {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        },
        Some(
            TargetAssignmentMemberValue {
                topic_partitions: to_pairs(tp),
            }
            .encode(),
        ),
    )
}

pub(crate) fn target_member_tombstone(group_id: &str, member_id: &str) -> StoreRecord {
    record(
        &ConsumerGroupKey::TargetAssignmentMember {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        },
        None,
    )
}

pub(crate) fn target_epoch(group_id: &str, epoch: i32) -> StoreRecord {
    record(
        &ConsumerGroupKey::TargetAssignmentMetadata {
            group_id: group_id.to_string(),
        },
        Some(
            TargetAssignmentMetadataValue {
                assignment_epoch: epoch,
            }
            .encode(),
        ),
    )
}

pub(crate) fn current_assignment(
    group_id: &str,
    member_id: &str,
    a: &CurrentAssignment,
) -> StoreRecord {
    record(
        &ConsumerGroupKey::CurrentMemberAssignment {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        },
        Some(
            CurrentMemberAssignmentValue {
                member_epoch: a.member_epoch,
                previous_member_epoch: a.previous_member_epoch,
                state: a.state.to_i8(),
                assigned_partitions: to_pairs(&a.assigned),
                partitions_pending_revocation: to_pairs(&a.pending_revocation),
            }
            .encode(),
        ),
    )
}

pub(crate) fn current_assignment_tombstone(group_id: &str, member_id: &str) -> StoreRecord {
    record(
        &ConsumerGroupKey::CurrentMemberAssignment {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        },
        None,
    )
}

pub(crate) fn regex_resolution(
    group_id: &str,
    regex: &str,
    topics: Option<&BTreeSet<String>>,
    version: i64,
    now: i64,
) -> StoreRecord {
    record(
        &ConsumerGroupKey::RegularExpression {
            group_id: group_id.to_string(),
            regex: regex.to_string(),
        },
        topics.map(|t| {
            RegularExpressionValue {
                topics: t.iter().cloned().collect(),
                version,
                timestamp: now,
            }
            .encode()
        }),
    )
}

/// The tombstones that delete `group` (Kafka's order: current
/// assignments, target members, target epoch, member metadata,
/// subscription metadata, regexes, group epoch).
pub(crate) fn delete_group(group_id: &str, group: &ConsumerGroup) -> Vec<StoreRecord> {
    let mut out = Vec::new();
    for id in group.members.keys() {
        out.push(current_assignment_tombstone(group_id, id));
    }
    for id in group.target.keys() {
        out.push(target_member_tombstone(group_id, id));
    }
    out.push(record(
        &ConsumerGroupKey::TargetAssignmentMetadata {
            group_id: group_id.to_string(),
        },
        None,
    ));
    for id in group.members.keys() {
        out.push(member_metadata_tombstone(group_id, id));
    }
    out.push(record(
        &ConsumerGroupKey::PartitionMetadata {
            group_id: group_id.to_string(),
        },
        None,
    ));
    for r in group.resolved_regex.keys() {
        out.push(regex_resolution(group_id, r, None, 0, 0));
    }
    out.push(record(
        &ConsumerGroupKey::Metadata {
            group_id: group_id.to_string(),
        },
        None,
    ));
    out
}

/// Rebuilds consumer groups from their records, in log order.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    pub groups: BTreeMap<String, ConsumerGroup>,
}

impl Replay {
    /// Apply one record (`value` `None`: tombstone).
    ///
    /// # Errors
    /// The value does not decode.
    pub(crate) fn apply(
        &mut self,
        key: ConsumerGroupKey,
        value: Option<&[u8]>,
    ) -> Result<(), RecordError> {
        match key {
            ConsumerGroupKey::Metadata { group_id } => match value {
                None => {
                    self.groups.remove(&group_id);
                }
                Some(v) => {
                    let v = ConsumerGroupMetadataValue::decode(v)?;
                    self.groups.entry(group_id).or_default().group_epoch = v.epoch;
                }
            },
            ConsumerGroupKey::PartitionMetadata { group_id } => {
                let topics = match value {
                    None => BTreeMap::new(),
                    Some(v) => PartitionMetadataValue::decode(v)?
                        .topics
                        .into_iter()
                        .map(|t| {
                            // Only as long as the racks listed (never sized by a count
                            // read from disk).
                            let listed = t
                                .partition_racks
                                .iter()
                                .filter(|(p, _)| (0..t.num_partitions).contains(p))
                                .map(|(p, _)| usize::try_from(*p).unwrap_or(0) + 1)
                                .max()
                                .unwrap_or(0);
                            let mut racks = vec![BTreeSet::new(); listed];
                            for (p, r) in t.partition_racks {
                                if let Some(slot) =
                                    usize::try_from(p).ok().and_then(|p| racks.get_mut(p))
                                {
                                    slot.extend(r);
                                }
                            }
                            (
                                t.topic_name,
                                SubscribedTopic {
                                    id: t.topic_id,
                                    partitions: t.num_partitions,
                                    racks,
                                },
                            )
                        })
                        .collect(),
                };
                if let Some(g) = self.groups.get_mut(&group_id) {
                    g.subscription_metadata = topics;
                }
            }
            ConsumerGroupKey::MemberMetadata {
                group_id,
                member_id,
            } => match value {
                None => {
                    if let Some(g) = self.groups.get_mut(&group_id) {
                        g.members.remove(&member_id);
                    }
                }
                Some(v) => {
                    let v = MemberMetadataValue::decode(v)?;
                    let g = self.groups.entry(group_id).or_default();
                    let m = g
                        .members
                        .entry(member_id.clone())
                        .or_insert_with(|| ConsumerMember::new(&member_id));
                    m.instance_id = v.instance_id;
                    m.rack_id = v.rack_id;
                    m.client_id = v.client_id;
                    m.client_host = v.client_host;
                    m.subscribed_topic_names = v.subscribed_topic_names.into_iter().collect();
                    m.subscribed_topic_regex = v.subscribed_topic_regex.filter(|r| !r.is_empty());
                    m.rebalance_timeout_ms = v.rebalance_timeout_ms;
                    m.server_assignor = v.server_assignor;
                    m.classic = v.classic_member_metadata.map(|c| ClassicMember {
                        session_timeout_ms: c.session_timeout_ms,
                        protocols: c.supported_protocols,
                    });
                }
            },
            ConsumerGroupKey::TargetAssignmentMember {
                group_id,
                member_id,
            } => {
                if let Some(g) = self.groups.get_mut(&group_id) {
                    match value {
                        None => {
                            g.target.remove(&member_id);
                        }
                        Some(v) => {
                            let v = TargetAssignmentMemberValue::decode(v)?;
                            g.target.insert(member_id, from_pairs(v.topic_partitions));
                        }
                    }
                }
            }
            ConsumerGroupKey::TargetAssignmentMetadata { group_id } => {
                if let Some(g) = self.groups.get_mut(&group_id) {
                    g.assignment_epoch = match value {
                        None => 0,
                        Some(v) => TargetAssignmentMetadataValue::decode(v)?.assignment_epoch,
                    };
                }
            }
            ConsumerGroupKey::CurrentMemberAssignment {
                group_id,
                member_id,
            } => {
                if let Some(m) = self
                    .groups
                    .get_mut(&group_id)
                    .and_then(|g| g.members.get_mut(&member_id))
                {
                    m.assignment = match value {
                        None => CurrentAssignment {
                            member_epoch: -1,
                            previous_member_epoch: -1,
                            ..CurrentAssignment::new_member()
                        },
                        Some(v) => {
                            let v = CurrentMemberAssignmentValue::decode(v)?;
                            CurrentAssignment {
                                member_epoch: v.member_epoch,
                                previous_member_epoch: v.previous_member_epoch,
                                state: MemberState::from_i8(v.state),
                                assigned: from_pairs(v.assigned_partitions),
                                pending_revocation: from_pairs(v.partitions_pending_revocation),
                            }
                        }
                    };
                }
            }
            ConsumerGroupKey::RegularExpression { group_id, regex } => {
                if let Some(g) = self.groups.get_mut(&group_id) {
                    match value {
                        None => {
                            g.resolved_regex.remove(&regex);
                        }
                        Some(v) => {
                            let v = RegularExpressionValue::decode(v)?;
                            g.resolved_regex
                                .insert(regex, v.topics.into_iter().collect());
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
