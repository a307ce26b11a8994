//! Broker configuration: Kafka's `server.properties` names and defaults,
//! parsed, defaulted and validated in one pass ([`BrokerConfig::from_properties`]).
//!
//! Every property the broker itself reads is parsed here and nowhere else.
//! Topic-level defaults (`log.*`, `message.max.bytes`, ...) are handed whole
//! to `strata_log::LogConfig::from_broker_properties`, which owns those names.
//! Unknown properties are kept (they show up in DescribeConfigs as static
//! broker configs) and logged, as Kafka does.
//!
//! Defaults that differ from Kafka's are listed in `docs/differences-from-kafka.md`:
//! `node.id` defaults to 1 (the value of Kafka's KRaft sample config; Kafka has no
//! default), `log.dirs` to `./strata-data` (Kafka: `/tmp/kafka-logs`),
//! `max.connections` to 1000 (Kafka: unbounded).

use std::collections::BTreeMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use strata_log::LogConfig;
use thiserror::Error;

use crate::properties;

/// Default listener when `listeners` is not set.
pub const DEFAULT_LISTENERS: &str = "PLAINTEXT://127.0.0.1:9092";
/// Default data directory when neither `log.dirs` nor `log.dir` is set.
pub const DEFAULT_LOG_DIR: &str = "./strata-data";

/// A configuration problem; every variant names the property (or file) at fault.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("invalid value {value:?} for configuration {name}: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: &'static str,
    },
    #[error("conflicting values for {name} ({value:?}) and {other} ({other_value:?})")]
    Conflict {
        name: &'static str,
        value: String,
        other: &'static str,
        other_value: String,
    },
    #[error("cannot read properties file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("syntax error in {path} at line {line}")]
    Syntax { path: PathBuf, line: usize },
    #[error("override {pair:?} is not of the form key=value")]
    BadOverride { pair: String },
    #[error("invalid log (topic default) configuration")]
    Log(#[from] strata_log::ConfigError),
    #[error("invalid log cleaner configuration")]
    Cleaner(#[from] strata_log::cleaner::CleanerConfigError),
}

/// One listener endpoint: `NAME://host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// Listener name; also the security protocol (only `PLAINTEXT` is served).
    pub name: String,
    /// Host to bind (empty = all interfaces) or to advertise.
    pub host: String,
    pub port: u16,
}

