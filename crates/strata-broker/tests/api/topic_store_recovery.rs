//! Guards the startup agreement between `strata-topics.json` and the
//! partition directories: a lost store is rebuilt from the directories (same
//! topic ids, partition counts and data; configs lost), and a partition whose
//! `partition.metadata` names another topic id is refused (served as offline)
//! without its directory being changed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use kafka_protocol::messages::FetchResponse;
use strata_log::PartitionMetadata;

const KAFKA_STORAGE_ERROR: i16 = 56;
const LEADER_NOT_AVAILABLE: i16 = 5;
/// DescribeConfigs resource type TOPIC.
const TOPIC: i8 = 2;

async fn fetch(c: &mut Client, topic: &str, partition: i32) -> (i16, usize) {
    let resp: FetchResponse = c
        .call(
            &fetch_request(topic, uuid::Uuid::nil(), partition, 0, 0, 0),
            12,
        )
        .await;
    let p = &resp.responses[0].partitions[0];
    (p.error_code, records_of(&p.records).len())
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_lost_topic_store_is_rebuilt_from_the_partition_directories() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(
        create_topic_with(&mut c, "orders", 3, &[("retention.ms", "86400000")]).await,
        0
    );
    for p in 0..3 {
        let n = p as usize + 1;
        assert_eq!(
            produce(&mut c, "orders", p, batch(n, "o", 1_000, false))
                .await
                .0,
            0
        );
    }
    let id = topic_id(&mut c, "orders").await;
    let cluster = broker.cluster_id().to_string();
    drop(c);
    broker.shutdown().await.unwrap();

    std::fs::remove_file(dir.path().join(strata_broker::TOPICS_FILE)).unwrap();

    let broker = start(dir.path(), &[]).await;
    assert_eq!(
        broker.cluster_id(),
        cluster,
        "cluster id kept from meta.properties"
    );
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(topic_id(&mut c, "orders").await, id);
    let md = c.call(&metadata_request(&["orders"], false), 12).await;
    assert_eq!(md.topics[0].partitions.len(), 3);
    for p in 0..3 {
        assert_eq!(fetch(&mut c, "orders", p).await, (0, p as usize + 1));
    }
    // The override lived only in the store: the topic is on the defaults now.
    let described = describe_configs(&mut c, TOPIC, "orders").await;
    let retention = described.results[0]
        .configs
        .iter()
        .find(|e| e.name.as_str() == "retention.ms")
        .unwrap();
    assert_eq!(
        retention.value.as_ref().map(|v| v.to_string()).as_deref(),
        Some("604800000")
    );
    // And it keeps working.
    assert_eq!(
        produce(&mut c, "orders", 0, batch(1, "n", 1_000, false)).await,
        (0, 1)
    );
    drop(c);
    broker.shutdown().await.unwrap();
    assert!(dir.path().join(strata_broker::TOPICS_FILE).exists());
}

#[tokio::test]
async fn a_partition_whose_topic_id_disagrees_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "t", 2, &[]).await, 0);
    for p in 0..2 {
        assert_eq!(
            produce(&mut c, "t", p, batch(2, "t", 1_000, false)).await.0,
            0
        );
    }
    let id = topic_id(&mut c, "t").await;
    drop(c);
    broker.shutdown().await.unwrap();

    // Partition 1 now claims another topic id (a directory copied from
    // another cluster, say).
    let p1 = dir.path().join("t-1");
    let other = uuid::Uuid::new_v4();
    PartitionMetadata::new(other)
        .write(&strata_log::fs::StdFs, &p1)
        .unwrap();
    let before = snapshot(&p1);

    for round in 0..2 {
        let broker = start(dir.path(), &[]).await;
        let mut c = Client::connect(broker.local_addr()).await;
        assert_eq!(topic_id(&mut c, "t").await, id, "round {round}");
        let md = c.call(&metadata_request(&["t"], false), 12).await;
        let parts = &md.topics[0].partitions;
        assert_eq!((parts[0].error_code, parts[0].leader_id.0), (0, 1));
        assert_eq!(parts[1].error_code, LEADER_NOT_AVAILABLE);
        assert_eq!(parts[1].leader_id.0, -1);
        assert_eq!(
            parts[1]
                .offline_replicas
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>(),
            vec![1]
        );
        let (code, _) = produce(&mut c, "t", 1, batch(1, "x", 1_000, false)).await;
        assert_eq!(code, KAFKA_STORAGE_ERROR);
        assert_eq!(fetch(&mut c, "t", 1).await.0, KAFKA_STORAGE_ERROR);
        assert_eq!(fetch(&mut c, "t", 0).await, (0, 2));
        drop(c);
        broker.shutdown().await.unwrap();
        assert_eq!(
            snapshot(&p1),
            before,
            "round {round}: refused directory untouched"
        );
    }
}
