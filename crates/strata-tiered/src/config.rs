//! Broker-level tiered-storage settings (Kafka `RemoteLogManagerConfig`,
//! reference §7.1), parsed from `server.properties` names in one pass, and
//! the choice of object-store back end from `strata.remote.storage.uri`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

use strata_log::config::{
    apply, defaults, resolved, ConfigDef, ConfigError, ConfigType, Validator, Value,
};

use crate::bridge::Bridge;
use crate::error::TieredConfigError;
use crate::rsm::ObjectStoreRsm;

/// Master switch (Kafka).
pub const SYSTEM_ENABLE: &str = "remote.log.storage.system.enable";
/// Where remote data lives: `file:///dir` or `s3://bucket/prefix` (Strata).
pub const STORAGE_URI: &str = "strata.remote.storage.uri";
/// Prefix of the storage plug-in's own settings (Kafka default).
pub const RSM_PREFIX: &str = "rsm.config.";
/// Sub-directory of a local remote tier (Kafka `LocalTieredStorage`).
pub const LOCAL_ROOT: &str = "kafka-tiered-storage";
/// Default local remote tier, beside the first log dir.
pub const DEFAULT_LOCAL_DIR: &str = "remote-tier";

/// Whether a broker property belongs to the remote tier (a row of its
/// table, or a plug-in setting under `rsm.config.` / `rlmm.config.`), so the
/// broker does not warn about it as unknown.
pub fn is_tiered_property(name: &str) -> bool {
    TABLE.iter().any(|d| d.name == name)
        || name.starts_with("remote.log.")
        || name.starts_with("rlmm.config.")
        || name.starts_with(RSM_PREFIX)
}

/// Where the remote tier lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageLocation {
    /// A local directory (objects under `<dir>/kafka-tiered-storage/`).
    Local { dir: PathBuf },
    /// An S3-API bucket.
    S3 {
        bucket: String,
        prefix: String,
        s3: S3Settings,
    },
}

/// `rsm.config.s3.*`; unset values fall back to the AWS environment variables.
/// `Debug` never prints the secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct S3Settings {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field(
                "secret_access_key",
                &self.secret_access_key.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Every broker-level tiered-storage setting, typed and defaulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TieredConfig {
    /// `remote.log.storage.system.enable`.
    pub enabled: bool,
    /// From `strata.remote.storage.uri` (default: a local directory beside
    /// the first log dir).
    pub location: StorageLocation,
    /// `strata.remote.storage.uri` as given (empty when unset).
    pub storage_uri: String,
    /// `remote.log.manager.thread.pool.size`: the pools' size when theirs is -1.
    pub thread_pool_size: usize,
    pub copier_threads: usize,
    pub expiration_threads: usize,
    pub task_interval_ms: i64,
    pub reader_threads: usize,
    pub reader_max_pending_tasks: usize,
    pub index_cache_total_bytes: u64,
    pub custom_metadata_max_bytes: usize,
    /// `rlmm.config.remote.log.metadata.topic.num.partitions`.
    pub metadata_partitions: i32,
    /// `rlmm.config.remote.log.metadata.topic.replication.factor` (cluster
    /// mode: replicas of `__remote_log_metadata`).
    pub metadata_replication_factor: i16,
    /// `rlmm.config.remote.log.metadata.topic.retention.ms` (-1: never
    /// expire), the `retention.ms` the metadata topic is created with.
    pub metadata_topic_retention_ms: i64,
}

fn usize_of(v: &Value) -> usize {
    usize::try_from(v.long()).unwrap_or(0)
}

/// −1 (use `remote.log.manager.thread.pool.size`) or a size of at least 1;
/// −1 is kept as 0 until [`TieredConfig::from_broker_properties`] resolves it.
fn pool_rule(v: &Value) -> Result<(), String> {
    match v.long() {
        -1 => Ok(()),
        n if n >= 1 => Ok(()),
        _ => Err("must be -1 or at least 1".into()),
    }
}

fn uri_rule(v: &Value) -> Result<(), String> {
    let uri = v.string();
    if uri.is_empty() || parse_uri(&uri, &BTreeMap::new()).is_ok() {
        Ok(())
    } else {
        Err("expected file:///dir or s3://bucket/prefix".into())
    }
}

fn render_location(c: &TieredConfig) -> String {
    match &c.location {
        StorageLocation::Local { dir } => format!("file://{}", dir.display()),
        StorageLocation::S3 { bucket, prefix, .. } => format!("s3://{bucket}/{prefix}"),
    }
}

