//! Producer state: idempotent and transactional producers (Kafka
//! `ProducerStateManager` and friends; `docs/kafka-behaviour.md` §6,
//! `docs/producer-state.md`).
//!
//! For every producer id the partition remembers its epoch, the metadata of
//! its last five batches (to answer a retried batch with its original
//! offsets), its open transaction and the last transaction coordinator
//! epoch. The table is persisted in `<offset>.snapshot` files and rebuilt
//! from them plus the log at load.
//!
//! # Use from the log (append lock held)
//!
//! ```text
//! leader append, per batch with a producer id:
//!     if let Some(dup) = psm.find_duplicate_batch(&batch)  -> answer with dup's offsets, write nothing
//! assign offsets, then per batch:
//!     psm.validate_batch(&mut updates, &batch, AppendOrigin::Client)?   // nothing changes yet
//! write the records, then:
//!     for txn in psm.apply_updates(updates) { index.append(txn, psm.last_stable_offset(&txn)); psm.complete_txn(&txn) }
//!     psm.update_map_end_offset(last_offset + 1)
//! roll:      psm.update_map_end_offset(new_base); psm.take_snapshot(false)
//! close:     psm.take_snapshot(true)
//! load:      psm.remove_stray_snapshots(&bases); psm.rebuild_producer_state(..)
//! recovery:  psm.apply_replicated_batch(&batch) per recovered batch
//! ```
//!
//! # Modules
//!
//! - `entry`: [`ProducerStateEntry`], [`BatchMetadata`], transactions.
//! - `append`: [`ProducerAppendInfo`], the validation rules.
//! - `snapshot`: the `.snapshot` file format.
//! - `manager`: [`ProducerStateManager`].
//! - `rebuild`: loading state from snapshots and segments.
//! - `hash`: the keyed hash of the producer table.

mod append;
mod entry;
mod error;
mod hash;
mod manager;
mod rebuild;
mod snapshot;

pub use append::{AppendOrigin, ProducerAppendInfo, ProducerUpdates};
pub use entry::{CompletedTxn, LastRecord, ProducerStateEntry};
pub use error::{ProducerStateError, SequenceFault, SnapshotCorruption};
pub use manager::{ProducerStateManager, DEFAULT_PRODUCER_ID_EXPIRATION_MS};
pub use rebuild::BatchSink;
pub use snapshot::{read_snapshot, write_snapshot};

#[cfg(test)]
mod tests;
