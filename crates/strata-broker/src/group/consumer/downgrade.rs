//! A consumer group back to a classic group (Kafka's online downgrade,
//! `GroupMetadataManager.convertToClassicGroup`): when the last member that
//! speaks the consumer protocol leaves (epoch -1) or is fenced, and every
//! member left is a classic one, the group becomes a classic group again so
//! that those members rebalance among themselves the classic way.
//!
//! The conversion is one write: the consumer group's tombstones, then the
//! classic group's metadata record (a Stable group at the group epoch, each
//! member holding its target assignment). Once stored, the classic group
//! replaces the consumer group under the same id — committed and pending
//! transactional offsets stay — and a rebalance starts at once, because the
//! leaving member's partitions have no owner.
//!
//! Left out, as in the docs: Kafka also downgrades when a classic static
//! member replaces the last consumer-protocol member; Strata keeps that
//! group a consumer group, which serves classic members all the same.

use std::collections::HashMap;

use bytes::Bytes;

use super::embedded::encode_assignment;
use super::group::ConsumerGroup;
use super::mixed::by_name;
use super::persist;
use crate::group::classic::{Group, GroupState, CONSUMER_PROTOCOL_TYPE};
use crate::group::config::GroupConfig;
use crate::group::manager::GroupManager;
use crate::group::member::{Member, Protocol};
use crate::group::records::GroupMetadataKey;
use crate::group::store::{OffsetsStore, StoreRecord};

/// Kafka `validateOnlineDowngradeWithFencedMember`: `leaving` is the one
/// member not speaking the classic protocol, others remain, the policy
/// allows a downgrade and the rest fit in a classic group
/// (`group.max.size`).
pub(crate) fn may_downgrade(cg: &ConsumerGroup, leaving: &str, config: &GroupConfig) -> bool {
    let Some(m) = cg.members.get(leaving) else {
        return false;
    };
    let others_classic = cg
        .members
        .values()
        .filter(|o| o.member_id != leaving)
        .all(|o| o.classic.is_some());
    m.classic.is_none()
        && others_classic
        && cg.members.len() > 1
        && config.migration_policy.allows_downgrade()
        && cg.members.len() - 1 <= config.max_size
}

/// Kafka `ClassicGroup.fromConsumerGroup` without `leaving`: a Stable
/// classic group of the consumer protocol type at the group epoch, each
/// member with the protocols it joined with, its session timeout re-armed
/// and its target assignment as its assignment. Returns the group and the
/// records of the conversion (the consumer group's tombstones, then the
/// classic metadata record).
pub(crate) fn to_classic(
    cg: &ConsumerGroup,
    group_id: &str,
    leaving: &str,
    now: i64,
) -> (Group, Vec<StoreRecord>) {
    let mut g = Group::new(group_id, GroupState::Stable, now);
    g.generation_id = cg.group_epoch;
    for m in cg.members.values().filter(|m| m.member_id != leaving) {
        let Some(classic) = &m.classic else {
            continue;
        };
        g.add(Member {
            member_id: m.member_id.clone(),
            group_instance_id: m.instance_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            session_timeout_ms: classic.session_timeout_ms,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            protocols: classic
                .protocols
                .iter()
                .map(|(name, metadata)| Protocol {
                    name: name.clone(),
                    metadata: metadata.clone(),
                })
                .collect(),
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            heartbeat_deadline: Some(now + i64::from(classic.session_timeout_ms)),
        });
    }
    g.protocol_name = g.select_protocol();
    g.subscribed_topics = g.compute_subscribed_topics();
    let assignments: HashMap<String, Bytes> = g
        .members
        .keys()
        .map(|id| {
            let target = cg.target.get(id).cloned().unwrap_or_default();
            (
                id.clone(),
                Bytes::from(encode_assignment(&by_name(&target, cg))),
            )
        })
        .collect();
    for (id, a) in &assignments {
        if let Some(m) = g.members.get_mut(id) {
            m.assignment = a.clone();
        }
    }
    let mut records = persist::delete_group(group_id, cg);
    records.push(StoreRecord {
        key: GroupMetadataKey {
            group: group_id.to_string(),
        }
        .encode(),
        value: Some(g.metadata_value(&assignments).encode()),
    });
    (g, records)
}

impl GroupManager {
    /// After the conversion's records are stored: `classic` takes the
    /// consumer group's place (keeping its offsets) and rebalances, so its
    /// members rejoin and share the partitions the leaver held.
    pub(crate) fn finish_downgrade(
        &mut self,
        mut classic: Group,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) {
        let id = classic.id.clone();
        if let Some(old) = self.groups.remove(&id) {
            classic.offsets = old.offsets;
            classic.pending_txn = old.pending_txn;
        }
        tracing::info!(group = %id, members = classic.members.len(), generation = classic.generation_id, "consumer group downgraded to a classic group");
        self.groups.insert(id.clone(), classic);
        self.with_group(&id, now, store, |ops| ops.maybe_prepare_rebalance());
    }
}
