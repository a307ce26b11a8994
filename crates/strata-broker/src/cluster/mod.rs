//! Cluster mode: several brokers sharing their metadata through etcd, the
//! way Kafka's ZooKeeper mode shared it (`docs/cluster.md`).
//!
//! - `layout`: the keys, their JSON values and the parsed [`Snapshot`].
//! - `store`: the etcd client scoped to the prefix (deadlines, CAS, leases, watch).
//! - `policy`: the controller's decisions as a pure function of a snapshot.
//! - `controller`: election, fencing and the writes of those decisions.
//! - `admin`: the changes any broker makes (topics, configs, producer ids).
//!
//! A [`Cluster`] registers this broker under a lease, keeps the lease
//! alive, follows every key with a watch into `latest`, and campaigns for
//! the controller. What the broker does with a new snapshot (create logs,
//! load groups) is `partition_sync`'s, outside this module; requests are
//! answered from the snapshot it *applied*, never from one it has not.

mod admin;
mod controller;
mod layout;
mod policy;
mod store;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;

pub(crate) use layout::{BrokerRecord, PartitionRecord, Snapshot, TopicRecord, Versioned};
use store::{Cond, MetaStore, Op};

/// How long one etcd request may take before it counts as unreachable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a cluster operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("etcd ({endpoints}) is unreachable: {op} failed")]
    Etcd {
        op: &'static str,
        endpoints: String,
        #[source]
        source: etcd_client::Error,
    },
    #[error("etcd ({endpoints}) is unreachable: {op} timed out after {after:?}")]
    Timeout {
        op: &'static str,
        endpoints: String,
        after: Duration,
    },
    #[error(
        "node.id {id} is already registered by a live broker ({host}:{port}); \
         two brokers cannot share a node.id"
    )]
    DuplicateBroker { id: i32, host: String, port: u16 },
    #[error(
        "the log dirs belong to cluster {local}, but etcd ({prefix}) holds cluster {stored}; \
         refusing to mix two clusters' data"
    )]
    ClusterIdMismatch {
        local: String,
        stored: String,
        prefix: String,
    },
    #[error("no controller has been elected (is a quorum of etcd up?)")]
    NoController,
    #[error("the cluster metadata changed concurrently; retry")]
    Conflict,
    #[error("timed out after {after:?} waiting for {what}")]
    Waiting { what: String, after: Duration },
}

impl ClusterError {
    /// True when etcd itself could not be reached (not a refused change).
    pub(crate) fn is_unreachable(&self) -> bool {
        matches!(
            self,
            ClusterError::Etcd { .. } | ClusterError::Timeout { .. }
        )
    }
}

/// The settings cluster mode reads (`strata.metadata.etcd.*`, `broker.*`).
#[derive(Clone, Debug)]
pub(crate) struct ClusterSettings {
    pub endpoints: Vec<String>,
    pub prefix: String,
    pub node_id: i32,
    pub session_timeout: Duration,
    pub heartbeat: Duration,
    /// `unclean.leader.election.enable` of this broker (the controller's
    /// default when neither the topic nor the cluster's configs set it).
    pub unclean_leader_election: bool,
}

/// This broker's membership of the cluster.
#[derive(Debug)]
pub(crate) struct Cluster {
    settings: ClusterSettings,
    store: MetaStore,
    record: BrokerRecord,
    cluster_id: String,
    /// The lease the registration (and a controller key) lives under.
    lease: AtomicI64,
    /// The newest snapshot the watch produced.
    latest: watch::Sender<Arc<Snapshot>>,
    /// The snapshot the broker has applied; requests are answered from it.
    applied: RwLock<Arc<Snapshot>>,
    applied_revision: watch::Sender<i64>,
    /// The last etcd call succeeded.
    reachable: AtomicBool,
    /// The create revision of the `controller` key this broker wrote, 0 if
    /// it does not hold the controller.
    term: AtomicI64,
}

