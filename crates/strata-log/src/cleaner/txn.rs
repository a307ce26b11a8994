//! Transaction tracking while the cleaner reads (Kafka
//! `CleanedTransactionMetadata`, §11.6): which data batches belong to
//! aborted transactions, and which COMMIT/ABORT markers may go.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use crate::batch::{BatchView, ControlRecordType};
use crate::fs::SharedFs;
use crate::index::{AbortedTxn, IndexError, TransactionIndex};
use crate::types::{Offset, ProducerId};

/// An aborted transaction being read, and whether any of its batches was
/// seen in this pass.
#[derive(Clone, Copy, Debug)]
struct OngoingAbort {
    txn: AbortedTxn,
    last_observed_batch_offset: Option<Offset>,
}

/// The cleaner's transaction state, carried across the segments of a pass.
#[derive(Debug, Default)]
pub struct CleanedTxnMetadata {
    /// Aborted transactions not reached yet, by first offset (then insertion).
    pending: BTreeMap<(Offset, usize), AbortedTxn>,
    seq: usize,
    ongoing_committed: HashSet<ProducerId>,
    ongoing_aborted: HashMap<ProducerId, OngoingAbort>,
    /// ABORT entries the cleaned segment's `.txnindex` must get (markers kept).
    retained_aborts: Vec<AbortedTxn>,
}

impl CleanedTxnMetadata {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_aborted(&mut self, txns: impl IntoIterator<Item = AbortedTxn>) {
        for t in txns {
            self.pending.insert((t.first_offset, self.seq), t);
            self.seq += 1;
        }
    }

    fn consume_up_to(&mut self, offset: Offset) {
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > offset {
                break;
            }
            let txn = entry.remove();
            self.ongoing_aborted
                .entry(txn.producer_id)
                .or_insert(OngoingAbort {
                    txn,
                    last_observed_batch_offset: None,
                });
        }
    }

    /// A data batch was read: true when it belongs to an aborted
    /// transaction (discardable).
    pub fn on_batch_read(&mut self, batch: &BatchView<'_>) -> bool {
        self.consume_up_to(batch.last_offset());
        if !batch.is_transactional() {
            return false;
        }
        match self.ongoing_aborted.get_mut(&batch.producer_id()) {
            Some(a) => {
                a.last_observed_batch_offset = Some(batch.last_offset());
                true
            }
            None => {
                self.ongoing_committed.insert(batch.producer_id());
                false
            }
        }
    }

    /// A control batch was read: true when it is discardable. A kept ABORT
    /// marker's entry is queued for the cleaned `.txnindex`.
    ///
    /// `control_type` is the type of the batch's first record, `None` for
    /// an empty control batch.
    pub fn on_control_batch_read(
        &mut self,
        batch: &BatchView<'_>,
        control_type: Option<ControlRecordType>,
    ) -> bool {
        self.consume_up_to(batch.last_offset());
        let pid = batch.producer_id();
        match control_type {
            None => true,
            Some(ControlRecordType::Abort) => match self.ongoing_aborted.remove(&pid) {
                Some(a) if a.last_observed_batch_offset.is_some() => {
                    self.retained_aborts.push(a.txn);
                    false
                }
                _ => true,
            },
            Some(ControlRecordType::Commit) => !self.ongoing_committed.remove(&pid),
            Some(_) => false,
        }
    }

    /// Take the ABORT entries queued for the cleaned segment's `.txnindex`.
    pub fn take_retained_aborts(&mut self) -> Vec<AbortedTxn> {
        std::mem::take(&mut self.retained_aborts)
    }
}

/// Kafka `collectAbortedTransactions(start, upper)` over `.txnindex` files:
/// from the segment holding `start` onwards until an entry's LSO reaches
/// `upper`. `segments` are `(base, txn index path)` oldest first.
///
/// # Errors
/// I/O and corruption errors reading an index.
pub fn collect_aborted(
    fs: &SharedFs,
    segments: &[(Offset, &Path)],
    start: Offset,
    upper: Offset,
) -> Result<Vec<AbortedTxn>, IndexError> {
    let from = segments.iter().rposition(|(b, _)| *b <= start).unwrap_or(0);
    let mut out = Vec::new();
    for (base, path) in &segments[from..] {
        if !path.exists() {
            continue;
        }
        let idx = TransactionIndex::open(fs, path, *base)?;
        let r = idx.collect_aborted_txns(start, upper)?;
        out.extend(r.aborted);
        if r.is_complete {
            break;
        }
    }
    Ok(out)
}
