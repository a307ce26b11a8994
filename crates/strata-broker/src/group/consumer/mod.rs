//! KIP-848 consumer groups ("the next-generation consumer group protocol"):
//! the broker computes assignments and members converge by heartbeats.
//! Kafka's counterparts live in group-coordinator `modern/` and `assignor/`.
//!
//! # Layout
//!
//! Pure decisions:
//! - `assignment`: [`TopicPartitions`](assignment::TopicPartitions), topic id →
//!   partitions, and its set algebra.
//! - `assignor`: the server-side assignors' front door ([`assign`](assignor::assign),
//!   assignor names, member and topic specs) and the rack rule; `uniform`,
//!   `range`: the two assignors.
//! - `reconcile`: one member's next state toward its target (revoke before
//!   assign) and member-epoch fencing.
//! - `member`, `group`: one member, one group, and the computations over a
//!   group (state, subscription metadata, regexes, the next target).
//! - `image`: the topics the coordinator sees.
//!
//! The state machine and its records:
//! - `persist`: the group as `__consumer_offsets` records, and replay.
//! - `heartbeat`: ConsumerGroupHeartbeat, leaving, and fencing by timers.
//! - `describe`: ConsumerGroupDescribe.
//! - `mixed`, `embedded`: classic members in a consumer group (the online
//!   upgrade) and the consumer protocol they embed in JoinGroup/SyncGroup.
//! - `downgrade`: back to a classic group when the last consumer-protocol
//!   member goes.
//! - `api`: requests and answers independent of wire versions.
//!
//! A consumer group lives in the same [`Group`](super::classic::Group)
//! entry a classic group would (`Group::consumer`), so committed offsets,
//! transactional offsets, offset retention, DeleteGroups and the lag
//! metrics serve both kinds unchanged.

pub(crate) mod api;
pub(crate) mod assignment;
pub(crate) mod assignor;
pub(crate) mod describe;
pub(crate) mod downgrade;
pub(crate) mod embedded;
pub(crate) mod group;
pub(crate) mod heartbeat;
pub(crate) mod image;
pub(crate) mod member;
pub(crate) mod mixed;
pub(crate) mod persist;
pub(crate) mod reconcile;

mod range;
mod uniform;

#[cfg(test)]
mod downgrade_tests;
#[cfg(test)]
mod tests;
