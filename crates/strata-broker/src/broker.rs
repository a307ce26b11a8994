//! The state every request handler shares: configuration, topic store, log
//! manager, the append notifier that wakes delayed fetches, producer-id
//! allocation and counters.
//!
//! Locking: the topic store has its own mutex (never held across `.await`);
//! `admin` serialises topic-level mutations (create, delete, add partitions,
//! config changes) so that the store and the log directories change
//! together; the producer-id block has its own mutex. No lock is held while
//! another is taken except `admin` → store.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use strata_log::{
    LeaderEpoch, Log, LogAppendInfo, LogConfig, LogError, LogManager, TopicPartition,
};
use tokio::sync::watch;

use crate::api_error::ApiError;
use crate::cluster::{Cluster, PartitionRecord};
use crate::config::{BrokerConfig, Listener};
use crate::dynamic_config::{DynamicBrokerConfig, DynamicConfigError};
use crate::group::coordinator::{GroupCoordinator, GroupHost};
use crate::offline::{OfflineReason, RefusedPartitions};
use crate::replication::ReplicaManager;
use crate::security::store::SecurityStore;
use crate::stats::Stats;
use crate::topics::{TopicInfo, TopicStore};
use crate::txn::coordinator::TxnCoordinator;
use strata_security::acl::AuthorizerConfig;
use strata_security::quota::QuotaManager;

/// The authorizer's settings (`super.users`, `allow.everyone.if.no.acl.found`).
pub(crate) fn authorizer_config(config: &BrokerConfig) -> AuthorizerConfig {
    AuthorizerConfig {
        super_users: config.security.super_users.clone(),
        allow_everyone_if_no_acl_found: config.security.allow_everyone_if_no_acl_found,
    }
}

/// Producer ids are reserved from the store in blocks of this many.
const PRODUCER_ID_BLOCK: i64 = 1000;

/// Shared broker state.
pub(crate) struct Broker {
    pub config: BrokerConfig,
    pub cluster_id: String,
    /// What Metadata advertises, one per listener (in `listeners` order).
    pub advertised: Vec<Listener>,
    pub topics: Arc<TopicStore>,
    pub logs: Arc<LogManager>,
    pub stats: Stats,
    /// The Prometheus metrics the request path updates (`crate::metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Bumped after every append; delayed fetches wait for a change.
    pub appends: watch::Sender<u64>,
    /// Incremental fetch sessions (KIP-227), a leaf lock (`fetch_sessions`).
    pub fetch_sessions: crate::fetch_sessions::FetchSessions,
    /// `true` once shutdown began; long waits select on it.
    pub shutdown: watch::Receiver<bool>,
    /// Serialises topic-level admin mutations.
    pub admin: Mutex<()>,
    producer_ids: Mutex<ProducerIdBlock>,
    /// ACLs, SCRAM credentials and client quotas.
    pub security: Arc<SecurityStore>,
    /// The rate sensors of client quotas (`quota.window.*`).
    pub quota_sensors: Mutex<QuotaManager>,
    /// The consumer-group coordinator (its own locking, see `group::coordinator`).
    pub groups: GroupCoordinator,
    /// The transaction coordinator (its own locking, see `txn::coordinator`).
    pub txn: TxnCoordinator,
    /// KIP-890 verification guards of transactional batches (`txn_verify`).
    pub verifications: crate::txn::guards::Verifications,
    /// The remote tier, when `remote.log.storage.system.enable=true` (set once at start).
    pub tiered: std::sync::OnceLock<Arc<strata_tiered::RemoteLogManager>>,
    /// Dynamic broker configs; the log defaults in force come from here,
    /// not from `config.log_config` (which is the static part only).
    pub dynamic: Arc<DynamicBrokerConfig>,
    /// Partitions refused at startup (see `offline`); set before the broker
    /// is shared, fixed until restart.
    pub refused: RefusedPartitions,
    /// Cluster mode (`strata.metadata.etcd.endpoints` set): the etcd-backed
    /// membership; `None` is the single-node broker. Set before the broker
    /// is shared.
    pub cluster: Option<Arc<Cluster>>,
    /// Cluster mode: this broker's replicas (leader and follower state,
    /// fetchers). Set before the broker is shared.
    pub replicas: Option<Arc<ReplicaManager>>,
}

