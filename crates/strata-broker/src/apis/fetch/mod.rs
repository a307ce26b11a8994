//! Fetch (key 1), versions 4–16, from consumers and, in cluster mode, from
//! followers (a replica id ≥ 0).
//!
//! - A follower's Fetch (Kafka's order, `replication.md` §2.2): the leader
//!   epoch fence, then leadership, then the follower must be a replica;
//!   with a last fetched epoch the leader checks for divergence and answers
//!   with the diverging epoch instead of records (KIP-320); otherwise it
//!   records what the follower holds (ISR, high watermark) and reads up to
//!   its log end, not the high watermark.
//! - Long poll: when less than `min_bytes` is available the request waits
//!   (up to `max_wait_ms`) for the broker's append sequence to change, then
//!   reads again — a delayed-fetch purgatory without a purgatory data
//!   structure: every waiting fetch watches one `tokio::sync::watch` counter.
//! - Limits: `max_bytes` for the response and `partition_max_bytes` per
//!   partition, but the first partition with data always gets at least one
//!   whole batch (KIP-74).
//! - Incremental fetch sessions (KIP-227, `crate::fetch_sessions`; the
//!   request-side glue in `session`): a full request (epoch 0) opens a
//!   session once answered; an incremental one reads every partition of
//!   its session and answers only those whose records, offsets, error,
//!   preferred replica or diverging epoch changed. A consumer's response is
//!   sized for its quota first; a throttled one keeps the session unchanged
//!   (KAFKA-6946). Replica fetchers stay sessionless.
//! - `read_committed` reads up to the last stable offset.
//! - Fetch from the closest replica (KIP-392, `replication.md` §9): a
//!   consumer Fetch v11+ carries client metadata, so a follower serves it
//!   from its own log up to its own high watermark; older consumer Fetches
//!   need the leader (KAFKA-9004). A leader with `replica.selector.class`
//!   set may answer a consumer in a rack at once, without records, with the
//!   follower to read from (`preferred_read_replica`).
//! - Record data is never read into memory: the encoder emits file regions
//!   for `sendfile(2)`.

mod encode;
mod session;

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::FetchRequest;
use strata_log::{FetchData, Log, Offset, ReadBound};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::error_code::NONE;
use crate::fetch_sessions::{PartitionRequest, INVALID_SESSION_ID};
use crate::response::Response;

pub(crate) use encode::{
    encode_fetch_response, FetchResponseData, PartitionData, Records, TopicData,
};

const READ_COMMITTED: i8 = 1;

/// One requested partition, resolved.
struct Wanted {
    topic_idx: usize,
    partition: i32,
    fetch_offset: i64,
    partition_max_bytes: i32,
    /// The partition's log, or the Kafka error why it cannot be read.
    target: Result<Arc<Log>, ResponseError>,
    /// A follower's log diverges from this leader's: (epoch, end offset).
    diverging: Option<(i32, i64)>,
    /// The follower a consumer should read from instead (KIP-392).
    preferred: Option<i32>,
}

/// What reading one partition produced.
enum Outcome {
    /// With the aborted transactions of a READ_COMMITTED read.
    Data(FetchData, Arc<Log>, Option<Vec<(i64, i64)>>),
    Error(ResponseError, Option<Arc<Log>>),
    /// A follower must truncate first: (epoch, end offset), no records.
    Diverging((i32, i64), Arc<Log>),
    /// Records read from the remote tier (below the local log start).
    Remote(bytes::Bytes, Arc<Log>, i64, Option<Vec<(i64, i64)>>),
    /// A consumer should read from this follower: no records.
    Preferred(i32, Arc<Log>),
}

