//! KIP-848 groups through the [`GroupManager`]: joins, incremental
//! reconciliation across members, leaving, fencing by timers, static
//! membership, regex subscriptions, persistence and replay, and the classic
//! group conversions. Time is a number; the store is memory.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use uuid::Uuid;

use super::api::{ConsumerHeartbeat, ConsumerHeartbeatResult};
use super::assignment::TopicPartitions;
use super::image::{ImageTopic, TopicImage};
use crate::group::config::GroupConfig;
use crate::group::manager::GroupManager;
use crate::group::offsets::LoadedRecord;
use crate::group::store::MemoryStore;

const GROUP: &str = "g";
const SESSION: i32 = 45_000;

fn topic_id(n: u8) -> Uuid {
    Uuid::from_bytes([n; 16])
}

fn image(version: u64, topics: &[(&str, u8, i32)]) -> TopicImage {
    TopicImage::new(
        version,
        topics
            .iter()
            .map(|(name, id, partitions)| {
                (
                    name.to_string(),
                    ImageTopic {
                        id: topic_id(*id),
                        partitions: *partitions,
                        racks: vec![BTreeSet::new(); usize::try_from(*partitions).unwrap()],
                        internal: false,
                    },
                )
            })
            .collect(),
    )
}

struct H {
    m: GroupManager,
    store: MemoryStore,
    image: TopicImage,
    now: i64,
}

impl H {
    fn new() -> H {
        let config = GroupConfig {
            consumer_protocol_enabled: true,
            ..GroupConfig::default()
        };
        H {
            m: GroupManager::new(config),
            store: MemoryStore::default(),
            image: image(1, &[("t", 1, 6)]),
            now: 1_000,
        }
    }

    fn hb(&mut self, req: ConsumerHeartbeat) -> ConsumerHeartbeatResult {
        self.m
            .consumer_heartbeat(&req, &self.image, self.now, &mut self.store)
    }

    /// A full join of a dynamic member subscribed to `topics`.
    fn join(&mut self, member: &str, topics: &[&str]) -> ConsumerHeartbeatResult {
        self.hb(join_req(member, topics))
    }

    /// A heartbeat at `epoch` that owns `owned` (`None`: field absent).
    fn beat(
        &mut self,
        member: &str,
        epoch: i32,
        owned: Option<&TopicPartitions>,
    ) -> ConsumerHeartbeatResult {
        self.hb(ConsumerHeartbeat {
            version: 1,
            group_id: GROUP.to_string(),
            member_id: member.to_string(),
            member_epoch: epoch,
            rebalance_timeout_ms: -1,
            topic_partitions: owned.cloned(),
            ..ConsumerHeartbeat::default()
        })
    }

    fn cg(&self) -> &super::group::ConsumerGroup {
        self.m.groups[GROUP]
            .consumer
            .as_deref()
            .expect("a consumer group")
    }

    /// Every (topic, partition) owned by each member, checking no partition
    /// has two owners.
    fn check_single_ownership(&self) {
        let mut seen = BTreeMap::new();
        for m in self.cg().members.values() {
            for tp in [&m.assignment.assigned, &m.assignment.pending_revocation] {
                for (t, ps) in tp {
                    for p in ps {
                        if let Some(other) = seen.insert((*t, *p), m.member_id.clone()) {
                            panic!("partition {t}-{p} owned by {other} and {}", m.member_id);
                        }
                    }
                }
            }
        }
    }

    /// Replay everything stored into a fresh manager.
    fn reload(&self) -> GroupManager {
        let config = self.m.config.clone();
        let mut m = GroupManager::new(config);
        let partition = m.partition_for(GROUP);
        let records = self
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
        m.load_partition(partition, records, self.now);
        m
    }
}

fn join_req(member: &str, topics: &[&str]) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        version: 1,
        group_id: GROUP.to_string(),
        member_id: member.to_string(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        subscribed_topic_regex: Some(String::new()),
        topic_partitions: Some(TopicPartitions::new()),
        client_id: "c".to_string(),
        client_host: "/127.0.0.1".to_string(),
        ..ConsumerHeartbeat::default()
    }
}

fn count(tp: &TopicPartitions) -> usize {
    tp.values().map(BTreeSet::len).sum()
}

