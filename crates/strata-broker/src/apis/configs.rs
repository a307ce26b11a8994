//! Config entries as DescribeConfigs and CreateTopics (v5+) report them:
//! name, value, source, synonyms, type and documentation. Topics are built
//! here (every topic config Kafka 3.9 knows, from `LogConfig::definitions`,
//! over the static and dynamic broker defaults); broker resources in
//! `crate::dynamic_config` (describe).

use strata_log::{ConfigDef, ConfigType, LogConfig};

use crate::broker::Broker;
use crate::topics::TopicInfo;

/// DescribeConfigs `config_source` values.
pub(crate) mod source {
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
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
    synonyms.extend(crate::dynamic_config::log_synonyms(broker, def));
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

/// IncrementalAlterConfigs APPEND (`append`) or SUBTRACT of the comma-separated
/// items of `value` to or from the list `existing`, as Kafka applies them:
/// appended items that are already present are not repeated.
pub(crate) fn apply_list_op(existing: &str, value: &str, append: bool) -> String {
    let mut items: Vec<&str> = split_list(existing).collect();
    for item in split_list(value) {
        if append {
            if !items.contains(&item) {
                items.push(item);
            }
        } else {
            items.retain(|i| *i != item);
        }
    }
    items.join(",")
}

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

#[cfg(test)]
mod list_op_tests {
    use super::apply_list_op;

    #[test]
    fn append_skips_present_items_and_subtract_removes_every_copy() {
        assert_eq!(apply_list_op("delete", "compact", true), "delete,compact");
        assert_eq!(
            apply_list_op("delete", " delete ,compact", true),
            "delete,compact"
        );
        assert_eq!(apply_list_op("", "compact", true), "compact");
        assert_eq!(
            apply_list_op("delete,compact,delete", "delete", false),
            "compact"
        );
        assert_eq!(apply_list_op("compact", "delete", false), "compact");
        assert_eq!(apply_list_op("a,,b", "", true), "a,b");
    }
}
