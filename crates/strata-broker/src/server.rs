//! The listener: startup (open the topic store and the log manager,
//! reconcile them, bind), the accept loop with its connection limits
//! (`max.connections`, a semaphore taken before `accept`, so excess clients
//! wait in the listen backlog until a connection closes or expires; and
//! `max.connections.per.ip`, checked after `accept`; every connection draws
//! on one broker-wide `queued.max.requests` / `queued.max.request.bytes`
//! bound, `request_queue`), and graceful shutdown (stop accepting,
//! let connections finish their current request, then `LogManager::shutdown`
//! which flushes, checkpoints and writes the clean-shutdown markers).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use strata_log::{
    LoadFilter, LogManager, LogManagerConfig, SharedClock, SystemClock, TopicConfigProvider,
};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinHandle;

use crate::broker::{effective_config, Broker};
use crate::cluster::{BrokerRecord, Cluster, ClusterSettings, LeaderBalance};
use crate::config::{BrokerConfig, Listener};
use crate::connection;
use crate::connection_quotas::ConnectionQuotas;
use crate::dynamic_config::DynamicBrokerConfig;
use crate::error::BrokerError;
use crate::listener_runtime::{AuthFailures, ListenerRuntime};
use crate::partition_sync;
use crate::reconcile;
use crate::replication::ReplicaManager;
use crate::request_queue::RequestQueue;
use crate::security::store::SecurityStore;
use crate::stats::BrokerStats;
use crate::stats::Stats;
use crate::topics::TopicStore;

/// A running broker.
#[derive(Debug)]
pub struct BrokerHandle {
    local_addr: SocketAddr,
    /// Every listener's name and bound address, in `listeners` order.
    listener_addrs: Vec<(String, SocketAddr)>,
    /// Where `strata.metrics.listener` is bound, when set.
    metrics_addr: Option<SocketAddr>,
    broker: Arc<Broker>,
    shutdown_tx: watch::Sender<bool>,
    accept_tasks: Vec<JoinHandle<()>>,
    connections_done: mpsc::Receiver<()>,
}

impl BrokerHandle {
    /// The address the first listener is bound to (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The address listener `name` is bound to.
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        let name = name.to_ascii_uppercase();
        self.listener_addrs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| *a)
    }

    /// The address of the HTTP listener (`/metrics`, the console), when
    /// `strata.metrics.listener` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The cluster id Metadata reports.
    pub fn cluster_id(&self) -> &str {
        &self.broker.cluster_id
    }

    /// A snapshot of the broker's counters.
    pub fn stats(&self) -> BrokerStats {
        self.broker.stats.snapshot()
    }

    /// Stop accepting, wait for connections to finish, close the logs cleanly.
    ///
    /// # Errors
    /// The log manager failed to flush or close.
    pub async fn shutdown(mut self) -> Result<(), BrokerError> {
        if let Some(cluster) = &self.broker.cluster {
            cluster
                .controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT)
                .await;
        }
        let _ = self.shutdown_tx.send(true);
        for task in std::mem::take(&mut self.accept_tasks) {
            if let Err(source) = task.await {
                return Err(BrokerError::Task {
                    task: "accept loop",
                    source,
                });
            }
        }
        // Every connection task holds a sender; recv() returns None once all are gone.
        let _ = self.connections_done.recv().await;
        if let Some(cluster) = &self.broker.cluster {
            cluster.leave().await;
        }
        crate::tiered::shutdown(&self.broker).await;
        let logs = self.broker.logs.clone();
        tokio::task::spawn_blocking(move || logs.shutdown())
            .await
            .map_err(|source| BrokerError::Task {
                task: "log manager shutdown",
                source,
            })??;
        tracing::info!("broker shut down cleanly");
        Ok(())
    }
}

/// How long a clean shutdown waits for the controller to move this
/// broker's leaderships away (controlled shutdown) before it stops anyway.
const CONTROLLED_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Start a broker with the system clock.
///
/// # Errors
/// Log directories or the topic store cannot be opened, or the listener cannot bind.
pub async fn start(config: BrokerConfig) -> Result<BrokerHandle, BrokerError> {
    start_with_clock(config, Arc::new(SystemClock)).await
}

/// Start a broker whose log engine reads `clock`.
///
/// # Errors
/// As [`start`].
pub async fn start_with_clock(
    config: BrokerConfig,
    clock: SharedClock,
) -> Result<BrokerHandle, BrokerError> {
    start_with_fs(config, clock, strata_log::fs::StdFs::shared()).await
}