#[test]
fn first_member_gets_every_partition() {
    let mut h = H::new();
    let r = h.join("a", &["t"]);
    assert_eq!(r.error, None, "{:?}", r.error_message);
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.member_id.as_deref(), Some("a"));
    assert_eq!(count(r.assignment.as_ref().unwrap()), 6);
    assert_eq!(h.cg().state().name(), "Stable");
    // A steady heartbeat changes nothing and sends no assignment.
    let owned = r.assignment.clone().unwrap();
    let r = h.beat("a", 1, Some(&owned));
    assert_eq!((r.error, r.member_epoch, r.assignment), (None, 1, None));
}

#[test]
fn a_joining_member_gets_partitions_only_after_they_are_revoked() {
    let mut h = H::new();
    let a = h.join("a", &["t"]).assignment.unwrap();
    let b = h.join("b", &["t"]);
    assert_eq!(b.member_epoch, 2);
    // b waits for what a still owns.
    assert_eq!(count(b.assignment.as_ref().unwrap()), 0);
    h.check_single_ownership();
    // a is told to keep 3 (revoke 3), staying at epoch 1 until it has.
    let r = h.beat("a", 1, Some(&a));
    assert_eq!(r.member_epoch, 1);
    let kept = r.assignment.unwrap();
    assert_eq!(count(&kept), 3);
    // Still owning the revoked ones: nothing moves.
    let r = h.beat("a", 1, Some(&a));
    assert_eq!((r.member_epoch, r.assignment), (1, None));
    h.check_single_ownership();
    // Revoked: a advances; then b gets the freed partitions.
    let r = h.beat("a", 1, Some(&kept));
    assert_eq!(r.member_epoch, 2);
    h.check_single_ownership();
    let r = h.beat("b", 2, Some(&TopicPartitions::new()));
    assert_eq!(count(r.assignment.as_ref().unwrap()), 3);
    h.check_single_ownership();
    assert_eq!(h.cg().state().name(), "Stable");
}

#[test]
fn leaving_and_session_expiry_free_partitions() {
    let mut h = H::new();
    let a = h.join("a", &["t"]).assignment.unwrap(); // epoch 1
    h.join("b", &["t"]); // epoch 2
    let kept = h.beat("a", 1, Some(&a)).assignment.unwrap();
    h.beat("a", 1, Some(&kept));
    let b = h
        .beat("b", 2, Some(&TopicPartitions::new()))
        .assignment
        .unwrap();
    assert_eq!(count(&b), 3);
    // b leaves (epoch 3): a takes everything at once.
    let r = h.beat("b", -1, None);
    assert_eq!((r.error, r.member_epoch), (None, -1));
    let r = h.beat("a", 2, Some(&kept));
    assert_eq!(r.member_epoch, 3);
    let all = r.assignment.unwrap();
    assert_eq!(count(&all), 6);
    // b comes back (epoch 4), then goes silent: its session expires.
    assert_eq!(h.join("b", &["t"]).member_epoch, 4);
    let kept = h.beat("a", 3, Some(&all)).assignment.unwrap();
    assert_eq!(h.beat("a", 3, Some(&kept)).member_epoch, 4);
    assert_eq!(
        count(
            h.beat("b", 4, Some(&TopicPartitions::new()))
                .assignment
                .as_ref()
                .unwrap()
        ),
        3
    );
    h.now += i64::from(SESSION) - 1;
    h.beat("a", 4, Some(&kept));
    h.m.poll_timers(h.now, &mut h.store);
    assert_eq!(h.cg().members.len(), 2, "b has not expired yet");
    h.now += 2;
    h.m.poll_timers(h.now, &mut h.store);
    assert_eq!(h.cg().members.keys().collect::<Vec<_>>(), vec!["a"]);
    let r = h.beat("a", 4, Some(&kept));
    assert_eq!(r.member_epoch, 5);
    assert_eq!(count(r.assignment.as_ref().unwrap()), 6);
}

#[test]
fn epochs_are_fenced() {
    let mut h = H::new();
    h.join("a", &["t"]);
    let r = h.beat("a", 7, None);
    assert_eq!(r.error, Some(ResponseError::FencedMemberEpoch));
    let r = h.beat("nobody", 1, None);
    assert_eq!(r.error, Some(ResponseError::UnknownMemberId));
    // Rejoining with epoch 0 and the same id is a new incarnation.
    let r = h.join("a", &["t"]);
    assert_eq!(r.error, None);
    assert_eq!(count(r.assignment.as_ref().unwrap()), 6);
}

