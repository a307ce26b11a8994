//! The `uniform` assignor (Kafka `UniformAssignor`): balanced, then sticky.
//!
//! Homogeneous groups (everyone subscribes to the same topics): with `T`
//! partitions over `M` members each member gets `⌊T/M⌋` and `T mod M` of them
//! one more. Members keep their current partitions up to that quota; the
//! extra slots go first to members that already hold more than `⌊T/M⌋`, so
//! the fewest partitions move. Released and unowned partitions then fill
//! the members below quota (rack matches first, see the `assignor` module).
//!
//! Heterogeneous groups: members keep what they still subscribe to; each
//! unowned partition goes to its least-loaded subscriber (topics with the
//! most partitions per subscriber first, as Kafka orders them); then a
//! partition moves from a member to a subscriber of its topic with at least
//! two fewer partitions, repeatedly, until no such move exists. Every move
//! lowers the sum of squared sizes, so the loop ends. Moves prefer
//! partitions the giver did not have before this round (no extra churn),
//! then ones matching the receiver's rack.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignment::{self, TopicPartitions};
use super::assignor::GroupView;

type Partition = (Uuid, i32);

/// The target of each member of `view.members`, in that order.
pub(super) fn assign(
    view: &GroupView<'_>,
    current: &BTreeMap<String, TopicPartitions>,
) -> Vec<TopicPartitions> {
    if view.members.is_empty() {
        return Vec::new();
    }
    let sets = if view.is_homogeneous() {
        homogeneous(view, current)
    } else {
        heterogeneous(view, current)
    };
    sets.into_iter()
        .map(|set| {
            let mut tp = TopicPartitions::new();
            for (t, p) in set {
                assignment::insert(&mut tp, t, p);
            }
            tp
        })
        .collect()
}

/// Every partition of `topics`, ascending.
fn all_partitions<'t>(
    view: &GroupView<'_>,
    topics: impl IntoIterator<Item = &'t Uuid>,
) -> Vec<Partition> {
    topics
        .into_iter()
        .flat_map(|t| {
            let count = view.partitions.get(t).copied().unwrap_or(0);
            (0..count).map(move |p| (*t, p))
        })
        .collect()
}

fn homogeneous(
    view: &GroupView<'_>,
    current: &BTreeMap<String, TopicPartitions>,
) -> Vec<BTreeSet<Partition>> {
    let n = view.members.len();
    let all = all_partitions(view, &view.members[0].subscribed);
    let min = all.len() / n;
    let mut extras_left = all.len() % n;

    let mut claimed = BTreeSet::new();
    let mut retained: Vec<Vec<Partition>> = (0..n)
        .map(|i| view.retained(i, current, &mut claimed))
        .collect();

    // Extra slots go to those who would otherwise give one up, largest first.
    let mut has_extra = vec![false; n];
    let mut over: Vec<usize> = (0..n).filter(|&i| retained[i].len() > min).collect();
    over.sort_by_key(|&i| (Reverse(retained[i].len()), i));
    for i in over.into_iter().take(extras_left) {
        has_extra[i] = true;
        extras_left -= 1;
    }

    // Keep up to quota; give up non-matching partitions first.
    let mut owned: Vec<BTreeSet<Partition>> = vec![BTreeSet::new(); n];
    let mut taken: BTreeSet<Partition> = BTreeSet::new();
    for (i, kept) in retained.iter_mut().enumerate() {
        let quota = min + usize::from(has_extra[i]);
        kept.sort_by_key(|&(t, p)| (!view.matches(i, t, p), t, p));
        kept.truncate(quota);
        taken.extend(kept.iter().copied());
        owned[i].extend(kept.iter().copied());
    }
    let mut pool: Vec<Partition> = all.into_iter().filter(|tp| !taken.contains(tp)).collect();

    // Rack pass: a matching member with room (below ⌊T/M⌋, or at it while
    // extra slots remain) takes the partition; the least loaded wins.
    if view.rack_aware {
        pool.retain(|&(t, p)| {
            let best = view
                .matching_members(t, p)
                .into_iter()
                .filter(|&i| {
                    let len = owned[i].len();
                    len < min || (len == min && !has_extra[i] && extras_left > 0)
                })
                .min_by_key(|&i| (owned[i].len(), i));
            let Some(i) = best else { return true };
            if owned[i].len() == min {
                has_extra[i] = true;
                extras_left -= 1;
            }
            owned[i].insert((t, p));
            false
        });
    }

    // Fill pass: up to ⌊T/M⌋ in member order, then the extra slots.
    let mut rest = pool.into_iter();
    for set in &mut owned {
        while set.len() < min {
            let Some(tp) = rest.next() else { break };
            set.insert(tp);
        }
    }
    for (i, set) in owned.iter_mut().enumerate() {
        if extras_left == 0 {
            break;
        }
        if set.len() == min && !has_extra[i] {
            let Some(tp) = rest.next() else { break };
            set.insert(tp);
            has_extra[i] = true;
            extras_left -= 1;
        }
    }
    debug_assert!(rest.next().is_none(), "uniform: partitions left unassigned");
    owned
}