/// Start a broker whose log engine reads `clock` and changes its files
/// through `fs` (production passes `StdFs`; tests inject I/O errors with
/// `strata_log::fs::FaultFs`).
///
/// # Errors
/// As [`start`].
pub async fn start_with_fs(
    config: BrokerConfig,
    clock: SharedClock,
    fs: strata_log::fs::SharedFs,
) -> Result<BrokerHandle, BrokerError> {
    if !config.etcd_endpoints.is_empty() {
        return start_clustered(config, clock, fs).await;
    }
    let cfg = config.clone();
    let storage_clock = clock.clone();
    let (store, logs, cluster_id, dynamic, refused, security) =
        tokio::task::spawn_blocking(move || open_storage(&cfg, storage_clock, fs))
            .await
            .map_err(|source| BrokerError::Task {
                task: "opening storage",
                source,
            })??;
    let listeners = bind_listeners(&config).await?;
    let http = bind_http(&config).await?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut broker = Broker::new(
        config,
        cluster_id,
        &bound_addrs(&listeners),
        store,
        logs.clone(),
        shutdown_rx.clone(),
        dynamic,
    );
    broker.refused = refused;
    broker.security = security;
    let broker = Arc::new(broker);
    logs.start_background();
    crate::tiered::start(&broker, clock.clone()).await?;
    serve(broker, listeners, http, shutdown_tx, shutdown_rx)
}

/// Bind `strata.metrics.listener`, when set.
async fn bind_http(config: &BrokerConfig) -> Result<Option<TcpListener>, BrokerError> {
    let Some(addr) = config.metrics_listener.clone() else {
        return Ok(None);
    };
    let socket = bind(&addr, 128)
        .await
        .map_err(|source| BrokerError::Bind { addr, source })?;
    Ok(Some(socket))
}

/// One bound listener.
struct BoundListener {
    listener: Listener,
    socket: TcpListener,
    local_addr: SocketAddr,
}

/// Bind every listener of `config` (in order).
async fn bind_listeners(config: &BrokerConfig) -> Result<Vec<BoundListener>, BrokerError> {
    let mut out = Vec::with_capacity(config.listeners.len());
    for listener in &config.listeners {
        let addr = listener.bind_address();
        let socket = bind(&addr, config.socket_listen_backlog_size)
            .await
            .map_err(|source| BrokerError::Bind { addr, source })?;
        let local_addr = socket.local_addr().map_err(|source| BrokerError::Io {
            op: "reading the bound address",
            source,
        })?;
        out.push(BoundListener {
            listener: listener.clone(),
            socket,
            local_addr,
        });
    }
    Ok(out)
}

fn bound_addrs(listeners: &[BoundListener]) -> Vec<(Listener, SocketAddr)> {
    listeners
        .iter()
        .map(|b| (b.listener.clone(), b.local_addr))
        .collect()
}

