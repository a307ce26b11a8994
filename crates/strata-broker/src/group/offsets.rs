//! Committed offsets and the admin side of groups: OffsetCommit,
//! OffsetFetch, OffsetDelete, DeleteGroups, ListGroups, DescribeGroups,
//! offset retention, and rebuilding groups from `__consumer_offsets`.
//!
//! Transactional offset commits (TxnOffsetCommit) are written like commits
//! but kept per producer in `Group::pending_txn` until the transaction's
//! marker reaches the group's partition ([`GroupManager::complete_txn`]);
//! meanwhile OffsetFetch with `require_stable` answers UNSTABLE_OFFSET_COMMIT.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kafka_protocol::error::ResponseError;

use super::api::{CommitRequest, FetchedOffset, GroupOverview, GroupSummary, MemberSummary};
use super::classic::{CommittedOffset, Group, GroupState, CONSUMER_PROTOCOL_TYPE};
use super::consumer::assignment::contains;
use super::manager::{GroupIdRule, GroupManager};
use super::records::{
    decode_key, GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue, RecordKey,
};
use super::store::{OffsetsStore, StoreRecord};

type E = ResponseError;

/// (topic, partition) of a committed offset.
type PartitionKey = (String, i32);

/// The timestamp an offset's age counts from.
type AgeBase = Box<dyn Fn(&CommittedOffset) -> i64>;

/// One record read back from `__consumer_offsets` while loading.
#[derive(Clone, Debug)]
pub(crate) struct LoadedRecord {
    /// Offset of the first record of the batch holding this record.
    pub batch_base_offset: i64,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
    /// The producer of a transactional batch's record (TxnOffsetCommit).
    pub txn_producer: Option<i64>,
    /// A COMMIT (`true`) or ABORT marker of `txn_producer` (key and value
    /// are then empty).
    pub marker: Option<bool>,
}

