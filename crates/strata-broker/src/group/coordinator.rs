//! The coordinator at runtime: [`GroupCoordinator`] wraps the pure
//! [`GroupManager`] in one mutex, parks JoinGroup/SyncGroup requests on
//! tokio oneshot channels keyed by [`Ticket`], writes records to
//! `__consumer_offsets` through the partition logs, loads the topic on first
//! use, and runs the timer task.
//!
//! Locking: `state` guards the manager and the reply channels together, so
//! a reply is always routed to the channel registered for its ticket. It is
//! held across the synchronous log append of an operation (which is why
//! every operation runs on the blocking pool) and never across `.await`.
//!
//! The broker is reached through [`GroupHost`] (implemented by the broker's
//! shared state), so this module does not depend on the broker's types.
//!
//! Time: operations read [`GroupHost::now_ms`], the clock injected into the
//! broker, so a `MockClock` drives sessions and rebalances in tests. The
//! timer task wakes at the next deadline but at least every
//! [`TIMER_POLL_MS`] of real time, so it notices a mock clock moving and a
//! deadline set by an operation meanwhile (operations never wait on it: a
//! deadline already due when an operation ends fires inside the operation).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use strata_log::batch::BatchBuilder;
use strata_log::batch::BatchScanner;
use strata_log::batch::BatchView;
use strata_log::batch::ControlRecordType;
use strata_log::{LeaderEpoch, Log, LogAppendInfo, LogError, Offset, ReadBound, Timestamp};
use tokio::sync::{oneshot, watch, OnceCell};

use super::api::{
    CommitRequest, FetchedOffset, GroupOverview, GroupSummary, HeartbeatRequest, JoinRequest,
    JoinResult, LeaveMember, LeaveResult, Reply, SyncRequest, SyncResult,
};
use super::classic::Group;
use super::config::GroupConfig;
use super::consumer::api::{ConsumerHeartbeat, ConsumerHeartbeatResult, DescribedGroup};
use super::consumer::image::TopicImage;
use super::manager::GroupManager;
use super::member::Ticket;
use super::offsets::LoadedRecord;
use super::store::{OffsetsStore, StoreError, StoreRecord};
use super::OFFSETS_TOPIC;
use crate::api_error::ApiError;

/// Longest real-time sleep of the timer task.
pub(crate) const TIMER_POLL_MS: u64 = 50;
/// Bytes read per step while loading a partition (`offsets.load.buffer.size`).
const LOAD_BUFFER_BYTES: usize = 5 * 1024 * 1024;

/// What the coordinator needs from the broker that runs it.
pub(crate) trait GroupHost: Send + Sync + Sized + 'static {
    /// The coordinator this host runs.
    fn coordinator(&self) -> &GroupCoordinator;
    /// Run `f` on the blocking pool (log appends and reads) and await it.
    fn run_blocking<T, F>(self: &Arc<Self>, f: F) -> impl Future<Output = T> + Send
    where
        F: FnOnce(&Self) -> T + Send + 'static,
        T: Send + 'static;
    /// Milliseconds since the epoch, from the broker's injected clock.
    fn now_ms(&self) -> i64;
    /// Becomes `true` once the broker shuts down.
    fn shutdown_signal(&self) -> watch::Receiver<bool>;
    /// Create topic `name` with `configs` over the broker defaults.
    ///
    /// # Errors
    /// As CreateTopics would answer.
    fn create_internal_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<(), ApiError>;
    /// Partition count of topic `name`, if the topic exists.
    fn partition_count(&self, name: &str) -> Option<i32>;
    /// The log of a partition and its leader epoch, if it exists.
    fn leader_log(&self, topic: &str, partition: i32) -> Option<(Arc<Log>, LeaderEpoch)>;
    /// Append `batch` to a partition this broker leads, in its current
    /// leader epoch, with leadership changes held off meanwhile (Kafka's
    /// `appendRecordsToLeader`); `None` when it does not lead it.
    fn append_as_leader(
        &self,
        topic: &str,
        partition: i32,
        batch: &mut [u8],
    ) -> Option<(Arc<Log>, Result<LogAppendInfo, LogError>)>;
    /// As [`Self::append_as_leader`] for a transactional offset batch
    /// (Kafka's COORDINATOR origin: the producer epoch is checked, the
    /// sequence is not).
    fn append_as_coordinator(
        &self,
        topic: &str,
        partition: i32,
        batch: &mut [u8],
    ) -> Option<(Arc<Log>, Result<LogAppendInfo, LogError>)>;
    /// After an append to a `__consumer_offsets` partition's `log`: move
    /// its high watermark (what the ISR holds; the log end when the leader
    /// is the only replica) and wake delayed fetches.
    fn appended(&self, log: &Log);
    /// Cluster mode: partitions of `__consumer_offsets` live on several
    /// brokers, and this coordinator owns only those its broker leads.
    fn clustered(&self) -> bool;
    /// A number that moves whenever a topic is created, changed or deleted.
    fn topics_version(&self) -> u64;
    /// Every topic with its partitions' replica racks where known, at
    /// `version` (KIP-848 subscriptions).
    fn topic_image(&self, version: u64) -> TopicImage;
}

