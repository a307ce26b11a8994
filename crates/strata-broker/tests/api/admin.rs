//! Guards the admin APIs: CreateTopics validation and validate_only,
//! DeleteTopics (by name and id), CreatePartitions, DescribeCluster,
//! DescribeLogDirs and OffsetForLeaderEpoch.

use crate::common::*;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeClusterRequest,
    DescribeLogDirsRequest, MetadataRequest, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

async fn topic_names(c: &mut Client) -> Vec<String> {
    let mut all = MetadataRequest::default();
    all.topics = None;
    c.call(&all, 12)
        .await
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn create_delete_and_grow_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("num.partitions", "2")]).await;
    let mut c = Client::connect(broker.local_addr()).await;

    let mk = |n: &str, partitions: i32, rf: i16| {
        let mut t = CreatableTopic::default();
        t.name = name(n);
        t.num_partitions = partitions;
        t.replication_factor = rf;
        t
    };
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![
        mk("a", -1, -1),
        mk("b", 4, 1),
        mk("rf3", 1, 3),
        mk("zero", 0, 1),
        mk("bad/name", 1, 1),
        mk("dup", 1, 1),
        mk("dup", 1, 1),
    ];
    req.timeout_ms = 10_000;
    let resp = c.call(&req, 7).await;
    let codes: Vec<(String, i16)> = resp
        .topics
        .iter()
        .map(|t| (t.name.to_string(), t.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("a".into(), 0),
            ("b".into(), 0),
            ("rf3".into(), 38),
            ("zero".into(), 37),
            ("bad/name".into(), 17),
            ("dup".into(), 42),
            ("dup".into(), 42),
        ]
    );
    assert_eq!(resp.topics[0].num_partitions, 2, "broker default");
    assert!(!resp.topics[1].topic_id.is_nil());
    assert!(resp.topics[1].configs.as_ref().unwrap().len() > 20);

    // validate_only creates nothing.
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![mk("ghost", 1, 1)];
    req.validate_only = true;
    assert_eq!(c.call(&req, 7).await.topics[0].error_code, 0);
    assert_eq!(topic_names(&mut c).await, vec!["a", "b"]);

    // CreatePartitions.
    let mut cp = CreatePartitionsRequest::default();
    let grow = |n: &str, count: i32| {
        let mut t = CreatePartitionsTopic::default();
        t.name = name(n);
        t.count = count;
        t
    };
    cp.topics = vec![grow("a", 5), grow("b", 3), grow("none", 3)];
    let resp = c.call(&cp, 3).await;
    let codes: Vec<i16> = resp.results.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![0, 37, 3]);
    let (code, base) = produce(&mut c, "a", 4, batch(1, "new", 1_000, false)).await;
    assert_eq!((code, base), (0, 0), "new partition writable");

    // DeleteTopics by name (v4) and by id (v6).
    let id_b = topic_id(&mut c, "b").await;
    let mut del = DeleteTopicsRequest::default();
    del.topic_names = vec![name("a"), name("missing")];
    let resp = c.call(&del, 4).await;
    let codes: Vec<i16> = resp.responses.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![0, 3]);
    let mut del = DeleteTopicsRequest::default();
    let mut s = DeleteTopicState::default();
    s.topic_id = id_b;
    del.topics = vec![s];
    let resp = c.call(&del, 6).await;
    assert_eq!(resp.responses[0].error_code, 0);
    assert_eq!(resp.responses[0].name.as_ref().unwrap().as_str(), "b");
    assert!(topic_names(&mut c).await.is_empty());
    let (code, _) = produce(&mut c, "a", 0, batch(1, "gone", 1_000, false)).await;
    assert_eq!(code, 3);
    // The partition directories are renamed for deletion, no longer live.
    let live: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("a-") && !n.ends_with("-delete"))
        .collect();
    assert!(live.is_empty(), "{live:?}");
    // Re-creating gets a fresh, empty topic.
    assert_eq!(create_topic_with(&mut c, "a", 1, &[]).await, 0);
    assert_eq!(
        produce(&mut c, "a", 0, batch(1, "again", 1_000, false)).await,
        (0, 0)
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn cluster_log_dirs_and_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("broker.rack", "rack-1")]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "e").await;
    produce(&mut c, "e", 0, batch(3, "x", 1_000, false)).await;

    let resp = c.call(&DescribeClusterRequest::default(), 1).await;
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.cluster_id.as_str(), broker.cluster_id());
    assert_eq!(resp.brokers.len(), 1);
    assert_eq!(resp.brokers[0].rack.as_ref().unwrap().as_str(), "rack-1");

    let mut req = DescribeLogDirsRequest::default();
    req.topics = None; // all partitions
    let resp = c.call(&req, 4).await;
    assert_eq!(resp.results.len(), 1);
    let r = &resp.results[0];
    assert_eq!(r.error_code, 0);
    assert!(r.total_bytes > 0);
    let t = r.topics.iter().find(|t| t.name.as_str() == "e").unwrap();
    assert!(t.partitions[0].partition_size > 0);

    let mut p = OffsetForLeaderPartition::default();
    p.partition = 0;
    p.current_leader_epoch = -1;
    p.leader_epoch = 0;
    let mut t = OffsetForLeaderTopic::default();
    t.topic = name("e");
    t.partitions = vec![p];
    let mut req = OffsetForLeaderEpochRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.topics = vec![t];
    let resp = c.call(&req, 4).await;
    let r = &resp.topics[0].partitions[0];
    assert_eq!((r.error_code, r.leader_epoch, r.end_offset), (0, 0, 3));
    broker.shutdown().await.unwrap();
}
