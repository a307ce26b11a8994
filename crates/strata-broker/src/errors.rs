//! Kafka protocol error codes: the one place where engine and broker errors
//! become the codes clients see.
//!
//! [`ApiError`] is what handlers return for a topic or partition; [`ApiError::code`]
//! and [`log_error_code`] are the mapping. Engine errors are classified by
//! variant (and, for invalid batches, by `BatchError::class()`), never by text.

use kafka_protocol::error::ResponseError;
use strata_log::batch::ErrorClass;
use strata_log::producer_state::ProducerStateError;
use strata_log::LogError;
use thiserror::Error;

use crate::topics::TopicStoreError;

/// A per-topic / per-partition failure of a request.
#[derive(Debug, Error)]
pub(crate) enum ApiError {
    #[error("this server does not host this topic-partition")]
    UnknownTopicOrPartition,
    #[error("unknown topic id")]
    UnknownTopicId,
    #[error("invalid topic name: {reason}")]
    InvalidTopic { reason: &'static str },
    #[error("invalid number of partitions: {reason}")]
    InvalidPartitions { reason: &'static str },
    #[error("invalid replication factor: {reason}")]
    InvalidReplicationFactor { reason: &'static str },
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
    #[error("zstd-compressed batches need Produce v7+ / Fetch v10+")]
    UnsupportedCompression,
    #[error("incremental fetch session {session_id} not found")]
    FetchSessionIdNotFound { session_id: i32 },
    /// The partition is hosted here but cannot be served (Kafka
    /// `HostedPartition.Offline`): Produce, Fetch and DeleteTopics answer
    /// KAFKA_STORAGE_ERROR.
    #[error("partition {tp} is offline: {reason}")]
    PartitionOffline {
        tp: strata_log::TopicPartition,
        reason: crate::offline::OfflineReason,
    },
    /// Metadata's answer for an offline partition: no leader (Kafka's
    /// `KRaftMetadataCache` once the controller took the offline replica's
    /// leadership away).
    #[error("the partition has no leader")]
    LeaderNotAvailable,
    #[error("topic metadata store failure: {0}")]
    Store(#[source] TopicStoreError),
    #[error("{0}")]
    Log(#[source] LogError),
}

impl ApiError {
    pub(crate) fn store(e: TopicStoreError) -> ApiError {
        tracing::error!(error = %strata_log::ErrorChain(&e), "topic metadata store failure");
        ApiError::Store(e)
    }

    /// The Kafka error code for this failure.
    pub(crate) fn code(&self) -> i16 {
        self.kind().code()
    }

    pub(crate) fn kind(&self) -> ResponseError {
        use ResponseError as R;
        match self {
            ApiError::UnknownTopicOrPartition => R::UnknownTopicOrPartition,
            ApiError::UnknownTopicId => R::UnknownTopicId,
            ApiError::InvalidTopic { .. } => R::InvalidTopicException,
            ApiError::InvalidPartitions { .. } => R::InvalidPartitions,
            ApiError::InvalidReplicationFactor { .. } => R::InvalidReplicationFactor,
            ApiError::InvalidReplicaAssignment { .. } => R::InvalidReplicaAssignment,
            ApiError::InvalidConfig(_) | ApiError::InvalidConfigOther { .. } => R::InvalidConfig,
            ApiError::TopicAlreadyExists => R::TopicAlreadyExists,
            ApiError::InvalidRequest { .. } => R::InvalidRequest,
            ApiError::InvalidRequiredAcks { .. } => R::InvalidRequiredAcks,
            ApiError::OffsetAboveHighWatermark { .. } => R::OffsetOutOfRange,
            ApiError::UnknownLeaderEpoch { .. } => R::UnknownLeaderEpoch,
            ApiError::FencedLeaderEpoch { .. } => R::FencedLeaderEpoch,
            ApiError::NotEnoughReplicas { .. } => R::NotEnoughReplicas,
            ApiError::UnsupportedCompression => R::UnsupportedCompressionType,
            ApiError::FetchSessionIdNotFound { .. } => R::FetchSessionIdNotFound,
            ApiError::PartitionOffline { .. } => R::KafkaStorageError,
            ApiError::LeaderNotAvailable => R::LeaderNotAvailable,
            ApiError::Store(_) => R::UnknownServerError,
            ApiError::Log(e) => log_error_code(e),
        }
    }

    /// Message for responses that carry one (`error_message` fields).
    pub(crate) fn message(&self) -> String {
        self.to_string()
    }
}

/// Map an engine error to the Kafka error code a client should see.
pub(crate) fn log_error_code(e: &LogError) -> ResponseError {
    use ResponseError as R;
    match e {
        LogError::Batch { source, .. } => match source.class() {
            ErrorClass::Corrupt => R::CorruptMessage,
            ErrorClass::InvalidRecord => R::InvalidRecord,
            ErrorClass::InvalidTimestamp => R::InvalidTimestamp,
            ErrorClass::TooLarge => R::MessageTooLarge,
        },
        LogError::OffsetOutOfRange { .. } => R::OffsetOutOfRange,
        LogError::RecordBatchTooLarge { .. } => R::RecordListTooLarge,
        LogError::DirOffline { .. } | LogError::NoOnlineDir => R::KafkaStorageError,
        LogError::Io { .. } | LogError::Index { .. } | LogError::Checkpoint { .. } => {
            R::KafkaStorageError
        }
        LogError::Closed { .. } => R::NotLeaderOrFollower,
        LogError::Config { .. } => R::InvalidConfig,
        LogError::ProducerState { source, .. } => producer_state_code(source),
        _ => R::UnknownServerError,
    }
}

/// Idempotence/transaction rule failures (`strata_log::producer_state`).
/// A retried duplicate is not an error: the log answers it with the original
/// offsets and the client gets NONE, as from Kafka (which has not returned
/// DUPLICATE_SEQUENCE_NUMBER since 1.0).
fn producer_state_code(e: &ProducerStateError) -> ResponseError {
    use ResponseError as R;
    match e {
        ProducerStateError::InvalidProducerEpoch { .. } => R::InvalidProducerEpoch,
        ProducerStateError::OutOfOrderSequence { .. } => R::OutOfOrderSequenceNumber,
        ProducerStateError::InvalidTxnState { .. } => R::InvalidTxnState,
        ProducerStateError::TransactionCoordinatorFenced { .. } => R::TransactionCoordinatorFenced,
        ProducerStateError::InvalidControlBatch { .. } => R::InvalidRecord,
        ProducerStateError::CorruptSnapshot { .. } | ProducerStateError::Io { .. } => {
            R::KafkaStorageError
        }
        ProducerStateError::ProducerIdMismatch { .. } => R::UnknownServerError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::batch::BatchError;
    use strata_log::{Offset, TopicPartition};

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    #[test]
    fn batch_errors_map_by_class() {
        let corrupt = LogError::Batch {
            tp: tp(),
            source: BatchError::ChecksumMismatch {
                stored: 1,
                computed: 2,
            }
            .at(0),
        };
        assert_eq!(log_error_code(&corrupt), ResponseError::CorruptMessage);
        let count = LogError::Batch {
            tp: tp(),
            source: BatchError::CountMismatch {
                declared: 2,
                actual: 1,
            },
        };
        assert_eq!(log_error_code(&count), ResponseError::InvalidRecord);
        let oor = LogError::OffsetOutOfRange {
            tp: tp(),
            requested: Offset(9),
            log_start: Offset(0),
            log_end: Offset(3),
        };
        assert_eq!(log_error_code(&oor).code(), 1);
        let big = LogError::RecordBatchTooLarge {
            tp: tp(),
            size: 10,
            segment_bytes: 5,
        };
        assert_eq!(log_error_code(&big).code(), 18);
        assert_eq!(ApiError::TopicAlreadyExists.code(), 36);
        let offline = ApiError::PartitionOffline {
            tp: tp(),
            reason: crate::offline::OfflineReason::DirOffline { dir: "/d".into() },
        };
        assert_eq!(offline.code(), 56);
        assert_eq!(ApiError::LeaderNotAvailable.code(), 5);
    }

    #[test]
    fn producer_state_errors_map_to_kafka_codes() {
        use strata_log::producer_state::SequenceFault;
        use strata_log::{ProducerEpoch, ProducerId};
        let wrap = |source| LogError::ProducerState { tp: tp(), source };
        let epoch = wrap(ProducerStateError::InvalidProducerEpoch {
            producer_id: ProducerId(1),
            offset: Offset(0),
            epoch: ProducerEpoch(0),
            current_epoch: ProducerEpoch(1),
        });
        assert_eq!(log_error_code(&epoch).code(), 47);
        let seq = wrap(ProducerStateError::OutOfOrderSequence {
            producer_id: ProducerId(1),
            offset: Offset(0),
            epoch: ProducerEpoch(0),
            first_sequence: 9,
            fault: SequenceFault::NotNextInSequence { last_sequence: 3 },
        });
        assert_eq!(log_error_code(&seq).code(), 45);
        let txn = wrap(ProducerStateError::InvalidTxnState {
            producer_id: ProducerId(1),
            offset: Offset(0),
            txn_first_offset: Offset(0),
        });
        assert_eq!(log_error_code(&txn).code(), 48);
        let fenced = wrap(ProducerStateError::TransactionCoordinatorFenced {
            producer_id: ProducerId(1),
            offset: Offset(0),
            coordinator_epoch: 1,
            current_coordinator_epoch: 2,
        });
        assert_eq!(log_error_code(&fenced).code(), 52);
        assert_eq!(ApiError::UnknownTopicOrPartition.code(), 3);
    }
}