/// A broker as Metadata and DescribeCluster list it.
#[derive(Clone, Debug)]
pub(crate) struct BrokerEndpoint {
    pub id: i32,
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
}

#[derive(Debug, Default)]
struct ProducerIdBlock {
    next: i64,
    end: i64,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("node_id", &self.config.node_id)
            .field("cluster_id", &self.cluster_id)
            .finish_non_exhaustive()
    }
}

impl Broker {
    pub(crate) fn new(
        config: BrokerConfig,
        cluster_id: String,
        bound: &[(Listener, SocketAddr)],
        topics: Arc<TopicStore>,
        logs: Arc<LogManager>,
        shutdown: watch::Receiver<bool>,
        dynamic: Arc<DynamicBrokerConfig>,
    ) -> Broker {
        let advertised = Broker::advertised_for(&config, bound);
        Broker {
            security: Arc::new(SecurityStore::in_memory(authorizer_config(&config))),
            quota_sensors: Mutex::new(QuotaManager::new(
                config.security.quota_window_num,
                config.security.quota_window_size_seconds * 1000,
            )),
            groups: GroupCoordinator::new(config.group.clone()),
            txn: TxnCoordinator::new(config.txn.clone()),
            verifications: Default::default(),
            fetch_sessions: crate::fetch_sessions::FetchSessions::new(
                config.fetch_session_cache_slots,
                config.fetch_session_eviction_ms,
            ),
            config,
            cluster_id,
            advertised,
            topics,
            logs,
            stats: Stats::default(),
            metrics: crate::metrics::Metrics::new(),
            appends: watch::Sender::new(0),
            shutdown,
            admin: Mutex::new(()),
            producer_ids: Mutex::new(ProducerIdBlock::default()),
            tiered: std::sync::OnceLock::new(),
            dynamic,
            refused: RefusedPartitions::new(),
            cluster: None,
            replicas: None,
        }
    }

    /// What Metadata advertises per listener: its `advertised.listeners`
    /// entry, else the bound address (an unspecified host as `127.0.0.1`).
    pub(crate) fn advertised_for(
        config: &BrokerConfig,
        bound: &[(Listener, SocketAddr)],
    ) -> Vec<Listener> {
        bound
            .iter()
            .map(|(listener, addr)| {
                if let Some(a) = config
                    .advertised_listeners
                    .iter()
                    .find(|a| a.name == listener.name)
                {
                    return a.clone();
                }
                let host = if listener.host.is_empty() || addr.ip().is_unspecified() {
                    "127.0.0.1".to_string()
                } else {
                    addr.ip().to_string()
                };
                Listener {
                    host,
                    port: addr.port(),
                    ..listener.clone()
                }
            })
            .collect()
    }

    /// This broker's advertised endpoint on `listener` (a connection's
    /// listener always exists here).
    pub(crate) fn advertised_on(&self, listener: &str) -> Option<&Listener> {
        self.advertised.iter().find(|l| l.name == listener)
    }

    /// The live brokers as clients of `listener` reach them: this one alone
    /// in single-node mode, every registered one with an endpoint on that
    /// listener in cluster mode (Kafka leaves out brokers without it).
    pub(crate) fn live_brokers(&self, listener: &str) -> Vec<BrokerEndpoint> {
        match &self.cluster {
            None => self
                .advertised_on(listener)
                .map(|l| BrokerEndpoint {
                    id: self.config.node_id,
                    host: l.host.clone(),
                    port: l.port,
                    rack: self.config.rack.clone(),
                })
                .into_iter()
                .collect(),
            Some(cluster) => cluster
                .applied()
                .brokers
                .values()
                .filter_map(|b| {
                    let (host, port) = b.record.endpoint(listener)?;
                    Some(BrokerEndpoint {
                        id: b.record.id,
                        host: host.to_string(),
                        port,
                        rack: b.record.rack.clone(),
                    })
                })
                .collect(),
        }
    }

