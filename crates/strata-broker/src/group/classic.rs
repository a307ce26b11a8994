//! One classic group (Kafka `GroupMetadata` / `ClassicGroup`): state, generation, members,
//! static-member mapping, pending members, timers and committed offsets.
//!
//! This module holds the bookkeeping that keeps the group's invariants; the
//! protocol decisions (who may join, when a rebalance completes) live in
//! `membership` and `offsets`.
//!
//! Invariants: `static_members` maps exactly the `group_instance_id`s of
//! `members`; a pending member id is never in `members`; `leader_id`, when
//! set, names a member; `pending_sync` ⊆ `members`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

use super::consumer::group::ConsumerGroup;
use super::member::{Member, Protocol};
use super::records::{GroupMetadataValue, MemberMetadataValue};

/// The protocol type of Java/librdkafka/kafka-python consumers.
pub(crate) const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Kafka's classic group states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The name ListGroups/DescribeGroups report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// Kafka `validPreviousStates` of `self`.
    fn valid_previous(self) -> &'static [GroupState] {
        use GroupState::*;
        match self {
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Stable, PreparingRebalance, CompletingRebalance, Empty, Dead],
            Empty => &[PreparingRebalance],
        }
    }
}

/// A committed offset as cached (Kafka `OffsetAndMetadata` plus the log
/// offset of the record that stored it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommittedOffset {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Only commits of OffsetCommit v2–v4 with an explicit retention time.
    pub expire_timestamp: Option<i64>,
    /// Offset in `__consumer_offsets` of the batch holding the record.
    pub record_offset: i64,
}

/// The join-phase timer (Kafka `DelayedJoin` / `InitialDelayedJoin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JoinTimer {
    /// First rebalance of an empty group: never completes early; extended
    /// while new members keep arriving, within the rebalance timeout.
    Initial {
        deadline: i64,
        delay_ms: i64,
        remaining_ms: i64,
    },
    /// Completes as soon as every known member has rejoined.
    Regular { deadline: i64 },
}

impl JoinTimer {
    pub(crate) fn deadline(&self) -> i64 {
        match *self {
            JoinTimer::Initial { deadline, .. } | JoinTimer::Regular { deadline } => deadline,
        }
    }
}

/// Kafka `DelayedSync`: members that got a JoinGroup answer must sync
/// within the rebalance timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncTimer {
    pub deadline: i64,
    pub generation: i32,
}

/// One group.
#[derive(Debug)]
pub(crate) struct Group {
    pub id: String,
    state: GroupState,
    /// When the state last changed (ms); `None` for groups loaded from
    /// metadata records older than v2.
    pub state_timestamp: Option<i64>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// group.instance.id → member id.
    pub static_members: HashMap<String, String>,
    /// Members told MEMBER_ID_REQUIRED, with their expiry deadline.
    pub pending_members: BTreeMap<String, i64>,
    /// Members that got their JoinGroup answer and have not synced yet.
    pub pending_sync: BTreeSet<String>,
    /// Kafka `newMemberAdded`: extends the initial rebalance delay.
    pub new_member_added: bool,
    pub join_timer: Option<JoinTimer>,
    pub sync_timer: Option<SyncTimer>,
    pub offsets: BTreeMap<(String, i32), CommittedOffset>,
    /// TxnOffsetCommit offsets per producer id, visible once its
    /// transaction commits (Kafka `pendingTransactionalOffsetCommits`).
    pub pending_txn: BTreeMap<i64, BTreeMap<(String, i32), CommittedOffset>>,
    /// Topics the consumer-protocol members subscribe to, when known.
    pub subscribed_topics: Option<BTreeSet<String>>,
    /// `Some`: a KIP-848 consumer group. It shares this struct's offsets,
    /// pending transactional offsets and id; the classic fields stay
    /// empty (no classic member, state Empty, generation 0).
    pub consumer: Option<Box<ConsumerGroup>>,
}

