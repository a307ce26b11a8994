//! Writing COMMIT/ABORT markers: locally to partitions this broker leads
//! (the transaction coordinator's own partitions and WriteTxnMarkers from a
//! peer's coordinator or `kafka-transactions.sh abort`), and to the
//! leaders of the others with WriteTxnMarkers (Kafka's
//! `TransactionMarkerChannelManager`, without its per-broker queues: one
//! request per leader per round).
//!
//! A marker on a `__consumer_offsets` partition also completes the
//! producer's pending transactional offset commits in the group
//! coordinator (visible on COMMIT, dropped on ABORT).
//!
//! The broker's [`TxnHost`] implementation lives here too: the transaction
//! coordinator reaches the logs, the producer ids and the markers through it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use strata_log::batch::{build_end_txn_marker, EndTransactionMarker};
use strata_log::{LeaderEpoch, Offset, ProducerEpoch, Timestamp};

use crate::broker::Broker;
use crate::group::OFFSETS_TOPIC;
use crate::internal_append::{append_committed, Origin};
use crate::replication::client::PeerConnection;
use std::future::Future;

use crate::api_error::ApiError;
use crate::txn::coordinator::{Marker, MarkerOutcome, TxnCoordinator, TxnHost};
use crate::txn::metadata::TxnPartition;

/// How long a marker append waits for the ISR (Kafka: `request.timeout.ms`).
const MARKER_TIMEOUT: Duration = Duration::from_secs(30);
/// WriteTxnMarkers version sent to peers (flexible, Kafka 3.9's latest).
const WRITE_TXN_MARKERS_VERSION: i16 = 1;

/// Kafka's handling of a marker error at the coordinator
/// (`TransactionMarkerRequestCompletionHandler`).
pub(crate) fn outcome_of(error: Option<ResponseError>) -> MarkerOutcome {
    use ResponseError as E;
    match error {
        None => MarkerOutcome::Done,
        Some(E::InvalidProducerEpoch | E::TransactionCoordinatorFenced) => MarkerOutcome::Fenced,
        Some(E::UnsupportedForMessageFormat | E::UnsupportedVersion) => MarkerOutcome::Drop,
        Some(_) => MarkerOutcome::Retry,
    }
}

/// Append `marker` to each of its partitions, which this broker must
/// lead; one error (or none) per partition.
pub(crate) async fn write_local(
    broker: &Arc<Broker>,
    marker: &Marker,
) -> Vec<(TxnPartition, Option<ResponseError>)> {
    let now = broker.logs.clock().now_ms();
    let mut out = Vec::with_capacity(marker.partitions.len());
    for (topic, partition) in &marker.partitions {
        if broker.topics.get(topic).is_none() {
            out.push((
                (topic.clone(), *partition),
                Some(ResponseError::UnknownTopicOrPartition),
            ));
            continue;
        }
        let end = if marker.commit {
            EndTransactionMarker::commit(marker.coordinator_epoch)
        } else {
            EndTransactionMarker::abort(marker.coordinator_epoch)
        };
        let batch = build_end_txn_marker(
            Offset(0),
            LeaderEpoch(0),
            strata_log::ProducerId(marker.producer_id),
            ProducerEpoch(marker.producer_epoch),
            Timestamp(now),
            end,
        );
        let r = append_committed(
            broker,
            topic,
            *partition,
            batch,
            Origin::Coordinator,
            MARKER_TIMEOUT,
        )
        .await;
        let error = match r {
            Ok(_) => {
                if topic == OFFSETS_TOPIC {
                    broker
                        .groups
                        .complete_transaction(broker, *partition, marker.producer_id, marker.commit)
                        .await;
                }
                None
            }
            Err(e) => {
                tracing::debug!(topic = %topic, partition, producer_id = marker.producer_id,
                    error = %strata_log::ErrorChain(&e), "transaction marker not written");
                Some(e.kind())
            }
        };
        out.push(((topic.clone(), *partition), error));
    }
    out
}

/// Where a partition's leader is.
enum Leader {
    Local,
    Remote { id: i32, addr: String },
    Unknown,
    Gone,
}

fn leader_of(broker: &Broker, topic: &str, partition: i32) -> Leader {
    let Some(info) = broker.topics.get(topic) else {
        return Leader::Gone;
    };
    if partition < 0 || partition >= info.partitions {
        return Leader::Gone;
    }
    let Some(cluster) = &broker.cluster else {
        return Leader::Local;
    };
    let snapshot = cluster.applied();
    let Some(state) = snapshot.partition(topic, partition) else {
        return Leader::Unknown;
    };
    let leader = state.value.leader;
    if leader == broker.config.node_id {
        return Leader::Local;
    }
    match snapshot.brokers.get(&leader) {
        Some(b) => Leader::Remote {
            id: leader,
            addr: format!("{}:{}", b.record.host, b.record.port),
        },
        None => Leader::Unknown,
    }
}

