//! [`RemoteLogManager`]: the remote tier of one broker (Kafka
//! `RemoteLogManager`, reference §5): which partitions are tiered, the
//! copy / expiration tasks on bounded pools every
//! `remote.log.manager.task.interval.ms`, the remote read path on a bounded
//! reader pool, and the gate local retention asks before deleting.
//!
//! Each tiered replica has a [`ReplicaRole`] (Kafka `onLeadershipChange`):
//! only a leader copies and expires. Every round, every replica first
//! re-reads the highest copied offset from the catalogue (Kafka's follower
//! task, and the copy task's `findHighestRemoteOffset`), so a follower's
//! local retention deletes only what is in the remote tier and a new leader
//! copies on from where the old one stopped. No task runs until the
//! catalogue is ready (a cluster broker's reader has caught up with
//! `__remote_log_metadata`).
//!
//! # Locks
//!
//! `partitions` (`RwLock`) maps partitions to their [`TieredPartition`];
//! it is held only to clone an `Arc`. Per partition, `copy_run` and
//! `expire_run` serialise runs of each task (a slow run is never
//! overlapped by the next tick); expiration takes `expire_run` then
//! `copy_run`, so it never overlaps a copy of the same partition (a copy
//! finishing mid-expiration would otherwise look abandoned); `copying`
//! (leaf) lists the segment ids a copy owns right now.
//!
//! # Layout
//!
//! - `copy`: the copy run (Kafka `RLMCopyTask`) and remote-segment deletion.
//! - `expire`: the expiration run (Kafka `RLMExpirationTask`).

mod copy;
mod expire;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;

use strata_log::{Log, LogConfig, LogManager, Offset, SharedClock, TopicPartition};
use uuid::Uuid;

use crate::bridge::Bridge;
use crate::config::TieredConfig;
use crate::error::{MetadataError, TieredConfigError, TieredError};
use crate::index_cache::RemoteIndexCache;
use crate::metadata::{RemoteLogSegmentState, TopicIdPartition};
use crate::metrics::TieredMetrics;
use crate::rlmm::topic::LogManagerMetadataLog;
use crate::rlmm::{RemoteLogMetadataManager, TopicRlmm, REMOTE_LOG_METADATA_TOPIC};
use crate::rsm::RemoteStorageManager;
use crate::tasks::pool::BoundedPool;

/// Offsets of the remote tier are "none yet".
const NONE: i64 = -1;

/// What this broker is for a tiered partition (Kafka: the `leaders` and
/// `followers` sets of `onLeadershipChange`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaRole {
    /// Copies sealed segments to the remote tier and expires them.
    Leader,
    /// Never copies; learns the highest copied offset from the catalogue.
    Follower,
}

/// One tiered partition this broker holds a replica of.
#[derive(Debug)]
pub struct TieredPartition {
    pub tip: TopicIdPartition,
    pub log: Arc<Log>,
    /// True while this broker leads the partition (only a leader copies).
    pub(crate) leader: std::sync::atomic::AtomicBool,
    /// Kafka `highestOffsetInRemoteStorage` (inclusive), −1 when nothing is
    /// copied. Only rises; gates local deletion.
    pub(crate) highest_remote: AtomicI64,
    /// Earliest offset still readable anywhere as remote expiration last
    /// published it; the log's own `log_start_offset` (checkpointed, raised
    /// by DeleteRecords too) is the other half of [`Self::log_start_offset`].
    pub(crate) log_start: AtomicI64,
    pub(crate) copying: Mutex<BTreeSet<Uuid>>,
    pub(crate) copy_run: Mutex<()>,
    pub(crate) expire_run: Mutex<()>,
}

impl TieredPartition {
    /// The partition's log start across tiers (Kafka `logStartOffset`).
    pub fn log_start_offset(&self) -> Offset {
        Offset(self.log_start.load(Ordering::Acquire)).max(self.log.log_start_offset())
    }

    /// This broker's role for the partition now.
    pub fn role(&self) -> ReplicaRole {
        if self.leader.load(Ordering::Acquire) {
            ReplicaRole::Leader
        } else {
            ReplicaRole::Follower
        }
    }
}