pub(crate) async fn handle(ctx: &RequestContext, req: FetchRequest) -> Response {
    let broker = &ctx.broker;
    let correlation_id = ctx.header.correlation_id;
    let read_committed = req.isolation_level == READ_COMMITTED;
    let (replica_id, replica_epoch) = if ctx.version >= 15 {
        (
            req.replica_state.replica_id.0,
            req.replica_state.replica_epoch,
        )
    } else {
        (req.replica_id.0, -1)
    };
    let follower = (replica_id >= 0).then_some((replica_id, replica_epoch));
    let context = session::context(broker, ctx.version, &req);
    let targets = match session::targets(&context, ctx.version, &req) {
        Ok(targets) => targets,
        Err(e) => {
            return encode_fetch_response(
                correlation_id,
                ctx.version,
                FetchResponseData {
                    throttle_time_ms: 0,
                    error_code: session::api_error(e, req.session_id, req.session_epoch).code(),
                    session_id: INVALID_SESSION_ID,
                    topics: Vec::new(),
                },
            )
        }
    };
    // A consumer's client metadata (v11+): its rack, and any replica serves it.
    let client_rack = (ctx.version >= 11 && follower.is_none()).then(|| req.rack_id.as_str());
    // Followers need CLUSTER_ACTION (else every partition is refused),
    // consumers READ on each topic; both before any existence check except
    // an unknown topic id's (Kafka's order).
    let follower_allowed = follower.is_some() && ctx.authorize_cluster(AclOperation::ClusterAction);
    let mut readable = std::collections::HashMap::<String, bool>::new();
    let mut topics: Vec<TopicData> = Vec::new();
    let mut wanted = Vec::with_capacity(targets.len());
    let mut info = None;
    for (i, target) in targets.iter().enumerate() {
        if i == 0 || targets[i - 1].group != target.group {
            info = session::topic_info(broker, &target.key.topic);
            let (name, id) = session::topic_names(&target.key.topic, info.as_ref());
            topics.push(TopicData {
                name,
                id,
                partitions: Vec::new(),
            });
        }
        let topic_idx = topics.len() - 1;
        let name = &topics[topic_idx].name;
        let p = &target.request;
        let partition = target.key.partition;
        let denied = if follower.is_some() {
            !follower_allowed
        } else if ctx.version >= 13 && info.is_none() {
            false
        } else {
            !*readable
                .entry(name.clone())
                .or_insert_with(|| ctx.authorize(AclOperation::Read, ResourceType::Topic, name))
        };
        let target = if denied {
            Err(ResponseError::TopicAuthorizationFailed)
        } else {
            resolve(
                broker,
                info.as_ref(),
                ctx.version,
                partition,
                p.current_leader_epoch,
                client_rack.is_some(),
            )
            .map_err(|e| e.kind())
        };
        let preferred = match (&target, client_rack, &info) {
            (Ok(log), Some(rack), Some(info)) => {
                preferred_read_replica(broker, info, log, partition, p.fetch_offset, rack)
            }
            _ => None,
        };
        let (target, diverging) = match (target, follower, &info) {
            (Ok(log), Some(f), Some(info)) => {
                match follower_fetch(broker, info, &log, f, partition, p) {
                    Ok(diverging) => (Ok(log), diverging),
                    Err(e) => (Err(e.kind()), None),
                }
            }
            (target, ..) => (target, None),
        };
        wanted.push(Wanted {
            topic_idx,
            partition,
            fetch_offset: p.fetch_offset,
            partition_max_bytes: p.partition_max_bytes,
            target,
            diverging,
            preferred,
        });
    }
    let min_bytes = req.min_bytes.max(0) as u64;
    let max_bytes = if req.max_bytes <= 0 {
        i32::MAX
    } else {
        req.max_bytes
    } as usize;
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let wanted = Arc::new(wanted);
    let mut appends = broker.appends.subscribe();
    // Cluster mode: a consumer's records become visible when the high
    // watermark moves (a follower fetched them, or this follower learned
    // it), which is not an append here. Followers wait for appends only
    // (KAFKA-9952: HW moves alone do not wake replica fetches).
    let mut replica_changes = broker
        .replicas
        .as_ref()
        .filter(|_| follower.is_none())
        .map(|r| r.subscribe());
    let mut shutdown = broker.shutdown.clone();
    let outcomes = loop {
        appends.borrow_and_update();
        if let Some(rx) = replica_changes.as_mut() {
            rx.borrow_and_update();
        }
        let w = wanted.clone();
        let outcomes = broker
            .blocking(move |b| read_all(b, &w, max_bytes, read_committed, follower.is_some()))
            .await;
        let bytes: u64 = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Data(d, ..) => d.total_len(),
                Outcome::Remote(r, ..) => r.len() as u64,
                Outcome::Error(..) | Outcome::Diverging(..) | Outcome::Preferred(..) => 0,
            })
            .sum();
        let has_error = outcomes.iter().any(|o| {
            matches!(
                o,
                Outcome::Error(..) | Outcome::Diverging(..) | Outcome::Preferred(..)
            )
        });
        if min_bytes == 0 || bytes >= min_bytes || has_error || *shutdown.borrow() {
            break outcomes;
        }
        let replica_changed = async {
            match replica_changes.as_mut() {
                Some(rx) => rx.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = appends.changed() => { if changed.is_err() { break outcomes; } }
            _ = replica_changed => {}
            _ = tokio::time::sleep_until(deadline) => break outcomes,
            _ = shutdown.changed() => break outcomes,
        }
        if tokio::time::Instant::now() >= deadline {
            let w = wanted.clone();
            break broker
                .blocking(move |b| read_all(b, &w, max_bytes, read_committed, follower.is_some()))
                .await;
        }
    };
    let mut answers = Vec::with_capacity(wanted.len());
    for (w, outcome) in wanted.iter().zip(outcomes) {
        count_fetched(
            broker,
            &topics[w.topic_idx].name,
            &outcome,
            follower.is_some(),
        );
        answers.push(partition_data(w.partition, outcome, read_committed));
    }
    session::respond(
        ctx,
        &context,
        &targets,
        topics,
        &wanted,
        answers,
        follower.is_none(),
    )
}

