//! Topic config entries as DescribeConfigs and CreateTopics (v5+) report
//! them (the entry type is `crate::config_entry`). Topics are built
//! here (every topic config Kafka 3.9 knows, from `LogConfig::definitions`,
//! over the static and dynamic broker defaults); broker resources in
//! `crate::dynamic_config` (describe).

use strata_log::{ConfigDef, LogConfig};

use crate::broker::Broker;
use crate::config_entry::{config_type, source, ConfigEntry};
use crate::topics::TopicInfo;

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
    synonyms.extend(crate::dynamic_config::log_synonyms(&broker.dynamic, def));
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