impl Cluster {
    /// Connect, agree on the cluster id and register this broker.
    ///
    /// `local_cluster_id` is the id the log dirs (or `cluster.id`) carry; a
    /// different id in etcd refuses to start. A registration of the same
    /// id that outlives the lease (a live duplicate) refuses to start; one
    /// left by this broker's previous, killed process is waited out.
    ///
    /// # Errors
    /// etcd unreachable, another cluster's data, a duplicate broker id.
    pub(crate) async fn join(
        settings: ClusterSettings,
        record: BrokerRecord,
        local_cluster_id: Option<String>,
    ) -> Result<Arc<Cluster>, ClusterError> {
        let store =
            MetaStore::connect(&settings.endpoints, &settings.prefix, REQUEST_TIMEOUT).await?;
        let cluster_id = Self::agree_cluster_id(&store, &settings, local_cluster_id).await?;
        let cluster = Cluster {
            store,
            record,
            cluster_id,
            lease: AtomicI64::new(0),
            latest: watch::Sender::new(Arc::new(Snapshot::default())),
            applied: RwLock::new(Arc::new(Snapshot::default())),
            applied_revision: watch::Sender::new(0),
            reachable: AtomicBool::new(true),
            term: AtomicI64::new(0),
            settings,
        };
        cluster.register().await?;
        let (raw, revision) = cluster.store.load().await?;
        cluster
            .latest
            .send_replace(Arc::new(Snapshot::parse(&raw, revision)));
        Ok(Arc::new(cluster))
    }

    async fn agree_cluster_id(
        store: &MetaStore,
        settings: &ClusterSettings,
        local: Option<String>,
    ) -> Result<String, ClusterError> {
        let proposed = local.clone().unwrap_or_else(crate::topics::new_cluster_id);
        store
            .txn(
                &[Cond::CreateRevision(layout::CLUSTER_ID.into(), 0)],
                &[Op::Put(layout::CLUSTER_ID.into(), proposed.into_bytes())],
            )
            .await?;
        let (raw, _) = store.load().await?;
        let stored = raw
            .get(layout::CLUSTER_ID)
            .and_then(|v| String::from_utf8(v.value.clone()).ok())
            .ok_or(ClusterError::Conflict)?;
        match local {
            Some(local) if local != stored => Err(ClusterError::ClusterIdMismatch {
                local,
                stored,
                prefix: settings.prefix.clone(),
            }),
            _ => Ok(stored),
        }
    }

    fn ttl_seconds(&self) -> i64 {
        let ms = self.settings.session_timeout.as_millis() as i64;
        ((ms + 999) / 1000).max(1)
    }

