//! Group coordinator settings (Kafka `GroupCoordinatorConfig`): one
//! definition table with Kafka's names and defaults, parsed and validated
//! once, at start, with the rest of the broker's configuration.

use std::collections::BTreeMap;

use strata_log::config::{
    apply, defaults, resolved, ConfigDef, ConfigError, ConfigType, Validator, Value,
};

/// Typed coordinator configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms` (6000).
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms` (1800000).
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms` (3000).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size` (Integer.MAX_VALUE).
    pub max_size: usize,
    /// `offsets.retention.minutes` (10080) in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms` (600000).
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes` (4096).
    pub offset_metadata_max_bytes: usize,
    /// `offsets.topic.num.partitions` (50).
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.segment.bytes` (104857600).
    pub offsets_topic_segment_bytes: i32,
    /// `offsets.topic.replication.factor` (3; cluster mode only: a single
    /// node has one replica).
    pub offsets_topic_replication_factor: i16,
}

fn usize_of(v: &Value) -> usize {
    usize::try_from(v.long()).unwrap_or(0)
}

type Def = ConfigDef<GroupConfig>;

static TABLE: &[Def] = &[
    Def::new(
        "group.min.session.timeout.ms",
        ConfigType::Int,
        "6000",
        Validator::Any,
        "The minimum allowed session timeout for registered consumers.",
        |c, v| c.min_session_timeout_ms = v.int(),
        |c| c.min_session_timeout_ms.to_string(),
    ),
    Def::new(
        "group.max.session.timeout.ms",
        ConfigType::Int,
        "1800000",
        Validator::Any,
        "The maximum allowed session timeout for registered consumers.",
        |c, v| c.max_session_timeout_ms = v.int(),
        |c| c.max_session_timeout_ms.to_string(),
    ),
    Def::new(
        "group.initial.rebalance.delay.ms",
        ConfigType::Int,
        "3000",
        Validator::AtLeast(0),
        "Wait for more consumers to join a new group before the first rebalance.",
        |c, v| c.initial_rebalance_delay_ms = v.int(),
        |c| c.initial_rebalance_delay_ms.to_string(),
    ),
    Def::new(
        "group.max.size",
        ConfigType::Int,
        "2147483647",
        Validator::AtLeast(1),
        "The maximum number of consumers a group can hold.",
        |c, v| c.max_size = usize_of(v),
        |c| c.max_size.to_string(),
    ),
    Def::new(
        "offsets.retention.minutes",
        ConfigType::Int,
        "10080",
        Validator::AtLeast(1),
        "Committed offsets of an empty group are kept this long.",
        |c, v| c.offsets_retention_ms = v.long() * 60_000,
        |c| (c.offsets_retention_ms / 60_000).to_string(),
    ),
    Def::new(
        "offsets.retention.check.interval.ms",
        ConfigType::Long,
        "600000",
        Validator::AtLeast(1),
        "How often to check for expired offsets.",
        |c, v| c.offsets_retention_check_interval_ms = v.long(),
        |c| c.offsets_retention_check_interval_ms.to_string(),
    ),
    Def::new(
        "offset.metadata.max.bytes",
        ConfigType::Int,
        "4096",
        Validator::AtLeast(0),
        "The maximum size of the metadata of an offset commit.",
        |c, v| c.offset_metadata_max_bytes = usize_of(v),
        |c| c.offset_metadata_max_bytes.to_string(),
    ),
    Def::new(
        "offsets.topic.num.partitions",
        ConfigType::Int,
        "50",
        Validator::AtLeast(1),
        "The number of partitions for the offset commit topic.",
        |c, v| c.offsets_topic_num_partitions = v.int(),
        |c| c.offsets_topic_num_partitions.to_string(),
    ),
    Def::new(
        "offsets.topic.replication.factor",
        ConfigType::Int,
        "3",
        Validator::AtLeast(1),
        "The replication factor of the offsets topic (cluster mode; creating it fails until that many brokers are live).",
        |c, v| c.offsets_topic_replication_factor = i16::try_from(v.long()).unwrap_or(1),
        |c| c.offsets_topic_replication_factor.to_string(),
    ),
    Def::new(
        "offsets.topic.segment.bytes",
        ConfigType::Int,
        "104857600",
        Validator::AtLeast(1),
        "The segment size of the offsets topic.",
        |c, v| c.offsets_topic_segment_bytes = v.int(),
        |c| c.offsets_topic_segment_bytes.to_string(),
    ),
];

impl Default for GroupConfig {
    fn default() -> Self {
        let blank = GroupConfig {
            min_session_timeout_ms: 0,
            max_session_timeout_ms: 0,
            initial_rebalance_delay_ms: 0,
            max_size: 0,
            offsets_retention_ms: 0,
            offsets_retention_check_interval_ms: 0,
            offset_metadata_max_bytes: 0,
            offsets_topic_num_partitions: 0,
            offsets_topic_segment_bytes: 0,
            offsets_topic_replication_factor: 0,
        };
        defaults(TABLE, blank)
    }
}

impl GroupConfig {
    /// Whether the coordinator's table defines property `name` (the broker
    /// warns about names nobody reads).
    pub(crate) fn is_known(name: &str) -> bool {
        TABLE.iter().any(|d| d.name == name)
    }

    /// The coordinator's definition table.
    pub fn definitions() -> &'static [ConfigDef<GroupConfig>] {
        TABLE
    }

    /// Every row's resolved value (for `--print-config`).
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        resolved(TABLE, self)
    }

    /// Build from broker properties; absent names take Kafka's defaults.
    ///
    /// # Errors
    /// [`ConfigError::InvalidValue`] naming the first bad property.
    pub(crate) fn from_properties(
        props: &BTreeMap<String, String>,
    ) -> Result<GroupConfig, ConfigError> {
        let mut c = GroupConfig::default();
        apply(TABLE, &mut c, props)?;
        if c.min_session_timeout_ms > c.max_session_timeout_ms {
            return Err(ConfigError::InvalidValue {
                name: "group.min.session.timeout.ms",
                value: c.min_session_timeout_ms.to_string(),
                rule: format!(
                    "must not exceed group.max.session.timeout.ms ({})",
                    c.max_session_timeout_ms
                ),
            });
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let c = GroupConfig::from_properties(&BTreeMap::new()).unwrap();
        assert_eq!(c, GroupConfig::default());
        assert_eq!(c.offsets_retention_ms, 604_800_000);
        assert_eq!(c.initial_rebalance_delay_ms, 3000);
    }

    #[test]
    fn overrides_and_errors() {
        let mut p = BTreeMap::new();
        p.insert(
            "group.initial.rebalance.delay.ms".to_string(),
            "0".to_string(),
        );
        p.insert("offsets.retention.minutes".to_string(), "1".to_string());
        let c = GroupConfig::from_properties(&p).unwrap();
        assert_eq!(
            (c.initial_rebalance_delay_ms, c.offsets_retention_ms),
            (0, 60_000)
        );
        p.insert("offsets.topic.num.partitions".to_string(), "0".to_string());
        assert_eq!(
            GroupConfig::from_properties(&p).unwrap_err().to_string(),
            r#"invalid value "0" for offsets.topic.num.partitions: must be at least 1"#
        );
        p.insert("offsets.topic.num.partitions".to_string(), "x".to_string());
        assert_eq!(
            GroupConfig::from_properties(&p).unwrap_err().to_string(),
            r#"invalid value "x" for offsets.topic.num.partitions: not an int"#
        );
    }
}
