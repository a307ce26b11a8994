//! Broker configuration: Kafka's `server.properties` names and defaults,
//! parsed, defaulted and validated in one pass ([`BrokerConfig::load`]).
//!
//! `server.properties` is read by the one `.properties` reader
//! (`strata_log::config::properties`) and then parsed through the
//! definition table of each namespace, all at start: the broker's own
//! ([`BrokerConfig::definitions`]), the topic-level defaults
//! (`LogConfig::from_broker_properties`), the cleaner
//! (`CleanerConfig`), the group coordinator (`GroupConfig`) and the
//! remote tier (`TieredConfig`). Every property is parsed by exactly one
//! table; the rest of the broker receives typed values. `strata serve`,
//! `strata log doctor` and `strata tier fsck` all load their configuration
//! through [`BrokerConfig::load`], so they resolve a file identically and
//! refuse a bad value with the same error. Unknown properties are kept
//! (they show up in DescribeConfigs as static broker configs) and logged,
//! as Kafka does.
//!
//! Defaults that differ from Kafka's are listed in `docs/differences-from-kafka.md`:
//! `node.id` defaults to 1 (the value of Kafka's KRaft sample config; Kafka has no
//! default), `log.dirs` to `./strata-data` (Kafka: `/tmp/kafka-logs`),
//! `max.connections` to 1000 (Kafka: unbounded).

use std::collections::BTreeMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use strata_log::cleaner::CleanerConfig;
use strata_log::config::properties::{self, PropertiesError};
use strata_log::config::{apply, defaults, resolved, ConfigDef, ConfigType, Validator, Value};
use strata_log::LogConfig;
use strata_tiered::TieredConfig;
use thiserror::Error;

use crate::group::config::GroupConfig;
use crate::listeners;
pub use crate::listeners::{Listener, SecurityProtocol};
use crate::security::SecurityConfig;
use crate::txn::config::TxnConfig;

/// Default listener when `listeners` is not set.
pub const DEFAULT_LISTENERS: &str = "PLAINTEXT://127.0.0.1:9092";
/// Default data directory when neither `log.dirs` nor `log.dir` is set.
pub const DEFAULT_LOG_DIR: &str = "./strata-data";

