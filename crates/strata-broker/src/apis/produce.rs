//! Produce (key 0): append each partition's record batch as leader.
//!
//! The batch bytes arrive as a `Bytes` slice of the request frame; they are
//! copied once into a mutable buffer so the log can assign offsets in place
//! (docs/architecture.md decision 2). All partitions of a request are appended in one
//! blocking task, in request order. Single broker: after an append the high
//! watermark moves to the log end offset; with durable appends the data is
//! fsynced before the answer. The append leaves that fsync to this module
//! (`append_as_leader_unsynced`), which starts it on the blocking pool and
//! answers with a deferred response ([`ProduceOutcome::synced`]): the
//! connection reads and appends its next request while the fsync runs, so a
//! producer with several requests in flight pays about one fsync per round
//! instead of one per request, and the log's group commit covers every
//! append made meanwhile. Answers still go out in request order, each only
//! after its own records are durable (docs/broker.md, Produce).
//!
//! Cluster mode: the high watermark is what the ISR holds (`replication`).
//! acks=all is admitted only while the committed ISR reaches the effective
//! `min.insync.replicas` (NOT_ENOUGH_REPLICAS, nothing appended); after the
//! append the request waits — Kafka's delayed-produce purgatory — until
//! each partition's high watermark covers its records (NOT_ENOUGH_REPLICAS_
//! AFTER_APPEND if the ISR shrank below the minimum meanwhile), this broker
//! stops leading it (NOT_LEADER_OR_FOLLOWER), or the request's `timeout_ms`
//! passes (REQUEST_TIMED_OUT; the records stay and may still commit).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use strata_log::{LeaderEpoch, Log, LogAppendInfo};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::error_code::NONE;
use crate::replication::Partition;
use crate::stats::Stats;

/// Attribute bits 0-2 value of zstd.
const ZSTD_CODEC: u8 = 4;

/// The answer to a Produce request plus whether any partition failed
/// (acks=0 requests get no answer; a failure closes their connection).
pub(crate) struct ProduceOutcome {
    pub response: ProduceResponse,
    pub acks: i16,
    pub any_error: bool,
    /// Durable appends whose fsync is still running: the answer may go out
    /// only after [`ProduceOutcome::finish_sync`].
    pub synced: Option<tokio::task::JoinHandle<Vec<Synced>>>,
}

/// One durable partition's fsync: where its answer goes and the outcome.
pub(crate) type Synced = (usize, usize, i32, Result<(), strata_log::LogError>);

/// A durable append whose fsync is left to the caller.
struct PendingSync {
    topic_idx: usize,
    slot: usize,
    partition: i32,
    log: Arc<Log>,
    /// Everything below this offset must be durable.
    upto: strata_log::Offset,
}

impl ProduceOutcome {
    /// Wait for the fsyncs of the durable appends; a partition whose fsync
    /// failed (its log dir goes offline) is answered with its error instead.
    pub(crate) async fn finish_sync(&mut self, ctx: &RequestContext) {
        let Some(task) = self.synced.take() else {
            return;
        };
        let synced = match task.await {
            Ok(v) => v,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("fsync task cancelled: {e}"),
        };
        for (topic_idx, slot, partition, result) in synced {
            if let Err(e) = result {
                tracing::warn!(partition, error = %strata_log::ErrorChain(&e), "durable produce: fsync failed");
                self.response.responses[topic_idx].partition_responses[slot] =
                    error_partition(ctx, partition, &ApiError::Log(e));
                self.any_error = true;
            }
        }
    }
}

/// One partition's work item.
struct Job {
    topic_idx: usize,
    /// Index of this partition's answer in the topic's response list.
    slot: usize,
    partition: i32,
    log: Arc<Log>,
    epoch: i32,
    records: Bytes,
    durable: bool,
    /// Cluster mode: the replica (high watermark, ISR).
    replica: Option<Arc<Partition>>,
    /// A transactional batch: its producer id and the KIP-890 guard it is
    /// appended under (`None`: its transaction was already open).
    txn: Option<(i64, Option<u64>)>,
}

