//! Validation of one producer's batches into a pending update (Kafka
//! `ProducerAppendInfo`).
//!
//! A [`ProducerAppendInfo`] starts from a copy of the producer's committed
//! state, checks each batch against it (epoch fencing, sequence continuity,
//! transaction rules) and accumulates the result; the manager changes nothing
//! until [`super::ProducerStateManager::update`]. A failed check leaves the
//! manager untouched, so the caller can reject the whole append.
//!
//! Cost: the pending entry keeps its batches in a fixed array, and the list
//! of started transactions allocates only for transactional batches, so the
//! idempotent path allocates nothing.

use crate::batch::{BatchView, ControlRecordType, EndTransactionMarker};
use crate::types::{Offset, ProducerEpoch, ProducerId, Timestamp};

use super::entry::{BatchMetadata, CompletedTxn, ProducerStateEntry, TxnMetadata, NO_SEQUENCE};
use super::error::{ProducerStateError, SequenceFault};

/// Where an append comes from; decides how much is validated (Kafka `AppendOrigin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppendOrigin {
    /// A produce request: epochs, sequences and transactions are all checked.
    Client,
    /// A follower fetch or log recovery: already validated by the leader, so
    /// sequences are not checked and a stale epoch is only logged.
    Replication,
    /// The group or transaction coordinator: epochs (and coordinator epochs
    /// of markers) are checked, sequences are not.
    Coordinator,
}

/// A pending update of one producer's state.
#[derive(Clone, Debug)]
pub struct ProducerAppendInfo {
    producer_id: ProducerId,
    origin: AppendOrigin,
    /// The committed entry's epoch and last sequence (-1 epoch when unknown).
    current_epoch: ProducerEpoch,
    current_last_seq: i32,
    updated: ProducerStateEntry,
    started: Vec<TxnMetadata>,
}

impl ProducerAppendInfo {
    /// A pending update starting from `current` (the committed entry, or
    /// [`ProducerStateEntry::empty`]).
    pub fn new(
        producer_id: ProducerId,
        current: &ProducerStateEntry,
        origin: AppendOrigin,
    ) -> Self {
        ProducerAppendInfo {
            producer_id,
            origin,
            current_epoch: current.producer_epoch(),
            current_last_seq: current.last_seq(),
            updated: current.without_batches(),
            started: Vec::new(),
        }
    }

    pub fn producer_id(&self) -> ProducerId {
        self.producer_id
    }

    pub fn origin(&self) -> AppendOrigin {
        self.origin
    }

    /// The entry as it will be after the update (batches of this update only).
    pub fn to_entry(&self) -> &ProducerStateEntry {
        &self.updated
    }

    /// Transactions opened by the batches of this update.
    pub fn started_transactions(&self) -> &[TxnMetadata] {
        &self.started
    }

    pub(crate) fn into_parts(self) -> (ProducerId, ProducerStateEntry, Vec<TxnMetadata>) {
        (self.producer_id, self.updated, self.started)
    }

