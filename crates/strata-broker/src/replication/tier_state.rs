//! A follower more than its whole local log behind a tiered leader (the
//! leader answered its Fetch OFFSET_MOVED_TO_TIERED_STORAGE): Kafka 3.9's
//! `ReplicaFetcherTierStateMachine.buildRemoteLogAuxState`.
//!
//! 1. ListOffsets EARLIEST_LOCAL_TIMESTAMP (-4, v8) as a replica: the
//!    leader's local log start `L` and its epoch `E`.
//! 2. The epoch of `L - 1`: `E` itself when `E` is 0, else the leader's
//!    OffsetForLeaderEpoch of `E - 1` (its end offset is exclusive: an end
//!    above `L - 1` means `L - 1` was written in that earlier epoch).
//! 3. The COPY_SEGMENT_FINISHED remote segment holding `L - 1` in that
//!    epoch, from this broker's catalogue (the tailed `__remote_log_metadata`).
//!    Not there yet (the metadata record has not reached this broker): an
//!    error, the fetcher backs off and the next Fetch starts over.
//! 4. That segment's leader-epoch checkpoint and producer snapshot from the
//!    remote store (a missing snapshot: no producer had written by then).
//! 5. The log restarts at the segment's end + 1 with those
//!    ([`strata_log::Log::restore_from_remote`]), and fetching goes on from there.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_log::{LeaderEpoch, Offset, TopicPartition};
use strata_tiered::metadata::TopicIdPartition;
use strata_tiered::{IndexType, MetadataError, RemoteLogManager, RemoteStorageError};

use super::client::{PeerConnection, PeerError};

const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;

/// Why the remote state could not be built (the fetcher retries later).
#[derive(Debug, thiserror::Error)]
pub(super) enum TierStateError {
    #[error("asking the leader")]
    Peer(#[from] PeerError),
    #[error("{tp}: the leader answered error code {code} to {request}")]
    Leader {
        tp: TopicPartition,
        request: &'static str,
        code: i16,
    },
    #[error("{tp}: this broker has no remote tier")]
    NoRemoteTier { tp: TopicPartition },
    #[error(
        "{tp}: no remote segment holds offset {offset} in leader epoch {epoch} yet \
         (leader's local log start {local_start})"
    )]
    SegmentNotFound {
        tp: TopicPartition,
        epoch: i32,
        offset: i64,
        local_start: i64,
    },
    #[error("{tp}: reading the remote log metadata")]
    Metadata {
        tp: TopicPartition,
        #[source]
        source: Box<MetadataError>,
    },
    #[error("{tp}: fetching the remote segment's {what}")]
    Storage {
        tp: TopicPartition,
        what: &'static str,
        #[source]
        source: Box<RemoteStorageError>,
    },
    #[error("{tp}: the remote leader-epoch checkpoint is malformed: {reason}")]
    Checkpoint { tp: TopicPartition, reason: String },
}

/// What the follower's log restarts with.
#[derive(Debug)]
pub(super) struct RemoteState {
    /// The next offset to fetch (the remote segment's end + 1).
    pub start: Offset,
    pub epochs: Vec<(LeaderEpoch, Offset)>,
    pub producer_snapshot: Option<bytes::Bytes>,
}

/// Steps 1–4 of the module doc (nothing local changes here).
///
/// # Errors
/// [`TierStateError`]; every one means "retry after the back-off".
pub(super) async fn build_remote_state(
    conn: &mut PeerConnection,
    me: i32,
    rlm: &Arc<RemoteLogManager>,
    topic_id: uuid::Uuid,
    tp: &TopicPartition,
    current_epoch: i32,
    timeout: Duration,
) -> Result<RemoteState, TierStateError> {
    let (local_start, epoch) = super::fetcher::list_offset(
        conn,
        me,
        tp,
        current_epoch,
        super::fetcher::EARLIEST_LOCAL,
        timeout,
    )
    .await?;
    let previous = local_start - 1;
    let target_epoch = if epoch <= 0 {
        epoch.max(0)
    } else {
        let (earlier_epoch, earlier_end) =
            earlier_epoch_end(conn, me, tp, current_epoch, epoch - 1, timeout).await?;
        target_epoch(epoch, earlier_epoch, earlier_end, previous)
    };
    let tip = TopicIdPartition {
        topic_id,
        tp: tp.clone(),
    };
    let rlm = Arc::clone(rlm);
    let tp2 = tp.clone();
    let blocking = tokio::task::spawn_blocking(move || {
        fetch_segment_state(&rlm, &tip, target_epoch, previous, local_start)
    })
    .await;
    match blocking {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(TierStateError::NoRemoteTier { tp: tp2 }),
    }
}

/// Kafka: the leader's answer for `epoch - 1` decides the epoch of the
/// offset just below its local log start (`end` is exclusive).
fn target_epoch(epoch: i32, earlier_epoch: i32, earlier_end: i64, previous: i64) -> i32 {
    if earlier_end > previous {
        earlier_epoch
    } else {
        epoch
    }
}