pub(crate) async fn handle(ctx: &RequestContext, req: ProduceRequest) -> ProduceOutcome {
    let broker = &ctx.broker;
    let acks = req.acks;
    let timeout_ms = req.timeout_ms;
    let mut response = ProduceResponse::default();
    if !transactional_authorized(ctx, &req) {
        // Kafka answers the whole request with the error, appending nothing.
        let e = ApiError::Transaction {
            code: ResponseError::TransactionalIdAuthorizationFailed,
            reason: "not authorized to write as this transactional id",
        };
        for topic in req.topic_data {
            let mut out = TopicProduceResponse::default();
            out.name = topic.name.clone();
            out.topic_id = topic.topic_id;
            out.partition_responses = topic
                .partition_data
                .iter()
                .map(|pd| error_partition(ctx, pd.index, &e))
                .collect();
            response.responses.push(out);
        }
        return ProduceOutcome {
            response,
            acks,
            any_error: true,
            synced: None,
        };
    }
    let writable = ctx.authorized_names(
        AclOperation::Write,
        ResourceType::Topic,
        req.topic_data.iter().map(|t| t.name.as_str()),
    );
    let mut jobs = Vec::new();
    for (topic_idx, topic) in req.topic_data.into_iter().enumerate() {
        let mut out = TopicProduceResponse::default();
        out.name = topic.name.clone();
        out.topic_id = topic.topic_id;
        let info = broker.topics.get(topic.name.as_str());
        let authorized = writable.contains(topic.name.as_str());
        for pd in topic.partition_data {
            // Kafka checks WRITE before the topic's existence, so a denied
            // principal cannot probe which topics exist.
            let check = if authorized {
                precheck(ctx, acks, info.as_ref(), pd.index, pd.records.as_ref())
            } else {
                Err(ApiError::TopicAuthorizationFailed)
            };
            match check {
                Err(e) => out
                    .partition_responses
                    .push(error_partition(ctx, pd.index, &e)),
                Ok(Target {
                    log,
                    epoch,
                    durable,
                    replica,
                }) => {
                    jobs.push(Job {
                        topic_idx,
                        slot: out.partition_responses.len(),
                        partition: pd.index,
                        log,
                        epoch,
                        records: pd.records.unwrap_or_default(),
                        durable,
                        replica,
                        txn: None,
                    });
                    out.partition_responses
                        .push(PartitionProduceResponse::default());
                }
            }
        }
        response.responses.push(out);
    }
    let jobs = verify_transactional(ctx, req.transactional_id.as_ref(), jobs, &mut response).await;
    let mut synced = None;
    if !jobs.is_empty() {
        let (mut results, syncs) = broker.blocking(move |b| append_all(b, jobs, acks)).await;
        broker.notify_appended();
        if !syncs.is_empty() {
            // Started now, so it runs while the connection reads on. Only
            // fsynced records go below the high watermark: consumers never
            // see what a power loss could take back.
            let broker = broker.clone();
            synced = Some(tokio::task::spawn_blocking(move || {
                let out = syncs
                    .into_iter()
                    .map(|s| {
                        let r = s.log.flush_up_to(s.upto);
                        if r.is_ok() {
                            s.log.raise_high_watermark(s.upto);
                        }
                        (s.topic_idx, s.slot, s.partition, r)
                    })
                    .collect();
                broker.notify_appended();
                out
            }));
        }
        if acks == -1 {
            wait_for_isr(ctx, &mut results, timeout_ms).await;
        }
        for (topic_idx, slot, partition, result, _) in results {
            response.responses[topic_idx].partition_responses[slot] = match result {
                Ok(info) => ok_partition(partition, &info),
                Err(e) => error_partition(ctx, partition, &e),
            };
        }
    }
    let any_error = response
        .responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
        .any(|p| p.error_code != NONE);
    ProduceOutcome {
        response,
        acks,
        any_error,
        synced,
    }
}

