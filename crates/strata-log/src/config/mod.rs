//! Topic-level log configuration with Kafka 3.9's names, defaults and ranges
//! (`docs/kafka-behaviour.md` §12).
//!
//! [`LogConfig`] is the typed result; [`LogConfig::definitions`] is the one
//! table that knows every name, its broker synonyms, type, default and range.
//! Topic overrides and broker properties are both parsed through that table in
//! one pass, so a name is spelled in exactly one place.
//!
//! This module is also the configuration layer of every crate:
//! [`properties`] is the one reader of Java `.properties` files, and
//! [`ConfigDef`] (with [`apply`], [`defaults`], [`resolved`]) the one
//! definition-table mechanism; the broker, group coordinator, cleaner and
//! remote tier each define a table of their own with it, and every bad
//! value is a [`ConfigError::InvalidValue`] naming key, value and rule.

use std::collections::BTreeMap;

pub use crate::batch::TimestampType;

/// `cleanup.policy`: a list of `delete` and/or `compact`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl CleanupPolicy {
    pub const DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: false,
    };
    pub const COMPACT: CleanupPolicy = CleanupPolicy {
        delete: false,
        compact: true,
    };

    fn render(self) -> String {
        match (self.compact, self.delete) {
            (true, true) => "compact,delete".into(),
            (true, false) => "compact".into(),
            (false, true) => "delete".into(),
            (false, false) => String::new(),
        }
    }
}

mod def;
pub mod properties;

pub use def::{
    apply, defaults, defines, render_double, resolved, ConfigDef, ConfigType, Validator, Value,
};

/// Why a config value was rejected. Every namespace (broker, topic, group
/// coordinator, cleaner, remote tier) reports bad values with this type, so
/// the text is the same wherever a key is parsed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    #[error("unknown topic config {name}")]
    Unknown { name: String },
    /// `value` (as given) of property `name` breaks `rule`.
    #[error("invalid value {value:?} for {name}: {rule}")]
    InvalidValue {
        name: &'static str,
        value: String,
        rule: String,
    },
}

impl ConfigError {
    /// The property at fault.
    pub fn name(&self) -> &str {
        match self {
            ConfigError::Unknown { name } => name,
            ConfigError::InvalidValue { name, .. } => name,
        }
    }
}
#[derive(Clone, Debug, PartialEq)]
pub struct LogConfig {
    pub segment_bytes: i32,
    pub segment_ms: i64,
    pub segment_jitter_ms: i64,
    pub segment_index_bytes: i32,
    pub index_interval_bytes: i32,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub file_delete_delay_ms: i64,
    pub preallocate: bool,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub max_message_bytes: i32,
    pub message_timestamp_type: TimestampType,
    pub message_timestamp_before_max_ms: i64,
    pub message_timestamp_after_max_ms: i64,
    pub cleanup_policy: CleanupPolicy,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    pub delete_retention_ms: i64,
    /// `producer`, `uncompressed`, `gzip`, `snappy`, `lz4` or `zstd`.
    pub compression_type: String,
    pub compression_gzip_level: i32,
    pub compression_lz4_level: i32,
    pub compression_zstd_level: i32,
    pub min_insync_replicas: i32,
    pub unclean_leader_election_enable: bool,
    pub local_retention_ms: i64,
    pub local_retention_bytes: i64,
    pub remote_storage_enable: bool,
    pub remote_log_copy_disable: bool,
    pub remote_log_delete_on_disable: bool,
    pub message_downconversion_enable: bool,
    /// Known to Kafka but without effect in the engine: kept verbatim so they
    /// describe back as set (`message.format.version`, throttled replicas, ...).
    pub passthrough: BTreeMap<String, String>,
    /// `strata.durable.append`: fsync before acknowledging (group commit).
    pub durable_append: bool,
    /// Broker-level `producer.id.expiration.ms` (not a topic config in
    /// Kafka, so not in [`LogConfig::definitions`]): idle producers' state
    /// is dropped after this long.
    pub producer_id_expiration_ms: i64,
    /// Broker-level `strata.max.decompressed.batch.bytes` (Strata only, not
    /// a topic config): the most a produced compressed batch may inflate to
    /// while it is validated; above it the batch is refused as corrupt
    /// (Kafka has no such cap). Default [`DEFAULT_MAX_DECOMPRESSED`].
    ///
    /// [`DEFAULT_MAX_DECOMPRESSED`]: crate::batch::compression::DEFAULT_MAX_DECOMPRESSED
    pub max_decompressed_batch_bytes: usize,
}

