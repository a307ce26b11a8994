//! The transaction coordinator (KIP-98 exactly-once, KIP-890 part 1
//! verification), with its state in the internal compacted topic
//! `__transaction_state` in Kafka 3.9's record format
//! (`strata_log::codec::transaction_log`).
//!
//! # Layout
//!
//! - `config`: `transaction.*` broker properties.
//! - `metadata`: one transactional id's state and Kafka's transition rules (pure).
//! - `coordinator`: the runtime — the cache of owned partitions, writes,
//!   marker fan-out, loading, the timeout and expiration task.
//!
//! Transactional id → partition: the same Java-hash rule as groups
//! (`group::partition_for`) over `transaction.state.log.num.partitions`.

pub(crate) mod config;
pub(crate) mod coordinator;
pub(crate) mod metadata;

/// The internal topic holding transaction state.
pub(crate) const TXN_TOPIC: &str = "__transaction_state";

#[cfg(test)]
mod hash_tests {
    use crate::group::partition_for;

    #[test]
    fn partition_matches_kafka() {
        // Vectors from docs/transactions.md (Kafka's partitionFor over 50).
        assert_eq!(partition_for("txn-1", 50), 10);
        assert_eq!(partition_for("my-transactional-id", 50), 46);
        assert_eq!(partition_for("producer-0", 50), 29);
        assert_eq!(partition_for("\u{e9}", 50), 33);
    }
}