/// Kafka's first Produce check: a request carrying transactional batches
/// needs a transactional id the principal may WRITE. Idempotent producers
/// are authorized once, at InitProducerId, not here (as in Kafka 3.9).
fn transactional_authorized(ctx: &RequestContext, req: &ProduceRequest) -> bool {
    let transactional = req.topic_data.iter().any(|t| {
        t.partition_data.iter().any(|pd| {
            pd.records
                .as_ref()
                .is_some_and(|r| crate::txn_verify::transactional_producer(r).is_some())
        })
    });
    if !transactional {
        return true;
    }
    req.transactional_id.as_ref().is_some_and(|id| {
        ctx.authorize(
            AclOperation::Write,
            ResourceType::TransactionalId,
            id.0.as_str(),
        )
    })
}

/// Transactional batches (KIP-890): a batch of a producer whose
/// transaction is not yet open on its partition is appended only once the
/// transaction coordinator confirms the partition is in the transaction.
/// A transactional batch without a transactional id is refused
/// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as Kafka does. Refused jobs are
/// answered here and dropped.
async fn verify_transactional(
    ctx: &RequestContext,
    transactional_id: Option<&kafka_protocol::messages::TransactionalId>,
    jobs: Vec<Job>,
    response: &mut ProduceResponse,
) -> Vec<Job> {
    let mut pending = Vec::new();
    let mut kept = Vec::with_capacity(jobs.len());
    for mut job in jobs {
        let Some((pid, epoch, _)) = crate::txn_verify::transactional_producer(&job.records) else {
            kept.push(job);
            continue;
        };
        if transactional_id.is_none() {
            let e = ApiError::Transaction {
                code: ResponseError::TransactionalIdAuthorizationFailed,
                reason: "transactional records need a transactional id",
            };
            response.responses[job.topic_idx].partition_responses[job.slot] =
                error_partition(ctx, job.partition, &e);
            continue;
        }
        job.txn = Some((pid, None));
        pending.push((job, epoch));
    }
    let Some(id) = transactional_id else {
        return kept;
    };
    if pending.is_empty() {
        return kept;
    }
    let items = pending
        .iter()
        .map(|(job, epoch)| {
            let tp = strata_log::TopicPartition::new(
                response.responses[job.topic_idx].name.0.to_string(),
                job.partition,
            );
            (tp, job.log.clone(), job.txn.map_or(-1, |t| t.0), *epoch)
        })
        .collect();
    let verified = crate::txn_verify::verify(&ctx.broker, id.0.as_str(), ctx.version, items).await;
    for ((mut job, _), v) in pending.into_iter().zip(verified) {
        match v {
            Ok(guard) => {
                job.txn = job.txn.map(|(pid, _)| (pid, guard));
                kept.push(job);
            }
            Err(e) => {
                response.responses[job.topic_idx].partition_responses[job.slot] =
                    error_partition(ctx, job.partition, &e);
            }
        }
    }
    kept
}

/// Where a partition's records go, once the checks passed.
struct Target {
    log: Arc<Log>,
    epoch: i32,
    durable: bool,
    replica: Option<Arc<Partition>>,
}