/// Start the accept loops of a built broker, one per listener; they share
/// `max.connections` and `max.connections.per.ip`.
///
/// # Errors
/// A listener's security setup (its TLS keystore, its SASL settings) is unusable.
fn serve(
    broker: Arc<Broker>,
    listeners: Vec<BoundListener>,
    http: Option<TcpListener>,
    shutdown_tx: watch::Sender<bool>,
    shutdown_rx: watch::Receiver<bool>,
) -> Result<BrokerHandle, BrokerError> {
    let (done_tx, done_rx) = mpsc::channel::<()>(1);
    let limit = Arc::new(Semaphore::new(broker.config.max_connections));
    let queue = Arc::new(RequestQueue::new(
        broker.config.queued_max_requests,
        broker.config.queued_max_request_bytes,
    ));
    let quotas = ConnectionQuotas::new(broker.config.connection_limits.clone());
    let local_addr = listeners[0].local_addr;
    let listener_addrs = listeners
        .iter()
        .map(|b| (b.listener.name.clone(), b.local_addr))
        .collect::<Vec<_>>();
    let failures = Arc::new(AuthFailures::default());
    let mut runtimes = Vec::with_capacity(listeners.len());
    for bound in &listeners {
        runtimes.push(Arc::new(ListenerRuntime::new(
            &broker.config,
            &bound.listener,
            &broker.security,
            failures.clone(),
        )?));
    }
    let mut accept_tasks = Vec::with_capacity(listeners.len());
    for runtime in &runtimes {
        if runtime.tls.is_some() {
            tokio::spawn(reload_keystore(runtime.clone(), shutdown_rx.clone()));
        }
        if let Some((validator, url, every)) = runtime.sasl.as_ref().and_then(|s| s.jwks.clone()) {
            tokio::spawn(refresh_jwks(validator, url, every, shutdown_rx.clone()));
        }
    }
    for (bound, runtime) in listeners.into_iter().zip(runtimes) {
        tracing::info!(listener = %bound.listener.name, protocol = %bound.listener.protocol, addr = %bound.local_addr, "listening");
        accept_tasks.push(tokio::spawn(accept_loop(
            bound.socket,
            runtime,
            broker.clone(),
            Limits {
                connections: limit.clone(),
                per_ip: quotas.clone(),
                requests: queue.clone(),
            },
            shutdown_rx.clone(),
            done_tx.clone(),
        )));
    }
    let metrics_addr = match http {
        Some(socket) => {
            let addr = socket.local_addr().map_err(|source| BrokerError::Io {
                op: "reading the bound address",
                source,
            })?;
            tracing::info!(%addr, "serving /metrics and the storage console");
            accept_tasks.push(tokio::spawn(crate::http::serve(
                broker.clone(),
                socket,
                shutdown_rx.clone(),
            )));
            Some(addr)
        }
        None => None,
    };
    tracing::info!(%local_addr, node_id = broker.config.node_id, cluster_id = %broker.cluster_id, clustered = broker.cluster.is_some(), "broker started");
    Ok(BrokerHandle {
        local_addr,
        listener_addrs,
        metrics_addr,
        broker,
        shutdown_tx,
        accept_tasks,
        connections_done: done_rx,
    })
}

/// Cluster mode: bind (the registration carries the bound port), join the
/// cluster (cluster id, registration, first snapshot), open the logs with
/// the topic store mirroring etcd, apply the first snapshot, then serve.
async fn start_clustered(
    config: BrokerConfig,
    clock: SharedClock,
    fs: strata_log::fs::SharedFs,
) -> Result<BrokerHandle, BrokerError> {
    for dir in &config.log_dirs {
        std::fs::create_dir_all(dir).map_err(|source| BrokerError::LogDir {
            path: dir.clone(),
            source,
        })?;
    }
    let listeners = bind_listeners(&config).await?;
    let http = bind_http(&config).await?;
    let advertised = Broker::advertised_for(&config, &bound_addrs(&listeners));
    let inter = advertised
        .iter()
        .find(|l| l.name == config.inter_broker_listener)
        .unwrap_or(&advertised[0]);
    let settings = ClusterSettings {
        endpoints: config.etcd_endpoints.clone(),
        prefix: config.etcd_prefix.clone(),
        node_id: config.node_id,
        session_timeout: Duration::from_millis(config.broker_session_timeout_ms),
        heartbeat: Duration::from_millis(config.broker_heartbeat_interval_ms),
        unclean_leader_election: config.log_config.unclean_leader_election_enable,
        leader_balance: LeaderBalance {
            enable: config.auto_leader_rebalance_enable,
            check_interval: Duration::from_secs(config.leader_imbalance_check_interval_seconds),
            per_broker_percentage: config.leader_imbalance_per_broker_percentage,
        },
    };
    let record = BrokerRecord {
        id: config.node_id,
        rack: config.rack.clone(),
        listener: inter.name.clone(),
        host: inter.host.clone(),
        port: inter.port,
        endpoints: advertised
            .iter()
            .map(|l| (l.name.clone(), l.host.clone(), l.port))
            .collect(),
        shutting_down: false,
    };
    let local_id = config
        .cluster_id
        .clone()
        .or_else(|| cluster_id_from_log_dirs(&config.log_dirs));
    let cluster = Cluster::join(settings, record, local_id).await?;
    let cluster_id = cluster.cluster_id().to_string();
    let first = cluster.subscribe().borrow().clone();
    let cfg = config.clone();
    let storage_clock = clock.clone();
    let id = cluster_id.clone();
    let (store, logs, dynamic) = tokio::task::spawn_blocking(move || {
        open_clustered_storage(&cfg, storage_clock, fs, id, &first)
    })
    .await
    .map_err(|source| BrokerError::Task {
        task: "opening storage",
        source,
    })??;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut broker = Broker::new(
        config,
        cluster_id,
        &bound_addrs(&listeners),
        store,
        logs.clone(),
        shutdown_rx.clone(),
        dynamic,
    );
    broker.cluster = Some(cluster.clone());
    broker.security = Arc::new(SecurityStore::clustered(
        cluster.clone(),
        crate::broker::authorizer_config(&broker.config),
        &cluster.subscribe().borrow().security,
    )?);
    let replicas = ReplicaManager::new(
        cluster.clone(),
        broker.config.replication.clone(),
        clock.clone(),
    );
    broker.replicas = Some(replicas.clone());
    // After a log-dir move the replica follows its log to the new dir.
    let (moved, runtime) = (replicas.clone(), tokio::runtime::Handle::current());
    logs.set_log_replaced_hook(Some(Arc::new(move |tp, log| {
        let _in_runtime = runtime.enter();
        moved.replace_log(tp, log);
    })));
    broker.groups.own_nothing();
    broker.txn.own_nothing();
    let broker = Arc::new(broker);
    replicas.start(shutdown_rx.clone());
    let first = cluster.subscribe().borrow().clone();
    let empty = Arc::new(crate::cluster::Snapshot::default());
    let applied = first.clone();
    let led = broker
        .blocking(move |b| partition_sync::apply(b, &empty, &applied))
        .await;
    cluster.set_applied(first);
    broker.groups.set_owned_partitions(&broker, led).await;
    let txn_led = partition_sync::transaction_partitions_led(&broker);
    broker.txn.set_owned_partitions(&broker, txn_led).await;
    logs.start_background();
    crate::tiered::start(&broker, clock.clone()).await?;
    cluster.start(shutdown_rx.clone());
    tokio::spawn(partition_sync::run(
        broker.clone(),
        cluster,
        shutdown_rx.clone(),
    ));
    serve(broker, listeners, http, shutdown_tx, shutdown_rx)
}

