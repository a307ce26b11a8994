//! Follower fetchers: for each leader broker, `num.replica.fetchers` tasks,
//! each sending one replica Fetch at a time for its share of the
//! partitions (spread by a hash of the partition), appending what comes
//! back with `append_as_follower`, following the leader's high watermark
//! and log start, and truncating where the leader reports a diverging
//! epoch.
//!
//! A partition leaves its fetcher when this broker applies a new state for
//! it (a new leader or epoch re-adds it, to the right leader); a response
//! for a partition that left, or whose log end moved, since the request
//! was built is ignored (KAFKA-13207).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_log::{ErrorChain, LeaderEpoch, Offset, TopicPartition};
use tokio::sync::Notify;
use uuid::Uuid;

use super::client::{PeerConnection, PeerError};
use super::divergence::truncation_offset;
use super::{Partition, ReplicaManager};

const FETCH_VERSION: i16 = 15;
const LIST_OFFSETS_VERSION: i16 = 4;
/// EARLIEST_LOCAL_TIMESTAMP needs ListOffsets v8 (KIP-405).
const LIST_OFFSETS_TIERED_VERSION: i16 = 8;
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
pub(super) const EARLIEST_LOCAL: i64 = -4;

/// A partition in a fetcher.
#[derive(Clone, Debug)]
struct Fetching {
    partition: Arc<Partition>,
    leader_epoch: i32,
    topic_id: Uuid,
    /// Back-off after an error (ms since the epoch); 0 = now.
    delayed_until_ms: i64,
}