/// Write `marker` everywhere: locally where this broker leads, with one
/// WriteTxnMarkers per other leader.
pub(crate) async fn write_markers(
    broker: &Arc<Broker>,
    marker: Marker,
) -> Vec<(TxnPartition, MarkerOutcome)> {
    let mut out = Vec::new();
    let mut local = Vec::new();
    let mut remote: BTreeMap<(i32, String), Vec<TxnPartition>> = BTreeMap::new();
    for p in &marker.partitions {
        match leader_of(broker, &p.0, p.1) {
            Leader::Local => local.push(p.clone()),
            Leader::Remote { id, addr } => remote.entry((id, addr)).or_default().push(p.clone()),
            Leader::Unknown => out.push((p.clone(), MarkerOutcome::Retry)),
            Leader::Gone => {
                tracing::info!(topic = %p.0, partition = p.1, "partition of a transaction is gone: no marker");
                out.push((p.clone(), MarkerOutcome::Drop));
            }
        }
    }
    if !local.is_empty() {
        let m = Marker {
            partitions: local,
            ..marker.clone()
        };
        for (p, e) in write_local(broker, &m).await {
            out.push((p, outcome_of(e)));
        }
    }
    for ((id, addr), partitions) in remote {
        let m = Marker {
            partitions,
            ..marker.clone()
        };
        out.extend(send_remote(broker, id, &addr, &m).await);
    }
    out
}

async fn send_remote(
    broker: &Broker,
    id: i32,
    addr: &str,
    marker: &Marker,
) -> Vec<(TxnPartition, MarkerOutcome)> {
    let retry_all = || {
        marker
            .partitions
            .iter()
            .map(|p| (p.clone(), MarkerOutcome::Retry))
            .collect::<Vec<_>>()
    };
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in &marker.partitions {
        by_topic.entry(t).or_default().push(*p);
    }
    let mut m = WritableTxnMarker::default();
    m.producer_id = ProducerId(marker.producer_id);
    m.producer_epoch = marker.producer_epoch;
    m.transaction_result = marker.commit;
    m.coordinator_epoch = marker.coordinator_epoch;
    m.topics = by_topic
        .into_iter()
        .map(|(t, ps)| {
            let mut wt = WritableTxnMarkerTopic::default();
            wt.name = TopicName(StrBytes::from_string(t.to_string()));
            wt.partition_indexes = ps;
            wt
        })
        .collect();
    let mut req = WriteTxnMarkersRequest::default();
    req.markers = vec![m];
    let client_id = format!("strata-txn-markers-{}", broker.config.node_id);
    let timeout = MARKER_TIMEOUT + Duration::from_secs(5);
    let conn = PeerConnection::connect(id, addr, client_id, Duration::from_secs(5)).await;
    let resp = match conn {
        Ok(mut c) => c.send(&req, WRITE_TXN_MARKERS_VERSION, timeout).await,
        Err(e) => Err(e),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(broker = id, error = %strata_log::ErrorChain(&e), "WriteTxnMarkers failed; retried");
            return retry_all();
        }
    };
    let mut out = Vec::new();
    for r in resp.markers {
        for t in r.topics {
            for p in t.partitions {
                let outcome = outcome_of(ResponseError::try_from_code(p.error_code));
                out.push(((t.name.0.to_string(), p.partition_index), outcome));
            }
        }
    }
    // A partition the answer left out is sent again.
    for p in &marker.partitions {
        if !out.iter().any(|(q, _)| q == p) {
            out.push((p.clone(), MarkerOutcome::Retry));
        }
    }
    out
}

/// The transaction coordinator's view of the broker.
impl TxnHost for Broker {
    fn txn_coordinator(&self) -> &TxnCoordinator {
        &self.txn
    }

    fn create_txn_topic(&self, partitions: i32) -> Result<(), ApiError> {
        let txn = &self.config.txn;
        let mut configs: BTreeMap<String, String> = [
            ("cleanup.policy", "compact".to_string()),
            ("compression.type", "uncompressed".to_string()),
            ("segment.bytes", txn.segment_bytes.to_string()),
            ("unclean.leader.election.enable", "false".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        // A single node holds one replica of everything.
        let replication_factor = if self.cluster.is_some() {
            configs.insert("min.insync.replicas".into(), txn.min_isr.to_string());
            txn.replication_factor
        } else {
            1
        };
        self.create_topic(
            crate::txn::TXN_TOPIC,
            partitions,
            replication_factor,
            configs,
            false,
        )
        .map(drop)
    }

    fn append_committed(
        self: &Arc<Self>,
        topic: String,
        partition: i32,
        batch: Vec<u8>,
        timeout: std::time::Duration,
    ) -> impl Future<Output = Result<(), kafka_protocol::error::ResponseError>> + Send {
        let broker = self.clone();
        async move {
            crate::internal_append::append_committed(
                &broker,
                &topic,
                partition,
                batch,
                crate::internal_append::Origin::Plain,
                timeout,
            )
            .await
            .map(drop)
            .map_err(|e| e.kind())
        }
    }

    fn write_markers(
        self: &Arc<Self>,
        marker: Marker,
    ) -> impl Future<Output = Vec<(TxnPartition, MarkerOutcome)>> + Send {
        let broker = self.clone();
        async move { crate::txn_markers::write_markers(&broker, marker).await }
    }

    fn allocate_producer_id(&self) -> Result<i64, kafka_protocol::error::ResponseError> {
        self.next_producer_id().map_err(|e| {
            tracing::warn!(error = %strata_log::ErrorChain(&e), "cannot allocate a producer id");
            kafka_protocol::error::ResponseError::CoordinatorLoadInProgress
        })
    }
}
