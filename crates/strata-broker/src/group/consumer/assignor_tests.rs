//! Guards the assignors' promises: every partition of a subscribed topic has
//! exactly one owner that subscribes to it, balance (uniform ±1 or no
//! improving move; range's counts), stickiness on join and leave,
//! determinism, range contiguity and co-partitioning, and the rack rule.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::*;
use crate::group::consumer::assignment::{contains, partition_count, TopicPartitions};

fn t(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// A small deterministic generator for the property-style loops.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }
}

/// Owned inputs from which `MemberSpec`s borrow.
#[derive(Clone)]
struct Member {
    id: String,
    instance: Option<String>,
    rack: Option<String>,
    subscribed: BTreeSet<Uuid>,
}

fn member(id: &str, topics: &[u128]) -> Member {
    Member {
        id: id.to_owned(),
        instance: None,
        rack: None,
        subscribed: topics.iter().map(|n| t(*n)).collect(),
    }
}

fn topic(partitions: i32) -> TopicSpec {
    TopicSpec {
        partitions,
        partition_racks: Vec::new(),
    }
}

fn run(
    assignor: AssignorName,
    members: &[Member],
    topics: &BTreeMap<Uuid, TopicSpec>,
    current: &BTreeMap<String, TopicPartitions>,
) -> BTreeMap<String, TopicPartitions> {
    let specs: Vec<MemberSpec<'_>> = members
        .iter()
        .map(|m| MemberSpec {
            member_id: &m.id,
            instance_id: m.instance.as_deref(),
            rack_id: m.rack.as_deref(),
            subscribed: &m.subscribed,
        })
        .collect();
    assign(assignor, &specs, topics, current)
}

/// Every partition of every subscribed topic owned exactly once, by a
/// subscriber; every member present; nothing else assigned.
fn check_valid(
    members: &[Member],
    topics: &BTreeMap<Uuid, TopicSpec>,
    out: &BTreeMap<String, TopicPartitions>,
) {
    assert_eq!(out.len(), members.len(), "every member appears");
    let mut owners: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
    for m in members {
        for (tid, p) in assignment::iter_pairs(&out[&m.id]) {
            assert!(
                m.subscribed.contains(&tid),
                "{} got unsubscribed topic",
                m.id
            );
            assert!((0..topics[&tid].partitions).contains(&p));
            assert!(
                owners.insert((tid, p), &m.id).is_none(),
                "{tid}-{p} owned twice"
            );
        }
    }
    let subscribed: BTreeSet<Uuid> = members
        .iter()
        .flat_map(|m| m.subscribed.iter().copied())
        .collect();
    let expected: usize = subscribed
        .iter()
        .map(|tid| usize::try_from(topics[tid].partitions).unwrap())
        .sum();
    assert_eq!(
        owners.len(),
        expected,
        "every subscribed partition is owned"
    );
}

fn sizes(out: &BTreeMap<String, TopicPartitions>) -> Vec<usize> {
    out.values().map(partition_count).collect()
}

fn check_within_one(out: &BTreeMap<String, TopicPartitions>) {
    let s = sizes(out);
    let (min, max) = (s.iter().min().unwrap(), s.iter().max().unwrap());
    assert!(max - min <= 1, "unbalanced: {s:?}");
}

/// Kafka's heterogeneous criterion: no partition can move to another
/// subscriber of its topic holding at least two fewer partitions.
fn check_no_improving_move(members: &[Member], out: &BTreeMap<String, TopicPartitions>) {
    for giver in members {
        let size = partition_count(&out[&giver.id]);
        for (tid, _) in assignment::iter_pairs(&out[&giver.id]) {
            for other in members.iter().filter(|m| m.subscribed.contains(&tid)) {
                assert!(
                    partition_count(&out[&other.id]) + 1 >= size,
                    "{} ({size}) could give {tid} to {}: {out:?}",
                    giver.id,
                    other.id
                );
            }
        }
    }
}

fn moved(
    before: &BTreeMap<String, TopicPartitions>,
    after: &BTreeMap<String, TopicPartitions>,
) -> usize {
    after
        .iter()
        .map(|(id, tp)| {
            let old = before.get(id).cloned().unwrap_or_default();
            partition_count(&assignment::difference(tp, &old))
        })
        .sum()
}

