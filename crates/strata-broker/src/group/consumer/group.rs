//! [`ConsumerGroup`]: the state of one KIP-848 consumer group (Kafka
//! `ConsumerGroup`): group epoch, target assignment and its epoch, members,
//! subscription metadata and resolved regular expressions, and the pure
//! computations over them (group state, subscription metadata, the next
//! target assignment, partition ownership).
//!
//! Invariant: a partition is owned (assigned or pending revocation) by at
//! most one member; reconciliation keeps it by holding back partitions
//! another member still owns (`reconcile`).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use uuid::Uuid;

use super::assignment::{contains, TopicPartitions};
use super::assignor::{assign, AssignorName, MemberSpec, TopicSpec};
use super::image::TopicImage;
use super::member::ConsumerMember;

/// Kafka's consumer group states (ListGroups / ConsumerGroupDescribe names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConsumerGroupState {
    Empty,
    Assigning,
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// One subscribed topic as the group last saw it (record type 4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SubscribedTopic {
    pub id: Uuid,
    pub partitions: i32,
    /// Replica racks by partition, up to the last partition with any.
    pub racks: Vec<BTreeSet<String>>,
}

/// One KIP-848 consumer group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConsumerGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ConsumerMember>,
    /// Target assignment per member id (may name a member being replaced).
    pub target: BTreeMap<String, TopicPartitions>,
    /// Subscribed topics that exist, by name.
    pub subscription_metadata: BTreeMap<String, SubscribedTopic>,
    /// Regular expression → the topics it matched at the last resolution.
    pub resolved_regex: BTreeMap<String, BTreeSet<String>>,
    /// The topic image version the subscription metadata was computed at.
    pub image_version: Option<u64>,
}

/// A subscription regex compiled as RE2J matches it: the whole name.
///
/// # Errors
/// The regex does not parse.
pub(crate) fn compile_regex(regex: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!("^(?:{regex})$"))
}

impl ConsumerGroup {
    /// Kafka `ConsumerGroup.maybeUpdateGroupState`.
    pub(crate) fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|m| {
            m.assignment.state != super::reconcile::MemberState::Stable
                || m.assignment.member_epoch != self.assignment_epoch
        }) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The member id holding static `instance_id`.
    pub(crate) fn static_member(&self, instance_id: &str) -> Option<&str> {
        self.members
            .values()
            .find(|m| m.instance_id.as_deref() == Some(instance_id))
            .map(|m| m.member_id.as_str())
    }

    /// Whether a member other than `member_id` owns `topic`/`partition`
    /// (assigned or still revoking it).
    pub(crate) fn owned_by_other(&self, member_id: &str, topic: Uuid, partition: i32) -> bool {
        self.members.values().any(|m| {
            m.member_id != member_id
                && (contains(&m.assignment.assigned, topic, partition)
                    || contains(&m.assignment.pending_revocation, topic, partition))
        })
    }

    /// Every regex some member subscribes to.
    pub(crate) fn regexes(&self) -> BTreeSet<String> {
        self.members
            .values()
            .filter_map(|m| m.subscribed_topic_regex.clone())
            .filter(|r| !r.is_empty())
            .collect()
    }

    /// The topic names `member` subscribes to: its names plus what its
    /// regex resolved to.
    pub(crate) fn member_topics(&self, member: &ConsumerMember) -> BTreeSet<String> {
        let mut topics = member.subscribed_topic_names.clone();
        if let Some(r) = member.subscribed_topic_regex.as_ref() {
            if let Some(resolved) = self.resolved_regex.get(r) {
                topics.extend(resolved.iter().cloned());
            }
        }
        topics
    }

    /// Resolve every subscribed regex against `image` (Strata resolves at
    /// once, under the coordinator's lock, instead of Kafka's asynchronous
    /// batch every 10 s). Returns the regexes whose topics changed.
    pub(crate) fn resolve_regexes(&mut self, image: &TopicImage) -> BTreeSet<String> {
        let wanted = self.regexes();
        self.resolved_regex.retain(|r, _| wanted.contains(r));
        let mut changed = BTreeSet::new();
        for r in wanted {
            let Ok(re) = compile_regex(&r) else { continue };
            let topics: BTreeSet<String> = image
                .topics
                .iter()
                .filter(|(name, t)| !t.internal && re.is_match(name))
                .map(|(name, _)| name.clone())
                .collect();
            if self.resolved_regex.get(&r) != Some(&topics) {
                self.resolved_regex.insert(r.clone(), topics);
                changed.insert(r);
            }
        }
        changed
    }

    /// The subscription metadata the members' subscriptions give in `image`.
    pub(crate) fn compute_subscription_metadata(
        &self,
        image: &TopicImage,
    ) -> BTreeMap<String, SubscribedTopic> {
        let mut names = BTreeSet::new();
        for m in self.members.values() {
            names.extend(self.member_topics(m));
        }
        names
            .into_iter()
            .filter_map(|name| {
                let t = image.get(&name)?;
                // Trailing partitions without racks are left out, as the
                // record leaves them out, so a replayed group compares equal.
                let known = t
                    .racks
                    .iter()
                    .rposition(|r| !r.is_empty())
                    .map_or(0, |i| i + 1);
                Some((
                    name,
                    SubscribedTopic {
                        id: t.id,
                        partitions: t.partitions,
                        racks: t.racks[..known].to_vec(),
                    },
                ))
            })
            .collect()
    }

    /// The assignor the members prefer (the one most of them name; ties go
    /// to the name first in `configured`), else the first configured.
    pub(crate) fn preferred_assignor(&self, configured: &[AssignorName]) -> AssignorName {
        let default = configured.first().copied().unwrap_or(AssignorName::Uniform);
        let mut best: Option<(usize, AssignorName)> = None;
        for a in configured {
            let n = self
                .members
                .values()
                .filter(|m| {
                    m.server_assignor
                        .as_deref()
                        .and_then(AssignorName::parse)
                        .is_some_and(|x| x == *a)
                })
                .count();
            if n > 0 && best.is_none_or(|(b, _)| n > b) {
                best = Some((n, *a));
            }
        }
        best.map_or(default, |(_, a)| a)
    }

    /// Kafka's `TargetAssignmentBuilder`: the new target of every member.
    pub(crate) fn compute_target(
        &self,
        assignor: AssignorName,
    ) -> BTreeMap<String, TopicPartitions> {
        let topics: BTreeMap<Uuid, TopicSpec> = self
            .subscription_metadata
            .values()
            .map(|t| {
                (
                    t.id,
                    TopicSpec {
                        partitions: t.partitions,
                        partition_racks: t.racks.clone(),
                    },
                )
            })
            .collect();
        let subscribed: Vec<(&ConsumerMember, BTreeSet<Uuid>)> = self
            .members
            .values()
            .map(|m| {
                let ids = self
                    .member_topics(m)
                    .iter()
                    .filter_map(|n| self.subscription_metadata.get(n).map(|t| t.id))
                    .collect();
                (m, ids)
            })
            .collect();
        let specs: Vec<MemberSpec<'_>> = subscribed
            .iter()
            .map(|(m, ids)| MemberSpec {
                member_id: &m.member_id,
                instance_id: m.instance_id.as_deref(),
                rack_id: m.rack_id.as_deref(),
                subscribed: ids,
            })
            .collect();
        assign(assignor, &specs, &topics, &self.target)
    }
}