impl Listener {
    /// Parse `PLAINTEXT://host:port` (IPv6 hosts in brackets).
    fn parse(prop: &str, value: &str) -> Result<Listener, ConfigError> {
        let bad = |reason| ConfigError::InvalidValue {
            name: prop.to_string(),
            value: value.to_string(),
            reason,
        };
        let (name, rest) = value
            .split_once("://")
            .ok_or_else(|| bad("expected LISTENER_NAME://host:port"))?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("expected LISTENER_NAME://host:port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| bad("port is not a number in 0..=65535"))?;
        if name.trim() != "PLAINTEXT" {
            return Err(bad("only PLAINTEXT listeners are supported"));
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        Ok(Listener {
            name: name.trim().to_string(),
            host,
            port,
        })
    }

    /// `host:port` suitable for binding.
    pub fn bind_address(&self) -> String {
        let host = if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        };
        if host.contains(':') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// The broker's typed configuration.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// `listeners`: the single PLAINTEXT listener served.
    pub listener: Listener,
    /// `advertised.listeners`: what Metadata tells clients; defaults to the
    /// bound listener (with `0.0.0.0`/empty host replaced by `127.0.0.1`).
    pub advertised_listener: Option<Listener>,
    /// `node.id` / `broker.id` (default 1).
    pub node_id: i32,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// `log.dirs` (or `log.dir`), comma separated.
    pub log_dirs: Vec<PathBuf>,
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
    /// `message.max.bytes` (also the broker default of topic `max.message.bytes`).
    pub message_max_bytes: i32,
    /// `num.recovery.threads.per.data.dir`.
    pub num_recovery_threads_per_data_dir: usize,
    /// `log.segment.delete.delay.ms` (`file.delete.delay.ms` for topics).
    pub log_segment_delete_delay_ms: i64,
    /// `log.flush.offset.checkpoint.interval.ms`.
    pub log_flush_offset_checkpoint_interval_ms: i64,
    /// `log.flush.start.offset.checkpoint.interval.ms`.
    pub log_flush_start_offset_checkpoint_interval_ms: i64,
    /// `offsets.topic.num.partitions` (used by the group coordinator).
    pub offsets_topic_num_partitions: i32,
    /// `strata.durable.append`: fsync before acknowledging acks=all/1 writes.
    pub durable_append: bool,
    /// `cluster.id`; when unset one is generated once and kept in the topic store.
    pub cluster_id: Option<String>,
    /// Topic-level defaults derived from the `log.*` and related broker properties.
    pub log_config: LogConfig,
    /// `log.retention.check.interval.ms`: how often the retention pass runs (default 300 000).
    pub log_retention_check_interval_ms: i64,
    /// The `log.cleaner.*` settings of the compaction threads.
    pub cleaner: strata_log::cleaner::CleanerConfig,
    /// Every property given (file then overrides), for DescribeConfigs.
    pub properties: BTreeMap<String, String>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig::from_properties(BTreeMap::new()).expect("built-in defaults are valid")
    }
}

impl BrokerConfig {
    /// Read `path` (if any), apply `overrides` (`key=value`, later wins), validate.
    ///
    /// # Errors
    /// The file cannot be read or parsed, an override is malformed, or a value is invalid.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<BrokerConfig, ConfigError> {
        let mut props = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.to_path_buf(),
                    source,
                })?;
                properties::parse(&text, p)?
            }
            None => BTreeMap::new(),
        };
        for pair in overrides {
            let (k, v) = properties::parse_override(pair)?;
            props.insert(k, v);
        }
        BrokerConfig::from_properties(props)
    }

    /// Build and validate a configuration from property names to values.
    ///
    /// # Errors
    /// [`ConfigError::InvalidValue`] naming the first bad property.
    pub fn from_properties(props: BTreeMap<String, String>) -> Result<BrokerConfig, ConfigError> {
        let p = Props(&props);
        let listeners = p.str("listeners").unwrap_or(DEFAULT_LISTENERS);
        let listener = single_listener("listeners", listeners)?;
        let advertised_listener = match p.str("advertised.listeners") {
            Some(v) => Some(single_listener("advertised.listeners", v)?),
            None => None,
        };
        let node_id = match (p.get::<i32>("node.id")?, p.get::<i32>("broker.id")?) {
            (Some(a), Some(b)) if a != b => {
                return Err(ConfigError::Conflict {
                    name: "node.id",
                    value: a.to_string(),
                    other: "broker.id",
                    other_value: b.to_string(),
                })
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => 1,
        };
        if node_id < 0 {
            return Err(p.invalid("node.id", "must be >= 0"));
        }
        let log_dirs_value = p
            .str("log.dirs")
            .or_else(|| p.str("log.dir"))
            .unwrap_or(DEFAULT_LOG_DIR);
        let log_dirs: Vec<PathBuf> = log_dirs_value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if log_dirs.is_empty() {
            return Err(ConfigError::InvalidValue {
                name: "log.dirs".into(),
                value: log_dirs_value.into(),
                reason: "no directory given",
            });
        }
        let num_partitions = p.get_or("num.partitions", 1i32)?;
        if num_partitions < 1 {
            return Err(p.invalid("num.partitions", "must be >= 1"));
        }
        let default_replication_factor = p.get_or("default.replication.factor", 1i16)?;
        if default_replication_factor < 1 {
            return Err(p.invalid("default.replication.factor", "must be >= 1"));
        }
        let socket_request_max_bytes = p.get_or("socket.request.max.bytes", 104_857_600i32)?;
        if socket_request_max_bytes < 1 {
            return Err(p.invalid("socket.request.max.bytes", "must be >= 1"));
        }
        let max_connections = p.get_or("max.connections", 1000i32)?;
        if max_connections < 1 {
            return Err(p.invalid("max.connections", "must be >= 1"));
        }
        let idle_ms = p.get_or("connections.max.idle.ms", 600_000i64)?;
        if idle_ms < 1 {
            return Err(p.invalid("connections.max.idle.ms", "must be >= 1"));
        }
        let receive_ms = p.get_or("strata.request.receive.timeout.ms", 30_000i64)?;
        if receive_ms < 1 {
            return Err(p.invalid("strata.request.receive.timeout.ms", "must be >= 1"));
        }
        let connection_limits = ConnectionLimits::parse(&p)?;
        let backlog = p.get_or("socket.listen.backlog.size", 50i32)?;
        if backlog < 1 {
            return Err(p.invalid("socket.listen.backlog.size", "must be >= 1"));
        }
        let max_partitions = p.get_or("strata.max.partitions", 100_000i32)?;
        if max_partitions < 1 {
            return Err(p.invalid("strata.max.partitions", "must be >= 1"));
        }
        let message_max_bytes = p.get_or("message.max.bytes", 1_048_588i32)?;
        if message_max_bytes < 0 {
            return Err(p.invalid("message.max.bytes", "must be >= 0"));
        }
        let recovery = p.get_or("num.recovery.threads.per.data.dir", 1i32)?;
        if recovery < 1 {
            return Err(p.invalid("num.recovery.threads.per.data.dir", "must be >= 1"));
        }
        let delete_delay = p.get_or("log.segment.delete.delay.ms", 60_000i64)?;
        if delete_delay < 0 {
            return Err(p.invalid("log.segment.delete.delay.ms", "must be >= 0"));
        }
        let offsets_partitions = p.get_or("offsets.topic.num.partitions", 50i32)?;
        if offsets_partitions < 1 {
            return Err(p.invalid("offsets.topic.num.partitions", "must be >= 1"));
        }
        let cluster_id = p.str("cluster.id").map(str::to_string);
        if let Some(id) = &cluster_id {
            if id.is_empty() {
                return Err(p.invalid("cluster.id", "must not be empty"));
            }
        }
        let log_config = LogConfig::from_broker_properties(&props)?;
        let retention_check = p.get_or("log.retention.check.interval.ms", 300_000i64)?;
        if retention_check < 1 {
            return Err(p.invalid("log.retention.check.interval.ms", "must be >= 1"));
        }
        let cleaner = strata_log::cleaner::CleanerConfig::from_properties(&props)?;
        let config = BrokerConfig {
            listener,
            advertised_listener,
            node_id,
            rack: p.str("broker.rack").map(str::to_string),
            log_dirs,
            num_partitions,
            default_replication_factor,
            auto_create_topics_enable: p.get_or("auto.create.topics.enable", true)?,
            socket_request_max_bytes: socket_request_max_bytes as usize,
            max_connections: max_connections as usize,
            connections_max_idle_ms: idle_ms as u64,
            request_receive_timeout_ms: receive_ms as u64,
            connection_limits,
            socket_listen_backlog_size: backlog as u32,
            max_partitions: max_partitions as usize,
            message_max_bytes,
            num_recovery_threads_per_data_dir: recovery as usize,
            log_segment_delete_delay_ms: delete_delay,
            log_flush_offset_checkpoint_interval_ms: p
                .get_or("log.flush.offset.checkpoint.interval.ms", 60_000i64)?,
            log_flush_start_offset_checkpoint_interval_ms: p
                .get_or("log.flush.start.offset.checkpoint.interval.ms", 60_000i64)?,
            offsets_topic_num_partitions: offsets_partitions,
            durable_append: p.get_or("strata.durable.append", false)?,
            cluster_id,
            log_config,
            log_retention_check_interval_ms: retention_check,
            cleaner,
            properties: props.clone(),
        };
        for name in props.keys() {
            if !is_known(name) {
                tracing::warn!(property = %name, "unknown broker configuration (kept, not used)");
            }
        }
        Ok(config)
    }
}

