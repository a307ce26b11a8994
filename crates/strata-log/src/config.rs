//! Topic-level log configuration with Kafka 3.9's names, defaults and ranges
//! (`docs/kafka-behaviour.md` §12).
//!
//! [`LogConfig`] is the typed result; [`LogConfig::definitions`] is the one
//! table that knows every name, its broker synonyms, type, default and range.
//! Topic overrides and broker properties are both parsed through that table in
//! one pass, so a name is spelled in exactly one place.

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

/// The value type of a config, as Kafka's `ConfigDef.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigType {
    Int,
    Long,
    Double,
    Boolean,
    String,
    List,
}

/// One topic-level config: name, broker synonyms (highest priority first,
/// with the factor that converts the synonym's unit to the topic's), type,
/// default as Kafka prints it and documentation.
#[derive(Debug)]
pub struct ConfigDef {
    pub name: &'static str,
    pub synonyms: &'static [(&'static str, i64)],
    pub kind: ConfigType,
    pub default: &'static str,
    pub doc: &'static str,
    set: fn(&mut LogConfig, &str) -> Result<(), ConfigError>,
    get: fn(&LogConfig) -> String,
}

/// Why a config value was rejected.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    #[error("unknown topic config {name}")]
    Unknown { name: String },
    #[error("invalid value {value:?} for config {name}: expected {expected}")]
    InvalidValue {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("value {value} for config {name} is out of range [{min}, {max}]")]
    OutOfRange {
        name: &'static str,
        value: String,
        min: String,
        max: String,
    },
}

/// Typed topic configuration. Defaults are Kafka 3.9's.
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

fn parse_long(name: &'static str, v: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    let n: i64 = v.trim().parse().map_err(|_| ConfigError::InvalidValue {
        name,
        value: v.into(),
        expected: "a 64-bit integer",
    })?;
    if n < min || n > max {
        return Err(ConfigError::OutOfRange {
            name,
            value: v.into(),
            min: min.to_string(),
            max: max.to_string(),
        });
    }
    Ok(n)
}

fn parse_int(name: &'static str, v: &str, min: i32, max: i32) -> Result<i32, ConfigError> {
    let n: i32 = v.trim().parse().map_err(|_| ConfigError::InvalidValue {
        name,
        value: v.into(),
        expected: "a 32-bit integer",
    })?;
    if n < min || n > max {
        return Err(ConfigError::OutOfRange {
            name,
            value: v.into(),
            min: min.to_string(),
            max: max.to_string(),
        });
    }
    Ok(n)
}

fn parse_bool(name: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError::InvalidValue {
            name,
            value: v.into(),
            expected: "true or false",
        }),
    }
}

fn parse_one_of(
    name: &'static str,
    v: &str,
    allowed: &'static [&'static str],
    expected: &'static str,
) -> Result<String, ConfigError> {
    let t = v.trim();
    if allowed.contains(&t) {
        Ok(t.to_string())
    } else {
        Err(ConfigError::InvalidValue {
            name,
            value: v.into(),
            expected,
        })
    }
}

fn parse_policy(v: &str) -> Result<CleanupPolicy, ConfigError> {
    let mut p = CleanupPolicy {
        delete: false,
        compact: false,
    };
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item {
            "delete" => p.delete = true,
            "compact" => p.compact = true,
            _ => {
                return Err(ConfigError::InvalidValue {
                    name: "cleanup.policy",
                    value: v.into(),
                    expected: "a list of delete and/or compact",
                })
            }
        }
    }
    Ok(p)
}

fn parse_ratio(v: &str) -> Result<f64, ConfigError> {
    let name = "min.cleanable.dirty.ratio";
    let r: f64 = v.trim().parse().map_err(|_| ConfigError::InvalidValue {
        name,
        value: v.into(),
        expected: "a number",
    })?;
    if !(0.0..=1.0).contains(&r) {
        return Err(ConfigError::OutOfRange {
            name,
            value: v.into(),
            min: "0".into(),
            max: "1".into(),
        });
    }
    Ok(r)
}

/// Kafka prints doubles like Java's `Double.toString` (`0.5`, `1.0`).
fn render_double(d: f64) -> String {
    if d.fract() == 0.0 {
        format!("{d:.1}")
    } else {
        d.to_string()
    }
}

const L: i64 = i64::MAX;
const I: i32 = i32::MAX;
const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

macro_rules! long_def {
    ($name:literal, $syn:expr, $default:literal, $doc:literal, $field:ident, $min:expr) => {
        ConfigDef {
            name: $name,
            synonyms: $syn,
            kind: ConfigType::Long,
            default: $default,
            doc: $doc,
            set: |c, v| {
                c.$field = parse_long($name, v, $min, L)?;
                Ok(())
            },
            get: |c| c.$field.to_string(),
        }
    };
}

