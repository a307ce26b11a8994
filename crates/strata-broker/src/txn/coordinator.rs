//! The transaction coordinator at runtime: the [`TxnMetadata`] of every
//! transactional id of the `__transaction_state` partitions this broker
//! owns, the writes of their transitions, the marker fan-out that completes
//! a transaction, loading on ownership, and the timer task that aborts
//! timed-out transactions and removes expired ids.
//!
//! Locking: one mutex (`state`) guards every partition's cache; it is never
//! held across an `.await` or a log append. A transition is prepared under
//! it (pending state set), written without it, then completed under it if
//! the partition is still owned at the same coordinator epoch — Kafka's
//! pending-state discipline (docs/transactions.md).
//!
//! The broker is reached through [`TxnHost`], so this module does not
//! depend on the broker's types.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use strata_log::batch::{BatchBuilder, BatchScanner, BatchView};
use strata_log::codec::transaction_log::{
    decode_key, decode_value, encode_key, encode_value, TxnStatus,
};
use strata_log::{ErrorChain, Offset, ReadBound, Timestamp};
use tokio::sync::OnceCell;

use super::config::TxnConfig;
use super::metadata::{EndStep, InitStep, Transit, TxnMetadata, TxnPartition};
use super::TXN_TOPIC;
use crate::api_error::ApiError;
use crate::group::coordinator::GroupHost;
use crate::group::partition_for;

/// Longest real-time sleep of the timer task.
const TIMER_POLL_MS: u64 = 200;
/// Pause between rounds of marker retries.
const MARKER_RETRY_MS: u64 = 50;
/// Upper bound of a coordinator append's wait for the ISR.
const MAX_APPEND_WAIT_MS: i32 = 30_000;

/// What became of one partition's marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MarkerOutcome {
    /// Written.
    Done,
    /// Not written yet (no leader, leader moved, not enough replicas, I/O):
    /// send again.
    Retry,
    /// The partition cannot hold it (deleted, old format): forget it.
    Drop,
    /// A newer producer epoch or coordinator owns the transaction: stop.
    Fenced,
}

/// One transaction's markers: what WriteTxnMarkers carries per producer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Marker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
    pub partitions: Vec<TxnPartition>,
}

/// What the transaction coordinator needs from the broker beyond what the
/// group coordinator does.
pub(crate) trait TxnHost: GroupHost {
    /// The transaction coordinator this host runs.
    fn txn_coordinator(&self) -> &TxnCoordinator;
    /// Create `__transaction_state` (replication factor and min ISR are the
    /// host's to decide: one replica on a single node).
    ///
    /// # Errors
    /// As CreateTopics would answer.
    fn create_txn_topic(&self, partitions: i32) -> Result<(), ApiError>;
    /// Append one record batch to a partition this broker leads and wait
    /// until it is committed (acks=all).
    fn append_committed(
        self: &Arc<Self>,
        topic: String,
        partition: i32,
        batch: Vec<u8>,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), ResponseError>> + Send;
    /// Write `marker` to each of its partitions' leaders (locally or with
    /// WriteTxnMarkers); one outcome per partition.
    fn write_markers(
        self: &Arc<Self>,
        marker: Marker,
    ) -> impl Future<Output = Vec<(TxnPartition, MarkerOutcome)>> + Send;
    /// A new producer id (never reused).
    ///
    /// # Errors
    /// The allocation failed (COORDINATOR_LOAD_IN_PROGRESS: retriable).
    fn allocate_producer_id(&self) -> Result<i64, ResponseError>;
}

/// One owned `__transaction_state` partition's transactions.
#[derive(Debug, Default)]
struct PartitionTxns {
    coordinator_epoch: i32,
    txns: HashMap<String, TxnMetadata>,
}

#[derive(Debug)]
struct State {
    partitions: HashMap<i32, PartitionTxns>,
    loading: HashSet<i32>,
    /// Cluster mode: owned partition -> coordinator epoch (its leader
    /// epoch); `None` on a single node (every partition).
    owned: Option<BTreeMap<i32, i32>>,
    partition_count: i32,
    active: bool,
    last_abort_check: i64,
    last_expire_check: i64,
}

