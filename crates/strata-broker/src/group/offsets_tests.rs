//! Offsets and admin tests: commit validation, fetch forms, OffsetDelete,
//! DeleteGroups, retention, ListGroups/DescribeGroups, and rebuilding the
//! coordinator from the records it wrote.

use kafka_protocol::error::ResponseError as E;

use super::api::{CommitPartition, CommitRequest};
use super::config::GroupConfig;
use super::harness::*;
use super::manager::GroupManager;
use super::offsets::LoadedRecord;
use super::records::{decode_key, OffsetCommitValue, RecordKey};

const G: &str = "grp";

fn fetch_one(h: &Harness, group: &str, topic: &str, p: i32) -> i64 {
    let r =
        h.m.fetch_offsets(group, Some(&[(topic.to_string(), p)]), false)
            .unwrap();
    r[0].offset
}

fn replay(h: &Harness, config: GroupConfig) -> GroupManager {
    let mut m = GroupManager::new(config);
    let records = h.store.records.iter().map(|(_, offset, r)| LoadedRecord {
        txn_producer: None,
        marker: None,
        batch_base_offset: *offset,
        key: r.key.clone(),
        value: r.value.clone(),
    });
    // Every group of these tests lives in one partition.
    m.load_partition(m.partition_for(G), records.collect::<Vec<_>>(), h.now);
    m
}

#[test]
fn simple_commit_with_generation_minus_one_creates_group() {
    let mut h = Harness::new(0);
    assert_eq!(
        h.commit(G, "", -1, &[("t", 0, 42), ("t", 1, 7)]),
        vec![None, None]
    );
    assert_eq!(h.state(G), "Empty");
    assert_eq!(fetch_one(&h, G, "t", 0), 42);
    let all = h.m.fetch_offsets(G, None, true).unwrap();
    assert_eq!(all.len(), 2, "null topics = every committed partition");
    assert_eq!((all[0].leader_epoch, all[0].metadata.as_str()), (3, "m"));
    assert_eq!(fetch_one(&h, G, "t", 9), -1, "unknown partitions answer -1");
    assert_eq!(fetch_one(&h, "nobody", "t", 0), -1);
    // Records: OffsetCommitKey v1 + OffsetCommitValue v3 with the commit time.
    let (p, _, rec) = &h.store.records[0];
    assert_eq!(*p, h.m.partition_for(G));
    assert_eq!(&rec.key[..2], &[0, 1]);
    let v = OffsetCommitValue::decode(rec.value.as_ref().unwrap()).unwrap();
    assert_eq!(
        (v.offset, v.leader_epoch, v.commit_timestamp),
        (42, 3, h.now)
    );
    assert_eq!(&rec.value.as_ref().unwrap()[..2], &[0, 3]);
}

#[test]
fn commit_from_stale_generation_of_missing_group_is_illegal() {
    let mut h = Harness::new(0);
    assert_eq!(
        h.commit(G, "m", 3, &[("t", 0, 1)]),
        vec![Some(E::IllegalGeneration)]
    );
    assert_eq!(h.state(G), "absent");
}

#[test]
fn member_commits_are_validated() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    assert_eq!(h.commit(G, &a, 1, &[("t", 0, 5)]), vec![None]);
    assert_eq!(
        h.commit(G, &a, 2, &[("t", 0, 6)]),
        vec![Some(E::IllegalGeneration)]
    );
    assert_eq!(
        h.commit(G, "x", 1, &[("t", 0, 6)]),
        vec![Some(E::UnknownMemberId)]
    );
    assert_eq!(
        h.commit(G, "", -1, &[("t", 0, 6)]),
        vec![Some(E::UnknownMemberId)],
        "non-members may not commit to a live group"
    );
    assert_eq!(fetch_one(&h, G, "t", 0), 5);
    // CompletingRebalance: REBALANCE_IN_PROGRESS.
    let (b, tb) = h.join_new(G);
    assert_eq!(
        h.commit(G, &a, 1, &[("t", 0, 6)]),
        vec![None],
        "still allowed while preparing"
    );
    let ta = h.join(G, &a);
    assert!(h.take_join(ta).is_some() && h.take_join(tb).is_some());
    assert_eq!(
        h.commit(G, &b, 2, &[("t", 0, 7)]),
        vec![Some(E::RebalanceInProgress)]
    );
}

#[test]
fn oversized_metadata_is_rejected_per_partition() {
    let mut h = Harness::with_config(GroupConfig {
        offset_metadata_max_bytes: 1,
        ..GroupConfig::default()
    });
    let req = CommitRequest {
        group_id: G.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        partitions: vec![
            CommitPartition {
                topic: "t".into(),
                partition: 0,
                offset: 1,
                leader_epoch: -1,
                metadata: Some("too long".into()),
                commit_timestamp: -1,
            },
            CommitPartition {
                topic: "t".into(),
                partition: 1,
                offset: 2,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp: -1,
            },
        ],
        txn: None,
    };
    let r = h.m.commit_offsets(&req, h.now, &mut h.store);
    assert_eq!(r, vec![Some(E::OffsetMetadataTooLarge), None]);
    assert_eq!(fetch_one(&h, G, "t", 0), -1);
    assert_eq!(fetch_one(&h, G, "t", 1), 2);
}

