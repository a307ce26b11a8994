//! Guards the consumer-group coordinator over real sockets: FindCoordinator
//! creates `__consumer_offsets`; two members join (MEMBER_ID_REQUIRED, then
//! a rebalance held by `group.initial.rebalance.delay.ms` on an injected
//! clock), sync their assignments, commit and fetch offsets; after a broker
//! restart the offsets and the group are loaded back from the log.

use crate::common::*;
use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteGroupsRequest, DescribeGroupsRequest, DescribeGroupsResponse,
    FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, ListGroupsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use strata_log::MockClock;

const GROUP: &str = "my-group";
const MEMBER_ID_REQUIRED: i16 = 79;
const REBALANCE_IN_PROGRESS: i16 = 27;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn join_request(member_id: &str) -> JoinGroupRequest {
    let mut p = JoinGroupRequestProtocol::default();
    p.name = s("range");
    p.metadata = Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff]);
    let mut req = JoinGroupRequest::default();
    req.group_id = GroupId(s(GROUP));
    req.session_timeout_ms = 30_000;
    req.rebalance_timeout_ms = 60_000;
    req.member_id = s(member_id);
    req.protocol_type = s("consumer");
    req.protocols = vec![p];
    req
}

/// JoinGroup v9 with an empty member id: MEMBER_ID_REQUIRED and the id.
async fn member_id(c: &mut Client) -> String {
    let resp = c.call(&join_request(""), 9).await;
    assert_eq!(resp.error_code, MEMBER_ID_REQUIRED);
    assert!(resp.member_id.starts_with("strata-test-"));
    resp.member_id.to_string()
}

async fn describe(c: &mut Client) -> DescribeGroupsResponse {
    let mut req = DescribeGroupsRequest::default();
    req.groups = vec![GroupId(s(GROUP))];
    c.call(&req, 5).await
}

/// Wait (bounded) until DescribeGroups satisfies `done`.
async fn wait_for_group(c: &mut Client, done: impl Fn(&DescribeGroupsResponse) -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let d = describe(c).await;
        if done(&d) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "group never reached the expected state: {d:?}"
        );
        tokio::task::yield_now().await;
    }
}

