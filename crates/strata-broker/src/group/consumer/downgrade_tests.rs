//! The online downgrade through the [`GroupManager`]: a classic group is
//! upgraded by a consumer-protocol member, which then leaves or is fenced,
//! and the classic members are a classic group again — with their offsets,
//! after a reload too, and rebalancing among themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use uuid::Uuid;

use super::api::{ConsumerHeartbeat, ConsumerHeartbeatResult};
use super::assignment::TopicPartitions;
use super::embedded::{encode_assignment, parse_assignment};
use super::image::{ImageTopic, TopicImage};
use crate::group::classic::Group;
use crate::group::config::{GroupConfig, MigrationPolicy};
use crate::group::harness::Harness;
use crate::group::manager::GroupManager;
use crate::group::offsets::LoadedRecord;

const GROUP: &str = "g";

fn image() -> TopicImage {
    TopicImage::new(
        1,
        [(
            "t".to_string(),
            ImageTopic {
                id: Uuid::from_bytes([1; 16]),
                partitions: 6,
                racks: vec![BTreeSet::new(); 6],
                internal: false,
            },
        )]
        .into_iter()
        .collect(),
    )
}

/// A Stable classic group of two members (b: t-0..2, c: t-3..5) with an
/// offset committed, joined by the consumer-protocol member "a" (the
/// online upgrade). Returns the harness and the classic members' ids.
fn upgraded(config: GroupConfig) -> (Harness, String, String) {
    let mut h = Harness::with_config(GroupConfig {
        consumer_protocol_enabled: true,
        initial_rebalance_delay_ms: 100,
        ..config
    });
    h.m.image = Arc::new(image());
    let (b, tb) = h.join_new(GROUP);
    let (c, tc) = h.join_new(GROUP);
    // The initial delay is extended once for the second member.
    h.advance(100);
    h.advance(100);
    let (jb, jc) = (h.take_join(tb).unwrap(), h.take_join(tc).unwrap());
    assert_eq!((jb.error, jc.error), (None, None));
    let generation = jb.generation_id;
    let first = encode_assignment(&[("t".to_string(), vec![0, 1, 2])]);
    let second = encode_assignment(&[("t".to_string(), vec![3, 4, 5])]);
    let (leader, follower) = if jb.leader_id == b {
        (&b, &c)
    } else {
        (&c, &b)
    };
    let sf = h.sync(GROUP, follower, generation, &[]);
    let sl = h.sync(
        GROUP,
        leader,
        generation,
        &[(&b, first.as_slice()), (&c, second.as_slice())],
    );
    assert_eq!(h.take_sync(sf).unwrap().error, None);
    assert_eq!(h.take_sync(sl).unwrap().error, None);
    assert_eq!(h.state(GROUP), "Stable");
    assert_eq!(h.commit(GROUP, &b, generation, &[("t", 0, 42)]), vec![None]);
    let r = beat(&mut h, "a", 0);
    assert_eq!(r.error, None, "{:?}", r.error_message);
    assert!(group(&h).consumer.is_some(), "a consumer group now");
    (h, b, c)
}

/// A ConsumerGroupHeartbeat of "a"-like dynamic member at `epoch` (0: a
/// full join subscribed to t).
fn beat(h: &mut Harness, member: &str, epoch: i32) -> ConsumerHeartbeatResult {
    let req = ConsumerHeartbeat {
        version: 1,
        group_id: GROUP.to_string(),
        member_id: member.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: if epoch == 0 { 30_000 } else { -1 },
        subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
        topic_partitions: (epoch == 0).then(TopicPartitions::new),
        client_id: "c".to_string(),
        client_host: "/127.0.0.1".to_string(),
        ..ConsumerHeartbeat::default()
    };
    let image = image();
    h.m.consumer_heartbeat(&req, &image, h.now, &mut h.store)
}

fn group(h: &Harness) -> &Group {
    h.m.group(GROUP).expect("the group exists")
}

fn group_epoch(h: &Harness) -> i32 {
    group(h).consumer.as_deref().unwrap().group_epoch
}

/// Everything stored, replayed into a fresh manager.
fn reload(h: &Harness) -> GroupManager {
    let mut m = GroupManager::new(h.m.config.clone());
    let partition = m.partition_for(GROUP);
    let records = h
        .store
        .records
        .iter()
        .filter(|(p, _, _)| *p == partition)
        .map(|(_, offset, r)| LoadedRecord {
            batch_base_offset: *offset,
            key: r.key.clone(),
            value: r.value.clone(),
            txn_producer: None,
            marker: None,
        });
    m.load_partition(partition, records, h.now);
    m
}

/// Each classic member's assigned partitions of t.
fn assigned(g: &Group) -> BTreeMap<String, Vec<i32>> {
    g.members
        .values()
        .map(|m| {
            let topics = parse_assignment(&m.assignment).expect("a consumer-protocol assignment");
            let partitions = topics
                .into_iter()
                .flat_map(|(t, ps)| {
                    assert_eq!(t, "t");
                    ps
                })
                .collect();
            (m.member_id.clone(), partitions)
        })
        .collect()
}