/// Broker property name of [`LogConfig::max_decompressed_batch_bytes`].
pub const MAX_DECOMPRESSED_BATCH_BYTES: &str = "strata.max.decompressed.batch.bytes";

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3_600_000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 3_600_000,
            retention_bytes: -1,
            file_delete_delay_ms: 60_000,
            preallocate: false,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            cleanup_policy: CleanupPolicy::DELETE,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
            compression_type: "producer".into(),
            compression_gzip_level: -1,
            compression_lz4_level: 9,
            compression_zstd_level: 3,
            min_insync_replicas: 1,
            unclean_leader_election_enable: false,
            local_retention_ms: -2,
            local_retention_bytes: -2,
            remote_storage_enable: false,
            remote_log_copy_disable: false,
            remote_log_delete_on_disable: false,
            message_downconversion_enable: true,
            passthrough: BTreeMap::new(),
            durable_append: false,
            producer_id_expiration_ms: crate::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            max_decompressed_batch_bytes: crate::batch::compression::DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

type Def = ConfigDef<LogConfig>;

const L: i64 = i64::MAX;
const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

fn render_policy(p: CleanupPolicy) -> String {
    p.render()
}

fn policy_of(v: &Value) -> CleanupPolicy {
    let items = v.list();
    CleanupPolicy {
        delete: items.iter().any(|i| i == "delete"),
        compact: items.iter().any(|i| i == "compact"),
    }
}

macro_rules! long_def {
    ($name:literal, $syn:expr, $default:literal, $doc:literal, $field:ident, $min:expr) => {
        Def::new(
            $name,
            ConfigType::Long,
            $default,
            Validator::AtLeast($min),
            $doc,
            |c: &mut LogConfig, v| c.$field = v.long(),
            |c: &LogConfig| c.$field.to_string(),
        )
        .synonyms($syn)
        .dynamic()
    };
}

macro_rules! int_def {
    ($name:literal, $syn:expr, $default:literal, $doc:literal, $field:ident, $min:expr) => {
        Def::new(
            $name,
            ConfigType::Int,
            $default,
            Validator::AtLeast($min),
            $doc,
            |c: &mut LogConfig, v| c.$field = v.int(),
            |c: &LogConfig| c.$field.to_string(),
        )
        .synonyms($syn)
        .dynamic()
    };
}

macro_rules! bool_def {
    ($name:literal, $syn:expr, $default:literal, $doc:literal, $field:ident) => {
        Def::new(
            $name,
            ConfigType::Boolean,
            $default,
            Validator::Any,
            $doc,
            |c: &mut LogConfig, v| c.$field = v.boolean(),
            |c: &LogConfig| c.$field.to_string(),
        )
        .synonyms($syn)
        .dynamic()
    };
}

macro_rules! passthrough_def {
    ($name:literal, $syn:expr, $kind:expr, $default:literal, $doc:literal) => {
        Def::new(
            $name,
            $kind,
            $default,
            Validator::Any,
            $doc,
            |c: &mut LogConfig, v| {
                c.passthrough.insert($name.to_string(), v.string());
            },
            |c: &LogConfig| {
                c.passthrough
                    .get($name)
                    .cloned()
                    .unwrap_or_else(|| $default.to_string())
            },
        )
        .synonyms($syn)
        .dynamic()
    };
}