fn topics_of(counts: &[i32]) -> BTreeMap<Uuid, TopicSpec> {
    counts
        .iter()
        .enumerate()
        .map(|(i, c)| (t(i as u128 + 1), topic(*c)))
        .collect()
}

#[test]
fn names_parse_both_forms() {
    assert_eq!(AssignorName::parse("uniform"), Some(AssignorName::Uniform));
    assert_eq!(AssignorName::parse("range"), Some(AssignorName::Range));
    assert_eq!(
        AssignorName::parse("org.apache.kafka.coordinator.group.assignor.UniformAssignor"),
        Some(AssignorName::Uniform)
    );
    assert_eq!(
        AssignorName::parse("org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
        Some(AssignorName::Range)
    );
    assert_eq!(AssignorName::parse("sticky"), None);
    assert_eq!(AssignorName::parse("Uniform"), None);
    assert_eq!(AssignorName::Range.name(), "range");
    assert_eq!(AssignorName::Uniform.name(), "uniform");
}

#[test]
fn uniform_homogeneous_balanced_and_sticky_on_join_and_leave() {
    for n_topics in 1..=3usize {
        for parts in 1..=20i32 {
            let counts: Vec<i32> = (0..n_topics)
                .map(|i| parts + i32::try_from(i).unwrap())
                .collect();
            let topics = topics_of(&counts);
            let ids: Vec<u128> = (1..=n_topics as u128).collect();
            let total: usize = counts.iter().map(|c| usize::try_from(*c).unwrap()).sum();
            for n in 1..=8usize {
                let members: Vec<Member> = (0..n).map(|i| member(&format!("m{i}"), &ids)).collect();
                let first = run(AssignorName::Uniform, &members, &topics, &BTreeMap::new());
                check_valid(&members, &topics, &first);
                check_within_one(&first);
                // Unchanged inputs: nothing moves.
                assert_eq!(run(AssignorName::Uniform, &members, &topics, &first), first);

                // Join: only about the newcomer's quota moves.
                let mut joined = members.clone();
                joined.push(member("new", &ids));
                let after_join = run(AssignorName::Uniform, &joined, &topics, &first);
                check_valid(&joined, &topics, &after_join);
                check_within_one(&after_join);
                let quota = total.div_ceil(n + 1);
                assert!(
                    moved(&first, &after_join) <= quota,
                    "join moved {} > quota {quota} ({n} members, {counts:?})",
                    moved(&first, &after_join)
                );

                // Leave: only the leaver's partitions move.
                if n > 1 {
                    let leaver = &members[n / 2].id;
                    let rest: Vec<Member> = members
                        .iter()
                        .filter(|m| &m.id != leaver)
                        .cloned()
                        .collect();
                    let after_leave = run(AssignorName::Uniform, &rest, &topics, &first);
                    check_valid(&rest, &topics, &after_leave);
                    check_within_one(&after_leave);
                    for m in &rest {
                        assert!(
                            assignment::is_subset(&first[&m.id], &after_leave[&m.id]),
                            "{} lost partitions when {leaver} left",
                            m.id
                        );
                    }
                    assert_eq!(moved(&first, &after_leave), partition_count(&first[leaver]));
                }
            }
        }
    }
}

#[test]
fn uniform_ignores_stale_current_entries() {
    let topics = topics_of(&[4]);
    let members = vec![member("a", &[1]), member("b", &[1])];
    let mut current = BTreeMap::new();
    // A gone member, a deleted topic, a partition past the end, and one
    // partition claimed twice.
    current.insert(
        "gone".to_owned(),
        assignment::from_pairs([(t(1), vec![0, 1])]),
    );
    current.insert(
        "a".to_owned(),
        assignment::from_pairs([(t(1), vec![0, 2, 9]), (t(7), vec![0])]),
    );
    current.insert("b".to_owned(), assignment::from_pairs([(t(1), vec![0, 3])]));
    let out = run(AssignorName::Uniform, &members, &topics, &current);
    check_valid(&members, &topics, &out);
    check_within_one(&out);
    assert!(contains(&out["a"], t(1), 0) && contains(&out["a"], t(1), 2));
    assert!(contains(&out["b"], t(1), 3));
}

#[test]
fn uniform_heterogeneous_valid_balanced_and_sticky() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..300 {
        let n_topics = 1 + rng.below(4);
        let counts: Vec<i32> = (0..n_topics)
            .map(|_| i32::try_from(1 + rng.below(12)).unwrap())
            .collect();
        let topics = topics_of(&counts);
        let n = 1 + rng.below(7);
        let members: Vec<Member> = (0..n)
            .map(|i| {
                let subs: Vec<u128> = (1..=n_topics as u128)
                    .filter(|_| rng.below(3) > 0)
                    .collect();
                member(&format!("m{i}"), &subs)
            })
            .collect();
        let first = run(AssignorName::Uniform, &members, &topics, &BTreeMap::new());
        check_valid(&members, &topics, &first);
        check_no_improving_move(&members, &first);
        for m in members.iter().filter(|m| m.subscribed.is_empty()) {
            assert!(
                first[&m.id].is_empty(),
                "case {case}: unsubscribed member got partitions"
            );
        }
        assert_eq!(
            run(AssignorName::Uniform, &members, &topics, &first),
            first,
            "case {case}: a balanced assignment must be stable"
        );
        // A member leaves: survivors keep what they had unless balance needs it.
        if n > 1 {
            let rest: Vec<Member> = members[1..].to_vec();
            let after = run(AssignorName::Uniform, &rest, &topics, &first);
            check_valid(&rest, &topics, &after);
            check_no_improving_move(&rest, &after);
            let kept: usize = rest
                .iter()
                .map(|m| partition_count(&assignment::intersection(&first[&m.id], &after[&m.id])))
                .sum();
            let survivors_had: usize = rest.iter().map(|m| partition_count(&first[&m.id])).sum();
            assert!(
                kept * 4 >= survivors_had * 3 || survivors_had < 4,
                "case {case}: heavy churn on leave"
            );
        }
    }
}

