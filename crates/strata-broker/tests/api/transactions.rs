//! Guards the transaction coordinator's wire contract (issue 16) with
//! Kafka's error codes: InitProducerId epochs and fencing, AddPartitionsToTxn
//! checks, KIP-890 verification of transactional Produce, EndTxn and the
//! markers it leads to, DescribeTransactions / ListTransactions /
//! DescribeProducers, an admin abort through WriteTxnMarkers, the
//! coordinator's timeout abort, and the state surviving a restart.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, DescribeProducersRequest, DescribeTransactionsRequest,
    EndTxnRequest, FindCoordinatorRequest, InitProducerIdRequest, ListTransactionsRequest,
    ProducerId, TopicName, TransactionalId, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;
use strata_log::batch::BatchBuilder;
use strata_log::{Offset, ProducerEpoch, Timestamp};

use crate::common::*;

const PRODUCER_FENCED: i16 = 90;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const TRANSACTION_ABORTABLE: i16 = 120;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

fn id(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_string()))
}

async fn init(c: &mut Client, txn: &str, timeout_ms: i32) -> (i16, i64, i16) {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = Some(id(txn));
    req.transaction_timeout_ms = timeout_ms;
    req.producer_id = ProducerId(-1);
    req.producer_epoch = -1;
    let resp = c.call(&req, 4).await;
    (resp.error_code, resp.producer_id.0, resp.producer_epoch)
}

/// InitProducerId until it stops answering CONCURRENT_TRANSACTIONS.
async fn init_settled(c: &mut Client, txn: &str, timeout_ms: i32) -> (i64, i16) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let (e, pid, epoch) = init(c, txn, timeout_ms).await;
        if e != CONCURRENT_TRANSACTIONS {
            assert_eq!(e, 0, "InitProducerId");
            return (pid, epoch);
        }
        assert!(tokio::time::Instant::now() < deadline, "still concurrent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn add(c: &mut Client, txn: &str, pid: i64, epoch: i16, parts: &[(&str, i32)]) -> Vec<i16> {
    let mut req = AddPartitionsToTxnRequest::default();
    req.v3_and_below_transactional_id = id(txn);
    req.v3_and_below_producer_id = ProducerId(pid);
    req.v3_and_below_producer_epoch = epoch;
    for (t, p) in parts {
        match req
            .v3_and_below_topics
            .iter_mut()
            .find(|x| x.name.0.as_str() == *t)
        {
            Some(x) => x.partitions.push(*p),
            None => {
                let mut x = AddPartitionsToTxnTopic::default();
                x.name = TopicName(StrBytes::from_string(t.to_string()));
                x.partitions.push(*p);
                req.v3_and_below_topics.push(x);
            }
        }
    }
    let resp = c.call(&req, 3).await;
    let mut out = Vec::new();
    for (t, p) in parts {
        let code = resp
            .results_by_topic_v3_and_below
            .iter()
            .find(|x| x.name.0.as_str() == *t)
            .and_then(|x| {
                x.results_by_partition
                    .iter()
                    .find(|r| r.partition_index == *p)
            })
            .expect("a result per partition")
            .partition_error_code;
        out.push(code);
    }
    out
}

async fn end(c: &mut Client, txn: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let mut req = EndTxnRequest::default();
    req.transactional_id = id(txn);
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.committed = commit;
    c.call(&req, 3).await.error_code
}

fn txn_batch(pid: i64, epoch: i16, seq: i32, value: &str) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0))
        .producer(strata_log::ProducerId(pid), ProducerEpoch(epoch), seq)
        .transactional(true);
    b.append(
        // Now: a record far in the past would make the marker roll the segment.
        Timestamp(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64,
        ),
        None,
        Some(value.as_bytes()),
        &[],
    );
    b.build()
}

async fn produce_txn(
    c: &mut Client,
    txn: Option<&str>,
    topic: &str,
    partition: i32,
    batch: Vec<u8>,
    version: i16,
) -> i16 {
    let mut req = produce_request(topic, partition, batch, -1);
    req.transactional_id = txn.map(id);
    let resp = c.call(&req, version).await;
    resp.responses[0].partition_responses[0].error_code
}

async fn describe(c: &mut Client, txn: &str) -> (i16, String, i16, Vec<(String, i32)>) {
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![id(txn)];
    let resp = c.call(&req, 0).await;
    let s = &resp.transaction_states[0];
    let parts = s
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
        .collect();
    (
        s.error_code,
        s.transaction_state.to_string(),
        s.producer_epoch,
        parts,
    )
}