/// Count one partition's answer in the BrokerTopicMetrics and the Fetch
/// error counts.
fn count_fetched(broker: &Broker, topic: &str, outcome: &Outcome, follower: bool) {
    let (bytes, code, remote) = match outcome {
        Outcome::Data(d, ..) => (d.total_len(), NONE, false),
        Outcome::Remote(r, ..) => (r.len() as u64, NONE, true),
        Outcome::Error(e, _) => (0, e.code(), false),
        Outcome::Diverging(..) | Outcome::Preferred(..) => (0, NONE, false),
    };
    let m = &broker.metrics;
    m.requests
        .error(kafka_protocol::messages::ApiKey::Fetch, code);
    m.topics.fetched(
        &m.topics.topic(topic),
        crate::metrics::Fetched {
            bytes,
            failed: code != NONE,
            remote,
            follower,
        },
    );
}

fn resolve(
    broker: &Broker,
    info: Option<&crate::topics::TopicInfo>,
    version: i16,
    partition: i32,
    current_leader_epoch: i32,
    any_replica: bool,
) -> Result<Arc<Log>, ApiError> {
    let Some(info) = info else {
        return Err(if version >= 13 {
            ApiError::UnknownTopicId
        } else {
            ApiError::UnknownTopicOrPartition
        });
    };
    if partition < 0 || partition >= info.partitions {
        return Err(ApiError::UnknownTopicOrPartition);
    }
    let current = broker.leader_epoch(info, partition);
    if current_leader_epoch >= 0 {
        if current_leader_epoch < current {
            return Err(ApiError::FencedLeaderEpoch {
                requested: current_leader_epoch,
                current,
            });
        }
        if current_leader_epoch > current {
            return Err(ApiError::UnknownLeaderEpoch {
                requested: current_leader_epoch,
                current,
            });
        }
    }
    if any_replica {
        broker.replica_log(info, partition)
    } else {
        broker.partition_log(info, partition)
    }
}

