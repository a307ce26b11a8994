//! Guards the ACL checks every API makes (Kafka's KafkaApis): a principal
//! without the right ACL is refused with Kafka's error code and sees no
//! topic it may not DESCRIBE; prefixed ACLs, DENY over ALLOW, super users,
//! group and transactional-id ACLs; ACLs survive a restart and a deletion
//! applies to the next request; SASL failures close the connection.

use std::net::SocketAddr;

use bytes::Bytes;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateTopicsRequest, DeleteAclsRequest, FetchResponse, GroupId,
    InitProducerIdRequest, JoinGroupRequest, MetadataRequest, OffsetCommitRequest, TopicName,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use strata_broker::BrokerHandle;

use crate::common::{
    self, fetch_request, metadata_request, produce_request, sasl_plain, sasl_plain_attempt, Client,
};

// Kafka codes (ResourceType, PatternType, AclOperation, PermissionType, errors).
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TRANSACTIONAL_ID: i8 = 5;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const DESCRIBE: i8 = 8;
const DENY: i8 = 2;
const ALLOW: i8 = 3;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

async fn start(dir: &std::path::Path) -> BrokerHandle {
    common::start(
        dir,
        &[
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            ("super.users", "User:admin"),
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            ),
            (
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "PLAIN",
            ),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
            ("connection.failed.authentication.delay.ms", "0"),
            ("num.partitions", "1"),
        ],
    )
    .await
}

fn sasl_addr(handle: &BrokerHandle) -> SocketAddr {
    handle
        .listener_addr("SASL_PLAINTEXT")
        .expect("SASL listener")
}

async fn admin(handle: &BrokerHandle) -> Client {
    sasl_plain(sasl_addr(handle), "admin", "admin-secret").await
}

async fn alice(handle: &BrokerHandle) -> Client {
    sasl_plain(sasl_addr(handle), "alice", "alice-secret").await
}

async fn bob(handle: &BrokerHandle) -> Client {
    sasl_plain(sasl_addr(handle), "bob", "bob-secret").await
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// An ACL on `(resource_type, name, pattern)` for `principal` from any host.
fn acl(
    resource_type: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    operation: i8,
    permission: i8,
) -> AclCreation {
    let mut c = AclCreation::default();
    c.resource_type = resource_type;
    c.resource_name = s(name);
    c.resource_pattern_type = pattern;
    c.principal = s(principal);
    c.host = s("*");
    c.operation = operation;
    c.permission_type = permission;
    c
}

async fn create_acls(client: &mut Client, acls: Vec<AclCreation>) {
    let mut req = CreateAclsRequest::default();
    req.creations = acls;
    let resp = client.call(&req, 3).await;
    for r in &resp.results {
        assert_eq!(r.error_code, 0, "CreateAcls: {:?}", r.error_message);
    }
}

/// CreateTopics (v7) of one single-partition topic; its error code.
async fn create_topic(client: &mut Client, name: &str) -> i16 {
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(name));
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 10_000;
    client.call(&req, 7).await.topics[0].error_code
}

/// Admin creates `topic` and appends two records to it.
async fn topic_with_records(handle: &BrokerHandle, topic: &str) {
    let mut admin = admin(handle).await;
    assert_eq!(create_topic(&mut admin, topic).await, 0, "create {topic}");
    let (code, _) =
        common::produce(&mut admin, topic, 0, common::batch(2, "r", 1_000, false)).await;
    assert_eq!(code, 0, "admin produces to {topic}");
}

/// Fetch (v12, by name) of partition 0 from offset 0: (error, records read).
async fn fetch(client: &mut Client, topic: &str) -> (i16, usize) {
    let req = fetch_request(topic, uuid::Uuid::nil(), 0, 0, 0, 0);
    let resp: FetchResponse = client.call(&req, 12).await;
    let p = &resp.responses[0].partitions[0];
    (p.error_code, common::records_of(&p.records).len())
}

/// The topic names an all-topics Metadata (v12) lists.
async fn all_topics(client: &mut Client) -> Vec<String> {
    let mut req = MetadataRequest::default();
    req.topics = None;
    let resp = client.call(&req, 12).await;
    resp.topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect()
}

