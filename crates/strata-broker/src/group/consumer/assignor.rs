//! Server-side assignors of KIP-848 consumer groups: who should own which
//! partition (the group's *target* assignment).
//!
//! Kafka counterparts: `UniformAssignor` (with its homogeneous and
//! heterogeneous builders) and `RangeAssignor` in group-coordinator
//! `assignor/`, selected by `group.consumer.assignors` or the member's
//! `ServerAssignor`. [`assign`] is a pure function of the members, the topic
//! metadata and the current target; the group state machine calls it when the
//! group epoch moves past the target epoch and writes the delta as records.
//!
//! # Policies
//!
//! - `uniform` (module `uniform`): homogeneous groups (every member subscribes
//!   to the same topics) get sizes within ±1 over all partitions of all
//!   topics; members keep their current partitions up to their quota, so a
//!   leaving member's partitions are the only ones that move and a joining
//!   member takes about its quota. Heterogeneous groups: sticky first, then
//!   the unassigned partitions to the least-loaded subscriber, then single
//!   moves from a member to a subscriber with at least two fewer partitions
//!   until no such move exists (Kafka's balance criterion).
//! - `range` (module `range`): Kafka 3.9's ranges over members sorted static
//!   (by instance id) then dynamic (by member id). It is sticky only through
//!   determinism: with the same members and partition counts the ranges are
//!   the same. Kafka 4.0's more sticky range is not reproduced.
//!
//! # Rack awareness (a Strata extension; Kafka 3.9/4.0 ignore racks here)
//!
//! A partition *matches* a member when the member has a rack id and that rack
//! is among the racks of the partition's replicas. The rule, for both
//! assignors: (1) partitions a member keeps for stickiness are kept whatever
//! their racks; (2) when a member must give partitions up, it gives up
//! non-matching ones first; (3) partitions being handed out go to a matching
//! member when one has room *within the balance the rack-less algorithm would
//! reach* (uniform: ±1 in homogeneous groups, the same move criterion in
//! heterogeneous ones; range: exactly the per-member counts of the plain
//! ranges), otherwise as without racks. When no member has a rack or no
//! partition has replica racks, every step degenerates to the rack-less
//! algorithm, so the result is identical to it. Range with racks gives up
//! contiguity (and co-partitioning, unless the topics' replica racks line up)
//! for locality — the same trade Kafka's client-side KIP-881 range makes.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignment::{self, TopicPartitions};
use super::{range, uniform};

/// A server-side assignor Strata implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AssignorName {
    Uniform,
    Range,
}

/// Kafka's class names, accepted in `group.consumer.assignors`.
const UNIFORM_CLASS: &str = "org.apache.kafka.coordinator.group.assignor.UniformAssignor";
const RANGE_CLASS: &str = "org.apache.kafka.coordinator.group.assignor.RangeAssignor";

impl AssignorName {
    /// `uniform` / `range` (a member's `ServerAssignor`) or Kafka's class
    /// names (the broker config list). Case-sensitive, as Kafka.
    pub(crate) fn parse(s: &str) -> Option<AssignorName> {
        match s {
            "uniform" | UNIFORM_CLASS => Some(AssignorName::Uniform),
            "range" | RANGE_CLASS => Some(AssignorName::Range),
            _ => None,
        }
    }

    /// The short name clients send and `ConsumerGroupDescribe` shows.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AssignorName::Uniform => "uniform",
            AssignorName::Range => "range",
        }
    }
}

/// One member as the assignor sees it.
pub(crate) struct MemberSpec<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub rack_id: Option<&'a str>,
    /// Subscribed topic ids that exist (the caller drops unknown topics).
    pub subscribed: &'a BTreeSet<Uuid>,
}

/// One subscribed topic's metadata.
pub(crate) struct TopicSpec {
    pub partitions: i32,
    /// Per partition (index = partition id): the racks of its replicas; empty Vec when unknown.
    pub partition_racks: Vec<BTreeSet<String>>,
}

/// The new target assignment of every member in `members` (each member
/// appears in the result, maybe with an empty map). `current` is the current
/// target (member id → partitions) for stickiness; it may name members no
/// longer present and partitions that no longer exist — those are ignored.
/// Deterministic: the same inputs always give the same output, whatever the
/// order of `members`. Member ids are expected to be unique (a duplicate id
/// keeps only its last spec's result).
pub(crate) fn assign(
    assignor: AssignorName,
    members: &[MemberSpec<'_>],
    topics: &BTreeMap<Uuid, TopicSpec>,
    current: &BTreeMap<String, TopicPartitions>,
) -> BTreeMap<String, TopicPartitions> {
    let view = GroupView::new(members, topics);
    let per_member = match assignor {
        AssignorName::Uniform => uniform::assign(&view, current),
        AssignorName::Range => range::assign(&view, current),
    };
    view.members
        .iter()
        .zip(per_member)
        .map(|(member, tp)| (member.id.to_owned(), tp))
        .collect()
}

/// A member inside the assignors: subscriptions limited to known topics.
pub(super) struct Member<'a> {
    pub id: &'a str,
    pub instance_id: Option<&'a str>,
    pub rack: Option<&'a str>,
    pub subscribed: BTreeSet<Uuid>,
}