/// Bind the listener with `socket.listen.backlog.size` pending connections
/// (the kernel caps it at `net.core.somaxconn`). Clients over `max.connections`
/// wait there; beyond it the kernel drops or cookies their handshakes.
async fn bind(addr: &str, backlog: u32) -> std::io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(addr).await? {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr).and_then(|()| socket.listen(backlog)) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "address resolved to nothing",
        )
    }))
}

type Storage = (
    Arc<TopicStore>,
    Arc<LogManager>,
    String,
    Arc<DynamicBrokerConfig>,
    crate::offline::RefusedPartitions,
    Arc<SecurityStore>,
);

/// Open the topic store, the dynamic broker configs and the log manager
/// and make them agree (blocking). Dynamic configs apply before any log opens.
fn open_storage(
    config: &BrokerConfig,
    clock: SharedClock,
    fs: strata_log::fs::SharedFs,
) -> Result<Storage, BrokerError> {
    for dir in &config.log_dirs {
        std::fs::create_dir_all(dir).map_err(|source| BrokerError::LogDir {
            path: dir.clone(),
            source,
        })?;
    }
    let store = Arc::new(TopicStore::open(&config.log_dirs[0])?);
    // A lost store must not mint a new cluster id: the log dirs'
    // meta.properties would then belong to "another cluster".
    let configured = config
        .cluster_id
        .clone()
        .or_else(|| match store.stored_cluster_id() {
            Some(_) => None,
            None => cluster_id_from_log_dirs(&config.log_dirs),
        });
    let cluster_id = store.cluster_id(configured.as_deref())?;
    let dynamic = Arc::new(DynamicBrokerConfig::open(&config.log_dirs[0], config)?);
    let security = Arc::new(SecurityStore::open(
        &config.log_dirs[0],
        crate::broker::authorizer_config(config),
    )?);
    let (filter, refused) = reconcile::topic_id_filter(store.clone());
    let logs = open_logs(
        config,
        clock,
        fs,
        &cluster_id,
        &store,
        &dynamic,
        Some(filter),
    )?;
    let refused = std::mem::take(&mut *refused.lock().unwrap_or_else(|p| p.into_inner()));
    let mut effective = config.clone();
    effective.log_config = (*dynamic.log_defaults()).clone();
    let refused = reconcile::reconcile(&effective, &store, &logs, refused)?;
    Ok((store, logs, cluster_id, dynamic, refused, security))
}

type ClusteredStorage = (Arc<TopicStore>, Arc<LogManager>, Arc<DynamicBrokerConfig>);

