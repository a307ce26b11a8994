//! Guards the connection's back-pressure: a client that never reads its
//! socket has only a couple of its requests read (it pins no more responses
//! than that) while others are served; `queued.max.request.bytes` stops
//! reading a frame until its bytes fit and resumes when they do; a
//! long-poll Fetch parked in the purgatory holds no `queued.max.requests`
//! slot.

use std::time::{Duration, Instant};

use bytes::BufMut;
use kafka_protocol::messages::{ApiVersionsRequest, FetchRequest};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

use crate::common::*;

/// Requests the broker has read so far, once the count has not moved for
/// `quiet` (bounded by [`DEADLINE`]).
async fn settled_requests(broker: &strata_broker::BrokerHandle, quiet: Duration) -> u64 {
    let deadline = Instant::now() + DEADLINE;
    let mut last = broker.stats().requests;
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = broker.stats().requests;
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            return now;
        }
        assert!(Instant::now() < deadline, "request count never settled");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_has_few_requests_read_and_stalls_no_one() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let addr = broker.local_addr();
    let mut c = Client::connect(addr).await;
    create_topic(&mut c, "big").await;
    let value = "v".repeat(900);
    // 16 batches of 500 records of ~900 B: about 7 MiB.
    for i in 0..16 {
        let (err, _) = produce(
            &mut c,
            "big",
            0,
            batch(500, &format!("{i}{value}"), 1_000, false),
        )
        .await;
        assert_eq!(err, 0);
    }
    let id = topic_id(&mut c, "big").await;
    let mut req = fetch_request("big", id, 0, 0, 0, 1);
    req.topics[0].partitions[0].partition_max_bytes = 16 << 20;
    req.max_bytes = 16 << 20;

    // The slow client: a small receive buffer, 30 pipelined whole-log
    // fetches, and never a read.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    let mut slow = socket.connect(addr).await.unwrap();
    let mut frames = bytes::BytesMut::new();
    let mut framer = Client::connect(addr).await; // only encodes
    for _ in 0..30 {
        frames.put_slice(&framer.frame(&req, 12).1);
    }
    let before = broker.stats().requests;
    slow.write_all(&frames).await.unwrap();
    let read = settled_requests(&broker, Duration::from_millis(500)).await - before;
    // One answer stuck in the socket, the next waiting for the writer's
    // backlog; the other 28 stay unread in TCP.
    assert!(
        (1..=3).contains(&read),
        "{read} requests of a client that never reads were read"
    );

    // Everyone else is served meanwhile, data intact.
    let resp = c.call(&fetch_request("big", id, 0, 7_999, 0, 1), 12).await;
    let got = records_of(&resp.responses[0].partitions[0].records);
    assert_eq!(got.last().map(|r| r.0), Some(7_999));
    let (err, offset) = produce(&mut c, "big", 0, batch(1, "after", 1_000, false)).await;
    assert_eq!((err, offset), (0, 8_000));
    drop(slow);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_max_request_bytes_stops_reading_until_the_bytes_fit() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("queued.max.request.bytes", "1000")]).await;
    let addr = broker.local_addr();
    // A frame announcing 900 bytes, half sent: its 900 bytes are taken.
    let mut partial = Client::connect(addr).await;
    partial.send_raw(&900i32.to_be_bytes()).await;
    partial.send_raw(&[0u8; 450]).await;
    // A small request still fits next to it; its round trip also gives the
    // broker time to read the partial frame's prefix.
    let mut small = Client::connect(addr).await;
    assert_eq!(
        small
            .call(&ApiVersionsRequest::default(), 3)
            .await
            .error_code,
        0
    );
    // A ~200-byte request does not fit: it is not read.
    let mut req = ApiVersionsRequest::default();
    req.client_software_name = StrBytes::from_string("x".repeat(180));
    req.client_software_version = StrBytes::from_static_str("1");
    let mut big = Client::connect(addr).await;
    let (_, frame) = big.frame(&req, 3);
    assert!(frame.len() > 150);
    big.send_raw(&frame).await;
    let waiting = tokio::time::timeout(Duration::from_millis(500), big.read_frame()).await;
    assert!(waiting.is_err(), "read while the byte budget was taken");
    // The partial frame completes (and, not being a request, closes its
    // connection), which gives its bytes back: the waiting one is served.
    partial.send_raw(&[0u8; 450]).await;
    assert!(partial.is_closed().await);
    let resp = big.read_frame().await.expect("served once the bytes fit");
    assert_eq!(
        Client::decode::<ApiVersionsRequest>(resp, 3).1.error_code,
        0
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_long_poll_holds_no_request_slot() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("queued.max.requests", "1")]).await;
    let addr = broker.local_addr();
    let mut c = Client::connect(addr).await;
    create_topic(&mut c, "lp").await;
    let id = topic_id(&mut c, "lp").await;
    // Two consumers wait up to 30 s for data that is not there yet.
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let mut w = Client::connect(addr).await;
        let (_, frame) = w.frame(&fetch_request("lp", id, 0, 0, 30_000, 1), 12);
        w.send_raw(&frame).await;
        waiting.push(w);
    }
    // With one slot, a produce is still read and answered at once.
    let started = Instant::now();
    let mut producer = Client::connect(addr).await;
    let call = produce(&mut producer, "lp", 0, batch(1, "wake", 1_000, false));
    let (err, offset) = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("produce not held up by parked fetches");
    assert_eq!((err, offset), (0, 0));
    for mut w in waiting {
        let (_, resp) = Client::decode::<FetchRequest>(w.read_frame().await.unwrap(), 12);
        let got = records_of(&resp.responses[0].partitions[0].records);
        assert_eq!(got, vec![(0, "wake-0".to_string())]);
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_queue_bounds_are_described_and_not_dynamic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("queued.max.requests", "7")]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let resp = crate::broker_configs::describe(&mut c, 4, "1").await;
    let value = |name| crate::broker_configs::value(&resp, name).0;
    assert_eq!(value("queued.max.requests").as_deref(), Some("7"));
    assert_eq!(value("queued.max.request.bytes").as_deref(), Some("-1"));
    let (code, _) = incremental_alter(
        &mut c,
        4,
        "1",
        &[("queued.max.requests", 0, Some("9"))],
        false,
    )
    .await;
    assert_eq!(code, 42, "INVALID_REQUEST: not dynamic, as in Kafka");
    broker.shutdown().await.unwrap();
}
