//! The controller's decisions, as a pure function of a [`Snapshot`]: which
//! partitions need replicas (Kafka's placement), which need a new leader,
//! which states belong to a topic that is gone. The mechanism that writes
//! them (fenced compare-and-swap transactions) is `controller`.

use crate::placement::{assign_replicas, BrokerMetadata};

use super::layout::{PartitionRecord, Snapshot};

/// One change the controller makes, with the revision it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Create the states of new partitions of `topic` (each key must be absent).
    Assign {
        topic: String,
        partitions: Vec<(i32, PartitionRecord)>,
    },
    /// Replace one partition's state read at revision `expected`.
    Update {
        topic: String,
        partition: i32,
        expected: i64,
        record: PartitionRecord,
    },
    /// Remove the state of a partition whose topic is gone or was recreated.
    Remove {
        topic: String,
        partition: i32,
        expected: i64,
    },
}

/// Everything the controller should change in `s` now. `fixed_start`
/// replaces placement's random start (tests); `unclean_default` is
/// `unclean.leader.election.enable` where neither the topic nor the
/// cluster's dynamic configs set it.
pub(crate) fn plan(
    s: &Snapshot,
    fixed_start: Option<usize>,
    unclean_default: bool,
) -> Vec<Decision> {
    let mut out = Vec::new();
    let live: Vec<BrokerMetadata> = s
        .brokers
        .values()
        .map(|b| BrokerMetadata {
            id: b.record.id,
            rack: b.record.rack.clone(),
        })
        .collect();
    for (name, topic) in &s.topics {
        let t = &topic.value;
        let missing: Vec<i32> = (0..t.partitions)
            .filter(|p| {
                s.partition(name, *p)
                    .is_none_or(|st| st.value.topic_id != t.id)
            })
            .collect();
        let Some(&first) = missing.first() else {
            continue;
        };
        // Placement lays out consecutive partitions; a gap (a state removed
        // by hand) is placed on its own.
        let contiguous = missing
            .iter()
            .enumerate()
            .all(|(i, p)| *p == first + i as i32);
        let blocks: Vec<(i32, i32)> = if contiguous {
            vec![(first, missing.len() as i32)]
        } else {
            missing.iter().map(|p| (*p, 1)).collect()
        };
        let mut partitions = Vec::new();
        for (start, count) in blocks {
            // A stale state of a recreated topic goes first (the loop
            // below removes it); the new partitions are placed after.
            if (start..start + count).any(|p| s.partition(name, p).is_some()) {
                continue;
            }
            match assign_replicas(&live, count, t.replication_factor, fixed_start, start) {
                Ok(assignment) => {
                    for (i, replicas) in assignment.into_iter().enumerate() {
                        let leader = replicas.first().copied().unwrap_or(-1);
                        partitions.push((
                            start + i as i32,
                            PartitionRecord {
                                topic_id: t.id,
                                isr: replicas.clone(),
                                replicas,
                                leader,
                                leader_epoch: 0,
                                partition_epoch: 0,
                                adding_replicas: Vec::new(),
                                removing_replicas: Vec::new(),
                                leader_broker_epoch: 0,
                            }
                            .stamped(s),
                        ));
                    }
                }
                Err(error) => {
                    tracing::warn!(topic = %name, %error, "cannot place new partitions yet");
                }
            }
        }
        if !partitions.is_empty() {
            out.push(Decision::Assign {
                topic: name.clone(),
                partitions,
            });
        }
    }
    for ((name, p), st) in &s.partitions {
        let current = &st.value;
        let topic_ok = s
            .topics
            .get(name)
            .is_some_and(|t| t.value.id == current.topic_id && *p < t.value.partitions);
        if !topic_ok {
            out.push(Decision::Remove {
                topic: name.clone(),
                partition: *p,
                expected: st.mod_revision,
            });
            continue;
        }
        let unclean = unclean_allowed(s, name, unclean_default);
        let record = next_state(s, current, unclean);
        let record = super::leadership::complete_reassignment(s, &record).unwrap_or(record);
        if record != *current {
            if record.leader != current.leader
                && record.leader >= 0
                && !current.isr.contains(&record.leader)
            {
                tracing::warn!(topic = %name, partition = *p, leader = record.leader, isr = ?current.isr, "UNCLEAN leader election: records the old ISR held may be lost");
            }
            out.push(Decision::Update {
                topic: name.clone(),
                partition: *p,
                expected: st.mod_revision,
                record,
            });
        }
    }
    out
}

