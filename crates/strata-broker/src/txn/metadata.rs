//! One transactional id's state and Kafka's transition rules
//! (`TransactionMetadata` + the decisions of `TransactionCoordinator`),
//! pure: time and new producer ids come in as arguments, and every change
//! is two-phase — a `prepare_*` function checks the request, sets the
//! pending state and returns the [`Transit`] to write to
//! `__transaction_state`; once that record is durable [`TxnMetadata::complete`]
//! installs it (or [`TxnMetadata::abandon`] clears the pending state).
//!
//! The reference is docs/transactions.md and Kafka 3.9's
//! TransactionCoordinatorTest / TransactionMetadataTest cases.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;
use strata_log::codec::transaction_log::{TxnLogValue, TxnStatus};

/// A partition of a transaction: topic and index.
pub(crate) type TxnPartition = (String, i32);

/// The highest epoch a client is given: 32767 is kept for fencing.
const fn epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// The in-memory state of one transactional id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TxnMetadata {
    pub producer_id: i64,
    /// The producer id before the last rotation (memory only, as in Kafka).
    pub last_producer_id: i64,
    pub epoch: i16,
    /// The epoch before the last bump (memory only, as in Kafka).
    pub last_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnStatus,
    pub partitions: BTreeSet<TxnPartition>,
    pub start_ms: i64,
    pub last_update_ms: i64,
    /// A transition being written.
    pub pending: Option<TxnStatus>,
    /// The last fence's log write failed: do not bump the epoch again.
    pub has_failed_epoch_fence: bool,
}

/// The record a transition writes (Kafka `TxnTransitMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Transit {
    pub producer_id: i64,
    pub last_producer_id: i64,
    pub epoch: i16,
    pub last_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnStatus,
    pub partitions: BTreeSet<TxnPartition>,
    pub start_ms: i64,
    pub last_update_ms: i64,
}

impl Transit {
    /// The `__transaction_state` value of this transition.
    pub(crate) fn to_value(&self) -> TxnLogValue {
        let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
        for (topic, p) in &self.partitions {
            match by_topic.last_mut() {
                Some((t, ps)) if t == topic => ps.push(*p),
                _ => by_topic.push((topic.clone(), vec![*p])),
            }
        }
        TxnLogValue {
            producer_id: self.producer_id,
            producer_epoch: self.epoch,
            timeout_ms: self.timeout_ms,
            status: self.state,
            partitions: by_topic,
            last_update_timestamp_ms: self.last_update_ms,
            start_timestamp_ms: self.start_ms,
        }
    }
}

/// What InitProducerId must do after [`TxnMetadata::prepare_init`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InitStep {
    /// Write this Empty record, then answer with its producer id and epoch.
    Write(Transit),
    /// An ongoing transaction must be aborted first: write this
    /// PrepareAbort (epoch bumped), send its markers, answer
    /// CONCURRENT_TRANSACTIONS (the client retries).
    FenceAndAbort(Transit),
}

/// What EndTxn must do after [`TxnMetadata::prepare_end`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EndStep {
    /// Write this Prepare* record, answer, then send the markers.
    Write(Transit),
    /// The transaction already ended this way (a retry): answer NONE.
    AlreadyDone,
}

impl TxnMetadata {
    /// A new id, not yet written (epoch -1: the first InitProducerId gives 0).
    pub(crate) fn new(producer_id: i64, timeout_ms: i32, now: i64) -> TxnMetadata {
        TxnMetadata {
            producer_id,
            last_producer_id: -1,
            epoch: -1,
            last_epoch: -1,
            timeout_ms,
            state: TxnStatus::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            pending: None,
            has_failed_epoch_fence: false,
        }
    }

    /// The state a loaded record describes (no pending state, no last ids).
    pub(crate) fn from_value(v: &TxnLogValue) -> TxnMetadata {
        TxnMetadata {
            producer_id: v.producer_id,
            last_producer_id: -1,
            epoch: v.producer_epoch,
            last_epoch: -1,
            timeout_ms: v.timeout_ms,
            state: v.status,
            partitions: v
                .partitions
                .iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
                .collect(),
            start_ms: v.start_timestamp_ms,
            last_update_ms: v.last_update_timestamp_ms,
            pending: None,
            has_failed_epoch_fence: false,
        }
    }