/// Why the configuration could not be loaded: the file (or an override)
/// could not be read, or a value breaks its rule. The text is the same for
/// every command that loads a configuration.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error(transparent)]
    Properties(#[from] PropertiesError),
    #[error(transparent)]
    Invalid(#[from] strata_log::ConfigError),
    #[error(transparent)]
    Security(#[from] crate::security::config::SecurityConfigError),
}

/// The broker's typed configuration.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// `listeners`: every listener served, with its security protocol
    /// (`listener.security.protocol.map`).
    pub listeners: Vec<Listener>,
    /// `advertised.listeners`: what Metadata tells clients, per listener
    /// name; a listener missing here is advertised as bound (with
    /// `0.0.0.0`/empty host replaced by `127.0.0.1`).
    pub advertised_listeners: Vec<Listener>,
    /// `inter.broker.listener.name` (or the listener named after
    /// `security.inter.broker.protocol`): what brokers connect to.
    pub inter_broker_listener: String,
    /// `node.id` / `broker.id` (default 1).
    pub node_id: i32,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// `log.dirs` (or `log.dir`), comma separated.
    pub log_dirs: Vec<PathBuf>,
    /// `replica.alter.log.dirs.io.max.bytes.per.second`: the copy rate of
    /// log-dir moves (AlterReplicaLogDirs); `i64::MAX` is unthrottled.
    pub alter_log_dirs_max_bytes_per_second: i64,
    /// `num.partitions` for auto-created topics and CreateTopics with -1.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `socket.request.max.bytes`: larger frames close the connection.
    pub socket_request_max_bytes: usize,
    /// `max.connections`: concurrent client connections.
    pub max_connections: usize,
    /// `queued.max.requests`: requests read from their sockets and not yet
    /// answered or parked in a purgatory, broker-wide; when that many are
    /// in, connections stop reading until one leaves (Kafka default 500).
    pub queued_max_requests: usize,
    /// `queued.max.request.bytes`: bytes of such requests, broker-wide;
    /// `None` (Kafka's -1, or any value <= 0) is unbounded.
    pub queued_max_request_bytes: Option<u64>,
    /// `connections.max.idle.ms`: a connection with no request in flight and no
    /// byte of a new one received for this long is closed (Kafka default 10 min).
    pub connections_max_idle_ms: u64,
    /// `strata.request.receive.timeout.ms`: once the first byte of a request frame
    /// has arrived, the whole frame must arrive within this (and within
    /// `connections.max.idle.ms`), or the connection is closed.
    pub request_receive_timeout_ms: u64,
    /// `max.connections.per.ip` and `max.connections.per.ip.overrides`.
    pub connection_limits: ConnectionLimits,
    /// `socket.listen.backlog.size`: pending connections the listener queues (Kafka: 50).
    pub socket_listen_backlog_size: u32,
    /// `strata.max.partitions`: partitions the broker may hold in all; CreateTopics
    /// and CreatePartitions beyond it get INVALID_PARTITIONS (Kafka has no limit).
    pub max_partitions: usize,
    /// `max.incremental.fetch.session.cache.slots`: incremental fetch
    /// sessions (KIP-227) the broker keeps; 0 makes every Fetch sessionless.
    pub fetch_session_cache_slots: usize,
    /// `strata.fetch.session.eviction.ms`: how long a fetch session must be
    /// unused before any new session may evict it (Kafka's fixed 120 s).
    pub fetch_session_eviction_ms: i64,
    /// `num.recovery.threads.per.data.dir`.
    pub num_recovery_threads_per_data_dir: usize,
    /// `strata.log.max.open.files`: segment `.log` descriptors plus index
    /// mappings the broker keeps open; the least recently used close past it.
    pub log_max_open_files: usize,
    /// `log.flush.offset.checkpoint.interval.ms`.
    pub log_flush_offset_checkpoint_interval_ms: i64,
    /// `log.flush.start.offset.checkpoint.interval.ms`.
    pub log_flush_start_offset_checkpoint_interval_ms: i64,
    /// `cluster.id`; when unset one is generated once and kept in the topic store.
    pub cluster_id: Option<String>,
    /// `strata.metadata.etcd.endpoints`: etcd client URLs; empty is single-node mode.
    pub etcd_endpoints: Vec<String>,
    /// `strata.metadata.etcd.prefix`: the key prefix of this cluster's metadata.
    pub etcd_prefix: String,
    /// `strata.metrics.listener`: `host:port` of the HTTP listener serving
    /// `/metrics` (Prometheus) and the storage console; `None` (the default) serves neither.
    pub metrics_listener: Option<String>,
    /// Not a property: the source of the doctor's findings on the storage
    /// console's partition pages, installed by the `strata` binary (none by
    /// default).
    pub console_findings: crate::console_findings::FindingsSource,
    /// `broker.session.timeout.ms`: the lease of the broker's registration.
    pub broker_session_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms`: how often the lease is renewed.
    pub broker_heartbeat_interval_ms: u64,
    /// `auto.leader.rebalance.enable`: the controller moves leadership back
    /// to preferred replicas.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds`.
    pub leader_imbalance_check_interval_seconds: u64,
    /// `leader.imbalance.per.broker.percentage`.
    pub leader_imbalance_per_broker_percentage: u32,
    /// The follower and ISR settings (`replica.*`, `num.replica.fetchers`).
    pub replication: ReplicationSettings,
    /// Topic-level defaults from the `log.*` and related broker properties
    /// (`message.max.bytes`, `log.segment.delete.delay.ms`,
    /// `strata.durable.append`, ... live here, parsed once).
    pub log_config: LogConfig,
    /// `log.retention.check.interval.ms`: how often the retention pass runs (default 300 000).
    pub log_retention_check_interval_ms: i64,
    /// `strata.log.format`: how `strata serve` writes its log lines.
    pub log_format: LogFormat,
    /// The `log.cleaner.*` settings of the compaction threads.
    pub cleaner: CleanerConfig,
    /// The group coordinator's settings (`group.*`, `offsets.*`).
    pub group: GroupConfig,
    /// The transaction coordinator (`transaction.*`).
    pub txn: TxnConfig,
    /// The remote tier's settings (`remote.log.*`, `strata.remote.storage.uri`, ...).
    pub tiered: TieredConfig,
    /// SASL, authorizer and other security settings (the `ssl.*` stores
    /// are read by each TLS listener when it starts).
    pub security: SecurityConfig,
    /// Every property given (file then overrides), for DescribeConfigs.
    pub properties: Properties,
    /// Values as given, for the rules that read two properties.
    given: Given,
}

/// The properties as given, name to value. `Debug` hides the values of
/// secrets (passwords, keys, JAAS configurations), so a logged or printed
/// configuration never shows them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties(pub BTreeMap<String, String>);

impl std::ops::Deref for Properties {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &BTreeMap<String, String> {
        &self.0
    }
}

impl std::fmt::Debug for Properties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if crate::config_entry::is_sensitive(k) {
                    "[hidden]"
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}

/// Properties whose meaning depends on another one; resolved after the
/// table pass ([`BrokerConfig::from_properties`]).
#[derive(Clone, Debug, Default)]
struct Given {
    node_id: Option<i32>,
    broker_id: Option<i32>,
    log_dirs: Option<String>,
    log_dir: Option<String>,
    per_ip: i32,
    per_ip_overrides: String,
    listeners: String,
    advertised_listeners: String,
}

fn listener_rule(v: &Value) -> Result<(), String> {
    match listeners::parse_endpoints(&v.string())? {
        e if e.is_empty() => Err("no listener given".into()),
        _ => Ok(()),
    }
}

fn optional_listener_rule(v: &Value) -> Result<(), String> {
    listeners::parse_endpoints(&v.string()).map(|_| ())
}

fn split_endpoints(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

fn etcd_endpoints_rule(v: &Value) -> Result<(), String> {
    for e in split_endpoints(&v.string()) {
        let rest = e
            .strip_prefix("http://")
            .ok_or_else(|| format!("endpoint {e} must start with http://"))?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("endpoint {e} has no port"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(format!("endpoint {e} is not http://host:port"));
        }
    }
    Ok(())
}

fn etcd_prefix_rule(v: &Value) -> Result<(), String> {
    let p = v.string();
    if !p.starts_with('/') || p.len() < 2 {
        Err("must start with / and name something".to_string())
    } else {
        Ok(())
    }
}

/// `strata.metrics.listener`: empty (off), or `host:port` with an optional
/// `http://` in front; the port may be 0 (any free port).
fn metrics_listener_rule(v: &Value) -> Result<(), String> {
    let text = v.string();
    let Some(addr) = metrics_listener_of(&text) else {
        return Ok(());
    };
    let rule = "must be host:port (e.g. 127.0.0.1:9404), optionally with http:// in front";
    let (host, port) = addr.rsplit_once(':').ok_or_else(|| rule.to_string())?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains('/') || port.parse::<u16>().is_err() {
        return Err(rule.to_string());
    }
    Ok(())
}

/// The `host:port` of `strata.metrics.listener`, `None` when unset.
fn metrics_listener_of(text: &str) -> Option<String> {
    let text = text.trim();
    let addr = text.strip_prefix("http://").unwrap_or(text);
    let addr = addr.strip_suffix('/').unwrap_or(addr);
    (!addr.is_empty()).then(|| addr.to_string())
}

fn render_listeners(l: &[Listener]) -> String {
    l.iter().map(Listener::render).collect::<Vec<_>>().join(",")
}

fn usize_of(v: &Value) -> usize {
    usize::try_from(v.long()).unwrap_or(0)
}

fn dirs(c: &BrokerConfig) -> String {
    c.log_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

type Def = ConfigDef<BrokerConfig>;

/// The broker's own properties. Topic-level defaults, the cleaner, the
/// group coordinator and the remote tier have tables of their own.
static TABLE: &[Def] = &[
    Def::new(
        "listeners",
        ConfigType::String,
        DEFAULT_LISTENERS,
        Validator::Custom(listener_rule),
        "Listener URIs to bind.",
        |c, v| c.given.listeners = v.string(),
        |c| render_listeners(&c.listeners),
    ),
    Def::new(
        "advertised.listeners",
        ConfigType::String,
        "",
        Validator::Custom(optional_listener_rule),
        "Listeners published to clients.",
        |c, v| c.given.advertised_listeners = v.string(),
        |c| render_listeners(&c.advertised_listeners),
    ),
    Def::new(
        "node.id",
        ConfigType::Int,
        "",
        Validator::AtLeast(0),
        "The node id of this server.",
        |c, v| c.given.node_id = Some(v.int()),
        |c| c.node_id.to_string(),
    ),
    Def::new(
        "broker.id",
        ConfigType::Int,
        "",
        Validator::AtLeast(0),
        "The broker id of this server (must equal node.id when both are set).",
        |c, v| c.given.broker_id = Some(v.int()),
        |c| c.node_id.to_string(),
    ),
    Def::new(
        "broker.rack",
        ConfigType::String,
        "",
        Validator::Any,
        "Rack of the broker.",
        |c, v| c.rack = Some(v.string()),
        |c| c.rack.clone().unwrap_or_default(),
    ),
    Def::new(
        "log.dirs",
        ConfigType::String,
        "",
        Validator::Any,
        "Directories in which the log data is kept (comma separated).",
        |c, v| c.given.log_dirs = Some(v.string()),
        dirs,
    ),
    Def::new(
        "log.dir",
        ConfigType::String,
        "",
        Validator::Any,
        "The log directory, when log.dirs is not set.",
        |c, v| c.given.log_dir = Some(v.string()),
        dirs,
    ),
    Def::new(
        "num.partitions",
        ConfigType::Int,
        "1",
        Validator::AtLeast(1),
        "Default number of partitions per topic.",
        |c, v| c.num_partitions = v.int(),
        |c| c.num_partitions.to_string(),
    ),
    Def::new(
        "default.replication.factor",
        ConfigType::Int,
        "1",
        Validator::Between(1, i16::MAX as i64),
        "Default replication factor for automatically created topics.",
        |c, v| c.default_replication_factor = i16::try_from(v.long()).unwrap_or(1),
        |c| c.default_replication_factor.to_string(),
    ),
    Def::new(
        "auto.create.topics.enable",
        ConfigType::Boolean,
        "true",
        Validator::Any,
        "Enable auto creation of topics on the server.",
        |c, v| c.auto_create_topics_enable = v.boolean(),
        |c| c.auto_create_topics_enable.to_string(),
    ),
    Def::new(
        "socket.request.max.bytes",
        ConfigType::Int,
        "104857600",
        Validator::AtLeast(1),
        "The maximum number of bytes in a socket request.",
        |c, v| c.socket_request_max_bytes = usize_of(v),
        |c| c.socket_request_max_bytes.to_string(),
    ),
    Def::new(
        "max.connections",
        ConfigType::Int,
        "1000",
        Validator::AtLeast(1),
        "Maximum connections to the broker.",
        |c, v| c.max_connections = usize_of(v),
        |c| c.max_connections.to_string(),
    ),
    Def::new(
        "queued.max.requests",
        ConfigType::Int,
        "500",
        Validator::AtLeast(1),
        "The number of queued requests allowed before no more requests are read.",
        |c, v| c.queued_max_requests = usize_of(v),
        |c| c.queued_max_requests.to_string(),
    ),
    Def::new(
        "queued.max.request.bytes",
        ConfigType::Long,
        "-1",
        Validator::Any,
        "The number of queued bytes allowed before no more requests are read (-1: unbounded).",
        |c, v| c.queued_max_request_bytes = u64::try_from(v.long()).ok().filter(|b| *b > 0),
        |c| {
            c.queued_max_request_bytes
                .map_or("-1".to_string(), |b| b.to_string())
        },
    ),
    Def::new(
        "connections.max.idle.ms",
        ConfigType::Long,
        "600000",
        Validator::AtLeast(1),
        "Idle connections are closed after this long.",
        |c, v| c.connections_max_idle_ms = u64::try_from(v.long()).unwrap_or(1),
        |c| c.connections_max_idle_ms.to_string(),
    ),
    Def::new(
        "strata.request.receive.timeout.ms",
        ConfigType::Long,
        "30000",
        Validator::AtLeast(1),
        "Strata only: a started request frame must arrive whole within this.",
        |c, v| c.request_receive_timeout_ms = u64::try_from(v.long()).unwrap_or(1),
        |c| c.request_receive_timeout_ms.to_string(),
    ),
    Def::new(
        "max.connections.per.ip",
        ConfigType::Int,
        "2147483647",
        Validator::AtLeast(0),
        "Connections allowed from one address.",
        |c, v| c.given.per_ip = v.int(),
        |c| c.connection_limits.per_ip.to_string(),
    ),
    Def::new(
        "max.connections.per.ip.overrides",
        ConfigType::String,
        "",
        Validator::Any,
        "Per-address connection limits, host:count,...",
        |c, v| c.given.per_ip_overrides = v.string(),
        |c| c.given.per_ip_overrides.clone(),
    ),
    Def::new(
        "socket.listen.backlog.size",
        ConfigType::Int,
        "50",
        Validator::AtLeast(1),
        "Pending connections the listener queues.",
        |c, v| c.socket_listen_backlog_size = u32::try_from(v.long()).unwrap_or(1),
        |c| c.socket_listen_backlog_size.to_string(),
    ),
    Def::new(
        "strata.max.partitions",
        ConfigType::Int,
        "100000",
        Validator::AtLeast(1),
        "Strata only: partitions the broker may hold in all.",
        |c, v| c.max_partitions = usize_of(v),
        |c| c.max_partitions.to_string(),
    ),
    Def::new(
        "max.incremental.fetch.session.cache.slots",
        ConfigType::Int,
        "1000",
        Validator::AtLeast(0),
        "The maximum number of incremental fetch sessions that we will maintain.",
        |c, v| c.fetch_session_cache_slots = usize_of(v),
        |c| c.fetch_session_cache_slots.to_string(),
    ),
    Def::new(
        "strata.fetch.session.eviction.ms",
        ConfigType::Long,
        "120000",
        Validator::AtLeast(0),
        "Strata only: how long an incremental fetch session must be unused before a new session may evict it (Kafka fixes 120000).",
        |c, v| c.fetch_session_eviction_ms = v.long(),
        |c| c.fetch_session_eviction_ms.to_string(),
    ),
    Def::new(
        "num.recovery.threads.per.data.dir",
        ConfigType::Int,
        "1",
        Validator::AtLeast(1),
        "Threads per data directory for log recovery at startup and flushing at shutdown.",
        |c, v| c.num_recovery_threads_per_data_dir = usize_of(v),
        |c| c.num_recovery_threads_per_data_dir.to_string(),
    ),
    Def::new(
        "strata.log.max.open.files",
        ConfigType::Int,
        "4096",
        Validator::AtLeast(strata_log::MIN_MAX_OPEN_FILES as i64),
        "Strata only: segment files and index mappings kept open in all; the least recently used are closed past it (Kafka keeps one per segment).",
        |c, v| c.log_max_open_files = usize_of(v),
        |c| c.log_max_open_files.to_string(),
    ),
    Def::new(
        "log.flush.offset.checkpoint.interval.ms",
        ConfigType::Int,
        "60000",
        Validator::AtLeast(0),
        "How often the recovery-point checkpoint is written.",
        |c, v| c.log_flush_offset_checkpoint_interval_ms = v.long(),
        |c| c.log_flush_offset_checkpoint_interval_ms.to_string(),
    ),
    Def::new(
        "log.flush.start.offset.checkpoint.interval.ms",
        ConfigType::Int,
        "60000",
        Validator::AtLeast(0),
        "How often the log-start-offset checkpoint is written.",
        |c, v| c.log_flush_start_offset_checkpoint_interval_ms = v.long(),
        |c| c.log_flush_start_offset_checkpoint_interval_ms.to_string(),
    ),
    Def::new(
        "strata.metadata.etcd.endpoints",
        ConfigType::String,
        "",
        Validator::Custom(etcd_endpoints_rule),
        "Strata only: etcd client URLs (http://host:port, comma separated); set, the broker joins a cluster.",
        |c, v| c.etcd_endpoints = split_endpoints(&v.string()),
        |c| c.etcd_endpoints.join(","),
    ),
    Def::new(
        "strata.metadata.etcd.prefix",
        ConfigType::String,
        "/strata",
        Validator::Custom(etcd_prefix_rule),
        "Strata only: the etcd key prefix under which this cluster keeps its metadata.",
        |c, v| c.etcd_prefix = v.string(),
        |c| c.etcd_prefix.clone(),
    ),
    Def::new(
        "strata.metrics.listener",
        ConfigType::String,
        "",
        Validator::Custom(metrics_listener_rule),
        "Strata only: host:port of the HTTP listener for /metrics and the storage console (unset: off).",
        |c, v| c.metrics_listener = metrics_listener_of(&v.string()),
        |c| c.metrics_listener.clone().unwrap_or_default(),
    ),
    Def::new(
        "broker.session.timeout.ms",
        ConfigType::Int,
        "9000",
        Validator::AtLeast(1000),
        "A broker whose registration lease is not renewed for this long is dead to the cluster.",
        |c, v| c.broker_session_timeout_ms = u64::try_from(v.long()).unwrap_or(1000),
        |c| c.broker_session_timeout_ms.to_string(),
    ),
    Def::new(
        "broker.heartbeat.interval.ms",
        ConfigType::Int,
        "2000",
        Validator::AtLeast(1),
        "How often a broker renews its registration lease.",
        |c, v| c.broker_heartbeat_interval_ms = u64::try_from(v.long()).unwrap_or(1),
        |c| c.broker_heartbeat_interval_ms.to_string(),
    ),
    Def::new(
        "auto.leader.rebalance.enable",
        ConfigType::Boolean,
        "true",
        Validator::Any,
        "Cluster mode: the controller periodically moves leadership back to each partition's preferred (first) replica.",
        |c, v| c.auto_leader_rebalance_enable = v.boolean(),
        |c| c.auto_leader_rebalance_enable.to_string(),
    ),
    Def::new(
        "leader.imbalance.check.interval.seconds",
        ConfigType::Long,
        "300",
        Validator::AtLeast(1),
        "How often the controller checks whether partition leaders are balanced.",
        |c, v| c.leader_imbalance_check_interval_seconds = u64::try_from(v.long()).unwrap_or(1),
        |c| c.leader_imbalance_check_interval_seconds.to_string(),
    ),
    Def::new(
        "leader.imbalance.per.broker.percentage",
        ConfigType::Int,
        "10",
        Validator::AtLeast(0),
        "The share of a broker's preferred partitions led elsewhere, in percent, above which the controller rebalances them.",
        |c, v| c.leader_imbalance_per_broker_percentage = u32::try_from(v.int()).unwrap_or(0),
        |c| c.leader_imbalance_per_broker_percentage.to_string(),
    ),
    Def::new(
        "replica.lag.time.max.ms",
        ConfigType::Long,
        "30000",
        Validator::AtLeast(1),
        "A follower that has not caught up with the leader's log end for this long leaves the ISR.",
        |c, v| c.replication.lag_time_max_ms = v.long(),
        |c| c.replication.lag_time_max_ms.to_string(),
    ),
    Def::new(
        "replica.fetch.wait.max.ms",
        ConfigType::Int,
        "500",
        Validator::AtLeast(0),
        "How long a follower's Fetch waits at the leader for new records.",
        |c, v| c.replication.fetch_wait_max_ms = v.int(),
        |c| c.replication.fetch_wait_max_ms.to_string(),
    ),
    Def::new(
        "replica.fetch.min.bytes",
        ConfigType::Int,
        "1",
        Validator::AtLeast(1),
        "The bytes a follower's Fetch waits for.",
        |c, v| c.replication.fetch_min_bytes = v.int(),
        |c| c.replication.fetch_min_bytes.to_string(),
    ),
    Def::new(
        "replica.fetch.max.bytes",
        ConfigType::Int,
        "1048576",
        Validator::AtLeast(0),
        "The bytes a follower asks for per partition (at least one batch is always returned).",
        |c, v| c.replication.fetch_max_bytes = v.int(),
        |c| c.replication.fetch_max_bytes.to_string(),
    ),
    Def::new(
        "replica.fetch.response.max.bytes",
        ConfigType::Int,
        "10485760",
        Validator::AtLeast(0),
        "The bytes a follower asks for per Fetch response.",
        |c, v| c.replication.fetch_response_max_bytes = v.int(),
        |c| c.replication.fetch_response_max_bytes.to_string(),
    ),
    Def::new(
        "replica.fetch.backoff.ms",
        ConfigType::Int,
        "1000",
        Validator::AtLeast(0),
        "How long a follower waits after a fetch error before it retries a partition.",
        |c, v| c.replication.fetch_backoff_ms = v.int(),
        |c| c.replication.fetch_backoff_ms.to_string(),
    ),
    Def::new(
        "replica.socket.timeout.ms",
        ConfigType::Int,
        "30000",
        Validator::AtLeast(1),
        "How long a follower waits for a Fetch response beyond replica.fetch.wait.max.ms.",
        |c, v| c.replication.socket_timeout_ms = v.int(),
        |c| c.replication.socket_timeout_ms.to_string(),
    ),
    Def::new(
        "replica.alter.log.dirs.io.max.bytes.per.second",
        ConfigType::Long,
        "9223372036854775807",
        Validator::AtLeast(1),
        "The bytes per second log-dir moves (AlterReplicaLogDirs) copy at most, all moves together.",
        |c, v| c.alter_log_dirs_max_bytes_per_second = v.long(),
        |c| c.alter_log_dirs_max_bytes_per_second.to_string(),
    ),
    Def::new(
        "replica.high.watermark.checkpoint.interval.ms",
        ConfigType::Long,
        "5000",
        Validator::AtLeast(1),
        "How often each log dir's replication-offset-checkpoint (the high watermarks) is written.",
        |c, v| c.replication.high_watermark_checkpoint_interval_ms = v.long(),
        |c| c.replication.high_watermark_checkpoint_interval_ms.to_string(),
    ),
    Def::new(
        "num.replica.fetchers",
        ConfigType::Int,
        "1",
        Validator::AtLeast(1),
        "Fetcher tasks per leader broker; partitions are spread over them by hash.",
        |c, v| c.replication.num_fetchers = v.int(),
        |c| c.replication.num_fetchers.to_string(),
    ),
    Def::new(
        "replica.selector.class",
        ConfigType::String,
        "",
        Validator::Custom(replica_selector_rule),
        "How a leader picks the replica a consumer fetches from (KIP-392): unset = the leader, or \
         org.apache.kafka.common.replica.RackAwareReplicaSelector (Strata loads no other class).",
        |c, v| c.replication.replica_selector = ReplicaSelector::parse(&v.string()).ok().flatten(),
        |c| {
            c.replication
                .replica_selector
                .map(|s| s.class_name().to_string())
                .unwrap_or_default()
        },
    ),
    Def::new(
        "strata.log.format",
        ConfigType::String,
        "text",
        Validator::OneOf(LogFormat::NAMES),
        "Strata only: the broker's log lines as text (`text`) or one JSON object per line \
         (`json`: timestamp, level, target, fields).",
        |c, v| c.log_format = LogFormat::parse(&v.string()).unwrap_or(LogFormat::Text),
        |c| c.log_format.name().to_string(),
    ),
    Def::new(
        "cluster.id",
        ConfigType::String,
        "",
        Validator::NonEmpty,
        "Strata only: the cluster id (generated once when unset).",
        |c, v| c.cluster_id = Some(v.string()),
        |c| c.cluster_id.clone().unwrap_or_default(),
    ),
    Def::new(
        "log.retention.check.interval.ms",
        ConfigType::Long,
        "300000",
        Validator::AtLeast(1),
        "How often the retention pass runs.",
        |c, v| c.log_retention_check_interval_ms = v.long(),
        |c| c.log_retention_check_interval_ms.to_string(),
    ),
];

/// Kafka properties a KRaft `server.properties` carries that a single
/// Strata node does not use; known, so not warned about.
const IGNORED: &[&str] = &[
    "process.roles",
    "controller.quorum.voters",
    "controller.listener.names",
];

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig::from_properties(BTreeMap::new()).expect("built-in defaults are valid")
    }
}

impl BrokerConfig {
    /// Read `path` (if any) with the one `.properties` reader, apply
    /// `overrides` (`key=value`, later wins), parse and validate every
    /// namespace. `strata serve`, `strata log doctor` and `strata tier fsck`
    /// all start here.
    ///
    /// # Errors
    /// The file cannot be read or parsed, an override is malformed, or a value is invalid.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<BrokerConfig, ConfigError> {
        BrokerConfig::from_properties(properties::load(path, overrides)?)
    }

    /// The broker's own definition table.
    pub fn definitions() -> &'static [ConfigDef<BrokerConfig>] {
        TABLE
    }

    /// Build and validate a configuration from property names to values.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first bad property, its value and the rule.
    pub fn from_properties(props: BTreeMap<String, String>) -> Result<BrokerConfig, ConfigError> {
        let log_config = LogConfig::from_broker_properties(&props)?;
        let blank = BrokerConfig {
            listeners: Vec::new(),
            advertised_listeners: Vec::new(),
            inter_broker_listener: String::new(),
            node_id: 1,
            rack: None,
            log_dirs: Vec::new(),
            alter_log_dirs_max_bytes_per_second: 0,
            num_partitions: 0,
            default_replication_factor: 0,
            auto_create_topics_enable: false,
            socket_request_max_bytes: 0,
            max_connections: 0,
            queued_max_requests: 0,
            queued_max_request_bytes: None,
            connections_max_idle_ms: 0,
            request_receive_timeout_ms: 0,
            connection_limits: ConnectionLimits::default(),
            socket_listen_backlog_size: 0,
            max_partitions: 0,
            fetch_session_cache_slots: 0,
            fetch_session_eviction_ms: 0,
            num_recovery_threads_per_data_dir: 0,
            log_max_open_files: 0,
            log_flush_offset_checkpoint_interval_ms: 0,
            log_flush_start_offset_checkpoint_interval_ms: 0,
            cluster_id: None,
            etcd_endpoints: Vec::new(),
            etcd_prefix: String::new(),
            metrics_listener: None,
            console_findings: Default::default(),
            broker_session_timeout_ms: 0,
            broker_heartbeat_interval_ms: 0,
            auto_leader_rebalance_enable: false,
            leader_imbalance_check_interval_seconds: 0,
            leader_imbalance_per_broker_percentage: 0,
            replication: ReplicationSettings::default(),
            cleaner: CleanerConfig::from_properties(
                &props,
                usize::try_from(log_config.max_message_bytes).unwrap_or(0),
            )?,
            group: GroupConfig::from_properties(&props)?,
            txn: TxnConfig::from_properties(&props)?,
            tiered: TieredConfig::from_broker_properties(&BTreeMap::new(), Path::new(""))?,
            log_config,
            log_retention_check_interval_ms: 0,
            log_format: LogFormat::Text,
            security: SecurityConfig::default(),
            properties: Properties::default(),
            given: Given::default(),
        };
        let mut c = defaults(TABLE, blank);
        apply(TABLE, &mut c, &props)?;
        c.node_id = match (c.given.node_id, c.given.broker_id) {
            (Some(a), Some(b)) if a != b => {
                return Err(strata_log::ConfigError::InvalidValue {
                    name: "broker.id",
                    value: props.get("broker.id").cloned().unwrap_or_default(),
                    rule: format!("must equal node.id ({a}) when both are set"),
                }
                .into())
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => 1,
        };
        let (dirs_key, dirs_value) = match (&c.given.log_dirs, &c.given.log_dir) {
            (Some(v), _) => ("log.dirs", v.clone()),
            (None, Some(v)) => ("log.dir", v.clone()),
            (None, None) => ("log.dirs", DEFAULT_LOG_DIR.to_string()),
        };
        c.log_dirs = dirs_value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if c.log_dirs.is_empty() {
            return Err(strata_log::ConfigError::InvalidValue {
                name: dirs_key,
                value: props.get(dirs_key).cloned().unwrap_or_default(),
                rule: "no directory given".into(),
            }
            .into());
        }
        if i64::from(c.replication.fetch_wait_max_ms) >= c.replication.lag_time_max_ms {
            return Err(strata_log::ConfigError::InvalidValue {
                name: "replica.fetch.wait.max.ms",
                value: c.replication.fetch_wait_max_ms.to_string(),
                rule: format!(
                    "must be less than replica.lag.time.max.ms ({}), or followers leave the ISR while they wait",
                    c.replication.lag_time_max_ms
                ),
            }
            .into());
        }
        if c.replication.socket_timeout_ms < c.replication.fetch_wait_max_ms {
            return Err(strata_log::ConfigError::InvalidValue {
                name: "replica.socket.timeout.ms",
                value: c.replication.socket_timeout_ms.to_string(),
                rule: format!(
                    "must be at least replica.fetch.wait.max.ms ({})",
                    c.replication.fetch_wait_max_ms
                ),
            }
            .into());
        }
        c.connection_limits = ConnectionLimits::parse(&c.given, &props)?;
        resolve_listeners(&mut c, &props)?;
        c.security = SecurityConfig::from_properties(&props, &c.listeners)?;
        c.tiered = TieredConfig::from_broker_properties(&props, &c.log_dirs[0])?;
        for name in props.keys() {
            if !is_known(name) {
                tracing::warn!(property = %name, "unknown broker configuration (kept, not used)");
            }
        }
        c.properties = Properties(props);
        Ok(c)
    }

    /// `key=value` of every setting, resolved: the broker's table, the
    /// topic-level defaults (by topic config name), the cleaner, the group
    /// coordinator and the remote tier (what `strata serve --print-config` shows).
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        let mut out = resolved(TABLE, self);
        out.extend(self.log_config.resolved());
        out.extend(self.cleaner.resolved());
        out.extend(self.group.resolved());
        out.extend(self.txn.resolved());
        out.extend(self.tiered.resolved());
        out
    }
}