impl State {
    /// Partition `partition`'s transactions if it is still owned at
    /// `coordinator_epoch` (a write's result is installed only then).
    fn at_epoch(&mut self, partition: i32, coordinator_epoch: i32) -> Option<&mut PartitionTxns> {
        self.partitions
            .get_mut(&partition)
            .filter(|t| t.coordinator_epoch == coordinator_epoch)
    }

    /// `id`'s metadata in `partition` if still owned at `coordinator_epoch`.
    fn txn_at_epoch(
        &mut self,
        partition: i32,
        coordinator_epoch: i32,
        id: &str,
    ) -> Option<&mut TxnMetadata> {
        self.at_epoch(partition, coordinator_epoch)
            .and_then(|t| t.txns.get_mut(id))
    }
}

/// One transactional id's description (DescribeTransactions).
#[derive(Clone, Debug)]
pub(crate) struct TxnDescription {
    pub state: TxnStatus,
    pub timeout_ms: i32,
    pub start_ms: i64,
    pub producer_id: i64,
    pub epoch: i16,
    pub partitions: BTreeSet<TxnPartition>,
}

/// One ListTransactions entry.
#[derive(Clone, Debug)]
pub(crate) struct TxnListing {
    pub transactional_id: String,
    pub producer_id: i64,
    pub state: TxnStatus,
}

/// The broker's transaction coordinator.
#[derive(Debug)]
pub(crate) struct TxnCoordinator {
    config: TxnConfig,
    state: Mutex<State>,
    started: OnceCell<()>,
    /// Serialises creating `__transaction_state`.
    creating: Mutex<()>,
    topic_ready: AtomicBool,
}

/// Kafka's mapping of an append error to the coordinator's answer.
fn coordinator_error(e: ResponseError) -> ResponseError {
    use ResponseError as E;
    match e {
        E::UnknownTopicOrPartition
        | E::NotEnoughReplicas
        | E::NotEnoughReplicasAfterAppend
        | E::RequestTimedOut => E::CoordinatorNotAvailable,
        E::NotLeaderOrFollower | E::KafkaStorageError => E::NotCoordinator,
        E::MessageTooLarge | E::RecordListTooLarge => E::UnknownServerError,
        other => other,
    }
}

fn record_batch(id: &str, value: Option<Vec<u8>>, now: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    b.append(Timestamp(now), Some(&encode_key(id)), value.as_deref(), &[]);
    b.build()
}