    fn transit(&self, state: TxnStatus, now: i64) -> Transit {
        Transit {
            producer_id: self.producer_id,
            last_producer_id: self.last_producer_id,
            epoch: self.epoch,
            last_epoch: self.last_epoch,
            timeout_ms: self.timeout_ms,
            state,
            partitions: self.partitions.clone(),
            start_ms: self.start_ms,
            last_update_ms: now,
        }
    }

    fn begin(&mut self, t: Transit) -> Transit {
        self.pending = Some(t.state);
        t
    }

    /// Install a written transition.
    pub(crate) fn complete(&mut self, t: &Transit) {
        self.producer_id = t.producer_id;
        self.last_producer_id = t.last_producer_id;
        self.epoch = t.epoch;
        self.last_epoch = t.last_epoch;
        self.timeout_ms = t.timeout_ms;
        self.state = t.state;
        self.partitions = if matches!(
            t.state,
            TxnStatus::CompleteCommit | TxnStatus::CompleteAbort | TxnStatus::Empty
        ) {
            BTreeSet::new()
        } else {
            t.partitions.clone()
        };
        self.start_ms = t.start_ms;
        self.last_update_ms = t.last_update_ms;
        self.pending = None;
    }

    /// The write of a transition failed: forget it.
    pub(crate) fn abandon(&mut self) {
        self.pending = None;
    }

    /// InitProducerId for this id. `expected` is the request's (pid, epoch)
    /// when the client sent one; `allocate` gives a new producer id.
    ///
    /// # Errors
    /// The error code to answer.
    pub(crate) fn prepare_init(
        &mut self,
        expected: Option<(i64, i16)>,
        timeout_ms: i32,
        now: i64,
        allocate: impl FnOnce() -> Result<i64, ResponseError>,
    ) -> Result<InitStep, ResponseError> {
        if self.pending.is_some() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        let valid = match expected {
            None => true,
            Some((pid, epoch)) => {
                self.epoch == -1
                    || pid == self.producer_id
                    || (pid == self.last_producer_id && epoch_exhausted(epoch))
            }
        };
        if !valid {
            return Err(ResponseError::ProducerFenced);
        }
        match self.state {
            TxnStatus::PrepareAbort | TxnStatus::PrepareCommit => {
                Err(ResponseError::ConcurrentTransactions)
            }
            TxnStatus::Ongoing => {
                // Fence: abort the open transaction with a bumped epoch.
                if !self.has_failed_epoch_fence {
                    if self.epoch == i16::MAX {
                        return Err(ResponseError::UnknownServerError);
                    }
                    self.epoch += 1;
                }
                self.last_epoch = -1;
                let t = self.transit(TxnStatus::PrepareAbort, now);
                Ok(InitStep::FenceAndAbort(self.begin(t)))
            }
            TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort => {
                let retry_of_rotation = expected.is_some_and(|(pid, e)| {
                    pid == self.last_producer_id && e == self.last_epoch && self.last_epoch >= 0
                });
                if retry_of_rotation {
                    let t = self.empty_transit(self.producer_id, self.epoch, now, timeout_ms);
                    return Ok(InitStep::Write(self.begin(t)));
                }
                let exhausted =
                    epoch_exhausted(self.epoch) && expected.is_none_or(|(_, e)| e == self.epoch);
                if exhausted {
                    let new_pid = allocate()?;
                    let mut t = self.empty_transit(new_pid, 0, now, timeout_ms);
                    t.last_producer_id = self.producer_id;
                    t.last_epoch = if expected.is_some() { self.epoch } else { -1 };
                    return Ok(InitStep::Write(self.begin(t)));
                }
                if epoch_exhausted(self.epoch) {
                    return Err(ResponseError::ProducerFenced);
                }
                let (epoch, last_epoch) = match expected {
                    None => (self.epoch + 1, -1),
                    Some((_, e)) if self.epoch == -1 || e == self.epoch => {
                        (self.epoch + 1, self.epoch)
                    }
                    Some((_, e)) if e == self.last_epoch => (self.epoch, self.last_epoch),
                    Some(_) => return Err(ResponseError::ProducerFenced),
                };
                let mut t = self.empty_transit(self.producer_id, epoch, now, timeout_ms);
                t.last_epoch = last_epoch;
                Ok(InitStep::Write(self.begin(t)))
            }
            TxnStatus::Dead | TxnStatus::PrepareEpochFence => {
                Err(ResponseError::UnknownServerError)
            }
        }
    }

