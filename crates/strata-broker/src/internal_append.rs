//! Appends made by the broker's own coordinators with acks=all: the
//! transaction coordinator's `__transaction_state` records, the COMMIT and
//! ABORT markers (local, or for a peer's WriteTxnMarkers) and the group
//! coordinator's transactional offset batches.
//!
//! One batch to one partition this broker leads, in the replica's current
//! leader epoch with role changes held off; then, in cluster mode, a wait
//! until the ISR holds it (Kafka's delayed produce), at most `timeout`.

use std::sync::Arc;
use std::time::Duration;

use strata_log::{LeaderEpoch, Log, LogAppendInfo, LogError, TopicPartition};

use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::replication::Partition;

/// How the batch is validated by the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// An ordinary record batch (pid -1), validated as a client's.
    Plain,
    /// A marker or a transactional offset batch (Kafka's COORDINATOR origin).
    Coordinator,
}

fn append_to(
    log: &Log,
    batch: &mut [u8],
    epoch: LeaderEpoch,
    origin: Origin,
) -> Result<LogAppendInfo, LogError> {
    match origin {
        Origin::Plain => log.append_as_leader(batch, epoch),
        Origin::Coordinator => log.append_as_coordinator(batch, epoch),
    }
}

/// An appended batch: the log, the append, and (cluster mode) the replica
/// and epoch whose high watermark must cover it.
type Appended = (Arc<Log>, LogAppendInfo, Option<(Arc<Partition>, i32)>);

/// The blocking part: append as leader, move the high watermark, fsync in
/// durable mode. Returns the replica (cluster mode) and epoch to wait on.
fn append_now(
    broker: &Broker,
    topic: &str,
    partition: i32,
    mut batch: Vec<u8>,
    origin: Origin,
) -> Result<Appended, ApiError> {
    let tp = TopicPartition::new(topic, partition);
    // A marker ends the producer's transaction: it invalidates a KIP-890
    // guard of that producer (see `txn_verify`), atomically with the append.
    let guards = (origin == Origin::Coordinator).then(|| broker.verifications.lock(&tp));
    let mut held = guards.as_ref().map(|g| g.hold());
    if let (Some(held), Ok(view)) = (held.as_mut(), strata_log::batch::BatchView::parse(&batch)) {
        held.remove(&view.producer_id().0);
    }
    match &broker.replicas {
        Some(replicas) => {
            let replica = replicas.get(&tp).ok_or(ApiError::NotLeaderOrFollower)?;
            replica.check_enough_replicas()?;
            let log = replica.log.clone();
            let (epoch, appended) = replica
                .leader_append(|epoch| append_to(&log, &mut batch, epoch, origin))
                .ok_or(ApiError::NotLeaderOrFollower)?;
            let info = appended.map_err(ApiError::Log)?;
            replicas.after_leader_append(&tp);
            if log.config().durable_append {
                log.flush_up_to(info.last_offset.plus(1))
                    .map_err(ApiError::Log)?;
            }
            Ok((log, info, Some((replica, epoch))))
        }
        None => {
            let info = broker
                .topics
                .get(topic)
                .ok_or(ApiError::UnknownTopicOrPartition)?;
            let log = broker.partition_log(&info, partition)?;
            let epoch = LeaderEpoch(broker.leader_epoch(&info, partition));
            let info = append_to(&log, &mut batch, epoch, origin).map_err(ApiError::Log)?;
            if log.config().durable_append {
                log.flush_up_to(info.last_offset.plus(1))
                    .map_err(ApiError::Log)?;
            }
            log.raise_high_watermark_to_end();
            Ok((log, info, None))
        }
    }
}

/// Append `batch` to `topic`-`partition` as its leader and wait until it is
/// committed (see the module doc).
///
/// # Errors
/// As Produce would answer for it: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
/// REQUEST_TIMED_OUT, the log's errors (INVALID_PRODUCER_EPOCH,
/// TRANSACTION_COORDINATOR_FENCED, storage errors, ...).
pub(crate) async fn append_committed(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    batch: Vec<u8>,
    origin: Origin,
    timeout: Duration,
) -> Result<LogAppendInfo, ApiError> {
    let name = topic.to_string();
    let appended = broker
        .blocking(move |b| append_now(b, &name, partition, batch, origin))
        .await;
    broker.notify_appended();
    let (_log, info, waiting) = appended?;
    let (Some(replicas), Some((replica, epoch))) = (&broker.replicas, waiting) else {
        return Ok(info);
    };
    let required = info.last_offset.0 + 1;
    let mut changes = replicas.subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut shutdown = broker.shutdown.clone();
    loop {
        changes.borrow_and_update();
        if let Some(outcome) = replica.produce_outcome(required, epoch) {
            return outcome.map(|()| info);
        }
        let stop = tokio::select! {
            r = changes.changed() => r.is_err(),
            _ = tokio::time::sleep_until(deadline) => true,
            _ = shutdown.changed() => true,
        };
        if stop {
            return Err(ApiError::ReplicationTimedOut {
                timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
            });
        }
    }
}
