//! The group coordinator's group counts, as Kafka's
//! `group-coordinator-metrics` (KIP-848) name them:
//! `group-count` per protocol (`classic`, `consumer`) and
//! `consumer-group-count` per consumer-group state.

use std::collections::BTreeMap;

use super::family::{Family, Kind, Value};

/// How many groups the coordinator holds: (protocol, state) → count.
pub(crate) type GroupCounts = BTreeMap<(&'static str, &'static str), u64>;

/// The consumer-group states Kafka reports, lower case, each always present.
const CONSUMER_STATES: [&str; 5] = ["empty", "assigning", "reconciling", "stable", "dead"];

pub(crate) fn families(counts: &GroupCounts) -> Vec<Family> {
    let mut by_protocol = Family::new(
        "kafka_server_group_coordinator_metrics_group_count",
        "Groups this broker coordinates, by rebalance protocol (Kafka group-coordinator-metrics group-count).",
        Kind::Gauge,
    );
    for protocol in ["classic", "consumer"] {
        let n: u64 = counts
            .iter()
            .filter(|((p, _), _)| *p == protocol)
            .map(|(_, n)| n)
            .sum();
        by_protocol.push(
            vec![("protocol", protocol.to_string())],
            Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
        );
    }
    let mut consumer = Family::new(
        "kafka_server_group_coordinator_metrics_consumer_group_count",
        "KIP-848 consumer groups by state (Kafka group-coordinator-metrics consumer-group-count).",
        Kind::Gauge,
    );
    for state in CONSUMER_STATES {
        let n = counts
            .iter()
            .filter(|((p, s), _)| *p == "consumer" && s.eq_ignore_ascii_case(state))
            .map(|(_, n)| *n)
            .sum::<u64>();
        consumer.push(
            vec![("state", state.to_string())],
            Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
        );
    }
    vec![by_protocol, consumer]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_protocol_and_state() {
        let mut c = GroupCounts::new();
        c.insert(("classic", "Stable"), 2);
        c.insert(("classic", "Empty"), 1);
        c.insert(("consumer", "Reconciling"), 4);
        let f = families(&c);
        let text = format!("{f:?}");
        assert!(text.contains("group_count"), "{text}");
        assert_eq!(f.len(), 2);
    }
}
