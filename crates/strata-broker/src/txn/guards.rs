//! KIP-890 verification guards on the partition leader (see `txn_verify`
//! for the flow): per partition, the guard each producer's pending
//! verification was given. A marker append removes the producer's guard
//! under the same lock the transactional append checks it under.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_protocol::error::ResponseError;
use strata_log::{Log, TopicPartition};

use crate::api_error::ApiError;

/// Producer id -> guard, per partition.
type Guards = HashMap<i64, u64>;

/// The verification guards of every partition this broker leads.
#[derive(Debug, Default)]
pub(crate) struct Verifications {
    partitions: Mutex<HashMap<TopicPartition, Arc<Mutex<Guards>>>>,
    next_guard: AtomicU64,
}

impl Verifications {
    fn of(&self, tp: &TopicPartition) -> Arc<Mutex<Guards>> {
        let mut all = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(tp.clone()).or_default().clone()
    }

    /// Hold `tp`'s guards while appending to it.
    pub(crate) fn lock(&self, tp: &TopicPartition) -> PartitionGuards {
        PartitionGuards(self.of(tp))
    }

    pub(crate) fn begin(&self, tp: &TopicPartition, producer_id: i64) -> u64 {
        let guard = self.next_guard.fetch_add(1, Ordering::Relaxed) + 1;
        self.of(tp)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(producer_id, guard);
        guard
    }

    pub(crate) fn forget(&self, tp: &TopicPartition, producer_id: i64, guard: u64) {
        let g = self.of(tp);
        let mut g = g.lock().unwrap_or_else(|p| p.into_inner());
        if g.get(&producer_id) == Some(&guard) {
            g.remove(&producer_id);
        }
    }
}

/// One partition's guards, to be locked around an append.
pub(crate) struct PartitionGuards(Arc<Mutex<Guards>>);

impl PartitionGuards {
    pub(crate) fn hold(&self) -> MutexGuard<'_, Guards> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `producer_id` has a transaction open on `log`.
pub(crate) fn in_transaction(log: &Log, producer_id: i64) -> bool {
    log.producer_state_of(strata_log::ProducerId(producer_id))
        .is_some_and(|e| e.current_txn_first_offset().is_some())
}

/// Under `tp`'s held guards: may this producer's transactional batch be
/// appended with `guard`? (It may if its transaction is already open.)
///
/// # Errors
/// INVALID_TXN_STATE when a marker ended the transaction meanwhile.
pub(crate) fn check_guard(
    guards: &mut Guards,
    log: &Log,
    producer_id: i64,
    guard: Option<u64>,
) -> Result<(), ApiError> {
    let ok = match guard {
        Some(g) => guards.get(&producer_id) == Some(&g),
        None => true,
    } || in_transaction(log, producer_id);
    if !ok {
        return Err(ApiError::Transaction {
            code: ResponseError::InvalidTxnState,
            reason: "Record was not part of an ongoing transaction",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::{LogConfig, LogManager, LogManagerConfig, SystemClock};

    #[test]
    fn a_marker_between_verification_and_append_invalidates_the_guard() {
        let dir = tempfile::tempdir().unwrap();
        let manager = LogManager::open(
            LogManagerConfig::new(vec![dir.path().to_path_buf()]),
            SystemClock::shared(),
        )
        .unwrap();
        let tp = TopicPartition::new("t", 0);
        let log = manager
            .get_or_create_log(&tp, LogConfig::default(), None)
            .unwrap();
        let v = Verifications::default();
        // Verified, nothing in between: the append may go ahead.
        let g1 = v.begin(&tp, 7);
        assert!(check_guard(&mut v.lock(&tp).hold(), &log, 7, Some(g1)).is_ok());
        // A marker for producer 7 removed the guard (as `internal_append` does).
        let g2 = v.begin(&tp, 7);
        v.lock(&tp).hold().remove(&7);
        let e = check_guard(&mut v.lock(&tp).hold(), &log, 7, Some(g2)).unwrap_err();
        assert_eq!(e.kind(), ResponseError::InvalidTxnState);
        // A newer verification replaced the guard: the older one is stale.
        let g3 = v.begin(&tp, 7);
        let _g4 = v.begin(&tp, 7);
        assert!(check_guard(&mut v.lock(&tp).hold(), &log, 7, Some(g3)).is_err());
        // forget() leaves a newer guard alone.
        v.forget(&tp, 7, g3);
        assert_eq!(v.lock(&tp).hold().len(), 1);
    }
}