type Def = ConfigDef<TieredConfig>;

/// The remote tier's table (Kafka `RemoteLogManagerConfig`, plus Strata's URI).
static TABLE: &[Def] = &[
    Def::new(
        SYSTEM_ENABLE,
        ConfigType::Boolean,
        "false",
        Validator::Any,
        "Enable tiered storage on this broker.",
        |c, v| c.enabled = v.boolean(),
        |c| c.enabled.to_string(),
    ),
    Def::new(
        STORAGE_URI,
        ConfigType::String,
        "",
        Validator::Custom(uri_rule),
        "Strata only: file:///dir or s3://bucket/prefix (default: remote-tier beside the first log dir).",
        |c, v| c.storage_uri = v.string(),
        render_location,
    ),
    Def::new(
        "remote.log.manager.thread.pool.size",
        ConfigType::Int,
        "10",
        Validator::AtLeast(1),
        "Threads of the copier and expiration pools when theirs is -1.",
        |c, v| c.thread_pool_size = usize_of(v),
        |c| c.thread_pool_size.to_string(),
    ),
    Def::new(
        "remote.log.manager.copier.thread.pool.size",
        ConfigType::Int,
        "-1",
        Validator::Custom(pool_rule),
        "Threads copying segments to the remote tier (-1: the manager pool size).",
        |c, v| c.copier_threads = usize_of(v),
        |c| c.copier_threads.to_string(),
    ),
    Def::new(
        "remote.log.manager.expiration.thread.pool.size",
        ConfigType::Int,
        "-1",
        Validator::Custom(pool_rule),
        "Threads expiring remote segments (-1: the manager pool size).",
        |c, v| c.expiration_threads = usize_of(v),
        |c| c.expiration_threads.to_string(),
    ),
    Def::new(
        "remote.log.manager.task.interval.ms",
        ConfigType::Long,
        "30000",
        Validator::AtLeast(1),
        "Interval of the copy and expiration tasks.",
        |c, v| c.task_interval_ms = v.long(),
        |c| c.task_interval_ms.to_string(),
    ),
    Def::new(
        "remote.log.reader.threads",
        ConfigType::Int,
        "10",
        Validator::AtLeast(1),
        "Threads serving remote reads.",
        |c, v| c.reader_threads = usize_of(v),
        |c| c.reader_threads.to_string(),
    ),
    Def::new(
        "remote.log.reader.max.pending.tasks",
        ConfigType::Int,
        "100",
        Validator::AtLeast(1),
        "Remote reads queued at most.",
        |c, v| c.reader_max_pending_tasks = usize_of(v),
        |c| c.reader_max_pending_tasks.to_string(),
    ),
    Def::new(
        "remote.log.index.file.cache.total.size.bytes",
        ConfigType::Long,
        "1073741824",
        Validator::AtLeast(1),
        "Disk kept for cached remote indexes.",
        |c, v| c.index_cache_total_bytes = u64::try_from(v.long()).unwrap_or(0),
        |c| c.index_cache_total_bytes.to_string(),
    ),
    Def::new(
        "remote.log.metadata.custom.metadata.max.bytes",
        ConfigType::Int,
        "128",
        Validator::AtLeast(0),
        "Largest custom metadata a storage plug-in may return.",
        |c, v| c.custom_metadata_max_bytes = usize_of(v),
        |c| c.custom_metadata_max_bytes.to_string(),
    ),
    Def::new(
        "rlmm.config.remote.log.metadata.topic.num.partitions",
        ConfigType::Int,
        "50",
        Validator::AtLeast(1),
        "Partitions of __remote_log_metadata.",
        |c, v| c.metadata_partitions = v.int(),
        |c| c.metadata_partitions.to_string(),
    ),
    Def::new(
        "rlmm.config.remote.log.metadata.topic.replication.factor",
        ConfigType::Int,
        "3",
        Validator::Between(1, i16::MAX as i64),
        "Replicas of __remote_log_metadata (cluster mode).",
        |c, v| c.metadata_replication_factor = i16::try_from(v.int()).unwrap_or(i16::MAX),
        |c| c.metadata_replication_factor.to_string(),
    ),
    Def::new(
        "rlmm.config.remote.log.metadata.topic.retention.ms",
        ConfigType::Long,
        "-1",
        Validator::AtLeast(-1),
        "retention.ms of __remote_log_metadata when it is created.",
        |c, v| c.metadata_topic_retention_ms = v.long(),
        |c| c.metadata_topic_retention_ms.to_string(),
    ),
];