static DEFINITIONS: &[ConfigDef<LogConfig>] = &[
    Def::new(
        "cleanup.policy",
        ConfigType::List,
        "delete",
        Validator::ListOf(&["delete", "compact"]),
        "Retention policy for old segments: delete, compact or both.",
        |c, v| c.cleanup_policy = policy_of(v),
        |c| render_policy(c.cleanup_policy),
    )
    .synonyms(&[("log.cleanup.policy", 1)])
    .dynamic(),
    int_def!(
        "compression.gzip.level",
        &[("compression.gzip.level", 1)],
        "-1",
        "Gzip level when compression.type is gzip.",
        compression_gzip_level,
        -1
    ),
    int_def!(
        "compression.lz4.level",
        &[("compression.lz4.level", 1)],
        "9",
        "LZ4 level when compression.type is lz4.",
        compression_lz4_level,
        1
    ),
    Def::new(
        "compression.type",
        ConfigType::String,
        "producer",
        Validator::OneOf(COMPRESSION_TYPES),
        "Final compression of the topic's data; producer keeps the producer's codec.",
        |c, v| c.compression_type = v.string(),
        |c| c.compression_type.clone(),
    )
    .synonyms(&[("compression.type", 1)])
    .dynamic(),
    int_def!(
        "compression.zstd.level",
        &[("compression.zstd.level", 1)],
        "3",
        "Zstd level when compression.type is zstd.",
        compression_zstd_level,
        -131072
    ),
    long_def!(
        "delete.retention.ms",
        &[("log.cleaner.delete.retention.ms", 1)],
        "86400000",
        "How long tombstones are kept on compacted topics.",
        delete_retention_ms,
        0
    ),
    long_def!(
        "file.delete.delay.ms",
        &[("log.segment.delete.delay.ms", 1)],
        "60000",
        "Delay before a deleted segment's files are removed.",
        file_delete_delay_ms,
        0
    ),
    long_def!(
        "flush.messages",
        &[("log.flush.interval.messages", 1)],
        "9223372036854775807",
        "Messages appended between forced fsyncs.",
        flush_messages,
        1
    ),
    long_def!(
        "flush.ms",
        &[
            ("log.flush.interval.ms", 1),
            ("log.flush.scheduler.interval.ms", 1)
        ],
        "9223372036854775807",
        "Time between forced fsyncs.",
        flush_ms,
        0
    ),
    passthrough_def!(
        "follower.replication.throttled.replicas",
        &[],
        ConfigType::List,
        "",
        "Replicas throttled on the follower side."
    ),
    int_def!(
        "index.interval.bytes",
        &[("log.index.interval.bytes", 1)],
        "4096",
        "Bytes appended between offset-index entries.",
        index_interval_bytes,
        0
    ),
    passthrough_def!(
        "leader.replication.throttled.replicas",
        &[],
        ConfigType::List,
        "",
        "Replicas throttled on the leader side."
    ),
    long_def!(
        "local.retention.bytes",
        &[("log.local.retention.bytes", 1)],
        "-2",
        "Local bytes kept when tiered storage is on (-2: use retention.bytes).",
        local_retention_bytes,
        -2
    ),
    long_def!(
        "local.retention.ms",
        &[("log.local.retention.ms", 1)],
        "-2",
        "Local time kept when tiered storage is on (-2: use retention.ms).",
        local_retention_ms,
        -2
    ),
    long_def!(
        "max.compaction.lag.ms",
        &[("log.cleaner.max.compaction.lag.ms", 1)],
        "9223372036854775807",
        "Maximum time a message stays ineligible for compaction.",
        max_compaction_lag_ms,
        1
    ),
    int_def!(
        "max.message.bytes",
        &[("message.max.bytes", 1)],
        "1048588",
        "Largest record batch size allowed.",
        max_message_bytes,
        0
    ),
    bool_def!(
        "message.downconversion.enable",
        &[("log.message.downconversion.enable", 1)],
        "true",
        "Whether old consumers may get down-converted batches.",
        message_downconversion_enable
    ),
    passthrough_def!(
        "message.format.version",
        &[("log.message.format.version", 1)],
        ConfigType::String,
        "3.0-IV1",
        "Deprecated; ignored with inter.broker.protocol >= 3.0."
    ),
    long_def!(
        "message.timestamp.after.max.ms",
        &[("log.message.timestamp.after.max.ms", 1)],
        "9223372036854775807",
        "Allowed amount a record timestamp may be ahead of the broker.",
        message_timestamp_after_max_ms,
        0
    ),
    long_def!(
        "message.timestamp.before.max.ms",
        &[("log.message.timestamp.before.max.ms", 1)],
        "9223372036854775807",
        "Allowed amount a record timestamp may be behind the broker.",
        message_timestamp_before_max_ms,
        0
    ),
    passthrough_def!(
        "message.timestamp.difference.max.ms",
        &[("log.message.timestamp.difference.max.ms", 1)],
        ConfigType::Long,
        "9223372036854775807",
        "Deprecated; replaced by the before/after pair."
    ),
    Def::new(
        "message.timestamp.type",
        ConfigType::String,
        "CreateTime",
        Validator::OneOf(&["CreateTime", "LogAppendTime"]),
        "CreateTime or LogAppendTime.",
        |c, v| {
            c.message_timestamp_type = if v.string() == "LogAppendTime" {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            }
        },
        |c| c.message_timestamp_type.name().to_string(),
    )
    .synonyms(&[("log.message.timestamp.type", 1)])
    .dynamic(),
    Def::new(
        "min.cleanable.dirty.ratio",
        ConfigType::Double,
        "0.5",
        Validator::DoubleBetween(0.0, 1.0),
        "Dirty ratio above which the cleaner compacts the log.",
        |c, v| c.min_cleanable_dirty_ratio = v.double(),
        |c| render_double(c.min_cleanable_dirty_ratio),
    )
    .synonyms(&[("log.cleaner.min.cleanable.ratio", 1)])
    .dynamic(),
    long_def!(
        "min.compaction.lag.ms",
        &[("log.cleaner.min.compaction.lag.ms", 1)],
        "0",
        "Minimum time a message stays uncompacted.",
        min_compaction_lag_ms,
        0
    ),
    int_def!(
        "min.insync.replicas",
        &[("min.insync.replicas", 1)],
        "1",
        "Replicas that must acknowledge an acks=all write.",
        min_insync_replicas,
        1
    ),
    bool_def!(
        "preallocate",
        &[("log.preallocate", 1)],
        "false",
        "Preallocate the segment file on creation.",
        preallocate
    ),
    bool_def!(
        "remote.log.copy.disable",
        &[],
        "false",
        "Stop copying segments to the remote tier.",
        remote_log_copy_disable
    ),
    bool_def!(
        "remote.log.delete.on.disable",
        &[],
        "false",
        "Delete remote data when tiering is disabled.",
        remote_log_delete_on_disable
    ),
    bool_def!(
        "remote.storage.enable",
        &[],
        "false",
        "Tier this topic's segments to remote storage.",
        remote_storage_enable
    ),
    long_def!(
        "retention.bytes",
        &[("log.retention.bytes", 1)],
        "-1",
        "Maximum partition size before old segments are deleted (-1: unlimited).",
        retention_bytes,
        L.wrapping_neg()
    ),
    long_def!(
        "retention.ms",
        &[
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000)
        ],
        "604800000",
        "Maximum age of a segment before deletion (-1: unlimited).",
        retention_ms,
        -1
    ),
    int_def!(
        "segment.bytes",
        &[("log.segment.bytes", 1)],
        "1073741824",
        "Segment file size at which the log rolls.",
        segment_bytes,
        14
    ),
    int_def!(
        "segment.index.bytes",
        &[("log.index.size.max.bytes", 1)],
        "10485760",
        "Maximum size of the offset and time indexes.",
        segment_index_bytes,
        4
    ),
    long_def!(
        "segment.jitter.ms",
        &[
            ("log.roll.jitter.ms", 1),
            ("log.roll.jitter.hours", 3_600_000)
        ],
        "0",
        "Maximum random jitter subtracted from segment.ms.",
        segment_jitter_ms,
        0
    ),
    long_def!(
        "segment.ms",
        &[("log.roll.ms", 1), ("log.roll.hours", 3_600_000)],
        "604800000",
        "Time after which the log rolls even if the segment is not full.",
        segment_ms,
        1
    ),
    bool_def!(
        "strata.durable.append",
        &[("strata.durable.append", 1)],
        "false",
        "Strata only: fsync before acknowledging an append (group commit).",
        durable_append
    ),
    bool_def!(
        "unclean.leader.election.enable",
        &[("unclean.leader.election.enable", 1)],
        "false",
        "Allow out-of-sync replicas to become leader.",
        unclean_leader_election_enable
    ),
];

