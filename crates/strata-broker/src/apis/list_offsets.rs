//! ListOffsets (key 2), versions 1–9: offsets by special timestamp or by time.
//!
//! -2 EARLIEST (log start), -1 LATEST (high watermark; last stable offset for
//! read_committed), -3 MAX_TIMESTAMP (v7+), -4 EARLIEST_LOCAL (v8+; the
//! local log start and its epoch), -5 LATEST_TIERED (v9+; nothing is tiered, so -1),
//! otherwise the first offset whose timestamp is at or after the target.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use strata_log::{Log, Timestamp};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::api_error::ApiError;

const EARLIEST: i64 = -2;
const LATEST: i64 = -1;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

struct Job {
    topic_idx: usize,
    slot: usize,
    log: Arc<Log>,
    timestamp: i64,
}

pub(crate) async fn handle(ctx: &RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let broker = &ctx.broker;
    let read_committed = req.isolation_level == 1;
    // A follower (cluster mode) asks for the leader's log end, not the
    // high watermark.
    let from_replica = req.replica_id.0 >= 0 && broker.replicas.is_some();
    let mut resp = ListOffsetsResponse::default();
    let describable = ctx.authorized_names(
        AclOperation::Describe,
        ResourceType::Topic,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    let mut jobs = Vec::new();
    for (topic_idx, t) in req.topics.into_iter().enumerate() {
        let mut out = ListOffsetsTopicResponse::default();
        out.name = t.name.clone();
        let info = broker.topics.get(t.name.as_str());
        let allowed = describable.contains(t.name.as_str());
        for p in t.partitions {
            let target = match &info {
                _ if !allowed => Err(ApiError::TopicAuthorizationFailed),
                None => Err(ApiError::UnknownTopicOrPartition),
                Some(info) => check_epoch(
                    broker.leader_epoch(info, p.partition_index),
                    p.current_leader_epoch,
                )
                .and_then(|_| broker.partition_log(info, p.partition_index)),
            };
            match target {
                Ok(log) => {
                    jobs.push(Job {
                        topic_idx,
                        slot: out.partitions.len(),
                        log,
                        timestamp: p.timestamp,
                    });
                    out.partitions
                        .push(answer(p.partition_index, 0, -1, -1, -1));
                }
                Err(e) => out
                    .partitions
                    .push(answer(p.partition_index, e.code(), -1, -1, -1)),
            }
        }
        resp.topics.push(out);
    }
    if !jobs.is_empty() {
        let results = broker
            .blocking(move |b| {
                jobs.into_iter()
                    .map(|j| {
                        let r = crate::tiered::list_offset(b, &j.log, j.timestamp).unwrap_or_else(
                            || lookup(&j.log, j.timestamp, read_committed, from_replica),
                        );
                        (j.topic_idx, j.slot, r)
                    })
                    .collect::<Vec<_>>()
            })
            .await;
        for (topic_idx, slot, result) in results {
            let p = &mut resp.topics[topic_idx].partitions[slot];
            match result {
                Ok((timestamp, offset, epoch)) => {
                    p.timestamp = timestamp;
                    p.offset = offset;
                    // leader_epoch exists from v4 and is not ignorable below.
                    if ctx.version >= 4 {
                        p.leader_epoch = epoch;
                    }
                }
                Err(e) => p.error_code = e.code(),
            }
        }
    }
    resp
}

fn answer(
    partition: i32,
    error: i16,
    ts: i64,
    offset: i64,
    epoch: i32,
) -> ListOffsetsPartitionResponse {
    let mut p = ListOffsetsPartitionResponse::default();
    p.partition_index = partition;
    p.error_code = error;
    p.timestamp = ts;
    p.offset = offset;
    p.leader_epoch = epoch;
    p
}

/// Leader-epoch fencing of `current_leader_epoch` (v4+; -1 = not given).
pub(crate) fn check_epoch(current: i32, requested: i32) -> Result<(), ApiError> {
    if requested < 0 || requested == current {
        Ok(())
    } else if requested < current {
        Err(ApiError::FencedLeaderEpoch { requested, current })
    } else {
        Err(ApiError::UnknownLeaderEpoch { requested, current })
    }
}

/// (timestamp, offset, leader epoch) for one partition (blocking).
fn lookup(
    log: &Log,
    timestamp: i64,
    read_committed: bool,
    from_replica: bool,
) -> Result<(i64, i64, i32), ApiError> {
    let epoch_of = |_offset: i64| log.latest_epoch().map(|e| e.0).unwrap_or(-1);
    // Kafka `Partition.fetchOffsetForTimestamp`: a consumer sees up to the
    // LSO (READ_COMMITTED) or the high watermark, a replica up to the log
    // end (transactions.md §7.3).
    let last_fetchable = if from_replica {
        log.log_end_offset()
    } else if read_committed {
        log.last_stable_offset()
    } else {
        log.high_watermark()
    };
    match timestamp {
        EARLIEST => {
            let o = log.log_start_offset().0;
            Ok((-1, o, epoch_of(o)))
        }
        // Kafka: the local log start and the epoch it was written in (a
        // tiered log's local start is above its log start).
        EARLIEST_LOCAL => {
            let o = log.local_log_start_offset().0.max(log.log_start_offset().0);
            let epoch = log
                .epoch_for_offset(strata_log::Offset(o))
                .map_or(-1, |e| e.0);
            Ok((-1, o, epoch))
        }
        LATEST => {
            let o = last_fetchable.0;
            Ok((-1, o, epoch_of(o)))
        }
        LATEST_TIERED => Ok((-1, -1, -1)),
        // At or past the last fetchable offset: "not found".
        MAX_TIMESTAMP => Ok(match log.latest_timestamp_and_offset() {
            Some(t) if t.offset < last_fetchable => (
                t.timestamp.0,
                t.offset.0,
                t.leader_epoch.map(|e| e.0).unwrap_or(-1),
            ),
            _ => (-1, -1, -1),
        }),
        ts if ts < 0 => Err(ApiError::InvalidRequest {
            reason: "unknown special timestamp",
        }),
        ts => match log
            .fetch_offset_for_timestamp(Timestamp(ts))
            .map_err(ApiError::Log)?
        {
            Some(t) if t.offset < last_fetchable => Ok((
                t.timestamp.0,
                t.offset.0,
                t.leader_epoch.map(|e| e.0).unwrap_or(-1),
            )),
            _ => Ok((-1, -1, -1)),
        },
    }
}
