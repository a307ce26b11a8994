//! What the broker remembers about one producer id (Kafka `ProducerStateEntry`,
//! `BatchMetadata`, `TxnMetadata`, `CompletedTxn`).
//!
//! The entry keeps the metadata of the producer's last
//! [`NUM_BATCHES_TO_RETAIN`] data batches inline, in a fixed array, so that
//! validating and recording an idempotent batch never touches the heap.

use crate::types::{Offset, ProducerEpoch, ProducerId, Timestamp};

/// How many recent batches of one producer are kept for duplicate detection
/// (Kafka `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`; the producer's default
/// `max.in.flight.requests.per.connection` is 5 for the same reason).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// "No sequence" (Kafka `RecordBatch.NO_SEQUENCE`).
pub const NO_SEQUENCE: i32 = -1;

/// `sequence - decrement`, wrapping below 0 to `i32::MAX` as Kafka's
/// `DefaultRecordBatch.decrementSequence` does. Java's `int` arithmetic
/// wraps, and so does this: a snapshot can restore any (CRC-valid) sequence
/// and delta, and a restored entry must not panic.
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// What producer state says about a producer, for the cleaner (Kafka
/// `LastRecord`): it keeps each such batch at least as an empty header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastRecord {
    /// Last offset of the producer's last data batch, if it has one.
    pub last_data_offset: Option<Offset>,
    pub producer_epoch: ProducerEpoch,
}

/// One retained data batch of a producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchMetadata {
    /// The batch's last sequence number.
    pub last_seq: i32,
    /// The batch's last offset.
    pub last_offset: Offset,
    /// `last_offset - first_offset` (= the batch's `lastOffsetDelta`).
    pub offset_delta: i32,
    /// The batch's MaxTimestamp.
    pub timestamp: Timestamp,
}

impl BatchMetadata {
    /// The batch's first sequence, wrapping past `i32::MAX` like the producer does.
    pub fn first_seq(&self) -> i32 {
        decrement_sequence(self.last_seq, self.offset_delta)
    }

    /// The batch's first (base) offset. Wraps as Kafka's `long` arithmetic
    /// does (a restored snapshot entry can carry any delta).
    pub fn first_offset(&self) -> Offset {
        Offset(
            self.last_offset
                .0
                .wrapping_sub(i64::from(self.offset_delta)),
        )
    }
}

const EMPTY_BATCH: BatchMetadata = BatchMetadata {
    last_seq: NO_SEQUENCE,
    last_offset: Offset(-1),
    offset_delta: 0,
    timestamp: Timestamp::NONE,
};

/// The state of one producer id.
///
/// Invariant: `batches[..len]` holds the retained batches oldest first, all of
/// epoch `producer_epoch` (changing the epoch clears them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerStateEntry {
    producer_id: ProducerId,
    producer_epoch: ProducerEpoch,
    coordinator_epoch: i32,
    last_timestamp: Timestamp,
    current_txn_first_offset: Option<Offset>,
    batches: [BatchMetadata; NUM_BATCHES_TO_RETAIN],
    len: u8,
}

impl ProducerStateEntry {
    /// A producer nothing is known about: epoch -1, coordinator epoch -1, no
    /// timestamp, no batches (Kafka `ProducerStateEntry.empty`).
    pub fn empty(producer_id: ProducerId) -> Self {
        Self::new(
            producer_id,
            ProducerEpoch::NONE,
            -1,
            Timestamp::NONE,
            None,
            None,
        )
    }

    /// An entry with at most one batch, as a snapshot restores it.
    pub fn new(
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        coordinator_epoch: i32,
        last_timestamp: Timestamp,
        current_txn_first_offset: Option<Offset>,
        batch: Option<BatchMetadata>,
    ) -> Self {
        let mut entry = ProducerStateEntry {
            producer_id,
            producer_epoch,
            coordinator_epoch,
            last_timestamp,
            current_txn_first_offset,
            batches: [EMPTY_BATCH; NUM_BATCHES_TO_RETAIN],
            len: 0,
        };
        if let Some(batch) = batch {
            entry.push_batch(batch);
        }
        entry
    }

    /// A copy carrying the same epochs, timestamp and transaction but no
    /// batches: the starting point of a pending update
    /// (Kafka `withProducerIdAndBatchMetadata(producerId, empty)`).
    pub(crate) fn without_batches(&self) -> Self {
        Self::new(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
            None,
        )
    }

