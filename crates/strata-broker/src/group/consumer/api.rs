//! ConsumerGroupHeartbeat and ConsumerGroupDescribe as the coordinator
//! sees them, independent of wire versions (the handlers in `apis`
//! translate `kafka-protocol` messages to these and back).

use kafka_protocol::error::ResponseError;

use super::assignment::TopicPartitions;

/// Member epoch of a member leaving the group.
pub(crate) const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member leaving for a while (it keeps its partitions).
pub(crate) const STATIC_LEAVE_EPOCH: i32 = -2;

/// A ConsumerGroupHeartbeat request. `None` fields are "unchanged".
#[derive(Clone, Debug, Default)]
pub(crate) struct ConsumerHeartbeat {
    /// The request version (v1: the client names itself; regexes).
    pub version: i16,
    pub group_id: String,
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1: unchanged.
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// What the member owns now; `None`: unchanged (assume it still owns
    /// what it had).
    pub topic_partitions: Option<TopicPartitions>,
    pub client_id: String,
    pub client_host: String,
}

/// A ConsumerGroupHeartbeat answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConsumerHeartbeatResult {
    pub error: Option<ResponseError>,
    pub error_message: Option<String>,
    pub member_id: Option<String>,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The partitions the member may use now, when they changed or the
    /// request was a full one.
    pub assignment: Option<TopicPartitions>,
}

impl ConsumerHeartbeatResult {
    pub(crate) fn error(error: ResponseError, message: Option<String>) -> ConsumerHeartbeatResult {
        ConsumerHeartbeatResult {
            error: Some(error),
            error_message: message,
            member_id: None,
            member_epoch: 0,
            heartbeat_interval_ms: 0,
            assignment: None,
        }
    }
}

/// One partition set of a described member, with topic names resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DescribedTopic {
    pub topic_id: uuid::Uuid,
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

/// One member of a ConsumerGroupDescribe answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DescribedMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub assignment: Vec<DescribedTopic>,
    pub target_assignment: Vec<DescribedTopic>,
}

/// One group of a ConsumerGroupDescribe answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DescribedGroup {
    pub group_id: String,
    pub error: Option<ResponseError>,
    pub error_message: Option<String>,
    pub state: &'static str,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor_name: String,
    pub members: Vec<DescribedMember>,
}
