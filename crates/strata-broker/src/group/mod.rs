//! The group coordinator: classic consumer groups, KIP-848 consumer groups
//! (`consumer`) and committed offsets, stored in the internal compacted
//! topic `__consumer_offsets` as Kafka does.
//!
//! # Layout
//!
//! - `records`: the key/value codecs of `__consumer_offsets` records.
//! - `records_consumer`: the KIP-848 consumer-group records (types 3–8, 16).
//! - `records_json`: any of them as `kafka-dump-log --offsets-decoder` prints it.
//! - `config`: `group.*` / `offsets.*` broker properties.
//! - `member`, `classic`: one member, one group (state, generation, timers, offsets).
//! - `manager`: [`GroupManager`](manager::GroupManager), every group; pure —
//!   time is a parameter, writes go through `store::OffsetsStore`, parked
//!   JoinGroup/SyncGroup requests are answered by `api::Reply`s.
//! - `membership`: JoinGroup / SyncGroup / Heartbeat / LeaveGroup and rebalancing.
//! - `rebalance`: starting and completing rebalances, storing the group record.
//! - `timers`: session, join-phase and sync-phase deadlines; unloading.
//! - `offsets`: OffsetCommit / OffsetFetch / OffsetDelete, DeleteGroups,
//!   ListGroups, DescribeGroups, retention, loading from the log.
//! - `consumer`: KIP-848 consumer groups: assignors, reconciliation,
//!   ConsumerGroupHeartbeat/Describe, their records and timers.
//! - `coordinator`: the runtime — one mutex around the manager, oneshot
//!   channels for parked requests, the timer task, the log-backed store.
//!
//! Group → partition: `Utils.abs(javaStringHash(group_id)) % offsets.topic.num.partitions`
//! where Kafka's `Utils.abs` is the true absolute value with
//! `Integer.MIN_VALUE` mapped to 0 (not `x & 0x7fffffff`, which gives other
//! partitions for negative hashes: "my-group" would land on 36, not 12).

pub(crate) mod api;
pub(crate) mod classic;
pub(crate) mod config;
pub(crate) mod consumer;
pub(crate) mod coordinator;
pub(crate) mod manager;
pub(crate) mod member;
pub(crate) mod membership;
pub(crate) mod offsets;
pub(crate) mod rebalance;
pub(crate) mod records;
pub(crate) mod records_consumer;
pub(crate) mod records_json;
pub(crate) mod store;
pub(crate) mod timers;

#[cfg(test)]
mod harness;
#[cfg(test)]
mod offsets_tests;
#[cfg(test)]
mod tests;

/// The internal topic holding offsets and group metadata.
pub(crate) const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Java's `String.hashCode` over UTF-16 code units.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The `__consumer_offsets` partition of `group_id` (Kafka `partitionFor`).
pub(crate) fn partition_for(group_id: &str, partitions: i32) -> i32 {
    let hash = java_string_hash(group_id);
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions
}

#[cfg(test)]
mod hash_tests {
    use super::*;

    #[test]
    fn partition_matches_kafka() {
        // Values computed by Kafka (`Utils.abs(groupId.hashCode()) % 50`,
        // GroupCoordinatorService.partitionFor in group-coordinator/).
        assert_eq!(partition_for("my-group", 50), 12);
        assert_eq!(partition_for("test", 50), 48);
        assert_eq!(partition_for("", 50), 0);
        assert_eq!(java_string_hash("test"), 3_556_498);
        // Non-BMP characters hash as two UTF-16 units, as in Java.
        assert_eq!(java_string_hash("\u{1F600}"), 0xD83D * 31 + 0xDE00);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs gives 0.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
    }
}