/// Why `__consumer_offsets` cannot be used yet.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OffsetsTopicError {
    #[error("creating __consumer_offsets failed")]
    Create {
        #[source]
        source: ApiError,
    },
    #[error("__consumer_offsets is not in the topic store")]
    Missing,
    #[error("__consumer_offsets partition {partition} has no log yet")]
    PartitionWithoutLog { partition: i32 },
}

/// The manager plus the channels of parked requests.
#[derive(Debug)]
struct State {
    manager: GroupManager,
    joins: HashMap<Ticket, oneshot::Sender<JoinResult>>,
    syncs: HashMap<Ticket, oneshot::Sender<SyncResult>>,
    /// When offsets were last checked for expiry.
    last_expiry_check: i64,
}

/// The broker's group coordinator.
#[derive(Debug)]
pub(crate) struct GroupCoordinator {
    /// Immutable copy of the manager's configuration (readable without `state`).
    config: GroupConfig,
    state: Mutex<State>,
    next_ticket: AtomicU64,
    started: OnceCell<()>,
    /// Serialises creating `__consumer_offsets`; taken after `state`, never before.
    creating: Mutex<()>,
    /// Every partition of `__consumer_offsets` has its log.
    offsets_ready: AtomicBool,
    /// The topics as KIP-848 groups last saw them (rebuilt when the host's
    /// topics version moves).
    image: Mutex<Arc<TopicImage>>,
}

impl GroupCoordinator {
    /// A coordinator with the settings the broker parsed at start.
    pub(crate) fn new(config: GroupConfig) -> GroupCoordinator {
        GroupCoordinator {
            config: config.clone(),
            state: Mutex::new(State {
                manager: GroupManager::new(config),
                joins: HashMap::new(),
                syncs: HashMap::new(),
                last_expiry_check: i64::MIN,
            }),
            next_ticket: AtomicU64::new(1),
            started: OnceCell::new(),
            creating: Mutex::new(()),
            offsets_ready: AtomicBool::new(false),
            image: Mutex::new(Arc::new(TopicImage::default())),
        }
    }

    /// The current topic image (rebuilt only when the topics changed).
    fn topic_image<H: GroupHost>(&self, broker: &H) -> Arc<TopicImage> {
        let version = broker.topics_version();
        let mut image = self.image.lock().unwrap_or_else(|p| p.into_inner());
        if image.version != version || image.topics.is_empty() {
            *image = Arc::new(broker.topic_image(version));
        }
        image.clone()
    }