    /// The controller's id (-1 while none is elected).
    pub(crate) fn controller_id(&self) -> i32 {
        match &self.cluster {
            None => self.config.node_id,
            Some(cluster) => cluster.applied().controller_id().unwrap_or(-1),
        }
    }

    /// Run blocking work (file I/O, fsync, store writes) off the executor.
    pub(crate) async fn blocking<T, F>(self: &Arc<Self>, f: F) -> T
    where
        F: FnOnce(&Broker) -> T + Send + 'static,
        T: Send + 'static,
    {
        let this = self.clone();
        // The request keeps its `queued.max.requests` slot while here.
        let _in_storage = crate::request_queue::storage_call();
        match tokio::task::spawn_blocking(move || f(&this)).await {
            Ok(v) => v,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("blocking task cancelled: {e}"),
        }
    }

    /// Wake delayed fetches after an append or a log-start change.
    pub(crate) fn notify_appended(&self) {
        self.appends.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The effective config of a topic: its overrides over the broker
    /// defaults (static and dynamic).
    pub(crate) fn topic_config(&self, info: &TopicInfo) -> LogConfig {
        effective_config(&self.log_defaults(), info)
    }

    /// The log of a partition, if the topic and partition exist.
    pub(crate) fn log(&self, topic: &str, partition: i32) -> Option<Arc<Log>> {
        self.logs.get_log(&TopicPartition::new(topic, partition))
    }

    /// Leader epoch of partition `partition` of `info`: the topic's in
    /// single-node mode, the controller's in cluster mode.
    pub(crate) fn leader_epoch(&self, info: &TopicInfo, partition: i32) -> i32 {
        match self.partition_state(info, partition) {
            Some(state) => state.leader_epoch,
            None => info.leader_epoch,
        }
    }

    /// The controller's state of a partition (cluster mode only), from the
    /// snapshot this broker has applied; `None` in single-node mode or
    /// before the controller assigned it.
    pub(crate) fn partition_state(
        &self,
        info: &TopicInfo,
        partition: i32,
    ) -> Option<PartitionRecord> {
        let cluster = self.cluster.as_ref()?;
        let snapshot = cluster.applied();
        snapshot
            .partition(&info.name, partition)
            .filter(|s| s.value.topic_id == info.id)
            .map(|s| s.value.clone())
    }

    /// Run `f` to completion from a blocking thread (admin operations that
    /// talk to etcd run under `Broker::blocking`).
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        tokio::runtime::Handle::current().block_on(f)
    }

    /// Next producer id, reserving a new persisted block when needed (from
    /// etcd in cluster mode, so no two brokers hand out the same id).
    pub(crate) fn next_producer_id(&self) -> Result<i64, ApiError> {
        let mut block = self.producer_ids.lock().unwrap_or_else(|p| p.into_inner());
        if block.next >= block.end {
            let first = match &self.cluster {
                Some(cluster) => self
                    .block_on(cluster.allocate_producer_ids(PRODUCER_ID_BLOCK))
                    .map_err(ApiError::Cluster)?,
                None => self
                    .topics
                    .allocate_producer_ids(PRODUCER_ID_BLOCK)
                    .map_err(ApiError::store)?,
            };
            block.next = first;
            block.end = first + PRODUCER_ID_BLOCK;
        }
        let id = block.next;
        block.next += 1;
        Ok(id)
    }
}

/// The group coordinator's view of the broker.
impl GroupHost for Broker {
    fn coordinator(&self) -> &GroupCoordinator {
        &self.groups
    }