#[tokio::test]
async fn reading_needs_read_and_seeing_a_topic_needs_describe() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    topic_with_records(&handle, "orders").await;
    let mut admin = admin(&handle).await;
    create_acls(
        &mut admin,
        vec![acl(TOPIC, "orders", LITERAL, "User:alice", DESCRIBE, ALLOW)],
    )
    .await;

    // bob has no ACL: the topic is invisible and every API refuses it.
    let mut bob = bob(&handle).await;
    assert!(!all_topics(&mut bob).await.contains(&"orders".to_string()));
    let named = bob.call(&metadata_request(&["orders"], false), 12).await;
    assert_eq!(named.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(named.topics[0].topic_id.is_nil(), "no id leaked");
    assert!(named.topics[0].partitions.is_empty());
    assert_eq!(
        fetch(&mut bob, "orders").await.0,
        TOPIC_AUTHORIZATION_FAILED
    );
    let produced = bob
        .call(
            &produce_request("orders", 0, common::batch(1, "x", 1, false), -1),
            9,
        )
        .await;
    assert_eq!(
        produced.responses[0].partition_responses[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );
    // Not existing and not existing-but-denied look the same.
    let missing = bob.call(&metadata_request(&["nope"], false), 12).await;
    assert_eq!(missing.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);

    // alice may DESCRIBE: she sees the topic, but may not read it.
    let mut alice = alice(&handle).await;
    assert!(all_topics(&mut alice).await.contains(&"orders".to_string()));
    let mut ops = metadata_request(&["orders"], false);
    ops.include_topic_authorized_operations = true;
    let described = alice.call(&ops, 12).await;
    assert_eq!(described.topics[0].error_code, 0);
    assert_eq!(
        described.topics[0].topic_authorized_operations,
        1 << DESCRIBE,
        "only DESCRIBE in the bit field"
    );
    assert_eq!(
        fetch(&mut alice, "orders").await.0,
        TOPIC_AUTHORIZATION_FAILED
    );

    create_acls(
        &mut admin,
        vec![acl(TOPIC, "orders", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    assert_eq!(fetch(&mut alice, "orders").await, (0, 2));
    // PLAINTEXT is User:ANONYMOUS, which has no ACL.
    let mut anonymous = Client::connect(handle.local_addr()).await;
    assert_eq!(
        fetch(&mut anonymous, "orders").await.0,
        TOPIC_AUTHORIZATION_FAILED
    );
    assert!(all_topics(&mut anonymous).await.is_empty());
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn prefixed_acls_match_by_prefix_and_deny_overrides_allow() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    for t in ["pay-1", "pay-2", "other"] {
        topic_with_records(&handle, t).await;
    }
    let mut admin = admin(&handle).await;
    create_acls(
        &mut admin,
        vec![
            acl(TOPIC, "pay-", PREFIXED, "User:alice", READ, ALLOW),
            // Everyone may read "other", except bob.
            acl(TOPIC, "other", LITERAL, "User:*", READ, ALLOW),
            acl(TOPIC, "other", LITERAL, "User:bob", READ, DENY),
        ],
    )
    .await;
    let mut alice = alice(&handle).await;
    assert_eq!(fetch(&mut alice, "pay-1").await.0, 0);
    assert_eq!(fetch(&mut alice, "pay-2").await.0, 0);
    assert_eq!(fetch(&mut alice, "other").await.0, 0, "User:* applies");
    let mut bob = bob(&handle).await;
    assert_eq!(fetch(&mut bob, "pay-1").await.0, TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(
        fetch(&mut bob, "other").await.0,
        TOPIC_AUTHORIZATION_FAILED,
        "a DENY for bob beats the ALLOW for User:*"
    );

    // A literal DENY beats the prefixed ALLOW, on that topic only.
    create_acls(
        &mut admin,
        vec![acl(TOPIC, "pay-2", LITERAL, "User:alice", READ, DENY)],
    )
    .await;
    assert_eq!(
        fetch(&mut alice, "pay-2").await.0,
        TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(fetch(&mut alice, "pay-1").await.0, 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn super_users_need_no_acls_and_creating_topics_needs_create() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    let mut alice = alice(&handle).await;
    assert_eq!(
        create_topic(&mut alice, "alices").await,
        TOPIC_AUTHORIZATION_FAILED
    );
    // Nor may she create it by asking Metadata for it.
    let auto = alice.call(&metadata_request(&["alices"], true), 12).await;
    assert_eq!(auto.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    let mut admin = admin(&handle).await;
    // With DESCRIBE but without CREATE, auto-creation is refused too.
    create_acls(
        &mut admin,
        vec![acl(TOPIC, "auto-t", LITERAL, "User:alice", DESCRIBE, ALLOW)],
    )
    .await;
    let auto = alice.call(&metadata_request(&["auto-t"], true), 12).await;
    assert_eq!(auto.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    let listed = all_topics(&mut admin).await;
    assert!(
        !listed.contains(&"alices".to_string()) && !listed.contains(&"auto-t".to_string()),
        "nothing was created: {listed:?}"
    );

    // The super user: no ACL at all, yet everything is allowed.
    assert_eq!(create_topic(&mut admin, "admins").await, 0);
    assert_eq!(fetch(&mut admin, "admins").await.0, 0);

    // CREATE on the topic (DESCRIBE too, to see it) lets alice create it.
    create_acls(
        &mut admin,
        vec![
            acl(TOPIC, "alices", LITERAL, "User:alice", CREATE, ALLOW),
            acl(TOPIC, "alices", LITERAL, "User:alice", DESCRIBE, ALLOW),
        ],
    )
    .await;
    assert_eq!(create_topic(&mut alice, "alices").await, 0);
    assert_eq!(
        create_topic(&mut alice, "alices-2").await,
        TOPIC_AUTHORIZATION_FAILED,
        "a literal ACL is for that name only"
    );
    // CREATE on the cluster allows any topic.
    create_acls(
        &mut admin,
        vec![acl(
            CLUSTER,
            "kafka-cluster",
            LITERAL,
            "User:alice",
            CREATE,
            ALLOW,
        )],
    )
    .await;
    assert_eq!(create_topic(&mut alice, "alices-2").await, 0);
    handle.shutdown().await.unwrap();
}

fn join_request(group: &str) -> JoinGroupRequest {
    let mut p = JoinGroupRequestProtocol::default();
    p.name = s("range");
    p.metadata = Bytes::from_static(&[0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mut req = JoinGroupRequest::default();
    req.group_id = GroupId(s(group));
    req.session_timeout_ms = 10_000;
    req.rebalance_timeout_ms = 10_000;
    req.protocol_type = s("consumer");
    req.protocols = vec![p];
    req
}

/// A simple-consumer OffsetCommit (generation -1) of `topic`-0 at offset 1;
/// the partition's error code.
async fn commit(client: &mut Client, group: &str, topic: &str) -> i16 {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = 1;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partitions = vec![p];
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(s(group));
    req.generation_id_or_member_epoch = -1;
    req.topics = vec![t];
    let resp = client.call(&req, 8).await;
    resp.topics[0].partitions[0].error_code
}

#[tokio::test]
async fn groups_need_read_on_the_group_and_commits_read_on_the_topic() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    topic_with_records(&handle, "events").await;
    let mut admin = admin(&handle).await;
    create_acls(
        &mut admin,
        vec![acl(TOPIC, "events", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    let mut alice = alice(&handle).await;
    let joined = alice.call(&join_request("g1"), 3).await;
    assert_eq!(joined.error_code, GROUP_AUTHORIZATION_FAILED);
    assert_eq!(
        commit(&mut alice, "g1", "events").await,
        GROUP_AUTHORIZATION_FAILED
    );

    create_acls(
        &mut admin,
        vec![acl(GROUP, "g", PREFIXED, "User:alice", READ, ALLOW)],
    )
    .await;
    let joined = alice.call(&join_request("g1"), 3).await;
    assert_eq!(joined.error_code, 0, "JoinGroup with READ on the group");
    assert_eq!(commit(&mut alice, "g-commits", "events").await, 0);
    // READ on the group but not on the topic.
    create_acls(
        &mut admin,
        vec![acl(GROUP, "g2", LITERAL, "User:bob", READ, ALLOW)],
    )
    .await;
    let mut bob = bob(&handle).await;
    assert_eq!(
        commit(&mut bob, "g2", "events").await,
        TOPIC_AUTHORIZATION_FAILED
    );
    handle.shutdown().await.unwrap();
}

fn init_producer_id(transactional_id: Option<&str>) -> InitProducerIdRequest {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = transactional_id.map(|t| TransactionalId(s(t)));
    req.transaction_timeout_ms = 60_000;
    req.producer_id = kafka_protocol::messages::ProducerId(-1);
    req.producer_epoch = -1;
    req
}

#[tokio::test]
async fn producer_ids_need_write_on_the_transactional_id_or_a_topic() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    let mut alice = alice(&handle).await;
    let resp = alice.call(&init_producer_id(Some("tx-1")), 4).await;
    assert_eq!(resp.error_code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_eq!(resp.producer_id.0, -1);
    // Idempotent: IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    let resp = alice.call(&init_producer_id(None), 4).await;
    assert_eq!(resp.error_code, CLUSTER_AUTHORIZATION_FAILED);

    let mut admin = admin(&handle).await;
    create_acls(
        &mut admin,
        vec![
            acl(
                TRANSACTIONAL_ID,
                "tx-1",
                LITERAL,
                "User:alice",
                WRITE,
                ALLOW,
            ),
            acl(TOPIC, "out-", PREFIXED, "User:alice", WRITE, ALLOW),
        ],
    )
    .await;
    let resp = alice.call(&init_producer_id(Some("tx-1")), 4).await;
    assert_eq!(resp.error_code, 0, "WRITE on tx-1");
    assert!(resp.producer_id.0 >= 0);
    let resp = alice.call(&init_producer_id(Some("tx-2")), 4).await;
    assert_eq!(resp.error_code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    let resp = alice.call(&init_producer_id(None), 4).await;
    assert_eq!(resp.error_code, 0, "KIP-679: WRITE on some topic is enough");
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn acls_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    topic_with_records(&handle, "kept").await;
    let mut admin = admin(&handle).await;
    create_acls(
        &mut admin,
        vec![acl(TOPIC, "kept", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    drop(admin);
    handle.shutdown().await.unwrap();

    let handle = start(dir.path()).await;
    let mut alice = alice(&handle).await;
    assert_eq!(fetch(&mut alice, "kept").await, (0, 2));
    let mut bob = bob(&handle).await;
    assert_eq!(fetch(&mut bob, "kept").await.0, TOPIC_AUTHORIZATION_FAILED);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn deleting_an_acl_removes_access_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    topic_with_records(&handle, "brief").await;
    let mut admin = admin(&handle).await;
    create_acls(
        &mut admin,
        vec![acl(TOPIC, "brief", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    let mut alice = alice(&handle).await;
    assert_eq!(fetch(&mut alice, "brief").await.0, 0);

    let mut f = DeleteAclsFilter::default();
    f.resource_type_filter = TOPIC;
    f.resource_name_filter = Some(s("brief"));
    f.pattern_type_filter = LITERAL;
    f.principal_filter = Some(s("User:alice"));
    f.host_filter = None;
    f.operation = READ;
    f.permission_type = ALLOW;
    let mut req = DeleteAclsRequest::default();
    req.filters = vec![f];
    let resp = admin.call(&req, 3).await;
    assert_eq!(resp.filter_results[0].error_code, 0);
    assert_eq!(resp.filter_results[0].matching_acls.len(), 1);
    // The same, still open connection is refused on its next request.
    assert_eq!(
        fetch(&mut alice, "brief").await.0,
        TOPIC_AUTHORIZATION_FAILED
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn sasl_listener_refuses_unauthenticated_and_wrong_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let handle = start(dir.path()).await;
    let addr = sasl_addr(&handle);

    // A Kafka request before authenticating closes the connection.
    let mut raw = Client::connect(addr).await;
    let (_, frame) = raw.frame(&metadata_request(&[], false), 12);
    raw.send_raw(&frame).await;
    assert!(raw.is_closed().await, "closed without authentication");

    // A wrong password: SASL_AUTHENTICATION_FAILED, then the close.
    let (mut wrong, code) = sasl_plain_attempt(addr, "alice", "not-her-password").await;
    assert_eq!(code, SASL_AUTHENTICATION_FAILED);
    assert!(wrong.is_closed().await, "closed after the failure");

    // Other connections are unaffected.
    let mut admin = admin(&handle).await;
    assert_eq!(create_topic(&mut admin, "still-fine").await, 0);
    handle.shutdown().await.unwrap();
}