impl TieredConfig {
    /// The remote tier's definition table.
    pub fn definitions() -> &'static [ConfigDef<TieredConfig>] {
        TABLE
    }

    /// Every row's resolved value (for `--print-config`).
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        resolved(TABLE, self)
    }

    /// Parse from broker properties; `first_log_dir` anchors the default
    /// local remote tier (`<parent of first log dir>/remote-tier`).
    ///
    /// # Errors
    /// The first invalid setting, naming key, value and rule.
    pub fn from_broker_properties(
        props: &BTreeMap<String, String>,
        first_log_dir: &Path,
    ) -> Result<TieredConfig, ConfigError> {
        let blank = TieredConfig {
            enabled: false,
            location: TieredConfig::default_location(first_log_dir),
            storage_uri: String::new(),
            thread_pool_size: 0,
            copier_threads: 0,
            expiration_threads: 0,
            task_interval_ms: 0,
            reader_threads: 0,
            reader_max_pending_tasks: 0,
            index_cache_total_bytes: 0,
            custom_metadata_max_bytes: 0,
            metadata_partitions: 0,
            metadata_replication_factor: 0,
            metadata_topic_retention_ms: 0,
        };
        let mut c = defaults(TABLE, blank);
        apply(TABLE, &mut c, props)?;
        if c.copier_threads == 0 {
            c.copier_threads = c.thread_pool_size;
        }
        if c.expiration_threads == 0 {
            c.expiration_threads = c.thread_pool_size;
        }
        if !c.storage_uri.is_empty() {
            c.location =
                parse_uri(&c.storage_uri, props).map_err(|_| ConfigError::InvalidValue {
                    name: STORAGE_URI,
                    value: c.storage_uri.clone(),
                    rule: "expected file:///dir or s3://bucket/prefix".into(),
                })?;
        }
        Ok(c)
    }

    /// Where the remote tier lives when `strata.remote.storage.uri` is unset:
    /// `<parent of the first log dir>/remote-tier`.
    pub fn default_location(first_log_dir: &Path) -> StorageLocation {
        StorageLocation::Local {
            dir: first_log_dir
                .parent()
                .unwrap_or(first_log_dir)
                .join(DEFAULT_LOCAL_DIR),
        }
    }

    /// Build the storage plug-in for this location.
    ///
    /// # Errors
    /// The local directory cannot be created or the store cannot be built.
    pub fn build_rsm(&self, bridge: Arc<Bridge>) -> Result<ObjectStoreRsm, TieredConfigError> {
        build_rsm(&self.location, bridge)
    }
}

/// Parse `file:///dir` or `s3://bucket[/prefix]`.
///
/// # Errors
/// [`TieredConfigError::Uri`] for any other shape.
pub fn parse_uri(
    uri: &str,
    props: &BTreeMap<String, String>,
) -> Result<StorageLocation, TieredConfigError> {
    let bad = || TieredConfigError::Uri {
        uri: uri.to_string(),
    };
    if let Some(path) = uri.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(bad());
        }
        return Ok(StorageLocation::Local {
            dir: PathBuf::from(path),
        });
    }
    if let Some(rest) = uri.strip_prefix("s3://") {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad());
        }
        let get = |k: &str| props.get(&format!("{RSM_PREFIX}s3.{k}")).cloned();
        return Ok(StorageLocation::S3 {
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
            s3: S3Settings {
                endpoint: get("endpoint"),
                region: get("region"),
                access_key_id: get("access.key.id"),
                secret_access_key: get("secret.access.key"),
            },
        });
    }
    Err(bad())
}