/// Broker properties parsed here (or known and deliberately unused).
pub(crate) const BROKER_PROPERTIES: &[&str] = &[
    "listeners",
    "advertised.listeners",
    "node.id",
    "broker.id",
    "broker.rack",
    "log.dirs",
    "log.dir",
    "num.partitions",
    "default.replication.factor",
    "auto.create.topics.enable",
    "socket.request.max.bytes",
    "max.connections",
    "connections.max.idle.ms",
    "strata.request.receive.timeout.ms",
    "strata.max.partitions",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "socket.listen.backlog.size",
    "message.max.bytes",
    "num.recovery.threads.per.data.dir",
    "log.segment.delete.delay.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms",
    "offsets.topic.num.partitions",
    "strata.durable.append",
    // Parsed with the log defaults (`LogConfig::from_broker_properties`),
    // like `producer.id.expiration.ms`, so dynamic recomputation keeps it.
    strata_log::config::MAX_DECOMPRESSED_BATCH_BYTES,
    "producer.id.expiration.ms",
    "cluster.id",
    "process.roles",
    "controller.quorum.voters",
    "controller.listener.names",
    "inter.broker.listener.name",
    "listener.security.protocol.map",
];

/// Names parsed here, plus anything `log.*`-like that LogConfig reads.
fn is_known(name: &str) -> bool {
    BROKER_PROPERTIES.contains(&name)
        || name.starts_with("log.")
        || crate::group::config::GroupConfig::is_known(name)
        || strata_tiered::config::is_tiered_property(name)
        || LogConfig::definitions()
            .iter()
            .any(|d| d.name == name || d.synonyms.iter().any(|(s, _)| *s == name))
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

    fn parse(p: &Props<'_>) -> Result<ConnectionLimits, ConfigError> {
        const OVERRIDES: &str = "max.connections.per.ip.overrides";
        let per_ip = p.get_or("max.connections.per.ip", i32::MAX)?;
        let mut overrides = BTreeMap::new();
        for entry in p.str(OVERRIDES).unwrap_or("").split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let bad = |reason| ConfigError::InvalidValue {
                name: OVERRIDES.to_string(),
                value: p.str(OVERRIDES).unwrap_or_default().to_string(),
                reason,
            };
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
        if per_ip < 0 {
            return Err(p.invalid("max.connections.per.ip", "must be >= 0"));
        }
        if per_ip == 0 && overrides.is_empty() {
            return Err(p.invalid(
                "max.connections.per.ip",
                "may be 0 only when max.connections.per.ip.overrides is set",
            ));
        }
        Ok(ConnectionLimits {
            per_ip: per_ip as usize,
            overrides,
        })
    }
}

