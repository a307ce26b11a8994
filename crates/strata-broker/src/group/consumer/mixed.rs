//! Classic members in a consumer group (Kafka's online migration, KIP-848
//! "upgrade"): a non-empty classic group becomes a consumer group when a
//! consumer-protocol member joins ([`upgrade_classic`]), and its classic
//! members go on with JoinGroup / SyncGroup / Heartbeat / LeaveGroup,
//! reconciled like any member:
//!
//! - JoinGroup: the member's subscription and owned partitions come from
//!   the embedded consumer protocol; it is answered at once with its member
//!   epoch as the generation and no leader (it syncs as a follower);
//! - SyncGroup: its usable partitions, as a consumer-protocol assignment;
//! - Heartbeat: REBALANCE_IN_PROGRESS when the group moved past its epoch,
//!   it still has partitions to revoke, or partitions it waited for were
//!   released — it rejoins to pick up the change;
//! - LeaveGroup: it is removed like a leaving member.
//!
//! The way back, when the last consumer-protocol member leaves, is
//! `downgrade`.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::assignment::TopicPartitions;
use super::embedded::{encode_assignment, parse_assignment, parse_subscription};
use super::group::ConsumerGroup;
use super::heartbeat::{new_member_id, remove_member, Step};
use super::image::TopicImage;
use super::member::{ClassicMember, ConsumerMember};
use super::persist;
use super::reconcile::{CurrentAssignment, MemberState};
use crate::group::api::{
    HeartbeatRequest, JoinRequest, JoinResult, LeaveMember, LeaveResult, SyncRequest, SyncResult,
};
use crate::group::classic::{Group, CONSUMER_PROTOCOL_TYPE};
use crate::group::manager::GroupManager;
use crate::group::records::GroupMetadataKey;
use crate::group::store::{OffsetsStore, StoreRecord};

type E = ResponseError;

/// Topic names and partitions as ids, dropping topics `image` does not have.
fn by_id(named: &[(String, Vec<i32>)], image: &TopicImage) -> TopicPartitions {
    let mut out = TopicPartitions::new();
    for (name, partitions) in named {
        if let Some(t) = image.get(name) {
            let set: &mut BTreeSet<i32> = out.entry(t.id).or_default();
            set.extend(
                partitions
                    .iter()
                    .copied()
                    .filter(|p| (0..t.partitions).contains(p)),
            );
        }
    }
    out.retain(|_, p| !p.is_empty());
    out
}

/// A member's partitions by topic name, from the group's subscription
/// metadata (partitions of topics it no longer has are left out).
pub(super) fn by_name(tp: &TopicPartitions, cg: &ConsumerGroup) -> Vec<(String, Vec<i32>)> {
    let names: BTreeMap<uuid::Uuid, &str> = cg
        .subscription_metadata
        .iter()
        .map(|(n, t)| (t.id, n.as_str()))
        .collect();
    tp.iter()
        .filter_map(|(id, ps)| Some(((*names.get(id)?).to_string(), ps.iter().copied().collect())))
        .collect()
}

fn classic_of(protocols: &[(String, Bytes)], session_timeout_ms: i32) -> ClassicMember {
    ClassicMember {
        session_timeout_ms,
        protocols: protocols.to_vec(),
    }
}