fn sync_request(
    member: &str,
    generation: i32,
    assignments: &[(&str, &'static [u8])],
) -> SyncGroupRequest {
    let mut req = SyncGroupRequest::default();
    req.group_id = GroupId(s(GROUP));
    req.generation_id = generation;
    req.member_id = s(member);
    req.protocol_type = Some(s("consumer"));
    req.protocol_name = Some(s("range"));
    req.assignments = assignments
        .iter()
        .map(|(m, a)| {
            let mut x = SyncGroupRequestAssignment::default();
            x.member_id = s(m);
            x.assignment = Bytes::from_static(a);
            x
        })
        .collect();
    req
}

fn commit_request(member: &str, generation: i32, offsets: &[(i32, i64)]) -> OffsetCommitRequest {
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s("t"));
    t.partitions = offsets
        .iter()
        .map(|&(p, o)| {
            let mut x = OffsetCommitRequestPartition::default();
            x.partition_index = p;
            x.committed_offset = o;
            x.committed_leader_epoch = 0;
            x.committed_metadata = Some(s("meta"));
            x
        })
        .collect();
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(s(GROUP));
    req.generation_id_or_member_epoch = generation;
    req.member_id = s(member);
    req.topics = vec![t];
    req
}

/// OffsetFetch v8 (groups form) of partitions 0..3 of "t".
async fn fetch_v8(c: &mut Client) -> Vec<(i32, i64, String)> {
    let mut t = OffsetFetchRequestTopics::default();
    t.name = TopicName(s("t"));
    t.partition_indexes = vec![0, 1, 2];
    let mut g = OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s(GROUP));
    g.topics = Some(vec![t]);
    let mut req = OffsetFetchRequest::default();
    req.groups = vec![g];
    let resp = c.call(&req, 8).await;
    assert_eq!(resp.groups.len(), 1);
    assert_eq!(resp.groups[0].error_code, 0);
    resp.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.committed_offset,
                p.metadata
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

async fn create_topic(c: &mut Client) {
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 3;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 10_000;
    assert_eq!(c.call(&req, 7).await.topics[0].error_code, 0);
}

#[tokio::test]
async fn two_members_join_sync_commit_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(1_700_000_000_000);
    let config = test_config(dir.path(), &[("group.initial.rebalance.delay.ms", "3000")]);
    let broker = strata_broker::start_with_clock(config.clone(), clock.clone())
        .await
        .expect("broker starts");
    let mut admin = Client::connect(broker.local_addr()).await;
    create_topic(&mut admin).await;

    // FindCoordinator v4 (batched) and v3 both name this broker and create the topic.
    let mut fc = FindCoordinatorRequest::default();
    fc.key_type = 0;
    fc.coordinator_keys = vec![s(GROUP)];
    let resp = admin.call(&fc, 4).await;
    assert_eq!(resp.coordinators[0].error_code, 0);
    assert_eq!(
        resp.coordinators[0].port,
        i32::from(broker.local_addr().port())
    );
    let mut fc3 = FindCoordinatorRequest::default();
    fc3.key = s(GROUP);
    let resp = admin.call(&fc3, 3).await;
    assert_eq!((resp.error_code, resp.node_id.0), (0, config.node_id));
    let mut md = MetadataRequest::default();
    md.topics = None;
    let meta = admin.call(&md, 12).await;
    let offsets_topic = meta
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some("__consumer_offsets"))
        .expect("__consumer_offsets created by FindCoordinator");
    assert!(offsets_topic.is_internal);
    assert_eq!(offsets_topic.partitions.len(), 50);

    // Member a alone: held by group.initial.rebalance.delay.ms on the mock clock.
    let mut a = Client::connect(broker.local_addr()).await;
    let mut b = Client::connect(broker.local_addr()).await;
    let id_a = member_id(&mut a).await;
    let (corr, frame) = a.frame(&join_request(&id_a), 9);
    a.send_raw(&frame).await;
    wait_for_group(&mut admin, |d| d.groups[0].members.len() == 1).await;
    assert_eq!(
        describe(&mut admin).await.groups[0].group_state.as_str(),
        "PreparingRebalance"
    );
    clock.advance(3000);
    let (got, join_a): (i32, JoinGroupResponse) =
        Client::decode::<JoinGroupRequest>(a.read_frame().await.expect("join answered"), 9);
    assert_eq!((got, join_a.error_code, join_a.generation_id), (corr, 0, 1));
    assert_eq!(join_a.leader.as_str(), id_a);
    let sync_a = a.call(&sync_request(&id_a, 1, &[(&id_a, b"all")]), 5).await;
    assert_eq!(
        (sync_a.error_code, sync_a.assignment.as_ref()),
        (0, &b"all"[..])
    );

    // Member b joins: a learns of the rebalance by heartbeat and rejoins.
    let id_b = member_id(&mut b).await;
    let (corr_b, frame) = b.frame(&join_request(&id_b), 9);
    b.send_raw(&frame).await;
    wait_for_group(&mut admin, |d| d.groups[0].members.len() == 2).await;
    let mut hb = HeartbeatRequest::default();
    hb.group_id = GroupId(s(GROUP));
    hb.generation_id = 1;
    hb.member_id = s(&id_a);
    assert_eq!(a.call(&hb, 4).await.error_code, REBALANCE_IN_PROGRESS);
    let join_a = a.call(&join_request(&id_a), 9).await;
    let (got, join_b): (i32, JoinGroupResponse) =
        Client::decode::<JoinGroupRequest>(b.read_frame().await.expect("join answered"), 9);
    assert_eq!(got, corr_b);
    assert_eq!((join_a.error_code, join_b.error_code), (0, 0));
    assert_eq!((join_a.generation_id, join_b.generation_id), (2, 2));
    assert_eq!(join_a.leader.as_str(), id_a, "the first member leads");
    assert_eq!((join_a.members.len(), join_b.members.len()), (2, 0));
    assert_eq!(
        join_a.protocol_name.as_ref().map(|p| p.as_str()),
        Some("range")
    );

    // The follower's sync waits for the leader's.
    let (corr_sb, frame) = b.frame(&sync_request(&id_b, 2, &[]), 5);
    b.send_raw(&frame).await;
    let sync_a = a
        .call(
            &sync_request(&id_a, 2, &[(&id_a, b"for-a"), (&id_b, b"for-b")]),
            5,
        )
        .await;
    assert_eq!(
        (sync_a.error_code, sync_a.assignment.as_ref()),
        (0, &b"for-a"[..])
    );
    let (got, sync_b): (i32, SyncGroupResponse) =
        Client::decode::<SyncGroupRequest>(b.read_frame().await.unwrap(), 5);
    assert_eq!((got, sync_b.error_code), (corr_sb, 0));
    assert_eq!(sync_b.assignment.as_ref(), b"for-b");

    hb.generation_id = 2;
    hb.member_id = s(&id_b);
    assert_eq!(b.call(&hb, 4).await.error_code, 0);

    // Commits: members with their generation; a stale generation is refused.
    let resp = a
        .call(&commit_request(&id_a, 2, &[(0, 10), (1, 11)]), 8)
        .await;
    assert!(resp.topics[0].partitions.iter().all(|p| p.error_code == 0));
    let resp = b.call(&commit_request(&id_b, 2, &[(2, 12)]), 8).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
    let stale = b.call(&commit_request(&id_b, 1, &[(2, 99)]), 8).await;
    assert_eq!(
        stale.topics[0].partitions[0].error_code, 22,
        "ILLEGAL_GENERATION"
    );
    let expected = vec![
        (0, 10, "meta".to_string()),
        (1, 11, "meta".into()),
        (2, 12, "meta".into()),
    ];
    assert_eq!(fetch_v8(&mut admin).await, expected);
    // The single-group form (v5) with null topics returns every committed offset.
    let mut old = OffsetFetchRequest::default();
    old.group_id = GroupId(s(GROUP));
    old.topics = None;
    let resp = admin.call(&old, 5).await;
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.topics[0].partitions.len(), 3);
    // An unknown partition of a known group answers -1.
    let mut one = OffsetFetchRequestTopic::default();
    one.name = TopicName(s("t"));
    one.partition_indexes = vec![7];
    old.topics = Some(vec![one]);
    let resp = admin.call(&old, 5).await;
    assert_eq!(resp.topics[0].partitions[0].committed_offset, -1);

    let list = admin.call(&ListGroupsRequest::default(), 5).await;
    assert_eq!(list.groups.len(), 1);
    assert_eq!(list.groups[0].group_state.as_str(), "Stable");
    drop((a, b, admin));
    broker.shutdown().await.expect("clean shutdown");

    // Restart on the same directory: offsets and the group come back.
    let broker = strata_broker::start_with_clock(config, clock.clone())
        .await
        .expect("broker restarts");
    let mut admin = Client::connect(broker.local_addr()).await;
    assert_eq!(fetch_v8(&mut admin).await, expected);
    let d = describe(&mut admin).await;
    assert_eq!(d.groups[0].group_state.as_str(), "Stable");
    assert_eq!(d.groups[0].members.len(), 2);
    let assignment_b = d.groups[0]
        .members
        .iter()
        .find(|m| m.member_id.as_str() == id_b)
        .map(|m| m.member_assignment.clone());
    assert_eq!(assignment_b.as_deref(), Some(&b"for-b"[..]));
    // The members' sessions restart at load; without heartbeats they expire
    // and the group empties, its offsets kept.
    let mut hb = HeartbeatRequest::default();
    hb.group_id = GroupId(s(GROUP));
    hb.generation_id = 2;
    hb.member_id = s(&id_a);
    assert_eq!(admin.call(&hb, 4).await.error_code, 0);
    clock.advance(30_000);
    wait_for_group(&mut admin, |d| d.groups[0].group_state.as_str() == "Empty").await;
    assert_eq!(fetch_v8(&mut admin).await, expected);
    assert_eq!(
        admin.call(&hb, 4).await.error_code,
        25,
        "UNKNOWN_MEMBER_ID after expiry"
    );
    broker.shutdown().await.expect("clean shutdown");
}

