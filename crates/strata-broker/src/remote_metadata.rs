//! Cluster mode's `__remote_log_metadata` (Kafka
//! `TopicBasedRemoteLogMetadataManager`: its topic creation, producer and
//! consumer task), feeding each broker's [`TailedRlmm`].
//!
//! - The topic is created once through the cluster's topic creation, with
//!   `rlmm.config.remote.log.metadata.topic.num.partitions` partitions and
//!   `rlmm.config.remote.log.metadata.topic.replication.factor` replicas
//!   (Kafka: 50 and 3); while fewer brokers are registered the creation is
//!   retried (Kafka's RLMM retries too, it never creates a smaller topic).
//! - [`Writer`]: a record goes to its metadata partition's leader as an
//!   acks=all Produce (over the network, also when that leader is this
//!   broker: one path), retried while leadership moves.
//! - [`run_reader`]: every broker reads *every* metadata partition from its
//!   leader with consumer Fetches (up to the high watermark, so only
//!   committed records) and hands the records to the catalogue in offset
//!   order — a broker that hosts no replica of a metadata partition learns
//!   its records the same way. Once it has caught up with each partition's
//!   high watermark seen at its first answer, the catalogue is ready.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_log::batch::{BatchBuilder, BatchView};
use strata_log::{Offset, Timestamp};
use strata_tiered::rlmm::tailed::{MetadataWriter, TailedRlmm};
use strata_tiered::rlmm::REMOTE_LOG_METADATA_TOPIC as TOPIC;
use strata_tiered::MetadataError;
use tokio::sync::watch;

use crate::broker::Broker;
use crate::cluster::Cluster;
use crate::replication::client::{PeerConnection, PeerError};

const PRODUCE_VERSION: i16 = 9;
const FETCH_VERSION: i16 = 12;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const WRITE_ATTEMPTS: u32 = 40;
const RETRY: Duration = Duration::from_millis(250);
const FETCH_WAIT_MS: i32 = 100;
const PARTITION_MAX_BYTES: i32 = 1 << 20;

/// Why one attempt to write a metadata record failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    #[error("metadata partition {partition} has no leader")]
    NoLeader { partition: i32 },
    #[error(transparent)]
    Peer(#[from] PeerError),
    #[error("broker {broker} answered {error:?} for metadata partition {partition}")]
    Refused {
        broker: i32,
        partition: i32,
        error: ResponseError,
    },
    #[error("broker {broker} answered no result for metadata partition {partition}")]
    NoAnswer { broker: i32, partition: i32 },
}

/// The address of broker `id` in the applied snapshot.
fn address(cluster: &Cluster, id: i32) -> Option<String> {
    let snapshot = cluster.applied();
    let b = snapshot.brokers.get(&id)?;
    Some(format!("{}:{}", b.record.host, b.record.port))
}

fn leader_of(cluster: &Cluster, partition: i32) -> Option<i32> {
    let snapshot = cluster.applied();
    let state = snapshot.partition(TOPIC, partition)?;
    (state.value.leader >= 0).then_some(state.value.leader)
}

async fn connect(cluster: &Cluster, broker: i32, role: &str) -> Result<PeerConnection, PeerError> {
    let Some(addr) = address(cluster, broker) else {
        return Err(PeerError::Protocol {
            broker,
            reason: "not registered".into(),
        });
    };
    let client_id = format!("strata-rlmm-{role}-{}", cluster.node_id());
    PeerConnection::connect(broker, &addr, client_id, REQUEST_TIMEOUT).await
}

/// The cluster's [`MetadataWriter`]: acks=all Produce to the leader.
#[derive(Debug)]
pub(crate) struct Writer {
    cluster: Arc<Cluster>,
    runtime: tokio::runtime::Handle,
    partitions: i32,
    closed: std::sync::atomic::AtomicBool,
}