/// KIP-392: the follower a consumer in `rack` should read from, when this
/// broker leads the partition and its replica selector picks one.
fn preferred_read_replica(
    broker: &Broker,
    info: &crate::topics::TopicInfo,
    log: &Arc<Log>,
    partition: i32,
    fetch_offset: i64,
    rack: &str,
) -> Option<i32> {
    broker.config.replication.replica_selector?;
    let replicas = broker.replicas.as_ref()?;
    let tp = strata_log::TopicPartition::new(info.name.clone(), partition);
    let p = replicas.get(&tp).filter(|r| Arc::ptr_eq(&r.log, log))?;
    replicas.preferred_read_replica(&p, rack, fetch_offset)
}

/// A follower's Fetch of a partition this broker leads (see the module
/// doc): `Some` diverging epoch, or `None` to read records.
fn follower_fetch(
    broker: &Broker,
    info: &crate::topics::TopicInfo,
    log: &Arc<Log>,
    (replica, replica_epoch): (i32, i64),
    partition_index: i32,
    p: &PartitionRequest,
) -> Result<Option<(i32, i64)>, ApiError> {
    let Some(replicas) = &broker.replicas else {
        // Single-node mode has no followers.
        return Err(ApiError::NotLeaderOrFollower);
    };
    let tp = strata_log::TopicPartition::new(info.name.clone(), partition_index);
    let partition = replicas
        .get(&tp)
        .filter(|r| Arc::ptr_eq(&r.log, log))
        .ok_or(ApiError::NotLeaderOrFollower)?;
    if !partition.has_replica(replica) {
        return Err(if p.current_leader_epoch >= 0 {
            ApiError::UnknownLeaderEpoch {
                requested: p.current_leader_epoch,
                current: partition.leader_epoch(),
            }
        } else {
            ApiError::NotLeaderOrFollower
        });
    }
    if p.last_fetched_epoch >= 0 {
        let out_of_range = || {
            ApiError::Log(strata_log::LogError::OffsetOutOfRange {
                tp: tp.clone(),
                requested: Offset(p.fetch_offset),
                log_start: log.log_start_offset(),
                log_end: log.log_end_offset(),
            })
        };
        if p.fetch_offset < log.log_start_offset().0 {
            return Err(out_of_range());
        }
        let end = log
            .end_offset_for_epoch(strata_log::LeaderEpoch(p.last_fetched_epoch))
            .map(|(e, o)| (e.0, o.0));
        match crate::replication::diverging_epoch(end, p.last_fetched_epoch, p.fetch_offset) {
            Err(()) => return Err(out_of_range()),
            Ok(Some(diverging)) => return Ok(Some(diverging)),
            Ok(None) => {}
        }
    }
    replicas.record_follower_fetch(
        &partition,
        replica,
        replica_epoch,
        p.fetch_offset,
        p.log_start_offset,
    )?;
    Ok(None)
}

