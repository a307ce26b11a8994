//! Guards the broker against hostile or broken input: oversized frames,
//! negative sizes, truncated frames, unknown API keys, unsupported versions
//! and undecodable bodies close that connection only; the broker keeps
//! serving others and stored data is unchanged.

use crate::common::*;
use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};

async fn assert_data_intact(addr: std::net::SocketAddr, id: uuid::Uuid) {
    let mut c = Client::connect(addr).await;
    let resp = c.call(&ApiVersionsRequest::default(), 3).await;
    assert_eq!(resp.error_code, 0, "still serving new connections");
    let resp = c.call(&fetch_request("keep", id, 0, 0, 0, 1), 12).await;
    let got = records_of(&resp.responses[0].partitions[0].records);
    assert_eq!(got, vec![(0, "k-0".to_string()), (1, "k-1".to_string())]);
}

#[tokio::test]
async fn bad_frames_close_only_their_connection() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("socket.request.max.bytes", "4096")]).await;
    let addr = broker.local_addr();
    let mut c = Client::connect(addr).await;
    create_topic(&mut c, "keep").await;
    produce(&mut c, "keep", 0, batch(2, "k", 1_000, false)).await;
    let id = topic_id(&mut c, "keep").await;

    // A frame larger than socket.request.max.bytes: closed before reading it.
    let mut c = Client::connect(addr).await;
    c.send_raw(&(1_000_000i32).to_be_bytes()).await;
    assert!(c.is_closed().await, "oversized frame closes");
    assert_data_intact(addr, id).await;

    // A produce whose frame exceeds the limit (real content).
    let mut c = Client::connect(addr).await;
    let (_, frame) = c.frame(
        &produce_request("keep", 0, batch(500, "too-big", 1_000, false), -1),
        9,
    );
    assert!(frame.len() > 4096);
    c.send_raw(&frame).await;
    assert!(c.is_closed().await);
    assert_data_intact(addr, id).await;

    // Negative size.
    let mut c = Client::connect(addr).await;
    c.send_raw(&(-5i32).to_be_bytes()).await;
    assert!(c.is_closed().await);

    // Unknown API key 999.
    let mut c = Client::connect(addr).await;
    let body = [0x03u8, 0xe7, 0, 0, 0, 0, 0, 1, 0, 0];
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    c.send_raw(&frame).await;
    assert!(c.is_closed().await, "unknown api key closes");

    // A version the broker does not advertise (Metadata v13).
    let mut c = Client::connect(addr).await;
    let (_, frame) = c.frame(&MetadataRequest::default(), 13);
    c.send_raw(&frame).await;
    assert!(c.is_closed().await, "unsupported version closes");

    // A valid header followed by a garbage body.
    let mut c = Client::connect(addr).await;
    let (_, frame) = c.frame(&MetadataRequest::default(), 12);
    let mut garbage = frame[..frame.len().min(16)].to_vec();
    garbage.extend_from_slice(&[0xff; 40]);
    let size = (garbage.len() - 4) as i32;
    garbage[..4].copy_from_slice(&size.to_be_bytes());
    c.send_raw(&garbage).await;
    assert!(c.is_closed().await, "undecodable body closes");

    // A frame too short for a header.
    let mut c = Client::connect(addr).await;
    c.send_raw(&[0, 0, 0, 2, 0, 18]).await;
    assert!(c.is_closed().await);

    // Truncated: half a frame, then the client goes away.
    let mut c = Client::connect(addr).await;
    let (_, frame) = c.frame(
        &produce_request("keep", 0, batch(5, "half", 1_000, false), -1),
        9,
    );
    c.send_raw(&frame[..frame.len() / 2]).await;
    drop(c);

    // Pure garbage.
    let mut c = Client::connect(addr).await;
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(c.is_closed().await);

    assert_data_intact(addr, id).await;
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn connection_limit_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("max.connections", "1")]).await;
    let addr = broker.local_addr();
    let mut first = Client::connect(addr).await;
    assert_eq!(
        first
            .call(&ApiVersionsRequest::default(), 3)
            .await
            .error_code,
        0
    );
    // The second connection is accepted by the kernel but not served while
    // the first one is open.
    let mut second = Client::connect(addr).await;
    let (_, frame) = second.frame(&ApiVersionsRequest::default(), 3);
    second.send_raw(&frame).await;
    let pending =
        tokio::time::timeout(std::time::Duration::from_millis(300), second.read_frame()).await;
    assert!(pending.is_err(), "not served while at the limit");
    drop(first);
    let resp = second.read_frame().await.expect("served once a slot frees");
    let (_, resp) = Client::decode::<ApiVersionsRequest>(resp, 3);
    assert_eq!(resp.error_code, 0);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_does_not_wait_for_a_peer_that_stopped_reading() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "big").await;
    let value = "v".repeat(1000);
    produce(&mut c, "big", 0, batch(200, &value, 1_000, false)).await;
    let id = topic_id(&mut c, "big").await;
    // Pipeline far more fetch answers than socket buffers hold, never read them.
    let mut all = Vec::new();
    for _ in 0..400 {
        let (_, frame) = c.frame(&fetch_request("big", id, 0, 0, 0, 1), 12);
        all.extend_from_slice(&frame);
    }
    c.send_raw(&all).await;
    // Wait until the broker is stuck writing: enough answers went through sendfile.
    let deadline = std::time::Instant::now() + DEADLINE;
    while broker.stats().sendfile_calls < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "broker never started answering"
        );
        tokio::task::yield_now().await;
    }
    tokio::time::timeout(DEADLINE, broker.shutdown())
        .await
        .expect("shutdown finishes despite the stuck peer")
        .unwrap();
    drop(c);
}