impl TxnCoordinator {
    pub(crate) fn new(config: TxnConfig) -> TxnCoordinator {
        TxnCoordinator {
            state: Mutex::new(State {
                partitions: HashMap::new(),
                loading: HashSet::new(),
                owned: None,
                partition_count: config.num_partitions,
                active: true,
                last_abort_check: i64::MIN,
                last_expire_check: i64::MIN,
            }),
            config,
            started: OnceCell::new(),
            creating: Mutex::new(()),
            topic_ready: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Cluster mode: own nothing until [`Self::set_owned_partitions`].
    pub(crate) fn own_nothing(&self) {
        self.lock().owned = Some(BTreeMap::new());
    }

    /// Stop serving (shutdown).
    pub(crate) fn shutdown(&self) {
        let mut st = self.lock();
        st.active = false;
        st.partitions.clear();
    }

    /// Create `__transaction_state` if missing (FindCoordinator does, as
    /// Kafka does).
    ///
    /// # Errors
    /// The creation failed.
    pub(crate) fn ensure_topic<H: TxnHost>(&self, host: &H) -> Result<(), ApiError> {
        if self.topic_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let _creating = self.creating.lock().unwrap_or_else(|p| p.into_inner());
        if host.partition_count(TXN_TOPIC).is_none() {
            match host.create_txn_topic(self.config.num_partitions) {
                Ok(()) | Err(ApiError::TopicAlreadyExists) => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(count) = host.partition_count(TXN_TOPIC) {
            self.lock().partition_count = count;
            self.topic_ready.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Load the owned partitions (single node: all) and start the timer
    /// task, once.
    pub(crate) async fn ensure_started<H: TxnHost>(&self, host: &Arc<H>) {
        self.started
            .get_or_init(|| async {
                let single = self.lock().owned.is_none();
                if single {
                    if let Some(count) = host.partition_count(TXN_TOPIC) {
                        self.lock().partition_count = count;
                        let all: Vec<i32> = (0..count).collect();
                        self.load(host, all).await;
                    }
                }
                tokio::spawn(timer_task(Arc::downgrade(host)));
            })
            .await;
    }

    /// Cluster mode: own exactly `led` (partition -> leader epoch): drop
    /// the transactions of partitions no longer led (or led in a new
    /// epoch), load the others.
    pub(crate) async fn set_owned_partitions<H: TxnHost>(
        &self,
        host: &Arc<H>,
        led: BTreeMap<i32, i32>,
    ) {
        let gained: Vec<i32> = {
            let mut st = self.lock();
            if let Some(count) = host.partition_count(TXN_TOPIC) {
                st.partition_count = count;
            }
            let before = st.owned.clone().unwrap_or_default();
            if before == led {
                return;
            }
            for (p, epoch) in &before {
                if led.get(p) != Some(epoch) {
                    st.partitions.remove(p);
                    st.loading.remove(p);
                }
            }
            let gained = led
                .iter()
                .filter(|(p, e)| before.get(p) != Some(e))
                .map(|(p, _)| *p)
                .collect();
            st.owned = Some(led);
            gained
        };
        self.ensure_started(host).await;
        if !gained.is_empty() {
            self.load(host, gained).await;
        }
    }

    /// Read `partitions` into the cache, then complete the transactions
    /// they left in PrepareCommit/PrepareAbort (Kafka's immigration).
    async fn load<H: TxnHost>(&self, host: &Arc<H>, partitions: Vec<i32>) {
        {
            let mut st = self.lock();
            for p in &partitions {
                st.loading.insert(*p);
            }
        }
        for p in partitions {
            let buffer = self.config.load_buffer_size.max(1) as usize;
            let loaded = host
                .run_blocking(move |h| read_partition(h, p, buffer))
                .await;
            let mut resume = Vec::new();
            {
                let mut st = self.lock();
                if !st.loading.remove(&p) {
                    continue;
                }
                let coordinator_epoch = match (&st.owned, &loaded) {
                    (Some(owned), _) => match owned.get(&p) {
                        Some(e) => *e,
                        None => continue,
                    },
                    (None, Some((epoch, _))) => *epoch,
                    (None, None) => 0,
                };
                let txns = loaded.map(|(_, t)| t).unwrap_or_default();
                for (id, meta) in &txns {
                    if matches!(
                        meta.state,
                        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort
                    ) {
                        resume.push(id.clone());
                    }
                }
                if !txns.is_empty() {
                    tracing::info!(
                        partition = p,
                        transactional_ids = txns.len(),
                        "loaded transactions from __transaction_state"
                    );
                }
                st.partitions.insert(
                    p,
                    PartitionTxns {
                        coordinator_epoch,
                        txns,
                    },
                );
            }
            for id in resume {
                self.start_markers(host, p, &id);
            }
        }
    }

    /// The cache entry of `id`'s partition: errors while loading or when
    /// not owned.
    fn owner<'a>(
        &self,
        st: &'a mut State,
        id: &str,
    ) -> Result<(i32, &'a mut PartitionTxns), ResponseError> {
        if !st.active {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let p = partition_for(id, st.partition_count);
        if st.loading.contains(&p) {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        if st.owned.as_ref().is_some_and(|o| !o.contains_key(&p)) {
            return Err(ResponseError::NotCoordinator);
        }
        match st.partitions.get_mut(&p) {
            Some(txns) => Ok((p, txns)),
            None => Err(ResponseError::CoordinatorNotAvailable),
        }
    }

    /// Make sure the topic exists and its partitions are loaded before a
    /// request is served.
    async fn ready<H: TxnHost>(&self, host: &Arc<H>) -> Result<(), ResponseError> {
        if !self.topic_ready.load(Ordering::Acquire) {
            let r = host
                .run_blocking(|h| h.txn_coordinator().ensure_topic(h))
                .await;
            if let Err(e) = r {
                tracing::warn!(error = %ErrorChain(&e), "cannot create __transaction_state");
                return Err(ResponseError::CoordinatorNotAvailable);
            }
        }
        self.ensure_started(host).await;
        Ok(())
    }

    /// Write `transit` of `id` and install it if the partition is still
    /// owned at `epoch`.
    async fn write<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        partition: i32,
        coordinator_epoch: i32,
        transit: &Transit,
    ) -> Result<(), ResponseError> {
        let now = host.now_ms();
        let batch = record_batch(id, Some(encode_value(&transit.to_value())), now);
        let wait = Duration::from_millis(transit.timeout_ms.clamp(1, MAX_APPEND_WAIT_MS) as u64);
        let r = host
            .append_committed(TXN_TOPIC.to_string(), partition, batch, wait)
            .await;
        let mut st = self.lock();
        let Some(meta) = st.txn_at_epoch(partition, coordinator_epoch, id) else {
            return Err(ResponseError::NotCoordinator);
        };
        match r {
            Ok(()) => {
                meta.complete(transit);
                Ok(())
            }
            Err(e) => {
                tracing::warn!(transactional_id = id, state = transit.state.name(), error = ?e,
                    "writing the transaction state failed");
                meta.abandon();
                Err(coordinator_error(e))
            }
        }
    }

    /// InitProducerId with a transactional id: `(producer id, epoch)`.
    ///
    /// # Errors
    /// The code to answer.
    pub(crate) async fn init_producer_id<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), ResponseError> {
        if id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(ResponseError::InvalidTransactionTimeout);
        }
        self.ready(host).await?;
        let known = {
            let mut st = self.lock();
            let (_, txns) = self.owner(&mut st, id)?;
            txns.txns.contains_key(id)
        };
        let fresh_pid = if known {
            None
        } else {
            Some(host.run_blocking(|h| h.allocate_producer_id()).await?)
        };
        let now = host.now_ms();
        let (partition, coordinator_epoch, step) = {
            let mut st = self.lock();
            let (p, txns) = self.owner(&mut st, id)?;
            let meta = txns
                .txns
                .entry(id.to_string())
                .or_insert_with(|| TxnMetadata::new(fresh_pid.unwrap_or(-1), timeout_ms, now));
            if meta.producer_id < 0 {
                return Err(ResponseError::CoordinatorLoadInProgress);
            }
            let allocate = || match fresh_pid {
                Some(pid) => Ok(pid),
                None => Err(ResponseError::ConcurrentTransactions),
            };
            let step = meta.prepare_init(expected, timeout_ms, now, allocate);
            (p, txns.coordinator_epoch, step)
        };
        match step {
            Err(ResponseError::ConcurrentTransactions) if fresh_pid.is_none() => {
                // A rotation needs a new id: allocate and retry once.
                let pid = host.run_blocking(|h| h.allocate_producer_id()).await?;
                let step = {
                    let mut st = self.lock();
                    let (_, txns) = self.owner(&mut st, id)?;
                    let meta = txns.txns.get_mut(id).ok_or(ResponseError::NotCoordinator)?;
                    meta.prepare_init(expected, timeout_ms, now, || Ok(pid))?
                };
                self.finish_init(host, id, partition, coordinator_epoch, step)
                    .await
            }
            Err(e) => Err(e),
            Ok(step) => {
                self.finish_init(host, id, partition, coordinator_epoch, step)
                    .await
            }
        }
    }

    async fn finish_init<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        partition: i32,
        coordinator_epoch: i32,
        step: InitStep,
    ) -> Result<(i64, i16), ResponseError> {
        match step {
            InitStep::Write(t) => {
                self.write(host, id, partition, coordinator_epoch, &t)
                    .await?;
                Ok((t.producer_id, t.epoch))
            }
            InitStep::FenceAndAbort(t) => {
                match self.write(host, id, partition, coordinator_epoch, &t).await {
                    Ok(()) => {
                        tracing::info!(
                            transactional_id = id,
                            producer_id = t.producer_id,
                            epoch = t.epoch,
                            "fenced the previous producer: aborting its ongoing transaction"
                        );
                        self.start_markers(host, partition, id);
                        Err(ResponseError::ConcurrentTransactions)
                    }
                    Err(e) => {
                        self.mark_failed_fence(partition, coordinator_epoch, id);
                        Err(e)
                    }
                }
            }
        }
    }

    fn mark_failed_fence(&self, partition: i32, coordinator_epoch: i32, id: &str) {
        if let Some(meta) = self.lock().txn_at_epoch(partition, coordinator_epoch, id) {
            meta.has_failed_epoch_fence = true;
        }
    }

    /// AddPartitionsToTxn (v0–3) and AddOffsetsToTxn.
    ///
    /// # Errors
    /// The code to answer for every partition.
    pub(crate) async fn add_partitions<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TxnPartition],
    ) -> Result<(), ResponseError> {
        if id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.ready(host).await?;
        let now = host.now_ms();
        let (partition, coordinator_epoch, transit) = {
            let mut st = self.lock();
            let (p, txns) = self.owner(&mut st, id)?;
            let meta = txns
                .txns
                .get_mut(id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            match meta.prepare_add_partitions(producer_id, epoch, partitions, now)? {
                None => return Ok(()),
                Some(t) => (p, txns.coordinator_epoch, t),
            }
        };
        self.write(host, id, partition, coordinator_epoch, &transit)
            .await
    }

    /// AddPartitionsToTxn v4 `VerifyOnly` (KIP-890): per partition, whether
    /// it is in `id`'s ongoing transaction.
    ///
    /// # Errors
    /// The code for every partition (unknown id, not coordinator, ...).
    pub(crate) async fn verify<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TxnPartition],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        if id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.ready(host).await?;
        let mut st = self.lock();
        let (_, txns) = self.owner(&mut st, id)?;
        let meta = txns
            .txns
            .get(id)
            .ok_or(ResponseError::InvalidProducerIdMapping)?;
        Ok(partitions
            .iter()
            .map(|p| meta.verify(producer_id, epoch, p))
            .collect())
    }