fn heterogeneous(
    view: &GroupView<'_>,
    current: &BTreeMap<String, TopicPartitions>,
) -> Vec<BTreeSet<Partition>> {
    let n = view.members.len();
    let mut subscribers: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    for (i, m) in view.members.iter().enumerate() {
        for t in &m.subscribed {
            subscribers.entry(*t).or_default().push(i);
        }
    }

    let mut claimed = BTreeSet::new();
    let sticky: Vec<BTreeSet<Partition>> = (0..n)
        .map(|i| {
            view.retained(i, current, &mut claimed)
                .into_iter()
                .collect()
        })
        .collect();
    let mut owned = sticky.clone();

    // Unowned partitions, Kafka's order: most partitions per subscriber first,
    // then fewest subscribers, then partition id (then topic id, for ties).
    let mut pool: Vec<Partition> = all_partitions(view, subscribers.keys())
        .into_iter()
        .filter(|tp| !claimed.contains(tp))
        .collect();
    let weight = |t: &Uuid| {
        let parts = u64::try_from(view.partitions.get(t).copied().unwrap_or(0)).unwrap_or(0);
        let subs = subscribers.get(t).map_or(1, Vec::len) as u64;
        (parts, subs)
    };
    pool.sort_by(|a, b| {
        let (pa, sa) = weight(&a.0);
        let (pb, sb) = weight(&b.0);
        (pb * sa)
            .cmp(&(pa * sb))
            .then(sa.cmp(&sb))
            .then(a.1.cmp(&b.1))
            .then(a.0.cmp(&b.0))
    });
    for (t, p) in pool {
        let Some(subs) = subscribers.get(&t) else {
            continue;
        };
        let matching = view.matching_members(t, p);
        let least = subs
            .iter()
            .copied()
            .min_by_key(|&i| (owned[i].len(), matching.binary_search(&i).is_err(), i));
        if let Some(i) = least {
            owned[i].insert((t, p));
        }
    }

    rebalance(view, &subscribers, &sticky, &mut owned);
    owned
}

/// Moves single partitions from a member to a subscriber with at least two
/// fewer partitions until no such move exists.
fn rebalance(
    view: &GroupView<'_>,
    subscribers: &BTreeMap<Uuid, Vec<usize>>,
    sticky: &[BTreeSet<Partition>],
    owned: &mut [BTreeSet<Partition>],
) {
    loop {
        let mut givers: Vec<usize> = (0..owned.len()).collect();
        givers.sort_by_key(|&i| (Reverse(owned[i].len()), i));
        let smallest = owned.iter().map(BTreeSet::len).min().unwrap_or(0);
        let mut chosen = None;
        for giver in givers {
            let size = owned[giver].len();
            if size <= smallest + 1 {
                break; // Nobody left can give to anybody.
            }
            let receivable: BTreeSet<Uuid> = owned[giver]
                .iter()
                .map(|&(t, _)| t)
                .filter(|t| {
                    subscribers
                        .get(t)
                        .is_some_and(|subs| subs.iter().any(|&m| owned[m].len() + 1 < size))
                })
                .collect();
            let best = owned[giver]
                .iter()
                .filter(|(t, _)| receivable.contains(t))
                .flat_map(|&(t, p)| {
                    subscribers
                        .get(&t)
                        .into_iter()
                        .flatten()
                        .copied()
                        .filter(|&m| owned[m].len() + 1 < size)
                        .map(move |m| (m, t, p))
                })
                .min_by_key(|&(m, t, p)| {
                    (
                        sticky[giver].contains(&(t, p)),
                        !view.matches(m, t, p),
                        view.matches(giver, t, p),
                        owned[m].len(),
                        m,
                        t,
                        p,
                    )
                });
            if let Some(mv) = best {
                chosen = Some((giver, mv));
                break;
            }
        }
        let Some((giver, (to, t, p))) = chosen else {
            return;
        };
        owned[giver].remove(&(t, p));
        owned[to].insert((t, p));
    }
}