    fn run_blocking<T, F>(self: &Arc<Self>, f: F) -> impl Future<Output = T> + Send
    where
        F: FnOnce(&Self) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(f)
    }

    fn now_ms(&self) -> i64 {
        self.logs.clock().now_ms()
    }

    fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    fn create_internal_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<(), ApiError> {
        // A single node holds one replica of everything.
        let replication_factor = if self.cluster.is_some() {
            self.config.group.offsets_topic_replication_factor
        } else {
            1
        };
        self.create_topic(name, partitions, replication_factor, configs, false)
            .map(drop)
    }

    fn partition_count(&self, name: &str) -> Option<i32> {
        self.topics.get(name).map(|info| info.partitions)
    }

    fn leader_log(&self, topic: &str, partition: i32) -> Option<(Arc<Log>, LeaderEpoch)> {
        let info = self.topics.get(topic)?;
        if self.cluster.is_some() && !self.leads(&info, partition) {
            return None;
        }
        let log = self.log(topic, partition)?;
        Some((log, LeaderEpoch(self.leader_epoch(&info, partition))))
    }

    fn append_as_leader(
        &self,
        topic: &str,
        partition: i32,
        batch: &mut [u8],
    ) -> Option<(Arc<Log>, Result<LogAppendInfo, LogError>)> {
        self.append_led(topic, partition, |log, epoch| {
            log.append_as_leader(batch, epoch)
        })
    }

    fn append_as_coordinator(
        &self,
        topic: &str,
        partition: i32,
        batch: &mut [u8],
    ) -> Option<(Arc<Log>, Result<LogAppendInfo, LogError>)> {
        self.append_led(topic, partition, |log, epoch| {
            log.append_as_coordinator(batch, epoch)
        })
    }

    fn appended(&self, log: &Log) {
        match &self.replicas {
            Some(replicas) => replicas.after_leader_append(log.topic_partition()),
            None => {
                log.raise_high_watermark_to_end();
            }
        }
        self.notify_appended();
    }

    fn clustered(&self) -> bool {
        self.cluster.is_some()
    }

    fn topics_version(&self) -> u64 {
        self.topics.version()
    }

    fn topic_image(&self, version: u64) -> crate::group::consumer::image::TopicImage {
        use crate::group::consumer::image::{ImageTopic, TopicImage};
        use std::collections::BTreeSet;
        let snapshot = self.cluster.as_ref().map(|c| c.applied());
        let topics = self
            .topics
            .list()
            .into_iter()
            .map(|info| {
                let racks = (0..info.partitions)
                    .map(|p| match &snapshot {
                        None => self.config.rack.iter().cloned().collect(),
                        Some(snap) => snap
                            .partition(&info.name, p)
                            .map(|st| {
                                st.value
                                    .replicas
                                    .iter()
                                    .filter_map(|r| snap.brokers.get(r)?.record.rack.clone())
                                    .collect()
                            })
                            .unwrap_or_else(BTreeSet::new),
                    })
                    .collect();
                let topic = ImageTopic {
                    id: info.id,
                    partitions: info.partitions,
                    racks,
                    internal: crate::topics::is_internal(&info.name),
                };
                (info.name, topic)
            })
            .collect();
        TopicImage::new(version, topics)
    }
}

impl Broker {
    /// The `__consumer_offsets` partition of `group_id` (by the topic's
    /// actual partition count once it exists), as a transaction partition.
    pub(crate) fn offsets_partition_of(&self, group_id: &str) -> (String, i32) {
        let count = self
            .topics
            .get(crate::group::OFFSETS_TOPIC)
            .map_or(self.config.group.offsets_topic_num_partitions, |t| {
                t.partitions
            });
        (
            crate::group::OFFSETS_TOPIC.to_string(),
            crate::group::partition_for(group_id, count),
        )
    }