/// Failure to start the remote tier.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] TieredConfigError),
    #[error("remote log metadata")]
    Metadata(#[from] MetadataError),
    #[error("starting the tiered-storage runtime or index cache")]
    Io(#[from] std::io::Error),
}

/// The remote tier of a broker. Share as `Arc`.
pub struct RemoteLogManager {
    pub(crate) config: TieredConfig,
    pub(crate) broker_id: i32,
    pub(crate) clock: SharedClock,
    pub(crate) rsm: Arc<dyn RemoteStorageManager>,
    pub(crate) rlmm: Arc<dyn RemoteLogMetadataManager>,
    pub(crate) index_cache: RemoteIndexCache,
    pub(crate) metrics: TieredMetrics,
    partitions: RwLock<HashMap<TopicPartition, Arc<TieredPartition>>>,
    copier: BoundedPool,
    expirer: BoundedPool,
    pub(crate) reader: BoundedPool,
    stop: (Mutex<bool>, Condvar),
    scheduler: Mutex<Option<JoinHandle<()>>>,
    source: Mutex<Option<PartitionSource>>,
    /// Set by [`RemoteLogManager::open`]: after a round that copied
    /// segments, a retention round runs at once so local copies go promptly.
    logs: std::sync::OnceLock<Arc<LogManager>>,
    pub(crate) copied_since_retention: std::sync::atomic::AtomicBool,
}

/// Lists the partitions to tier: `(log, topic id, this broker's role)`.
pub type PartitionSource = Arc<dyn Fn() -> Vec<(Arc<Log>, Uuid, ReplicaRole)> + Send + Sync>;

impl std::fmt::Debug for RemoteLogManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteLogManager")
            .field("broker_id", &self.broker_id)
            .field("location", &self.config.location)
            .field(
                "partitions",
                &self.partitions.read().map(|p| p.len()).unwrap_or(0),
            )
            .finish_non_exhaustive()
    }
}

/// Is tiering allowed for this topic at all (reference §0): not internal,
/// not compacted, and the topic switch is on.
pub fn topic_eligible(topic: &str, config: &LogConfig) -> bool {
    config.remote_storage_enable
        && !config.cleanup_policy.compact
        && !matches!(
            topic,
            "__consumer_offsets"
                | "__transaction_state"
                | REMOTE_LOG_METADATA_TOPIC
                | "__cluster_metadata"
        )
}

