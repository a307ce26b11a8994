//! Guards ListOffsets: earliest, latest, max-timestamp and by-time lookups
//! agree with what was produced, and move with DeleteRecords.

use crate::common::*;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{DeleteRecordsRequest, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

async fn list(c: &mut Client, topic: &str, timestamp: i64, version: i16) -> (i16, i64, i64) {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = 0;
    p.timestamp = timestamp;
    p.current_leader_epoch = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.topics = vec![t];
    let resp = c.call(&req, version).await;
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset, p.timestamp)
}

#[tokio::test]
async fn offsets_by_time_and_special_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "lo").await;
    // Batches at t=1000 (offsets 0-1), 3000 (2-4), 2000 (5).
    produce(&mut c, "lo", 0, batch(2, "a", 1_000, false)).await;
    produce(&mut c, "lo", 0, batch(3, "b", 3_000, false)).await;
    produce(&mut c, "lo", 0, batch(1, "c", 2_000, false)).await;

    assert_eq!(list(&mut c, "lo", -2, 7).await, (0, 0, -1), "earliest");
    assert_eq!(list(&mut c, "lo", -1, 7).await, (0, 6, -1), "latest");
    let (e, o, ts) = list(&mut c, "lo", -3, 7).await;
    assert_eq!((e, ts), (0, 3_000), "max timestamp");
    assert!(
        (2..=4).contains(&o),
        "an offset of the t=3000 batch, got {o}"
    );
    assert_eq!(list(&mut c, "lo", 500, 7).await.1, 0);
    assert_eq!(list(&mut c, "lo", 1_000, 1).await.1, 0);
    let (e, o, ts) = list(&mut c, "lo", 1_500, 9).await;
    assert_eq!(
        (e, o, ts),
        (0, 2, 3_000),
        "first offset with timestamp >= 1500"
    );
    assert_eq!(list(&mut c, "lo", 2_500, 9).await.1, 2);
    assert_eq!(
        list(&mut c, "lo", 9_000, 9).await,
        (0, -1, -1),
        "none that late"
    );
    assert_eq!(list(&mut c, "nope", -1, 7).await.0, 3);

    // DeleteRecords moves the earliest offset.
    let mut req = DeleteRecordsRequest::default();
    let mut t = kafka_protocol::messages::delete_records_request::DeleteRecordsTopic::default();
    t.name = TopicName(StrBytes::from_static_str("lo"));
    let mut p = kafka_protocol::messages::delete_records_request::DeleteRecordsPartition::default();
    p.partition_index = 0;
    p.offset = 3;
    t.partitions = vec![p];
    req.topics = vec![t];
    req.timeout_ms = 1000;
    let resp = c.call(&req, 2).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
    assert_eq!(resp.topics[0].partitions[0].low_watermark, 3);
    assert_eq!(list(&mut c, "lo", -2, 7).await.1, 3);
    // Beyond the high watermark is OFFSET_OUT_OF_RANGE.
    req.topics[0].partitions[0].offset = 100;
    let resp = c.call(&req, 2).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 1);
    // Fetching below the new start is out of range.
    let id = topic_id(&mut c, "lo").await;
    let resp = c.call(&fetch_request("lo", id, 0, 0, 0, 1), 12).await;
    assert_eq!(resp.responses[0].partitions[0].error_code, 1);
    broker.shutdown().await.unwrap();
}