/// Checks done before touching the log.
fn precheck(
    ctx: &RequestContext,
    acks: i16,
    info: Option<&crate::topics::TopicInfo>,
    partition: i32,
    records: Option<&Bytes>,
) -> Result<Target, ApiError> {
    let broker = &ctx.broker;
    if !matches!(acks, -1..=1) {
        return Err(ApiError::InvalidRequiredAcks { acks });
    }
    let info = info.ok_or(ApiError::UnknownTopicOrPartition)?;
    if crate::topics::is_internal(&info.name) {
        // Kafka: only the coordinators append to internal topics.
        return Err(ApiError::InvalidTopic {
            reason: "clients cannot append to an internal topic",
        });
    }
    let log = broker.partition_log(info, partition)?;
    let config = log.config();
    let replica = match &broker.replicas {
        Some(replicas) => {
            let tp = strata_log::TopicPartition::new(info.name.clone(), partition);
            let replica = replicas
                .get(&tp)
                .filter(|r| Arc::ptr_eq(&r.log, &log) && r.is_leader())
                .ok_or(ApiError::NotLeaderOrFollower)?;
            if acks == -1 {
                replica.check_enough_replicas()?;
            }
            Some(replica)
        }
        None => {
            if acks == -1 && config.min_insync_replicas > 1 {
                return Err(ApiError::NotEnoughReplicas {
                    isr: 1,
                    required: config.min_insync_replicas,
                });
            }
            None
        }
    };
    if let Some(r) = records {
        if ctx.version < 7 && r.len() > 22 && r[22] & 0x07 == ZSTD_CODEC {
            return Err(ApiError::UnsupportedCompression);
        }
    }
    let durable = config.durable_append;
    let epoch = match &replica {
        Some(r) => r.leader_epoch(),
        None => broker.leader_epoch(info, partition),
    };
    Ok(Target {
        log,
        epoch,
        durable,
        replica,
    })
}

/// Append every job in order (blocking). A single-node durable append with
/// an answer due is returned for the caller to fsync; in cluster mode the
/// append fsyncs before the replicas learn of it.
fn append_all(broker: &Broker, jobs: Vec<Job>, acks: i16) -> (Vec<Appended>, Vec<PendingSync>) {
    let mut out = Vec::with_capacity(jobs.len());
    let mut syncs = Vec::new();
    for mut job in jobs {
        let defer_sync = job.durable && acks != 0 && job.replica.is_none();
        let mut buf = BytesMut::from(&job.records[..]);
        // A transactional batch is appended under its partition's KIP-890
        // guards, which a marker append also takes.
        let guards = job
            .txn
            .map(|_| broker.verifications.lock(job.log.topic_partition()));
        let mut held = guards.as_ref().map(|g| g.hold());
        if let (Some(held), Some((pid, guard))) = (held.as_mut(), job.txn) {
            if let Err(e) = crate::txn_verify::check_guard(held, &job.log, pid, guard) {
                out.push((job.topic_idx, job.slot, job.partition, Err(e), None));
                continue;
            }
        }
        let appended = match &job.replica {
            // In the replica's current epoch, with role changes held off.
            Some(r) => match r.leader_append(|epoch| job.log.append_as_leader(&mut buf, epoch)) {
                Some((epoch, appended)) => {
                    job.epoch = epoch;
                    appended.map_err(ApiError::Log)
                }
                None => Err(ApiError::NotLeaderOrFollower),
            },
            None if defer_sync => job
                .log
                .append_as_leader_unsynced(&mut buf, LeaderEpoch(job.epoch))
                .map_err(ApiError::Log),
            None => job
                .log
                .append_as_leader(&mut buf, LeaderEpoch(job.epoch))
                .map_err(ApiError::Log),
        };
        if let (Some(held), Some((pid, _)), true) = (held.as_mut(), job.txn, appended.is_ok()) {
            // The transaction is open on the partition now.
            held.remove(&pid);
        }
        drop(held);
        let result = appended.and_then(|info| {
            match (&broker.replicas, &job.replica) {
                (Some(replicas), Some(r)) => replicas.after_leader_append(&r.tp),
                // Raised once the fsync is done (`handle`).
                _ if defer_sync => {}
                _ => {
                    job.log.raise_high_watermark_to_end();
                }
            }
            if defer_sync {
                syncs.push(PendingSync {
                    topic_idx: job.topic_idx,
                    slot: job.slot,
                    partition: job.partition,
                    log: job.log.clone(),
                    upto: info.last_offset.plus(1),
                });
            } else if job.durable && acks != 0 {
                job.log
                    .flush_up_to(info.last_offset.plus(1))
                    .map_err(ApiError::Log)?;
            }
            Ok(info)
        });
        let counters = broker
            .metrics
            .topics
            .topic(&job.log.topic_partition().topic);
        broker.metrics.topics.produced(
            &counters,
            match &result {
                Ok(info) => crate::metrics::Appended::Ok {
                    bytes: job.records.len() as u64,
                    records: if info.duplicate {
                        0
                    } else {
                        u64::try_from(info.records_count).unwrap_or(0)
                    },
                },
                Err(_) => crate::metrics::Appended::Failed,
            },
        );
        if result.is_ok() {
            Stats::add(
                &broker.stats.produced_batches_bytes,
                job.records.len() as u64,
            );
        } else if let Err(e) = &result {
            tracing::debug!(partition = job.partition, error = %strata_log::ErrorChain(&e), "produce rejected");
        }
        let waiting = job.replica.map(|r| (r, job.epoch));
        out.push((job.topic_idx, job.slot, job.partition, result, waiting));
    }
    (out, syncs)
}

