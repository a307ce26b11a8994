//! Guards durability across restarts: after a clean shutdown everything is
//! back (topics, ids, data, producer ids never reused); after a SIGKILL of
//! the broker process every acknowledged record is still there.
//!
//! The SIGKILL case re-runs this test binary as a child process (selected by
//! the `STRATA_CHILD_BROKER_DIR` variable) so that the kill is a real one.

use std::io::BufRead;
use std::process::{Command, Stdio};

use crate::common::*;
use kafka_protocol::messages::{InitProducerIdRequest, ProducerId};

const CHILD_ENV: &str = "STRATA_CHILD_BROKER_DIR";

/// Entry point of the child process; does nothing in a normal test run.
#[test]
fn child_broker_entry_point() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let broker = start(std::path::Path::new(&dir), &[]).await;
        println!("LISTENING {}", broker.local_addr());
        // Park until killed.
        std::future::pending::<()>().await;
    });
}

async fn init_producer_id(c: &mut Client) -> i64 {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = None;
    req.transaction_timeout_ms = 60_000;
    req.producer_id = ProducerId(-1);
    req.producer_epoch = -1;
    let resp = c.call(&req, 4).await;
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.producer_epoch, 0);
    resp.producer_id.0
}

#[tokio::test]
async fn sigkill_keeps_acknowledged_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "restart::child_broker_entry_point",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let addr = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        loop {
            let line = lines.next().expect("child printed its address").unwrap();
            // libtest prints "test <name> ... " before our output on the same line.
            if let Some((_, a)) = line.split_once("LISTENING ") {
                return a.trim().parse::<std::net::SocketAddr>().unwrap();
            }
        }
    })
    .await
    .unwrap();
    let mut c = Client::connect(addr).await;
    create_topic(&mut c, "durable").await;
    let mut acked = Vec::new();
    for i in 0..20 {
        let (code, base) = produce(
            &mut c,
            "durable",
            0,
            batch(5, &format!("r{i}"), 1_000, false),
        )
        .await;
        assert_eq!(code, 0);
        acked.push(base);
    }
    let pid_before = init_producer_id(&mut c).await;
    child.kill().unwrap(); // SIGKILL: no shutdown, no flush, no markers
    child.wait().unwrap();

    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let id = topic_id(&mut c, "durable").await;
    assert!(!id.is_nil(), "topic survived");
    let mut got = Vec::new();
    let mut offset = 0;
    while offset < 100 {
        let resp = c
            .call(&fetch_request("durable", id, 0, offset, 0, 1), 12)
            .await;
        let p = &resp.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        let recs = records_of(&p.records);
        assert!(!recs.is_empty(), "data at offset {offset}");
        offset = recs.last().unwrap().0 + 1;
        got.extend(recs);
    }
    assert_eq!(got.len(), 100);
    assert_eq!(got[99], (99, "r19-4".to_string()));
    assert!(
        init_producer_id(&mut c).await > pid_before,
        "producer ids never reused"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn clean_restart_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "keep", 3, &[]).await, 0);
    produce(&mut c, "keep", 2, batch(4, "x", 1_000, false)).await;
    let id = topic_id(&mut c, "keep").await;
    let p1 = init_producer_id(&mut c).await;
    let p2 = init_producer_id(&mut c).await;
    assert_ne!(p1, p2);
    let cluster = broker.cluster_id().to_string();
    broker.shutdown().await.unwrap();
    let marker = dir.path().join(".kafka_cleanshutdown");
    assert!(marker.exists(), "clean shutdown marker written");
    assert!(dir.path().join("strata-topics.json").exists());

    let broker = start(dir.path(), &[]).await;
    assert_eq!(broker.cluster_id(), cluster);
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(topic_id(&mut c, "keep").await, id);
    let resp = c.call(&fetch_request("keep", id, 2, 0, 0, 1), 12).await;
    assert_eq!(
        records_of(&resp.responses[0].partitions[0].records).len(),
        4
    );
    let p3 = init_producer_id(&mut c).await;
    assert!(p3 > p2, "new ids after restart: {p3} > {p2}");
    broker.shutdown().await.unwrap();
}