impl RemoteLogManager {
    /// Assemble a manager from plug-ins (tests, embedding).
    ///
    /// # Errors
    /// The index cache directory cannot be created.
    pub fn new(
        config: TieredConfig,
        broker_id: i32,
        first_log_dir: &Path,
        rsm: Arc<dyn RemoteStorageManager>,
        rlmm: Arc<dyn RemoteLogMetadataManager>,
        clock: SharedClock,
    ) -> std::io::Result<Arc<RemoteLogManager>> {
        let index_cache = RemoteIndexCache::open(first_log_dir, config.index_cache_total_bytes)?;
        let queue = 1024;
        Ok(Arc::new(RemoteLogManager {
            copier: BoundedPool::new("kafka-rlm-copy-thread-pool", config.copier_threads, queue),
            expirer: BoundedPool::new(
                "kafka-rlm-expiration-thread-pool",
                config.expiration_threads,
                queue,
            ),
            reader: BoundedPool::new(
                "remote-log-reader",
                config.reader_threads,
                config.reader_max_pending_tasks,
            ),
            config,
            broker_id,
            clock,
            rsm,
            rlmm,
            index_cache,
            metrics: TieredMetrics::default(),
            partitions: RwLock::new(HashMap::new()),
            stop: (Mutex::new(false), Condvar::new()),
            scheduler: Mutex::new(None),
            source: Mutex::new(None),
            logs: std::sync::OnceLock::new(),
            copied_since_retention: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// The broker's remote tier: the configured object store, and the
    /// catalogue rebuilt from `__remote_log_metadata` in `logs`.
    ///
    /// # Errors
    /// Bad storage settings, unreadable metadata partitions, I/O.
    pub fn open(
        config: TieredConfig,
        logs: Arc<LogManager>,
        broker_id: i32,
        clock: SharedClock,
    ) -> Result<Arc<RemoteLogManager>, StartError> {
        let bridge = Arc::new(Bridge::new(2)?);
        let rsm = Arc::new(config.build_rsm(bridge)?);
        let metadata_log = Arc::new(LogManagerMetadataLog::open(
            Arc::clone(&logs),
            config.metadata_partitions,
        )?);
        let (rlmm, stats) = TopicRlmm::open(metadata_log, Arc::clone(&clock))?;
        tracing::info!(
            applied = stats.applied,
            skipped = stats.skipped,
            "remote log metadata rebuilt"
        );
        let first_dir = logs
            .log_dirs()
            .first()
            .map(|d| d.path.clone())
            .unwrap_or_default();
        let rlm = RemoteLogManager::new(config, broker_id, &first_dir, rsm, Arc::new(rlmm), clock)?;
        let _ = rlm.logs.set(logs);
        Ok(rlm)
    }

    /// A cluster broker's remote tier: the configured object store and a
    /// catalogue kept elsewhere (`rlmm`, e.g. a
    /// [`crate::rlmm::tailed::TailedRlmm`] fed from the replicated
    /// `__remote_log_metadata`); no local metadata log is opened.
    ///
    /// # Errors
    /// Bad storage settings, I/O.
    pub fn open_with_rlmm(
        config: TieredConfig,
        logs: Arc<LogManager>,
        broker_id: i32,
        clock: SharedClock,
        rlmm: Arc<dyn RemoteLogMetadataManager>,
    ) -> Result<Arc<RemoteLogManager>, StartError> {
        let bridge = Arc::new(Bridge::new(2)?);
        let rsm = Arc::new(config.build_rsm(bridge)?);
        let first_dir = logs
            .log_dirs()
            .first()
            .map(|d| d.path.clone())
            .unwrap_or_default();
        let rlm = RemoteLogManager::new(config, broker_id, &first_dir, rsm, rlmm, clock)?;
        let _ = rlm.logs.set(logs);
        Ok(rlm)
    }

    pub fn config(&self) -> &TieredConfig {
        &self.config
    }

    pub fn metrics(&self) -> &TieredMetrics {
        &self.metrics
    }

    pub fn rsm(&self) -> &Arc<dyn RemoteStorageManager> {
        &self.rsm
    }

    pub fn rlmm(&self) -> &Arc<dyn RemoteLogMetadataManager> {
        &self.rlmm
    }

    /// Start tiering `log` as its leader (its topic is eligible).
    /// Idempotent.
    pub fn register(&self, log: Arc<Log>, topic_id: Uuid) {
        self.register_as(log, topic_id, ReplicaRole::Leader);
    }

    /// Start tiering `log` with `role`, or change the role of a registered
    /// partition (Kafka `onLeadershipChange`: a new leader starts copying
    /// at its next task round, a new follower stops).
    pub fn register_as(&self, log: Arc<Log>, topic_id: Uuid, role: ReplicaRole) {
        let tp = log.topic_partition().clone();
        if let Some(p) = self.partition(&tp) {
            if p.role() != role {
                tracing::info!(%tp, ?role, "tiered partition changed role");
                p.leader
                    .store(role == ReplicaRole::Leader, Ordering::Release);
            }
            return;
        }
        let tip = TopicIdPartition::new(topic_id, tp.clone());
        let finished: Vec<_> = self
            .rlmm
            .list_remote_log_segments(&tip)
            .unwrap_or_default()
            .into_iter()
            .filter(|md| md.state == RemoteLogSegmentState::CopySegmentFinished)
            .collect();
        let highest = finished
            .iter()
            .map(|md| md.end_offset.0)
            .max()
            .unwrap_or(NONE);
        let mut partitions = self.partitions.write().unwrap_or_else(|p| p.into_inner());
        if partitions.contains_key(&tp) {
            return;
        }
        // The log keeps the partition's start across tiers (checkpointed).
        // Without a checkpoint entry it may claim offsets that neither tier
        // holds: raise it to the earliest data that exists.
        let earliest = finished
            .iter()
            .map(|md| md.start_offset)
            .min()
            .map_or(log.local_log_start_offset(), |o| {
                o.min(log.local_log_start_offset())
            });
        if earliest > log.log_start_offset() && earliest <= log.high_watermark() {
            if let Err(error) = log.maybe_increment_log_start_offset(earliest) {
                tracing::warn!(%tp, %error, "could not raise the log start to the earliest remote segment");
            }
        }
        let start = log.log_start_offset();
        let part = Arc::new(TieredPartition {
            tip,
            log: Arc::clone(&log),
            leader: std::sync::atomic::AtomicBool::new(role == ReplicaRole::Leader),
            highest_remote: AtomicI64::new(highest),
            log_start: AtomicI64::new(start.0),
            copying: Mutex::new(BTreeSet::new()),
            copy_run: Mutex::new(()),
            expire_run: Mutex::new(()),
        });
        // Local retention may delete only what is copied; a weak reference
        // so the log does not keep the partition state alive.
        let weak = Arc::downgrade(&part);
        log.set_retention_gate(Some(Arc::new(move |_: &TopicPartition| {
            weak.upgrade()
                .map(|p| Offset(p.highest_remote.load(Ordering::Acquire) + 1))
        })));
        partitions.insert(tp, part);
    }

    /// Stop tiering a partition (deleted, or no longer led here).
    pub fn unregister(&self, tp: &TopicPartition) {
        let removed = self
            .partitions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(tp);
        if let Some(p) = removed {
            p.log.set_retention_gate(None);
        }
    }

    /// Tell the manager where tiered partitions come from: called at each
    /// task round, it lists every partition that should be tiered now
    /// (eligible topic, led here) with its topic id. New ones are registered,
    /// vanished ones unregistered — so topic creation, deletion and config
    /// changes need no hook of their own.
    pub fn set_partition_source(&self, source: PartitionSource) {
        *self.source.lock().unwrap_or_else(|p| p.into_inner()) = Some(source);
    }

    /// Apply the partition source now (also done at each task round).
    pub fn sync_partitions(&self) {
        let source = self
            .source
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(source) = source else { return };
        let wanted = source();
        let keep: std::collections::HashSet<TopicPartition> = wanted
            .iter()
            .map(|(log, _, _)| log.topic_partition().clone())
            .collect();
        let stale: Vec<TopicPartition> = self
            .partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .filter(|tp| !keep.contains(*tp))
            .cloned()
            .collect();
        for tp in stale {
            self.unregister(&tp);
        }
        for (log, topic_id, role) in wanted {
            self.register_as(log, topic_id, role);
        }
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<Arc<TieredPartition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tp)
            .cloned()
    }

    pub fn is_tiered(&self, tp: &TopicPartition) -> bool {
        self.partition(tp).is_some()
    }

    fn all(&self) -> Vec<Arc<TieredPartition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Kafka `highestOffsetInRemoteStorage`: `None` when nothing is copied
    /// or the partition is not tiered (ListOffsets LATEST_TIERED answers −1).
    pub fn highest_offset_in_remote_storage(&self, tp: &TopicPartition) -> Option<Offset> {
        let v = self.partition(tp)?.highest_remote.load(Ordering::Acquire);
        (v >= 0).then_some(Offset(v))
    }

    /// The earliest offset readable from either tier (ListOffsets EARLIEST
    /// and the log start reported in fetch responses); `None` when not tiered.
    pub fn log_start_offset(&self, tp: &TopicPartition) -> Option<Offset> {
        Some(self.partition(tp)?.log_start_offset())
    }

    /// The local-retention gate: a local segment whose offsets end before
    /// `upper_bound` may be deleted locally only once all of it is in remote
    /// storage. Untiered partitions are not gated.
    pub fn may_delete_locally(&self, tp: &TopicPartition, upper_bound: Offset) -> bool {
        match self.partition(tp) {
            None => true,
            Some(p) => upper_bound.0 - 1 <= p.highest_remote.load(Ordering::Acquire),
        }
    }

    /// Kafka `RLMFollowerTask` (and the copy task's first step): learn the
    /// highest copied offset from the catalogue, so a follower's local
    /// retention deletes only segments already in the remote tier and a new
    /// leader does not copy again what its predecessor copied.
    ///
    /// # Errors
    /// The catalogue cannot be read.
    fn refresh_highest_copied(&self, p: &TieredPartition) -> Result<(), TieredError> {
        let highest = self
            .rlmm
            .list_remote_log_segments(&p.tip)
            .map_err(Self::metadata_err(&p.tip.tp))?
            .iter()
            .filter(|md| md.state == RemoteLogSegmentState::CopySegmentFinished)
            .map(|md| md.end_offset.0)
            .max()
            .unwrap_or(NONE);
        p.highest_remote.fetch_max(highest, Ordering::AcqRel);
        Ok(())
    }

    /// One round of every task for every partition, on the bounded pools;
    /// returns when all finished. Errors are counted and logged, and the
    /// next round retries (Kafka's behaviour). Leaders copy and expire;
    /// every replica learns the highest copied offset first. Nothing runs
    /// while the catalogue is not ready.
    pub fn run_tasks_once(self: &Arc<Self>) {
        self.sync_partitions();
        if !self.rlmm.is_ready() {
            tracing::debug!("remote log metadata not ready; no task this round");
            return;
        }
        let (tx, rx) = mpsc::channel::<()>();
        let mut submitted = 0;
        for p in self.all() {
            if let Err(error) = self.refresh_highest_copied(&p) {
                tracing::warn!(tp = %p.tip.tp, %error, "reading the highest copied offset failed; retrying next run");
            }
            if p.role() == ReplicaRole::Follower {
                continue;
            }
            let (me, part, done) = (Arc::clone(self), Arc::clone(&p), tx.clone());
            if self
                .copier
                .try_submit(move || {
                    if let Err(error) = me.copy_partition(&part) {
                        tracing::warn!(tp = %part.tip.tp, %error, "remote copy failed; retrying next run");
                    }
                    let _ = done.send(());
                })
                .is_ok()
            {
                submitted += 1;
            }
            let (me, part, done) = (Arc::clone(self), p, tx.clone());
            if self
                .expirer
                .try_submit(move || {
                    if let Err(error) = me.expire_partition(&part) {
                        tracing::warn!(tp = %part.tip.tp, %error, "remote expiration failed; retrying next run");
                    }
                    let _ = done.send(());
                })
                .is_ok()
            {
                submitted += 1;
            }
        }
        drop(tx);
        for _ in 0..submitted {
            if rx.recv().is_err() {
                break;
            }
        }
        if self.copied_since_retention.swap(false, Ordering::AcqRel) {
            if let Some(logs) = self.logs.get() {
                logs.run_retention_once();
            }
        }
    }

    /// Run [`Self::run_tasks_once`] every `remote.log.manager.task.interval.ms`
    /// on a named thread until [`Self::shutdown`].
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let me = Arc::clone(self);
        let interval = std::time::Duration::from_millis(self.config.task_interval_ms.max(1) as u64);
        let handle = std::thread::Builder::new()
            .name("strata-rlm-scheduler".into())
            .spawn(move || loop {
                me.run_tasks_once();
                let (lock, cv) = &me.stop;
                let stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                let (stopped, _) = cv
                    .wait_timeout(stopped, interval)
                    .unwrap_or_else(|p| p.into_inner());
                if *stopped {
                    return;
                }
            })?;
        *self.scheduler.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(())
    }

    /// Stop the scheduler and the pools (running tasks finish first; a
    /// catalogue write still waiting gives up).
    pub fn shutdown(&self) {
        self.rlmm.close();
        {
            let (lock, cv) = &self.stop;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cv.notify_all();
        }
        if let Some(h) = self
            .scheduler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = h.join();
        }
        self.copier.shutdown();
        self.expirer.shutdown();
        self.reader.shutdown();
    }

    /// Copy every eligible segment of `tp` now (one copy-task run).
    ///
    /// # Errors
    /// See [`TieredError`]; segments copied before the failure stay copied.
    pub fn copy_once(&self, tp: &TopicPartition) -> Result<usize, TieredError> {
        let p = self
            .partition(tp)
            .ok_or_else(|| TieredError::NotTiered { tp: tp.clone() })?;
        self.copy_partition(&p)
    }

    /// One expiration-task run for `tp`; returns the segments deleted.
    ///
    /// # Errors
    /// See [`TieredError`].
    pub fn expire_once(&self, tp: &TopicPartition) -> Result<usize, TieredError> {
        let p = self
            .partition(tp)
            .ok_or_else(|| TieredError::NotTiered { tp: tp.clone() })?;
        self.expire_partition(&p)
    }

    pub(crate) fn metadata_err(
        tp: &TopicPartition,
    ) -> impl FnOnce(MetadataError) -> TieredError + '_ {
        move |source| TieredError::Metadata {
            tp: tp.clone(),
            source: Box::new(source),
        }
    }

    pub(crate) fn storage_err(
        tp: &TopicPartition,
    ) -> impl FnOnce(crate::error::RemoteStorageError) -> TieredError + '_ {
        move |source| TieredError::Storage {
            tp: tp.clone(),
            source: Box::new(source),
        }
    }
}

impl Drop for RemoteLogManager {
    fn drop(&mut self) {
        let (lock, cv) = &self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    }
}
