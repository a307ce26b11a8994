//! Partition sets keyed by topic id: the currency of KIP-848 assignments.
//!
//! Kafka passes `Map<Uuid, Set<Integer>>` between the assignors, the
//! `TargetAssignmentBuilder` and the `CurrentAssignmentBuilder`; Strata uses
//! [`TopicPartitions`], ordered so that every result (records, responses,
//! tests) is deterministic. Invariant: **no topic maps to an empty set** —
//! every helper here keeps it, and [`normalise`] restores it for values built
//! by hand (e.g. from a heartbeat's `TopicPartitions`, where a topic may be
//! listed with no partitions).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// Topic id → partitions. Empty sets are never stored (see the module doc).
pub(crate) type TopicPartitions = BTreeMap<Uuid, BTreeSet<i32>>;

/// Drops topics whose partition set is empty.
pub(crate) fn normalise(tp: &mut TopicPartitions) {
    tp.retain(|_, parts| !parts.is_empty());
}

/// Builds a normalised map from wire-shaped pairs (duplicates merge).
pub(crate) fn from_pairs<I, P>(pairs: I) -> TopicPartitions
where
    I: IntoIterator<Item = (Uuid, P)>,
    P: IntoIterator<Item = i32>,
{
    let mut out = TopicPartitions::new();
    for (topic, parts) in pairs {
        out.entry(topic).or_default().extend(parts);
    }
    normalise(&mut out);
    out
}

/// The wire shape: topics ascending by id, partitions ascending.
pub(crate) fn to_pairs(tp: &TopicPartitions) -> Vec<(Uuid, Vec<i32>)> {
    tp.iter()
        .filter(|(_, parts)| !parts.is_empty())
        .map(|(topic, parts)| (*topic, parts.iter().copied().collect()))
        .collect()
}

/// Every `(topic, partition)` pair, topics then partitions ascending.
pub(crate) fn iter_pairs(tp: &TopicPartitions) -> impl Iterator<Item = (Uuid, i32)> + '_ {
    tp.iter()
        .flat_map(|(topic, parts)| parts.iter().map(move |p| (*topic, *p)))
}

/// Number of partitions over all topics.
pub(crate) fn partition_count(tp: &TopicPartitions) -> usize {
    tp.values().map(BTreeSet::len).sum()
}

/// Whether `tp` holds `partition` of `topic`.
pub(crate) fn contains(tp: &TopicPartitions, topic: Uuid, partition: i32) -> bool {
    tp.get(&topic)
        .is_some_and(|parts| parts.contains(&partition))
}

/// Adds one partition.
pub(crate) fn insert(tp: &mut TopicPartitions, topic: Uuid, partition: i32) {
    tp.entry(topic).or_default().insert(partition);
}

#[cfg(test)]
/// Removes one partition, dropping the topic when it becomes empty.
/// Returns whether it was present.
pub(crate) fn remove(tp: &mut TopicPartitions, topic: Uuid, partition: i32) -> bool {
    let Some(parts) = tp.get_mut(&topic) else {
        return false;
    };
    let removed = parts.remove(&partition);
    if parts.is_empty() {
        tp.remove(&topic);
    }
    removed
}

/// `a ∪ b`.
pub(crate) fn union(a: &TopicPartitions, b: &TopicPartitions) -> TopicPartitions {
    let mut out = a.clone();
    for (topic, parts) in b {
        out.entry(*topic).or_default().extend(parts.iter().copied());
    }
    normalise(&mut out);
    out
}

/// `a − b`.
pub(crate) fn difference(a: &TopicPartitions, b: &TopicPartitions) -> TopicPartitions {
    let mut out = TopicPartitions::new();
    for (topic, parts) in a {
        let rest: BTreeSet<i32> = match b.get(topic) {
            Some(other) => parts.difference(other).copied().collect(),
            None => parts.clone(),
        };
        if !rest.is_empty() {
            out.insert(*topic, rest);
        }
    }
    out
}

/// `a ∩ b`.
pub(crate) fn intersection(a: &TopicPartitions, b: &TopicPartitions) -> TopicPartitions {
    let mut out = TopicPartitions::new();
    for (topic, parts) in a {
        if let Some(other) = b.get(topic) {
            let common: BTreeSet<i32> = parts.intersection(other).copied().collect();
            if !common.is_empty() {
                out.insert(*topic, common);
            }
        }
    }
    out
}

/// Whether every partition of `a` is in `b`.
pub(crate) fn is_subset(a: &TopicPartitions, b: &TopicPartitions) -> bool {
    a.iter().all(|(topic, parts)| match b.get(topic) {
        Some(other) => parts.is_subset(other),
        None => parts.is_empty(),
    })
}

/// Whether `a` and `b` share at least one partition.
pub(crate) fn intersects(a: &TopicPartitions, b: &TopicPartitions) -> bool {
    a.iter()
        .any(|(topic, parts)| b.get(topic).is_some_and(|other| !parts.is_disjoint(other)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn set_algebra_keeps_the_map_normalised() {
        let a = from_pairs([(t(1), vec![0, 1, 2]), (t(2), vec![0])]);
        let b = from_pairs([(t(1), vec![2, 3]), (t(2), vec![0]), (t(3), vec![])]);
        assert!(!b.contains_key(&t(3)), "empty topic must be dropped");

        assert_eq!(
            to_pairs(&union(&a, &b)),
            vec![(t(1), vec![0, 1, 2, 3]), (t(2), vec![0])]
        );
        assert_eq!(to_pairs(&difference(&a, &b)), vec![(t(1), vec![0, 1])]);
        assert_eq!(to_pairs(&difference(&b, &a)), vec![(t(1), vec![3])]);
        assert_eq!(
            to_pairs(&intersection(&a, &b)),
            vec![(t(1), vec![2]), (t(2), vec![0])]
        );
        assert!(difference(&a, &a).is_empty());
        assert!(intersects(&a, &b));
        assert!(!intersects(&difference(&a, &b), &difference(&b, &a)));
    }

    #[test]
    fn subset_count_contains_and_edits() {
        let mut a = from_pairs([(t(1), vec![0, 1])]);
        let b = from_pairs([(t(1), vec![0, 1, 2]), (t(2), vec![5])]);
        assert!(is_subset(&a, &b));
        assert!(!is_subset(&b, &a));
        assert!(is_subset(&TopicPartitions::new(), &a));
        assert_eq!(partition_count(&b), 4);
        assert!(contains(&b, t(2), 5));
        assert!(!contains(&b, t(2), 4));
        assert!(!contains(&b, t(3), 0));

        insert(&mut a, t(9), 7);
        assert!(contains(&a, t(9), 7));
        assert!(remove(&mut a, t(9), 7));
        assert!(
            !a.contains_key(&t(9)),
            "topic emptied by remove must vanish"
        );
        assert!(!remove(&mut a, t(9), 7));
        assert_eq!(
            iter_pairs(&b).collect::<Vec<_>>(),
            vec![(t(1), 0), (t(1), 1), (t(1), 2), (t(2), 5)]
        );
    }
}