fn fetch_segment_state(
    rlm: &RemoteLogManager,
    tip: &TopicIdPartition,
    epoch: i32,
    offset: i64,
    local_start: i64,
) -> Result<RemoteState, TierStateError> {
    let tp = &tip.tp;
    let not_found = || TierStateError::SegmentNotFound {
        tp: tp.clone(),
        epoch,
        offset,
        local_start,
    };
    if offset < 0 {
        return Err(not_found());
    }
    let md = rlm
        .rlmm()
        .remote_log_segment_metadata(tip, LeaderEpoch(epoch), Offset(offset))
        .map_err(|source| TierStateError::Metadata {
            tp: tp.clone(),
            source: Box::new(source),
        })?
        .ok_or_else(not_found)?;
    let checkpoint = rlm
        .rsm()
        .fetch_index(&md, IndexType::LeaderEpoch)
        .map_err(|source| TierStateError::Storage {
            tp: tp.clone(),
            what: "leader-epoch checkpoint",
            source: Box::new(source),
        })?;
    let epochs =
        parse_epoch_checkpoint(&checkpoint).map_err(|reason| TierStateError::Checkpoint {
            tp: tp.clone(),
            reason,
        })?;
    let producer_snapshot = match rlm.rsm().fetch_index(&md, IndexType::ProducerSnapshot) {
        Ok(bytes) => Some(bytes),
        Err(RemoteStorageError::NotFound { .. }) => None,
        Err(source) => {
            return Err(TierStateError::Storage {
                tp: tp.clone(),
                what: "producer snapshot",
                source: Box::new(source),
            })
        }
    };
    Ok(RemoteState {
        start: Offset(md.end_offset.0 + 1),
        epochs,
        producer_snapshot,
    })
}

/// The leader's OffsetForLeaderEpoch answer for `epoch` (as a replica).
async fn earlier_epoch_end(
    conn: &mut PeerConnection,
    me: i32,
    tp: &TopicPartition,
    current_epoch: i32,
    epoch: i32,
    timeout: Duration,
) -> Result<(i32, i64), TierStateError> {
    let mut p = OffsetForLeaderPartition::default();
    p.partition = tp.partition;
    p.current_leader_epoch = current_epoch;
    p.leader_epoch = epoch;
    let mut t = OffsetForLeaderTopic::default();
    t.topic = TopicName(StrBytes::from_string(tp.topic.clone()));
    t.partitions = vec![p];
    let mut request = OffsetForLeaderEpochRequest::default();
    request.replica_id = me.into();
    request.topics = vec![t];
    let response = conn
        .send(&request, OFFSET_FOR_LEADER_EPOCH_VERSION, timeout)
        .await?;
    let answer = response
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or_else(|| PeerError::Protocol {
            broker: -1,
            reason: "OffsetForLeaderEpoch answer without the partition".into(),
        })?;
    if answer.error_code != 0 {
        return Err(TierStateError::Leader {
            tp: tp.clone(),
            request: "OffsetForLeaderEpoch",
            code: answer.error_code,
        });
    }
    Ok((answer.leader_epoch, answer.end_offset))
}

/// A leader-epoch checkpoint as the copy uploads it: version 0, a count,
/// then `epoch start_offset` lines.
fn parse_epoch_checkpoint(text: &[u8]) -> Result<Vec<(LeaderEpoch, Offset)>, String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("0") => {}
        other => return Err(format!("unsupported version {other:?}")),
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("missing or bad entry count")?;
    let mut out = Vec::with_capacity(count);
    for line in lines.by_ref().take(count) {
        let mut parts = line.split_whitespace();
        let (Some(e), Some(o), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("bad entry {line:?}"));
        };
        let (Ok(e), Ok(o)) = (e.parse::<i32>(), o.parse::<i64>()) else {
            return Err(format!("bad entry {line:?}"));
        };
        if e < 0 || o < 0 {
            return Err(format!("negative entry {line:?}"));
        }
        out.push((LeaderEpoch(e), Offset(o)));
    }
    if out.len() != count {
        return Err(format!("{} entries, {count} expected", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_text_parses_and_bad_text_is_refused() {
        assert_eq!(
            parse_epoch_checkpoint(b"0\n2\n0 0\n2 15\n").unwrap(),
            vec![(LeaderEpoch(0), Offset(0)), (LeaderEpoch(2), Offset(15))]
        );
        assert_eq!(parse_epoch_checkpoint(b"0\n0\n").unwrap(), vec![]);
        assert!(parse_epoch_checkpoint(b"1\n0\n").is_err());
        assert!(parse_epoch_checkpoint(b"0\n2\n0 0\n").is_err());
        assert!(parse_epoch_checkpoint(b"0\n1\n0 x\n").is_err());
        assert!(parse_epoch_checkpoint(b"0\n1\n-1 3\n").is_err());
    }

    #[test]
    fn the_epoch_below_the_local_start_comes_from_the_earlier_epoch_end() {
        // Epoch 3 ends at 10 (exclusive): offset 9 was written in it.
        assert_eq!(target_epoch(5, 3, 10, 9), 3);
        // Epoch 3 ended at 8: offset 9 is already in epoch 5.
        assert_eq!(target_epoch(5, 3, 8, 9), 5);
    }
}