/// Read every partition within the byte budgets (blocking: index lookups).
/// Followers read up to the log end, consumers up to the high watermark
/// (the last stable offset with read_committed).
fn read_all(
    b: &Broker,
    wanted: &[Wanted],
    max_bytes: usize,
    read_committed: bool,
    follower: bool,
) -> Vec<Outcome> {
    let mut remaining = max_bytes;
    let mut first_data_seen = false;
    wanted
        .iter()
        .map(|w| {
            let log = match &w.target {
                Ok(log) => log.clone(),
                Err(error) => return Outcome::Error(*error, None),
            };
            if let Some(diverging) = w.diverging {
                return Outcome::Diverging(diverging, log);
            }
            if let Some(replica) = w.preferred {
                return Outcome::Preferred(replica, log);
            }
            let bound = if follower {
                ReadBound::LogEnd
            } else if read_committed {
                ReadBound::Offset(log.last_stable_offset())
            } else {
                ReadBound::HighWatermark
            };
            let limit = (w.partition_max_bytes.max(0) as usize).min(remaining);
            match log.read(Offset(w.fetch_offset), limit, bound, !first_data_seen) {
                Ok(data) => {
                    let len = data.total_len() as usize;
                    if len > 0 {
                        first_data_seen = true;
                        remaining = remaining.saturating_sub(len);
                    }
                    // Kafka `UnifiedLog.addAbortedTransactions`: only for
                    // READ_COMMITTED, empty for an empty read.
                    let aborted = match read_committed {
                        false => None,
                        true if len == 0 => Some(Vec::new()),
                        true => match log.collect_aborted_transactions(
                            Offset(w.fetch_offset),
                            data.aborted_upper_bound,
                        ) {
                            Ok(list) => Some(aborted_entries(&list)),
                            Err(e) => return Outcome::Error(ApiError::Log(e).kind(), Some(log)),
                        },
                    };
                    Outcome::Data(data, log, aborted)
                }
                Err(e) if follower && crate::tiered::moved_to_tiered(b, &log, &e) => {
                    // Kafka `ReplicaManager`: a replica below the leader's
                    // local log start rebuilds its state from the remote
                    // tier's metadata instead of fetching the records.
                    Outcome::Error(ResponseError::OffsetMovedToTieredStorage, Some(log))
                }
                Err(e) => match crate::tiered::remote_read(
                    b,
                    &log,
                    &e,
                    w.fetch_offset,
                    limit,
                    !first_data_seen,
                    read_committed,
                ) {
                    Some(Ok((records, aborted))) => {
                        if !records.is_empty() {
                            first_data_seen = true;
                            remaining = remaining.saturating_sub(records.len());
                        }
                        let start = crate::tiered::log_start_offset(b, &log);
                        let aborted = aborted.map(|list| aborted_entries(&list));
                        Outcome::Remote(records, log, start, aborted)
                    }
                    Some(Err(error)) => {
                        b.metrics
                            .topics
                            .remote_fetch_failed(&log.topic_partition().topic);
                        Outcome::Error(error.kind(), Some(log))
                    }
                    None => Outcome::Error(ApiError::Log(e).kind(), Some(log)),
                },
            }
        })
        .collect()
}

/// The response's `AbortedTransactions` entries: (producer id, first offset).
fn aborted_entries(list: &[strata_log::AbortedTxn]) -> Vec<(i64, i64)> {
    list.iter()
        .map(|t| (t.producer_id.0, t.first_offset.0))
        .collect()
}

fn partition_data(partition: i32, outcome: Outcome, read_committed: bool) -> PartitionData {
    match outcome {
        Outcome::Data(d, log, aborted) => PartitionData {
            high_watermark: d.high_watermark.0,
            last_stable_offset: d.high_watermark.0.min(log.last_stable_offset().0),
            log_start_offset: d.log_start_offset.0,
            aborted: aborted.or_else(|| read_committed.then(Vec::new)),
            records: Records::Files(d.slices),
            ..PartitionData::empty(partition, NONE)
        },
        Outcome::Remote(records, log, log_start_offset, aborted) => PartitionData {
            high_watermark: log.high_watermark().0,
            last_stable_offset: log.last_stable_offset().0,
            log_start_offset,
            aborted: aborted.or_else(|| read_committed.then(Vec::new)),
            records: Records::Mem(records),
            ..PartitionData::empty(partition, NONE)
        },
        Outcome::Diverging(diverging, log) => PartitionData {
            high_watermark: log.high_watermark().0,
            last_stable_offset: log.last_stable_offset().0,
            log_start_offset: log.log_start_offset().0,
            diverging_epoch: Some(diverging),
            ..PartitionData::empty(partition, NONE)
        },
        Outcome::Preferred(replica, log) => PartitionData {
            high_watermark: log.high_watermark().0,
            last_stable_offset: log.last_stable_offset().0,
            log_start_offset: log.log_start_offset().0,
            preferred_read_replica: replica,
            ..PartitionData::empty(partition, NONE)
        },
        Outcome::Error(error, log) => {
            let (hw, lso, start) = match &log {
                Some(l) => (
                    l.high_watermark().0,
                    l.last_stable_offset().0,
                    l.log_start_offset().0,
                ),
                None => (-1, -1, -1),
            };
            PartitionData {
                high_watermark: hw,
                last_stable_offset: lso,
                log_start_offset: start,
                ..PartitionData::empty(partition, error.code())
            }
        }
    }
}