impl Writer {
    pub(crate) fn new(cluster: Arc<Cluster>, partitions: i32) -> Writer {
        Writer {
            cluster,
            runtime: tokio::runtime::Handle::current(),
            partitions,
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    async fn attempt(&self, partition: i32, records: bytes::Bytes) -> Result<Offset, WriteError> {
        let leader =
            leader_of(&self.cluster, partition).ok_or(WriteError::NoLeader { partition })?;
        let mut conn = connect(&self.cluster, leader, "producer").await?;
        let mut p = PartitionProduceData::default();
        p.index = partition;
        p.records = Some(records);
        let mut t = TopicProduceData::default();
        t.name = TopicName(StrBytes::from_static_str(TOPIC));
        t.partition_data = vec![p];
        let mut request = ProduceRequest::default();
        request.acks = -1;
        request.timeout_ms = REQUEST_TIMEOUT.as_millis() as i32;
        request.topic_data = vec![t];
        let response = conn
            .send(&request, PRODUCE_VERSION, REQUEST_TIMEOUT + RETRY)
            .await?;
        let answer = response
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter())
            .find(|p| p.index == partition)
            .ok_or(WriteError::NoAnswer {
                broker: leader,
                partition,
            })?;
        match ResponseError::try_from_code(answer.error_code) {
            None => Ok(Offset(answer.base_offset)),
            Some(error) => Err(WriteError::Refused {
                broker: leader,
                partition,
                error,
            }),
        }
    }
}

impl MetadataWriter for Writer {
    fn num_partitions(&self) -> i32 {
        self.partitions
    }

    /// Blocking (the remote log manager's pool threads call it).
    fn write(
        &self,
        partition: i32,
        value: &[u8],
        timestamp: Timestamp,
    ) -> Result<Offset, MetadataError> {
        let mut builder = BatchBuilder::new(Offset(0));
        builder.append(timestamp, None, Some(value), &[]);
        let records = bytes::Bytes::from(builder.build());
        let mut last = None;
        for _ in 0..WRITE_ATTEMPTS {
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                return Err(MetadataError::Closed);
            }
            match self
                .runtime
                .block_on(self.attempt(partition, records.clone()))
            {
                Ok(offset) => return Ok(offset),
                Err(error) => {
                    tracing::debug!(partition, error = %strata_log::ErrorChain(&error), "remote log metadata write failed; retrying");
                    last = Some(error);
                    std::thread::sleep(RETRY);
                }
            }
        }
        Err(MetadataError::Write {
            partition,
            source: Box::new(last.unwrap_or(WriteError::NoLeader { partition })),
        })
    }

    fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Create `__remote_log_metadata` in the cluster unless it exists, retrying
/// until it does (no controller yet, too few brokers, etcd away).
pub(crate) async fn ensure_topic(
    broker: &Arc<Broker>,
    cluster: &Cluster,
    mut shutdown: watch::Receiver<bool>,
) {
    let config = &broker.config.tiered;
    let (partitions, rf) = (
        config.metadata_partitions,
        config.metadata_replication_factor,
    );
    let retention = config.metadata_topic_retention_ms.to_string();
    loop {
        if cluster.applied().topics.contains_key(TOPIC) {
            return;
        }
        let configs: BTreeMap<String, String> = [
            ("retention.ms".to_string(), retention.clone()),
            ("cleanup.policy".to_string(), "delete".to_string()),
        ]
        .into_iter()
        .collect();
        let created = broker
            .blocking(move |b| b.create_topic(TOPIC, partitions, rf, configs, false))
            .await;
        match created {
            Ok(_) => {
                tracing::info!(
                    topic = TOPIC,
                    partitions,
                    replication_factor = rf,
                    "created the remote log metadata topic"
                );
                return;
            }
            Err(crate::api_error::ApiError::TopicAlreadyExists) => return,
            Err(error) => {
                tracing::warn!(topic = TOPIC, %error, "cannot create the remote log metadata topic yet; retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Read every metadata partition from its leader into `rlmm` until
/// shutdown (see the module docs).
pub(crate) async fn run_reader(
    broker: Arc<Broker>,
    cluster: Arc<Cluster>,
    rlmm: Arc<TailedRlmm>,
    mut shutdown: watch::Receiver<bool>,
) {
    ensure_topic(&broker, &cluster, shutdown.clone()).await;
    let partitions = rlmm.num_partitions();
    // The high watermark each partition had at its first answer.
    let mut targets: HashMap<i32, i64> = HashMap::new();
    let mut ready = false;
    let mut conns: HashMap<i32, PeerConnection> = HashMap::new();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in 0..partitions {
            if let Some(leader) = leader_of(&cluster, p) {
                by_leader.entry(leader).or_default().push(p);
            }
        }
        let mut progressed = false;
        for (leader, parts) in by_leader {
            match fetch_from(&cluster, &mut conns, leader, &parts, &rlmm, &mut targets).await {
                Ok(moved) => progressed |= moved,
                Err(error) => {
                    conns.remove(&leader);
                    tracing::debug!(leader, error = %strata_log::ErrorChain(&error), "reading remote log metadata failed; retrying");
                }
            }
        }
        if !ready
            && (0..partitions).all(|p| targets.get(&p).is_some_and(|t| rlmm.next_offset(p).0 >= *t))
        {
            ready = true;
            rlmm.set_ready();
            tracing::info!(partitions, "remote log metadata caught up");
        }
        if !progressed {
            tokio::select! {
                _ = tokio::time::sleep(RETRY) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// One consumer Fetch of `parts` from `leader`; true if a record arrived.
async fn fetch_from(
    cluster: &Cluster,
    conns: &mut HashMap<i32, PeerConnection>,
    leader: i32,
    parts: &[i32],
    rlmm: &TailedRlmm,
    targets: &mut HashMap<i32, i64>,
) -> Result<bool, PeerError> {
    let conn = match conns.entry(leader) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(connect(cluster, leader, "consumer").await?)
        }
    };
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(StrBytes::from_static_str(TOPIC));
    for p in parts {
        let mut fp = FetchPartition::default();
        fp.partition = *p;
        fp.fetch_offset = rlmm.next_offset(*p).0;
        fp.partition_max_bytes = PARTITION_MAX_BYTES;
        fp.current_leader_epoch = -1;
        fp.last_fetched_epoch = -1;
        fp.log_start_offset = -1;
        topic.partitions.push(fp);
    }
    let mut request = FetchRequest::default();
    request.replica_id = (-1).into();
    request.max_wait_ms = FETCH_WAIT_MS;
    request.min_bytes = 1;
    request.max_bytes = PARTITION_MAX_BYTES * 4;
    request.session_id = 0;
    request.session_epoch = -1;
    request.topics = vec![topic];
    let timeout = REQUEST_TIMEOUT + Duration::from_millis(FETCH_WAIT_MS as u64);
    let response = conn.send(&request, FETCH_VERSION, timeout).await?;
    let mut moved = false;
    for t in response.responses {
        for p in t.partitions {
            if p.error_code != 0 {
                continue;
            }
            targets.entry(p.partition_index).or_insert(p.high_watermark);
            if let Some(records) = p.records {
                moved |= apply_batches(rlmm, p.partition_index, &records);
            }
        }
    }
    Ok(moved)
}

/// Hand every record of the complete batches in `bytes` to the catalogue;
/// true if any batch was applied.
fn apply_batches(rlmm: &TailedRlmm, partition: i32, bytes: &[u8]) -> bool {
    let mut pos = 0;
    let mut moved = false;
    while pos < bytes.len() {
        let Ok(view) = BatchView::parse(&bytes[pos..]) else {
            break;
        };
        pos += view.size();
        match view.records() {
            Ok(records) => {
                for r in records {
                    if let Some(v) = r.value {
                        rlmm.apply_record(partition, r.offset, &v);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(partition, base_offset = view.base_offset().0, %error, "skipping an undecodable remote log metadata batch");
            }
        }
        rlmm.advance_to(partition, view.next_offset());
        moved = true;
    }
    moved
}
