//! [`ConsumerMember`]: one member of a consumer group (Kafka
//! `ConsumerGroupMember`): what it subscribes to, its current assignment
//! and reconciliation state, and its deadlines.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::reconcile::CurrentAssignment;

/// One member of a KIP-848 consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConsumerMember {
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    /// Java's rendering of the peer address (`/127.0.0.1`).
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    /// RE2J syntax, matched against whole topic names; `None`: no regex.
    pub subscribed_topic_regex: Option<String>,
    /// `max.poll.interval.ms` of the client: how long a revocation may take.
    pub rebalance_timeout_ms: i32,
    /// The server-side assignor the member asked for.
    pub server_assignor: Option<String>,
    /// Epochs, state and partitions (Kafka's `CurrentMemberAssignment`).
    pub assignment: CurrentAssignment,
    /// Fenced when no heartbeat arrives before this (ms).
    pub session_deadline: Option<i64>,
    /// While revoking: fenced at this time if still at `.1`, its epoch then.
    pub rebalance_deadline: Option<(i64, i32)>,
    /// A member speaking the classic protocol inside this consumer group.
    pub classic: Option<ClassicMember>,
}

/// What a classic member of a consumer group joined with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClassicMember {
    /// Its JoinGroup session timeout (its session, instead of the group's).
    pub session_timeout_ms: i32,
    /// (name, metadata) of every protocol it supports, in its order.
    pub protocols: Vec<(String, Bytes)>,
}

impl ClassicMember {
    /// The protocol name answered in JoinGroup/SyncGroup: its first.
    pub(crate) fn protocol_name(&self) -> &str {
        self.protocols.first().map_or("", |(n, _)| n.as_str())
    }
}

impl ConsumerMember {
    /// A member that has sent nothing yet.
    pub(crate) fn new(member_id: &str) -> ConsumerMember {
        ConsumerMember {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: -1,
            server_assignor: None,
            assignment: CurrentAssignment::new_member(),
            session_deadline: None,
            rebalance_deadline: None,
            classic: None,
        }
    }

    /// Its session timeout: the classic JoinGroup's, else `group_default`.
    pub(crate) fn session_timeout_ms(&self, group_default: i32) -> i32 {
        self.classic
            .as_ref()
            .map_or(group_default, |c| c.session_timeout_ms)
    }

    /// The fields a `ConsumerGroupMemberMetadata` record holds are equal.
    pub(crate) fn same_metadata(&self, other: &ConsumerMember) -> bool {
        self.instance_id == other.instance_id
            && self.rack_id == other.rack_id
            && self.client_id == other.client_id
            && self.client_host == other.client_host
            && self.subscribed_topic_names == other.subscribed_topic_names
            && self.subscribed_topic_regex == other.subscribed_topic_regex
            && self.rebalance_timeout_ms == other.rebalance_timeout_ms
            && self.server_assignor == other.server_assignor
            && self.classic == other.classic
    }

    /// The earliest of the member's deadlines.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        let rebalance = self.rebalance_deadline.map(|(d, _)| d);
        self.session_deadline.into_iter().chain(rebalance).min()
    }
}
