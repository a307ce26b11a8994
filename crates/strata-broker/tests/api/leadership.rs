//! Guards ElectLeaders and the reassignment APIs of a single-node broker:
//! every partition has one replica, this broker, so an election is never
//! needed, `[node.id]` is the only valid target, and nothing is being
//! reassigned (the cluster behaviour is in tests/clients/test_leadership.py).

use crate::common::*;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId, ElectLeadersRequest,
    ListPartitionReassignmentsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const ELECTION_NOT_NEEDED: i16 = 84;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;
const INVALID_REQUEST: i16 = 42;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

#[tokio::test]
async fn single_node_elections_are_never_needed() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "t", 2, &[]).await, 0);

    let mut tp = TopicPartitions::default();
    tp.topic = name("t");
    tp.partitions = vec![0, 1, 7];
    let mut req = ElectLeadersRequest::default();
    req.topic_partitions = Some(vec![tp]);
    req.timeout_ms = 1000;
    for version in 0..=2 {
        let resp = c.call(&req, version).await;
        assert_eq!(resp.error_code, 0);
        let codes: Vec<(i32, i16)> = resp.replica_election_results[0]
            .partition_result
            .iter()
            .map(|p| (p.partition_id, p.error_code))
            .collect();
        assert_eq!(
            codes,
            vec![
                (0, ELECTION_NOT_NEEDED),
                (1, ELECTION_NOT_NEEDED),
                (7, UNKNOWN_TOPIC_OR_PARTITION)
            ],
            "v{version}"
        );
    }
    req.topic_partitions = None;
    let all = c.call(&req, 2).await;
    assert!(
        all.replica_election_results.is_empty(),
        "a null list leaves out partitions that need nothing"
    );
    req.election_type = 5;
    assert_eq!(c.call(&req, 1).await.error_code, INVALID_REQUEST);
}

#[tokio::test]
async fn single_node_reassignment_validates_like_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "t", 1, &[]).await, 0);

    let part = |index: i32, replicas: Option<Vec<i32>>| {
        let mut p = ReassignablePartition::default();
        p.partition_index = index;
        p.replicas = replicas.map(|rs| rs.into_iter().map(BrokerId).collect());
        p
    };
    let mut t = ReassignableTopic::default();
    t.name = name("t");
    t.partitions = vec![
        part(0, Some(vec![1])),
        part(0, Some(vec![1, 2])),
        part(0, Some(vec![1, 1])),
        part(0, Some(vec![])),
        part(0, None),
        part(3, Some(vec![1])),
    ];
    let mut req = AlterPartitionReassignmentsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 1000;
    let resp = c.call(&req, 0).await;
    let codes: Vec<i16> = resp.responses[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(
        codes,
        vec![
            0,
            INVALID_REPLICA_ASSIGNMENT,
            INVALID_REPLICA_ASSIGNMENT,
            INVALID_REPLICA_ASSIGNMENT,
            NO_REASSIGNMENT_IN_PROGRESS,
            UNKNOWN_TOPIC_OR_PARTITION
        ]
    );

    let listed = c
        .call(&ListPartitionReassignmentsRequest::default(), 0)
        .await;
    assert_eq!(listed.error_code, 0);
    assert!(listed.topics.is_empty());
}
