//! Errors of producer-state validation and snapshot files.
//!
//! Which Kafka error code each validation variant becomes (the broker maps
//! them in one place):
//!
//! | variant | Kafka error |
//! |---|---|
//! | [`ProducerStateError::InvalidProducerEpoch`] | `INVALID_PRODUCER_EPOCH` (47) — since 2.7 a stale epoch on produce is this, not `PRODUCER_FENCED` |
//! | [`ProducerStateError::OutOfOrderSequence`] | `OUT_OF_ORDER_SEQUENCE_NUMBER` (45) |
//! | [`ProducerStateError::InvalidTxnState`] | `INVALID_TXN_STATE` (48) |
//! | [`ProducerStateError::TransactionCoordinatorFenced`] | `TRANSACTION_COORDINATOR_FENCED` (52) |
//! | [`ProducerStateError::InvalidControlBatch`] | `INVALID_RECORD` (87) |
//!
//! `PRODUCER_FENCED` (90) is returned only by the transaction coordinator
//! (InitProducerId / AddPartitionsToTxn / EndTxn), and `UNKNOWN_PRODUCER_ID`
//! (59) is never returned by Kafka 3.9's log append path: an unknown producer
//! may start at any sequence (`ProducerAppendInfo.checkSequence`). So neither
//! has a variant here.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use crate::batch::BatchError;
use crate::types::{Offset, ProducerEpoch, ProducerId};

/// Why a sequence number was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceFault {
    /// A batch with a new epoch must start at sequence 0 (unless the
    /// producer's epoch is unknown).
    NewEpochNotAtZero { current_epoch: ProducerEpoch },
    /// The batch does not follow `last_sequence` (a gap, a replay beyond the
    /// duplicate window, or a non-zero start after a marker; -1 means none).
    NotNextInSequence { last_sequence: i32 },
}

impl fmt::Display for SequenceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceFault::NewEpochNotAtZero { current_epoch } => {
                write!(
                    f,
                    "new epoch must start at 0 (current epoch {})",
                    current_epoch.0
                )
            }
            SequenceFault::NotNextInSequence { last_sequence } => {
                write!(
                    f,
                    "expected {} after last sequence {last_sequence}",
                    expected_after(*last_sequence)
                )
            }
        }
    }
}

fn expected_after(last: i32) -> i64 {
    if last == i32::MAX {
        0
    } else {
        last as i64 + 1
    }
}

pub use crate::codec::snapshot::SnapshotCorruption;

/// Errors of [`super::ProducerStateManager`], [`super::ProducerAppendInfo`]
/// and the snapshot file functions.
#[derive(Debug, Error)]
pub enum ProducerStateError {
    /// A batch or marker with an epoch older than the producer's (CLIENT and
    /// COORDINATOR origins; replication only logs it).
    #[error("producer {producer_id:?} at offset {offset}: epoch {} is older than the current epoch {}", epoch.0, current_epoch.0)]
    InvalidProducerEpoch {
        producer_id: ProducerId,
        offset: Offset,
        epoch: ProducerEpoch,
        current_epoch: ProducerEpoch,
    },
    /// A client batch whose first sequence does not continue the producer's.
    #[error("producer {producer_id:?} epoch {} at offset {offset}: out of order sequence {first_sequence}: {fault}", epoch.0)]
    OutOfOrderSequence {
        producer_id: ProducerId,
        offset: Offset,
        epoch: ProducerEpoch,
        first_sequence: i32,
        fault: SequenceFault,
    },
    /// A non-transactional batch while the producer has a transaction open.
    #[error("producer {producer_id:?} at offset {offset}: non-transactional write inside the transaction started at {txn_first_offset}")]
    InvalidTxnState {
        producer_id: ProducerId,
        offset: Offset,
        txn_first_offset: Offset,
    },
    /// A marker from a transaction coordinator older than the last one seen.
    #[error("producer {producer_id:?} at offset {offset}: coordinator epoch {coordinator_epoch} is older than {current_coordinator_epoch}")]
    TransactionCoordinatorFenced {
        producer_id: ProducerId,
        offset: Offset,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
    /// A control batch whose record is not a valid COMMIT/ABORT marker.
    #[error("producer {producer_id:?} at offset {offset}: invalid transaction marker: {source}")]
    InvalidControlBatch {
        producer_id: ProducerId,
        offset: Offset,
        #[source]
        source: BatchError,
    },
    /// A batch handed to a [`super::ProducerAppendInfo`] prepared for another producer.
    #[error("batch at offset {offset} has producer {got:?}, but the update was prepared for {expected:?}")]
    ProducerIdMismatch {
        expected: ProducerId,
        got: ProducerId,
        offset: Offset,
    },
    /// A snapshot file that cannot be read as version 1.
    #[error("corrupt producer snapshot {path}: {reason}")]
    CorruptSnapshot {
        path: PathBuf,
        reason: SnapshotCorruption,
    },
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl ProducerStateError {
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> Self {
        ProducerStateError::Io {
            path: path.into(),
            op,
            source,
        }
    }
}