/// Broker-level properties that feed [`LogConfig`] but are not topic
/// configs in Kafka (so not in [`LogConfig::definitions`]).
static BROKER_ONLY: &[ConfigDef<LogConfig>] = &[
    Def::new(
        "producer.id.expiration.ms",
        ConfigType::Long,
        "86400000",
        Validator::AtLeast(1),
        "How long an idle producer's state is kept.",
        |c, v| c.producer_id_expiration_ms = v.long(),
        |c| c.producer_id_expiration_ms.to_string(),
    )
    .dynamic(),
    Def::new(
        MAX_DECOMPRESSED_BATCH_BYTES,
        ConfigType::Long,
        "67108864",
        Validator::AtLeast(1),
        "Strata only: the most a produced compressed batch may inflate to while validated.",
        |c, v| c.max_decompressed_batch_bytes = usize::try_from(v.long()).unwrap_or(usize::MAX),
        |c| c.max_decompressed_batch_bytes.to_string(),
    ),
];

impl LogConfig {
    /// Every topic-level config Kafka 3.9 knows (plus `strata.*`), sorted by name.
    pub fn definitions() -> &'static [ConfigDef<LogConfig>] {
        DEFINITIONS
    }

    /// The definition of one topic config.
    pub fn definition(name: &str) -> Option<&'static ConfigDef<LogConfig>> {
        DEFINITIONS.iter().find(|d| d.name == name)
    }

    /// Layer topic overrides (Kafka names, string values) over `base`.
    ///
    /// # Errors
    /// [`ConfigError::Unknown`] for a name Kafka does not know; value errors
    /// for a wrong type or range. Nothing is applied on error.
    pub fn with_overrides(
        base: &LogConfig,
        overrides: &BTreeMap<String, String>,
    ) -> Result<LogConfig, ConfigError> {
        let mut cfg = base.clone();
        for (name, value) in overrides {
            let def = Self::definition(name)
                .ok_or_else(|| ConfigError::Unknown { name: name.clone() })?;
            def.apply(&mut cfg, def.name, value)?;
        }
        Ok(cfg)
    }

    /// Broker defaults from broker property names (`log.segment.bytes`,
    /// `log.roll.ms`/`log.roll.hours`, `log.retention.ms`/`.minutes`/`.hours`,
    /// ...). The first synonym present wins; unit synonyms are converted.
    /// Properties that are not log configs are ignored.
    ///
    /// # Errors
    /// A present synonym with an invalid value.
    pub fn from_broker_properties(
        props: &BTreeMap<String, String>,
    ) -> Result<LogConfig, ConfigError> {
        let mut cfg = LogConfig::default();
        for def in DEFINITIONS {
            let Some((key, raw, factor)) = def
                .synonyms
                .iter()
                .find_map(|(syn, factor)| props.get(*syn).map(|v| (*syn, v, *factor)))
            else {
                continue;
            };
            if factor == 1 {
                def.apply(&mut cfg, key, raw)?;
            } else {
                // A unit synonym (`log.retention.hours`): a whole number of
                // its unit, converted, then held to the topic config's rule.
                let n = raw
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| ConfigError::InvalidValue {
                        name: key,
                        value: raw.clone(),
                        rule: "not a long".into(),
                    })?;
                let converted = def
                    .parse(key, &n.saturating_mul(factor).to_string())
                    .map_err(|e| match e {
                        ConfigError::InvalidValue { rule, .. } => ConfigError::InvalidValue {
                            name: key,
                            value: raw.clone(),
                            rule: format!("{rule} once converted to {}", def.name),
                        },
                        other => other,
                    })?;
                def.apply(&mut cfg, key, &converted.string())?;
            }
        }
        apply(BROKER_ONLY, &mut cfg, props)?;
        Ok(cfg)
    }

    /// The broker-level rows that are not topic configs
    /// (`producer.id.expiration.ms`, `strata.max.decompressed.batch.bytes`).
    pub fn broker_only_definitions() -> &'static [ConfigDef<LogConfig>] {
        BROKER_ONLY
    }

    /// Every row's resolved value, topic configs (by topic name) and then
    /// the broker-only rows: what `--print-config` shows of the log layer.
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        let mut out = resolved(DEFINITIONS, self);
        out.extend(resolved(BROKER_ONLY, self));
        out
    }

    /// Value of one topic config as Kafka prints it (DescribeConfigs).
    pub fn get_as_string(&self, name: &str) -> Option<String> {
        Self::definition(name).map(|d| d.render(self))
    }

    /// `segment.ms` as the roll check uses it: compacted topics roll no later
    /// than `max.compaction.lag.ms` (§8.4).
    pub fn max_segment_ms(&self) -> i64 {
        if self.cleanup_policy.compact && self.max_compaction_lag_ms > 0 {
            self.segment_ms.min(self.max_compaction_lag_ms)
        } else {
            self.segment_ms
        }
    }

    /// The per-segment roll jitter bound: `min(segment.jitter.ms, segment.ms)`.
    pub fn max_roll_jitter_ms(&self) -> i64 {
        if self.segment_jitter_ms <= 0 {
            0
        } else {
            self.segment_jitter_ms.min(self.max_segment_ms())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_default_round_trips_through_its_definition() {
        let cfg = LogConfig::default();
        for def in LogConfig::definitions() {
            assert_eq!(
                cfg.get_as_string(def.name).as_deref(),
                Some(def.default),
                "{}",
                def.name
            );
            let reparsed =
                LogConfig::with_overrides(&cfg, &map(&[(def.name, def.default)])).unwrap();
            assert_eq!(
                reparsed.get_as_string(def.name).as_deref(),
                Some(def.default)
            );
        }
        let names: Vec<_> = LogConfig::definitions().iter().map(|d| d.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn overrides_are_typed_and_validated() {
        let base = LogConfig::default();
        let c = LogConfig::with_overrides(
            &base,
            &map(&[
                ("segment.bytes", "1024"),
                ("cleanup.policy", "compact,delete"),
                ("message.timestamp.type", "LogAppendTime"),
                ("min.cleanable.dirty.ratio", "0.25"),
            ]),
        )
        .unwrap();
        assert_eq!(c.segment_bytes, 1024);
        assert!(c.cleanup_policy.compact && c.cleanup_policy.delete);
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(
            c.get_as_string("min.cleanable.dirty.ratio").unwrap(),
            "0.25"
        );
        assert!(matches!(
            LogConfig::with_overrides(&base, &map(&[("segment.bytes", "13")])),
            Err(ConfigError::InvalidValue {
                name: "segment.bytes",
                ..
            })
        ));
        assert!(matches!(
            LogConfig::with_overrides(&base, &map(&[("segment.bytes", "x")])),
            Err(ConfigError::InvalidValue { .. })
        ));
        assert!(matches!(
            LogConfig::with_overrides(&base, &map(&[("no.such", "1")])),
            Err(ConfigError::Unknown { .. })
        ));
        assert!(LogConfig::with_overrides(&base, &map(&[("cleanup.policy", "zap")])).is_err());
    }

    #[test]
    fn broker_synonyms_apply_in_priority_order_with_units() {
        let c = LogConfig::from_broker_properties(&map(&[
            ("log.roll.hours", "2"),
            ("log.retention.minutes", "3"),
            ("log.retention.hours", "100"),
            ("log.segment.bytes", "4096"),
            ("broker.id", "7"),
        ]))
        .unwrap();
        assert_eq!(c.segment_ms, 2 * 3_600_000);
        assert_eq!(c.retention_ms, 3 * 60_000);
        assert_eq!(c.segment_bytes, 4096);
        let c = LogConfig::from_broker_properties(&map(&[
            ("log.roll.ms", "5"),
            ("log.roll.hours", "2"),
        ]))
        .unwrap();
        assert_eq!(c.segment_ms, 5);
    }

    #[test]
    fn broker_errors_name_the_key_as_given() {
        let text = |kv: &[(&str, &str)]| {
            LogConfig::from_broker_properties(&map(kv))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            text(&[("log.retention.ms", "abc")]),
            r#"invalid value "abc" for log.retention.ms: not a long"#
        );
        assert_eq!(
            text(&[("log.segment.bytes", "13")]),
            r#"invalid value "13" for log.segment.bytes: must be at least 14"#
        );
        assert_eq!(
            text(&[("log.roll.hours", "x")]),
            r#"invalid value "x" for log.roll.hours: not a long"#
        );
        assert_eq!(
            text(&[("log.roll.hours", "0")]),
            r#"invalid value "0" for log.roll.hours: must be at least 1 once converted to segment.ms"#
        );
        assert_eq!(
            text(&[("log.cleanup.policy", "delete,zap")]),
            r#"invalid value "delete,zap" for log.cleanup.policy: item "zap" is not one of delete, compact"#
        );
        assert_eq!(
            text(&[("producer.id.expiration.ms", "0")]),
            r#"invalid value "0" for producer.id.expiration.ms: must be at least 1"#
        );
    }

    #[test]
    fn broker_only_defaults_match_the_struct() {
        let blank = LogConfig {
            producer_id_expiration_ms: 0,
            max_decompressed_batch_bytes: 0,
            ..LogConfig::default()
        };
        assert_eq!(defaults(BROKER_ONLY, blank), LogConfig::default());
    }

    #[test]
    fn compacted_topics_roll_by_max_compaction_lag() {
        let mut c = LogConfig {
            segment_ms: 1000,
            max_compaction_lag_ms: 300,
            ..LogConfig::default()
        };
        assert_eq!(c.max_segment_ms(), 1000);
        c.cleanup_policy = CleanupPolicy::COMPACT;
        assert_eq!(c.max_segment_ms(), 300);
        c.segment_jitter_ms = 10_000;
        assert_eq!(c.max_roll_jitter_ms(), 300);
    }
}
