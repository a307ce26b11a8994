//! Kafka protocol error codes: the one place where errors become the codes
//! clients see. Numbers come from `kafka-protocol`'s [`ResponseError`];
//! none is declared here.
//!
//! - [`ApiError::code`] / [`ApiError::kind`]: a handler's failure.
//! - [`log_error_code`]: an engine error ([`LogError`]), by variant (and,
//!   for invalid batches, by `BatchError::class()`), never by text.
//! - [`tiered_error_code`]: a remote-tier read ([`TieredError`]).
//! - `DynamicConfigError::code`: AlterConfigs / IncrementalAlterConfigs.
//! - `StoreError::group_error` / `StoreError::commit_error`: a failed write
//!   to `__consumer_offsets`, as JoinGroup/SyncGroup and OffsetCommit see it.
//!
//! The mappings of errors declared in other modules are inherent methods
//! written here, so those modules call them without importing this one
//! (the import graph stays acyclic).

use kafka_protocol::error::ResponseError;
use strata_log::batch::ErrorClass;
use strata_log::producer_state::ProducerStateError;
use strata_log::LogError;
use strata_tiered::TieredError;

use crate::api_error::ApiError;
use crate::dynamic_config::DynamicConfigError;
use crate::group::store::StoreError;

/// The `error_code` of a response part that succeeded (Kafka `Errors.NONE`).
pub(crate) const NONE: i16 = 0;

impl ApiError {
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
            ApiError::BrokerIdNotInteger { .. } | ApiError::UnexpectedBrokerId { .. } => {
                R::InvalidRequest
            }
            ApiError::Remote(e) => tiered_error_code(e),
            ApiError::Store(_) => R::UnknownServerError,
            ApiError::Log(e) => log_error_code(e),
        }
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

/// Map a failed remote-tier read (Fetch below the local log start).
pub(crate) fn tiered_error_code(e: &TieredError) -> ResponseError {
    use ResponseError as R;
    match e {
        TieredError::OffsetOutOfRange { .. } => R::OffsetOutOfRange,
        TieredError::Storage { .. } => R::KafkaStorageError,
        _ => R::UnknownServerError,
    }
}

impl DynamicConfigError {
    /// The Kafka error code AlterConfigs and IncrementalAlterConfigs answer
    /// (Kafka `ConfigAdminManager`: a bad request is INVALID_REQUEST, a list
    /// operation on a non-list config INVALID_CONFIG).
    pub(crate) fn code(&self) -> i16 {
        use ResponseError as R;
        match self {
            DynamicConfigError::NotAList { .. } => R::InvalidConfig,
            DynamicConfigError::Io { .. }
            | DynamicConfigError::Parse { .. }
            | DynamicConfigError::Version { .. } => R::UnknownServerError,
            DynamicConfigError::NotDynamic { .. }
            | DynamicConfigError::InvalidValue { .. }
            | DynamicConfigError::UnexpectedBrokerId { .. }
            | DynamicConfigError::BadBrokerId { .. }
            | DynamicConfigError::NullValue { .. }
            | DynamicConfigError::DuplicateKeys
            | DynamicConfigError::UnknownOperation { .. } => R::InvalidRequest,
        }
        .code()
    }
}

impl StoreError {
    /// Kafka `storeGroup`'s mapping of append errors for JoinGroup/SyncGroup.
    pub(crate) fn group_error(&self) -> ResponseError {
        match self {
            StoreError::Unavailable { .. } => ResponseError::CoordinatorNotAvailable,
            StoreError::Storage { .. } => ResponseError::NotCoordinator,
            StoreError::TooLarge { .. } => ResponseError::UnknownServerError,
        }
    }

    /// Kafka `maybeConvertOffsetCommitError` for OffsetCommit.
    pub(crate) fn commit_error(&self) -> ResponseError {
        match self {
            StoreError::Unavailable { .. } => ResponseError::CoordinatorNotAvailable,
            StoreError::Storage { .. } => ResponseError::NotCoordinator,
            StoreError::TooLarge { .. } => ResponseError::InvalidCommitOffsetSize,
        }
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
