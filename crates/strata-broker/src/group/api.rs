//! The coordinator's requests and answers, independent of wire versions:
//! handlers translate `kafka-protocol` messages to these and back.
//!
//! Errors are Kafka's codes as [`ResponseError`]; `None` means NONE.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::member::{Protocol, Ticket};

/// A JoinGroup request.
#[derive(Clone, Debug)]
pub(crate) struct JoinRequest {
    pub group_id: String,
    /// Empty for a new member.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
    /// JoinGroup v9+: a rejoining static leader may skip the assignment.
    pub supports_skip_assignment: bool,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
}

/// One member of a JoinGroup answer to the leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JoinMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

/// A JoinGroup answer (Kafka `JoinGroupResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JoinResult {
    pub error: Option<ResponseError>,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader_id: String,
    pub skip_assignment: bool,
    /// Only the leader gets the members.
    pub members: Vec<JoinMember>,
}

impl JoinResult {
    pub(crate) fn error(member_id: &str, error: ResponseError) -> JoinResult {
        JoinResult {
            error: Some(error),
            member_id: member_id.to_string(),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader_id: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }
}

/// A SyncGroup request.
#[derive(Clone, Debug)]
pub(crate) struct SyncRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+: checked against the group's when present.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// The leader's assignment, member id → bytes.
    pub assignments: Vec<(String, Bytes)>,
}

/// A SyncGroup answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyncResult {
    pub error: Option<ResponseError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResult {
    pub(crate) fn error(error: ResponseError) -> SyncResult {
        SyncResult {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// An answer to a parked request, addressed by its ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Join(Ticket, JoinResult),
    Sync(Ticket, SyncResult),
}

/// A Heartbeat request.
#[derive(Clone, Debug)]
pub(crate) struct HeartbeatRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// One member leaving (LeaveGroup v3+ batches them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaveMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// A LeaveGroup answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaveResult {
    pub error: Option<ResponseError>,
    pub members: Vec<(LeaveMember, Option<ResponseError>)>,
}

/// One partition of an OffsetCommit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommitPartition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// -1 = unknown.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// v1 only: the client's timestamp; -1 = now.
    pub commit_timestamp: i64,
}

/// An OffsetCommit request.
#[derive(Clone, Debug)]
pub(crate) struct CommitRequest {
    pub group_id: String,
    /// -1 for commits from outside group management.
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v2–v4 retention_time_ms; -1 = broker default.
    pub retention_time_ms: i64,
    pub partitions: Vec<CommitPartition>,
    /// TxnOffsetCommit: the producer id and epoch; the offsets stay pending
    /// until that producer's transaction commits.
    pub txn: Option<(i64, i16)>,
}

/// One partition of an OffsetFetch answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    /// -1 when nothing is committed.
    pub offset: i64,
    /// -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: String,
    pub error: Option<ResponseError>,
}

/// ListGroups entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupOverview {
    pub group_id: String,
    pub protocol_type: String,
    pub state: &'static str,
    /// `classic` or `consumer` (ListGroups v5).
    pub group_type: &'static str,
}

/// DescribeGroups member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemberSummary {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

/// DescribeGroups entry (Kafka `GroupSummary`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupSummary {
    pub error: Option<ResponseError>,
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberSummary>,
}