#[test]
fn uniform_heterogeneous_example() {
    // a: t1 (6 partitions) + t2 (2); b: t1 only; c: t2 only; d: nothing.
    let topics = topics_of(&[6, 2]);
    let members = vec![
        member("a", &[1, 2]),
        member("b", &[1]),
        member("c", &[2]),
        member("d", &[]),
    ];
    let out = run(AssignorName::Uniform, &members, &topics, &BTreeMap::new());
    check_valid(&members, &topics, &out);
    check_no_improving_move(&members, &out);
    assert_eq!(partition_count(&out["a"]), 3);
    assert_eq!(partition_count(&out["b"]), 3);
    assert!(partition_count(&out["c"]) >= 1);
    assert!(out["d"].is_empty());
}

#[test]
fn results_do_not_depend_on_member_order() {
    let topics = topics_of(&[7, 5, 3]);
    let members = vec![
        member("x", &[1, 2, 3]),
        member("b", &[1, 2]),
        member("m", &[3]),
        member("a", &[1, 2, 3]),
    ];
    let mut reversed = members.clone();
    reversed.reverse();
    for assignor in [AssignorName::Uniform, AssignorName::Range] {
        let one = run(assignor, &members, &topics, &BTreeMap::new());
        assert_eq!(one, run(assignor, &reversed, &topics, &BTreeMap::new()));
        assert_eq!(one, run(assignor, &members, &topics, &BTreeMap::new()));
    }
}