/// The follower and ISR settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicationSettings {
    /// `replica.lag.time.max.ms`.
    pub lag_time_max_ms: i64,
    /// `replica.fetch.wait.max.ms`.
    pub fetch_wait_max_ms: i32,
    /// `replica.fetch.min.bytes`.
    pub fetch_min_bytes: i32,
    /// `replica.fetch.max.bytes`.
    pub fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`.
    pub fetch_response_max_bytes: i32,
    /// `replica.fetch.backoff.ms`.
    pub fetch_backoff_ms: i32,
    /// `replica.socket.timeout.ms`.
    pub socket_timeout_ms: i32,
    /// `num.replica.fetchers`.
    pub num_fetchers: i32,
    /// `replica.high.watermark.checkpoint.interval.ms`.
    pub high_watermark_checkpoint_interval_ms: i64,
    /// `replica.selector.class`; `None` (unset): consumers read from the leader.
    pub replica_selector: Option<ReplicaSelector>,
}

/// `strata.log.format`: how `strata serve` writes its log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (tracing's default format).
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`.
    Json,
}

impl LogFormat {
    /// The values `strata.log.format` accepts, in [`LogFormat`] order.
    pub const NAMES: &'static [&'static str] = &["text", "json"];

    /// The property value naming this format.
    pub fn name(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }

    /// The format a `strata.log.format` value names, if any.
    pub fn parse(value: &str) -> Option<LogFormat> {
        match value {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// `replica.selector.class` (KIP-392). Strata loads no plugins: the value
/// names one of Kafka's built-in selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: a replica
    /// in the consumer's `client.rack`, else the leader.
    RackAware,
}

impl ReplicaSelector {
    const RACK_AWARE: &'static str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    /// Kafka's class name of this selector.
    pub fn class_name(self) -> &'static str {
        match self {
            ReplicaSelector::RackAware => ReplicaSelector::RACK_AWARE,
        }
    }

    /// The selector a `replica.selector.class` value names: empty is none;
    /// the class name or its simple name.
    ///
    /// # Errors
    /// The rule the value breaks: any other class.
    pub fn parse(value: &str) -> Result<Option<ReplicaSelector>, String> {
        match value.trim() {
            "" => Ok(None),
            ReplicaSelector::RACK_AWARE | "RackAwareReplicaSelector" => {
                Ok(Some(ReplicaSelector::RackAware))
            }
            _ => Err(format!(
                "Strata loads no selector plugins; the only selector is {}",
                ReplicaSelector::RACK_AWARE
            )),
        }
    }
}

