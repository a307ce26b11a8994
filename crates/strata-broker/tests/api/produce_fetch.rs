//! Guards the data path: produce → fetch round trips at several versions,
//! offsets assigned by the broker, acks=0 getting no response, the long poll
//! woken by a produce, byte limits, OFFSET_OUT_OF_RANGE, and that record
//! data left the broker through sendfile(2).

use std::time::{Duration, Instant};

use crate::common::*;
use kafka_protocol::messages::{FetchRequest, ProduceRequest};

#[tokio::test]
async fn produce_then_fetch_round_trip_uses_sendfile() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "rt").await;
    assert_eq!(
        produce(&mut c, "rt", 0, batch(3, "a", 1_000, false)).await,
        (0, 0)
    );
    assert_eq!(
        produce(&mut c, "rt", 0, batch(2, "b", 2_000, false)).await,
        (0, 3)
    );
    let id = topic_id(&mut c, "rt").await;
    let before = broker.stats();
    for version in [4i16, 7, 11, 12, 13, 16] {
        let resp = c
            .call(&fetch_request("rt", id, 0, 0, 500, 1), version)
            .await;
        assert_eq!(resp.error_code, 0);
        assert_eq!(resp.session_id, 0);
        let p = &resp.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "v{version}");
        assert_eq!(p.high_watermark, 5);
        assert_eq!(p.last_stable_offset, 5);
        let got = records_of(&p.records);
        let expected: Vec<(i64, String)> = vec![
            (0, "a-0".into()),
            (1, "a-1".into()),
            (2, "a-2".into()),
            (3, "b-0".into()),
            (4, "b-1".into()),
        ];
        assert_eq!(got, expected, "v{version}");
        // From the middle of the log: starts at the batch holding offset 4.
        let resp = c
            .call(&fetch_request("rt", id, 0, 4, 500, 1), version)
            .await;
        let got = records_of(&resp.responses[0].partitions[0].records);
        assert_eq!(got.last().unwrap(), &(4, "b-1".to_string()));
    }
    let after = broker.stats();
    assert!(
        after.sendfile_calls > before.sendfile_calls,
        "fetch used sendfile"
    );
    let stored = (batch(3, "a", 1_000, false).len() + batch(2, "b", 2_000, false).len()) as u64;
    assert!(
        after.sendfile_bytes - before.sendfile_bytes >= 6 * stored,
        "every full fetch sent the stored bytes through sendfile"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn fetch_errors_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "lim").await;
    for i in 0..4 {
        produce(&mut c, "lim", 0, batch(10, &format!("b{i}"), 1_000, false)).await;
    }
    let id = topic_id(&mut c, "lim").await;
    // Beyond the log end: OFFSET_OUT_OF_RANGE, answered at once.
    let resp = c.call(&fetch_request("lim", id, 0, 41, 5_000, 1), 12).await;
    assert_eq!(resp.responses[0].partitions[0].error_code, 1);
    // Unknown partition and topic.
    let resp = c.call(&fetch_request("lim", id, 9, 0, 0, 1), 12).await;
    assert_eq!(resp.responses[0].partitions[0].error_code, 3);
    let resp = c.call(&fetch_request("nope", id, 0, 0, 0, 1), 12).await;
    assert_eq!(resp.responses[0].partitions[0].error_code, 3);
    let resp = c
        .call(&fetch_request("", uuid::Uuid::from_u128(5), 0, 0, 0, 1), 13)
        .await;
    assert_eq!(
        resp.responses[0].partitions[0].error_code, 100,
        "UNKNOWN_TOPIC_ID"
    );
    // A tiny partition limit still returns one whole batch.
    let mut req = fetch_request("lim", id, 0, 0, 0, 1);
    req.topics[0].partitions[0].partition_max_bytes = 1;
    let resp = c.call(&req, 12).await;
    let got = records_of(&resp.responses[0].partitions[0].records);
    assert_eq!(got.len(), 10, "exactly the first batch");
    // Fencing by leader epoch (v9+).
    let mut req = fetch_request("lim", id, 0, 0, 0, 1);
    req.topics[0].partitions[0].current_leader_epoch = 5;
    let resp = c.call(&req, 12).await;
    assert_eq!(
        resp.responses[0].partitions[0].error_code, 75,
        "UNKNOWN_LEADER_EPOCH"
    );
    // An incremental fetch in a session the broker never created.
    let mut req = fetch_request("lim", id, 0, 0, 0, 1);
    req.session_id = 77;
    req.session_epoch = 3;
    let resp = c.call(&req, 12).await;
    assert_eq!(resp.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn long_poll_is_woken_by_produce() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let addr = broker.local_addr();
    let mut c = Client::connect(addr).await;
    create_topic(&mut c, "lp").await;
    let id = topic_id(&mut c, "lp").await;
    // Wait up to 30 s for data that is not there yet.
    let (_, frame) = c.frame(&fetch_request("lp", id, 0, 0, 30_000, 1), 12);
    let started = Instant::now();
    c.send_raw(&frame).await;
    let mut producer = Client::connect(addr).await;
    produce(&mut producer, "lp", 0, batch(1, "wake", 1_000, false)).await;
    let resp = c.read_frame().await.expect("fetch answered");
    let (_, resp) = Client::decode::<FetchRequest>(resp, 12);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "woken, not timed out"
    );
    let got = records_of(&resp.responses[0].partitions[0].records);
    assert_eq!(got, vec![(0, "wake-0".to_string())]);
    // A short max wait with nothing new expires with an empty answer.
    let resp = c.call(&fetch_request("lp", id, 0, 1, 50, 1), 12).await;
    assert_eq!(resp.responses[0].partitions[0].error_code, 0);
    assert!(records_of(&resp.responses[0].partitions[0].records).is_empty());
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn acks_zero_gets_no_response() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "a0").await;
    let (_, frame) = c.frame(&produce_request("a0", 0, batch(2, "z", 1_000, false), 0), 9);
    c.send_raw(&frame).await;
    // The next response on the connection belongs to the next request.
    let (cid, frame) = c.frame(&produce_request("a0", 0, batch(1, "y", 1_000, false), 1), 9);
    c.send_raw(&frame).await;
    let resp = c.read_frame().await.unwrap();
    let (got, resp) = Client::decode::<ProduceRequest>(resp, 9);
    assert_eq!(got, cid);
    assert_eq!(resp.responses[0].partition_responses[0].base_offset, 2);
    // acks=0 with an error closes the connection.
    let (_, frame) = c.frame(
        &produce_request("missing", 0, batch(1, "x", 1_000, false), 0),
        9,
    );
    c.send_raw(&frame).await;
    assert!(c.is_closed().await);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "pipe").await;
    let mut all = Vec::new();
    let mut ids = Vec::new();
    for i in 0..20 {
        let (cid, frame) = c.frame(
            &produce_request("pipe", 0, batch(1, &format!("p{i}"), 1_000, false), -1),
            9,
        );
        ids.push(cid);
        all.extend_from_slice(&frame);
    }
    c.send_raw(&all).await;
    for (i, cid) in ids.into_iter().enumerate() {
        let (got, resp) = Client::decode::<ProduceRequest>(c.read_frame().await.unwrap(), 9);
        assert_eq!(got, cid);
        assert_eq!(
            resp.responses[0].partition_responses[0].base_offset,
            i as i64
        );
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn response_byte_budget_spans_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "two", 2, &[]).await, 0);
    for p in 0..2 {
        produce(&mut c, "two", p, batch(5, &format!("p{p}a"), 1_000, false)).await;
        produce(&mut c, "two", p, batch(5, &format!("p{p}b"), 1_000, false)).await;
    }
    let id = topic_id(&mut c, "two").await;
    let mut req = fetch_request("two", id, 0, 0, 0, 1);
    let mut second = req.topics[0].partitions[0].clone();
    second.partition = 1;
    req.topics[0].partitions.push(second);
    // A budget smaller than one batch: the first partition still gets one
    // whole batch, the second nothing, and both are listed.
    req.max_bytes = 10;
    let resp = c.call(&req, 12).await;
    let parts = &resp.responses[0].partitions;
    assert_eq!(parts.len(), 2);
    assert_eq!(records_of(&parts[0].records).len(), 5);
    assert!(records_of(&parts[1].records).is_empty());
    assert_eq!(parts[1].high_watermark, 10);
    // A large budget returns everything from both.
    req.max_bytes = 1 << 20;
    let resp = c.call(&req, 12).await;
    let parts = &resp.responses[0].partitions;
    assert_eq!(records_of(&parts[0].records).len(), 10);
    assert_eq!(records_of(&parts[1].records).len(), 10);
    broker.shutdown().await.unwrap();
}