    /// EndTxn from a client.
    ///
    /// # Errors
    /// The code to answer.
    pub(crate) async fn end_txn<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), ResponseError> {
        if id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.ready(host).await?;
        let now = host.now_ms();
        let (partition, coordinator_epoch, transit) = {
            let mut st = self.lock();
            let (p, txns) = self.owner(&mut st, id)?;
            let meta = txns
                .txns
                .get_mut(id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            match meta.prepare_end(producer_id, epoch, commit, true, now)? {
                EndStep::AlreadyDone => return Ok(()),
                EndStep::Write(t) => (p, txns.coordinator_epoch, t),
            }
        };
        self.write(host, id, partition, coordinator_epoch, &transit)
            .await?;
        self.start_markers(host, partition, id);
        Ok(())
    }

    /// After a Prepare* record is durable: set the Complete* transition
    /// pending and send the markers in the background, then write it.
    fn start_markers<H: TxnHost>(&self, host: &Arc<H>, partition: i32, id: &str) {
        let now = host.now_ms();
        let prepared = {
            let mut st = self.lock();
            let Some(txns) = st.partitions.get_mut(&partition) else {
                return;
            };
            let coordinator_epoch = txns.coordinator_epoch;
            let Some(meta) = txns.txns.get_mut(id) else {
                return;
            };
            let commit = meta.state == TxnStatus::PrepareCommit;
            let marker = Marker {
                producer_id: meta.producer_id,
                producer_epoch: meta.epoch,
                coordinator_epoch,
                commit,
                partitions: meta.partitions.iter().cloned().collect(),
            };
            meta.prepare_complete(now).map(|t| (marker, t))
        };
        let Some((marker, complete)) = prepared else {
            return;
        };
        let host = host.clone();
        let id = id.to_string();
        tokio::spawn(async move {
            let coordinator = host.txn_coordinator();
            coordinator
                .send_markers(&host, &id, partition, marker, complete)
                .await;
        });
    }

    /// Whether `partition` is still owned at `coordinator_epoch` with `id`
    /// waiting for its markers.
    fn still_completing(&self, partition: i32, coordinator_epoch: i32, id: &str) -> bool {
        let mut st = self.lock();
        st.active
            && st
                .txn_at_epoch(partition, coordinator_epoch, id)
                .is_some_and(|m| {
                    matches!(
                        m.pending,
                        Some(TxnStatus::CompleteCommit | TxnStatus::CompleteAbort)
                    )
                })
    }

    async fn send_markers<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
        partition: i32,
        mut marker: Marker,
        complete: Transit,
    ) {
        let coordinator_epoch = marker.coordinator_epoch;
        let mut shutdown = host.shutdown_signal();
        let mut attempts = 0u32;
        while !marker.partitions.is_empty() {
            if !self.still_completing(partition, coordinator_epoch, id) || *shutdown.borrow() {
                return;
            }
            let results = host.write_markers(marker.clone()).await;
            let mut retry = Vec::new();
            for (p, outcome) in results {
                match outcome {
                    MarkerOutcome::Done | MarkerOutcome::Drop => {}
                    MarkerOutcome::Retry => retry.push(p),
                    MarkerOutcome::Fenced => {
                        tracing::warn!(transactional_id = id, topic = %p.0, partition = p.1,
                            "a newer producer epoch or coordinator owns this transaction: markers stopped");
                        return;
                    }
                }
            }
            marker.partitions = retry;
            // DescribeTransactions shows the partitions still waiting.
            {
                let mut st = self.lock();
                if let Some(meta) = st.txn_at_epoch(partition, coordinator_epoch, id) {
                    meta.partitions = marker.partitions.iter().cloned().collect();
                }
            }
            if !marker.partitions.is_empty() {
                attempts += 1;
                if attempts.is_multiple_of(100) {
                    tracing::warn!(
                        transactional_id = id,
                        waiting = marker.partitions.len(),
                        attempts,
                        "transaction markers still not written"
                    );
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(MARKER_RETRY_MS)) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
        // Every marker is written: record the outcome. COORDINATOR_NOT_AVAILABLE
        // keeps the pending state and retries (Kafka's retry queue).
        loop {
            if !self.still_completing(partition, coordinator_epoch, id) {
                return;
            }
            let now = host.now_ms();
            let mut t = complete.clone();
            t.last_update_ms = now;
            t.partitions.clear();
            let batch = record_batch(id, Some(encode_value(&t.to_value())), now);
            let wait = Duration::from_millis(t.timeout_ms.clamp(1, MAX_APPEND_WAIT_MS) as u64);
            let r = host
                .append_committed(TXN_TOPIC.to_string(), partition, batch, wait)
                .await
                .map_err(coordinator_error);
            let retry = {
                let mut st = self.lock();
                let Some(meta) = st.txn_at_epoch(partition, coordinator_epoch, id) else {
                    return;
                };
                match r {
                    Ok(()) => {
                        meta.complete(&t);
                        false
                    }
                    Err(ResponseError::CoordinatorNotAvailable) => true,
                    Err(e) => {
                        tracing::warn!(transactional_id = id, error = ?e, "writing the transaction's completion failed");
                        meta.abandon();
                        false
                    }
                }
            };
            if !retry {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(MARKER_RETRY_MS * 4)) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// DescribeTransactions for one id.
    ///
    /// # Errors
    /// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND, ...
    pub(crate) async fn describe<H: TxnHost>(
        &self,
        host: &Arc<H>,
        id: &str,
    ) -> Result<TxnDescription, ResponseError> {
        if id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.ready(host).await?;
        let mut st = self.lock();
        let (_, txns) = self.owner(&mut st, id)?;
        let meta = txns
            .txns
            .get(id)
            .filter(|m| m.state != TxnStatus::Dead && m.epoch >= 0)
            .ok_or(ResponseError::TransactionalIdNotFound)?;
        Ok(TxnDescription {
            state: meta.state,
            timeout_ms: meta.timeout_ms,
            start_ms: meta.start_ms,
            producer_id: meta.producer_id,
            epoch: meta.epoch,
            partitions: meta.partitions.clone(),
        })
    }

    /// ListTransactions on this broker's partitions.
    ///
    /// # Errors
    /// COORDINATOR_LOAD_IN_PROGRESS while any owned partition loads.
    pub(crate) async fn list<H: TxnHost>(
        &self,
        host: &Arc<H>,
        states: &[TxnStatus],
        producer_ids: &[i64],
        min_duration_ms: i64,
    ) -> Result<Vec<TxnListing>, ResponseError> {
        self.ready(host).await?;
        let now = host.now_ms();
        let st = self.lock();
        if !st.active {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        if !st.loading.is_empty() {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        let mut out = Vec::new();
        for txns in st.partitions.values() {
            for (id, m) in &txns.txns {
                if m.state == TxnStatus::Dead || m.epoch < 0 {
                    continue;
                }
                if !states.is_empty() && !states.contains(&m.state) {
                    continue;
                }
                if !producer_ids.is_empty() && !producer_ids.contains(&m.producer_id) {
                    continue;
                }
                if min_duration_ms >= 0 && now - m.start_ms <= min_duration_ms {
                    continue;
                }
                out.push(TxnListing {
                    transactional_id: id.clone(),
                    producer_id: m.producer_id,
                    state: m.state,
                });
            }
        }
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        Ok(out)
    }

    /// One pass of the timer task: abort timed-out transactions, remove
    /// expired ids, each at its interval.
    async fn tick<H: TxnHost>(&self, host: &Arc<H>) {
        let now = host.now_ms();
        let (abort, expire) = {
            let mut st = self.lock();
            let abort = now.saturating_sub(st.last_abort_check) >= self.config.abort_interval_ms;
            let expire =
                now.saturating_sub(st.last_expire_check) >= self.config.remove_expired_interval_ms;
            if abort {
                st.last_abort_check = now;
            }
            if expire {
                st.last_expire_check = now;
            }
            (abort, expire)
        };
        if abort {
            self.abort_timed_out(host, now).await;
        }
        if expire {
            self.remove_expired(host, now).await;
        }
    }

    /// Kafka's `abortTimedOutTransactions`: fence the producer (epoch + 1)
    /// and abort.
    async fn abort_timed_out<H: TxnHost>(&self, host: &Arc<H>, now: i64) {
        let mut due = Vec::new();
        {
            let mut st = self.lock();
            for (p, txns) in st.partitions.iter_mut() {
                for (id, meta) in txns.txns.iter_mut() {
                    if let Some(t) = meta.prepare_timeout_abort(now) {
                        due.push((*p, txns.coordinator_epoch, id.clone(), t));
                    }
                }
            }
        }
        for (p, coordinator_epoch, id, t) in due {
            tracing::info!(transactional_id = %id, producer_id = t.producer_id, epoch = t.epoch,
                timeout_ms = t.timeout_ms, "aborting a transaction that outlived its timeout");
            match self.write(host, &id, p, coordinator_epoch, &t).await {
                Ok(()) => self.start_markers(host, p, &id),
                Err(e) => {
                    self.mark_failed_fence(p, coordinator_epoch, &id);
                    tracing::warn!(transactional_id = %id, error = ?e, "timeout abort failed; retried later");
                }
            }
        }
    }

    /// Kafka's `removeExpiredTransactionalIds`: a tombstone per expired id.
    async fn remove_expired<H: TxnHost>(&self, host: &Arc<H>, now: i64) {
        let mut due = Vec::new();
        {
            let mut st = self.lock();
            for (p, txns) in st.partitions.iter_mut() {
                for (id, meta) in txns.txns.iter_mut() {
                    if meta.expired(now, self.config.id_expiration_ms) {
                        meta.pending = Some(TxnStatus::Dead);
                        due.push((*p, txns.coordinator_epoch, id.clone(), meta.epoch));
                    }
                }
            }
        }
        for (p, coordinator_epoch, id, epoch) in due {
            let batch = record_batch(&id, None, now);
            let r = host
                .append_committed(
                    TXN_TOPIC.to_string(),
                    p,
                    batch,
                    Duration::from_millis(MAX_APPEND_WAIT_MS as u64),
                )
                .await;
            let mut st = self.lock();
            let Some(txns) = st.at_epoch(p, coordinator_epoch) else {
                continue;
            };
            let gone = r.is_ok()
                && txns
                    .txns
                    .get(&id)
                    .is_some_and(|m| m.pending == Some(TxnStatus::Dead) && m.epoch == epoch);
            if gone {
                txns.txns.remove(&id);
                tracing::info!(transactional_id = %id, "removed an expired transactional id");
            } else if let Some(m) = txns.txns.get_mut(&id) {
                m.abandon();
            }
        }
    }
}

/// Every transactional id of one partition (latest record per key wins,
/// tombstones remove) and the partition's leader epoch; `None` when this
/// broker has no log of it (blocking).
fn read_partition<H: TxnHost>(
    host: &H,
    partition: i32,
    buffer: usize,
) -> Option<(i32, HashMap<String, TxnMetadata>)> {
    let (log, epoch) = host.leader_log(TXN_TOPIC, partition)?;
    let mut txns = HashMap::new();
    let mut next = log.log_start_offset();
    let end = log.log_end_offset();
    while next < end {
        let bytes = match log
            .read(next, buffer, ReadBound::LogEnd, true)
            .and_then(|d| {
                d.read_to_vec().map_err(|source| strata_log::LogError::Io {
                    path: log.dir(),
                    op: "reading __transaction_state",
                    source,
                })
            }) {
            Ok(b) => b,
            Err(error) => {
                tracing::error!(partition, error = %ErrorChain(&error), "cannot load __transaction_state partition");
                break;
            }
        };
        let mut progressed = false;
        for item in BatchScanner::new(&bytes) {
            let Ok((pos, prefix)) = item else { break };
            let Ok(view) = BatchView::parse(&bytes[pos..pos + prefix.total_size()]) else {
                break;
            };
            next = view.next_offset();
            progressed = true;
            if view.is_control() {
                continue;
            }
            let Ok(records) = view.records() else {
                tracing::warn!(
                    partition,
                    "skipping an unreadable __transaction_state batch"
                );
                continue;
            };
            for r in records {
                let Some(key) = r.key.as_deref() else {
                    continue;
                };
                let id = match decode_key(key) {
                    Ok(Some(id)) => id,
                    Ok(None) => continue,
                    Err(error) => {
                        tracing::warn!(partition, %error, "skipping an undecodable __transaction_state key");
                        continue;
                    }
                };
                match r.value.as_deref().map(decode_value) {
                    None => {
                        txns.remove(&id);
                    }
                    Some(Ok(v)) => {
                        txns.insert(id, TxnMetadata::from_value(&v));
                    }
                    Some(Err(error)) => {
                        tracing::warn!(partition, transactional_id = %id, %error,
                            "skipping an undecodable __transaction_state value");
                    }
                }
            }
        }
        if !progressed {
            break;
        }
    }
    Some((epoch.0, txns))
}

async fn timer_task<H: TxnHost>(host: Weak<H>) {
    let Some(h) = host.upgrade() else { return };
    let mut shutdown = h.shutdown_signal();
    drop(h);
    loop {
        let Some(h) = host.upgrade() else { return };
        if *shutdown.borrow() {
            h.txn_coordinator().shutdown();
            return;
        }
        h.txn_coordinator().tick(&h).await;
        let wait = (h.txn_coordinator().config.abort_interval_ms.max(1) as u64).min(TIMER_POLL_MS);
        drop(h);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = shutdown.changed() => {}
        }
    }
}