fn check_classic(g: &Group, epoch: i32, members: &[&String]) {
    assert!(g.consumer.is_none(), "no longer a consumer group");
    assert_eq!(g.generation_id, epoch, "the generation is the group epoch");
    assert_eq!(g.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(g.protocol_name.as_deref(), Some("range"));
    let ids: Vec<&String> = g.members.keys().collect();
    let mut want = members.to_vec();
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(
        g.offsets.get(&("t".to_string(), 0)).map(|o| o.offset),
        Some(42),
        "offsets stay"
    );
}

#[test]
fn the_last_consumer_member_leaving_makes_it_a_classic_group_again() {
    let (mut h, b, c) = upgraded(GroupConfig::default());
    let epoch = group_epoch(&h);
    let cg = group(&h).consumer.as_deref().unwrap().clone();
    let r = beat(&mut h, "a", -1);
    assert_eq!((r.error, r.member_epoch), (None, -1));

    let g = group(&h);
    check_classic(g, epoch, &[&b, &c]);
    assert_eq!(h.state(GROUP), "PreparingRebalance", "a rebalance starts");
    // Each keeps its target assignment; the leaver's partitions are free.
    let got = assigned(g);
    let id = cg.subscription_metadata["t"].id;
    for m in [&b, &c] {
        let target: Vec<i32> = cg.target[m]
            .get(&id)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        assert_eq!(got[m], target, "{m} holds its target");
    }
    let held: BTreeSet<i32> = got.values().flatten().copied().collect();
    assert_eq!(held.len(), got.values().map(Vec::len).sum::<usize>());
    assert!(cg.target["a"][&id].iter().all(|p| !held.contains(p)));

    // A reload finds the classic group, Stable at the group epoch.
    let reloaded = reload(&h);
    let rg = reloaded.group(GROUP).unwrap();
    check_classic(rg, epoch, &[&b, &c]);
    assert_eq!(rg.state().name(), "Stable");
    assert_eq!(assigned(rg), got);

    // The members learn of the rebalance and rejoin as a classic group.
    assert_eq!(
        h.heartbeat(GROUP, &b, epoch),
        Some(ResponseError::RebalanceInProgress)
    );
    let tb = h.join(GROUP, &b);
    let tc = h.join(GROUP, &c);
    let (jb, jc) = (h.take_join(tb).unwrap(), h.take_join(tc).unwrap());
    assert_eq!((jb.error, jc.error), (None, None));
    assert_eq!(jb.generation_id, epoch + 1);
    assert_eq!(h.state(GROUP), "CompletingRebalance");
}

#[test]
fn a_fenced_consumer_member_makes_it_a_classic_group_again() {
    let (mut h, b, c) = upgraded(GroupConfig::default());
    let epoch = group_epoch(&h);
    // The classic members heartbeat; "a" goes silent and is fenced when its
    // session (group.consumer.session.timeout.ms) runs out.
    let mut waited = 0;
    while group(&h).consumer.is_some() {
        assert!(waited <= 60_000, "a was never fenced");
        for m in [&b, &c] {
            let e = h.heartbeat(GROUP, m, 1);
            assert!(
                matches!(e, None | Some(ResponseError::RebalanceInProgress)),
                "{e:?}"
            );
        }
        h.advance(3_000);
        waited += 3_000;
    }
    check_classic(group(&h), epoch, &[&b, &c]);
    assert_eq!(h.state(GROUP), "PreparingRebalance");
    assert!(reload(&h).group(GROUP).unwrap().consumer.is_none());
}

#[test]
fn the_policy_and_the_classic_size_limit_can_keep_it_a_consumer_group() {
    let no_downgrade = |c: &mut GroupConfig| c.migration_policy = MigrationPolicy::Upgrade;
    // The two classic members would not fit in a classic group of one.
    let small_classic = |c: &mut GroupConfig| c.max_size = 1;
    for change in [no_downgrade, small_classic] {
        let (mut h, b, c) = upgraded(GroupConfig::default());
        change(&mut h.m.config);
        assert_eq!(beat(&mut h, "a", -1).error, None);
        let cg = group(&h)
            .consumer
            .as_deref()
            .expect("still a consumer group");
        let ids: BTreeSet<&String> = cg.members.keys().collect();
        assert_eq!(ids, [&b, &c].into_iter().collect());
    }
}

#[test]
fn a_classic_member_leaving_does_not_downgrade() {
    let (mut h, b, c) = upgraded(GroupConfig::default());
    assert_eq!(h.leave(GROUP, &b).error, None);
    let cg = group(&h)
        .consumer
        .as_deref()
        .expect("still a consumer group");
    assert_eq!(cg.members.len(), 2);
    // Then "a" leaves: c alone is a classic group.
    let epoch = group_epoch(&h);
    assert_eq!(beat(&mut h, "a", -1).error, None);
    check_classic(group(&h), epoch, &[&c]);
}
