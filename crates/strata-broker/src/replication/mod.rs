//! Replication: Kafka's ISR protocol between Strata brokers (cluster mode).
//!
//! - Every replica of a partition this broker holds is a [`Partition`]:
//!   the controller's state it applied last, and as leader, what each
//!   follower holds. `partition_sync` applies each etcd snapshot here.
//! - Followers fetch from their leader with replica Fetch requests
//!   (`fetcher`, over `client`), append the leader's batches unchanged and
//!   truncate by leader epoch when the leader answers with a diverging
//!   epoch (`divergence`).
//! - The leader records each follower Fetch (`replica`), moves the high
//!   watermark to what the ISR holds and changes the ISR (`isr`) by a
//!   conditional write of the partition's etcd key, as Kafka's
//!   AlterPartition: at most one change in flight per partition.
//! - acks=all produce requests wait on [`ReplicaManager::subscribe`], which
//!   ticks whenever a high watermark moves or a replica changes role.
//! - A leader with `replica.selector.class` set points consumers at a
//!   follower in their rack (`selector`, KIP-392).
//!
//! `docs/replication.md` describes the protocol as implemented.

pub(crate) mod client;
mod divergence;
mod fetcher;
mod isr;
mod partition;
mod replica;
mod selector;
mod tier_state;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use strata_log::{ErrorChain, Log, SharedClock, TopicPartition};
use tokio::sync::watch;

pub(crate) use divergence::diverging_epoch;
pub(crate) use partition::{Eligibility, IsrProposal, Partition, Role};

use crate::api_error::ApiError;
use crate::cluster::{Cluster, PartitionRecord, Snapshot};
use crate::config::ReplicationSettings;

/// Who is eligible, as the applied etcd snapshot says: registered (live),
/// not shutting down, with the broker epoch given (-1: any).
struct Registered(Arc<Snapshot>);

impl Eligibility for Registered {
    fn eligible(&self, broker: i32, broker_epoch: i64) -> bool {
        self.0.brokers.get(&broker).is_some_and(|b| {
            !b.record.shutting_down && (broker_epoch < 0 || b.epoch == broker_epoch)
        })
    }

    fn registered_epoch(&self, broker: i32) -> Option<i64> {
        self.0.brokers.get(&broker).map(|b| b.epoch)
    }
}

/// This broker's replicas and the tasks that keep them in sync.
pub(crate) struct ReplicaManager {
    me: i32,
    cluster: Arc<Cluster>,
    settings: ReplicationSettings,
    clock: SharedClock,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    changes: watch::Sender<u64>,
    fetchers: fetcher::Fetchers,
    /// Set by `start`: `true` once the broker shuts down.
    shutdown: OnceLock<watch::Receiver<bool>>,
    /// The remote tier, when the broker enables it (a far-behind follower
    /// of a tiered partition restarts from its metadata).
    tiered: OnceLock<Arc<strata_tiered::RemoteLogManager>>,
}

impl std::fmt::Debug for ReplicaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaManager")
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

impl ReplicaManager {
    pub(crate) fn new(
        cluster: Arc<Cluster>,
        settings: ReplicationSettings,
        clock: SharedClock,
    ) -> Arc<ReplicaManager> {
        let num_fetchers = settings.num_fetchers.max(1) as usize;
        Arc::new(ReplicaManager {
            me: cluster.node_id(),
            cluster,
            settings,
            clock,
            partitions: RwLock::new(HashMap::new()),
            changes: watch::channel(0).0,
            fetchers: fetcher::Fetchers::new(num_fetchers),
            shutdown: OnceLock::new(),
            tiered: OnceLock::new(),
        })
    }

    /// The broker's remote tier (set once at start, before fetchers need it).
    pub(crate) fn set_tiered(&self, rlm: Arc<strata_tiered::RemoteLogManager>) {
        let _ = self.tiered.set(rlm);
    }

    /// Start the ISR-shrink task (fetchers start as partitions need them).
    pub(crate) fn start(self: &Arc<Self>, shutdown: watch::Receiver<bool>) {
        let _ = self.shutdown.set(shutdown.clone());
        tokio::spawn(shrink_task(self.clone(), shutdown));
    }

    pub(crate) fn settings(&self) -> &ReplicationSettings {
        &self.settings
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    fn lag_ms(&self) -> i64 {
        self.settings.lag_time_max_ms
    }

    fn eligibility(&self) -> Registered {
        Registered(self.cluster.applied())
    }

    /// Ticks when a high watermark moves or a replica changes role.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The replica of `tp` on this broker, if it holds one.
    pub(crate) fn get(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tp)
            .cloned()
    }