    /// ConsumerGroupHeartbeat (KIP-848); answered once its records are stored.
    pub(crate) async fn consumer_heartbeat<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        req: ConsumerHeartbeat,
    ) -> ConsumerHeartbeatResult {
        self.ensure_started(broker).await;
        broker
            .run_blocking(move |b| {
                let c = b.coordinator();
                let image = c.topic_image(b);
                c.run(b, |m, s, now| m.consumer_heartbeat(&req, &image, now, s))
            })
            .await
    }

    /// OffsetFetch v9 from a member of a consumer group: it must be in the
    /// group at `epoch` (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). Classic
    /// groups and unknown groups are not checked.
    pub(crate) fn check_fetching_member(
        &self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) -> Option<ResponseError> {
        let st = self.lock();
        let cg = st.manager.group(group_id)?.consumer.as_deref()?;
        match cg.members.get(member_id) {
            None => Some(ResponseError::UnknownMemberId),
            Some(m) if m.assignment.member_epoch != epoch => Some(ResponseError::StaleMemberEpoch),
            Some(_) => None,
        }
    }

    /// ConsumerGroupDescribe of `ids`, in order.
    pub(crate) async fn consumer_describe<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        ids: Vec<String>,
    ) -> Vec<DescribedGroup> {
        self.ensure_started(broker).await;
        let image = self.topic_image(broker.as_ref());
        self.lock().manager.consumer_describe(&ids, &image)
    }

    /// Cluster mode: own no partition until [`Self::set_owned_partitions`].
    pub(crate) fn own_nothing(&self) {
        self.lock().manager.set_owned(&BTreeSet::new());
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Load `__consumer_offsets` (if it exists) and start the timer task,
    /// once, before the first group operation.
    pub(crate) async fn ensure_started<H: GroupHost>(&self, broker: &Arc<H>) {
        self.started
            .get_or_init(|| async {
                broker.run_blocking(|b| b.coordinator().load_all(b)).await;
                let weak = Arc::downgrade(broker);
                tokio::spawn(timer_task(weak));
            })
            .await;
    }

    /// Create `__consumer_offsets` if missing (FindCoordinator does this, as
    /// Kafka does): compacted, `offsets.topic.segment.bytes` segments.
    /// Concurrent callers wait for one creation; the topic counts as ready
    /// only once every partition has its log, so nobody is told to use a
    /// coordinator whose partition is still being created.
    ///
    /// # Errors
    /// Creation failed, or a partition has no log.
    pub(crate) fn ensure_offsets_topic<H: GroupHost>(
        &self,
        broker: &H,
    ) -> Result<(), OffsetsTopicError> {
        if self.offsets_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let _creating = self.creating.lock().unwrap_or_else(|p| p.into_inner());
        if broker.partition_count(OFFSETS_TOPIC).is_none() {
            let config = &self.config;
            let configs: BTreeMap<String, String> = [
                ("cleanup.policy", "compact".to_string()),
                (
                    "segment.bytes",
                    config.offsets_topic_segment_bytes.to_string(),
                ),
                ("compression.type", "producer".to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let partitions = config.offsets_topic_num_partitions;
            match broker.create_internal_topic(OFFSETS_TOPIC, partitions, configs) {
                Ok(()) | Err(ApiError::TopicAlreadyExists) => {}
                Err(source) => return Err(OffsetsTopicError::Create { source }),
            }
        }
        let partitions = broker
            .partition_count(OFFSETS_TOPIC)
            .ok_or(OffsetsTopicError::Missing)?;
        // In a cluster the other partitions' logs live on their leaders.
        if broker.clustered() {
            self.offsets_ready.store(true, Ordering::Release);
            return Ok(());
        }
        if let Some(partition) =
            (0..partitions).find(|p| broker.leader_log(OFFSETS_TOPIC, *p).is_none())
        {
            return Err(OffsetsTopicError::PartitionWithoutLog { partition });
        }
        self.offsets_ready.store(true, Ordering::Release);
        Ok(())
    }

    /// Cluster mode: coordinate the groups of `led` (the partitions of
    /// `__consumer_offsets` this broker now leads): unload the groups of
    /// partitions it stopped leading, load those it started leading.
    pub(crate) async fn set_owned_partitions<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        led: BTreeSet<i32>,
    ) {
        self.ensure_started(broker).await;
        let gained = {
            let mut st = self.lock();
            if st.manager.owned().is_some_and(|o| *o == led) {
                return;
            }
            let gained = st.manager.set_owned(&led);
            st.route_replies();
            gained
        };
        if !gained.is_empty() {
            broker
                .run_blocking(move |b| b.coordinator().load_partitions(b, gained))
                .await;
        }
    }

    /// Read every owned partition of `__consumer_offsets` into the manager (blocking).
    fn load_all<H: GroupHost>(&self, broker: &H) {
        let Some(count) = broker.partition_count(OFFSETS_TOPIC) else {
            return;
        };
        let owned = self.lock().manager.owned().cloned();
        let partitions: Vec<i32> = (0..count)
            .filter(|p| owned.as_ref().is_none_or(|o| o.contains(p)))
            .collect();
        {
            let mut st = self.lock();
            for p in &partitions {
                st.manager.begin_loading(*p);
            }
        }
        self.load_partitions(broker, partitions);
    }

    /// Read `partitions` (marked loading) into the manager (blocking).
    fn load_partitions<H: GroupHost>(&self, broker: &H, partitions: Vec<i32>) {
        if let Some(count) = broker.partition_count(OFFSETS_TOPIC) {
            let mut st = self.lock();
            // Like Kafka, the topic's actual partition count decides placement.
            if count != st.manager.config.offsets_topic_num_partitions {
                tracing::warn!(
                    topic_partitions = count,
                    configured = st.manager.config.offsets_topic_num_partitions,
                    "__consumer_offsets partition count differs from offsets.topic.num.partitions"
                );
                st.manager.config.offsets_topic_num_partitions = count;
            }
        }
        let now = broker.now_ms();
        for p in partitions {
            let records = match read_partition(broker, p) {
                Ok(r) => r,
                Err(error) => {
                    tracing::error!(partition = p, error = %strata_log::ErrorChain(&error), "cannot load __consumer_offsets partition");
                    Vec::new()
                }
            };
            let mut st = self.lock();
            let (groups, offsets) = st.manager.load_partition(p, records, now);
            st.manager.finish_loading(p);
            if groups > 0 {
                tracing::info!(
                    partition = p,
                    groups,
                    offsets,
                    "loaded groups from __consumer_offsets"
                );
            }
        }
    }

    /// Run `f` with the manager and a log-backed store; route the replies.
    fn run<T, H: GroupHost>(
        &self,
        broker: &H,
        f: impl FnOnce(&mut GroupManager, &mut LogStore<'_, H>, i64) -> T,
    ) -> T {
        let now = broker.now_ms();
        let image = self.topic_image(broker);
        let mut st = self.lock();
        st.manager.image = image;
        let mut store = LogStore {
            broker,
            coordinator: self,
        };
        let out = f(&mut st.manager, &mut store, now);
        st.route_replies();
        drop(st);
        out
    }

    fn ticket(&self) -> Ticket {
        Ticket(self.next_ticket.fetch_add(1, Ordering::Relaxed))
    }

    /// A transaction marker reached `__consumer_offsets` partition
    /// `partition`: settle `producer_id`'s pending transactional offsets.
    pub(crate) async fn complete_transaction<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        partition: i32,
        producer_id: i64,
        commit: bool,
    ) {
        self.ensure_started(broker).await;
        let visible = self
            .lock()
            .manager
            .complete_txn(partition, producer_id, commit);
        if visible > 0 {
            tracing::debug!(
                partition,
                producer_id,
                visible,
                "transactional offsets committed"
            );
        }
    }

    /// JoinGroup; resolves when the rebalance answers it.
    pub(crate) async fn join<H: GroupHost>(&self, broker: &Arc<H>, req: JoinRequest) -> JoinResult {
        self.ensure_started(broker).await;
        let ticket = self.ticket();
        let (tx, rx) = oneshot::channel();
        let member_id = req.member_id.clone();
        self.lock().joins.insert(ticket, tx);
        broker
            .run_blocking(move |b| {
                b.coordinator()
                    .run(b, |m, s, now| m.join(req, ticket, now, s))
            })
            .await;
        rx.await.unwrap_or_else(|_| {
            JoinResult::error(&member_id, ResponseError::CoordinatorNotAvailable)
        })
    }

    /// SyncGroup; resolves when the leader's assignment is stored.
    pub(crate) async fn sync<H: GroupHost>(&self, broker: &Arc<H>, req: SyncRequest) -> SyncResult {
        self.ensure_started(broker).await;
        let ticket = self.ticket();
        let (tx, rx) = oneshot::channel();
        self.lock().syncs.insert(ticket, tx);
        broker
            .run_blocking(move |b| {
                b.coordinator()
                    .run(b, |m, s, now| m.sync(req, ticket, now, s))
            })
            .await;
        rx.await
            .unwrap_or_else(|_| SyncResult::error(ResponseError::CoordinatorNotAvailable))
    }

    pub(crate) async fn heartbeat<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        req: HeartbeatRequest,
    ) -> Option<ResponseError> {
        self.ensure_started(broker).await;
        broker
            .run_blocking(move |b| b.coordinator().run(b, |m, s, now| m.heartbeat(req, now, s)))
            .await
    }

    pub(crate) async fn leave<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        group_id: String,
        members: Vec<LeaveMember>,
    ) -> LeaveResult {
        self.ensure_started(broker).await;
        broker
            .run_blocking(move |b| {
                b.coordinator()
                    .run(b, |m, s, now| m.leave(&group_id, members, now, s))
            })
            .await
    }

    pub(crate) async fn commit<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        req: CommitRequest,
    ) -> Vec<Option<ResponseError>> {
        self.ensure_started(broker).await;
        broker
            .run_blocking(move |b| {
                b.coordinator()
                    .run(b, |m, s, now| m.commit_offsets(&req, now, s))
            })
            .await
    }

    /// OffsetFetch for one group.
    ///
    /// # Errors
    /// The group-level error.
    pub(crate) async fn fetch<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        group_id: &str,
        partitions: Option<Vec<(String, i32)>>,
        require_stable: bool,
    ) -> Result<Vec<FetchedOffset>, ResponseError> {
        self.ensure_started(broker).await;
        self.lock()
            .manager
            .fetch_offsets(group_id, partitions.as_deref(), require_stable)
    }

    /// OffsetDelete.
    ///
    /// # Errors
    /// The group-level error.
    pub(crate) async fn delete_offsets<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        group_id: String,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<Option<ResponseError>>, ResponseError> {
        self.ensure_started(broker).await;
        broker
            .run_blocking(move |b| {
                b.coordinator().run(b, |m, s, now| {
                    m.delete_offsets(&group_id, &partitions, now, s)
                })
            })
            .await
    }

    pub(crate) async fn delete_groups<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        ids: Vec<String>,
    ) -> Vec<Option<ResponseError>> {
        self.ensure_started(broker).await;
        broker
            .run_blocking(move |b| {
                b.coordinator()
                    .run(b, |m, s, now| m.delete_groups(&ids, now, s))
            })
            .await
    }

    pub(crate) async fn list<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        states: Vec<String>,
        types: Vec<String>,
    ) -> (Option<ResponseError>, Vec<GroupOverview>) {
        self.ensure_started(broker).await;
        self.lock().manager.list_groups(&states, &types)
    }

    pub(crate) async fn describe<H: GroupHost>(
        &self,
        broker: &Arc<H>,
        group_id: &str,
    ) -> GroupSummary {
        self.ensure_started(broker).await;
        self.lock().manager.describe_group(group_id)
    }

    /// Every group's committed offset of `topic`/`partition`, by group id
    /// (the storage console's lag; read-only, no loading is waited for).
    pub(crate) fn committed_offsets_of(&self, topic: &str, partition: i32) -> Vec<Committed> {
        let st = self.lock();
        let key = (topic.to_string(), partition);
        let mut out: Vec<Committed> = st
            .manager
            .groups
            .values()
            .filter_map(|g| {
                g.offsets.get(&key).map(|c| Committed {
                    group: g.id.clone(),
                    offset: c.offset,
                    kind: kind_of(g),
                })
            })
            .collect();
        out.sort_by(|a, b| a.group.cmp(&b.group));
        out
    }

    /// Every committed offset this coordinator holds: (group, topic,
    /// partition, offset). For the lag metrics; copies under the state
    /// lock, without waiting for loading.
    pub(crate) fn committed_offsets(&self) -> Vec<(String, String, i32, i64)> {
        let st = self.lock();
        st.manager
            .groups
            .values()
            .flat_map(|g| {
                g.offsets.iter().map(|((topic, partition), c)| {
                    (g.id.clone(), topic.clone(), *partition, c.offset)
                })
            })
            .collect()
    }

    /// How many groups this coordinator holds, by (protocol, state): for
    /// the group-coordinator metrics.
    pub(crate) fn group_counts(&self) -> crate::metrics::groups::GroupCounts {
        let st = self.lock();
        let mut counts = crate::metrics::groups::GroupCounts::new();
        for g in st.manager.groups.values() {
            *counts.entry(kind_of(g)).or_default() += 1;
        }
        counts
    }

    /// Stop serving: parked requests are answered NOT_COORDINATOR.
    pub(crate) fn shutdown(&self) {
        let mut st = self.lock();
        st.manager.deactivate();
        st.route_replies();
    }

    /// Fire due timers and, every `offsets.retention.check.interval.ms`,
    /// expire offsets. Returns the next deadline, if any.
    fn tick<H: GroupHost>(&self, broker: &H) -> Option<i64> {
        self.run(broker, |m, s, now| {
            m.poll_timers(now, s);
            now
        });
        let now = broker.now_ms();
        let mut st = self.lock();
        let interval = st.manager.config.offsets_retention_check_interval_ms;
        if now.saturating_sub(st.last_expiry_check) >= interval {
            st.last_expiry_check = now;
            let mut store = LogStore {
                broker,
                coordinator: self,
            };
            let removed = st.manager.expire_offsets(now, &mut store);
            if removed > 0 {
                tracing::info!(removed, "expired committed offsets");
            }
        }
        st.manager.next_deadline()
    }
}