#[test]
fn requests_are_validated() {
    let mut h = H::new();
    let mut bad = join_req("a", &["t"]);
    bad.rebalance_timeout_ms = -1;
    assert_eq!(h.hb(bad).error, Some(ResponseError::InvalidRequest));
    let mut bad = join_req("a", &["t"]);
    bad.member_epoch = -3;
    assert_eq!(h.hb(bad).error, Some(ResponseError::InvalidRequest));
    let mut bad = join_req("", &["t"]);
    bad.version = 1;
    assert_eq!(h.hb(bad).error, Some(ResponseError::InvalidRequest));
    let mut bad = join_req("a", &["t"]);
    bad.server_assignor = Some("sticky".to_string());
    assert_eq!(h.hb(bad).error, Some(ResponseError::UnsupportedAssignor));
    let mut bad = join_req("a", &["t"]);
    bad.subscribed_topic_regex = Some("(".to_string());
    assert_eq!(
        h.hb(bad).error,
        Some(ResponseError::InvalidRegularExpression)
    );
    // v0 with no member id: the broker names the member.
    let mut v0 = join_req("", &["t"]);
    v0.version = 0;
    v0.subscribed_topic_regex = None;
    let r = h.hb(v0);
    assert_eq!(r.error, None);
    assert_eq!(r.member_id.unwrap().len(), 22);
}

#[test]
fn a_static_member_comes_back_without_a_rebalance() {
    let mut h = H::new();
    let mut a = join_req("a1", &["t"]);
    a.instance_id = Some("inst-a".to_string());
    let ra = h.hb(a.clone());
    h.join("b", &["t"]);
    let owned = ra.assignment.unwrap();
    let kept = h.beat("a1", 1, Some(&owned)).assignment.unwrap();
    h.beat("a1", 1, Some(&kept));
    h.beat("b", 2, Some(&TopicPartitions::new()));
    let epoch = h.cg().group_epoch;
    // Temporary leave (-2): partitions stay reserved.
    let mut leave = a.clone();
    leave.member_epoch = -2;
    leave.topic_partitions = None;
    assert_eq!(h.hb(leave).member_epoch, -2);
    // A second process with the same instance id while a1 is alive is refused.
    let mut c = a.clone();
    c.member_id = "a3".to_string();
    // Back under a new member id: same partitions, same group epoch.
    let mut back = a.clone();
    back.member_id = "a2".to_string();
    let r = h.hb(back);
    assert_eq!(r.error, None, "{:?}", r.error_message);
    assert_eq!(r.assignment.unwrap(), kept);
    assert_eq!(h.cg().group_epoch, epoch);
    assert!(!h.cg().members.contains_key("a1"));
    assert_eq!(h.hb(c).error, Some(ResponseError::UnreleasedInstanceId));
    h.check_single_ownership();
}

#[test]
fn a_regex_picks_up_topics_created_later() {
    let mut h = H::new();
    let mut req = join_req("a", &[]);
    req.subscribed_topic_names = Some(Vec::new());
    req.subscribed_topic_regex = Some("t.*".to_string());
    let r = h.hb(req);
    assert_eq!(r.error, None, "{:?}", r.error_message);
    let owned = r.assignment.unwrap();
    assert_eq!(count(&owned), 6);
    h.image = image(2, &[("t", 1, 6), ("tt", 2, 2), ("other", 3, 4)]);
    let r = h.beat("a", 1, Some(&owned));
    assert_eq!(r.member_epoch, 2);
    let owned = r.assignment.unwrap();
    assert_eq!(count(&owned), 8, "t's 6 and tt's 2, not other's");
    assert!(owned.contains_key(&topic_id(2)));
}