    fn empty_transit(&self, pid: i64, epoch: i16, now: i64, timeout_ms: i32) -> Transit {
        Transit {
            producer_id: pid,
            last_producer_id: self.producer_id,
            epoch,
            last_epoch: self.last_epoch,
            timeout_ms,
            state: TxnStatus::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
        }
    }

    /// The checks AddPartitionsToTxn, AddOffsetsToTxn and EndTxn share:
    /// producer id and epoch, pending transitions.
    fn check_producer(&self, pid: i64, epoch: i16) -> Result<(), ResponseError> {
        if pid != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if epoch != self.epoch {
            return Err(ResponseError::ProducerFenced);
        }
        if self.pending.is_some() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        Ok(())
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: `None` when every partition is
    /// already in the ongoing transaction (nothing to write).
    ///
    /// # Errors
    /// The error code to answer for every partition.
    pub(crate) fn prepare_add_partitions(
        &mut self,
        pid: i64,
        epoch: i16,
        partitions: &[TxnPartition],
        now: i64,
    ) -> Result<Option<Transit>, ResponseError> {
        self.check_producer(pid, epoch)?;
        match self.state {
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
                Err(ResponseError::ConcurrentTransactions)
            }
            TxnStatus::Ongoing if partitions.iter().all(|p| self.partitions.contains(p)) => {
                Ok(None)
            }
            TxnStatus::Dead | TxnStatus::PrepareEpochFence => {
                Err(ResponseError::UnknownServerError)
            }
            _ => {
                let mut t = self.transit(TxnStatus::Ongoing, now);
                if self.state != TxnStatus::Ongoing {
                    t.start_ms = now;
                    t.partitions.clear();
                }
                t.partitions.extend(partitions.iter().cloned());
                Ok(Some(self.begin(t)))
            }
        }
    }