/// One appended partition: where its answer goes, the append's result and,
/// in cluster mode, the replica and the epoch it was appended in.
type Appended = (
    usize,
    usize,
    i32,
    Result<LogAppendInfo, ApiError>,
    Option<(Arc<Partition>, i32)>,
);

/// acks=all in cluster mode: wait until the ISR holds every appended
/// partition's records (see the module doc).
async fn wait_for_isr(ctx: &RequestContext, results: &mut [Appended], timeout_ms: i32) {
    let Some(replicas) = &ctx.broker.replicas else {
        return;
    };
    let mut changes = replicas.subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
    let mut shutdown = ctx.broker.shutdown.clone();
    loop {
        changes.borrow_and_update();
        let mut pending = false;
        for (.., result, waiting) in results.iter_mut() {
            let (Ok(info), Some((replica, epoch))) = (&*result, &*waiting) else {
                continue;
            };
            match replicas.produce_outcome(replica, info.last_offset.0 + 1, *epoch) {
                None => pending = true,
                Some(Ok(())) => *waiting = None,
                Some(Err(e)) => {
                    *result = Err(e);
                    *waiting = None;
                }
            }
        }
        if !pending {
            return;
        }
        let timed_out = tokio::select! {
            r = changes.changed() => r.is_err(),
            _ = tokio::time::sleep_until(deadline) => true,
            _ = shutdown.changed() => true,
        };
        if timed_out {
            for (.., result, waiting) in results.iter_mut() {
                if result.is_ok() && waiting.take().is_some() {
                    *result = Err(ApiError::ReplicationTimedOut { timeout_ms });
                }
            }
            return;
        }
    }
}

fn ok_partition(partition: i32, info: &LogAppendInfo) -> PartitionProduceResponse {
    let mut p = PartitionProduceResponse::default();
    p.index = partition;
    p.base_offset = info.first_offset.0;
    p.log_append_time_ms = info.log_append_time.map(|t| t.0).unwrap_or(-1);
    p.log_start_offset = info.log_start_offset.0;
    p
}

fn error_partition(ctx: &RequestContext, partition: i32, e: &ApiError) -> PartitionProduceResponse {
    let mut p = PartitionProduceResponse::default();
    p.index = partition;
    p.error_code = e.code();
    p.base_offset = -1;
    p.log_append_time_ms = -1;
    p.log_start_offset = -1;
    if ctx.version >= 8 {
        p.error_message = Some(StrBytes::from_string(e.message()));
    }
    if e.kind() == ResponseError::UnknownServerError {
        tracing::warn!(partition, error = %strata_log::ErrorChain(&e), "produce failed");
    }
    p
}