/// LeaveGroup v5 by group instance id only (administrative removal).
async fn leave_by_instance(c: &mut Client, group: &str, instance: &str) -> (i16, i16) {
    let mut m = MemberIdentity::default();
    m.member_id = s("");
    m.group_instance_id = Some(s(instance));
    let mut req = LeaveGroupRequest::default();
    req.group_id = GroupId(s(group));
    req.members = vec![m];
    let resp = c.call(&req, 5).await;
    (resp.error_code, resp.members[0].error_code)
}

async fn delete_groups(c: &mut Client, ids: &[&str]) -> Vec<i16> {
    let mut req = DeleteGroupsRequest::default();
    req.groups_names = ids.iter().map(|g| GroupId(s(g))).collect();
    c.call(&req, 2)
        .await
        .results
        .iter()
        .map(|r| r.error_code)
        .collect()
}

#[tokio::test]
async fn admin_apis_static_members_and_simple_commits() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("group.initial.rebalance.delay.ms", "0")]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c).await;

    // A commit outside group management (generation -1) creates an Empty group.
    let mut simple = commit_request("", -1, &[(0, 5)]);
    simple.group_id = GroupId(s("simple"));
    assert_eq!(
        c.call(&simple, 8).await.topics[0].partitions[0].error_code,
        0
    );
    // Unknown partitions are refused before reaching the coordinator.
    let mut unknown = commit_request("", -1, &[(9, 5)]);
    unknown.group_id = GroupId(s("simple"));
    assert_eq!(
        c.call(&unknown, 8).await.topics[0].partitions[0].error_code,
        3
    );

    // A static member: joins without MEMBER_ID_REQUIRED, syncs, restarts.
    let mut join = join_request("");
    join.group_instance_id = Some(s("inst-1"));
    let first = c.call(&join, 9).await;
    assert_eq!((first.error_code, first.generation_id), (0, 1));
    let old_id = first.member_id.to_string();
    assert!(old_id.starts_with("inst-1-"));
    let mut sync = sync_request(&old_id, 1, &[(&old_id, b"mine")]);
    sync.group_instance_id = Some(s("inst-1"));
    assert_eq!(c.call(&sync, 5).await.error_code, 0);
    let again = c.call(&join, 9).await;
    assert_eq!(
        (again.error_code, again.generation_id),
        (0, 1),
        "no rebalance"
    );
    assert!(again.skip_assignment);
    assert_ne!(again.member_id.as_str(), old_id);
    let mut hb = HeartbeatRequest::default();
    hb.group_id = GroupId(s(GROUP));
    hb.generation_id = 1;
    hb.member_id = s(&old_id);
    hb.group_instance_id = Some(s("inst-1"));
    assert_eq!(c.call(&hb, 4).await.error_code, 82, "FENCED_INSTANCE_ID");
    hb.member_id = again.member_id.clone();
    assert_eq!(c.call(&hb, 4).await.error_code, 0);

    // Offsets of a subscribed topic cannot be deleted while the group is live.
    let commit = commit_request(again.member_id.as_str(), 1, &[(0, 7)]);
    assert_eq!(
        c.call(&commit, 8).await.topics[0].partitions[0].error_code,
        0
    );
    let mut od = OffsetDeleteRequest::default();
    od.group_id = GroupId(s(GROUP));
    let mut odt = OffsetDeleteRequestTopic::default();
    odt.name = TopicName(s("t"));
    let mut odp = OffsetDeleteRequestPartition::default();
    odp.partition_index = 0;
    odt.partitions = vec![odp];
    od.topics = vec![odt];
    let resp = c.call(&od, 0).await;
    assert_eq!(
        (resp.error_code, resp.topics[0].partitions[0].error_code),
        (0, 86)
    );

    // ListGroups with a state filter; DescribeGroups of a live and an unknown group.
    let mut list = ListGroupsRequest::default();
    list.states_filter = vec![s("Empty")];
    let empty: Vec<String> = c
        .call(&list, 4)
        .await
        .groups
        .iter()
        .map(|g| g.group_id.to_string())
        .collect();
    assert_eq!(empty, vec!["simple".to_string()]);
    let d = describe(&mut c).await;
    assert_eq!(d.groups[0].group_state.as_str(), "Stable");
    assert_eq!(
        d.groups[0].members[0]
            .group_instance_id
            .as_ref()
            .map(|i| i.as_str()),
        Some("inst-1")
    );
    assert_eq!(d.groups[0].members[0].member_assignment.as_ref(), b"mine");
    let mut unknown = DescribeGroupsRequest::default();
    unknown.groups = vec![GroupId(s("nope"))];
    let d = c.call(&unknown, 5).await;
    assert_eq!(
        (d.groups[0].error_code, d.groups[0].group_state.as_str()),
        (0, "Dead")
    );

    // DeleteGroups: members → NON_EMPTY_GROUP; after an administrative leave, deleted.
    assert_eq!(
        delete_groups(&mut c, &[GROUP, "simple", "nope"]).await,
        vec![68, 0, 69]
    );
    assert_eq!(leave_by_instance(&mut c, GROUP, "inst-1").await, (0, 0));
    assert_eq!(leave_by_instance(&mut c, GROUP, "inst-1").await, (0, 25));
    assert_eq!(delete_groups(&mut c, &[GROUP]).await, vec![0]);
    assert!(fetch_v8(&mut c)
        .await
        .iter()
        .all(|(_, offset, _)| *offset == -1));
    broker.shutdown().await.expect("clean shutdown");
}