/// Build an [`ObjectStoreRsm`] for a location.
///
/// # Errors
/// The local directory cannot be created or the store cannot be built.
pub fn build_rsm(
    location: &StorageLocation,
    bridge: Arc<Bridge>,
) -> Result<ObjectStoreRsm, TieredConfigError> {
    match location {
        StorageLocation::Local { dir } => {
            std::fs::create_dir_all(dir.join(LOCAL_ROOT)).map_err(|source| {
                TieredConfigError::Dir {
                    path: dir.clone(),
                    source,
                }
            })?;
            let store = LocalFileSystem::new_with_prefix(dir).map_err(|source| {
                TieredConfigError::Store {
                    uri: format!("file://{}", dir.display()),
                    source,
                }
            })?;
            Ok(ObjectStoreRsm::new(
                Arc::new(store) as Arc<dyn ObjectStore>,
                LOCAL_ROOT,
                bridge,
            ))
        }
        StorageLocation::S3 { bucket, prefix, s3 } => {
            let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
            if let Some(endpoint) = &s3.endpoint {
                builder = builder
                    .with_endpoint(endpoint)
                    .with_allow_http(endpoint.starts_with("http://"));
            }
            if let Some(region) = &s3.region {
                builder = builder.with_region(region);
            }
            if let Some(key) = &s3.access_key_id {
                builder = builder.with_access_key_id(key);
            }
            if let Some(secret) = &s3.secret_access_key {
                builder = builder.with_secret_access_key(secret);
            }
            let store = builder.build().map_err(|source| TieredConfigError::Store {
                uri: format!("s3://{bucket}/{prefix}"),
                source,
            })?;
            Ok(ObjectStoreRsm::new(
                Arc::new(store) as Arc<dyn ObjectStore>,
                prefix.clone(),
                bridge,
            ))
        }
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
    fn tiered_property_names_are_recognised() {
        for name in [
            SYSTEM_ENABLE,
            STORAGE_URI,
            "remote.log.reader.threads",
            "rlmm.config.remote.log.metadata.topic.num.partitions",
            "rsm.config.s3.region",
        ] {
            assert!(is_tiered_property(name), "{name}");
        }
        for name in ["log.retention.ms", "remote.storage.enable", "rsm.s3.region"] {
            assert!(!is_tiered_property(name), "{name}");
        }
    }

    #[test]
    fn defaults_follow_kafka_and_default_dir_is_beside_first_log_dir() {
        let c = TieredConfig::from_broker_properties(&props(&[]), Path::new("/data/logs")).unwrap();
        assert!(!c.enabled);
        assert_eq!(
            c.location,
            StorageLocation::Local {
                dir: PathBuf::from("/data/remote-tier")
            }
        );
        assert_eq!(
            (c.copier_threads, c.expiration_threads, c.reader_threads),
            (10, 10, 10)
        );
        assert_eq!(c.task_interval_ms, 30_000);
        assert_eq!(c.reader_max_pending_tasks, 100);
        assert_eq!(c.index_cache_total_bytes, 1 << 30);
    }

    #[test]
    fn pools_fall_back_to_thread_pool_size_and_reject_zero() {
        let c = TieredConfig::from_broker_properties(
            &props(&[
                ("remote.log.manager.thread.pool.size", "3"),
                ("remote.log.manager.copier.thread.pool.size", "2"),
            ]),
            Path::new("/d/l"),
        )
        .unwrap();
        assert_eq!((c.copier_threads, c.expiration_threads), (2, 3));
        let err = TieredConfig::from_broker_properties(
            &props(&[("remote.log.manager.expiration.thread.pool.size", "0")]),
            Path::new("/d/l"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid value "0" for remote.log.manager.expiration.thread.pool.size: must be -1 or at least 1"#
        );
        let err = TieredConfig::from_broker_properties(
            &props(&[(STORAGE_URI, "gs://b")]),
            Path::new("/d/l"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid value "gs://b" for strata.remote.storage.uri: expected file:///dir or s3://bucket/prefix"#
        );
        let err = TieredConfig::from_broker_properties(
            &props(&[(SYSTEM_ENABLE, "yes")]),
            Path::new("/d/l"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid value "yes" for remote.log.storage.system.enable: not a boolean (true or false)"#
        );
    }

    #[test]
    fn uris_choose_the_back_end() {
        let p = props(&[
            ("rsm.config.s3.endpoint", "http://127.0.0.1:9000"),
            ("rsm.config.s3.region", "us-east-1"),
        ]);
        assert_eq!(
            parse_uri("file:///x/y", &p).unwrap(),
            StorageLocation::Local {
                dir: PathBuf::from("/x/y")
            }
        );
        match parse_uri("s3://bucket/a/b/", &p).unwrap() {
            StorageLocation::S3 { bucket, prefix, s3 } => {
                assert_eq!((bucket.as_str(), prefix.as_str()), ("bucket", "a/b"));
                assert_eq!(s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
                assert_eq!(s3.region.as_deref(), Some("us-east-1"));
            }
            other => panic!("{other:?}"),
        }
        let with_secret = parse_uri(
            "s3://b",
            &props(&[("rsm.config.s3.secret.access.key", "hunter2")]),
        )
        .unwrap();
        assert!(
            !format!("{with_secret:?}").contains("hunter2"),
            "secret leaked into Debug"
        );
        for bad in ["file://relative", "s3://", "gs://b", "/plain"] {
            assert!(
                matches!(parse_uri(bad, &p), Err(TieredConfigError::Uri { .. })),
                "{bad}"
            );
        }
    }
}