fn replica_selector_rule(v: &Value) -> Result<(), String> {
    ReplicaSelector::parse(&v.string()).map(drop)
}

/// Whether property `name` is a Kafka or Strata broker property, and a
/// DescribeConfigs/AlterConfigs name that is not custom.
pub(crate) fn is_broker_property(name: &str) -> bool {
    TABLE.iter().any(|d| d.name == name) || IGNORED.contains(&name)
}

/// Names some table parses, plus anything `log.*`-like.
fn is_known(name: &str) -> bool {
    is_broker_property(name)
        || name.starts_with("log.")
        || GroupConfig::is_known(name)
        || TxnConfig::is_known(name)
        || SecurityConfig::is_known(name)
        || strata_tiered::config::is_tiered_property(name)
        || strata_log::config::defines(CleanerConfig::definitions(), name)
        || strata_log::config::defines(LogConfig::definitions(), name)
        || strata_log::config::defines(LogConfig::broker_only_definitions(), name)
}

/// Per-client-address connection limits (Kafka's `ConnectionQuotas`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `max.connections.per.ip` (Kafka default `Int.MaxValue`).
    pub per_ip: usize,
    /// `max.connections.per.ip.overrides`: `host:count,...`; host names are
    /// resolved once, at start, as Kafka does.
    pub overrides: BTreeMap<IpAddr, usize>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            per_ip: i32::MAX as usize,
            overrides: BTreeMap::new(),
        }
    }
}