impl GroupManager {
    /// OffsetCommit: one error per requested partition, in request order.
    pub(crate) fn commit_offsets(
        &mut self,
        req: &CommitRequest,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Vec<Option<ResponseError>> {
        let all = |e: ResponseError| vec![Some(e); req.partitions.len()];
        if let Some(e) = self.validate(&req.group_id, GroupIdRule::AllowEmpty) {
            return all(e);
        }
        if self.group(&req.group_id).is_none() {
            if req.generation_id >= 0 {
                // A commit from an older generation of a group that is gone.
                return all(E::IllegalGeneration);
            }
            tracing::info!(group = %req.group_id, "creating simple consumer group via offset commit");
            self.get_or_create(&req.group_id, now);
        }
        let max_meta = self.config.offset_metadata_max_bytes;
        let retention = req.retention_time_ms;
        self.with_group(&req.group_id, now, store, |ops| {
            let g = &*ops.group;
            let instance = req.group_instance_id.as_deref();
            let validation = if let Some(cg) = g.consumer.as_deref() {
                // KIP-848 (Kafka `ConsumerGroup.validateOffsetCommit`): the
                // generation is the member epoch; commits are accepted in
                // any member state.
                if req.generation_id < 0 && req.member_id.is_empty() && cg.members.is_empty() {
                    None
                } else {
                    match cg.members.get(&req.member_id) {
                        None => Some(E::UnknownMemberId),
                        Some(m) if req.generation_id != m.assignment.member_epoch => {
                            // A commit sent before the member learned its new
                            // epoch, for partitions it still owns, is not a
                            // zombie's: accepted (Kafka 3.9 refuses it and the
                            // Java client's commitSync then fails).
                            let owns = |p: &super::api::CommitPartition| {
                                cg.subscription_metadata.get(&p.topic).is_some_and(|t| {
                                    contains(&m.assignment.assigned, t.id, p.partition)
                                        || contains(&m.assignment.pending_revocation, t.id, p.partition)
                                })
                            };
                            let previous = req.generation_id == m.assignment.previous_member_epoch
                                && req.generation_id >= 0;
                            (!(previous && req.partitions.iter().all(owns)))
                                .then_some(E::StaleMemberEpoch)
                        }
                        Some(_) => None,
                    }
                }
            } else if g.is(GroupState::Dead) {
                Some(E::CoordinatorNotAvailable)
            } else if req.generation_id < 0 && g.is(GroupState::Empty) {
                // Admin tools and assign()-consumers commit outside group management.
                None
            } else if req.generation_id >= 0 || !req.member_id.is_empty() || instance.is_some() {
                let member_error = match instance.map(|i| g.static_member_id(i)) {
                    Some(Some(current)) if current != req.member_id => Some(E::FencedInstanceId),
                    Some(None) => Some(E::UnknownMemberId),
                    _ => (!g.has(&req.member_id)).then_some(E::UnknownMemberId),
                };
                member_error.or((req.generation_id != g.generation_id).then_some(E::IllegalGeneration))
            } else if !g.is(GroupState::Empty) {
                Some(E::UnknownMemberId)
            } else {
                None
            };
            if let Some(e) = validation {
                return all(e);
            }
            match ops.group.state() {
                GroupState::CompletingRebalance => return all(E::RebalanceInProgress),
                GroupState::Stable | GroupState::PreparingRebalance => {
                    let member = req.member_id.clone();
                    ops.schedule_heartbeat(&member);
                }
                GroupState::Empty | GroupState::Dead => {}
            }
            let mut records = Vec::new();
            let mut staged = Vec::new();
            for p in &req.partitions {
                let metadata = p.metadata.clone().unwrap_or_default();
                if metadata.len() > max_meta {
                    continue;
                }
                let committed = CommittedOffset {
                    offset: p.offset,
                    leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                    metadata,
                    commit_timestamp: if p.commit_timestamp < 0 { ops.now } else { p.commit_timestamp },
                    expire_timestamp: (retention >= 0).then_some(ops.now.saturating_add(retention)),
                    record_offset: -1,
                };
                records.push(StoreRecord {
                    key: OffsetCommitKey {
                        group: req.group_id.clone(),
                        topic: p.topic.clone(),
                        partition: p.partition,
                    }
                    .encode(),
                    value: Some(commit_value(&committed).encode()),
                });
                staged.push(((p.topic.clone(), p.partition), committed));
            }
            let write_error = if records.is_empty() {
                None
            } else {
                let written = match req.txn {
                    None => ops.store.append(ops.partition, &records, ops.now),
                    Some(producer) => ops.store.append_txn(ops.partition, &records, producer, ops.now),
                };
                match written {
                    Ok(base) => {
                        for (i, (tp, mut c)) in staged.into_iter().enumerate() {
                            c.record_offset = base + i as i64;
                            match req.txn {
                                None => {
                                    ops.group.offsets.insert(tp, c);
                                }
                                Some((pid, _)) => {
                                    ops.group.pending_txn.entry(pid).or_default().insert(tp, c);
                                }
                            }
                        }
                        None
                    }
                    Err(e) => {
                        tracing::warn!(group = %req.group_id, error = %strata_log::ErrorChain(&e), "offset commit write failed");
                        Some(e.commit_error())
                    }
                }
            };
            req.partitions
                .iter()
                .map(|p| {
                    if p.metadata.as_ref().is_some_and(|m| m.len() > max_meta) {
                        Some(E::OffsetMetadataTooLarge)
                    } else {
                        write_error
                    }
                })
                .collect()
        })
        .expect("group created above")
    }

    /// OffsetFetch for one group: `partitions` `None` = every committed one.
    ///
    /// # Errors
    /// The group-level error (coordinator unavailable or loading).
    pub(crate) fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<&[(String, i32)]>,
        require_stable: bool,
    ) -> Result<Vec<FetchedOffset>, ResponseError> {
        if let Some(e) = self.validate(group_id, GroupIdRule::AllowEmpty) {
            return Err(e);
        }
        let group = self.group(group_id).filter(|g| !g.is(GroupState::Dead));
        let wanted: Vec<(String, i32)> = match (partitions, group) {
            (Some(p), _) => p.to_vec(),
            (None, Some(g)) => g.offsets.keys().cloned().collect(),
            (None, None) => Vec::new(),
        };
        Ok(wanted
            .into_iter()
            .map(|(topic, partition)| {
                let key = (topic.clone(), partition);
                let c = group.and_then(|g| g.offsets.get(&key));
                // KIP-447: a read_committed consumer waits for pending commits.
                let unstable = require_stable
                    && group.is_some_and(|g| g.pending_txn.values().any(|p| p.contains_key(&key)));
                if unstable {
                    return FetchedOffset {
                        offset: -1,
                        leader_epoch: -1,
                        metadata: String::new(),
                        error: Some(E::UnstableOffsetCommit),
                        topic,
                        partition,
                    };
                }
                FetchedOffset {
                    offset: c.map_or(-1, |c| c.offset),
                    leader_epoch: c.and_then(|c| c.leader_epoch).unwrap_or(-1),
                    metadata: c.map(|c| c.metadata.clone()).unwrap_or_default(),
                    error: None,
                    topic,
                    partition,
                }
            })
            .collect())
    }

