//! Fetch from the closest replica (KIP-392): the leader picks the replica a
//! consumer should read from, Kafka's `RackAwareReplicaSelector`.
//!
//! The rule is a pure function of the candidates ([`rack_aware`]); the
//! manager describes the candidates from the partition's follower state
//! and the racks of the applied etcd snapshot
//! ([`ReplicaManager::preferred_read_replica`]). Only a leader picks, and
//! only for consumers: a follower's own Fetch never gets a preferred
//! replica.

use std::cmp::Ordering;

use super::{Partition, ReplicaManager};
use crate::config::ReplicaSelector;

/// One replica a consumer could read from, as the selector sees it
/// (Kafka's `ReplicaView`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReplicaView<'a> {
    pub id: i32,
    /// The rack of the replica's broker (`broker.rack`), if it has one.
    pub rack: Option<&'a str>,
    pub log_end: i64,
    /// Milliseconds since the replica was last caught up (0: the leader).
    pub since_caught_up_ms: i64,
}

/// Kafka's `ReplicaView.comparator()`: the more caught-up replica is the
/// greater — higher log end, then less time since caught up, then higher id.
fn more_caught_up(a: &ReplicaView<'_>, b: &ReplicaView<'_>) -> Ordering {
    a.log_end
        .cmp(&b.log_end)
        .then(b.since_caught_up_ms.cmp(&a.since_caught_up_ms))
        .then(a.id.cmp(&b.id))
}

/// The rack-aware rule: the replica in `client_rack` a consumer should
/// read from, `None` meaning the leader. An empty rack, no candidate in the
/// client's rack, or the leader in it → the leader; otherwise the most
/// caught-up candidate of that rack. `candidates` are the followers that
/// may serve the fetch (the leader is never among them).
pub(crate) fn rack_aware(
    client_rack: &str,
    leader: &ReplicaView<'_>,
    candidates: &[ReplicaView<'_>],
) -> Option<i32> {
    if client_rack.is_empty() || leader.rack == Some(client_rack) {
        return None;
    }
    candidates
        .iter()
        .filter(|r| r.id != leader.id && r.rack == Some(client_rack))
        .max_by(|a, b| more_caught_up(a, b))
        .map(|r| r.id)
}

impl ReplicaManager {
    /// The follower a consumer in `client_rack` fetching `partition` from
    /// `fetch_offset` should read from, when `replica.selector.class` is set
    /// and this broker leads; `None` means "read here".
    ///
    /// Candidates are the ISR followers that hold `fetch_offset` (log start
    /// ≤ it ≤ log end) and are registered (a broker without an endpoint
    /// cannot be offered), as Kafka's `findPreferredReadReplica`.
    pub(crate) fn preferred_read_replica(
        &self,
        partition: &Partition,
        client_rack: &str,
        fetch_offset: i64,
    ) -> Option<i32> {
        let Some(ReplicaSelector::RackAware) = self.settings.replica_selector else {
            return None;
        };
        if client_rack.is_empty() {
            return None;
        }
        let followers = partition.isr_followers()?;
        let snapshot = self.cluster.applied();
        let rack_of = |id: i32| snapshot.brokers.get(&id).map(|b| b.record.rack.as_deref());
        let now = self.now_ms();
        let leader = ReplicaView {
            id: self.me,
            rack: rack_of(self.me).flatten(),
            log_end: partition.log.log_end_offset().0,
            since_caught_up_ms: 0,
        };
        let candidates: Vec<ReplicaView<'_>> = followers
            .iter()
            .filter(|(_, f)| f.log_end >= fetch_offset && f.log_start <= fetch_offset)
            .filter_map(|(id, f)| {
                Some(ReplicaView {
                    id: *id,
                    rack: rack_of(*id)?,
                    log_end: f.log_end,
                    since_caught_up_ms: (now - f.last_caught_up_ms).max(0),
                })
            })
            .collect();
        rack_aware(client_rack, &leader, &candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: i32, rack: Option<&str>, log_end: i64, since: i64) -> ReplicaView<'_> {
        ReplicaView {
            id,
            rack,
            log_end,
            since_caught_up_ms: since,
        }
    }

    #[test]
    fn an_empty_client_rack_reads_from_the_leader() {
        let leader = view(1, Some("r1"), 10, 0);
        let f = [view(2, Some(""), 10, 0), view(3, Some("r3"), 10, 0)];
        assert_eq!(rack_aware("", &leader, &f), None);
    }

    #[test]
    fn no_replica_in_the_client_rack_reads_from_the_leader() {
        let leader = view(1, Some("r1"), 10, 0);
        let f = [view(2, Some("r2"), 10, 0), view(3, None, 10, 0)];
        assert_eq!(rack_aware("r9", &leader, &f), None);
    }

    #[test]
    fn the_leader_in_the_client_rack_wins_over_a_follower_there() {
        let leader = view(1, Some("r1"), 5, 0);
        let f = [view(2, Some("r1"), 10, 0)];
        assert_eq!(rack_aware("r1", &leader, &f), None);
    }

    #[test]
    fn a_follower_in_the_client_rack_is_chosen() {
        let leader = view(1, Some("r1"), 10, 0);
        let f = [view(2, Some("r2"), 10, 0), view(3, Some("r3"), 10, 0)];
        assert_eq!(rack_aware("r2", &leader, &f), Some(2));
        assert_eq!(rack_aware("r3", &leader, &f), Some(3));
        // A broker without a rack never matches a client's rack.
        let leader = view(1, None, 10, 0);
        assert_eq!(rack_aware("r3", &leader, &f), Some(3));
    }

    #[test]
    fn ties_in_a_rack_go_to_the_highest_log_end_then_freshest_then_highest_id() {
        let leader = view(1, Some("r1"), 20, 0);
        let by_log_end = [
            view(2, Some("r2"), 15, 0),
            view(3, Some("r2"), 18, 900),
            view(4, Some("r2"), 12, 0),
        ];
        assert_eq!(rack_aware("r2", &leader, &by_log_end), Some(3));
        let by_freshness = [
            view(2, Some("r2"), 18, 50),
            view(3, Some("r2"), 18, 900),
            view(4, Some("r2"), 18, 200),
        ];
        assert_eq!(rack_aware("r2", &leader, &by_freshness), Some(2));
        let by_id = [
            view(5, Some("r2"), 18, 50),
            view(3, Some("r2"), 18, 50),
            view(4, Some("r2"), 18, 50),
        ];
        assert_eq!(rack_aware("r2", &leader, &by_id), Some(5));
    }

    #[test]
    fn the_leader_is_never_returned_as_a_follower() {
        let leader = view(1, Some("r1"), 10, 0);
        let f = [view(1, Some("r2"), 10, 0)];
        assert_eq!(rack_aware("r2", &leader, &f), None);
    }
}