impl Group {
    pub(crate) fn new(id: &str, state: GroupState, now: i64) -> Group {
        Group {
            id: id.to_string(),
            state,
            state_timestamp: Some(now),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_members: BTreeMap::new(),
            pending_sync: BTreeSet::new(),
            new_member_added: false,
            join_timer: None,
            sync_timer: None,
            offsets: BTreeMap::new(),
            pending_txn: BTreeMap::new(),
            subscribed_topics: None,
            consumer: None,
        }
    }

    pub(crate) fn state(&self) -> GroupState {
        self.state
    }

    pub(crate) fn is(&self, state: GroupState) -> bool {
        self.state == state
    }

    /// # Panics
    /// On a transition Kafka forbids (a coordinator bug).
    pub(crate) fn transition_to(&mut self, target: GroupState, now: i64) {
        assert!(
            target.valid_previous().contains(&self.state),
            "group {}: invalid transition {:?} -> {:?}",
            self.id,
            self.state,
            target
        );
        self.state = target;
        self.state_timestamp = Some(now);
    }

    pub(crate) fn can_rebalance(&self) -> bool {
        GroupState::PreparingRebalance
            .valid_previous()
            .contains(&self.state)
    }

    pub(crate) fn has(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }

    pub(crate) fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub(crate) fn is_pending(&self, member_id: &str) -> bool {
        self.pending_members.contains_key(member_id)
    }