/// One fetcher task's partitions, shared with the task.
#[derive(Default)]
struct Shared {
    partitions: Mutex<BTreeMap<TopicPartition, Fetching>>,
    wake: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<TopicPartition, Fetching>> {
        self.partitions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Fetcher {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// Every fetcher of this broker, by (leader, index).
pub(super) struct Fetchers {
    count: usize,
    inner: Mutex<HashMap<(i32, usize), Fetcher>>,
}

impl Fetchers {
    pub(super) fn new(count: usize) -> Fetchers {
        Fetchers {
            count,
            inner: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(i32, usize), Fetcher>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fetch `partition` from `leader` in `leader_epoch`.
    pub(super) fn add(
        &self,
        manager: &Arc<ReplicaManager>,
        leader: i32,
        partition: Arc<Partition>,
        leader_epoch: i32,
        topic_id: Uuid,
    ) {
        let Some(shutdown) = manager.shutdown_signal() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut h = DefaultHasher::new();
        partition.tp.hash(&mut h);
        let index = (h.finish() % self.count as u64) as usize;
        let mut inner = self.lock();
        let fetcher = inner.entry((leader, index)).or_insert_with(|| {
            let shared = Arc::new(Shared::default());
            let task = runtime.spawn(run(
                manager.clone(),
                shutdown.clone(),
                leader,
                shared.clone(),
            ));
            Fetcher { shared, task }
        });
        fetcher.shared.lock().insert(
            partition.tp.clone(),
            Fetching {
                partition,
                leader_epoch,
                topic_id,
                delayed_until_ms: 0,
            },
        );
        fetcher.shared.wake.notify_one();
    }

    /// Stop fetching `tp` (from whichever leader); a fetcher left without
    /// partitions stops.
    pub(super) fn remove(&self, tp: &TopicPartition) {
        let mut inner = self.lock();
        inner.retain(|_, f| {
            f.shared.lock().remove(tp);
            if f.shared.lock().is_empty() {
                f.task.abort();
                false
            } else {
                true
            }
        });
    }
}

/// What one request asked for a partition.
struct Sent {
    tp: TopicPartition,
    leader_epoch: i32,
    fetch_offset: i64,
}

async fn run(
    manager: Arc<ReplicaManager>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    leader: i32,
    shared: Arc<Shared>,
) {
    let me = manager.me;
    let settings = manager.settings().clone();
    let backoff = Duration::from_millis(settings.fetch_backoff_ms.max(1) as u64);
    let timeout = Duration::from_millis(
        (settings.socket_timeout_ms.max(0) + settings.fetch_wait_max_ms.max(0)) as u64,
    );
    let mut conn: Option<PeerConnection> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let now = manager.now_ms();
        let due: Vec<(TopicPartition, Fetching)> = shared
            .lock()
            .iter()
            .filter(|(_, f)| f.delayed_until_ms <= now)
            .map(|(tp, f)| (tp.clone(), f.clone()))
            .collect();
        if due.is_empty() {
            let next = shared
                .lock()
                .values()
                .map(|f| f.delayed_until_ms)
                .min()
                .map_or(backoff, |t| {
                    Duration::from_millis((t - now).clamp(1, 60_000) as u64)
                });
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(next) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        if conn.is_none() {
            match connect(&manager, leader, timeout).await {
                Ok(c) => conn = Some(c),
                Err(error) => {
                    tracing::debug!(leader, error = %ErrorChain(&error), "cannot reach the leader; backing off");
                    delay(
                        &shared,
                        due.iter().map(|(tp, _)| tp),
                        now + backoff.as_millis() as i64,
                    );
                    continue;
                }
            }
        }
        let (request, sent) = build_request(&manager, &settings, &due);
        let c = conn.as_mut().expect("connected above");
        let response = tokio::select! {
            r = c.send(&request, FETCH_VERSION, timeout) => r,
            _ = shutdown.changed() => return,
        };
        let response = match response {
            Ok(r) if r.error_code == 0 => r,
            Ok(r) => {
                tracing::debug!(
                    leader,
                    error_code = r.error_code,
                    "fetch refused; backing off"
                );
                delay(
                    &shared,
                    sent.iter().map(|s| &s.tp),
                    now + backoff.as_millis() as i64,
                );
                continue;
            }
            Err(error) => {
                if matches!(error, PeerError::Protocol { .. }) {
                    tracing::warn!(leader, error = %ErrorChain(&error), "fetch failed; reconnecting");
                } else {
                    tracing::debug!(leader, error = %ErrorChain(&error), "fetch failed; reconnecting");
                }
                conn = None;
                delay(
                    &shared,
                    sent.iter().map(|s| &s.tp),
                    now + backoff.as_millis() as i64,
                );
                continue;
            }
        };
        let shared2 = shared.clone();
        let retry_at = manager.now_ms() + backoff.as_millis() as i64;
        let (out_of_range, moved_to_tiered, high_watermark_rose) =
            match tokio::task::spawn_blocking(move || process(&shared2, sent, response, retry_at))
                .await
            {
                Ok(v) => v,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => return,
            };
        if high_watermark_rose {
            // Consumers parked on this follower (fetch from follower) wake
            // on the manager's ticks (KAFKA-14334).
            manager.changed();
        }
        for (tp, epoch) in moved_to_tiered {
            let c = conn.as_mut().expect("connected above");
            if let Err(error) =
                catch_up_from_remote(&manager, &shared, c, &tp, epoch, timeout).await
            {
                tracing::warn!(%tp, leader, error = %ErrorChain(&error), "cannot build the follower's state from the remote tier; backing off");
                if matches!(error, super::tier_state::TierStateError::Peer(_)) {
                    conn = None;
                }
                delay(
                    &shared,
                    [&tp],
                    manager.now_ms() + backoff.as_millis() as i64,
                );
                break;
            }
        }
        for (tp, epoch) in out_of_range {
            let Some(c) = conn.as_mut() else {
                break;
            };
            if let Err(error) = reset_out_of_range(&shared, c, me, &tp, epoch, timeout).await {
                tracing::warn!(%tp, leader, error = %ErrorChain(&error), "cannot find where to fetch from; backing off");
                conn = None;
                delay(
                    &shared,
                    [&tp],
                    manager.now_ms() + backoff.as_millis() as i64,
                );
                break;
            }
        }
    }
}

async fn connect(
    manager: &ReplicaManager,
    leader: i32,
    timeout: Duration,
) -> Result<PeerConnection, PeerError> {
    let snapshot = manager.cluster.applied();
    let addr = match snapshot.brokers.get(&leader) {
        Some(b) => format!("{}:{}", b.record.host, b.record.port),
        None => {
            return Err(PeerError::Protocol {
                broker: leader,
                reason: "not registered".into(),
            })
        }
    };
    PeerConnection::connect(
        leader,
        &addr,
        format!("strata-replica-fetcher-{}", manager.me),
        timeout,
    )
    .await
}

fn delay<'a>(shared: &Shared, tps: impl IntoIterator<Item = &'a TopicPartition>, until_ms: i64) {
    let mut parts = shared.lock();
    for tp in tps {
        if let Some(f) = parts.get_mut(tp) {
            f.delayed_until_ms = until_ms;
        }
    }
}

fn build_request(
    manager: &ReplicaManager,
    settings: &crate::config::ReplicationSettings,
    due: &[(TopicPartition, Fetching)],
) -> (FetchRequest, Vec<Sent>) {
    let broker_epoch = manager
        .cluster
        .applied()
        .brokers
        .get(&manager.me)
        .map_or(-1, |b| b.epoch);
    let mut parts = Vec::with_capacity(due.len());
    let mut sent = Vec::with_capacity(due.len());
    for (tp, f) in due {
        let log = &f.partition.log;
        let fetch_offset = log.log_end_offset().0;
        let mut p = FetchPartition::default();
        p.partition = tp.partition;
        p.current_leader_epoch = f.leader_epoch;
        p.fetch_offset = fetch_offset;
        p.last_fetched_epoch = log.latest_epoch().map_or(-1, |e| e.0);
        p.log_start_offset = log.log_start_offset().0;
        p.partition_max_bytes = settings.fetch_max_bytes;
        parts.push((f.topic_id, p));
        sent.push(Sent {
            tp: tp.clone(),
            leader_epoch: f.leader_epoch,
            fetch_offset,
        });
    }
    (
        fetch_request(manager.me, broker_epoch, settings, parts),
        sent,
    )
}

/// A replica Fetch (v15: the replica id and broker epoch travel in
/// `ReplicaState`, topics by id, no fetch session).
fn fetch_request(
    me: i32,
    broker_epoch: i64,
    settings: &crate::config::ReplicationSettings,
    parts: Vec<(Uuid, FetchPartition)>,
) -> FetchRequest {
    let mut request = FetchRequest::default();
    let mut state = ReplicaState::default();
    state.replica_id = me.into();
    state.replica_epoch = broker_epoch;
    request.replica_state = state;
    request.max_wait_ms = settings.fetch_wait_max_ms;
    request.min_bytes = settings.fetch_min_bytes;
    request.max_bytes = settings.fetch_response_max_bytes;
    request.session_id = 0;
    request.session_epoch = -1;
    let mut topics: BTreeMap<Uuid, FetchTopic> = BTreeMap::new();
    for (topic_id, p) in parts {
        topics
            .entry(topic_id)
            .or_insert_with(|| {
                let mut t = FetchTopic::default();
                t.topic_id = topic_id;
                t
            })
            .partitions
            .push(p);
    }
    request.topics = topics.into_values().collect();
    request
}

/// A ListOffsets as a replica (the leader answers its log end for LATEST).
fn list_offsets_request(
    me: i32,
    tp: &TopicPartition,
    epoch: i32,
    timestamp: i64,
) -> ListOffsetsRequest {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = tp.partition;
    p.current_leader_epoch = epoch;
    p.timestamp = timestamp;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(StrBytes::from_string(tp.topic.clone()));
    t.partitions = vec![p];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = me.into();
    request.topics = vec![t];
    request
}

/// The partitions the leader answered an error for, with the epoch they
/// were fetched in.
type Answered = Vec<(TopicPartition, i32)>;

/// Apply a Fetch response (blocking). Returns the partitions the leader
/// answered OFFSET_OUT_OF_RANGE for, those it answered
/// OFFSET_MOVED_TO_TIERED_STORAGE for, and whether any high watermark rose.
fn process(
    shared: &Shared,
    sent: Vec<Sent>,
    response: FetchResponse,
    retry_at_ms: i64,
) -> (Answered, Answered, bool) {
    let mut by_key: HashMap<(Uuid, i32), kafka_protocol::messages::fetch_response::PartitionData> =
        HashMap::new();
    for t in response.responses {
        for p in t.partitions {
            by_key.insert((t.topic_id, p.partition_index), p);
        }
    }
    let now_backoff = |f: &mut Fetching| f.delayed_until_ms = retry_at_ms;
    let mut out_of_range = Vec::new();
    let mut moved_to_tiered = Vec::new();
    let mut high_watermark_rose = false;
    for s in sent {
        let mut parts = shared.lock();
        let Some(f) = parts.get_mut(&s.tp) else {
            continue;
        };
        if f.leader_epoch != s.leader_epoch {
            continue;
        }
        let Some(data) = by_key.remove(&(f.topic_id, s.tp.partition)) else {
            continue;
        };
        let log = f.partition.log.clone();
        if log.log_end_offset().0 != s.fetch_offset {
            continue;
        }
        match ResponseError::try_from_code(data.error_code) {
            None => {}
            Some(ResponseError::FencedLeaderEpoch) => {
                // Our metadata is behind: wait for the new state to re-add it.
                tracing::info!(tp = %s.tp, epoch = s.leader_epoch, "fenced by the leader; waiting for new metadata");
                parts.remove(&s.tp);
                continue;
            }
            Some(ResponseError::OffsetOutOfRange) => {
                out_of_range.push((s.tp.clone(), s.leader_epoch));
                continue;
            }
            Some(ResponseError::OffsetMovedToTieredStorage) => {
                moved_to_tiered.push((s.tp.clone(), s.leader_epoch));
                continue;
            }
            Some(error) => {
                tracing::debug!(tp = %s.tp, ?error, "fetch error; backing off");
                now_backoff(f);
                continue;
            }
        }
        // Appended or truncated under the fetcher's lock: a role change
        // removes the partition under the same lock first, so a response
        // from the old leader can never land after this broker took the
        // partition's new state (a stale append after becoming leader
        // would put old-epoch batches above the new epoch's start).
        tracing::trace!(tp = %s.tp, fetch_offset = s.fetch_offset, records = data.records.as_ref().map_or(0, |r| r.len()), diverging = ?(data.diverging_epoch.epoch, data.diverging_epoch.end_offset), high_watermark = data.high_watermark, "fetch response");
        let before = log.high_watermark();
        let r = apply_partition(&s, &data, &log);
        high_watermark_rose |= log.high_watermark() > before;
        if let Err(error) = r {
            tracing::warn!(tp = %s.tp, error = %ErrorChain(&error), "cannot apply the leader's records; backing off");
            now_backoff(f);
        }
    }
    (out_of_range, moved_to_tiered, high_watermark_rose)
}

fn apply_partition(
    s: &Sent,
    data: &kafka_protocol::messages::fetch_response::PartitionData,
    log: &strata_log::Log,
) -> Result<(), strata_log::LogError> {
    let diverging = &data.diverging_epoch;
    if diverging.epoch >= 0 || diverging.end_offset >= 0 {
        // Truncate first; this response's high watermark is not applied
        // (KAFKA-14704): the next one brings it.
        let leo = log.log_end_offset().0;
        let own = log
            .end_offset_for_epoch(LeaderEpoch(diverging.epoch))
            .map(|(e, o)| (e.0, o.0));
        let to = truncation_offset((diverging.epoch, diverging.end_offset), own, leo);
        if to < log.high_watermark().0 {
            tracing::warn!(tp = %s.tp, to, high_watermark = log.high_watermark().0, "truncating below the high watermark");
        }
        tracing::info!(tp = %s.tp, from = leo, to, leader_epoch = diverging.epoch, leader_end = diverging.end_offset, "truncating to the leader's log by epoch");
        log.truncate_to(Offset(to))?;
        tracing::trace!(tp = %s.tp, log_end = log.log_end_offset().0, latest_epoch = ?log.latest_epoch(), "truncated");
        return Ok(());
    }
    let records = data.records.clone().unwrap_or_default();
    let whole = complete_batches_len(&records);
    if whole > 0 {
        log.append_as_follower(&records[..whole])?;
    }
    let leo = log.log_end_offset().0;
    log.update_high_watermark(Offset(data.high_watermark.min(leo)));
    let hw = log.high_watermark().0;
    if data.log_start_offset > log.log_start_offset().0 {
        let target = data.log_start_offset.min(hw);
        if target > log.log_start_offset().0 {
            log.maybe_increment_log_start_offset(Offset(target))?;
        }
    }
    Ok(())
}

/// The length of the whole batches at the start of `records` (a response
/// cut at its byte limit may end inside a batch).
fn complete_batches_len(records: &Bytes) -> usize {
    let mut pos = 0usize;
    while records.len() - pos >= 12 {
        let len = i32::from_be_bytes([
            records[pos + 8],
            records[pos + 9],
            records[pos + 10],
            records[pos + 11],
        ]);
        if len <= 0 {
            break;
        }
        let end = pos + 12 + len as usize;
        if end > records.len() {
            break;
        }
        pos = end;
    }
    pos
}

/// OFFSET_OUT_OF_RANGE (Kafka's `fetchOffsetAndTruncate`): a leader whose
/// log end is below ours (an unclean election) → truncate to it; a leader
/// whose log starts past our end (we fell behind retention) → restart our
/// log at its start.
async fn reset_out_of_range(
    shared: &Shared,
    conn: &mut PeerConnection,
    me: i32,
    tp: &TopicPartition,
    epoch: i32,
    timeout: Duration,
) -> Result<(), PeerError> {
    let Some(f) = shared.lock().get(tp).cloned() else {
        return Ok(());
    };
    let log = f.partition.log.clone();
    let (leader_end, _) = list_offset(conn, me, tp, epoch, LATEST, timeout).await?;
    let own_end = log.log_end_offset().0;
    let result = if leader_end >= 0 && leader_end < own_end {
        tracing::warn!(%tp, own_end, leader_end, "the leader's log ends before ours; truncating to it");
        log.truncate_to(Offset(leader_end))
    } else {
        let (leader_start, _) = list_offset(conn, me, tp, epoch, EARLIEST, timeout).await?;
        if leader_start > own_end {
            tracing::warn!(%tp, own_end, leader_start, "the leader's log starts after ours ends; restarting ours at its start");
            log.truncate_fully_and_start_at(Offset(leader_start))
        } else {
            Ok(())
        }
    };
    if let Err(error) = result {
        tracing::error!(%tp, error = %ErrorChain(&error), "cannot reset the follower's log");
    }
    Ok(())
}

/// A replica ListOffsets for one partition: (offset, leader epoch).
pub(super) async fn list_offset(
    conn: &mut PeerConnection,
    me: i32,
    tp: &TopicPartition,
    epoch: i32,
    timestamp: i64,
    timeout: Duration,
) -> Result<(i64, i32), PeerError> {
    let request = list_offsets_request(me, tp, epoch, timestamp);
    let version = if timestamp == EARLIEST_LOCAL {
        LIST_OFFSETS_TIERED_VERSION
    } else {
        LIST_OFFSETS_VERSION
    };
    let response = conn.send(&request, version, timeout).await?;
    let answer = response
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or_else(|| PeerError::Protocol {
            broker: -1,
            reason: "ListOffsets answer without the partition".into(),
        })?;
    if answer.error_code != 0 {
        return Err(PeerError::Protocol {
            broker: -1,
            reason: format!("ListOffsets error code {}", answer.error_code),
        });
    }
    Ok((answer.offset, answer.leader_epoch))
}

/// OFFSET_MOVED_TO_TIERED_STORAGE: build the partition's state from the
/// remote tier (`tier_state`), then restart the log at the leader's local
/// log start under the fetcher's lock (as an append: a role change in
/// between removed the partition, and then nothing happens).
async fn catch_up_from_remote(
    manager: &ReplicaManager,
    shared: &Arc<Shared>,
    conn: &mut PeerConnection,
    tp: &TopicPartition,
    epoch: i32,
    timeout: Duration,
) -> Result<(), super::tier_state::TierStateError> {
    let Some(f) = shared.lock().get(tp).cloned() else {
        return Ok(());
    };
    let Some(rlm) = manager.tiered.get() else {
        return Err(super::tier_state::TierStateError::NoRemoteTier { tp: tp.clone() });
    };
    let state = super::tier_state::build_remote_state(
        conn, manager.me, rlm, f.topic_id, tp, epoch, timeout,
    )
    .await?;
    let log_start = rlm
        .log_start_offset(tp)
        .unwrap_or(state.start)
        .min(state.start);
    let (shared, tp2) = (Arc::clone(shared), tp.clone());
    let fetch_offset = f.partition.log.log_end_offset();
    let applied = tokio::task::spawn_blocking(move || {
        let parts = shared.lock();
        let Some(f) = parts.get(&tp2) else {
            return Ok(None);
        };
        let log = &f.partition.log;
        if f.leader_epoch != epoch || log.log_end_offset() != fetch_offset {
            return Ok(None);
        }
        log.restore_from_remote(
            state.start,
            log_start,
            &state.epochs,
            state.producer_snapshot.as_deref(),
        )
        .map(|()| Some(state.start))
    })
    .await;
    match applied {
        Ok(Ok(Some(start))) => {
            tracing::warn!(%tp, from = fetch_offset.0, start = start.0, log_start = log_start.0,
                "restarted the follower's log at the leader's local log start from the remote tier's metadata");
        }
        Ok(Ok(None)) => {}
        Ok(Err(error)) => {
            tracing::error!(%tp, error = %ErrorChain(&error), "cannot restart the follower's log from the remote tier");
        }
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    #[test]
    fn requests_encode_at_the_versions_sent_and_keep_their_fields() {
        let settings = crate::config::ReplicationSettings {
            fetch_wait_max_ms: 500,
            fetch_min_bytes: 1,
            fetch_max_bytes: 1 << 20,
            fetch_response_max_bytes: 10 << 20,
            ..Default::default()
        };
        let mut p = FetchPartition::default();
        p.partition = 3;
        p.current_leader_epoch = 7;
        p.fetch_offset = 42;
        p.last_fetched_epoch = 6;
        let id = Uuid::from_u128(9);
        let request = fetch_request(2, 77, &settings, vec![(id, p)]);
        let mut buf = bytes::BytesMut::new();
        request.encode(&mut buf, FETCH_VERSION).unwrap();
        let back = FetchRequest::decode(&mut buf.freeze(), FETCH_VERSION).unwrap();
        assert_eq!(back.replica_state.replica_id.0, 2);
        assert_eq!(back.replica_state.replica_epoch, 77);
        let part = &back.topics[0].partitions[0];
        assert_eq!(back.topics[0].topic_id, id);
        assert_eq!(
            (
                part.fetch_offset,
                part.last_fetched_epoch,
                part.current_leader_epoch
            ),
            (42, 6, 7)
        );

        let tp = TopicPartition::new("t", 3);
        let request = list_offsets_request(2, &tp, 7, LATEST);
        let mut buf = bytes::BytesMut::new();
        request.encode(&mut buf, LIST_OFFSETS_VERSION).unwrap();
        let back = ListOffsetsRequest::decode(&mut buf.freeze(), LIST_OFFSETS_VERSION).unwrap();
        assert_eq!(back.replica_id.0, 2);
        assert_eq!(back.topics[0].partitions[0].current_leader_epoch, 7);
    }

    #[test]
    fn a_cut_batch_at_the_end_is_left_out() {
        let mut v = Vec::new();
        for len in [20i32, 30] {
            v.extend_from_slice(&7i64.to_be_bytes());
            v.extend_from_slice(&len.to_be_bytes());
            v.extend(std::iter::repeat_n(0u8, len as usize));
        }
        let full = v.len();
        assert_eq!(complete_batches_len(&Bytes::from(v.clone())), full);
        v.truncate(full - 5);
        assert_eq!(complete_batches_len(&Bytes::from(v.clone())), 32);
        v.truncate(10);
        assert_eq!(complete_batches_len(&Bytes::from(v)), 0);
    }
}