    /// Run `append` on a partition this broker leads, in its current leader
    /// epoch with leadership changes held off (cluster mode), or in the
    /// topic's epoch (single node); `None` when it does not lead it.
    fn append_led(
        &self,
        topic: &str,
        partition: i32,
        append: impl FnOnce(&Log, LeaderEpoch) -> Result<LogAppendInfo, LogError>,
    ) -> Option<(Arc<Log>, Result<LogAppendInfo, LogError>)> {
        match &self.replicas {
            Some(replicas) => {
                let replica = replicas.get(&TopicPartition::new(topic, partition))?;
                let log = replica.log.clone();
                let (_, appended) = replica.leader_append(|epoch| append(&log, epoch))?;
                Some((log, appended))
            }
            None => {
                let (log, epoch) = self.leader_log(topic, partition)?;
                let appended = append(&log, epoch);
                Some((log, appended))
            }
        }
    }
}

/// Dynamic broker configs (see `dynamic_config`).
impl Broker {
    /// The topic-config defaults now in force (static + dynamic).
    pub(crate) fn log_defaults(&self) -> Arc<LogConfig> {
        self.dynamic.log_defaults()
    }

    /// Change the dynamic configs of BROKER resource `resource_name` with
    /// `change` (blocking) and push new log defaults to every live log.
    ///
    /// # Errors
    /// As [`DynamicBrokerConfig::alter`], or a resource name that is not
    /// empty and not this broker's id.
    pub(crate) fn alter_broker_configs(
        &self,
        resource_name: &str,
        validate_only: bool,
        change: impl FnOnce(
            &BTreeMap<String, String>,
        ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
    ) -> Result<(), DynamicConfigError> {
        let level = self.dynamic.level_of(resource_name)?;
        // Topic config changes read the defaults under the same lock, so a
        // log never ends up with a mix of old and new.
        let _admin = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        let changed = match &self.cluster {
            None => self.dynamic.alter(level, validate_only, change)?,
            Some(cluster) => {
                self.dynamic
                    .alter_with(level, validate_only, change, |current, new| {
                        self.write_broker_configs(cluster, resource_name, current, new)
                    })?
            }
        };
        if let Some(defaults) = changed {
            self.push_log_defaults(&defaults);
            tracing::info!(resource = resource_name, "dynamic broker config applied");
        } else if !validate_only {
            tracing::info!(
                resource = resource_name,
                "dynamic broker config stored (log defaults unchanged)"
            );
        }
        Ok(())
    }

    /// Cluster mode: write one level of dynamic broker configs to etcd,
    /// only if etcd still holds `current` (compare-and-swap).
    fn write_broker_configs(
        &self,
        cluster: &Cluster,
        resource_name: &str,
        current: &BTreeMap<String, String>,
        new: &BTreeMap<String, String>,
    ) -> Result<(), DynamicConfigError> {
        let latest = cluster.subscribe().borrow().clone();
        let stored = latest.broker_configs.get(resource_name);
        let concurrent = || DynamicConfigError::Cluster {
            reason: "the broker configs changed concurrently; retry".into(),
        };
        if stored.map_or(!current.is_empty(), |v| v.value != *current) {
            return Err(concurrent());
        }
        let expected = stored.map_or(0, |v| v.mod_revision);
        match self.block_on(cluster.put_broker_configs(resource_name, expected, new)) {
            Ok(true) => Ok(()),
            Ok(false) => Err(concurrent()),
            Err(e) => Err(DynamicConfigError::Cluster {
                reason: strata_log::ErrorChain(&e).to_string(),
            }),
        }
    }

    /// Recompute every live log's config from `defaults` and its topic's
    /// overrides (topics overriding a key keep their value).
    pub(crate) fn push_log_defaults(&self, defaults: &LogConfig) {
        let mut updated = 0usize;
        for log in self.logs.all_logs() {
            let cfg = match self.topics.get(&log.topic_partition().topic) {
                Some(info) => effective_config(defaults, &info),
                None => defaults.clone(),
            };
            if log.config() != cfg {
                log.update_config(cfg);
                updated += 1;
            }
        }
        self.logs.cleaner().wake();
        tracing::debug!(logs = updated, "log defaults pushed");
    }
}

/// Offline partitions (see `offline`).
impl Broker {
    /// The log of partition `partition` of `info`, if it can be served.
    ///
    /// # Errors
    /// [`ApiError::UnknownTopicOrPartition`] for a partition the topic does
    /// not have; [`ApiError::PartitionOffline`] for an offline one.
    pub(crate) fn partition_log(
        &self,
        info: &TopicInfo,
        partition: i32,
    ) -> Result<Arc<Log>, ApiError> {
        self.local_log(info, partition, false)
    }