    /// Validate and record one batch whose offsets are already assigned
    /// (Kafka `ProducerAppendInfo.append`). Returns the transaction a
    /// COMMIT/ABORT marker completes, if one was open.
    ///
    /// An empty control batch (left by the cleaner) changes nothing.
    ///
    /// # Errors
    /// [`ProducerStateError::InvalidProducerEpoch`],
    /// [`ProducerStateError::OutOfOrderSequence`],
    /// [`ProducerStateError::InvalidTxnState`],
    /// [`ProducerStateError::TransactionCoordinatorFenced`],
    /// [`ProducerStateError::InvalidControlBatch`] for a marker that does not
    /// parse, [`ProducerStateError::ProducerIdMismatch`] for another producer's batch.
    pub fn append_batch(
        &mut self,
        batch: &BatchView<'_>,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        if batch.producer_id() != self.producer_id {
            return Err(ProducerStateError::ProducerIdMismatch {
                expected: self.producer_id,
                got: batch.producer_id(),
                offset: batch.base_offset(),
            });
        }
        if batch.is_control() {
            return self.append_control_batch(batch);
        }
        self.append_data_batch(
            batch.producer_epoch(),
            batch.base_sequence(),
            batch.last_sequence(),
            batch.max_timestamp(),
            batch.base_offset(),
            batch.last_offset(),
            batch.is_transactional(),
        )?;
        Ok(None)
    }

    fn append_control_batch(
        &mut self,
        batch: &BatchView<'_>,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        let invalid = |source| ProducerStateError::InvalidControlBatch {
            producer_id: self.producer_id,
            offset: batch.base_offset(),
            source,
        };
        // Markers are never compressed in practice; the scratch buffer is only
        // filled (and allocated) for a compressed control batch.
        let mut scratch = Vec::new();
        let mut records = batch.record_iter(&mut scratch).map_err(invalid)?;
        let Some(record) = records.next() else {
            // The cleaner removed the whole transaction; nothing to apply.
            return Ok(None);
        };
        let record = record.map_err(invalid)?;
        let marker = EndTransactionMarker::from_record(&record).map_err(invalid)?;
        self.append_end_txn_marker(
            marker,
            batch.producer_epoch(),
            batch.base_offset(),
            record.timestamp,
        )
    }

    /// Validate and record one data batch (Kafka `appendDataBatch`).
    ///
    /// # Errors
    /// As [`Self::append_batch`].
    #[allow(clippy::too_many_arguments)]
    pub fn append_data_batch(
        &mut self,
        epoch: ProducerEpoch,
        first_seq: i32,
        last_seq: i32,
        max_timestamp: Timestamp,
        first_offset: Offset,
        last_offset: Offset,
        is_transactional: bool,
    ) -> Result<(), ProducerStateError> {
        self.check_producer_epoch(epoch, first_offset)?;
        if self.origin == AppendOrigin::Client {
            self.check_sequence(epoch, first_seq, first_offset)?;
        }
        let txn = self.updated.current_txn_first_offset();
        match (txn, is_transactional) {
            (Some(txn_first_offset), false) => {
                return Err(ProducerStateError::InvalidTxnState {
                    producer_id: self.producer_id,
                    offset: first_offset,
                    txn_first_offset,
                });
            }
            (None, true) => {
                self.updated
                    .set_current_txn_first_offset(Some(first_offset));
                self.started
                    .push(TxnMetadata::new(self.producer_id, first_offset));
            }
            _ => {}
        }
        // Kafka records the batch before the transaction check; the order is
        // invisible because a failed append discards the whole update.
        self.updated.add_batch(
            epoch,
            BatchMetadata {
                last_seq,
                last_offset,
                offset_delta: (last_offset.0 - first_offset.0) as i32,
                timestamp: max_timestamp,
            },
        );
        Ok(())
    }

    /// Validate and record a COMMIT/ABORT marker at `offset` (Kafka
    /// `appendEndTxnMarker`). Completes the open transaction, if any.
    ///
    /// # Errors
    /// [`ProducerStateError::InvalidProducerEpoch`],
    /// [`ProducerStateError::TransactionCoordinatorFenced`].
    pub fn append_end_txn_marker(
        &mut self,
        marker: EndTransactionMarker,
        epoch: ProducerEpoch,
        offset: Offset,
        timestamp: Timestamp,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        self.check_producer_epoch(epoch, offset)?;
        let current_coordinator_epoch = self.updated.coordinator_epoch();
        if current_coordinator_epoch > marker.coordinator_epoch {
            if self.origin == AppendOrigin::Replication {
                tracing::info!(producer_id = self.producer_id.0, %offset, coordinator_epoch = marker.coordinator_epoch,
                    current_coordinator_epoch, "replicated marker from an older transaction coordinator");
            } else {
                return Err(ProducerStateError::TransactionCoordinatorFenced {
                    producer_id: self.producer_id,
                    offset,
                    coordinator_epoch: marker.coordinator_epoch,
                    current_coordinator_epoch,
                });
            }
        }
        // Only a non-empty transaction is reported: an empty one affects
        // neither the LSO nor the transaction index.
        let completed = self
            .updated
            .current_txn_first_offset()
            .map(|first_offset| CompletedTxn {
                producer_id: self.producer_id,
                first_offset,
                last_offset: offset,
                is_aborted: marker.control_type == ControlRecordType::Abort,
            });
        self.updated
            .update_for_marker(epoch, marker.coordinator_epoch, timestamp);
        Ok(completed)
    }

    /// Kafka `checkProducerEpoch`.
    fn check_producer_epoch(
        &self,
        epoch: ProducerEpoch,
        offset: Offset,
    ) -> Result<(), ProducerStateError> {
        let current_epoch = self.updated.producer_epoch();
        if epoch >= current_epoch {
            return Ok(());
        }
        if self.origin == AppendOrigin::Replication {
            tracing::warn!(producer_id = self.producer_id.0, %offset, epoch = epoch.0, current_epoch = current_epoch.0,
                "replicated batch with an epoch older than the last seen");
            Ok(())
        } else {
            Err(ProducerStateError::InvalidProducerEpoch {
                producer_id: self.producer_id,
                offset,
                epoch,
                current_epoch,
            })
        }
    }

    /// Kafka `checkSequence` (without the transaction-verification lowest
    /// sequence, which Strata does not implement).
    fn check_sequence(
        &self,
        epoch: ProducerEpoch,
        first_seq: i32,
        offset: Offset,
    ) -> Result<(), ProducerStateError> {
        let out_of_order = |fault| ProducerStateError::OutOfOrderSequence {
            producer_id: self.producer_id,
            offset,
            epoch,
            first_sequence: first_seq,
            fault,
        };
        let updated_epoch = self.updated.producer_epoch();
        if epoch != updated_epoch {
            // A new epoch restarts at 0, except for a producer we know nothing
            // about (its data may have been deleted): any sequence goes.
            if first_seq != 0 && updated_epoch != ProducerEpoch::NONE {
                return Err(out_of_order(SequenceFault::NewEpochNotAtZero {
                    current_epoch: updated_epoch,
                }));
            }
            return Ok(());
        }
        let last_seq = if !self.updated.is_empty() {
            self.updated.last_seq()
        } else if epoch == self.current_epoch {
            self.current_last_seq
        } else {
            NO_SEQUENCE
        };
        if self.current_epoch == ProducerEpoch::NONE || in_sequence(last_seq, first_seq) {
            Ok(())
        } else {
            Err(out_of_order(SequenceFault::NotNextInSequence {
                last_sequence: last_seq,
            }))
        }
    }
}

