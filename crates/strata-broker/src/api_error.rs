//! [`ApiError`]: why a request failed for one topic, partition or resource.
//! Handlers return it; the Kafka error code it becomes is decided in
//! `error_code`, the one mapping.

use strata_log::LogError;
use thiserror::Error;

use crate::offline::OfflineReason;
use crate::topics::TopicStoreError;

/// A per-topic / per-partition failure of a request.
#[derive(Debug, Error)]
pub(crate) enum ApiError {
    #[error("this server does not host this topic-partition")]
    UnknownTopicOrPartition,
    /// The principal may not do this to the topic (its ACLs say no).
    #[error("not authorized to access this topic")]
    TopicAuthorizationFailed,
    #[error("unknown topic id")]
    UnknownTopicId,
    #[error("invalid topic name: {reason}")]
    InvalidTopic { reason: &'static str },
    #[error("invalid number of partitions: {reason}")]
    InvalidPartitions { reason: &'static str },
    #[error("invalid replication factor: {reason}")]
    InvalidReplicationFactor { reason: &'static str },
    #[error("{reason}")]
    InvalidReplicationFactorOther { reason: String },
    #[error("invalid replica assignment: {reason}")]
    InvalidReplicaAssignment { reason: &'static str },
    #[error("invalid config: {0}")]
    InvalidConfig(strata_log::ConfigError),
    #[error("invalid config: {reason}")]
    InvalidConfigOther { reason: String },
    #[error("topic already exists")]
    TopicAlreadyExists,
    #[error("invalid request: {reason}")]
    InvalidRequest { reason: &'static str },
    #[error("invalid required acks {acks}")]
    InvalidRequiredAcks { acks: i16 },
    #[error("requested offset {requested} is above the high watermark {high_watermark}")]
    OffsetAboveHighWatermark { requested: i64, high_watermark: i64 },
    #[error("leader epoch {requested} is newer than the current epoch {current}")]
    UnknownLeaderEpoch { requested: i32, current: i32 },
    #[error("leader epoch {requested} is older than the current epoch {current}")]
    FencedLeaderEpoch { requested: i32, current: i32 },
    #[error("in-sync replicas {isr} are fewer than min.insync.replicas {required}")]
    NotEnoughReplicas { isr: i32, required: i32 },
    /// acks=all: the records were written, but the ISR fell below
    /// `min.insync.replicas` before they were committed.
    #[error("the records were written, but the in-sync replicas fell below min.insync.replicas {required}")]
    NotEnoughReplicasAfterAppend { required: i32 },
    /// acks=all: the in-sync replicas did not all take the records within
    /// the request's timeout (they stay in the log and may yet commit).
    #[error("the in-sync replicas did not take the records within {timeout_ms} ms")]
    ReplicationTimedOut { timeout_ms: i32 },
    #[error("zstd-compressed batches need Produce v7+ / Fetch v10+")]
    UnsupportedCompression,
    #[error("incremental fetch session {session_id} not found")]
    FetchSessionIdNotFound { session_id: i32 },
    #[error("fetch session {session_id} expected another epoch than {epoch}")]
    InvalidFetchSessionEpoch { session_id: i32, epoch: i32 },
    #[error("fetch session {session_id} and its request disagree on using topic ids")]
    FetchSessionTopicIdError { session_id: i32 },
    /// The partition is hosted here but cannot be served (Kafka
    /// `HostedPartition.Offline`): Produce, Fetch and DeleteTopics answer
    /// KAFKA_STORAGE_ERROR.
    #[error("partition {tp} is offline: {reason}")]
    PartitionOffline {
        tp: strata_log::TopicPartition,
        reason: OfflineReason,
    },
    /// Metadata's answer for an offline partition: no leader (Kafka's
    /// `KRaftMetadataCache` once the controller took the offline replica's
    /// leadership away).
    #[error("the partition has no leader")]
    LeaderNotAvailable,
    /// Cluster mode: another broker leads the partition (or none does).
    #[error("this broker is not the leader of the partition")]
    NotLeaderOrFollower,
    /// ElectLeaders: no election for this partition (ELECTION_NOT_NEEDED,
    /// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE).
    #[error("{0}")]
    Election(crate::cluster::ElectionRefused),
    /// AlterPartitionReassignments refused (INVALID_REPLICA_ASSIGNMENT,
    /// NO_REASSIGNMENT_IN_PROGRESS).
    #[error("{0}")]
    Reassignment(crate::cluster::ReassignmentRefused),
    /// Cluster mode: the change could not be made in etcd.
    #[error("cluster metadata: {0}")]
    Cluster(#[source] crate::cluster::ClusterError),
    /// DescribeConfigs of a BROKER resource whose name is not a number
    /// (Kafka `ConfigHelper`).
    #[error("Broker id must be an integer, but it is: {name}")]
    BrokerIdNotInteger { name: String },
    /// DescribeConfigs of another broker's BROKER resource.
    #[error("Unexpected broker id, expected {expected} or empty string, but received {name}")]
    UnexpectedBrokerId { expected: i32, name: String },
    /// A read from the remote tier (below the local log start) failed.
    #[error("remote tier: {0}")]
    Remote(#[source] strata_tiered::TieredError),
    #[error("topic metadata store failure: {0}")]
    Store(#[source] TopicStoreError),
    #[error("{0}")]
    Log(#[source] LogError),
    /// A transactional batch the transaction coordinator did not verify
    /// (KIP-890), with the code to answer and why.
    #[error("{reason}")]
    Transaction {
        code: kafka_protocol::error::ResponseError,
        reason: &'static str,
    },
}

impl ApiError {
    pub(crate) fn store(e: TopicStoreError) -> ApiError {
        tracing::error!(error = %strata_log::ErrorChain(&e), "topic metadata store failure");
        ApiError::Store(e)
    }

    /// Message for responses that carry one (`error_message` fields).
    pub(crate) fn message(&self) -> String {
        self.to_string()
    }
}