    /// Write `brokers/<id>` under a new lease. An existing registration is
    /// waited for (up to twice the session timeout): a killed predecessor's
    /// lease expires, a live duplicate's does not.
    async fn register(&self) -> Result<(), ClusterError> {
        let key = layout::broker_key(self.settings.node_id);
        let value = serde_json::to_vec(&self.record).expect("broker record serializes");
        let give_up = tokio::time::Instant::now() + self.settings.session_timeout * 2;
        let mut warned = false;
        loop {
            let lease = self.store.grant(self.ttl_seconds()).await?;
            let done = self
                .store
                .txn(
                    &[Cond::CreateRevision(key.clone(), 0)],
                    &[Op::PutLeased(key.clone(), value.clone(), lease)],
                )
                .await?;
            if done.is_some() {
                self.lease.store(lease, Ordering::Release);
                tracing::info!(
                    node_id = self.settings.node_id,
                    lease,
                    "registered in the cluster"
                );
                return Ok(());
            }
            let _ = self.store.revoke(lease).await;
            let (raw, revision) = self.store.load().await?;
            let existing = Snapshot::parse(&raw, revision)
                .brokers
                .remove(&self.settings.node_id);
            if tokio::time::Instant::now() >= give_up {
                let (host, port) = existing
                    .map(|b| (b.record.host, b.record.port))
                    .unwrap_or_default();
                return Err(ClusterError::DuplicateBroker {
                    id: self.settings.node_id,
                    host,
                    port,
                });
            }
            if !warned {
                tracing::warn!(
                    node_id = self.settings.node_id,
                    "node.id is still registered (a previous process whose lease has not expired, or a duplicate); waiting"
                );
                warned = true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    pub(crate) fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    pub(crate) fn node_id(&self) -> i32 {
        self.settings.node_id
    }

    /// The snapshot requests are answered from.
    pub(crate) fn applied(&self) -> Arc<Snapshot> {
        self.applied
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Record that the broker now serves `snapshot`.
    pub(crate) fn set_applied(&self, snapshot: Arc<Snapshot>) {
        let revision = snapshot.revision;
        *self.applied.write().unwrap_or_else(|p| p.into_inner()) = snapshot;
        self.applied_revision.send_replace(revision);
    }

    /// Snapshots as the watch produces them.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.latest.subscribe()
    }

    /// Wait until the applied snapshot satisfies `done`, up to `timeout`.
    ///
    /// # Errors
    /// [`ClusterError::Waiting`] naming `what`.
    pub(crate) async fn wait_applied(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Snapshot) -> bool,
    ) -> Result<Arc<Snapshot>, ClusterError> {
        let mut rx = self.applied_revision.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let s = self.applied();
            if done(&s) {
                return Ok(s);
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return Err(ClusterError::Waiting {
                    what: what.to_string(),
                    after: timeout,
                });
            }
        }
    }

    fn note<T>(&self, r: &Result<T, ClusterError>) {
        self.set_reachable(!matches!(r, Err(e) if e.is_unreachable()));
    }

    fn set_reachable(&self, ok: bool) {
        if self.reachable.swap(ok, Ordering::Relaxed) != ok {
            if ok {
                tracing::info!(endpoints = self.store.endpoints(), "etcd reachable again");
            } else {
                tracing::warn!(endpoints = self.store.endpoints(), "etcd unreachable; serving the leadership this broker has, metadata changes fail until it is back");
            }
        }
    }

    /// Start the lease keeper, the watch and the controller campaign.
    pub(crate) fn start(self: &Arc<Self>, shutdown: watch::Receiver<bool>) {
        tokio::spawn(keep_alive_task(self.clone(), shutdown.clone()));
        tokio::spawn(watch_task(self.clone(), shutdown.clone()));
        tokio::spawn(controller::run(self.clone(), shutdown));
    }

    /// Controlled shutdown (Kafka's, on SIGTERM): mark the registration
    /// shutting down, so the controller moves every leadership it can to
    /// another in-sync replica and drops this broker from the ISRs, then
    /// wait until the applied metadata shows this broker leads nothing, or
    /// `timeout` passes. Requests keep being served meanwhile: clients are
    /// told NOT_LEADER_OR_FOLLOWER and move to the new leaders.
    pub(crate) async fn controlled_shutdown(&self, timeout: Duration) {
        let me = self.settings.node_id;
        let key = layout::broker_key(me);
        let Some(epoch) = self.applied().brokers.get(&me).map(|b| b.epoch) else {
            return;
        };
        let record = BrokerRecord {
            shutting_down: true,
            ..self.record.clone()
        };
        let value = serde_json::to_vec(&record).expect("broker record serializes");
        let lease = self.lease.load(Ordering::Acquire);
        let started = tokio::time::Instant::now();
        let written = self
            .store
            .txn(
                &[Cond::CreateRevision(key.clone(), epoch)],
                &[Op::PutLeased(key, value, lease)],
            )
            .await;
        match written {
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(error = %strata_log::ErrorChain(&error), "cannot announce the controlled shutdown; leaving without it");
                return;
            }
        }
        tracing::info!(
            node_id = me,
            "controlled shutdown: waiting for leadership to move away"
        );
        let moved = self
            .wait_applied("leadership to move away", timeout, |s| {
                !s.partitions.values().any(|p| p.value.leader == me)
            })
            .await;
        match moved {
            Ok(_) => tracing::info!(
                node_id = me,
                took_ms = started.elapsed().as_millis() as u64,
                "controlled shutdown: this broker leads nothing"
            ),
            Err(error) => {
                tracing::warn!(error = %strata_log::ErrorChain(&error), "controlled shutdown: some leadership did not move; shutting down anyway")
            }
        }
    }

