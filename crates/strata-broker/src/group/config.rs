//! Group coordinator settings (Kafka `GroupCoordinatorConfig`): one
//! definition table with Kafka's names and defaults, parsed and validated
//! once, at start, with the rest of the broker's configuration.

use std::collections::BTreeMap;

use super::consumer::assignor::AssignorName;
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
    /// `group.coordinator.rebalance.protocols` contains `consumer`.
    pub consumer_protocol_enabled: bool,
    /// `group.consumer.session.timeout.ms` (45000).
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms` (45000).
    pub consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms` (60000).
    pub consumer_max_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms` (5000).
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms` (5000).
    pub consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms` (15000).
    pub consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size` (Integer.MAX_VALUE).
    pub consumer_max_size: usize,
    /// `group.consumer.assignors`: the first is the default.
    pub(crate) consumer_assignors: Vec<AssignorName>,
    /// `group.consumer.migration.policy` (Kafka 4.0's `bidirectional`).
    pub(crate) migration_policy: MigrationPolicy,
}

/// `group.consumer.migration.policy`: which online conversions between
/// classic and consumer groups are allowed (empty groups always convert).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MigrationPolicy {
    Disabled,
    Upgrade,
    Downgrade,
    Bidirectional,
}

impl MigrationPolicy {
    fn parse(s: &str) -> Option<MigrationPolicy> {
        match s.to_ascii_lowercase().as_str() {
            "disabled" => Some(MigrationPolicy::Disabled),
            "upgrade" => Some(MigrationPolicy::Upgrade),
            "downgrade" => Some(MigrationPolicy::Downgrade),
            "bidirectional" => Some(MigrationPolicy::Bidirectional),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            MigrationPolicy::Disabled => "disabled",
            MigrationPolicy::Upgrade => "upgrade",
            MigrationPolicy::Downgrade => "downgrade",
            MigrationPolicy::Bidirectional => "bidirectional",
        }
    }
}

fn check_protocols(v: &Value) -> Result<(), String> {
    let list = v.list();
    if list.iter().any(|p| p == "classic") {
        Ok(())
    } else {
        Err("must contain classic".to_string())
    }
}

fn check_assignors(v: &Value) -> Result<(), String> {
    let list = v.list();
    if list.is_empty() {
        return Err("must name at least one assignor".to_string());
    }
    match list.iter().find(|a| AssignorName::parse(a).is_none()) {
        Some(a) => Err(format!("unknown assignor {a} (known: uniform, range)")),
        None => Ok(()),
    }
}

