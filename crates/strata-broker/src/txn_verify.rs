//! KIP-890 part 1 on the partition leader: a transactional batch that would
//! open a transaction on a partition is appended only if the transaction
//! coordinator confirms the partition is in the producer's ongoing
//! transaction (AddPartitionsToTxn v4 `VerifyOnly`, answered locally when
//! the coordinator is this broker), so a late or stray batch cannot leave a
//! hanging transaction behind.
//!
//! Kafka's verification guard: before asking, the leader records a fresh
//! guard for the producer; a marker written meanwhile removes it; the
//! append happens only while the guard is still there, under the same
//! per-partition lock the marker append takes. A batch of a producer whose
//! transaction is already open on the partition needs no verification.
//! `transaction.partition.verification.enable=false` turns it off.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use strata_log::{Log, TopicPartition};

pub(crate) use crate::txn::guards::check_guard;

use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::group::partition_for;
use crate::replication::client::PeerConnection;
use crate::txn::guards::in_transaction;
use crate::txn::metadata::TxnPartition;
use crate::txn::TXN_TOPIC;

/// AddPartitionsToTxn version of a verification (Kafka 3.9 sends 4).
const VERIFY_VERSION: i16 = 4;
/// How long a verification may take.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(30);

/// A Produce partition's transactional producer, if its batch is
/// transactional: `(producer id, epoch, base sequence)`.
pub(crate) fn transactional_producer(records: &[u8]) -> Option<(i64, i16, i32)> {
    let view = strata_log::batch::BatchView::parse(records).ok()?;
    (view.is_transactional() && !view.is_control()).then(|| {
        (
            view.producer_id().0,
            view.producer_epoch().0,
            view.base_sequence(),
        )
    })
}

/// Verify the partitions of one Produce whose transactional batches would
/// open a transaction. Returns, per input, `Ok(Some(guard))` (append while
/// the guard holds), `Ok(None)` (no verification needed) or the error.
pub(crate) async fn verify(
    broker: &Arc<Broker>,
    transactional_id: &str,
    produce_version: i16,
    items: Vec<(TopicPartition, Arc<Log>, i64, i16)>,
) -> Vec<Result<Option<u64>, ApiError>> {
    if !broker.config.txn.verification_enable {
        return items.iter().map(|_| Ok(None)).collect();
    }
    let mut out: Vec<Result<Option<u64>, ApiError>> = Vec::with_capacity(items.len());
    let mut asked: Vec<(usize, TxnPartition, u64)> = Vec::new();
    let (mut pid, mut epoch) = (-1, -1);
    for (i, (tp, log, producer_id, producer_epoch)) in items.iter().enumerate() {
        if in_transaction(log, *producer_id) {
            out.push(Ok(None));
            continue;
        }
        let guard = broker.verifications.begin(tp, *producer_id);
        (pid, epoch) = (*producer_id, *producer_epoch);
        asked.push((i, (tp.topic.clone(), tp.partition), guard));
        out.push(Ok(Some(guard)));
    }
    if asked.is_empty() {
        return out;
    }
    let partitions: Vec<TxnPartition> = asked.iter().map(|(_, p, _)| p.clone()).collect();
    let answers = ask_coordinator(broker, transactional_id, pid, epoch, &partitions).await;
    for ((i, p, guard), answer) in asked.into_iter().zip(answers) {
        if let Err(code) = answer {
            let tp = TopicPartition::new(p.0.clone(), p.1);
            broker.verifications.forget(&tp, pid, guard);
            out[i] = Err(produce_error(code, produce_version));
        }
    }
    out
}