impl State {
    fn route_replies(&mut self) {
        for reply in self.manager.take_replies() {
            match reply {
                Reply::Join(t, r) => {
                    if let Some(tx) = self.joins.remove(&t) {
                        // The requester may be gone (connection closed): nothing to do.
                        let _ = tx.send(r);
                    }
                }
                Reply::Sync(t, r) => {
                    if let Some(tx) = self.syncs.remove(&t) {
                        let _ = tx.send(r);
                    }
                }
            }
        }
    }
}

/// Fires deadlines until the broker is dropped or shuts down.
async fn timer_task<H: GroupHost>(broker: Weak<H>) {
    loop {
        let Some(b) = broker.upgrade() else { return };
        let mut shutdown = b.shutdown_signal();
        if *shutdown.borrow() {
            b.coordinator().shutdown();
            return;
        }
        let next = b.run_blocking(|b| b.coordinator().tick(b)).await;
        let now = b.now_ms();
        let wait_ms = next.map_or(TIMER_POLL_MS, |d| {
            (d - now).clamp(1, TIMER_POLL_MS as i64) as u64
        });
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Appends coordinator records to the partition logs of `__consumer_offsets`.
struct LogStore<'a, H> {
    broker: &'a H,
    coordinator: &'a GroupCoordinator,
}

impl<H: GroupHost> OffsetsStore for LogStore<'_, H> {
    fn append(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        self.write(partition, records, None, now_ms)
    }

    fn append_txn(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        producer: (i64, i16),
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        self.write(partition, records, Some(producer), now_ms)
    }
}