    pub fn producer_id(&self) -> ProducerId {
        self.producer_id
    }
    pub fn producer_epoch(&self) -> ProducerEpoch {
        self.producer_epoch
    }
    /// Epoch of the last transaction coordinator that wrote a marker; -1 if none.
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }
    /// MaxTimestamp of the last data batch, or the timestamp of the last marker.
    pub fn last_timestamp(&self) -> Timestamp {
        self.last_timestamp
    }
    /// First offset of the ongoing transaction, if one is open.
    pub fn current_txn_first_offset(&self) -> Option<Offset> {
        self.current_txn_first_offset
    }
    /// The retained batches, oldest first.
    pub fn batch_metadata(&self) -> &[BatchMetadata] {
        &self.batches[..self.len as usize]
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn first(&self) -> Option<&BatchMetadata> {
        self.batch_metadata().first()
    }
    fn last(&self) -> Option<&BatchMetadata> {
        self.batch_metadata().last()
    }
    /// First sequence of the oldest retained batch, or -1.
    pub fn first_seq(&self) -> i32 {
        self.first().map_or(NO_SEQUENCE, BatchMetadata::first_seq)
    }
    /// Last sequence of the newest retained batch, or -1.
    pub fn last_seq(&self) -> i32 {
        self.last().map_or(NO_SEQUENCE, |b| b.last_seq)
    }
    /// First offset of the oldest retained batch, or -1.
    pub fn first_data_offset(&self) -> Offset {
        self.first().map_or(Offset(-1), BatchMetadata::first_offset)
    }
    /// Last offset of the newest retained batch, or -1.
    pub fn last_data_offset(&self) -> Offset {
        self.last().map_or(Offset(-1), |b| b.last_offset)
    }
    /// Offset delta of the newest retained batch, or 0.
    pub fn last_offset_delta(&self) -> i32 {
        self.last().map_or(0, |b| b.offset_delta)
    }

    /// The retained batch with exactly this sequence range, if any.
    pub fn batch_with_sequence_range(
        &self,
        first_seq: i32,
        last_seq: i32,
    ) -> Option<BatchMetadata> {
        self.batch_metadata()
            .iter()
            .find(|b| b.last_seq == last_seq && b.first_seq() == first_seq)
            .copied()
    }

    /// Duplicate lookup for an incoming batch of `epoch` covering
    /// `[first_seq, last_seq]` (Kafka `findDuplicateBatch`): only batches of
    /// the current epoch can be duplicates.
    pub fn find_duplicate(
        &self,
        epoch: ProducerEpoch,
        first_seq: i32,
        last_seq: i32,
    ) -> Option<BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batch_with_sequence_range(first_seq, last_seq)
    }

    /// Record a data batch (Kafka `addBatch`).
    pub(crate) fn add_batch(&mut self, epoch: ProducerEpoch, batch: BatchMetadata) {
        self.maybe_update_producer_epoch(epoch);
        self.push_batch(batch);
        self.last_timestamp = batch.timestamp;
    }

    /// Switch to `epoch`, dropping the retained batches if it differs.
    pub(crate) fn maybe_update_producer_epoch(&mut self, epoch: ProducerEpoch) -> bool {
        if self.producer_epoch == epoch {
            return false;
        }
        self.len = 0;
        self.producer_epoch = epoch;
        true
    }

    fn push_batch(&mut self, batch: BatchMetadata) {
        let len = self.len as usize;
        if len == NUM_BATCHES_TO_RETAIN {
            self.batches.copy_within(1.., 0);
            self.batches[NUM_BATCHES_TO_RETAIN - 1] = batch;
        } else {
            self.batches[len] = batch;
            self.len += 1;
        }
    }

    pub(crate) fn set_current_txn_first_offset(&mut self, offset: Option<Offset>) {
        self.current_txn_first_offset = offset;
    }

    /// Apply a marker: new epoch (clearing batches if it changed),
    /// coordinator epoch, timestamp; the transaction is over.
    pub(crate) fn update_for_marker(
        &mut self,
        epoch: ProducerEpoch,
        coordinator_epoch: i32,
        timestamp: Timestamp,
    ) {
        self.maybe_update_producer_epoch(epoch);
        self.coordinator_epoch = coordinator_epoch;
        self.current_txn_first_offset = None;
        self.last_timestamp = timestamp;
    }

    /// Merge a pending update into this (committed) entry (Kafka
    /// `ProducerStateEntry.update(nextEntry)`): the pending batches are
    /// appended after the retained ones, keeping the newest five.
    pub(crate) fn merge(&mut self, next: &ProducerStateEntry) {
        self.maybe_update_producer_epoch(next.producer_epoch);
        for batch in next.batch_metadata() {
            self.push_batch(*batch);
        }
        self.coordinator_epoch = next.coordinator_epoch;
        self.current_txn_first_offset = next.current_txn_first_offset;
        self.last_timestamp = next.last_timestamp;
    }
}

/// An open transaction on this partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: ProducerId,
    /// Offset of the transaction's first data batch.
    pub first_offset: Offset,
    /// Offset of its COMMIT/ABORT marker once completed.
    pub last_offset: Option<Offset>,
}

impl TxnMetadata {
    pub fn new(producer_id: ProducerId, first_offset: Offset) -> Self {
        TxnMetadata {
            producer_id,
            first_offset,
            last_offset: None,
        }
    }
}

/// A transaction ended by a marker (Kafka `CompletedTxn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompletedTxn {
    pub producer_id: ProducerId,
    /// First offset of the transaction (inclusive).
    pub first_offset: Offset,
    /// Offset of the COMMIT/ABORT marker (inclusive).
    pub last_offset: Offset,
    pub is_aborted: bool,
}
