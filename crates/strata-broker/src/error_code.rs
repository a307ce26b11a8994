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
use strata_log::LogError;
use strata_log::ProducerStateError;
use strata_tiered::TieredError;

use crate::api_error::ApiError;
use crate::cluster::{ElectionRefused, ReassignmentRefused};
use crate::dynamic_config::DynamicConfigError;
use crate::group::store::StoreError;

/// The `error_code` of a response part that succeeded (Kafka `Errors.NONE`).
pub(crate) const NONE: i16 = 0;

/// The `error_code` of an optional error: `None` is [`NONE`].
pub(crate) fn code_of(error: Option<ResponseError>) -> i16 {
    error.map_or(NONE, |e| e.code())
}

impl ApiError {
    /// The Kafka error code for this failure.
    pub(crate) fn code(&self) -> i16 {
        self.kind().code()
    }

    pub(crate) fn kind(&self) -> ResponseError {
        use ResponseError as R;
        match self {
            ApiError::UnknownTopicOrPartition => R::UnknownTopicOrPartition,
            ApiError::TopicAuthorizationFailed => R::TopicAuthorizationFailed,
            ApiError::UnknownTopicId => R::UnknownTopicId,
            ApiError::InvalidTopic { .. } => R::InvalidTopicException,
            ApiError::InvalidPartitions { .. } => R::InvalidPartitions,
            ApiError::InvalidReplicationFactor { .. }
            | ApiError::InvalidReplicationFactorOther { .. } => R::InvalidReplicationFactor,
            ApiError::InvalidReplicaAssignment { .. } => R::InvalidReplicaAssignment,
            ApiError::InvalidConfig(_) | ApiError::InvalidConfigOther { .. } => R::InvalidConfig,
            ApiError::TopicAlreadyExists => R::TopicAlreadyExists,
            ApiError::InvalidRequest { .. } => R::InvalidRequest,
            ApiError::InvalidRequiredAcks { .. } => R::InvalidRequiredAcks,
            ApiError::OffsetAboveHighWatermark { .. } => R::OffsetOutOfRange,
            ApiError::UnknownLeaderEpoch { .. } => R::UnknownLeaderEpoch,
            ApiError::FencedLeaderEpoch { .. } => R::FencedLeaderEpoch,
            ApiError::NotEnoughReplicas { .. } => R::NotEnoughReplicas,
            ApiError::NotEnoughReplicasAfterAppend { .. } => R::NotEnoughReplicasAfterAppend,
            ApiError::ReplicationTimedOut { .. } => R::RequestTimedOut,
            ApiError::UnsupportedCompression => R::UnsupportedCompressionType,
            ApiError::FetchSessionIdNotFound { .. } => R::FetchSessionIdNotFound,
            ApiError::InvalidFetchSessionEpoch { .. } => R::InvalidFetchSessionEpoch,
            ApiError::FetchSessionTopicIdError { .. } => R::FetchSessionTopicIdError,
            ApiError::PartitionOffline { .. } => R::KafkaStorageError,
            ApiError::LeaderNotAvailable => R::LeaderNotAvailable,
            ApiError::NotLeaderOrFollower => R::NotLeaderOrFollower,
            ApiError::Transaction { code, .. } => *code,
            // etcd unreachable, no controller, a lost race: retriable, and
            // the message says which.
            ApiError::Cluster(_) => R::RequestTimedOut,
            ApiError::Election(e) => match e {
                ElectionRefused::NotNeeded => R::ElectionNotNeeded,
                ElectionRefused::PreferredNotAvailable => R::PreferredLeaderNotAvailable,
                ElectionRefused::EligibleNotAvailable => R::EligibleLeadersNotAvailable,
            },
            ApiError::Reassignment(e) => match e {
                ReassignmentRefused::NotInProgress => R::NoReassignmentInProgress,
                ReassignmentRefused::Empty
                | ReassignmentRefused::Duplicate(_)
                | ReassignmentRefused::UnknownBroker(_)
                | ReassignmentRefused::CancelEmptiesIsr => R::InvalidReplicaAssignment,
            },
            ApiError::BrokerIdNotInteger { .. } | ApiError::UnexpectedBrokerId { .. } => {
                R::InvalidRequest
            }
            ApiError::Remote(e) => tiered_error_code(e),
            ApiError::Store(_) => R::UnknownServerError,
            ApiError::Log(e) => log_error_code(e),
        }
    }
}