#[test]
fn offset_delete_respects_subscriptions() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G); // subscribed to topic "t"
    h.commit(G, &a, 1, &[("t", 0, 1), ("other", 0, 2)]);
    let r = h.m.delete_offsets(
        G,
        &[("t".into(), 0), ("other".into(), 0)],
        h.now,
        &mut h.store,
    );
    assert_eq!(r.unwrap(), vec![Some(E::GroupSubscribedToTopic), None]);
    assert_eq!(fetch_one(&h, G, "other", 0), -1);
    assert_eq!(fetch_one(&h, G, "t", 0), 1);
    let (_, _, last) = h.store.records.last().unwrap();
    assert_eq!(last.value, None, "an offset tombstone was written");
    assert!(
        matches!(decode_key(&last.key).unwrap(), RecordKey::OffsetCommit(k) if k.topic == "other")
    );
    let missing =
        h.m.delete_offsets("nobody", &[("t".into(), 0)], h.now, &mut h.store);
    assert_eq!(missing, Err(E::GroupIdNotFound));
}

#[test]
fn delete_groups_only_when_empty() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    h.commit(G, &a, 1, &[("t", 0, 1)]);
    h.commit("simple", "", -1, &[("t", 0, 1)]);
    let ids = vec![G.to_string(), "simple".to_string(), "nobody".to_string()];
    let r = h.m.delete_groups(&ids, h.now, &mut h.store);
    assert_eq!(
        r,
        vec![Some(E::NonEmptyGroup), None, Some(E::GroupIdNotFound)]
    );
    assert_eq!(h.state("simple"), "absent");
    // Leave, then delete: offset and group-metadata tombstones.
    let r = h.m.leave(
        G,
        vec![super::api::LeaveMember {
            member_id: a,
            group_instance_id: None,
        }],
        h.now,
        &mut h.store,
    );
    assert_eq!(r.members[0].1, None);
    assert_eq!(h.state(G), "Empty");
    let before = h.store.records.len();
    assert_eq!(
        h.m.delete_groups(&[G.to_string()], h.now, &mut h.store),
        vec![None]
    );
    let tombstones: Vec<_> = h.store.records[before..]
        .iter()
        .map(|(_, _, r)| decode_key(&r.key).unwrap())
        .collect();
    assert_eq!(tombstones.len(), 2);
    assert!(matches!(tombstones[1], RecordKey::GroupMetadata(_)));
    assert!(h.store.records[before..]
        .iter()
        .all(|(_, _, r)| r.value.is_none()));
    assert_eq!(fetch_one(&h, G, "t", 0), -1);
}

#[test]
fn retention_expires_offsets_of_empty_groups_only() {
    let mut h = Harness::with_config(GroupConfig {
        initial_rebalance_delay_ms: 0,
        offsets_retention_ms: 60_000,
        ..GroupConfig::default()
    });
    h.commit("simple", "", -1, &[("t", 0, 1)]);
    let a = h.stable_single(G);
    h.commit(G, &a, 1, &[("t", 0, 1), ("unsubscribed", 0, 1)]);
    // Stay alive while retention passes.
    for i in 0..7 {
        assert_eq!(h.heartbeat(G, &a, 1), None);
        h.advance(9_000);
        if i == 5 {
            assert_eq!(
                h.m.expire_offsets(h.now, &mut h.store),
                0,
                "54 s < 60 s retention"
            );
        }
    }
    assert_eq!(
        h.m.expire_offsets(h.now, &mut h.store),
        2,
        "simple group's offset and the unsubscribed topic"
    );
    assert_eq!(
        h.state("simple"),
        "absent",
        "an empty group without offsets dies"
    );
    assert_eq!(
        fetch_one(&h, G, "t", 0),
        1,
        "subscribed topics never expire while stable"
    );
    assert_eq!(fetch_one(&h, G, "unsubscribed", 0), -1);
}

#[test]
fn list_and_describe() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    h.commit("simple", "", -1, &[("t", 0, 1)]);
    let (e, all) = h.m.list_groups(&[], &[]);
    assert_eq!(e, None);
    assert_eq!(
        all.iter()
            .map(|g| (g.group_id.as_str(), g.state))
            .collect::<Vec<_>>(),
        vec![(G, "Stable"), ("simple", "Empty")]
    );
    assert_eq!(all[0].protocol_type, "consumer");
    let (_, stable) = h.m.list_groups(&["STABLE".to_string()], &[]);
    assert_eq!(stable.len(), 1);
    let d = h.m.describe_group(G);
    assert_eq!(
        (d.state, d.protocol.as_str(), d.members.len()),
        ("Stable", "range", 1)
    );
    assert_eq!(d.members[0].member_id, a);
    assert_eq!(d.members[0].assignment.as_ref(), b"a1");
    assert_eq!(d.members[0].metadata, subscription(&["t"]));
    assert_eq!(h.m.describe_group("nobody").state, "Dead");
}

#[test]
fn load_rebuilds_groups_and_offsets_latest_record_wins() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    h.commit(G, &a, 1, &[("t", 0, 10), ("t", 1, 11)]);
    h.commit(G, &a, 1, &[("t", 0, 20)]);
    h.commit("simple", "", -1, &[("x", 0, 5)]);
    h.m.delete_groups(&["simple".to_string()], h.now, &mut h.store);
    let m = replay(&h, GroupConfig::default());
    let g = m.group(G).expect("group rebuilt from its metadata record");
    assert_eq!((g.state().name(), g.generation_id), ("Stable", 1));
    assert_eq!(g.leader_id.as_deref(), Some(a.as_str()));
    assert_eq!(g.members[&a].assignment.as_ref(), b"a1");
    assert!(
        g.members[&a].heartbeat_deadline.is_some(),
        "loaded members must heartbeat"
    );
    let f = m.fetch_offsets(G, None, false).unwrap();
    assert_eq!(f.iter().map(|o| o.offset).collect::<Vec<_>>(), vec![20, 11]);
    assert!(m.group("simple").is_none(), "tombstones delete");
    // A loaded member can keep going without rejoining.
    let mut h2 = Harness::new(0);
    h2.m = m;
    h2.now = h.now;
    assert_eq!(h2.heartbeat(G, &a, 1), None);
}
