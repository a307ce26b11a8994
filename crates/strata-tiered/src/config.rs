//! Broker-level tiered-storage settings (Kafka `RemoteLogManagerConfig`,
//! reference §7.1), parsed from `server.properties` names in one pass, and
//! the choice of object-store back end from `strata.remote.storage.uri`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

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

/// Whether a broker property belongs to the remote tier (read by
/// [`TieredConfig::from_broker_properties`], not by the broker's own config),
/// so the broker does not warn about it as unknown.
pub fn is_tiered_property(name: &str) -> bool {
    name == STORAGE_URI
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
    pub enabled: bool,
    pub location: StorageLocation,
    pub copier_threads: usize,
    pub expiration_threads: usize,
    pub task_interval_ms: i64,
    pub reader_threads: usize,
    pub reader_max_pending_tasks: usize,
    pub index_cache_total_bytes: u64,
    pub custom_metadata_max_bytes: usize,
    pub metadata_partitions: i32,
}

fn parse_i64(
    props: &BTreeMap<String, String>,
    name: &'static str,
    default: i64,
) -> Result<i64, TieredConfigError> {
    match props.get(name) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| TieredConfigError::Invalid {
            name,
            value: v.clone(),
            reason: "not an integer",
        }),
    }
}

fn parse_at_least(
    props: &BTreeMap<String, String>,
    name: &'static str,
    default: i64,
    min: i64,
) -> Result<i64, TieredConfigError> {
    let v = parse_i64(props, name, default)?;
    if v < min {
        return Err(TieredConfigError::Invalid {
            name,
            value: v.to_string(),
            reason: "below the minimum",
        });
    }
    Ok(v)
}

/// A pool size that may be −1 = "use `remote.log.manager.thread.pool.size`".
fn pool_size(
    props: &BTreeMap<String, String>,
    name: &'static str,
    fallback: i64,
) -> Result<usize, TieredConfigError> {
    let v = parse_i64(props, name, -1)?;
    match v {
        -1 => Ok(fallback as usize),
        v if v >= 1 => Ok(v as usize),
        v => Err(TieredConfigError::Invalid {
            name,
            value: v.to_string(),
            reason: "must be -1 or at least 1",
        }),
    }
}

impl TieredConfig {
    /// Parse from broker properties; `first_log_dir` anchors the default
    /// local remote tier (`<parent of first log dir>/remote-tier`).
    ///
    /// # Errors
    /// The first invalid setting.
    pub fn from_broker_properties(
        props: &BTreeMap<String, String>,
        first_log_dir: &Path,
    ) -> Result<TieredConfig, TieredConfigError> {
        let enabled = match props
            .get(SYSTEM_ENABLE)
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => false,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                return Err(TieredConfigError::Invalid {
                    name: SYSTEM_ENABLE,
                    value: v,
                    reason: "not a boolean",
                })
            }
        };
        let location = match props.get(STORAGE_URI) {
            Some(uri) => parse_uri(uri, props)?,
            None => StorageLocation::Local {
                dir: first_log_dir
                    .parent()
                    .unwrap_or(first_log_dir)
                    .join(DEFAULT_LOCAL_DIR),
            },
        };
        let pool = parse_at_least(props, "remote.log.manager.thread.pool.size", 10, 1)?;
        Ok(TieredConfig {
            enabled,
            location,
            copier_threads: pool_size(props, "remote.log.manager.copier.thread.pool.size", pool)?,
            expiration_threads: pool_size(
                props,
                "remote.log.manager.expiration.thread.pool.size",
                pool,
            )?,
            task_interval_ms: parse_at_least(
                props,
                "remote.log.manager.task.interval.ms",
                30_000,
                1,
            )?,
            reader_threads: parse_at_least(props, "remote.log.reader.threads", 10, 1)? as usize,
            reader_max_pending_tasks: parse_at_least(
                props,
                "remote.log.reader.max.pending.tasks",
                100,
                1,
            )? as usize,
            index_cache_total_bytes: parse_at_least(
                props,
                "remote.log.index.file.cache.total.size.bytes",
                1 << 30,
                1,
            )? as u64,
            custom_metadata_max_bytes: parse_at_least(
                props,
                "remote.log.metadata.custom.metadata.max.bytes",
                128,
                0,
            )? as usize,
            metadata_partitions: parse_at_least(
                props,
                "rlmm.config.remote.log.metadata.topic.num.partitions",
                50,
                1,
            )? as i32,
        })
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
        assert!(matches!(
            err,
            TieredConfigError::Invalid {
                name: "remote.log.manager.expiration.thread.pool.size",
                ..
            }
        ));
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