async fn wait_state(c: &mut Client, txn: &str, state: &str) -> i16 {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let (e, s, epoch, _) = describe(c, txn).await;
        assert_eq!(e, 0);
        if s == state {
            return epoch;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{txn} stayed {s}, expected {state}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (producer id, epoch, coordinator epoch, open transaction's first offset).
async fn producers(c: &mut Client, topic: &str, partition: i32) -> Vec<(i64, i32, i32, i64)> {
    let mut req = DescribeProducersRequest::default();
    let mut t = TopicRequest::default();
    t.name = TopicName(StrBytes::from_string(topic.to_string()));
    t.partition_indexes = vec![partition];
    req.topics = vec![t];
    let resp = c.call(&req, 0).await;
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.active_producers
        .iter()
        .map(|s| {
            (
                s.producer_id.0,
                s.producer_epoch,
                s.coordinator_epoch,
                s.current_txn_start_offset,
            )
        })
        .collect()
}

#[tokio::test]
async fn transactions_over_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(
        dir.path(),
        &[
            ("transaction.state.log.num.partitions", "3"),
            ("transaction.max.timeout.ms", "60000"),
        ],
    )
    .await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "t", 2, &[]).await, 0);

    // FindCoordinator for a transactional id creates __transaction_state.
    let mut fc = FindCoordinatorRequest::default();
    fc.key = StrBytes::from_static_str("tx");
    fc.key_type = 1;
    let found = c.call(&fc, 3).await;
    assert_eq!(found.error_code, 0);
    assert_eq!(found.port, i32::from(broker.local_addr().port()));

    // InitProducerId: epoch 0, then 1 (fencing 0); bad inputs.
    assert_eq!(init(&mut c, "tx", 0).await.0, INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(
        init(&mut c, "tx", 60_001).await.0,
        INVALID_TRANSACTION_TIMEOUT
    );
    let (e, pid, epoch) = init(&mut c, "tx", 60_000).await;
    assert_eq!((e, epoch), (0, 0));
    let (e, pid2, epoch) = init(&mut c, "tx", 60_000).await;
    assert_eq!((e, pid2, epoch), (0, pid, 1));

    // AddPartitionsToTxn: fenced epoch, unknown id, internal topic, success.
    assert_eq!(
        add(&mut c, "tx", pid, 0, &[("t", 0)]).await,
        [PRODUCER_FENCED]
    );
    assert_eq!(
        add(&mut c, "nope", pid, 1, &[("t", 0)]).await,
        [INVALID_PRODUCER_ID_MAPPING]
    );
    assert_eq!(
        add(
            &mut c,
            "tx",
            pid,
            1,
            &[("t", 0), ("__transaction_state", 0)]
        )
        .await,
        [OPERATION_NOT_ATTEMPTED, TOPIC_AUTHORIZATION_FAILED]
    );
    assert_eq!(add(&mut c, "tx", pid, 1, &[("t", 0)]).await, [0]);
    let (e, state, _, parts) = describe(&mut c, "tx").await;
    assert_eq!((e, state.as_str()), (0, "Ongoing"));
    assert_eq!(parts, vec![("t".to_string(), 0)]);

    // Produce: a transactional batch on the added partition is written; on
    // a partition not added it is refused (KIP-890), and without a
    // transactional id it is refused too.
    assert_eq!(
        produce_txn(&mut c, Some("tx"), "t", 0, txn_batch(pid, 1, 0, "a"), 9).await,
        0
    );
    assert_eq!(
        produce_txn(&mut c, Some("tx"), "t", 1, txn_batch(pid, 1, 0, "b"), 9).await,
        INVALID_TXN_STATE
    );
    assert_eq!(
        produce_txn(&mut c, Some("tx"), "t", 1, txn_batch(pid, 1, 0, "b"), 11).await,
        TRANSACTION_ABORTABLE
    );
    assert_eq!(
        produce_txn(&mut c, None, "t", 1, txn_batch(pid, 1, 0, "b"), 9).await,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    assert_eq!(producers(&mut c, "t", 0).await, vec![(pid, 1, -1, 0)]);
    assert!(producers(&mut c, "t", 1).await.is_empty());

    // ListTransactions with filters.
    let mut lt = ListTransactionsRequest::default();
    lt.state_filters = vec![
        StrBytes::from_static_str("Ongoing"),
        StrBytes::from_static_str("Bogus"),
    ];
    let listed = c.call(&lt, 1).await;
    assert_eq!(listed.error_code, 0);
    assert_eq!(
        listed.unknown_state_filters,
        vec![StrBytes::from_static_str("Bogus")]
    );
    assert_eq!(listed.transaction_states.len(), 1);
    assert_eq!(listed.transaction_states[0].producer_id.0, pid);

    // EndTxn: wrong epoch, then commit; the marker completes the partition's
    // transaction and the coordinator reaches CompleteCommit.
    assert_eq!(end(&mut c, "tx", pid, 0, true).await, PRODUCER_FENCED);
    assert_eq!(end(&mut c, "tx", pid, 1, true).await, 0);
    wait_state(&mut c, "tx", "CompleteCommit").await;
    assert_eq!(producers(&mut c, "t", 0).await, vec![(pid, 1, 0, -1)]);
    assert_eq!(end(&mut c, "tx", pid, 1, true).await, 0, "a retried commit");
    assert_eq!(end(&mut c, "tx", pid, 1, false).await, INVALID_TXN_STATE);
    // The fenced epoch's data is refused on the partition now.
    assert_eq!(
        produce_txn(&mut c, Some("tx"), "t", 0, txn_batch(pid, 0, 1, "z"), 9).await,
        INVALID_PRODUCER_EPOCH
    );

    // The commit marker follows the data in the partition.
    let records = fetch_all(&mut c, "t", 0).await;
    assert_eq!(records, 2, "the data batch and its COMMIT marker");

    // Admin abort (kafka-transactions.sh abort): WriteTxnMarkers closes an
    // open transaction on the partition without the coordinator.
    assert_eq!(add(&mut c, "tx", pid, 1, &[("t", 1)]).await, [0]);
    assert_eq!(
        produce_txn(&mut c, Some("tx"), "t", 1, txn_batch(pid, 1, 1, "c"), 9).await,
        0
    );
    assert_eq!(producers(&mut c, "t", 1).await, vec![(pid, 1, -1, 0)]);
    let mut wm = WriteTxnMarkersRequest::default();
    let mut m = WritableTxnMarker::default();
    m.producer_id = ProducerId(pid);
    m.producer_epoch = 1;
    m.transaction_result = false;
    m.coordinator_epoch = 0;
    let mut mt = WritableTxnMarkerTopic::default();
    mt.name = TopicName(StrBytes::from_static_str("t"));
    mt.partition_indexes = vec![1];
    m.topics = vec![mt];
    wm.markers = vec![m];
    let written = c.call(&wm, 1).await;
    assert_eq!(written.markers[0].topics[0].partitions[0].error_code, 0);
    assert_eq!(producers(&mut c, "t", 1).await, vec![(pid, 1, 0, -1)]);
    // The coordinator then aborts its side; the second marker changes nothing.
    assert_eq!(end(&mut c, "tx", pid, 1, false).await, 0);
    wait_state(&mut c, "tx", "CompleteAbort").await;

    // InitProducerId while a transaction is Ongoing: the coordinator fences
    // (epoch + 1, abort, markers) and answers CONCURRENT_TRANSACTIONS; the
    // retry gets epoch + 2.
    assert_eq!(add(&mut c, "tx", pid, 1, &[("t", 0)]).await, [0]);
    assert_eq!(init(&mut c, "tx", 60_000).await.0, CONCURRENT_TRANSACTIONS);
    let (pid3, epoch) = init_settled(&mut c, "tx", 60_000).await;
    assert_eq!((pid3, epoch), (pid, 3));
    assert_eq!(
        add(&mut c, "tx", pid, 1, &[("t", 0)]).await,
        [PRODUCER_FENCED]
    );

    // Unknown ids.
    assert_eq!(
        describe(&mut c, "unknown").await.0,
        TRANSACTIONAL_ID_NOT_FOUND
    );

    // A restart keeps the state: the next epoch is 4.
    drop(c);
    broker.shutdown().await.unwrap();
    let broker = start(dir.path(), &[("transaction.state.log.num.partitions", "3")]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let (_, state, epoch, _) = describe(&mut c, "tx").await;
    assert_eq!((state.as_str(), epoch), ("Empty", 3));
    assert_eq!(init_settled(&mut c, "tx", 60_000).await, (pid, 4));
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_coordinator_aborts_a_transaction_that_outlives_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(
        dir.path(),
        &[
            ("transaction.state.log.num.partitions", "1"),
            (
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                "50",
            ),
        ],
    )
    .await;
    let mut c = Client::connect(broker.local_addr()).await;
    create_topic(&mut c, "slow").await;
    let (e, pid, epoch) = init(&mut c, "slow-txn", 300).await;
    assert_eq!((e, epoch), (0, 0));
    assert_eq!(add(&mut c, "slow-txn", pid, 0, &[("slow", 0)]).await, [0]);
    assert_eq!(
        produce_txn(
            &mut c,
            Some("slow-txn"),
            "slow",
            0,
            txn_batch(pid, 0, 0, "x"),
            9
        )
        .await,
        0
    );
    // Aborted with the epoch bumped: the producer is fenced.
    let epoch = wait_state(&mut c, "slow-txn", "CompleteAbort").await;
    assert_eq!(epoch, 1);
    assert_eq!(end(&mut c, "slow-txn", pid, 0, true).await, PRODUCER_FENCED);
    assert_eq!(producers(&mut c, "slow", 0).await, vec![(pid, 1, 0, -1)]);
    broker.shutdown().await.unwrap();
}

/// Batches in the partition (data and markers), read to the log end.
async fn fetch_all(c: &mut Client, topic: &str, partition: i32) -> usize {
    let req = fetch_request(topic, uuid::Uuid::nil(), partition, 0, 0, 0);
    let resp = c.call(&req, 12).await;
    let records: &Option<Bytes> = &resp.responses[0].partitions[0].records;
    let bytes = records.clone().unwrap_or_default();
    strata_log::batch::BatchScanner::new(&bytes).count()
}