/// Cluster mode's storage: the topic store mirrors etcd (`first`) in
/// memory, every partition directory is loaded (which ones stay is
/// `partition_sync`'s decision, made from etcd, never from the directory
/// alone), and logs open with their topic's config.
fn open_clustered_storage(
    config: &BrokerConfig,
    clock: SharedClock,
    fs: strata_log::fs::SharedFs,
    cluster_id: String,
    first: &crate::cluster::Snapshot,
) -> Result<ClusteredStorage, BrokerError> {
    let store = Arc::new(TopicStore::in_memory());
    store.replace_topics(partition_sync::topic_infos(first));
    let dynamic = Arc::new(DynamicBrokerConfig::clustered(
        config,
        first.broker_configs(""),
        first.broker_configs(&config.node_id.to_string()),
    ));
    let logs = open_logs(config, clock, fs, &cluster_id, &store, &dynamic, None)?;
    Ok((store, logs, dynamic))
}

/// Open the log manager over `config`'s log dirs with the dynamic log
/// defaults in force; partitions load with their topic's config, as
/// Kafka's loadLogs does. `filter` refuses partitions before they open.
fn open_logs(
    config: &BrokerConfig,
    clock: SharedClock,
    fs: strata_log::fs::SharedFs,
    cluster_id: &str,
    store: &Arc<TopicStore>,
    dynamic: &Arc<DynamicBrokerConfig>,
    filter: Option<LoadFilter>,
) -> Result<Arc<LogManager>, BrokerError> {
    let defaults = dynamic.log_defaults();
    let manager_config = LogManagerConfig {
        log_dirs: config.log_dirs.clone(),
        default_config: (*defaults).clone(),
        recovery_threads_per_data_dir: config.num_recovery_threads_per_data_dir,
        broker_id: config.node_id,
        cluster_id: Some(cluster_id.to_string()),
        flush_offset_checkpoint_interval_ms: config.log_flush_offset_checkpoint_interval_ms,
        flush_start_offset_checkpoint_interval_ms: config
            .log_flush_start_offset_checkpoint_interval_ms,
        file_delete_delay_ms: defaults.file_delete_delay_ms,
        replica_high_watermark_checkpoint_interval_ms: config
            .replication
            .high_watermark_checkpoint_interval_ms,
        alter_log_dirs_max_bytes_per_second: config.alter_log_dirs_max_bytes_per_second,
        fs,
        handles: strata_log::HandleCache::new(config.log_max_open_files),
    };
    let provider_store = store.clone();
    let provider_dynamic = dynamic.clone();
    let topic_configs: TopicConfigProvider = Arc::new(move |topic: &str| {
        let base = provider_dynamic.log_defaults();
        match provider_store.get(topic) {
            Some(info) => effective_config(&base, &info),
            None => (*base).clone(),
        }
    });
    let logs = LogManager::open_with(manager_config, clock, filter, Some(topic_configs))?;
    logs.set_retention_check_interval_ms(config.log_retention_check_interval_ms);
    logs.cleaner().configure(config.cleaner.clone());
    Ok(logs)
}

/// The cluster id recorded in the first log dir's `meta.properties` that
/// has one (a store lost while its log dirs survived).
fn cluster_id_from_log_dirs(dirs: &[std::path::PathBuf]) -> Option<String> {
    dirs.iter().find_map(|dir| {
        match strata_log::MetaProperties::read(dir) {
            Ok(meta) => meta?.cluster_id,
            Err(error) => {
                tracing::warn!(dir = %dir.display(), error = %strata_log::ErrorChain(&error), "unreadable meta.properties");
                None
            }
        }
    })
}

/// How often a TLS listener looks for a renewed keystore.
const KEYSTORE_RELOAD_INTERVAL: Duration = Duration::from_secs(10);

/// Re-read a TLS listener's keystore now and then: a renewed certificate
/// (same subject and names, as Kafka's dynamic keystore update requires)
/// is used by new connections without a restart; open ones keep theirs. A
/// keystore that does not load is logged and the old one stays.
async fn reload_keystore(runtime: Arc<ListenerRuntime>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(KEYSTORE_RELOAD_INTERVAL) => {}
            _ = shutdown.changed() => return,
        }
        let rt = runtime.clone();
        let reloaded = tokio::task::spawn_blocking(move || {
            let tls = rt.tls.as_ref().expect("TLS listener");
            tls.server.reload(&tls.settings)
        })
        .await;
        match reloaded {
            Ok(Ok(true)) => {
                tracing::info!(listener = %runtime.listener.name, "TLS keystore reloaded: new connections use the renewed certificate")
            }
            Ok(Ok(false)) => {}
            Ok(Err(error)) => {
                tracing::warn!(listener = %runtime.listener.name, %error, "renewed TLS keystore not loaded; the current one stays")
            }
            Err(error) => {
                tracing::warn!(listener = %runtime.listener.name, %error, "TLS keystore reload task failed")
            }
        }
    }
}