    /// OffsetDelete: a group error, or one error per partition.
    pub(crate) fn delete_offsets(
        &mut self,
        group_id: &str,
        partitions: &[(String, i32)],
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Result<Vec<Option<ResponseError>>, ResponseError> {
        if let Some(e) = self.validate(group_id, GroupIdRule::AllowEmpty) {
            return Err(e);
        }
        let Some(group) = self
            .groups
            .get_mut(group_id)
            .filter(|g| !g.is(GroupState::Dead))
        else {
            return Err(E::GroupIdNotFound);
        };
        let consumer = group.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
            || group.consumer.is_some();
        let members = group
            .consumer
            .as_deref()
            .is_some_and(|cg| !cg.members.is_empty());
        let errors: Vec<Option<ResponseError>> = match group.state() {
            GroupState::Empty if !members => vec![None; partitions.len()],
            _ if consumer => partitions
                .iter()
                .map(|(t, _)| {
                    group
                        .is_subscribed_to(t)
                        .then_some(E::GroupSubscribedToTopic)
                })
                .collect(),
            _ => return Err(E::NonEmptyGroup),
        };
        let eligible: Vec<(String, i32)> = partitions
            .iter()
            .zip(&errors)
            .filter(|(_, e)| e.is_none())
            .map(|(tp, _)| tp.clone())
            .collect();
        if !eligible.is_empty() {
            self.cleanup_groups(&[group_id.to_string()], now, store, |g| {
                eligible
                    .iter()
                    .filter(|tp| g.offsets.remove(*tp).is_some())
                    .cloned()
                    .collect()
            });
        }
        Ok(errors)
    }

    /// DeleteGroups: one error per group id, in request order.
    pub(crate) fn delete_groups(
        &mut self,
        group_ids: &[String],
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Vec<Option<ResponseError>> {
        let mut eligible = Vec::new();
        let errors = group_ids
            .iter()
            .map(|id| {
                if let Some(e) = self.validate(id, GroupIdRule::AllowEmpty) {
                    return Some(e);
                }
                match self.groups.get_mut(id) {
                    None => Some(E::GroupIdNotFound),
                    Some(g)
                        if g.consumer
                            .as_deref()
                            .is_some_and(|cg| !cg.members.is_empty()) =>
                    {
                        Some(E::NonEmptyGroup)
                    }
                    Some(g) => match g.state() {
                        GroupState::Dead => Some(E::GroupIdNotFound),
                        GroupState::Empty => {
                            g.transition_to(GroupState::Dead, now);
                            eligible.push(id.clone());
                            None
                        }
                        _ => Some(E::NonEmptyGroup),
                    },
                }
            })
            .collect();
        self.cleanup_groups(&eligible, now, store, |g| {
            std::mem::take(&mut g.offsets).into_keys().collect()
        });
        errors
    }

    /// Expire offsets past `offsets.retention.minutes` (Kafka
    /// `removeExpiredOffsets`); returns how many were removed.
    pub(crate) fn expire_offsets(&mut self, now: i64, store: &mut dyn OffsetsStore) -> usize {
        let retention = self.config.offsets_retention_ms;
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        self.cleanup_groups(&ids, now, store, |g| expired_offsets(g, now, retention))
    }

    /// Kafka `cleanupGroupMetadata`: remove offsets chosen by `select`, let
    /// empty groups without offsets die, and write the tombstones.
    fn cleanup_groups(
        &mut self,
        ids: &[String],
        now: i64,
        store: &mut dyn OffsetsStore,
        mut select: impl FnMut(&mut Group) -> Vec<(String, i32)>,
    ) -> usize {
        let mut removed_total = 0;
        for id in ids {
            let partition = self.partition_for(id);
            let Some(group) = self.groups.get_mut(id) else {
                continue;
            };
            let removed = select(group);
            let members = group
                .consumer
                .as_deref()
                .is_some_and(|cg| !cg.members.is_empty());
            if group.is(GroupState::Empty) && group.offsets.is_empty() && !members {
                group.transition_to(GroupState::Dead, now);
            }
            let mut tombstones: Vec<StoreRecord> = removed
                .iter()
                .map(|(topic, p)| StoreRecord {
                    key: OffsetCommitKey {
                        group: id.clone(),
                        topic: topic.clone(),
                        partition: *p,
                    }
                    .encode(),
                    value: None,
                })
                .collect();
            if group.is(GroupState::Dead) {
                let generation = group.generation_id;
                if let Some(cg) = group.consumer.as_deref() {
                    tombstones.extend(super::consumer::persist::delete_group(id, cg));
                }
                self.groups.remove(id);
                // Groups that only ever stored offsets have no metadata record.
                if generation > 0 {
                    tombstones.push(StoreRecord {
                        key: GroupMetadataKey { group: id.clone() }.encode(),
                        value: None,
                    });
                }
            }
            if tombstones.is_empty() {
                continue;
            }
            // Like Kafka, a lost tombstone is retried by the next cleanup.
            match store.append(partition, &tombstones, now) {
                Ok(_) => removed_total += removed.len(),
                Err(error) => {
                    tracing::warn!(group = %id, error = %strata_log::ErrorChain(&error), "writing tombstones failed")
                }
            }
        }
        removed_total
    }

    /// ListGroups, optionally filtered by state names (case-insensitive).
    ///
    /// The error is COORDINATOR_LOAD_IN_PROGRESS while loading (with the
    /// groups known so far), COORDINATOR_NOT_AVAILABLE when inactive.
    pub(crate) fn list_groups(
        &self,
        states: &[String],
        types: &[String],
    ) -> (Option<ResponseError>, Vec<GroupOverview>) {
        if !self.is_active() {
            return (Some(E::CoordinatorNotAvailable), Vec::new());
        }
        let error = self
            .is_loading_any()
            .then_some(E::CoordinatorLoadInProgress);
        let wanted: BTreeSet<String> = states.iter().map(|s| s.to_lowercase()).collect();
        let wanted_types: BTreeSet<String> = types.iter().map(|s| s.to_lowercase()).collect();
        let mut out: Vec<GroupOverview> = self
            .groups
            .values()
            .map(|g| match g.consumer.as_deref() {
                Some(cg) => GroupOverview {
                    group_id: g.id.clone(),
                    protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                    state: cg.state().name(),
                    group_type: "consumer",
                },
                None => GroupOverview {
                    group_id: g.id.clone(),
                    protocol_type: g.protocol_type.clone().unwrap_or_default(),
                    state: g.state().name(),
                    group_type: "classic",
                },
            })
            .filter(|o| wanted.is_empty() || wanted.contains(&o.state.to_lowercase()))
            .filter(|o| wanted_types.is_empty() || wanted_types.contains(o.group_type))
            .collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        (error, out)
    }

    /// DescribeGroups for one group (Kafka `GroupSummary`).
    pub(crate) fn describe_group(&self, group_id: &str) -> GroupSummary {
        if let Some(e) = self.validate(group_id, GroupIdRule::AllowEmpty) {
            return GroupSummary {
                error: Some(e),
                state: "",
                protocol_type: String::new(),
                protocol: String::new(),
                members: Vec::new(),
            };
        }
        // Kafka 3.9: a consumer group is not a classic group, so the classic
        // API describes it as Dead (ConsumerGroupDescribe describes it).
        let Some(g) = self.group(group_id).filter(|g| g.consumer.is_none()) else {
            return GroupSummary {
                error: None,
                state: GroupState::Dead.name(),
                protocol_type: String::new(),
                protocol: String::new(),
                members: Vec::new(),
            };
        };
        let stable = g.is(GroupState::Stable);
        let protocol = if stable {
            g.protocol_name.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let members = g
            .members
            .values()
            .map(|m| MemberSummary {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata(&protocol).cloned().unwrap_or_default()
                } else {
                    Default::default()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Default::default()
                },
            })
            .collect();
        GroupSummary {
            error: None,
            state: g.state().name(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol,
            members,
        }
    }

    /// A COMMIT (`commit`) or ABORT marker of `producer_id` was written to
    /// `partition`: its pending transactional offsets in the groups of that
    /// partition become committed (unless a later commit replaced them) or
    /// are dropped. Returns how many offsets became visible.
    pub(crate) fn complete_txn(&mut self, partition: i32, producer_id: i64, commit: bool) -> usize {
        let n = self.config.offsets_topic_num_partitions;
        let mut visible = 0;
        for (name, g) in self.groups.iter_mut() {
            if super::partition_for(name, n) != partition {
                continue;
            }
            let Some(commits) = g.pending_txn.remove(&producer_id) else {
                continue;
            };
            if !commit {
                continue;
            }
            for (tp, c) in commits {
                if g.offsets
                    .get(&tp)
                    .is_none_or(|o| o.record_offset < c.record_offset)
                {
                    g.offsets.insert(tp, c);
                    visible += 1;
                }
            }
        }
        visible
    }

    /// Rebuild the groups of one `__consumer_offsets` partition from its
    /// records in log order (Kafka `doLoadGroupsAndOffsets`): the latest
    /// record per key wins, tombstones delete. Returns (groups, offsets) loaded.
    pub(crate) fn load_partition(
        &mut self,
        partition: i32,
        records: impl IntoIterator<Item = LoadedRecord>,
        now: i64,
    ) -> (usize, usize) {
        let mut offsets: HashMap<OffsetCommitKey, CommittedOffset> = HashMap::new();
        let mut groups: HashMap<String, GroupMetadataValue> = HashMap::new();
        let mut pending: HashMap<i64, HashMap<OffsetCommitKey, CommittedOffset>> = HashMap::new();
        let mut consumer = super::consumer::persist::Replay::default();
        for r in records {
            if let (Some(pid), Some(commit)) = (r.txn_producer, r.marker) {
                // Kafka: a COMMIT makes the producer's pending offsets
                // committed unless a later record already replaced them.
                for (k, c) in pending.remove(&pid).unwrap_or_default() {
                    if commit
                        && offsets
                            .get(&k)
                            .is_none_or(|o| o.record_offset < c.record_offset)
                    {
                        offsets.insert(k, c);
                    }
                }
                continue;
            }
            let key = match decode_key(&r.key) {
                Ok(k) => k,
                Err(error) => {
                    tracing::warn!(partition, %error, "skipping undecodable __consumer_offsets key");
                    continue;
                }
            };
            match key {
                RecordKey::OffsetCommit(k) => {
                    match r.value.as_deref().map(OffsetCommitValue::decode) {
                        None => {
                            offsets.remove(&k);
                        }
                        Some(Ok(v)) => {
                            let c = committed_from(&v, r.batch_base_offset);
                            match r.txn_producer {
                                Some(pid) => {
                                    pending.entry(pid).or_default().insert(k, c);
                                }
                                None => {
                                    offsets.insert(k, c);
                                }
                            }
                        }
                        Some(Err(error)) => {
                            tracing::warn!(partition, %error, "skipping offset commit value")
                        }
                    }
                }
                RecordKey::GroupMetadata(k) => {
                    match r.value.as_deref().map(GroupMetadataValue::decode) {
                        None => {
                            groups.remove(&k.group);
                        }
                        Some(Ok(v)) => {
                            groups.insert(k.group, v);
                        }
                        Some(Err(error)) => {
                            tracing::warn!(partition, %error, "skipping group metadata value")
                        }
                    }
                }
                RecordKey::ConsumerGroup(k) => {
                    // A classic group and a consumer group of the same id
                    // replace each other (Kafka's conversions write a
                    // tombstone for the other kind first).
                    if let Err(error) = consumer.apply(k, r.value.as_deref()) {
                        tracing::warn!(partition, %error, "skipping consumer group record value")
                    }
                }
                RecordKey::Unknown { version } => {
                    tracing::warn!(
                        partition,
                        version,
                        "ignoring unknown __consumer_offsets record type"
                    )
                }
            }
        }
        let mut by_group: BTreeMap<String, Vec<(PartitionKey, CommittedOffset)>> = BTreeMap::new();
        let offsets_count = offsets.len();
        for (k, v) in offsets {
            by_group
                .entry(k.group)
                .or_default()
                .push(((k.topic, k.partition), v));
        }
        let mut pending_by_group: BTreeMap<String, Vec<(i64, PartitionKey, CommittedOffset)>> =
            BTreeMap::new();
        for (pid, commits) in pending {
            for (k, c) in commits {
                pending_by_group
                    .entry(k.group)
                    .or_default()
                    .push((pid, (k.topic, k.partition), c));
            }
        }
        let mut loaded = 0;
        let mut names: BTreeSet<String> = groups.keys().cloned().collect();
        names.extend(consumer.groups.keys().cloned());
        names.extend(by_group.keys().cloned());
        names.extend(pending_by_group.keys().cloned());
        for name in names {
            let mut group = match groups.remove(&name) {
                Some(v) => Group::from_metadata(&name, v, now),
                None => Group::new(&name, GroupState::Empty, now),
            };
            group.offsets = by_group
                .remove(&name)
                .unwrap_or_default()
                .into_iter()
                .collect();
            for (pid, tp, c) in pending_by_group.remove(&name).unwrap_or_default() {
                group.pending_txn.entry(pid).or_default().insert(tp, c);
            }
            // Kafka `onGroupLoaded`: members must heartbeat within their session.
            for m in group.members.values_mut() {
                m.heartbeat_deadline = Some(now + i64::from(m.session_timeout_ms));
            }
            if let Some(mut cg) = consumer.groups.remove(&name) {
                let session = self.config.consumer_session_timeout_ms;
                for m in cg.members.values_mut() {
                    m.session_deadline = Some(now + i64::from(m.session_timeout_ms(session)));
                    if m.assignment.state
                        == super::consumer::reconcile::MemberState::UnrevokedPartitions
                    {
                        m.rebalance_deadline = Some((
                            now + i64::from(m.rebalance_timeout_ms.max(0)),
                            m.assignment.member_epoch,
                        ));
                    }
                }
                group.consumer = Some(Box::new(cg));
            }
            debug_assert_eq!(self.partition_for(&name), partition);
            self.groups.insert(name, group);
            loaded += 1;
        }
        (loaded, offsets_count)
    }
}

fn commit_value(c: &CommittedOffset) -> OffsetCommitValue {
    OffsetCommitValue {
        offset: c.offset,
        leader_epoch: c.leader_epoch.unwrap_or(-1),
        metadata: c.metadata.clone(),
        commit_timestamp: c.commit_timestamp,
        expire_timestamp: c.expire_timestamp.unwrap_or(-1),
    }
}

fn committed_from(v: &OffsetCommitValue, batch_base_offset: i64) -> CommittedOffset {
    CommittedOffset {
        offset: v.offset,
        leader_epoch: (v.leader_epoch != -1).then_some(v.leader_epoch),
        metadata: v.metadata.clone(),
        commit_timestamp: v.commit_timestamp,
        expire_timestamp: (v.expire_timestamp != -1).then_some(v.expire_timestamp),
        record_offset: batch_base_offset,
    }
}

/// Which offsets of `g` have expired at `now` (and removes them).
fn expired_offsets(g: &mut Group, now: i64, retention_ms: i64) -> Vec<(String, i32)> {
    // The base timestamp an offset's age counts from, per Kafka's rules.
    let consumer_topics = g.consumer.as_deref().map(|cg| {
        cg.members
            .values()
            .flat_map(|m| cg.member_topics(m))
            .collect::<BTreeSet<String>>()
    });
    let (subscribed, base): (BTreeSet<String>, AgeBase) = match (&g.protocol_type, g.state()) {
        // KIP-848 groups: the commit time counts; topics a member still
        // subscribes to never expire.
        _ if consumer_topics.is_some() => (
            consumer_topics.unwrap_or_default(),
            Box::new(|c| c.commit_timestamp),
        ),
        // No member left: retention counts from when the group emptied.
        (Some(_), GroupState::Empty) => {
            let emptied = g.state_timestamp;
            (
                BTreeSet::new(),
                Box::new(move |c| emptied.unwrap_or(c.commit_timestamp)),
            )
        }
        // Stable consumer group: only topics nobody subscribes to expire.
        (Some(t), GroupState::Stable)
            if t == CONSUMER_PROTOCOL_TYPE && g.subscribed_topics.is_some() =>
        {
            (
                g.subscribed_topics.clone().unwrap_or_default(),
                Box::new(|c| c.commit_timestamp),
            )
        }
        // Offsets-only (simple) group.
        (None, _) => (BTreeSet::new(), Box::new(|c| c.commit_timestamp)),
        _ => return Vec::new(),
    };
    let expired: Vec<(String, i32)> = g
        .offsets
        .iter()
        .filter(|((topic, _), c)| {
            !subscribed.contains(topic)
                && match c.expire_timestamp {
                    Some(expire) => now >= expire,
                    None => now - base(c) >= retention_ms,
                }
        })
        .map(|(tp, _)| tp.clone())
        .collect();
    for tp in &expired {
        g.offsets.remove(tp);
    }
    expired
}