fn single_listener(prop: &str, value: &str) -> Result<Listener, ConfigError> {
    let parts: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    match parts.as_slice() {
        [one] => Listener::parse(prop, one),
        _ => Err(ConfigError::InvalidValue {
            name: prop.to_string(),
            value: value.to_string(),
            reason: "exactly one PLAINTEXT listener is supported",
        }),
    }
}

/// Typed access to the raw property map; every error names the property.
struct Props<'a>(&'a BTreeMap<String, String>);

impl Props<'_> {
    fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|s| s.trim())
    }

    fn invalid(&self, name: &str, reason: &'static str) -> ConfigError {
        ConfigError::InvalidValue {
            name: name.to_string(),
            value: self.str(name).unwrap_or_default().to_string(),
            reason,
        }
    }

    fn get<T: FromStr>(&self, name: &str) -> Result<Option<T>, ConfigError> {
        match self.str(name) {
            None => Ok(None),
            Some(v) => v
                .parse::<T>()
                .map(Some)
                .map_err(|_| self.invalid(name, "not a valid value of the expected type")),
        }
    }

    fn get_or<T: FromStr>(&self, name: &str, default: T) -> Result<T, ConfigError> {
        Ok(self.get(name)?.unwrap_or(default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_match_the_documented_values() {
        let c = BrokerConfig::default();
        assert_eq!(c.listener.bind_address(), "127.0.0.1:9092");
        assert_eq!(c.node_id, 1);
        assert_eq!(c.log_dirs, vec![PathBuf::from(DEFAULT_LOG_DIR)]);
        assert_eq!(c.num_partitions, 1);
        assert_eq!(c.default_replication_factor, 1);
        assert!(c.auto_create_topics_enable);
        assert_eq!(c.socket_request_max_bytes, 104_857_600);
        assert_eq!(c.max_connections, 1000);
        assert_eq!(c.message_max_bytes, 1_048_588);
        assert_eq!(c.offsets_topic_num_partitions, 50);
        assert!(!c.durable_append);
        assert_eq!(c.log_config, LogConfig::default());
        assert_eq!(c.connections_max_idle_ms, 600_000);
        assert_eq!(c.request_receive_timeout_ms, 30_000);
        assert_eq!(c.connection_limits, ConnectionLimits::default());
        assert_eq!(c.socket_listen_backlog_size, 50);
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
            assert!(
                matches!(err, ConfigError::InvalidValue { ref name, .. } if name == key),
                "{key}={value}: {err}"
            );
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
        assert_eq!(c.listener.port, 19092);
        assert_eq!(c.advertised_listener.unwrap().host, "broker.example");
        assert_eq!(c.node_id, 7);
        assert_eq!(c.log_dirs, vec![PathBuf::from("/b"), PathBuf::from("/c")]);
        assert_eq!(c.num_partitions, 3);
        assert!(!c.auto_create_topics_enable);
        assert!(c.durable_append);
        assert_eq!(c.rack.as_deref(), Some("r1"));
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
        assert!(
            matches!(err, ConfigError::InvalidValue { ref name, .. } if name == "log.retention.check.interval.ms")
        );
        let err =
            BrokerConfig::from_properties(props(&[("log.cleaner.threads", "many")])).unwrap_err();
        assert!(matches!(err, ConfigError::Cleaner(ref e) if e.name == "log.cleaner.threads"));
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
            let ConfigError::Cleaner(e) = &err else {
                panic!("unexpected {err:?}");
            };
            assert_eq!(e.name, "log.cleaner.dedupe.buffer.size");
            assert_eq!(e.value, size);
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
            let named = match &err {
                ConfigError::Log(strata_log::ConfigError::InvalidValue { name, .. })
                | ConfigError::Log(strata_log::ConfigError::OutOfRange { name, .. }) => *name,
                other => panic!("{bad}: unexpected {other:?}"),
            };
            assert_eq!(named, "strata.max.decompressed.batch.bytes", "{bad}");
        }
    }

    #[test]
    fn errors_name_property_and_value() {
        let err = BrokerConfig::from_properties(props(&[("num.partitions", "zero")])).unwrap_err();
        match err {
            ConfigError::InvalidValue { name, value, .. } => {
                assert_eq!(name, "num.partitions");
                assert_eq!(value, "zero");
            }
            other => panic!("unexpected {other:?}"),
        }
        let err = BrokerConfig::from_properties(props(&[("listeners", "SSL://h:1")])).unwrap_err();
        assert!(matches!(err, ConfigError::InvalidValue { ref name, .. } if name == "listeners"));
        let err = BrokerConfig::from_properties(props(&[("node.id", "1"), ("broker.id", "2")]))
            .unwrap_err();
        assert!(matches!(err, ConfigError::Conflict { .. }));
        let err = BrokerConfig::from_properties(props(&[("max.connections", "0")])).unwrap_err();
        assert!(
            matches!(err, ConfigError::InvalidValue { ref name, .. } if name == "max.connections")
        );
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
            Err(ConfigError::Read { .. })
        ));
    }
}
