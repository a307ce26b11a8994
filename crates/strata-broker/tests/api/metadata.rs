//! Guards Metadata: the single broker as leader of everything, cluster id,
//! stable topic ids and leader epochs, auto-creation only when both the
//! broker and the request allow it, invalid names, internal-topic flag.

use crate::common::{metadata_request, start, test_config, Client};
use kafka_protocol::messages::MetadataRequest;

#[tokio::test]
async fn auto_create_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("num.partitions", "3"), ("node.id", "7")]).await;
    let mut c = Client::connect(broker.local_addr()).await;

    // Not allowed by the request: unknown.
    let resp = c.call(&metadata_request(&["orders"], false), 12).await;
    assert_eq!(resp.topics[0].error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");

    // Allowed: created with num.partitions, this broker leads everything.
    let resp = c.call(&metadata_request(&["orders"], true), 12).await;
    let t = &resp.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(t.partitions.len(), 3);
    assert!(!t.topic_id.is_nil());
    assert!(!t.is_internal);
    for (i, p) in t.partitions.iter().enumerate() {
        assert_eq!(p.partition_index, i as i32);
        assert_eq!(p.leader_id.0, 7);
        assert_eq!(p.leader_epoch, 0);
        assert_eq!(
            p.replica_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
            vec![7]
        );
        assert_eq!(p.isr_nodes.iter().map(|b| b.0).collect::<Vec<_>>(), vec![7]);
    }
    assert_eq!(resp.brokers.len(), 1);
    assert_eq!(resp.brokers[0].node_id.0, 7);
    assert_eq!(resp.brokers[0].host.as_str(), "127.0.0.1");
    assert_eq!(resp.brokers[0].port, broker.local_addr().port() as i32);
    assert_eq!(resp.controller_id.0, 7);
    assert_eq!(
        resp.cluster_id.as_ref().unwrap().as_str(),
        broker.cluster_id()
    );
    let id = t.topic_id;

    // All topics (null list), same id.
    let mut all = MetadataRequest::default();
    all.topics = None;
    let resp = c.call(&all, 12).await;
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(resp.topics[0].topic_id, id);

    // v0 semantics: empty list = all topics.
    let mut v0 = MetadataRequest::default();
    v0.topics = Some(vec![]);
    let resp = c.call(&v0, 0).await;
    assert_eq!(resp.topics.len(), 1);

    // Invalid name.
    let resp = c.call(&metadata_request(&["bad name!"], true), 12).await;
    assert_eq!(resp.topics[0].error_code, 17, "INVALID_TOPIC_EXCEPTION");

    // Internal topics are never auto-created here.
    let resp = c
        .call(&metadata_request(&["__consumer_offsets"], true), 12)
        .await;
    assert_eq!(resp.topics[0].error_code, 3);
    broker.shutdown().await.unwrap();

    // Ids and cluster id survive a restart.
    let broker = strata_broker::start(test_config(dir.path(), &[("node.id", "7")]))
        .await
        .unwrap();
    let mut c = Client::connect(broker.local_addr()).await;
    let resp = c.call(&metadata_request(&["orders"], false), 12).await;
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].topic_id, id);
    assert_eq!(resp.topics[0].partitions.len(), 3);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn broker_can_forbid_auto_creation() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("auto.create.topics.enable", "false")]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let resp = c.call(&metadata_request(&["t"], true), 12).await;
    assert_eq!(resp.topics[0].error_code, 3);
    let mut all = MetadataRequest::default();
    all.topics = None;
    assert!(c.call(&all, 12).await.topics.is_empty());
    broker.shutdown().await.unwrap();
}