#[test]
fn a_reloaded_group_is_the_same_group() {
    let mut h = H::new();
    let a = h.join("a", &["t"]).assignment.unwrap();
    h.join("b", &["t"]);
    h.beat("a", 1, Some(&a));
    let before = h.cg().clone();
    let reloaded = h.reload();
    let after = reloaded.groups[GROUP].consumer.as_deref().unwrap();
    assert_eq!(after.group_epoch, before.group_epoch);
    assert_eq!(after.assignment_epoch, before.assignment_epoch);
    assert_eq!(after.target, before.target);
    assert_eq!(after.subscription_metadata, before.subscription_metadata);
    for (id, m) in &before.members {
        let r = &after.members[id];
        assert_eq!(r.assignment, m.assignment, "member {id}");
        assert_eq!(r.subscribed_topic_names, m.subscribed_topic_names);
        assert_eq!(r.rebalance_timeout_ms, m.rebalance_timeout_ms);
    }
    // Deleting a member is replayed too.
    h.beat("b", -1, None);
    let reloaded = h.reload();
    let after = reloaded.groups[GROUP].consumer.as_deref().unwrap();
    assert_eq!(after.members.keys().collect::<Vec<_>>(), vec!["a"]);
    assert!(!after.target.contains_key("b"));
}

#[test]
fn classic_and_consumer_groups_convert_when_empty() {
    let mut h = H::new();
    // An offsets-only (simple) group becomes a consumer group, offsets kept.
    h.m.get_or_create(GROUP, h.now);
    let r = h.join("a", &["t"]);
    assert_eq!(r.error, None);
    assert!(h.m.groups[GROUP].consumer.is_some());
    // With a member, ListGroups says consumer/Stable.
    let (_, listed) = h.m.list_groups(&[], &["consumer".to_string()]);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].state, listed[0].group_type),
        ("Stable", "consumer")
    );
    let (_, listed) = h.m.list_groups(&[], &["classic".to_string()]);
    assert!(listed.is_empty());
    // DeleteGroups refuses while a member is there.
    let errors = h.m.delete_groups(&[GROUP.to_string()], h.now, &mut h.store);
    assert_eq!(errors, vec![Some(ResponseError::NonEmptyGroup)]);
    h.beat("a", -1, None);
    let errors = h.m.delete_groups(&[GROUP.to_string()], h.now, &mut h.store);
    assert_eq!(errors, vec![None]);
    assert!(
        !h.reload().groups.contains_key(GROUP),
        "the tombstones delete it"
    );
}

#[test]
fn member_epoch_guards_offset_commits() {
    use crate::group::api::{CommitPartition, CommitRequest};
    let mut h = H::new();
    h.join("a", &["t"]);
    let commit = |member: &str, epoch: i32| CommitRequest {
        group_id: GROUP.to_string(),
        generation_id: epoch,
        member_id: member.to_string(),
        group_instance_id: None,
        retention_time_ms: -1,
        partitions: vec![CommitPartition {
            topic: "t".to_string(),
            partition: 0,
            offset: 5,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp: -1,
        }],
        txn: None,
    };
    let now = h.now;
    assert_eq!(
        h.m.commit_offsets(&commit("a", 1), now, &mut h.store),
        vec![None]
    );
    assert_eq!(
        h.m.commit_offsets(&commit("a", 5), now, &mut h.store),
        vec![Some(ResponseError::StaleMemberEpoch)]
    );
    assert_eq!(
        h.m.commit_offsets(&commit("x", 1), now, &mut h.store),
        vec![Some(ResponseError::UnknownMemberId)]
    );
    let fetched = h.reload().fetch_offsets(GROUP, None, false).unwrap();
    assert_eq!(fetched[0].offset, 5);
    // b joins; a revokes half and moves to epoch 2. A commit still carrying
    // epoch 1 is accepted for partitions a kept, refused for one it gave up.
    let owned = h.beat("a", 1, None).assignment.unwrap_or_default();
    h.join("b", &["t"]);
    let all = h.cg().members["a"].assignment.assigned.clone();
    let kept = h.beat("a", 1, Some(&all)).assignment.unwrap();
    assert_eq!(h.beat("a", 1, Some(&kept)).member_epoch, 2);
    let _ = owned;
    let id = h.cg().subscription_metadata["t"].id;
    let mine = *kept[&id].iter().next().unwrap();
    let given = (0..6).find(|p| !kept[&id].contains(p)).unwrap();
    let mut late = commit("a", 1);
    late.partitions[0].partition = mine;
    assert_eq!(h.m.commit_offsets(&late, now, &mut h.store), vec![None]);
    late.partitions[0].partition = given;
    assert_eq!(
        h.m.commit_offsets(&late, now, &mut h.store),
        vec![Some(ResponseError::StaleMemberEpoch)]
    );
}