impl<H: GroupHost> LogStore<'_, H> {
    fn write(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        producer: Option<(i64, i16)>,
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        let broker = self.broker;
        self.coordinator
            .ensure_offsets_topic(broker)
            .map_err(|e| StoreError::Unavailable {
                partition,
                source: Some(Box::new(e)),
            })?;
        let mut builder = BatchBuilder::new(Offset(0));
        if let Some((pid, epoch)) = producer {
            builder = builder
                .producer(
                    strata_log::ProducerId(pid),
                    strata_log::ProducerEpoch(epoch),
                    0,
                )
                .transactional(true);
        }
        for r in records {
            builder.append(Timestamp(now_ms), Some(&r.key), r.value.as_deref(), &[]);
        }
        let mut batch = builder.build();
        let size = batch.len();
        let appended = match producer {
            None => broker.append_as_leader(OFFSETS_TOPIC, partition, &mut batch),
            Some(_) => broker.append_as_coordinator(OFFSETS_TOPIC, partition, &mut batch),
        };
        let Some((log, appended)) = appended else {
            return Err(StoreError::Unavailable {
                partition,
                source: None,
            });
        };
        let durable = log.config().durable_append;
        let appended = appended.and_then(|a| {
            if durable {
                log.flush_up_to(a.last_offset.plus(1))?;
            }
            Ok(a)
        });
        match appended {
            Ok(a) => {
                broker.appended(&log);
                Ok(a.first_offset.0)
            }
            Err(LogError::RecordBatchTooLarge { .. } | LogError::Batch { .. }) => {
                Err(StoreError::TooLarge { partition, size })
            }
            Err(LogError::ProducerState { .. }) => Err(StoreError::Fenced { partition }),
            Err(e) => Err(StoreError::Storage {
                partition,
                source: Box::new(e),
            }),
        }
    }
}