/// The assignors' input, normalised: members sorted by member id, their
/// subscriptions reduced to topics in the metadata with at least one partition.
pub(super) struct GroupView<'a> {
    pub members: Vec<Member<'a>>,
    /// Topic id → partition count (only topics someone subscribes to).
    pub partitions: BTreeMap<Uuid, i32>,
    topics: &'a BTreeMap<Uuid, TopicSpec>,
    /// Whether any member has a rack and any partition has replica racks.
    pub rack_aware: bool,
    /// Rack id → members in it, ascending.
    by_rack: BTreeMap<&'a str, Vec<usize>>,
}

impl<'a> GroupView<'a> {
    fn new(members: &[MemberSpec<'a>], topics: &'a BTreeMap<Uuid, TopicSpec>) -> Self {
        let mut by_id: BTreeMap<&'a str, Member<'a>> = BTreeMap::new();
        for spec in members {
            let subscribed = spec
                .subscribed
                .iter()
                .filter(|t| topics.get(t).is_some_and(|topic| topic.partitions > 0))
                .copied()
                .collect();
            by_id.insert(
                spec.member_id,
                Member {
                    id: spec.member_id,
                    instance_id: spec.instance_id,
                    rack: spec.rack_id,
                    subscribed,
                },
            );
        }
        let members: Vec<Member<'a>> = by_id.into_values().collect();
        let partitions: BTreeMap<Uuid, i32> = members
            .iter()
            .flat_map(|m| m.subscribed.iter())
            .filter_map(|t| topics.get(t).map(|spec| (*t, spec.partitions)))
            .collect();
        let any_member_rack = members.iter().any(|m| m.rack.is_some());
        let any_partition_rack = partitions.keys().any(|t| {
            topics
                .get(t)
                .is_some_and(|spec| spec.partition_racks.iter().any(|r| !r.is_empty()))
        });
        let mut by_rack: BTreeMap<&'a str, Vec<usize>> = BTreeMap::new();
        for (i, m) in members.iter().enumerate() {
            if let Some(rack) = m.rack {
                by_rack.entry(rack).or_default().push(i);
            }
        }
        GroupView {
            members,
            partitions,
            topics,
            rack_aware: any_member_rack && any_partition_rack,
            by_rack,
        }
    }

    /// The replica racks of a partition, when known.
    fn replica_racks(&self, topic: Uuid, partition: i32) -> Option<&'a BTreeSet<String>> {
        let spec = self.topics.get(&topic)?;
        spec.partition_racks.get(usize::try_from(partition).ok()?)
    }

    /// Whether `member`'s rack is among the replica racks of the partition.
    pub fn matches(&self, member: usize, topic: Uuid, partition: i32) -> bool {
        if !self.rack_aware {
            return false;
        }
        let Some(rack) = self.members[member].rack else {
            return false;
        };
        self.replica_racks(topic, partition)
            .is_some_and(|racks| racks.contains(rack))
    }

    /// The members [`matches`](Self::matches) accepts for the partition, ascending.
    pub fn matching_members(&self, topic: Uuid, partition: i32) -> Vec<usize> {
        if !self.rack_aware {
            return Vec::new();
        }
        let Some(racks) = self.replica_racks(topic, partition) else {
            return Vec::new();
        };
        let mut out: Vec<usize> = racks
            .iter()
            .filter_map(|r| self.by_rack.get(r.as_str()))
            .flatten()
            .copied()
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether the partition exists and `member` subscribes to its topic.
    pub fn is_valid_for(&self, member: usize, topic: Uuid, partition: i32) -> bool {
        self.members[member].subscribed.contains(&topic)
            && self
                .partitions
                .get(&topic)
                .is_some_and(|count| (0..*count).contains(&partition))
    }

    /// `member`'s current target restricted to what it may still own, with
    /// partitions already claimed by an earlier member (a corrupt current
    /// assignment naming one partition twice) skipped.
    pub fn retained(
        &self,
        member: usize,
        current: &BTreeMap<String, TopicPartitions>,
        claimed: &mut BTreeSet<(Uuid, i32)>,
    ) -> Vec<(Uuid, i32)> {
        let Some(tp) = current.get(self.members[member].id) else {
            return Vec::new();
        };
        assignment::iter_pairs(tp)
            .filter(|(t, p)| self.is_valid_for(member, *t, *p))
            .filter(|pair| claimed.insert(*pair))
            .collect()
    }

    /// Whether every member subscribes to the same topics (Kafka's HOMOGENEOUS).
    pub fn is_homogeneous(&self) -> bool {
        self.members
            .windows(2)
            .all(|w| w[0].subscribed == w[1].subscribed)
    }
}

#[cfg(test)]
#[path = "assignor_tests.rs"]
mod tests;