macro_rules! int_def {
    ($name:literal, $syn:expr, $default:literal, $doc:literal, $field:ident, $min:expr) => {
        ConfigDef {
            name: $name,
            synonyms: $syn,
            kind: ConfigType::Int,
            default: $default,
            doc: $doc,
            set: |c, v| {
                c.$field = parse_int($name, v, $min, I)?;
                Ok(())
            },
            get: |c| c.$field.to_string(),
        }
    };
}

macro_rules! bool_def {
    ($name:literal, $syn:expr, $default:literal, $doc:literal, $field:ident) => {
        ConfigDef {
            name: $name,
            synonyms: $syn,
            kind: ConfigType::Boolean,
            default: $default,
            doc: $doc,
            set: |c, v| {
                c.$field = parse_bool($name, v)?;
                Ok(())
            },
            get: |c| c.$field.to_string(),
        }
    };
}

macro_rules! passthrough_def {
    ($name:literal, $syn:expr, $kind:expr, $default:literal, $doc:literal) => {
        ConfigDef {
            name: $name,
            synonyms: $syn,
            kind: $kind,
            default: $default,
            doc: $doc,
            set: |c, v| {
                c.passthrough
                    .insert($name.to_string(), v.trim().to_string());
                Ok(())
            },
            get: |c| {
                c.passthrough
                    .get($name)
                    .cloned()
                    .unwrap_or_else(|| $default.to_string())
            },
        }
    };
}

static DEFINITIONS: &[ConfigDef] = &[
    ConfigDef {
        name: "cleanup.policy",
        synonyms: &[("log.cleanup.policy", 1)],
        kind: ConfigType::List,
        default: "delete",
        doc: "Retention policy for old segments: delete, compact or both.",
        set: |c, v| {
            c.cleanup_policy = parse_policy(v)?;
            Ok(())
        },
        get: |c| c.cleanup_policy.render(),
    },
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
    ConfigDef {
        name: "compression.type",
        synonyms: &[("compression.type", 1)],
        kind: ConfigType::String,
        default: "producer",
        doc: "Final compression of the topic's data; producer keeps the producer's codec.",
        set: |c, v| {
            c.compression_type = parse_one_of(
                "compression.type",
                v,
                COMPRESSION_TYPES,
                "one of uncompressed, zstd, lz4, snappy, gzip, producer",
            )?;
            Ok(())
        },
        get: |c| c.compression_type.clone(),
    },
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
    ConfigDef {
        name: "message.timestamp.type",
        synonyms: &[("log.message.timestamp.type", 1)],
        kind: ConfigType::String,
        default: "CreateTime",
        doc: "CreateTime or LogAppendTime.",
        set: |c, v| {
            c.message_timestamp_type = match parse_one_of(
                "message.timestamp.type",
                v,
                &["CreateTime", "LogAppendTime"],
                "CreateTime or LogAppendTime",
            )?
            .as_str()
            {
                "LogAppendTime" => TimestampType::LogAppendTime,
                _ => TimestampType::CreateTime,
            };
            Ok(())
        },
        get: |c| c.message_timestamp_type.name().to_string(),
    },
    ConfigDef {
        name: "min.cleanable.dirty.ratio",
        synonyms: &[("log.cleaner.min.cleanable.ratio", 1)],
        kind: ConfigType::Double,
        default: "0.5",
        doc: "Dirty ratio above which the cleaner compacts the log.",
        set: |c, v| {
            c.min_cleanable_dirty_ratio = parse_ratio(v)?;
            Ok(())
        },
        get: |c| render_double(c.min_cleanable_dirty_ratio),
    },
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

impl LogConfig {
    /// Every topic-level config Kafka 3.9 knows (plus `strata.*`), sorted by name.
    pub fn definitions() -> &'static [ConfigDef] {
        DEFINITIONS
    }

    /// The definition of one topic config.
    pub fn definition(name: &str) -> Option<&'static ConfigDef> {
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
            (def.set)(&mut cfg, value)?;
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
            let Some((value, factor)) = def
                .synonyms
                .iter()
                .find_map(|(syn, factor)| props.get(*syn).map(|v| (v, *factor)))
            else {
                continue;
            };
            if factor == 1 {
                (def.set)(&mut cfg, value)?;
            } else {
                let n = parse_long(def.name, value, i64::MIN, i64::MAX)?;
                (def.set)(&mut cfg, &n.saturating_mul(factor).to_string())?;
            }
        }
        if let Some(v) = props.get("producer.id.expiration.ms") {
            cfg.producer_id_expiration_ms =
                parse_long("producer.id.expiration.ms", v, 1, i64::MAX)?;
        }
        if let Some(v) = props.get(MAX_DECOMPRESSED_BATCH_BYTES) {
            let n = parse_long(MAX_DECOMPRESSED_BATCH_BYTES, v, 1, i64::MAX)?;
            cfg.max_decompressed_batch_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        Ok(cfg)
    }

    /// Value of one topic config as Kafka prints it (DescribeConfigs).
    pub fn get_as_string(&self, name: &str) -> Option<String> {
        Self::definition(name).map(|d| (d.get)(self))
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
            Err(ConfigError::OutOfRange {
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