    /// As [`Broker::partition_log`], but a follower's replica is served too:
    /// only for consumer Fetch v11+ (fetch from follower, KIP-392).
    ///
    /// # Errors
    /// As [`Broker::partition_log`]; [`ApiError::NotLeaderOrFollower`] when
    /// this broker holds no replica of the partition.
    pub(crate) fn replica_log(
        &self,
        info: &TopicInfo,
        partition: i32,
    ) -> Result<Arc<Log>, ApiError> {
        self.local_log(info, partition, true)
    }

    fn local_log(
        &self,
        info: &TopicInfo,
        partition: i32,
        any_replica: bool,
    ) -> Result<Arc<Log>, ApiError> {
        if partition < 0 || partition >= info.partitions {
            return Err(ApiError::UnknownTopicOrPartition);
        }
        let tp = TopicPartition::new(info.name.clone(), partition);
        if self.cluster.is_some() {
            // The replica's state, not the snapshot's: it is what the
            // append and the fetch go by, and it holds back leadership
            // recorded for an earlier incarnation of this broker.
            let served = self
                .replicas
                .as_ref()
                .and_then(|r| r.get(&tp))
                .is_some_and(|r| any_replica || r.is_leader());
            if !served {
                return Err(ApiError::NotLeaderOrFollower);
            }
        }
        if let Some(reason) = self.refused.get(&tp) {
            return Err(ApiError::PartitionOffline {
                tp,
                reason: reason.clone(),
            });
        }
        match self.logs.get_log(&tp) {
            Some(log) if log.dir_health().is_online() => Ok(log),
            Some(log) => Err(ApiError::PartitionOffline {
                tp,
                reason: OfflineReason::DirOffline {
                    dir: log.dir_health().dir().to_path_buf(),
                },
            }),
            None => {
                let offline_dirs = self.logs.offline_dirs();
                if offline_dirs.is_empty() {
                    Err(ApiError::UnknownTopicOrPartition)
                } else {
                    Err(ApiError::PartitionOffline {
                        tp,
                        reason: OfflineReason::NotLoaded { offline_dirs },
                    })
                }
            }
        }
    }

    /// True when this broker leads the partition (always in single-node mode).
    pub(crate) fn leads(&self, info: &TopicInfo, partition: i32) -> bool {
        match &self.cluster {
            None => true,
            // The replica's own state: it holds back leadership recorded
            // for an earlier incarnation of this broker.
            Some(_) => self.replicas.as_ref().is_some_and(|r| {
                r.get(&TopicPartition::new(info.name.clone(), partition))
                    .is_some_and(|p| p.is_leader())
            }),
        }
    }

    /// True when the partition exists but is offline.
    pub(crate) fn partition_offline(&self, info: &TopicInfo, partition: i32) -> bool {
        matches!(
            self.partition_log(info, partition),
            Err(ApiError::PartitionOffline { .. })
        )
    }
}

/// `info`'s overrides over `base`; an override that no longer validates
/// (e.g. written by a newer version) is skipped with a warning.
pub(crate) fn effective_config(base: &LogConfig, info: &TopicInfo) -> LogConfig {
    match LogConfig::with_overrides(base, &info.configs) {
        Ok(c) => c,
        Err(error) => {
            tracing::warn!(topic = %info.name, %error, "ignoring invalid stored topic configs");
            let mut cfg = base.clone();
            for (k, v) in &info.configs {
                let one: BTreeMap<String, String> = [(k.clone(), v.clone())].into();
                if let Ok(c) = LogConfig::with_overrides(&cfg, &one) {
                    cfg = c;
                }
            }
            cfg
        }
    }
}
