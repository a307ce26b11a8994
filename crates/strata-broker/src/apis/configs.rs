//! Config entries as DescribeConfigs and CreateTopics (v5+) report them:
//! name, value, source, synonyms, type and documentation, for topics (every
//! topic config Kafka 3.9 knows, from `LogConfig::definitions`) and for the
//! broker (the properties `BrokerConfig` reads plus the broker synonyms of
//! the topic configs).

use strata_log::{ConfigDef, ConfigType, LogConfig};

use crate::broker::Broker;
use crate::topics::TopicInfo;

/// DescribeConfigs `config_source` values.
pub(crate) mod source {
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// DescribeConfigs resource types.
pub(crate) mod resource {
    pub const TOPIC: i8 = 2;
    pub const BROKER: i8 = 4;
}

/// One described config.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
    pub read_only: bool,
    /// (name, value, source), highest precedence first.
    pub synonyms: Vec<(String, Option<String>, i8)>,
    /// DescribeConfigs `config_type`: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7.
    pub config_type: i8,
    pub doc: &'static str,
}

pub(crate) fn config_type(kind: ConfigType) -> i8 {
    match kind {
        ConfigType::Boolean => 1,
        ConfigType::String => 2,
        ConfigType::Int => 3,
        ConfigType::Long => 5,
        ConfigType::Double => 6,
        ConfigType::List => 7,
    }
}

/// Every config of `info`, as Kafka lists them for a topic.
pub(crate) fn topic_entries(broker: &Broker, info: &TopicInfo) -> Vec<ConfigEntry> {
    let effective = broker.topic_config(info);
    LogConfig::definitions()
        .iter()
        .map(|def| topic_entry(broker, info, &effective, def))
        .collect()
}

fn topic_entry(
    broker: &Broker,
    info: &TopicInfo,
    effective: &LogConfig,
    def: &ConfigDef,
) -> ConfigEntry {
    let mut synonyms = Vec::new();
    if let Some(v) = info.configs.get(def.name) {
        synonyms.push((
            def.name.to_string(),
            Some(v.clone()),
            source::DYNAMIC_TOPIC_CONFIG,
        ));
    }
    for (syn, _) in def.synonyms {
        if let Some(v) = broker.config.properties.get(*syn) {
            synonyms.push((
                syn.to_string(),
                Some(v.clone()),
                source::STATIC_BROKER_CONFIG,
            ));
        }
    }
    if let Some((first, _)) = def.synonyms.first() {
        synonyms.push((
            first.to_string(),
            Some(def.default.to_string()),
            source::DEFAULT_CONFIG,
        ));
    }
    let source = synonyms
        .first()
        .map(|s| s.2)
        .unwrap_or(source::DEFAULT_CONFIG);
    // An override is shown as the user wrote it (Kafka keeps the string);
    // otherwise the effective value as Kafka prints it.
    let value = match info.configs.get(def.name) {
        Some(v) => v.clone(),
        None => effective
            .get_as_string(def.name)
            .unwrap_or_else(|| def.default.to_string()),
    };
    ConfigEntry {
        name: def.name.to_string(),
        value: Some(value),
        source,
        read_only: false,
        synonyms,
        config_type: config_type(def.kind),
        doc: def.doc,
    }
}

/// Broker-level properties the broker reads, with their effective values.
pub(crate) fn broker_entries(broker: &Broker) -> Vec<ConfigEntry> {
    let c = &broker.config;
    let listener = |l: &crate::config::Listener| format!("{}://{}:{}", l.name, l.host, l.port);
    let own: Vec<(&str, String, i8, &'static str)> = vec![
        (
            "listeners",
            listener(&c.listener),
            7,
            "Listener URIs to bind.",
        ),
        (
            "advertised.listeners",
            listener(&broker.advertised),
            7,
            "Listeners published to clients.",
        ),
        (
            "node.id",
            c.node_id.to_string(),
            3,
            "The node id of this server.",
        ),
        (
            "broker.id",
            c.node_id.to_string(),
            3,
            "The broker id of this server.",
        ),
        (
            "log.dirs",
            c.log_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
            2,
            "Directories in which the log data is kept.",
        ),
        (
            "num.partitions",
            c.num_partitions.to_string(),
            3,
            "Default number of partitions per topic.",
        ),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
            3,
            "Default replication factor for automatically created topics.",
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics_enable.to_string(),
            1,
            "Enable auto creation of topics on the server.",
        ),
        (
            "socket.request.max.bytes",
            c.socket_request_max_bytes.to_string(),
            3,
            "The maximum number of bytes in a socket request.",
        ),
        (
            "max.connections",
            c.max_connections.to_string(),
            3,
            "Maximum connections to the broker.",
        ),
        (
            "num.recovery.threads.per.data.dir",
            c.num_recovery_threads_per_data_dir.to_string(),
            3,
            "Threads per data directory for log recovery at startup and flushing at shutdown.",
        ),
        (
            "offsets.topic.num.partitions",
            c.offsets_topic_num_partitions.to_string(),
            3,
            "The number of partitions for the offset commit topic.",
        ),
    ];
    let mut out: Vec<ConfigEntry> = own
        .into_iter()
        .map(|(name, value, ty, doc)| {
            let source = if c.properties.contains_key(name) {
                source::STATIC_BROKER_CONFIG
            } else {
                source::DEFAULT_CONFIG
            };
            ConfigEntry {
                name: name.to_string(),
                value: Some(value.clone()),
                source,
                read_only: true,
                synonyms: vec![(name.to_string(), Some(value), source)],
                config_type: ty,
                doc,
            }
        })
        .collect();
    if let Some(rack) = &c.rack {
        out.push(ConfigEntry {
            name: "broker.rack".into(),
            value: Some(rack.clone()),
            source: source::STATIC_BROKER_CONFIG,
            read_only: true,
            synonyms: vec![],
            config_type: 2,
            doc: "Rack of the broker.",
        });
    }
    // Every broker synonym of every topic config: set ones are static broker
    // configs; the unit-1 synonym otherwise shows the effective default, other
    // unit synonyms (log.retention.hours, ...) show no value, as in Kafka.
    for def in LogConfig::definitions() {
        for (i, (name, factor)) in def.synonyms.iter().enumerate() {
            if out.iter().any(|e| e.name == *name) {
                continue;
            }
            let (value, source) = match c.properties.get(*name) {
                Some(v) => (Some(v.clone()), source::STATIC_BROKER_CONFIG),
                None if *factor == 1
                    && (i == 0 || def.synonyms[..i].iter().all(|(_, f)| *f != 1)) =>
                {
                    (
                        Some(
                            c.log_config
                                .get_as_string(def.name)
                                .unwrap_or_else(|| def.default.to_string()),
                        ),
                        source::DEFAULT_CONFIG,
                    )
                }
                None => (None, source::DEFAULT_CONFIG),
            };
            out.push(ConfigEntry {
                name: name.to_string(),
                value: value.clone(),
                source,
                read_only: false,
                synonyms: vec![(name.to_string(), value, source)],
                config_type: config_type(def.kind),
                doc: def.doc,
            });
        }
    }
    out
}
