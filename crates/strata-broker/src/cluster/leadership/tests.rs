use std::collections::BTreeMap;

use uuid::Uuid;

use super::super::layout::{BrokerRecord, LiveBroker, TopicRecord, Versioned};
use super::*;

fn snapshot(live: &[i32]) -> Snapshot {
    let mut s = Snapshot::default();
    for &id in live {
        s.brokers.insert(
            id,
            LiveBroker {
                record: BrokerRecord {
                    id,
                    rack: None,
                    listener: "PLAINTEXT".into(),
                    host: "127.0.0.1".into(),
                    port: 9000 + id as u16,
                    endpoints: Vec::new(),
                    shutting_down: false,
                },
                epoch: 1,
            },
        );
    }
    s
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

fn add(s: &mut Snapshot, topic: &str, p: i32, record: PartitionRecord) {
    s.topics.entry(topic.to_string()).or_insert(Versioned {
        value: TopicRecord {
            id: record.topic_id,
            partitions: 100,
            replication_factor: record.replicas.len() as i16,
            configs: BTreeMap::new(),
        },
        mod_revision: 2,
    });
    s.partitions.insert(
        (topic.to_string(), p),
        Versioned {
            value: record,
            mod_revision: 20 + i64::from(p),
        },
    );
}

#[test]
fn preferred_election_moves_leadership_back_with_new_epochs() {
    let s = snapshot(&[1, 2, 3]);
    let next = elect(
        &s,
        &state(&[1, 2, 3], &[2, 3, 1], 2),
        ElectionType::Preferred,
    )
    .unwrap();
    assert_eq!((next.leader, next.isr.clone()), (1, vec![2, 3, 1]));
    assert_eq!((next.leader_epoch, next.partition_epoch), (5, 10));
}

#[test]
fn preferred_election_refusals() {
    let s = snapshot(&[2, 3]);
    assert_eq!(
        elect(
            &s,
            &state(&[1, 2, 3], &[1, 2, 3], 1),
            ElectionType::Preferred
        ),
        Err(ElectionRefused::NotNeeded)
    );
    assert_eq!(
        elect(
            &s,
            &state(&[1, 2, 3], &[1, 2, 3], 2),
            ElectionType::Preferred
        ),
        Err(ElectionRefused::PreferredNotAvailable),
        "preferred replica not live"
    );
    let s = snapshot(&[1, 2, 3]);
    assert_eq!(
        elect(&s, &state(&[1, 2, 3], &[2, 3], 2), ElectionType::Preferred),
        Err(ElectionRefused::PreferredNotAvailable),
        "preferred replica not in the ISR"
    );
    let mut closing = snapshot(&[1, 2, 3]);
    closing.brokers.get_mut(&1).unwrap().record.shutting_down = true;
    assert_eq!(
        elect(
            &closing,
            &state(&[1, 2, 3], &[1, 2, 3], 2),
            ElectionType::Preferred
        ),
        Err(ElectionRefused::PreferredNotAvailable),
        "a broker in controlled shutdown is not elected"
    );
}

#[test]
fn unclean_election_only_without_a_live_leader() {
    let s = snapshot(&[2, 3]);
    assert_eq!(
        elect(&s, &state(&[1, 2, 3], &[1, 2], 2), ElectionType::Unclean),
        Err(ElectionRefused::NotNeeded)
    );
    let next = elect(&s, &state(&[1, 2, 3], &[1], -1), ElectionType::Unclean).unwrap();
    assert_eq!((next.leader, next.isr.clone()), (2, vec![2]));
    assert_eq!(next.leader_epoch, 5);
    let clean = elect(&s, &state(&[1, 2, 3], &[1, 3], -1), ElectionType::Unclean).unwrap();
    assert_eq!(
        (clean.leader, clean.isr.clone()),
        (3, vec![3]),
        "a live ISR member is preferred"
    );
    assert_eq!(
        elect(
            &snapshot(&[4]),
            &state(&[1, 2, 3], &[1], -1),
            ElectionType::Unclean
        ),
        Err(ElectionRefused::EligibleNotAvailable)
    );
    assert_eq!(ElectionType::from_wire(2), None);
}

#[test]
fn rebalance_elects_only_above_the_imbalance_percentage() {
    let mut s = snapshot(&[1, 2, 3]);
    // Broker 1 prefers 10 partitions; it leads 9 of them.
    for p in 0..10 {
        let leader = if p == 0 { 2 } else { 1 };
        add(&mut s, "t", p, state(&[1, 2, 3], &[1, 2, 3], leader));
    }
    assert!(rebalance(&s, 10).is_empty(), "10% is not above 10%");
    let d = rebalance(&s, 5);
    assert!(
        matches!(d.as_slice(), [Decision::Update { partition: 0, expected: 20, record, .. }] if record.leader == 1 && record.leader_epoch == 5),
        "{d:?}"
    );
    // Broker 2 prefers two partitions and leads neither: one has 2 out of
    // the ISR (ineligible), one is being reassigned (left alone).
    add(&mut s, "u", 0, state(&[2, 1], &[1], 1));
    let mut moving = state(&[2, 1, 3], &[1, 2, 3], 1);
    moving.removing_replicas = vec![3];
    add(&mut s, "u", 1, moving);
    let d = rebalance(&s, 5);
    assert!(
        d.iter()
            .all(|d| matches!(d, Decision::Update { topic, .. } if topic == "t")),
        "{d:?}"
    );
    assert_eq!(d.len(), 1);
}

#[test]
fn reassignment_adds_then_completes_when_the_isr_holds_the_target() {
    let s = snapshot(&[1, 2, 3, 4]);
    let p = state(&[1, 2, 3], &[1, 2, 3], 1);
    let started = start_reassignment(&s, &p, &[2, 3, 4]).unwrap();
    assert_eq!(started.replicas, vec![2, 3, 4, 1]);
    assert_eq!(started.adding_replicas, vec![4]);
    assert_eq!(started.removing_replicas, vec![1]);
    assert_eq!((started.leader, started.leader_epoch), (1, 4));
    assert_eq!(started.partition_epoch, 10);
    assert!(is_reassigning(&started));
    assert_eq!(
        complete_reassignment(&s, &started),
        None,
        "4 is not in the ISR yet"
    );
    let caught_up = PartitionRecord {
        isr: vec![1, 2, 3, 4],
        partition_epoch: 11,
        ..started
    };
    let done = complete_reassignment(&s, &caught_up).unwrap();
    assert_eq!(done.replicas, vec![2, 3, 4]);
    assert_eq!(done.isr, vec![2, 3, 4]);
    assert_eq!(
        done.leader, 2,
        "the removed leader is replaced from the target"
    );
    assert_eq!((done.leader_epoch, done.partition_epoch), (5, 12));
    assert!(!is_reassigning(&done));
}

#[test]
fn a_completed_reassignment_keeps_a_leader_that_stays() {
    let s = snapshot(&[1, 2, 3, 4]);
    let mut p = state(&[2, 3, 4, 1], &[1, 2, 3, 4], 3);
    p.adding_replicas = vec![4];
    p.removing_replicas = vec![1];
    let done = complete_reassignment(&s, &p).unwrap();
    assert_eq!((done.leader, done.leader_epoch), (3, 5));
}

#[test]
fn reassignment_validation() {
    let s = snapshot(&[1, 2, 3]);
    let p = state(&[1, 2, 3], &[1, 2, 3], 1);
    assert_eq!(
        start_reassignment(&s, &p, &[]),
        Err(ReassignmentRefused::Empty)
    );
    assert_eq!(
        start_reassignment(&s, &p, &[1, 2, 1]),
        Err(ReassignmentRefused::Duplicate(1))
    );
    assert_eq!(
        start_reassignment(&s, &p, &[1, 2, 9]),
        Err(ReassignmentRefused::UnknownBroker(9))
    );
    assert_eq!(start_reassignment(&s, &p, &[1, 2, 3]), Ok(p.clone()));
    let reordered = start_reassignment(&s, &p, &[3, 1, 2]).unwrap();
    assert_eq!(reordered.replicas, vec![3, 1, 2]);
    assert!(!is_reassigning(&reordered), "a reorder completes at once");
    assert_eq!(
        cancel_reassignment(&s, &p, false),
        Err(ReassignmentRefused::NotInProgress)
    );
}

#[test]
fn cancel_drops_the_adding_replicas() {
    let s = snapshot(&[1, 2, 3, 4]);
    let mut p = state(&[2, 3, 4, 1], &[1, 2, 3, 4], 4);
    p.adding_replicas = vec![4];
    p.removing_replicas = vec![1];
    let back = cancel_reassignment(&s, &p, false).unwrap();
    assert_eq!(back.replicas, vec![2, 3, 1]);
    assert_eq!(back.isr, vec![1, 2, 3]);
    assert_eq!(
        (back.leader, back.leader_epoch),
        (2, 5),
        "the adding leader left"
    );
    assert!(!is_reassigning(&back));
    let mut only_new = state(&[4, 1], &[4], 4);
    only_new.adding_replicas = vec![4];
    only_new.removing_replicas = vec![1];
    assert_eq!(
        cancel_reassignment(&s, &only_new, false),
        Err(ReassignmentRefused::CancelEmptiesIsr)
    );
    let unclean = cancel_reassignment(&s, &only_new, true).unwrap();
    assert_eq!((unclean.isr.clone(), unclean.leader), (vec![1], 1));
}

#[test]
fn a_new_target_replaces_a_reassignment_in_progress() {
    let s = snapshot(&[1, 2, 3, 4, 5]);
    let mut p = state(&[2, 3, 4, 1], &[1, 2, 3, 4], 1);
    p.adding_replicas = vec![4];
    p.removing_replicas = vec![1];
    let next = start_reassignment(&s, &p, &[2, 3, 5]).unwrap();
    assert_eq!(next.replicas, vec![2, 3, 5, 1]);
    assert_eq!(next.adding_replicas, vec![5]);
    assert_eq!(next.removing_replicas, vec![1]);
    assert_eq!(next.isr, vec![1, 2, 3], "4 was only being added");
}