/// Map an engine error to the Kafka error code a client should see, as
/// Kafka's `ReplicaManager` answers the matching exceptions; every variant
/// is listed so a new one needs a decision here.
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
        // Kafka `KafkaStorageException`: the log dir failed or is offline.
        LogError::DirOffline { .. }
        | LogError::NoOnlineDir
        | LogError::Io { .. }
        | LogError::Index { .. }
        | LogError::Checkpoint { .. } => R::KafkaStorageError,
        LogError::Closed { .. } => R::NotLeaderOrFollower,
        LogError::UnknownLogDir { .. } => R::LogDirNotFound,
        LogError::Config { .. } => R::InvalidConfig,
        LogError::ProducerState { source, .. } => producer_state_code(source),
        // Broker-internal failures Kafka answers as any other throwable.
        LogError::OffsetOverflow { .. }
        | LogError::UnexpectedAppendOffset { .. }
        | LogError::NonMonotonicOffsets { .. }
        | LogError::InvalidOffset { .. }
        | LogError::SegmentExists { .. }
        | LogError::InvalidDir { .. }
        | LogError::DirLocked { .. } => R::UnknownServerError,
    }
}

/// Map a failed remote-tier read (Fetch below the local log start).
pub(crate) fn tiered_error_code(e: &TieredError) -> ResponseError {
    use ResponseError as R;
    match e {
        TieredError::OffsetOutOfRange { .. } => R::OffsetOutOfRange,
        TieredError::Storage { .. } => R::KafkaStorageError,
        TieredError::Log { source, .. } => log_error_code(source),
        TieredError::Metadata { .. }
        | TieredError::NotTiered { .. }
        | TieredError::PoolFull(_)
        | TieredError::CorruptSegment { .. }
        | TieredError::CorruptTxnIndex { .. }
        | TieredError::Cancelled => R::UnknownServerError,
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
            DynamicConfigError::Cluster { .. } => R::RequestTimedOut,
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
            StoreError::Fenced { .. } => ResponseError::InvalidProducerEpoch,
        }
    }

    /// Kafka `maybeConvertOffsetCommitError` for OffsetCommit.
    pub(crate) fn commit_error(&self) -> ResponseError {
        match self {
            StoreError::Unavailable { .. } => ResponseError::CoordinatorNotAvailable,
            StoreError::Storage { .. } => ResponseError::NotCoordinator,
            StoreError::TooLarge { .. } => ResponseError::InvalidCommitOffsetSize,
            StoreError::Fenced { .. } => ResponseError::InvalidProducerEpoch,
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
    //! Each engine, remote-tier, dynamic-config and group-store error kind
    //! against the number Kafka answers for it (`Errors.java`), written as
    //! numbers so a wrong `ResponseError` variant fails.

    use std::io;
    use std::path::PathBuf;

    use strata_log::batch::BatchError;
    use strata_log::IndexError;
    use strata_log::{Offset, Timestamp, TopicPartition};
    use strata_tiered::{MetadataError, RemoteStorageError};

    use super::*;
    use crate::offline::OfflineReason;

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    fn code(e: &LogError) -> i16 {
        log_error_code(e).code()
    }

    fn batch(source: BatchError) -> LogError {
        LogError::Batch { tp: tp(), source }
    }

    fn io_error() -> io::Error {
        io::Error::from_raw_os_error(28) // ENOSPC
    }

    #[test]
    fn invalid_batches_map_by_class() {
        let corrupt = BatchError::ChecksumMismatch {
            stored: 1,
            computed: 2,
        };
        assert_eq!(code(&batch(corrupt.at(0))), 2, "CORRUPT_MESSAGE");
        let count = BatchError::CountMismatch {
            declared: 2,
            actual: 1,
        };
        assert_eq!(code(&batch(count)), 87, "INVALID_RECORD");
        let ts = BatchError::InvalidTimestamp {
            record_index: 0,
            timestamp: Timestamp(0),
            min: 1,
            max: 2,
        };
        assert_eq!(code(&batch(ts)), 32, "INVALID_TIMESTAMP");
        let big = BatchError::RecordTooLarge { size: 10, max: 5 };
        assert_eq!(code(&batch(big)), 10, "MESSAGE_TOO_LARGE");
    }

    #[test]
    fn storage_failures_are_kafka_storage_error() {
        let dir = PathBuf::from("/d");
        let io = LogError::Io {
            path: dir.clone(),
            op: "append",
            source: io_error(),
        };
        let index = LogError::Index {
            source: IndexError::Full {
                path: dir.clone(),
                entries: 1,
            },
        };
        let checkpoint = LogError::Checkpoint {
            path: dir.clone(),
            source: Box::new(io_error()),
        };
        let offline = LogError::DirOffline { dir: dir.clone() };
        for e in [io, index, checkpoint, offline, LogError::NoOnlineDir] {
            assert_eq!(code(&e), 56, "KAFKA_STORAGE_ERROR for {e}");
        }
    }

    #[test]
    fn range_size_state_and_config_errors() {
        let oor = LogError::OffsetOutOfRange {
            tp: tp(),
            requested: Offset(9),
            log_start: Offset(0),
            log_end: Offset(3),
        };
        assert_eq!(code(&oor), 1, "OFFSET_OUT_OF_RANGE");
        let big = LogError::RecordBatchTooLarge {
            tp: tp(),
            size: 10,
            segment_bytes: 5,
        };
        assert_eq!(code(&big), 18, "RECORD_LIST_TOO_LARGE");
        assert_eq!(
            code(&LogError::Closed { tp: tp() }),
            6,
            "NOT_LEADER_OR_FOLLOWER"
        );
        let config = LogError::Config {
            source: strata_log::ConfigError::Unknown { name: "x".into() },
        };
        assert_eq!(code(&config), 40, "INVALID_CONFIG");
    }

    #[test]
    fn internal_engine_failures_are_unknown_server_error() {
        let internal = [
            LogError::OffsetOverflow {
                path: "/d".into(),
                base_offset: Offset(0),
                largest: Offset(1 << 40),
            },
            LogError::UnexpectedAppendOffset {
                tp: tp(),
                first: Offset(0),
                log_end: Offset(5),
            },
            LogError::NonMonotonicOffsets {
                tp: tp(),
                previous: Offset(5),
                offset: Offset(4),
            },
            LogError::InvalidOffset {
                tp: tp(),
                offset: Offset(-3),
                reason: "negative",
            },
            LogError::SegmentExists {
                tp: tp(),
                base_offset: Offset(0),
            },
            LogError::InvalidDir {
                path: "/d".into(),
                reason: "not a partition",
            },
            LogError::DirLocked { dir: "/d".into() },
        ];
        for e in internal {
            assert_eq!(code(&e), -1, "UNKNOWN_SERVER_ERROR for {e}");
        }
    }

    #[test]
    fn producer_state_errors_map_to_kafka_codes() {
        use strata_log::SequenceFault;
        use strata_log::{ProducerEpoch, ProducerId};
        let wrap = |source| LogError::ProducerState { tp: tp(), source };
        let epoch = wrap(ProducerStateError::InvalidProducerEpoch {
            producer_id: ProducerId(1),
            offset: Offset(0),
            epoch: ProducerEpoch(0),
            current_epoch: ProducerEpoch(1),
        });
        assert_eq!(code(&epoch), 47);
        let seq = wrap(ProducerStateError::OutOfOrderSequence {
            producer_id: ProducerId(1),
            offset: Offset(0),
            epoch: ProducerEpoch(0),
            first_sequence: 9,
            fault: SequenceFault::NotNextInSequence { last_sequence: 3 },
        });
        assert_eq!(code(&seq), 45);
        let txn = wrap(ProducerStateError::InvalidTxnState {
            producer_id: ProducerId(1),
            offset: Offset(0),
            txn_first_offset: Offset(0),
        });
        assert_eq!(code(&txn), 48);
        let fenced = wrap(ProducerStateError::TransactionCoordinatorFenced {
            producer_id: ProducerId(1),
            offset: Offset(0),
            coordinator_epoch: 1,
            current_coordinator_epoch: 2,
        });
        assert_eq!(code(&fenced), 52);
    }

    #[test]
    fn remote_tier_errors() {
        let oor = TieredError::OffsetOutOfRange {
            tp: tp(),
            offset: Offset(3),
        };
        assert_eq!(tiered_error_code(&oor).code(), 1);
        let storage = TieredError::Storage {
            tp: tp(),
            source: Box::new(RemoteStorageError::NotFound { key: "k".into() }),
        };
        assert_eq!(tiered_error_code(&storage).code(), 56);
        let local = TieredError::Log {
            tp: tp(),
            source: Box::new(LogError::DirOffline { dir: "/d".into() }),
        };
        assert_eq!(tiered_error_code(&local).code(), 56);
        let metadata = TieredError::Metadata {
            tp: tp(),
            source: Box::new(MetadataError::NotInitialized),
        };
        let corrupt = TieredError::CorruptSegment {
            tp: tp(),
            segment: "s".into(),
            position: 0,
        };
        for e in [metadata, corrupt, TieredError::Cancelled] {
            assert_eq!(tiered_error_code(&e).code(), -1, "{e}");
        }
        // A handler's remote failure goes through the same mapping.
        assert_eq!(ApiError::Remote(oor).code(), 1);
    }

    #[test]
    fn handler_errors() {
        assert_eq!(ApiError::UnknownTopicOrPartition.code(), 3);
        assert_eq!(ApiError::TopicAlreadyExists.code(), 36);
        assert_eq!(ApiError::LeaderNotAvailable.code(), 5);
        let offline = ApiError::PartitionOffline {
            tp: tp(),
            reason: OfflineReason::DirOffline { dir: "/d".into() },
        };
        assert_eq!(offline.code(), 56);
        let bad_id = ApiError::BrokerIdNotInteger { name: "x".into() };
        assert_eq!(bad_id.code(), 42, "INVALID_REQUEST");
        let other = ApiError::UnexpectedBrokerId {
            expected: 1,
            name: "2".into(),
        };
        assert_eq!(other.code(), 42);
        assert_eq!(ApiError::Log(LogError::NoOnlineDir).code(), 56);
    }

    #[test]
    fn dynamic_config_errors() {
        let not_list = DynamicConfigError::NotAList {
            op: "APPEND",
            name: "x".into(),
        };
        assert_eq!(not_list.code(), 40, "INVALID_CONFIG");
        assert_eq!(
            DynamicConfigError::DuplicateKeys.code(),
            42,
            "INVALID_REQUEST"
        );
        let not_dynamic = DynamicConfigError::NotDynamic {
            names: vec!["x".into()],
        };
        assert_eq!(not_dynamic.code(), 42);
        let io = DynamicConfigError::Io {
            path: "/d".into(),
            op: "write",
            source: io_error(),
        };
        assert_eq!(io.code(), -1, "UNKNOWN_SERVER_ERROR");
    }

    #[test]
    fn consumer_offsets_store_errors() {
        let unavailable = StoreError::Unavailable {
            partition: 0,
            source: None,
        };
        let storage = StoreError::Storage {
            partition: 0,
            source: Box::new(io_error()),
        };
        let too_large = StoreError::TooLarge {
            partition: 0,
            size: 1,
        };
        // JoinGroup/SyncGroup: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
        // UNKNOWN_SERVER_ERROR.
        assert_eq!(unavailable.group_error().code(), 15);
        assert_eq!(storage.group_error().code(), 16);
        assert_eq!(too_large.group_error().code(), -1);
        // OffsetCommit: ... INVALID_COMMIT_OFFSET_SIZE for a too-large batch.
        assert_eq!(unavailable.commit_error().code(), 15);
        assert_eq!(storage.commit_error().code(), 16);
        assert_eq!(too_large.commit_error().code(), 28);
    }
}