#[test]
fn range_counts_contiguity_and_copartitioning() {
    for parts in 1..=20i32 {
        for n in 1..=8usize {
            let topics = topics_of(&[parts, parts, parts + 3]);
            let members: Vec<Member> = (0..n)
                .map(|i| member(&format!("m{i}"), &[1, 2, 3]))
                .collect();
            let out = run(AssignorName::Range, &members, &topics, &BTreeMap::new());
            check_valid(&members, &topics, &out);
            for (tid, spec) in &topics {
                let p = usize::try_from(spec.partitions).unwrap();
                let mut next = 0i32;
                for (k, m) in members.iter().enumerate() {
                    let got: Vec<i32> =
                        out[&m.id].get(tid).into_iter().flatten().copied().collect();
                    let want = p / n + usize::from(k < p % n);
                    assert_eq!(got.len(), want, "{parts}x{n}: count of {}", m.id);
                    let range: Vec<i32> = (next..next + i32::try_from(want).unwrap()).collect();
                    assert_eq!(got, range, "contiguous ranges in member order");
                    next += i32::try_from(want).unwrap();
                }
            }
            for m in &members {
                assert_eq!(
                    out[&m.id].get(&t(1)),
                    out[&m.id].get(&t(2)),
                    "co-partitioned"
                );
            }
        }
    }
}

#[test]
fn range_orders_static_members_first_and_handles_partial_subscriptions() {
    let topics = topics_of(&[5, 3]);
    let mut z = member("z", &[1, 2]);
    z.instance = Some("i-1".to_owned());
    let mut y = member("y", &[1]);
    y.instance = Some("i-2".to_owned());
    let a = member("a", &[1, 2]);
    let members = vec![a, y, z];
    let out = run(AssignorName::Range, &members, &topics, &BTreeMap::new());
    check_valid(&members, &topics, &out);
    // t1 over z, y, a: 2, 2, 1.
    assert_eq!(out["z"][&t(1)], [0, 1].into());
    assert_eq!(out["y"][&t(1)], [2, 3].into());
    assert_eq!(out["a"][&t(1)], [4].into());
    // t2 over z, a: 2, 1.
    assert_eq!(out["z"][&t(2)], [0, 1].into());
    assert_eq!(out["a"][&t(2)], [2].into());
    assert!(!out["y"].contains_key(&t(2)));
}

/// Topic 1 with `parts` partitions whose replicas all sit in one rack each,
/// alternating "r0", "r1", ...
fn racked_topic(parts: i32, racks: usize) -> TopicSpec {
    TopicSpec {
        partitions: parts,
        partition_racks: (0..parts)
            .map(|p| [format!("r{}", usize::try_from(p).unwrap() % racks)].into())
            .collect(),
    }
}

fn rack_matches(
    out: &BTreeMap<String, TopicPartitions>,
    members: &[Member],
    topics: &BTreeMap<Uuid, TopicSpec>,
) -> usize {
    members
        .iter()
        .map(|m| {
            assignment::iter_pairs(&out[&m.id])
                .filter(|(tid, p)| {
                    let racks = &topics[tid].partition_racks[usize::try_from(*p).unwrap()];
                    m.rack.as_ref().is_some_and(|r| racks.contains(r))
                })
                .count()
        })
        .sum()
}

fn racked_members(n: usize, racks: usize) -> Vec<Member> {
    (0..n)
        .map(|i| {
            let mut m = member(&format!("m{i}"), &[1]);
            m.rack = Some(format!("r{}", (i * 7 + 3) % racks));
            m
        })
        .collect()
}

#[test]
fn rack_preference_when_possible() {
    // 4 members over 2 racks, 8 partitions over the same 2 racks: all match.
    let mut topics = BTreeMap::new();
    topics.insert(t(1), racked_topic(8, 2));
    let members = racked_members(4, 2);
    for assignor in [AssignorName::Uniform, AssignorName::Range] {
        let out = run(assignor, &members, &topics, &BTreeMap::new());
        check_valid(&members, &topics, &out);
        check_within_one(&out);
        assert_eq!(
            rack_matches(&out, &members, &topics),
            8,
            "{assignor:?}: {out:?}"
        );
        // The rack-less answer matches fewer: the preference did something.
        let plain: Vec<Member> = members
            .iter()
            .map(|m| Member {
                rack: None,
                ..m.clone()
            })
            .collect();
        let without = run(assignor, &plain, &topics, &BTreeMap::new());
        assert!(rack_matches(&without, &members, &topics) < 8);
    }
}