impl ConnectionLimits {
    /// The limit for connections from `ip`.
    pub fn limit_for(&self, ip: IpAddr) -> usize {
        self.overrides.get(&ip).copied().unwrap_or(self.per_ip)
    }

    fn parse(
        given: &Given,
        props: &BTreeMap<String, String>,
    ) -> Result<ConnectionLimits, strata_log::ConfigError> {
        const OVERRIDES: &str = "max.connections.per.ip.overrides";
        let per_ip = given.per_ip;
        let mut overrides = BTreeMap::new();
        let bad = |reason: &str| strata_log::ConfigError::InvalidValue {
            name: OVERRIDES,
            value: props.get(OVERRIDES).cloned().unwrap_or_default(),
            rule: reason.to_string(),
        };
        for entry in given.per_ip_overrides.split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let (host, count) = entry
                .rsplit_once(':')
                .ok_or_else(|| bad("expected a comma-separated list of host:count"))?;
            let count: i32 = count
                .trim()
                .parse()
                .map_err(|_| bad("a connection count is not a number"))?;
            if count < 0 {
                return Err(bad("a connection count must be >= 0"));
            }
            let host = host.trim().trim_start_matches('[').trim_end_matches(']');
            let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => (host, 0u16)
                    .to_socket_addrs()
                    .map_err(|_| bad("a host name does not resolve"))?
                    .map(|a| a.ip())
                    .collect(),
            };
            for ip in addrs {
                overrides.insert(ip, count as usize);
            }
        }
        if per_ip == 0 && overrides.is_empty() {
            return Err(strata_log::ConfigError::InvalidValue {
                name: "max.connections.per.ip",
                value: props
                    .get("max.connections.per.ip")
                    .cloned()
                    .unwrap_or_default(),
                rule: "may be 0 only when max.connections.per.ip.overrides is set".into(),
            });
        }
        Ok(ConnectionLimits {
            per_ip: usize::try_from(per_ip).unwrap_or(0),
            overrides,
        })
    }
}