/// Every record of one partition, in log order (blocking).
fn read_partition<H: GroupHost>(broker: &H, partition: i32) -> Result<Vec<LoadedRecord>, LogError> {
    let Some((log, _)) = broker.leader_log(OFFSETS_TOPIC, partition) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    let end = log.log_end_offset();
    while next < end {
        let data = log.read(next, LOAD_BUFFER_BYTES, ReadBound::LogEnd, true)?;
        let bytes = data.read_to_vec().map_err(|source| LogError::Io {
            path: log.dir(),
            op: "reading __consumer_offsets",
            source,
        })?;
        if bytes.is_empty() {
            break;
        }
        let mut progressed = false;
        for item in BatchScanner::new(&bytes) {
            let Ok((pos, prefix)) = item else { break };
            let Ok(view) = BatchView::parse(&bytes[pos..pos + prefix.total_size()]) else {
                break;
            };
            next = view.next_offset();
            progressed = true;
            let base = view.base_offset().0;
            let txn_producer = view.is_transactional().then(|| view.producer_id().0);
            if view.is_control() {
                // A transaction marker settles the producer's pending offsets.
                let kind = view
                    .records()
                    .ok()
                    .and_then(|r| r.into_iter().next())
                    .and_then(|r| ControlRecordType::parse_key(r.key.as_deref()).ok());
                let commit = match kind {
                    Some(ControlRecordType::Commit) => true,
                    Some(ControlRecordType::Abort) => false,
                    _ => continue,
                };
                out.push(LoadedRecord {
                    batch_base_offset: base,
                    key: Vec::new(),
                    value: None,
                    txn_producer,
                    marker: Some(commit),
                });
                continue;
            }
            match view.records() {
                Ok(records) => out.extend(records.into_iter().filter_map(|r| {
                    Some(LoadedRecord {
                        batch_base_offset: base,
                        key: r.key?,
                        value: r.value,
                        txn_producer,
                        marker: None,
                    })
                })),
                Err(error) => {
                    tracing::warn!(partition, %error, "skipping unreadable __consumer_offsets batch")
                }
            }
        }
        if !progressed {
            break;
        }
    }
    Ok(out)
}

/// One group's committed offset of a partition, with the group's kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Committed {
    pub group: String,
    pub offset: i64,
    /// (rebalance protocol, state): `("classic", "Stable")`, `("consumer", "Reconciling")`.
    pub kind: (&'static str, &'static str),
}

/// A group's rebalance protocol (`classic`, or `consumer` for a KIP-848
/// group) and its state in that protocol's names.
fn kind_of(g: &Group) -> (&'static str, &'static str) {
    match g.consumer.as_deref() {
        Some(cg) => ("consumer", cg.state().name()),
        None => ("classic", g.state().name()),
    }
}
