//! Guards the broker's answers for partitions on an offline log dir: Metadata
//! reports them without a leader (LEADER_NOT_AVAILABLE, this broker in
//! `offline_replicas`), Produce and Fetch answer KAFKA_STORAGE_ERROR, a
//! DeleteTopics of such a topic is refused and nothing is removed, the topic
//! is not recreated empty on the healthy dir, shutdown succeeds, and once the
//! dir is back every record is there. The dir is taken offline at startup
//! (its `meta.properties` names another cluster); ENOSPC at run time is
//! covered by `tests/clients/test_offline_dir.py`.

use std::path::Path;

use crate::common::*;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{DeleteTopicsRequest, FetchResponse, MetadataResponse};
use strata_log::MetaProperties;

const KAFKA_STORAGE_ERROR: i16 = 56;
const LEADER_NOT_AVAILABLE: i16 = 5;

fn two_dirs(a: &Path, b: &Path) -> String {
    format!("{},{}", a.display(), b.display())
}

async fn fetch_code(c: &mut Client, topic: &str, id: uuid::Uuid) -> (i16, usize) {
    let resp: FetchResponse = c.call(&fetch_request(topic, id, 0, 0, 0, 0), 12).await;
    let p = &resp.responses[0].partitions[0];
    (p.error_code, records_of(&p.records).len())
}

async fn metadata(c: &mut Client, topics: &[&str]) -> MetadataResponse {
    c.call(&metadata_request(topics, false), 12).await
}

async fn delete_topic(c: &mut Client, id: uuid::Uuid) -> i16 {
    let mut del = DeleteTopicsRequest::default();
    let mut s = DeleteTopicState::default();
    s.topic_id = id;
    del.topics = vec![s];
    let resp = c.call(&del, 6).await;
    resp.responses[0].error_code
}

#[tokio::test]
async fn partitions_of_an_offline_dir_are_reported_offline_and_kept() {
    let root = tempfile::tempdir().unwrap();
    let (d1, d2) = (root.path().join("d1"), root.path().join("d2"));
    let dirs = two_dirs(&d1, &d2);
    let extra = [("log.dirs", dirs.as_str())];

    // Run 1: "healthy" lands in d1, "stranded" in d2 (fewest partitions, first dir on ties).
    let broker = start(root.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "healthy", 1, &[]).await, 0);
    assert_eq!(create_topic_with(&mut c, "stranded", 1, &[]).await, 0);
    assert!(d1.join("healthy-0").is_dir() && d2.join("stranded-0").is_dir());
    assert_eq!(
        produce(&mut c, "stranded", 0, batch(3, "s", 1_000, false))
            .await
            .0,
        0
    );
    let stranded_id = topic_id(&mut c, "stranded").await;
    drop(c);
    broker.shutdown().await.unwrap();

    // d2 now claims another cluster: it goes offline at startup.
    let meta_path = d2.join("meta.properties");
    let good_meta = std::fs::read(&meta_path).unwrap();
    let mut foreign = MetaProperties::read(&d2).unwrap().unwrap();
    foreign.cluster_id = Some("AAAAAAAAAAAAAAAAAAAAAA".into());
    foreign.write(&strata_log::fs::StdFs, &d2).unwrap();

    let broker = start(root.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let md = metadata(&mut c, &["stranded", "healthy"]).await;
    let stranded = &md.topics[0].partitions[0];
    assert_eq!(stranded.error_code, LEADER_NOT_AVAILABLE);
    assert_eq!(stranded.leader_id.0, -1);
    assert_eq!(
        stranded
            .offline_replicas
            .iter()
            .map(|b| b.0)
            .collect::<Vec<_>>(),
        vec![1]
    );
    let healthy = &md.topics[1].partitions[0];
    assert_eq!((healthy.error_code, healthy.leader_id.0), (0, 1));
    assert!(healthy.offline_replicas.is_empty());

    let (code, _) = produce(&mut c, "stranded", 0, batch(1, "x", 1_000, false)).await;
    assert_eq!(code, KAFKA_STORAGE_ERROR);
    assert_eq!(
        fetch_code(&mut c, "stranded", stranded_id).await.0,
        KAFKA_STORAGE_ERROR
    );
    // Not recreated empty on the healthy dir.
    assert!(!d1.join("stranded-0").exists());
    // The other dir keeps serving.
    assert_eq!(
        produce(&mut c, "healthy", 0, batch(2, "h", 1_000, false))
            .await
            .0,
        0
    );
    let healthy_id = topic_id(&mut c, "healthy").await;
    assert_eq!(fetch_code(&mut c, "healthy", healthy_id).await, (0, 2));
    // DeleteTopics is refused and changes nothing.
    assert_eq!(delete_topic(&mut c, stranded_id).await, KAFKA_STORAGE_ERROR);
    assert_eq!(topic_id(&mut c, "stranded").await, stranded_id);
    drop(c);
    // Shutdown closes the healthy dir cleanly and succeeds.
    broker.shutdown().await.unwrap();
    assert!(d1.join(".kafka_cleanshutdown").exists());

    // Dir repaired: everything is back.
    std::fs::write(&meta_path, good_meta).unwrap();
    let broker = start(root.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(topic_id(&mut c, "stranded").await, stranded_id);
    assert_eq!(fetch_code(&mut c, "stranded", stranded_id).await, (0, 3));
    assert_eq!(fetch_code(&mut c, "healthy", healthy_id).await, (0, 2));
    let md = metadata(&mut c, &["stranded"]).await;
    assert_eq!(md.topics[0].partitions[0].error_code, 0);
    drop(c);
    broker.shutdown().await.unwrap();
}
