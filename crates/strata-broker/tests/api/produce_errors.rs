//! Guards the per-partition Produce errors: each failure class yields
//! Kafka's error code for that partition only, the connection keeps
//! working, and nothing of a rejected batch is stored.

use crate::common::*;
use kafka_protocol::messages::produce_request::PartitionProduceData;
use kafka_protocol::messages::ProduceResponse;
use strata_log::batch::BatchBuilder;
use strata_log::batch::Compression;
use strata_log::{Offset, Timestamp};

async fn produce_code(
    c: &mut Client,
    topic: &str,
    partition: i32,
    records: Vec<u8>,
    acks: i16,
    version: i16,
) -> i16 {
    let resp: ProduceResponse = c
        .call(&produce_request(topic, partition, records, acks), version)
        .await;
    let p = &resp.responses[0].partition_responses[0];
    if p.error_code != 0 {
        assert_eq!(p.base_offset, -1);
    }
    p.error_code
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn each_failure_maps_to_kafkas_code() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "plain", 1, &[]).await, 0);
    assert_eq!(
        create_topic_with(&mut c, "small", 1, &[("max.message.bytes", "200")]).await,
        0
    );
    assert_eq!(
        create_topic_with(&mut c, "compacted", 1, &[("cleanup.policy", "compact")]).await,
        0
    );
    assert_eq!(
        create_topic_with(
            &mut c,
            "recent",
            1,
            &[("message.timestamp.before.max.ms", "3600000")]
        )
        .await,
        0
    );
    assert_eq!(
        create_topic_with(&mut c, "tinyseg", 1, &[("segment.bytes", "300")]).await,
        0
    );
    assert_eq!(
        create_topic_with(&mut c, "isr2", 1, &[("min.insync.replicas", "2")]).await,
        0
    );
    let now = now_ms();

    assert_eq!(
        produce_code(&mut c, "plain", 0, batch(2, "ok", now, false), -1, 9).await,
        0
    );

    // UNKNOWN_TOPIC_OR_PARTITION: no such topic / partition (no auto-create on produce).
    assert_eq!(
        produce_code(&mut c, "nosuch", 0, batch(1, "x", now, false), -1, 9).await,
        3
    );
    assert_eq!(
        produce_code(&mut c, "plain", 4, batch(1, "x", now, false), -1, 9).await,
        3
    );

    // CORRUPT_MESSAGE: a flipped bit under the CRC.
    let mut corrupt = batch(2, "x", now, false);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x40;
    assert_eq!(produce_code(&mut c, "plain", 0, corrupt, -1, 9).await, 2);

    // MESSAGE_TOO_LARGE: batch above max.message.bytes.
    let big = batch(20, "a-long-enough-value", now, false);
    assert!(big.len() > 200);
    assert_eq!(produce_code(&mut c, "small", 0, big, -1, 9).await, 10);

    // INVALID_RECORD: keyless record on a compacted topic; two batches in one v3+ produce.
    assert_eq!(
        produce_code(&mut c, "compacted", 0, batch(1, "x", now, false), -1, 9).await,
        87
    );
    assert_eq!(
        produce_code(&mut c, "compacted", 0, batch(1, "x", now, true), -1, 9).await,
        0
    );
    let mut two = batch(1, "x", now, false);
    two.extend(batch(1, "y", now, false));
    assert_eq!(produce_code(&mut c, "plain", 0, two, -1, 9).await, 87);

    // INVALID_TIMESTAMP: older than message.timestamp.before.max.ms.
    assert_eq!(
        produce_code(
            &mut c,
            "recent",
            0,
            batch(1, "old", now - 7_200_000, false),
            -1,
            9
        )
        .await,
        32
    );
    assert_eq!(
        produce_code(&mut c, "recent", 0, batch(1, "new", now, false), -1, 9).await,
        0
    );

    // RECORD_LIST_TOO_LARGE: batch larger than segment.bytes but within max.message.bytes.
    let seg = batch(30, "fits-message-but-not-segment", now, false);
    assert!(seg.len() > 300);
    assert_eq!(produce_code(&mut c, "tinyseg", 0, seg, -1, 9).await, 18);

    // INVALID_TOPIC_EXCEPTION: clients cannot write to internal topics (the
    // group coordinator creates __consumer_offsets when asked for it).
    let fc = {
        let mut r = kafka_protocol::messages::FindCoordinatorRequest::default();
        r.key = kafka_protocol::protocol::StrBytes::from_static_str("g");
        r
    };
    let mut ready = false;
    for _ in 0..200 {
        if c.call(&fc, 3).await.error_code == 0 {
            ready = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(ready, "group coordinator available");
    assert_eq!(
        produce_code(
            &mut c,
            "__consumer_offsets",
            0,
            batch(1, "x", now, true),
            -1,
            9
        )
        .await,
        17
    );

    // INVALID_REQUIRED_ACKS and NOT_ENOUGH_REPLICAS.
    assert_eq!(
        produce_code(&mut c, "plain", 0, batch(1, "x", now, false), 2, 9).await,
        21
    );
    assert_eq!(
        produce_code(&mut c, "isr2", 0, batch(1, "x", now, false), -1, 9).await,
        19
    );
    assert_eq!(
        produce_code(&mut c, "isr2", 0, batch(1, "x", now, false), 1, 9).await,
        0
    );

    // UNSUPPORTED_COMPRESSION_TYPE: zstd below Produce v7.
    let mut z = BatchBuilder::new(Offset(0)).compression(Compression::Zstd);
    z.append(Timestamp(now), None, Some(b"zstd"), &[]);
    assert_eq!(produce_code(&mut c, "plain", 0, z.build(), -1, 6).await, 76);
    assert_eq!(produce_code(&mut c, "plain", 0, z.build(), -1, 9).await, 0);

    // Null records: Kafka reads them as an empty record set, which v3+ rejects.
    let mut req = produce_request("plain", 0, vec![], -1);
    req.topic_data[0].partition_data = vec![{
        let mut pd = PartitionProduceData::default();
        pd.index = 0;
        pd.records = None;
        pd
    }];
    let resp: ProduceResponse = c.call(&req, 9).await;
    assert_ne!(resp.responses[0].partition_responses[0].error_code, 0);

    // Only the accepted batches were stored: 2 + 1 (zstd) records in "plain".
    let id = topic_id(&mut c, "plain").await;
    let resp = c.call(&fetch_request("plain", id, 0, 0, 0, 1), 12).await;
    let values: Vec<String> = records_of(&resp.responses[0].partitions[0].records)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    assert_eq!(values, vec!["ok-0", "ok-1", "zstd"]);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn one_bad_partition_does_not_fail_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "two", 2, &[]).await, 0);
    let mut req = produce_request("two", 0, batch(1, "good", now_ms(), false), -1);
    let mut bad = batch(1, "bad", now_ms(), false);
    bad[30] ^= 1;
    let mut pd = PartitionProduceData::default();
    pd.index = 1;
    pd.records = Some(bad.into());
    req.topic_data[0].partition_data.push(pd);
    let resp: ProduceResponse = c.call(&req, 9).await;
    let parts = &resp.responses[0].partition_responses;
    assert_eq!(
        (parts[0].index, parts[0].error_code, parts[0].base_offset),
        (0, 0, 0)
    );
    assert_eq!((parts[1].index, parts[1].error_code), (1, 2));
    broker.shutdown().await.unwrap();
}