/// Kafka's conversion of a verification error for Produce (KIP-890).
fn produce_error(code: ResponseError, version: i16) -> ApiError {
    use ResponseError as E;
    let (code, reason) = match code {
        E::ProducerFenced | E::InvalidProducerEpoch => (
            E::InvalidProducerEpoch,
            "the producer was fenced by a newer epoch",
        ),
        E::TransactionAbortable if version >= 11 => (
            E::TransactionAbortable,
            "Partition was not added to the transaction",
        ),
        E::TransactionAbortable => (
            E::InvalidTxnState,
            "Partition was not added to the transaction",
        ),
        E::ConcurrentTransactions
        | E::NetworkException
        | E::CoordinatorLoadInProgress
        | E::CoordinatorNotAvailable
        | E::NotCoordinator
        | E::RequestTimedOut => (
            E::NotEnoughReplicas,
            "the transaction coordinator could not verify the partition yet; retry",
        ),
        E::InvalidProducerIdMapping => (E::InvalidProducerIdMapping, "unknown producer id mapping"),
        _ => (
            E::InvalidTxnState,
            "the transaction coordinator refused the partition",
        ),
    };
    ApiError::Transaction { code, reason }
}

/// Ask the coordinator of `transactional_id` (this broker or a peer).
pub(crate) async fn ask_coordinator(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &[TxnPartition],
) -> Vec<Result<(), ResponseError>> {
    let all = |e: ResponseError| partitions.iter().map(|_| Err(e)).collect::<Vec<_>>();
    let coordinator = match coordinator_of(broker, transactional_id) {
        Ok(c) => c,
        Err(e) => return all(e),
    };
    let Some((id, addr)) = coordinator else {
        return match broker
            .txn
            .verify(broker, transactional_id, producer_id, epoch, partitions)
            .await
        {
            Ok(each) => each,
            Err(e) => all(e),
        };
    };
    let mut req = AddPartitionsToTxnRequest::default();
    let mut t = AddPartitionsToTxnTransaction::default();
    t.transactional_id = TransactionalId(StrBytes::from_string(transactional_id.to_string()));
    t.producer_id = ProducerId(producer_id);
    t.producer_epoch = epoch;
    t.verify_only = true;
    for (topic, p) in partitions {
        match t.topics.iter_mut().find(|x| x.name.0.as_str() == topic) {
            Some(x) => x.partitions.push(*p),
            None => {
                let mut x = AddPartitionsToTxnTopic::default();
                x.name = TopicName(StrBytes::from_string(topic.clone()));
                x.partitions.push(*p);
                t.topics.push(x);
            }
        }
    }
    req.transactions.push(t);
    let client_id = format!("strata-txn-verify-{}", broker.config.node_id);
    let resp = match PeerConnection::connect(id, &addr, client_id, Duration::from_secs(5)).await {
        Ok(mut c) => c.send(&req, VERIFY_VERSION, VERIFY_TIMEOUT).await,
        Err(e) => Err(e),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(broker = id, error = %strata_log::ErrorChain(&e), "transaction verification failed");
            return all(ResponseError::NetworkException);
        }
    };
    if let Some(e) = ResponseError::try_from_code(resp.error_code) {
        return all(e);
    }
    partitions
        .iter()
        .map(|(topic, p)| {
            let code = resp
                .results_by_transaction
                .iter()
                .flat_map(|r| r.topic_results.iter())
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.results_by_partition.iter())
                .find(|r| r.partition_index == *p)
                .map_or(ResponseError::NetworkException.code(), |r| {
                    r.partition_error_code
                });
            match ResponseError::try_from_code(code) {
                None => Ok(()),
                Some(e) => Err(e),
            }
        })
        .collect()
}

/// `None` when this broker coordinates `transactional_id`, else the
/// coordinator's id and address.
fn coordinator_of(
    broker: &Broker,
    transactional_id: &str,
) -> Result<Option<(i32, String)>, ResponseError> {
    let Some(cluster) = &broker.cluster else {
        return Ok(None);
    };
    let count = broker.topics.get(TXN_TOPIC).map_or(0, |t| t.partitions);
    if count == 0 {
        return Err(ResponseError::CoordinatorNotAvailable);
    }
    let s = cluster.applied();
    let p = partition_for(transactional_id, count);
    let leader = s.partition(TXN_TOPIC, p).map_or(-1, |st| st.value.leader);
    if leader == broker.config.node_id {
        return Ok(None);
    }
    let b = s
        .brokers
        .get(&leader)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    Ok(Some((
        leader,
        format!("{}:{}", b.record.host, b.record.port),
    )))
}