/// A Stable classic group of the consumer protocol type as a consumer group
/// (Kafka `ConsumerGroup.fromClassicGroup`): each member Stable at the
/// generation with its last assignment as current and target, the group
/// and target epochs at the generation. Returns the group and its records
/// (the classic record's tombstone first); `None` if a member's embedded
/// protocol does not parse.
pub(crate) fn upgrade_classic(
    g: &Group,
    image: &TopicImage,
    now: i64,
) -> Option<(ConsumerGroup, Vec<StoreRecord>)> {
    let protocol = g.protocol_name.clone()?;
    let generation = g.generation_id;
    let mut cg = ConsumerGroup {
        group_epoch: generation,
        assignment_epoch: generation,
        ..ConsumerGroup::default()
    };
    for m in g.members.values() {
        let sub = parse_subscription(m.metadata(&protocol)?)?;
        let assigned = by_id(&parse_assignment(&m.assignment)?, image);
        let protocols: Vec<(String, Bytes)> = m
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        let member = ConsumerMember {
            member_id: m.member_id.clone(),
            instance_id: m.group_instance_id.clone(),
            rack_id: sub.rack.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: sub.topics.iter().cloned().collect(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: None,
            assignment: CurrentAssignment {
                member_epoch: generation,
                previous_member_epoch: generation,
                state: MemberState::Stable,
                assigned: assigned.clone(),
                pending_revocation: TopicPartitions::new(),
            },
            session_deadline: Some(now + i64::from(m.session_timeout_ms)),
            rebalance_deadline: None,
            classic: Some(classic_of(&protocols, m.session_timeout_ms)),
        };
        cg.target.insert(m.member_id.clone(), assigned);
        cg.members.insert(m.member_id.clone(), member);
    }
    cg.subscription_metadata = cg.compute_subscription_metadata(image);
    cg.image_version = Some(image.version);
    let id = g.id.as_str();
    let mut records = vec![
        StoreRecord {
            key: GroupMetadataKey {
                group: id.to_string(),
            }
            .encode(),
            value: None,
        },
        persist::group_epoch(id, cg.group_epoch),
        persist::subscription_metadata(id, &cg.subscription_metadata),
    ];
    for m in cg.members.values() {
        records.push(persist::member_metadata(id, m));
        records.push(persist::target_member(
            id,
            &m.member_id,
            &m.assignment.assigned,
        ));
        records.push(persist::current_assignment(id, &m.member_id, &m.assignment));
    }
    records.push(persist::target_epoch(id, cg.assignment_epoch));
    Some((cg, records))
}

impl GroupManager {
    /// The consumer group `group_id` with members, if it is one.
    fn mixed_group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.groups
            .get(group_id)
            .and_then(|g| g.consumer.as_deref())
            .filter(|cg| !cg.members.is_empty())
    }

    /// JoinGroup of a classic member into a consumer group with members;
    /// `None` when the group is not one (the classic path serves it).
    pub(crate) fn classic_join_mixed(
        &mut self,
        req: &JoinRequest,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Option<JoinResult> {
        let cg = self.mixed_group(&req.group_id)?.clone();
        Some(
            self.try_classic_join(cg, req, now, store)
                .unwrap_or_else(|e| JoinResult::error(&req.member_id, e)),
        )
    }

    fn try_classic_join(
        &mut self,
        mut cg: ConsumerGroup,
        req: &JoinRequest,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Result<JoinResult, E> {
        if self.config.migration_policy == crate::group::config::MigrationPolicy::Disabled
            || req.protocol_type != CONSUMER_PROTOCOL_TYPE
        {
            return Err(E::InconsistentGroupProtocol);
        }
        let first = req.protocols.first().ok_or(E::InconsistentGroupProtocol)?;
        let sub = parse_subscription(&first.metadata).ok_or(E::InconsistentGroupProtocol)?;
        let member_id = if req.member_id.is_empty() {
            new_member_id()
        } else {
            req.member_id.clone()
        };
        let old = cg.members.get(&member_id).cloned();
        match &old {
            None if !req.member_id.is_empty() => return Err(E::UnknownMemberId),
            Some(m) if m.classic.is_none() => return Err(E::InconsistentGroupProtocol),
            None if cg.members.len() >= self.config.consumer_max_size => {
                return Err(E::GroupMaxSizeReached)
            }
            _ => {}
        }
        let image = self.image.clone();
        let protocols: Vec<(String, Bytes)> = req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        let mut member = old
            .clone()
            .unwrap_or_else(|| ConsumerMember::new(&member_id));
        member.instance_id.clone_from(&req.group_instance_id);
        member.rack_id = sub.rack.clone().or(member.rack_id);
        member.client_id.clone_from(&req.client_id);
        member.client_host.clone_from(&req.client_host);
        member.subscribed_topic_names = sub.topics.iter().cloned().collect();
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.classic = Some(classic_of(&protocols, req.session_timeout_ms));
        let owned = by_id(&sub.owned, &image);
        let group_id = req.group_id.clone();
        let mut records = Vec::new();
        let step = Step {
            group_id: &group_id,
            member_id: &member_id,
            old_member: old.as_ref(),
            replaced: false,
            new_group: false,
            owned: Some(&owned),
            image: &image,
            now,
        };
        let (current, next) = self
            .update_and_reconcile(&mut cg, member, &step, &mut records)
            .map_err(|(e, _)| e)?;
        let partition = self.partition_for(&group_id);
        store
            .append(partition, &records, now)
            .map_err(|e| e.group_error())?;
        self.apply_member(&mut cg, &group_id, &member_id, &current, &next, now);
        let protocol_name = req.protocols.first().map(|p| p.name.clone());
        if let Some(g) = self.groups.get_mut(&group_id) {
            g.consumer = Some(Box::new(cg));
        }
        Ok(JoinResult {
            error: None,
            member_id,
            generation_id: next.member_epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name,
            leader_id: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        })
    }

    /// The classic member `member_id` of a consumer group, checked against
    /// `generation`.
    fn classic_member(
        &self,
        group_id: &str,
        member_id: &str,
        generation: i32,
    ) -> Result<&ConsumerMember, E> {
        let cg = self.mixed_group(group_id).ok_or(E::UnknownMemberId)?;
        let m = cg
            .members
            .get(member_id)
            .filter(|m| m.classic.is_some())
            .ok_or(E::UnknownMemberId)?;
        if m.assignment.member_epoch != generation {
            return Err(E::IllegalGeneration);
        }
        Ok(m)
    }

    /// Whether the classic member must rejoin: the group moved past its
    /// epoch, it has partitions to revoke, or partitions it waits for are free.
    fn must_rejoin(cg: &ConsumerGroup, m: &ConsumerMember) -> bool {
        let a = &m.assignment;
        a.member_epoch < cg.group_epoch
            || a.state == MemberState::UnrevokedPartitions
            || (a.state == MemberState::UnreleasedPartitions
                && cg.target.get(&m.member_id).is_some_and(|target| {
                    target.iter().any(|(t, ps)| {
                        ps.iter().any(|p| {
                            !a.assigned.get(t).is_some_and(|x| x.contains(p))
                                && !cg.owned_by_other(&m.member_id, *t, *p)
                        })
                    })
                }))
    }

    fn touch_session(&mut self, group_id: &str, member_id: &str, now: i64) {
        let default = self.config.consumer_session_timeout_ms;
        if let Some(m) = self
            .groups
            .get_mut(group_id)
            .and_then(|g| g.consumer.as_deref_mut())
            .and_then(|cg| cg.members.get_mut(member_id))
        {
            m.session_deadline = Some(now + i64::from(m.session_timeout_ms(default)));
        }
    }

    /// SyncGroup of a classic member of a consumer group; `None` when the
    /// group is not one.
    pub(crate) fn classic_sync_mixed(&mut self, req: &SyncRequest, now: i64) -> Option<SyncResult> {
        let cg = self.mixed_group(&req.group_id)?;
        let result = match self.classic_member(&req.group_id, &req.member_id, req.generation_id) {
            Err(e) => SyncResult::error(e),
            Ok(m) => {
                let name = m.classic.as_ref().map(|c| c.protocol_name().to_string());
                if req
                    .protocol_type
                    .as_deref()
                    .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
                    || req.protocol_name.is_some() && req.protocol_name != name
                {
                    SyncResult::error(E::InconsistentGroupProtocol)
                } else if Self::must_rejoin(cg, m) {
                    SyncResult::error(E::RebalanceInProgress)
                } else {
                    SyncResult {
                        error: None,
                        protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
                        protocol_name: name,
                        assignment: Bytes::from(encode_assignment(&by_name(
                            &m.assignment.assigned,
                            cg,
                        ))),
                    }
                }
            }
        };
        if result.error.is_none() {
            self.touch_session(&req.group_id, &req.member_id, now);
        }
        Some(result)
    }

    /// Heartbeat of a classic member of a consumer group; `None` when the
    /// group is not one.
    pub(crate) fn classic_heartbeat_mixed(
        &mut self,
        req: &HeartbeatRequest,
        now: i64,
    ) -> Option<Option<E>> {
        let cg = self.mixed_group(&req.group_id)?;
        let outcome = match self.classic_member(&req.group_id, &req.member_id, req.generation_id) {
            Err(e) => Some(e),
            Ok(m) => Self::must_rejoin(cg, m).then_some(E::RebalanceInProgress),
        };
        if outcome != Some(E::UnknownMemberId) && outcome != Some(E::IllegalGeneration) {
            self.touch_session(&req.group_id, &req.member_id, now);
        }
        Some(outcome)
    }

    /// LeaveGroup for members of a consumer group; `None` when the group is
    /// not one with members.
    pub(crate) fn classic_leave_mixed(
        &mut self,
        group_id: &str,
        members: &[LeaveMember],
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Option<LeaveResult> {
        let mut cg = self.mixed_group(group_id)?.clone();
        let mut records = Vec::new();
        let mut out = Vec::new();
        for lm in members {
            let id = match lm.group_instance_id.as_deref() {
                Some(instance) => match cg.static_member(instance) {
                    Some(owner) if lm.member_id.is_empty() || owner == lm.member_id => {
                        Some(owner.to_string())
                    }
                    Some(_) => {
                        out.push((lm.clone(), Some(E::FencedInstanceId)));
                        continue;
                    }
                    None => None,
                },
                None => cg
                    .members
                    .contains_key(&lm.member_id)
                    .then(|| lm.member_id.clone()),
            };
            match id {
                Some(id) => {
                    records.extend(remove_member(&mut cg, group_id, &id));
                    out.push((lm.clone(), None));
                }
                None => out.push((lm.clone(), Some(E::UnknownMemberId))),
            }
        }
        if !records.is_empty() {
            let partition = self.partition_for(group_id);
            if let Err(e) = store.append(partition, &records, now) {
                return Some(LeaveResult {
                    error: Some(e.group_error()),
                    members: Vec::new(),
                });
            }
        }
        if let Some(g) = self.groups.get_mut(group_id) {
            g.consumer = Some(Box::new(cg));
        }
        Some(LeaveResult {
            error: None,
            members: out,
        })
    }
}