#[test]
fn rack_preference_never_breaks_balance() {
    for parts in 1..=20i32 {
        for n in 1..=8usize {
            for racks in 1..=3usize {
                let mut topics = BTreeMap::new();
                topics.insert(t(1), racked_topic(parts, racks));
                // Members crowd into rack r0 and a rack no partition uses.
                let members: Vec<Member> = (0..n)
                    .map(|i| {
                        let mut m = member(&format!("m{i}"), &[1]);
                        m.rack = Some(if i % 3 == 0 {
                            "r9".to_owned()
                        } else {
                            "r0".to_owned()
                        });
                        m
                    })
                    .collect();
                let plain: Vec<Member> = members
                    .iter()
                    .map(|m| Member {
                        rack: None,
                        ..m.clone()
                    })
                    .collect();
                for assignor in [AssignorName::Uniform, AssignorName::Range] {
                    let out = run(assignor, &members, &topics, &BTreeMap::new());
                    check_valid(&members, &topics, &out);
                    let without = run(assignor, &plain, &topics, &BTreeMap::new());
                    // Range: each member the same count as without racks;
                    // uniform: the same sizes (which member holds an extra
                    // slot may differ).
                    let (mut got, mut want) = (sizes(&out), sizes(&without));
                    if assignor == AssignorName::Uniform {
                        got.sort_unstable();
                        want.sort_unstable();
                    }
                    assert_eq!(got, want, "{assignor:?} {parts}x{n} racks {racks}");
                    assert!(
                        rack_matches(&out, &members, &topics)
                            >= rack_matches(&without, &members, &topics)
                    );
                }
            }
        }
    }
}

#[test]
fn no_known_racks_equals_rackless() {
    let mut rng = Rng(42);
    for _ in 0..100 {
        let parts = i32::try_from(1 + rng.below(15)).unwrap();
        let n = 1 + rng.below(6);
        let mut with_racks = BTreeMap::new();
        with_racks.insert(t(1), racked_topic(parts, 2));
        with_racks.insert(t(2), topic(parts + 1));
        let mut no_racks = BTreeMap::new();
        no_racks.insert(t(1), topic(parts));
        no_racks.insert(t(2), topic(parts + 1));
        let plain: Vec<Member> = (0..n)
            .map(|i| {
                member(
                    &format!("m{i}"),
                    if rng.below(2) == 0 { &[1, 2] } else { &[1] },
                )
            })
            .collect();
        let racked: Vec<Member> = racked_members(n, 2)
            .into_iter()
            .zip(&plain)
            .map(|(r, p)| Member {
                rack: r.rack,
                ..p.clone()
            })
            .collect();
        for assignor in [AssignorName::Uniform, AssignorName::Range] {
            let base = run(assignor, &plain, &no_racks, &BTreeMap::new());
            // Partition racks known, member racks not.
            assert_eq!(run(assignor, &plain, &with_racks, &BTreeMap::new()), base);
            // Member racks known, partition racks not.
            assert_eq!(run(assignor, &racked, &no_racks, &BTreeMap::new()), base);
            // And with a current assignment to stick to.
            assert_eq!(
                run(assignor, &plain, &with_racks, &base),
                run(assignor, &plain, &no_racks, &base)
            );
        }
    }
}

#[test]
fn stickiness_beats_rack_preference() {
    let mut topics = BTreeMap::new();
    topics.insert(t(1), racked_topic(4, 2));
    let members = racked_members(2, 2);
    // Give each member the partitions of the *other* rack.
    let other_rack = |m: &Member| {
        let mine = m.rack.as_deref().unwrap();
        (0..4)
            .filter(|p| {
                topics[&t(1)].partition_racks[usize::try_from(*p).unwrap()]
                    .iter()
                    .all(|r| r != mine)
            })
            .collect::<Vec<i32>>()
    };
    let current: BTreeMap<String, TopicPartitions> = members
        .iter()
        .map(|m| {
            (
                m.id.clone(),
                assignment::from_pairs([(t(1), other_rack(m))]),
            )
        })
        .collect();
    for assignor in [AssignorName::Uniform, AssignorName::Range] {
        let out = run(assignor, &members, &topics, &current);
        assert_eq!(
            out, current,
            "{assignor:?} must not move owned partitions for racks"
        );
    }
}