fn check_policy(v: &Value) -> Result<(), String> {
    match MigrationPolicy::parse(&v.string()) {
        Some(_) => Ok(()),
        None => Err("must be one of disabled, upgrade, downgrade, bidirectional".to_string()),
    }
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
    Def::new(
        "group.coordinator.rebalance.protocols",
        ConfigType::List,
        "classic,consumer",
        Validator::Custom(|v| {
            check_protocols(v)?;
            match v.list().iter().find(|p| !["classic", "consumer", "share"].contains(&p.as_str())) {
                Some(p) => Err(format!("unknown protocol {p} (known: classic, consumer, share)")),
                None => Ok(()),
            }
        }),
        "The rebalance protocols the group coordinator serves (consumer: KIP-848).",
        |c, v| c.consumer_protocol_enabled = v.list().iter().any(|p| p == "consumer"),
        |c| if c.consumer_protocol_enabled { "classic,consumer".to_string() } else { "classic".to_string() },
    ),
    Def::new(
        "group.consumer.session.timeout.ms",
        ConfigType::Int,
        "45000",
        Validator::AtLeast(1),
        "The timeout to detect client failures when using the consumer group protocol.",
        |c, v| c.consumer_session_timeout_ms = v.int(),
        |c| c.consumer_session_timeout_ms.to_string(),
    ),
    Def::new(
        "group.consumer.min.session.timeout.ms",
        ConfigType::Int,
        "45000",
        Validator::AtLeast(1),
        "The minimum allowed session timeout for consumer group members.",
        |c, v| c.consumer_min_session_timeout_ms = v.int(),
        |c| c.consumer_min_session_timeout_ms.to_string(),
    ),
    Def::new(
        "group.consumer.max.session.timeout.ms",
        ConfigType::Int,
        "60000",
        Validator::AtLeast(1),
        "The maximum allowed session timeout for consumer group members.",
        |c, v| c.consumer_max_session_timeout_ms = v.int(),
        |c| c.consumer_max_session_timeout_ms.to_string(),
    ),
    Def::new(
        "group.consumer.heartbeat.interval.ms",
        ConfigType::Int,
        "5000",
        Validator::AtLeast(1),
        "The heartbeat interval given to consumer group members.",
        |c, v| c.consumer_heartbeat_interval_ms = v.int(),
        |c| c.consumer_heartbeat_interval_ms.to_string(),
    ),
    Def::new(
        "group.consumer.min.heartbeat.interval.ms",
        ConfigType::Int,
        "5000",
        Validator::AtLeast(1),
        "The minimum heartbeat interval for consumer group members.",
        |c, v| c.consumer_min_heartbeat_interval_ms = v.int(),
        |c| c.consumer_min_heartbeat_interval_ms.to_string(),
    ),
    Def::new(
        "group.consumer.max.heartbeat.interval.ms",
        ConfigType::Int,
        "15000",
        Validator::AtLeast(1),
        "The maximum heartbeat interval for consumer group members.",
        |c, v| c.consumer_max_heartbeat_interval_ms = v.int(),
        |c| c.consumer_max_heartbeat_interval_ms.to_string(),
    ),
    Def::new(
        "group.consumer.max.size",
        ConfigType::Int,
        "2147483647",
        Validator::AtLeast(1),
        "The maximum number of members a consumer group can hold.",
        |c, v| c.consumer_max_size = usize_of(v),
        |c| c.consumer_max_size.to_string(),
    ),
    Def::new(
        "group.consumer.assignors",
        ConfigType::List,
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor",
        Validator::Custom(check_assignors),
        "The server-side assignors (uniform, range, or Kafka's class names); the first is the default.",
        |c, v| c.consumer_assignors = v.list().iter().filter_map(|a| AssignorName::parse(a)).collect(),
        |c| c.consumer_assignors.iter().map(|a| a.name()).collect::<Vec<_>>().join(","),
    ),
    Def::new(
        "group.consumer.migration.policy",
        ConfigType::String,
        "bidirectional",
        Validator::Custom(check_policy),
        "Which conversions between classic and consumer groups are allowed while they have members: disabled, upgrade, downgrade, bidirectional.",
        |c, v| c.migration_policy = MigrationPolicy::parse(&v.string()).unwrap_or(MigrationPolicy::Bidirectional),
        |c| c.migration_policy.name().to_string(),
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
            consumer_protocol_enabled: false,
            consumer_session_timeout_ms: 0,
            consumer_min_session_timeout_ms: 0,
            consumer_max_session_timeout_ms: 0,
            consumer_heartbeat_interval_ms: 0,
            consumer_min_heartbeat_interval_ms: 0,
            consumer_max_heartbeat_interval_ms: 0,
            consumer_max_size: 0,
            consumer_assignors: Vec::new(),
            migration_policy: MigrationPolicy::Bidirectional,
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
        let within = |name: &'static str, v: i32, min: (&str, i32), max: (&str, i32)| {
            if v < min.1 || v > max.1 {
                Err(ConfigError::InvalidValue {
                    name,
                    value: v.to_string(),
                    rule: format!(
                        "must be between {} ({}) and {} ({})",
                        min.0, min.1, max.0, max.1
                    ),
                })
            } else {
                Ok(())
            }
        };
        within(
            "group.consumer.session.timeout.ms",
            c.consumer_session_timeout_ms,
            (
                "group.consumer.min.session.timeout.ms",
                c.consumer_min_session_timeout_ms,
            ),
            (
                "group.consumer.max.session.timeout.ms",
                c.consumer_max_session_timeout_ms,
            ),
        )?;
        within(
            "group.consumer.heartbeat.interval.ms",
            c.consumer_heartbeat_interval_ms,
            (
                "group.consumer.min.heartbeat.interval.ms",
                c.consumer_min_heartbeat_interval_ms,
            ),
            (
                "group.consumer.max.heartbeat.interval.ms",
                c.consumer_max_heartbeat_interval_ms,
            ),
        )?;
        if c.consumer_heartbeat_interval_ms >= c.consumer_session_timeout_ms {
            return Err(ConfigError::InvalidValue {
                name: "group.consumer.heartbeat.interval.ms",
                value: c.consumer_heartbeat_interval_ms.to_string(),
                rule: format!(
                    "must be less than group.consumer.session.timeout.ms ({})",
                    c.consumer_session_timeout_ms
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
