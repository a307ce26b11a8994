//! The `range` assignor (Kafka 3.9 `RangeAssignor`).
//!
//! Members are ordered static first (by instance id), then dynamic (by member
//! id). For each topic, its subscribers in that order get contiguous ranges
//! of `⌊P/M⌋` partitions, the first `P mod M` of them one more. Topics with
//! the same partition count and the same subscribers are therefore
//! co-partitioned. Stickiness comes from determinism alone: while the
//! members and partition counts stay the same, so do the ranges.
//!
//! With racks (a member of the topic has a rack and some partition has
//! replica racks), each subscriber still gets exactly the count its range
//! would have, filled in three passes: (0) partitions it has in `current`
//! (matching ones first), (1) unowned partitions matching its rack,
//! ascending, (2) whatever is left, ascending. Without racks the three
//! passes would reduce to the plain ranges, and the plain ranges are used.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignment::{self, TopicPartitions};
use super::assignor::GroupView;

/// The target of each member of `view.members`, in that order.
pub(super) fn assign(
    view: &GroupView<'_>,
    current: &BTreeMap<String, TopicPartitions>,
) -> Vec<TopicPartitions> {
    let n = view.members.len();
    let mut order: Vec<usize> = (0..n).collect();
    // `view.members` is sorted by member id, so the index breaks the ties.
    order.sort_by_key(|&i| {
        let instance = view.members[i].instance_id;
        (instance.is_none(), instance.unwrap_or(""), i)
    });

    let mut out = vec![TopicPartitions::new(); n];
    for (&topic, &count) in &view.partitions {
        let subs: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| view.members[i].subscribed.contains(&topic))
            .collect();
        if subs.is_empty() {
            continue;
        }
        let quotas = quotas(count, subs.len());
        let rack_aware = (0..count).any(|p| subs.iter().any(|&i| view.matches(i, topic, p)));
        let parts = if rack_aware {
            rack_ranges(view, current, topic, count, &subs, &quotas)
        } else {
            plain_ranges(&quotas)
        };
        for (&member, set) in subs.iter().zip(parts) {
            for p in set {
                assignment::insert(&mut out[member], topic, p);
            }
        }
    }
    out
}

/// The partition count of each of `members` positions: `⌊P/M⌋`, the first
/// `P mod M` one more.
fn quotas(partitions: i32, members: usize) -> Vec<usize> {
    let total = usize::try_from(partitions).unwrap_or(0);
    let (min, extra) = (total / members, total % members);
    (0..members).map(|k| min + usize::from(k < extra)).collect()
}

/// Contiguous ranges, in position order.
fn plain_ranges(quotas: &[usize]) -> Vec<Vec<i32>> {
    let mut next = 0i32;
    quotas
        .iter()
        .map(|&q| {
            let len = i32::try_from(q).unwrap_or(i32::MAX);
            let range = (next..next.saturating_add(len)).collect();
            next = next.saturating_add(len);
            range
        })
        .collect()
}

/// Ranges' counts with sticky, then rack-matching, then leftover partitions.
fn rack_ranges(
    view: &GroupView<'_>,
    current: &BTreeMap<String, TopicPartitions>,
    topic: Uuid,
    count: i32,
    subs: &[usize],
    quotas: &[usize],
) -> Vec<Vec<i32>> {
    let mut taken: BTreeSet<i32> = BTreeSet::new();
    let mut got: Vec<Vec<i32>> = vec![Vec::new(); subs.len()];

    // Pass 0: stickiness before rack preference.
    for (k, &member) in subs.iter().enumerate() {
        let mut mine: Vec<i32> = current
            .get(view.members[member].id)
            .and_then(|tp| tp.get(&topic))
            .into_iter()
            .flatten()
            .copied()
            .filter(|p| (0..count).contains(p) && !taken.contains(p))
            .collect();
        mine.sort_by_key(|&p| (!view.matches(member, topic, p), p));
        mine.truncate(quotas[k]);
        taken.extend(mine.iter().copied());
        got[k] = mine;
    }
    // Pass 1: rack matches, members in range order.
    for (k, &member) in subs.iter().enumerate() {
        for p in 0..count {
            if got[k].len() >= quotas[k] {
                break;
            }
            if !taken.contains(&p) && view.matches(member, topic, p) {
                taken.insert(p);
                got[k].push(p);
            }
        }
    }
    // Pass 2: the rest, ascending.
    let mut rest = (0..count).filter(|p| !taken.contains(p));
    for (k, set) in got.iter_mut().enumerate() {
        while set.len() < quotas[k] {
            let Some(p) = rest.next() else { break };
            set.push(p);
        }
    }
    got
}