/// Give the listeners their protocols and check the advertised and
/// inter-broker ones against them (Kafka's `KafkaConfig` rules).
fn resolve_listeners(
    c: &mut BrokerConfig,
    props: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    let invalid = |name: &'static str, rule: String| -> ConfigError {
        strata_log::ConfigError::InvalidValue {
            name,
            value: props.get(name).cloned().unwrap_or_default(),
            rule,
        }
        .into()
    };
    let map_value = props
        .get("listener.security.protocol.map")
        .map_or(listeners::DEFAULT_PROTOCOL_MAP, String::as_str);
    let map = listeners::parse_protocol_map(map_value)
        .map_err(|r| invalid("listener.security.protocol.map", r))?;
    let bound =
        listeners::parse_endpoints(&c.given.listeners).map_err(|r| invalid("listeners", r))?;
    c.listeners = listeners::with_protocols(bound, &map).map_err(|r| invalid("listeners", r))?;
    let advertised = listeners::parse_endpoints(&c.given.advertised_listeners)
        .map_err(|r| invalid("advertised.listeners", r))?;
    for a in &advertised {
        if !c.listeners.iter().any(|l| l.name == a.name) {
            return Err(invalid(
                "advertised.listeners",
                format!("{} is not one of the listeners", a.name),
            ));
        }
        if a.host.is_empty() || a.host == "0.0.0.0" || a.host == "::" {
            return Err(invalid(
                "advertised.listeners",
                format!("{}: cannot advertise the meta-address {:?}", a.name, a.host),
            ));
        }
    }
    c.advertised_listeners = listeners::with_protocols(advertised, &map)
        .map_err(|r| invalid("advertised.listeners", r))?;
    let inter = listeners::inter_broker_listener(
        props.get("inter.broker.listener.name").map(String::as_str),
        props
            .get("security.inter.broker.protocol")
            .map(String::as_str),
    )
    .map_err(|r| invalid("inter.broker.listener.name", r))?;
    let explicit = props.contains_key("inter.broker.listener.name")
        || props.contains_key("security.inter.broker.protocol");
    c.inter_broker_listener = if c.listeners.iter().any(|l| l.name == inter) {
        inter
    } else if explicit || !c.etcd_endpoints.is_empty() {
        // Brokers of a cluster must reach each other on a listener that exists.
        return Err(invalid(
            if props.contains_key("security.inter.broker.protocol") {
                "security.inter.broker.protocol"
            } else {
                "inter.broker.listener.name"
            },
            format!("the inter-broker listener {inter} is not one of the listeners"),
        ));
    } else {
        // A single node talks to no other broker: its first listener stands in.
        c.listeners[0].name.clone()
    };
    if !c.etcd_endpoints.is_empty() {
        let protocol = c
            .listeners
            .iter()
            .find(|l| l.name == c.inter_broker_listener)
            .map(|l| l.protocol);
        if protocol != Some(SecurityProtocol::Plaintext) {
            // Replication, markers and verification connect without TLS or
            // SASL today: refuse rather than fail at the first fetch.
            return Err(invalid(
                "inter.broker.listener.name",
                format!(
                    "the inter-broker listener {} uses {}; brokers reach each other over \
                     PLAINTEXT only in this version (use a PLAINTEXT listener on a private \
                     interface for inter.broker.listener.name)",
                    c.inter_broker_listener,
                    protocol.map_or("no protocol", SecurityProtocol::name)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_name(err: &ConfigError) -> String {
        match err {
            ConfigError::Invalid(e) => e.name().to_string(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn every_default_is_valid_and_errors_name_key_value_and_rule() {
        let c = BrokerConfig::default();
        let shown: BTreeMap<_, _> = c.resolved().into_iter().collect();
        for def in BrokerConfig::definitions() {
            if !def.default.is_empty() {
                assert_eq!(shown[def.name], def.default, "{}", def.name);
            }
        }
        assert_eq!(shown["log.dirs"], DEFAULT_LOG_DIR);
        assert_eq!(shown["retention.ms"], "604800000");
        assert_eq!(shown["offsets.topic.num.partitions"], "50");
        assert_eq!(shown["remote.log.storage.system.enable"], "false");
        for (key, value, rule) in [
            ("num.partitions", "zero", "not an int"),
            ("num.partitions", "0", "must be at least 1"),
            ("log.retention.ms", "abc", "not a long"),
            (
                "auto.create.topics.enable",
                "yes",
                "not a boolean (true or false)",
            ),
            ("offsets.topic.num.partitions", "0", "must be at least 1"),
            ("queued.max.requests", "0", "must be at least 1"),
            ("remote.log.reader.threads", "0", "must be at least 1"),
            ("log.cleaner.threads", "-1", "must be at least 0"),
            (
                "listeners",
                "PLAINTEXT://h:1,plaintext://h:2",
                "each listener must have a different name (PLAINTEXT twice)",
            ),
            ("cluster.id", "", "must not be empty"),
            (
                "strata.metrics.listener",
                "localhost",
                "must be host:port (e.g. 127.0.0.1:9404), optionally with http:// in front",
            ),
            (
                "strata.metrics.listener",
                "127.0.0.1:99999",
                "must be host:port (e.g. 127.0.0.1:9404), optionally with http:// in front",
            ),
        ] {
            let err = BrokerConfig::from_properties(props(&[(key, value)])).unwrap_err();
            assert_eq!(
                strata_log::ErrorChain(&err).to_string(),
                format!("invalid value {value:?} for {key}: {rule}")
            );
        }
    }

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_match_the_documented_values() {
        let c = BrokerConfig::default();
        assert_eq!(c.listeners[0].bind_address(), "127.0.0.1:9092");
        assert_eq!(c.listeners[0].protocol, SecurityProtocol::Plaintext);
        assert_eq!(c.node_id, 1);
        assert_eq!(c.log_dirs, vec![PathBuf::from(DEFAULT_LOG_DIR)]);
        assert_eq!(c.num_partitions, 1);
        assert_eq!(c.default_replication_factor, 1);
        assert!(c.auto_create_topics_enable);
        assert_eq!(c.socket_request_max_bytes, 104_857_600);
        assert_eq!(c.max_connections, 1000);
        assert_eq!(c.log_config.max_message_bytes, 1_048_588);
        assert_eq!(c.group.offsets_topic_num_partitions, 50);
        assert!(!c.log_config.durable_append);
        assert_eq!(c.log_config, LogConfig::default());
        assert_eq!(c.connections_max_idle_ms, 600_000);
        assert_eq!(c.request_receive_timeout_ms, 30_000);
        assert_eq!(c.connection_limits, ConnectionLimits::default());
        assert_eq!(c.socket_listen_backlog_size, 50);
        assert_eq!(c.queued_max_requests, 500);
        assert_eq!(c.queued_max_request_bytes, None);
    }

    #[test]
    fn queued_max_request_bytes_is_unbounded_at_zero_or_below_as_in_kafka() {
        let bytes = |v: &str| {
            BrokerConfig::from_properties(props(&[("queued.max.request.bytes", v)]))
                .unwrap()
                .queued_max_request_bytes
        };
        assert_eq!(bytes("-1"), None);
        assert_eq!(bytes("0"), None);
        assert_eq!(bytes("1048576"), Some(1_048_576));
        let err = BrokerConfig::from_properties(props(&[("queued.max.request.bytes", "lots")]))
            .unwrap_err();
        assert_eq!(err_name(&err), "queued.max.request.bytes");
    }

    #[test]
    fn max_open_files_defaults_below_ten_thousand_and_refuses_tiny_values() {
        assert_eq!(BrokerConfig::default().log_max_open_files, 4096);
        let c =
            BrokerConfig::from_properties(props(&[("strata.log.max.open.files", "16")])).unwrap();
        assert_eq!(c.log_max_open_files, 16);
        let err = BrokerConfig::from_properties(props(&[("strata.log.max.open.files", "7")]))
            .unwrap_err();
        assert_eq!(err_name(&err), "strata.log.max.open.files");
        assert!(err.to_string().contains('8'), "{err}");
    }

    #[test]
    fn connection_limits_parse_overrides_and_refuse_bad_values() {
        let c = BrokerConfig::from_properties(props(&[
            ("max.connections.per.ip", "5"),
            (
                "max.connections.per.ip.overrides",
                "127.0.0.2:7, [::1]:0,localhost:9",
            ),
            ("connections.max.idle.ms", "1500"),
        ]))
        .unwrap();
        let limits = &c.connection_limits;
        assert_eq!(limits.limit_for("127.0.0.3".parse().unwrap()), 5);
        assert_eq!(limits.limit_for("127.0.0.2".parse().unwrap()), 7);
        // localhost resolves to 127.0.0.1 (at least), and wins over the [::1] entry only
        // where it resolves to the same address.
        assert_eq!(limits.limit_for("127.0.0.1".parse().unwrap()), 9);
        assert_eq!(c.connections_max_idle_ms, 1500);
        for (key, value) in [
            ("max.connections.per.ip", "-1"),
            ("max.connections.per.ip", "0"),
            ("max.connections.per.ip.overrides", "127.0.0.1"),
            ("max.connections.per.ip.overrides", "127.0.0.1:many"),
            ("max.connections.per.ip.overrides", "127.0.0.1:-2"),
            ("connections.max.idle.ms", "0"),
            ("strata.request.receive.timeout.ms", "-5"),
            ("socket.listen.backlog.size", "0"),
        ] {
            let err = BrokerConfig::from_properties(props(&[(key, value)])).unwrap_err();
            assert!(err_name(&err) == *key, "{key}={value}: {err}");
        }
        // 0 per ip is allowed when overrides let some addresses in (Kafka's rule).
        let c = BrokerConfig::from_properties(props(&[
            ("max.connections.per.ip", "0"),
            ("max.connections.per.ip.overrides", "127.0.0.1:3"),
        ]))
        .unwrap();
        assert_eq!(
            c.connection_limits.limit_for("127.0.0.4".parse().unwrap()),
            0
        );
    }

    #[test]
    fn parses_kafka_names() {
        let c = BrokerConfig::from_properties(props(&[
            ("listeners", "PLAINTEXT://0.0.0.0:19092"),
            ("advertised.listeners", "PLAINTEXT://broker.example:19092"),
            ("broker.id", "7"),
            ("log.dir", "/a"),
            ("log.dirs", "/b, /c"),
            ("num.partitions", "3"),
            ("auto.create.topics.enable", "false"),
            ("strata.durable.append", "true"),
            ("broker.rack", "r1"),
        ]))
        .unwrap();
        assert_eq!(c.listeners[0].port, 19092);
        assert_eq!(c.advertised_listeners[0].host, "broker.example");
        assert_eq!(c.node_id, 7);
        assert_eq!(c.log_dirs, vec![PathBuf::from("/b"), PathBuf::from("/c")]);
        assert_eq!(c.num_partitions, 3);
        assert!(!c.auto_create_topics_enable);
        assert!(c.log_config.durable_append);
        assert_eq!(c.rack.as_deref(), Some("r1"));
    }

    #[test]
    fn log_format_is_text_or_json_and_names_the_key_when_bad() {
        assert_eq!(BrokerConfig::default().log_format, LogFormat::Text);
        let c = BrokerConfig::from_properties(props(&[("strata.log.format", "json")])).unwrap();
        assert_eq!(c.log_format, LogFormat::Json);
        let err =
            BrokerConfig::from_properties(props(&[("strata.log.format", "JSON-ish")])).unwrap_err();
        assert_eq!(err_name(&err), "strata.log.format");
        let text = err.to_string();
        assert!(text.contains("text, json"), "{text}");
    }

    #[test]
    fn replica_selector_class_takes_the_rack_aware_selector_only() {
        assert_eq!(BrokerConfig::default().replication.replica_selector, None);
        for name in [
            "org.apache.kafka.common.replica.RackAwareReplicaSelector",
            "RackAwareReplicaSelector",
        ] {
            let c =
                BrokerConfig::from_properties(props(&[("replica.selector.class", name)])).unwrap();
            assert_eq!(
                c.replication.replica_selector,
                Some(ReplicaSelector::RackAware)
            );
        }
        let err = BrokerConfig::from_properties(props(&[(
            "replica.selector.class",
            "com.example.MySelector",
        )]))
        .unwrap_err();
        assert_eq!(err_name(&err), "replica.selector.class");
        assert!(err.to_string().contains("com.example.MySelector"), "{err}");
    }

    #[test]
    fn retention_schedule_and_cleaner_settings_are_parsed_and_validated() {
        let c = BrokerConfig::default();
        assert_eq!(c.log_retention_check_interval_ms, 300_000);
        let c = BrokerConfig::from_properties(props(&[
            ("log.retention.check.interval.ms", "1500"),
            ("log.cleaner.threads", "2"),
        ]))
        .unwrap();
        assert_eq!(c.log_retention_check_interval_ms, 1500);
        assert_eq!(c.cleaner.threads, 2);
        let err = BrokerConfig::from_properties(props(&[("log.retention.check.interval.ms", "0")]))
            .unwrap_err();
        assert!(err_name(&err) == "log.retention.check.interval.ms");
        let err =
            BrokerConfig::from_properties(props(&[("log.cleaner.threads", "many")])).unwrap_err();
        assert_eq!(err_name(&err), "log.cleaner.threads");
    }

    #[test]
    fn dedupe_buffer_below_1mb_per_cleaner_thread_refuses_to_start() {
        // Kafka: dedupe.buffer.size / threads must be > 1 MiB.
        let c = BrokerConfig::from_properties(props(&[
            ("log.cleaner.threads", "2"),
            ("log.cleaner.dedupe.buffer.size", "4194304"),
        ]))
        .unwrap();
        assert_eq!(c.cleaner.dedupe_buffer_size, 4_194_304);
        for (threads, size) in [("1", "1048576"), ("4", "4194304"), ("2", "1000")] {
            let err = BrokerConfig::from_properties(props(&[
                ("log.cleaner.threads", threads),
                ("log.cleaner.dedupe.buffer.size", size),
            ]))
            .unwrap_err();
            let ConfigError::Invalid(strata_log::ConfigError::InvalidValue { name, value, .. }) =
                &err
            else {
                panic!("unexpected {err:?}");
            };
            assert_eq!(*name, "log.cleaner.dedupe.buffer.size");
            assert_eq!(value, size);
            let text = strata_log::ErrorChain(&err).to_string();
            assert!(text.contains("log.cleaner.dedupe.buffer.size"), "{text}");
            assert!(text.contains(size), "{text}");
            assert!(text.contains("at least 1MB per cleaner thread"), "{text}");
        }
        // No cleaner threads: nothing to divide, as the cleaner never runs.
        BrokerConfig::from_properties(props(&[
            ("log.cleaner.threads", "0"),
            ("log.cleaner.dedupe.buffer.size", "1000"),
        ]))
        .unwrap();
    }

    #[test]
    fn max_decompressed_batch_bytes_is_a_validated_broker_setting() {
        let c = BrokerConfig::default();
        assert_eq!(
            c.log_config.max_decompressed_batch_bytes,
            strata_log::batch::compression::DEFAULT_MAX_DECOMPRESSED
        );
        assert_eq!(c.log_config.max_decompressed_batch_bytes, 64 << 20);
        let c = BrokerConfig::from_properties(props(&[(
            "strata.max.decompressed.batch.bytes",
            "4096",
        )]))
        .unwrap();
        assert_eq!(c.log_config.max_decompressed_batch_bytes, 4096);
        for bad in ["0", "-1", "lots"] {
            let err = BrokerConfig::from_properties(props(&[(
                "strata.max.decompressed.batch.bytes",
                bad,
            )]))
            .unwrap_err();
            let named = err_name(&err);
            assert_eq!(named, "strata.max.decompressed.batch.bytes", "{bad}");
        }
    }

    #[test]
    fn errors_name_property_and_value() {
        let err = BrokerConfig::from_properties(props(&[("num.partitions", "zero")])).unwrap_err();
        match err {
            ConfigError::Invalid(strata_log::ConfigError::InvalidValue { name, value, .. }) => {
                assert_eq!(name, "num.partitions");
                assert_eq!(value, "zero");
            }
            other => panic!("unexpected {other:?}"),
        }
        let err =
            BrokerConfig::from_properties(props(&[("listeners", "CLIENT://h:1")])).unwrap_err();
        assert_eq!(err_name(&err), "listeners");
        assert!(err.to_string().contains("no security protocol"), "{err}");
        let err = BrokerConfig::from_properties(props(&[
            ("listeners", "PLAINTEXT://h:1"),
            ("advertised.listeners", "SSL://h:2"),
        ]))
        .unwrap_err();
        assert_eq!(err_name(&err), "advertised.listeners");
        let err = BrokerConfig::from_properties(props(&[("node.id", "1"), ("broker.id", "2")]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid value "2" for broker.id: must equal node.id (1) when both are set"#
        );
        let err = BrokerConfig::from_properties(props(&[("max.connections", "0")])).unwrap_err();
        assert!(err_name(&err) == "max.connections");
    }

    #[test]
    fn several_listeners_with_protocols_and_an_inter_broker_one() {
        let c = BrokerConfig::from_properties(props(&[
            (
                "listeners",
                "INTERNAL://127.0.0.1:9092,EXTERNAL://0.0.0.0:9093",
            ),
            (
                "listener.security.protocol.map",
                "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
            ),
            ("advertised.listeners", "EXTERNAL://kafka.example:9093"),
            ("inter.broker.listener.name", "INTERNAL"),
            ("listener.name.external.sasl.enabled.mechanisms", "PLAIN"),
        ]))
        .unwrap();
        assert_eq!(c.listeners.len(), 2);
        assert_eq!(c.listeners[1].protocol, SecurityProtocol::SaslSsl);
        assert_eq!(c.advertised_listeners[0].host, "kafka.example");
        assert_eq!(c.inter_broker_listener, "INTERNAL");
        assert_eq!(c.security.sasl["EXTERNAL"].mechanisms, ["PLAIN"]);
        let secret =
            BrokerConfig::from_properties(props(&[("ssl.keystore.password", "s3cret-pw")]))
                .unwrap();
        assert!(
            !format!("{secret:?}").contains("s3cret-pw"),
            "Debug shows a password"
        );
        // A SASL listener without a served mechanism is refused at load.
        let err =
            BrokerConfig::from_properties(props(&[("listeners", "SASL_SSL://h:1")])).unwrap_err();
        assert!(err.to_string().contains("GSSAPI"), "{err}");
        // Cluster brokers need an inter-broker listener that exists, PLAINTEXT for now.
        let err = BrokerConfig::from_properties(props(&[
            ("listeners", "SSL://h:1"),
            ("strata.metadata.etcd.endpoints", "http://127.0.0.1:2379"),
        ]))
        .unwrap_err();
        assert_eq!(err_name(&err), "inter.broker.listener.name");
        let err = BrokerConfig::from_properties(props(&[
            ("listeners", "PLAINTEXT://h:1,SSL://h:2"),
            ("inter.broker.listener.name", "SSL"),
            ("strata.metadata.etcd.endpoints", "http://127.0.0.1:2379"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("PLAINTEXT only"), "{err}");
    }

    #[test]
    fn load_layers_overrides_over_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(&path, "num.partitions=4\nlog.dirs=/from-file\n").unwrap();
        let c = BrokerConfig::load(Some(&path), &["num.partitions=6".to_string()]).unwrap();
        assert_eq!(c.num_partitions, 6);
        assert_eq!(c.log_dirs, vec![PathBuf::from("/from-file")]);
        assert!(matches!(
            BrokerConfig::load(Some(&dir.path().join("missing")), &[]),
            Err(ConfigError::Properties(PropertiesError::Read { .. }))
        ));
    }
}