/// `next` follows `last`, wrapping from `i32::MAX` to 0 (Kafka `inSequence`;
/// compared in 64 bits so that `i32::MAX + 1` is not 0).
pub fn in_sequence(last: i32, next: i32) -> bool {
    next as i64 == last as i64 + 1 || (next == 0 && last == i32::MAX)
}

/// The pending updates of one append, one per producer id (Kafka's
/// `updatedProducers` map). The first producer is held inline, so the usual
/// single-producer append does not allocate.
#[derive(Debug, Default)]
pub struct ProducerUpdates {
    first: Option<ProducerAppendInfo>,
    rest: Vec<ProducerAppendInfo>,
    completed: Vec<CompletedTxn>,
}

impl ProducerUpdates {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// The pending update for `producer_id`, if a batch of it was added.
    pub fn get(&self, producer_id: ProducerId) -> Option<&ProducerAppendInfo> {
        self.first
            .iter()
            .chain(self.rest.iter())
            .find(|i| i.producer_id() == producer_id)
    }

    /// Transactions completed by markers of this append, in append order.
    pub fn completed_txns(&self) -> &[CompletedTxn] {
        &self.completed
    }

    pub(crate) fn info_for(
        &mut self,
        producer_id: ProducerId,
        prepare: impl FnOnce() -> ProducerAppendInfo,
    ) -> &mut ProducerAppendInfo {
        if self
            .first
            .as_ref()
            .is_some_and(|i| i.producer_id() == producer_id)
        {
            return self.first.as_mut().expect("checked above");
        }
        if self.first.is_none() {
            return self.first.insert(prepare());
        }
        match self
            .rest
            .iter()
            .position(|i| i.producer_id() == producer_id)
        {
            Some(at) => &mut self.rest[at],
            None => {
                self.rest.push(prepare());
                self.rest.last_mut().expect("just pushed")
            }
        }
    }

    pub(crate) fn push_completed(&mut self, txn: CompletedTxn) {
        self.completed.push(txn);
    }

    pub(crate) fn into_parts(
        self,
    ) -> (impl Iterator<Item = ProducerAppendInfo>, Vec<CompletedTxn>) {
        (self.first.into_iter().chain(self.rest), self.completed)
    }
}