/// Re-read an OAUTHBEARER listener's JWK set every
/// `sasl.oauthbearer.jwks.endpoint.refresh.ms`; a failed refresh keeps the
/// keys in use.
async fn refresh_jwks(
    validator: Arc<strata_security::sasl::JwksValidator>,
    url: String,
    every: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        let (v, u) = (validator.clone(), url.clone());
        let refreshed = tokio::task::spawn_blocking(move || {
            let document = crate::jwks::fetch(&u)?;
            v.replace_keys(&document).map_err(|e| e.to_string())
        })
        .await;
        match refreshed {
            Ok(Ok(())) => tracing::debug!(%url, "JWK set refreshed"),
            Ok(Err(error)) => {
                tracing::warn!(%url, %error, "JWK set not refreshed; the keys in use stay")
            }
            Err(error) => tracing::warn!(%url, %error, "JWK set refresh task failed"),
        }
    }
}

/// What every listener's connections share: `max.connections`,
/// `max.connections.per.ip` and the request-queue bound.
struct Limits {
    connections: Arc<Semaphore>,
    per_ip: Arc<ConnectionQuotas>,
    requests: Arc<RequestQueue>,
}

async fn accept_loop(
    listener: TcpListener,
    runtime: Arc<ListenerRuntime>,
    broker: Arc<Broker>,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
    done: mpsc::Sender<()>,
) {
    loop {
        let permit = tokio::select! {
            p = limits.connections.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = shutdown.changed() => return,
        };
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((socket, peer)) => {
                let slot = match limits.per_ip.acquire(peer.ip()) {
                    Ok(slot) => slot,
                    Err(refused) => {
                        Stats::add(&broker.stats.connections_rejected, 1);
                        crate::protocol_log::protocol_error(
                            Some(peer),
                            "rejected connection",
                            &refused,
                        );
                        drop(socket);
                        continue;
                    }
                };
                Stats::add(&broker.stats.connections_accepted, 1);
                let broker = broker.clone();
                let shutdown = shutdown.clone();
                let done = done.clone();
                let runtime = runtime.clone();
                let queue = limits.requests.clone();
                tokio::spawn(async move {
                    connection::run(broker, runtime, queue, socket, shutdown).await;
                    drop(slot);
                    drop(permit);
                    drop(done);
                });
            }
            Err(error) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }
}

/// Entry point of `strata serve`, given the configuration loaded by
/// [`BrokerConfig::load`]: start the broker, run until SIGINT/SIGTERM,
/// shut down cleanly (logs closed, clean-shutdown marker written).
///
/// # Errors
/// Startup failure or an unclean shutdown.
pub fn serve_main(config: BrokerConfig) -> Result<(), BrokerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strata-net")
        .build()
        .map_err(|source| BrokerError::Io {
            op: "building the async runtime",
            source,
        })?;
    let log_format = config.log_format;
    runtime.block_on(async move {
        let handle = start(config).await?;
        let listening = handle
            .listener_addrs
            .iter()
            .map(|(name, addr)| format!("{name} {addr}"))
            .collect::<Vec<_>>()
            .join(", ");
        let line = format!(
            "strata: broker {} listening on {} (cluster id {})",
            handle.broker.config.node_id,
            listening,
            handle.cluster_id()
        );
        // With JSON logs every output line is a JSON object: the start
        // line becomes a log event (with the same text) instead.
        match log_format {
            crate::config::LogFormat::Text => eprintln!("{line}"),
            crate::config::LogFormat::Json => tracing::info!(target: "strata", "{line}"),
        }
        wait_for_signal().await?;
        tracing::info!("signal received, shutting down");
        handle.shutdown().await
    })
}

async fn wait_for_signal() -> Result<(), BrokerError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|source| BrokerError::Io {
        op: "installing the SIGTERM handler",
        source,
    })?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.map_err(|source| BrokerError::Io { op: "waiting for SIGINT", source }),
        _ = term.recv() => Ok(()),
    }
}
