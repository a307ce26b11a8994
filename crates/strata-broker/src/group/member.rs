//! One member of a classic group (Kafka `MemberMetadata`): its protocols,
//! timeouts, assignment, the request it may be parked on, and its heartbeat
//! deadline.

use bytes::Bytes;

/// Identifies one parked JoinGroup or SyncGroup request. The runtime keeps
/// the reply channel under this ticket; the state machine only passes it back
/// in a [`Reply`](super::Reply).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Ticket(pub u64);

/// How long a new member may wait in a JoinGroup before it is dropped
/// (Kafka `NewMemberJoinTimeoutMs`, 5 minutes).
pub(crate) const NEW_MEMBER_JOIN_TIMEOUT_MS: i64 = 5 * 60 * 1000;

/// A protocol a member supports, with its opaque metadata (subscription).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

/// One group member.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// In the member's order of preference.
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    /// The JoinGroup this member waits on, if any.
    pub awaiting_join: Option<Ticket>,
    /// The SyncGroup this member waits on, if any.
    pub awaiting_sync: Option<Ticket>,
    /// Added in the current rebalance and not yet given a generation.
    pub is_new: bool,
    /// When the member is considered dead without news from it.
    pub heartbeat_deadline: Option<i64>,
}

impl Member {
    pub(crate) fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    /// Metadata for `protocol`, if the member supports it.
    pub(crate) fn metadata(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| &p.metadata)
    }

    /// Kafka `hasSatisfiedHeartbeat` at a deadline: a member parked on a
    /// join or sync is alive; a new member and any other member is not.
    pub(crate) fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    /// Same protocols with the same metadata, in the same order.
    pub(crate) fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// The member's most preferred protocol among `candidates`.
    pub(crate) fn vote<'a>(&'a self, candidates: &[&str]) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|name| candidates.contains(name))
    }
}