    /// Leave the cluster now (clean shutdown): revoking the lease removes
    /// the registration and any controller key at once, so the controller
    /// reacts without waiting for the session timeout.
    pub(crate) async fn leave(&self) {
        let lease = self.lease.load(Ordering::Acquire);
        if let Err(error) = self.store.revoke(lease).await {
            tracing::warn!(error = %strata_log::ErrorChain(&error), "could not revoke the broker's lease; it expires by itself");
        }
    }
}

/// Renew the lease every heartbeat; re-register if it expired (this broker
/// was cut off from etcd for longer than the session timeout).
async fn keep_alive_task(cluster: Arc<Cluster>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(cluster.settings.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let lease = cluster.lease.load(Ordering::Acquire);
        let r = cluster.store.keep_alive_once(lease).await;
        cluster.note(&r);
        match r {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(lease, "the broker's lease expired; registering again");
                cluster.term.store(0, Ordering::Release);
                let r = cluster.register().await;
                cluster.note(&r);
                if let Err(error) = r {
                    tracing::warn!(error = %strata_log::ErrorChain(&error), "registering again failed; retrying");
                }
            }
            Err(error) => {
                tracing::debug!(error = %strata_log::ErrorChain(&error), "lease renewal failed");
            }
        }
    }
}

/// Follow every key under the prefix: a full read, then the watch from the
/// next revision; on any break (etcd down, compaction) read again.
async fn watch_task(cluster: Arc<Cluster>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let r = follow(&cluster, &mut shutdown).await;
        cluster.note(&r);
        if let Err(error) = r {
            tracing::debug!(error = %strata_log::ErrorChain(&error), "cluster metadata watch broke; reading again");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
    }
}

async fn follow(
    cluster: &Cluster,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), ClusterError> {
    let (mut raw, revision) = cluster.store.load().await?;
    cluster.note::<()>(&Ok(()));
    cluster
        .latest
        .send_replace(Arc::new(Snapshot::parse(&raw, revision)));
    let mut stream = cluster.store.watch(revision + 1).await?;
    // etcd answers a progress request at once; one unanswered for this long
    // means etcd is gone (a quiet cluster and a dead etcd look alike otherwise).
    let silence = REQUEST_TIMEOUT * 2;
    let mut ask = tokio::time::interval(REQUEST_TIMEOUT);
    let mut last_heard = tokio::time::Instant::now();
    loop {
        let msg = tokio::select! {
            m = stream.message() => m,
            _ = ask.tick() => {
                if last_heard.elapsed() > silence {
                    return Err(ClusterError::Timeout {
                        op: "watching the cluster metadata",
                        endpoints: cluster.store.endpoints().to_string(),
                        after: silence,
                    });
                }
                stream.request_progress().await.map_err(|source| ClusterError::Etcd {
                    op: "watching the cluster metadata",
                    endpoints: cluster.store.endpoints().to_string(),
                    source,
                })?;
                continue;
            }
            _ = shutdown.changed() => return Ok(()),
        };
        last_heard = tokio::time::Instant::now();
        let resp = match msg {
            Ok(Some(resp)) => resp,
            Ok(None) => return Ok(()),
            Err(source) => {
                return Err(ClusterError::Etcd {
                    op: "watching the cluster metadata",
                    endpoints: cluster.store.endpoints().to_string(),
                    source,
                })
            }
        };
        if resp.canceled() {
            return Ok(());
        }
        if resp.events().is_empty() {
            continue;
        }
        let mut revision = resp.header().map_or(0, |h| h.revision());
        for event in resp.events() {
            let Some(kv) = event.kv() else { continue };
            let Some(key) = cluster.store.relative(kv.key()) else {
                continue;
            };
            revision = revision.max(kv.mod_revision());
            match event.event_type() {
                etcd_client::EventType::Put => {
                    raw.insert(
                        key,
                        layout::RawValue {
                            value: kv.value().to_vec(),
                            create_revision: kv.create_revision(),
                            mod_revision: kv.mod_revision(),
                        },
                    );
                }
                etcd_client::EventType::Delete => {
                    raw.remove(&key);
                }
            }
        }
        cluster
            .latest
            .send_replace(Arc::new(Snapshot::parse(&raw, revision)));
    }
}

#[cfg(test)]
mod tests;
