//! Guards the broker against disk-full and I/O errors at run time, injected
//! through the log engine's file-system seam: a produce whose write fails
//! with ENOSPC or EIO gets KAFKA_STORAGE_ERROR, the log directory goes
//! offline as in Kafka (its partitions answer KAFKA_STORAGE_ERROR to
//! produce and fetch), a partition on the other directory keeps serving,
//! shutdown succeeds, and after a restart on the plain file system every
//! acknowledged record is there. (`tests/clients/test_offline_dir.py` does
//! the same with real clients and a full tmpfs.)

use std::path::Path;

use crate::common::*;
use kafka_protocol::messages::FetchResponse;
use strata_log::fs::{Fault, FaultFs};

const KAFKA_STORAGE_ERROR: i16 = 56;

async fn fetch(c: &mut Client, topic: &str, id: uuid::Uuid) -> (i16, Vec<(i64, String)>) {
    let resp: FetchResponse = c.call(&fetch_request(topic, id, 0, 0, 0, 0), 12).await;
    let p = &resp.responses[0].partitions[0];
    (p.error_code, records_of(&p.records))
}

fn values(records: &[(i64, String)]) -> Vec<&str> {
    records.iter().map(|(_, v)| v.as_str()).collect()
}

async fn a_failing_dir_goes_offline_and_the_other_keeps_serving(fault: Fault) {
    let root = tempfile::tempdir().unwrap();
    let (d1, d2) = (root.path().join("d1"), root.path().join("d2"));
    let dirs = format!("{},{}", d1.display(), d2.display());
    let extra = [("log.dirs", dirs.as_str())];
    let faults = FaultFs::new();

    let broker = start_on(root.path(), &extra, faults.shared()).await;
    let mut c = Client::connect(broker.local_addr()).await;
    // "healthy" lands in d1, "doomed" in d2 (fewest partitions, first dir on ties).
    assert_eq!(create_topic_with(&mut c, "healthy", 1, &[]).await, 0);
    assert_eq!(create_topic_with(&mut c, "doomed", 1, &[]).await, 0);
    assert!(d1.join("healthy-0").is_dir() && d2.join("doomed-0").is_dir());
    let (healthy_id, doomed_id) = (
        topic_id(&mut c, "healthy").await,
        topic_id(&mut c, "doomed").await,
    );
    assert_eq!(
        produce(&mut c, "doomed", 0, batch(3, "d", 1_000, false))
            .await
            .0,
        0
    );
    assert_eq!(
        produce(&mut c, "healthy", 0, batch(2, "h", 1_000, false))
            .await
            .0,
        0
    );

    // From now on every change to a file in d2 fails: a full or broken disk.
    let bad = d2.clone();
    faults.fail_all(fault, move |op, p: &Path| {
        op.mutates() && p.starts_with(&bad)
    });
    assert_eq!(
        produce(&mut c, "doomed", 0, batch(1, "lost", 1_000, false))
            .await
            .0,
        KAFKA_STORAGE_ERROR
    );
    assert!(!faults.injected().is_empty(), "the fault was hit");
    // The dir is offline: its partition refuses produce and fetch...
    assert_eq!(
        produce(&mut c, "doomed", 0, batch(1, "again", 1_000, false))
            .await
            .0,
        KAFKA_STORAGE_ERROR
    );
    assert_eq!(
        fetch(&mut c, "doomed", doomed_id).await.0,
        KAFKA_STORAGE_ERROR
    );
    // ...while the other dir keeps serving produce and fetch.
    assert_eq!(
        produce(&mut c, "healthy", 0, batch(2, "h2", 1_000, false))
            .await
            .0,
        0
    );
    let (code, recs) = fetch(&mut c, "healthy", healthy_id).await;
    assert_eq!(code, 0);
    assert_eq!(values(&recs), ["h-0", "h-1", "h2-0", "h2-1"]);
    drop(c);
    broker.shutdown().await.unwrap();

    // Restart on the plain file system (space freed): everything
    // acknowledged is there, and both dirs serve again.
    let broker = start(root.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let (code, recs) = fetch(&mut c, "doomed", doomed_id).await;
    assert_eq!(code, 0);
    assert_eq!(values(&recs), ["d-0", "d-1", "d-2"]);
    let (code, recs) = fetch(&mut c, "healthy", healthy_id).await;
    assert_eq!(code, 0);
    assert_eq!(values(&recs), ["h-0", "h-1", "h2-0", "h2-1"]);
    assert_eq!(
        produce(&mut c, "doomed", 0, batch(1, "after", 1_000, false))
            .await
            .0,
        0
    );
    drop(c);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn enospc_takes_one_dir_offline_and_loses_nothing() {
    a_failing_dir_goes_offline_and_the_other_keeps_serving(Fault::Enospc).await;
}

#[tokio::test]
async fn eio_takes_one_dir_offline_and_loses_nothing() {
    a_failing_dir_goes_offline_and_the_other_keeps_serving(Fault::Eio).await;
}

#[tokio::test]
async fn a_short_write_takes_one_dir_offline_and_loses_nothing() {
    a_failing_dir_goes_offline_and_the_other_keeps_serving(Fault::ShortWrite).await;
}

/// A broker on a [`FaultFs`] with one-partition topics
/// `strata.durable.append=true`, and a client connected to it.
async fn durable_broker(
    topics: &[&str],
) -> (
    tempfile::TempDir,
    std::sync::Arc<FaultFs>,
    strata_broker::BrokerHandle,
    Client,
) {
    let root = tempfile::tempdir().unwrap();
    let faults = FaultFs::new();
    let broker = start_on(root.path(), &[], faults.shared()).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let durable = [("strata.durable.append", "true")];
    for topic in topics {
        assert_eq!(create_topic_with(&mut c, topic, 1, &durable).await, 0);
    }
    (root, faults, broker, c)
}

/// Send `n` durable Produce requests back to back on one connection (all in
/// flight at once) and read the `n` answers: (correlation id, error code,
/// base offset) in the order they came.
async fn pipelined_produces(c: &mut Client, topic: &str, n: usize) -> Vec<(i32, i16, i64)> {
    let mut sent = Vec::new();
    for i in 0..n {
        let req = produce_request(topic, 0, batch(2, &format!("p{i}"), 1_000, false), 1);
        let (id, frame) = c.frame(&req, 9);
        c.send_raw(&frame).await;
        sent.push(id);
    }
    let mut got = Vec::new();
    for _ in 0..n {
        let frame = c.read_frame().await.expect("an answer per request");
        let (id, resp) = Client::decode::<kafka_protocol::messages::ProduceRequest>(frame, 9);
        let p = &resp.responses[0].partition_responses[0];
        got.push((id, p.error_code, p.base_offset));
    }
    let order: Vec<i32> = got.iter().map(|g| g.0).collect();
    assert_eq!(order, sent, "answers in request order");
    got
}

/// `strata.durable.append`: a Produce answer says "stored" only once its
/// records are fsynced. The answer is completed after the connection has
/// moved on to the next request (requests in flight share fsyncs), so the
/// fsync's outcome must still reach it: with every fsync failing, no
/// request in flight may be acknowledged, and without faults every one is,
/// in request order, at consecutive offsets.
#[tokio::test]
async fn durable_produce_is_answered_only_after_its_fsync() {
    let (_root, faults, broker, mut c) = durable_broker(&["kept", "unsynced"]).await;

    let got = pipelined_produces(&mut c, "kept", 8).await;
    for (i, (_, code, base)) in got.iter().enumerate() {
        assert_eq!((*code, *base), (0, 2 * i as i64), "request {i}: {got:?}");
    }

    // One acknowledged produce first, so that what creating the partition's files syncs is done;
    // then every fsync of the second topic's files fails.
    let first = pipelined_produces(&mut c, "unsynced", 1).await;
    assert_eq!((first[0].1, first[0].2), (0, 0), "{first:?}");
    faults.fail_all(Fault::Eio, |op, p: &Path| {
        op == strata_log::fs::FsOp::Sync && p.to_string_lossy().contains("unsynced-0")
    });
    let got = pipelined_produces(&mut c, "unsynced", 8).await;
    assert!(!faults.injected().is_empty(), "the fsync was attempted");
    for (i, (_, code, _)) in got.iter().enumerate() {
        assert_eq!(
            *code, KAFKA_STORAGE_ERROR,
            "request {i} acknowledged without fsync: {got:?}"
        );
    }
    drop(c);
    broker.shutdown().await.unwrap();
}

/// Durable Produce requests in flight on one connection share fsyncs: the
/// connection appends the next request while the previous one's fsync runs
/// (its answer waits for it, in order), so one fsync covers the requests
/// that arrived meanwhile. With a slow disk (every fsync 100 ms), 10
/// pipelined requests take a handful of fsyncs of the partition's log, not
/// one each — and every answer is still an acknowledged, consecutive
/// offset.
#[tokio::test]
async fn durable_produces_in_flight_share_fsyncs() {
    let (_root, faults, broker, mut c) = durable_broker(&["shared"]).await;
    // The partition's files exist and were synced once.
    pipelined_produces(&mut c, "shared", 1).await;
    let before = log_syncs(&faults, "shared-0");
    faults.set_sync_delay(std::time::Duration::from_millis(100));
    let n = 10;
    let got = pipelined_produces(&mut c, "shared", n).await;
    for (i, (_, code, base)) in got.iter().enumerate() {
        assert_eq!(
            (*code, *base),
            (0, 2 + 2 * i as i64),
            "request {i}: {got:?}"
        );
    }
    let syncs = log_syncs(&faults, "shared-0") - before;
    assert!(
        syncs <= n / 2,
        "{syncs} fsyncs for {n} requests in flight: each request waited for its own"
    );
    faults.set_sync_delay(std::time::Duration::ZERO);
    drop(c);
    broker.shutdown().await.unwrap();
}

/// On a durable topic the high watermark never passes what is fsynced, even
/// when requests on two connections interleave: an acks=0 produce fsyncs
/// inside its append, and while that fsync runs another connection's acks=1
/// produce appends behind it and waits for its own. When the first fsync
/// returns, the log end holds the second request's unsynced records; the
/// high watermark must stop before them until their fsync is done, or a
/// consumer could read what a power loss takes back.
#[tokio::test]
async fn the_high_watermark_stops_at_what_is_fsynced() {
    let (_root, faults, broker, mut admin) = durable_broker(&["hw"]).await;
    let id = topic_id(&mut admin, "hw").await;
    let first = pipelined_produces(&mut admin, "hw", 1).await;
    assert_eq!((first[0].1, first[0].2), (0, 0), "{first:?}");
    assert_eq!(hw_and_last(&mut admin, id).await, (2, Some(1)));
    let before = log_syncs(&faults, "hw-0");
    faults.set_sync_delay(std::time::Duration::from_millis(1500));

    // acks=0: offsets 2..4, fsynced inside the append; no answer.
    let mut quiet = Client::connect(broker.local_addr()).await;
    let req = produce_request("hw", 0, batch(2, "quiet", 1_000, false), 0);
    let (_, frame) = quiet.frame(&req, 9);
    quiet.send_raw(&frame).await;
    wait_for_hw_log_syncs(&faults, before + 1).await;
    // acks=1 while that fsync runs: offsets 4..6, appended at once, its
    // fsync queued behind the first.
    let mut acked = Client::connect(broker.local_addr()).await;
    let req = produce_request("hw", 0, batch(2, "acked", 1_000, false), 1);
    let (_, frame) = acked.frame(&req, 9);
    acked.send_raw(&frame).await;
    // The second fsync starts once the first is done. For its first second
    // (of 1.5) offsets 4..6 are on the log but not durable, and every fetch
    // must stop at 4.
    wait_for_hw_log_syncs(&faults, before + 2).await;
    let window = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut looks = 0;
    while std::time::Instant::now() < window {
        assert_eq!(
            hw_and_last(&mut admin, id).await,
            (4, Some(3)),
            "the high watermark passed records whose fsync is still running (look {looks})"
        );
        looks += 1;
    }
    assert!(looks > 0);
    let frame = acked.read_frame().await.expect("the acks=1 answer");
    let (_, resp) = Client::decode::<kafka_protocol::messages::ProduceRequest>(frame, 9);
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 4));
    assert_eq!(hw_and_last(&mut admin, id).await, (6, Some(5)));
    faults.set_sync_delay(std::time::Duration::ZERO);
    drop((admin, quiet, acked));
    broker.shutdown().await.unwrap();
}

/// Partition "hw"-0's high watermark and the last offset a fetch returns.
async fn hw_and_last(c: &mut Client, id: uuid::Uuid) -> (i64, Option<i64>) {
    let resp: FetchResponse = c.call(&fetch_request("hw", id, 0, 0, 0, 0), 12).await;
    let p = &resp.responses[0].partitions[0];
    (p.high_watermark, records_of(&p.records).last().map(|r| r.0))
}

/// How many fsyncs of a partition's `.log` files have started (`dir`: its
/// directory name, `topic-partition`).
fn log_syncs(faults: &FaultFs, dir: &str) -> usize {
    faults
        .ops()
        .iter()
        .filter(|o| {
            o.op == strata_log::fs::FsOp::Sync
                && o.path.to_string_lossy().contains(dir)
                && o.path.extension().is_some_and(|e| e == "log")
        })
        .count()
}

async fn wait_for_hw_log_syncs(faults: &FaultFs, n: usize) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while log_syncs(faults, "hw-0") < n {
        assert!(
            std::time::Instant::now() < give_up,
            "fsync #{n} never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