    pub(crate) fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(String::as_str)
    }

    /// Largest rebalance timeout of the members (0 without members).
    pub(crate) fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    pub(crate) fn has_all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }

    pub(crate) fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_some())
            .count()
    }

    /// Add a member (the first one sets the protocol type and becomes leader).
    pub(crate) fn add(&mut self, member: Member) {
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.pending_members.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Remove a member (or pending member); a new leader is any remaining member.
    pub(crate) fn remove(&mut self, member_id: &str) -> Option<Member> {
        let removed = self.members.remove(member_id);
        if let Some(m) = &removed {
            if let Some(instance) = &m.group_instance_id {
                self.static_members.remove(instance);
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_members.remove(member_id);
        self.pending_sync.remove(member_id);
        removed
    }

    /// Give a static member a new member id; the old id disappears.
    pub(crate) fn replace_static_member(&mut self, instance_id: &str, old_id: &str, new_id: &str) {
        if let Some(mut m) = self.members.remove(old_id) {
            m.member_id = new_id.to_string();
            self.members.insert(new_id.to_string(), m);
        }
        if self.is_leader(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        self.pending_sync.remove(old_id);
        self.static_members
            .insert(instance_id.to_string(), new_id.to_string());
    }

    /// Protocols every member supports.
    fn candidate_protocols(&self) -> Vec<&str> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            for p in &m.protocols {
                *counts.entry(p.name.as_str()).or_default() += 1;
            }
        }
        let n = self.members.len();
        counts
            .into_iter()
            .filter(|(_, c)| *c == n)
            .map(|(p, _)| p)
            .collect()
    }

    /// Kafka `supportsProtocols`: can a member with these protocols join?
    pub(crate) fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.is(GroupState::Empty) {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        let candidates = self.candidate_protocols();
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|p| candidates.contains(&p.name.as_str()))
    }

    /// The protocol supported by all members with the most first-preference
    /// votes (ties: the lexicographically smallest name, for determinism).
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(p) = m.vote(&candidates) {
                *votes.entry(p).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(p, _)| p.to_string())
    }

    /// Kafka `initNextGeneration`: bump the generation, choose the protocol,
    /// go to CompletingRebalance (or Empty without members).
    pub(crate) fn init_next_generation(&mut self, now: i64) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition_to(GroupState::Empty, now);
        } else {
            self.protocol_name = self.select_protocol();
            self.transition_to(GroupState::CompletingRebalance, now);
        }
        self.subscribed_topics = self.compute_subscribed_topics();
        self.pending_sync.clear();
    }

    /// Union of the topics in the members' consumer-protocol subscriptions.
    pub(crate) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            topics.extend(subscription_topics(m.metadata(protocol)?)?);
        }
        Some(topics)
    }

    pub(crate) fn is_subscribed_to(&self, topic: &str) -> bool {
        if let Some(cg) = self.consumer.as_deref() {
            return cg
                .members
                .values()
                .any(|m| cg.member_topics(m).contains(topic));
        }
        match &self.subscribed_topics {
            Some(t) => t.contains(topic),
            None => true,
        }
    }

    /// The group metadata record value for the current generation with
    /// `assignment` (Kafka `groupMetadataValue`). Members without an entry
    /// get an empty assignment.
    pub(crate) fn metadata_value(&self, assignment: &HashMap<String, Bytes>) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone();
        let members = self
            .members
            .values()
            .map(|m| MemberMetadataValue {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout: m.rebalance_timeout_ms,
                session_timeout: m.session_timeout_ms,
                subscription: protocol
                    .as_deref()
                    .and_then(|p| m.metadata(p))
                    .cloned()
                    .unwrap_or_default(),
                assignment: assignment.get(&m.member_id).cloned().unwrap_or_default(),
            })
            .collect();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation_id,
            protocol,
            leader: self.leader_id.clone(),
            current_state_timestamp: self.state_timestamp.unwrap_or(-1),
            members,
        }
    }

    /// Forget the classic protocol's state (the group becoming a consumer
    /// group, which took over its members); offsets stay.
    pub(crate) fn reset_classic(&mut self, now: i64) {
        self.members.clear();
        self.static_members.clear();
        self.pending_members.clear();
        self.pending_sync.clear();
        self.state = GroupState::Empty;
        self.state_timestamp = Some(now);
        self.protocol_type = None;
        self.protocol_name = None;
        self.generation_id = 0;
        self.leader_id = None;
        self.join_timer = None;
        self.sync_timer = None;
        self.subscribed_topics = None;
    }

    /// Rebuild a group from its metadata record (Kafka `readGroupMessageValue`
    /// + `loadGroup`): Stable with members, Empty without.
    pub(crate) fn from_metadata(id: &str, value: GroupMetadataValue, now: i64) -> Group {
        let state = if value.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        let mut group = Group::new(id, state, now);
        group.generation_id = value.generation;
        group.protocol_type = Some(value.protocol_type.clone()).filter(|t| !t.is_empty());
        group.protocol_name = value.protocol.clone();
        group.state_timestamp = Some(value.current_state_timestamp).filter(|t| *t != -1);
        for m in value.members {
            let protocols = vec![Protocol {
                name: value.protocol.clone().unwrap_or_default(),
                metadata: m.subscription,
            }];
            group.add(Member {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                rebalance_timeout_ms: m.rebalance_timeout,
                session_timeout_ms: m.session_timeout,
                protocol_type: value.protocol_type.clone(),
                protocols,
                assignment: m.assignment,
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                heartbeat_deadline: None,
            });
        }
        // `add` elects the first member; the record names the real leader.
        group.leader_id = value.leader.filter(|l| group.members.contains_key(l));
        if group.leader_id.is_none() {
            group.leader_id = group.members.keys().next().cloned();
        }
        group.subscribed_topics = group.compute_subscribed_topics();
        group
    }
}

/// Topics of a ConsumerProtocolSubscription (every version starts with the
/// v0 layout: int16 version, int32 topic count, int16-length strings).
/// `None` if the bytes do not parse, as Kafka then gives up on the topic set.
pub(crate) fn subscription_topics(bytes: &[u8]) -> Option<Vec<String>> {
    let mut pos = 2usize;
    let count = i32::from_be_bytes(bytes.get(pos..pos + 4)?.try_into().ok()?);
    pos += 4;
    if count < 0 {
        return None;
    }
    let mut topics = Vec::with_capacity((count as usize).min(1024));
    for _ in 0..count {
        let len = i16::from_be_bytes(bytes.get(pos..pos + 2)?.try_into().ok()?);
        pos += 2;
        let len = usize::try_from(len).ok()?;
        let raw = bytes.get(pos..pos + len)?;
        pos += len;
        topics.push(std::str::from_utf8(raw).ok()?.to_string());
    }
    Some(topics)
}