    /// Where an acks=all wait for `required` on `replica` (appended in
    /// leader `epoch`) stands, read on the replica this broker holds *now*:
    /// a log-dir move swaps the replica and closes its old log, whose high
    /// watermark never moves again, while requests wait (Kafka's
    /// DelayedProduce reads the partition's current log). Only a closed
    /// log costs a lookup; every other wake-up reads the replica it holds.
    /// A replica no longer held was stopped and answers NOT_LEADER_OR_FOLLOWER.
    pub(crate) fn produce_outcome(
        &self,
        replica: &Partition,
        required: i64,
        epoch: i32,
    ) -> Option<Result<(), ApiError>> {
        if !replica.log.is_closed() {
            return replica.produce_outcome(required, epoch);
        }
        match self.get(&replica.tp) {
            Some(current) => current.produce_outcome(required, epoch),
            None => replica.produce_outcome(required, epoch),
        }
    }

    fn leaders(&self) -> Vec<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|p| p.is_leader())
            .cloned()
            .collect()
    }

    /// Apply the controller's state of a partition this broker holds a
    /// replica of (blocking: may write the leader-epoch cache).
    pub(crate) fn apply(
        self: &Arc<Self>,
        tp: &TopicPartition,
        log: &Arc<Log>,
        record: &PartitionRecord,
        revision: i64,
        snapshot: &Snapshot,
    ) {
        // Leadership recorded for an earlier incarnation of this broker (it
        // restarted before the controller noticed): not ours to take. The
        // controller re-elects in a new epoch; until then this replica
        // neither leads nor fetches (Kafka: a re-registered broker is fenced).
        let stale;
        let record = if record.leader == self.me && record.leader_bounced(snapshot) {
            stale = PartitionRecord {
                leader: -1,
                ..record.clone()
            };
            &stale
        } else {
            record
        };
        let partition = {
            let mut map = self.partitions.write().unwrap_or_else(|e| e.into_inner());
            let entry = map
                .entry(tp.clone())
                .or_insert_with(|| Arc::new(Partition::new(tp.clone(), log.clone(), self.me)));
            // `log` closed: a log-dir move replaced it after the caller
            // looked it up, and `replace_log` already moved the entry on.
            if !Arc::ptr_eq(&entry.log, log) && !log.is_closed() {
                // The log was replaced (topic recreated): start afresh.
                self.fetchers.remove(tp);
                *entry = Arc::new(Partition::new(tp.clone(), log.clone(), self.me));
            }
            entry.clone()
        };
        // A change of leader or epoch stops the old fetch first: removing
        // waits for a response being applied, so nothing from the old
        // leader is appended after the new state (an epoch started at the
        // log end) is taken.
        if partition.leader_and_epoch() != (record.leader, record.leader_epoch) {
            self.fetchers.remove(tp);
        }
        let role = match partition.apply(record, revision, self.now_ms()) {
            Ok(role) => role,
            Err(error) => {
                tracing::error!(%tp, error = %ErrorChain(&error), "cannot take the partition's new state");
                return;
            }
        };
        match role {
            Role::Unchanged => return,
            Role::BecameLeader => {
                self.fetchers.remove(tp);
                tracing::info!(%tp, leader_epoch = record.leader_epoch, isr = ?record.isr, "leading partition");
                partition.maybe_advance_high_watermark(
                    &self.eligibility(),
                    self.now_ms(),
                    self.lag_ms(),
                );
            }
            Role::BecameFollower { leader, epoch } => {
                self.fetchers.remove(tp);
                if leader >= 0 {
                    tracing::info!(%tp, leader, leader_epoch = epoch, "following partition");
                    self.fetchers
                        .add(self, leader, partition.clone(), epoch, record.topic_id);
                } else {
                    tracing::info!(%tp, leader_epoch = epoch, "partition has no leader");
                }
            }
            Role::Updated => {
                partition.maybe_advance_high_watermark(
                    &self.eligibility(),
                    self.now_ms(),
                    self.lag_ms(),
                );
            }
        }
        self.changed();
    }

    /// A log-dir move swapped `tp`'s log: the replica keeps its state on
    /// the new log, and a follower's fetch restarts on it (Kafka swaps
    /// `Partition.log` under the partition's lock).
    pub(crate) fn replace_log(self: &Arc<Self>, tp: &TopicPartition, log: &Arc<Log>) {
        let (partition, follow) = {
            let mut map = self.partitions.write().unwrap_or_else(|e| e.into_inner());
            let Some(old) = map.get(tp) else { return };
            let (p, follow) = old.with_log(log.clone());
            let p = Arc::new(p);
            map.insert(tp.clone(), p.clone());
            (p, follow)
        };
        self.fetchers.remove(tp);
        if let Some((leader, epoch, topic_id)) = follow {
            self.fetchers.add(self, leader, partition, epoch, topic_id);
        }
        self.changed();
    }

    /// Forget the replicas not in `keep` (no longer assigned here, or
    /// their log is gone).
    pub(crate) fn retain(&self, keep: &HashSet<TopicPartition>) {
        let removed: Vec<Arc<Partition>> = {
            let mut map = self.partitions.write().unwrap_or_else(|e| e.into_inner());
            let gone: Vec<TopicPartition> = map
                .keys()
                .filter(|tp| !keep.contains(*tp))
                .cloned()
                .collect();
            gone.iter().filter_map(|tp| map.remove(tp)).collect()
        };
        for partition in &removed {
            // Requests still hold the replica: they must not wait on it.
            partition.stop();
            self.fetchers.remove(&partition.tp);
        }
        if !removed.is_empty() {
            self.changed();
        }
    }

    /// After a leader append: the high watermark may move (an ISR of the
    /// leader alone commits at once).
    pub(crate) fn after_leader_append(&self, tp: &TopicPartition) {
        if let Some(p) = self.get(tp) {
            if p.maybe_advance_high_watermark(&self.eligibility(), self.now_ms(), self.lag_ms()) {
                self.changed();
            }
        }
    }

    /// A follower's Fetch of `partition` from `fetch_offset` (leader side).
    ///
    /// # Errors
    /// As [`Partition::record_follower_fetch`].
    pub(crate) fn record_follower_fetch(
        self: &Arc<Self>,
        partition: &Partition,
        replica: i32,
        broker_epoch: i64,
        fetch_offset: i64,
        log_start: i64,
    ) -> Result<(), ApiError> {
        let r = partition.record_follower_fetch(
            replica,
            broker_epoch,
            fetch_offset,
            log_start,
            &self.eligibility(),
            self.now_ms(),
            self.lag_ms(),
        )?;
        if let Some(proposal) = r.proposal {
            tracing::info!(tp = %proposal.tp, replica, "follower caught up; expanding the ISR");
            self.submit(proposal);
        }
        if r.high_watermark_moved {
            self.changed();
        }
        Ok(())
    }

    /// Write an ISR change to etcd (conditional on the revision the leader
    /// holds), then apply the answer.
    fn submit(self: &Arc<Self>, proposal: IsrProposal) {
        let this = self.clone();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            let written = this
                .cluster
                .alter_partition(
                    &proposal.tp.topic,
                    proposal.tp.partition,
                    proposal.expected,
                    &proposal.record,
                    proposal.joining.as_slice(),
                )
                .await;
            let revision = match written {
                Ok(r) => {
                    if r.is_none() {
                        tracing::info!(tp = %proposal.tp, isr = ?proposal.record.isr, "ISR change refused by etcd (the state changed or a joining broker restarted)");
                    }
                    r
                }
                Err(error) => {
                    tracing::warn!(tp = %proposal.tp, error = %ErrorChain(&error), "ISR change not written");
                    None
                }
            };
            if let Some(p) = this.get(&proposal.tp) {
                if p.isr_written(&proposal, revision) {
                    p.maybe_advance_high_watermark(&this.eligibility(), this.now_ms(), this.lag_ms());
                }
                this.changed();
            }
        });
    }

    fn shutdown_signal(&self) -> Option<watch::Receiver<bool>> {
        self.shutdown.get().cloned()
    }
}

/// Every `replica.lag.time.max.ms / 2`, drop out-of-sync followers from
/// the ISRs this broker leads.
async fn shrink_task(manager: Arc<ReplicaManager>, mut shutdown: watch::Receiver<bool>) {
    let period = Duration::from_millis((manager.lag_ms() / 2).max(10) as u64);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        let now = manager.now_ms();
        for p in manager.leaders() {
            if let Some(proposal) = p.maybe_shrink_isr(now, manager.lag_ms()) {
                manager.submit(proposal);
            }
        }
    }
}