/// `unclean.leader.election.enable` for `topic`: its override, else the
/// cluster-wide dynamic value, else `default` (this broker's static one).
pub(crate) fn unclean_allowed(s: &Snapshot, topic: &str, default: bool) -> bool {
    const NAME: &str = "unclean.leader.election.enable";
    let topic_value = s
        .topics
        .get(topic)
        .and_then(|t| t.value.configs.get(NAME).cloned());
    topic_value
        .or_else(|| s.broker_configs("").get(NAME).cloned())
        .map_or(default, |v| v.eq_ignore_ascii_case("true"))
}

/// What the controller makes of a partition's state (Kafka's ZK-style
/// controller, `replication.md` §4.6, §6.1):
///
/// - brokers that are gone (lease expired) or shutting down leave the
///   ISR, except the last member, which stays (with no leader) so it can
///   lead again cleanly when it returns;
/// - a live leader in the ISR stays; otherwise the first replica, in
///   replica order, that is live and in the ISR leads; otherwise, only if
///   `unclean` allows it, the first live replica, with an ISR of itself;
///   otherwise nobody (-1);
/// - a new leader bumps the leader epoch; any change bumps the partition
///   epoch.
pub(crate) fn next_state(s: &Snapshot, p: &PartitionRecord, unclean: bool) -> PartitionRecord {
    // A leader that restarted since its election is handled as a failed
    // broker that came back (Kafka: ZooKeeper mode's bounced brokers, KRaft's
    // fencing at re-registration): it leaves the ISR unless it is the last
    // member, and whoever leads next does so in a new epoch.
    let bounced = p.leader_bounced(s);
    let mut isr: Vec<i32> = p
        .isr
        .iter()
        .copied()
        .filter(|r| s.is_eligible(*r) && !(bounced && *r == p.leader))
        .collect();
    if isr.is_empty() && !p.isr.is_empty() {
        // Keep the member most likely to hold everything: the last leader.
        let keep = if p.isr.contains(&p.leader) {
            p.leader
        } else {
            p.isr[0]
        };
        isr = vec![keep];
    }
    let leader = if p.leader >= 0 && !bounced && s.is_eligible(p.leader) && isr.contains(&p.leader)
    {
        p.leader
    } else if let Some(r) = p
        .replicas
        .iter()
        .copied()
        .find(|r| s.is_eligible(*r) && isr.contains(r))
    {
        r
    } else if let Some(r) = unclean
        .then(|| p.replicas.iter().copied().find(|r| s.is_eligible(*r)))
        .flatten()
    {
        isr = vec![r];
        r
    } else {
        -1
    };
    let mut next = p.clone();
    next.isr = isr;
    next.leader = leader;
    if leader != p.leader || bounced {
        next.leader_epoch += 1;
    }
    let mut next = next.stamped(s);
    if next != *p {
        next.partition_epoch += 1;
    }
    next
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use uuid::Uuid;

    use super::super::layout::{BrokerRecord, LiveBroker, TopicRecord, Versioned};
    use super::*;

    fn snapshot(brokers: &[(i32, Option<&str>)]) -> Snapshot {
        let mut s = Snapshot::default();
        for (id, rack) in brokers {
            s.brokers.insert(
                *id,
                LiveBroker {
                    record: BrokerRecord {
                        id: *id,
                        rack: rack.map(str::to_string),
                        listener: "PLAINTEXT".into(),
                        host: "127.0.0.1".into(),
                        port: 9000 + *id as u16,
                        endpoints: Vec::new(),
                        shutting_down: false,
                    },
                    epoch: 1,
                },
            );
        }
        s
    }

    fn add_topic(s: &mut Snapshot, name: &str, partitions: i32, rf: i16) -> Uuid {
        let id = Uuid::new_v4();
        s.topics.insert(
            name.into(),
            Versioned {
                value: TopicRecord {
                    id,
                    partitions,
                    replication_factor: rf,
                    configs: BTreeMap::new(),
                },
                mod_revision: 3,
            },
        );
        id
    }

    fn apply(s: &mut Snapshot, decisions: &[Decision]) {
        for d in decisions {
            match d {
                Decision::Assign { topic, partitions } => {
                    for (p, r) in partitions {
                        s.partitions.insert(
                            (topic.clone(), *p),
                            Versioned {
                                value: r.clone(),
                                mod_revision: 10,
                            },
                        );
                    }
                }
                Decision::Update {
                    topic,
                    partition,
                    record,
                    ..
                } => {
                    s.partitions.insert(
                        (topic.clone(), *partition),
                        Versioned {
                            value: record.clone(),
                            mod_revision: 11,
                        },
                    );
                }
                Decision::Remove {
                    topic, partition, ..
                } => {
                    s.partitions.remove(&(topic.clone(), *partition));
                }
            }
        }
    }

    #[test]
    fn new_topic_spreads_leaders_over_every_live_broker() {
        let mut s = snapshot(&[(1, None), (2, None), (3, None)]);
        add_topic(&mut s, "t", 6, 1);
        let d = plan(&s, None, false);
        assert_eq!(d.len(), 1);
        apply(&mut s, &d);
        let mut per_broker = BTreeMap::new();
        for p in 0..6 {
            let st = &s.partition("t", p).unwrap().value;
            assert_eq!(st.replicas.len(), 1);
            assert_eq!(st.leader, st.replicas[0]);
            *per_broker.entry(st.leader).or_insert(0) += 1;
        }
        assert_eq!(
            per_broker.values().copied().collect::<Vec<_>>(),
            vec![2, 2, 2]
        );
        assert!(
            plan(&s, None, false).is_empty(),
            "a settled cluster needs nothing"
        );
    }

    #[test]
    fn replicas_on_distinct_racks_and_leaders_even() {
        let mut s = snapshot(&[
            (1, Some("a")),
            (2, Some("a")),
            (3, Some("b")),
            (4, Some("b")),
            (5, Some("c")),
            (6, Some("c")),
        ]);
        add_topic(&mut s, "t", 12, 3);
        let d = plan(&s, None, false);
        apply(&mut s, &d);
        let mut leaders = BTreeMap::new();
        for p in 0..12 {
            let st = &s.partition("t", p).unwrap().value;
            let racks: std::collections::BTreeSet<_> = st
                .replicas
                .iter()
                .map(|r| s.brokers[r].record.rack.clone().unwrap())
                .collect();
            assert_eq!(racks.len(), 3, "partition {p}: {:?}", st.replicas);
            *leaders.entry(st.leader).or_insert(0) += 1;
        }
        assert_eq!(leaders.len(), 6);
        assert!(leaders.values().all(|n| *n == 2), "{leaders:?}");
    }

    #[test]
    fn dead_leader_loses_leadership_and_gets_it_back_with_a_new_epoch() {
        let mut s = snapshot(&[(1, None), (2, None)]);
        add_topic(&mut s, "t", 2, 1);
        let d = plan(&s, Some(0), false);
        apply(&mut s, &d);
        let led_by_1 = (0..2)
            .find(|p| s.partition("t", *p).unwrap().value.leader == 1)
            .unwrap();
        s.brokers.remove(&1);
        let d = plan(&s, None, false);
        assert_eq!(d.len(), 1);
        apply(&mut s, &d);
        let st = &s.partition("t", led_by_1).unwrap().value;
        assert_eq!((st.leader, st.leader_epoch), (-1, 1));
        s = {
            let mut back = snapshot(&[(1, None), (2, None)]);
            back.topics = s.topics.clone();
            back.partitions = s.partitions.clone();
            back
        };
        let d = plan(&s, None, false);
        apply(&mut s, &d);
        let st = &s.partition("t", led_by_1).unwrap().value;
        assert_eq!((st.leader, st.leader_epoch), (1, 2));
    }

    #[test]
    fn states_of_deleted_or_recreated_topics_are_removed() {
        let mut s = snapshot(&[(1, None)]);
        add_topic(&mut s, "t", 1, 1);
        let d = plan(&s, None, false);
        apply(&mut s, &d);
        add_topic(&mut s, "t", 1, 1); // recreated: new id
        let d = plan(&s, None, false);
        assert!(
            matches!(d.as_slice(), [Decision::Remove { partition: 0, .. }]),
            "{d:?}"
        );
        apply(&mut s, &d);
        let d = plan(&s, None, false);
        apply(&mut s, &d);
        assert_eq!(
            s.partition("t", 0).unwrap().value.topic_id,
            s.topics["t"].value.id
        );
        s.topics.clear();
        assert!(matches!(
            plan(&s, None, false).as_slice(),
            [Decision::Remove { .. }]
        ));
    }

    fn state(replicas: &[i32], isr: &[i32], leader: i32) -> PartitionRecord {
        PartitionRecord {
            topic_id: Uuid::from_u128(1),
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader,
            leader_epoch: 4,
            partition_epoch: 9,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            leader_broker_epoch: i64::from(leader >= 0),
        }
    }

    #[test]
    fn a_dead_follower_leaves_the_isr_without_a_leader_change() {
        let s = snapshot(&[(1, None), (3, None)]);
        let next = next_state(&s, &state(&[1, 2, 3], &[1, 2, 3], 1), false);
        assert_eq!((next.isr.clone(), next.leader), (vec![1, 3], 1));
        assert_eq!((next.leader_epoch, next.partition_epoch), (4, 10));
        let same = next_state(&s, &next, false);
        assert_eq!(same, next, "nothing left to change");
    }

    #[test]
    fn a_dead_leader_is_replaced_by_the_first_live_isr_member() {
        let s = snapshot(&[(2, None), (3, None)]);
        let next = next_state(&s, &state(&[1, 2, 3], &[1, 3], 1), false);
        assert_eq!((next.isr.clone(), next.leader), (vec![3], 3));
        assert_eq!((next.leader_epoch, next.partition_epoch), (5, 10));
    }

    /// A leader killed and restarted before its lease was seen to lapse is
    /// back under a new broker epoch: it is a failed broker that returned.
    #[test]
    fn a_leader_that_restarted_loses_leadership_and_leaves_the_isr() {
        let mut s = snapshot(&[(1, None), (2, None), (3, None)]);
        s.brokers.get_mut(&1).unwrap().epoch = 7;
        let next = next_state(&s, &state(&[1, 2, 3], &[1, 2, 3], 1), false);
        assert_eq!((next.isr.clone(), next.leader), (vec![2, 3], 2));
        assert_eq!((next.leader_epoch, next.partition_epoch), (5, 10));
        assert_eq!(next.leader_broker_epoch, 1, "the new leader's epoch");
        assert_eq!(next_state(&s, &next, false), next, "settled");
    }

    #[test]
    fn a_restarted_last_isr_member_leads_again_in_a_new_epoch() {
        let mut s = snapshot(&[(1, None), (2, None)]);
        s.brokers.get_mut(&1).unwrap().epoch = 7;
        let next = next_state(&s, &state(&[1, 2], &[1], 1), false);
        assert_eq!((next.isr.clone(), next.leader), (vec![1], 1));
        assert_eq!(next.leader_epoch, 5, "not the epoch it led before");
        assert_eq!(next.leader_broker_epoch, 7);
        assert_eq!(next_state(&s, &next, false), next, "settled");
    }

    #[test]
    fn a_record_without_the_leaders_broker_epoch_is_stamped_without_an_election() {
        let s = snapshot(&[(1, None), (2, None)]);
        let old = PartitionRecord {
            leader_broker_epoch: 0,
            ..state(&[1, 2], &[1, 2], 1)
        };
        let next = next_state(&s, &old, false);
        assert_eq!((next.leader, next.leader_epoch), (1, 4));
        assert_eq!(next.leader_broker_epoch, 1);
        assert_eq!(next.partition_epoch, 10);
    }

    #[test]
    fn the_last_isr_member_stays_and_only_an_unclean_election_passes_it_over() {
        let s = snapshot(&[(2, None)]);
        let next = next_state(&s, &state(&[1, 2], &[1], 1), false);
        assert_eq!((next.isr.clone(), next.leader), (vec![1], -1));
        assert_eq!(next.leader_epoch, 5);
        let unclean = next_state(&s, &next, true);
        assert_eq!((unclean.isr.clone(), unclean.leader), (vec![2], 2));
        assert_eq!(unclean.leader_epoch, 6);
        // The clean choice comes back when the old leader does.
        let back = snapshot(&[(1, None), (2, None)]);
        let clean = next_state(&back, &next, false);
        assert_eq!((clean.isr.clone(), clean.leader), (vec![1], 1));
    }

    #[test]
    fn controlled_shutdown_moves_leadership_and_leaves_the_isr() {
        let mut s = snapshot(&[(1, None), (2, None), (3, None)]);
        s.brokers.get_mut(&1).unwrap().record.shutting_down = true;
        let next = next_state(&s, &state(&[1, 2, 3], &[1, 2, 3], 1), false);
        assert_eq!((next.isr.clone(), next.leader), (vec![2, 3], 2));
        assert_eq!(next.leader_epoch, 5);
        // The only replica: no leader while it shuts down, still the ISR.
        let alone = next_state(&s, &state(&[1], &[1], 1), false);
        assert_eq!((alone.isr.clone(), alone.leader), (vec![1], -1));
    }

    #[test]
    fn unclean_election_follows_topic_then_cluster_then_broker_config() {
        let mut s = snapshot(&[(1, None)]);
        add_topic(&mut s, "t", 1, 1);
        assert!(!unclean_allowed(&s, "t", false));
        assert!(unclean_allowed(&s, "t", true));
        s.broker_configs.insert(
            String::new(),
            Versioned {
                value: BTreeMap::from([(
                    "unclean.leader.election.enable".to_string(),
                    "true".to_string(),
                )]),
                mod_revision: 1,
            },
        );
        assert!(unclean_allowed(&s, "t", false));
        s.topics
            .get_mut("t")
            .unwrap()
            .value
            .configs
            .insert("unclean.leader.election.enable".into(), "false".into());
        assert!(!unclean_allowed(&s, "t", true));
    }

    #[test]
    fn too_few_brokers_waits_instead_of_placing_badly() {
        let mut s = snapshot(&[(1, None)]);
        add_topic(&mut s, "t", 1, 2);
        assert!(plan(&s, None, false).is_empty());
    }
}