    /// KIP-890 verification (AddPartitionsToTxn v4 `VerifyOnly`): whether
    /// `partition` is in the ongoing transaction; nothing changes.
    ///
    /// # Errors
    /// The code to answer: TRANSACTION_ABORTABLE when it is not.
    pub(crate) fn verify(
        &self,
        pid: i64,
        epoch: i16,
        partition: &TxnPartition,
    ) -> Result<(), ResponseError> {
        if pid != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if epoch != self.epoch {
            return Err(ResponseError::ProducerFenced);
        }
        match self.state {
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
                Err(ResponseError::ConcurrentTransactions)
            }
            TxnStatus::Ongoing if self.partitions.contains(partition) => Ok(()),
            _ => Err(ResponseError::TransactionAbortable),
        }
    }

    /// EndTxn. `from_client` is false for the coordinator's own aborts
    /// (fencing, timeouts), whose epoch may be above a stale client's.
    ///
    /// # Errors
    /// The error code to answer.
    pub(crate) fn prepare_end(
        &mut self,
        pid: i64,
        epoch: i16,
        commit: bool,
        from_client: bool,
        now: i64,
    ) -> Result<EndStep, ResponseError> {
        if pid != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        let fenced = if from_client {
            epoch != self.epoch
        } else {
            epoch < self.epoch
        };
        if fenced {
            return Err(ResponseError::ProducerFenced);
        }
        if self.pending.is_some() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        match (self.state, commit) {
            (TxnStatus::Ongoing, _) => {
                let state = if commit {
                    TxnStatus::PrepareCommit
                } else {
                    TxnStatus::PrepareAbort
                };
                let t = self.transit(state, now);
                Ok(EndStep::Write(self.begin(t)))
            }
            (TxnStatus::CompleteCommit, true) | (TxnStatus::CompleteAbort, false) => {
                Ok(EndStep::AlreadyDone)
            }
            (TxnStatus::PrepareCommit, true) | (TxnStatus::PrepareAbort, false) => {
                Err(ResponseError::ConcurrentTransactions)
            }
            (TxnStatus::Dead | TxnStatus::PrepareEpochFence, _) => {
                Err(ResponseError::UnknownServerError)
            }
            _ => Err(ResponseError::InvalidTxnState),
        }
    }

    /// After every marker is written: the Complete* transition of a
    /// Prepare* state (pending set).
    pub(crate) fn prepare_complete(&mut self, now: i64) -> Option<Transit> {
        let state = match self.state {
            TxnStatus::PrepareCommit => TxnStatus::CompleteCommit,
            TxnStatus::PrepareAbort => TxnStatus::CompleteAbort,
            _ => return None,
        };
        self.has_failed_epoch_fence = false;
        let t = self.transit(state, now);
        Some(self.begin(t))
    }

    /// The coordinator's timeout abort: the transition (epoch bumped) if
    /// this transaction is Ongoing, idle past its timeout and not changing.
    pub(crate) fn prepare_timeout_abort(&mut self, now: i64) -> Option<Transit> {
        if self.state != TxnStatus::Ongoing
            || self.pending.is_some()
            || self.start_ms + i64::from(self.timeout_ms) >= now
        {
            return None;
        }
        if !self.has_failed_epoch_fence {
            if self.epoch == i16::MAX {
                return None;
            }
            self.epoch += 1;
        }
        self.last_epoch = -1;
        let t = self.transit(TxnStatus::PrepareAbort, now);
        Some(self.begin(t))
    }

    /// Whether `transactional.id.expiration.ms` lets this id go.
    pub(crate) fn expired(&self, now: i64, expiration_ms: i64) -> bool {
        self.pending.is_none()
            && matches!(
                self.state,
                TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort
            )
            && self.last_update_ms <= now - expiration_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_pid() -> Result<i64, ResponseError> {
        Ok(99)
    }

    fn written(m: &mut TxnMetadata, step: InitStep) {
        match step {
            InitStep::Write(t) | InitStep::FenceAndAbort(t) => m.complete(&t),
        }
    }

    #[test]
    fn new_id_gets_epoch_zero_then_bumps() {
        let mut m = TxnMetadata::new(5, 60_000, 0);
        let s = m.prepare_init(None, 60_000, 1, ok_pid).unwrap();
        written(&mut m, s);
        assert_eq!((m.producer_id, m.epoch, m.state), (5, 0, TxnStatus::Empty));
        let s = m.prepare_init(None, 30_000, 2, ok_pid).unwrap();
        written(&mut m, s);
        assert_eq!((m.epoch, m.timeout_ms), (1, 30_000));
    }

    #[test]
    fn init_in_ongoing_fences_with_a_bumped_epoch() {
        let mut m = TxnMetadata::new(5, 60_000, 0);
        let s = m.prepare_init(None, 60_000, 1, ok_pid).unwrap();
        written(&mut m, s);
        let t = m
            .prepare_add_partitions(5, 0, &[("t".into(), 0)], 10)
            .unwrap()
            .unwrap();
        m.complete(&t);
        assert_eq!((m.state, m.start_ms), (TxnStatus::Ongoing, 10));
        let InitStep::FenceAndAbort(t) = m.prepare_init(None, 60_000, 20, ok_pid).unwrap() else {
            panic!("expected a fence")
        };
        assert_eq!((t.state, t.epoch), (TxnStatus::PrepareAbort, 1));
        // Meanwhile the old producer is fenced and retries are concurrent.
        assert_eq!(
            m.prepare_end(5, 0, true, true, 21),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            m.prepare_init(None, 60_000, 21, ok_pid),
            Err(ResponseError::ConcurrentTransactions)
        );
        m.complete(&t);
        let c = m.prepare_complete(30).unwrap();
        m.complete(&c);
        let s = m.prepare_init(None, 60_000, 40, ok_pid).unwrap();
        written(&mut m, s);
        assert_eq!((m.epoch, m.state), (2, TxnStatus::Empty));
    }

    #[test]
    fn a_failed_fence_does_not_bump_twice() {
        let mut m = TxnMetadata::new(5, 60_000, 0);
        m.state = TxnStatus::Ongoing;
        m.epoch = 3;
        let InitStep::FenceAndAbort(t) = m.prepare_init(None, 60_000, 1, ok_pid).unwrap() else {
            panic!()
        };
        assert_eq!(t.epoch, 4);
        m.abandon();
        m.has_failed_epoch_fence = true;
        let InitStep::FenceAndAbort(t) = m.prepare_init(None, 60_000, 2, ok_pid).unwrap() else {
            panic!()
        };
        assert_eq!(t.epoch, 4);
    }

    #[test]
    fn expectations_and_rotation() {
        let mut m = TxnMetadata::new(5, 60_000, 0);
        m.epoch = 10;
        m.last_epoch = 9;
        // (pid, current epoch): bump, and a retry of it gets the same answer.
        let s = m.prepare_init(Some((5, 10)), 60_000, 1, ok_pid).unwrap();
        written(&mut m, s);
        assert_eq!((m.epoch, m.last_epoch), (11, 10));
        let s = m.prepare_init(Some((5, 10)), 60_000, 2, ok_pid).unwrap();
        written(&mut m, s);
        assert_eq!(m.epoch, 11);
        // A stale epoch is fenced, a different pid too.
        assert_eq!(
            m.prepare_init(Some((5, 8)), 60_000, 3, ok_pid),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            m.prepare_init(Some((6, 11)), 60_000, 3, ok_pid),
            Err(ResponseError::ProducerFenced)
        );
        // Exhausted epoch: a new producer id with epoch 0.
        m.epoch = i16::MAX - 1;
        let s = m.prepare_init(None, 60_000, 4, ok_pid).unwrap();
        written(&mut m, s);
        assert_eq!((m.producer_id, m.epoch, m.last_producer_id), (99, 0, 5));
    }

    #[test]
    fn end_txn_table() {
        let mut m = TxnMetadata::new(5, 60_000, 0);
        m.epoch = 0;
        assert_eq!(
            m.prepare_end(5, 0, true, true, 1),
            Err(ResponseError::InvalidTxnState)
        );
        assert_eq!(
            m.prepare_end(6, 0, true, true, 1),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        m.state = TxnStatus::CompleteCommit;
        assert_eq!(m.prepare_end(5, 0, true, true, 1), Ok(EndStep::AlreadyDone));
        assert_eq!(
            m.prepare_end(5, 0, false, true, 1),
            Err(ResponseError::InvalidTxnState)
        );
        m.state = TxnStatus::PrepareCommit;
        assert_eq!(
            m.prepare_end(5, 0, true, true, 1),
            Err(ResponseError::ConcurrentTransactions)
        );
        assert_eq!(
            m.prepare_end(5, 0, false, true, 1),
            Err(ResponseError::InvalidTxnState)
        );
        m.state = TxnStatus::Ongoing;
        m.partitions.insert(("t".into(), 1));
        let EndStep::Write(t) = m.prepare_end(5, 0, true, true, 1).unwrap() else {
            panic!()
        };
        assert_eq!(t.state, TxnStatus::PrepareCommit);
        assert_eq!(t.to_value().partitions, vec![("t".to_string(), vec![1])]);
    }

    #[test]
    fn add_partitions_and_verify() {
        let mut m = TxnMetadata::new(5, 60_000, 0);
        m.epoch = 2;
        m.state = TxnStatus::CompleteCommit;
        let p = ("t".to_string(), 0);
        assert_eq!(m.verify(5, 2, &p), Err(ResponseError::TransactionAbortable));
        let t = m
            .prepare_add_partitions(5, 2, std::slice::from_ref(&p), 7)
            .unwrap()
            .unwrap();
        m.complete(&t);
        assert_eq!(m.verify(5, 2, &p), Ok(()));
        assert_eq!(
            m.prepare_add_partitions(5, 2, std::slice::from_ref(&p), 8),
            Ok(None)
        );
        assert_eq!(
            m.prepare_add_partitions(5, 1, &[p], 8),
            Err(ResponseError::ProducerFenced)
        );
    }

    #[test]
    fn timeouts_abort_only_idle_ongoing_transactions() {
        let mut m = TxnMetadata::new(5, 1000, 0);
        m.epoch = 0;
        m.state = TxnStatus::Ongoing;
        m.start_ms = 100;
        assert!(m.prepare_timeout_abort(1100).is_none());
        let t = m.prepare_timeout_abort(1101).unwrap();
        assert_eq!(
            (t.state, t.epoch, t.last_epoch),
            (TxnStatus::PrepareAbort, 1, -1)
        );
        assert!(m.prepare_timeout_abort(5000).is_none(), "pending");
    }
}
